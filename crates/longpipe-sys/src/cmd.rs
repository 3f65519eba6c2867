//! Running the administration tools a user would type — `ip` (iproute2), `nft`
//! (nftables) — instead of netlink code of our own: the same commands inspect what was
//! set up (`ip rule show`, `nft list table ip lpgw`).
//!
//! Errors: one line, the command with its arguments and the tool's own message (a
//! missing tool says which package provides it).

use std::io::{self, Write};
use std::process::{Command, Stdio};

/// The package that provides `cmd` (for the error when it is missing).
fn package(cmd: &str) -> &'static str {
    match cmd {
        "ip" => "iproute2",
        "nft" => "nftables",
        "setpriv" => "util-linux",
        _ => "its package",
    }
}

/// Runs `cmd args...` with `stdin` fed to it (None: no input); its standard output, or
/// an error naming the command and its message.
pub fn run(cmd: &str, args: &[&str], stdin: Option<&str>) -> io::Result<String> {
    let mut child = Command::new(cmd)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot run `{cmd}` ({}): {e}; install it (apt-get install {})",
                    package(cmd),
                    package(cmd)
                ),
            )
        })?;
    if let Some(s) = stdin {
        child.stdin.take().expect("piped").write_all(s.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        // a multi-line message (nft's, ip -batch's) becomes one line
        let msg = String::from_utf8_lossy(&out.stderr)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        return Err(io::Error::other(format!("{cmd} {}: {msg}", args.join(" "))));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `ip args...` (iproute2); `stdin` for `ip -batch -`.
pub fn ip(args: &[&str], stdin: Option<&str>) -> io::Result<String> {
    run("ip", args, stdin)
}

/// `nft args...` (nftables); `stdin` for `nft -f -`.
pub fn nft(args: &[&str], stdin: Option<&str>) -> io::Result<String> {
    run("nft", args, stdin)
}

/// Whether `cmd arg` can be run at all (a `--version` check).
pub fn have(cmd: &str, arg: &str) -> bool {
    Command::new(cmd)
        .arg(arg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// The interface exists (in the calling thread's network namespace).
pub fn link_exists(dev: &str) -> bool {
    ip(&["-o", "link", "show", "dev", dev], None).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_one_line_naming_the_command() {
        let e = run(
            "sh",
            &["-c", "echo first >&2; echo second >&2; exit 3"],
            None,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "sh -c echo first >&2; echo second >&2; exit 3: first second"
        );
        let e = run("no-such-tool-lp", &[], None).unwrap_err();
        assert!(
            e.to_string().starts_with("cannot run `no-such-tool-lp`"),
            "{e}"
        );
        assert!(!have("no-such-tool-lp", "--version"));
        assert_eq!(run("cat", &[], Some("fed\n")).unwrap(), "fed\n");
    }
}
