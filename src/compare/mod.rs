//! `memcgtest compare BASE NEW`: the measurements of two sets of result files (`run --format
//! json`, a file or a directory of them, e.g. the kernel before and after a patch series), side
//! by side. A run is the unit of independence: each file gives one sample per measurement, its
//! median (repetitions inside one run share what the machine did in those seconds, its memory
//! and cache state: they are not independent samples). `--pool-repetitions` pools them anyway,
//! and says so. Only repetitions measured while the machine was quiet count: a run whose every
//! repetition of a measurement was busy (a measurement's `busy_samples`) is left out of it, and
//! every row says how many were. The rule is lkp-tests':
//! a change counts only when the medians differ by more than the threshold AND the two sample
//! sets are apart: runs, being independent, by the rank-sum test at 5 % (`stats::rank_shift`:
//! so few pairs out of order that chance gives that few at most 5 % of the time; at 3 v 3 that
//! is full separation), pooled repetitions only when they separate fully (every new sample below
//! every base sample for a regression, above for an improvement); anything else is "no
//! significant change". Sample sets too small for separation to
//! mean anything (`stats::enough_samples`) get no verdict: "too few samples". Every measurement is
//! higher-is-better.

pub mod behaviour;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::model::error::exit;
use crate::model::stats::{self, Separation, median};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Regression,
    Improvement,
    NoSignificantChange,
    /// Neither pass nor failure: the sample sets are too small to judge.
    TooFewSamples,
    /// `ab` only: a change of the first set of rounds that the second set did not find again
    /// (see `ab::confirmed`): no change.
    NotRepeated,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Regression => "REGRESSION",
            Verdict::Improvement => "improvement",
            Verdict::NoSignificantChange => "no significant change",
            Verdict::TooFewSamples => "too few samples",
            Verdict::NotRepeated => "not repeated by the second set",
        }
    }

    /// A regression or an improvement.
    pub fn is_change(self) -> bool {
        matches!(self, Verdict::Regression | Verdict::Improvement)
    }
}

/// One measurement in both files.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub scenario: String,
    pub measurement: String,
    pub unit: String,
    /// The samples judged: a run's median each, or every quiet repetition pooled.
    pub base: Vec<f64>,
    pub new: Vec<f64>,
    /// The runs (pooled: samples) of each side left out because the machine was busy: a run
    /// whose every repetition of the measurement was, or a busy repetition.
    pub base_busy: usize,
    pub new_busy: usize,
    /// 0 for a side with no sample.
    pub base_median: f64,
    pub new_median: f64,
    /// Change of the median, percent of the base (0 when a side has no sample).
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

    /// "3 base runs", "1 new sample": `n` of them, `what` before the word.
    fn count(self, n: usize, what: &str) -> String {
        let w = self.word();
        format!("{n} {what}{}", if n == 1 { &w[..w.len() - 1] } else { w })
    }
}

/// Compares every measurement present in both sets of result files (with a sample in each,
/// quiet or busy), a sample per run or pooled; busy samples are left out and counted. A side
/// left with too few samples (none, when all were busy) gets "too few samples".
pub fn compare_runs(
    base: &[serde_json::Value],
    new: &[serde_json::Value],
    threshold_pct: f64,
    samples: Samples,
) -> Vec<Row> {
    let nm = gather(new, samples);
    let mut rows = Vec::new();
    for b in gather(base, samples) {
        let Some(n) = nm
            .iter()
            .find(|n| n.scenario == b.scenario && n.name == b.name)
        else {
            continue;
        };
        let (change, v) = verdict(&b.samples, &n.samples, threshold_pct, samples);
        rows.push(Row {
            base_median: median(&b.samples).unwrap_or(0.0),
            new_median: median(&n.samples).unwrap_or(0.0),
            scenario: b.scenario,
            measurement: b.name,
            unit: b.unit,
            base: b.samples,
            new: n.samples.clone(),
            base_busy: b.busy,
            new_busy: n.busy,
            change_pct: change,
            verdict: v,
        });
    }
    rows
}

/// The verdict column: "too few runs" (or samples) says the counts (base v new) and the runs
/// left out as busy.
fn verdict_text(r: &Row, samples: Samples) -> String {
    if r.verdict != Verdict::TooFewSamples {
        return r.verdict.as_str().to_string();
    }
    let busy = match (r.base_busy, r.new_busy) {
        (0, 0) => String::new(),
        (b, 0) => format!("; {} left out: busy", samples.count(b, "base ")),
        (0, n) => format!("; {} left out: busy", samples.count(n, "new ")),
        (b, n) => format!("; {b} base and {} left out: busy", samples.count(n, "new ")),
    };
    format!(
        "too few {} (n={} v n={}{busy})",
        samples.word(),
        r.base.len(),
        r.new.len()
    )
}

/// One measurement of one side: the samples judged and how many were left out as busy.
struct Gathered {
    scenario: String,
    name: String,
    unit: String,
    samples: Vec<f64>,
    busy: usize,
}

/// The numbers of a measurement's `key` (anything else in it is skipped).
fn numbers(m: &serde_json::Value, key: &str) -> Vec<f64> {
    m[key]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_f64())
        .collect()
}

