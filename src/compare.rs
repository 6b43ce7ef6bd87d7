//! `memcgtest compare BASE NEW`: the measurements of two sets of result files (`run --format
//! json`, a file or a directory of them, e.g. the kernel before and after a patch series), side
//! by side. A run is the unit of independence: each file gives one sample per measurement, its
//! median (repetitions inside one run share what the machine did in those seconds, its memory
//! and cache state: they are not independent samples). `--pool-repetitions` pools them anyway,
//! and says so. The rule is lkp-tests':
//! a change counts only when the medians differ by more than the threshold AND the two sample
//! sets are apart: runs, being independent, by the rank-sum test at 5 % (`stats::rank_shift`:
//! so few pairs out of order that chance gives that few at most 5 % of the time; at 3 v 3 that
//! is full separation), pooled repetitions only when they separate fully (every new sample below
//! every base sample for a regression, above for an improvement); anything else is "no
//! significant change". Sample sets too small for separation to
//! mean anything (`stats::enough_samples`) get no verdict: "too few samples". Every measurement is
//! higher-is-better.

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::model::stats::{self, Separation, median};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Regression,
    Improvement,
    NoSignificantChange,
    /// Neither pass nor failure: the sample sets are too small to judge.
    TooFewSamples,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Regression => "REGRESSION",
            Verdict::Improvement => "improvement",
            Verdict::NoSignificantChange => "no significant change",
            Verdict::TooFewSamples => "too few samples",
        }
    }
}

/// One measurement in both files.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub scenario: String,
    pub measurement: String,
    pub unit: String,
    pub base: Vec<f64>,
    pub new: Vec<f64>,
    pub base_median: f64,
    pub new_median: f64,
    /// Change of the median, percent of the base.
    pub change_pct: f64,
    pub verdict: Verdict,
}

/// The change of the median in percent and the verdict for two sample sets of a
/// higher-is-better quantity: runs are independent and get the rank-sum test, pooled
/// repetitions only full separation (see `stats::rank_shift`).
pub fn verdict(base: &[f64], new: &[f64], threshold_pct: f64, samples: Samples) -> (f64, Verdict) {
    let (b, n) = (median(base).unwrap_or(0.0), median(new).unwrap_or(0.0));
    let change = if b > 0.0 { (n - b) / b * 100.0 } else { 0.0 };
    let shift = match samples {
        Samples::Runs => stats::rank_shift(base, new),
        Samples::PooledRepetitions => stats::separation(base, new),
    };
    let v = match shift {
        Separation::TooFewSamples => Verdict::TooFewSamples,
        Separation::Worse if b > 0.0 && change <= -threshold_pct => Verdict::Regression,
        Separation::Better if b > 0.0 && change >= threshold_pct => Verdict::Improvement,
        _ => Verdict::NoSignificantChange,
    };
    (change, v)
}

/// What a sample of a comparison is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Samples {
    /// One per run (result file): its median. The default.
    Runs,
    /// Every repetition of every run, pooled (`--pool-repetitions`): not independent.
    PooledRepetitions,
}

impl Samples {
    fn word(self) -> &'static str {
        match self {
            Samples::Runs => "runs",
            Samples::PooledRepetitions => "samples",
        }
    }
}

/// Compares the measurements of two sets of result files, a sample per run or pooled.
pub fn compare_runs(
    base: &[serde_json::Value],
    new: &[serde_json::Value],
    threshold_pct: f64,
    samples: Samples,
) -> Vec<Row> {
    match samples {
        Samples::Runs => compare(&per_run(base), &per_run(new), threshold_pct, samples),
        Samples::PooledRepetitions => compare(base, new, threshold_pct, samples),
    }
}

/// The verdict column: "too few runs" (or samples) says the counts (base v new).
fn verdict_text(r: &Row, samples: Samples) -> String {
    match r.verdict {
        Verdict::TooFewSamples => format!(
            "too few {} (n={} v n={})",
            samples.word(),
            r.base.len(),
            r.new.len()
        ),
        v => v.as_str().to_string(),
    }
}

/// The numbers of a measurement's `samples` (anything else in it is skipped).
fn samples(m: &serde_json::Value) -> Vec<f64> {
    m["samples"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_f64())
        .collect()
}

/// (scenario, measurement name, unit, samples) of result files; the samples of the same
/// measurement in several files are pooled.
fn measurements(files: &[serde_json::Value]) -> Vec<(String, String, String, Vec<f64>)> {
    let mut out: Vec<(String, String, String, Vec<f64>)> = Vec::new();
    for s in files
        .iter()
        .flat_map(|v| v["scenarios"].as_array().into_iter().flatten())
    {
        let sc = s["name"].as_str().unwrap_or("?").to_string();
        for m in s["measurements"].as_array().into_iter().flatten() {
            let samples = samples(m);
            if samples.is_empty() {
                continue;
            }
            let name = m["name"].as_str().unwrap_or("?").to_string();
            match out.iter_mut().find(|(s, n, _, _)| *s == sc && *n == name) {
                Some(e) => e.3.extend(samples),
                None => out.push((
                    sc.clone(),
                    name,
                    m["unit"].as_str().unwrap_or("").to_string(),
                    samples,
                )),
            }
        }
    }
    out
}

