//! Test fixtures: results and a report built by hand, for the tests of the model and of
//! everything above it.

use std::path::PathBuf;

use super::env::{Capabilities, CgroupInfo, EnvInfo, OracleInfo, ScratchInfo};
use super::kcidb::Ids;
use super::{CheckResult, Outcome, RunReport, ScenarioResult, Status, Version};

/// The environment of a v1 machine with two CPUs.
pub fn env() -> EnvInfo {
    EnvInfo {
        kernel: "6.12.0-test".into(),
        kernel_build: "#1 SMP PREEMPT_DYNAMIC".into(),
        arch: "x86_64".into(),
        cpus: 2,
        page_size: 4096,
        memory_bytes: 2 << 30,
        numa_nodes: vec![0],
        root: true,
        cgroup: CgroupInfo {
            layout: "v1".into(),
            v1_memory_mount: Some(PathBuf::from("/sys/fs/cgroup/memory")),
            v2_mount: None,
            v2_has_memory: false,
            selected: Ok(Version::V1),
            test_parent: Some(PathBuf::from("/sys/fs/cgroup/memory")),
            test_parent_writable: true,
        },
        capabilities: Capabilities {
            charge_moving: "available".into(),
            memory_reclaim: false,
            cgroup_kill: false,
            dirty_stats: vec!["dirty".into(), "writeback".into()],
            vm_event_counters: true,
            compaction: true,
        },
        scratch: ScratchInfo {
            path: PathBuf::from("/var/tmp"),
            fstype: Some("ext4".into()),
            writeback: true,
            readahead: Some(128 << 10),
        },
        sysctls: vec![("dirty_ratio".into(), "20".into())],
        interface: vec![],
        oracle: OracleInfo {
            kind: "page-cache truth".into(),
            why_not: None,
            pages_dirtied_last_second: Some(0),
            alone: false,
        },
    }
}

/// A check with `outcome`, an actual and a tolerance that need escaping in XML and HTML.
pub fn check(name: &str, outcome: Outcome) -> CheckResult {
    CheckResult {
        name: name.into(),
        outcome,
        passed: outcome == Outcome::Pass,
        actual: "0.1 <x>".into(),
        expected: ">= 0.70".into(),
        tolerance: Some("t & u".into()),
        detail: format!("{name} looked at something"),
        at: None,
        bound: None,
        implied: false,
        purpose: false,
        performance: false,
        columns: Vec::new(),
        known: None,
        promises: Vec::new(),
        broke: None,
    }
}

pub fn result(name: &str, status: Status, reason: &str) -> ScenarioResult {
    ScenarioResult {
        name: name.into(),
        summary: "s".into(),
        status,
        reason: reason.into(),
        cgroup_version: Some(Version::V1),
        seconds: 1.0,
        samples: 0,
        phases: vec![],
        checks: vec![],
        notes: vec![],
        moves: vec![],
        measurements: vec![],
        moved: vec![],
        fixed: vec![],
        fixes: vec![],
        record: None,
        error: None,
    }
}

pub fn report() -> RunReport {
    let env = env();
    let started = chrono::Utc::now();
    let ids = Ids::new("memcgtest", None, &env, started);
    RunReport::new(
        env,
        false,
        started,
        ids,
        vec![
            result("a", Status::Pass, ""),
            result("b", Status::Fail, "x: 0.14 (expected >= 0.70)"),
            result("c", Status::Skip, "cannot verify\nmigration"),
        ],
    )
}

/// A behaviour change: kernel-memory's parent.percpu at the end of phase groups, shifted from
/// the `base` boots' values to the `new` ones'.
pub fn percpu_change(base: &[i64], new: &[i64]) -> super::behaviour::Change {
    use super::behaviour::{Change, ChangeKind, Measure, Observable, Spread};
    Change {
        what: Observable {
            scenario: "kernel-memory".into(),
            phase: "groups".into(),
            group: "parent".into(),
            counter: "percpu".into(),
            measure: Measure::Level,
        },
        unit: "B".into(),
        kind: ChangeKind::Shifted,
        base: Some(Spread::of(base)),
        new: Some(Spread::of(new)),
    }
}
