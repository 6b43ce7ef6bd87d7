//! The sampling plan: what the sampler reads for a scenario under one cgroup version, folded
//! once from the scenario's `[sample]` and the needs of its checks, and which files make each
//! group's per-file truth. The runner builds the sampler's sources from it.
//!
//! The accounting checks compare a group's counters with a reference. With cachestat(2), the
//! truth is per file: the pages of the files the group's own workloads wrote, counted from the
//! page cache's tags. Nothing another process does on the machine changes it. Without cachestat
//! (Linux < 6.5, or the syscall configured out) the reference is machine-wide /proc/vmstat, which
//! every other writer moves too; then the sampler also reads the run's own top group and the
//! memcg root, so a check can tell how much the rest of the machine dirtied during a window, and
//! call the window inconclusive instead of failing.

use crate::check::Needs;
use crate::model::Version;
use crate::model::counter;

/// What the sampler reads for a scenario.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SamplePlan {
    /// Counters read in every group, as scenarios name them, and on v1 the `.local` ones the
    /// hierarchy checks need.
    pub counters: Vec<String>,
    /// /proc/vmstat keys (`nr_*` levels are also read before the groups).
    pub vmstat: Vec<String>,
    /// Keys of `vmstat` read before the groups too (events a check brackets).
    pub vmstat_pre: Vec<String>,
    /// Groups whose tasks' own memory is read around the group files.
    pub tasks: Vec<String>,
    /// Groups whose memory.numa_stat is read around their memory.stat (v2 only), for the
    /// scenario's counters that it holds.
    pub numa: Vec<String>,
    /// Groups whose dirty and writeback the accounting checks compare with a reference.
    pub reference: Vec<String>,
    /// Which files make each group's per-file truth.
    pub files: FilePlan,
}

impl SamplePlan {
    /// The plan for `sc` under `version`, on a kernel whose group files show the counters
    /// `present` (see `Cgroup::counters_present`; a check that needs every counter gets those).
    pub fn new(sc: &Scenario, version: Version, present: &[String]) -> SamplePlan {
        let needs: Vec<Needs> = sc.checks.iter().map(|c| c.needs()).collect();
        let (mut counters, vmstat) = wanted(&sc.sample.counters, &sc.sample.vmstat, &needs);
        if needs.iter().any(|n| n.all_counters) {
            for c in present {
                add(&mut counters, c);
            }
        }
        if version == Version::V1 {
            for n in &needs {
                for x in &n.local_counters {
                    add(&mut counters, &counter::local(x));
                }
            }
        }
        let mut plan = SamplePlan {
            counters,
            vmstat,
            files: if needs.iter().any(|n| n.reference.is_some()) {
                file_plan(sc)
            } else {
                FilePlan::default()
            },
            ..SamplePlan::default()
        };
        for n in needs {
            if let Some(g) = n.tasks {
                add(&mut plan.tasks, &g);
            }
            // v1's memory.numa_stat holds the LRU lists only: the invariant over all of them.
            if let Some(g) = n.numa.filter(|_| version == Version::V2 || n.all_counters) {
                add(&mut plan.numa, &g);
            }
            if let Some(g) = n.reference {
                add(&mut plan.reference, &g);
            }
            for k in &n.vmstat_pre {
                add(&mut plan.vmstat_pre, k);
            }
        }
        plan
    }

    /// The counters memory.numa_stat is read for, with their keys there: on v2 the sampled ones
    /// it holds (those kept per node), on v1 its LRU lines (`counter::V1_NUMA`).
    pub fn numa_counters(&self, version: Version) -> Vec<(&str, &'static str)> {
        match version {
            Version::V2 => self
                .counters
                .iter()
                .filter_map(|c| Some((c.as_str(), counter::numa_key(c)?)))
                .collect(),
            Version::V1 => counter::V1_NUMA.iter().map(|l| (l.name, l.key)).collect(),
        }
    }
}

fn add(list: &mut Vec<String>, x: &str) {
    if !list.iter().any(|y| y == x) {
        list.push(x.to_string());
    }
}

