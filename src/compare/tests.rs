//! compare's tests.

use super::*;

mod prop {
    use super::*;
    use proptest::prelude::*;

    /// JSON values of any shape, with the keys compare's reader looks for.
    fn json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<f64>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            "[a-z]{0,6}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
                proptest::collection::vec(
                    (
                        prop_oneof![
                            Just("scenarios".to_string()),
                            Just("measurements".to_string()),
                            Just("samples".to_string()),
                            Just("name".to_string()),
                            Just("unit".to_string()),
                            "[a-z]{1,4}"
                        ],
                        inner
                    ),
                    0..6
                )
                .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// compare's reader over arbitrary result-shaped JSON: no panic, whatever the
        /// shapes and numbers (NaN cannot come from JSON; infinities and huge values can).
        #[test]
        fn arbitrary_results(a in json(), b in json(), t in 0.001f64..1000.0) {
            let rows = compare_runs(std::slice::from_ref(&a), std::slice::from_ref(&b), t, Samples::PooledRepetitions);
            let _ = render(&rows, t, Samples::PooledRepetitions);
            let rows = compare_runs(&[a.clone(), b.clone(), a.clone()], &[b, a.clone(), a], t, Samples::Runs);
            let _ = render(&rows, t, Samples::Runs);
        }

        /// Arbitrary bytes as a result file: no panic, and an error names the file.
        #[test]
        fn arbitrary_files(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let d = tempfile::tempdir().unwrap();
            let p = d.path().join("r.json");
            std::fs::write(&p, &bytes).unwrap();
            if let Err(e) = load(&p) {
                let msg = format!("{:#}", e);
                prop_assert!(msg.contains(&p.display().to_string()), "{}", msg);
            }
        }
    }
}

/// Reproduction 10: `--threshold nan` made every regression "no significant change".
#[test]
fn threshold_must_be_finite_and_positive() {
    let (_, v) = verdict(
        &[100.0, 102.0, 98.0],
        &[80.0, 79.0, 82.0],
        f64::NAN,
        Samples::Runs,
    );
    assert_eq!(v, Verdict::NoSignificantChange, "what NaN did");
    for bad in ["nan", "NaN", "inf", "-5", "0", "x", ""] {
        assert!(parse_threshold(bad).is_err(), "{bad}");
    }
    assert_eq!(parse_threshold("5").unwrap(), 5.0);
    assert_eq!(parse_threshold("0.5").unwrap(), 0.5);
}

/// Reproduction 10: a sub-directory named *.json aborted a directory compare.
#[test]
fn directories_are_skipped_when_pooling() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("a.json"),
        r#"{"tool":"memcgtest","scenarios":[]}"#,
    )
    .unwrap();
    std::fs::create_dir(d.path().join("old.json")).unwrap();
    let v = load(d.path()).unwrap();
    assert_eq!(v.len(), 1);
}

#[test]
fn a_clear_regression() {
    let (c, v) = verdict(
        &[100.0, 102.0, 98.0],
        &[80.0, 79.0, 82.0],
        5.0,
        Samples::Runs,
    );
    assert_eq!(v, Verdict::Regression);
    assert!((c + 20.0).abs() < 0.5, "{c}");
}

#[test]
fn a_noisy_no_change() {
    // The medians differ by 10%, but the sample sets overlap.
    let (_, v) = verdict(
        &[100.0, 60.0, 140.0],
        &[90.0, 130.0, 50.0],
        5.0,
        Samples::Runs,
    );
    assert_eq!(v, Verdict::NoSignificantChange);
    // Separated but tiny (3 v 3: enough samples to judge).
    let (_, v) = verdict(
        &[100.0, 101.0, 100.5],
        &[99.0, 98.5, 99.5],
        5.0,
        Samples::Runs,
    );
    assert_eq!(v, Verdict::NoSignificantChange);
}

