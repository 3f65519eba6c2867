//! The simulator: builds the elements of a [`ValidScenario`] (link directions, nodes,
//! TCP endpoints, capture points), wires them, runs the [`Driver`] to the scenario's
//! end, and turns the elements' counters into the result — the figures of the measured
//! interval [warmup, end], as the difference of two snapshots.
//!
//! Adding an element kind: its module, one line in [`registry`] (and an arm in
//! [`registry::DirElem`] or [`registry::NodeElem`] if it is a link direction or a
//! node), its construction here.

pub mod apps;
mod atm;
pub mod direction;
pub mod estimate;
pub mod registry;
pub mod workload;

use crate::app::records::AppRecords;
use crate::element::{ElemId, Element, PortId};
use crate::engine::driver::Driver;
use crate::middlebox::gateway::node::GatewayNode;
use crate::middlebox::gateway::{default_window, Gateway, Uplink};
use crate::net::capture::{Capture, COPY, INLINE};
use crate::net::link::{OUT, TAP};
use crate::net::node::{Forwarder, LocalKey};
use crate::net::packet::node_addr;
use crate::net::routing::Routes;
use crate::results::{FlowResult, GatewayResult, LinkResult, NodeResult, SimResult, SimStats};
use crate::rng::{stable_hash, RngStream};
use crate::scenario::{NodeRole, ScenarioError, ValidScenario};
use crate::stats::Since;
use crate::tcp::endpoint::{Addrs, Endpoint, Side, TcpElement, TcpMetrics};
use crate::tcp::receiver::Receiver;
use crate::tcp::sender::Sender;
use crate::tcp::FlowTrace;
use crate::time::SimTime;
use crate::unit::Unit;
use apps::AppElement;
use direction::Built;
pub use direction::{loss_stream, queue_stream};
use registry::{DirElem, Elem, Elements, Handle, NodeElem, Snapshot};
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
    /// Refuse (before building anything) a run estimated above this many events
    /// ([`estimate::estimate`]); None runs anything.
    pub max_events: Option<f64>,
    /// Hand the time series to this sink in chunks as the run goes (and the rest at the
    /// end) instead of holding them: memory stays flat; `RunOutput::traces` is empty.
    pub trace_sink: Option<TraceSink>,
    /// Run folded hops as events ([`Driver::fold_by_events`]): the reference a folded
    /// run is checked against (the same output, more events); slower.
    pub unfolded: bool,
}

/// A receiver of time-series chunks: `write(flow id, samples recorded since the last
/// chunk)`, called (about every 65 536 events) for each traced flow holding at least
/// `chunk_rows` samples, and at the end of a completed run once for every traced flow
/// with what is left (possibly nothing). Not called for a cancelled run's remainder.
#[derive(Clone)]
pub struct TraceSink {
    pub write: Arc<dyn Fn(usize, FlowTrace) + Send + Sync>,
    pub chunk_rows: usize,
}

impl std::fmt::Debug for TraceSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceSink")
    }
}

/// Samples a traced flow may hold before a chunk goes to a sink (a default for
/// [`TraceSink::chunk_rows`]): a few MB per flow.
pub const TRACE_CHUNK_ROWS: usize = 1 << 16;

/// The default work limit: about three minutes of simulation on one core of this
/// project's machine (docs/limits.md).
pub const DEFAULT_MAX_EVENTS: f64 = 1e9;

pub struct RunOutput {
    pub result: SimResult,
    pub traces: Vec<(usize, FlowTrace)>,
    /// The applications' pages, requests, chunks, stalls and transfers (empty without
    /// application flows).
    pub records: AppRecords,
    /// (spec, pcap file bytes)
    pub pcaps: Vec<(String, Vec<u8>)>,
    /// The run was stopped through `RunOptions::cancel` before its end.
    pub interrupted: bool,
}

/// A flow's initial sequence numbers: stable per flow and side.
fn isn(flow: usize, rx: bool) -> u32 {
    stable_hash(&format!("isn/{flow}/{}", if rx { "rx" } else { "tx" })) as u32
}

