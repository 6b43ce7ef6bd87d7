//! KernelCI's KCIDB I/O schema, version 5.3 (what kcidb-io's `LATEST` validates): one checkout
//! (the kernel release), one build (`--build-id`, by default the release and a hash of the
//! kernel's build string, `uname -v`), and tests: one per scenario (`memcgtest.<scenario>`) and
//! one per check (`memcgtest.<scenario>.<check>`, the check's arguments as a further path
//! component: `tracks-global(test)` becomes `tracks-global.test`). Statuses map pass/fail/skip/
//! error to PASS/FAIL/SKIP/ERROR (a check that was not exercised is SKIP). `misc` carries what was
//! measured: per check actual, expected, tolerance and details; per scenario the cgroup version,
//! the sample count, the phases' throughput (quiet repetitions) and the measurement sample sets
//! (`busy_samples` apart, as in results.json). A known failure (a
//! failed check a scenario's `[[known]]` entry expects) is FAIL with an issue (once per run) and
//! an incident on its test; a known issue whose checks passed gets an incident that is not
//! present.

use serde_json::{Value, json};

use crate::model::RunReport;
use crate::model::behaviour::Change;
pub use crate::model::kcidb::{DEFAULT_ORIGIN, Ids, valid_origin};
use crate::model::{CheckResult, KnownIssue, Outcome};
use crate::model::{ScenarioResult, Status};

pub const SCHEMA_MAJOR: u32 = 5;
pub const SCHEMA_MINOR: u32 = 3;
/// KCIDB's limit on a log excerpt.
const EXCERPT_MAX: usize = 16384;

