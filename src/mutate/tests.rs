use std::collections::BTreeMap;

use super::pairs::{Plan, items, modes, plan};
use super::*;
use crate::coverage::{Row, Table};
use crate::model::fixtures;
use crate::model::mutant::{Kind, Mutant};

fn row(field: &str, name: &str, status: crate::coverage::Status, exercised: &[&str]) -> Row {
    Row {
        field: field.into(),
        name: name.into(),
        invariants: vec!["hierarchy".into()],
        exercised: exercised.iter().map(|s| s.to_string()).collect(),
        mutants: vec![],
        proven: None,
        status,
        reason: None,
    }
}

#[test]
fn fields_map_to_the_kernels_items() {
    let stat = |n: &str| vec![(Kind::Stat, n.to_string())];
    assert_eq!(
        items("memory.stat:file_dirty", Version::V2),
        Ok(stat("file_dirty"))
    );
    assert_eq!(
        items("memory.stat:total_dirty", Version::V1),
        Ok(stat("file_dirty"))
    );
    assert_eq!(items("memory.stat:cache", Version::V1), Ok(stat("file")));
    assert_eq!(
        items("memory.numa_stat:hierarchical_total", Version::V1)
            .unwrap()
            .len(),
        5
    );
    assert_eq!(
        items("memory.stat:pgscan", Version::V2).unwrap(),
        ["pgscan_kswapd", "pgscan_direct", "pgscan_khugepaged"]
            .map(|n| (Kind::Event, n.to_string()))
    );
    assert_eq!(
        items("memory.stat:total_pgfault", Version::V1),
        Ok(vec![(Kind::Event, "pgfault".to_string())])
    );
    assert_eq!(
        items("memory.swap.events:max", Version::V2),
        Ok(vec![(Kind::Memevent, "swap_max".to_string())])
    );
    assert_eq!(
        items("memory.events.local:oom_kill", Version::V2),
        Ok(vec![(Kind::Memevent, "oom_kill".to_string())])
    );
    assert_eq!(
        items("memory.memsw.usage_in_bytes", Version::V1),
        Ok(vec![(Kind::Counter, "memsw".to_string())])
    );
    // A v2 per-node field is also what migration moves across nodes; v1 lists LRU sizes.
    assert_eq!(
        items("memory.numa_stat:file_dirty", Version::V2),
        Ok(vec![
            (Kind::Stat, "file_dirty".to_string()),
            (Kind::Migrate, "file_dirty".to_string())
        ])
    );
    assert_eq!(
        items("memory.numa_stat:anon", Version::V2),
        Ok(vec![(Kind::Stat, "anon".to_string())])
    );
    let huge = modes(Kind::Migrate, "shmem", Version::V2);
    assert_eq!(
        huge.iter().map(|m| m.0).collect::<Vec<_>>(),
        [Mode::Drop, Mode::Fraction]
    );
    assert!(items("memory.max", Version::V2).is_err());
    assert!(items("memory.stat:hierarchical_memory_limit", Version::V1).is_err());
    // A grow-only item's leak is the stock kernel; a page counter has no "local".
    let ws = modes(Kind::Stat, "workingset_refault_file", Version::V2);
    assert!(ws.iter().any(|(m, why)| *m == Mode::Leak && why.is_some()));
    assert!(
        !modes(Kind::Counter, "swap", Version::V2)
            .iter()
            .any(|(m, _)| *m == Mode::Leak)
    );
    assert!(
        !modes(Kind::Event, "pgfault", Version::V2)
            .iter()
            .any(|(m, _)| *m == Mode::Leak)
    );
    // v1 raises a memory event in its group alone: not passing it up is v1's own way.
    let local = |v| {
        modes(Kind::Memevent, "oom_kill", v)
            .into_iter()
            .find(|(m, _)| *m == Mode::Local)
    };
    assert!(local(Version::V1).is_some_and(|(_, why)| why.is_some()));
    assert!(local(Version::V2).is_some_and(|(_, why)| why.is_none()));
}

