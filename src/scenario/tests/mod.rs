use super::*;
use crate::check::{Change, Exercised, Ratio, Throughput};

const GOOD: &str = r#"
name = "t"
summary = "s"
[origin]
subject = "x"
[requires]
writeback = true
[[cgroup]]
name = "a"
limit = "64M"
[[cgroup]]
name = "a/b"
[[phase]]
name = "p1"
steps = [{ action = "write", cgroup = "a/b", size = "8M" }, { action = "sync" }]
[[phase]]
name = "p2"
antagonists = [{ kind = "compaction" }]
steps = [{ action = "write", cgroup = "a", size = "8M", block_size = "4K", fsync = true }]
[[check]]
kind = "settles"
cgroup = "a"
counters = ["dirty"]
[[check]]
kind = "throughput"
phase = "p2"
baseline = "p1"
min_ratio = 0.5
[[check]]
kind = "exercised"
phase = "p2"
vmstat = "pgmigrate_success"
"#;

fn err(text: &str) -> ScenarioError {
    parse("f.toml", text).unwrap_err()
}

#[test]
fn builtin_scenarios_parse() {
    let all = load_all(None).unwrap();
    assert!(all.iter().any(|s| s.name == "dirty-migration"));
    // Every file in scenarios/ is built in.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".toml") {
            assert!(
                BUILTIN.iter().any(|(f, _)| *f == name),
                "{name} is not in BUILTIN"
            );
        }
    }
    for s in &all {
        assert!(!s.checks.is_empty(), "{} has no checks", s.name);
    }
}

#[test]
fn good_file_resolves() {
    let s = parse("f.toml", GOOD).unwrap();
    assert_eq!(s.cgroups[0].limit, Some(64 << 20));
    assert_eq!(s.cgroups[1].name, "a/b");
    assert_eq!(
        s.phases[1].steps[0],
        Step::Write {
            cgroup: "a".into(),
            file: "data".into(),
            size: 8 << 20,
            block_size: 4096,
            fsync: true,
            quick_size: None,
        }
    );
    assert_eq!(s.phases[1].antagonists, vec![Antagonist::Compaction]);
    // counters and vmstat keys used by checks are sampled without being listed.
    let plan = SamplePlan::new(&s, Version::V2, &[]);
    assert_eq!(plan.counters[0], "dirty");
    assert_eq!(plan.vmstat[0], "pgmigrate_success");
    assert_eq!(s.sample.interval, Duration::from_millis(10));
    assert_eq!(s.timeout, Duration::from_secs(300));
}

#[test]
fn unknown_key_names_line_and_column() {
    let e = err(&GOOD.replace("limit = \"64M\"", "limt = \"64M\""));
    assert_eq!((e.file.as_str(), e.line), ("f.toml", 10), "{e}");
    assert!(e.msg.contains("limt"), "{e}");
    assert!(e.to_string().starts_with("f.toml:10:"), "{e}");
}

#[test]
fn bad_values_point_at_the_value() {
    let e = err(&GOOD.replace("\"64M\"", "\"64Q\""));
    assert_eq!((e.line, e.col), (10, 9), "{e}");
    let e = err(&GOOD.replace("action = \"sync\"", "action = \"synk\""));
    assert!(e.msg.contains("unknown action \"synk\""), "{e}");
    assert_eq!(e.line, 15);
    let e = err(&GOOD.replace("kind = \"compaction\"", "kind = \"stress\""));
    assert!(e.msg.contains("unknown antagonist"), "{e}");
}

#[test]
fn references_must_exist() {
    let e = err(&GOOD.replace("baseline = \"p1\"", "baseline = \"p9\""));
    assert!(e.msg.contains("no phase named \"p9\""), "{e}");
    let e = err(&GOOD.replace("cgroup = \"a/b\"", "cgroup = \"zz\""));
    assert!(e.msg.contains("no cgroup named \"zz\""), "{e}");
    let e = err(&GOOD.replace("name = \"a/b\"", "name = \"q/b\""));
    assert!(e.msg.contains("parent cgroup \"q\""), "{e}");
}

