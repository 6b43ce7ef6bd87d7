//! Reporters. All consume one result model (`RunReport`): human text (default), KTAP as kselftest
//! emits it, and one JSON document. `--report DIR` writes KTAP, JSON and each scenario's samples
//! as CSV.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::check::Outcome;
use crate::env::EnvInfo;
use crate::runner::{ScenarioResult, Status};
use crate::units::human_bytes;

pub mod svg;

#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub errors: usize,
}

/// One run: the tool, the environment, every scenario's result.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub tool: &'static str,
    pub version: &'static str,
    pub environment: EnvInfo,
    pub quick: bool,
    pub scenarios: Vec<ScenarioResult>,
    pub totals: Totals,
}

impl RunReport {
    pub fn new(environment: EnvInfo, quick: bool, scenarios: Vec<ScenarioResult>) -> Self {
        let count = |s: Status| scenarios.iter().filter(|r| r.status == s).count();
        let totals = Totals {
            passed: count(Status::Pass),
            failed: count(Status::Fail),
            skipped: count(Status::Skip),
            errors: count(Status::Error),
        };
        RunReport {
            tool: "memcgtest",
            version: env!("CARGO_PKG_VERSION"),
            environment,
            quick,
            scenarios,
            totals,
        }
    }
}

/// Lines describing a scenario's measurements and checks (shared by human text and KTAP).
fn detail_lines(r: &ScenarioResult) -> Vec<String> {
    let mut out = Vec::new();
    for p in &r.phases {
        let mut l = format!("phase {:<12}", p.measure.name);
        if let Some(mbps) = p.measure.mb_per_s {
            l += &format!(
                " wrote {} in {:.2} s = {:.1} MB/s",
                human_bytes(p.measure.bytes as i64),
                p.measure.seconds,
                mbps
            );
        }
        l += &format!(" (phase {:.1} s)", p.measure.wall_seconds);
        if !p.antagonists.is_empty() {
            l += &format!(" with {}", p.antagonists.join(", "));
        }
        for (k, d) in &p.vmstat_delta {
            l += &format!(", {k} +{d}");
        }
        out.push(l);
    }
    for c in &r.checks {
        let tag = match c.outcome {
            Outcome::Pass => "ok  ",
            Outcome::Fail => "FAIL",
            Outcome::NotExercised => "skip",
        };
        out.push(format!("{tag} {}: {}", c.name, c.detail));
        if c.outcome == Outcome::Fail || c.outcome == Outcome::Pass {
            out.push(format!(
                "       actual {}, expected {}",
                c.actual, c.expected
            ));
        }
        if let Some(t) = &c.tolerance {
            out.push(format!("       tolerance: {t}"));
        }
    }
    out.extend(r.notes.iter().map(|n| format!("note: {n}")));
    out
}

/// Human-readable summary.
pub fn human(rep: &RunReport) -> String {
    let e = &rep.environment;
    let mut s = format!(
        "memcgtest {} on Linux {} ({} CPUs, {}), scratch {} ({})\n\n",
        rep.version,
        e.kernel,
        e.cpus,
        human_bytes(e.memory_bytes as i64),
        e.scratch.path.display(),
        e.scratch.fstype.as_deref().unwrap_or("?"),
    );
    for r in &rep.scenarios {
        s += &format!(
            "{:<24} {:<5} {:>7.1} s  cgroup {}{}\n",
            r.name,
            r.status.as_str().to_uppercase(),
            r.seconds,
            r.cgroup_version.map(|v| v.as_str()).unwrap_or("-"),
            if rep.quick { "  (quick)" } else { "" }
        );
        if !r.reason.is_empty() {
            s += &format!("  reason: {}\n", r.reason);
        }
        for l in detail_lines(r) {
            s += &format!("  {l}\n");
        }
        s.push('\n');
    }
    let t = &rep.totals;
    s += &format!(
        "memcgtest: {} passed, {} failed, {} skipped, {} errors\n",
        t.passed, t.failed, t.skipped, t.errors
    );
    s
}

