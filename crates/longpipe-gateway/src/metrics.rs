//! Metrics in the Prometheus text exposition format (version 0.0.4: `# HELP`, `# TYPE`,
//! one `name{labels} value` line per sample), served on a local HTTP endpoint by a
//! thread of its own (std::net, one request per connection), and a one-line summary
//! for the periodic stats line on stderr.
//!
//! The packet loop renders a snapshot (at most once a second, and on demand at the
//! end); the HTTP thread serves the latest one, so a scrape never blocks packets, and
//! it serves scrapers concurrently ([`serve`]), so an idle one blocks no other.

use crate::path::PacketPath;
use longpipe_sys::sys;
use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Renders every metric of the path and its gateway.
pub fn render(p: &PacketPath, uptime_s: f64) -> String {
    let mut s = String::with_capacity(4096);
    let st = &p.stats;
    let g = &p.gw.stats;
    let mut metric = |name: &str, kind: &str, help: &str, samples: &[(&str, f64)]| {
        let _ = writeln!(s, "# HELP longpipe_gateway_{name} {help}");
        let _ = writeln!(s, "# TYPE longpipe_gateway_{name} {kind}");
        for (labels, v) in samples {
            if labels.is_empty() {
                let _ = writeln!(s, "longpipe_gateway_{name} {v}");
            } else {
                let _ = writeln!(s, "longpipe_gateway_{name}{{{labels}}} {v}");
            }
        }
    };
    let dirs = |a: [u64; 2]| {
        [
            ("dir=\"to_client\"", a[0] as f64),
            ("dir=\"to_server\"", a[1] as f64),
        ]
    };
    metric("up", "gauge", "1 while the daemon runs.", &[("", 1.0)]);
    metric(
        "uptime_seconds",
        "gauge",
        "Seconds since the packet loop started.",
        &[("", uptime_s)],
    );
    metric(
        "packets_read_total",
        "counter",
        "Packets read from the TUN devices, by direction.",
        &dirs(st.packets_in),
    );
    metric(
        "bytes_read_total",
        "counter",
        "Bytes read from the TUN devices, by direction.",
        &dirs(st.bytes_in),
    );
    metric(
        "packets_written_total",
        "counter",
        "Packets written to the TUN devices, by direction.",
        &dirs(st.packets_out),
    );
    metric(
        "bytes_written_total",
        "counter",
        "Bytes written to the TUN devices, by direction.",
        &dirs(st.bytes_out),
    );
    metric(
        "device_dropped_total",
        "counter",
        "Packets the kernel dropped on their way to the packet loop (the device's queue, --dev-queue, was full), by direction.",
        &dirs(st.dev_dropped),
    );
    metric(
        "passed_total",
        "counter",
        "Packets passed unchanged without the gateway, by reason.",
        &[
            ("reason=\"not_ipv4\"", st.passed_not_ipv4 as f64),
            ("reason=\"not_tcp\"", st.passed_not_tcp as f64),
            ("reason=\"fragment\"", st.passed_fragment as f64),
            ("reason=\"malformed\"", st.malformed as f64),
            ("reason=\"bad_checksum\"", st.bad_checksum as f64),
            ("reason=\"draining\"", st.drain_passed as f64),
            ("reason=\"excluded\"", st.passed_excluded as f64),
        ],
    );
    metric(
        "malformed_total",
        "counter",
        "TCP packets whose headers did not parse or were cut short.",
        &[("", st.malformed as f64)],
    );
    metric(
        "absorbed_total",
        "counter",
        "Packets from the client side the gateway kept (ACKs of data it sent itself).",
        &[("", st.absorbed as f64)],
    );
    metric(
        "write_errors_total",
        "counter",
        "Packets that could not be written to a device.",
        &[("", st.write_errors as f64)],
    );
    metric(
        "connections",
        "gauge",
        "Connections in the table.",
        &[("", p.gw.conns() as f64)],
    );
    metric(
        "connections_peak",
        "gauge",
        "The most connections the table held at once since the start.",
        &[("", st.conns_peak as f64)],
    );
    metric(
        "connections_opened_total",
        "counter",
        "Connections learned from a SYN.",
        &[("", g.conns_opened as f64)],
    );
    metric(
        "connections_closed_total",
        "counter",
        "Connections forgotten (closed, reset, idle or abandoned).",
        &[("", g.conns_closed as f64)],
    );
    metric(
        "connections_refused_total",
        "counter",
        "Connections passed through because the table was full.",
        &[("", g.conns_refused as f64)],
    );
    metric(
        "connections_abandoned_total",
        "counter",
        "Connections whose client acknowledged nothing for abandon_timeout while data waited.",
        &[("", p.gw.abandoned as f64)],
    );
    metric(
        "abandoned_bytes_total",
        "counter",
        "Bytes the server saw acknowledged that abandoned connections held.",
        &[("", p.gw.abandoned_bytes as f64)],
    );
    let f = &p.gw.faults;
    metric(
        "rst_total",
        "counter",
        "RSTs by what the gateway did (RFC 5961): reset the connection; answered a server's with a challenge ACK; dropped a server's outside the window; passed a client's without resetting its state.",
        &[
            ("verdict=\"accepted\"", f.rst_accepted as f64),
            ("verdict=\"challenged\"", f.rst_challenged as f64),
            ("verdict=\"dropped\"", f.rst_dropped as f64),
            ("verdict=\"passed\"", f.rst_passed as f64),
        ],
    );
    metric(
        "syn_conflicts_total",
        "counter",
        "SYNs with another ISN on a connection holding data: passed, state kept (RFC 5961).",
        &[("", f.syn_conflicts as f64)],
    );
    metric(
        "reset_bytes_total",
        "counter",
        "Bytes servers saw acknowledged that connections ended by a RST still held.",
        &[("", f.reset_bytes as f64)],
    );
    metric(
        "fins_undelivered_total",
        "counter",
        "Connections reset or given up whose FIN the gateway had acknowledged to the server and not delivered to the client.",
        &[("", f.fins_undelivered as f64)],
    );
    metric(
        "connections_reset_total",
        "counter",
        "Connections the gateway reset on both ends itself (given up, or at a stop).",
        &[("", f.resets_sent as f64)],
    );
    let hs = p.gw.handshake_counters();
    metric(
        "handshakes",
        "gauge",
        "Handshakes in progress (SYNs without their answer, answers without the opener's ACK).",
        &[("", p.gw.half_open() as f64)],
    );
    metric(
        "handshakes_refused_total",
        "counter",
        "Opening SYNs passed unaccelerated: too many handshakes in progress (overall or from the address).",
        &[("", hs.refused as f64)],
    );
    metric(
        "handshakes_expired_total",
        "counter",
        "Handshakes forgotten unfinished after half_open_timeout.",
        &[("", hs.expired as f64)],
    );
    metric(
        "restart_reset_connections_total",
        "counter",
        "Connections a packet loop that died held, reset on both ends by its successor.",
        &[("", st.restart_reset_conns as f64)],
    );
    metric(
        "restart_lost_bytes_total",
        "counter",
        "Bytes their servers saw acknowledged (at the dead loop's last snapshot).",
        &[("", st.restart_lost_bytes as f64)],
    );
    metric(
        "spoofed_acks_total",
        "counter",
        "ACKs sent to servers in the clients' names.",
        &[("", g.spoofed_acks as f64)],
    );
    metric(
        "go_back_n_total",
        "counter",
        "Satellite-side recoveries.",
        &[("", g.go_back_n as f64)],
    );
    metric(
        "go_back_n_timeout_total",
        "counter",
        "Satellite-side recoveries started by the retransmission timer.",
        &[("", g.go_back_n_timeout as f64)],
    );
    metric(
        "segments_resent_total",
        "counter",
        "Segments resent over the satellite.",
        &[("", g.segments_resent as f64)],
    );
    metric(
        "client_overruns_total",
        "counter",
        "Segments sent beyond the client's advertised window.",
        &[("", g.client_overruns as f64)],
    );
    metric(
        "dropped_buffer_full_total",
        "counter",
        "Server segments dropped at a full gateway buffer.",
        &[("", g.dropped_buffer_full as f64)],
    );
    metric(
        "out_of_order_held_total",
        "counter",
        "Server segments received beyond a hole and kept until it was filled.",
        &[("", g.out_of_order_held as f64)],
    );
    metric(
        "satellite_bytes_sent_total",
        "counter",
        "Payload bytes sent toward clients (first sends and resends).",
        &[("", g.sat_bytes_sent as f64)],
    );
    metric(
        "satellite_bytes_delivered_total",
        "counter",
        "Payload bytes clients acknowledged (each once).",
        &[("", g.sat_bytes_delivered as f64)],
    );
    let (held, unsent) = p.gw.held_totals();
    metric(
        "held_bytes",
        "gauge",
        "Payload bytes held for clients.",
        &[("", held as f64)],
    );
    metric(
        "acked_undelivered_bytes",
        "gauge",
        "Held bytes the servers consider delivered (lost if the daemon stopped now).",
        &[("", unsent as f64)],
    );
    if let Some((pipe, reserved)) = p.gw.shared_use() {
        metric(
            "satellite_in_flight_bytes",
            "gauge",
            "Bytes in flight over the satellite, all connections.",
            &[("", pipe as f64)],
        );
        metric(
            "memory_reserved_bytes",
            "gauge",
            "Memory held or promised to servers, all connections.",
            &[("", reserved as f64)],
        );
    }
    s
}