#[test]
fn an_improvement() {
    let (_, v) = verdict(
        &[100.0, 101.0, 99.0],
        &[130.0, 128.0, 131.0],
        5.0,
        Samples::Runs,
    );
    assert_eq!(v, Verdict::Improvement);
}

#[test]
fn measurements_are_matched_by_scenario_and_name() {
    let base = serde_json::json!({"tool": "memcgtest", "scenarios": [
        {"name": "s", "measurements": [{"name": "baseline: write", "unit": "MB/s", "samples": [100.0, 101.0, 99.0]},
                                        {"name": "only-in-base", "unit": "MB/s", "samples": [1.0]}]}]});
    let new = serde_json::json!({"tool": "memcgtest", "scenarios": [
        {"name": "s", "measurements": [{"name": "baseline: write", "unit": "MB/s", "samples": [70.0, 71.0, 69.0]}]}]});
    let rows = compare_runs(&[base], &[new], 5.0, Samples::PooledRepetitions);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].verdict, Verdict::Regression);
    let text = render(&rows, 5.0, Samples::PooledRepetitions);
    assert!(text.contains("REGRESSION"));
    assert!(text.contains("1 regressions"));
    assert!(text.contains("not independent"), "{text}");
}

#[test]
fn too_few_samples_is_no_verdict() {
    // Halved, but one sample each: chance separates them half the time.
    let (c, v) = verdict(&[100.0], &[50.0], 5.0, Samples::Runs);
    assert_eq!(v, Verdict::TooFewSamples);
    assert!((c + 50.0).abs() < 1e-9, "{c}");
    // 2 v 4 separates by chance 1 time in 15: still too few; 2 v 5 (1 in 21) is judged.
    let base = [100.0, 101.0];
    let (_, v) = verdict(&base, &[50.0, 51.0, 52.0, 53.0], 5.0, Samples::Runs);
    assert_eq!(v, Verdict::TooFewSamples);
    let (_, v) = verdict(&base, &[50.0, 51.0, 52.0, 53.0, 54.0], 5.0, Samples::Runs);
    assert_eq!(v, Verdict::Regression);
    let (_, v) = verdict(&[], &[], 5.0, Samples::Runs);
    assert_eq!(v, Verdict::TooFewSamples);
    assert_eq!(
        serde_json::to_value(Verdict::TooFewSamples).unwrap(),
        "too-few-samples"
    );
}

#[test]
fn pooled_files_reach_a_verdict_single_files_cannot() {
    let file = |x: f64| {
        serde_json::json!({"tool": "memcgtest", "scenarios": [
            {"name": "s", "measurements": [{"name": "m", "unit": "MB/s", "samples": [x]}]}]})
    };
    let rows = compare_runs(&[file(100.0)], &[file(50.0)], 5.0, Samples::Runs);
    assert_eq!(rows[0].verdict, Verdict::TooFewSamples);
    let text = render(&rows, 5.0, Samples::PooledRepetitions);
    assert!(text.contains("too few samples (n=1 v n=1)"), "{text}");
    assert!(text.contains("0 regressions"), "{text}");
    let base = [file(100.0), file(101.0), file(102.0)];
    let new = [file(50.0), file(51.0), file(52.0)];
    let rows = compare_runs(&base, &new, 5.0, Samples::PooledRepetitions);
    assert_eq!((rows[0].base.len(), rows[0].new.len()), (3, 3));
    assert_eq!(rows[0].verdict, Verdict::Regression);
    assert!(!render(&rows, 5.0, Samples::Runs).contains("too few"));
}

