//! The invariants over the fields the first scenarios did not move: swap limits and their
//! events, kernel memory within usage, the tasks' swap, cgroup v1's memory.numa_stat.

use super::moves::move_record;
use super::*;
use crate::check::CheckSpec;
use crate::model::{CgroupSpec, Version};

/// A record of group `a` with `cols` sampled every 0.1 s for 3 s, each value from `at(col, t)`.
fn sampled(cols: &[&str], at: impl Fn(&str, f64) -> i64) -> Record {
    let mut r = move_record(0, None);
    r.steps.clear();
    r.series = Series::new(cols.iter().map(|c| Column::from(*c)).collect());
    for i in 0..30 {
        let t = i as f64 * 0.1;
        let row: Vec<i64> = cols.iter().map(|c| at(c, t)).collect();
        r.series.push(t, &row);
    }
    r
}

fn swap_limited(max: u64, high: Option<u64>) -> Vec<CgroupSpec> {
    vec![CgroupSpec {
        name: "a".into(),
        swap: true,
        swap_max: Some(max),
        swap_high: high,
        ..Default::default()
    }]
}

/// v2: swap past memory.swap.max fails, naming the counter, the file and the excess; swap that
/// never came near it did not test it.
#[test]
fn swap_above_swap_max_fails_and_far_below_is_not_tested() {
    let mut bad = sampled(&["a.usage", "a.swap"], |c, t| match c {
        "a.swap" if t > 1.0 => 24 * MIB,
        "a.swap" => 8 * MIB,
        _ => 40 * MIB,
    });
    bad.cgroups = swap_limited(16 << 20, None);
    let r = under_limit("u".into(), &bad, "a");
    assert_eq!(r.outcome, Outcome::Fail, "{}", r.detail);
    assert!(
        r.detail
            .contains("a's swap was 8.0 MiB above its memory.swap.max of 16.0 MiB"),
        "{}",
        r.detail
    );
    let mut low = sampled(&["a.usage", "a.swap"], |c, _| match c {
        "a.swap" => 2 * MIB,
        _ => 40 * MIB,
    });
    low.cgroups = swap_limited(16 << 20, None);
    assert_eq!(
        under_limit("u".into(), &low, "a").outcome,
        Outcome::NotExercised
    );
}

/// v1: memory+swap past limit + swap_max fails.
#[test]
fn memsw_above_its_limit_fails() {
    let mut r = sampled(&["a.usage", "a.memsw"], |c, t| match c {
        "a.memsw" if t > 2.0 => 90 * MIB,
        "a.memsw" => 70 * MIB,
        _ => 60 * MIB,
    });
    r.cgroups = vec![CgroupSpec {
        name: "a".into(),
        limit: Some(64 << 20),
        swap: true,
        swap_max: Some(16 << 20),
        ..Default::default()
    }];
    let res = under_limit("u".into(), &r, "a");
    assert_eq!(res.outcome, Outcome::Fail, "{}", res.detail);
    assert!(
        res.detail
            .contains("memory.memsw.limit_in_bytes of 80.0 MiB"),
        "{}",
        res.detail
    );
}

/// memory.swap.events max counted while the swap watermark stayed far below memory.swap.max
/// fails; at the limit it is allowed. high events with the watermark at or below swap.high fail.
#[test]
fn swap_events_count_only_at_the_swap_limits() {
    let cols = [
        "a.usage",
        "a.peak",
        "a.limit_hits",
        "a.swap_peak",
        "a.swap_max_events",
        "a.swap_high_events",
    ];
    let rec = |peak: i64, maxed: i64, high: i64| {
        let mut r = sampled(&cols, |c, t| match c {
            "a.swap_peak" => peak,
            "a.swap_max_events" if t > 1.5 => maxed,
            "a.swap_high_events" if t > 1.5 => high,
            "a.limit_hits" | "a.swap_max_events" | "a.swap_high_events" => 0,
            _ => 10 * MIB,
        });
        r.cgroups = swap_limited(16 << 20, Some(8 << 20));
        r
    };
    let far = limit_counters("l".into(), &rec(4 * MIB, 3, 0), "a", false);
    assert_eq!(far.outcome, Outcome::Fail, "{}", far.detail);
    assert!(
        far.detail
            .contains("3 swap charges refused at memory.swap.max"),
        "{}",
        far.detail
    );
    let at = limit_counters("l".into(), &rec(16 * MIB, 3, 2), "a", false);
    assert_eq!(at.outcome, Outcome::Pass, "{}", at.detail);
    assert!(at.detail.contains("3 swap.max events"), "{}", at.detail);
    let high = limit_counters("l".into(), &rec(8 * MIB, 0, 2), "a", false);
    assert_eq!(high.outcome, Outcome::Fail, "{}", high.detail);
    assert!(
        high.detail.contains("2 swap.high events"),
        "{}",
        high.detail
    );
}

