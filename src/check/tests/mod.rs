use super::*;
use crate::model::Series;
use crate::model::Stat;
use crate::model::StepKind;
use crate::model::{Machine, PhaseRecord, Record, StepRecord};

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
            warmup: false,
            vmstat_start: Stat(vec![("pgmigrate_success".into(), 100)]),
            vmstat_end: Stat(vec![("pgmigrate_success".into(), 100 + 51_000 * p as i64)]),
        });
        let bytes = 1u64 << 30;
        steps.push(StepRecord {
            phase: p,
            rep: 0,
            kind: StepKind::Write,
            describe: "write".into(),
            start: t0,
            end: t0 + 5.0,
            bytes,
            seconds: bytes as f64 / (mbps[p] * 1e6),
            cgroup: "test".into(),
            cpu_seconds: 0.0,
            ..Default::default()
        });
        steps.push(StepRecord {
            phase: p,
            rep: 0,
            kind: StepKind::Sync,
            describe: "sync".into(),
            start: t0 + 5.0,
            end: t0 + 6.0,
            bytes: 0,
            seconds: 1.0,
            cgroup: "test".into(),
            cpu_seconds: 0.0,
            ..Default::default()
        });
    }
    Record {
        series,
        phases,
        steps,
        machine: Machine {
            cpus: 2,
            page_size: 4096,
            node_drift_pages: 48,
            lru_gen: false,
            top_flushed: true,
        },
        moves: vec![],
        charge_moving: None,
        cgroups: Vec::new(),
        stopped: None,
        dirty: None,
        version: crate::model::Version::V2,
        notices: None,
        repeated: None,
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
    let s = settles(
        "s".into(),
        &r,
        "test",
        &counters(),
        10.0,
        None,
        &[StepKind::Sync],
    );
    assert_eq!(s.outcome, Outcome::Pass, "{s:?}");
    assert!(s.tolerance.unwrap().contains("2 x 64 pages x 2 CPUs"));
    // Three repetitions per phase: the least a throughput verdict takes.
    let r = with_reps(r, [790.0, 810.0], [815.0, 830.0]);
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
    let c = settles(
        "s".into(),
        &r,
        "test",
        &counters(),
        10.0,
        None,
        &[StepKind::Sync],
    );
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(c.actual.contains("test.dirty = 8388608"), "{}", c.actual);
    assert_eq!(c.bound, Some(1024 * 1024));
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
    let c = settles(
        "s".into(),
        &r,
        "test",
        &counters(),
        10.0,
        Some(2 << 20),
        &[StepKind::Sync],
    );
    assert_eq!(c.outcome, Outcome::Pass);
    assert!(c.tolerance.unwrap().contains("set in the scenario"));
}

