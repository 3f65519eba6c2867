//! The result of an emulated run, in the simulator's result contract
//! ([`longpipe_core::results::SimResult`]: the same fields, so `longpipe compare` and the
//! sweep machinery read both), plus an `emu` section with what only an emulation has.

use longpipe_core::l2::DirCounters;
use longpipe_core::results::{
    fairness_jain, FlowResult, LinkResult, NodeResult, SimResult, SimStats,
};
use longpipe_core::scenario::ValidScenario;
use longpipe_core::sim::reports_classes;

/// Link results as the simulator computes them from each direction's counters over the
/// measured interval of `measured_s` seconds.
pub fn links(sc: &ValidScenario, dirs: &[DirCounters], measured_s: f64) -> Vec<LinkResult> {
    let classes = reports_classes(sc);
    dirs.iter()
        .enumerate()
        .map(|(i, m)| {
            let l = &sc.links[i / 2];
            let (from, to) = if i % 2 == 0 { (l.a, l.b) } else { (l.b, l.a) };
            let (a, b) = (sc.nodes[from].name.clone(), sc.nodes[to].name.clone());
            LinkResult::from_dir(a, b, i, m, measured_s).with_classes(classes)
        })
        .collect()
}

/// The whole result.
pub fn result(
    sc: &ValidScenario,
    seed: u64,
    end_ns: u64,
    dirs: &[DirCounters],
    flows: Vec<FlowResult>,
    events: u64,
) -> SimResult {
    let measured = end_ns.saturating_sub(sc.warmup.0) as f64 * 1e-9;
    let g: Vec<f64> = flows.iter().map(|f| f.goodput_bps).collect();
    SimResult {
        scenario: sc.name.clone(),
        seed,
        duration_s: end_ns as f64 * 1e-9,
        warmup_s: sc.warmup.as_secs_f64(),
        flows,
        links: links(sc, dirs, measured),
        fairness_jain: fairness_jain(&g),
        gateways: Vec::new(),
        atm: None,
        users: Vec::new(),
        workload: None,
        nodes: NodeResult::all(sc),
        sim: SimStats { events },
        emu: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ferry::Net;
    use longpipe_core::scenario::parse_json;
    use longpipe_core::time::SimTime;

    #[test]
    fn same_fields_as_a_simulated_run() {
        let text = r#"{"name":"p","duration":"2s","link":[{"a":"s","b":"c","rate":"1Mbps","delay":"10ms"},{"a":"c","b":"u","rate":"384kbps","delay":"30ms","layer2":{"kind":"rlc-am"}}],"flow":[{"src":"s","dst":"u"}]}"#;
        let sc = parse_json(text).unwrap().validate().unwrap();
        let sim = longpipe_core::run_valid(&sc, &Default::default())
            .unwrap()
            .result;
        let net = Net::new(&sc, 1).unwrap();
        let m = net.metrics(SimTime(2_000_000_000));
        let f = sim.flows.clone();
        let emu = result(&sc, 1, 2_000_000_000, &m, f, 0);
        let keys = |r: &SimResult| {
            let v = serde_json::to_value(r).unwrap();
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            for part in ["flows", "links", "nodes"] {
                for (i, x) in v[part].as_array().unwrap().iter().enumerate() {
                    for kk in x.as_object().unwrap().keys() {
                        k.push(format!("{part}[{i}].{kk}"));
                    }
                    if let Some(l2) = x.get("l2") {
                        for kk in l2.as_object().unwrap().keys() {
                            k.push(format!("{part}[{i}].l2.{kk}"));
                        }
                    }
                }
            }
            k
        };
        assert_eq!(keys(&emu), keys(&sim));
        assert_eq!(emu.links[3].a, "u");
        assert_eq!(emu.links[3].dir, "reverse");
    }
}
