//! Concurrent runs, signals, leftovers and `cleanup`.

use super::*;

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
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
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
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
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
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
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
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
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
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
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
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
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
