//! Readahead headroom: how far a scenario that pairs read rates inside a limited group may be
//! shrunk on this machine.
//!
//! Each sequential reader keeps up to two readahead windows ahead of itself, charged to its
//! group (`crate::sys::readahead`). A group whose limit is not comfortably above what its
//! readers keep ahead holds mostly readahead not yet read: reclaim scans pages still locked
//! under I/O and evicts others before their reader gets to them, and readahead's own charges
//! (__GFP_NORETRY) fail and cut windows short. A read rate measured in it is readahead thrash,
//! not the cost of reclaim. Measurements: docs/findings.md.

use super::{CgroupSpec, MIN_LIMIT, Scenario, Step};
use crate::model::StepKind;
use crate::model::units::human_bytes;

/// The least a limited group whose read rate is paired must hold, in multiples of what its
/// readers may keep ahead of themselves (readers x 2 windows). On a 6.18 host with 8 MiB windows
/// and four readers (64 MiB ahead) reclaim freed every page it scanned from a 96 MiB limit up,
/// and scanned up to 4 and 7 pages per page freed at 64 and 48 MiB: twice leaves a third spare.
pub const HEADROOM: u64 = 2;

/// A group whose read rate a `ratio` check pairs, with a limit above it.
struct Rated<'a> {
    name: &'a str,
    /// The lowest memory.max or memory.high of the group and its declared ancestors.
    limit: u64,
    /// The most readers one `read` step runs in it at once.
    readers: u32,
}

/// The groups whose read rate a `ratio` check pairs and that run under a limit.
fn rated_readers(sc: &Scenario) -> Vec<Rated<'_>> {
    let rated: Vec<&str> = sc
        .checks
        .iter()
        .filter_map(|c| c.rated())
        .filter(|(step, _)| *step == StepKind::Read)
        .flat_map(|(_, groups)| groups)
        .collect();
    let within = |a: &CgroupSpec, g: &str| g == a.name || g.starts_with(&format!("{}/", a.name));
    sc.cgroups
        .iter()
        .filter(|g| rated.contains(&g.name.as_str()))
        .filter_map(|g| {
            let limit = (sc.cgroups.iter())
                .filter(|a| within(a, &g.name))
                .flat_map(|a| [a.limit, a.high])
                .flatten()
                .min()?;
            let readers = (sc.phases.iter().flat_map(|p| &p.steps))
                .filter_map(|s| match s {
                    Step::Read { cgroup, count, .. } if *cgroup == g.name => Some(*count),
                    _ => None,
                })
                .max()?;
            Some(Rated {
                name: &g.name,
                limit,
                readers,
            })
        })
        .collect()
}

/// What the fit decided: the divisor to shrink the scenario by, what to tell the user, and why
/// its paired read rates cannot be measured here at all (then they are left out).
#[derive(Debug, PartialEq)]
pub struct Fit {
    pub divisor: u64,
    pub note: Option<String>,
    pub unmeasurable: Option<String>,
}

/// The largest divisor, from `wanted` (8 for `--quick`, 1 for the full profile) halving down to
/// 1, that leaves every rated group's limit at least `HEADROOM` x readers x 2 x `window` (the
/// readers' readahead window on the scenario's disk; None when unknown: the scenario's own sizes
/// then). Where even the scenario's own limit is smaller, the rates are unmeasurable and the
/// scenario shrinks as wanted for the rest.
pub fn fit(sc: &Scenario, wanted: u64, window: Option<u64>) -> Fit {
    let groups = rated_readers(sc);
    let mut fit = Fit {
        divisor: wanted,
        note: None,
        unmeasurable: None,
    };
    if groups.is_empty() {
        return fit;
    }
    let Some(window) = window else {
        fit.divisor = 1;
        fit.note = (wanted > 1).then(|| {
            "not scaled down: the readahead window of its disk is unknown, and a read rate paired inside a limit needs the limit to hold its readers' readahead".to_string()
        });
        return fit;
    };
    let needed = |g: &Rated| HEADROOM * g.readers as u64 * 2 * window;
    let scaled = |g: &Rated, d: u64| {
        if d == 1 {
            g.limit
        } else {
            (g.limit / d).max(MIN_LIMIT)
        }
    };
    let short = |d: u64| groups.iter().find(|g| scaled(g, d) < needed(g));
    let why = |g: &Rated| {
        format!(
            "{}'s {} readers keep up to {} x 2 x {} ahead (the disk's readahead window): its limit must be at least {HEADROOM} times that, {}",
            g.name,
            g.readers,
            g.readers,
            human_bytes(window as i64),
            human_bytes(needed(g) as i64)
        )
    };
    if let Some(g) = short(1) {
        fit.unmeasurable = Some(format!(
            "{}, and it is {}: a read rate in it would measure readahead thrash, not reclaim",
            why(g),
            human_bytes(g.limit as i64)
        ));
        return fit;
    }
    fit.divisor = std::iter::successors(Some(wanted), |d| (*d > 1).then_some(d / 2))
        .find(|d| short(*d).is_none())
        .unwrap_or(1);
    if fit.divisor < wanted {
        let g = short(fit.divisor * 2).expect("a smaller divisor had a reason");
        fit.note = Some(match fit.divisor {
            1 => format!("not scaled down: {}", why(g)),
            d => format!("scaled down {d}x, not {wanted}x: {}", why(g)),
        });
    }
    fit
}