#[test]
fn a_plan_merges_the_fields_of_an_item_and_runs_the_quickest_first() {
    use crate::coverage::Status::*;
    let table = Table {
        version: Version::V2,
        kernel: "6.12.118".into(),
        rows: vec![
            row(
                "memory.stat:file_dirty",
                "dirty",
                Covered,
                &["slow", "fast"],
            ),
            row(
                "memory.numa_stat:file_dirty",
                "dirty (per node)",
                Covered,
                &["mid"],
            ),
            row("memory.stat:zswap", "zswap", NotExercised, &[]),
            row("memory.max", "memory.max", Covered, &["fast"]),
        ],
        matrix: None,
    };
    let secs = BTreeMap::from([
        ("slow".to_string(), 9.0),
        ("fast".to_string(), 1.0),
        ("mid".to_string(), 3.0),
    ]);
    let (plans, unmapped) = plan(&table, &secs);
    assert_eq!(
        plans.len(),
        5,
        "drop, leak, double, local of file_dirty; its migration's drop"
    );
    assert_eq!(plans[0].mutant.to_string(), "stat:file_dirty:drop");
    assert_eq!(plans[0].fields.len(), 2);
    assert_eq!(plans[0].scenarios, ["fast", "mid", "slow"]);
    // The per-node field alone is made of what migration moves.
    assert_eq!(plans[4].mutant.to_string(), "migrate:file_dirty:drop");
    assert_eq!(plans[4].scenarios, ["mid"]);
    assert_eq!(unmapped.len(), 1);
    assert_eq!(unmapped[0].0, "memory.max");
}

fn the_plan() -> Plan {
    Plan {
        mutant: Mutant {
            kind: Kind::Stat,
            item: "file_dirty".into(),
            mode: Mode::Drop,
        },
        fields: vec!["memory.stat:file_dirty".into()],
        scenarios: vec!["a".into(), "b".into()],
        equivalent: None,
    }
}

fn outcome(code: u8, rep: Option<RunReport>, reason: &str) -> vm::Outcome {
    vm::Outcome {
        code,
        accel: vm::AccelChoice::Tcg,
        report: rep.map(|r| (r, crate::report::Format::Human)),
        text: String::new(),
        reason: reason.into(),
    }
}

#[test]
fn a_boot_is_judged_by_its_first_failed_check() {
    let names = BTreeMap::from([("memory.stat:file_dirty".to_string(), "dirty".to_string())]);
    let mut rep = fixtures::report();
    let mut failed = fixtures::check("tracks-global(test)", Outcome::Fail);
    failed.actual = "test.dirty rose by 0 B".into();
    rep.scenarios[1].checks = vec![fixtures::check("settles(test)", Outcome::Pass), failed];
    let e = judge(
        &the_plan(),
        &outcome(1, Some(rep.clone()), ""),
        12.0,
        &names,
    );
    assert_eq!(e.fate, Fate::Killed);
    assert_eq!(e.scenario.as_deref(), Some("b"));
    assert_eq!(e.check.as_deref(), Some("tracks-global(test)"));
    assert!(e.names_field, "{}", e.message);
    assert_eq!(e.seconds, 12.0);

    rep.scenarios.truncate(1);
    let e = judge(&the_plan(), &outcome(0, Some(rep.clone()), ""), 5.0, &names);
    assert_eq!(e.fate, Fate::Survived);
    assert!(e.message.starts_with("a pass"), "{}", e.message);

    let e = judge(&the_plan(), &outcome(1, None, "kernel panic"), 5.0, &names);
    assert_eq!(
        (e.fate, e.scenario.as_deref()),
        (Fate::Killed, Some("boot"))
    );
    let e = judge(&the_plan(), &outcome(125, Some(rep), ""), 5.0, &names);
    assert_eq!(e.fate, Fate::Untested);
}

