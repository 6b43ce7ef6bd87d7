use super::*;
use crate::cgroup::stat::Stat;
use crate::record::{Machine, PhaseRecord, Record, StepRecord};
use crate::sample::Series;

const MIB: i64 = 1 << 20;

/// A record with phases "baseline" [0,10) and "after" [10,20); each phase writes then syncs
/// (write t+0..t+5, sync t+5..t+6). `dirty(t)` gives the sampled test.dirty every 0.1 s.
fn record(dirty: impl Fn(f64) -> i64, mbps: [f64; 2]) -> Record {
    let mut series = Series::new(vec!["test.dirty".into(), "test.writeback".into()]);
    for i in 0..200 {
        let t = i as f64 * 0.1;
        series.push(t, &[dirty(t), 0]);
    }
    let mut phases = Vec::new();
    let mut steps = Vec::new();
    for (p, name) in ["baseline", "after"].iter().enumerate() {
        let t0 = p as f64 * 10.0;
        phases.push(PhaseRecord {
            name: name.to_string(),
            start: t0,
            end: t0 + 9.95,
            antagonists: vec![],
            vmstat_start: Stat(vec![("pgmigrate_success".into(), 100)]),
            vmstat_end: Stat(vec![("pgmigrate_success".into(), 100 + 51_000 * p as i64)]),
        });
        let bytes = 1u64 << 30;
        steps.push(StepRecord {
            phase: p,
            rep: 0,
            kind: "write",
            describe: "write".into(),
            start: t0,
            end: t0 + 5.0,
            bytes,
            seconds: bytes as f64 / (mbps[p] * 1e6),
        });
        steps.push(StepRecord {
            phase: p,
            rep: 0,
            kind: "sync",
            describe: "sync".into(),
            start: t0 + 5.0,
            end: t0 + 6.0,
            bytes: 0,
            seconds: 1.0,
        });
    }
    Record {
        series,
        phases,
        steps,
        machine: Machine {
            cpus: 2,
            page_size: 4096,
        },
    }
}

/// Healthy: dirty rises while writing, drops to 0 at the end of each sync.
fn healthy(t: f64) -> i64 {
    let local = t % 10.0;
    if local < 6.0 {
        (local * 100.0) as i64 * MIB
    } else {
        0
    }
}

fn counters() -> Vec<String> {
    vec!["dirty".into(), "writeback".into()]
}

#[test]
fn healthy_run_passes_everything() {
    let r = record(healthy, [800.0, 820.0]);
    assert_eq!(
        no_underflow("n".into(), &r, "test", &counters()).outcome,
        Outcome::Pass
    );
    let s = settles("s".into(), &r, "test", &counters(), 10.0, None);
    assert_eq!(s.outcome, Outcome::Pass, "{s:?}");
    assert!(s.tolerance.unwrap().contains("64 pages x 2 CPUs"));
    assert_eq!(
        throughput("t".into(), &r, "after", "baseline", 0.7).outcome,
        Outcome::Pass
    );
}

#[test]
fn negative_dirty_fails_no_underflow_with_time_and_value() {
    // The 2015 report: dirty -33427456 after migration.
    let r = record(
        |t| if t > 12.0 { -33427456 } else { healthy(t) },
        [800.0, 800.0],
    );
    let c = no_underflow("n".into(), &r, "test", &counters());
    assert_eq!(c.outcome, Outcome::Fail);
    assert!(c.actual.contains("-33427456"), "{}", c.actual);
    assert!(c.detail.contains("phase after"), "{}", c.detail);
    assert!((c.at.unwrap() - 12.1).abs() < 0.01);
}

#[test]
fn dirty_left_after_sync_fails_settles() {
    // A leak: 8 MiB of dirty never goes away after the second sync.
    let r = record(
        |t| {
            if t >= 10.0 {
                healthy(t).max(8 * MIB)
            } else {
                healthy(t)
            }
        },
        [800.0, 800.0],
    );
    let c = settles("s".into(), &r, "test", &counters(), 10.0, None);
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(c.actual.contains("test.dirty = 8388608"), "{}", c.actual);
    assert_eq!(c.bound, Some(512 * 1024));
    assert!(c.detail.contains("phase after"), "{}", c.detail);
}

