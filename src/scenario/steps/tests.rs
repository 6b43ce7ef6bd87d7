use super::*;

/// A value every key of a kind accepts, so a table with all of them parses.
fn value(kind: StepKind, key: &str) -> String {
    match key {
        "cgroup" | "to" => "\"g\"".into(),
        "file" if kind == StepKind::Set => "\"memory.max\"".into(),
        "file" => "\"f\"".into(),
        "task" => "\"t\"".into(),
        "counter" => "\"dirty\"".into(),
        "fsync" | "dirty" | "redirty" | "huge" | "mlock" | "zero" | "shmem_huge" | "thread"
        | "unkillable" | "checked" => "true".into(),
        "count" | "clients" | "bystanders" | "immune" | "threads" | "files" | "fds" | "pipes" => {
            "2".into()
        }
        "from" => "\"g\"".into(),
        "outside" => "\"g\"".into(),
        "advice" => "\"pageout\"".into(),
        "region" => "\"anon\"".into(),
        "node" => "1".into(),
        "by" => "\"mbind\"".into(),
        "warm" => "true".into(),
        // Read-only excludes dirty, which the table sets.
        "readonly" | "nohugepage" => "false".into(),
        "duration" | "hold" => "\"1s\"".into(),
        "block_size" => "\"4K\"".into(),
        _ if kind == StepKind::Fault || kind == StepKind::Usemem => "\"8K\"".into(),
        _ => "\"1M\"".into(),
    }
}

/// Each kind's reader reads every key of its list, and only those: the list is the kind's
/// whole syntax. A key of another kind is refused at that key.
#[test]
fn every_kind_reads_exactly_its_keys() {
    assert_eq!(
        STEPS.iter().map(|s| s.kind).collect::<Vec<_>>(),
        StepKind::ALL
    );
    for s in STEPS {
        let mut toml = format!("x = {{ action = \"{}\"", s.kind);
        for k in s.keys {
            toml += &format!(", {} = {}", k.name, value(s.kind, k.name));
        }
        toml += " }\n";
        let doc: std::collections::BTreeMap<String, Spanned<Table>> =
            toml::from_str(&toml).unwrap();
        let text = Text {
            file: "f.toml",
            text: &toml,
        };
        let groups = vec!["g".to_string()];
        let table = &doc["x"];
        let args = StepArgs {
            keys: Keys {
                text,
                table: table.get_ref(),
                span: table.span(),
                what: format!("action {:?}", s.kind.name()),
                tag: "action",
            },
            syntax: s,
            groups: &groups,
            read: RefCell::new(Vec::new()),
        };
        let step = (s.read)(&args).unwrap_or_else(|e| panic!("{}: {e}", s.kind));
        assert_eq!(step.kind(), s.kind);
        let mut read = args.read.borrow().clone();
        read.sort();
        read.dedup();
        let mut keys: Vec<&str> = s.keys.iter().map(|k| k.name).collect();
        keys.sort();
        assert_eq!(read, keys, "{}", s.kind);
        // Without a required key the reader refuses the step.
        for k in s.keys.iter().filter(|k| k.required) {
            let without = toml.replace(&format!(", {} = {}", k.name, value(s.kind, k.name)), "");
            let doc: std::collections::BTreeMap<String, Spanned<Table>> =
                toml::from_str(&without).unwrap();
            let text = Text {
                file: "f.toml",
                text: &without,
            };
            let e = read_step(text, &doc["x"], &groups).unwrap_err();
            assert!(e.msg.contains(k.name), "{}: {e}", s.kind);
        }
    }
}

#[test]
fn a_key_the_kind_does_not_take_is_refused_at_its_line() {
    let toml = "x = { action = \"sync\",\n counter = \"dirty\" }\n";
    let doc: std::collections::BTreeMap<String, Spanned<Table>> = toml::from_str(toml).unwrap();
    let text = Text {
        file: "f.toml",
        text: toml,
    };
    let e = read_step(text, &doc["x"], &[]).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("f.toml", 2), "{e}");
    assert!(
        e.msg.contains("action \"sync\" takes no \"counter\""),
        "{e}"
    );
}

#[test]
fn nohugepage_without_readonly_is_refused_at_its_key() {
    let toml = "x = { action = \"hold\", cgroup = \"g\", task = \"t\",\n file = \"f\", size = \"2M\",\n nohugepage = true }\n";
    let doc: std::collections::BTreeMap<String, Spanned<Table>> = toml::from_str(toml).unwrap();
    let text = Text {
        file: "f.toml",
        text: toml,
    };
    let groups = vec!["g".to_string()];
    let e = read_step(text, &doc["x"], &groups).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("f.toml", 3), "{e}");
    assert!(e.msg.contains("it needs readonly"), "{e}");
    let ok = toml.replace("nohugepage = true", "readonly = true, nohugepage = true");
    let doc: std::collections::BTreeMap<String, Spanned<Table>> = toml::from_str(&ok).unwrap();
    let text = Text {
        file: "f.toml",
        text: &ok,
    };
    match read_step(text, &doc["x"], &groups).unwrap() {
        Step::Hold(h) => assert!(h.readonly && h.nohugepage),
        s => panic!("{s:?}"),
    }
}

/// The step's error for `toml` (one step `x`, groups g and admin), or the step.
fn one_step(toml: &str) -> Result<Step, ScenarioError> {
    let doc: std::collections::BTreeMap<String, Spanned<Table>> = toml::from_str(toml).unwrap();
    let text = Text {
        file: "f.toml",
        text: toml,
    };
    let groups = vec!["g".to_string(), "admin".to_string()];
    read_step(text, &doc["x"], &groups)
}

#[test]
fn a_write_from_a_group_needs_a_value_and_a_declared_group() {
    let set = |rest: &str| {
        one_step(&format!(
            "x = {{ action = \"set\", cgroup = \"g\", file = \"memory.max\",\n {rest} }}\n"
        ))
    };
    let e = set("from = \"admin\"").unwrap_err();
    assert!(e.msg.contains("it needs a value"), "{e}");
    assert_eq!(e.line, 2, "{e}");
    let e = set("value = \"8M\", from = \"nobody\"").unwrap_err();
    assert!(e.msg.contains("no cgroup named \"nobody\""), "{e}");
    match set("value = \"8M\", from = \"admin\"").unwrap() {
        Step::Set { from, .. } => assert_eq!(from.as_deref(), Some("admin")),
        s => panic!("{s:?}"),
    }
}

#[test]
fn pipe_size_is_a_power_of_two_for_pipes() {
    let hold = |rest: &str| {
        one_step(&format!(
            "x = {{ action = \"hold\", cgroup = \"g\", task = \"t\", {rest} }}\n"
        ))
    };
    for bad in [
        "pipes = 4, pipe_size = \"3K\"",
        "pipes = 4, pipe_size = \"32M\"",
        "anon = \"1M\", pipe_size = \"1M\"",
    ] {
        let e = hold(bad).unwrap_err();
        assert!(
            e.msg.contains("a power of two from 4K to 16M"),
            "{bad}: {e}"
        );
    }
    assert!(
        hold("pipes = 100001")
            .unwrap_err()
            .msg
            .contains("0..100000")
    );
    match hold("pipes = 4, pipe_size = \"1M\", unkillable = true").unwrap() {
        Step::Hold(h) => assert_eq!((h.pipes, h.pipe_size, h.unkillable), (4, 1 << 20, true)),
        s => panic!("{s:?}"),
    }
}