/// A path component: `[a-zA-Z0-9_-]+`, everything else becomes `_` (runs of it one `_`).
pub fn component(s: &str) -> String {
    let mut out = String::new();
    for ch in s.chars() {
        if ch.is_ascii_alphanumeric() || ch == '-' || ch == '_' {
            out.push(ch);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_matches('_').to_string();
    if out.is_empty() { "_".into() } else { out }
}

/// The test path of a check: `tracks-global(test)` is `tracks-global.test`,
/// `ratio(after: write test/control)` is `ratio.after_write_test_control`.
pub fn check_path(scenario: &str, check: &str) -> String {
    let (base, args) = match check.split_once('(') {
        Some((b, rest)) => (b, Some(rest.trim_end_matches(')'))),
        None => (check, None),
    };
    let mut p = format!("memcgtest.{}.{}", component(scenario), component(base));
    if let Some(a) = args.filter(|a| !a.trim().is_empty()) {
        p += &format!(".{}", component(a));
    }
    p
}

/// A scenario's status in KCIDB.
pub fn status(s: Status) -> &'static str {
    match s {
        Status::Pass => "PASS",
        // A known failure is still a failure of the test; the issue and incident records say
        // it was expected.
        Status::Fail | Status::Known => "FAIL",
        Status::Skip => "SKIP",
        Status::Error => "ERROR",
    }
}

fn excerpt(s: &str) -> String {
    let s = s.replace('\0', "");
    if s.len() <= EXCERPT_MAX {
        return s;
    }
    let mut end = EXCERPT_MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

fn environment(rep: &RunReport, r: &ScenarioResult) -> Value {
    let e = &rep.environment;
    json!({
        "comment": format!(
            "cgroup {}, {} CPUs, {} MiB, scratch {}{}",
            r.cgroup_version.map(|v| v.as_str()).unwrap_or("-"),
            e.cpus,
            e.memory_bytes >> 20,
            e.scratch.fstype.as_deref().unwrap_or("?"),
            if rep.quick { ", quick" } else { "" }
        ),
        "misc": {
            "cgroup_layout": e.cgroup.layout,
            "cpus": e.cpus,
            "memory_bytes": e.memory_bytes,
            "page_size": e.page_size,
            "oracle": e.oracle.kind,
        },
    })
}

/// The upstream fixes the scenario guards, as `Fixes:` names them.
fn fix_strings(r: &ScenarioResult) -> Vec<String> {
    r.fixes.iter().map(|f| f.to_string()).collect()
}

fn check_test(rep: &RunReport, r: &ScenarioResult, c: &CheckResult, path: String) -> Value {
    let ids = &rep.kcidb;
    let mut t = json!({
        "id": format!("{}:{path}", ids.run_id),
        "build_id": ids.build_id,
        "origin": ids.origin,
        "path": path,
        "status": match c.outcome {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::NotExercised | Outcome::Inconclusive => "SKIP",
        },
        "start_time": rep.started,
        "comment": format!("{}: {}", c.name, c.detail),
        "environment": environment(rep, r),
        "misc": {
            "check": c.name,
            "actual": c.actual,
            "expected": c.expected,
            "tolerance": c.tolerance,
            "detail": c.detail,
            "at_seconds": c.at,
            "bound_bytes": c.bound,
            "fixes": fix_strings(r),
        },
    });
    if c.outcome == Outcome::Fail {
        let guards = match r.fixes.as_slice() {
            [] => String::new(),
            f => format!(" [guards {}]", crate::model::join_fixes(f)),
        };
        t["log_excerpt"] = excerpt(&format!(
            "{}: actual {}, expected {}{guards}\n",
            c.name, c.actual, c.expected
        ))
        .into();
    }
    strip_nulls(&mut t);
    t
}

fn scenario_test(rep: &RunReport, r: &ScenarioResult) -> Value {
    let ids = &rep.kcidb;
    let path = format!("memcgtest.{}", component(&r.name));
    let phases: Vec<Value> = r
        .phases
        .iter()
        .map(|p| {
            json!({
                "name": p.measure.name,
                "bytes": p.measure.bytes,
                "seconds": p.measure.seconds,
                "mb_per_s": p.measure.mb_per_s,
                "wall_seconds": p.measure.wall_seconds,
                "vmstat_delta": p.vmstat_delta.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
            })
        })
        .collect();
    let mut t = json!({
        "id": format!("{}:{path}", ids.run_id),
        "build_id": ids.build_id,
        "origin": ids.origin,
        "path": path,
        "status": status(r.status),
        "duration": r.seconds,
        "start_time": rep.started,
        "comment": r.summary,
        "environment": environment(rep, r),
        "misc": {
            "reason": r.reason,
            "cgroup_version": r.cgroup_version.map(|v| v.as_str()),
            "samples": r.samples,
            "phases": phases,
            "measurements": r.measurements,
            "notes": r.notes,
            "fixes": fix_strings(r),
        },
    });
    if !r.reason.is_empty() && r.status != Status::Pass {
        t["log_excerpt"] = excerpt(&format!("{}\n", r.reason)).into();
    }
    strip_nulls(&mut t);
    t
}

/// A known issue of scenario `r` as a KCIDB issue (once per run) and an incident on `test_id`:
/// present where it failed as expected, absent where its checks passed (fixed?).
fn known_records(
    rep: &RunReport,
    r: &ScenarioResult,
    k: &KnownIssue,
    test_id: &str,
    present: bool,
    issues: &mut Vec<Value>,
    incidents: &mut Vec<Value>,
) {
    let ids = &rep.kcidb;
    let issue_id = format!("{}:{}", ids.origin, k.id(&r.name));
    if !issues.iter().any(|i| i["id"] == issue_id.as_str()) {
        let mut issue = json!({
            "id": issue_id,
            "version": 1,
            "origin": ids.origin,
            "report_subject": k.text,
            "culprit": {"code": true, "tool": false, "harness": false},
            "comment": k.describe(),
            "misc": {"scenario": r.name, "check": k.check, "link": k.link},
        });
        if let Some(l) = k.link.as_ref().filter(|l| l.starts_with("http")) {
            issue["report_url"] = l.as_str().into();
        }
        strip_nulls(&mut issue);
        issues.push(issue);
    }
    incidents.push(json!({
        "id": format!("{test_id}:known"),
        "origin": ids.origin,
        "issue_id": issue_id,
        "issue_version": 1,
        "build_id": ids.build_id,
        "test_id": test_id,
        "present": present,
        "comment": if present { "a known failure" } else { "the known issue did not fail: fixed?" },
    }));
}

/// KCIDB properties cannot be null: drop them (recursively, in objects and arrays).
fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

pub fn render(rep: &RunReport) -> String {
    let ids = &rep.kcidb;
    let mut tests = Vec::new();
    let (mut issues, mut incidents) = (Vec::new(), Vec::new());
    for r in &rep.scenarios {
        tests.push(scenario_test(rep, r));
        let mut seen: Vec<String> = Vec::new();
        for c in &r.checks {
            let mut path = check_path(&r.name, &c.name);
            // Two checks whose names differ only in characters a path cannot hold.
            let base = path.clone();
            let mut n = 2;
            while seen.contains(&path) {
                path = format!("{base}_{n}");
                n += 1;
            }
            seen.push(path.clone());
            if let Some(k) = &c.known {
                let test_id = format!("{}:{path}", ids.run_id);
                known_records(rep, r, k, &test_id, true, &mut issues, &mut incidents);
            }
            tests.push(check_test(rep, r, c, path));
        }
        for k in &r.fixed {
            let test_id = format!("{}:memcgtest.{}", ids.run_id, component(&r.name));
            known_records(rep, r, k, &test_id, false, &mut issues, &mut incidents);
        }
    }
    let mut doc = document(rep, tests);
    if !issues.is_empty() {
        doc["issues"] = issues.into();
        doc["incidents"] = incidents.into();
    }
    serde_json::to_string_pretty(&doc).expect("KCIDB JSON serializes") + "\n"
}

/// The document of `tests` run on the kernel of `rep`: its checkout and build.
fn document(rep: &RunReport, tests: Vec<Value>) -> Value {
    let (ids, e) = (&rep.kcidb, &rep.environment);
    json!({
        "version": {"major": SCHEMA_MAJOR, "minor": SCHEMA_MINOR},
        "checkouts": [{
            "id": ids.checkout_id,
            "origin": ids.origin,
            "comment": format!("Linux {}", e.kernel),
            "misc": {"kernel_release": e.kernel},
        }],
        "builds": [{
            "id": ids.build_id,
            "checkout_id": ids.checkout_id,
            "origin": ids.origin,
            "architecture": component(&e.arch).to_lowercase().replace('-', "_"),
            "comment": format!("Linux {} {}", e.kernel, e.kernel_build),
            "misc": {"kernel_release": e.kernel, "kernel_build": e.kernel_build},
        }],
        "tests": tests,
    })
}

/// The behaviour comparison of an A/B (`ab --behaviour`) as tests of the new kernel (`rep`: a
/// run of it): `memcgtest.behaviour`, PASS when nothing of the `judged` observables changed,
/// else FAIL with `fail` (`--fail-on-change`) or DONE (a change is no failure of its own); and
/// one test per change, `memcgtest.behaviour.<scenario>.<phase>.<group>.<counter>`, with both
/// sides' values in `misc`.
pub fn behaviour(rep: &RunReport, changes: &[Change], judged: usize, fail: bool) -> String {
    let ids = &rep.kcidb;
    let verdict = match (changes.is_empty(), fail) {
        (true, _) => "PASS",
        (false, true) => "FAIL",
        (false, false) => "DONE",
    };
    let test = |path: String, status: &str, comment: String, misc: Value| {
        json!({
            "id": format!("{}:{path}", ids.run_id),
            "build_id": ids.build_id,
            "origin": ids.origin,
            "path": path,
            "status": status,
            "start_time": rep.started,
            "comment": comment,
            "misc": misc,
        })
    };
    let mut tests = vec![test(
        "memcgtest.behaviour".into(),
        verdict,
        format!(
            "{} of {judged} observables changed against the base kernel",
            changes.len()
        ),
        json!({"judged": judged, "changed": changes.len()}),
    )];
    for c in changes {
        let o = &c.what;
        let path = format!(
            "memcgtest.behaviour.{}.{}.{}.{}",
            component(&o.scenario),
            component(&o.phase),
            component(&o.group),
            component(&o.counter)
        );
        let misc = serde_json::to_value(c).expect("a change serializes");
        tests.push(test(path, verdict, c.line(), misc));
    }
    let mut doc = document(rep, tests);
    strip_nulls(&mut doc);
    serde_json::to_string_pretty(&doc).expect("KCIDB JSON serializes") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::{check, report};

    #[test]
    fn paths_are_kcidb_paths() {
        assert_eq!(
            check_path("dirty-migration", "tracks-global(test)"),
            "memcgtest.dirty-migration.tracks-global.test"
        );
        assert_eq!(
            check_path("reclaim", "ratio(after: write test/control)"),
            "memcgtest.reclaim.ratio.after_write_test_control"
        );
        assert_eq!(check_path("a", "settles"), "memcgtest.a.settles");
        let re = |p: &str| {
            p.split('.').all(|c| {
                !c.is_empty()
                    && c.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            })
        };
        assert!(re(&check_path("a b", "x(é: /)")));
    }

    #[test]
    fn a_test_per_scenario_and_per_check_with_mapped_statuses() {
        let mut rep = report();
        rep.scenarios[1].checks = vec![
            check("tracks-global(test)", Outcome::Fail),
            check("tracks-global(control)", Outcome::Pass),
        ];
        rep.scenarios[2].checks = vec![check("exercised(migrate)", Outcome::NotExercised)];
        let v: Value = serde_json::from_str(&render(&rep)).unwrap();
        assert_eq!(v["version"]["major"], 5);
        let tests = v["tests"].as_array().unwrap();
        assert_eq!(tests.len(), 3 + 3);
        let by_path = |p: &str| tests.iter().find(|t| t["path"] == p).unwrap();
        assert_eq!(by_path("memcgtest.a")["status"], "PASS");
        assert_eq!(by_path("memcgtest.b")["status"], "FAIL");
        assert_eq!(by_path("memcgtest.c")["status"], "SKIP");
        let f = by_path("memcgtest.b.tracks-global.test");
        assert_eq!(f["status"], "FAIL");
        assert_eq!(f["misc"]["actual"], "0.1 <x>");
        assert_eq!(by_path("memcgtest.c.exercised.migrate")["status"], "SKIP");
        assert_eq!(by_path("memcgtest.a")["duration"], 1.0);
        // Ids: unique, with an origin; tests point at the build, the build at the checkout.
        let mut ids: Vec<&str> = tests.iter().map(|t| t["id"].as_str().unwrap()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), tests.len());
        assert_eq!(tests[0]["build_id"], v["builds"][0]["id"]);
        assert_eq!(v["builds"][0]["checkout_id"], v["checkouts"][0]["id"]);
        let checkout = v["checkouts"][0]["id"].as_str().unwrap();
        assert_eq!(checkout, format!("memcgtest:{}", rep.environment.kernel));
        // No nulls anywhere in the tests' misc (KCIDB forbids them).
        assert!(!render(&rep).contains("null"));
    }

    /// The behaviour comparison of an A/B: a summary test and one per change, DONE unless the
    /// A/B fails on a change (FAIL); nothing changed is PASS; no null in the document.
    #[test]
    fn behaviour_changes_are_tests_of_the_new_kernel() {
        let rep = report();
        let c = crate::model::fixtures::percpu_change(&[8; 3], &[4; 3]);
        let doc = |changes: &[Change], fail: bool| -> Value {
            serde_json::from_str(&behaviour(&rep, changes, 100, fail)).unwrap()
        };
        let v = doc(std::slice::from_ref(&c), false);
        let tests = v["tests"].as_array().unwrap();
        assert_eq!(tests.len(), 2);
        assert_eq!(tests[0]["path"], "memcgtest.behaviour");
        assert_eq!(tests[0]["status"], "DONE");
        assert_eq!(
            tests[1]["path"],
            "memcgtest.behaviour.kernel-memory.groups.parent.percpu"
        );
        assert_eq!(tests[1]["misc"]["kind"], "shifted");
        assert_eq!(tests[1]["build_id"], v["builds"][0]["id"]);
        assert_eq!(doc(&[c], true)["tests"][1]["status"], "FAIL");
        assert_eq!(doc(&[], false)["tests"][0]["status"], "PASS");
        assert!(!behaviour(&rep, &[], 0, false).contains("null"));
    }

    #[test]
    fn build_ids_take_the_origin() {
        let rep = report();
        let t = chrono::Utc::now();
        let e = &rep.environment;
        assert_eq!(Ids::new("ci", Some("b1"), e, t).build_id, "ci:b1");
        assert_eq!(Ids::new("ci", Some("lab:b1"), e, t).build_id, "lab:b1");
        let d = Ids::new("ci", None, e, t);
        assert!(d.build_id.starts_with(&format!("ci:{}-", e.kernel)));
        assert!(d.run_id.starts_with(&d.build_id));
        assert!(valid_origin("memcgtest") && !valid_origin("Mem-cg") && !valid_origin(""));
    }
}
