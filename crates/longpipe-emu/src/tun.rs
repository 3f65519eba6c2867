//! The ferry's real devices: one non-blocking TUN descriptor per port, and a control
//! descriptor (the pipe from the privileged parent: its end of file means stop).

use crate::ferry::Io;
use crate::sys;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub struct TunIo {
    devs: Vec<File>,
    ctl: Option<File>,
    pfds: Vec<libc::pollfd>,
    stop: bool,
    /// Stop on SIGINT/SIGTERM/SIGHUP too (see [`sys::catch_signals`]).
    pub on_signal: bool,
    /// Stop when this flag is set (checked at least every `wait`).
    pub flag: Option<Arc<AtomicBool>>,
}

impl TunIo {
    pub fn new(devs: Vec<OwnedFd>, ctl: Option<OwnedFd>) -> io::Result<TunIo> {
        let mut pfds = Vec::new();
        for d in devs.iter().chain(ctl.iter()) {
            sys::set_nonblocking(d)?;
            pfds.push(libc::pollfd {
                fd: d.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        Ok(TunIo {
            devs: devs.into_iter().map(File::from).collect(),
            ctl: ctl.map(File::from),
            pfds,
            stop: false,
            on_signal: true,
            flag: None,
        })
    }

    fn check_ctl(&mut self) {
        let Some(c) = &mut self.ctl else { return };
        let mut b = [0u8; 64];
        loop {
            match c.read(&mut b) {
                Ok(0) => {
                    self.stop = true;
                    return;
                }
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.stop = true;
                    return;
                }
            }
        }
    }
}

impl Io for TunIo {
    fn ports(&self) -> usize {
        self.devs.len()
    }

    #[inline]
    fn recv(&mut self, p: usize, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            match self.devs[p].read(buf) {
                Ok(n) => return Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    #[inline]
    fn send(&mut self, p: usize, pkt: &[u8]) -> io::Result<()> {
        // A TUN write takes the whole packet or fails (no partial writes).
        self.devs[p].write(pkt).map(|_| ())
    }

    fn wait(&mut self, timeout_ns: Option<u64>) -> io::Result<()> {
        for p in &mut self.pfds {
            p.revents = 0;
        }
        // A stop flag is looked at every 10 ms at least.
        let timeout_ns = match (&self.flag, timeout_ns) {
            (Some(_), t) => Some(t.unwrap_or(u64::MAX).min(10_000_000)),
            (None, t) => t,
        };
        sys::ppoll(&mut self.pfds, timeout_ns)?;
        if self
            .pfds
            .last()
            .is_some_and(|p| self.ctl.is_some() && p.revents != 0)
        {
            self.check_ctl();
        }
        Ok(())
    }

    fn rest(&mut self, ns: u64) -> io::Result<()> {
        // Only the control descriptor is watched (the last one, when there is one).
        let ctl = if self.ctl.is_some() {
            let n = self.pfds.len();
            &mut self.pfds[n - 1..]
        } else {
            &mut []
        };
        for p in ctl.iter_mut() {
            p.revents = 0;
        }
        sys::ppoll(ctl, Some(ns))?;
        if ctl.first().is_some_and(|p| p.revents != 0) {
            self.check_ctl();
        }
        Ok(())
    }

    fn stop_requested(&mut self) -> bool {
        self.stop
            || (self.on_signal && sys::SIGNALLED.load(Ordering::Relaxed) != 0)
            || self
                .flag
                .as_ref()
                .is_some_and(|f| f.load(Ordering::Relaxed))
    }
}
