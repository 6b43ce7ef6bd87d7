//! hierarchy((top)): the scenario's own top group against the groups it holds.

use super::kinds::cycles;
use super::*;
use crate::model::{TOP_GROUP, Version};

/// The top group stuck at `top` (or right, for a negative `top`) while its child `a` (and the
/// helpers' `aux`) count 16 MiB for half a second: what a statistic not passed to the ancestors
/// looks like.
fn top_tree(version: Version, top: i64) -> Record {
    let mut series = Series::new(vec![
        "(top).dirty".into(),
        "aux.dirty".into(),
        "a.dirty".into(),
        "a/b.dirty".into(),
        "sampler.pass_us".into(),
    ]);
    for i in 0..100 {
        let t = i as f64 * 0.01;
        let a = if (0.2..0.7).contains(&t) { 16 * MIB } else { 0 };
        let top = if top < 0 { a + MIB } else { top };
        series.push(t, &[top, MIB, a, a, 50]);
    }
    sampled(series, version)
}

/// A record of `series` under `version`.
fn sampled(series: Series, version: Version) -> Record {
    let mut r = cycles(&[0]);
    r.series = series;
    r.version = version;
    r
}

#[test]
fn the_top_group_sums_its_groups_and_on_v2_is_never_stale() {
    let dirty = ["dirty".to_string()];
    let c = hierarchy("h".into(), &top_tree(Version::V2, -1), TOP_GROUP, &dirty);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    // Stuck at 0: a stale parent for under 3 s on v1 (it shows what its parts showed before); on
    // v2 its cpu.stat read flushed it, so it is wrong at the second sample.
    let c = hierarchy("h".into(), &top_tree(Version::V1, 0), TOP_GROUP, &dirty);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    let c = hierarchy("h".into(), &top_tree(Version::V2, 0), TOP_GROUP, &dirty);
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(c.actual.contains("(top).dirty = 0 B"), "{}", c.actual);
    // Since 6.16 cpu.stat flushes only CPU times: the v2 top group is a parent like any other.
    let mut late = top_tree(Version::V2, 0);
    late.machine.top_flushed = false;
    let c = hierarchy("h".into(), &late, TOP_GROUP, &dirty);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
}

#[test]
fn cpu_stat_flushes_memcg_before_6_16_only() {
    use crate::model::record::cpu_stat_flushes_memcg;
    assert!(cpu_stat_flushes_memcg("6.12.118"));
    assert!(cpu_stat_flushes_memcg("6.1.0-57-cloud-amd64"));
    assert!(cpu_stat_flushes_memcg("6.15.9"));
    assert!(!cpu_stat_flushes_memcg("6.16.0"));
    assert!(!cpu_stat_flushes_memcg("6.18.44-fc"));
    assert!(!cpu_stat_flushes_memcg("7.0-rc1"));
    assert!(!cpu_stat_flushes_memcg("weird"));
}

#[test]
fn every_group_is_below_the_top_group_and_only_top_level_ones_are_its_children() {
    use crate::model::{is_below, is_child};
    assert!(is_below("a/b", TOP_GROUP) && is_below("aux", TOP_GROUP));
    assert!(!is_below(TOP_GROUP, TOP_GROUP));
    assert!(is_child("a", TOP_GROUP) && !is_child("a/b", TOP_GROUP));
    assert!(is_child("a/b", "a") && !is_child("a/b/c", "a") && !is_child("ab", "a"));
}

/// memory.events `max` of the top group (own 0) against `a`'s, which rises by 40 events in
/// 0.2..0.5 s; the top group shows `a`'s count less `short`.
fn top_events(short: i64) -> Record {
    let mut series = Series::new(vec![
        "(top).limit_hits".into(),
        "(top).limit_hits.local".into(),
        "aux.limit_hits".into(),
        "a.limit_hits".into(),
        "sampler.pass_us".into(),
    ]);
    for i in 0..100 {
        let t = i as f64 * 0.01;
        let a = ((t - 0.2).clamp(0.0, 0.3) / 0.3 * 40.0) as i64;
        series.push(t, &[(a - short).max(0), 0, 0, a, 50]);
    }
    sampled(series, Version::V2)
}

