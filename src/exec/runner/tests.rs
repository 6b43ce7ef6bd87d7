//! The runner's tests.

use super::*;
use anyhow::anyhow;

#[test]
fn numa_stat_is_found_in_the_hierarchy_only() {
    let d = tempfile::tempdir().unwrap();
    let child = d.path().join("root/a/b");
    std::fs::create_dir_all(&child).unwrap();
    for g in ["root", "root/a", "root/a/b"] {
        std::fs::write(d.path().join(g).join("cgroup.procs"), "").unwrap();
    }
    assert!(!numa_stat_exists(&child));
    // Above the hierarchy's root: not a cgroup, not looked at.
    std::fs::write(d.path().join("memory.numa_stat"), "").unwrap();
    assert!(!numa_stat_exists(&child));
    std::fs::write(d.path().join("root/memory.numa_stat"), "").unwrap();
    assert!(numa_stat_exists(&child));
}

fn blank() -> ScenarioResult {
    let sc = crate::scenario::parse("b.toml", crate::scenario::BUILTIN[0].1).unwrap();
    ScenarioResult::new(&sc, Status::Error, String::new())
}

/// A stalled (or timed-out) scenario whose checks found the broken invariant fails with the
/// invariant first; one whose checks found nothing is the kernel's error, as before.
#[test]
fn a_stall_with_a_failed_check_is_a_failure_naming_the_check() {
    let mut r = blank();
    r.status = Status::Fail;
    r.reason = "tracks-global(test): rose by 28 MiB".into();
    settle(&mut r, Err(Stop::Stalled("stalled: writer".into())), Ok(()));
    assert_eq!(r.status, Status::Fail);
    assert_eq!(
        r.reason,
        "tracks-global(test): rose by 28 MiB; stalled: writer"
    );
    assert!(r.error.is_none());
    let mut r = blank();
    r.status = Status::Pass;
    settle(&mut r, Err(Stop::Stalled("stalled: writer".into())), Ok(()));
    assert_eq!(r.status, Status::Error);
    assert!(matches!(r.error, Some(Error::Kernel(_))));
}

/// Reproduction 9: a cleanup failure after another error kept only "; cleanup: ..." (the
/// original reason was lost, b0956bf^). The reason keeps both, the error its kind.
#[test]
fn a_cleanup_failure_keeps_the_original_reason_and_kind() {
    let mut r = blank();
    settle(
        &mut r,
        Err(Stop::Failed(Error::Kernel(
            "worker killed by SIGKILL".into(),
        ))),
        Err(anyhow!("cleanup: rmdir /x: EBUSY")),
    );
    assert_eq!(r.status, Status::Error);
    assert_eq!(
        r.reason,
        "worker killed by SIGKILL; cleanup: rmdir /x: EBUSY"
    );
    assert_eq!(r.error.as_ref().unwrap().exit_code(), 1);
    let mut r = blank();
    settle(
        &mut r,
        Err(Stop::Timeout("timeout after 3 s".into())),
        Err(anyhow!("cleanup: x")),
    );
    assert!(
        r.reason.starts_with("timeout after 3 s; cleanup: x"),
        "{}",
        r.reason
    );
    // A scenario that passed and then could not clean up is the machine's error.
    let mut r = blank();
    r.status = Status::Pass;
    settle(&mut r, Ok(()), Err(anyhow!("cleanup: x")));
    assert_eq!(r.status, Status::Error);
    assert_eq!(r.error.as_ref().unwrap().exit_code(), 125);
    assert_eq!(r.reason, "cleanup: x");
}

#[test]
fn probe_and_sysctl_scenarios_need_the_sysctls() {
    let all = crate::scenario::load_all(None).unwrap();
    let dm = all.iter().find(|s| s.name == "dirty-migration").unwrap();
    assert!(needs_sysctls(dm));
    let fo = all.iter().find(|s| s.name == "fault-overhead").unwrap();
    assert!(!needs_sysctls(fo));
}

