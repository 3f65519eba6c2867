//! The simulation: builds nodes, links, routes and flows from a [`ValidScenario`], runs
//! the event loop to the scenario's duration, and gathers results.

use crate::engine::EventQueue;
use crate::l2::rlc::RlcLink;
use crate::middlebox::gateway::Gateway;
use crate::net::link::{Enqueued, LinkDir};
use crate::net::loss::LossState;
use crate::net::packet::{Packet, Segment, ACK, SYN, TCPIP_HEADER};
use crate::net::routing::Routes;
use crate::results::{FlowResult, GatewayResult, L2Result, LinkResult, SimResult, SimStats};
use crate::rng::{stable_hash, RngStream};
use crate::scenario::{PartialAckTimer, ScenarioError, ValidScenario};
use crate::tcp::receiver::{Receiver, ReceiverConfig};
use crate::tcp::sender::{Sender, SenderConfig};
use crate::tcp::FlowTrace;
use crate::time::SimTime;
use crate::wire::{PcapWriter, SackBlocks, TcpIpHeader, TcpOptions};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Which flows record time series.
#[derive(Debug, Clone, Default)]
pub enum TraceSel {
    #[default]
    None,
    All,
    Flows(Vec<usize>),
}

/// Options of one run that are not part of the scenario.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub seed: Option<u64>,
    pub trace: TraceSel,
    /// Capture points, "A-B": the interface of node A on the link A–B (packets A sends
    /// on it as their transmission starts, packets arriving from B as they arrive).
    pub pcap: Vec<String>,
    /// Set from another thread to stop the run early (checked every few thousand
    /// events); the output then has `interrupted = true` and must not be used as a result.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Simulated time reached so far, in ns, for progress reports from another thread.
    pub progress: Option<Arc<AtomicU64>>,
}

pub struct RunOutput {
    pub result: SimResult,
    pub traces: Vec<(usize, FlowTrace)>,
    /// (spec, pcap file bytes)
    pub pcaps: Vec<(String, Vec<u8>)>,
    /// The run was stopped through `RunOptions::cancel` before its end.
    pub interrupted: bool,
}

enum Ev {
    FlowStart(u32),
    L2Wake(u32),
    GwTimer(u32),
    TxDone(u32),
    Arrive { dir: u32, pkt: Packet },
    Timer { flow: u32, rx: bool },
}

struct FlowRt {
    sender: Sender,
    receiver: Receiver,
    /// Time of the pending timer event of [sender, receiver], if any.
    timer_at: [Option<SimTime>; 2],
}

struct Capture {
    spec: String,
    writer: PcapWriter,
}

/// Per direction: the nodes it joins and the capture it feeds.
struct DirMeta {
    from: u32,
    to: u32,
    cap_tx: Option<u32>,
    cap_rx: Option<u32>,
}

pub struct Sim<'a> {
    sc: &'a ValidScenario,
    q: EventQueue<Ev>,
    dirs: Vec<LinkDir>,
    meta: Vec<DirMeta>,
    routes: Routes,
    flows: Vec<FlowRt>,
    caps: Vec<Capture>,
    next_uid: u64,
    out: Vec<Segment>,
    seed: u64,
    /// Link layers by direction, and the time of each one's pending wake-up event.
    l2: Vec<Option<RlcLink>>,
    l2_wake: Vec<Option<SimTime>>,
    l2_out: Vec<(SimTime, Packet)>,
    /// TCP gateways by node, and the time of each one's pending timer event.
    gw: Vec<Option<Gateway>>,
    gw_timer: Vec<Option<SimTime>>,
}

