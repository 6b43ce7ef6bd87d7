//! What the accounting checks compare a group's counters with.
//!
//! With cachestat(2), the truth is per file: the pages of the files the group's own workloads
//! wrote, counted from the page cache's tags (`sample::pagecache`). Nothing another process does
//! on the machine changes it. Without cachestat (Linux < 6.5, or the syscall configured out) the
//! reference is machine-wide /proc/vmstat, which every other writer moves too; then the sampler
//! also reads the run's own top group and the memcg root, so a check can tell how much the rest of
//! the machine dirtied during a window, and call the window inconclusive instead of failing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::scenario::{Hold, Scenario, Step};

/// Which scratch files belong to which groups' truth.
#[derive(Debug, Default, PartialEq)]
pub struct FilePlan {
    /// File name (relative to the run's scratch directory) and the groups whose truth it is part
    /// of: the group that writes it and every declared ancestor.
    pub files: Vec<(String, Vec<String>)>,
    /// Groups with no per-file truth, and why (a file they write is also written by a group
    /// outside their subtree, so its pages may be charged to either).
    pub unavailable: Vec<(String, String)>,
}

/// Files a step writes or dirties, with the group it runs in. Truncate, unlink and fsync act on
/// files another step wrote; `create` files are written clean in the helper group and only read.
fn written(step: &Step) -> Vec<(String, &str)> {
    match step {
        Step::Write { cgroup, file, .. } | Step::MmapWrite { cgroup, file, .. } => {
            vec![(file.clone(), cgroup)]
        }
        Step::Probe { cgroup, file, .. } => {
            vec![(file.clone(), cgroup), (format!("{file}.ballast"), cgroup)]
        }
        Step::Hold(Hold {
            cgroup,
            file: Some(f),
            write,
            ..
        }) => {
            let mut v = vec![(f.clone(), cgroup.as_str())];
            if *write > 0 {
                let w = Path::new(f).with_extension("written");
                v.push((w.to_string_lossy().into_owned(), cgroup));
            }
            v
        }
        _ => Vec::new(),
    }
}

fn within(group: &str, ancestor: &str) -> bool {
    group == ancestor
        || group
            .strip_prefix(ancestor)
            .is_some_and(|r| r.starts_with('/'))
}

/// Assigns each written file to the groups whose hierarchical counters must contain its pages.
/// Pure: from the scenario's steps alone.
pub fn plan(sc: &Scenario) -> FilePlan {
    let mut writers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for step in sc.phases.iter().flat_map(|p| &p.steps) {
        for (file, group) in written(step) {
            let w = writers.entry(file).or_default();
            if !w.iter().any(|g| g == group) {
                w.push(group.to_string());
            }
        }
    }
    let mut out = FilePlan::default();
    for spec in &sc.cgroups {
        let g = &spec.name;
        for (file, ws) in &writers {
            if ws.iter().any(|w| within(w, g))
                && let Some(other) = ws.iter().find(|w| !within(w, g))
            {
                out.unavailable.push((
                    g.clone(),
                    format!("file {file} is written both in {g}'s subtree and in {other}"),
                ));
                break;
            }
        }
    }
    for (file, ws) in writers {
        let groups: Vec<String> = sc
            .cgroups
            .iter()
            .map(|c| c.name.clone())
            .filter(|g| ws.iter().all(|w| within(w, g)))
            .filter(|g| !out.unavailable.iter().any(|(u, _)| u == g))
            .collect();
        if !groups.is_empty() {
            out.files.push((file, groups));
        }
    }
    out
}

/// The root of the cgroup hierarchy `dir` lies in: the highest ancestor that is still a cgroup
/// directory (has cgroup.procs). Its memory.stat, where it has one (always on v1; on v2 only on
/// newer kernels), counts every page on the machine.
pub fn hierarchy_root(dir: &Path) -> PathBuf {
    let mut root = dir.to_path_buf();
    while let Some(up) = root.parent() {
        if !up.join("cgroup.procs").exists() {
            break;
        }
        root = up.to_path_buf();
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(text: &str) -> Scenario {
        crate::scenario::parse("t.toml", text).unwrap()
    }

    const HEAD: &str = r#"
name = "t"
summary = "s"
[origin]
subject = "x"
[requires]
writeback = true
"#;

    #[test]
    fn a_file_belongs_to_its_writer_and_ancestors() {
        let sc = scenario(&format!(
            r#"{HEAD}
[[cgroup]]
name = "p"
[[cgroup]]
name = "p/a"
[[cgroup]]
name = "q"
[[phase]]
name = "x"
steps = [
  {{ action = "write", cgroup = "p/a", file = "one", size = "1M" }},
  {{ action = "probe", cgroup = "q", size = "1M" }},
  {{ action = "hold", task = "w", cgroup = "p/a", file = "held", write = "1M" }},
  {{ action = "truncate", cgroup = "q", file = "one" }},
]
"#
        ));
        let p = plan(&sc);
        assert!(p.unavailable.is_empty(), "{p:?}");
        let get = |f: &str| p.files.iter().find(|(n, _)| n == f).map(|(_, g)| g.clone());
        assert_eq!(get("one"), Some(vec!["p".to_string(), "p/a".to_string()]));
        assert_eq!(get("probe"), Some(vec!["q".to_string()]));
        assert_eq!(get("probe.ballast"), Some(vec!["q".to_string()]));
        assert_eq!(get("held"), Some(vec!["p".to_string(), "p/a".to_string()]));
        assert_eq!(
            get("held.written"),
            Some(vec!["p".to_string(), "p/a".to_string()])
        );
    }

    #[test]
    fn a_file_written_by_two_subtrees_has_no_owner() {
        let sc = scenario(&format!(
            r#"{HEAD}
[[cgroup]]
name = "test"
[[cgroup]]
name = "control"
[[cgroup]]
name = "own"
[[phase]]
name = "x"
steps = [
  {{ action = "write", cgroup = "test", size = "1M" }},
  {{ action = "write", cgroup = "control", size = "1M" }},
  {{ action = "write", cgroup = "own", file = "mine", size = "1M" }},
]
"#
        ));
        let p = plan(&sc);
        let groups: Vec<&str> = p.unavailable.iter().map(|(g, _)| g.as_str()).collect();
        assert_eq!(groups, ["test", "control"]);
        assert!(p.unavailable[0].1.contains("file data"), "{p:?}");
        assert_eq!(p.files, vec![("mine".to_string(), vec!["own".to_string()])]);
    }

    #[test]
    fn the_hierarchy_root_is_the_top_cgroup_directory() {
        let d = tempfile::tempdir().unwrap();
        let leaf = d.path().join("memory/a/b");
        std::fs::create_dir_all(&leaf).unwrap();
        for p in ["memory", "memory/a", "memory/a/b"] {
            std::fs::write(d.path().join(p).join("cgroup.procs"), "").unwrap();
        }
        assert_eq!(hierarchy_root(&leaf), d.path().join("memory"));
    }
}
