//! Readahead headroom: how far a scenario that pairs read rates inside a limited group may be
//! shrunk on this machine.
//!
//! Each sequential reader keeps up to two readahead windows of its file ahead of itself (see
//! `crate::sys::readahead`), charged to its group. When a group's limit is not several times
//! what its readers keep ahead, most of its LRU is readahead not yet read: reclaim scans pages
//! still locked under I/O and evicts pages before their reader gets to them, and the
//! readahead's own charges (__GFP_NORETRY) fail, cutting windows short. The rate inside then
//! measures readahead thrash, not the cost of reclaim the scenario is about. Measured on a
//! 6.18 host (cgroup v1, read_ahead_kb 8192, four readers: up to 64 MiB ahead): in a 40 MiB
//! group reclaim scanned 11 to 14 pages for each it freed and the read ratio was 0.55 to 0.87
//! (it failed below 0.5 on another day), with read_ahead_kb 128 it freed every page it scanned
//! and the ratio was 1.00 to 1.05; see docs/findings.md.

use super::Scenario;
use crate::model::StepKind;
use crate::model::units::human_bytes;
use crate::scenario::Step;

/// The least a limited group whose read rate is paired must hold, in multiples of what its
/// readers may keep ahead of themselves (readers x 2 windows). Measured on the 6.18 host with
/// 8 MiB windows and four readers (64 MiB ahead), three runs per limit: at 48 MiB reclaim
/// scanned 3.5 to 7.2 pages per page freed (ratios 0.69 to 0.81), at 64 MiB 1.1 to 4.2 (0.77 to
/// 0.95), from 96 MiB up every page scanned was freed (0.95 to 1.12). Twice is a third above
/// the first clean limit.
pub const HEADROOM: u64 = 2;

/// The limit (memory.max or memory.high, whichever is lower) under which reclaim runs for a
/// group, and the most readers one `read` step runs in it at once: the groups whose read rate a
/// `ratio` check pairs.
fn rated_readers(sc: &Scenario) -> Vec<(&str, u64, u32)> {
    let rated: Vec<&str> = sc
        .checks
        .iter()
        .filter_map(|c| c.rated())
        .filter(|(step, _)| *step == StepKind::Read)
        .flat_map(|(_, groups)| groups)
        .collect();
    sc.cgroups
        .iter()
        .filter(|g| rated.contains(&g.name.as_str()))
        .filter_map(|g| {
            let limit = [g.limit, g.high].into_iter().flatten().min()?;
            let readers = sc
                .phases
                .iter()
                .flat_map(|p| &p.steps)
                .filter_map(|s| match s {
                    Step::Read { cgroup, count, .. } if *cgroup == g.name => Some(*count),
                    _ => None,
                })
                .max()?;
            Some((g.name.as_str(), limit, readers))
        })
        .collect()
}

/// What the fit decided: the divisor to shrink the scenario by, what to tell the user, and why
/// its read ratios cannot be measured here at all (then they are left out).
#[derive(Debug, PartialEq)]
pub struct Fit {
    pub divisor: u64,
    pub note: Option<String>,
    pub unmeasurable: Option<String>,
}

/// The largest divisor, from `wanted` (8 for `--quick`, 1 for the full profile) halving down to
/// 1, that leaves every rated group's limit at least `HEADROOM` x readers x 2 x `window` (the
/// scratch disk's readahead window; None when unknown: the scenario's own sizes then). Scaling
/// never takes a limit below 16 MiB (`Scenario::scale_down`).
pub fn fit(sc: &Scenario, wanted: u64, window: Option<u64>) -> Fit {
    let groups = rated_readers(sc);
    let keep = Fit {
        divisor: wanted,
        note: None,
        unmeasurable: None,
    };
    if groups.is_empty() {
        return keep;
    }
    let Some(window) = window else {
        return Fit {
            divisor: 1,
            note: (wanted > 1).then(|| {
                "not scaled down: the scratch disk's readahead window is unknown, and a read rate paired inside a limit needs the limit to hold its readers' readahead".to_string()
            }),
            unmeasurable: None,
        };
    };
    let needed = |readers: u32| HEADROOM * readers as u64 * 2 * window;
    let fits = |d: u64| {
        groups
            .iter()
            .all(|(_, limit, readers)| (limit / d).max(16 << 20) >= needed(*readers))
    };
    let divisor = std::iter::successors(Some(wanted), |d| (*d > 1).then_some(d / 2))
        .find(|d| fits(*d))
        .unwrap_or(1);
    let (name, limit, readers) = groups
        .iter()
        .min_by_key(|(_, limit, readers)| limit / needed(*readers).max(1))
        .copied()
        .expect("not empty");
    let why = format!(
        "{name}'s readers keep up to {readers} x 2 x {} ahead (the scratch disk's read_ahead_kb): its limit must be at least {HEADROOM} times that, {}",
        human_bytes(window as i64),
        human_bytes(needed(readers) as i64)
    );
    if !fits(divisor) {
        return Fit {
            divisor: 1,
            note: None,
            unmeasurable: Some(format!(
                "{why}, and it is {}: a read rate in it would measure readahead thrash, not reclaim",
                human_bytes(limit as i64)
            )),
        };
    }
    Fit {
        divisor,
        note: (divisor < wanted).then(|| format!("scaled down {divisor}x, not {wanted}x: {why}")),
        unmeasurable: None,
    }
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

    #[test]
    fn the_kernel_default_window_lets_quick_shrink_8x() {
        let f = fit(&scenario(), 8, Some(128 << 10));
        assert_eq!((f.divisor, f.note, f.unmeasurable), (8, None, None));
    }

    #[test]
    fn a_large_window_shrinks_it_less() {
        // 4 readers x 2 x 8 MiB x 2 = 128 MiB: 320 MiB / 2 = 160 MiB fits, / 4 does not.
        let f = fit(&scenario(), 8, Some(8 << 20));
        assert_eq!(f.divisor, 2);
        let note = f.note.unwrap();
        assert!(note.contains("scaled down 2x, not 8x"), "{note}");
        assert!(note.contains("at least 2 times that, 128.0 MiB"), "{note}");
        // 2 MiB windows: 32 MiB, so 320 / 8 = 40 MiB fits.
        assert_eq!(fit(&scenario(), 8, Some(2 << 20)).divisor, 8);
        // 4 MiB windows: 64 MiB, so 320 / 4 = 80 MiB.
        assert_eq!(fit(&scenario(), 8, Some(4 << 20)).divisor, 4);
        // The full profile is not touched where it fits.
        assert_eq!(fit(&scenario(), 1, Some(8 << 20)).note, None);
    }

    #[test]
    fn a_window_too_large_for_the_full_limit_leaves_the_rate_unmeasurable() {
        let f = fit(&scenario(), 1, Some(32 << 20));
        assert_eq!(f.divisor, 1);
        let why = f.unmeasurable.unwrap();
        assert!(
            why.contains("inside's readers keep up to 4 x 2 x 32.0 MiB"),
            "{why}"
        );
        assert!(why.contains("it is 320.0 MiB"), "{why}");
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
                let f = fit(&sc, 8, Some(64 << 20));
                assert_eq!(f.divisor, 8, "{}", sc.name);
            }
        }
    }
}
