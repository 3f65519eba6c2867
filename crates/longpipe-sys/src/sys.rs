//! The system calls the emulator and the gateway daemon need that `std` does not offer:
//! TUN devices, network namespaces, `ppoll` with a nanosecond timeout, timer slack,
//! socket options (`TCP_CONGESTION`, `TCP_INFO`, ...) on sockets made before privileges
//! are dropped, signal flags. The only module where `unsafe` is allowed: each block is
//! a plain libc call on memory this function owns, with its length passed alongside.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Takes ownership of a descriptor inherited from the parent process (passed by number).
/// Refuses a descriptor that is not open.
pub fn own_inherited(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_GETFD only reads the descriptor table.
    check(unsafe { libc::fcntl(fd, libc::F_GETFD) })?;
    // SAFETY: the descriptor is open (checked) and was handed to this process to own;
    // nothing else in this process refers to it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sets or clears close-on-exec.
pub fn set_cloexec(fd: &impl AsRawFd, on: bool) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: fcntl on an open descriptor we borrow.
    let flags = check(unsafe { libc::fcntl(fd, libc::F_GETFD) })?;
    let new = if on {
        flags | libc::FD_CLOEXEC
    } else {
        flags & !libc::FD_CLOEXEC
    };
    // SAFETY: as above.
    check(unsafe { libc::fcntl(fd, libc::F_SETFD, new) })?;
    Ok(())
}

/// Sets O_NONBLOCK.
pub fn set_nonblocking(fd: &impl AsRawFd) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: fcntl on an open descriptor we borrow.
    let flags = check(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: as above.
    check(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) })?;
    Ok(())
}

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

/// Opens a new TUN device `name` (raw IPv4 packets, no packet information header) in
/// the calling thread's network namespace. Non-blocking, close-on-exec.
pub fn tun_open(name: &str) -> io::Result<OwnedFd> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "bad device name",
        ));
    }
    let path = c"/dev/net/tun";
    // SAFETY: a NUL-terminated path; open returns a new descriptor or -1.
    let fd = check(unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: fd was just returned by open and is owned by nobody else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // struct ifreq: 16 bytes of name, then a union whose first member is the short
    // ifr_flags; 40 bytes in all on 64-bit Linux.
    let mut req = [0u8; 40];
    req[..name.len()].copy_from_slice(name.as_bytes());
    req[16..18].copy_from_slice(&(IFF_TUN | IFF_NO_PI).to_ne_bytes());
    // SAFETY: TUNSETIFF reads and writes a struct ifreq; `req` is one, owned here and
    // large enough.
    check(unsafe { libc::ioctl(owned.as_raw_fd(), TUNSETIFF as _, req.as_mut_ptr()) })?;
    Ok(owned)
}

/// Moves the calling thread into the network namespace `ns` (an open
/// `/run/netns/NAME` or `/proc/PID/ns/net`).
pub fn setns_net(ns: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: setns on a borrowed open descriptor.
    check(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) })?;
    Ok(())
}

/// Waits until one of `fds` has an event or `timeout_ns` passed (None: forever).
pub fn ppoll(fds: &mut [libc::pollfd], timeout_ns: Option<u64>) -> io::Result<usize> {
    let ts = timeout_ns.map(|t| libc::timespec {
        tv_sec: (t / 1_000_000_000) as libc::time_t,
        tv_nsec: (t % 1_000_000_000) as libc::c_long,
    });
    let tp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `fds` is a valid slice of pollfd of the given length; `tp` is null or
    // points to a timespec that outlives the call; no signal mask is passed.
    let r = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as _, tp, std::ptr::null()) };
    match check(r) {
        Ok(n) => Ok(n as usize),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
        Err(e) => Err(e),
    }
}

/// Timer slack of the calling thread, ns (1 = wake-ups as exact as the timer allows).
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    check(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) })?;
    Ok(())
}

