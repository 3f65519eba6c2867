#![allow(clippy::useless_conversion)] // false positives from pyo3 0.22 #[pyfunction] expansions
#![allow(unexpected_cfgs)] // pyo3 0.22 create_exception! checks a gil-refs feature
//! PyO3 bindings: type conversion only.
//!
//! A run is simulated on its own Rust thread. The calling Python thread releases the
//! GIL and waits in short slices ([`SLICE`]); between slices it checks for signals
//! (so Ctrl-C raises `KeyboardInterrupt` in Python within one slice, and the
//! simulation is told to stop through `RunOptions::cancel`) and calls an optional
//! progress callback with the simulated time reached. A cancelled run's thread is not
//! waited for (see `run`).

mod csvtrace;

use longpipe_core::{RunOptions, RunOutput, ScenarioError as CoreError, TraceSel};
use numpy::IntoPyArray;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

create_exception!(
    _core,
    ScenarioError,
    PyValueError,
    "Bad scenario input: args are (field_path, message)."
);

/// The extension's Rust allocations (the simulator's state) come from mimalloc, not
/// the C library's `malloc`: its segments are 2 MiB-aligned and advised for transparent
/// huge pages, so a run whose state spreads over tens of MiB (a thousand flows) is not
/// slowed by TLB misses, and its per-size pages keep small objects of one kind together.
/// Measured (BENCHMARKS.md, tenth session): 1 000 flows 0.93x CPU, dumbbell100 and
/// atm-wan unchanged; peak memory +3 MiB there, +22 MiB on web1000 (touched memory
/// counts in 2 MiB pages). `MIMALLOC_*` environment variables tune it.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long the waiting Python thread sleeps between signal checks. The simulation
/// itself polls its cancel flag every 4096 events, so Ctrl-C stops a run within about
/// this long plus a fraction of a millisecond.
const SLICE: Duration = Duration::from_millis(20);

fn to_py_err(e: CoreError) -> PyErr {
    ScenarioError::new_err((e.path, e.msg))
}

type SimDone = (Result<RunOutput, CoreError>, f64);

/// What `run` returns to Python: (result JSON, traces, pcaps, wall seconds), and the
/// applications' record tables when asked (`records=True`).
type RunReturn = PyObject;

