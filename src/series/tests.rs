use std::path::{Path, PathBuf};

use super::build::{Built, error_lines};
use super::git::{self, Patch, mail_subject};
use super::verdict::{Cell, LayoutRun, PatchReport, PatchVerdict, judge, verdict};
use crate::model::Status;

fn patch(i: usize) -> Patch {
    Patch {
        index: i,
        commit: format!("{i:040}"),
        tree: format!("{i:040}"),
        subject: format!("patch {i}"),
    }
}

fn image() -> Built {
    Built::Image {
        image: PathBuf::from("bzImage"),
        seconds: 1.0,
    }
}

/// A patch whose v2 run has `cells` (scenario, status, failed check).
fn report(i: usize, cells: &[(&str, Status, &str)]) -> PatchReport {
    let cells = (cells.iter())
        .map(|(n, st, check)| Cell {
            scenario: n.to_string(),
            status: *st,
            failed: if check.is_empty() {
                Vec::new()
            } else {
                vec![(check.to_string(), format!("{check}: wrong"))]
            },
            reason: String::new(),
        })
        .collect();
    PatchReport {
        patch: patch(i),
        build: image(),
        runs: vec![LayoutRun {
            cgroup: "v2".into(),
            code: 0,
            seconds: 1.0,
            cells,
            reason: String::new(),
        }],
        ab: None,
        verdict: PatchVerdict::Untestable,
    }
}

const OK: (&str, Status, &str) = ("dirty", Status::Pass, "");
const RED: (&str, Status, &str) = ("dirty", Status::Fail, "dirty-probe(test)");

#[test]
fn the_first_patch_that_turned_a_check_red_is_the_bad_one() {
    let mut ps = vec![
        report(0, &[OK]),
        report(1, &[OK]),
        report(2, &[RED]),
        report(3, &[RED]),
        report(4, &[OK]),
    ];
    let red = judge(&mut ps);
    let v: Vec<PatchVerdict> = ps.iter().map(|p| p.verdict).collect();
    use PatchVerdict::*;
    assert_eq!(v, [Base, Green, Bad, StillRed, Green]);
    assert_eq!(red.len(), 1);
    assert_eq!(
        (red[0].patch, red[0].check.as_str()),
        (2, "dirty-probe(test)")
    );
    let (code, line, first) = verdict(&ps, None);
    assert_eq!((code, first), (1, Some(2)));
    assert_eq!(
        line,
        format!("first bad patch: {} patch 2", &ps[2].patch.commit[..12])
    );
}

#[test]
fn an_ab_regression_against_the_base_is_red_once() {
    let mut ps = vec![report(0, &[OK]), report(1, &[OK]), report(2, &[OK])];
    for p in &mut ps[1..] {
        p.ab = Some(super::verdict::AbSummary {
            exit: 1,
            verdict: "regression: fault 0.80x".into(),
            seconds: 1.0,
        });
    }
    let red = judge(&mut ps);
    assert_eq!(ps[1].verdict, PatchVerdict::Bad);
    assert_eq!(ps[2].verdict, PatchVerdict::StillRed);
    assert_eq!((red.len(), red[0].check.as_str()), (1, "performance"));
}

#[test]
fn what_failed_on_the_base_blames_no_patch() {
    let mut ps = vec![report(0, &[RED]), report(1, &[RED]), report(2, &[OK])];
    judge(&mut ps);
    assert_eq!(ps[1].verdict, PatchVerdict::Green);
    assert_eq!(verdict(&ps, None).0, 0);
}

#[test]
fn a_build_failure_is_bad_and_a_skip_everywhere_untestable() {
    let mut ps = vec![report(0, &[OK]), report(1, &[OK]), report(2, &[])];
    ps[2].build = Built::Failed {
        errors: vec!["mm/memcontrol.c:10:1: error: expected ';'".into()],
        log: PathBuf::from("build.log"),
        seconds: 1.0,
    };
    ps[2].runs.clear();
    let red = judge(&mut ps);
    assert_eq!(ps[2].verdict, PatchVerdict::BuildFailed);
    assert_eq!(red[0].check, "build");
    assert!(red[0].message.contains("error: expected"));
    assert_eq!(verdict(&ps, None).0, 1);

    let mut ps = vec![report(0, &[OK]), report(1, &[("dirty", Status::Skip, "")])];
    judge(&mut ps);
    assert_eq!(ps[1].verdict, PatchVerdict::Untestable);
    assert_eq!(verdict(&ps, None).0, 125);
}

#[test]
fn a_kernel_that_died_before_a_scenario_failed_is_red() {
    let mut ps = vec![report(0, &[OK]), report(1, &[])];
    ps[1].runs[0].code = 1;
    ps[1].runs[0].reason = "kernel panic: Kernel panic - not syncing: Fatal exception".into();
    let red = judge(&mut ps);
    assert_eq!(ps[1].verdict, PatchVerdict::Bad);
    assert_eq!(red[0].scenario, "(boot)");
    assert!(red[0].message.contains("Kernel panic"));
}