fn rlc_result(sc: &ValidScenario, m: &DirMeta, i: usize, r: &RlcLink) -> LinkResult {
    let st = &r.stats;
    let info = &sc.links[i / 2].dirs[i % 2];
    let cfg = info.layer2.as_ref().expect("rlc config");
    // PDU slots of the TTIs that start in [warmup, end)
    let tti = cfg.tti.as_nanos();
    let first = sc.warmup.0.div_ceil(tti);
    let last = sc.duration.0.saturating_sub(1) / tti;
    let slots = (last + 1).saturating_sub(first) as f64 * r.pdus_per_tti() as f64;
    let mut d = st.sdu_delay_ns.clone();
    d.sort_unstable();
    let q = |f: f64| {
        (!d.is_empty()).then(|| d[((d.len() - 1) as f64 * f).round() as usize] as f64 * 1e-9)
    };
    LinkResult {
        a: sc.nodes[m.from as usize].name.clone(),
        b: sc.nodes[m.to as usize].name.clone(),
        dir: direction(i),
        utilization: if slots > 0.0 {
            st.slots_used as f64 / slots
        } else {
            0.0
        },
        packets: st.sdus_in,
        bytes: 0,
        drops_queue: st.sdus_dropped_queue,
        drops_loss: st.sdus_discarded,
        max_queue_packets: 0,
        l2: Some(L2Result {
            kind: "rlc-am".into(),
            pdus_per_tti: r.pdus_per_tti(),
            pdus_sent: st.pdus_sent,
            pdus_retransmitted: st.pdus_retransmitted,
            pdus_lost: st.pdus_lost,
            status_sent: st.status_sent,
            polls: st.polls,
            sdus_delivered: st.sdus_delivered,
            sdus_discarded: st.sdus_discarded,
            sdu_delay_mean_s: (!d.is_empty())
                .then(|| d.iter().sum::<u64>() as f64 / d.len() as f64 * 1e-9),
            sdu_delay_p50_s: q(0.5),
            sdu_delay_p95_s: q(0.95),
            sdu_delay_max_s: q(1.0),
        }),
    }
}

/// "forward" for a link's a->b direction (even index), "reverse" for b->a.
fn direction(i: usize) -> String {
    if i.is_multiple_of(2) {
        "forward"
    } else {
        "reverse"
    }
    .to_string()
}

fn isn(flow: usize, rx: bool) -> u32 {
    stable_hash(&format!("isn/{flow}/{}", if rx { "rx" } else { "tx" })) as u32
}

fn node_ip(n: u32) -> [u8; 4] {
    let i = n + 1;
    [10, (i >> 16) as u8, (i >> 8) as u8, i as u8]
}

fn parse_capture(sc: &ValidScenario, spec: &str) -> Result<(usize, bool), ScenarioError> {
    for (i, _) in spec.match_indices('-') {
        let (a, b) = (&spec[..i], &spec[i + 1..]);
        if let (Some(na), Some(nb)) = (sc.node_index(a), sc.node_index(b)) {
            for (li, l) in sc.links.iter().enumerate() {
                if l.a == na && l.b == nb {
                    return Ok((li, true));
                }
                if l.a == nb && l.b == na {
                    return Ok((li, false));
                }
            }
        }
    }
    Err(ScenarioError {
        path: "pcap".into(),
        msg: format!(
            "{spec:?} names no link: expected \"A-B\" where A and B are the two nodes of a link"
        ),
    })
}

