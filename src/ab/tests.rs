use super::boot::{any_inconclusive_rate, inconclusive_only};
use super::*;

/// A run that judged none of its performance checks, one of them inconclusive (a busy
/// machine), is booted again; one that judged any, or whose only trouble is a scenario it
/// cannot run, is not.
#[test]
fn only_a_run_inconclusive_throughout_is_retried() {
    let check = |performance: bool, outcome: &str| serde_json::json!({"performance": performance, "outcome": outcome});
    let run = |checks: Vec<serde_json::Value>| serde_json::json!({ "scenarios": [{"status": "pass", "checks": checks}] });
    let busy = check(true, "inconclusive");
    assert!(inconclusive_only(&run(vec![
        busy.clone(),
        check(false, "pass")
    ])));
    assert!(inconclusive_only(&run(vec![
        busy.clone(),
        check(true, "not-exercised")
    ])));
    assert!(!inconclusive_only(&run(vec![
        busy.clone(),
        check(true, "pass")
    ])));
    assert!(!inconclusive_only(&run(vec![check(true, "not-exercised")])));
    assert!(!inconclusive_only(&run(vec![check(false, "inconclusive")])));
    assert!(!inconclusive_only(&run(vec![])));
    // A guest that judged nothing (125) with a rate inconclusive is crowded too.
    assert!(any_inconclusive_rate(&run(vec![
        busy.clone(),
        check(true, "pass")
    ])));
    assert!(!any_inconclusive_rate(&run(vec![check(
        false,
        "inconclusive"
    )])));
    assert!(!inconclusive_only(&serde_json::json!({})));
}

#[test]
fn order_alternates_which_side_boots_first() {
    let o: Vec<String> = order(3)
        .iter()
        .map(|(r, s)| format!("{r}{}", &s.as_str()[..1]))
        .collect();
    assert_eq!(o, ["1b", "1n", "2n", "2b", "3b", "3n"]);
    assert!(order(0).is_empty());
}

fn boot(side: Side, code: u8) -> BootResult {
    BootResult {
        round: 1,
        side,
        code,
        seconds: 1.0,
        host_busy_cpus: 0.0,
        used: true,
        failures: Vec::new(),
    }
}

fn row(verdict: Verdict) -> Row {
    Row {
        scenario: "fault-overhead".into(),
        measurement: "one-client: fault outside".into(),
        unit: "faults/s".into(),
        base: vec![3.0; 3],
        new: vec![2.0; 3],
        base_busy: 0,
        new_busy: 0,
        base_median: 3.0,
        new_median: 2.0,
        change_pct: -33.3,
        verdict,
    }
}

#[test]
fn exit_codes_blame_the_new_kernel_only() {
    let ok = [boot(Side::Base, 0), boot(Side::New, 0)];
    assert_eq!(
        judge(&ok, &[row(Verdict::NoSignificantChange)]).exit_code(),
        0
    );
    let v = judge(&ok, &[row(Verdict::Regression)]);
    let (c, why) = (v.exit_code(), v.to_string());
    assert_eq!(c, 1);
    assert!(why.contains("fault outside -33.3%"), "{why}");
    assert_eq!(judge(&ok, &[row(Verdict::Improvement)]).exit_code(), 0);
    // Too few samples is no verdict: not a failure, and alone not a pass either.
    assert_eq!(judge(&ok, &[row(Verdict::TooFewSamples)]).exit_code(), 125);
    // Every boot busy throughout: the rows are still there (not "nothing to compare", 2),
    // too few to judge, and the verdict says why.
    let mut busy = row(Verdict::TooFewSamples);
    (busy.base, busy.new, busy.base_busy, busy.new_busy) = (vec![], vec![], 4, 4);
    let v = judge(&ok, &[busy]);
    assert_eq!(v.exit_code(), 125);
    assert!(
        v.to_string().contains("(8 boots' measurements left out"),
        "{v}"
    );
    let some = [
        row(Verdict::TooFewSamples),
        row(Verdict::NoSignificantChange),
    ];
    assert_eq!(judge(&ok, &some).exit_code(), 0);
    assert_eq!(judge(&ok, &[]).exit_code(), 2);
    let new_fails = [boot(Side::Base, 0), boot(Side::New, 1)];
    let v = judge(&new_fails, &[]);
    let (c, why) = (v.exit_code(), v.to_string());
    assert_eq!(c, 1);
    assert!(why.contains("(boot exit 1)"), "{why}");
    // A failure the base kernel shares is not the new kernel's.
    let mut b = boot(Side::Base, 1);
    b.failures = vec![("oom-kill".into(), "x".into())];
    let mut n = boot(Side::New, 1);
    n.failures = vec![("oom-kill".into(), "y".into())];
    let v = judge(&[b.clone(), n.clone()], &[]);
    let (c, why) = (v.exit_code(), v.to_string());
    assert_eq!(c, 125, "{why}");
    assert!(why.contains("oom-kill (the new kernel too)"), "{why}");
    n.failures.push(("memory-high".into(), "z".into()));
    let v = judge(&[b, n], &[]);
    let (c, why) = (v.exit_code(), v.to_string());
    assert_eq!(c, 1);
    assert!(why.contains("failed memory-high (the base"), "{why}");
    // A guest that refused the command: 2.
    assert_eq!(judge(&[boot(Side::Base, 2)], &[]).exit_code(), 2);
    let stopped = BootResult::stopped(1, Side::New, "mkfs: disk full".into());
    let v = judge(&[boot(Side::Base, 0), stopped], &[]);
    let (c, why) = (v.exit_code(), v.to_string());
    assert_eq!(c, 125);
    assert!(why.contains("mkfs: disk full"), "{why}");
    let base_fails = [boot(Side::Base, 1), boot(Side::New, 0)];
    assert_eq!(
        judge(&base_fails, &[row(Verdict::NoSignificantChange)]).exit_code(),
        125
    );
    let untestable = [boot(Side::Base, 0), boot(Side::New, 125)];
    assert_eq!(judge(&untestable, &[]).exit_code(), 125);
    // A regression stands even when a later boot could not test.
    assert_eq!(
        judge(&untestable, &[row(Verdict::Regression)]).exit_code(),
        1
    );
    // A boot run again does not count.
    let mut rerun = boot(Side::New, 1);
    rerun.used = false;
    assert_eq!(
        judge(
            &[rerun, boot(Side::New, 0)],
            &[row(Verdict::NoSignificantChange)]
        )
        .exit_code(),
        0
    );
}