/// Kernel memory and socket buffers count within the usage: statistics above it fail.
#[test]
fn kernel_memory_and_sockets_must_fit_the_usage() {
    let cols = ["a.usage", "a.anon", "a.file", "a.kernel", "a.sock"];
    let ok = sampled(&cols, |c, _| match c {
        "a.usage" => 64 * MIB,
        "a.kernel" => 20 * MIB,
        "a.sock" => 4 * MIB,
        _ => 16 * MIB,
    });
    assert_eq!(usage_covers("u".into(), &ok, "a").outcome, Outcome::Pass);
    let bad = sampled(&cols, |c, _| match c {
        "a.usage" => 64 * MIB,
        "a.kernel" => 40 * MIB,
        "a.sock" => 4 * MIB,
        _ => 16 * MIB,
    });
    let r = usage_covers("u".into(), &bad, "a");
    assert_eq!(r.outcome, Outcome::Fail, "{}", r.detail);
    assert!(
        r.detail.contains("anon + file + kernel + sock"),
        "{}",
        r.detail
    );
}

/// The group's swap must hold what its tasks swapped out (VmSwap); v1 adds the swap cache.
#[test]
fn swap_short_of_the_tasks_vmswap_fails() {
    let cols = [
        "tasks.pre.a.anon",
        "tasks.pre.a.swap",
        "a.anon",
        "a.swap",
        "tasks.a.anon",
        "tasks.a.swap",
    ];
    let rec = |group_swap: i64| {
        sampled(&cols, |c, _| match c {
            "tasks.pre.a.swap" | "tasks.a.swap" => 32 * MIB,
            "a.swap" => group_swap,
            _ => 16 * MIB,
        })
    };
    assert_eq!(
        tasks("t".into(), &rec(32 * MIB,), "a").outcome,
        Outcome::Pass
    );
    let r = tasks("t".into(), &rec(8 * MIB), "a");
    assert_eq!(r.outcome, Outcome::Fail, "{}", r.detail);
    assert!(
        r.detail
            .contains("24.0 MiB short of what its tasks had swapped out"),
        "{}",
        r.detail
    );
}

/// cgroup v1: a memory.numa_stat line that does not sum to memory.stat's LRU counters fails.
#[test]
fn v1_numa_stat_lines_must_sum_to_the_lru_counters() {
    let cols = [
        "numa.pre.a.lru_file",
        "a.inactive_file",
        "a.active_file",
        "numa.a.lru_file",
    ];
    let rec = |numa: i64| {
        sampled(&cols, |c, _| match c {
            "numa.pre.a.lru_file" | "numa.a.lru_file" => numa,
            _ => 16 * MIB,
        })
    };
    let check = crate::check::NumaStat {
        cgroup: "a".into(),
        counters: Vec::new(),
        all: true,
    };
    assert_eq!(check.evaluate(&rec(32 * MIB)).outcome, Outcome::Pass);
    let r = check.evaluate(&rec(20 * MIB));
    assert_eq!(r.outcome, Outcome::Fail, "{}", r.detail);
    assert!(r.detail.contains("hierarchical_file"), "{}", r.detail);
}

/// v1 memory.numa_stat lines carry the group's total before the nodes: the key is read without it.
#[test]
fn v1_numa_stat_keys_are_read_without_their_totals() {
    let text = "total=300 N0=200 N1=100\nfile=10 N0=4 N1=6\nhierarchical_file=12 N0=6 N1=6\n";
    let mut out = vec![None; 2];
    crate::sys::cgroup::stat::extract_node_sums(text, &["file", "hierarchical_file"], &mut out)
        .unwrap();
    assert_eq!(out, vec![Some(10), Some(12)]);
}