impl<'a> Sim<'a> {
    pub fn new(sc: &'a ValidScenario, opts: &RunOptions) -> Result<Sim<'a>, ScenarioError> {
        let seed = opts.seed.unwrap_or(sc.seed);
        let mut dirs = Vec::with_capacity(sc.links.len() * 2);
        let mut meta = Vec::with_capacity(sc.links.len() * 2);
        let mut l2 = Vec::with_capacity(sc.links.len() * 2);
        for l in &sc.links {
            for (d, info) in l.dirs.iter().enumerate() {
                let (from, to) = if d == 0 { (l.a, l.b) } else { (l.b, l.a) };
                let name = format!("link/{}->{}/loss", sc.nodes[from].name, sc.nodes[to].name);
                let loss = LossState::new(info.loss.clone(), RngStream::new(seed, &name));
                l2.push(info.layer2.clone().map(|cfg| {
                    let rev = &l.dirs[1 - d];
                    RlcLink::new(
                        cfg,
                        info.rate,
                        info.delay,
                        rev.delay,
                        info.limit,
                        loss.clone(),
                        sc.warmup,
                    )
                }));
                dirs.push(LinkDir::new(
                    info.rate, info.delay, info.limit, loss, sc.warmup,
                ));
                meta.push(DirMeta {
                    from: from as u32,
                    to: to as u32,
                    cap_tx: None,
                    cap_rx: None,
                });
            }
        }
        let mut caps = Vec::new();
        for spec in &opts.pcap {
            let (li, at_a) = parse_capture(sc, spec)?;
            let (out_dir, in_dir) = if at_a {
                (2 * li, 2 * li + 1)
            } else {
                (2 * li + 1, 2 * li)
            };
            let k = caps.len() as u32;
            meta[out_dir].cap_tx = Some(k);
            meta[in_dir].cap_rx = Some(k);
            caps.push(Capture {
                spec: spec.clone(),
                writer: PcapWriter::new(128),
            });
        }
        let pairs: Vec<(usize, usize)> = sc.links.iter().map(|l| (l.a, l.b)).collect();
        let mut dests: Vec<usize> = sc.flows.iter().flat_map(|f| [f.dst, f.src]).collect();
        dests.sort_unstable();
        dests.dedup();
        let routes = Routes::compute(sc.nodes.len(), &pairs, &dests);
        let mut flows = Vec::with_capacity(sc.flows.len());
        for f in &sc.flows {
            if !routes.reachable(f.src, f.dst) || !routes.reachable(f.dst, f.src) {
                return Err(ScenarioError {
                    path: format!("flow[{}]", f.spec_index),
                    msg: format!(
                        "no route between {:?} and {:?}",
                        sc.nodes[f.src].name, sc.nodes[f.dst].name
                    ),
                });
            }
            let (cc, recovery) = crate::tcp::controller(f.tcp, f.hybla);
            let trace = match &opts.trace {
                TraceSel::None => false,
                TraceSel::All => true,
                TraceSel::Flows(v) => v.contains(&f.id),
            };
            let sender = Sender::new(
                SenderConfig {
                    mss: f.mss,
                    iw_bytes: f.iw_bytes,
                    initial_rto: f.initial_rto,
                    min_rto: f.min_rto,
                    max_rto: f.max_rto,
                    app_bytes: f.app_bytes,
                    recovery,
                    sack_permitted: f.sack,
                    warmup: sc.warmup,
                    initial_ssthresh: f.ssthresh,
                    partial_ack_timer_every: f.partial_ack_timer == PartialAckTimer::Every,
                    limited_transmit: f.limited_transmit,
                },
                cc,
                trace,
            );
            let receiver = Receiver::new(ReceiverConfig {
                mss: f.mss,
                buffer: f.rwnd,
                delayed_ack: f.delayed_ack,
                delayed_ack_timeout: f.delayed_ack_timeout,
                sack: f.sack,
                app_bytes: f.app_bytes,
                warmup: sc.warmup,
            });
            flows.push(FlowRt {
                sender,
                receiver,
                timer_at: [None, None],
            });
        }
        let mut q = EventQueue::new();
        for f in &sc.flows {
            q.schedule(f.start, Ev::FlowStart(f.id as u32));
        }
        Ok(Sim {
            sc,
            q,
            dirs,
            meta,
            routes,
            flows,
            caps,
            next_uid: 0,
            out: Vec::new(),
            seed,
            l2_wake: vec![None; l2.len()],
            l2,
            l2_out: Vec::new(),
            gw: sc
                .nodes
                .iter()
                .map(|n| n.gateway.clone().map(|c| Gateway::new(c, sc.warmup)))
                .collect(),
            gw_timer: vec![None; sc.nodes.len()],
        })
    }

    pub fn run(mut self, opts: &RunOptions) -> RunOutput {
        let end = self.sc.duration;
        let mut interrupted = false;
        let mut tick = 0u32;
        while let Some((now, ev)) = self.q.pop_until(end) {
            tick = tick.wrapping_add(1);
            if tick % 4096 == 0 {
                if let Some(p) = &opts.progress {
                    p.store(now.0, Ordering::Relaxed);
                }
                if opts.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
                    interrupted = true;
                    break;
                }
            }
            match ev {
                Ev::FlowStart(f) => {
                    let mut out = std::mem::take(&mut self.out);
                    self.flows[f as usize].sender.start(now, &mut out);
                    self.emit(now, f, false, &mut out);
                    self.out = out;
                    self.sync_timer(f, false);
                }
                Ev::L2Wake(d) => {
                    let di = d as usize;
                    if self.l2_wake[di] != Some(now) {
                        continue;
                    }
                    self.l2_wake[di] = None;
                    let mut out = std::mem::take(&mut self.l2_out);
                    self.l2[di]
                        .as_mut()
                        .expect("l2 direction")
                        .on_wake(now, &mut out);
                    for (t, pkt) in out.drain(..) {
                        self.q.schedule(t, Ev::Arrive { dir: d, pkt });
                    }
                    self.l2_out = out;
                    self.sync_l2(di, now);
                }
                Ev::GwTimer(n) => {
                    if self.gw_timer[n as usize] != Some(now) {
                        continue;
                    }
                    self.gw_timer[n as usize] = None;
                    let mut out = Vec::new();
                    self.gw[n as usize]
                        .as_mut()
                        .expect("gateway node")
                        .on_timer(now, &mut out);
                    self.gw_emit(now, n, out);
                }
                Ev::TxDone(d) => {
                    let (arrival, next) = self.dirs[d as usize].finish_tx(now);
                    if let Some((t, pkt)) = arrival {
                        self.q.schedule(t, Ev::Arrive { dir: d, pkt });
                    }
                    if let Some(done) = next {
                        self.tx_started(d, now);
                        self.q.schedule(done, Ev::TxDone(d));
                    }
                }
                Ev::Arrive { dir, pkt } => {
                    if let Some(k) = self.meta[dir as usize].cap_rx {
                        self.capture(k, now, &pkt);
                    }
                    let node = self.meta[dir as usize].to;
                    if node == pkt.dst {
                        self.deliver(now, pkt);
                    } else if let Some(gw) = self.gw[node as usize].as_mut() {
                        let mut out = Vec::new();
                        gw.on_packet(now, pkt, &mut out);
                        self.gw_emit(now, node, out);
                    } else {
                        self.forward(now, node, pkt);
                    }
                }
                Ev::Timer { flow, rx } => {
                    let slot = &mut self.flows[flow as usize].timer_at[rx as usize];
                    if *slot != Some(now) {
                        continue; // superseded by an earlier deadline
                    }
                    *slot = None;
                    let mut out = std::mem::take(&mut self.out);
                    let fr = &mut self.flows[flow as usize];
                    if rx {
                        fr.receiver.on_timer(now, &mut out);
                    } else {
                        fr.sender.on_timer(now, &mut out);
                    }
                    self.emit(now, flow, rx, &mut out);
                    self.out = out;
                    self.sync_timer(flow, rx);
                }
            }
        }
        let mut out = self.finish();
        out.interrupted = interrupted;
        out
    }

