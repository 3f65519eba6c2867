//! The daemon's packet path, with no I/O: bytes read from a device in, bytes to write
//! out (with the device to write them to), through the core's [`Gateway`] — the same
//! element the simulator's `tcp-gateway` node runs.
//!
//! For each packet read:
//! - not IPv4, not TCP, an IPv4 fragment: passed unchanged (`passed{reason}`);
//! - a TCP packet whose headers do not parse (truncated, bad lengths, bad options), or
//!   whose bytes stop before its IPv4 total length: counted as malformed and passed
//!   unchanged — the end host judges it, the gateway does not act on it;
//! - a TCP packet whose checksum fails: passed unchanged (`bad_checksum`), never
//!   acknowledged in the client's name;
//! - a packet of a connection excluded by port or host (`--exclude-ports`,
//!   `--exclude-hosts`, either end): passed unchanged (`passed{reason="excluded"}`);
//! - a packet of a connection a packet loop that died held ([`PacketPath::dead`]: the
//!   new loop cannot carry on what it held, the bytes are lost): both ends are reset,
//!   each at the sequence number this very packet shows it expects where it can, and
//!   the packet is dropped;
//! - otherwise the gateway gets it, with the direction the device says ([`Dir`]);
//!   what it returns is encoded ([`RawPkt::encode`]) and written to the device toward
//!   its destination (the client side if the destination is in a client prefix).
//!
//! Nothing here panics on input: the fuzz target `gateway` feeds arbitrary bytes in
//! both directions and checks what comes out.
//!
//! Why ~760 lines: ~410 of code and ~350 of tests that feed packets through it (the
//! end of the file).

use crate::pkt::RawPkt;
use longpipe_core::middlebox::gateway::{ConnKey, Dir, Gateway, GatewayConfig, GwPacket, Uplink};
use longpipe_core::net::packet::{Packet, Segment, ACK, RST};
use longpipe_core::time::{SimDuration, SimTime};
use longpipe_core::wire::{self, WireError};
use std::collections::BTreeMap;

/// Device 0 carries traffic toward the client (over the satellite), device 1 toward
/// the server.
pub const DEV_TO_CLIENT: usize = 0;
pub const DEV_TO_SERVER: usize = 1;

/// An IPv4 prefix (address, prefix length).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Prefix(pub [u8; 4], pub u8);

impl Prefix {
    pub fn contains(&self, a: [u8; 4]) -> bool {
        let mask = if self.1 == 0 {
            0
        } else {
            u32::MAX << (32 - self.1.min(32) as u32)
        };
        u32::from_be_bytes(a) & mask == u32::from_be_bytes(self.0) & mask
    }

    /// "10.0.0.3", "10.1.0.0/16".
    pub fn parse(s: &str) -> Option<Prefix> {
        let (a, l) = s.split_once('/').unwrap_or((s, "32"));
        let l: u8 = l.parse().ok().filter(|&l| l <= 32)?;
        let ip: std::net::Ipv4Addr = a.parse().ok()?;
        Some(Prefix(ip.octets(), l))
    }
}

impl std::fmt::Display for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = self.0;
        write!(f, "{}.{}.{}.{}/{}", a[0], a[1], a[2], a[3], self.1)
    }
}