/// cgroup v2: dirty + writeback past dirty_ratio of the group's ceiling (here its parent's
/// limit) fail; within it they pass; on v1 (no limits read) nothing is judged.
#[test]
fn dirty_pages_stop_rising_once_the_domain_is_seen_over() {
    // Samples every 0.1 s for 3 s; `dirty(t)` gives p/w's dirty pages.
    let rec = |dirty: &dyn Fn(f64) -> i64| {
        let mut r = sampled(&["p/w.dirty", "p/w.writeback"], |c, t| match c {
            "p/w.dirty" => dirty(t),
            _ => MIB,
        });
        r.cgroups = vec![
            CgroupSpec {
                name: "p".into(),
                limit: Some(64 << 20),
                ..Default::default()
            },
            CgroupSpec {
                name: "p/w".into(),
                ..Default::default()
            },
        ];
        r.dirty = Some(crate::model::DirtyLimits {
            ratio: 20,
            bytes: 0,
        });
        r
    };
    // 20 % of 64 MiB = 12.8 MiB; seen over it above 12.8 + 2 MiB (unflushed stats); a rise of
    // 2 MiB + 64 KiB + 1.6 MiB from there is allowed.
    let ok = dirty_domain("d".into(), &rec(&|_| 12 * MIB), "p/w");
    assert_eq!(ok.outcome, Outcome::Pass, "{}", ok.detail);
    // Unthrottled: the dirty pages keep rising after the domain was seen over its share.
    let bad = dirty_domain("d".into(), &rec(&|t| (t * 20.0) as i64 * MIB), "p/w");
    assert_eq!(bad.outcome, Outcome::Fail, "{}", bad.detail);
    assert!(
        bad.detail
            .contains("above vm.dirty_ratio (20 %) of its ceiling of 64.0 MiB"),
        "{}",
        bad.detail
    );
    // Dirtied beyond the share between two reads (the kernel throttles on statistics up to 2 s
    // old), then held still or falling while the flusher writes them: no failure.
    let stale = rec(&|t| {
        if t < 1.0 {
            MIB
        } else {
            40 * MIB - (t * MIB as f64) as i64
        }
    });
    assert_eq!(
        dirty_domain("d".into(), &stale, "p/w").outcome,
        Outcome::Pass
    );
    // Pages under writeback are not the writer's to hold back (reclaim at the limit wakes the
    // flusher): 40 MiB of them beside 1 MiB dirty is no failure.
    let mut flushed = rec(&|_| MIB);
    flushed.series = sampled(&["p/w.dirty", "p/w.writeback"], |c, _| match c {
        "p/w.writeback" => 40 * MIB,
        _ => MIB,
    })
    .series;
    assert_ne!(
        dirty_domain("d".into(), &flushed, "p/w").outcome,
        Outcome::Fail
    );
    // Writers in two groups of p's subtree: each is a domain of its own, p's sum is not bounded.
    let mut two = rec(&|t| (t * 20.0) as i64 * MIB);
    for g in ["p/w", "p/x"] {
        two.steps.push(crate::model::StepRecord {
            kind: crate::model::StepKind::Write,
            cgroup: g.into(),
            end: 3.0,
            ..Default::default()
        });
    }
    let split = dirty_domain("d".into(), &two, "p");
    assert_eq!(split.outcome, Outcome::NotExercised, "{}", split.detail);
    assert!(split.detail.contains("2 groups"), "{}", split.detail);
    let mut v1 = rec(&|_| 40 * MIB);
    v1.dirty = None;
    assert_eq!(
        dirty_domain("d".into(), &v1, "p/w").outcome,
        Outcome::NotExercised
    );
    let mut bytes = rec(&|_| 40 * MIB);
    bytes.dirty = Some(crate::model::DirtyLimits {
        ratio: 20,
        bytes: 1 << 30,
    });
    assert_eq!(
        dirty_domain("d".into(), &bytes, "p/w").outcome,
        Outcome::NotExercised
    );
}