#[test]
fn a_kill_stands_while_its_check_is_judged() {
    let scenarios = crate::scenario::load_all(None).unwrap();
    let judged: std::collections::BTreeSet<(String, String)> = (scenarios.iter())
        .flat_map(|sc| sc.checks.iter().map(|c| (sc.name.clone(), c.name())))
        .collect();
    // Implied checks are the scenario's too.
    assert!(judged.contains(&("swap-out".into(), "hierarchy((top))".into())));
    let mut e = pairs::equivalent_entry(&the_plan(), "");
    e.fate = Fate::Killed;
    e.scenario = Some("swap-out".into());
    e.check = Some("hierarchy((top))".into());
    assert!(stands(&e, &judged));
    e.check = Some("change(s.nothing at hold)".into());
    assert!(!stands(&e, &judged));
    e.scenario = Some("boot".into());
    e.check = None;
    assert!(stands(&e, &judged));
}

#[test]
fn a_boot_is_found_again_whatever_order_its_scenarios_ran_in() {
    let dir = tempfile::tempdir().unwrap();
    let judged = std::collections::BTreeSet::from([("b".to_string(), "c(x)".to_string())]);
    let keep = |name: &str, binary: u64, setup: &str, e: &Entry| {
        let r = Recorded {
            binary,
            setup: setup.into(),
            entry: e.clone(),
        };
        crate::sys::outdir::save(&dir.path().join(name), &r).unwrap();
    };
    let mut plan = the_plan();
    let mut e = pairs::equivalent_entry(&plan, "");
    e.fate = Fate::Survived;
    e.scenarios = vec!["b".into(), "a".into()];
    // This binary's survivor over the same scenarios, run in another order: found.
    keep("stat-file_dirty-drop-00000001.json", binary_id(), "s1", &e);
    let found = recorded(dir.path(), "stat-file_dirty-drop", "s1", &plan, &judged);
    assert_eq!(found.map(|e| e.fate), Some(Fate::Survived));
    // Not in another VM setup, nor over other scenarios.
    assert!(recorded(dir.path(), "stat-file_dirty-drop", "s2", &plan, &judged).is_none());
    plan.scenarios.push("c".into());
    assert!(recorded(dir.path(), "stat-file_dirty-drop", "s1", &plan, &judged).is_none());
    // Another binary's kill whose check is still judged stands, whatever was run with it.
    e.fate = Fate::Killed;
    (e.scenario, e.check) = (Some("b".into()), Some("c(x)".into()));
    keep("stat-file_dirty-drop-00000002.json", 7, "", &e);
    let found = recorded(dir.path(), "stat-file_dirty-drop", "s1", &plan, &judged);
    assert_eq!(found.map(|e| e.fate), Some(Fate::Killed));
    // Other mutants' files are not looked at.
    assert!(recorded(dir.path(), "stat-file_dirty", "s1", &plan, &judged).is_none());
}

#[test]
fn a_part_of_a_sum_runs_where_it_moved_itself() {
    use crate::coverage::Status::*;
    let table = Table {
        version: Version::V2,
        kernel: "6.12.118".into(),
        rows: vec![
            row("memory.stat:pgscan", "pgscan", Covered, &["a", "b"]),
            row(
                "memory.stat:pgscan_direct",
                "pgscan_direct",
                Covered,
                &["a"],
            ),
            row(
                "memory.stat:pgscan_kswapd",
                "pgscan_kswapd",
                NotExercised,
                &[],
            ),
        ],
        matrix: None,
    };
    let (plans, _) = plan(&table, &BTreeMap::new());
    assert!(
        plans.iter().all(|p| p.mutant.item == "pgscan_direct"),
        "{plans:?}"
    );
    assert_eq!(plans[0].scenarios, ["a"]);
    assert_eq!(
        plans[0].fields,
        ["memory.stat:pgscan", "memory.stat:pgscan_direct"]
    );
}
