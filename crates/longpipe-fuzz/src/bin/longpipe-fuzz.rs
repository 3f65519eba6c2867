//! `longpipe-fuzz TARGET [SECONDS] [SEED]`: the stable mutation loop for long runs
//! (`make fuzz` uses cargo-fuzz instead when a nightly toolchain is available).
//! Reads `fuzz/corpus/TARGET/` and writes crashing inputs to `fuzz/artifacts/TARGET/`.
//! `longpipe-fuzz TARGET --replay FILE...` runs inputs once, to reproduce a crash.

use std::path::PathBuf;
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let pos: Vec<&String> = args.iter().collect();
    let Some(name) = pos.first() else {
        eprintln!("usage: longpipe-fuzz scenario|wire|gateway [SECONDS] [SEED] | --replay FILE... | gateway-corpus");
        std::process::exit(2);
    };
    if name.as_str() == "gateway-corpus" {
        // (Re)writes the gateway target's seed inputs.
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/gateway");
        std::fs::create_dir_all(&dir).expect("corpus directory");
        for (i, s) in longpipe_fuzz::gateway_seeds().iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i}")), s).expect("written");
        }
        return;
    }
    let Some(t) = longpipe_fuzz::target(name) else {
        eprintln!("error: unknown target {name:?}; expected scenario, wire or gateway");
        std::process::exit(2);
    };
    if pos.get(1).map(|s| s.as_str()) == Some("--replay") {
        // Runs the given inputs once each, panics not caught: to reproduce a crash.
        for f in &pos[2..] {
            let data = std::fs::read(f.as_str()).unwrap_or_else(|e| panic!("{f}: {e}"));
            println!("{f}: {}", t(&data));
        }
        return;
    }
    let secs: f64 = pos.get(1).and_then(|s| s.parse().ok()).unwrap_or(60.0);
    let seed: u64 = pos.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let corpus_dir = root.join("corpus").join(name.as_str());
    let corpus = longpipe_fuzz::load_corpus(&[&corpus_dir]);
    let n0 = corpus.len();
    let st = longpipe_fuzz::run_loop(
        t,
        corpus,
        Duration::from_secs_f64(secs),
        seed,
        &root.join("artifacts").join(name.as_str()),
        64 * 1024,
    );
    println!(
        "{name}: {} executions in {secs} s, corpus {} -> {}, {} distinct outcomes, {} crashes",
        st.executions,
        n0,
        st.corpus_out,
        st.outcomes,
        st.crashes.len()
    );
    for c in &st.crashes {
        println!("crash: {}", c.display());
    }
    if !st.crashes.is_empty() {
        std::process::exit(1);
    }
}
