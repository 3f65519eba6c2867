//! An application flow's result in the simulator's fields, and the record tables.

use super::AppOutcome;
use longpipe_core::app::records::{AppRecords, Selection};
use longpipe_core::results::FlowResult;
use longpipe_core::scenario::ValidScenario;
use longpipe_core::sim::workload;
use longpipe_core::tcp::sender::SenderCounters;
use longpipe_core::time::SimTime;
use std::collections::BTreeMap;

/// The records of every application flow, as the simulator collects them.
pub fn records(outcomes: &BTreeMap<usize, AppOutcome>) -> AppRecords {
    let mut r = AppRecords::default();
    for (&id, o) in outcomes {
        for x in &o.records {
            r.push(id, x);
        }
    }
    r
}

/// The record tables as `{table: {column: [values]}}`, the layout the Python API
/// gives a simulated run's (`longpipe.workload.frame` reads both); the result's
/// `emu.records`.
pub fn records_json(r: &AppRecords) -> serde_json::Value {
    serde_json::json!({
        "pages": {"flow": r.page_flow, "start_ns": r.page_start_ns, "end_ns": r.page_end_ns,
                  "bytes": r.page_bytes, "objects": r.page_objects},
        "requests": {"flow": r.req_flow, "conn": r.req_conn, "start_ns": r.req_start_ns,
                     "end_ns": r.req_end_ns, "request": r.req_request, "response": r.req_response},
        "chunks": {"flow": r.chunk_flow, "index": r.chunk_index, "start_ns": r.chunk_start_ns,
                   "end_ns": r.chunk_end_ns, "bytes": r.chunk_bytes, "bitrate": r.chunk_bitrate},
        "stalls": {"flow": r.stall_flow, "start_ns": r.stall_start_ns, "end_ns": r.stall_end_ns,
                   "startup": r.stall_startup},
        "transfers": {"flow": r.xfer_flow, "start_ns": r.xfer_start_ns, "end_ns": r.xfer_end_ns,
                      "bytes": r.xfer_bytes},
    })
}

/// An application flow's result, in the simulator's fields (as its
/// `sim::Simulation::finish` makes them for an application flow).
pub fn flow_result(
    sc: &ValidScenario,
    i: usize,
    o: &AppOutcome,
    records: &AppRecords,
    by_flow: &[Selection],
    end: u64,
) -> FlowResult {
    let info = &sc.flows[i];
    let start = info.start.0;
    let t0 = start.max(sc.warmup.0);
    let span = end.saturating_sub(t0) as f64 * 1e-9;
    let c = &o.counts;
    let app = records.flow_app(
        &by_flow[i],
        info.app.kind().name(),
        workload::fills(&info.app.kind),
        sc.warmup,
        SimTime(end),
    );
    FlowResult {
        id: info.id,
        src: sc.nodes[info.src].name.clone(),
        dst: sc.nodes[info.dst].name.clone(),
        tcp: info.tcp.tcp.name().to_string(),
        profile: info.tcp.report(),
        goodput_bps: if span > 0.0 {
            c.read as f64 * 8.0 / span
        } else {
            0.0
        },
        bytes_delivered: c.read,
        sender: SenderCounters {
            segments_sent: c.segs,
            retransmitted_segments: c.retrans,
            timeouts: if c.rto > 0 { c.rto } else { c.loss_entries },
            fast_recoveries: c.recoveries,
            rtt_sum_ns: c.rtt_sum_us as u128 * 1000,
            rtt_samples: c.rtt_n,
            extra: Default::default(),
        },
        extra: None,
        app: Some(app),
        completion_time_s: None,
        mean_rtt_s: (c.rtt_n > 0).then(|| c.rtt_sum_us as f64 / c.rtt_n as f64 * 1e-6),
        mss: info.tcp.mss,
        start_s: start as f64 * 1e-9,
    }
}
