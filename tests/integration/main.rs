//! End-to-end tests as root on this machine's real cgroups (v1 or v2, whichever `auto` picks).
//! They run the built binary, check exit codes and output, and after every test verify that no
//! cgroup or scratch directory carrying the marker remains and that no vm sysctl changed.
//!
//! The machine is shared with other runs of memcgtest: every test runs in a parent cgroup and a
//! scratch directory of its own (`isolated` passes `--parent` and `--scratch`; `cleanup` too), and
//! asserts only on what it created. Their names (`memcgtest-it-*`) are not markers.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Scenarios share the machine: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// The current test's own parent cgroup and scratch directory (set by `isolated`).
static PLACE: Mutex<Option<(PathBuf, PathBuf)>> = Mutex::new(None);

/// The binary, run in the current test's own parent cgroup and scratch directory.
fn bin() -> Command {
    let mut c = bin_raw();
    if let Some((parent, scratch)) = place() {
        c.arg("--parent").arg(parent).arg("--scratch").arg(scratch);
    }
    c
}

fn place() -> Option<(PathBuf, PathBuf)> {
    PLACE.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The binary without options.
fn bin_raw() -> Command {
    Command::new(env!("CARGO_BIN_EXE_memcgtest"))
}

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios")
}

/// Test scenarios except the malformed one.
fn good_scenarios() -> PathBuf {
    let d = std::env::temp_dir().join(format!("memcgtest-it-scenarios-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    for f in [
        "impossible.toml",
        "sleeper.toml",
        "sysctl-probe.toml",
        "compactor.toml",
    ] {
        std::fs::copy(scenarios().join(f), d.join(f)).unwrap();
    }
    d
}

/// These tests need root (they create real cgroups): they are `#[ignore]`d, so a plain `cargo
/// test` reports them as ignored, and `ci/test.sh` runs them as root with `--include-ignored`. Run
/// that way as another user, a test fails here with the reason rather than pass having tested
/// nothing.
fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs root (it creates real cgroups): run it as root"
    );
}