/// The periodic stats line.
pub fn line(p: &PacketPath) -> String {
    let st = &p.stats;
    let g = &p.gw.stats;
    let (held, unsent) = p.gw.held_totals();
    let eff = if g.sat_bytes_sent > 0 {
        g.sat_bytes_delivered as f64 / g.sat_bytes_sent as f64
    } else {
        1.0
    };
    format!(
        "longpipe-gateway: conns {} (peak {} opened {} closed {} refused {} abandoned {}) \
         read {}/{} written {}/{} pkts (to client/to server) spoofed_acks {} resent {} \
         held {} B (acked, undelivered {} B) sat_efficiency {:.3} malformed {} bad_checksum {} write_errors {} \
         dev_dropped {}/{} handshakes {} (refused {}) rst accepted/challenged/dropped/passed {}/{}/{}/{} reset {}",
        p.gw.conns(),
        st.conns_peak,
        g.conns_opened,
        g.conns_closed,
        g.conns_refused,
        p.gw.abandoned,
        st.packets_in[0],
        st.packets_in[1],
        st.packets_out[0],
        st.packets_out[1],
        g.spoofed_acks,
        g.segments_resent,
        held,
        unsent,
        eff,
        st.malformed,
        st.bad_checksum,
        st.write_errors,
        st.dev_dropped[0],
        st.dev_dropped[1],
        p.gw.half_open(),
        p.gw.handshake_counters().refused,
        p.gw.faults.rst_accepted,
        p.gw.faults.rst_challenged,
        p.gw.faults.rst_dropped,
        p.gw.faults.rst_passed,
        p.gw.faults.resets_sent,
    )
}