#[test]
fn a_series_that_does_not_apply_is_a_usage_error_unless_a_patch_was_bad() {
    let refused = git::Refused {
        number: 2,
        subject: "x".into(),
        error: "patch does not apply".into(),
    };
    let mut ps = vec![report(0, &[OK]), report(1, &[OK])];
    judge(&mut ps);
    assert_eq!(verdict(&ps, Some(&refused)).0, 2);
    let mut ps = vec![report(0, &[OK]), report(1, &[RED])];
    judge(&mut ps);
    assert_eq!(verdict(&ps, Some(&refused)).0, 1);
}

#[test]
fn subjects_and_error_lines() {
    let mail = "From x\nSubject: [PATCH v2 3/6] mm: memcontrol: a long\n subject folded\nFrom: a\n";
    assert_eq!(mail_subject(mail), "mm: memcontrol: a long subject folded");
    let log = "  CC      mm/memcontrol.o\nmm/memcontrol.c:12:5: error: 'x' undeclared\n   12 |     x = 1;\n      |     ^\nmake[3]: *** [scripts/Makefile.build:229: mm/memcontrol.o] Error 1\n";
    let e = error_lines(log);
    assert_eq!(e[0], "mm/memcontrol.c:12:5: error: 'x' undeclared");
    assert_eq!(e[1], "   12 |     x = 1;");
    assert!(e.iter().any(|l| l.starts_with("make[3]: ***")), "{e:?}");
    // The progress line reads only the log's tail.
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("make.out");
    std::fs::write(&f, "  CC x.o\n".repeat(2000) + "  LD vmlinux\n").unwrap();
    assert_eq!(super::build::last_line(&f), "LD vmlinux");
    std::fs::write(&f, "  CC short.o\n").unwrap();
    assert_eq!(super::build::last_line(&f), "CC short.o");
}

fn sh(dir: &Path, script: &str) {
    let ok = std::process::Command::new("sh")
        .arg("-ec")
        .arg(script)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .status()
        .unwrap()
        .success();
    assert!(ok, "{script}");
}

