//! Reporters. All consume one result model (`RunReport`): human text (default), KTAP as kselftest
//! emits it, one JSON document, JUnit XML (`junit`), KernelCI's KCIDB (`kcidb`) and an HTML page
//! (`html`). `--report DIR` writes all of them, each scenario's samples as CSV and its SVG
//! timeline. The VM host renders stdout and every file from the `RunReport` the guest's events
//! carry (see `vm::events`).

use std::path::Path;

use anyhow::{Context, Result};

use crate::model::Outcome;
use crate::model::record::{Machine, PhaseRecord, Record};
use crate::model::units::human_bytes;
use crate::model::{RunReport, ScenarioResult, Series, Stat, Status, Version};

pub mod env;
pub mod html;
pub mod junit;
pub mod kcidb;
pub mod progress;
pub mod svg;

pub use crate::model::Format;

/// The run's report in `format`.
pub fn render(rep: &RunReport, format: Format) -> String {
    match format {
        Format::Human => human(rep),
        Format::Ktap => ktap(rep),
        Format::Json => json(rep),
        Format::Junit => junit::render(rep),
        Format::Kcidb => kcidb::render(rep),
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
    // The invariants every scenario gets: those that held or could not be exercised in one line
    // each (their details are in the JSON and HTML reports), a failure in full.
    let implied = |o: Outcome| -> Vec<&str> {
        r.checks
            .iter()
            .filter(|c| c.implied && c.outcome == o)
            .map(|c| c.name.as_str())
            .collect()
    };
    let (held, idle) = (implied(Outcome::Pass), implied(Outcome::NotExercised));
    let noisy = implied(Outcome::Inconclusive);
    if !held.is_empty() {
        out.push(format!("invariants held: {}", held.join(", ")));
    }
    if !idle.is_empty() {
        out.push(format!(
            "invariants not exercised (their counters did not move): {}",
            idle.join(", ")
        ));
    }
    if !noisy.is_empty() {
        out.push(format!(
            "invariants inconclusive (the machine's other processes): {}",
            noisy.join(", ")
        ));
    }
    for c in shown_checks(r) {
        let tag = match c.outcome {
            Outcome::Pass => "ok  ",
            Outcome::Fail if c.known.is_some() => "KNOWN FAIL",
            Outcome::Fail => "FAIL",
            Outcome::NotExercised => "skip",
            Outcome::Inconclusive => "inconclusive",
        };
        out.push(format!("{tag} {}: {}", c.name, c.detail));
        if let Some(k) = &c.known {
            out.push(format!("       known issue: {}", k.describe()));
        }
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

/// The checks reports show one by one: every declared check, and an invariant when it failed
/// (the others are summed up in a line).
fn shown_checks(r: &ScenarioResult) -> impl Iterator<Item = &crate::model::CheckResult> {
    (r.checks.iter()).filter(|c| !c.implied || c.outcome == Outcome::Fail)
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
        "memcgtest: {} passed, {} failed, {} skipped, {} errors{}\n",
        t.passed,
        t.failed,
        t.skipped,
        t.errors,
        if t.known > 0 {
            format!(", {} known failures (exit 0 unless --strict)", t.known)
        } else {
            String::new()
        }
    );
    s
}

/// KTAP version 1, as kselftest prints it.
pub fn ktap(rep: &RunReport) -> String {
    let mut s = String::from("KTAP version 1\n");
    s += &format!("1..{}\n", rep.scenarios.len());
    s += &format!(
        "# memcgtest {} on Linux {}, cgroup layout {}\n",
        rep.version,
        ktap_text(&rep.environment.kernel),
        rep.environment.cgroup.layout
    );
    for (i, r) in rep.scenarios.iter().enumerate() {
        // Scenario names are [A-Za-z0-9_-] (the parser's rule); escaped all the same.
        let name = ktap_text(&r.name).replace('#', "_");
        for f in &r.fixes {
            s += &format!("# {name}: guards fix {}\n", ktap_text(&f.to_string()));
        }
        for l in detail_lines(r) {
            s += &format!("# {name}: {}\n", ktap_text(&l));
        }
        let n = i + 1;
        let one_line = ktap_text;
        s += &ktap_subtests(r);
        match r.status {
            Status::Pass => s += &format!("ok {n} {name}\n"),
            Status::Skip => s += &format!("ok {n} {name} # SKIP {}\n", one_line(&r.reason)),
            Status::Fail => {
                s += &format!("# {name}: failed: {}\n", one_line(&r.reason));
                s += &format!("not ok {n} {name}\n");
            }
            Status::Error => {
                s += &format!("# {name}: error: {}\n", one_line(&r.reason));
                s += &format!("not ok {n} {name}\n");
            }
            Status::Known => {
                s += &format!("# {name}: known failure: {}\n", one_line(&r.reason));
                s += &format!("not ok {n} {name} # XFAIL {}\n", one_line(&known_text(r)));
            }
        }
    }
    let t = &rep.totals;
    s += &format!(
        "# Totals: pass:{} fail:{} xfail:{} xpass:0 skip:{} error:{}\n",
        t.passed, t.failed, t.known, t.skipped, t.errors
    );
    s
}

/// The scenario's checks as KTAP subtests (indented two spaces, as the KTAP spec says): every declared check and
/// every failed invariant, `# SKIP` with its reason when it reached no verdict (not exercised,
/// or inconclusive on a busy machine), `# XFAIL` when a known issue. None when it has none.
fn ktap_subtests(r: &ScenarioResult) -> String {
    let shown: Vec<_> = shown_checks(r).collect();
    if shown.is_empty() {
        return String::new();
    }
    let mut s = format!("  KTAP version 1\n  1..{}\n", shown.len());
    for (i, c) in shown.iter().enumerate() {
        let (n, name) = (i + 1, ktap_text(&c.name).replace('#', "_"));
        s += &match c.outcome {
            Outcome::Pass => format!("  ok {n} {name}\n"),
            Outcome::NotExercised | Outcome::Inconclusive => {
                format!("  ok {n} {name} # SKIP {}\n", ktap_text(&c.detail))
            }
            Outcome::Fail => match &c.known {
                Some(k) => format!("  not ok {n} {name} # XFAIL {}\n", ktap_text(&k.describe())),
                None => format!("  not ok {n} {name}\n"),
            },
        };
    }
    s
}

/// The known issues a scenario's known failure matched, one line.
pub fn known_text(r: &ScenarioResult) -> String {
    let mut texts: Vec<String> = Vec::new();
    for k in r.checks.iter().filter_map(|c| c.known.as_ref()) {
        let d = k.describe();
        if !texts.contains(&d) {
            texts.push(d);
        }
    }
    texts.join("; ")
}

/// Text for one KTAP line: a line break becomes a space and other control characters are
/// escaped (a newline would start a forged line such as `ok 1 forged-pass`), so every line the
/// writer emits is its own.
pub fn ktap_text(x: &str) -> String {
    x.chars()
        .map(|c| {
            if c == '\n' || c == '\r' {
                " ".to_string()
            } else if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

pub fn json(rep: &RunReport) -> String {
    serde_json::to_string_pretty(rep).expect("results serialize") + "\n"
}

/// Writes results.ktap, results.json, results.xml (JUnit), kcidb.json, per scenario <name>.csv
/// and <name>.svg, and index.html. Scenarios without a record (a report read back from JSON) keep
/// the CSV already in `dir` and get their SVG's title re-rendered, so every file tells the same
/// status.
pub fn write_dir(rep: &RunReport, dir: &Path) -> Result<()> {
    let write = writer(dir)?;
    write("results.ktap", &ktap(rep))?;
    write("results.json", &json(rep))?;
    write("results.xml", &junit::render(rep))?;
    write("kcidb.json", &kcidb::render(rep))?;
    let svgs = write_samples(rep, dir, true)?;
    write("index.html", &html::render(rep, &svgs))?;
    Ok(())
}

/// Writes what a report's samples give: per scenario <name>.csv and, with `timelines`,
/// <name>.svg (see [`write_dir`]); a scenario without a record gets its timeline drawn from the
/// CSV already in `dir`. The guest of `memcgtest vm` writes the CSVs alone; the host draws the
/// timelines and renders every other file from the events it streamed (under TCG the guest took
/// about 40 s for a quick suite's whole directory, index.html alone 60 MB, and 10 s for the
/// timelines alone). Returns each scenario's SVG and whether it has a CSV.
pub fn write_samples(rep: &RunReport, dir: &Path, timelines: bool) -> Result<Vec<html::Files>> {
    let write = writer(dir)?;
    let mut svgs = Vec::new();
    for r in &rep.scenarios {
        let svg_name = format!("{}.svg", r.name);
        let csv_name = format!("{}.csv", r.name);
        let svg = match &r.record {
            Some(rec) => {
                write(&csv_name, &rec.series.to_csv())?;
                if timelines {
                    svg::timeline(r, rec)
                } else {
                    String::new()
                }
            }
            None if !timelines => String::new(),
            None => {
                let csv = std::fs::read_to_string(dir.join(&csv_name)).ok();
                match csv.map(|c| Series::from_csv(&c)) {
                    Some(Ok(series)) => {
                        svg::timeline(r, &of_samples(series, r, rep.environment.page_size))
                    }
                    other => {
                        if let Some(Err(e)) = other {
                            eprintln!("memcgtest: {}: {e}", dir.join(&csv_name).display());
                        }
                        std::fs::read_to_string(dir.join(&svg_name))
                            .map(|old| svg::retitle(&old, r))
                            .unwrap_or_default()
                    }
                }
            }
        };
        if !svg.is_empty() {
            write(&svg_name, &svg)?;
        }
        let csv = dir.join(format!("{}.csv", r.name)).exists();
        svgs.push(html::Files { svg, csv });
    }
    Ok(svgs)
}

/// What a timeline needs of a record, from a scenario's samples (its CSV read back) and result:
/// the series, the phases' times and the page size; nothing else is known.
fn of_samples(series: Series, r: &ScenarioResult, page_size: u64) -> Record {
    let machine = Machine {
        cpus: 1,
        page_size,
        node_drift_pages: 0,
        lru_gen: false,
        top_flushed: true,
    };
    let mut rec = Record::bare(series, machine, r.cgroup_version.unwrap_or(Version::V2));
    rec.phases = (r.phases.iter())
        .map(|p| PhaseRecord {
            name: p.measure.name.clone(),
            start: p.start,
            end: p.end,
            antagonists: p.antagonists.clone(),
            warmup: false,
            vmstat_start: Stat::default(),
            vmstat_end: Stat::default(),
        })
        .collect();
    rec
}

/// Creates `dir` and returns a function writing a named file in it.
fn writer(dir: &Path) -> Result<impl Fn(&str, &str) -> Result<()> + '_> {
    std::fs::create_dir_all(dir).with_context(|| format!("mkdir {}", dir.display()))?;
    Ok(move |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).with_context(|| format!("write {}", p.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::{check, report, result};

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
        // Every line is KTAP: a result, the plan, the header or a diagnostic (a subtest's
        // indented two spaces).
        for l in lines {
            let l = l.strip_prefix("  ").unwrap_or(l);
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

    /// Each check is a KTAP subtest of its scenario: one that reached no verdict is `# SKIP`
    /// with why (a passing scenario keeps its inconclusive rate visible), implied invariants only
    /// when they failed.
    #[test]
    fn checks_are_ktap_subtests() {
        let mut ratio = check("ratio(p: write a/b)", Outcome::Inconclusive);
        ratio.detail = "inconclusive: the machine was busy during 8 of 8 pairs".into();
        let mut held = check("hierarchy(a)", Outcome::Pass);
        held.implied = true;
        let mut r = result("a", Status::Pass, "ratio(p: write a/b) not judged");
        r.checks = vec![check("settles(a)", Outcome::Pass), ratio, held];
        let mut rep = report();
        rep.scenarios = vec![r];
        rep.count();
        let k = ktap(&rep);
        let want = "  KTAP version 1\n  1..2\n  ok 1 settles(a)\n  ok 2 ratio(p: write a/b) # SKIP inconclusive: the machine was busy during 8 of 8 pairs\nok 1 a\n";
        assert!(k.contains(want), "{k}");
        assert!(k.contains("inconclusive ratio(p: write a/b)"), "{k}");
        let x = junit::render(&rep);
        assert!(x.contains("type=\"inconclusive\""), "{x}");
    }

    /// A failed scenario that guards upstream fixes: KTAP, JUnit and KCIDB carry the tags, and
    /// the failure's message names them.
    #[test]
    fn fix_tags_reach_ktap_junit_and_kcidb() {
        let tag = crate::model::FixTag::parse(
            "8a8792f600ab (\"mm: memcg: fix memcg file_dirty numa stat\")",
        )
        .unwrap();
        let mut r = result("g", Status::Fail, "settles(a): 1 MiB");
        r.checks = vec![check("settles(a)", Outcome::Fail)];
        r.fixes = vec![tag];
        let mut rep = report();
        rep.scenarios = vec![r];
        rep.count();
        let k = ktap(&rep);
        assert!(
            k.contains(
                "# g: guards fix 8a8792f600ab (\"mm: memcg: fix memcg file_dirty numa stat\")"
            ),
            "{k}"
        );
        let x = junit::render(&rep);
        assert!(x.contains("name=\"fixes\""), "{x}");
        assert!(x.contains("[guards 8a8792f600ab"), "{x}");
        let c = kcidb::render(&rep);
        assert!(
            c.contains("\"fixes\": [\n") || c.contains("\"fixes\":["),
            "{c}"
        );
        assert!(c.contains("[guards 8a8792f600ab"), "{c}");
    }

    /// A known failure: KTAP `not ok N name # XFAIL <issue>`, counted as xfail; JUnit skips its
    /// check naming the issue; KCIDB has the issue and an incident on the check's test.
    #[test]
    fn a_known_failure_is_xfail_skipped_and_an_incident() {
        use crate::model::{KnownIssue, Release};
        let issue = KnownIssue {
            check: "limit-counters".into(),
            from: Release::parse("6.18").unwrap(),
            to: None,
            cgroup: None,
            text: "no failcnt".into(),
            link: Some("https://example.org/bug".into()),
            matches: None,
            borrowed_from: None,
        };
        let mut c = check("limit-counters(g)", Outcome::Fail);
        c.known = Some(issue.clone());
        let mut r = result("k", Status::Known, "limit-counters(g): 0");
        r.checks = vec![c];
        let mut rep = report();
        rep.scenarios = vec![r];
        rep.count();
        let k = ktap(&rep);
        assert!(
            k.contains("not ok 1 k # XFAIL no failcnt [kernels 6.18 on] (https://example.org/bug)"),
            "{k}"
        );
        assert!(
            k.contains("# Totals: pass:0 fail:0 xfail:1 xpass:0 skip:0 error:0"),
            "{k}"
        );
        assert!(k.contains("KNOWN FAIL limit-counters(g)"), "{k}");
        let x = junit::render(&rep);
        assert!(x.contains("known failure"), "{x}");
        assert!(!x.contains("<failure"), "{x}");
        let j: serde_json::Value = serde_json::from_str(&kcidb::render(&rep)).unwrap();
        assert_eq!(j["issues"][0]["report_url"], "https://example.org/bug");
        assert_eq!(j["incidents"][0]["present"], true);
        assert_eq!(j["incidents"][0]["issue_id"], j["issues"][0]["id"]);
    }

    /// Reproduction 6: a phase name or an `exercised` check's `what` with a newline forged KTAP
    /// lines. Whatever text reaches the writer, every line it emits is a KTAP line of its own.
    #[test]
    fn free_text_cannot_forge_ktap_lines() {
        let mut r = result("a", Status::Skip, "why\nok 1 forged-pass");
        r.notes.push("phase x\nok 1 forged-pass".into());
        r.notes.push("\r# forged directive".into());
        let mut rep = report();
        rep.scenarios = vec![r];
        let k = ktap(&rep);
        assert!(!k.lines().any(|l| l.starts_with("ok 1 forged")), "{k}");
        assert_eq!(k.lines().filter(|l| l.starts_with("ok ")).count(), 1, "{k}");
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]
            /// The KTAP writer over arbitrary names, reasons and notes: never a panic, every
            /// line is KTAP, exactly one result line per scenario.
            #[test]
            fn every_ktap_line_is_ktap(
                items in proptest::collection::vec(
                    (any::<String>(), 0..4u8, any::<String>(), any::<String>()), 0..5)
            ) {
                let env = crate::model::fixtures::env();
                let scenarios: Vec<ScenarioResult> = items
                    .iter()
                    .map(|(name, st, reason, note)| {
                        let status = [Status::Pass, Status::Fail, Status::Skip, Status::Error][*st as usize];
                        let mut r = result(name, status, reason);
                        r.notes.push(note.clone());
                        r
                    })
                    .collect();
                let n = scenarios.len();
                let started = chrono::Utc::now();
                let ids = kcidb::Ids::new("memcgtest", None, &env, started);
                let k = ktap(&RunReport::new(env, false, started, ids, scenarios));
                let mut results = 0;
                for l in k.lines() {
                    prop_assert!(
                        l.starts_with("ok ") || l.starts_with("not ok ") || l.starts_with("# ")
                            || l.starts_with("1..") || l == "KTAP version 1",
                        "{:?}", l
                    );
                    if l.starts_with("ok ") || l.starts_with("not ok ") {
                        results += 1;
                        // The description part holds no directive but the writer's own SKIP.
                        let desc = l.split(" # ").next().unwrap();
                        prop_assert!(!desc.contains('#'), "{:?}", l);
                    }
                }
                prop_assert_eq!(results, n);
            }
        }
    }

    #[test]
    fn json_reads_back_and_a_splat_fails_a_scenario_everywhere() {
        let mut rep: RunReport = serde_json::from_str(&json(&report())).unwrap();
        assert_eq!(rep.scenarios.len(), 3);
        rep.fail(&[("a".into(), "kernel WARNING during the scenario: x".into())]);
        assert_eq!(rep.totals.passed, 0);
        assert_eq!(rep.totals.failed, 2);
        assert!(ktap(&rep).contains("not ok 1 a"));
        assert!(junit::render(&rep).contains("kernel WARNING during the scenario"));
        assert!(kcidb::render(&rep).contains("\"FAIL\""));
        // Every file of the report dir is re-rendered from it; the SVG keeps its samples.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.svg"),
            "<svg x>\n<text x=\"90\" y=\"22\" font-size=\"16\">a <tspan>pass</tspan></text>\n<text x=\"90\" y=\"40\" fill=\"#444\">s</text>\n<line/>\n</svg>\n",
        )
        .unwrap();
        write_dir(&rep, dir.path()).unwrap();
        let svg = std::fs::read_to_string(dir.path().join("a.svg")).unwrap();
        assert!(
            svg.contains(">fail</tspan>")
                && svg.contains("kernel WARNING")
                && svg.contains("<line/>"),
            "{svg}"
        );
        let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
        assert!(html.contains("kernel WARNING during the scenario"));
        for f in ["results.ktap", "results.json", "results.xml", "kcidb.json"] {
            assert!(dir.path().join(f).exists(), "{f}");
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