/// A new IPv4 TCP socket in the calling thread's namespace (close-on-exec).
pub fn tcp_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket returns a new descriptor or -1.
    let fd =
        check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: a descriptor just made, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A UDP socket (for the self-test's probes).
pub fn udp_socket() -> io::Result<OwnedFd> {
    // SAFETY: as in tcp_socket.
    let fd =
        check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: a descriptor just made, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub fn setsockopt_int(fd: &impl AsRawFd, level: i32, opt: i32, val: i32) -> io::Result<()> {
    // SAFETY: passes a pointer to a local int and its size.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            &val as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

pub fn setsockopt_bytes(fd: &impl AsRawFd, level: i32, opt: i32, val: &[u8]) -> io::Result<()> {
    // SAFETY: passes a borrowed byte slice and its length.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            val.as_ptr() as *const libc::c_void,
            val.len() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// getsockopt into `buf`; the length the kernel filled in.
pub fn getsockopt_bytes(
    fd: &impl AsRawFd,
    level: i32,
    opt: i32,
    buf: &mut [u8],
) -> io::Result<usize> {
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `buf`, and the length back.
    check(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            buf.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    })?;
    Ok(len as usize)
}

fn sockaddr(addr: [u8; 4], port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(addr),
        },
        sin_zero: [0; 8],
    }
}

pub fn bind_v4(fd: &impl AsRawFd, addr: [u8; 4], port: u16) -> io::Result<()> {
    let sa = sockaddr(addr, port);
    // SAFETY: a pointer to a local sockaddr_in and its size.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &sa as *const libc::sockaddr_in as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

pub fn listen(fd: &impl AsRawFd, backlog: i32) -> io::Result<()> {
    // SAFETY: listen on a borrowed descriptor.
    check(unsafe { libc::listen(fd.as_raw_fd(), backlog) })?;
    Ok(())
}

/// connect() on a blocking socket.
pub fn connect_v4(fd: &impl AsRawFd, addr: [u8; 4], port: u16) -> io::Result<()> {
    let sa = sockaddr(addr, port);
    loop {
        // SAFETY: a pointer to a local sockaddr_in and its size.
        let r = unsafe {
            libc::connect(
                fd.as_raw_fd(),
                &sa as *const libc::sockaddr_in as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        match check(r) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The last terminating signal received (0: none), set by [`catch_signals`].
pub static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    SIGNALLED.store(sig, Ordering::SeqCst);
}

/// Records SIGINT, SIGTERM and SIGHUP in [`SIGNALLED`] instead of dying (system calls
/// are not restarted, so a blocking wait returns).
pub fn catch_signals() -> io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction is valid; the handler only stores an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            check(libc::sigaction(sig, &sa, std::ptr::null_mut()))?;
        }
    }
    Ok(())
}

/// Ignores `sig` (SIG_IGN; kept across exec).
pub fn ignore_signal(sig: i32) -> io::Result<()> {
    // SAFETY: installs SIG_IGN; no handler code runs.
    let r = unsafe { libc::signal(sig, libc::SIG_IGN) };
    if r == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Restores the default action of `sig`.
pub fn default_signal(sig: i32) -> io::Result<()> {
    // SAFETY: installs SIG_DFL; no handler code runs.
    let r = unsafe { libc::signal(sig, libc::SIG_DFL) };
    if r == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends `sig` to process `pid`.
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: kill takes integers only.
    check(unsafe { libc::kill(pid, sig) })?;
    Ok(())
}

pub fn geteuid() -> u32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::geteuid() }
}

/// (uid, gid) of a user name or number, from the passwd database.
pub fn lookup_user(name: &str) -> Option<(u32, u32)> {
    if let Ok(uid) = name.parse::<u32>() {
        return Some((uid, uid));
    }
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 3 && f[0] == name).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
    })
}

/// Runs thread `tid` (0: the calling one) under SCHED_FIFO at `prio` (needs
/// CAP_SYS_NICE for another process's thread).
pub fn set_fifo(tid: i32, prio: i32) -> io::Result<()> {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: a pointer to a local sched_param.
    check(unsafe { libc::sched_setscheduler(tid, libc::SCHED_FIFO, &p) })?;
    Ok(())
}

/// Receives one datagram with its kernel arrival time (SO_TIMESTAMPNS must be on):
/// (bytes, CLOCK_REALTIME ns, or 0 if the kernel gave none).
pub fn recv_timestamped(fd: &impl AsRawFd, buf: &mut [u8]) -> io::Result<(usize, u64)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; 16]; // 128 bytes, 8-aligned, room for one timespec cmsg
                               // SAFETY: a zeroed msghdr is valid; its pointers go to `iov` and `cbuf`, which
                               // outlive the call; the kernel writes within the given lengths.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
        let n = libc::recvmsg(fd.as_raw_fd(), &mut msg, 0);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut ts = 0u64;
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_TIMESTAMPNS {
                let t = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                ts = t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64;
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        Ok((n as usize, ts))
    }
}

/// CLOCK_REALTIME in ns (the clock of kernel receive timestamps).
pub fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Raises the soft limit on open descriptors to the hard limit (no privilege needed);
/// returns the new limit. Used by the gateway's split-mode relay (two sockets a
/// connection).
pub fn raise_nofile() -> io::Result<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: the kernel fills in a local struct.
    check(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) })?;
    if r.rlim_cur < r.rlim_max {
        r.rlim_cur = r.rlim_max;
        // SAFETY: passes a pointer to a local struct.
        check(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) })?;
    }
    Ok(r.rlim_cur)
}

/// Sets `PR_SET_NO_NEW_PRIVS`: neither this process nor anything it runs can gain
/// privileges (set-user-ID programs, file capabilities); required before an
/// unprivileged process installs a seccomp filter. Cannot be undone.
pub fn no_new_privs() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
    Ok(())
}

