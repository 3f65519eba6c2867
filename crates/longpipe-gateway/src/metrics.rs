//! Metrics in the Prometheus text exposition format (version 0.0.4: `# HELP`, `# TYPE`,
//! one `name{labels} value` line per sample), served on a local HTTP endpoint by a
//! thread of its own (std::net, one request per connection), and a one-line summary
//! for the periodic stats line on stderr.
//!
//! The packet loop renders a snapshot (at most once a second, and on demand at the
//! end); the HTTP thread serves the latest one, so a scrape never blocks packets.

use crate::path::PacketPath;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
         dev_dropped {}/{}",
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
    )
}

/// Serves `GET /metrics` (and `/`) with the latest snapshot, on its own thread.
pub fn serve(listener: TcpListener, snapshot: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { continue };
            let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = c.set_write_timeout(Some(Duration::from_secs(2)));
            let mut req = Vec::new();
            let mut b = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 8192 {
                match c.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&b[..n]),
                }
            }
            let first = req.split(|&x| x == b'\n').next().unwrap_or(&[]);
            let first = String::from_utf8_lossy(first);
            let mut parts = first.split_whitespace();
            let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let resp = if method == "GET" && (path == "/metrics" || path == "/") {
                let body = snapshot.lock().map(|s| s.clone()).unwrap_or_default();
                format!(
                    "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
            } else {
                "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_string()
            };
            let _ = c.write_all(resp.as_bytes());
        }
    });
}