/// The counters and /proc/vmstat keys sampled: those `[sample]` lists, then whatever a check
/// looks at, each once.
pub(super) fn wanted(
    counters: &[String],
    vmstat: &[String],
    needs: &[Needs],
) -> (Vec<String>, Vec<String>) {
    let (mut c, mut v) = (Vec::new(), Vec::new());
    for x in counters
        .iter()
        .chain(needs.iter().flat_map(|n| &n.counters))
    {
        add(&mut c, x);
    }
    for x in vmstat.iter().chain(needs.iter().flat_map(|n| &n.vmstat)) {
        add(&mut v, x);
    }
    (c, v)
}

use std::collections::BTreeMap;
use std::path::Path;

use super::{Hold, Scenario, Step};
use crate::model::record::within;

/// Which scratch files belong to which groups' truth.
#[derive(Debug, Clone, Default, PartialEq)]
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

/// Assigns each written file to the groups whose hierarchical counters must contain its pages.
/// Pure: from the scenario's steps alone.
pub fn file_plan(sc: &Scenario) -> FilePlan {
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
        let p = file_plan(&sc);
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
        let p = file_plan(&sc);
        let groups: Vec<&str> = p.unavailable.iter().map(|(g, _)| g.as_str()).collect();
        assert_eq!(groups, ["test", "control"]);
        assert!(p.unavailable[0].1.contains("file data"), "{p:?}");
        assert_eq!(p.files, vec![("mine".to_string(), vec!["own".to_string()])]);
    }

    /// The plan folds the checks' needs once: counters and vmstat keys they read, the `.local`
    /// values a v1 hierarchy needs, tasks and numa_stat where asked (numa_stat on v2 only), the
    /// groups judged against a reference with their files.
    #[test]
    fn the_plan_folds_every_need_per_version() {
        let sc = scenario(&format!(
            r#"{HEAD}
[[cgroup]]
name = "p"
[[cgroup]]
name = "p/a"
[sample]
counters = ["usage"]
[[phase]]
name = "x"
steps = [{{ action = "write", cgroup = "p/a", size = "1M" }}]
[[check]]
kind = "tracks-global"
cgroup = "p/a"
counters = ["dirty", "writeback"]
[[check]]
kind = "tasks"
cgroup = "p"
"#
        ));
        // The kernel shows these; the invariants every scenario gets judge them all.
        let present: Vec<String> = ["usage", "dirty", "dirty.local", "pgfault", "pgfault.local"]
            .map(String::from)
            .to_vec();
        let v1 = SamplePlan::new(&sc, Version::V1, &present);
        for c in [
            "usage",
            "dirty",
            "writeback",
            "anon",
            "dirty.local",
            "pgfault.local",
        ] {
            assert!(v1.counters.iter().any(|x| x == c), "{c}: {:?}", v1.counters);
        }
        assert_eq!(v1.counters[..4], ["usage", "dirty", "writeback", "anon"]);
        // The accounting checks' levels, then the events within-node((top)) brackets.
        assert_eq!(v1.vmstat[..2], ["nr_dirty", "nr_writeback"]);
        assert!(v1.vmstat.iter().any(|k| k == "pgmajfault"));
        assert_eq!(v1.vmstat_pre, crate::model::node_events::node_keys());
        assert_eq!(v1.tasks, ["p", "p/a"]);
        assert_eq!(v1.reference, ["p/a"]);
        // v1's memory.numa_stat is read for the LRU invariant every group gets.
        assert_eq!(v1.numa, ["p", "p/a"]);
        assert_eq!(
            v1.files.files,
            [("data".to_string(), vec!["p".to_string(), "p/a".to_string()])]
        );
        let v2 = SamplePlan::new(&sc, Version::V2, &present);
        assert_eq!(v2.counters[..4], ["usage", "dirty", "writeback", "anon"]);
        assert_eq!(v2.numa, ["p", "p/a"]);
    }
}
