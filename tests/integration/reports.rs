//! Reports, task moves and `compare` on real runs.

use super::*;

#[test]
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
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
        // The per-file truth is read first (where cachestat exists), then /proc/vmstat (the
        // accounting checks' levels, identities' isolated pages, then the events within-node((top)) brackets), the
        // scenario's top group and aux (hierarchy((top))), the declared groups, /proc/vmstat
        // again and the truth again; every header carries its unit.
        let header = csv.lines().next().unwrap();
        for part in [
            "vmstat:pre:nr_dirty[pages],vmstat:pre:nr_writeback[pages],vmstat:pre:nr_isolated_anon[pages],vmstat:pre:nr_isolated_file[pages],vmstat:pre:pgfault[events],",
            "vmstat:pre:thp_swpout_fallback[events],(top).dirty[B],",
            "again:(top).usage[B],aux.dirty[B],",
            "again:aux.usage[B],tasks:pre:test.anon[B],",
            "tasks:pre:test.pagetables[B],test.dirty[B],test.writeback[B],test.file[B],test.usage[B],",
            "tasks:pre:control.pagetables[B],control.dirty[B],",
        ] {
            assert!(header.contains(part), "{part} not in {header}");
        }
        assert!(
            header.starts_with("t[s],files:pre:test.file[B],")
                || header.starts_with("t[s],vmstat:"),
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
        behaviour_of_a_real_report(rep.path());
    });
}

/// `compare --behaviour` on a real run's report directory: six copies of it against six copies
/// whose CSV has test.file doubled report exactly test.file's observables, shifted (exact: the
/// same in every copy) by +100 %, exit 0 and 1 with --fail-on-change; the run against itself
/// reports nothing; two copies a side are refused (2), naming the directory.
fn behaviour_of_a_real_report(run: &Path) {
    let d = tempfile::tempdir().unwrap();
    let csv = std::fs::read_to_string(run.join("dirty-migration.csv")).unwrap();
    let col = (csv.lines().next().unwrap().split(','))
        .position(|h| h == "test.file[B]")
        .unwrap();
    let doubled: Vec<String> = (csv.lines().enumerate())
        .map(|(i, l)| {
            let mut f: Vec<String> = l.split(',').map(String::from).collect();
            if i > 0 {
                f[col] = (f[col].parse::<i64>().unwrap() * 2).to_string();
            }
            f.join(",")
        })
        .collect();
    for (side, text) in [("base", csv.clone()), ("new", doubled.join("\n") + "\n")] {
        for i in 0..6 {
            let dir = d.path().join(side).join(i.to_string());
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::copy(run.join("results.json"), dir.join("results.json")).unwrap();
            std::fs::write(dir.join("dirty-migration.csv"), &text).unwrap();
        }
    }
    let compare = |b: &str, n: &str, more: &[&str]| {
        let o = bin()
            .args(["compare", "--behaviour", "--format", "json"])
            .arg(d.path().join(b))
            .arg(d.path().join(n))
            .args(more)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        (o.status.code(), v, text(&o))
    };
    let (code, v, out) = compare("base", "new", &[]);
    assert_eq!(code, Some(0), "{out}");
    let changes = v["changes"].as_array().unwrap();
    assert!(!changes.is_empty(), "{out}");
    for c in changes {
        assert_eq!(
            (&c["group"], &c["counter"]),
            (&"test".into(), &"file".into()),
            "{c}"
        );
        assert_eq!(c["kind"], "exact", "{c}");
    }
    assert!(v["judged"].as_u64().unwrap() > 100, "{out}");
    assert_eq!(compare("base", "new", &["--fail-on-change"]).0, Some(1));
    let (code, v, out) = compare("base", "base", &[]);
    assert_eq!(
        (code, v["changes"].as_array().map(Vec::len)),
        (Some(0), Some(0)),
        "{out}"
    );
    for i in 2..6 {
        std::fs::remove_dir_all(d.path().join("new").join(i.to_string())).unwrap();
    }
    let (code, _, out) = compare("base", "new", &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("new: 2 report directories"), "{out}");
}

/// On this machine: move-no-charge passes; the charge-moving scenarios either pass (a kernel that
/// still moves charges) or skip naming the EINVAL, never fail.
#[test]
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
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
    compare_json_with(base, new, &[])
}

/// `compare --format json` with more options.
fn compare_json_with(
    base: &Path,
    new: &Path,
    options: &[&str],
) -> (Option<i32>, Vec<serde_json::Value>) {
    let o = bin()
        .arg("compare")
        .arg(base)
        .arg(new)
        .args(["--format", "json"])
        .args(options)
        .output()
        .unwrap();
    let rows: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    // The suite's own cost comes with every comparison: the whole run's wall time first.
    assert_eq!(rows["cost"][0]["scenario"], "", "{}", text(&o));
    (
        o.status.code(),
        rows["measurements"].as_array().unwrap().clone(),
    )
}

/// fault-overhead passes its paired ratio checks (alternating inside/outside in one run: the only
/// performance assertion here) and reports measurements, none from its warm-up phase. Between two
/// runs nothing about performance is asserted (the machine is shared; two runs need not perform
/// alike): only what `compare` must do whatever the numbers are. A run against itself never
/// separates; two runs get a verdict and exit 1 exactly on a regression; one sample a side gets
/// no verdict even for a halving (the sample-size rule), and three single-sample files pooled per
/// side do get one.
#[test]
#[ignore = "needs root: creates real cgroups (run as root with --include-ignored)"]
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
            // The ratio checks (the nested groups also get hierarchy checks).
            let ratios: Vec<_> = checks
                .iter()
                .filter(|c| c["name"].as_str().unwrap().starts_with("ratio"))
                .collect();
            assert!(!ratios.is_empty());
            assert!(ratios.iter().all(|c| {
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
        // Identical sample sets never separate (a file against itself, its repetitions pooled).
        let (code, rows) = compare_json_with(&a, &a, &["--pool-repetitions"]);
        assert_eq!(code, Some(0));
        for r in &rows {
            assert_eq!(r["verdict"], "no-significant-change", "{r}");
        }
        // Two single runs: a run is one sample (its median), too few for any verdict, exit 0.
        let (code, rows) = compare_json(&a, &b);
        assert!(!rows.is_empty());
        assert_eq!(code, Some(0), "{rows:?}");
        for r in &rows {
            assert_eq!(r["verdict"], "too-few-samples", "{r}");
        }
        // Their repetitions pooled (not independent, on request): enough samples for a
        // verdict, which may be anything; exit 1 only on a regression.
        let (code, rows) = compare_json_with(&a, &b, &["--pool-repetitions"]);
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
            text(&o).contains("too few runs (n=1 v n=1)"),
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