/// A run is the unit: two single runs of five repetitions each, every repetition of the
/// second below every one of the first (what one busy run does), are too few runs for a
/// verdict by default; pooled, the same files call a regression (and say the samples are not
/// independent). Three runs a side, each its median, judge.
#[test]
fn a_run_not_a_repetition_is_a_sample() {
    let run = |xs: [f64; 5]| {
        serde_json::json!({"tool": "memcgtest", "scenarios": [
            {"name": "s", "measurements": [{"name": "m", "unit": "MB/s", "samples": xs}]}]})
    };
    let (a, b) = (
        run([100.0, 101.0, 99.0, 102.0, 98.0]),
        run([60.0, 61.0, 59.0, 62.0, 58.0]),
    );
    let rows = compare_runs(
        std::slice::from_ref(&a),
        std::slice::from_ref(&b),
        5.0,
        Samples::Runs,
    );
    assert_eq!(rows[0].verdict, Verdict::TooFewSamples);
    assert_eq!((rows[0].base.len(), rows[0].new.len()), (1, 1));
    let text = render(&rows, 5.0, Samples::Runs);
    assert!(text.contains("too few runs (n=1 v n=1)"), "{text}");
    assert!(text.contains("memcgtest ab"), "{text}");
    let rows = compare_runs(
        std::slice::from_ref(&a),
        std::slice::from_ref(&b),
        5.0,
        Samples::PooledRepetitions,
    );
    assert_eq!(rows[0].verdict, Verdict::Regression);
    let rows = compare_runs(
        &[a.clone(), a.clone(), a],
        &[b.clone(), b.clone(), b],
        5.0,
        Samples::Runs,
    );
    assert_eq!((rows[0].base.len(), rows[0].new.len()), (3, 3));
    assert_eq!(rows[0].verdict, Verdict::Regression);
}

/// Runs are independent: one outlier run of four a side no longer hides a real change (one
/// pair of 16 out of order happens by chance 2 times in 70); pooled repetitions still need
/// full separation.
#[test]
fn an_outlier_run_does_not_hide_a_regression() {
    let base = [100.0, 101.0, 102.0, 103.0];
    let (_, v) = verdict(&base, &[90.0, 91.0, 92.0, 100.5], 5.0, Samples::Runs);
    assert_eq!(v, Verdict::Regression);
    let (_, v) = verdict(
        &base,
        &[90.0, 91.0, 92.0, 100.5],
        5.0,
        Samples::PooledRepetitions,
    );
    assert_eq!(v, Verdict::NoSignificantChange);
    // Two out of order: 4/70, chance enough.
    let (_, v) = verdict(&base, &[90.0, 91.0, 101.5, 100.5], 5.0, Samples::Runs);
    assert_eq!(v, Verdict::NoSignificantChange);
}

#[test]
fn wall_times_are_shown_per_run_and_scenario() {
    let file = |run: f64, a: f64| {
        serde_json::json!({"tool": "memcgtest", "seconds": run, "scenarios": [
            {"name": "a", "seconds": a}, {"name": "only-here", "seconds": 1.0}]})
    };
    let old =
        serde_json::json!({"tool": "memcgtest", "scenarios": [{"name": "a", "seconds": 9.0}]});
    let c = costs(&[file(100.0, 10.0), file(110.0, 12.0)], &[file(90.0, 8.0)]);
    assert_eq!(c.len(), 3);
    assert_eq!((c[0].scenario.as_str(), c[0].base.len()), ("", 2));
    assert_eq!(c[1].base, [10.0, 12.0]);
    let text = render_costs(&c);
    assert!(text.contains("(whole run)"), "{text}");
    assert!(
        text.contains("105.0 s (2)") && text.contains("-14.3%"),
        "{text}"
    );
    // A file without the run's wall time (written before it was recorded) has the scenarios'.
    let c = costs(&[old], &[file(90.0, 8.0)]);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].scenario, "a");
    assert!(render_costs(&[]).is_empty());
}