/// `--threshold`: a finite percentage above 0 (NaN would make every comparison false and
/// disable regression detection silently).
pub fn parse_threshold(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("not a number: {s:?}"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("{s:?} must be a finite percentage above 0"));
    }
    Ok(v)
}

/// Reads a result file written by `memcgtest run --format json`, or every *.json file of a
/// directory (repeated runs whose samples are pooled).
pub fn load(path: &std::path::Path) -> Result<Vec<serde_json::Value>> {
    if path.is_dir() {
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("read {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            // Only regular files are pooled: a sub-directory (or a FIFO) named *.json is skipped.
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
            .collect();
        files.sort();
        if files.is_empty() {
            bail!("{}: no .json result files", path.display());
        }
        return files.iter().map(|f| load_file(f)).collect();
    }
    Ok(vec![load_file(path)?])
}

fn load_file(path: &std::path::Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not JSON (write it with memcgtest run --format json)",
            path.display()
        )
    })?;
    if v.get("tool").and_then(|t| t.as_str()) != Some("memcgtest") {
        bail!(
            "{}: not a memcgtest result file (no \"tool\": \"memcgtest\")",
            path.display()
        );
    }
    Ok(v)
}

/// The result files with each measurement's samples replaced by their median: one sample per
/// run. Runs are the independent unit when they are separate boots or separate hours: samples
/// within one run share its machine's load and its kernel's state, so an outlier run would make
/// every one of its samples an outlier. Pooled this way, the sample-size rule counts runs.
pub fn per_run(files: &[serde_json::Value]) -> Vec<serde_json::Value> {
    let mut out = files.to_vec();
    for f in &mut out {
        let scenarios = f.get_mut("scenarios").and_then(|s| s.as_array_mut());
        for s in scenarios.into_iter().flatten() {
            let measurements = s.get_mut("measurements").and_then(|m| m.as_array_mut());
            for m in measurements.into_iter().flatten() {
                let one = match median(&samples(m)) {
                    Some(x) => serde_json::json!([x]),
                    None => serde_json::json!([]),
                };
                if let Some(o) = m.as_object_mut() {
                    o.insert("samples".into(), one);
                }
            }
        }
    }
    out
}

/// Compares every measurement present in both results.
pub fn compare(
    base: &[serde_json::Value],
    new: &[serde_json::Value],
    threshold_pct: f64,
    samples: Samples,
) -> Vec<Row> {
    let nm = measurements(new);
    let mut rows = Vec::new();
    for (sc, name, unit, b) in measurements(base) {
        let Some((_, _, _, n)) = nm.iter().find(|(s, m, _, _)| *s == sc && *m == name) else {
            continue;
        };
        let (change, v) = verdict(&b, n, threshold_pct, samples);
        rows.push(Row {
            scenario: sc,
            measurement: name,
            unit,
            base_median: median(&b).unwrap_or(0.0),
            new_median: median(n).unwrap_or(0.0),
            base: b,
            new: n.clone(),
            change_pct: change,
            verdict: v,
        });
    }
    rows
}

/// The wall time of the whole run or of one scenario in both result sets: the suite's own cost
/// across memcgtest versions (or kernels). Lower is better; shown, never judged.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    /// "" for the whole run, else the scenario.
    pub scenario: String,
    pub base: Vec<f64>,
    pub new: Vec<f64>,
}

/// (scenario or "" for the run, seconds) of every result file; files written before wall
/// times were recorded have none for the run.
fn seconds(files: &[serde_json::Value]) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for f in files {
        if let Some(s) = f["seconds"].as_f64().filter(|s| *s > 0.0) {
            out.push((String::new(), s));
        }
        for s in f["scenarios"].as_array().into_iter().flatten() {
            if let (Some(n), Some(t)) = (s["name"].as_str(), s["seconds"].as_f64()) {
                out.push((n.to_string(), t));
            }
        }
    }
    out
}

/// The wall times present in both result sets, the run first.
pub fn costs(base: &[serde_json::Value], new: &[serde_json::Value]) -> Vec<Cost> {
    let (b, n) = (seconds(base), seconds(new));
    let mut out: Vec<Cost> = Vec::new();
    for (name, _) in &b {
        if out.iter().any(|c| c.scenario == *name) || !n.iter().any(|(m, _)| m == name) {
            continue;
        }
        let of = |v: &[(String, f64)]| v.iter().filter(|(m, _)| m == name).map(|x| x.1).collect();
        out.push(Cost {
            scenario: name.clone(),
            base: of(&b),
            new: of(&n),
        });
    }
    out.sort_by_key(|c| !c.scenario.is_empty());
    out
}

