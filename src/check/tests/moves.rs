//! The move and change checks: a charge that follows its task, partial moves, what a move
//! carried; `change` over the steps of one phase.

use super::*;
use crate::model::StepKind;

/// Groups a and b; a task holding 64 MiB moves a -> b over steps at t=1.0..1.1; `moved` is how
/// much of it b receives (and a loses).
pub(super) fn move_record(moved: i64, charge_moving: Option<String>) -> Record {
    let mut series = Series::new(vec!["a.anon".into(), "b.anon".into()]);
    for i in 0..30 {
        let t = i as f64 * 0.1;
        let x = if t > 1.05 { moved } else { 0 };
        series.push(t, &[64 * MIB - x, x]);
    }
    Record {
        series,
        phases: vec![PhaseRecord {
            name: "move".into(),
            start: 0.0,
            end: 2.9,
            antagonists: vec![],
            warmup: false,
            vmstat_start: Stat::default(),
            vmstat_end: Stat::default(),
        }],
        steps: vec![StepRecord {
            phase: 0,
            rep: 0,
            kind: StepKind::Move,
            describe: "move task t to b".into(),
            start: 1.0,
            end: 1.1,
            bytes: 64 << 20,
            seconds: 0.1,
            cgroup: "test".into(),
            cpu_seconds: 0.0,
            ..Default::default()
        }],
        machine: Machine {
            cpus: 2,
            page_size: 4096,
            node_drift_pages: 48,
            lru_gen: false,
            top_flushed: true,
        },
        moves: vec![],
        charge_moving,
        cgroups: Vec::new(),
        stopped: None,
        dirty: None,
        version: crate::model::Version::V2,
        notices: None,
        repeated: None,
    }
}

#[test]
fn change_follows_a_moved_charge_and_catches_a_partial_move() {
    let ok = move_record(64 * MIB, None);
    let c = change(
        "c".into(),
        &ok,
        &"b.anon".into(),
        StepKind::Move,
        Expect::exactly(64 * MIB),
        true,
    );
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    let c = change(
        "c".into(),
        &ok,
        &"a.anon".into(),
        StepKind::Move,
        Expect::exactly(-64 * MIB),
        true,
    );
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    // Half the charge left behind.
    let half = move_record(32 * MIB, None);
    let c = change(
        "c".into(),
        &half,
        &"b.anon".into(),
        StepKind::Move,
        Expect::exactly(64 * MIB),
        true,
    );
    assert_eq!(c.outcome, Outcome::Fail);
    assert!(
        c.detail
            .contains("less than expected (charge left behind?)"),
        "{}",
        c.detail
    );
    assert!(c.actual.contains("+32.0 MiB"), "{}", c.actual);
    // A kernel without charge moving: not exercised, with the reason.
    let none = move_record(0, Some("EINVAL".into()));
    let c = change(
        "c".into(),
        &none,
        &"b.anon".into(),
        StepKind::Move,
        Expect::exactly(64 * MIB),
        true,
    );
    assert_eq!(c.outcome, Outcome::NotExercised);
    assert!(c.detail.contains("EINVAL"));
    // The same record holds "nothing moved" when moving is not needed.
    let c = change(
        "c".into(),
        &none,
        &"b.anon".into(),
        StepKind::Move,
        Expect::exactly(0),
        false,
    );
    assert_eq!(c.outcome, Outcome::Pass);
}