#[test]
fn throughput_collapse_fails() {
    // 841 -> 114 MB/s as in the 2015 report, three repetitions each (the least that can judge).
    let r = with_reps(
        record(healthy, [841.0, 114.0]),
        [841.0, 841.0],
        [114.0, 114.0],
    );
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
                kind: StepKind::Write,
                describe: "write".into(),
                start: 0.0,
                end: 0.0,
                bytes,
                seconds: bytes as f64 / (mbps * 1e6),
                cgroup: "test".into(),
                cpu_seconds: 0.0,
                ..Default::default()
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
    assert_eq!(crate::model::stats::median(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(crate::model::stats::median(&[4.0, 1.0]), Some(2.5));
    assert_eq!(crate::model::stats::median(&[]), None);
}

#[test]
fn throughput_with_too_few_samples_is_not_exercised() {
    // One repetition each: even 841 -> 114 MB/s separates by chance half the time.
    let r = record(healthy, [841.0, 114.0]);
    let c = throughput("t".into(), &r, "after", "baseline", 0.7);
    assert_eq!(c.outcome, Outcome::NotExercised, "{c:?}");
    assert!(
        c.detail.starts_with("too few samples (n=1 v n=1)"),
        "{}",
        c.detail
    );
    assert!(
        c.detail.contains("raise the phase's repeat"),
        "{}",
        c.detail
    );
    // A healthy ratio with one sample each is no verdict either.
    let r = record(healthy, [800.0, 820.0]);
    let c = throughput("t".into(), &r, "after", "baseline", 0.7);
    assert_eq!(c.outcome, Outcome::NotExercised, "{c:?}");
}

/// Alternating `fault` steps in "inside" and "outside" with the given faults/s: a phase
/// "warmup" (marked warm-up) with `warm`, then a phase "pairs" with `pairs`.
fn ratio_record(warm: &[(f64, f64)], pairs: &[(f64, f64)]) -> Record {
    let mut r = record(|_| 0, [800.0, 800.0]);
    r.steps.clear();
    r.phases[0].name = "warmup".into();
    r.phases[0].warmup = true;
    r.phases[1].name = "pairs".into();
    for (p, rates) in [warm, pairs].iter().enumerate() {
        for (rep, (inside, outside)) in rates.iter().enumerate() {
            for (cg, rate) in [("outside", outside), ("inside", inside)] {
                r.steps.push(StepRecord {
                    phase: p,
                    rep: rep as u32,
                    kind: StepKind::Fault,
                    describe: "fault".into(),
                    start: 0.0,
                    end: 0.0,
                    bytes: *rate as u64,
                    seconds: 1.0,
                    cgroup: cg.into(),
                    cpu_seconds: 1.0,
                    ..Default::default()
                });
            }
        }
    }
    r
}

fn ratio_of(r: &Record, phase: Option<&str>) -> CheckResult {
    ratio(
        "r".into(),
        r,
        StepKind::Fault,
        ("inside", "outside"),
        0.8,
        phase,
    )
}

/// Five pairs, every inside rate below every outside one.
const SLOW: [(f64, f64); 5] = [
    (500.0, 1000.0),
    (510.0, 990.0),
    (490.0, 1010.0),
    (505.0, 1000.0),
    (495.0, 980.0),
];

#[test]
fn ratio_needs_separation_and_enough_samples() {
    // Every inside sample below every outside one, 5 pairs: a failure.
    let slow = SLOW;
    let c = ratio_of(&ratio_record(&[], &slow), Some("pairs"));
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(
        c.detail.contains("every inside sample is below"),
        "{}",
        c.detail
    );
    // Median ratio below 0.8, but one inside sample beats an outside one: noise.
    let mut noisy = slow;
    noisy[0] = (1200.0, 1000.0);
    let c = ratio_of(&ratio_record(&[], &noisy), Some("pairs"));
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    assert!(c.detail.contains("overlap"), "{}", c.detail);
    // Two pairs separate by chance 1 time in 6: no verdict, whichever way they point.
    let c = ratio_of(&ratio_record(&[], &slow[..2]), Some("pairs"));
    assert_eq!(c.outcome, Outcome::NotExercised, "{c:?}");
    assert!(
        c.detail.starts_with("too few samples (n=2 v n=2)"),
        "{}",
        c.detail
    );
    let c = ratio_of(&ratio_record(&[], &[(1000.0, 1000.0)]), Some("pairs"));
    assert_eq!(c.outcome, Outcome::NotExercised, "{c:?}");
    assert!(c.tolerance.unwrap().contains("at least 3 v 3"));
}

/// A phase that ran a second round (its steps' `round` 1, repetitions going on): the check fails
/// only when both rounds fail; a first round's failure the second does not repeat is chance.
#[test]
fn a_ratio_failure_counts_only_when_the_second_round_repeats_it() {
    let slow = SLOW;
    let healthy = [
        (1000.0, 1000.0),
        (990.0, 1010.0),
        (1005.0, 995.0),
        (1000.0, 990.0),
        (995.0, 1005.0),
    ];
    let two = |first: &[(f64, f64)], second: &[(f64, f64)]| {
        let all: Vec<(f64, f64)> = first.iter().chain(second).copied().collect();
        let mut r = ratio_record(&[], &all);
        for s in r.steps.iter_mut().filter(|s| s.rep >= 5) {
            s.round = 1;
        }
        ratio_of(&r, Some("pairs"))
    };
    // (first round, second round, verdict, how the detail starts); a second round that fails
    // alone does not fail the check either.
    let cases = [
        (
            &slow,
            &slow,
            Outcome::Fail,
            "failed in both rounds: first round: ",
        ),
        (
            &slow,
            &healthy,
            Outcome::Pass,
            "a first round failed and a second did not",
        ),
        (
            &healthy,
            &slow,
            Outcome::Pass,
            "judged in two rounds: first round: ",
        ),
    ];
    for (first, second, outcome, starts) in cases {
        let c = two(first, second);
        assert_eq!(c.outcome, outcome, "{c:?}");
        assert!(c.detail.starts_with(starts), "{}", c.detail);
        assert!(c.actual.contains(" then "), "{}", c.actual);
    }
}

#[test]
fn ratio_without_a_phase_leaves_out_warm_up_phases() {
    // A cold first pair inside, then three healthy pairs.
    let healthy = [(1000.0, 1000.0), (990.0, 1010.0), (1005.0, 995.0)];
    let r = ratio_record(&[(100.0, 1000.0)], &healthy);
    let c = ratio_of(&r, None);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    assert!(
        c.detail
            .contains("faults/s samples: inside [1000 990 1005], outside [1000 1010 995]"),
        "{}",
        c.detail
    );
    // Named, a warm-up phase is still looked at (one pair: too few to judge).
    let c = ratio_of(&r, Some("warmup"));
    assert_eq!(c.outcome, Outcome::NotExercised, "{c:?}");
}

#[test]
fn warm_up_phases_yield_no_measurements() {
    let mut r = with_reps(
        record(healthy, [800.0, 820.0]),
        [790.0, 810.0],
        [815.0, 830.0],
    );
    let names =
        |r: &Record| -> Vec<String> { r.measurements().into_iter().map(|m| m.name).collect() };
    assert_eq!(names(&r), vec!["baseline: write", "after: write"]);
    r.phases[0].warmup = true;
    assert_eq!(names(&r), vec!["after: write"]);
    assert_eq!(r.measurements()[0].samples.len(), 3);
}

/// A load that makes a step busy (see `Load::busy`).
fn busy_load() -> crate::model::Load {
    crate::model::Load {
        others_cpus: 1.5,
        ..Default::default()
    }
}

/// Busy repetitions stay in the measurements, apart (`busy_samples`); a phase busy throughout
/// keeps its measurement with no quiet sample; `phase_measure` still leaves them out.
#[test]
fn measurements_keep_busy_repetitions_marked() {
    let mut r = with_reps(
        record(healthy, [800.0, 820.0]),
        [790.0, 810.0],
        [815.0, 830.0],
    );
    for s in (r.steps.iter_mut()).filter(|s| (s.phase == 0 && s.rep == 1) || s.phase == 1) {
        s.load = Some(busy_load());
    }
    let ms = r.measurements();
    let round = |v: &[f64]| v.iter().map(|x| x.round()).collect::<Vec<_>>();
    assert_eq!(ms.len(), 2, "{ms:?}");
    assert_eq!(round(&ms[0].samples), [800.0, 810.0]);
    assert_eq!(round(&ms[0].busy_samples), [790.0]);
    assert_eq!(ms[1].name, "after: write");
    assert!(ms[1].samples.is_empty());
    assert_eq!(round(&ms[1].busy_samples), [820.0, 815.0, 830.0]);
    assert!(r.phase_measure(1).samples_mb_per_s.is_empty());
    assert_eq!(r.phase_measure(0).samples_mb_per_s.len(), 2);
    // In JSON: busy_samples only where a sample was busy; a file without them reads as quiet.
    let v = serde_json::to_value(&ms).unwrap();
    assert_eq!(v[1]["samples"], serde_json::json!([]));
    for s in &mut r.steps {
        s.load = None;
    }
    let quiet = serde_json::to_value(r.measurements()).unwrap();
    assert!(quiet[0].get("busy_samples").is_none(), "{quiet}");
    let old: crate::model::Measurement =
        serde_json::from_str(r#"{"name": "m", "unit": "MB/s", "samples": [1.0]}"#).unwrap();
    assert!(old.busy_samples.is_empty());
}

/// Reads, faults and faults per CPU-second keep their busy repetitions apart too.
#[test]
fn step_measurements_keep_busy_repetitions_marked() {
    let pairs = [(900.0, 1000.0), (910.0, 990.0), (905.0, 1010.0)];
    let mut r = ratio_record(&[], &pairs);
    for s in r.steps.iter_mut().filter(|s| s.rep == 0) {
        s.load = Some(busy_load());
    }
    let ms = r.measurements();
    let m = |name: &str| ms.iter().find(|m| m.name == name).unwrap();
    assert_eq!(m("pairs: fault in inside").samples, [910.0, 905.0]);
    assert_eq!(m("pairs: fault in inside").busy_samples, [900.0]);
    assert_eq!(m("pairs: fault in outside per CPU").busy_samples, [1000.0]);
}

// ---- invariants (accounting issue)

/// A write window 0..5 s where global nr_dirty rises 100 MiB/s; `cg(t, global_bytes)` gives the
/// group's dirty. Samples every 0.1 s; vmstat read before (pre) and after (post) the cgroup.
fn global_record(cg: impl Fn(f64, i64) -> i64) -> Record {
    let cols = vec![
        "vmstat.pre.nr_dirty".into(),
        "vmstat.pre.nr_writeback".into(),
        "test.dirty".into(),
        "test.writeback".into(),
        "vmstat.nr_dirty".into(),
        "vmstat.nr_writeback".into(),
    ];
    let mut series = Series::new(cols);
    let other = 40; // 160 KiB of other groups' dirty pages
    for i in 0..100 {
        let t = i as f64 * 0.1;
        let g = if t <= 5.0 {
            (t * 100.0) as i64 * MIB
        } else {
            0
        };
        series.push(t, &[g / 4096 + other, 0, cg(t, g), 0, g / 4096 + other, 0]);
    }
    let probe_bytes = 64 << 20;
    Record {
        series,
        phases: vec![PhaseRecord {
            name: "p".into(),
            start: 0.0,
            end: 9.9,
            antagonists: vec![],
            warmup: false,
            vmstat_start: Stat::default(),
            vmstat_end: Stat::default(),
        }],
        steps: vec![
            StepRecord {
                phase: 0,
                rep: 0,
                kind: StepKind::Write,
                describe: "write".into(),
                start: 0.0,
                end: 5.0,
                bytes: 500 << 20,
                seconds: 5.0,
                cgroup: "test".into(),
                cpu_seconds: 0.0,
                ..Default::default()
            },
            // A probe window: the global side rose by 500 MiB by t=5.
            StepRecord {
                phase: 0,
                rep: 0,
                kind: StepKind::Probe,
                describe: "probe".into(),
                start: 4.35,
                end: 4.95,
                bytes: probe_bytes,
                seconds: 0.5,
                cgroup: "test".into(),
                cpu_seconds: 0.0,
                ..Default::default()
            },
        ],
        machine: Machine {
            cpus: 2,
            page_size: 4096,
            node_drift_pages: 48,
            lru_gen: false,
            top_flushed: true,
        },
        moves: vec![],
        charge_moving: None,
        cgroups: Vec::new(),
        stopped: None,
        dirty: None,
        version: crate::model::Version::V2,
        notices: None,
        repeated: None,
    }
}

fn dw() -> Vec<String> {
    vec!["dirty".into(), "writeback".into()]
}
fn gl() -> Vec<String> {
    vec!["nr_dirty".into(), "nr_writeback".into()]
}

#[test]
fn tracks_global_passes_when_the_group_follows() {
    let r = global_record(|_, g| g);
    let c = tracks_global(
        "g".into(),
        &r,
        "test",
        &dw(),
        &gl(),
        &[StepKind::Write],
        None,
    );
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    assert!(c.tolerance.unwrap().contains("vm stats threshold x 2 CPUs"));
}

#[test]
fn clamped_underflow_fails_tracks_global_naming_counter_sample_and_deficit() {
    // The counter went negative earlier; reads clamp it to 0 while global nr_dirty rises.
    let r = global_record(|_, _| 0);
    let c = tracks_global(
        "g".into(),
        &r,
        "test",
        &dw(),
        &gl(),
        &[StepKind::Write],
        None,
    );
    assert_eq!(c.outcome, Outcome::Fail);
    assert!(
        c.actual
            .starts_with("test.dirty+test.writeback rose by 0 B"),
        "{}",
        c.actual
    );
    assert!(c.detail.contains("count is short"), "{}", c.detail);
    assert!(c.detail.contains("deficit"), "{}", c.detail);
    // Sample 1 (t=0.1) is the first bad one; the gap counts once it has lasted 100 ms.
    assert!(c.detail.contains("sample 2,"), "{}", c.detail);
    assert!(c.at.is_some());
}

/// A probe-only record: the probe (64 MiB) runs 4.35..4.95 s while global dirty rises 100 MiB/s;
/// the group shows `shown` bytes from the probe's start on.
fn probe_record(shown: i64) -> Record {
    let mut r = global_record(move |t, _| if t >= 4.35 { shown } else { 0 });
    r.steps.remove(0);
    r
}

#[test]
fn hidden_offset_fails_dirty_probe() {
    // An earlier underflow of -32 MiB, clamped to 0 on reads: the 64 MiB probe shows as 32 MiB.
    let c = dirty_probe("p".into(), &probe_record(32 << 20), "test");
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(c.actual.contains("32.0 MiB"), "{}", c.actual);
    assert!(c.detail.contains("a deficit of 32.0 MiB"), "{}", c.detail);
    assert!(c.detail.contains("hidden negative offset"), "{}", c.detail);
}

#[test]
fn dirty_probe_passes_on_exact_count_and_skips_when_writeback_ran() {
    let c = dirty_probe("p".into(), &probe_record(64 << 20), "test");
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    // If the global counters did not rise by the probe size, writeback was not held off.
    let mut r = probe_record(64 << 20);
    r.steps[0].bytes = 1 << 30;
    let c = dirty_probe("p".into(), &r, "test");
    assert_eq!(c.outcome, Outcome::NotExercised);
    assert!(c.detail.contains("not held off"), "{}", c.detail);
}

mod contracts;
mod fields;
mod kinds;
mod moves;
mod oom;
mod placed;
mod top;
mod truth;

/// A pair measured while other processes kept the machine busy is left out; with too few quiet
/// pairs left the check is inconclusive, never a failure (nor a pass), and says why.
#[test]
fn busy_pairs_are_left_out_and_too_many_make_the_ratio_inconclusive() {
    let slow = SLOW;
    let busy = crate::model::Load {
        others_cpus: 1.5,
        others_dirtied_mb_s: 0.0,
        others_dirtied_mb: 0.0,
        cpu_pressure: Some(0.4),
        io_pressure: None,
        host: None,
    };
    let mark = |r: &mut Record, reps: &[u32]| {
        for s in r.steps.iter_mut().filter(|s| reps.contains(&s.rep)) {
            s.load = Some(busy);
        }
    };
    // Two busy pairs, three quiet ones: still a verdict, the busy pairs shown apart.
    let mut r = ratio_record(&[], &slow);
    mark(&mut r, &[0, 1]);
    let c = ratio_of(&r, Some("pairs"));
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(c.detail.contains("2 of 5 pairs left out"), "{}", c.detail);
    // Three busy pairs: two quiet ones cannot judge.
    mark(&mut r, &[2]);
    let c = ratio_of(&r, Some("pairs"));
    assert_eq!(c.outcome, Outcome::Inconclusive, "{c:?}");
    assert!(
        c.detail
            .starts_with("inconclusive: the machine was busy during 3 of 5 pairs"),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("1.50 CPUs"), "{}", c.detail);
    // A quiet machine: every pair counts (a load below the thresholds is no reason).
    let mut r = ratio_record(&[], &slow);
    for s in &mut r.steps {
        s.load = Some(crate::model::Load {
            others_cpus: 0.1,
            ..busy
        });
    }
    assert_eq!(ratio_of(&r, Some("pairs")).outcome, Outcome::Fail);
}