#[test]
fn memory_events_are_exact_in_every_ancestor() {
    let hits = ["limit_hits".to_string()];
    let c = hierarchy("h".into(), &top_events(0), TOP_GROUP, &hits);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    // Three events fewer than its parts, long after they stopped rising: the statistics'
    // tolerance (3 groups x 256 events on 2 CPUs) would hide it; memory.events have none.
    let c = hierarchy("h".into(), &top_events(3), TOP_GROUP, &hits);
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(c.tolerance.unwrap().contains("no per-CPU residue"));
}

#[test]
fn the_v2_top_groups_statistics_events_have_no_residue_to_allow_for() {
    // thp_fault_alloc, a memory.stat event: 4 faults fewer than its parts at the flushed top.
    let mut r = top_events(4);
    let mut s = Series::new(vec![
        "(top).thp_fault_alloc".into(),
        "aux.thp_fault_alloc".into(),
        "a.thp_fault_alloc".into(),
        "sampler.pass_us".into(),
    ]);
    for i in 0..r.series.len() {
        let row: Vec<i64> = [0, 2, 3, 4].iter().map(|&c| r.series.get(i, c)).collect();
        s.push(r.series.t[i], &row);
    }
    r.series = s;
    let thp = ["thp_fault_alloc".to_string()];
    let c = hierarchy("h".into(), &r, TOP_GROUP, &thp);
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    // Any other parent keeps the statistics' bound (3 groups x 256 events on 2 CPUs): 40
    // events could not show a wrong sum there.
    r.version = Version::V1;
    let c = hierarchy("h".into(), &r, TOP_GROUP, &thp);
    assert_eq!(c.outcome, Outcome::NotExercised, "{c:?}");
}

/// A slow, steady count read parent first: the parts are one event ahead of the parent in every
/// sample while a huge page is faulted every pass (read skew, not a lost event); once the
/// faults stop the parent must have them all.
#[test]
fn a_steady_count_one_ahead_in_its_parts_is_read_skew() {
    let steady = |lost: i64| {
        let mut s = Series::new(vec![
            "(top).thp_fault_alloc".into(),
            "aux.thp_fault_alloc".into(),
            "a.thp_fault_alloc".into(),
            "sampler.pass_us".into(),
        ]);
        for i in 0..100i64 {
            let parts = i.min(50);
            let top = if i < 50 { (i - 1).max(0) } else { 50 - lost };
            s.push(i as f64 * 0.02, &[top, 0, parts, 50]);
        }
        sampled(s, Version::V2)
    };
    let thp = ["thp_fault_alloc".to_string()];
    let c = hierarchy("h".into(), &steady(0), TOP_GROUP, &thp);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    let c = hierarchy("h".into(), &steady(1), TOP_GROUP, &thp);
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
}

/// The top group's major faults and scans against the node's over 50 samples 0.1 s apart: from
/// sample `from` the group counts 10 faults and 40 scans a sample (`times` over: a mutant counting
/// twice), the rest of the machine `others` and 8 more all along; /proc/vmstat is read a little
/// before and after the group. The group's sample 10 shows `lag` faults fewer (not yet flushed).
fn node_tree(version: Version, times: i64, lag: i64, from: i64, others: i64) -> Record {
    let mut series = Series::new(vec![
        "vmstat.pre.pgmajfault".into(),
        "vmstat.pre.pgscan_anon".into(),
        "vmstat.pre.pgscan_file".into(),
        "(top).pgmajfault".into(),
        "(top).pgscan".into(),
        "vmstat.pgmajfault".into(),
        "vmstat.pgscan_anon".into(),
        "vmstat.pgscan_file".into(),
    ]);
    for i in 0..50 {
        let (faults, scans) = (10 * (i - from).max(0), 40 * (i - from).max(0));
        let lagging = if i == 10 { lag } else { 0 };
        series.push(
            i as f64 * 0.1,
            &[
                faults + others * i,
                scans / 2 + 4 * i,
                scans / 2 + 4 * i,
                times * faults - lagging,
                times * scans,
                faults + others * i + 1,
                scans / 2 + 4 * i + 2,
                scans / 2 + 4 * i,
            ],
        );
    }
    sampled(series, version)
}