/// A record of groups `a` and `a/b` sampled every 0.1 s for 6 s, with one fault step in `a/b`
/// (t = 0.5..1.0, 10000 faults of its own) and each group's pgfault from `at(group, t)`.
fn faulted(at: impl Fn(&str, f64) -> i64) -> Record {
    let mut r = sampled(&[], |_, _| 0);
    r.series = Series::new(vec![
        Column::group("a", "pgfault"),
        Column::group("a/b", "pgfault"),
    ]);
    for i in 0..60 {
        let t = i as f64 * 0.1;
        r.series.push(t, &[at("a", t), at("a/b", t)]);
    }
    r.steps = vec![StepRecord {
        kind: StepKind::Fault,
        describe: "1 fault clients in a/b".into(),
        start: 0.5,
        end: 1.0,
        cgroup: "a/b".into(),
        minflt: 10_000,
        ..Default::default()
    }];
    r
}

/// A parent's pgfault may catch up with its child's within the periodic flush: late is not
/// short. One that never does is short, and the message names the group and the amounts.
#[test]
fn a_parents_faults_may_lag_by_the_periodic_flush_but_not_fall_short() {
    let child = |t: f64| if t >= 1.0 { 10_000 } else { 0 };
    let late = faulted(|g, t| match g {
        "a" if t < 2.5 => 0,
        _ => child(t),
    });
    let a = crate::check::counters::faults::faults("faults(a)".into(), &late, "a");
    assert_eq!(a.outcome, Outcome::Pass, "{}", a.detail);
    let short = faulted(|g, t| match g {
        "a" => child(t) / 2,
        _ => child(t),
    });
    let a = crate::check::counters::faults::faults("faults(a)".into(), &short, "a");
    assert_eq!(a.outcome, Outcome::Fail);
    assert!(a.actual.contains("a.pgfault rose by 5000"), "{}", a.actual);
    let b = crate::check::counters::faults::faults("faults(a/b)".into(), &short, "a/b");
    assert_eq!(b.outcome, Outcome::Pass, "{}", b.detail);
}

/// v1, a limit without swap (memsw limit = memory limit): a workload that needs more than the
/// limit fails its charges at the memsw counter, which try_charge charges first, so
/// memory.memsw.failcnt alone counts them; with both failure counts 0 the limit's failures were
/// lost (6.18 under v1, see docs/findings.md).
#[test]
fn a_limit_without_swap_counts_its_failures_in_memsw() {
    let cols = [
        "a.usage",
        "a.peak",
        "a.limit_hits",
        "a.memsw_hits",
        "a.memsw_peak",
    ];
    let rec = |memsw_hits: i64| {
        let mut r = sampled(&cols, |c, t| match c {
            "a.memsw_hits" if t > 1.5 => memsw_hits,
            "a.limit_hits" | "a.memsw_hits" => 0,
            _ => 16 * MIB,
        });
        r.cgroups = vec![CgroupSpec {
            name: "a".into(),
            limit: Some(16 << 20),
            swap: false,
            ..Default::default()
        }];
        r
    };
    let counted = limit_counters("l".into(), &rec(4869), "a", true);
    assert_eq!(counted.outcome, Outcome::Pass, "{}", counted.detail);
    let lost = limit_counters("l".into(), &rec(0), "a", true);
    assert_eq!(lost.outcome, Outcome::Fail, "{}", lost.detail);
    assert!(
        lost.detail.contains("memory.memsw.failcnt"),
        "{}",
        lost.detail
    );
}

/// A leaf's own and hierarchical memory.stat values come from different views: the hierarchical
/// one may show what the own one showed up to the periodic flush ago, never something else.
#[test]
fn a_leafs_own_stat_may_lead_its_hierarchical_one_by_the_flush() {
    let rec = |late: f64, off: i64| {
        sampled(&["a.dirty.local", "a.dirty"], |c, t| {
            let rising = |t: f64| (t * 20.0 * MIB as f64) as i64;
            match c {
                "a.dirty.local" => rising(t),
                _ => rising((t - late).max(0.0)) + off,
            }
        })
    };
    let lagging = crate::check::counters::identities::identities("i".into(), &rec(1.0, 0), "a");
    assert_eq!(lagging.outcome, Outcome::Pass, "{}", lagging.detail);
    let wrong =
        crate::check::counters::identities::identities("i".into(), &rec(0.0, 60 * MIB), "a");
    assert_eq!(wrong.outcome, Outcome::Fail, "{}", wrong.detail);
    assert!(
        wrong.detail.contains("dirty.local = dirty"),
        "{}",
        wrong.detail
    );
}

