//! The fuzz targets as part of `make test`: replay the committed corpus
//! (`fuzz/corpus/<target>/`, which includes every crash ever found), then mutate it for
//! a bounded time: LONGPIPE_FUZZ_SECS seconds per target (default 10). Each test
//! prints how many executions ran.

use std::path::PathBuf;
use std::time::Duration;

fn budget() -> Duration {
    let s: f64 = std::env::var("LONGPIPE_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10.0);
    Duration::from_secs_f64(s.clamp(0.0, 3600.0))
}

fn fuzz_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn run(name: &str, seed: u64) {
    let t = longpipe_fuzz::target(name).unwrap();
    let corpus = longpipe_fuzz::load_corpus(&[&fuzz_dir().join("corpus").join(name)]);
    assert!(corpus.len() >= 5, "the committed {name} corpus is missing");
    let artifacts =
        std::env::temp_dir().join(format!("longpipe-fuzz-{name}-{}", std::process::id()));
    let st = longpipe_fuzz::run_loop(t, corpus, budget(), seed, &artifacts, 64 * 1024);
    println!(
        "fuzz {name}: {} executions, corpus {} -> {}, {} distinct outcomes, {} crashes",
        st.executions,
        st.corpus_in,
        st.corpus_out,
        st.outcomes,
        st.crashes.len()
    );
    let shown: Vec<String> = st
        .crashes
        .iter()
        .map(|p| {
            format!(
                "{}: {:?}",
                p.display(),
                String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default())
            )
        })
        .collect();
    assert!(
        st.crashes.is_empty(),
        "{name} target panicked on:\n{}",
        shown.join("\n")
    );
    assert!(st.executions as usize >= st.corpus_in);
}

#[test]
fn fuzz_scenario_parser_and_validator() {
    run("scenario", 0x5eed_0001);
}

#[test]
fn fuzz_wire_parser() {
    run("wire", 0x5eed_0002);
}

#[test]
fn fuzz_gateway_packet_path() {
    run("gateway", 0x5eed_0003);
}
