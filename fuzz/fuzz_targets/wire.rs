#![no_main]
//! IPv4/TCP bytes through wire::parse, and emit/parse round trips; see longpipe_fuzz::wire.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = longpipe_fuzz::wire(data);
});