/// The same series as a range and as an mbox gives the same trees (what is built and run is
/// keyed by them), in the series' own clone; a patch that does not apply is named.
#[test]
fn a_range_and_its_mbox_give_the_same_trees() {
    let t = tempfile::tempdir().unwrap();
    let repo = t.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    sh(
        &repo,
        "git init -q; echo a > f; git add f; git commit -qm base; git tag base
         echo b >> f; git commit -qam 'one: add b'; echo c >> f; git commit -qam 'two: add c'
         git format-patch -q -o ../mbox base..HEAD; cat ../mbox/*.patch > ../series.mbox",
    );
    let out = t.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let src = git::checkout(&repo, &out).unwrap();
    let base = git::commit_of(&repo, "base").unwrap();
    let head = git::commit_of(&repo, "HEAD").unwrap();
    let range = git::range(&src, &base, &head).unwrap();
    let (mbox, refused) =
        git::apply_mbox(&src, &base, &t.path().join("series.mbox"), &out).unwrap();
    assert!(refused.is_none());
    let trees = |ps: &[Patch]| ps.iter().map(|p| p.tree.clone()).collect::<Vec<_>>();
    assert_eq!(trees(&range), trees(&mbox));
    assert_eq!(mbox[2].subject, "two: add c");
    // The mbox again: the same commits (committer date = author date, a fixed committer).
    let (again, _) = git::apply_mbox(&src, &base, &t.path().join("series.mbox"), &out).unwrap();
    assert_eq!(again, mbox);
    // On another base the second patch does not apply.
    sh(
        &repo,
        "git checkout -q base; echo z > f; git commit -qam other; git tag other",
    );
    let other = git::commit_of(&repo, "other").unwrap();
    let (done, refused) =
        git::apply_mbox(&src, &other, &t.path().join("series.mbox"), &out).unwrap();
    let refused = refused.unwrap();
    assert_eq!((done.len(), refused.number), (1, 1));
    assert_eq!(refused.subject, "one: add b");
    assert!(refused.error.contains("patch"), "{}", refused.error);
}

/// A base whose dirty scenario passed and a patch that does not build (for the reporters).
pub(super) fn two_patch_report() -> super::verdict::SeriesReport {
    let mut ps = vec![report(0, &[OK]), report(1, &[RED])];
    ps[1].build = Built::Failed {
        errors: vec!["mm/x.c:1:1: error: oops".into()],
        log: PathBuf::from("build.log"),
        seconds: 2.0,
    };
    let red = judge(&mut ps);
    let (exit, verdict, first_bad) = verdict(&ps, None);
    super::verdict::SeriesReport {
        tool: "memcgtest".into(),
        tree: "linux".into(),
        cgroups: vec!["v2".into()],
        guest: vec!["run".into(), "--quick".into()],
        patches: ps,
        refused: None,
        red,
        first_bad,
        exit,
        verdict,
        strategy: "every".into(),
        cost: Default::default(),
    }
}

#[test]
fn a_range_is_base_dot_dot_head() {
    assert!(matches!(
        super::Source::range("v6.12..HEAD"),
        Some(super::Source::Range { base, head }) if base == "v6.12" && head == "HEAD"
    ));
    for bad in ["v6.12", "..HEAD", "v6.12..", "a...b"] {
        assert!(super::Source::range(bad).is_none(), "{bad}");
    }
}

#[test]
fn bisection_boots_the_middle_of_what_is_left_between_green_and_red() {
    use super::verdict::{Seen::*, next_to_boot};
    // Base green, head (6) red: the middle of 1..=5.
    let mut seen = vec![Some(Green), None, None, None, None, None, Some(Red)];
    assert_eq!(next_to_boot(&seen), Some(3));
    seen[3] = Some(Red);
    assert_eq!(next_to_boot(&seen), Some(2));
    seen[2] = Some(Green);
    assert_eq!(
        next_to_boot(&seen),
        None,
        "2 green, 3 red: 3 is the first bad"
    );
    // An untestable patch is gone around.
    let mut seen = vec![Some(Green), None, Some(Untestable), Some(Red)];
    assert_eq!(next_to_boot(&seen), Some(1));
    seen[1] = Some(Green);
    assert_eq!(next_to_boot(&seen), None);
    // No red one: nothing to bisect.
    assert_eq!(next_to_boot(&[Some(Green), None, Some(Green)]), None);
}

#[test]
fn bisection_finds_the_first_red_patch_in_log2_boots() {
    use super::verdict::{Seen, next_to_boot};
    for n in 1..=16usize {
        for bad in 1..=n {
            let mut seen = vec![None; n + 1];
            seen[0] = Some(Seen::Green);
            seen[n] = Some(Seen::Red);
            let mut boots = 2;
            while let Some(i) = next_to_boot(&seen) {
                seen[i] = Some(if i >= bad { Seen::Red } else { Seen::Green });
                boots += 1;
            }
            let first = seen.iter().position(|s| *s == Some(Seen::Red)).unwrap();
            assert_eq!(first, bad, "n {n}");
            assert!(
                boots <= 2 + (n as f64).log2().ceil() as usize,
                "n {n} bad {bad}: {boots}"
            );
        }
    }
}

/// A patch built and not booted (`--strategy head`).
fn not_booted(i: usize) -> PatchReport {
    PatchReport {
        runs: Vec::new(),
        ..report(i, &[])
    }
}

#[test]
fn patches_not_booted_are_vouched_for_and_the_red_one_is_judged_against_the_last_green() {
    let mut ps = vec![
        report(0, &[OK]),
        not_booted(1),
        report(2, &[OK]),
        report(3, &[RED]),
        not_booted(4),
        report(5, &[RED]),
    ];
    judge(&mut ps);
    use PatchVerdict::*;
    let v: Vec<PatchVerdict> = ps.iter().map(|p| p.verdict).collect();
    assert_eq!(v, [Base, NotBooted, Green, Bad, NotBooted, StillRed]);
    assert_eq!(verdict(&ps, None).2, Some(3));
}

#[test]
fn a_green_head_vouches_for_the_patches_not_booted() {
    let mut ps = vec![
        report(0, &[OK]),
        not_booted(1),
        not_booted(2),
        report(3, &[OK]),
    ];
    judge(&mut ps);
    let (code, line, first_bad) = verdict(&ps, None);
    assert_eq!((code, first_bad), (0, None));
    assert_eq!(
        line,
        "every patch green (3 patches; 2 not booted, vouched for by the head's runs)"
    );
}

/// Reproduction (ci/series.sh, 2026-12-06): the dirty-accounting mutant failed tracks-global on
/// #3 and dirty-probe on #5 (a comment patch), and #5 was blamed too. A scenario that keeps
/// failing is still red, whichever of its checks fails.
#[test]
fn a_scenario_still_failing_by_another_check_is_still_red() {
    const OTHER: (&str, Status, &str) = ("dirty", Status::Fail, "tracks-global(test)");
    let mut ps = vec![
        report(0, &[OK]),
        report(1, &[RED]),
        report(2, &[OTHER]),
        report(3, &[RED]),
    ];
    let red = judge(&mut ps);
    use PatchVerdict::*;
    let v: Vec<PatchVerdict> = ps.iter().map(|p| p.verdict).collect();
    assert_eq!(v, [Base, Bad, StillRed, StillRed]);
    assert_eq!(red.len(), 1);
}
