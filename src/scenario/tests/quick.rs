//! What `--quick` changes in a scenario file: a phase's `quick_repeat`, a write's `quick_size`.

use super::*;

/// `quick_repeat` runs a phase fewer times under `--quick` only, and no more than `repeat`.
#[test]
fn quick_repeat_applies_to_quick_runs_only() {
    let with = |q: &str| {
        GOOD.replace(
            "name = \"p1\"\n",
            &format!("name = \"p1\"\nrepeat = 3\n{q}"),
        )
    };
    let mut s = parse("f.toml", &with("quick_repeat = 1\n")).unwrap();
    assert_eq!((s.phases[0].repeat, s.phases[0].quick_repeat), (3, Some(1)));
    assert_eq!(
        crate::scenario::render::phase(&s.phases[0])
            .matches("quick_repeat = 1")
            .count(),
        1
    );
    s.quicken();
    assert_eq!((s.phases[0].repeat, s.phases[1].repeat), (1, 1));
    let e = err(&with("quick_repeat = 4\n"));
    assert!(e.msg.contains("quick_repeat must be 1..3"), "{e}");
    assert_eq!((e.line, e.col), (16, 16), "{e}");
    let e = err(&with("quick_repeat = 0\n"));
    assert!(e.msg.contains("0 only for a warm-up phase"), "{e}");
    // A warm-up phase with 0 is left out of --quick runs, and no check may name it.
    let warm = with("warmup = true\nquick_repeat = 0\n");
    let e = err(&warm);
    assert!(e.msg.contains("\"p1\" does not run under --quick"), "{e}");
    let unnamed =
        "[[check]]\nkind = \"throughput\"\nphase = \"p2\"\nbaseline = \"p1\"\nmin_ratio = 0.5\n";
    assert!(warm.contains(unnamed));
    let mut s = parse("f.toml", &warm.replace(unnamed, "")).unwrap();
    s.quicken();
    assert_eq!(
        s.phases.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["p2"]
    );
}

/// A write's `quick_size` is its size under `--quick` only (instead of size / 8), at most `size`.
#[test]
fn a_writes_quick_size_applies_to_quick_runs_only() {
    let with = |q: &str| {
        GOOD.replace(
            "{ action = \"write\", cgroup = \"a/b\", size = \"8M\" }",
            &format!("{{ action = \"write\", cgroup = \"a/b\", size = \"8M\"{q} }}"),
        )
    };
    let size = |s: &crate::scenario::Scenario| match &s.phases[0].steps[0] {
        Step::Write { size, .. } => *size,
        other => panic!("{other:?}"),
    };
    let s = parse("f.toml", &with(", quick_size = \"4M\"")).unwrap();
    assert_eq!(size(&s), 8 << 20);
    assert!(
        s.phases[0].steps[0]
            .to_toml()
            .contains("quick_size = \"4M\"")
    );
    let mut quick = s.clone();
    quick.scale_down(8);
    assert_eq!(size(&quick), 4 << 20);
    // Without it, size / 8.
    let mut plain = parse("f.toml", &with("")).unwrap();
    plain.scale_down(8);
    assert_eq!(size(&plain), 1 << 20);
    let e = err(&with(", quick_size = \"16M\""));
    assert!(e.msg.contains("quick_size must be at most size"), "{e}");
    assert_eq!(e.line, 15, "{e}");
}
