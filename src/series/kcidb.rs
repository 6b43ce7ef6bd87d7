//! The series in KCIDB, as KernelCI reports a patch series: per patch one checkout (the commit),
//! one build (its status, duration and error lines) and its tests (each scenario under each
//! layout, `memcgtest.<scenario>`, and each failed check below it). Each boot's full report,
//! with every check, is the guest's own kcidb.json in the patch's directory.

use serde_json::{Value, json};

use super::build::Built;
use super::verdict::{PatchReport, SeriesReport};
use crate::report::kcidb::{SCHEMA_MAJOR, SCHEMA_MINOR, check_path, component, status};

/// The KCIDB document of a series, under `origin`.
pub fn render(rep: &SeriesReport, origin: &str) -> String {
    let (mut checkouts, mut builds, mut tests) = (Vec::new(), Vec::new(), Vec::new());
    for p in &rep.patches {
        let checkout_id = format!("{origin}:{}", p.patch.commit);
        let build_id = format!("{checkout_id}:{}", &p.patch.tree[..12]);
        checkouts.push(json!({
            "id": checkout_id,
            "origin": origin,
            "git_commit_hash": p.patch.commit,
            "comment": format!("#{} {}", p.patch.index, p.patch.subject),
            "valid": true,
            "misc": {"series_index": p.patch.index, "verdict": p.verdict},
        }));
        builds.push(build(p, origin, &checkout_id, &build_id));
        for r in &p.runs {
            for c in &r.cells {
                let path = format!("memcgtest.{}", component(&c.scenario));
                let id = format!("{build_id}:{}:{path}", r.cgroup);
                tests.push(json!({
                    "id": id,
                    "build_id": build_id,
                    "origin": origin,
                    "path": path,
                    "status": status(c.status),
                    "environment": {"comment": format!("cgroup {} (qemu)", r.cgroup)},
                    "misc": {"cgroup": r.cgroup, "reason": c.reason},
                }));
                for (check, message) in &c.failed {
                    let path = check_path(&c.scenario, check);
                    tests.push(json!({
                        "id": format!("{build_id}:{}:{path}", r.cgroup),
                        "build_id": build_id,
                        "origin": origin,
                        "path": path,
                        "status": "FAIL",
                        "log_excerpt": message,
                        "environment": {"comment": format!("cgroup {} (qemu)", r.cgroup)},
                    }));
                }
            }
        }
    }
    let doc = json!({
        "version": {"major": SCHEMA_MAJOR, "minor": SCHEMA_MINOR},
        "checkouts": checkouts,
        "builds": builds,
        "tests": tests,
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

fn build(p: &PatchReport, origin: &str, checkout_id: &str, id: &str) -> Value {
    let (status, seconds, excerpt) = match &p.build {
        Built::Image { seconds, .. } => ("PASS", *seconds, None),
        Built::Failed {
            errors, seconds, ..
        } => ("FAIL", *seconds, Some(errors.join("\n"))),
    };
    let mut b = json!({
        "id": id,
        "checkout_id": checkout_id,
        "origin": origin,
        "architecture": "x86_64",
        "config_name": "tinyconfig+ci/kernel.config",
        "duration": seconds,
        "status": status,
    });
    if let Some(e) = excerpt {
        b["log_excerpt"] = e.into();
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkout_a_build_and_tests_per_patch() {
        let rep = crate::series::tests::two_patch_report();
        let doc: Value = serde_json::from_str(&render(&rep, "memcgtest")).unwrap();
        assert_eq!(doc["checkouts"].as_array().unwrap().len(), 2);
        assert_eq!(doc["builds"][1]["status"], "FAIL");
        let tests = doc["tests"].as_array().unwrap();
        assert!(
            tests
                .iter()
                .any(|t| t["path"] == "memcgtest.dirty.dirty-probe.test")
        );
    }
}