/// The packet path's own counters (the gateway's are in `gw.stats`).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PathStats {
    /// Packets and bytes read, by device (0 toward the client, 1 toward the server).
    pub packets_in: [u64; 2],
    pub bytes_in: [u64; 2],
    /// Packets and bytes written, by device.
    pub packets_out: [u64; 2],
    pub bytes_out: [u64; 2],
    /// Passed unchanged without the gateway: not IPv4, not TCP, IPv4 fragments.
    pub passed_not_ipv4: u64,
    pub passed_not_tcp: u64,
    pub passed_fragment: u64,
    /// TCP packets whose headers did not parse or whose bytes were cut short: passed.
    pub malformed: u64,
    /// TCP packets whose IPv4 or TCP checksum failed: passed, not acted on.
    pub bad_checksum: u64,
    /// Packets from the client side the gateway kept (the client's ACKs of data it
    /// sent: the servers got the gateway's own).
    pub absorbed: u64,
    /// Writes that failed (device full, packet too large for the device).
    pub write_errors: u64,
    /// New connections passed through unaccelerated while draining.
    pub drain_passed: u64,
    /// Packets of excluded connections (`--exclude-ports`, `--exclude-hosts`), passed.
    pub passed_excluded: u64,
    /// Connections a packet loop that died held, reset on both sides by its successor,
    /// and the bytes their servers saw acknowledged (at its last snapshot).
    pub restart_reset_conns: u64,
    pub restart_lost_bytes: u64,
    /// Packets of those connections answered with RSTs (and dropped) since.
    pub restart_reset_packets: u64,
    /// The most connections the table held at once (a high-water mark).
    pub conns_peak: u64,
    /// Packets the kernel dropped on their way to the packet loop, by device: the
    /// device's queue (`--dev-queue`) was full (the loop fell behind). Read from the
    /// kernel by the worker, not counted here.
    pub dev_dropped: [u64; 2],
}

impl PathStats {
    /// A packet counted as written to device `d` (`len` bytes) whose write, done
    /// later by the caller, failed.
    pub fn unwritten(&mut self, d: usize, len: usize) {
        let d = d.min(1);
        self.packets_out[d] = self.packets_out[d].saturating_sub(1);
        self.bytes_out[d] = self.bytes_out[d].saturating_sub(len as u64);
        self.write_errors += 1;
    }
}

/// A connection a packet loop that died held: what its successor knows of it.
#[derive(Debug, Clone, Copy)]
pub struct Dead {
    /// The sequence numbers each side expects next, from the last snapshot.
    pub client_rcv_nxt: Option<u32>,
    pub server_rcv_nxt: Option<u32>,
    /// Forgotten after this (any segment of it would have come by then).
    pub until: SimTime,
}

/// How long a dead loop's connections are reset on sight: more than the longest
/// retransmission interval of a Linux sender (TCP_RTO_MAX, 120 s).
pub const DEAD_FOR: SimDuration = SimDuration::from_secs(130);

pub struct PacketPath {
    pub gw: Gateway<RawPkt>,
    pub stats: PathStats,
    clients: Vec<Prefix>,
    exclude_ports: Vec<u16>,
    exclude_hosts: Vec<Prefix>,
    /// Connections a packet loop that died held (see the module's documentation).
    pub dead: BTreeMap<ConnKey, Dead>,
    out: Vec<RawPkt>,
    buf: Vec<u8>,
    next_id: u16,
    /// Number of the read in progress.
    reads: u64,
    /// Stopping: new connections are not taken any more.
    pub draining: bool,
}

impl PacketPath {
    /// A path through a gateway with `cfg` on an uplink `up`; destinations in
    /// `clients` are written to the device toward the client.
    pub fn new(cfg: GatewayConfig, up: Uplink, clients: Vec<Prefix>) -> Self {
        PacketPath {
            gw: Gateway::new(cfg, up),
            stats: PathStats::default(),
            clients,
            exclude_ports: vec![],
            exclude_hosts: vec![],
            dead: BTreeMap::new(),
            out: Vec::new(),
            buf: Vec::with_capacity(65_536),
            next_id: 1,
            reads: 0,
            draining: false,
        }
    }

    /// Connections to or from these ports or hosts (either end) pass unaccelerated.
    pub fn exclude(&mut self, ports: Vec<u16>, hosts: Vec<Prefix>) {
        self.exclude_ports = ports;
        self.exclude_hosts = hosts;
    }

    fn excluded(&self, h: &wire::TcpIpHeader) -> bool {
        self.exclude_ports
            .iter()
            .any(|&p| p == h.src_port || p == h.dst_port)
            || self
                .exclude_hosts
                .iter()
                .any(|p| p.contains(h.src_ip) || p.contains(h.dst_ip))
    }

    /// A RST from `from` to `to` at `seq` (made by the gateway).
    fn rst(from: ([u8; 4], u16), to: ([u8; 4], u16), seq: u32, ack: u32) -> RawPkt {
        let seg = Segment {
            sport: from.1,
            dport: to.1,
            seq,
            ack,
            flags: RST | ACK,
            window: 0,
            ..Default::default()
        };
        RawPkt::made(Packet::new(from.0, to.0, seg))
    }