#[test]
fn step_and_check_keys_are_checked_per_kind() {
    let e = err(&GOOD.replace(
        "{ action = \"sync\" }",
        "{ action = \"sync\", size = \"1M\" }",
    ));
    assert!(e.msg.contains("takes no \"size\""), "{e}");
    let e = err(&GOOD.replace(
        "vmstat = \"pgmigrate_success\"",
        "vmstat = \"x\"\nwithin = \"1s\"",
    ));
    assert!(e.msg.contains("takes no \"within\""), "{e}");
    let e = err(&GOOD.replace("counters = [\"dirty\"]", "counters = [\"dirt\"]"));
    assert!(e.msg.contains("unknown counter \"dirt\""), "{e}");
    let e = err(&GOOD.replace("min_ratio = 0.5", "min_ratio = -1.0"));
    assert!(e.msg.contains("positive"), "{e}");
}

#[test]
fn write_needs_writeback_requirement() {
    let e = err(&GOOD.replace("writeback = true", "writeback = false"));
    assert!(e.msg.contains("requires.writeback"), "{e}");
}

#[test]
fn syntax_error_has_position() {
    let e = err("name = \"t\"\nsummary = \n");
    assert_eq!(e.line, 2, "{e}");
}

#[test]
fn quick_scaling_keeps_checks() {
    let mut s = parse("f.toml", GOOD).unwrap();
    let checks = s.checks.clone();
    s.scale_down(8);
    assert_eq!(s.cgroups[0].limit, Some(16 << 20));
    assert!(matches!(s.phases[0].steps[0], Step::Write { size, .. } if size == 1 << 20));
    assert_eq!(s.checks, checks);
    // Dirtying through a mapping shrinks like a write (mmap-dirty's 256 MiB became 32 MiB).
    let mut m = parse(
        "f.toml",
        &GOOD.replacen(
            "[[check]]",
            r#"[[phase]]
name = "p3"
steps = [{ action = "mmap-write", cgroup = "a/b", size = "256M", hold = "1s" }]
[[check]]"#,
            1,
        ),
    )
    .unwrap();
    m.scale_down(8);
    assert!(matches!(m.phases[2].steps[0], Step::MmapWrite { size, .. } if size == 32 << 20));
}

const MOVE: &str = r#"
name = "m"
summary = "s"
[origin]
subject = "x"
[requires]
cgroup = ["v1"]
[[cgroup]]
name = "a"
[[cgroup]]
name = "b"
move_charge = 1
[[phase]]
name = "p"
steps = [
  { action = "hold", task = "t", cgroup = "a", anon = "64M" },
  { action = "move", task = "t", to = "b" },
  { action = "grow", task = "t", anon = "8M" },
  { action = "release", task = "t" },
]
[[check]]
kind = "change"
cgroup = "b"
counter = "anon"
step = "move"
by = "-64M"
needs = "charge-moving"
"#;

#[test]
fn task_steps_and_change_checks_parse() {
    let mut s = parse("m.toml", MOVE).unwrap();
    assert_eq!(s.cgroups[1].move_charge, Some(1));
    assert_eq!(
        s.phases[0].steps[1],
        Step::Move {
            task: "t".into(),
            to: "b".into(),
            thread: false,
        }
    );
    let change = |s: &Scenario| s.checks[0].as_any().downcast_ref::<Change>().cloned();
    assert!(matches!(
        change(&s),
        Some(Change { expect, needs_moving: true, .. }) if expect.by == -(64 << 20)
    ));
    // --quick scales the expected change with the sizes.
    s.scale_down(8);
    assert!(matches!(change(&s), Some(Change { expect, .. }) if expect.by == -(8 << 20)));
    assert!(matches!(s.phases[0].steps[0], Step::Hold(ref h) if h.anon == 8 << 20));
}