#[test]
fn per_run_takes_each_files_median() {
    let file = |xs: &[f64]| {
        serde_json::json!({"tool": "memcgtest", "scenarios": [
            {"name": "s", "measurements": [{"name": "m", "unit": "MB/s", "samples": xs}]}]})
    };
    // One disturbed run: pooled, its samples overlap the new ones; per run it is one sample.
    let base = [
        file(&[100.0, 99.0, 101.0]),
        file(&[50.0, 52.0, 98.0]),
        file(&[102.0, 100.0, 100.0]),
    ];
    let new = [
        file(&[80.0, 81.0, 79.0]),
        file(&[80.0, 82.0, 78.0]),
        file(&[81.0, 80.0, 79.0]),
    ];
    assert_eq!(
        compare_runs(&base, &new, 5.0, Samples::PooledRepetitions)[0].verdict,
        Verdict::NoSignificantChange
    );
    let rows = compare_runs(&base, &new, 5.0, Samples::Runs);
    assert_eq!(rows[0].base, [100.0, 52.0, 100.0]);
    // Still no verdict: the disturbed run's median (52) lies below the new runs'.
    assert_eq!(rows[0].verdict, Verdict::NoSignificantChange);
    let base = [
        file(&[100.0, 99.0, 101.0]),
        file(&[60.0, 97.0, 98.0]),
        file(&[102.0, 100.0, 100.0]),
    ];
    let rows = compare_runs(&base, &new, 5.0, Samples::Runs);
    assert_eq!(rows[0].verdict, Verdict::Regression, "{rows:?}");
    // A measurement without samples is not there to compare.
    assert!(compare_runs(&[file(&[])], &new, 5.0, Samples::Runs).is_empty());
}

/// A result file of one measurement "m" of scenario "s" with these quiet and busy samples
/// (`busy_samples` omitted when there are none, as `run` writes it).
fn marked(quiet: &[f64], busy: &[f64]) -> serde_json::Value {
    let mut m = serde_json::json!({"name": "m", "unit": "MB/s", "samples": quiet});
    if !busy.is_empty() {
        m["busy_samples"] = serde_json::json!(busy);
    }
    serde_json::json!({"tool": "memcgtest", "scenarios": [{"name": "s", "measurements": [m]}]})
}

/// A run whose every repetition was busy gives no sample and is counted; the others judge.
#[test]
fn a_run_all_busy_is_left_out_and_counted() {
    let base = [
        marked(&[100.0, 101.0], &[]),
        marked(&[], &[20.0, 30.0, 40.0]),
        marked(&[102.0], &[1.0]),
        marked(&[99.0, 100.0], &[]),
    ];
    let new = [
        marked(&[70.0], &[]),
        marked(&[71.0], &[]),
        marked(&[69.0], &[]),
    ];
    let rows = compare_runs(&base, &new, 5.0, Samples::Runs);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].base, [100.5, 102.0, 99.5]);
    assert_eq!((rows[0].base_busy, rows[0].new_busy), (1, 0));
    assert_eq!(rows[0].verdict, Verdict::Regression);
    let text = render(&rows, 5.0, Samples::Runs);
    assert!(text.contains("100..102 (3, 1 busy)"), "{text}");
    assert!(
        text.contains("1 run left out in all (1 base, 0 new)"),
        "{text}"
    );
    let v = serde_json::to_value(&rows[0]).unwrap();
    assert_eq!(
        (v["base_busy"].as_u64(), v["new_busy"].as_u64()),
        (Some(1), Some(0))
    );
}

/// A run with some busy repetitions is the median of its quiet ones, not of all.
#[test]
fn a_runs_sample_is_the_median_of_its_quiet_repetitions() {
    let run = marked(&[100.0, 102.0], &[10.0, 11.0, 12.0]);
    let side = std::slice::from_ref(&run);
    let rows = compare_runs(side, side, 5.0, Samples::Runs);
    assert_eq!(rows[0].base, [101.0]);
    // A run is not left out for some busy repetitions.
    assert_eq!(rows[0].base_busy, 0);
}

