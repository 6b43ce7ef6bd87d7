use super::*;
use crate::cgroup::stat::Stat;
use crate::model::Series;
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
            kind: "write",
            describe: "write".into(),
            start: t0,
            end: t0 + 5.0,
            bytes,
            seconds: bytes as f64 / (mbps[p] * 1e6),
            cgroup: "test".into(),
            cpu_seconds: 0.0,
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
            cgroup: "test".into(),
            cpu_seconds: 0.0,
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
        },
        moves: vec![],
        charge_moving: None,
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
        &["sync".into()],
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
        &["sync".into()],
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
        &["sync".into()],
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
                kind: "write",
                describe: "write".into(),
                start: 0.0,
                end: 0.0,
                bytes,
                seconds: bytes as f64 / (mbps * 1e6),
                cgroup: "test".into(),
                cpu_seconds: 0.0,
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
    assert_eq!(crate::stats::median(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(crate::stats::median(&[4.0, 1.0]), Some(2.5));
    assert_eq!(crate::stats::median(&[]), None);
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
                    kind: "fault",
                    describe: "fault".into(),
                    start: 0.0,
                    end: 0.0,
                    bytes: *rate as u64,
                    seconds: 1.0,
                    cgroup: cg.into(),
                    cpu_seconds: 1.0,
                });
            }
        }
    }
    r
}

fn ratio_of(r: &Record, phase: Option<&str>) -> CheckResult {
    ratio("r".into(), r, "fault", ("inside", "outside"), 0.8, phase)
}

#[test]
fn ratio_needs_separation_and_enough_samples() {
    // Every inside sample below every outside one, 5 pairs: a failure.
    let slow = [
        (500.0, 1000.0),
        (510.0, 990.0),
        (490.0, 1010.0),
        (505.0, 1000.0),
        (495.0, 980.0),
    ];
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
                kind: "write",
                describe: "write".into(),
                start: 0.0,
                end: 5.0,
                bytes: 500 << 20,
                seconds: 5.0,
                cgroup: "test".into(),
                cpu_seconds: 0.0,
            },
            // A probe window: the global side rose by 500 MiB by t=5.
            StepRecord {
                phase: 0,
                rep: 0,
                kind: "probe",
                describe: "probe".into(),
                start: 4.35,
                end: 4.95,
                bytes: probe_bytes,
                seconds: 0.5,
                cgroup: "test".into(),
                cpu_seconds: 0.0,
            },
        ],
        machine: Machine {
            cpus: 2,
            page_size: 4096,
            node_drift_pages: 48,
        },
        moves: vec![],
        charge_moving: None,
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
        &["write".into()],
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
        &["write".into()],
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