#[test]
fn a_hold_may_hold_shmem_alone_and_quick_scales_it() {
    let mut s = parse(
        "f.toml",
        &MOVE.replace(r#"anon = "64M""#, r#"shmem = "64M""#),
    )
    .unwrap();
    assert!(
        matches!(s.phases[0].steps[0], Step::Hold(ref h) if h.anon == 0 && h.shmem == 64 << 20)
    );
    s.scale_down(8);
    assert!(matches!(s.phases[0].steps[0], Step::Hold(ref h) if h.shmem == 8 << 20));
    let e = err(&MOVE.replace(r#"anon = "64M""#, r#"shmem = "0""#));
    assert!(e.to_string().contains("a hold must hold something"), "{e}");
}

#[test]
fn tasks_must_be_held_before_use() {
    let e = err(&MOVE.replace(
        r#"{ action = "hold", task = "t", cgroup = "a", anon = "64M" },"#,
        "",
    ));
    assert!(e.to_string().contains("no task \"t\" is held here"), "{e}");
    let e = err(&MOVE.replace(
        r#"{ action = "release", task = "t" },"#,
        r#"{ action = "release", task = "t" }, { action = "grow", task = "t", anon = "1M" },"#,
    ));
    assert!(e.to_string().contains("no task \"t\" is held here"), "{e}");
}

#[test]
fn move_charge_is_v1_only() {
    let e = err(&MOVE.replace(r#"cgroup = ["v1"]"#, r#"cgroup = ["v1", "v2"]"#));
    assert!(
        e.to_string().contains("move_charge is a cgroup v1 setting"),
        "{e}"
    );
    let e = err(&MOVE.replace("needs = \"charge-moving\"", "needs = \"magic\""));
    assert!(e.to_string().contains("unknown need"), "{e}");
}

#[test]
fn memory_high_is_v2_only_and_scales_like_a_limit() {
    let text = include_str!("../../../scenarios/memory-high.toml");
    let mut s = parse("f.toml", text).unwrap();
    assert_eq!(s.cgroups[0].high, Some(64 << 20));
    s.scale_down(8);
    assert_eq!(s.cgroups[0].high, Some(16 << 20));
    let e = err(&text.replace(r#"cgroup = ["v2"]"#, r#"cgroup = ["v1", "v2"]"#));
    let msg = e.to_string();
    assert!(msg.contains("high is a cgroup v2 setting"), "{msg}");
    assert!(msg.contains("f.toml:"), "{msg}");
}

#[test]
fn memory_min_and_low_are_v2_only_and_scale_like_a_limit() {
    let text = include_str!("../../../scenarios/memory-protection.toml");
    let mut s = parse("f.toml", text).unwrap();
    let g = |s: &Scenario, n: &str| s.cgroups.iter().find(|c| c.name == n).cloned().unwrap();
    assert_eq!(
        (g(&s, "p/min").min, g(&s, "p/low").low),
        (Some(128 << 20), Some(128 << 20))
    );
    s.scale_down(8);
    assert_eq!(
        (g(&s, "p/min").min, g(&s, "p/low").low),
        (Some(16 << 20), Some(16 << 20))
    );
    let v1 = text.replace(r#"cgroup = ["v2"]"#, r#"cgroup = ["v1", "v2"]"#);
    let msg = err(&v1).to_string();
    assert!(
        msg.contains("min is a cgroup v2 setting (memory.min)"),
        "{msg}"
    );
    let msg = err(&v1.replace("min = \"128M\"\n", "")).to_string();
    assert!(
        msg.contains("low is a cgroup v2 setting (memory.low)"),
        "{msg}"
    );
}

#[test]
fn oom_scenarios_are_parsed_strictly() {
    let kill = include_str!("../../../scenarios/oom-kill.toml");
    let group = include_str!("../../../scenarios/oom-group.toml");
    let s = parse("f.toml", group).unwrap();
    assert!(s.cgroups[0].oom_group && !s.cgroups[0].swap);
    let cases = [
        (
            kill.replace("limit = \"128M\"\n", ""),
            "swap = false needs a limit",
        ),
        (
            kill.replace("swap = false", "swap = false\noom_group = true"),
            "oom_group is a cgroup v2 setting",
        ),
        (
            kill.replace("bystanders = 2", "bystanders = 17"),
            "bystanders must be 0..16",
        ),
        (
            kill.replace(
                "cgroup = \"test\"\n\n[[check]]\nkind = \"under-limit\"",
                "cgroup = \"test\"\nevents = true\n\n[[check]]\nkind = \"under-limit\"",
            ),
            "cgroup v1 counts no OOM events",
        ),
    ];
    for (text, want) in cases {
        let e = err(&text).to_string();
        assert!(e.contains(want) && e.contains("f.toml:"), "{want}: {e}");
    }
    // --quick shrinks the task with the sizes, to no less than twice the smallest limit.
    let mut s = parse("f.toml", kill).unwrap();
    s.scale_down(8);
    assert!(matches!(s.phases[0].steps[0], Step::Exhaust { anon, .. } if anon == 64 << 20));
    let mut s = parse(
        "f.toml",
        &kill.replace("anon = \"512M\"", "anon = \"128M\""),
    )
    .unwrap();
    s.scale_down(8);
    assert!(matches!(s.phases[0].steps[0], Step::Exhaust { anon, .. } if anon == 32 << 20));
}

#[test]
fn await_takes_a_memory_stat_counter() {
    let text = include_str!("../../../scenarios/move-during-writeback.toml");
    let mut s = parse("f.toml", text).unwrap();
    assert!(
        matches!(&s.phases[0].steps[2], Step::Await { counter, size, .. }
        if counter == "writeback" && *size == 24 << 20)
    );
    s.scale_down(8);
    assert!(matches!(&s.phases[0].steps[2], Step::Await { size, .. } if *size == 3 << 20));
    let e = err(&text.replace("counter = \"writeback\"", "counter = \"usage\"")).to_string();
    assert!(
        e.contains("must be a memory.stat counter") && e.contains("f.toml:"),
        "{e}"
    );
}

#[test]
fn warmup_marks_a_phase_and_is_parsed_strictly() {
    let s = parse("f.toml", GOOD).unwrap();
    assert!(!s.phases[0].warmup);
    let s = parse(
        "f.toml",
        &GOOD.replace("name = \"p1\"\n", "name = \"p1\"\nwarmup = true\n"),
    )
    .unwrap();
    assert!(s.phases[0].warmup);
    assert!(!s.phases[1].warmup);
    let e = err(&GOOD.replace("name = \"p1\"\n", "name = \"p1\"\nwarmup = \"yes\"\n"));
    assert_eq!((e.line, e.col), (15, 10), "{e}");
    let e = err(&GOOD.replace("name = \"p1\"\n", "name = \"p1\"\nwarm_up = true\n"));
    assert!(e.msg.contains("warm_up"), "{e}");
}

#[test]
fn builtin_warm_up_phases_are_marked() {
    for s in load_all(None).unwrap() {
        for p in &s.phases {
            assert_eq!(
                p.warmup,
                p.name.starts_with("warmup"),
                "{}: phase {}",
                s.name,
                p.name
            );
        }
    }
}

/// Every throughput and ratio check of the built-in scenarios gets at least 3 samples per side (one
/// per repetition of its phases, at least)
/// under --quick, the least `stats::enough_samples` judges on.
#[test]
fn builtin_performance_checks_have_enough_samples_when_quick() {
    for mut s in load_all(None).unwrap() {
        s.scale_down(8);
        let reps = |name: &str| s.phases.iter().find(|p| p.name == name).unwrap().repeat as usize;
        for c in &s.checks {
            let any = c.as_any();
            let (n, m) = match (
                any.downcast_ref::<Throughput>(),
                any.downcast_ref::<Ratio>(),
            ) {
                (
                    Some(Throughput {
                        phase, baseline, ..
                    }),
                    _,
                ) => (reps(phase), reps(baseline)),
                (_, Some(Ratio { phase: Some(p), .. })) => (reps(p), reps(p)),
                (_, Some(Ratio { phase: None, .. })) => panic!("{}: ratio without phase", s.name),
                _ => continue,
            };
            assert!(
                crate::model::stats::enough_samples(n, m),
                "{}: {} has {n} v {m} samples",
                s.name,
                c.name()
            );
        }
    }
}

/// `scratch` picks the slow disk; anything else is an error at its line.
#[test]
fn scratch_is_slow_or_absent() {
    assert_eq!(parse("f.toml", GOOD).unwrap().scratch, ScratchDisk::Default);
    let slow = GOOD.replacen(
        "summary = \"s\"\n",
        "summary = \"s\"\nscratch = \"slow\"\n",
        1,
    );
    assert_eq!(parse("f.toml", &slow).unwrap().scratch, ScratchDisk::Slow);
    let e = err(&slow.replace("\"slow\"", "\"fast\""));
    assert!(e.msg.contains("the only choice is \"slow\""), "{e}");
    assert_eq!(e.line, 4, "{e}");
}

/// What a new user ran into: a missing [origin] pointed at 1:1 with serde's words; a step with
/// no group declared asked which of several; `global` keys and under-high under v1 went unchecked.
#[test]
fn errors_a_new_user_meets_say_what_to_do() {
    let e = err(&GOOD.replace("[origin]\nsubject = \"x\"\n", ""));
    assert!(e.msg.contains("missing [origin] table"), "{e}");
    let none = GOOD
        .replace(
            "[[cgroup]]\nname = \"a\"\nlimit = \"64M\"\n[[cgroup]]\nname = \"a/b\"\n",
            "",
        )
        .replace("cgroup = \"a/b\", ", "")
        .replace("cgroup = \"a\", ", "");
    let e = err(&none);
    assert!(e.msg.contains("no [[cgroup]] is declared"), "{e}");
    let e = err(&format!(
        "{GOOD}[[check]]\nkind = \"tracks-global\"\ncgroup = \"a\"\ncounters = [\"dirty\"]\nglobal = [\"NR DIRTY\"]\n"
    ));
    assert!(e.msg.contains("not a /proc/vmstat key"), "{e}");
    let e = err(&format!(
        "{GOOD}[[check]]\nkind = \"under-high\"\ncgroup = \"a\"\n"
    ));
    assert!(e.msg.contains("cgroup v2 setting"), "{e}");
}

/// `alternate = true`: odd repetitions run the measured steps' blocks in reverse (A B, B A).
#[test]
fn alternating_phases_reverse_their_blocks_on_odd_repetitions() {
    let s = parse(
        "f.toml",
        &GOOD.replace(
            "name = \"p1\"\n",
            "name = \"p1\"\nrepeat = 2\nalternate = true\n",
        )
        .replace(
            r#"steps = [{ action = "write", cgroup = "a/b", size = "8M" }, { action = "sync" }]"#,
            r#"steps = [{ action = "sync" }, { action = "write", cgroup = "a/b", size = "8M" }, { action = "sync" }, { action = "write", cgroup = "a", size = "8M" }, { action = "sync" }]"#,
        ),
    )
    .unwrap();
    let p = &s.phases[0];
    let kinds = |rep| {
        p.order(rep)
            .iter()
            .map(|s| {
                format!(
                    "{}{}",
                    s.kind(),
                    s.cgroup().map(|c| format!(" {c}")).unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(kinds(0), ["sync", "write a/b", "sync", "write a", "sync"]);
    assert_eq!(kinds(1), ["sync", "write a", "sync", "write a/b", "sync"]);
    assert_eq!(kinds(2), kinds(0));
    assert!(p.measures());
    // Without it, the order is as written every time.
    assert_eq!(s.phases[1].order(1).len(), 1);
}

/// `[[known]]`: a known issue names a check the scenario has, releases as dotted numbers and a
/// cgroup version it runs under; each mistake is an error at its line.
#[test]
fn known_issues_name_a_check_of_the_scenario_and_kernel_releases() {
    let with = |known: &str| format!("{GOOD}\n[[known]]\n{known}\n");
    let ok = parse(
        "f.toml",
        &with("check = \"settles(a)\"\nfrom = \"6.18\"\nto = \"6.19\"\ntext = \"t\""),
    )
    .unwrap();
    assert_eq!(ok.known.len(), 1);
    assert!(ok.known[0].applies("6.18.44-x", Some(Version::V2)));
    // A kind covers every result of it, implied ones included.
    assert!(
        parse(
            "f.toml",
            &with("check = \"identities\"\nfrom = \"6.1\"\ntext = \"t\"")
        )
        .is_ok()
    );
    // The line of the entry's first key.
    let line = format!("{GOOD}\n[[known]]\n").lines().count() + 1;
    let e = err(&with(
        "check = \"settles(x)\"\nfrom = \"6.18\"\ntext = \"t\"",
    ));
    assert_eq!(e.line, line, "{e}");
    assert!(e.msg.contains("no such check"), "{e}");
    let e = err(&with(
        "check = \"settles(a)\"\nfrom = \"6.18-rc1\"\ntext = \"t\"",
    ));
    assert_eq!(e.line, line + 1, "{e}");
    assert!(e.msg.contains("not a kernel release"), "{e}");
    let e = err(&with(
        "check = \"settles(a)\"\nfrom = \"6.18\"\nto = \"6.12\"\ntext = \"t\"",
    ));
    assert!(e.msg.contains("not after"), "{e}");
    let e = err(&with(
        "check = \"settles(a)\"\nfrom = \"6.18\"\ntext = \"t\"\nbug = 1",
    ));
    assert!(e.msg.contains("bug"), "{e}");
    let v2only = GOOD.replace("writeback = true", "writeback = true\ncgroup = [\"v2\"]");
    let e = err(&format!(
        "{v2only}\n[[known]]\ncheck = \"settles(a)\"\nfrom = \"6.18\"\ncgroup = \"v1\"\ntext = \"t\"\n"
    ));
    assert!(e.msg.contains("does not run under it"), "{e}");
}

mod quick;
mod values;

/// The checks a scenario exists for: by default every declared check but the performance ones,
/// or its performance checks when it declares nothing else; `purpose` says otherwise, and a value
/// that is not a boolean is an error at its line.
#[test]
fn purpose_defaults_and_overrides() {
    let s = parse("f.toml", GOOD).unwrap();
    let of = |s: &Scenario, kind: &str| -> Vec<bool> {
        (s.checks.iter())
            .filter(|c| !c.implied && c.name().starts_with(kind))
            .map(|c| c.purpose)
            .collect()
    };
    assert_eq!(of(&s, "settles"), [true]);
    assert_eq!(of(&s, "throughput"), [false]);
    assert!(s.checks.iter().filter(|c| c.implied).all(|c| !c.purpose));
    let marked = GOOD.replace("min_ratio = 0.5", "min_ratio = 0.5\npurpose = true");
    assert_eq!(of(&parse("f.toml", &marked).unwrap(), "throughput"), [true]);
    let off = GOOD.replace(
        "counters = [\"dirty\"]",
        "counters = [\"dirty\"]\npurpose = false",
    );
    assert_eq!(of(&parse("f.toml", &off).unwrap(), "settles"), [false]);
    let e = err(&GOOD.replace("min_ratio = 0.5", "min_ratio = 0.5\npurpose = \"yes\""));
    assert!(e.to_string().contains("f.toml:"), "{e}");
    // Nothing left to exist for: an error, not a scenario that could only pass vacuously.
    let none = off.replace(
        "vmstat = \"pgmigrate_success\"",
        "vmstat = \"pgmigrate_success\"\npurpose = false",
    );
    let e = err(&none);
    assert!(
        e.to_string()
            .contains("no check is one the scenario exists for"),
        "{e}"
    );
    let fault = load_all(None).unwrap();
    let fo = fault.iter().find(|s| s.name == "fault-overhead").unwrap();
    assert!(fo.checks.iter().filter(|c| !c.implied).all(|c| c.purpose));
}

/// Every built-in scenario that declares checks exists for at least one of them (one that
/// declares none, machine-pressure, exists for the invariants), and the ones that exist for a
/// paired rate say so: a scenario whose purpose is not judged is a skip, never a pass.
#[test]
fn builtin_scenarios_exist_for_a_check() {
    for s in load_all(None).unwrap() {
        let declared = s.checks.iter().filter(|c| !c.implied).count();
        assert!(
            declared == 0 || s.checks.iter().any(|c| c.purpose),
            "{}",
            s.name
        );
    }
    let all = load_all(None).unwrap();
    let purpose_of = |name: &str| -> Vec<bool> {
        let s = all.iter().find(|s| s.name == name).unwrap();
        (s.checks.iter().filter(|c| c.performance()))
            .map(|c| c.purpose)
            .collect()
    };
    assert_eq!(purpose_of("reclaim-parallel-read"), [true]);
    assert_eq!(purpose_of("dirty-migration"), [false]);
}

#[test]
fn a_checks_versions_key_overrides_its_promises_versions() {
    let with = |extra: &str| {
        GOOD.replace(
            "counters = [\"dirty\"]\n",
            &format!("counters = [\"dirty\"]\n{extra}\n"),
        )
    };
    let s = parse("f.toml", &with("promise = \"v2.stat.workingset\"")).unwrap();
    assert_eq!(s.checks[0].only, Some(Version::V2));
    let both = "promise = \"v2.stat.workingset\"\nversions = [\"v1\", \"v2\"]";
    let s = parse("f.toml", &with(both)).unwrap();
    assert_eq!(s.checks[0].only, None);
    let s = parse("f.toml", &with("versions = [\"v1\"]")).unwrap();
    assert_eq!(s.checks[0].only, Some(Version::V1));
    let e = err(&with("versions = [\"v3\"]"));
    assert!(e.msg.contains("unknown cgroup version \"v3\""), "{e}");
    assert_eq!(e.line, 24, "{e}");
}

#[test]
fn fixes_are_tags_of_upstream_commits() {
    let with = |fixes: &str| {
        GOOD.replace(
            "summary = \"s\"",
            &format!("summary = \"s\"\nfixes = {fixes}"),
        )
    };
    let ok = parse(
        "f.toml",
        &with(r#"['8a8792f600ab ("mm: memcg: fix memcg file_dirty numa stat")']"#),
    )
    .unwrap();
    assert_eq!(ok.fixes[0].commit, "8a8792f600ab");
    assert_eq!(
        ok.fixes[0].subject,
        "mm: memcg: fix memcg file_dirty numa stat"
    );
    // The line of the bad tag, and what is wrong with it.
    let e = err(&with(r#"["8a8792f600 (\"short\")"]"#));
    assert_eq!(e.line, 4, "{e}");
    assert!(e.msg.contains("12 lower-case hex digits"), "{e}");
    let e = err(&with(r#"["8a8792f600ab mm: memcg"]"#));
    assert!(e.msg.contains("the subject goes in"), "{e}");
    let e = err(&with(r#"["8a8792f600ab (\"a\")", "8a8792f600ab (\"b\")"]"#));
    assert!(e.msg.contains("named twice"), "{e}");
}

/// A probe needs its ballast and itself in half its group's (or an ancestor's) limit: reclaim
/// during a probe starts writeback. Quick runs shrink the probe with the limits.
#[test]
fn a_probe_needs_room_below_the_limit() {
    let with_probe = |size: &str| {
        GOOD.replacen(
            "[[check]]",
            &format!(
                "[[phase]]\nname = \"p3\"\nsteps = [{{ action = \"probe\", cgroup = \"a/b\", size = \"{size}\" }}]\n[[check]]"
            ),
            1,
        )
    };
    // a's 64 MiB leave room for a probe of 8 MiB (ballast 24 MiB, 32 MiB in all), not of 16.
    let mut s = parse("f.toml", &with_probe("8M")).unwrap();
    let e = err(&with_probe("16M"));
    assert!(
        e.msg
            .contains("a probe of 16.0 MiB in a/b needs a limit of at least 128.0 MiB")
            && e.msg.contains("but it is 64.0 MiB"),
        "{e}"
    );
    assert_eq!(probe::bounding_limit(&s, "a/b"), Some(64 << 20));
    s.scale_down(8);
    assert!(matches!(s.phases[2].steps[0], Step::Probe { size, .. } if size == probe::MIN_PROBE));
    let all = load_all(None).unwrap();
    let mut da = all
        .into_iter()
        .find(|s| s.name == "dirty-accounting")
        .unwrap();
    da.scale_down(8);
    let probe = da
        .phases
        .iter()
        .flat_map(|p| &p.steps)
        .find_map(|s| match s {
            Step::Probe { size, .. } => Some(*size),
            _ => None,
        });
    assert_eq!(probe, Some(8 << 20));
    assert!(probe::cramped(&da).is_none());
}

/// A `khugepaged` step's `task` advises inside the step: it must be held, with anon memory.
#[test]
fn khugepaged_advises_a_held_task_with_anon() {
    let text = include_str!("../../../scenarios/machine-pressure.toml");
    let s = crate::scenario::parse("m.toml", text).unwrap();
    assert!(s.phases[0].steps.iter().any(|st| matches!(
        st,
        Step::Khugepaged { task: Some(t), .. } if t == "t"
    )));
    let e = crate::scenario::parse(
        "m.toml",
        &text.replace(r#"task = "t", duration"#, r#"task = "u", duration"#),
    )
    .unwrap_err();
    assert!(e.to_string().contains("no task \"u\" is held here"), "{e}");
    let e = crate::scenario::parse(
        "m.toml",
        &text.replace(r#"anon = "8M" }"#, r#"shmem = "8M" }"#),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("holds no anon memory to advise hugepage"),
        "{e}"
    );
}