/// `PR_GET_NO_NEW_PRIVS`: whether it is set.
pub fn has_no_new_privs() -> io::Result<bool> {
    // SAFETY: prctl with integer arguments only.
    Ok(check(unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) })? == 1)
}

/// The audit architecture of this build (linux/audit.h), which a seccomp filter checks
/// first: system call numbers are per architecture.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7; // AUDIT_ARCH_AARCH64

/// seccomp return values (linux/seccomp.h).
const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;

/// A classic BPF instruction (struct sock_filter).
fn bpf(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The filter that allows exactly the system calls `allow` (this architecture's
/// numbers) and kills the process on any other, or on another architecture's calling
/// convention (struct seccomp_data: `nr` at offset 0, `arch` at 4).
pub fn seccomp_program(allow: &[libc::c_long]) -> Vec<libc::sock_filter> {
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let mut p = vec![
        bpf(LD_W_ABS, 0, 0, 4),
        bpf(JEQ_K, 1, 0, AUDIT_ARCH),
        bpf(RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        bpf(LD_W_ABS, 0, 0, 0),
    ];
    for &nr in allow {
        // the next instruction allows; otherwise skip it
        p.push(bpf(JEQ_K, 0, 1, nr as u32));
        p.push(bpf(RET_K, 0, 0, SECCOMP_RET_ALLOW));
    }
    p.push(bpf(RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS));
    p
}

/// Installs [`seccomp_program`]`(allow)` on the calling process, all its threads
/// (`SECCOMP_FILTER_FLAG_TSYNC`), and whatever it runs. Needs no-new-privileges (or
/// CAP_SYS_ADMIN). Cannot be undone.
pub fn seccomp_allow_only(allow: &[libc::c_long]) -> io::Result<()> {
    let prog = seccomp_program(allow);
    let fprog = libc::sock_fprog {
        len: prog.len() as libc::c_ushort,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    const SECCOMP_SET_MODE_FILTER: libc::c_long = 1;
    const SECCOMP_FILTER_FLAG_TSYNC: libc::c_long = 1;
    // SAFETY: `fprog` points to `prog`, which outlives the call (the kernel copies the
    // program); the other arguments are integers.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_SET_MODE_FILTER,
            SECCOMP_FILTER_FLAG_TSYNC,
            &fprog as *const libc::sock_fprog,
        )
    };
    if r != 0 {
        // TSYNC returns the id of a thread it could not synchronise (> 0)
        return Err(if r < 0 {
            io::Error::last_os_error()
        } else {
            io::Error::other(format!("seccomp: thread {r} could not take the filter"))
        });
    }
    Ok(())
}

/// Sends `data` and, with `fd`, one descriptor (`SCM_RIGHTS`) on a Unix stream socket:
/// how the privileged emulator hands a socket made in a node's namespace to the
/// unprivileged process that uses it.
pub fn send_with_fd(sock: &impl AsRawFd, data: &[u8], fd: Option<&impl AsRawFd>) -> io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // room for one int's control message, aligned as cmsghdr wants
    let mut cbuf = [0u64; 8];
    // SAFETY: a zeroed msghdr is valid (null pointers, zero lengths).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if let Some(fd) = fd {
        // SAFETY: CMSG_SPACE only computes a size.
        let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = space;
        // SAFETY: msg_control points to `cbuf` (64 bytes, more than `space`), so the
        // first header and its data lie inside it.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut RawFd, fd.as_raw_fd());
        }
    }
    loop {
        // SAFETY: `msg` points to `iov` (borrowing `data`) and `cbuf`, both alive.
        let r = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if r >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Receives up to `buf.len()` bytes and the descriptor sent with them, if any (made
/// close-on-exec). 0 bytes: the peer closed.
pub fn recv_with_fd(sock: &impl AsRawFd, buf: &mut [u8]) -> io::Result<(usize, Option<OwnedFd>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; 8];
    // SAFETY: a zeroed msghdr is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&cbuf);
    let n = loop {
        // SAFETY: `msg` points to `iov` (borrowing `buf`) and `cbuf`; the kernel writes
        // at most their lengths.
        let r = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if r >= 0 {
            break r as usize;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    };
    let mut fd = None;
    // SAFETY: the CMSG macros walk the control buffer the kernel filled, within
    // msg_controllen; an SCM_RIGHTS message carries ints the kernel just installed in
    // this process, owned by nobody else.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let raw = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const RawFd);
                fd = Some(OwnedFd::from_raw_fd(raw));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n, fd))
}

/// The local port a socket is bound to.
pub fn local_port(fd: &impl AsRawFd) -> io::Result<u16> {
    // SAFETY: a zeroed sockaddr_in is valid.
    let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `sa`, and the length back.
    check(unsafe {
        libc::getsockname(
            fd.as_raw_fd(),
            &mut sa as *mut libc::sockaddr_in as *mut libc::sockaddr,
            &mut len,
        )
    })?;
    Ok(u16::from_be(sa.sin_port))
}
