//! longpipe-core: a deterministic packet-level simulator of TCP over long, thin and
//! lossy links. Pure Rust: no Python, no OS clock, no I/O.
//!
//! Layers, from the leaves up: `time`, `rng`, `units`, `error`, `stats`, `tagged` (scenario tables tagged by `kind`), `element` (the
//! protocol every network element speaks) and `wire` (the IPv4/TCP codec); the
//! components (`net`, `l2`, `tcp`, `middlebox`), each owning its spec and config; the
//! `scenario` that parses and assembles them; the `engine` (event queue and driver) and
//! the simulator (`sim`). Entry point: [`run_json`] (scenario JSON text in,
//! [`sim::RunOutput`] out). See docs/architecture.md.

pub mod app;
pub mod element;
pub mod engine;
pub mod error;
pub mod l2;
pub mod loaded;
pub mod middlebox;
pub mod net;
pub mod results;
pub mod rng;
pub mod scenario;
pub mod sim;
pub mod stats;
pub mod tagged;
pub mod tcp;
pub mod time;
pub mod unit;
pub mod units;
pub mod wire;

pub use scenario::{json_schema, ScenarioError};
pub use sim::{RunOptions, RunOutput, TraceSel};

/// Parses, validates and runs a scenario given as JSON text.
pub fn run_json(text: &str, opts: &RunOptions) -> Result<RunOutput, ScenarioError> {
    let sc = scenario::parse_json(text)?.validate()?;
    run_valid(&sc, opts)
}

pub fn run_valid(
    sc: &scenario::ValidScenario,
    opts: &RunOptions,
) -> Result<RunOutput, ScenarioError> {
    if let Some(limit) = opts.max_events {
        sim::estimate::check(sc, limit)?;
    }
    Ok(sim::Sim::new(sc, opts)?.run(opts))
}