/// Most scrapers connected at once; a newer one closes the one that has waited longest.
pub const MAX_CLIENTS: usize = 32;
/// How long a scraper may take to send its request and read the answer.
pub const CLIENT_DEADLINE: Duration = Duration::from_secs(2);

struct Client {
    s: TcpStream,
    since: Instant,
    req: Vec<u8>,
    /// The answer and how much of it is written.
    resp: Option<(Vec<u8>, usize)>,
}

/// The answer to one request line.
fn answer(req: &[u8], snapshot: &Mutex<String>) -> Vec<u8> {
    let first = req.split(|&x| x == b'\n').next().unwrap_or(&[]);
    let first = String::from_utf8_lossy(first);
    let mut parts = first.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if method == "GET" && (path == "/metrics" || path == "/") {
        let body = snapshot.lock().map(|s| s.clone()).unwrap_or_default();
        format!(
            "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    } else {
        b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
    }
}

/// Serves `GET /metrics` (and `/`) with the latest snapshot, on its own thread, until
/// `stop` is set (then the listener closes: the port is free at once).
///
/// One `ppoll` loop over non-blocking sockets: a scraper that connects and sends
/// nothing holds a slot for at most [`CLIENT_DEADLINE`] and never delays another (the
/// endpoint once served one connection at a time: three idle connections made a scrape
/// time out).
pub fn serve(
    listener: TcpListener,
    snapshot: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let (up, running) = std::sync::mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        // running: the thread's own start (its rseq and signal stack) is done before
        // the caller installs a seccomp filter
        let _ = up.send(());
        if listener.set_nonblocking(true).is_err() {
            return;
        }
        let mut clients: Vec<Client> = Vec::new();
        let mut pfds: Vec<libc::pollfd> = Vec::new();
        let mut buf = [0u8; 2048];
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            clients.retain(|c| now.duration_since(c.since) < CLIENT_DEADLINE);
            pfds.clear();
            pfds.push(libc::pollfd {
                fd: listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
            for c in &clients {
                pfds.push(libc::pollfd {
                    fd: c.s.as_raw_fd(),
                    events: if c.resp.is_some() {
                        libc::POLLOUT
                    } else {
                        libc::POLLIN
                    },
                    revents: 0,
                });
            }
            // wake for the stop flag and the deadlines at least every 200 ms
            if sys::ppoll(&mut pfds, Some(200_000_000)).is_err() {
                continue;
            }
            for (i, c) in clients.iter_mut().enumerate() {
                if pfds[1 + i].revents == 0 {
                    continue;
                }
                if c.resp.is_none() {
                    match c.s.read(&mut buf) {
                        Ok(0) => c.since = Instant::now() - CLIENT_DEADLINE, // gone
                        Ok(n) => c.req.extend_from_slice(&buf[..n]),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(_) => c.since = Instant::now() - CLIENT_DEADLINE,
                    }
                    let done = c.req.windows(4).any(|w| w == b"\r\n\r\n")
                        || c.req.windows(2).any(|w| w == b"\n\n")
                        || c.req.len() >= 8192;
                    if done {
                        c.resp = Some((answer(&c.req, &snapshot), 0));
                    }
                }
                if let Some((r, at)) = &mut c.resp {
                    match c.s.write(&r[*at..]) {
                        Ok(n) => *at += n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(_) => *at = r.len(),
                    }
                    if *at >= r.len() {
                        c.since = Instant::now() - CLIENT_DEADLINE; // done: closed
                    }
                }
            }
            if pfds[0].revents != 0 {
                while let Ok((s, _)) = listener.accept() {
                    if s.set_nonblocking(true).is_err() {
                        continue;
                    }
                    if clients.len() >= MAX_CLIENTS {
                        clients.remove(0); // the one that has waited longest
                    }
                    clients.push(Client {
                        s,
                        since: Instant::now(),
                        req: Vec::new(),
                        resp: None,
                    });
                }
            }
        }
    });
    let _ = running.recv();
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_connections_do_not_delay_a_scrape() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let snap = Arc::new(Mutex::new("longpipe_gateway_up 1\n".to_string()));
        let stop = Arc::new(AtomicBool::new(false));
        let h = serve(l, snap, stop.clone());
        // three scrapers that connect and say nothing
        let idle: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let t = Instant::now();
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut got = String::new();
        c.read_to_string(&mut got).unwrap();
        assert!(got.starts_with("HTTP/1.0 200 OK") && got.ends_with("longpipe_gateway_up 1\n"));
        // answered at once, not after the idle ones' 2 s each (a bound on a broken
        // server, not a measurement)
        assert!(t.elapsed() < CLIENT_DEADLINE, "{:?}", t.elapsed());
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"GET /nope HTTP/1.0\r\n\r\n").unwrap();
        let mut got = String::new();
        c.read_to_string(&mut got).unwrap();
        assert!(got.starts_with("HTTP/1.0 404"), "{got}");
        drop(idle);
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap();
        assert!(
            TcpStream::connect(addr).is_err(),
            "the port is closed when it stops"
        );
    }
}
