#![no_main]
//! Scenario JSON through parse_json + validate (never a simulation); see longpipe_fuzz::scenario.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = longpipe_fuzz::scenario(data);
});
