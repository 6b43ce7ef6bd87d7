//! Values as scenario files write them: sizes, a check's minimum, group names, sysctls,
//! durations, free text, the file itself; and arbitrary text (proptest), whose errors say where.

use super::*;

/// GOOD with the first phase's steps replaced.
fn with_steps(steps: &str) -> String {
    GOOD.replace(
        r#"steps = [{ action = "write", cgroup = "a/b", size = "8M" }, { action = "sync" }]"#,
        &format!("steps = [{steps}]"),
    )
}

#[test]
fn sizes_that_must_be_positive_reject_zero() {
    for (step, key) in [
        (r#"{ action = "write", cgroup = "a", size = "0" }"#, "size"),
        (r#"{ action = "probe", cgroup = "a", size = "0K" }"#, "size"),
        (
            r#"{ action = "mmap-write", cgroup = "a", size = "0" }"#,
            "size",
        ),
        (r#"{ action = "create", file = "f", size = "0M" }"#, "size"),
    ] {
        let e = err(&with_steps(step));
        assert!(
            e.msg.contains(&format!("{key} must be more than 0")),
            "{step}: {e}"
        );
        assert_eq!(e.line, 15, "{step}: {e}");
    }
    let e = err(&GOOD.replace("limit = \"64M\"", "limit = \"0\""));
    assert!(e.msg.contains("limit must be more than 0"), "{e}");
    assert_eq!((e.line, e.col), (10, 9), "{e}");
    // Truncating to 0 drops a file's pages: legitimate.
    let s = parse(
        "f.toml",
        &with_steps(r#"{ action = "truncate", cgroup = "a", size = "0" }, { action = "write", cgroup = "a", size = "1M" }"#),
    )
    .unwrap();
    assert!(matches!(
        s.phases[0].steps[0],
        Step::Truncate { size: 0, .. }
    ));
}

#[test]
fn task_sizes_must_hold_or_grow_something() {
    let e = err(&MOVE.replace(r#"anon = "64M" }"#, r#"anon = "0" }"#));
    assert!(e.msg.contains("a hold must hold something"), "{e}");
    let e = err(&MOVE.replace(r#"anon = "64M" }"#, "}"));
    assert!(e.msg.contains("a hold must hold something"), "{e}");
    let e = err(&MOVE.replace(r#"anon = "8M""#, r#"anon = "0""#));
    assert!(e.msg.contains("anon must be more than 0"), "{e}");
    // A hold of file pages only is fine.
    parse(
        "m.toml",
        &MOVE.replace(r#"anon = "64M" }"#, r#"file = "f", size = "1M" }"#),
    )
    .unwrap();
}

#[test]
fn exercised_with_min_below_1_is_rejected() {
    for min in ["0", "-5"] {
        let e = err(&GOOD.replace(
            "vmstat = \"pgmigrate_success\"",
            &format!("vmstat = \"pgmigrate_success\"\nmin = {min}"),
        ));
        assert!(e.msg.contains("min must be at least 1"), "{min}: {e}");
        assert_eq!((e.line, e.col), (33, 7), "{e}");
    }
    let s = parse(
        "f.toml",
        &GOOD.replace(
            "vmstat = \"pgmigrate_success\"",
            "vmstat = \"pgmigrate_success\"\nmin = 100",
        ),
    )
    .unwrap();
    assert!(matches!(
        s.checks[2].as_any().downcast_ref::<Exercised>(),
        Some(Exercised { min: 100, .. })
    ));
}

/// Columns are typed: a group may be called like a column that is not a group's (vmstat, numa,
/// tasks, ...), and its columns stay apart from those, in the series and in the CSV header.
#[test]
fn cgroups_named_like_other_columns_are_their_own() {
    use crate::model::Column;
    for p in ["vmstat", "oracle", "numa", "tasks", "sampler"] {
        let s = parse(
            "f.toml",
            &GOOD
                .replace("name = \"a/b\"", &format!("name = \"a/{p}\""))
                .replace("cgroup = \"a/b\"", &format!("cgroup = \"a/{p}\"")),
        )
        .unwrap();
        assert!(s.cgroups.iter().any(|c| c.name == format!("a/{p}")));
    }
    let g = Column::group("vmstat", "pgfault");
    assert_ne!(g, Column::vmstat("pgfault"));
    assert_ne!(g.csv_header(), Column::vmstat("pgfault").csv_header());
}

#[test]
fn cgroups_named_like_the_helper_group_are_rejected() {
    let e = err(&GOOD.replace("name = \"a/b\"", "name = \"aux\""));
    assert!(e.msg.contains("helper group"), "{e}");
    assert_eq!((e.line, e.col), (12, 8), "{e}");
    let e = err(&GOOD
        .replace("name = \"a\"\n", "name = \"aux\"\n")
        .replace("name = \"a/b\"", "name = \"aux/x\""));
    assert!(e.msg.contains("helper group"), "{e}");
    assert_eq!(e.line, 9, "{e}");
    // Below a group of its own, "aux" clashes with nothing.
    let s = parse(
        "f.toml",
        &GOOD
            .replace("name = \"a/b\"", "name = \"a/aux\"")
            .replace("cgroup = \"a/b\"", "cgroup = \"a/aux\""),
    )
    .unwrap();
    assert_eq!(s.cgroups[1].name, "a/aux");
}

/// GOOD with a `[sysctl]` table of one entry.
fn with_sysctl(key: &str, value: &str) -> String {
    format!("{GOOD}[sysctl]\n\"vm.{key}\" = {value:?}\n")
}

#[test]
fn sysctl_values_must_be_what_the_kernel_accepts() {
    for (key, value, why) in [
        (
            "dirty_expire_centisecs",
            "soon",
            "not a non-negative integer",
        ),
        ("dirty_expire_centisecs", "-1", "not a non-negative integer"),
        ("dirty_expire_centisecs", "+5", "not a non-negative integer"),
        (
            "dirty_expire_centisecs",
            "1.5",
            "not a non-negative integer",
        ),
        ("dirty_expire_centisecs", "", "one number without spaces"),
        (
            "dirty_expire_centisecs",
            "100 200",
            "one number without spaces",
        ),
        (
            "dirty_expire_centisecs",
            "100\n",
            "one number without spaces",
        ),
        (
            "dirty_expire_centisecs",
            "99999999999999999999999",
            "too large",
        ),
        (
            "dirty_background_bytes",
            "16 M",
            "one number without spaces",
        ),
        ("dirty_background_bytes", "-16M", "not a size"),
        ("dirty_background_bytes", "lots", "not a size"),
        ("dirty_background_bytes", "0", "refuses less than 1"),
        ("dirty_bytes", "4K", "refuses less than"),
        ("dirty_ratio", "101", "at most 100"),
    ] {
        let e = err(&with_sysctl(key, value));
        assert!(e.msg.contains(why), "{key} = {value:?}: {e}");
        assert!(e.msg.contains(&format!("vm.{key}")), "{e}");
        assert_eq!(e.line, 34, "{key} = {value:?}: {e}");
    }
    let s = parse("f.toml", &with_sysctl("dirty_background_bytes", "16M")).unwrap();
    assert_eq!(
        s.sysctls,
        [(
            "vm.dirty_background_bytes".to_string(),
            "16777216".to_string()
        )]
    );
    let s = parse("f.toml", &with_sysctl("dirty_expire_centisecs", "0")).unwrap();
    assert_eq!(s.sysctls[0].1, "0");
}

/// THP knobs: only those listed, each 0 or 1, by their full names; anything else outside vm.*
/// is refused.
#[test]
fn a_thp_knob_is_0_or_1_and_only_a_known_one() {
    let with = |k: &str, v: &str| format!("{GOOD}[sysctl]\n\"{k}\" = {v:?}\n");
    let s = parse("f.toml", &with("thp.shrink_underused", "0")).unwrap();
    assert_eq!(
        s.sysctls,
        [("thp.shrink_underused".to_string(), "0".to_string())]
    );
    for (k, v, why) in [
        ("thp.shrink_underused", "2", "must be 0 or 1"),
        ("thp.shrink_underused", "off", "must be 0 or 1"),
        ("thp.enabled", "1", "may be set are thp.shrink_underused"),
        ("kernel.panic", "1", "only vm.* sysctls (and thp.* knobs)"),
    ] {
        let e = err(&with(k, v));
        assert!(e.msg.contains(why), "{k} = {v:?}: {e}");
        assert_eq!(e.line, 34, "{k}: {e}");
    }
}

#[test]
fn durations_are_at_most_a_day_and_intervals_at_least_1ms() {
    let day_and_a_bit = "1441m";
    let cases = [
        GOOD.replace(
            "summary = \"s\"",
            &format!("summary = \"s\"\ntimeout = \"{day_and_a_bit}\""),
        ),
        GOOD.replace("summary = \"s\"", "summary = \"s\"\ntimeout = \"0s\""),
        GOOD.replace(
            "[[phase]]\nname = \"p1\"",
            &format!("[sample]\ninterval = \"{day_and_a_bit}\"\n[[phase]]\nname = \"p1\""),
        ),
        GOOD.replace(
            "[[phase]]\nname = \"p1\"",
            "[sample]\ninterval = \"0.5ms\"\n[[phase]]\nname = \"p1\"",
        ),
        with_steps(&format!(
            r#"{{ action = "sleep", duration = "{day_and_a_bit}" }}"#
        )),
        with_steps(&format!(
            r#"{{ action = "mmap-write", cgroup = "a", size = "1M", hold = "{day_and_a_bit}" }}"#
        )),
        with_steps(&format!(
            r#"{{ action = "fault", cgroup = "a", size = "1M", duration = "{day_and_a_bit}" }}"#
        )),
        with_steps(r#"{ action = "fault", cgroup = "a", size = "1M", duration = "0s" }"#),
        GOOD.replace(
            "counters = [\"dirty\"]",
            &format!("counters = [\"dirty\"]\nwithin = \"{day_and_a_bit}\""),
        ),
        // Too large for a Duration at all: an error, not a panic.
        GOOD.replace("summary = \"s\"", "summary = \"s\"\ntimeout = \"1e300s\""),
    ];
    for text in &cases {
        let e = err(text);
        assert!(
            e.msg.contains("longer than a day")
                || e.msg.contains("shorter than 1ms")
                || e.msg.contains("not a duration"),
            "{e}"
        );
        assert!(e.line > 1, "{e}");
    }
    // A day exactly, and a sleep of 0, are fine.
    parse(
        "f.toml",
        &GOOD.replace("summary = \"s\"", "summary = \"s\"\ntimeout = \"1440m\""),
    )
    .unwrap();
    parse(
        "f.toml",
        &with_steps(r#"{ action = "write", cgroup = "a", size = "1M" }, { action = "sleep", duration = "0s" }"#),
    )
    .unwrap();
}

/// Reproduction 5: "1e19s" passed `check` and made `run` panic; "1e300s" made `check` panic.
/// Both are errors at the value now, and so is a size beyond 1 TiB.
#[test]
fn huge_durations_and_sizes_are_errors_at_the_value() {
    for t in ["1e19s", "1e300s", "1e19ms", "NaNs", "infs"] {
        let e = err(&GOOD.replace(
            "summary = \"s\"",
            &format!("summary = \"s\"\ntimeout = \"{t}\""),
        ));
        assert_eq!((e.line, e.col), (4, 11), "{t}: {e}");
    }
    let e = err(&GOOD.replace(
        "size = \"8M\" }, { action = \"sync\" }",
        "size = \"2T\" }, { action = \"sync\" }",
    ));
    assert!(e.msg.contains("more than 1 TiB"), "{e}");
    assert_eq!(e.line, 15, "{e}");
}

/// Reproduction 6: a phase name or an `exercised` check's `what` with a newline forged KTAP
/// lines. They are refused where they are written.
#[test]
fn names_and_free_text_cannot_carry_newlines() {
    let e = err(&GOOD
        .replace(
            "name = \"p1\"\nsteps",
            "name = \"p1\\nok 1 forged-pass\"\nsteps",
        )
        .replace(
            "phase = \"p2\"\nbaseline = \"p1\"",
            "phase = \"p2\"\nbaseline = \"p2\"",
        ));
    assert!(e.msg.contains("phase name"), "{e}");
    assert_eq!(e.line, 14, "{e}");
    let e = err(&GOOD.replace(
        "vmstat = \"pgmigrate_success\"",
        "vmstat = \"pgmigrate_success\"\nwhat = \"x\\nok 1 forged-pass\"",
    ));
    assert!(e.msg.contains("what must be one line"), "{e}");
    let e = err(&GOOD.replace("summary = \"s\"", "summary = \"s\\n# forged\""));
    assert!(e.msg.contains("summary"), "{e}");
    let e = err(&GOOD.replace("vmstat = \"pgmigrate_success\"", "vmstat = \"x\\nok 1\""));
    assert!(e.msg.contains("not a /proc/vmstat key"), "{e}");
}

/// Reproduction 8: `check /dev/zero` read until out of memory, a FIFO hung.
#[test]
fn scenario_files_are_regular_files_under_1_mib() {
    let e = load_file(Path::new("/dev/zero")).unwrap_err();
    assert!(e.msg.contains("not a regular file"), "{e}");
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("x.toml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let t = std::time::Instant::now();
    let e = load_file(&fifo).unwrap_err();
    assert!(e.msg.contains("not a regular file"), "{e}");
    assert!(t.elapsed() < std::time::Duration::from_secs(1));
    // load_all names the FIFO in --scenario-dir instead of hanging.
    let e = load_all(Some(d.path())).unwrap_err();
    assert!(e.file.ends_with("x.toml"), "{e}");
    std::fs::remove_file(&fifo).unwrap();
    let big = d.path().join("big.toml");
    std::fs::write(&big, vec![b'#'; (MAX_FILE + 1) as usize]).unwrap();
    let e = load_file(&big).unwrap_err();
    assert!(e.msg.contains("larger than"), "{e}");
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    /// Every error names the file and a line inside it (1-based; line 0 only for errors about
    /// the file as a whole, which `parse` never gives).
    fn names_where(text: &str, e: &ScenarioError) -> bool {
        e.file == "f.toml" && e.line >= 1 && e.line <= text.lines().count() + 1 && e.col >= 1
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// Arbitrary text: no panic, and an error says where.
        #[test]
        fn arbitrary_text(text in any::<String>()) {
            if let Err(e) = parse("f.toml", &text) {
                prop_assert!(names_where(&text, &e), "{}", e);
            }
        }

        /// A good file with arbitrary text inserted anywhere.
        #[test]
        fn good_file_with_an_insertion(at in 0..GOOD.len(), ins in any::<String>()) {
            let text = format!("{}{}{}", &GOOD[..at], ins, &GOOD[at..]);
            if let Err(e) = parse("f.toml", &text) {
                prop_assert!(names_where(&text, &e), "{}", e);
            }
        }

        /// Sizes, durations and numbers as a fuzzer writes them, in every value slot.
        #[test]
        fn hostile_values(v in "[0-9a-zA-Z.+ -]{0,24}", slot in 0..6usize) {
            let (from, to) = [
                ("size = \"8M\" }, { action = \"sync\"", format!("size = \"{v}\" }}, {{ action = \"sync\"")),
                ("limit = \"64M\"", format!("limit = \"{v}\"")),
                ("block_size = \"4K\"", format!("block_size = \"{v}\"")),
                ("summary = \"s\"", format!("summary = \"s\"\ntimeout = \"{v}\"")),
                ("min_ratio = 0.5", format!("min_ratio = {v}")),
                ("[[phase]]\nname = \"p1\"", format!("[sample]\ninterval = \"{v}\"\n[[phase]]\nname = \"p1\"")),
            ][slot].clone();
            let text = GOOD.replacen(from, &to, 1);
            match parse("f.toml", &text) {
                Ok(s) => {
                    prop_assert!(s.timeout <= crate::model::units::MAX_DURATION);
                    prop_assert!(s.sample.interval >= crate::model::units::MIN_INTERVAL);
                }
                Err(e) => prop_assert!(names_where(&text, &e), "{}", e),
            }
        }
    }
}

/// A migrate step: a node or "away", of memory the task holds, in a scenario that requires two
/// nodes; anything else is an error naming the line and what is wrong.
#[test]
fn migrate_steps_need_a_node_a_region_held_and_numa() {
    let text = |features: &str, node: &str, region: &str| {
        format!(
            "name = \"t\"\nsummary = \"s\"\n[origin]\nsubject = \"x\"\n[requires]\nfeatures = [{features}]\n[[cgroup]]\nname = \"a\"\n[[phase]]\nname = \"p\"\nsteps = [{{ action = \"hold\", task = \"t\", anon = \"4M\" }},\n  {{ action = \"migrate\", task = \"t\", region = \"{region}\", node = {node} }}]\n"
        )
    };
    let sc = crate::scenario::parse("f.toml", &text("\"numa\"", "\"away\"", "anon")).unwrap();
    assert!(matches!(
        sc.phases[0].steps[1],
        Step::Migrate {
            node: crate::model::step::Target::Away,
            ..
        }
    ));
    let sc = crate::scenario::parse("f.toml", &text("\"numa\"", "1", "anon")).unwrap();
    let names: Vec<String> = sc.checks.iter().map(|c| c.name()).collect();
    assert!(names.iter().any(|n| n == "placed(a)"), "{names:?}");
    let e = crate::scenario::parse("f.toml", &text("\"numa\"", "64", "anon")).unwrap_err();
    assert!(
        e.to_string().contains("node must be 0..63 or \"away\""),
        "{e}"
    );
    let e = crate::scenario::parse("f.toml", &text("\"numa\"", "\"near\"", "anon")).unwrap_err();
    assert!(e.to_string().starts_with("f.toml:12:"), "{e}");
    let e = crate::scenario::parse("f.toml", &text("\"numa\"", "1", "shmem")).unwrap_err();
    assert!(
        e.to_string().contains("holds no shmem memory to migrate"),
        "{e}"
    );
    let e = crate::scenario::parse("f.toml", &text("", "1", "anon")).unwrap_err();
    assert!(
        e.to_string().contains("requires.features = [\"numa\"]"),
        "{e}"
    );
    // `by`: the system call, move_pages unless named.
    let sc =
        crate::scenario::parse("f.toml", &text("\"numa\"", "1, by = \"mbind\"", "anon")).unwrap();
    assert!(matches!(
        sc.phases[0].steps[1],
        Step::Migrate {
            by: crate::model::step::Mover::Mbind,
            ..
        }
    ));
    let e = crate::scenario::parse("f.toml", &text("\"numa\"", "1, by = \"move\"", "anon"))
        .unwrap_err();
    assert!(e.to_string().starts_with("f.toml:12:"), "{e}");
    assert!(
        e.to_string()
            .contains("by must be move_pages, mbind or migrate_pages, not \"move\""),
        "{e}"
    );
}