#[test]
fn the_top_groups_events_are_within_the_nodes() {
    let c = within_node("w".into(), &node_tree(Version::V2, 1, 0, 0, 3), TOP_GROUP);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    assert!(c.detail.contains("pgmajfault +490"), "{}", c.detail);
    // Counted twice: 980 faults against the node's 638 over the run.
    let c = within_node("w".into(), &node_tree(Version::V2, 2, 0, 0, 3), TOP_GROUP);
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert_eq!(c.actual, "(top).pgmajfault +980", "{}", c.actual);
    assert!(
        c.detail
            .contains("rose by 980 while the node's pgmajfault rose by 638")
    );
    assert!(c.expected.contains("+638 + 2"), "{}", c.expected);
    // Nothing rose: nothing to judge.
    let c = within_node("w".into(), &node_tree(Version::V2, 0, 0, 0, 3), TOP_GROUP);
    assert_eq!(c.outcome, Outcome::NotExercised, "{c:?}");
}

#[test]
fn where_a_group_may_be_stale_its_rise_is_held_to_the_nodes_from_3_s_before() {
    // 100 faults not yet flushed at one sample: the flushed v2 top group has no excuse; v1's
    // reads may show events 3 s late.
    let c = within_node("w".into(), &node_tree(Version::V2, 1, 100, 0, 3), TOP_GROUP);
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(c.tolerance.unwrap().starts_with("2: 2 CPUs x 1 events"));
    let c = within_node("w".into(), &node_tree(Version::V1, 1, 100, 0, 3), TOP_GROUP);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    // A steady count twice over is within the node's rise over 3 s more; a burst after a quiet
    // start is not.
    let c = within_node("w".into(), &node_tree(Version::V1, 2, 0, 0, 3), TOP_GROUP);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    let c = within_node("w".into(), &node_tree(Version::V1, 2, 0, 35, 0), TOP_GROUP);
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(c.detail.contains("up to 3 s late"), "{}", c.detail);
}

/// Under v1 the top group and its child `a`, which faults 16 MiB (4096 faults) in 0.2..0.3 s and
/// keeps it: the top group shows its anon as `anon` does (`Some(0)`: stuck at 0) and its faults
/// as `faults` does.
fn v1_top(anon: Option<i64>, faults: Option<i64>) -> Record {
    let mut series = Series::new(vec![
        "(top).anon".into(),
        "(top).pgfault".into(),
        "a.anon".into(),
        "a.pgfault".into(),
        "sampler.pass_us".into(),
    ]);
    for i in 0..100 {
        let t = i as f64 * 0.01;
        let part = ((t - 0.2).clamp(0.0, 0.1) / 0.1 * 4096.0) as i64;
        series.push(
            t,
            &[
                anon.unwrap_or(part * 4096),
                faults.unwrap_or(part),
                part * 4096,
                part,
                50,
            ],
        );
    }
    sampled(series, Version::V1)
}

#[test]
fn a_v1_parent_is_stale_in_all_its_statistics_at_once() {
    let counters = ["anon".to_string(), "pgfault".to_string()];
    let h = |r: &Record| hierarchy("h".into(), r, TOP_GROUP, &counters);
    assert_eq!(h(&v1_top(None, None)).outcome, Outcome::Pass);
    // Not flushed for the whole second: stale in both, within the 3 s a v1 parent may lag.
    let c = h(&v1_top(Some(0), Some(0)));
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    assert!(c.detail.contains("lagged its parts"), "{}", c.detail);
    // Its faults are fresh, so it was flushed after the child faulted: an anon stuck at 0 is a
    // statistic not passed up, not a late flush.
    let c = h(&v1_top(Some(0), None));
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(c.actual.starts_with("(top).anon = 0 B"), "{}", c.actual);
}
