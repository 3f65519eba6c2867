//! Network sysctls through `/proc/sys/net` (of the calling thread's network
//! namespace), written with an undo list: each change records the value it replaced,
//! so that a set-up can be undone exactly — and only where the value is still the one
//! it wrote (someone may have changed it since).

use std::io;
use std::path::{Path, PathBuf};

/// `/proc/sys/net/KEY` (KEY as `ipv4/ip_forward`).
pub fn path(key: &str) -> PathBuf {
    Path::new("/proc/sys/net").join(key)
}

/// The value of `key`, trimmed; errors name the file.
pub fn read(key: &str) -> io::Result<String> {
    let p = path(key);
    std::fs::read_to_string(&p)
        .map(|v| v.trim().to_string())
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))
}

/// Writes `v` to `key`; errors name the file.
pub fn write(key: &str, v: &str) -> io::Result<()> {
    let p = path(key);
    std::fs::write(&p, v).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))
}

/// One change: (key, the value before, the value written).
pub type Change = (String, String, String);

/// Sets `key` to `v` unless it already is; the change is appended to `undo`.
pub fn set(key: &str, v: &str, undo: &mut Vec<Change>) -> io::Result<()> {
    let old = read(key)?;
    if old == v {
        return Ok(());
    }
    write(key, v)?;
    undo.push((key.to_string(), old, v.to_string()));
    Ok(())
}

/// Undoes one change if the value is still the one written (else leaves it: someone
/// changed it since). Ok(true): restored.
pub fn restore(c: &Change) -> io::Result<bool> {
    let (key, old, new) = c;
    match read(key) {
        Ok(now) if &now == new => write(key, old).map(|_| true),
        Ok(_) => Ok(false),
        // the key went with its device (a TUN device's rp_filter): nothing to undo
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_files_under_proc_sys_net() {
        assert_eq!(
            path("ipv4/ip_forward"),
            PathBuf::from("/proc/sys/net/ipv4/ip_forward")
        );
        if Path::new("/proc/sys/net/ipv4/ip_forward").exists() {
            let v = read("ipv4/ip_forward").unwrap();
            assert!(v == "0" || v == "1", "{v}");
        }
        let e = read("ipv4/no_such_key_lp").unwrap_err();
        assert!(
            e.to_string().contains("/proc/sys/net/ipv4/no_such_key_lp"),
            "{e}"
        );
        // a change whose key vanished has nothing to undo
        let gone = (
            "ipv4/conf/nosuchdevlp/rp_filter".to_string(),
            "1".into(),
            "0".into(),
        );
        assert!(!restore(&gone).unwrap());
    }
}
