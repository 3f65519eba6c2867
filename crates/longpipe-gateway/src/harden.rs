//! The packet loop's last step before its first packet: no new privileges and a seccomp
//! filter (issue 26 item 8). The loop already holds no root id and no capability (it
//! checks); this also keeps a compromised packet path from running programs, making
//! sockets (spoof mode) or calling anything the loop does not: the filter allows the
//! system calls listed here and kills the process on any other (SIGSYS; the parent
//! says so and restarts the loop). The lists are checked by the end-to-end tests, which
//! run the loop with the filter through every fault.

use longpipe_sys::sys;
use std::io;

/// No new privileges, then a seccomp filter that allows the system calls the packet
/// loop and the metrics thread make (and the split relay's, [`SPLIT_SYSCALLS`]) and
/// kills the process on any other: a compromise of the packet path cannot run programs
/// or make sockets of its own. The supervisor restarts a killed loop.
pub fn harden(split: bool) -> io::Result<()> {
    sys::no_new_privs()?;
    let mut allow: Vec<libc::c_long> = LOOP_SYSCALLS.to_vec();
    if split {
        allow.extend_from_slice(SPLIT_SYSCALLS);
    }
    sys::seccomp_allow_only(&allow)
}

/// What the packet loop and the metrics thread call once set up (Rust's standard
/// library and glibc included: memory, locks, time, a panic's abort; `openat` for
/// /proc/net/dev, whose device counters the loop reads).
pub const LOOP_SYSCALLS: &[libc::c_long] = &[
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_writev,
    libc::SYS_pread64,
    libc::SYS_pwrite64,
    libc::SYS_ftruncate,
    libc::SYS_lseek,
    libc::SYS_ppoll,
    libc::SYS_openat,
    libc::SYS_close,
    libc::SYS_fstat,
    libc::SYS_newfstatat,
    libc::SYS_statx,
    libc::SYS_fcntl,
    libc::SYS_ioctl,
    libc::SYS_accept4,
    libc::SYS_setsockopt,
    libc::SYS_getsockopt,
    libc::SYS_getsockname,
    libc::SYS_getpeername,
    libc::SYS_shutdown,
    libc::SYS_recvfrom,
    libc::SYS_sendto,
    libc::SYS_clock_gettime,
    libc::SYS_clock_nanosleep,
    libc::SYS_nanosleep,
    libc::SYS_futex,
    libc::SYS_sched_yield,
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mremap,
    libc::SYS_mprotect,
    libc::SYS_madvise,
    libc::SYS_brk,
    libc::SYS_rt_sigreturn,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigaction,
    libc::SYS_sigaltstack,
    libc::SYS_getpid,
    libc::SYS_gettid,
    libc::SYS_tgkill,
    libc::SYS_getrandom,
    libc::SYS_rseq,
    libc::SYS_set_robust_list,
    libc::SYS_restart_syscall,
    libc::SYS_exit,
    libc::SYS_exit_group,
];

/// The split relay's sockets on top of [`LOOP_SYSCALLS`].
pub const SPLIT_SYSCALLS: &[libc::c_long] = &[
    libc::SYS_socket,
    libc::SYS_bind,
    libc::SYS_connect,
    libc::SYS_getrlimit,
    libc::SYS_prlimit64,
];