    fn deliver(&mut self, now: SimTime, pkt: Packet) {
        let f = pkt.flow;
        let rx = pkt.seg.from_sender;
        let mut out = std::mem::take(&mut self.out);
        let fr = &mut self.flows[f as usize];
        if rx {
            fr.receiver.on_segment(now, &pkt.seg, &mut out);
        } else {
            fr.sender.on_segment(now, &pkt.seg, &mut out);
        }
        self.emit(now, f, rx, &mut out);
        self.out = out;
        self.sync_timer(f, rx);
    }

    /// Turns segments emitted by an endpoint into packets and sends them.
    fn emit(&mut self, now: SimTime, flow: u32, rx: bool, out: &mut Vec<Segment>) {
        let info = &self.sc.flows[flow as usize];
        let (src, dst) = if rx {
            (info.dst, info.src)
        } else {
            (info.src, info.dst)
        };
        for seg in out.drain(..) {
            let size = TCPIP_HEADER + seg.options_len() + seg.len;
            let pkt = Packet {
                uid: self.next_uid,
                flow,
                src: src as u32,
                dst: dst as u32,
                size,
                prio: 0,
                created: now,
                seg,
            };
            self.next_uid += 1;
            self.forward(now, src as u32, pkt);
        }
    }

    fn forward(&mut self, now: SimTime, node: u32, pkt: Packet) {
        let (link, d) = self
            .routes
            .next(node as usize, pkt.dst as usize)
            .expect("route checked at setup");
        let di = (link * 2 + d as u32) as usize;
        if let Some(rlc) = self.l2[di].as_mut() {
            let cap = self.meta[di].cap_tx.map(|k| (k, pkt.clone()));
            if rlc.enqueue(now, pkt).is_ok() {
                if let Some((k, p)) = cap {
                    self.capture(k, now, &p);
                }
            }
            self.sync_l2(di, now);
            return;
        }
        match self.dirs[di].enqueue(now, pkt) {
            Enqueued::Started(done) => {
                self.tx_started(di as u32, now);
                self.q.schedule(done, Ev::TxDone(di as u32));
            }
            Enqueued::Queued | Enqueued::Dropped(_) => {}
        }
    }

