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

/// Whether this test can run: it needs root (it creates real cgroups). Not root: the test says so
/// on stderr and returns early, so a plain `cargo test` as a user skips instead of failing.
fn is_root() -> bool {
    let root = nix::unistd::geteuid().is_root();
    if !root {
        eprintln!(
            "skipped: integration tests need root (they create real cgroups); run them as root"
        );
    }
    root
}

/// The directory test cgroups go into, as memcgtest reports it.
fn test_parent() -> PathBuf {
    if let Some((parent, _)) = place() {
        return parent;
    }
    let out = bin_raw().args(["env", "--json"]).output().unwrap();
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
    if !is_root() {
        return;
    }
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
        for name in ["baseline", "migrate", "after"] {
            let p = phases.iter().find(|p| p["name"] == name).unwrap();
            assert!(p["mb_per_s"].as_f64().unwrap() > 0.0);
        }
        let migrate = phases.iter().find(|p| p["name"] == "migrate").unwrap();
        let migrated = migrate["vmstat_delta"][0][1].as_i64().unwrap();
        assert!(migrated > 0, "no pages migrated: {migrate}");
    });
}

#[test]
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
fn malformed_scenario_exits_2_naming_file_line_column() {
    if !is_root() {
        return;
    }
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
fn not_root_exits_125() {
    if !is_root() {
        return;
    }
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
fn env_describes_this_machine() {
    isolated(env_checks);
}

fn env_checks() {
    let o = bin().args(["env", "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
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

#[test]
fn ktap_and_report_dir() {
    isolated(|| {
        let rep = tempfile::tempdir().unwrap();
        let o = bin()
            .args([
                "run",
                "dirty-migration",
                "--quick",
                "--format",
                "ktap",
                "--report",
            ])
            .arg(rep.path())
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(out.starts_with("KTAP version 1\n1..1\n"), "{out}");
        assert!(out.contains("\nok 1 dirty-migration\n"), "{out}");
        for f in [
            "results.ktap",
            "results.json",
            "dirty-migration.csv",
            "dirty-migration.svg",
        ] {
            assert!(rep.path().join(f).exists(), "{f} missing");
        }
        let csv = std::fs::read_to_string(rep.path().join("dirty-migration.csv")).unwrap();
        // The per-file truth is read first (where cachestat exists), then /proc/vmstat, the
        // groups, /proc/vmstat again and the truth again.
        let header = csv.lines().next().unwrap();
        assert!(
            header.contains("vmstat.pre.nr_dirty,vmstat.pre.nr_writeback,test.dirty,test.writeback,test.file,test.usage,control.dirty,"),
            "{header}"
        );
        assert!(
            header.starts_with("t,oracle.files.pre.test.file,") || header.starts_with("t,vmstat."),
            "{header}"
        );
        assert!(csv.lines().count() > 10);
        let svg = std::fs::read_to_string(rep.path().join("dirty-migration.svg")).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("global nr_dirty"));
        // Stdout is the report's KTAP file.
        let ktap = std::fs::read_to_string(rep.path().join("results.ktap")).unwrap();
        assert_eq!(out, ktap);
        // JUnit, read by an XML parser: one testcase per check of results.json.
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(rep.path().join("results.json")).unwrap(),
        )
        .unwrap();
        let checks = json["scenarios"][0]["checks"].as_array().unwrap();
        let xml = std::fs::read_to_string(rep.path().join("results.xml")).unwrap();
        let doc = roxmltree::Document::parse(&xml).expect("results.xml is XML");
        let cases: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .collect();
        assert!(checks.len() >= 5);
        assert_eq!(cases.len(), checks.len());
        for (c, k) in cases.iter().zip(checks) {
            assert_eq!(c.attribute("name"), k["name"].as_str());
            assert_eq!(c.attribute("classname"), Some("memcgtest.dirty-migration"));
        }
        // KCIDB: a test per scenario and per check, on the kernel's checkout.
        let kcidb: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(rep.path().join("kcidb.json")).unwrap())
                .unwrap();
        assert_eq!(kcidb["tests"].as_array().unwrap().len(), checks.len() + 1);
        assert_eq!(kcidb["tests"][0]["path"], "memcgtest.dirty-migration");
        assert_eq!(kcidb["tests"][0]["status"], "PASS");
        assert_eq!(
            kcidb["checkouts"][0]["id"],
            format!(
                "memcgtest:{}",
                json["environment"]["kernel"].as_str().unwrap()
            )
        );
        let html = std::fs::read_to_string(rep.path().join("index.html")).unwrap();
        assert!(html.contains("<a href=\"dirty-migration.csv\">") && html.contains("<svg"));
    });
}

/// On this machine: move-no-charge passes; the charge-moving scenarios either pass (a kernel that
/// still moves charges) or skip naming the EINVAL, never fail.
#[test]
fn task_moving_scenarios_pass_or_skip_with_the_reason() {
    isolated(|| {
        let o = bin()
            .args([
                "run",
                "move-no-charge",
                "move-charge-anon",
                "move-charge-file",
                "--quick",
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let sc = v["scenarios"].as_array().unwrap();
        let version = sc[0]["cgroup_version"].as_str().unwrap_or("").to_string();
        for s in sc {
            let st = s["status"].as_str().unwrap();
            let reason = s["reason"].as_str().unwrap();
            assert!(st == "pass" || st == "skip", "{}: {st} {reason}", s["name"]);
            if st == "skip" {
                assert!(
                    reason.contains("EINVAL") || reason.contains("needs cgroup"),
                    "{}: skipped without the reason: {reason}",
                    s["name"]
                );
            }
        }
        if version == "v1" {
            assert_eq!(sc[0]["status"], "pass", "move-no-charge: {}", text(&o));
            // Every move is timed.
            assert!(sc[0]["moves"][0]["wall_seconds"].as_f64().unwrap() > 0.0);
        }
    });
}

/// A copy of a result with only sample `i` of each measurement, times `scale`.
fn one_sample(result: &serde_json::Value, i: usize, scale: f64) -> serde_json::Value {
    let mut v = result.clone();
    for s in v["scenarios"].as_array_mut().unwrap() {
        for m in s["measurements"].as_array_mut().unwrap() {
            let x = m["samples"][i].as_f64().unwrap();
            m["samples"] = serde_json::json!([x * scale]);
        }
    }
    v
}

/// `memcgtest compare BASE NEW --format json`: exit code and rows.
fn compare_json(base: &Path, new: &Path) -> (Option<i32>, Vec<serde_json::Value>) {
    let o = bin()
        .arg("compare")
        .arg(base)
        .arg(new)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let rows: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    (o.status.code(), rows.as_array().unwrap().clone())
}

/// fault-overhead passes its paired ratio checks (alternating inside/outside in one run: the only
/// performance assertion here) and reports measurements, none from its warm-up phase. Between two
/// runs nothing about performance is asserted (the machine is shared; two runs need not perform
/// alike): only what `compare` must do whatever the numbers are. A run against itself never
/// separates; two runs get a verdict and exit 1 exactly on a regression; one sample a side gets
/// no verdict even for a halving (the sample-size rule), and three single-sample files pooled per
/// side do get one.
#[test]
fn fault_overhead_runs_and_compare_judges_only_on_enough_samples() {
    isolated(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut runs = Vec::new();
        for name in ["a.json", "b.json"] {
            let o = bin()
                .args(["run", "fault-overhead", "--quick", "--format", "json"])
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(0), "{}", text(&o));
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            let s = &v["scenarios"][0];
            assert_eq!(s["status"], "pass", "{}", text(&o));
            let checks = s["checks"].as_array().unwrap();
            assert!(checks.iter().all(|c| {
                let a = c["actual"].as_str().unwrap();
                a.contains("faults/s") || a.contains("MB/s")
            }));
            assert!(
                checks
                    .iter()
                    .any(|c| c["name"].as_str().unwrap().contains("fault"))
            );
            let ms = s["measurements"].as_array().unwrap();
            assert!(ms.len() >= 4);
            for m in ms {
                assert!(!m["name"].as_str().unwrap().starts_with("warmup"), "{m}");
                assert!(m["samples"].as_array().unwrap().len() >= 3, "{m}");
            }
            std::fs::write(dir.path().join(name), &o.stdout).unwrap();
            runs.push(v);
        }
        let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
        // Identical sample sets never separate.
        let (code, rows) = compare_json(&a, &a);
        assert_eq!(code, Some(0));
        for r in &rows {
            assert_eq!(r["verdict"], "no-significant-change", "{r}");
        }
        // Two runs: enough samples for a verdict, which may be anything; exit 1 only on a
        // regression.
        let (code, rows) = compare_json(&a, &b);
        assert!(!rows.is_empty());
        for r in &rows {
            assert_ne!(r["verdict"], "too-few-samples", "{r}");
        }
        let regressed = rows.iter().any(|r| r["verdict"] == "regression");
        assert_eq!(code, Some(if regressed { 1 } else { 0 }), "{rows:?}");
        // One sample a side: no verdict, even with every new sample halved.
        let (base, new) = (dir.path().join("base"), dir.path().join("new"));
        std::fs::create_dir_all(&base).unwrap();
        std::fs::create_dir_all(&new).unwrap();
        for i in 0..3 {
            let write = |d: &Path, v: serde_json::Value| {
                std::fs::write(d.join(format!("{i}.json")), v.to_string()).unwrap()
            };
            write(&base, one_sample(&runs[0], i, 1.0));
            write(&new, one_sample(&runs[1], i, 0.5));
        }
        let (code, rows) = compare_json(&base.join("0.json"), &new.join("0.json"));
        assert_eq!(code, Some(0));
        for r in &rows {
            assert_eq!(r["verdict"], "too-few-samples", "{r}");
        }
        let o = bin()
            .arg("compare")
            .arg(base.join("0.json"))
            .arg(new.join("0.json"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0));
        assert!(
            text(&o).contains("too few samples (n=1 v n=1)"),
            "{}",
            text(&o)
        );
        assert!(
            text(&o).contains("compare BASE_DIR NEW_DIR"),
            "{}",
            text(&o)
        );
        // Three such files pooled per side: 3 v 3, judged.
        let (code, rows) = compare_json(&base, &new);
        for r in &rows {
            assert_eq!(r["base"].as_array().unwrap().len(), 3, "{r}");
            assert_eq!(r["new"].as_array().unwrap().len(), 3, "{r}");
            assert_ne!(r["verdict"], "too-few-samples", "{r}");
        }
        let regressed = rows.iter().any(|r| r["verdict"] == "regression");
        assert_eq!(code, Some(if regressed { 1 } else { 0 }), "{rows:?}");
        // Bad input: exit 2 naming the file.
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "not json").unwrap();
        let o = bin().arg("compare").arg(&bad).arg(&a).output().unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert!(text(&o).contains("bad.json"), "{}", text(&o));
    });
}

/// Pids of the live children of `pid` (from /proc/*/stat), zombies excluded.
fn children_of(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Some((state, ppid)) = stat_of(p)
            && ppid == pid as i32
            && state != "Z"
        {
            out.push(p);
        }
    }
    out
}

