//! The statistics behind every performance verdict (`memcgtest compare`, the `throughput` and
//! `ratio` checks): the median, lkp-tests' separation rule, the rank-sum test for independent
//! samples, and how many samples a verdict needs.
//! Every quantity is higher-is-better.

/// The median of a sample set (mean of the middle two for an even count); None when empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// How a new sample set lies against a base set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Separation {
    /// Too few samples for separation to mean anything (see [`enough_samples`]).
    TooFewSamples,
    /// Every new sample is below every base sample.
    Worse,
    /// Every new sample is above every base sample.
    Better,
    /// Neither.
    Overlap,
}

/// lkp-tests' rule, after the sample-size rule: whether `new` separates from `base`.
pub fn separation(base: &[f64], new: &[f64]) -> Separation {
    if !enough_samples(base.len(), new.len()) {
        Separation::TooFewSamples
    } else if new.iter().all(|n| base.iter().all(|b| n < b)) {
        Separation::Worse
    } else if new.iter().all(|n| base.iter().all(|b| n > b)) {
        Separation::Better
    } else {
        Separation::Overlap
    }
}

/// The rank-sum test (Mann-Whitney, exact, one-sided) at the same 5 %, for independent samples
/// (a run or a boot each): `new` is Worse when the pairs (base, new) with the new sample not
/// below the base one are so few that chance, with no real change, gives that few at most 5 % of
/// the time (Better, the mirror image). At 3 v 3 only full separation qualifies (1/20); at 4 v 4
/// one pair out of order may be (2/70 = 2.9 %), at 5 v 5 four (12/252 = 4.8 %): one outlier run
/// in a side no longer hides a real change. A tie counts against the verdict. Samples that are
/// not independent (repetitions inside one run) keep [`separation`]: the chance computed here
/// would not be theirs.
pub fn rank_shift(base: &[f64], new: &[f64]) -> Separation {
    if !enough_samples(base.len(), new.len()) {
        return Separation::TooFewSamples;
    }
    let against = |worse: bool| {
        base.iter()
            .flat_map(|b| new.iter().map(move |n| (*b, *n)))
            .filter(|(b, n)| if worse { n >= b } else { n <= b })
            .count()
    };
    let chance = |u: usize| rank_chance(base.len(), new.len(), u) * 100.0;
    if chance(against(true)) <= MAX_CHANCE_PCT as f64 + 1e-9 {
        Separation::Worse
    } else if chance(against(false)) <= MAX_CHANCE_PCT as f64 + 1e-9 {
        Separation::Better
    } else {
        Separation::Overlap
    }
}

/// The chance that n and m samples with no real change leave at most `u` of their n x m pairs
/// out of order: the share of the C(n+m, n) equally likely orderings with U <= u (the
/// Mann-Whitney U distribution, by the recurrence over the last sample's side).
pub fn rank_chance(n: usize, m: usize, u: usize) -> f64 {
    // ways[j][k]: orderings of i samples of one side and j of the other with U = k.
    let mut ways: Vec<Vec<f64>> = (0..=m)
        .map(|_| {
            let mut w = vec![0.0; n * m + 1];
            w[0] = 1.0;
            w
        })
        .collect();
    for _ in 1..=n {
        let mut next: Vec<Vec<f64>> = vec![vec![0.0; n * m + 1]; m + 1];
        next[0][0] = 1.0;
        for j in 1..=m {
            for k in 0..=n * m {
                // The largest sample is of the first side (it is above all j of the other: U
                // grows by j) or of the second (U unchanged).
                let first = if k >= j { ways[j][k - j] } else { 0.0 };
                next[j][k] = first + next[j - 1][k];
            }
        }
        ways = next;
    }
    let all: f64 = ways[m].iter().sum();
    ways[m].iter().take(u + 1).sum::<f64>() / all
}

/// The largest chance, in percent, that a verdict may owe to luck.
pub const MAX_CHANCE_PCT: u128 = 5;

/// C(n+m, n): the orderings of n and m samples. With no real change every ordering is equally
/// likely, and exactly one of them puts all n below all m, so that happens with chance 1 / C(n+m, n).
/// Saturates far above what [`enough_samples`] needs.
pub fn orderings(n: usize, m: usize) -> u128 {
    let (k, rest) = (n.min(m) as u128, n.max(m) as u128);
    let mut c: u128 = 1;
    for i in 1..=k {
        // C(rest+i, i) = C(rest+i-1, i-1) * (rest+i) / i, exact at every step.
        c = c * (rest + i) / i;
        if c > u64::MAX as u128 {
            break;
        }
    }
    c
}

/// The sample-size rule: a regression or improvement needs enough samples that full separation
/// by chance, with no real change, is at most 5 %: 1 / C(n+m, n) <= 5 %. 3 v 3 is the least
/// balanced size (1/20); 2 v 4 is not enough (1/15), 2 v 5 is (1/21), 1 v n needs n >= 19.
pub fn enough_samples(n: usize, m: usize) -> bool {
    n > 0 && m > 0 && orderings(n, m) * MAX_CHANCE_PCT >= 100
}

