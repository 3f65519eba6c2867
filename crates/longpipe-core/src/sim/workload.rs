//! Application flows in the simulator: building their elements ([`build`], the element
//! itself is [`super::apps::AppElement`]), and the per-user results of `[[user]]` groups
//! ([`user_results`]).

use super::apps::{AppElement, ConnSpec};
use super::registry::{Elem, Elements, Handle};
use crate::app::io::App;
use crate::app::records::{AppRecords, Fills, FlowApp, Selection, UserResult, Workload};
use crate::app::KindConfig;
use crate::element::{ElemId, PortId};
use crate::engine::driver::Driver;
use crate::net::node::LocalKey;
use crate::net::packet::node_addr;
use crate::results::FlowResult;
use crate::scenario::{FlowInfo, ValidScenario};
use crate::tcp::endpoint::Addrs;
use crate::unit::Unit;

/// The tables an application kind fills.
pub fn fills(k: &KindConfig) -> Fills {
    Fills {
        pages: matches!(k, KindConfig::Web(_)),
        requests: matches!(k, KindConfig::Web(_) | KindConfig::RequestResponse(_)),
        chunks: matches!(k, KindConfig::Stream(_)),
        transfers: matches!(k, KindConfig::Arrivals(_)),
    }
}

/// Each `[[user]]` group's users: their flows' goodputs added, their applications'
/// rows together.
pub fn user_results(
    sc: &ValidScenario,
    flows: &[FlowResult],
    records: &AppRecords,
    by_flow: &[Selection],
) -> Vec<UserResult> {
    let mut mine: Vec<Vec<usize>> = vec![Vec::new(); sc.users.len()];
    for f in &sc.flows {
        if let Some(u) = f.user {
            mine[u].push(f.id);
        }
    }
    sc.users
        .iter()
        .zip(mine)
        .map(|(name, ids)| {
            let mut sel = Selection::default();
            let mut fl = Fills::default();
            let mut kinds: Vec<&str> = Vec::new();
            for &i in &ids {
                let info = &sc.flows[i];
                sel.merge(&by_flow[i]);
                let k = fills(&info.app.kind);
                fl.pages |= k.pages;
                fl.requests |= k.requests;
                fl.chunks |= k.chunks;
                fl.transfers |= k.transfers;
                let n = info.app.kind().name();
                if !kinds.contains(&n) {
                    kinds.push(n);
                }
            }
            UserResult {
                name: name.clone(),
                goodput_bps: ids.iter().map(|&i| flows[i].goodput_bps).sum(),
                bytes_delivered: ids.iter().map(|&i| flows[i].bytes_delivered).sum(),
                app: records.flow_app(&sel, &kinds.join("+"), fl, sc.warmup, sc.duration),
                flows: ids,
            }
        })
        .collect()
}

/// The active application of flow `f` (its `src` or `dst` end, [`crate::app::AppConfig::dst_opens`]).
pub fn application(f: &FlowInfo, seed: u64) -> Box<dyn App> {
    use crate::app::{arrivals, onoff, rr, stream, web};
    match &f.app.kind {
        KindConfig::Web(c) => Box::new(web::WebClient::new(c.clone(), seed, f.id)),
        KindConfig::RequestResponse(c) => Box::new(rr::RrClient::new(c.clone(), seed, f.id)),
        KindConfig::OnOff(c) => Box::new(onoff::OnOff::new(c.clone(), seed, f.id)),
        KindConfig::Stream(c) => Box::new(stream::StreamClient::new(c.clone(), seed, f.id)),
        KindConfig::Arrivals(c) => Box::new(arrivals::Arrivals::new(c, seed, f.id)),
        KindConfig::Bulk => unreachable!("bulk flows have their own endpoints"),
    }
}

/// What [`build`] made for an application flow: (flow id, element, the local keys of
/// its slots at their nodes with the element's ports, the first slot's (src end, dst
/// end) addresses).
pub type Built = (
    usize,
    Handle<Box<AppElement>>,
    Vec<(usize, LocalKey, ElemId, PortId)>,
    (Addrs, Addrs),
);

/// Adds an element for every application flow of `sc` to `d`, in flow order; their slots
/// take the port pairs `ports(i)` from i = the number of flows on (bulk flows use the
/// first ones).
pub fn build(
    sc: &ValidScenario,
    seed: u64,
    d: &mut Driver<Unit, Elem>,
    ports: fn(usize) -> (u16, u16),
) -> Vec<Built> {
    let mut out = Vec::new();
    let mut slot_index = sc.flows.len();
    for f in sc.flows.iter().filter(|f| f.app.is_workload()) {
        let dst_opens = f.app.dst_opens();
        let (an, pn) = if dst_opens {
            (f.dst, f.src)
        } else {
            (f.src, f.dst)
        };
        let (aa, pa) = (node_addr(an), node_addr(pn));
        let addrs: Vec<(Addrs, Addrs)> = (0..f.app.slots())
            .map(|_| {
                let (ap, pp) = ports(slot_index);
                slot_index += 1;
                (
                    Addrs {
                        local: aa,
                        local_port: ap,
                        remote: pa,
                        remote_port: pp,
                    },
                    Addrs {
                        local: pa,
                        local_port: pp,
                        remote: aa,
                        remote_port: ap,
                    },
                )
            })
            .collect();
        let first = addrs[0];
        let spec = ConnSpec {
            tcp: f.tcp,
            seed,
            read_rate: f.app.read_rate,
        };
        let e = AppElement::new(
            f.id,
            spec,
            dst_opens,
            f.start,
            application(f, seed),
            addrs.clone(),
        );
        let h = d.add_typed(Box::new(e));
        let id = h.id;
        let mut keys = Vec::with_capacity(2 * addrs.len());
        for (k, (a, p)) in addrs.iter().enumerate() {
            let k = k as PortId;
            keys.push((an, (a.local_port, a.remote, a.remote_port), id, 2 * k));
            keys.push((pn, (p.local_port, p.remote, p.remote_port), id, 2 * k + 1));
        }
        let src_dst = if dst_opens { (first.1, first.0) } else { first };
        out.push((f.id, h, keys, src_dst));
    }
    out
}

/// The result's `users` (of `[[user]]` groups) and `workload` (None without
/// application flows): the users are each group's users and each other application flow.
pub fn summary(
    sc: &ValidScenario,
    flows: &[FlowResult],
    records: &AppRecords,
    by_flow: &[Selection],
) -> (Vec<UserResult>, Option<Workload>) {
    let users = user_results(sc, flows, records, by_flow);
    let mut who: Vec<(f64, &FlowApp)> = users.iter().map(|u| (u.goodput_bps, &u.app)).collect();
    who.extend(
        flows
            .iter()
            .zip(&sc.flows)
            .filter(|(_, i)| i.user.is_none())
            .filter_map(|(f, _)| f.app.as_ref().map(|a| (f.goodput_bps, a))),
    );
    let mut all = Fills::default();
    for f in sc.flows.iter().filter(|f| f.app.is_workload()) {
        let k = fills(&f.app.kind);
        all.pages |= k.pages;
        all.requests |= k.requests;
        all.chunks |= k.chunks;
        all.transfers |= k.transfers;
    }
    let w = (!who.is_empty()).then(|| records.workload(&who, all, sc.warmup));
    (users, w)
}