/// A change of the first set stands only when the second set, judged on its own boots, finds
/// the same change; a second set that could not judge leaves it without a verdict.
#[test]
fn a_change_counts_only_when_the_second_set_repeats_it() {
    let named = |m: &str, v: Verdict| Row {
        measurement: m.into(),
        ..row(v)
    };
    let first = vec![
        named("a", Verdict::Regression),
        named("b", Verdict::Regression),
        named("c", Verdict::Improvement),
        named("d", Verdict::NoSignificantChange),
        named("e", Verdict::Regression),
    ];
    let second = vec![
        named("a", Verdict::Regression),
        named("b", Verdict::NoSignificantChange),
        named("c", Verdict::Regression),
        named("d", Verdict::Regression),
        named("e", Verdict::TooFewSamples),
    ];
    let (rows, shown) = confirmed(first, second);
    let got: Vec<Verdict> = rows.iter().map(|r| r.verdict).collect();
    use Verdict::*;
    assert_eq!(
        got,
        [
            Regression,
            NotRepeated,
            NotRepeated,
            NoSignificantChange,
            TooFewSamples
        ]
    );
    // The second set's rows shown are those of the first set's changes.
    let names: Vec<&str> = shown.iter().map(|r| r.measurement.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "e"]);
    let ok = [boot(Side::Base, 0), boot(Side::New, 0)];
    assert_eq!(judge(&ok, &rows).exit_code(), 1);
    assert_eq!(judge(&ok, &rows[1..4]).exit_code(), 0);
    let v = judge(&ok, &rows[1..2]);
    assert!(v.to_string().contains("no regression: 1 of 1"), "{v}");
}

/// With --behaviour a change is a verdict of its own: exit 0 with the table, 1 only with
/// --fail-on-change; a verdict that blames or clears nothing by behaviour stands.
#[test]
fn a_behaviour_change_fails_only_when_asked_to() {
    let ok = [boot(Side::Base, 0), boot(Side::New, 0)];
    let change = crate::model::fixtures::percpu_change(&[8; 3], &[4; 3]);
    let one = std::slice::from_ref(&change);
    let v = judge_behaviour(&ok, &[], one, 100, false);
    assert_eq!(v.exit_code(), 0);
    assert!(
        v.to_string()
            .starts_with("behaviour: 1 of 100 observables changed (a verdict of its own"),
        "{v}"
    );
    assert_eq!(judge_behaviour(&ok, &[], one, 100, true).exit_code(), 1);
    assert_eq!(judge_behaviour(&ok, &[], &[], 100, true).exit_code(), 0);
    // Nothing judged: the boots could not show it.
    assert_eq!(judge_behaviour(&ok, &[], &[], 0, false).exit_code(), 125);
    // Measurements too: their verdict is carried along, a regression stands.
    let v = judge_behaviour(&ok, &[row(Verdict::NoSignificantChange)], &[], 100, true);
    assert_eq!(
        v.to_string(),
        "behaviour: 0 of 100 observables changed; no regression: 1 of 1 measurements judged"
    );
    let v = judge_behaviour(&ok, &[row(Verdict::Regression)], &[], 100, false);
    assert_eq!(v.exit_code(), 1);
    let new_fails = [boot(Side::Base, 0), boot(Side::New, 1)];
    assert_eq!(
        judge_behaviour(&new_fails, &[], &[], 100, false).exit_code(),
        1
    );
}

/// Measurements left without a verdict (a busy host) do not hide the behaviour's verdict.
#[test]
fn behaviour_is_judged_though_the_measurements_had_too_few_boots() {
    let ok = [boot(Side::Base, 0), boot(Side::New, 0)];
    let change = crate::model::fixtures::percpu_change(&[8; 3], &[4; 3]);
    let rows = [row(Verdict::TooFewSamples)];
    let v = judge_behaviour(&ok, &rows, std::slice::from_ref(&change), 100, true);
    assert_eq!(v.exit_code(), 1, "{v}");
    assert!(
        v.to_string()
            .ends_with("; none of 1 measurements had enough boots"),
        "{v}"
    );
}

/// What an earlier A/B left in a report directory, and nothing else, is removed.
#[test]
fn an_earlier_ab_leaves_its_boots_by_name() {
    for n in ["base", "new", "base-1", "new-12"] {
        assert!(earlier_boot(n), "{n}");
    }
    for n in [
        "base-",
        "base-x",
        "new-1.console",
        "index.html",
        "newer",
        "base-1-old",
    ] {
        assert!(!earlier_boot(n), "{n}");
    }
}