/// A failure a known issue covers is marked; an issue whose checks passed here is fixed; one
/// that does not apply to this kernel marks nothing.
#[test]
fn known_issues_mark_their_failures_and_report_fixed_ones() {
    use crate::model::{KnownIssue, Release, Version};
    let issue = |check: &str, from: &str| KnownIssue {
        check: check.into(),
        from: Release::parse(from).unwrap(),
        to: None,
        cgroup: Some(Version::V1),
        text: "t".into(),
        link: None,
        matches: None,
        borrowed_from: None,
    };
    let mk =
        |name: &str, o: Outcome| CheckResult::new(name.into(), o, "".into(), "".into(), "".into());
    let known = [issue("limit-counters", "6.18"), issue("settles(a)", "6.18")];
    let mut checks = vec![
        mk("limit-counters(g)", Outcome::Fail),
        mk("settles(a)", Outcome::Pass),
        mk("hierarchy(p)", Outcome::Fail),
    ];
    let fixed = mark_known(&mut checks, &known, "6.18.44", Some(Version::V1));
    assert!(checks[0].known.is_some());
    assert!(checks[2].known.is_none());
    assert_eq!(fixed, vec![known[1].clone()]);
    let mut again = vec![mk("limit-counters(g)", Outcome::Fail)];
    assert!(mark_known(&mut again, &known, "6.12.118", Some(Version::V1)).is_empty());
    assert!(again[0].known.is_none());
    let mut v2 = vec![mk("limit-counters(g)", Outcome::Fail)];
    mark_known(&mut v2, &known, "6.18.44", Some(Version::V2));
    assert!(v2[0].known.is_none());
}

/// A check the scenario does not exist for (a paired rate beside accounting checks) left
/// inconclusive: the scenario passes and its reason says what was not judged. One it exists for:
/// a skip, whatever else passed.
#[test]
fn what_was_judged_decides_the_verdict() {
    use crate::model::fixtures::check;
    let mut ratio = check("ratio(pairs: write a/b)", Outcome::Inconclusive);
    ratio.performance = true;
    ratio.detail = "inconclusive: the machine was busy during 8 of 8 pairs".into();
    let mut settles = check("settles(a)", Outcome::Pass);
    settles.purpose = true;
    let (st, why) = verdict(&[settles.clone(), ratio.clone()]);
    assert_eq!(st, Status::Pass);
    assert!(
        why.starts_with("ratio(pairs: write a/b) not judged: inconclusive"),
        "{why}"
    );
    ratio.purpose = true;
    let (st, why) = verdict(&[settles.clone(), ratio.clone()]);
    assert_eq!(st, Status::Skip);
    assert!(
        why.starts_with("inconclusive: the machine was busy"),
        "{why}"
    );
    // A failure wins; an implied invariant never decides a skip.
    let mut failed = check("no-underflow(a)", Outcome::Fail);
    failed.purpose = true;
    assert_eq!(verdict(&[failed, ratio.clone()]).0, Status::Fail);
    let mut idle = check("hierarchy(a)", Outcome::NotExercised);
    idle.implied = true;
    assert_eq!(verdict(&[settles, idle]), (Status::Pass, String::new()));
}

/// A scenario's reason holds the failed checks' summaries that fit in one line, then the names
/// of the rest (a run of the file-leak mutant joined four of them into 751 characters).
#[test]
fn a_failed_scenario_reads_in_one_line() {
    use super::verdict::REASON_MAX;
    use crate::model::fixtures::check;
    let failed: Vec<CheckResult> = (0..4)
        .map(|i| {
            let mut c = check(&format!("usage-covers(g{i})"), Outcome::Fail);
            c.actual = format!("g{i}.anon+file+kernel+sock {}", "9".repeat(120));
            c.expected = "<= g's usage 40.0 MiB + 4.5 MiB".into();
            c
        })
        .collect();
    let (st, why) = verdict(&failed);
    assert_eq!(st, Status::Fail);
    assert!(why.len() <= REASON_MAX + 60, "{} chars: {why}", why.len());
    assert!(why.starts_with("usage-covers(g0): g0.anon"), "{why}");
    assert!(
        why.ends_with("; and 2 more failed checks: usage-covers(g2); usage-covers(g3)"),
        "{why}"
    );
    // One failure is always whole, however long.
    let (_, one) = verdict(&failed[..1]);
    assert_eq!(one, failed[0].summary());
}
