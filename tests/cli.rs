//! The command line as programs read it, without root: every subcommand that prints for
//! programs takes `--format json`; `env` and `list` also take `--json`, the flag they had before.

use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_memcgtest"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

/// stdout of a command that must exit 0.
fn stdout(args: &[&str]) -> Vec<u8> {
    let o = run(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
    o.stdout
}

#[test]
fn list_json_is_list_format_json() {
    let json = stdout(&["list", "--format", "json"]);
    assert_eq!(stdout(&["list", "--json"]), json);
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let names: Vec<&str> = (v.as_array().unwrap().iter())
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert!(names.contains(&"dirty-migration"), "{names:?}");
    assert_eq!(stdout(&["list"]), stdout(&["list", "--format", "human"]));
    // The alias and an explicit --format together are a usage error, whichever they say.
    for f in ["human", "json"] {
        assert_eq!(
            run(&["list", "--json", "--format", f]).status.code(),
            Some(2)
        );
    }
}

/// `env --format json` (and `--json`) is one JSON document. The test parent is no cgroup, so
/// env probes nothing (no throw-away group), as root or not.
#[test]
fn env_format_json_parses() {
    for flag in [&["--format", "json"][..], &["--json"]] {
        let mut args = vec!["--parent", "/nonexistent/memcgtest-cli-test", "env"];
        args.extend(flag);
        let v: serde_json::Value = serde_json::from_slice(&stdout(&args)).unwrap();
        assert!(v["kernel"].is_string(), "{v}");
        assert!(v["cgroup"]["layout"].is_string(), "{v}");
        // Nothing probed: no interface read from a throw-away group.
        assert!(v.get("interface").is_none(), "{v}");
    }
    let text = stdout(&["--parent", "/nonexistent/x", "env", "--format", "human"]);
    assert!(serde_json::from_slice::<serde_json::Value>(&text).is_err());
}
