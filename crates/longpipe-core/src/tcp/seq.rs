//! Relative 64-bit sequence numbers inside, wrapping 32-bit numbers on the wire.
//!
//! Endpoints and the gateway keep sequence numbers relative to the initial sequence
//! number (the SYN is 0, the first data byte 1) in 64 bits, where they never wrap.
//! [`SeqSpace`] converts: to the wire by adding the ISN modulo 2^32; from the wire by
//! choosing, among the 64-bit values with the given low 32 bits, the one nearest to a
//! reference that is known to be within 2^31 of it (RFC 9293's window rules guarantee
//! this for snd_una / rcv_nxt).

/// The sequence space of one direction of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqSpace {
    pub isn: u32,
}

impl SeqSpace {
    pub fn new(isn: u32) -> Self {
        SeqSpace { isn }
    }

    /// The wire number of relative sequence number `rel`.
    #[inline]
    pub fn to_wire(self, rel: u64) -> u32 {
        self.isn.wrapping_add(rel as u32)
    }

    /// The relative number of wire number `w`, taken nearest to `reference`.
    #[inline]
    pub fn to_rel(self, w: u32, reference: u64) -> u64 {
        let low = w.wrapping_sub(self.isn);
        let d = low.wrapping_sub(reference as u32) as i32 as i64;
        (reference as i64 + d).max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_across_the_wrap() {
        let s = SeqSpace::new(0xffff_ff00);
        assert_eq!(s.to_wire(0), 0xffff_ff00);
        assert_eq!(s.to_wire(0x100), 0);
        for rel in [0u64, 1, 0xff, 0x100, 0x1_0000_0000, 0x1_0000_0100, 5 << 32] {
            let w = s.to_wire(rel);
            for r in [rel, rel.saturating_sub(1 << 30), rel + (1 << 30)] {
                assert_eq!(s.to_rel(w, r), rel, "rel {rel:#x} ref {r:#x}");
            }
        }
        // An old segment just below the reference stays below it.
        assert_eq!(s.to_rel(s.to_wire(10), 3_000), 10);
        // Nothing goes below zero.
        assert_eq!(s.to_rel(s.isn.wrapping_sub(5), 2), 0);
    }
}
