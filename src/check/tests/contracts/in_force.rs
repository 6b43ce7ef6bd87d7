//! in-force: a v2 limit shows (and holds) from the start of the write that reclaims down to it.

use super::*;
use crate::check::InForce;
use crate::model::{ReadRun, ReadsDuring};

/// A run of reads of `value` from `first` to `last` ms, the usage going from `a` to `b` MiB.
fn run(value: &str, (first, last): (f64, f64), (a, b): (u64, u64)) -> ReadRun {
    ReadRun {
        value: value.into(),
        first_ms: first,
        last_ms: last,
        reads: 10,
        usage_first: Some(a << 20),
        usage_last: Some(b << 20),
    }
}

/// Group a's memory.high lowered from max to 16 MiB by a write of `write_ms`, read as `runs`.
fn lowered(write_ms: f64, runs: Vec<ReadRun>) -> Record {
    let mut k = reads("16777216", wrote("memory.high", Some("16M"), None));
    k.during = Some(ReadsDuring { write_ms, runs });
    knob_record(vec![k])
}

fn in_force(rec: &Record) -> CheckResult {
    judge(InForce { cgroup: "a".into() }, rec)
}

#[test]
fn a_high_shown_from_the_start_of_its_reclaiming_write_passes() {
    let rec = lowered(
        81.0,
        vec![
            run("max", (0.0, 0.0), (128, 128)),
            run("16777216", (0.02, 80.9), (128, 16)),
        ],
    );
    passes(
        &in_force(&rec),
        "memory.high read 16777216 from 1.0 ms into a write of 81.0 ms",
    );
}

#[test]
fn the_old_high_shown_while_the_write_reclaims_fails_with_the_usage_falling() {
    let rec = lowered(
        81.0,
        vec![
            run("max", (0.0, 80.99), (128, 0)),
            run("16777216", (81.0, 81.0), (0, 0)),
        ],
    );
    fails(
        &in_force(&rec),
        "memory.high read \"max\"",
        "a's memory.high read \"max\" from 1.0 to 80.0 ms into the write of \"16M\" (81.0 ms; after it, \"16777216\") while memory.current fell from 128.0 MiB to 0 B",
        "",
    );
}

#[test]
fn the_new_high_read_just_before_the_return_does_not_hide_a_reclaim_under_the_old() {
    // 6.12 with the fix reversed: the value set 1.4 ms before the write returned.
    let rec = lowered(
        85.1,
        vec![
            run("max", (0.0, 83.0), (128, 0)),
            run("16777216", (83.7, 85.0), (0, 0)),
        ],
    );
    fails(
        &in_force(&rec),
        "memory.high read \"max\"",
        "from 1.0 to 83.0 ms into the write of \"16M\" (85.1 ms",
        "",
    );
}

#[test]
fn a_writer_held_up_before_its_call_or_a_short_write_is_not_judged() {
    // Preempted for 30 ms before write(2): the old value with nothing reclaimed meanwhile.
    let held = lowered(
        31.0,
        vec![
            run("max", (0.0, 29.9), (64, 64)),
            run("16777216", (30.5, 30.9), (64, 16)),
        ],
    );
    idle(&in_force(&held), "read between 1 ms after it began");
    let short = lowered(1.5, vec![run("16777216", (0.0, 1.4), (16, 16))]);
    idle(&in_force(&short), "read between");
    // Lifted to max (the reviewer's case: the old value while an exiting task freed 5 MiB).
    let mut lifted = lowered(3.1, vec![run("16777216", (0.0, 2.9), (40, 35))]);
    let k = lifted.steps[0].knob.as_mut().unwrap();
    (k.written, k.after) = (Some("max".into()), Some("max".into()));
    idle(&in_force(&lifted), "none below the usage at its start");
    // Lowered, but to above the usage: nothing to reclaim.
    let above = lowered(40.0, vec![run("max", (0.0, 39.0), (12, 4))]);
    idle(&in_force(&above), "none below the usage at its start");
    let mut refused = lowered(81.0, vec![run("max", (0.0, 80.0), (128, 0))]);
    refused.steps[0].knob.as_mut().unwrap().error = Some("EINVAL".into());
    idle(&in_force(&refused), "no set step wrote a's memory.high");
}