/// The directory test cgroups go into, as memcgtest reports it.
fn test_parent() -> PathBuf {
    if let Some((parent, _)) = place() {
        return parent;
    }
    let out = bin_raw()
        .args(["env", "--format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    PathBuf::from(v["cgroup"]["test_parent"].as_str().expect("a test parent"))
}

fn marked_entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("memcgtest-"))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

fn vm_sysctls() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir("/proc/sys/vm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("dirty"))
        .map(|e| {
            let val = std::fs::read_to_string(e.path()).unwrap_or_default();
            (e.file_name().to_string_lossy().into_owned(), val)
        })
        .collect();
    v.sort();
    v
}

/// The vm sysctls come back to `before`. Other runs on this machine change them for a moment
/// (a probe), so only a change that lasts 20 s counts.
fn sysctls_settle_to(before: &[(String, String)]) {
    let t = Instant::now();
    loop {
        let now = vm_sysctls();
        if now == before {
            return;
        }
        if t.elapsed() > Duration::from_secs(20) {
            assert_eq!(now, before, "a vm sysctl changed (for 20 s)");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Runs `f` in a parent cgroup and scratch directory of its own, one test at a time, and checks
/// it left nothing behind there and no vm sysctl changed.
fn isolated(f: impl FnOnce()) {
    require_root();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let own = test_parent();
    // v2: the new parent gets the memory controller only if its parent hands it down.
    let _ = std::fs::write(own.join("cgroup.subtree_control"), "+memory");
    let parent = own.join(format!("memcgtest-it-{}", std::process::id()));
    let _ = std::fs::create_dir(&parent);
    let scratch = tempfile::Builder::new()
        .prefix("memcgtest-it-")
        .tempdir_in("/var/tmp")
        .unwrap();
    *PLACE.lock().unwrap_or_else(|e| e.into_inner()) =
        Some((parent.clone(), scratch.path().to_path_buf()));
    let before = vm_sysctls();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    *PLACE.lock().unwrap_or_else(|e| e.into_inner()) = None;
    if let Err(p) = r {
        // The test's own parent goes on this path too (rmdir removes it only if memcgtest left
        // nothing in it).
        let _ = std::fs::remove_dir(&parent);
        std::panic::resume_unwind(p);
    }
    assert_eq!(
        marked_entries(&parent),
        Vec::<PathBuf>::new(),
        "leftover cgroups"
    );
    assert_eq!(
        marked_entries(scratch.path()),
        Vec::<PathBuf>::new(),
        "leftover scratch"
    );
    let _ = std::fs::remove_dir(&parent);
    sysctls_settle_to(&before);
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
fn dirty_migration_passes_with_phases_and_migrations() {
    isolated(|| {
        let o = bin()
            .args(["run", "dirty-migration", "--format", "json"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let s = &v["scenarios"][0];
        assert_eq!(s["status"], "pass", "{}", text(&o));
        let phases = s["phases"].as_array().unwrap();
        for name in ["migrate", "after"] {
            let p = phases.iter().find(|p| p["name"] == name).unwrap();
            assert!(p["mb_per_s"].as_f64().unwrap() > 0.0);
        }
        let migrate = phases.iter().find(|p| p["name"] == "migrate").unwrap();
        let migrated = migrate["vmstat_delta"][0][1].as_i64().unwrap();
        assert!(migrated > 0, "no pages migrated: {migrate}");
        assert_eq!(migrate["samples_mb_per_s"].as_array().unwrap().len(), 3);
    });
}

#[test]
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
fn impossible_expectation_fails_with_actual_and_expected() {
    isolated(|| {
        let dir = good_scenarios();
        let o = bin()
            .args(["--scenario-dir", dir.to_str().unwrap(), "run", "impossible"])
            .output()
            .unwrap();
        let out = text(&o);
        assert_eq!(o.status.code(), Some(1), "{out}");
        assert!(out.contains("FAIL settles(test)"), "{out}");
        assert!(out.contains("actual test.file = "), "{out}");
        assert!(out.contains("expected <= 0"), "{out}");
    });
}

#[test]
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
fn malformed_scenario_exits_2_naming_file_line_column() {
    require_root();
    let f = scenarios().join("broken.toml");
    let o = bin().args(["check", f.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("broken.toml:10:1:"), "{err}");
    assert!(err.contains("colour"), "{err}");
    // The same file given to `run` stops before anything is created.
    isolated(|| {
        let o = bin()
            .args(["--scenario-dir", scenarios().to_str().unwrap(), "run"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    });
}

#[test]
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
fn not_root_exits_125() {
    require_root();
    use std::os::unix::process::CommandExt;
    let o = bin()
        .args(["run", "dirty-migration"])
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125), "{}", text(&o));
    assert!(text(&o).contains("needs root"));
}

#[test]
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
fn unknown_scenario_is_a_usage_error_and_tmpfs_scratch_untestable() {
    isolated(|| {
        let o = bin().args(["run", "no-such-scenario"]).output().unwrap();
        assert_eq!(o.status.code(), Some(2));
        // The scratch directory is the machine's, not the command line's fault: 125.
        let o = bin_raw()
            .args(["--scratch", "/dev/shm", "run", "dirty-migration"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(125), "{}", text(&o));
        assert!(text(&o).contains("no writeback"), "{}", text(&o));
        for bad in ["/nonexistent-memcgtest-scratch", "/proc/version"] {
            let o = bin_raw()
                .args(["--scratch", bad, "run", "dirty-migration"])
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(125), "{bad}: {}", text(&o));
            assert!(text(&o).contains("scratch directory"), "{}", text(&o));
        }
    });
}

#[test]
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
fn failed_check_stays_1_when_the_report_cannot_be_written() {
    isolated(|| {
        let dir = good_scenarios();
        let report = tempfile::tempdir().unwrap();
        // The directory is writable, but results.ktap cannot be written once the run is over.
        std::fs::create_dir(report.path().join("results.ktap")).unwrap();
        let o = bin()
            .args(["--scenario-dir", dir.to_str().unwrap(), "run", "impossible"])
            .arg("--report")
            .arg(report.path())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(text(&o).contains("memcgtest: report: "), "{}", text(&o));
    });
}

#[test]
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
fn a_sysctl_the_kernel_lacks_is_the_machines_fault() {
    isolated(|| {
        let dir = tempfile::tempdir().unwrap();
        let text_of = std::fs::read_to_string(scenarios().join("impossible.toml")).unwrap();
        let sc = text_of.replace(
            "[[cgroup]]",
            "[sysctl]\n\"vm.memcgtest_no_such_knob\" = \"1\"\n\n[[cgroup]]",
        );
        std::fs::write(dir.path().join("impossible.toml"), sc).unwrap();
        let o = bin()
            .args([
                "--scenario-dir",
                dir.path().to_str().unwrap(),
                "run",
                "impossible",
            ])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(125), "{}", text(&o));
        assert!(text(&o).contains("memcgtest_no_such_knob"), "{}", text(&o));
    });
}

/// Starts the sleeper scenario and waits until its cgroup exists.
fn start_sleeper(extra: &[&str]) -> (std::process::Child, PathBuf) {
    let dir = good_scenarios();
    let mut args = vec!["--scenario-dir", dir.to_str().unwrap(), "run", "sleeper"];
    args.extend_from_slice(extra);
    let child = bin()
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let parent = test_parent();
    let name = format!("memcgtest-{}-sleeper", child.id());
    let dir = parent.join(name);
    let t = Instant::now();
    // Wait for the writer to finish and the sleep to begin (the child group has pages charged).
    while !(dir.join("test/child").exists()
        && std::fs::read_to_string(dir.join("test/child/cgroup.procs")).is_ok_and(|s| s.is_empty())
        && t.elapsed() > Duration::from_secs(1))
    {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "sleeper never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, dir)
}

#[test]
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
fn sigkill_leftovers_are_removed_by_cleanup() {
    isolated(|| {
        let (mut child, dir) = start_sleeper(&[]);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(dir.exists(), "a SIGKILLed run leaves its groups");
        let o = bin().arg("cleanup").output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(
            text(&o).contains(&format!("removed cgroup {}", dir.display())),
            "{}",
            text(&o)
        );
        assert!(!dir.exists());
        // A second cleanup finds nothing, and never touches live runs or foreign groups.
        let o = bin().arg("cleanup").output().unwrap();
        assert!(text(&o).contains("nothing to clean up"), "{}", text(&o));
    });
}

#[test]
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
fn sigterm_and_sigint_clean_up_and_exit_125() {
    for sig in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGINT,
    ] {
        isolated(|| {
            let (child, dir) = start_sleeper(&[]);
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
            let o = child.wait_with_output().unwrap();
            assert_eq!(o.status.code(), Some(125), "{sig}: {}", text(&o));
            assert!(text(&o).contains("interrupted"), "{}", text(&o));
            assert!(!dir.exists());
        });
    }
}

#[test]
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
fn timeout_ends_the_scenario_as_error_with_last_sample() {
    isolated(|| {
        let (child, dir) = start_sleeper(&["--timeout", "3s"]);
        let o = child.wait_with_output().unwrap();
        let out = text(&o);
        assert_eq!(o.status.code(), Some(1), "{out}");
        assert!(out.contains("ERROR"), "{out}");
        assert!(out.contains("timeout after 3 s"), "{out}");
        assert!(out.contains("last sample: t="), "{out}");
        assert!(out.contains("test/child.dirty="), "{out}");
        assert!(!dir.exists());
    });
}

#[test]
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
fn env_describes_this_machine() {
    isolated(env_checks);
}

fn env_checks() {
    let o = bin().args(["env", "--format", "json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // --json: the same document (the flag env had before --format).
    let o = bin().args(["env", "--json"]).output().unwrap();
    let alias: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(alias["cgroup"], v["cgroup"]);
    let layout = v["cgroup"]["layout"].as_str().unwrap();
    assert!(["v1", "v2", "hybrid"].contains(&layout));
    assert_eq!(v["cgroup"]["test_parent_writable"], true);
    let mi = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let has_v1_memory = mi
        .lines()
        .any(|l| l.contains(" - cgroup ") && l.ends_with(",memory"));
    if has_v1_memory && mi.contains(" - cgroup2 ") {
        assert_eq!(layout, "hybrid");
    }
    // Charge moving: a kernel from 6.13 on removed it; older ones must report it available on v1.
    let release = v["kernel"].as_str().unwrap();
    let mut it = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|x| x.parse::<u32>().ok());
    let (maj, min) = (it.next().unwrap(), it.next().unwrap());
    let cm = v["capabilities"]["charge_moving"].as_str().unwrap();
    if (maj, min) >= (6, 13) {
        assert!(cm.starts_with("not available"), "{cm}");
    }
    assert!(
        marked_entries(&test_parent()).is_empty(),
        "the probe left a group"
    );
}

mod processes;
mod reports;
