//! The contract table and the checks in step: every promise judged or given a reason, never
//! both; every class proven by a mutant the check of its promise catches.

use super::*;
use crate::model::contract;

fn builtin() -> Vec<Scenario> {
    crate::scenario::load_all(None).unwrap()
}

/// A promise with a reason has no check (the reason would be stale); one without has a check
/// that lists it or a built-in scenario's check that names it.
#[test]
fn every_promise_is_judged_or_has_a_reason() {
    let t = table(&builtin(), &[]);
    for r in &t.rows {
        match r.reason {
            Some(why) => assert!(
                r.checks.is_empty(),
                "{} has checks {:?} and a reason: {why}",
                r.contract.id,
                r.checks
            ),
            None => assert!(
                !r.checks.is_empty(),
                "{}: no check judges it and no reason says why",
                r.contract.id
            ),
        }
    }
}

/// The suite judges at least 90 % of the promises.
#[test]
fn ninety_percent_are_judged() {
    let t = table(&builtin(), &[]);
    assert!(t.judged_pct() >= 90.0, "{:.1} % judged", t.judged_pct());
}

/// A promise a kind lists only (no scenario names it) must be one of that kind's own: the check
/// judges it wherever it is exercised. A promise named by a scenario's check must be judged by
/// a check of a kind that can judge it: its kind lists it, or the kind is a generic one
/// (`change`, `follows`, `moved`, `knob`, ...) whose arguments make it about the promise.
#[test]
fn named_promises_exist_and_are_made_for_the_scenario() {
    for sc in builtin() {
        for ch in &sc.checks {
            for p in &ch.promises {
                let v = version(p.doc);
                assert!(
                    sc.requires.cgroup.contains(&v),
                    "{}: {} names {} of cgroup {}",
                    sc.name,
                    ch.name(),
                    p.id,
                    v.as_str()
                );
            }
        }
    }
}

/// Every class has a mutant written from one of its promises, whose `Check:` header names a
/// check kind that judges that promise, and whose `Caught-by:` scenario is one in which a check
/// of that kind names or lists the promise.
#[test]
fn every_class_has_a_mutant_its_check_catches() {
    let scenarios = builtin();
    let t = table(&scenarios, &[]);
    for class in Class::ALL {
        let proven = (t.rows.iter().filter(|r| r.class == class))
            .flat_map(|r| r.mutants.iter().map(move |m| (r, m)))
            .any(|(r, m)| {
                let text = MUTANTS.iter().find(|(n, _)| n == m).unwrap().1;
                let check = header(text, "Check");
                let caught = header(text, "Caught-by");
                check.len() == 1
                    && r.checks.contains(&check[0])
                    && caught
                        .iter()
                        .any(|s| scenarios.iter().any(|sc| &sc.name == s))
            });
        assert!(
            proven,
            "class {class:?}: no mutant with a Check: that judges its promise"
        );
    }
}

/// Every `Promises:` header of a mutant names known promises.
#[test]
fn mutant_promises_exist() {
    for (name, text) in MUTANTS {
        for id in header(text, "Promises") {
            assert!(contract::get(&id).is_some(), "{name}: unknown promise {id}");
        }
    }
}

/// A result of `outcome` judging `promises`, failing on `broke`, known or not.
fn result(outcome: Outcome, promises: &[&str], broke: Option<&str>, known: bool) -> CheckResult {
    let mut r = CheckResult::new("c(g)".into(), outcome, "a".into(), "e".into(), "d".into());
    r.promises = promises.iter().map(|p| p.to_string()).collect();
    r.broke = broke.map(String::from);
    r.known = known.then(|| crate::model::KnownIssue {
        check: "c".into(),
        from: crate::model::known::Release::parse("6.1").unwrap(),
        to: None,
        cgroup: None,
        text: "known".into(),
        link: None,
        matches: None,
        borrowed_from: None,
    });
    r
}

/// Held when a check passed; broken, known to break or left alone by a failure as it names
/// the promise; not reached when the checks that name it were not exercised.
#[test]
fn results_judge_only_the_promise_a_failure_names() {
    let (a, b) = (&contract::v2::MAX_OOM, &contract::v2::EVENTS_OOM_KILL);
    let judge = |rs: &[CheckResult], c| judged_in(c, rs.iter().map(|r| ("s", r))).0;
    let both = [a.id, b.id];
    let pass = result(Outcome::Pass, &both, None, false);
    assert_eq!(judge(std::slice::from_ref(&pass), a), Standing::Held);
    let fail_b = result(Outcome::Fail, &both, Some(b.id), false);
    assert_eq!(judge(std::slice::from_ref(&fail_b), b), Standing::Broken);
    assert_eq!(
        judge(std::slice::from_ref(&fail_b), a),
        Standing::NotReached
    );
    assert_eq!(judge(&[pass.clone(), fail_b], a), Standing::Held);
    let known_b = result(Outcome::Fail, &both, Some(b.id), true);
    assert_eq!(judge(&[pass.clone(), known_b], b), Standing::Known);
    let unnamed = result(Outcome::Fail, &both, None, false);
    assert_eq!(judge(std::slice::from_ref(&unnamed), a), Standing::Broken);
    let skipped = result(Outcome::NotExercised, &both, None, false);
    assert_eq!(judge(&[skipped], a), Standing::NotReached);
}
