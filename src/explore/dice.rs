//! The generator's seeded choices: every draw of a case comes from one `Dice`, so that (seed,
//! index) alone decides the case.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

use super::machine::MIB;

/// A seeded source of the generator's choices.
pub struct Dice(ChaCha8Rng);

impl Dice {
    /// (seed, index) -> an independent stream: splitmix64 of both.
    pub fn new(seed: u64, index: u32) -> Dice {
        let mut z = seed ^ (u64::from(index).wrapping_add(1)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Dice(ChaCha8Rng::seed_from_u64(z ^ (z >> 31)))
    }

    /// 0..n.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n.max(1)
    }

    /// lo..=hi.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// True with probability `percent` %.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }

    /// An index into a list of `n` things.
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// A size in whole MiB, lo..=hi MiB.
    pub fn mib(&mut self, lo: u64, hi: u64) -> u64 {
        self.range(lo.max(1), hi.max(1)) * MIB
    }

    /// One of `xs` by weight: `x` is drawn below the sum of the weights and the first whose
    /// running sum passes it is taken.
    pub fn weighted<'a, T>(&mut self, xs: &'a [T], weight: impl Fn(&T) -> u64) -> &'a T {
        let total: u64 = xs.iter().map(&weight).sum();
        let mut x = self.below(total);
        for item in xs {
            if x < weight(item) {
                return item;
            }
            x -= weight(item);
        }
        &xs[xs.len() - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Weights are kept: over many draws each item comes up about as often as its share.
    #[test]
    fn weighted_draws_follow_the_weights() {
        let mut d = Dice::new(1, 0);
        let xs = [("a", 1u64), ("b", 3)];
        let b = (0..4000)
            .filter(|_| d.weighted(&xs, |x| x.1).0 == "b")
            .count();
        assert!((2800..3200).contains(&b), "{b} of 4000");
    }
}
