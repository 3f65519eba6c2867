//! A process's identity across pid reuse: its pid and its start time (field 22 of
//! `/proc/PID/stat`, clock ticks since boot). Run records (`longpipe emu`) and state
//! files (`longpipe gateway`) store both; a record names a live process only if a
//! process with that pid runs *and* started at that time.

/// A process: (pid, start time in clock ticks since boot).
pub type Pid = (u32, u64);

/// Start time of process `pid`, if it runs.
pub fn start_time(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the command name (field 2) may hold spaces and parentheses: skip past its ')'
    let rest = &s[s.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// This process's identity.
pub fn me() -> Pid {
    let pid = std::process::id();
    (pid, start_time(pid).unwrap_or(0))
}

/// The process `(pid, start)` still runs (not a later process with the same pid, nor a
/// zombie waiting for its parent to reap it: a killed daemon whose parent died may
/// stay one until init gets to it).
pub fn alive(id: Pid) -> bool {
    id.0 != 0 && start_time(id.0) == Some(id.1) && !zombie(id.0)
}

/// Process `pid` has ended and waits to be reaped (state Z or X in /proc/PID/stat).
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = s.get(s.rfind(')')? + 2..)?.to_string();
            rest.split_whitespace()
                .next()
                .map(|st| st == "Z" || st == "X")
        })
        .unwrap_or(true)
}

/// The parent of process `pid`, if it runs.
pub fn parent_of(pid: u32) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The network namespace of the calling thread, as the kernel names it
/// (`net:[4026531840]`): what tells one namespace's set-up from another's.
pub fn netns_id() -> std::io::Result<String> {
    let l = std::fs::read_link("/proc/thread-self/ns/net")?;
    Ok(l.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_known_by_pid_and_start_time() {
        let me = me();
        assert!(start_time(me.0).is_some() && alive(me));
        assert!(
            !alive((me.0, me.1 + 1)),
            "same pid, another start: another process"
        );
        assert_eq!(start_time(u32::MAX), None);
        assert!(!alive((0, 0)));
        assert_eq!(parent_of(me.0), Some(std::os::unix::process::parent_id()));
        let ns = netns_id().unwrap();
        assert!(ns.starts_with("net:[") && ns.ends_with(']'), "{ns}");
    }
}