#[test]
fn explicit_bound_is_used_and_named() {
    let r = record(
        |t| {
            if t >= 10.0 {
                healthy(t).max(MIB)
            } else {
                healthy(t)
            }
        },
        [800.0, 800.0],
    );
    let c = settles("s".into(), &r, "test", &counters(), 10.0, Some(2 << 20));
    assert_eq!(c.outcome, Outcome::Pass);
    assert!(c.tolerance.unwrap().contains("set in the scenario"));
}

#[test]
fn throughput_collapse_fails() {
    // 841 -> 114 MB/s as in the 2015 report.
    let r = record(healthy, [841.0, 114.0]);
    let c = throughput("t".into(), &r, "after", "baseline", 0.7);
    assert_eq!(c.outcome, Outcome::Fail);
    assert!(c.actual.starts_with("0.14"), "{}", c.actual);
    assert_eq!(c.expected, ">= 0.70");
}

#[test]
fn exercised_needs_the_counter_to_rise() {
    let r = record(healthy, [800.0, 800.0]);
    let c = exercised("e".into(), &r, "after", "pgmigrate_success", 1, "migration");
    assert_eq!(c.outcome, Outcome::Pass);
    assert_eq!(c.actual, "pgmigrate_success +51000");
    let c = exercised(
        "e".into(),
        &r,
        "baseline",
        "pgmigrate_success",
        1,
        "migration",
    );
    assert_eq!(c.outcome, Outcome::NotExercised);
    assert!(c.detail.contains("did not happen"));
}

#[test]
fn exercised_without_vm_event_counters_cannot_verify() {
    let mut r = record(healthy, [800.0, 800.0]);
    r.phases[1].vmstat_start = Stat(vec![]);
    r.phases[1].vmstat_end = Stat(vec![]);
    let c = exercised(
        "e".into(),
        &r,
        "after",
        "pgmigrate_success",
        1,
        "page migration",
    );
    assert_eq!(c.outcome, Outcome::NotExercised);
    assert!(
        c.detail.starts_with("cannot verify page migration"),
        "{}",
        c.detail
    );
}

#[test]
fn missing_columns_never_pass() {
    let r = record(healthy, [800.0, 800.0]);
    let c = no_underflow("n".into(), &r, "other", &counters());
    assert_eq!(c.outcome, Outcome::NotExercised);
}

/// Adds two more repetitions to each phase's writes with the given MB/s.
fn with_reps(mut r: Record, base: [f64; 2], after: [f64; 2]) -> Record {
    for (p, extra) in [(0usize, base), (1, after)] {
        for (i, mbps) in extra.iter().enumerate() {
            let bytes = 1u64 << 30;
            r.steps.push(StepRecord {
                phase: p,
                rep: i as u32 + 1,
                kind: "write",
                describe: "write".into(),
                start: 0.0,
                end: 0.0,
                bytes,
                seconds: bytes as f64 / (mbps * 1e6),
            });
        }
    }
    r
}

#[test]
fn throughput_uses_medians_and_needs_separation() {
    // Noisy but healthy: medians 1500 vs 4000 (ratio 0.375) yet the samples overlap: no regression.
    let r = with_reps(
        record(healthy, [4000.0, 1500.0]),
        [1200.0, 4500.0],
        [1400.0, 4800.0],
    );
    let c = throughput("t".into(), &r, "after", "baseline", 0.7);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    assert!(c.detail.contains("overlap"), "{}", c.detail);
    // The 2015 bug: every after-sample far below every baseline sample.
    let r = with_reps(
        record(healthy, [841.0, 114.0]),
        [800.0, 880.0],
        [120.0, 100.0],
    );
    let c = throughput("t".into(), &r, "after", "baseline", 0.7);
    assert_eq!(c.outcome, Outcome::Fail);
    assert!(
        c.detail
            .contains("MB/s samples: after [114 120 100], baseline [841 800 880]"),
        "{}",
        c.detail
    );
}

#[test]
fn median_of_samples() {
    assert_eq!(crate::record::median(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(crate::record::median(&[4.0, 1.0]), Some(2.5));
    assert_eq!(crate::record::median(&[]), None);
}