/// The measurements of result files, each (scenario, name) once. Per run, a run's sample is
/// the median of its quiet samples (`samples`), and a run with busy ones only (`busy_samples`)
/// is left out and counted: runs are the independent unit (samples within one run share its
/// machine's load and its kernel's state, so an outlier run would make every one of its samples
/// an outlier), and the sample-size rule counts them. Pooled, every quiet sample of every run,
/// the busy ones counted. A measurement without any sample is not there.
fn gather(files: &[serde_json::Value], samples: Samples) -> Vec<Gathered> {
    let mut out: Vec<Gathered> = Vec::new();
    for s in files
        .iter()
        .flat_map(|v| v["scenarios"].as_array().into_iter().flatten())
    {
        let sc = s["name"].as_str().unwrap_or("?");
        for m in s["measurements"].as_array().into_iter().flatten() {
            let (quiet, busy) = (numbers(m, "samples"), numbers(m, "busy_samples"));
            if quiet.is_empty() && busy.is_empty() {
                continue;
            }
            let name = m["name"].as_str().unwrap_or("?");
            let i = match out.iter().position(|g| g.scenario == sc && g.name == name) {
                Some(i) => i,
                None => {
                    out.push(Gathered {
                        scenario: sc.to_string(),
                        name: name.to_string(),
                        unit: m["unit"].as_str().unwrap_or("").to_string(),
                        samples: Vec::new(),
                        busy: 0,
                    });
                    out.len() - 1
                }
            };
            let g = &mut out[i];
            match (samples, median(&quiet)) {
                (Samples::Runs, Some(x)) => g.samples.push(x),
                (Samples::Runs, None) => g.busy += 1,
                (Samples::PooledRepetitions, _) => {
                    g.samples.extend(quiet);
                    g.busy += busy.len();
                }
            }
        }
    }
    out
}

/// The exit code of a comparison: 1 on a regression, else 0 (too few samples, busy ones left
/// out, is no failure). None when the two sets have no measurement in common (different
/// scenarios): nothing was compared.
pub fn exit_code(rows: &[Row]) -> Option<u8> {
    if rows.is_empty() {
        return None;
    }
    Some(
        match rows.iter().any(|r| r.verdict == Verdict::Regression) {
            true => exit::FAIL,
            false => exit::OK,
        },
    )
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

/// A side's cell: the spread and count of its samples, and how many were left out as busy.
fn side_cell(v: &[f64], busy: usize) -> String {
    let lo = v.iter().cloned().reduce(f64::min);
    let hi = v.iter().cloned().reduce(f64::max);
    let spread = match lo.zip(hi) {
        Some((lo, hi)) => format!("{lo:.0}..{hi:.0}"),
        None => "-".into(),
    };
    match busy {
        0 => format!("{spread} ({})", v.len()),
        b => format!("{spread} ({}, {b} busy)", v.len()),
    }
}

/// The human table.
pub fn render(rows: &[Row], threshold_pct: f64, samples: Samples) -> String {
    let mut s = match samples {
        Samples::Runs => String::from(
            "one sample per run and measurement: the median of its quiet repetitions (a run, not a repetition, is independent of the others)\n",
        ),
        Samples::PooledRepetitions => String::from(
            "samples: every quiet repetition of every run, pooled (--pool-repetitions). Repetitions of one run share its machine's state and are not independent: the rule's 5 % chance of a false verdict is not 5 % here\n",
        ),
    };
    s += &format!(
        "{:<24} {:<34} {:>12} {:>12} {:>8}  {:<24} {:<24} verdict\n",
        "scenario",
        "measurement",
        "base",
        "new",
        "change",
        "base spread (n, busy)",
        "new spread (n, busy)"
    );
    for r in rows {
        let (b, n) = (!r.base.is_empty(), !r.new.is_empty());
        s += &format!(
            "{:<24} {:<34} {:>12} {:>12} {:>8}  {:<24} {:<24} {}\n",
            r.scenario,
            r.measurement,
            if b {
                format!("{:.0} {}", r.base_median, r.unit)
            } else {
                "-".into()
            },
            if n {
                format!("{:.0}", r.new_median)
            } else {
                "-".into()
            },
            if b && n {
                format!("{:+.1}%", r.change_pct)
            } else {
                "-".into()
            },
            side_cell(&r.base, r.base_busy),
            side_cell(&r.new, r.new_busy),
            verdict_text(r, samples)
        );
    }
    s + &summary(rows, threshold_pct, samples)
}

/// The lines under the table: how many were compared, regressed, not judged, left out as busy.
fn summary(rows: &[Row], threshold_pct: f64, samples: Samples) -> String {
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    let apart = match samples {
        Samples::Runs => format!(
            "the runs' medians apart by the rank-sum test: so few pairs out of order that chance gives that few at most {} % of the time",
            stats::MAX_CHANCE_PCT
        ),
        Samples::PooledRepetitions => "the sample sets separate".to_string(),
    };
    let mut s = format!(
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
    let b: usize = rows.iter().map(|r| r.base_busy).sum();
    let n: usize = rows.iter().map(|r| r.new_busy).sum();
    if b + n > 0 {
        s += &format!(
            "{} left out in all ({b} base, {n} new): measured while the machine was busy{}; they stay in the results as busy_samples, never judged\n",
            samples.count(b + n, ""),
            match samples {
                Samples::Runs =>
                    " (counted per measurement: a run whose every repetition of it was busy)",
                Samples::PooledRepetitions => "",
            }
        );
    }
    s
}

#[cfg(test)]
mod tests;