#[test]
fn at_least_fails_only_short_of_what_was_asked() {
    // a.anon falls by 64 MiB across the step; b.anon rises by 64 MiB.
    let rec = move_record(64 * MIB, None);
    let at_least = |by| Expect {
        by,
        tolerance: None,
        at_least: true,
        at_most: false,
        total: false,
        each: false,
    };
    let check = |col: &str, e| change("c".into(), &rec, &col.into(), StepKind::Move, e, false);
    // Asked to free 32 MiB, freed 64: beyond, allowed, said in the detail.
    let c = check("a.anon", at_least(-32 * MIB));
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    assert!(c.detail.contains("beyond what was asked"), "{}", c.detail);
    // The same change is wrong when it must be exact.
    assert_eq!(
        check("a.anon", Expect::exactly(-32 * MIB)).outcome,
        Outcome::Fail
    );
    // Asked to free 128 MiB, freed 64: short, in either mode; also for a rise.
    assert_eq!(check("a.anon", at_least(-128 * MIB)).outcome, Outcome::Fail);
    assert_eq!(check("b.anon", at_least(128 * MIB)).outcome, Outcome::Fail);
    let c = check("b.anon", at_least(64 * MIB));
    assert_eq!(c.outcome, Outcome::Pass);
    assert!(!c.detail.contains("beyond"), "{}", c.detail);
    // A fall where a rise was expected says so.
    let c = check("a.anon", Expect::exactly(64 * MIB));
    assert!(c.detail.contains("went the other way"), "{}", c.detail);
    // 2 MiB expected with 1.06 MiB of tolerance: half of it would pass, so it is not a test.
    let c = check("a.anon", at_least(-2 * MIB));
    assert_eq!(c.outcome, Outcome::NotExercised, "{}", c.detail);
    let c = check("a.anon", at_least(0));
    assert_eq!(c.outcome, Outcome::NotExercised, "{}", c.detail);
}

/// kmem-limit: with `each`, a step must change the column by `by` for every object it made.
#[test]
fn each_scales_by_what_the_step_made() {
    // b.anon rises by 64 MiB across the step.
    let mut rec = move_record(64 * MIB, None);
    let each = Expect {
        at_least: true,
        each: true,
        ..Expect::exactly(16 << 10)
    };
    let check = |rec: &Record| {
        change(
            "c".into(),
            rec,
            &"b.anon".into(),
            StepKind::Move,
            each,
            false,
        )
    };
    let made = |rec: &mut Record, n| rec.steps.iter_mut().for_each(|s| s.made = n);
    // 4096 objects of at least 16 KiB: 64 MiB, as it rose.
    made(&mut rec, Some(4096));
    assert_eq!(check(&rec).outcome, Outcome::Pass, "{:?}", check(&rec));
    // 8192 objects handed out, 64 MiB charged: half of them charged to no one.
    made(&mut rec, Some(8192));
    let c = check(&rec);
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(
        c.expected.starts_with("+128.0 MiB or beyond"),
        "{}",
        c.expected
    );
    // A step that reports nothing made cannot be judged per object.
    made(&mut rec, None);
    let c = check(&rec);
    assert_eq!(c.outcome, Outcome::NotExercised, "{}", c.detail);
    assert!(c.detail.contains("reports nothing it made"), "{}", c.detail);
}

#[test]
fn at_most_fails_only_beyond_what_was_asked() {
    // b.anon rises by 64 MiB across the step.
    let rec = move_record(64 * MIB, None);
    let at_most = |by| Expect {
        at_most: true,
        ..Expect::exactly(by)
    };
    let check = |e| change("c".into(), &rec, &"b.anon".into(), StepKind::Move, e, false);
    // At most 128 MiB, rose by 64: short, allowed, said in the detail.
    let c = check(at_most(128 * MIB));
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    assert!(c.detail.contains("short of what was asked"), "{}", c.detail);
    // At most 32 MiB, rose by 64: beyond.
    let c = check(at_most(32 * MIB));
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(c.expected.contains("or short of it"), "{}", c.expected);
}

