//! placed: per-node truth after a migrate step.

use super::moves::move_record;
use super::*;
use crate::model::StepKind;
use crate::model::placement::Placement;
use crate::model::step::Region;

/// A record with one migrate step of task h's shmem in group a to node 1: move_pages finds
/// `found` pages on node 1 and none on node 0, memory.numa_stat shows `shown` bytes of shmem
/// there (and all of it as file), read between two answers that agreed when `stable`.
fn migrated(found: u64, shown: i64, stable: bool) -> Record {
    let mut r = move_record(0, None);
    r.steps = vec![StepRecord {
        kind: StepKind::Migrate,
        describe: "task h moves its shmem to node 1".into(),
        start: 0.5,
        end: 0.7,
        cgroup: "a".into(),
        placed: Some(Placement {
            task: "h".into(),
            cgroup: "a".into(),
            region: Region::Shmem,
            node: 1,
            pages: vec![0, found],
            unplaced: 0,
            numa: vec![
                ("shmem".into(), vec![found as i64 * 4096 - shown, shown]),
                ("file".into(), vec![0, found as i64 * 4096]),
            ],
            stable,
        }),
        ..Default::default()
    }];
    r
}

/// 32 MiB of shmem in huge pages moved to node 1: counted there, it passes; counted as one page
/// per huge page (the reversal of 5c447d274f37), it fails naming the line, the node and both
/// amounts.
#[test]
fn a_moved_mapping_must_be_counted_on_its_node() {
    let ok = crate::check::placed("placed(a)".into(), &migrated(8192, 32 << 20, true), "a");
    assert_eq!(ok.outcome, Outcome::Pass, "{}", ok.detail);
    let bad = crate::check::placed("placed(a)".into(), &migrated(8192, 16 * 4096, true), "a");
    assert_eq!(bad.outcome, Outcome::Fail, "{}", bad.detail);
    assert_eq!(bad.actual, "numa_stat shmem N1 64.0 KiB");
    assert!(
        bad.detail
            .contains("below the 32.0 MiB of it move_pages finds on node 1"),
        "{}",
        bad.detail
    );
    assert!(
        bad.detail.contains("task h's shmem moved to node 1"),
        "{}",
        bad.detail
    );
    // Within the unflushed bound it holds.
    let near = crate::check::placed(
        "placed(a)".into(),
        &migrated(8192, (32 << 20) - 4096 * 100, true),
        "a",
    );
    assert_eq!(near.outcome, Outcome::Pass, "{}", near.detail);
}

/// A step whose pages moved while memory.numa_stat was read, or that left too little on a
/// node, judges nothing, and says so.
#[test]
fn unstable_or_small_moves_are_not_judged() {
    let moving = crate::check::placed("placed(a)".into(), &migrated(8192, 0, false), "a");
    assert_eq!(moving.outcome, Outcome::NotExercised, "{}", moving.detail);
    assert!(moving.detail.contains("1 not judged"), "{}", moving.detail);
    let small = crate::check::placed("placed(a)".into(), &migrated(16, 0, true), "a");
    assert_eq!(small.outcome, Outcome::NotExercised, "{}", small.detail);
    let other = crate::check::placed("placed(b)".into(), &migrated(8192, 0, true), "b");
    assert_eq!(other.outcome, Outcome::NotExercised, "{}", other.detail);
}
