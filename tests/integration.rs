//! End-to-end tests as root on this machine's real cgroups (v1 or v2, whichever `auto` picks).
//! They run the built binary, check exit codes and output, and after every test verify that no
//! cgroup or scratch directory carrying the marker remains and that no vm sysctl changed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Scenarios share the machine: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_memcgtest"))
}

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios")
}

/// Test scenarios except the malformed one.
fn good_scenarios() -> PathBuf {
    let d = std::env::temp_dir().join(format!("memcgtest-it-scenarios-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    for f in ["impossible.toml", "sleeper.toml"] {
        std::fs::copy(scenarios().join(f), d.join(f)).unwrap();
    }
    d
}

fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "integration tests need root (they create real cgroups); run them as root"
    );
}

/// The directory test cgroups go into, as memcgtest reports it.
fn test_parent() -> PathBuf {
    let out = bin().args(["env", "--json"]).output().unwrap();
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

/// Runs `f` with the machine to itself and checks it left nothing behind.
fn isolated(f: impl FnOnce()) {
    require_root();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = vm_sysctls();
    f();
    assert_eq!(
        marked_entries(&test_parent()),
        Vec::<PathBuf>::new(),
        "leftover cgroups"
    );
    assert_eq!(
        marked_entries(Path::new("/var/tmp")),
        Vec::<PathBuf>::new(),
        "leftover scratch"
    );
    assert_eq!(vm_sysctls(), before, "a vm sysctl changed");
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
fn unknown_scenario_is_a_usage_error_and_tmpfs_scratch_untestable() {
    isolated(|| {
        let o = bin().args(["run", "no-such-scenario"]).output().unwrap();
        assert_eq!(o.status.code(), Some(2));
        // The scratch directory is the machine's, not the command line's fault: 125.
        let o = bin()
            .args(["--scratch", "/dev/shm", "run", "dirty-migration"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(125), "{}", text(&o));
        assert!(text(&o).contains("no writeback"), "{}", text(&o));
        for bad in ["/nonexistent-memcgtest-scratch", "/proc/version"] {
            let o = bin()
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