    /// A packet loop that died held these connections (its last snapshot): each side of
    /// each gets a RST at the number the snapshot says it expects, and the packets that
    /// come for them later are answered with RSTs at the numbers they show.
    pub fn reset_dead(
        &mut self,
        conns: Vec<(ConnKey, Dead, u64)>,
        tx: &mut impl FnMut(usize, &[u8]) -> bool,
    ) {
        let mut out = std::mem::take(&mut self.out);
        for (k, d, lost) in conns {
            let (server, client) = ((k.0, k.1), (k.2, k.3));
            // a RST at the snapshot's number, and a probe one byte below it (a
            // keep-alive's): an end that moved on since drops the RST (below its window)
            // but answers the probe with its exact ACK, which `on_dead` resets
            for (from, to, seq) in [
                (client, server, d.server_rcv_nxt),
                (server, client, d.client_rcv_nxt),
            ] {
                if let Some(seq) = seq {
                    out.push(Self::rst(from, to, seq, 0));
                    let mut probe = Self::rst(from, to, seq.wrapping_sub(1), 0);
                    probe.hdr_mut().seg.flags = ACK;
                    out.push(probe);
                }
            }
            self.stats.restart_reset_conns += 1;
            self.stats.restart_lost_bytes += lost;
            self.dead.insert(k, d);
        }
        self.emit((0, &[]), &mut out, tx);
        self.out = out;
    }

    /// A packet of a dead loop's connection: RSTs to both ends, the packet dropped. The
    /// sender gets its RST at what this packet acknowledges (its RCV.NXT); a server's
    /// peer (the client) at what the snapshot says it acknowledged, a client's peer (the
    /// server) at this packet's next byte (what the server expects from it). A RST
    /// passes; a new SYN starts afresh.
    fn on_dead(
        &mut self,
        dir: Dir,
        k: ConnKey,
        h: &wire::TcpIpHeader,
        tx: &mut impl FnMut(usize, &[u8]) -> bool,
    ) -> bool {
        let Some(d) = self.dead.get(&k).copied() else {
            return false;
        };
        if h.flags & wire::RST != 0 {
            return false;
        }
        if h.flags & wire::SYN != 0 && h.flags & wire::ACK == 0 {
            self.dead.remove(&k);
            return false;
        }
        let (server, client) = ((k.0, k.1), (k.2, k.3));
        let next = h.seq.wrapping_add(h.payload_len);
        let (me, peer, peer_expects) = match dir {
            Dir::ToClient => (server, client, d.client_rcv_nxt),
            Dir::ToServer => (client, server, Some(next)),
        };
        let mut out = std::mem::take(&mut self.out);
        if h.flags & wire::ACK != 0 {
            out.push(Self::rst(peer, me, h.ack, 0));
        }
        if let Some(seq) = peer_expects {
            out.push(Self::rst(me, peer, seq, 0));
        }
        self.stats.restart_reset_packets += 1;
        self.emit((0, &[]), &mut out, tx);
        self.out = out;
        true
    }

    fn dev_for(&self, dst: [u8; 4]) -> usize {
        if self.clients.iter().any(|p| p.contains(dst)) {
            DEV_TO_CLIENT
        } else {
            DEV_TO_SERVER
        }
    }

