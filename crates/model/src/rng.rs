//! The seeded generator behind every reproducible stream (synthetic runs, fixtures, bootstrap,
//! property and fuzz tests): rand's SmallRng (Xoshiro256++ on 64-bit targets), so a stream is
//! reproducible from its seed on one build. Pure: no entropy is read, only the seed.
//!
//! It implements [`rand::RngCore`], so any rand / rand_distr distribution samples from it.

use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

pub struct Rng(SmallRng);

const TWO_53: f64 = (1u64 << 53) as f64;

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SmallRng::seed_from_u64(seed))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in the open interval (0, 1): safe to take the logarithm of.
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / TWO_53
    }
    /// Uniform in [0, 1), on the 2^-53 grid.
    pub fn unit_from_zero(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / TWO_53
    }
    /// In [0, n) (0 when n is 0); the modulo bias is below n / 2^64.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    /// An index in [0, n) (0 when n is 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
    /// In [lo, hi) (lo when the range is empty).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo))
    }
    /// True with probability p.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64) < p * TWO_53
    }
    /// True with probability k / 1000.
    pub fn per_mille(&mut self, k: u64) -> bool {
        self.next_u64() % 1000 < k
    }
}

impl RngCore for Rng {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.0.try_fill_bytes(dest)
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn reproducible_and_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Rng::new(7).next_u64(), Rng::new(8).next_u64());
        for _ in 0..1000 {
            let u = a.unit();
            assert!(u > 0.0 && u < 1.0);
            let z = a.unit_from_zero();
            assert!((0.0..1.0).contains(&z));
            assert!(a.below(10) < 10);
            assert_eq!(a.below(0), 0);
            assert!((5..9).contains(&a.range(5, 9)));
            assert_eq!(a.range(9, 9), 9);
            assert!(a.index(3) < 3);
        }
        assert!(!a.chance(0.0) && a.chance(1.0));
        assert!(!a.per_mille(0) && a.per_mille(1000));
    }

    #[test]
    fn chance_frequency() {
        let mut r = Rng::new(11);
        let hits = (0..100_000).filter(|_| r.chance(0.25)).count();
        // Binomial(1e5, 0.25): sd ≈ 137; 6 sd.
        assert!((24_180..=25_820).contains(&hits), "{hits}");
        let hits = (0..100_000).filter(|_| r.per_mille(100)).count();
        assert!((9_100..=10_900).contains(&hits), "{hits}");
    }
}