#[test]
fn clamped_underflow_timeline_marks_the_failing_sample() {
    let r = global_record(|_, _| 0);
    let c = tracks_global(
        "tracks-global(test)".into(),
        &r,
        "test",
        &dw(),
        &gl(),
        &["write".into()],
        None,
    );
    let svg =
        crate::report::svg::render("clamped", "fail", &c.actual, std::slice::from_ref(&c), &r);
    assert!(svg.contains("global nr_dirty"));
    assert!(svg.contains("tracks-global(test) failed"));
    assert!(svg.contains("<circle"));
    // MEMCGTEST_SVG_OUT=path keeps the picture for looking at.
    if let Ok(p) = std::env::var("MEMCGTEST_SVG_OUT") {
        std::fs::write(p, svg).unwrap();
    }
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

fn cycles(settled: &[i64]) -> Record {
    let mut series = Series::new(vec!["test.dirty".into(), "test.writeback".into()]);
    let mut steps = Vec::new();
    for (i, v) in settled.iter().enumerate() {
        let t0 = i as f64;
        series.push(t0 + 0.1, &[100 * MIB, 0]);
        series.push(t0 + 0.6, &[*v, 0]);
        series.push(t0 + 0.7, &[*v, 0]);
        steps.push(StepRecord {
            phase: 0,
            rep: i as u32,
            kind: "write",
            describe: "w".into(),
            start: t0,
            end: t0 + 0.4,
            bytes: 1,
            seconds: 1.0,
            cgroup: "test".into(),
            cpu_seconds: 0.0,
        });
        steps.push(StepRecord {
            phase: 0,
            rep: i as u32,
            kind: "sync",
            describe: "s".into(),
            start: t0 + 0.4,
            end: t0 + 0.5,
            bytes: 0,
            seconds: 0.1,
            cgroup: "test".into(),
            cpu_seconds: 0.0,
        });
    }
    Record {
        series,
        phases: vec![PhaseRecord {
            name: "p".into(),
            start: 0.0,
            end: 99.0,
            antagonists: vec![],
            warmup: false,
            vmstat_start: Stat::default(),
            vmstat_end: Stat::default(),
        }],
        steps,
        machine: Machine {
            cpus: 2,
            page_size: 4096,
            node_drift_pages: 48,
        },
        moves: vec![],
        charge_moving: None,
    }
}

#[test]
fn leak_fails_no_ratchet_and_noise_passes() {
    let leak: Vec<i64> = (0..8).map(|i| i * 40 * 1024).collect();
    let c = no_ratchet("r".into(), &cycles(&leak), "test", &dw(), None);
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(c.detail.contains("crept up"), "{}", c.detail);
    let stuck = [0, 0, 2 * MIB, 2 * MIB];
    let c = no_ratchet("r".into(), &cycles(&stuck), "test", &dw(), None);
    assert_eq!(c.outcome, Outcome::Fail);
    let noise = [0, 8192, 0, 4096, 0, 8192];
    let c = no_ratchet("r".into(), &cycles(&noise), "test", &dw(), None);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    let c = no_ratchet("r".into(), &cycles(&[0, 0]), "test", &dw(), None);
    assert_eq!(c.outcome, Outcome::NotExercised);
}

fn tree(parent: i64, own: i64, a: i64, b: i64) -> Record {
    let mut series = Series::new(vec![
        "p.dirty".into(),
        "p.dirty.local".into(),
        "p/a.dirty".into(),
        "p/b.dirty".into(),
        "sampler.pass_us".into(),
    ]);
    for i in 0..10 {
        series.push(i as f64 * 0.01, &[parent, own, a, b, 50]);
    }
    let mut r = cycles(&[0]);
    r.series = series;
    r
}

#[test]
fn broken_hierarchy_fails() {
    let ok = tree(30 * MIB, MIB, 20 * MIB, 9 * MIB);
    let c = hierarchy("h".into(), &ok, "p", &["dirty".into()]);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    // The parent misses 8 MiB of a child's dirty pages.
    let bad = tree(22 * MIB, MIB, 20 * MIB, 9 * MIB);
    let c = hierarchy("h".into(), &bad, "p", &["dirty".into()]);
    assert_eq!(c.outcome, Outcome::Fail);
    assert!(
        c.detail
            .contains("differs from the sum of its parts by 8.0 MiB"),
        "{}",
        c.detail
    );
}

#[test]
fn observed_needs_global_activity() {
    let r = global_record(|_, g| g);
    let c = observed(
        "o".into(),
        &r,
        "test",
        &["dirty".into()],
        &["nr_dirty".into()],
    );
    assert_eq!(c.outcome, Outcome::Pass);
    let c = observed(
        "o".into(),
        &r,
        "test",
        &["writeback".into()],
        &["nr_dirty".into()],
    );
    assert_eq!(c.outcome, Outcome::Fail);
    let c = observed(
        "o".into(),
        &r,
        "test",
        &["writeback".into()],
        &["nr_writeback".into()],
    );
    assert_eq!(c.outcome, Outcome::NotExercised);
}

#[test]
fn zoneinfo_threshold_takes_the_largest_per_node() {
    let z = "Node 0, zone DMA\n  vm stats threshold: 4\nNode 0, zone Normal\n  vm stats threshold: 24\nNode 1, zone Normal\n  vm stats threshold: 16\n";
    assert_eq!(crate::model::zoneinfo_threshold(z), 40);
}

/// Groups a and b; a task holding 64 MiB moves a -> b over steps at t=1.0..1.1; `moved` is how
/// much of it b receives (and a loses).
fn move_record(moved: i64, charge_moving: Option<String>) -> Record {
    let mut series = Series::new(vec!["a.anon".into(), "b.anon".into()]);
    for i in 0..30 {
        let t = i as f64 * 0.1;
        let x = if t > 1.05 { moved } else { 0 };
        series.push(t, &[64 * MIB - x, x]);
    }
    Record {
        series,
        phases: vec![PhaseRecord {
            name: "move".into(),
            start: 0.0,
            end: 2.9,
            antagonists: vec![],
            warmup: false,
            vmstat_start: Stat::default(),
            vmstat_end: Stat::default(),
        }],
        steps: vec![StepRecord {
            phase: 0,
            rep: 0,
            kind: "move",
            describe: "move task t to b".into(),
            start: 1.0,
            end: 1.1,
            bytes: 64 << 20,
            seconds: 0.1,
            cgroup: "test".into(),
            cpu_seconds: 0.0,
        }],
        machine: Machine {
            cpus: 2,
            page_size: 4096,
            node_drift_pages: 48,
        },
        moves: vec![],
        charge_moving,
    }
}

#[test]
fn change_follows_a_moved_charge_and_catches_a_partial_move() {
    let ok = move_record(64 * MIB, None);
    let c = change("c".into(), &ok, "b.anon", "move", 64 * MIB, None, true);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    let c = change("c".into(), &ok, "a.anon", "move", -64 * MIB, None, true);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    // Half the charge left behind.
    let half = move_record(32 * MIB, None);
    let c = change("c".into(), &half, "b.anon", "move", 64 * MIB, None, true);
    assert_eq!(c.outcome, Outcome::Fail);
    assert!(
        c.detail.contains("less moved than expected"),
        "{}",
        c.detail
    );
    assert!(c.actual.contains("+32.0 MiB"), "{}", c.actual);
    // A kernel without charge moving: not exercised, with the reason.
    let none = move_record(0, Some("EINVAL".into()));
    let c = change("c".into(), &none, "b.anon", "move", 64 * MIB, None, true);
    assert_eq!(c.outcome, Outcome::NotExercised);
    assert!(c.detail.contains("EINVAL"));
    // The same record holds "nothing moved" when moving is not needed.
    let c = change("c".into(), &none, "b.anon", "move", 0, None, false);
    assert_eq!(c.outcome, Outcome::Pass);
}

#[test]
fn a_one_sample_burst_is_read_skew_but_a_lasting_gap_fails() {
    // A task exits between the parent's read and its child's: one sample disagrees.
    let mut r = tree(30 * MIB, MIB, 20 * MIB, 9 * MIB);
    let ncols = r.series.columns.len();
    r.series.values[4 * ncols] = 62 * MIB;
    let c = hierarchy("h".into(), &r, "p", &["dirty".into()]);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    // Two samples in a row: stale totals.
    r.series.values[5 * ncols] = 62 * MIB;
    let c = hierarchy("h".into(), &r, "p", &["dirty".into()]);
    assert_eq!(c.outcome, Outcome::Fail);
    assert!(c.detail.contains("as in the sample before"), "{}", c.detail);
}

#[test]
fn follows_needs_everything_to_move() {
    // a held 64 MiB; after the move b has all of it.
    let all = move_record(64 * MIB, None);
    let c = follows("f".into(), &all, ("a.anon", "b.anon"), "move", true);
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    // Half stayed behind.
    let half = move_record(32 * MIB, None);
    let c = follows("f".into(), &half, ("a.anon", "b.anon"), "move", true);
    assert_eq!(c.outcome, Outcome::Fail);
    assert!(c.detail.contains("stayed behind"), "{}", c.detail);
    // Nothing held in the source: not exercised.
    let c = follows("f".into(), &all, ("b.anon", "a.anon"), "move", true);
    assert_eq!(c.outcome, Outcome::NotExercised);
    assert!(c.detail.contains("nothing to move"), "{}", c.detail);
}

/// A record sampled every `dt` seconds for 5 s with one write step of `test` over [0.5, 4.5];
/// `row(t)` gives the values of `columns` at time t.
fn sampled(dt: f64, columns: &[&str], row: impl Fn(f64) -> Vec<i64>) -> Record {
    let mut series = Series::new(columns.iter().map(|c| c.to_string()).collect());
    let n = (5.0 / dt).round() as usize;
    for i in 0..=n {
        let t = i as f64 * dt;
        series.push(t, &row(t));
    }
    let mut r = global_record(|_, g| g);
    r.series = series;
    r.steps.truncate(1);
    r.steps[0].start = 0.5;
    r.steps[0].end = 4.5;
    r
}

const FILES: [&str; 6] = [
    "oracle.files.pre.test.dirty",
    "oracle.files.pre.test.writeback",
    "test.dirty",
    "test.writeback",
    "oracle.files.test.dirty",
    "oracle.files.test.writeback",
];

/// Per-file truth rising 100 MiB/s from t=0.5; the group shows `cg(t, truth)`.
fn per_file(dt: f64, cg: impl Fn(f64, i64) -> i64) -> Record {
    sampled(dt, &FILES, move |t| {
        let truth = ((t - 0.5).max(0.0) * 100.0 * MIB as f64) as i64;
        vec![truth, 0, cg(t, truth), 0, truth, 0]
    })
}

fn tg(r: &Record) -> CheckResult {
    tracks_global("g".into(), r, "test", &dw(), &gl(), &["write".into()], None)
}

#[test]
fn per_file_truth_passes_when_the_group_follows_its_files() {
    let c = tg(&per_file(0.01, |_, truth| truth));
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    assert!(
        c.detail.contains("the page cache of the files test wrote"),
        "{}",
        c.detail
    );
    assert!(!c.tolerance.unwrap().contains("node counter drift"));
}

#[test]
fn per_file_truth_ignores_other_writers_and_catches_a_deficit() {
    // A foreign writer dirtying 500 MiB machine-wide is not in the files' truth: with global
    // columns alongside, the per-file reference still decides.
    let mut cols = FILES.to_vec();
    cols.extend(["vmstat.nr_dirty", "vmstat.nr_writeback"]);
    let r = sampled(0.01, &cols, |t| {
        let truth = ((t - 0.5).max(0.0) * 10.0 * MIB as f64) as i64;
        let foreign = (t * 100.0 * MIB as f64) as i64;
        vec![truth, 0, truth, 0, truth, 0, (truth + foreign) / 4096, 0]
    });
    assert_eq!(tg(&r).outcome, Outcome::Pass, "{:?}", tg(&r));
    // The group counts half of what its files hold dirty.
    let c = tg(&per_file(0.01, |_, truth| truth / 2));
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(c.detail.contains("count is short"), "{}", c.detail);
    assert!(c.expected.contains("cachestat"), "{}", c.expected);
}

/// The group lags its files by 8 MiB (beyond the 1 MiB batch) from t=2.0 for `stale` seconds.
fn stale_for(dt: f64, stale: f64) -> CheckResult {
    tg(&per_file(dt, move |t, truth| {
        if (2.0..2.0 + stale - 1e-9).contains(&t) {
            truth - 8 * MIB
        } else {
            truth
        }
    }))
}

#[test]
fn a_gap_counts_from_its_first_bad_sample_at_any_sampling_interval() {
    // 10 ms sampling: a 65 ms stale read (a concurrent flush) passes, 150 ms fails, and the
    // failure is reported 100 ms after the first bad sample (t=2.0 -> t=2.1).
    assert_eq!(stale_for(0.01, 0.065).outcome, Outcome::Pass);
    let c = stale_for(0.01, 0.15);
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!((c.at.unwrap() - 2.1).abs() < 1e-6, "{:?}", c.at);
    // 100 ms sampling: one bad sample passes, two in a row fail (at the second).
    assert_eq!(stale_for(0.1, 0.1).outcome, Outcome::Pass);
    let c = stale_for(0.1, 0.2);
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!((c.at.unwrap() - 2.1).abs() < 1e-6, "{:?}", c.at);
    // 1 s sampling: the same, one sample apart.
    assert_eq!(stale_for(1.0, 1.0).outcome, Outcome::Pass);
    assert_eq!(stale_for(1.0, 2.0).outcome, Outcome::Fail);
}

/// Without per-file truth: global counters plus the machine view (memcg root and the run's top
/// group). The test group writes 100 MiB/s from t=0.5 and counts `cg(t, own)`; a foreign writer
/// adds `foreign(t)` machine-wide.
fn fallback(cg: impl Fn(f64, i64) -> i64, foreign: impl Fn(f64) -> i64) -> Record {
    let cols = [
        "oracle.root.dirty",
        "oracle.root.writeback",
        "oracle.run.dirty",
        "oracle.run.writeback",
        "vmstat.pre.nr_dirty",
        "vmstat.pre.nr_writeback",
        "test.dirty",
        "test.writeback",
        "vmstat.nr_dirty",
        "vmstat.nr_writeback",
    ];
    sampled(0.01, &cols, move |t| {
        let own = ((t - 0.5).max(0.0) * 100.0 * MIB as f64) as i64;
        let c = cg(t, own);
        let f = foreign(t);
        vec![
            c + f,
            0,
            c,
            0,
            (own + f) / 4096,
            0,
            c,
            0,
            (own + f) / 4096,
            0,
        ]
    })
}

#[test]
fn without_per_file_truth_a_foreign_writer_makes_windows_inconclusive_never_failing() {
    let c = tg(&fallback(|_, own| own, |t| (t * 50.0 * MIB as f64) as i64));
    assert_eq!(c.outcome, Outcome::NotExercised, "{c:?}");
    assert!(
        c.detail.contains("every window was inconclusive"),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("memcg root"), "{}", c.detail);
    // No foreign writer: a deficit still fails (the memcg root's total loses the pages too, so the
    // machine view does not move).
    let c = tg(&fallback(|_, own| own / 2, |_| 0));
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    // And an honest group passes.
    assert_eq!(tg(&fallback(|_, own| own, |_| 0)).outcome, Outcome::Pass);
}

#[test]
fn dirty_probe_with_per_file_truth() {
    // The probe (64 MiB) runs 0.5..1.14 s; the group's files then hold 64 MiB dirty.
    let probe = |shown: i64| {
        let mut r = sampled(0.01, &FILES, move |t| {
            let truth = if t >= 1.0 { 64 * MIB } else { 0 };
            let cg = if t >= 1.0 { shown } else { 0 };
            vec![truth, 0, cg, 0, truth, 0]
        });
        r.steps[0].kind = "probe";
        r.steps[0].bytes = 64 << 20;
        r.steps[0].end = 1.15;
        r
    };
    let c = dirty_probe("p".into(), &probe(64 * MIB), "test");
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    let c = dirty_probe("p".into(), &probe(32 * MIB), "test");
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(c.detail.contains("a deficit of 32.0 MiB"), "{}", c.detail);
}