/// A flow's ports: (sender's, receiver's). Unique per flow (the sender's port differs;
/// every receiver of a node listens on the same port below 16 384 flows). The emulator
/// uses the same 4-tuples (`longpipe_emu::linux::ports`).
pub fn ports(flow: usize) -> (u16, u16) {
    (
        49_152 + (flow % 16_384) as u16,
        5001 + (flow / 16_384) as u16,
    )
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

/// Whether the result's links report per-class and AQM counters: when a queue is not
/// drop-tail, or a flow sends low-priority segments or uses ECN.
pub fn reports_classes(sc: &ValidScenario) -> bool {
    sc.links
        .iter()
        .flat_map(|l| &l.dirs)
        .any(|d| !d.link.queue.is_droptail())
        || sc.flows.iter().any(|f| f.tcp.uses_classes())
}

/// Folds every hop that can be folded ([`Driver::fold`]): a line whose node passes it
/// only the units of one other line. Which input of a node can send units out of which
/// output follows from the routes and the addresses units carry: each flow's two
/// endpoints send to each other, and a gateway (which answers for either end) may send
/// to any routed address, each along the routes from where it is emitted.
fn fold_hops(
    sc: &ValidScenario,
    routes: &Routes,
    d: &mut Driver<Unit, Elem>,
    dirs: &[DirElem],
    nodes: &[NodeElem],
) {
    const NONE: u32 = u32::MAX;
    const LOCAL: u32 = u32::MAX - 1;
    const MANY: u32 = u32::MAX - 2;
    // feeds[n][k]: the one input port of node n whose units leave on its port k (LOCAL:
    // the node's own), NONE if none, MANY if more than one.
    let mut feeds: Vec<Vec<u32>> = (0..sc.nodes.len())
        .map(|n| vec![NONE; routes.ports(n).len()])
        .collect();
    let mut walk = |from: usize, to: usize| {
        let (mut cur, mut input) = (from, LOCAL);
        for _ in 0..sc.nodes.len() {
            if cur == to {
                break;
            }
            let Some(k) = routes.next(cur, to) else { break };
            let f = &mut feeds[cur][k as usize];
            *f = match *f {
                NONE => input,
                x if x == input => x,
                _ => MANY,
            };
            let (next, dir) = routes.ports(cur)[k as usize];
            input = routes.in_port(next, dir) as u32;
            cur = next;
        }
    };
    for f in &sc.flows {
        walk(f.src, f.dst);
        walk(f.dst, f.src);
    }
    let mut dests: Vec<usize> = sc.flows.iter().flat_map(|f| [f.src, f.dst]).collect();
    dests.sort_unstable();
    dests.dedup();
    for (g, node) in sc.nodes.iter().enumerate() {
        if matches!(node.role, NodeRole::Gateway(_)) {
            for &x in &dests {
                walk(g, x);
            }
        }
    }
    for (n, node) in nodes.iter().enumerate() {
        // (a gateway is called for every unit)
        if matches!(node, NodeElem::Gateway(_)) {
            continue;
        }
        for (k, &(_, (li, dir))) in routes.ports(n).iter().enumerate() {
            let p = feeds[n][k];
            if p >= MANY {
                continue; // NONE, MANY or LOCAL
            }
            let into = dirs[2 * li as usize + dir as usize].id();
            let (_, (pli, pdir)) = routes.ports(n)[p as usize];
            let from = dirs[2 * pli as usize + 1 - pdir as usize].id();
            // wired straight, no capture point between
            if d.wired(from, OUT) == Some((node.id(), p as PortId))
                && d.wired(node.id(), k as PortId) == Some((into, 0))
                && d.elem(from).folds()
                && d.elem(into).folds()
            {
                d.fold(from, OUT, into);
            }
        }
    }
}

/// A flow's elements: a bulk flow's (sender, receiver) endpoints, or an application's
/// element.
#[derive(Clone, Copy)]
enum FlowElems {
    Bulk(Handle<TcpElement>, Handle<TcpElement>),
    App(Handle<Box<AppElement>>),
}

pub struct Sim<'a> {
    sc: &'a ValidScenario,
    seed: u64,
    d: Driver<Unit, Elem>,
    /// Element of each link direction (2 × link + direction).
    dirs: Vec<DirElem>,
    /// Element of each node.
    nodes: Vec<NodeElem>,
    /// Elements of each flow.
    flows: Vec<FlowElems>,
    caps: Vec<Handle<Capture>>,
    routes: Arc<Routes>,
    n_vcs: usize,
}

