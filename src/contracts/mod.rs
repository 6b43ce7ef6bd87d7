//! `memcgtest contracts`: every behavioural promise of the cgroup memory documentation
//! (`crate::model::contract`), each with the checks that judge it, the scenarios that reach its
//! condition, the mutants of kernel-patches/ written from it, and for the few no test can judge
//! the reason. Without results the table says what judges each promise; with the results of
//! runs (`run --format json`) it says where each was judged and how it came out.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::check::KINDS;
use crate::coverage::MUTANTS;
use crate::model::contract::{self, Class, Contract, Doc};
use crate::model::{CheckResult, Outcome, RunReport, Version};
use crate::scenario::Scenario;

mod render;

pub use render::{markdown, render};

/// How a promise stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// A check judged it in the results given and it held.
    Held,
    /// A check judged it in the results given and it broke.
    Broken,
    /// A check judged it in the results given and it broke as a known issue of the scenario
    /// says it does on this kernel (the kernel or the document is wrong; docs/findings.md).
    Known,
    /// Checks judge it, but none did in the results given (or no results were given).
    Judged,
    /// A check of the suite judges it where its condition is reached, and in the results given
    /// no run reached it: the results come from the other cgroup version, say.
    NotReached,
    /// No test can judge it: `reason` says why.
    Unjudged,
}

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub contract: &'static Contract,
    pub class: Class,
    pub doc: &'static str,
    pub topic: &'static str,
    pub promise: &'static str,
    pub condition: &'static str,
    /// The check kinds that judge it: kinds that list it, and kinds of scenario checks that
    /// name it (`promise = ...`).
    pub checks: Vec<String>,
    /// The built-in scenarios whose checks name it; with results, the scenarios in which it was
    /// judged.
    pub scenarios: Vec<String>,
    /// The mutants of kernel-patches/ written from it (their `Promises:` header).
    pub mutants: Vec<String>,
    pub standing: Standing,
    pub reason: Option<&'static str>,
}

/// The table: a row per promise, in the documents' order.
#[derive(Debug, Clone, Serialize)]
pub struct Table {
    pub rows: Vec<Row>,
    /// Whether results were given (the standing then says what they show).
    pub from_results: bool,
}

impl Table {
    /// The share of promises (percent) a check of the suite judges.
    pub fn judged_pct(&self) -> f64 {
        let judged = self.rows.iter().filter(|r| !r.checks.is_empty()).count();
        100.0 * judged as f64 / self.rows.len().max(1) as f64
    }

    /// The share of promises (percent) the results judged (held or broken), of those of the
    /// cgroup versions the results ran under.
    pub fn reached_pct(&self, versions: &[Version]) -> f64 {
        let of = |r: &&Row| versions.contains(&version(r.contract.doc));
        let all = self.rows.iter().filter(of).count();
        let reached = (self.rows.iter().filter(of))
            .filter(|r| {
                matches!(
                    r.standing,
                    Standing::Held | Standing::Broken | Standing::Known
                )
            })
            .count();
        100.0 * reached as f64 / all.max(1) as f64
    }
}

/// The cgroup version whose promises a document makes.
pub fn version(doc: Doc) -> Version {
    match doc {
        Doc::V1 => Version::V1,
        Doc::V2 => Version::V2,
    }
}

/// The table for `scenarios` (the built-in ones and any of --scenario-dir) and the results of
/// `reports` (none: what judges each promise).
pub fn table(scenarios: &[Scenario], reports: &[RunReport]) -> Table {
    let rows = contract::all()
        .map(|c| row(c, scenarios, reports))
        .collect();
    Table {
        rows,
        from_results: !reports.is_empty(),
    }
}

fn row(c: &'static Contract, scenarios: &[Scenario], reports: &[RunReport]) -> Row {
    let mut checks: BTreeSet<String> = (KINDS.iter())
        .filter(|k| k.promises.contains(&c))
        .map(|k| k.kind.to_string())
        .collect();
    let mut named: BTreeSet<String> = BTreeSet::new();
    for sc in scenarios {
        for ch in sc.checks.iter().filter(|ch| ch.promises.contains(&c)) {
            checks.insert(kind_name(&ch.name()));
            named.insert(sc.name.clone());
        }
    }
    let (standing, scenarios) = if c.unjudged.is_some() {
        (Standing::Unjudged, named)
    } else if reports.is_empty() {
        (Standing::Judged, named)
    } else {
        let checks = (reports.iter().flat_map(|rep| &rep.scenarios))
            .flat_map(|r| r.checks.iter().map(move |ch| (r.name.as_str(), ch)));
        judged_in(c, checks)
    };
    Row {
        contract: c,
        class: c.class,
        doc: c.doc.short(),
        topic: c.topic,
        promise: c.quote,
        condition: c.condition,
        checks: checks.into_iter().collect(),
        scenarios: scenarios.into_iter().collect(),
        mutants: mutants_of(c),
        standing,
        reason: c.unjudged,
    }
}

/// How the results judged `c`: held, broken (known or not) or not reached, and in the
/// scenarios where a check judged it. A check that was not exercised judged nothing, nor did a
/// failure of another promise of the same check.
fn judged_in<'a>(
    c: &Contract,
    checks: impl Iterator<Item = (&'a str, &'a CheckResult)>,
) -> (Standing, BTreeSet<String>) {
    let mut scenarios = BTreeSet::new();
    let (mut broken, mut known) = (false, false);
    for (scenario, ch) in checks.filter(|(_, ch)| ch.promises.iter().any(|p| p == c.id)) {
        // A failure that names the promise it broke says nothing of its other promises.
        let other = ch.broke.as_ref().is_some_and(|b| b != c.id);
        match ch.outcome {
            Outcome::NotExercised | Outcome::Inconclusive => continue,
            Outcome::Fail if other => continue,
            Outcome::Fail if ch.known.is_some() => known = true,
            Outcome::Fail => broken = true,
            Outcome::Pass => {}
        }
        scenarios.insert(scenario.to_string());
    }
    let standing = match (scenarios.is_empty(), broken, known) {
        (true, _, _) => Standing::NotReached,
        (false, true, _) => Standing::Broken,
        (false, false, true) => Standing::Known,
        (false, false, false) => Standing::Held,
    };
    (standing, scenarios)
}

/// `under-limit(g)` -> `under-limit`.
fn kind_name(result_name: &str) -> String {
    result_name
        .split('(')
        .next()
        .unwrap_or(result_name)
        .to_string()
}

/// The mutants whose `Promises:` header names `c`.
pub fn mutants_of(c: &Contract) -> Vec<String> {
    (MUTANTS.iter())
        .filter(|(_, text)| header(text, "Promises").iter().any(|p| p == c.id))
        .map(|(name, _)| name.to_string())
        .collect()
}

/// The comma-separated values of a mutant's header line `name:`.
pub fn header(text: &str, name: &str) -> Vec<String> {
    let tag = format!("{name}:");
    (text.lines())
        .take_while(|l| !l.starts_with("---"))
        .filter_map(|l| l.strip_prefix(&tag))
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect()
}

#[cfg(test)]
mod tests;