/// (state, ppid) of a process, if it exists.
fn stat_of(pid: i32) -> Option<(String, i32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let mut it = rest.split(' ');
    let state = it.next()?.to_string();
    Some((state, it.next()?.parse().ok()?))
}

fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// Waits (30 s at most) until `dir` exists.
fn wait_for(dir: &Path) {
    let t = Instant::now();
    while !dir.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{} never appeared",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Reproduction 1 (issue 14): two runs at once left vm sysctls changed for good (B saved A's
/// probe and [sysctl] values as originals). Now one owns them, the other waits; afterwards every
/// vm sysctl is as it was.
#[test]
fn two_concurrent_runs_leave_every_vm_sysctl_as_it_was() {
    isolated(|| {
        let dir = good_scenarios();
        let before = vm_sysctls();
        let start = || {
            bin()
                .args([
                    "--scenario-dir",
                    dir.to_str().unwrap(),
                    "run",
                    "sysctl-probe",
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let a = start();
        std::thread::sleep(Duration::from_millis(300));
        let b = start();
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        assert_eq!(a.status.code(), Some(0), "{}", text(&a));
        assert_eq!(b.status.code(), Some(0), "{}", text(&b));
        assert!(
            text(&a).contains("waiting for the vm sysctls")
                || text(&b).contains("waiting for the vm sysctls"),
            "one run waited for the other:\n{}\n{}",
            text(&a),
            text(&b)
        );
        sysctls_settle_to(&before);
        // --no-wait refuses instead of waiting: 125.
        let a = start();
        let t = Instant::now();
        while !std::fs::read_to_string("/run/memcgtest/sysctl.lock")
            .is_ok_and(|p| p.trim() == a.id().to_string())
        {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "run A never owned the sysctls"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let o = bin()
            .args([
                "--scenario-dir",
                dir.to_str().unwrap(),
                "run",
                "sysctl-probe",
                "--no-wait",
            ])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(125), "{}", text(&o));
        assert!(text(&o).contains("--no-wait"), "{}", text(&o));
        let a = a.wait_with_output().unwrap();
        assert_eq!(a.status.code(), Some(0), "{}", text(&a));
        sysctls_settle_to(&before);
    });
}

/// Reproduction 2: `cleanup` tore down a live run whose binary is not named exactly
/// `memcgtest` (liveness was /proc/PID/comm). A renamed copy holds its lock like any run.
#[test]
fn a_renamed_copy_of_the_binary_survives_cleanup() {
    isolated(|| {
        let d = tempfile::tempdir().unwrap();
        let copy = d.path().join("memcgtest-0.1");
        std::fs::copy(env!("CARGO_BIN_EXE_memcgtest"), &copy).unwrap();
        let (parent, scratch) = place().unwrap();
        let dir = good_scenarios();
        let child = Command::new(&copy)
            .arg("--parent")
            .arg(&parent)
            .arg("--scratch")
            .arg(&scratch)
            .args(["--scenario-dir", dir.to_str().unwrap(), "run", "sleeper"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let group = parent.join(format!("memcgtest-{}-sleeper", child.id()));
        wait_for(&group.join("test/child"));
        let o = bin().arg("cleanup").output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(text(&o).contains("nothing to clean up"), "{}", text(&o));
        assert!(group.exists(), "cleanup removed a live run's groups");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(125), "the run lived on: {}", text(&o));
        assert!(!group.exists());
    });
}

/// Reproduction 3: `--parent <mount>/../../tmp/x` passed a prefix match: the run created groups
/// outside the hierarchy, and `cleanup` SIGKILLed whatever pid a plain file named cgroup.procs
/// listed.
#[test]
fn a_parent_outside_the_hierarchy_is_refused_by_run_and_cleanup() {
    isolated(|| {
        let outside = tempfile::Builder::new()
            .prefix("memcgtest-it-outside-")
            .tempdir_in("/tmp")
            .unwrap();
        let victim = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let fake = outside.path().join("memcgtest-4194305-x");
        std::fs::create_dir(&fake).unwrap();
        std::fs::write(fake.join("cgroup.procs"), format!("{}\n", victim.id())).unwrap();
        let mut escape = test_parent();
        for _ in 0..32 {
            escape.push("..");
        }
        escape.push(outside.path().strip_prefix("/").unwrap());
        assert!(escape.starts_with(test_parent()), "the old check took it");
        let (_, scratch) = place().unwrap();
        let o = bin_raw()
            .arg("--parent")
            .arg(&escape)
            .arg("--scratch")
            .arg(&scratch)
            .args(["run", "dirty-migration"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(125), "{}", text(&o));
        assert!(text(&o).contains("not inside"), "{}", text(&o));
        assert_eq!(marked_entries(outside.path()), vec![fake.clone()]);
        let o = bin_raw()
            .arg("--parent")
            .arg(&escape)
            .arg("--scratch")
            .arg(&scratch)
            .arg("cleanup")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(125), "{}", text(&o));
        let mut victim = victim;
        assert!(
            victim.try_wait().unwrap().is_none(),
            "cleanup killed the pid a plain file listed"
        );
        victim.kill().unwrap();
        victim.wait().unwrap();
        assert!(fake.exists());
    });
}

/// Reproduction 4: after SIGKILL of a run the compaction antagonist kept running (parent pid 1)
/// until `cleanup`. Workers die with their runner: none is left 2 s after the SIGKILL.
#[test]
fn sigkill_mid_compaction_leaves_no_worker() {
    isolated(|| {
        let dir = good_scenarios();
        let mut child = bin()
            .args(["--scenario-dir", dir.to_str().unwrap(), "run", "compactor"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t = Instant::now();
        let workers = loop {
            let w: Vec<i32> = children_of(child.id())
                .into_iter()
                .filter(|p| cmdline(*p).contains("__worker"))
                .collect();
            if w.iter().any(|p| cmdline(*p).contains("compaction")) {
                break w;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "the antagonist never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(300));
        child.kill().unwrap();
        child.wait().unwrap();
        std::thread::sleep(Duration::from_secs(2));
        let left: Vec<(i32, String)> = workers
            .iter()
            .filter(|p| stat_of(**p).is_some_and(|(st, _)| st != "Z"))
            .map(|p| (*p, cmdline(*p)))
            .collect();
        assert!(left.is_empty(), "workers outlived their runner: {left:?}");
        let o = bin().arg("cleanup").output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    });
}

/// Reproduction 7: `cleanup` looked only below its own cgroup (a run killed from another cgroup
/// leaked its groups while cleanup exited 0), deleted other users' `memcgtest-N-*` entries, and a
/// plain file with that name made it exit 1 forever.
#[test]
fn cleanup_finds_deep_leftovers_and_leaves_foreign_entries() {
    isolated(|| {
        let (parent, scratch) = place().unwrap();
        let deep = parent.join("ci.slice/job.scope");
        std::fs::create_dir_all(&deep).unwrap();
        let dir = good_scenarios();
        let mut child = bin_raw()
            .arg("--parent")
            .arg(&deep)
            .arg("--scratch")
            .arg(&scratch)
            .args(["--scenario-dir", dir.to_str().unwrap(), "run", "sleeper"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let group = deep.join(format!("memcgtest-{}-sleeper", child.id()));
        wait_for(&group.join("test/child"));
        child.kill().unwrap();
        child.wait().unwrap();
        let file = scratch.join("memcgtest-4194305-file");
        std::fs::write(&file, "").unwrap();
        let foreign = scratch.join("memcgtest-4194306-other-user");
        std::fs::create_dir(&foreign).unwrap();
        std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
        // Cleanup from the test's parent, two levels above the run's.
        let o = bin().arg("cleanup").output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(
            text(&o).contains(&format!("removed cgroup {}", group.display())),
            "{}",
            text(&o)
        );
        assert!(!group.exists());
        assert!(
            file.exists() && foreign.exists(),
            "foreign entries were removed"
        );
        std::fs::remove_file(&file).unwrap();
        std::fs::remove_dir(&foreign).unwrap();
        std::fs::remove_dir(&deep).unwrap();
        std::fs::remove_dir(parent.join("ci.slice")).unwrap();
    });
}

/// Another process on the machine writes all the time (outside the run's groups): with the
/// per-file truth the accounting scenarios still pass; without it (an old kernel) windows may be
/// inconclusive (skip), never failed.
#[test]
fn a_background_writer_outside_the_run_causes_no_failure() {
    isolated(|| {
        let dir = tempfile::Builder::new()
            .prefix("noise-writer-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let f = dir.path().join("f");
        let mut writer = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "while :; do dd if=/dev/zero of={0} bs=1M count=512 status=none; rm -f {0}; done",
                f.display()
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let o = bin()
            .args([
                "run",
                "dirty-accounting",
                "truncate-dirty",
                "mmap-dirty",
                "--quick",
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        let _ = Command::new("pkill")
            .args(["-P", &writer.id().to_string()])
            .status();
        let _ = writer.kill();
        let _ = writer.wait();
        let _ = Command::new("pkill")
            .args(["-f", &f.display().to_string()])
            .status();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", text(&o));
        });
        let per_file = String::from_utf8_lossy(&bin_raw().arg("env").output().unwrap().stdout)
            .contains("page-cache truth");
        for s in v["scenarios"].as_array().unwrap() {
            let status = s["status"].as_str().unwrap();
            if per_file {
                assert_eq!(status, "pass", "{s}");
            } else {
                assert!(status == "pass" || status == "skip", "{s}");
            }
        }
        assert_ne!(o.status.code(), Some(1), "{}", text(&o));
    });
}