#[cfg(test)]
mod tests {
    use super::*;

    /// reclaim-parallel-read: four readers, a 320 MiB limit.
    fn scenario() -> Scenario {
        crate::scenario::load_all(None)
            .unwrap()
            .into_iter()
            .find(|s| s.name == "reclaim-parallel-read")
            .unwrap()
    }

    const MIB: u64 = 1 << 20;

    #[test]
    fn small_windows_let_quick_shrink_8x() {
        // The TCG guests' virtio disks: 128 KiB, or 1 MiB for 1 MiB reads.
        for w in [128 << 10, MIB] {
            let f = fit(&scenario(), 8, Some(w));
            assert_eq!((f.divisor, f.note, f.unmeasurable), (8, None, None));
        }
    }

    #[test]
    fn a_large_window_shrinks_it_less() {
        // 4 readers x 2 x 8 MiB x 2 = 128 MiB: 320 MiB / 2 = 160 MiB fits, / 4 does not.
        let f = fit(&scenario(), 8, Some(8 * MIB));
        assert_eq!(f.divisor, 2);
        let note = f.note.unwrap();
        assert!(note.contains("scaled down 2x, not 8x"), "{note}");
        assert!(note.contains("at least 2 times that, 128.0 MiB"), "{note}");
        assert_eq!(fit(&scenario(), 8, Some(4 * MIB)).divisor, 4);
        let f = fit(&scenario(), 8, Some(16 * MIB));
        assert_eq!(f.divisor, 1);
        assert!(f.note.unwrap().starts_with("not scaled down: "));
        // The full profile is not touched where it fits.
        assert_eq!(fit(&scenario(), 1, Some(8 * MIB)).note, None);
    }

    #[test]
    fn a_window_too_large_for_the_full_limit_leaves_the_rate_unmeasurable() {
        let f = fit(&scenario(), 8, Some(32 * MIB));
        // The rest of the scenario still shrinks as asked: its rate is left out anyway.
        assert_eq!(f.divisor, 8);
        let why = f.unmeasurable.unwrap();
        assert!(
            why.contains("inside's 4 readers keep up to 4 x 2 x 32.0 MiB"),
            "{why}"
        );
        assert!(why.contains("it is 320.0 MiB"), "{why}");
    }

    #[test]
    fn an_ancestor_s_limit_counts() {
        // reclaim-parallel-read with the limit on a parent of the readers' group.
        let text = include_str!("../../scenarios/reclaim-parallel-read.toml")
            .replace(
                "name = \"inside\"\nlimit = \"320M\"",
                "name = \"p\"\nlimit = \"320M\"\n\n[[cgroup]]\nname = \"p/inside\"",
            )
            .replace("cgroup = \"inside\"", "cgroup = \"p/inside\"")
            .replace("inside = \"inside\"", "inside = \"p/inside\"");
        let sc = crate::scenario::parse("nested.toml", &text).unwrap();
        let rated = rated_readers(&sc);
        assert_eq!(rated.len(), 1);
        assert_eq!(
            (rated[0].name, rated[0].limit, rated[0].readers),
            ("p/inside", 320 * MIB, 4)
        );
        assert_eq!(fit(&sc, 8, Some(8 * MIB)).divisor, 2);
    }

    #[test]
    fn an_unknown_window_keeps_the_scenario_s_sizes() {
        let f = fit(&scenario(), 8, None);
        assert_eq!(f.divisor, 1);
        assert!(f.note.unwrap().contains("unknown"));
        assert_eq!(fit(&scenario(), 1, None).note, None);
    }

    #[test]
    fn scenarios_without_a_paired_read_rate_are_left_alone() {
        for sc in crate::scenario::load_all(None).unwrap() {
            if sc.name != "reclaim-parallel-read" {
                let f = fit(&sc, 8, Some(64 * MIB));
                assert_eq!(f.divisor, 8, "{}", sc.name);
            }
        }
    }
}
