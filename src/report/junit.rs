//! JUnit XML (`--format junit`, results.xml), written with quick-junit: one testsuite per
//! scenario, one testcase per check. A failed check's message is its actual/expected line and its
//! system-out the check's details; a check that was not exercised is skipped with its reason. A
//! scenario whose status its checks do not explain (it could not run, it was stopped, a kernel
//! splat failed it in the VM) gets one more testcase named after the scenario, carrying that
//! status and the reason, so a consumer never shows green for a failed scenario.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use crate::model::RunReport;
use crate::model::{CheckResult, Outcome};
use crate::model::{ScenarioResult, Status};

/// The check's details: what was looked at, its tolerance.
fn details(c: &CheckResult) -> String {
    let mut s = c.detail.clone();
    if let Some(t) = &c.tolerance {
        s += &format!("\ntolerance: {t}");
    }
    s
}

fn check_case(r: &ScenarioResult, c: &CheckResult) -> TestCase {
    let line = format!("actual {}, expected {}", c.actual, c.expected);
    let status = match c.outcome {
        Outcome::Pass => TestCaseStatus::success(),
        Outcome::Fail if let Some(k) = &c.known => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!("known failure: {line}: {}", k.describe()))
                .set_type("known issue");
            s
        }
        Outcome::Fail => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(with_fixes(&line, r)).set_type("check failed");
            s
        }
        Outcome::NotExercised => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!("not exercised: {}", c.detail));
            s
        }
        // Its detail begins with "inconclusive:" or says every window was.
        Outcome::Inconclusive => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(c.detail.as_str()).set_type("inconclusive");
            s
        }
    };
    let mut tc = TestCase::new(c.name.as_str(), status);
    tc.set_classname(format!("memcgtest.{}", r.name));
    tc.set_system_out(format!("{line}\n{}", details(c)));
    tc
}

/// A failure's message, with the upstream fixes its scenario guards.
fn with_fixes(line: &str, r: &ScenarioResult) -> String {
    if r.fixes.is_empty() {
        return line.to_string();
    }
    format!("{line} [guards {}]", crate::model::join_fixes(&r.fixes))
}

/// The scenario's own testcase, when its status is not told by a check.
fn scenario_case(r: &ScenarioResult) -> Option<TestCase> {
    let has = |o: Outcome| r.checks.iter().any(|c| c.outcome == o);
    let status = match r.status {
        Status::Pass => return None,
        Status::Fail | Status::Known if has(Outcome::Fail) => return None,
        Status::Skip if has(Outcome::NotExercised) || has(Outcome::Inconclusive) => return None,
        Status::Fail => TestCaseStatus::non_success(NonSuccessKind::Failure),
        Status::Error => TestCaseStatus::non_success(NonSuccessKind::Error),
        Status::Skip | Status::Known => TestCaseStatus::skipped(),
    };
    let mut status = status;
    status.set_message(r.reason.as_str());
    let mut tc = TestCase::new(r.name.as_str(), status);
    tc.set_classname(format!("memcgtest.{}", r.name));
    tc.set_time(Duration::from_secs_f64(r.seconds.max(0.0)));
    Some(tc)
}

pub fn render(rep: &RunReport) -> String {
    let mut report = Report::new("memcgtest");
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(&rep.started) {
        report.set_timestamp(t);
    }
    let e = &rep.environment;
    for r in &rep.scenarios {
        let mut suite = TestSuite::new(r.name.as_str());
        suite.set_time(Duration::from_secs_f64(r.seconds.max(0.0)));
        suite.add_properties([
            Property::new("kernel", e.kernel.as_str()),
            Property::new(
                "cgroup",
                r.cgroup_version.map(|v| v.as_str()).unwrap_or("-"),
            ),
            Property::new("status", r.status.as_str()),
            Property::new("quick", rep.quick.to_string()),
        ]);
        suite.add_properties(
            r.fixes
                .iter()
                .map(|f| Property::new("fixes", f.to_string())),
        );
        suite.add_test_cases(r.checks.iter().map(|c| check_case(r, c)));
        suite.add_test_cases(scenario_case(r));
        let mut out = r.summary.clone();
        if !r.reason.is_empty() {
            out += &format!("\nreason: {}", r.reason);
        }
        for l in super::detail_lines(r) {
            out += &format!("\n{l}");
        }
        suite.set_system_out(out);
        report.add_test_suite(suite);
    }
    report.to_string().expect("JUnit XML serializes") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::{check, report};

    #[test]
    fn an_xml_parser_finds_one_testcase_per_check() {
        let mut rep = report();
        rep.scenarios[0].checks = vec![
            check("no-underflow(test)", Outcome::Pass),
            check("settles(test)", Outcome::Pass),
        ];
        rep.scenarios[1].checks = vec![
            check("ratio(after: write test/control)", Outcome::Fail),
            check("tracks-global(test)", Outcome::Pass),
        ];
        rep.scenarios[2].checks = vec![check("exercised(migrate)", Outcome::NotExercised)];
        let xml = render(&rep);
        let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "testsuites");
        let suites: Vec<_> = root
            .children()
            .filter(|n| n.has_tag_name("testsuite"))
            .collect();
        assert_eq!(suites.len(), 3);
        let cases: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .collect();
        let checks: usize = rep.scenarios.iter().map(|r| r.checks.len()).sum();
        assert_eq!(cases.len(), checks);
        assert_eq!(root.attribute("tests"), Some("5"));
        assert_eq!(root.attribute("failures"), Some("1"));
        // The failure's message is the actual/expected line; system-out has the details.
        let failed = cases
            .iter()
            .find(|c| c.attribute("name") == Some("ratio(after: write test/control)"))
            .unwrap();
        let failure = failed
            .children()
            .find(|n| n.has_tag_name("failure"))
            .unwrap();
        assert_eq!(
            failure.attribute("message"),
            Some("actual 0.1 <x>, expected >= 0.70")
        );
        let out = failed
            .children()
            .find(|n| n.has_tag_name("system-out"))
            .unwrap();
        assert!(out.text().unwrap().contains("tolerance: t & u"));
        assert_eq!(failed.attribute("classname"), Some("memcgtest.b"));
        let skipped = cases
            .iter()
            .find(|c| c.attribute("name") == Some("exercised(migrate)"))
            .unwrap();
        assert!(skipped.children().any(|n| n.has_tag_name("skipped")));
    }

    #[test]
    fn a_status_no_check_explains_gets_its_own_testcase() {
        let mut rep = report();
        // b failed without a failed check (a kernel splat in the VM), c skipped before any check.
        rep.scenarios[1].checks = vec![check("settles(test)", Outcome::Pass)];
        let xml = render(&rep);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let case = |name: &str| {
            doc.descendants()
                .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(name))
        };
        assert!(case("a").is_none(), "a passed: no extra testcase");
        let b = case("b").expect("b's own testcase");
        let f = b.children().find(|n| n.has_tag_name("failure")).unwrap();
        assert_eq!(f.attribute("message"), Some("x: 0.14 (expected >= 0.70)"));
        let c = case("c").expect("c's own testcase");
        assert!(c.children().any(|n| n.has_tag_name("skipped")));
    }
}