/// The sampler reads a group's usage, its other files, then its usage again: kept off the CPU
/// between its reads while 4 readers charged page cache on 2 CPUs (6.18 v1, CI of 2026-12-05),
/// memory.memsw.usage_in_bytes and memory.stat showed 4 MiB that the first usage read had not
/// seen. The usage between its two reads covers them; a memsw counter off both reads is wrong.
#[test]
fn the_usage_read_again_brackets_the_files_read_between() {
    const BOTH: [&str; 6] = [
        "a.usage",
        "a.memsw",
        "a.anon",
        "a.file",
        "a.swap",
        "again.a.usage",
    ];
    let rec = |cols: &[&str], off: i64| {
        sampled(cols, move |c, t| {
            let before = 100 * MIB + (t * 40.0 * MIB as f64) as i64;
            match c {
                "a.usage" => before,
                "again.a.usage" => before + 5 * MIB,
                "a.memsw" => before + 4 * MIB + off,
                "a.file" => before + 4 * MIB - MIB / 2,
                _ => 0,
            }
        })
    };
    let i = crate::check::counters::identities::identities("i".into(), &rec(&BOTH, 0), "a");
    assert_eq!(i.outcome, Outcome::Pass, "{}", i.detail);
    let u = crate::check::counters::usage_covers::usage_covers("u".into(), &rec(&BOTH, 0), "a");
    assert_eq!(u.outcome, Outcome::Pass, "{}", u.detail);
    let wrong =
        crate::check::counters::identities::identities("i".into(), &rec(&BOTH, 8 * MIB), "a");
    assert_eq!(wrong.outcome, Outcome::Fail, "{}", wrong.detail);
    assert!(
        wrong.expected.contains("(read again: "),
        "{}",
        wrong.expected
    );
    // The values judged are in actual and expected; the detail points at the whole sample.
    assert!(
        wrong
            .detail
            .contains("of the scenario's CSV in the report)"),
        "{}",
        wrong.detail
    );
    // Without the second read, the same samples fail both checks.
    let first_only = rec(&BOTH[..5], 0);
    let i = crate::check::counters::identities::identities("i".into(), &first_only, "a");
    assert_eq!(i.outcome, Outcome::Fail, "{}", i.detail);
    let u = crate::check::counters::usage_covers::usage_covers("u".into(), &first_only, "a");
    assert_eq!(u.outcome, Outcome::Fail, "{}", u.detail);
}

/// v2 charges a swap cache page's slot until the slot is freed: a group caching 32 MiB of swap
/// it no longer holds (a swap cache count never decremented) fails; v1, which uncharges the
/// slot of a page swapped in, does not have the rule.
#[test]
fn the_swap_cache_is_within_swap_on_v2_only() {
    let rec = |version, leak: i64| {
        let mut r = sampled(&["a.swapcached", "a.swap"], |c, t| {
            let swap = if t < 1.5 { 32 * MIB } else { 0 };
            match c {
                "a.swapcached" => swap / 2 + if t >= 1.5 { leak } else { 0 },
                _ => swap,
            }
        });
        r.version = version;
        r
    };
    let i = crate::check::counters::identities::identities("i".into(), &rec(Version::V2, 0), "a");
    assert_eq!(i.outcome, Outcome::Pass, "{}", i.detail);
    let leak = crate::check::counters::identities::identities(
        "i".into(),
        &rec(Version::V2, 32 * MIB),
        "a",
    );
    assert_eq!(leak.outcome, Outcome::Fail, "{}", leak.detail);
    assert!(
        leak.detail.contains("swapcached <= swap"),
        "{}",
        leak.detail
    );
    let v1 = crate::check::counters::identities::identities(
        "i".into(),
        &rec(Version::V1, 32 * MIB),
        "a",
    );
    assert_ne!(v1.outcome, Outcome::Fail, "{}", v1.detail);
}
