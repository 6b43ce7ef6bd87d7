//! placed: after a `migrate` step, a group's memory.numa_stat shows on each node at least the
//! pages of the moved mapping that move_pages(2) finds there. Migration moves a page's per-node
//! counters (its lruvec's, the memcg's and the node's) from the old node to the new one in
//! __folio_migrate_mapping() (file, shmem, dirty, writeback, mapped) and in the LRU add of the
//! new folio (the LRU sizes v1 lists); a kernel that moves them by the wrong amount (one page for
//! a huge folio) or not at all leaves the group's pages on a node they left.

use crate::check::args::CheckArgs;
use crate::check::{CGROUP, Check, CheckResult, CheckSpec, Kind, Outcome, missing};
use crate::model::contract::{v1, v2};
use crate::model::error::ScenarioError;
use crate::model::placement::Placement;
use crate::model::units::human_bytes;
use crate::model::{Record, StepKind};

/// `placed` in the check table.
pub const KIND: Kind = Kind {
    kind: "placed",
    doc: "Per-node truth, after each `migrate` step of a task of the group: for each node, each \
memory.numa_stat line the moved mapping's pages count in (v2: `anon`; a memfd's `shmem`, `file` \
and `file_mapped`; a mapped file's `file` and `file_mapped`; v1, which lists LRU sizes: `anon` \
for anon and shmem, `file`) shows at least the mapping's pages that move_pages(2) finds on that \
node, read between two move_pages answers that agree (else that step is not judged: something \
else moved the pages, such as NUMA balancing). Migration moves the per-node counters with the \
page (__folio_migrate_mapping); a kernel that moves one page's worth for a huge folio, or none, \
leaves them on the node the pages left. Tolerance: the unflushed-stats bound (v1: the same, for \
pages in per-CPU LRU batches). Not exercised without a migrate step that left more than the \
tolerance on a node. Implied in every scenario with a migrate step, for each group. Result name: \
`placed(<cgroup>)`.",
    keys: &[CGROUP],
    parse,
    promises: &[&v2::NUMA_STAT, &v1::NUMA_STAT],
};

#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub cgroup: String,
}

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(Placed {
        cgroup: i.cgroup("cgroup")?,
    }))
}

impl CheckSpec for Placed {
    fn name(&self) -> String {
        format!("placed({})", self.cgroup)
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        placed(self.name(), rec, &self.cgroup)
    }
}

/// One line of memory.numa_stat on one node below the pages found there.
struct Short<'a> {
    p: &'a Placement,
    line: &'a str,
    node: usize,
    shown: i64,
}

pub fn placed(name: String, rec: &Record, cgroup: &str) -> CheckResult {
    let tol = rec.machine.stat_batch_bytes() as i64;
    let moves: Vec<(&Placement, String)> = (rec.steps.iter())
        .filter(|s| s.kind == StepKind::Migrate)
        .filter_map(|s| Some((s.placed.as_ref()?, rec.phase_at(s.end).to_string())))
        .filter(|(p, _)| p.cgroup == cgroup)
        .collect();
    let unstable = moves.iter().filter(|(p, _)| !p.stable).count();
    let judged: Vec<&(&Placement, String)> = (moves.iter())
        .filter(|(p, _)| p.stable && (0..p.pages.len()).any(|n| p.bytes_on(n) > tol))
        .collect();
    if judged.is_empty() {
        return missing(
            name,
            format!(
                "no migrate step of a task in {cgroup} left more than {} of its pages on a node{}",
                human_bytes(tol),
                match unstable {
                    0 => String::new(),
                    n => format!(
                        " ({n} not judged: the pages moved while memory.numa_stat was read)"
                    ),
                }
            ),
        );
    }
    for (p, phase) in &judged {
        if let Some(s) = shortfall(p, tol) {
            return failed(name, &s, phase, tol);
        }
    }
    let most = (judged.iter())
        .map(|(p, _)| p.bytes_on(p.node as usize))
        .max()
        .unwrap_or(0);
    let mut r = CheckResult::new(
        name,
        Outcome::Pass,
        format!("{} migrate steps judged", judged.len()),
        "each node's lines at least the pages found there".into(),
        format!(
            "up to {} moved to a node and counted there{}",
            human_bytes(most),
            match unstable {
                0 => String::new(),
                n => format!("; {n} steps not judged (the pages moved while read)"),
            }
        ),
    );
    r.tolerance = Some(human_bytes(tol));
    r
}

/// The worst line and node of `p` below the pages found there, beyond `tol`.
fn shortfall(p: &Placement, tol: i64) -> Option<Short<'_>> {
    let mut worst: Option<(i64, Short)> = None;
    for (line, per) in &p.numa {
        for node in 0..p.pages.len() {
            let shown = per.get(node).copied().unwrap_or(0);
            let gap = p.bytes_on(node) - shown;
            if gap > tol && worst.as_ref().is_none_or(|(g, _)| gap > *g) {
                worst = Some((
                    gap,
                    Short {
                        p,
                        line,
                        node,
                        shown,
                    },
                ));
            }
        }
    }
    worst.map(|(_, s)| s)
}

fn failed(name: String, s: &Short, phase: &str, tol: i64) -> CheckResult {
    let found = s.p.bytes_on(s.node);
    let mut r = CheckResult::new(
        name,
        Outcome::Fail,
        format!("numa_stat {} N{} {}", s.line, s.node, human_bytes(s.shown)),
        format!("at least {}", human_bytes(found - tol)),
        format!(
            "phase {phase}: after task {}'s {} moved to node {}, memory.numa_stat {} N{} shows {} of {}, \
             below the {} of it move_pages finds on node {} (tolerance {}): the group's counters stayed \
             on the node the pages left",
            s.p.task,
            s.p.region.name(),
            s.p.node,
            s.line,
            s.node,
            human_bytes(s.shown),
            s.p.cgroup,
            human_bytes(found),
            s.node,
            human_bytes(tol)
        ),
    );
    r.tolerance = Some(human_bytes(tol));
    r
}