    fn gw_emit(&mut self, now: SimTime, node: u32, out: Vec<Packet>) {
        for mut p in out {
            p.uid = self.next_uid;
            self.next_uid += 1;
            self.forward(now, node, p);
        }
        let Some(t) = self.gw[node as usize].as_ref().and_then(|g| g.next_timer()) else {
            return;
        };
        let t = t.max(now);
        if self.gw_timer[node as usize].is_none_or(|s| t < s) {
            self.gw_timer[node as usize] = Some(t);
            self.q.schedule(t, Ev::GwTimer(node));
        }
    }

    fn sync_l2(&mut self, di: usize, now: SimTime) {
        let Some(w) = self.l2[di].as_ref().and_then(|r| r.next_wake(now)) else {
            return;
        };
        if self.l2_wake[di].is_none_or(|s| w < s) {
            self.l2_wake[di] = Some(w);
            self.q.schedule(w, Ev::L2Wake(di as u32));
        }
    }

    fn tx_started(&mut self, dir: u32, now: SimTime) {
        if let Some(k) = self.meta[dir as usize].cap_tx {
            let pkt = self.dirs[dir as usize]
                .in_transmission()
                .expect("just started")
                .clone();
            self.capture(k, now, &pkt);
        }
    }

    fn sync_timer(&mut self, flow: u32, rx: bool) {
        let fr = &mut self.flows[flow as usize];
        let deadline = if rx {
            fr.receiver.next_timer()
        } else {
            fr.sender.next_timer()
        };
        if let Some(d) = deadline {
            let slot = &mut fr.timer_at[rx as usize];
            if slot.is_none_or(|s| d < s) {
                *slot = Some(d);
                self.q.schedule(d, Ev::Timer { flow, rx });
            }
        }
    }

    fn capture(&mut self, k: u32, now: SimTime, pkt: &Packet) {
        let f = pkt.flow as usize;
        let seg = &pkt.seg;
        let rx = !seg.from_sender;
        let (sport, dport) = {
            let client = 49_152 + (f % 16_384) as u16;
            if rx {
                (5001, client)
            } else {
                (client, 5001)
            }
        };
        // Window field: unscaled in SYNs, otherwise shifted by the sender's own scale.
        let shift = if rx { self.flows[f].receiver.wscale } else { 0 };
        let window = if seg.flags & SYN != 0 {
            seg.wnd
        } else {
            seg.wnd >> shift
        };
        let mut options = TcpOptions::default();
        if let Some((mss, ws, sack_ok)) = seg.syn_opts {
            options.mss = Some(mss);
            options.wscale = Some(ws);
            options.sack_permitted = sack_ok;
        }
        let peer_isn = isn(f, !rx);
        if let Some(s) = &seg.sack {
            let mut b = SackBlocks::default();
            for i in 0..s.n as usize {
                let (l, r) = s.blocks[i];
                b.blocks[i] = (
                    peer_isn.wrapping_add(l as u32),
                    peer_isn.wrapping_add(r as u32),
                );
            }
            b.n = s.n;
            options.sack = b;
        }
        let h = TcpIpHeader {
            src_ip: node_ip(pkt.src),
            dst_ip: node_ip(pkt.dst),
            ip_id: pkt.uid as u16,
            ttl: 64,
            src_port: sport,
            dst_port: dport,
            seq: isn(f, rx).wrapping_add(seg.seq as u32),
            ack: if seg.flags & ACK != 0 {
                peer_isn.wrapping_add(seg.ack as u32)
            } else {
                0
            },
            flags: seg.flags,
            window: window.min(65_535) as u16,
            options,
            payload_len: seg.len,
        };
        debug_assert_eq!(h.total_len() as u32, pkt.size);
        self.caps[k as usize].writer.record_header(now.0, &h);
    }