#[test]
fn follows_needs_everything_to_move() {
    // a held 64 MiB; after the move b has all of it.
    let all = move_record(64 * MIB, None);
    let c = follows(
        "f".into(),
        &all,
        (&"a.anon".into(), &"b.anon".into()),
        StepKind::Move,
        true,
    );
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    // Half stayed behind.
    let half = move_record(32 * MIB, None);
    let c = follows(
        "f".into(),
        &half,
        (&"a.anon".into(), &"b.anon".into()),
        StepKind::Move,
        true,
    );
    assert_eq!(c.outcome, Outcome::Fail);
    assert!(c.detail.contains("stayed behind"), "{}", c.detail);
    // Nothing held in the source: not exercised.
    let c = follows(
        "f".into(),
        &all,
        (&"b.anon".into(), &"a.anon".into()),
        StepKind::Move,
        true,
    );
    assert_eq!(c.outcome, Outcome::NotExercised);
    assert!(c.detail.contains("nothing to move"), "{}", c.detail);
}

fn carried_move(carried: i64, source: i64) -> crate::model::MoveRecord {
    crate::model::MoveRecord {
        task: "w".into(),
        from: "a".into(),
        to: "b".into(),
        bytes: 0,
        wall_seconds: 0.0,
        sys_seconds: 0.0,
        carried: vec![("dirty".into(), carried), ("usage".into(), carried)],
        source: vec![("dirty".into(), source)],
    }
}

/// A move that carried none of what its scenario is about (a writer's unmapped page cache
/// stays behind) makes the scenario skip; one that carried it passes.
#[test]
fn a_move_that_carried_nothing_of_its_subject_is_not_exercised() {
    let mut rec = move_record(0, None);
    let dirty = vec!["dirty".to_string()];
    rec.moves = vec![carried_move(0, 30 * MIB)];
    let carry = |n: u64| Want {
        min: Some(n),
        held: None,
    };
    let r = moved("m".into(), &rec, "w", &dirty, carry(MIB as u64));
    assert_eq!(r.outcome, Outcome::NotExercised);
    assert!(
        r.detail
            .contains("carried 0 B of dirty (the source held 30.0 MiB"),
        "{}",
        r.detail
    );
    rec.moves = vec![carried_move(20 * MIB, 30 * MIB)];
    assert_eq!(
        moved("m".into(), &rec, "w", &dirty, carry(MIB as u64)).outcome,
        Outcome::Pass
    );
    rec.moves.clear();
    assert_eq!(
        moved("m".into(), &rec, "w", &dirty, carry(1)).outcome,
        Outcome::NotExercised
    );
}

/// `held` asks only what the source had to move: a move that left it all behind (a broken
/// kernel) is still exercised, one whose source had too little is not.
#[test]
fn held_judges_what_the_source_had_not_what_moved() {
    let mut rec = move_record(0, None);
    let dirty = vec!["dirty".to_string()];
    let held = Want {
        min: None,
        held: Some(8 * MIB as u64),
    };
    rec.moves = vec![carried_move(0, 30 * MIB)];
    assert_eq!(
        moved("m".into(), &rec, "w", &dirty, held).outcome,
        Outcome::Pass
    );
    rec.moves = vec![carried_move(2 * MIB, 2 * MIB)];
    let r = moved("m".into(), &rec, "w", &dirty, held);
    assert_eq!(r.outcome, Outcome::NotExercised);
    assert!(
        r.detail.contains("find 8.0 MiB of dirty in the source"),
        "{}",
        r.detail
    );
}

#[test]
fn change_in_one_phase_judges_only_that_phases_steps() {
    // move_record's one move step is in phase 0 ("p"): a filter on another phase finds no step.
    let rec = move_record(64 * MIB, None);
    let name = rec.phases[0].name.clone();
    let e = Expect::exactly(64 * MIB);
    let c = change_in(
        "c".into(),
        &rec,
        &"b.anon".into(),
        (StepKind::Move, Some(&name)),
        e,
        false,
    );
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    let c = change_in(
        "c".into(),
        &rec,
        &"b.anon".into(),
        (StepKind::Move, Some("other")),
        e,
        false,
    );
    assert_eq!(c.outcome, Outcome::NotExercised, "{c:?}");
    // A counter that should have stayed says how it moved.
    let c = change_in(
        "c".into(),
        &rec,
        &"a.anon".into(),
        (StepKind::Move, None),
        Expect::exactly(0),
        false,
    );
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(
        c.detail
            .contains("it fell by 64.0 MiB where it should have stayed"),
        "{}",
        c.detail
    );
}

