//! The parent's side of the application flows' sockets: their listeners, made before
//! the run at the passive node, and every socket an application opens, made on request
//! in the active node's namespace (which the unprivileged ferry cannot enter), bound to
//! the node's address and port 0 (an ephemeral port: each connection its own 4-tuple),
//! and passed back over a Unix socket with `SCM_RIGHTS`.

use crate::linux::FlowMap;
use crate::sys;
use longpipe_core::scenario::ValidScenario;
use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

/// The parent's end of the socket channel, with the flows it makes sockets for.
pub struct Broker {
    pub sock: UnixStream,
    flows: Vec<FlowMap>,
    /// (active node, whether it is the flow's `dst`) by flow id.
    active: BTreeMap<usize, (usize, bool)>,
}

/// Whether flow `i` of `sc` is an application flow the emulator runs here.
pub fn is_app(sc: &ValidScenario, i: usize) -> bool {
    sc.flows[i].app.is_workload()
}

/// (active node, passive node) of an application flow.
pub fn ends(sc: &ValidScenario, i: usize) -> (usize, usize) {
    let f = &sc.flows[i];
    if f.app.dst_opens() {
        (f.dst, f.src)
    } else {
        (f.src, f.dst)
    }
}

/// The receive-buffer options of a socket at a flow's `dst`, as flows.rs gives the
/// bulk receiver (see there: the doubled buffer leaves room for Linux's overhead).
fn receive_window(s: &OwnedFd, f: &FlowMap) -> io::Result<()> {
    let clamp = f.rwnd.min(i32::MAX as u64 / 4) as i32;
    sys::setsockopt_int(s, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 2 * clamp)?;
    sys::setsockopt_int(s, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, clamp)
}

/// Every application socket: the flow's congestion control and MSS, no Nagle (the
/// simulator sends a message's bytes at once; browsers, web servers and netperf's
/// TCP_RR set `TCP_NODELAY` too), and at `dst` the flow's receive window. (An accepted
/// socket inherits its listener's options.)
fn tcp_options(s: &OwnedFd, f: &FlowMap, at_dst: bool) -> io::Result<()> {
    sys::setsockopt_bytes(s, libc::IPPROTO_TCP, libc::TCP_CONGESTION, f.cc.as_bytes())?;
    sys::setsockopt_int(s, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)?;
    sys::setsockopt_int(s, libc::IPPROTO_TCP, libc::TCP_MAXSEG, f.mss as i32)?;
    if at_dst {
        receive_window(s, f)?;
    }
    Ok(())
}

/// The listening socket of application flow `f` at its passive node (made in that
/// node's namespace: the caller has entered it), with its port: the flow's receiver
/// port, or an ephemeral one when another flow's socket holds that.
pub fn make_listener(sc: &ValidScenario, f: &FlowMap) -> io::Result<(OwnedFd, u16)> {
    let (_, p) = ends(sc, f.id);
    let l = sys::tcp_socket()?;
    sys::setsockopt_int(&l, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    tcp_options(&l, f, p == f.dst)?;
    let addr = longpipe_core::net::packet::node_addr(p);
    match sys::bind_v4(&l, addr, f.dport) {
        Err(e) if e.raw_os_error() == Some(libc::EADDRINUSE) => sys::bind_v4(&l, addr, 0)?,
        r => r?,
    }
    sys::listen(&l, 1024)?;
    let port = sys::local_port(&l)?;
    Ok((l, port))
}

impl Broker {
    /// The parent's end `sock`; the other goes to the ferry.
    pub fn new(sc: &ValidScenario, flows: &[FlowMap], sock: UnixStream) -> Broker {
        let active = flows
            .iter()
            .filter(|f| is_app(sc, f.id))
            .map(|f| {
                let (a, _) = ends(sc, f.id);
                (f.id, (a, a == f.dst))
            })
            .collect();
        Broker {
            sock,
            flows: flows.to_vec(),
            active,
        }
    }

    /// Answers the requests that arrive within `wait_ns`. `enter(node)` moves this
    /// thread into a node's namespace, `leave()` back.
    pub fn serve(
        &mut self,
        wait_ns: u64,
        enter: &dyn Fn(usize) -> io::Result<()>,
        leave: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        let mut pfd = [libc::pollfd {
            fd: self.sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        if sys::ppoll(&mut pfd, Some(wait_ns))? == 0 {
            return Ok(());
        }
        let mut b = [0u8; 4];
        let (n, _) = sys::recv_with_fd(&self.sock, &mut b)?;
        if n == 0 {
            // the ferry is gone; stop listening
            thread::sleep(Duration::from_nanos(wait_ns));
            return Ok(());
        }
        let id = u32::from_le_bytes(b) as usize;
        let made = match (self.active.get(&id), self.flows.iter().find(|f| f.id == id)) {
            (Some(&(node, at_dst)), Some(f)) => {
                enter(node)?;
                let s = (|| -> io::Result<OwnedFd> {
                    let s = sys::tcp_socket()?;
                    tcp_options(&s, f, at_dst)?;
                    sys::bind_v4(&s, longpipe_core::net::packet::node_addr(node), 0)?;
                    sys::set_nonblocking(&s)?;
                    Ok(s)
                })();
                leave()?;
                s.map_err(|e| e.to_string())
            }
            _ => Err(format!("flow {id} is not an application flow")),
        };
        match made {
            Ok(s) => sys::send_with_fd(&self.sock, &[0], Some(&s)),
            Err(e) => {
                let mut m = vec![1u8];
                m.extend_from_slice(e.as_bytes());
                sys::send_with_fd(&self.sock, &m, None::<&OwnedFd>)
            }
        }
    }
}

/// A new unconnected, non-blocking socket for flow `id`, bound at its active node.
pub fn request_socket(ch: &Mutex<UnixStream>, id: usize) -> io::Result<OwnedFd> {
    let c = ch
        .lock()
        .map_err(|_| io::Error::other("socket channel poisoned"))?;
    sys::send_with_fd(&*c, &(id as u32).to_le_bytes(), None::<&OwnedFd>)?;
    let mut b = [0u8; 512];
    let (n, fd) = sys::recv_with_fd(&*c, &mut b)?;
    match (n, fd) {
        (0, _) => Err(io::Error::other("the parent closed the socket channel")),
        (_, Some(fd)) if b[0] == 0 => Ok(fd),
        _ => Err(io::Error::other(
            String::from_utf8_lossy(&b[1..n]).into_owned(),
        )),
    }
}
