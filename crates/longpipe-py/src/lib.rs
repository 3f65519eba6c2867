#![allow(clippy::useless_conversion)] // false positives from pyo3 0.22 #[pyfunction] expansions
#![allow(unexpected_cfgs)] // pyo3 0.22 create_exception! checks a gil-refs feature
//! PyO3 bindings: type conversion only. The simulation runs with the GIL released.

use longpipe_core::{RunOptions, ScenarioError as CoreError, TraceSel};
use numpy::IntoPyArray;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::time::Instant;

create_exception!(
    _core,
    ScenarioError,
    PyValueError,
    "Bad scenario input: args are (field_path, message)."
);

fn to_py_err(e: CoreError) -> PyErr {
    ScenarioError::new_err((e.path, e.msg))
}

/// What `run` returns to Python: (result JSON, traces, pcaps, wall seconds).
type RunReturn = (String, PyObject, Vec<(String, PyObject)>, f64);

/// Runs a scenario given as JSON text.
///
/// Returns (result_json, traces, pcaps, wall_s): traces maps flow id -> dict of numpy
/// columns; pcaps is a list of (spec, bytes); wall_s is the simulation's wall time
/// (kept out of the result, which is the same bytes for the same scenario and seed).
#[pyfunction]
#[pyo3(signature = (scenario_json, seed=None, trace_all=false, trace_flows=None, pcap=None))]
fn run(
    py: Python<'_>,
    scenario_json: &str,
    seed: Option<u64>,
    trace_all: bool,
    trace_flows: Option<Vec<usize>>,
    pcap: Option<Vec<String>>,
) -> PyResult<RunReturn> {
    let trace = if trace_all {
        TraceSel::All
    } else {
        trace_flows.map(TraceSel::Flows).unwrap_or_default()
    };
    let opts = RunOptions {
        seed,
        trace,
        pcap: pcap.unwrap_or_default(),
        ..Default::default()
    };
    let text = scenario_json.to_owned();
    let (out, wall) = py.allow_threads(move || {
        let t0 = Instant::now();
        let r = longpipe_core::run_json(&text, &opts);
        (r, t0.elapsed().as_secs_f64())
    });
    let out = out.map_err(to_py_err)?;
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
    let pcaps = out
        .pcaps
        .into_iter()
        .map(|(s, b)| (s, PyBytes::new_bound(py, &b).into_any().unbind()))
        .collect();
    Ok((json, traces.into_any().unbind(), pcaps, wall))
}

/// Parses and validates a scenario without running it; raises ScenarioError.
#[pyfunction]
fn validate(scenario_json: &str) -> PyResult<()> {
    longpipe_core::scenario::parse_json(scenario_json)
        .and_then(|s| s.validate())
        .map_err(to_py_err)?;
    Ok(())
}

/// The scenario JSON Schema.
#[pyfunction]
fn schema() -> String {
    longpipe_core::json_schema()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add("ScenarioError", m.py().get_type_bound::<ScenarioError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