/// Runs a scenario given as JSON text.
///
/// Returns (result_json, traces, pcaps, wall_s): traces maps flow id -> dict of numpy
/// columns; pcaps is a list of (spec, bytes); wall_s is the simulation's wall time (kept
/// out of the result, which is the same bytes for the same scenario and seed). `progress`, if given, is called as
/// `progress(simulated_ns, duration_ns)` about every `progress_every` seconds of wall
/// time while the run goes on. Ctrl-C stops the run and raises `KeyboardInterrupt`.
/// With `records=True` a fifth item follows: the applications' tables (`pages`,
/// `requests`, `chunks`, `stalls`, `transfers`), each a dict of numpy columns (an empty
/// dict for a run without applications).
#[pyfunction]
#[pyo3(signature = (scenario_json, seed=None, trace_all=false, trace_flows=None, pcap=None,
                    *, progress=None, progress_every=0.5, force=false, trace_dir=None, records=false))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    scenario_json: &str,
    seed: Option<u64>,
    trace_all: bool,
    trace_flows: Option<Vec<u64>>,
    pcap: Option<Vec<String>>,
    progress: Option<PyObject>,
    progress_every: f64,
    force: bool,
    trace_dir: Option<std::path::PathBuf>,
    records: bool,
) -> PyResult<RunReturn> {
    let sc = longpipe_core::scenario::parse_json(scenario_json)
        .and_then(|s| s.validate())
        .map_err(to_py_err)?;
    let n_flows = sc.flows.len();
    let trace = if trace_all {
        TraceSel::All
    } else {
        match trace_flows {
            None => TraceSel::None,
            Some(ids) => {
                let mut v = Vec::with_capacity(ids.len());
                for id in ids {
                    match usize::try_from(id) {
                        Ok(i) if i < n_flows => v.push(i),
                        _ => {
                            return Err(ScenarioError::new_err((
                                "timeseries".to_string(),
                                format!(
                                    "no flow {id}: the scenario has {n_flows} flow(s), ids 0 to {}",
                                    n_flows.saturating_sub(1)
                                ),
                            )))
                        }
                    }
                }
                TraceSel::Flows(v)
            }
        }
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let reached = Arc::new(AtomicU64::new(0));
    let csv = trace_dir.map(|d| Arc::new(csvtrace::CsvTraces::new(d)));
    let opts = RunOptions {
        seed,
        trace,
        pcap: pcap.unwrap_or_default(),
        cancel: Some(cancel.clone()),
        progress: Some(reached.clone()),
        max_events: (!force).then_some(longpipe_core::sim::DEFAULT_MAX_EVENTS),
        trace_sink: csv.clone().map(|c| longpipe_core::sim::TraceSink {
            write: Arc::new(move |i, t| c.write(i, &t)),
            chunk_rows: longpipe_core::sim::TRACE_CHUNK_ROWS,
        }),
        unfolded: false,
    };
    let total_ns = sc.duration.0;
    let (tx, rx) = mpsc::channel::<SimDone>();
    // A Mutex makes the receiver Sync, so the GIL-free closures can borrow it.
    let rx = Mutex::new(rx);
    let wait = |d: Duration| {
        rx.lock()
            .map_err(|_| RecvTimeoutError::Disconnected)?
            .recv_timeout(d)
    };
    std::thread::Builder::new()
        .name("longpipe-sim".into())
        .spawn(move || {
            let t0 = Instant::now();
            let r = longpipe_core::run_valid(&sc, &opts);
            let _ = tx.send((r, t0.elapsed().as_secs_f64()));
        })
        .map_err(|e| {
            pyo3::exceptions::PyRuntimeError::new_err(format!("cannot start a thread: {e}"))
        })?;
    let every = if progress_every.is_finite() && progress_every > 0.0 {
        Duration::from_secs_f64(progress_every.min(3600.0))
    } else {
        Duration::from_millis(500)
    };
    let mut next_progress = Instant::now() + every;
    let (out, wall) = loop {
        match py.allow_threads(|| wait(SLICE)) {
            Ok(done) => break done,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "the simulation thread ended without a result (a panic in the core: please report)",
                ))
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        let stop = py.check_signals().err().or_else(|| {
            let cb = progress.as_ref()?;
            if Instant::now() < next_progress {
                return None;
            }
            next_progress = Instant::now() + every;
            cb.call1(py, (reached.load(Ordering::Relaxed), total_ns))
                .err()
        });
        if let Some(e) = stop {
            // Ctrl-C (or an exception from the progress callback): stop the run and
            // give up its output. The thread stops at its next cancel check (within
            // 4096 events) and then builds an output nobody reads (copying a capture
            // can take tens of ms): it is not waited for. Once the time series files
            // are closed it never touches them again, so the caller may remove them.
            cancel.store(true, Ordering::Relaxed);
            if let Some(c) = &csv {
                py.allow_threads(|| c.close());
            }
            return Err(e);
        }
    };
    let out = out.map_err(to_py_err)?;
    if out.interrupted {
        return Err(pyo3::exceptions::PyKeyboardInterrupt::new_err(
            "simulation interrupted",
        ));
    }
    if let Some(c) = csv {
        c.finish().map_err(|e| {
            pyo3::exceptions::PyOSError::new_err((e.raw_os_error().unwrap_or(0), e.to_string()))
        })?;
    }
    let json = out.result.to_json();
    let traces = PyDict::new_bound(py);
    for (id, t) in out.traces {
        let d = PyDict::new_bound(py);
        d.set_item("t_ns", t.t_ns.into_pyarray_bound(py))?;
        d.set_item("cwnd", t.cwnd.into_pyarray_bound(py))?;
        d.set_item("ssthresh", t.ssthresh.into_pyarray_bound(py))?;
        d.set_item("snd_una", t.snd_una.into_pyarray_bound(py))?;
        d.set_item("snd_max", t.snd_max.into_pyarray_bound(py))?;
        d.set_item("rtt_t_ns", t.rtt_t_ns.into_pyarray_bound(py))?;
        d.set_item("rtt_ns", t.rtt_ns.into_pyarray_bound(py))?;
        d.set_item("seg_t_ns", t.seg_t_ns.into_pyarray_bound(py))?;
        d.set_item("seg_seq", t.seg_seq.into_pyarray_bound(py))?;
        d.set_item("seg_len", t.seg_len.into_pyarray_bound(py))?;
        d.set_item("seg_retx", t.seg_retx.into_pyarray_bound(py))?;
        d.set_item("sack_t_ns", t.sack_t_ns.into_pyarray_bound(py))?;
        d.set_item("sack_left", t.sack_left.into_pyarray_bound(py))?;
        d.set_item("sack_right", t.sack_right.into_pyarray_bound(py))?;
        traces.set_item(id, d)?;
    }
    let pcaps: Vec<(String, PyObject)> = out
        .pcaps
        .into_iter()
        .map(|(s, b)| (s, PyBytes::new_bound(py, &b).into_any().unbind()))
        .collect();
    let traces = traces.into_any().unbind();
    if records {
        // no arrays (and no NumPy import) for a run without applications
        let r = if out.records.rows() > 0 {
            record_tables(py, out.records)?
        } else {
            PyDict::new_bound(py).into_any().unbind()
        };
        return Ok((json, traces, pcaps, wall, r).into_py(py));
    }
    Ok((json, traces, pcaps, wall).into_py(py))
}

