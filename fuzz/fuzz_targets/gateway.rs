#![no_main]
//! Packets and timer ticks through the gateway daemon's packet path; see longpipe_fuzz::gateway.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = longpipe_fuzz::gateway(data);
});