/// KTAP version 1, as kselftest prints it.
pub fn ktap(rep: &RunReport) -> String {
    let mut s = String::from("KTAP version 1\n");
    s += &format!("1..{}\n", rep.scenarios.len());
    s += &format!(
        "# memcgtest {} on Linux {}, cgroup layout {}\n",
        rep.version, rep.environment.kernel, rep.environment.cgroup.layout
    );
    for (i, r) in rep.scenarios.iter().enumerate() {
        for l in detail_lines(r) {
            s += &format!("# {}: {l}\n", r.name);
        }
        let n = i + 1;
        let one_line = |x: &str| x.replace('\n', " ");
        match r.status {
            Status::Pass => s += &format!("ok {n} {}\n", r.name),
            Status::Skip => s += &format!("ok {n} {} # SKIP {}\n", r.name, one_line(&r.reason)),
            Status::Fail => {
                s += &format!("# {}: failed: {}\n", r.name, one_line(&r.reason));
                s += &format!("not ok {n} {}\n", r.name);
            }
            Status::Error => {
                s += &format!("# {}: error: {}\n", r.name, one_line(&r.reason));
                s += &format!("not ok {n} {}\n", r.name);
            }
        }
    }
    let t = &rep.totals;
    s += &format!(
        "# Totals: pass:{} fail:{} xfail:0 xpass:0 skip:{} error:{}\n",
        t.passed, t.failed, t.skipped, t.errors
    );
    s
}

pub fn json(rep: &RunReport) -> String {
    serde_json::to_string_pretty(rep).expect("results serialize") + "\n"
}

/// Writes results.ktap, results.json, and per scenario <name>.csv.
pub fn write_dir(rep: &RunReport, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("mkdir {}", dir.display()))?;
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).with_context(|| format!("write {}", p.display()))
    };
    write("results.ktap", &ktap(rep))?;
    write("results.json", &json(rep))?;
    for r in &rep.scenarios {
        if let Some(rec) = &r.record {
            write(&format!("{}.csv", r.name), &rec.series.to_csv())?;
            let svg = svg::timeline(r, rec);
            if !svg.is_empty() {
                write(&format!("{}.svg", r.name), &svg)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(name: &str, status: Status, reason: &str) -> ScenarioResult {
        ScenarioResult {
            name: name.into(),
            summary: "s".into(),
            status,
            reason: reason.into(),
            cgroup_version: Some(crate::cgroup::Version::V1),
            seconds: 1.0,
            samples: 0,
            phases: vec![],
            checks: vec![],
            notes: vec![],
            moves: vec![],
            measurements: vec![],
            record: None,
            error: None,
        }
    }

    fn report() -> RunReport {
        let env = crate::env::gather(
            crate::cgroup::detect::Choice::Auto,
            None,
            Path::new("/"),
            false,
        );
        RunReport::new(
            env,
            false,
            vec![
                result("a", Status::Pass, ""),
                result("b", Status::Fail, "x: 0.14 (expected >= 0.70)"),
                result("c", Status::Skip, "cannot verify\nmigration"),
            ],
        )
    }

    #[test]
    fn ktap_has_plan_results_and_skip_directive() {
        let k = ktap(&report());
        let lines: Vec<&str> = k.lines().collect();
        assert_eq!(lines[0], "KTAP version 1");
        assert_eq!(lines[1], "1..3");
        assert!(lines.contains(&"ok 1 a"));
        assert!(lines.contains(&"not ok 2 b"));
        assert!(lines.contains(&"ok 3 c # SKIP cannot verify migration"));
        assert!(k.contains("# Totals: pass:1 fail:1 xfail:0 xpass:0 skip:1 error:0"));
        // Every line is KTAP: a result, the plan, the header or a diagnostic.
        for l in lines {
            assert!(
                l.starts_with("ok ")
                    || l.starts_with("not ok ")
                    || l.starts_with("# ")
                    || l.starts_with("1..")
                    || l == "KTAP version 1",
                "{l}"
            );
        }
    }

    #[test]
    fn json_has_statuses_and_environment() {
        let v: serde_json::Value = serde_json::from_str(&json(&report())).unwrap();
        assert_eq!(v["scenarios"][1]["status"], "fail");
        assert_eq!(v["totals"]["skipped"], 1);
        assert!(v["environment"]["kernel"].is_string());
    }
}
