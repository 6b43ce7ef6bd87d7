use super::*;

#[test]
fn every_patch_is_built_in_with_fields() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernel-patches");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let n = e.ok()?.file_name().to_string_lossy().into_owned();
            n.strip_suffix(".patch").map(String::from)
        })
        .collect();
    on_disk.sort();
    let built: Vec<String> = MUTANTS.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(built, on_disk, "MUTANTS must list kernel-patches/*.patch");
    for (n, p) in MUTANTS {
        assert!(
            p.lines().any(|l| l.starts_with("Fields:")),
            "{n} has no Fields: header"
        );
    }
    let high = MUTANTS.iter().find(|(n, _)| *n == "high-ignored").unwrap();
    assert_eq!(header(high.1, "Fields"), ["memory.high", "high_events"]);
}

#[test]
fn fields_are_classified_per_version() {
    use What::*;
    let c = |e: &str, v| classify(e, v);
    assert_eq!(
        c("memory.stat:file_dirty", Version::V2),
        Counter("dirty".into())
    );
    assert_eq!(
        c("memory.stat:total_dirty", Version::V1),
        Counter("dirty".into())
    );
    assert_eq!(
        c("memory.stat:dirty", Version::V1),
        Counter("dirty.local".into())
    );
    assert_eq!(
        c("memory.stat:hierarchical_memory_limit", Version::V1),
        Counter("hierarchical_memory_limit".into())
    );
    assert_eq!(
        c("memory.events:max", Version::V2),
        Counter("limit_hits".into())
    );
    assert_eq!(
        c("memory.events.local:oom_kill", Version::V2),
        Counter("oom_kills.local".into())
    );
    assert_eq!(c("memory.current", Version::V2), Counter("usage".into()));
    assert_eq!(
        c("memory.failcnt", Version::V1),
        Counter("limit_hits".into())
    );
    assert_eq!(
        c("memory.numa_stat:file_dirty", Version::V2),
        Numa("dirty".into())
    );
    assert_eq!(c("memory.max", Version::V2), Setting("memory.max"));
    assert_eq!(
        c("memory.limit_in_bytes", Version::V1),
        Setting("memory.max")
    );
    assert!(matches!(c("memory.pressure:some", Version::V2), Other(_)));
    assert_eq!(c("memory.stat:brand_new", Version::V2), Unknown);
    let inv = invariants(&Counter("pgfault".into()), Version::V2, &[]);
    assert!(inv.contains(&"monotonic".to_string()) && inv.contains(&"faults".to_string()));
    assert!(!inv.contains(&"tasks".to_string()));
    // Every kind named here is a check kind.
    for k in [
        "identities",
        "monotonic",
        "faults",
        "hierarchy",
        "numa-stat",
    ] {
        assert!(kinds().contains(&k), "{k}");
    }
}

#[test]
fn a_kill_matrix_proves_rows() {
    use crate::model::mutant::*;
    let entry = |mode, fate| Entry {
        mutant: Mutant {
            kind: Kind::Stat,
            item: "file_dirty".into(),
            mode,
        },
        fields: vec!["memory.stat:file_dirty".into()],
        scenarios: vec![],
        fate,
        scenario: None,
        check: None,
        message: String::new(),
        names_field: true,
        seconds: 1.0,
    };
    let row = |field: &str, mutants: Vec<String>| Row {
        field: field.into(),
        name: "x".into(),
        invariants: vec!["hierarchy".into()],
        exercised: vec!["s".into()],
        mutants,
        proven: None,
        status: Status::Covered,
        reason: None,
    };
    let mut tables = vec![Table {
        version: Version::V2,
        kernel: "6.12.118".into(),
        rows: vec![
            row("memory.stat:file_dirty", vec![]),
            row("memory.max", vec!["limit-slack".into()]),
            row("memory.stat:anon", vec![]),
        ],
        matrix: None,
    }];
    let m = Matrix {
        cgroup: Version::V2,
        kernel: "6.12.119".into(),
        measured: "today".into(),
        entries: vec![
            entry(Mode::Drop, Fate::Killed),
            entry(Mode::Leak, Fate::Killed),
        ],
        unmapped: vec![],
    };
    let v1 = Matrix {
        cgroup: Version::V1,
        ..m.clone()
    };
    apply_matrices(&mut tables, &[v1]);
    assert!(tables[0].matrix.is_none(), "a v1 matrix does not prove v2");
    apply_matrices(&mut tables, std::slice::from_ref(&m));
    assert_eq!(tables[0].rows[0].proven.as_ref().unwrap().killed.len(), 2);
    // file_dirty by the matrix, memory.max by its single mutant; anon by nothing.
    assert!((tables[0].proven_pct() - 200.0 / 3.0).abs() < 0.01);
    assert!(render(&tables).contains("drop leak"));
    let mut m2 = m;
    m2.entries.push(entry(Mode::Double, Fate::Survived));
    apply_matrices(&mut tables, &[m2]);
    assert!(!tables[0].rows[0].is_proven());
    assert!(markdown(&tables).contains("SURVIVED: double"));
}