/// Files written before busy samples were kept (no `busy_samples`) compare as before: nothing
/// left out, nothing said about it.
#[test]
fn files_without_busy_samples_behave_as_before() {
    let side = |x: f64| {
        [
            marked(&[x], &[]),
            marked(&[x + 1.0], &[]),
            marked(&[x + 2.0], &[]),
        ]
    };
    let rows = compare_runs(&side(100.0), &side(50.0), 5.0, Samples::Runs);
    assert_eq!((rows[0].base_busy, rows[0].new_busy), (0, 0));
    assert_eq!(rows[0].verdict, Verdict::Regression);
    let text = render(&rows, 5.0, Samples::Runs);
    assert!(text.contains("100..102 (3) "), "{text}");
    assert!(!text.contains("left out"), "{text}");
}

/// Two result sets measured on a busy machine throughout: a row per measurement, too few to
/// judge, why, and exit 0 (never "no measurement in common").
#[test]
fn all_busy_sets_are_too_few_not_an_error() {
    let side = [
        marked(&[], &[100.0]),
        marked(&[], &[101.0]),
        marked(&[], &[99.0]),
    ];
    for samples in [Samples::Runs, Samples::PooledRepetitions] {
        let rows = compare_runs(&side, &side, 5.0, samples);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].verdict, Verdict::TooFewSamples);
        assert!(rows[0].base.is_empty() && rows[0].new.is_empty());
        assert_eq!((rows[0].base_busy, rows[0].new_busy), (3, 3));
        assert_eq!(exit_code(&rows), Some(0));
        let text = render(&rows, 5.0, samples);
        assert!(text.contains(" -  "), "{text}");
        assert!(text.contains("6 "), "{text}");
    }
    let text = render(
        &compare_runs(&side, &side, 5.0, Samples::Runs),
        5.0,
        Samples::Runs,
    );
    assert!(
        text.contains("too few runs (n=0 v n=0; 3 base and 3 new runs left out: busy)"),
        "{text}"
    );
    assert!(
        text.contains("6 runs left out in all (3 base, 3 new)"),
        "{text}"
    );
    // One side quiet: the busy side's count alone.
    let quiet = [
        marked(&[1.0], &[]),
        marked(&[2.0], &[]),
        marked(&[3.0], &[]),
    ];
    let rows = compare_runs(&side, &quiet, 5.0, Samples::Runs);
    let text = render(&rows, 5.0, Samples::Runs);
    assert!(
        text.contains("too few runs (n=0 v n=3; 3 base runs left out: busy)"),
        "{text}"
    );
    // Scenarios whose measurements do not meet: no row, the caller's usage error.
    let other = serde_json::json!({"tool": "memcgtest", "scenarios": [{"name": "t",
        "measurements": [{"name": "m", "unit": "MB/s", "samples": [1.0]}]}]});
    assert_eq!(
        exit_code(&compare_runs(&side, &[other], 5.0, Samples::Runs)),
        None
    );
}

/// Pooled, each busy repetition is left out and counted.
#[test]
fn pooled_repetitions_leave_out_busy_samples() {
    let base = [marked(&[100.0, 101.0, 102.0], &[5.0, 6.0])];
    let new = [marked(&[50.0, 51.0, 52.0], &[200.0])];
    let rows = compare_runs(&base, &new, 5.0, Samples::PooledRepetitions);
    assert_eq!(rows[0].base, [100.0, 101.0, 102.0]);
    assert_eq!(rows[0].new, [50.0, 51.0, 52.0]);
    assert_eq!((rows[0].base_busy, rows[0].new_busy), (2, 1));
    assert_eq!(rows[0].verdict, Verdict::Regression);
    assert_eq!(exit_code(&rows), Some(1));
    let text = render(&rows, 5.0, Samples::PooledRepetitions);
    assert!(text.contains("(3, 2 busy)"), "{text}");
    assert!(
        text.contains("3 samples left out in all (2 base, 1 new)"),
        "{text}"
    );
}