    /// A packet read at `now` from device `dev`; `tx(device, bytes)` writes one out
    /// and says whether it could.
    pub fn input(
        &mut self,
        now: SimTime,
        dev: usize,
        b: &[u8],
        tx: &mut impl FnMut(usize, &[u8]) -> bool,
    ) {
        let dev = dev.min(1);
        self.stats.packets_in[dev] += 1;
        self.stats.bytes_in[dev] += b.len() as u64;
        let dir = if dev == DEV_TO_CLIENT {
            Dir::ToClient
        } else {
            Dir::ToServer
        };
        let (h, st) = match wire::parse(b) {
            Ok(x) => x,
            Err(e) => {
                match e {
                    WireError::NotIpv4 => self.stats.passed_not_ipv4 += 1,
                    WireError::NotTcp => self.stats.passed_not_tcp += 1,
                    WireError::Fragment => self.stats.passed_fragment += 1,
                    WireError::Truncated | WireError::BadHeaderLength | WireError::BadOption => {
                        self.stats.malformed += 1
                    }
                }
                return self.pass(dev, b, tx);
            }
        };
        match st.tcp_ok {
            None => {
                self.stats.malformed += 1;
                return self.pass(dev, b, tx);
            }
            Some(false) => {
                self.stats.bad_checksum += 1;
                return self.pass(dev, b, tx);
            }
            Some(true) if !st.ip_ok => {
                self.stats.bad_checksum += 1;
                return self.pass(dev, b, tx);
            }
            Some(true) => {}
        }
        if (!self.exclude_ports.is_empty() || !self.exclude_hosts.is_empty()) && self.excluded(&h) {
            self.stats.passed_excluded += 1;
            return self.pass(dev, b, tx);
        }
        if !self.dead.is_empty() {
            let k = match dir {
                Dir::ToClient => (h.src_ip, h.src_port, h.dst_ip, h.dst_port),
                Dir::ToServer => (h.dst_ip, h.dst_port, h.src_ip, h.src_port),
            };
            if self.on_dead(dir, k, &h, tx) {
                return;
            }
        }
        if self.draining && h.flags & wire::SYN != 0 && h.flags & wire::ACK == 0 {
            // stopping: a new connection is left to the end hosts
            self.stats.drain_passed += 1;
            return self.pass(dev, b, tx);
        }
        let ihl = (b[0] & 0x0f) as usize * 4;
        let doff = (b[ihl + 12] >> 4) as usize * 4;
        self.reads += 1;
        let pkt = RawPkt::from_wire(self.reads, &h, b, ihl + doff);
        let mut out = std::mem::take(&mut self.out);
        self.gw.on_packet(now, dir, pkt, &mut out);
        // the table grows only on a packet (a SYN), never on a timer
        self.stats.conns_peak = self.stats.conns_peak.max(self.gw.conns() as u64);
        if dir == Dir::ToServer && !out.iter().any(|p| p.input == self.reads) {
            self.stats.absorbed += 1;
        }
        self.emit((self.reads, b), &mut out, tx);
        self.out = out;
    }

    /// What is due at `now` (resends, paced sends, reaping).
    pub fn timeout(&mut self, now: SimTime, tx: &mut impl FnMut(usize, &[u8]) -> bool) {
        if !self.dead.is_empty() {
            self.dead.retain(|_, d| d.until > now);
        }
        let mut out = std::mem::take(&mut self.out);
        self.gw.on_timer(now, &mut out);
        self.emit((0, &[]), &mut out, tx);
        self.out = out;
    }

    pub fn next_timer(&self) -> Option<SimTime> {
        self.gw.next_timer()
    }

    /// Writes packets the gateway made outside a packet or a timer (the RSTs of a stop).
    pub fn write_made(&mut self, out: &mut Vec<RawPkt>, tx: &mut impl FnMut(usize, &[u8]) -> bool) {
        self.emit((0, &[]), out, tx);
    }

    fn pass(&mut self, dev: usize, b: &[u8], tx: &mut impl FnMut(usize, &[u8]) -> bool) {
        // unchanged, on toward where it was going
        let d = if dev == DEV_TO_CLIENT {
            DEV_TO_CLIENT
        } else {
            DEV_TO_SERVER
        };
        self.write(d, b, tx);
    }

    fn write(&mut self, d: usize, b: &[u8], tx: &mut impl FnMut(usize, &[u8]) -> bool) {
        if tx(d, b) {
            self.stats.packets_out[d] += 1;
            self.stats.bytes_out[d] += b.len() as u64;
        } else {
            self.stats.write_errors += 1;
        }
    }