/// The applications' records as {table: {column: numpy array}}.
fn record_tables(py: Python<'_>, r: longpipe_core::app::records::AppRecords) -> PyResult<PyObject> {
    let d = PyDict::new_bound(py);
    let t = PyDict::new_bound(py);
    t.set_item("flow", r.page_flow.into_pyarray_bound(py))?;
    t.set_item("start_ns", r.page_start_ns.into_pyarray_bound(py))?;
    t.set_item("end_ns", r.page_end_ns.into_pyarray_bound(py))?;
    t.set_item("bytes", r.page_bytes.into_pyarray_bound(py))?;
    t.set_item("objects", r.page_objects.into_pyarray_bound(py))?;
    d.set_item("pages", t)?;
    let t = PyDict::new_bound(py);
    t.set_item("flow", r.req_flow.into_pyarray_bound(py))?;
    t.set_item("conn", r.req_conn.into_pyarray_bound(py))?;
    t.set_item("start_ns", r.req_start_ns.into_pyarray_bound(py))?;
    t.set_item("end_ns", r.req_end_ns.into_pyarray_bound(py))?;
    t.set_item("request", r.req_request.into_pyarray_bound(py))?;
    t.set_item("response", r.req_response.into_pyarray_bound(py))?;
    d.set_item("requests", t)?;
    let t = PyDict::new_bound(py);
    t.set_item("flow", r.chunk_flow.into_pyarray_bound(py))?;
    t.set_item("index", r.chunk_index.into_pyarray_bound(py))?;
    t.set_item("start_ns", r.chunk_start_ns.into_pyarray_bound(py))?;
    t.set_item("end_ns", r.chunk_end_ns.into_pyarray_bound(py))?;
    t.set_item("bytes", r.chunk_bytes.into_pyarray_bound(py))?;
    t.set_item("bitrate", r.chunk_bitrate.into_pyarray_bound(py))?;
    d.set_item("chunks", t)?;
    let t = PyDict::new_bound(py);
    t.set_item("flow", r.stall_flow.into_pyarray_bound(py))?;
    t.set_item("start_ns", r.stall_start_ns.into_pyarray_bound(py))?;
    t.set_item("end_ns", r.stall_end_ns.into_pyarray_bound(py))?;
    t.set_item("startup", r.stall_startup.into_pyarray_bound(py))?;
    d.set_item("stalls", t)?;
    let t = PyDict::new_bound(py);
    t.set_item("flow", r.xfer_flow.into_pyarray_bound(py))?;
    t.set_item("start_ns", r.xfer_start_ns.into_pyarray_bound(py))?;
    t.set_item("end_ns", r.xfer_end_ns.into_pyarray_bound(py))?;
    t.set_item("bytes", r.xfer_bytes.into_pyarray_bound(py))?;
    d.set_item("transfers", t)?;
    Ok(d.into_any().unbind())
}

/// Parses and validates a scenario without running it; raises ScenarioError.
/// Returns a summary: {"flows": number of flows after `count`, "duration_ns": ...,
/// "events_estimate": an upper estimate of the run's events, "max_events": the limit
/// `run` applies unless forced, "memory_estimate": bytes, "max_memory": its limit}.
#[pyfunction]
fn validate(py: Python<'_>, scenario_json: &str) -> PyResult<PyObject> {
    let sc = longpipe_core::scenario::parse_json(scenario_json)
        .and_then(|s| s.validate())
        .map_err(to_py_err)?;
    let d = PyDict::new_bound(py);
    d.set_item("flows", sc.flows.len())?;
    d.set_item("duration_ns", sc.duration.0)?;
    let e = longpipe_core::sim::estimate::estimate(&sc);
    d.set_item("events_estimate", e.events)?;
    d.set_item("max_events", longpipe_core::sim::DEFAULT_MAX_EVENTS)?;
    d.set_item("memory_estimate", e.memory)?;
    d.set_item("max_memory", longpipe_core::sim::estimate::MAX_MEMORY_BYTES)?;
    Ok(d.into_any().unbind())
}

/// Parses and validates a scenario and applies the work limits `run` applies unless
/// forced (events and memory); raises ScenarioError (path "(work)") as `run` would.
#[pyfunction]
fn check_work(scenario_json: &str) -> PyResult<()> {
    let sc = longpipe_core::scenario::parse_json(scenario_json)
        .and_then(|s| s.validate())
        .map_err(to_py_err)?;
    longpipe_core::sim::estimate::check(&sc, longpipe_core::sim::DEFAULT_MAX_EVENTS)
        .map(|_| ())
        .map_err(to_py_err)
}

/// The scenario JSON Schema.
#[pyfunction]
fn schema() -> String {
    longpipe_core::json_schema()
}

/// The result JSON Schema (derived from the structs that serialize results).
#[pyfunction]
fn result_schema() -> String {
    longpipe_core::results::json_schema()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(check_work, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(result_schema, m)?)?;
    m.add("ScenarioError", m.py().get_type_bound::<ScenarioError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
