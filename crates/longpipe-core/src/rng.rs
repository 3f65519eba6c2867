//! Seeded random streams.
//!
//! One master seed; each component draws from its own stream derived from the seed and
//! a stable name (e.g. `"link/gw->client/loss"`), so adding a flow or a link does not
//! change another component's random numbers. Generator: xoshiro256** seeded through
//! SplitMix64 (Blackman & Vigna), implemented here so that output never depends on a
//! dependency's version.

/// FNV-1a, 64 bit: a stable hash of a component name.
pub fn stable_hash(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[derive(Clone, Debug)]
pub struct RngStream {
    s: [u64; 4],
}

impl RngStream {
    /// The stream named `name` under master seed `seed`.
    pub fn new(seed: u64, name: &str) -> Self {
        let mut st = seed ^ stable_hash(name).rotate_left(17);
        let mut s = [0u64; 4];
        for x in s.iter_mut() {
            *x = splitmix64(&mut st);
        }
        if s == [0; 4] {
            s[0] = 1;
        }
        RngStream { s }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn bernoulli(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        self.uniform() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn streams_are_stable_and_distinct() {
        let mut a = RngStream::new(1, "link/a->b/loss");
        let mut a2 = RngStream::new(1, "link/a->b/loss");
        let mut b = RngStream::new(1, "link/b->a/loss");
        let mut c = RngStream::new(2, "link/a->b/loss");
        let va: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let va2: Vec<u64> = (0..4).map(|_| a2.next_u64()).collect();
        let vb: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        let vc: Vec<u64> = (0..4).map(|_| c.next_u64()).collect();
        assert_eq!(va, va2);
        assert_ne!(va, vb);
        assert_ne!(va, vc);
    }
    #[test]
    fn bernoulli_mean() {
        let mut r = RngStream::new(7, "x");
        let n = 200_000;
        let k = (0..n).filter(|_| r.bernoulli(0.01)).count();
        let mean = k as f64 / n as f64;
        assert!((mean - 0.01).abs() < 0.001, "{mean}");
        let u: f64 = (0..n).map(|_| r.uniform()).sum::<f64>() / n as f64;
        assert!((u - 0.5).abs() < 0.005);
    }
}