/// A step the kernel declined (a collapse it could not make) is not judged: the change it
/// should have made did not happen on purpose. With `total`, the steps together are not judged.
#[test]
fn change_skips_a_step_the_kernel_declined() {
    let mut rec = move_record(64 * MIB, None);
    rec.steps[0].declined = Some("MADV_COLLAPSE: EINVAL: this kernel cannot collapse it".into());
    for total in [false, true] {
        let e = Expect {
            total,
            ..Expect::exactly(64 * MIB)
        };
        let c = change_in(
            "c".into(),
            &rec,
            &"b.anon".into(),
            (StepKind::Move, None),
            e,
            false,
        );
        assert_eq!(c.outcome, Outcome::NotExercised, "{c:?}");
        assert!(c.detail.contains("this kernel declined"), "{}", c.detail);
    }
}

/// p: a `child` step below it reads 16 MiB at t=1.0..1.1 and removes the child; p's page
/// counter has it at once, its memory.stat `file` from `shown` on (a parent shows its subtree's
/// statistics as of its last flush). Then a step of `next` (kind, group) at t=1.5.
fn child_record(shown: f64, next: (StepKind, &str)) -> Record {
    let mut rec = move_record(0, None);
    let mut series = Series::new(vec!["p.usage".into(), "p.file".into()]);
    for i in 0..40 {
        let t = i as f64 * 0.1;
        let usage = if t > 1.05 { 16 * MIB } else { 0 };
        series.push(t, &[usage, if t >= shown { 16 * MIB } else { 0 }]);
    }
    rec.series = series;
    let step = |kind, cgroup: &str, start: f64| StepRecord {
        kind,
        cgroup: cgroup.into(),
        start,
        end: start + 0.1,
        ..rec.steps[0].clone()
    };
    rec.steps = vec![
        step(StepKind::Child, "p", 1.0),
        step(StepKind::Sleep, "", 1.1),
        step(next.0, next.1, 1.5),
    ];
    rec
}

/// A parent's memory.stat that shows a child's pages at its next flush, after the step, counts
/// until the next step that may change it, at most ANCESTOR_LAG; a parent that never shows them
/// fails.
#[test]
fn a_parents_statistics_count_at_its_next_flush_after_the_step() {
    let judge = |rec: &Record, col: &str| {
        change_in(
            "c".into(),
            rec,
            &col.into(),
            (StepKind::Child, None),
            Expect::exactly(16 * MIB),
            false,
        )
    };
    // Shown at t=1.4, before a hold in a sibling group: a pass that says how late.
    let c = judge(&child_record(1.4, (StepKind::Hold, "h")), "p.file");
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    assert!(
        c.detail.contains("300 ms after the child step"),
        "{}",
        c.detail
    );
    // A sibling's step does not end the wait; shown at 3.0 is still within ANCESTOR_LAG.
    let c = judge(&child_record(3.0, (StepKind::Hold, "h")), "p.file");
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    // A step in p itself (or one naming no group) at 1.5 ends the wait: shown at 2.0 fails.
    for next in [(StepKind::Hold, "p"), (StepKind::Release, "")] {
        let c = judge(&child_record(2.0, next), "p.file");
        assert_eq!(c.outcome, Outcome::Fail, "{next:?}: {c:?}");
    }
    // Never shown: fails, and says so at the first sample after the step.
    let c = judge(&child_record(99.0, (StepKind::Hold, "h")), "p.file");
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!(c.detail.contains("went from 0 B to 0 B"), "{}", c.detail);
}