/// The cost table: median seconds per side and the change.
pub fn render_costs(costs: &[Cost]) -> String {
    if costs.is_empty() {
        return String::new();
    }
    let mut s = "\nthe suite's own cost (wall time, seconds; lower is better; shown, not judged)\n"
        .to_string();
    for c in costs {
        let (b, n) = (
            median(&c.base).unwrap_or(0.0),
            median(&c.new).unwrap_or(0.0),
        );
        let change = if b > 0.0 { (n - b) / b * 100.0 } else { 0.0 };
        s += &format!(
            "{:<24} {:>9.1} s ({}) {:>9.1} s ({}) {:>+7.1}%\n",
            if c.scenario.is_empty() {
                "(whole run)"
            } else {
                &c.scenario
            },
            b,
            c.base.len(),
            n,
            c.new.len(),
            change
        );
    }
    s
}

/// The human table.
pub fn render(rows: &[Row], threshold_pct: f64, samples: Samples) -> String {
    let spread = |v: &[f64]| {
        let lo = v.iter().cloned().fold(f64::MAX, f64::min);
        let hi = v.iter().cloned().fold(f64::MIN, f64::max);
        format!("{lo:.0}..{hi:.0}")
    };
    let mut s = match samples {
        Samples::Runs => String::from(
            "one sample per run and measurement: its median (a run, not a repetition, is independent of the others)\n",
        ),
        Samples::PooledRepetitions => String::from(
            "samples: every repetition of every run, pooled (--pool-repetitions). Repetitions of one run share its machine's state and are not independent: the rule's 5 % chance of a false verdict is not 5 % here\n",
        ),
    };
    s += &format!(
        "{:<24} {:<34} {:>12} {:>12} {:>8}  {:<21} {:<21} verdict\n",
        "scenario", "measurement", "base", "new", "change", "base spread (n)", "new spread (n)"
    );
    for r in rows {
        s += &format!(
            "{:<24} {:<34} {:>12} {:>12} {:>+7.1}%  {:<21} {:<21} {}\n",
            r.scenario,
            r.measurement,
            format!("{:.0} {}", r.base_median, r.unit),
            format!("{:.0}", r.new_median),
            r.change_pct,
            format!("{} ({})", spread(&r.base), r.base.len()),
            format!("{} ({})", spread(&r.new), r.new.len()),
            verdict_text(r, samples)
        );
    }
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    let apart = match samples {
        Samples::Runs => format!(
            "the runs' medians apart by the rank-sum test: so few pairs out of order that chance gives that few at most {} % of the time",
            stats::MAX_CHANCE_PCT
        ),
        Samples::PooledRepetitions => "the sample sets separate".to_string(),
    };
    s += &format!(
        "\n{} measurements compared; {} regressions (rule: median change beyond {threshold_pct}% and {apart})\n",
        rows.len(),
        count(Verdict::Regression)
    );
    let few = count(Verdict::TooFewSamples);
    if few > 0 {
        s += &format!(
            "{few} not judged: too few {} (a verdict needs sets that separate by chance at most {} % of the time, 1 / C(n+m, n): at least 3 v 3). {}\n",
            samples.word(),
            stats::MAX_CHANCE_PCT,
            match samples {
                Samples::Runs =>
                    "Run each kernel at least 3 times and compare the directories of results (memcgtest compare BASE_DIR NEW_DIR), or let memcgtest ab boot the two kernels alternately",
                Samples::PooledRepetitions => "Raise the scenario's repeat, or repeat the runs",
            }
        );
    }
    s
}

#[cfg(test)]
mod tests {
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
                    proptest::collection::vec(inner.clone(), 0..6)
                        .prop_map(serde_json::Value::from),
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
                let rows = compare(std::slice::from_ref(&a), std::slice::from_ref(&b), t, Samples::PooledRepetitions);
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
        let rows = compare(&[base], &[new], 5.0, Samples::PooledRepetitions);
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
        let rows = compare(&[file(100.0)], &[file(50.0)], 5.0, Samples::Runs);
        assert_eq!(rows[0].verdict, Verdict::TooFewSamples);
        let text = render(&rows, 5.0, Samples::PooledRepetitions);
        assert!(text.contains("too few samples (n=1 v n=1)"), "{text}");
        assert!(text.contains("0 regressions"), "{text}");
        let base = [file(100.0), file(101.0), file(102.0)];
        let new = [file(50.0), file(51.0), file(52.0)];
        let rows = compare(&base, &new, 5.0, Samples::PooledRepetitions);
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
            compare(&base, &new, 5.0, Samples::PooledRepetitions)[0].verdict,
            Verdict::NoSignificantChange
        );
        let rows = compare(&per_run(&base), &per_run(&new), 5.0, Samples::Runs);
        assert_eq!(rows[0].base, [100.0, 52.0, 100.0]);
        // Still no verdict: the disturbed run's median (52) lies below the new runs'.
        assert_eq!(rows[0].verdict, Verdict::NoSignificantChange);
        let base = [
            file(&[100.0, 99.0, 101.0]),
            file(&[60.0, 97.0, 98.0]),
            file(&[102.0, 100.0, 100.0]),
        ];
        let rows = compare(&per_run(&base), &per_run(&new), 5.0, Samples::Runs);
        assert_eq!(rows[0].verdict, Verdict::Regression, "{rows:?}");
        assert_eq!(
            per_run(&[file(&[])])[0]["scenarios"][0]["measurements"][0]["samples"],
            serde_json::json!([])
        );
    }
}
