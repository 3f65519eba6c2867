//! Fuzz targets for longpipe-core's input parsers, and a small mutation fuzzer that
//! runs them on the stable toolchain (no coverage instrumentation).
//!
//! * [`scenario`]: scenario JSON text through the public
//!   `scenario::parse_json(text).and_then(|s| s.validate())`: must never panic; every
//!   error names a field path or "(top level)" and has a one-line message; a valid
//!   scenario's work estimate (events, timeouts, memory) is a non-negative number. It
//!   never runs a simulation.
//! * [`wire`]: bytes through `wire::parse`: must never panic; a parsed header emits
//!   and parses back to itself (SACK blocks beyond what fits dropped, as documented)
//!   with both checksums correct.
//! * [`gateway`]: a stream of packets (either direction) and timer ticks through the
//!   gateway daemon's packet path (`longpipe_gateway::path`, the core gateway on raw
//!   bytes): must never panic; every packet it writes that is not the input unchanged
//!   parses with both checksums correct; the table never exceeds its bound; and once
//!   time passes the idle and abandon timeouts, the table is empty.
//!
//! The same functions are the libFuzzer targets of `fuzz/` (cargo-fuzz, nightly; see
//! `make fuzz`). [`run_loop`] is the stable fallback used by `make test`: it replays
//! the committed corpus in `fuzz/corpus/<target>/`, then mutates it for a time budget,
//! keeping inputs that show a new outcome (a crude stand-in for coverage feedback).