/// "too few samples (n=1 v n=1)" and why, for verdicts that refuse to judge.
pub fn too_few(n: usize, m: usize) -> String {
    format!(
        "too few samples (n={n} v n={m}): the sets would separate by chance 1 time in {}, a verdict needs at most {MAX_CHANCE_PCT} % (e.g. 3 v 3)",
        orderings(n, m)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_chances_are_the_mann_whitney_distribution() {
        assert!((rank_chance(3, 3, 0) - 1.0 / 20.0).abs() < 1e-12);
        assert!((rank_chance(4, 4, 1) - 2.0 / 70.0).abs() < 1e-12);
        assert!((rank_chance(4, 4, 2) - 4.0 / 70.0).abs() < 1e-12);
        assert!((rank_chance(5, 5, 4) - 12.0 / 252.0).abs() < 1e-12);
        assert!((rank_chance(2, 5, 0) - 1.0 / 21.0).abs() < 1e-12);
        assert!((rank_chance(3, 4, 12) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn rank_shift_allows_what_chance_rarely_gives() {
        let base = [100.0, 101.0, 102.0, 103.0];
        // One new boot among the base ones: 1 pair out of order of 16, chance 2/70.
        assert_eq!(
            rank_shift(&base, &[90.0, 91.0, 92.0, 100.5]),
            Separation::Worse
        );
        // Two: 4/70 > 5 %.
        assert_eq!(
            rank_shift(&base, &[90.0, 91.0, 101.5, 100.5]),
            Separation::Overlap
        );
        assert_eq!(
            rank_shift(&base, &[110.0, 111.0, 112.0, 102.5]),
            Separation::Better
        );
        // 3 v 3: only full separation; a tie counts against.
        let b3 = [100.0, 101.0, 102.0];
        assert_eq!(rank_shift(&b3, &[90.0, 91.0, 99.0]), Separation::Worse);
        assert_eq!(rank_shift(&b3, &[90.0, 91.0, 100.0]), Separation::Overlap);
        assert_eq!(rank_shift(&b3, &[90.0, 91.0]), Separation::TooFewSamples);
        // Full separation is always enough where the sample-size rule lets a verdict be.
        assert_eq!(rank_shift(&[1.0; 19], &[0.5]), Separation::Worse);
    }

    #[test]
    fn median_of_odd_even_and_empty_sets() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn orderings_are_binomials() {
        assert_eq!(orderings(3, 3), 20);
        assert_eq!(orderings(2, 4), 15);
        assert_eq!(orderings(4, 2), 15);
        assert_eq!(orderings(2, 5), 21);
        assert_eq!(orderings(1, 7), 8);
        assert_eq!(orderings(0, 5), 1);
        assert_eq!(orderings(5, 5), 252);
        // Saturates instead of overflowing.
        assert!(orderings(100_000, 100_000) > u64::MAX as u128);
    }

    #[test]
    fn sample_size_rule_boundaries() {
        assert!(enough_samples(3, 3), "1/20 = 5 %");
        assert!(!enough_samples(2, 4), "1/15 = 6.7 %");
        assert!(!enough_samples(4, 2), "1/15 = 6.7 %");
        assert!(enough_samples(2, 5), "1/21");
        assert!(!enough_samples(2, 3));
        assert!(!enough_samples(1, 1));
        assert!(!enough_samples(1, 18), "1/19");
        assert!(enough_samples(1, 19), "1/20");
        assert!(enough_samples(19, 1));
        assert!(!enough_samples(0, 0));
        assert!(!enough_samples(0, 100));
        assert!(!enough_samples(100, 0));
    }

    #[test]
    fn separation_follows_lkp_after_the_size_rule() {
        let base = [100.0, 102.0, 98.0];
        assert_eq!(separation(&base, &[80.0, 79.0, 82.0]), Separation::Worse);
        assert_eq!(
            separation(&base, &[120.0, 119.0, 122.0]),
            Separation::Better
        );
        assert_eq!(separation(&base, &[80.0, 99.0, 82.0]), Separation::Overlap);
        // A tie is not a separation.
        assert_eq!(separation(&base, &[80.0, 98.0, 82.0]), Separation::Overlap);
        // However far apart, one sample each proves nothing.
        assert_eq!(separation(&[100.0], &[1.0]), Separation::TooFewSamples);
        assert_eq!(
            separation(&[100.0, 101.0], &[1.0, 2.0, 3.0, 4.0]),
            Separation::TooFewSamples
        );
        assert_eq!(separation(&[], &[]), Separation::TooFewSamples);
    }

    #[test]
    fn too_few_says_the_counts_and_the_chance() {
        let s = too_few(1, 1);
        assert!(s.starts_with("too few samples (n=1 v n=1)"), "{s}");
        assert!(s.contains("1 time in 2"), "{s}");
        assert!(too_few(2, 4).contains("1 time in 15"));
    }
}