impl<'a> Sim<'a> {
    pub fn new(sc: &'a ValidScenario, opts: &RunOptions) -> Result<Sim<'a>, ScenarioError> {
        let seed = opts.seed.unwrap_or(sc.seed);
        let mut d: Driver<Unit, Elem> = Driver::new();
        let pairs: Vec<(usize, usize)> = sc.links.iter().map(|l| (l.a, l.b)).collect();
        let mut dests: Vec<usize> = sc.flows.iter().flat_map(|f| [f.dst, f.src]).collect();
        dests.sort_unstable();
        dests.dedup();
        let routes = Arc::new(Routes::compute(sc.nodes.len(), &pairs, &dests));
        for f in &sc.flows {
            if !routes.reachable(f.src, f.dst) || !routes.reachable(f.dst, f.src) {
                return Err(ScenarioError {
                    path: f.path.clone(),
                    msg: format!(
                        "no route between {:?} and {:?}",
                        sc.nodes[f.src].name, sc.nodes[f.dst].name
                    ),
                });
            }
        }

        // TCP senders first, in flow order: their opening SYNs are the first events.
        let mut flows = Vec::with_capacity(sc.flows.len());
        let mut tcp_elems = Vec::with_capacity(sc.flows.len());
        // (node, the key of packets for it there, element, element port)
        let mut local_keys: Vec<(usize, LocalKey, ElemId, PortId)> = Vec::new();
        for f in sc.flows.iter().filter(|f| !f.app.is_workload()) {
            let trace = match &opts.trace {
                TraceSel::None => false,
                TraceSel::All => true,
                TraceSel::Flows(v) => v.contains(&f.id),
            };
            let (sport, dport) = ports(f.id);
            let (src, dst) = (node_addr(f.src), node_addr(f.dst));
            let tx = Endpoint::new(
                Side::Sender(Box::new(Sender::new(
                    f.tcp,
                    f.app_bytes,
                    f.tcp.cc.build_seeded(
                        RngStream::new(seed, &format!("flow/{}/cc", f.id)).next_u64(),
                    ),
                    trace,
                ))),
                Addrs {
                    local: src,
                    local_port: sport,
                    remote: dst,
                    remote_port: dport,
                },
                isn(f.id, false),
                Some(f.start),
            );
            let mut receiver = Receiver::new(f.tcp, f.app_bytes);
            if let Some(r) = f.app.read_rate {
                receiver.set_read_rate(r);
            }
            let rx = Endpoint::new(
                Side::Receiver(Box::new(receiver)),
                Addrs {
                    local: dst,
                    local_port: dport,
                    remote: src,
                    remote_port: sport,
                },
                isn(f.id, true),
                None,
            );
            let (ta, ra) = (tx.addrs, rx.addrs);
            let s = d.add_typed(TcpElement::new(tx));
            let r = d.add_typed(TcpElement::new(rx));
            local_keys.push((f.src, (ta.local_port, ta.remote, ta.remote_port), s.id, 0));
            local_keys.push((f.dst, (ra.local_port, ra.remote, ra.remote_port), r.id, 0));
            flows.push((f.id, FlowElems::Bulk(s, r)));
            tcp_elems.push((f.id, (ta, ra)));
        }
        // Then the applications: one element per flow (sim/apps.rs).
        for (f, id, keys, addrs) in workload::build(sc, seed, &mut d, ports) {
            local_keys.extend(keys);
            flows.push((f, FlowElems::App(id)));
            tcp_elems.push((f, addrs));
        }
        flows.sort_by_key(|x| x.0);
        tcp_elems.sort_by_key(|x| x.0);
        let flows: Vec<FlowElems> = flows.into_iter().map(|x| x.1).collect();
        let tcp_elems: Vec<(Addrs, Addrs)> = tcp_elems.into_iter().map(|x| x.1).collect();

        let vcs = atm::vc_table(sc, &tcp_elems);

        // Link directions.
        let mut dirs = Vec::with_capacity(sc.links.len() * 2);
        for (li, l) in sc.links.iter().enumerate() {
            for k in 0..l.dirs.len() {
                let from = if k == 0 { l.a } else { l.b };
                dirs.push(match direction::direction(sc, li, k, seed) {
                    Built::Packets(mut x) => {
                        // a host's (or router's) own segments wait in its socket
                        if matches!(sc.nodes[from].role, NodeRole::Host | NodeRole::Router) {
                            x.hold_local(node_addr(from));
                        }
                        DirElem::Packets(d.add_typed(x))
                    }
                    Built::Cells(cfg, loss) => {
                        DirElem::Cells(d.add_typed(atm::line(sc, li, k, cfg, loss, &vcs)))
                    }
                });
            }
        }

        // Nodes, wired to their links and local endpoints.
        let mut nodes = Vec::with_capacity(sc.nodes.len());
        let mut fwds: Vec<Forwarder> = (0..sc.nodes.len())
            .map(|n| Forwarder::new(n, routes.clone()))
            .collect();
        // Local endpoints in element order: the bulk flows' senders and receivers, flow
        // by flow (as before applications existed), then the applications' slots.
        local_keys.sort_by_key(|x| x.2);
        let mut local_wires = Vec::new(); // (node, node port, element, element port)
        for &(n, key, e, ep) in &local_keys {
            let port = fwds[n].add_local(key);
            local_wires.push((n, port, e, ep));
        }
        for (n, fwd) in fwds.into_iter().enumerate() {
            nodes.push(match &sc.nodes[n].role {
                NodeRole::Host | NodeRole::Router => NodeElem::Forwarder(d.add_typed(fwd)),
                NodeRole::AtmSwitch(limits) => {
                    let sw = atm::switch(sc, n, *limits, &routes, vcs.len());
                    NodeElem::AtmSwitch(d.add_typed(sw))
                }
                NodeRole::Gateway(g) => {
                    let up = &sc.links[g.uplink];
                    let k = if up.a == n { 0 } else { 1 };
                    let rtt = up.dirs[0].link.delay + up.dirs[1].link.delay;
                    let rate = up.dirs[k].link.rate;
                    let bdp = default_window(rate, rtt);
                    let uplink = Uplink {
                        rate: Some(rate),
                        bdp,
                    };
                    let gw = Gateway::new(g.cfg.clone(), uplink);
                    let port = routes.in_port(n, (g.uplink as u32, 1 - k as u8));
                    NodeElem::Gateway(d.add_typed(Box::new(GatewayNode::new(fwd, port, gw))))
                }
            });
        }
        for n in 0..sc.nodes.len() {
            for (k, &(_, (li, dir))) in routes.ports(n).iter().enumerate() {
                let di = dirs[2 * li as usize + dir as usize].id();
                d.wire(nodes[n].id(), k as PortId, di, 0);
                let l = &sc.links[li as usize];
                let to = if dir == 0 { l.b } else { l.a };
                d.wire(di, OUT, nodes[to].id(), routes.in_port(to, (li, dir)));
            }
        }
        for (n, port, e, ep) in local_wires {
            d.wire(nodes[n].id(), port, e, ep);
            d.wire(e, ep, nodes[n].id(), port);
        }

        // Capture points: a copy of what A sends as its transmission starts, and what
        // arrives at A, in line, before A's node sees it.
        let mut caps = Vec::new();
        for spec in &opts.pcap {
            let (li, at_a) = parse_capture(sc, spec)?;
            let (out_k, in_k) = if at_a { (0, 1) } else { (1, 0) };
            let (out_dir, in_dir) = match (dirs[2 * li + out_k], dirs[2 * li + in_k]) {
                (DirElem::Packets(o), DirElem::Packets(i)) => (o, i.id),
                (DirElem::Cells(_), _) | (_, DirElem::Cells(_)) => {
                    return Err(atm::cells_not_captured(spec))
                }
            };
            d.get_mut(out_dir).enable_tap();
            let c = d.add_typed(Capture::new(spec.clone()));
            d.wire(out_dir.id, TAP, c.id, COPY);
            let (node, node_port) = d.wired(in_dir, OUT).expect("link directions are wired");
            d.wire(in_dir, OUT, c.id, INLINE);
            d.wire(c.id, 0, node, node_port);
            caps.push(c);
        }
        fold_hops(sc, &routes, &mut d, &dirs, &nodes);
        if opts.unfolded {
            d.fold_by_events();
        }
        d.start();
        Ok(Sim {
            sc,
            seed,
            d,
            dirs,
            nodes,
            flows,
            caps,
            routes,
            n_vcs: vcs.len(),
        })
    }

    /// Runs to `t` (inclusive); false if cancelled.
    fn run_to(&mut self, t: SimTime, opts: &RunOptions) -> bool {
        let mut tick = 0u32;
        while self.d.step_one(t) {
            tick = tick.wrapping_add(1);
            if tick.is_multiple_of(4096) {
                if let Some(p) = &opts.progress {
                    p.store(self.d.now().0, Ordering::Relaxed);
                }
                if let (true, Some(sink)) = (tick.is_multiple_of(1 << 16), &opts.trace_sink) {
                    self.flush_traces(sink, sink.chunk_rows.max(1));
                }
                if opts
                    .cancel
                    .as_ref()
                    .is_some_and(|c| c.load(Ordering::Relaxed))
                {
                    return false;
                }
            }
        }
        true
    }

    /// Hands every traced flow's samples to the sink: those holding at least `min_rows`
    /// samples, or every traced flow (even with none) when `min_rows` is 0.
    fn flush_traces(&mut self, sink: &TraceSink, min_rows: usize) {
        for (i, &fe) in self.flows.iter().enumerate() {
            let FlowElems::Bulk(s, _) = fe else { continue };
            if let Some(chunk) = self.d.get_mut(s).ep.drain_trace(min_rows) {
                (sink.write)(i, chunk);
            }
        }
    }

    pub fn run(mut self, opts: &RunOptions) -> RunOutput {
        let (warmup, end) = (self.sc.warmup, self.sc.duration);
        // The measured interval is [warmup, end): it opens before the first event at
        // `warmup` and closes before the first event at `end` (which is not run).
        let mut done = true;
        // (a folded line's counters at the snapshots: kept as it takes units past them)
        let snaps = [warmup, end];
        self.d
            .set_snapshots(&snaps[(warmup == SimTime::ZERO) as usize..]);
        if warmup > SimTime::ZERO {
            done = self.run_to(SimTime(warmup.0 - 1), opts);
        }
        let base = Snapshot::of(&self.d, warmup);
        if done {
            done = self.run_to(SimTime(end.0 - 1), opts);
        }
        let delta = Snapshot::of(&self.d, end).since(&base);
        if let (true, Some(sink)) = (done, &opts.trace_sink) {
            self.flush_traces(sink, 0);
        }
        let mut out = self.finish(&delta);
        out.interrupted = !done;
        if opts.trace_sink.is_some() {
            out.traces.clear();
        }
        out
    }

    fn finish(mut self, delta: &Snapshot) -> RunOutput {
        let sc = self.sc;
        let end = sc.duration;
        let measured = (end - sc.warmup).as_secs_f64();
        let mut records = AppRecords::default();
        for (info, &fe) in sc.flows.iter().zip(&self.flows) {
            if let FlowElems::App(h) = fe {
                for r in self.d.get_mut(h).take_records(end) {
                    records.push(info.id, &r);
                }
            }
        }
        let by_flow = records.by_flow(sc.flows.len());
        let mut flows = Vec::with_capacity(sc.flows.len());
        for (info, &fe) in sc.flows.iter().zip(&self.flows) {
            let start = info.start;
            let t0 = start.max(sc.warmup);
            let (tx, read, done, app) = match fe {
                FlowElems::Bulk(s, r) => {
                    // (the endpoint element is one type for both sides, its metrics say
                    // which)
                    let (TcpMetrics::Sender(tx), TcpMetrics::Receiver(rx)) =
                        (delta.get(s), delta.get(r))
                    else {
                        unreachable!("a flow's sender and receiver")
                    };
                    (tx.clone(), rx.delivered, rx.completed_at.0, None)
                }
                FlowElems::App(a) => {
                    let c = delta.get(a);
                    let app = records.flow_app(
                        &by_flow[info.id],
                        info.app.kind().name(),
                        workload::fills(&info.app.kind),
                        sc.warmup,
                        end,
                    );
                    (c.sender.clone(), c.read, None, Some(app))
                }
            };
            let t1 = done.unwrap_or(end).max(t0);
            let span = (t1 - t0).as_secs_f64();
            flows.push(FlowResult {
                id: info.id,
                src: sc.nodes[info.src].name.clone(),
                dst: sc.nodes[info.dst].name.clone(),
                tcp: info.tcp.tcp.name().to_string(),
                profile: info.tcp.report(),
                goodput_bps: if span > 0.0 {
                    read as f64 * 8.0 / span
                } else {
                    0.0
                },
                bytes_delivered: read,
                extra: info.tcp.uses_classes().then(|| tx.extra.clone()),
                completion_time_s: done.map(|c| (c - start).as_secs_f64()),
                mean_rtt_s: (tx.rtt_samples > 0)
                    .then(|| tx.rtt_sum_ns as f64 / tx.rtt_samples as f64 * 1e-9),
                sender: tx,
                mss: info.tcp.mss,
                start_s: start.as_secs_f64(),
                app,
            });
        }
        let (users, workload) = workload::summary(sc, &flows, &records, &by_flow);
        let report_classes = reports_classes(sc);
        let mut links = Vec::with_capacity(self.dirs.len());
        for (i, dir) in self.dirs.iter().enumerate() {
            let l = &sc.links[i / 2];
            let (from, to) = if i % 2 == 0 { (l.a, l.b) } else { (l.b, l.a) };
            let (a, b) = (sc.nodes[from].name.clone(), sc.nodes[to].name.clone());
            let r = match *dir {
                DirElem::Packets(h) => LinkResult::from_dir(a, b, i, delta.get(h), measured),
                DirElem::Cells(h) => atm::link_row(
                    sc,
                    &self.routes,
                    delta,
                    &self.nodes,
                    (a, b, i),
                    delta.get(h),
                    measured,
                ),
            };
            links.push(r.with_classes(report_classes));
        }
        let g: Vec<f64> = flows.iter().map(|f| f.goodput_bps).collect();
        let fairness_jain = crate::results::fairness_jain(&g);
        let gateways = self
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(n, node)| match *node {
                NodeElem::Gateway(h) => {
                    let c = delta.get(h);
                    Some(GatewayResult {
                        node: sc.nodes[n].name.clone(),
                        counters: c.clone(),
                        satellite_efficiency: (c.sat_bytes_sent > 0)
                            .then(|| c.sat_bytes_delivered as f64 / c.sat_bytes_sent as f64),
                    })
                }
                NodeElem::Forwarder(_) | NodeElem::AtmSwitch(_) => None,
            })
            .collect();
        let nodes = NodeResult::all(sc);
        let result = SimResult {
            scenario: sc.name.clone(),
            seed: self.seed,
            duration_s: end.as_secs_f64(),
            warmup_s: sc.warmup.as_secs_f64(),
            flows,
            links,
            fairness_jain,
            gateways,
            nodes,
            atm: atm::report(sc, delta, &self.dirs, &self.nodes, self.n_vcs),
            users,
            workload,
            emu: None,
            sim: SimStats {
                events: self.d.events(),
            },
        };
        let mut traces = Vec::new();
        for (i, &fe) in self.flows.iter().enumerate() {
            let FlowElems::Bulk(s, _) = fe else { continue };
            if let Some(tr) = self.d.get_mut(s).ep.take_trace() {
                traces.push((i, tr));
            }
        }
        let pcaps = self
            .caps
            .iter()
            .map(|&c| {
                let c = self.d.get(c);
                (c.spec.clone(), c.bytes().to_vec())
            })
            .collect();
        RunOutput {
            result,
            traces,
            records,
            pcaps,
            interrupted: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse_json;

    #[test]
    fn parallel_links_draw_from_their_own_loss_streams() {
        let sc = parse_json(
            r#"{"duration":"1s","link":[
                {"a":"x","b":"y","rate":"1Mbps","delay":"1ms"},
                {"a":"y","b":"z","rate":"1Mbps","delay":"1ms"},
                {"a":"y","b":"x","rate":"1Mbps","delay":"1ms"},
                {"a":"x","b":"y","rate":"1Mbps","delay":"1ms"}]}"#,
        )
        .unwrap()
        .validate()
        .unwrap();
        let (x, y, z) = (0, 1, 2);
        let names = [
            loss_stream(&sc, 0, x, y),
            loss_stream(&sc, 1, y, z),
            loss_stream(&sc, 2, y, x),
            loss_stream(&sc, 3, x, y),
        ];
        // The first link between two nodes keeps the historical name (results of
        // existing scenarios do not move); later parallel ones are numbered.
        assert_eq!(names[0], "link/x->y/loss");
        assert_eq!(names[1], "link/y->z/loss");
        assert_eq!(names[2], "link/y->x#2/loss");
        assert_eq!(names[3], "link/x->y#3/loss");
        let mut uniq = names.to_vec();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), 4);
    }
}