    fn emit(
        &mut self,
        input: (u64, &[u8]),
        out: &mut Vec<RawPkt>,
        tx: &mut impl FnMut(usize, &[u8]) -> bool,
    ) {
        let mut buf = std::mem::take(&mut self.buf);
        for p in out.drain(..) {
            p.encode(input, &mut self.next_id, &mut buf);
            let d = self.dev_for(p.hdr.dst);
            self.write(d, &buf, tx);
        }
        self.buf = buf;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pkt::build_packet;
    use longpipe_core::middlebox::gateway::GatewaySpec;
    use longpipe_core::time::Rate;
    use longpipe_core::wire::{TcpIpHeader, TcpOptions, ACK, PSH, SYN};

    const SERVER: [u8; 4] = [10, 0, 0, 1];
    const CLIENT: [u8; 4] = [10, 0, 0, 3];

    fn path() -> PacketPath {
        let spec: GatewaySpec = serde_json::from_str("{}").unwrap();
        let up = Uplink {
            rate: Some(Rate(10_000_000)),
            bdp: 750_000,
        };
        PacketPath::new(
            spec.resolve("gateway").unwrap(),
            up,
            vec![Prefix::parse("10.0.0.3").unwrap()],
        )
    }

    fn hdr(from_client: bool, flags: u8, seq: u32, ack: u32) -> TcpIpHeader {
        let (src, dst, sp, dp) = if from_client {
            (CLIENT, SERVER, 40_000, 80)
        } else {
            (SERVER, CLIENT, 80, 40_000)
        };
        TcpIpHeader {
            src_ip: src,
            dst_ip: dst,
            ip_id: 9,
            tos: 0,
            ttl: 63,
            src_port: sp,
            dst_port: dp,
            seq,
            ack,
            flags,
            window: 8000,
            options: TcpOptions::default(),
            payload_len: 0,
        }
    }

    /// Feeds one packet; returns what was written, by device.
    fn feed(p: &mut PacketPath, t: u64, dev: usize, b: &[u8]) -> Vec<(usize, Vec<u8>)> {
        let mut w = vec![];
        p.input(SimTime(t), dev, b, &mut |d, x| {
            w.push((d, x.to_vec()));
            true
        });
        w
    }

    fn parsed(b: &[u8]) -> TcpIpHeader {
        let (h, st) = wire::parse(b).expect("parses");
        assert!(st.all_ok(), "checksums verify");
        h
    }

    #[test]
    fn a_download_on_raw_bytes_is_accelerated_with_payloads_intact() {
        let mut p = path();
        let mut syn = hdr(true, SYN, 1000, 0);
        syn.options.mss = Some(1448);
        syn.options.wscale = Some(7);
        syn.options.sack_permitted = true;
        let b = build_packet(&syn, &[]);
        let w = feed(&mut p, 1, DEV_TO_SERVER, &b);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].0, DEV_TO_SERVER);
        assert_eq!(
            parsed(&w[0].1).options.wscale,
            Some(7),
            "a large enough scale: kept"
        );
        let mut synack = hdr(false, SYN | ACK, 5000, 1001);
        synack.options = syn.options;
        let w = feed(&mut p, 2, DEV_TO_CLIENT, &build_packet(&synack, &[]));
        assert_eq!((w.len(), w[0].0), (1, DEV_TO_CLIENT));
        let ack = build_packet(&hdr(true, ACK, 1001, 5001), &[]);
        let w = feed(&mut p, 3, DEV_TO_SERVER, &ack);
        assert_eq!(
            w,
            vec![(DEV_TO_SERVER, ack.clone())],
            "the handshake ACK, unchanged"
        );
        let req = b"GET / HTTP/1.0\r\n\r\n";
        let w = feed(
            &mut p,
            4,
            DEV_TO_SERVER,
            &build_packet(&hdr(true, ACK | PSH, 1001, 5001), req),
        );
        assert_eq!(w.len(), 1);
        let h = parsed(&w[0].1);
        assert_eq!((h.seq, h.payload_len), (1001, req.len() as u32));
        assert_eq!(&w[0].1[h.header_len()..], req, "the request intact");
        // the server's answer: 1448 B of data, acknowledged in the client's name at once
        let data: Vec<u8> = (0..1448u32).map(|i| (i * 7 % 251) as u8).collect();
        let rq = 1001 + req.len() as u32;
        let w = feed(
            &mut p,
            5,
            DEV_TO_CLIENT,
            &build_packet(&hdr(false, ACK, 5001, rq), &data),
        );
        assert_eq!(w.len(), 2, "a spoofed ACK and the data: {w:?}");
        let spoofed = w
            .iter()
            .find(|x| x.0 == DEV_TO_SERVER)
            .expect("toward the server");
        let a = parsed(&spoofed.1);
        assert_eq!(
            (a.src_ip, a.dst_ip, a.seq, a.ack),
            (CLIENT, SERVER, rq, 5001 + 1448)
        );
        assert_eq!(a.ttl, 64, "made by the gateway");
        let sent = w
            .iter()
            .find(|x| x.0 == DEV_TO_CLIENT)
            .expect("toward the client");
        let d = parsed(&sent.1);
        assert_eq!((d.seq, d.ack, d.payload_len, d.ttl), (5001, rq, 1448, 63));
        assert_eq!(&sent.1[d.header_len()..], &data[..], "payload intact");
        assert_eq!(p.gw.held_bytes(&(SERVER, 80, CLIENT, 40_000)), Some(1448));
        // the client's ACK is the gateway's: absorbed, and it releases the data
        let w = feed(
            &mut p,
            6,
            DEV_TO_SERVER,
            &build_packet(&hdr(true, ACK, rq, 5001 + 1448), &[]),
        );
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(p.stats.absorbed, 1);
        assert_eq!(p.gw.held_bytes(&(SERVER, 80, CLIENT, 40_000)), Some(0));
    }

    #[test]
    fn broken_packets_pass_unchanged_and_are_never_acknowledged() {
        let mut p = path();
        let syn = build_packet(&hdr(true, SYN, 1000, 0), &[]);
        feed(&mut p, 1, DEV_TO_SERVER, &syn);
        feed(
            &mut p,
            2,
            DEV_TO_CLIENT,
            &build_packet(&hdr(false, SYN | ACK, 5000, 1001), &[]),
        );
        // data with a bad TCP checksum: passed as it came, no spoofed ACK
        let mut bad = build_packet(&hdr(false, ACK, 5001, 1001), &[1, 2, 3, 4]);
        let n = bad.len();
        bad[n - 1] ^= 0xff;
        let w = feed(&mut p, 3, DEV_TO_CLIENT, &bad);
        assert_eq!(w, vec![(DEV_TO_CLIENT, bad.clone())]);
        assert_eq!((p.stats.bad_checksum, p.gw.stats.spoofed_acks), (1, 0));
        // cut short inside the payload; a TCP option running past its area; garbage
        let good = build_packet(&hdr(false, ACK, 5001, 1001), &[9; 100]);
        let w = feed(&mut p, 4, DEV_TO_CLIENT, &good[..good.len() - 10]);
        assert_eq!(w.len(), 1);
        let mut opt = hdr(false, ACK, 5001, 1001);
        opt.options.mss = Some(1);
        let mut o = build_packet(&opt, &[]);
        o[wire::IPV4_HEADER_LEN + wire::TCP_HEADER_LEN + 1] = 40; // MSS option length 40
        feed(&mut p, 5, DEV_TO_CLIENT, &o);
        feed(&mut p, 6, DEV_TO_CLIENT, &[0x45, 0, 0]);
        assert_eq!(p.stats.malformed, 3);
        feed(&mut p, 7, DEV_TO_CLIENT, &[0x60; 40]);
        let mut udp = good.clone();
        udp[9] = 17;
        feed(&mut p, 8, DEV_TO_CLIENT, &udp);
        assert_eq!((p.stats.passed_not_ipv4, p.stats.passed_not_tcp), (1, 1));
        assert_eq!(p.stats.packets_out, [7, 1], "everything passed on");
        assert_eq!(p.gw.stats.spoofed_acks, 0);
    }

    /// What a stop would lose: data acknowledged to the server (spoofed ACKs) that the
    /// client has not acknowledged, and only that.
    #[test]
    fn held_totals_report_what_was_acknowledged_and_not_delivered() {
        let mut p = path();
        feed(
            &mut p,
            1,
            DEV_TO_SERVER,
            &build_packet(&hdr(true, SYN, 1000, 0), &[]),
        );
        feed(
            &mut p,
            2,
            DEV_TO_CLIENT,
            &build_packet(&hdr(false, SYN | ACK, 5000, 1001), &[]),
        );
        for k in 0..4u32 {
            let d = build_packet(&hdr(false, ACK, 5001 + 500 * k, 1001), &[7; 500]);
            feed(&mut p, 3 + k as u64, DEV_TO_CLIENT, &d);
        }
        assert_eq!(p.gw.stats.spoofed_acks, 4);
        assert_eq!(p.gw.held_totals(), (2000, 2000));
        // the client acknowledges the first 1500 bytes
        feed(
            &mut p,
            10,
            DEV_TO_SERVER,
            &build_packet(&hdr(true, ACK, 1001, 6501), &[]),
        );
        assert_eq!(p.gw.held_totals(), (500, 500));
    }

    /// The client's SYN and the server's SYN-ACK of connection `i` (port 40 000 + i): a
    /// connection from the answer on.
    fn open(p: &mut PacketPath, t: u64, i: u16) {
        let mut h = hdr(true, SYN, 1000, 0);
        h.src_port += i;
        feed(p, t, DEV_TO_SERVER, &build_packet(&h, &[]));
        let mut h = hdr(false, SYN | ACK, 5000, 1001);
        h.dst_port += i;
        feed(p, t, DEV_TO_CLIENT, &build_packet(&h, &[]));
    }

    /// The client's reset (at its next sequence number: accepted).
    fn rst(i: u16) -> Vec<u8> {
        let mut h = hdr(true, wire::RST | ACK, 1001, 0);
        h.src_port += i;
        build_packet(&h, &[])
    }

    /// The high-water mark is the most connections held at once: not the connections
    /// now, nor all ever opened.
    #[test]
    fn the_peak_is_the_most_connections_held_at_once() {
        let mut p = path();
        for i in 0..3 {
            open(&mut p, 1 + i as u64, i);
        }
        assert_eq!((p.gw.conns(), p.stats.conns_peak), (3, 3));
        feed(&mut p, 10, DEV_TO_SERVER, &rst(0));
        feed(&mut p, 11, DEV_TO_SERVER, &rst(1));
        open(&mut p, 12, 3);
        // a SYN-ACK sent again is the same connection
        open(&mut p, 13, 3);
        assert_eq!(p.gw.conns(), 2);
        assert_eq!(p.gw.stats.conns_opened, 4);
        assert_eq!(p.stats.conns_peak, 3);
        let m = crate::metrics::render(&p, 1.0);
        assert!(m.contains("longpipe_gateway_connections 2\n"), "{m}");
        assert!(m.contains("longpipe_gateway_connections_peak 3\n"), "{m}");
        assert!(
            m.contains("longpipe_gateway_rst_total{verdict=\"accepted\"} 2\n"),
            "{m}"
        );
        assert!(crate::metrics::line(&p).contains("conns 2 (peak 3 "));
    }

    #[test]
    fn while_draining_new_connections_are_left_alone() {
        let mut p = path();
        p.draining = true;
        let syn = build_packet(&hdr(true, SYN, 1000, 0), &[]);
        let w = feed(&mut p, 1, DEV_TO_SERVER, &syn);
        assert_eq!(w, vec![(DEV_TO_SERVER, syn)]);
        assert_eq!((p.gw.conns(), p.stats.drain_passed), (0, 1));
    }

    #[test]
    fn excluded_ports_and_hosts_pass_unaccelerated() {
        let mut syn = hdr(true, SYN, 1000, 0);
        syn.options.mss = Some(1448);
        syn.options.wscale = Some(2); // the gateway would rewrite it
        let b = build_packet(&syn, &[]);
        for (ports, hosts) in [
            (vec![80], vec![]),
            (vec![], vec![Prefix::parse("10.0.0.1").unwrap()]),
        ] {
            let mut p = path();
            p.exclude(ports, hosts);
            let w = feed(&mut p, 1, DEV_TO_SERVER, &b);
            assert_eq!(w, vec![(DEV_TO_SERVER, b.clone())], "unchanged");
            assert_eq!((p.stats.passed_excluded, p.gw.half_open()), (1, 0));
        }
        let mut p = path();
        p.exclude(vec![22], vec![Prefix::parse("192.0.2.0/24").unwrap()]);
        let w = feed(&mut p, 1, DEV_TO_SERVER, &b);
        // not excluded: the client's scale (2) is replaced by the gateway's own, which
        // follows its buffer (at least 1 MB: a shift of 4 or more)
        let ws = parsed(&w[0].1).options.wscale;
        assert!(
            ws.is_some_and(|s| s >= 4),
            "not excluded: rewritten, got {ws:?}"
        );
        assert_eq!((p.stats.passed_excluded, p.gw.half_open()), (0, 1));
    }

    #[test]
    fn a_dead_loops_connections_are_reset_at_the_numbers_their_packets_show() {
        let mut p = path();
        let k = (SERVER, 80, CLIENT, 40_000);
        let d = Dead {
            client_rcv_nxt: Some(5000),
            server_rcv_nxt: Some(1001),
            until: SimTime(10_000),
        };
        let mut w: Vec<(usize, Vec<u8>)> = vec![];
        p.reset_dead(vec![(k, d, 777)], &mut |dev, b| {
            w.push((dev, b.to_vec()));
            true
        });
        let rst = |x: &(usize, Vec<u8>)| {
            let h = parsed(&x.1);
            assert_eq!(h.flags & wire::RST, wire::RST);
            (x.0, h.src_ip, h.seq)
        };
        let resets: Vec<_> = w.iter().step_by(2).map(rst).collect();
        assert_eq!(
            resets,
            vec![(DEV_TO_SERVER, CLIENT, 1001), (DEV_TO_CLIENT, SERVER, 5000)],
            "both ends, at the snapshot's numbers"
        );
        // each followed by a probe one byte below (an ACK the end answers)
        let probes: Vec<_> = w
            .iter()
            .skip(1)
            .step_by(2)
            .map(|x| {
                let h = parsed(&x.1);
                (x.0, h.flags, h.seq)
            })
            .collect();
        assert_eq!(
            probes,
            vec![
                (DEV_TO_SERVER, wire::ACK, 1000),
                (DEV_TO_CLIENT, wire::ACK, 4999)
            ]
        );
        assert_eq!(
            (p.stats.restart_reset_conns, p.stats.restart_lost_bytes),
            (1, 777)
        );
        // the server's next segment: its RST at what it acknowledges, the client's at
        // the snapshot's; the segment itself dropped
        let data = build_packet(&hdr(false, ACK, 6000, 1500), &[1u8; 100]);
        let w = feed(&mut p, 2, DEV_TO_CLIENT, &data);
        assert_eq!(
            w.iter().map(rst).collect::<Vec<_>>(),
            vec![(DEV_TO_SERVER, CLIENT, 1500), (DEV_TO_CLIENT, SERVER, 5000)]
        );
        // the client's: its RST at what it acknowledges, the server's at its next byte
        let ack = build_packet(&hdr(true, ACK, 1500, 5100), &[]);
        let w = feed(&mut p, 3, DEV_TO_SERVER, &ack);
        assert_eq!(
            w.iter().map(rst).collect::<Vec<_>>(),
            vec![(DEV_TO_CLIENT, SERVER, 5100), (DEV_TO_SERVER, CLIENT, 1500)]
        );
        assert_eq!(p.stats.restart_reset_packets, 2);
        // a RST passes untouched
        let r = build_packet(&hdr(true, wire::RST, 1500, 0), &[]);
        assert_eq!(
            feed(&mut p, 4, DEV_TO_SERVER, &r),
            vec![(DEV_TO_SERVER, r.clone())]
        );
        // forgotten after `until`
        p.timeout(SimTime(20_000), &mut |_, _| true);
        assert!(p.dead.is_empty());
        let w = feed(&mut p, 20_001, DEV_TO_SERVER, &ack);
        assert!(
            w.iter().all(|x| parsed(&x.1).flags & wire::RST == 0),
            "passed on now"
        );
    }
}