use longpipe_core::wire;
use std::collections::BTreeSet;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The scenario target. Returns a short outcome signature (for the mutation loop's
/// feedback): "ok" or the error's path shape and first words.
pub fn scenario(data: &[u8]) -> String {
    let Ok(text) = std::str::from_utf8(data) else {
        return "utf8".into();
    };
    let parsed = longpipe_core::scenario::parse_json(text);
    // Known core limit (issue 14, "count = 10000000 reaches 4 GB"): validate() expands
    // `count` into one flow each, with no bound yet, so a fuzzed count of 4294967295
    // exhausts memory. Such inputs stop after parsing until the core caps it
    // (tests/test_hostile_core.py has the expected-failure test).
    let r = parsed.and_then(|s| s.validate());
    match r {
        Ok(v) => {
            assert!(v.duration.0 > 0, "a valid scenario has a positive duration");
            assert!(v.warmup < v.duration, "warmup < duration after validation");
            assert!(!v.links.is_empty(), "a valid scenario has a link");
            // the work estimate (events, timeouts, memory) is a number, never NaN
            let e = longpipe_core::sim::estimate::estimate(&v);
            for x in [e.events, e.packets, e.timeouts, e.packets_held, e.memory] {
                assert!(
                    x >= 0.0,
                    "the work estimate is a non-negative number: {e:?}"
                );
            }
            format!("ok:{}:{}", v.flows.len().min(3), v.nodes.len().min(5))
        }
        Err(e) => {
            assert!(!e.path.is_empty(), "error with an empty path: {e:?}");
            assert!(
                !e.msg.trim().is_empty(),
                "error with an empty message: {e:?}"
            );
            assert!(!e.to_string().contains('\n'), "multi-line message: {e:?}");
            // Signature: the path with indices and key names generalised, and the
            // message's first three words.
            let shape: String = e
                .path
                .chars()
                .map(|c| if c.is_ascii_digit() { '#' } else { c })
                .take(40)
                .collect();
            let words: Vec<&str> = e.msg.split_whitespace().take(3).collect();
            format!("err:{shape}:{}", words.join(" "))
        }
    }
}

/// The wire target. Returns an outcome signature.
pub fn wire(data: &[u8]) -> String {
    match wire::parse(data) {
        Err(e) => format!("err:{e:?}"),
        Ok((h, st)) => {
            assert!(h.header_len() >= 40, "header length below 40");
            if h.total_len() <= 65_535 {
                let mut out = Vec::new();
                h.emit_with_zero_payload(&mut out);
                assert_eq!(out.len(), h.total_len(), "emitted length");
                let (h2, st2) = wire::parse(&out).expect("an emitted packet parses");
                assert!(st2.all_ok(), "emitted checksums verify: {st2:?}");
                let mut want = h;
                let n = h.options.sack_blocks_encoded();
                let kept = wire::SackBlocks::from_slice(&h.options.sack.as_slice()[..n]);
                want.options.sack = kept;
                assert_eq!(h2, want, "emit then parse gives the header back");
            }
            let o = &h.options;
            format!(
                "ok:{}{}{}{}:{}:{:?}:{:?}",
                o.mss.is_some() as u8,
                o.wscale.is_some() as u8,
                o.sack_permitted as u8,
                o.timestamps.is_some() as u8,
                o.sack.n,
                st.ip_ok,
                st.tcp_ok
            )
        }
    }
}

/// The gateway target. Input: records of a 4-byte header — op (bit 7: a timer tick,
/// else bit 0: the device, 0 toward the client, 1 toward the server), milliseconds to
/// advance, length (big-endian u16) — then that many packet bytes. Returns an outcome
/// signature.
pub fn gateway(data: &[u8]) -> String {
    use longpipe_core::middlebox::gateway::{GatewaySpec, Uplink};
    use longpipe_core::time::{Rate, SimTime};
    use longpipe_gateway::path::{PacketPath, Prefix};
    let spec: GatewaySpec = serde_json::from_str(
        r#"{"idle_timeout":"5s","abandon_timeout":"5s","max_conns":8,"memory":"200KB"}"#,
    )
    .expect("a valid spec");
    let cfg = spec.resolve("gateway").expect("resolves");
    let up = Uplink {
        rate: Some(Rate(10_000_000)),
        bdp: 100_000,
    };
    let mut p = PacketPath::new(cfg, up, vec![Prefix([10, 0, 0, 0], 24)]);
    let mut now = 0u64;
    let mut i = 0;
    let mut written = 0u64;
    let check = |input: &[u8], d: usize, b: &[u8]| {
        assert!(d < 2, "device {d}");
        if b != input {
            let (_, st) = wire::parse(b).expect("a packet the gateway wrote parses");
            assert!(
                st.all_ok(),
                "a packet the gateway wrote has bad checksums: {st:?}"
            );
        }
        true
    };
    while i + 4 <= data.len() {
        let (op, dt) = (data[i], data[i + 1] as u64);
        let len = (u16::from_be_bytes([data[i + 2], data[i + 3]]) as usize).min(data.len() - i - 4);
        let b = &data[i + 4..i + 4 + len];
        i += 4 + len;
        now += dt * 1_000_000;
        if op & 0x80 != 0 {
            if p.next_timer().is_some_and(|t| t.0 <= now) {
                p.timeout(SimTime(now), &mut |d, x| {
                    written += 1;
                    check(&[], d, x)
                });
            }
        } else {
            p.input(SimTime(now), (op & 1) as usize, b, &mut |d, x| {
                written += 1;
                check(b, d, x)
            });
        }
        assert!(p.gw.conns() <= 8, "the table's bound");
    }
    let conns = p.gw.conns();
    // let time pass: every connection is reaped, closed or abandoned
    for _ in 0..100_000 {
        let Some(t) = p.next_timer() else { break };
        assert!(
            t.0 < now + 3_600_000_000_000,
            "a deadline an hour away: {t}"
        );
        now = now.max(t.0);
        p.timeout(SimTime(now), &mut |d, x| check(&[], d, x));
    }
    assert_eq!(p.gw.conns(), 0, "connections outlived their timeouts");
    format!(
        "ok:{}:{}:{}:{}:{}",
        conns.min(3),
        (written > 0) as u8,
        p.stats.malformed.min(2),
        p.gw.stats.spoofed_acks.min(2),
        p.gw.stats.segments_resent.min(2)
    )
}

/// Seed inputs for [`gateway`]: a client-opened download with data, ACKs, a loss, a
/// FIN, a RST, and broken packets (written to `fuzz/corpus/gateway/` by
/// `longpipe-fuzz gateway-corpus`).
pub fn gateway_seeds() -> Vec<Vec<u8>> {
    use longpipe_gateway::pkt::build_packet;
    use wire::{TcpIpHeader, TcpOptions, ACK, FIN, PSH, RST, SYN};
    let h = |from_client: bool, port: u16, flags: u8, seq: u32, ack: u32| {
        let (src, dst, sp, dp) = if from_client {
            ([10, 0, 0, 3], [10, 0, 1, 1], port, 80)
        } else {
            ([10, 0, 1, 1], [10, 0, 0, 3], 80, port)
        };
        TcpIpHeader {
            src_ip: src,
            dst_ip: dst,
            ip_id: 1,
            tos: 0,
            ttl: 64,
            src_port: sp,
            dst_port: dp,
            seq,
            ack,
            flags,
            window: 8192,
            options: TcpOptions::default(),
            payload_len: 0,
        }
    };
    let rec = |out: &mut Vec<u8>, op: u8, dt: u8, b: &[u8]| {
        out.extend_from_slice(&[op, dt]);
        out.extend_from_slice(&(b.len() as u16).to_be_bytes());
        out.extend_from_slice(b);
    };
    let mut seeds = vec![];
    for (variant, port) in [(0u8, 1000u16), (1, 2000), (2, 3000), (3, 4000), (4, 5000)] {
        let mut s = vec![];
        let mut syn = h(true, port, SYN, 100, 0);
        syn.options = TcpOptions {
            mss: Some(1000),
            wscale: Some(7),
            sack_permitted: variant != 1,
            timestamps: (variant == 2).then_some((1, 0)),
            ..Default::default()
        };
        rec(&mut s, 1, 0, &build_packet(&syn, &[]));
        let mut sa = h(false, port, SYN | ACK, 5000, 101);
        sa.options = syn.options;
        rec(&mut s, 0, 1, &build_packet(&sa, &[]));
        rec(
            &mut s,
            1,
            1,
            &build_packet(&h(true, port, ACK, 101, 5001), &[]),
        );
        rec(
            &mut s,
            1,
            1,
            &build_packet(&h(true, port, ACK | PSH, 101, 5001), b"GET /\n"),
        );
        for k in 0..6u32 {
            let d = vec![k as u8; 1000];
            rec(
                &mut s,
                0,
                1,
                &build_packet(&h(false, port, ACK, 5001 + 1000 * k, 107), &d),
            );
            rec(&mut s, 0x80, 2, &[]);
        }
        // the client lost the second segment: duplicate ACKs, with SACK
        let mut dup = h(true, port, ACK, 107, 6001);
        if variant != 1 {
            dup.options.sack = wire::SackBlocks::from_slice(&[(7001, 11001)]);
        }
        for _ in 0..3 {
            rec(&mut s, 1, 10, &build_packet(&dup, &[]));
        }
        rec(&mut s, 0x80, 200, &[]);
        rec(
            &mut s,
            1,
            10,
            &build_packet(&h(true, port, ACK, 107, 11001), &[]),
        );
        match variant {
            3 => rec(
                &mut s,
                0,
                1,
                &build_packet(&h(false, port, RST, 11001, 0), &[]),
            ),
            4 => {
                let mut bad = build_packet(&h(false, port, ACK, 11001, 107), &[1, 2, 3]);
                let n = bad.len();
                bad[n - 1] ^= 1;
                rec(&mut s, 0, 1, &bad);
                rec(&mut s, 0, 1, &bad[..30]);
            }
            _ => {
                rec(
                    &mut s,
                    0,
                    1,
                    &build_packet(&h(false, port, ACK | FIN, 11001, 107), &[]),
                );
                rec(
                    &mut s,
                    1,
                    200,
                    &build_packet(&h(true, port, ACK | FIN, 107, 11002), &[]),
                );
            }
        }
        seeds.push(s);
    }
    seeds
}

/// A target: input bytes to an outcome signature; panics on a defect.
pub type Target = fn(&[u8]) -> String;

/// The named targets.
pub fn target(name: &str) -> Option<Target> {
    match name {
        "scenario" => Some(scenario),
        "wire" => Some(wire),
        "gateway" => Some(gateway),
        _ => None,
    }
}

/// Tokens the mutator splices in: scenario keys, values and units that the parser
/// treats specially, and hostile numbers.
const DICT: &[&str] = &[
    "\"duration\"",
    "\"warmup\"",
    "\"seed\"",
    "\"node\"",
    "\"link\"",
    "\"flow\"",
    "\"name\"",
    "\"kind\"",
    "\"tcp-gateway\"",
    "\"gateway\"",
    "\"mode\"",
    "\"split\"",
    "\"spoof\"",
    "\"window\"",
    "\"buffer\"",
    "\"pace\"",
    "\"rate\"",
    "\"rate_ba\"",
    "\"delay\"",
    "\"delay_ba\"",
    "\"queue\"",
    "\"queue_ba\"",
    "\"limit\"",
    "\"loss\"",
    "\"loss_ba\"",
    "\"bernoulli\"",
    "\"ber\"",
    "\"gilbert\"",
    "\"list\"",
    "\"drop\"",
    "\"p\"",
    "\"layer2\"",
    "\"rlc-am\"",
    "\"pdu_payload\"",
    "\"header\"",
    "\"tti\"",
    "\"max_dat\"",
    "\"src\"",
    "\"dst\"",
    "\"tcp\"",
    "\"hybla\"",
    "\"reno\"",
    "\"newreno\"",
    "\"tahoe\"",
    "\"mss\"",
    "\"mtu\"",
    "\"rwnd\"",
    "\"iw\"",
    "\"rfc3390\"",
    "\"sack\"",
    "\"app\"",
    "\"bulk\"",
    "\"bytes\"",
    "\"start\"",
    "\"count\"",
    "\"min_rto\"",
    "\"initial_rto\"",
    "\"max_rto\"",
    "\"1ns\"",
    "\"0s\"",
    "\"1e9s\"",
    "\"18446744073709551617pkt\"",
    "\"1.5pkt\"",
    "\"64KiB\"",
    "\"10Mbps\"",
    "\"0bps\"",
    "\"-1s\"",
    "\"1e-3s\"",
    "\"290\"",
    "\"nan\"",
    "18446744073709551616",
    "18446744073709551615",
    "4294967295",
    "4294967296",
    "-1",
    "0",
    "1e308",
    "-0",
    "0.5",
    "1.5",
    "true",
    "null",
    "[]",
    "{}",
    "[{}]",
    ":",
    ",",
    "\"\\u0000\"",
    "\"\\n\"",
];

/// xorshift64*: a tiny deterministic generator (no dependency).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

/// One random edit of `data` (byte flips, inserts, deletes, splices from `other`,
/// dictionary tokens, interesting bytes); several edits are stacked by the caller.
pub fn mutate(data: &mut Vec<u8>, other: &[u8], rng: &mut Rng, max_len: usize) {
    let len = data.len();
    match rng.below(9) {
        0 if len > 0 => {
            let i = rng.below(len);
            data[i] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let i = rng.below(len);
            data[i] = [
                0, 1, 0x7f, 0x80, 0xff, b'"', b'[', b'{', b'9', b'-', b'.', b'e',
            ][rng.below(12)];
        }
        2 => {
            let i = rng.below(len + 1);
            data.insert(i, rng.next_u64() as u8);
        }
        3 if len > 0 => {
            let i = rng.below(len);
            let n = 1 + rng.below((len - i).min(16));
            data.drain(i..i + n);
        }
        4 => {
            let t = DICT[rng.below(DICT.len())].as_bytes();
            let i = rng.below(len + 1);
            data.splice(i..i, t.iter().copied());
        }
        5 if len > 0 => {
            // replace a run with a token
            let t = DICT[rng.below(DICT.len())].as_bytes();
            let i = rng.below(len);
            let n = 1 + rng.below((len - i).min(12));
            data.splice(i..i + n, t.iter().copied());
        }
        6 if !other.is_empty() => {
            // splice a chunk of another corpus entry
            let a = rng.below(other.len());
            let b = a + 1 + rng.below((other.len() - a).min(64));
            let i = rng.below(len + 1);
            data.splice(i..i, other[a..b].iter().copied());
        }
        7 if len > 1 => {
            // duplicate a chunk in place (repeats, deeper nesting)
            let a = rng.below(len);
            let b = a + 1 + rng.below((len - a).min(32));
            let chunk = data[a..b].to_vec();
            data.splice(b..b, chunk);
        }
        _ if len >= 2 => {
            // overwrite a 16/32-bit big-endian field with an interesting value
            let vals: [u32; 8] = [0, 1, 0xffff, 0x8000, 0xffff_ffff, 40, 60, 65_535];
            let v = vals[rng.below(vals.len())].to_be_bytes();
            let i = rng.below(len - 1);
            let n = if len - i >= 4 && rng.below(2) == 0 {
                4
            } else {
                2
            };
            data[i..i + n].copy_from_slice(&v[4 - n..]);
        }
        _ => data.push(rng.next_u64() as u8),
    }
    data.truncate(max_len);
}

/// What a [`run_loop`] did.
#[derive(Debug, Default)]
pub struct Stats {
    pub executions: u64,
    pub corpus_in: usize,
    pub corpus_out: usize,
    pub outcomes: usize,
    /// Inputs that panicked, as written to the artifacts directory.
    pub crashes: Vec<PathBuf>,
}

/// Reads every file of the given directories (sorted, for determinism).
pub fn load_corpus(dirs: &[&Path]) -> Vec<Vec<u8>> {
    let mut files = Vec::new();
    for d in dirs {
        if let Ok(rd) = std::fs::read_dir(d) {
            for e in rd.flatten() {
                if e.path().is_file() {
                    files.push(e.path());
                }
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .filter_map(|p| std::fs::read(p).ok())
        .collect()
}

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Replays `corpus`, then mutates it until `budget` runs out (at least `min_execs`
/// executions of mutants). A panic is caught, its input written to
/// `artifacts/crash-<hash>` and counted; the loop goes on.
pub fn run_loop(
    target: Target,
    corpus: Vec<Vec<u8>>,
    budget: Duration,
    seed: u64,
    artifacts: &Path,
    max_len: usize,
) -> Stats {
    let mut st = Stats {
        corpus_in: corpus.len(),
        ..Default::default()
    };
    let prev_hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {})); // crashes are reported below, not printed
    let mut seen = BTreeSet::new();
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let exec = |input: &[u8], st: &mut Stats| -> Option<String> {
        st.executions += 1;
        match panic::catch_unwind(AssertUnwindSafe(|| target(input))) {
            Ok(sig) => Some(sig),
            Err(_) => {
                let _ = std::fs::create_dir_all(artifacts);
                let p = artifacts.join(format!("crash-{:016x}", fnv(input)));
                let _ = std::fs::write(&p, input);
                if !st.crashes.contains(&p) {
                    st.crashes.push(p);
                }
                None
            }
        }
    };
    for input in &corpus {
        if let Some(sig) = exec(input, &mut st) {
            seen.insert(sig);
        }
        pool.push(input.clone());
    }
    if pool.is_empty() {
        pool.push(b"{}".to_vec());
    }
    let mut rng = Rng::new(seed);
    let t0 = Instant::now();
    while t0.elapsed() < budget {
        for _ in 0..64 {
            let mut x = pool[rng.below(pool.len())].clone();
            let other = pool[rng.below(pool.len())].clone();
            for _ in 0..1 + rng.below(4) {
                mutate(&mut x, &other, &mut rng, max_len);
            }
            if let Some(sig) = exec(&x, &mut st) {
                if seen.insert(sig) && pool.len() < 4096 {
                    pool.push(x);
                }
            }
        }
    }
    panic::set_hook(prev_hook);
    st.corpus_out = pool.len();
    st.outcomes = seen.len();
    st
}