    fn finish(mut self) -> RunOutput {
        let sc = self.sc;
        let end = sc.duration;
        for d in &mut self.dirs {
            d.close(end);
        }
        let measured = (end - sc.warmup).as_secs_f64();
        let mut flows = Vec::with_capacity(sc.flows.len());
        for (info, fr) in sc.flows.iter().zip(&self.flows) {
            let s = &fr.sender.stats;
            let completed = fr.receiver.completed_at;
            let t0 = info.start.max(sc.warmup);
            let t1 = completed.unwrap_or(end).max(t0);
            let span = (t1 - t0).as_secs_f64();
            let bytes = fr.receiver.delivered_measured;
            flows.push(FlowResult {
                id: info.id,
                src: sc.nodes[info.src].name.clone(),
                dst: sc.nodes[info.dst].name.clone(),
                tcp: info.tcp.name().to_string(),
                goodput_bps: if span > 0.0 {
                    bytes as f64 * 8.0 / span
                } else {
                    0.0
                },
                bytes_delivered: bytes,
                segments_sent: s.segments_sent,
                retransmitted_segments: s.retransmitted_segments,
                timeouts: s.timeouts,
                fast_recoveries: s.fast_recoveries,
                completion_time_s: completed.map(|c| (c - info.start).as_secs_f64()),
                mean_rtt_s: (s.rtt_samples > 0)
                    .then(|| s.rtt_sum_ns as f64 / s.rtt_samples as f64 * 1e-9),
                mss: info.mss,
                start_s: info.start.as_secs_f64(),
            });
        }
        let mut links = Vec::with_capacity(self.dirs.len());
        for (i, d) in self.dirs.iter().enumerate() {
            let m = &self.meta[i];
            if let Some(r) = &self.l2[i] {
                links.push(rlc_result(sc, m, i, r));
                continue;
            }
            links.push(LinkResult {
                a: sc.nodes[m.from as usize].name.clone(),
                b: sc.nodes[m.to as usize].name.clone(),
                dir: direction(i),
                utilization: if measured > 0.0 {
                    d.stats.busy_ns as f64 * 1e-9 / measured
                } else {
                    0.0
                },
                packets: d.stats.packets,
                bytes: d.stats.bytes,
                drops_queue: d.stats.drops_queue,
                drops_loss: d.stats.drops_loss,
                max_queue_packets: d.stats.max_queue,
                l2: None,
            });
        }
        let g: Vec<f64> = flows.iter().map(|f| f.goodput_bps).collect();
        let sum: f64 = g.iter().sum();
        let sq: f64 = g.iter().map(|x| x * x).sum();
        let fairness_jain = (!g.is_empty() && sq > 0.0).then(|| sum * sum / (g.len() as f64 * sq));
        let gateways = self
            .gw
            .iter()
            .enumerate()
            .filter_map(|(i, g)| {
                g.as_ref().map(|g| GatewayResult {
                    node: sc.nodes[i].name.clone(),
                    spoofed_acks: g.stats.spoofed_acks,
                    go_back_n: g.stats.go_back_n,
                    go_back_n_timeout: g.stats.go_back_n_timeout,
                    segments_resent: g.stats.segments_resent,
                    client_overruns: g.stats.client_overruns,
                    max_buffer_bytes: g.stats.max_buffer_bytes,
                    dropped_buffer_full: g.stats.dropped_buffer_full,
                    failed: g.failed(),
                    lost_on_failure_bytes: g.stats.lost_on_failure_bytes,
                })
            })
            .collect();
        let result = SimResult {
            scenario: sc.name.clone(),
            seed: self.seed,
            duration_s: end.as_secs_f64(),
            warmup_s: sc.warmup.as_secs_f64(),
            flows,
            links,
            fairness_jain,
            gateways,
            sim: SimStats {
                events: self.q.executed(),
                wall_s: 0.0,
            },
        };
        let traces = self
            .flows
            .iter_mut()
            .enumerate()
            .filter_map(|(i, f)| f.sender.trace.take().map(|t| (i, t)))
            .collect();
        let pcaps = self
            .caps
            .into_iter()
            .map(|c| (c.spec, c.writer.into_bytes()))
            .collect();
        RunOutput {
            result,
            traces,
            pcaps,
            interrupted: false,
        }
    }
}
