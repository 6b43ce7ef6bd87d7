//! Behaviour, base against new: every counter of every group the sampler read, at each phase's
//! end and the scenario's, from each boot's report directory (its results.json for the phases'
//! times, `<scenario>.csv` for the samples), compared between the two kernels' boots.
//!
//! The noise model. Each boot gives one value per observable. A key every boot of one side
//! shows and no boot of the other does has vanished or appeared ([`MIN_BOOTS`] a side). An
//! amount changed only with [`SHIFT_BOOTS`] boots a side, and when either
//! - it is the same in every boot of each side, different between the sides by [`Noise::rel`]
//!   of the larger value or more (exact: what never varied needs no floor of noise), or
//! - it varies between boots of one kernel (reclaim's timing, the sampler's own faults, what
//!   kworkers did), and all three hold: the sides are apart (every new value above every base
//!   value, or every one below); the gap between them is wider than either side's own spread
//!   (largest minus smallest of its boots: what the base does between its own boots is no
//!   change); the medians differ by [`Noise::rel`] of the larger one or more, and at least by
//!   the memcg statistics' own lag for bytes and pages (a read may miss up to 2 x 64 pages per
//!   CPU not yet flushed, `Machine::stat_batch_bytes`) or [`Noise::events`] events (shifted).
//!
//! `ab` runs a second set of rounds when its first set shows a candidate with 3 boots a side,
//! and judges over the boots of both.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result};

use crate::model::behaviour::{Change, ChangeKind, END, MACHINE, Measure, Observable, Spread};
use crate::model::error::{Error, exit};
use crate::model::{Column, HELPER_GROUP, PhaseResult, RunReport, Series, Status};

/// What one boot showed: each observable's value, and the scenarios it ran (a key missing from
/// a scenario that did not run is no vanished key).
#[derive(Debug, Clone, Default)]
pub struct Boot {
    pub ran: BTreeSet<String>,
    pub values: BTreeMap<Observable, i64>,
    /// Each observable's unit (B, pages, events).
    pub units: BTreeMap<Observable, &'static str>,
    /// The guest's CPUs and page size: the floor of bytes and pages.
    pub cpus: u64,
    pub page_size: u64,
}

/// The noise a change must exceed (see the module's comment).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    /// Fraction of the larger median the medians must differ by.
    pub rel: f64,
    /// Events the medians of an event count must differ by.
    pub events: i64,
}

/// The noise model `ab --behaviour` uses; its figures are in docs/ab.md.
pub const NOISE: Noise = Noise {
    rel: 0.10,
    events: 64,
};

/// How many boots of each side an observable needs for a verdict.
pub const MIN_BOOTS: usize = 3;

/// How many boots of each side a changed amount (shifted or exact) needs. Amounts of reclaim
/// come in batches and take two or three values a kernel chooses between by timing (swap-out's
/// direct reclaim steals 0, 512, 1194 or 1536 pages on stock 6.12; shmem-limit's 39 pages of
/// reclaim fall in phase release or the one before): 3 boots a side fall into different values
/// by chance often enough that a suite of 57,000 observables shows tens every time (docs/ab.md);
/// 6 a side, about 1 time in 2,000 for an observable of two equally likely values.
pub const SHIFT_BOOTS: usize = 6;

/// The row of the last sample at or before `t` (the first row when none is).
fn row_at(s: &Series, t: f64) -> usize {
    (0..s.len()).rev().find(|&r| s.t[r] <= t).unwrap_or(0)
}

/// The observable a column is, at the end of `phase`, if it is one: a test group's counter
/// (not the helpers' group), its v2 memory.numa_stat's sum over the nodes (`numa_stat.<key>`),
/// or a /proc/vmstat event count (read after the groups).
fn observable(scenario: &str, phase: &str, c: &Column) -> Option<Observable> {
    let (group, counter) = match c {
        Column::Group {
            group,
            counter,
            local,
        } if group != HELPER_GROUP => {
            let name = if *local {
                format!("{counter}.local")
            } else {
                counter.clone()
            };
            (group.clone(), name)
        }
        Column::Numa {
            group,
            counter,
            pre: false,
        } => (group.clone(), format!("numa_stat.{counter}")),
        Column::Vmstat { key, pre: false } if c.unit() == "events" => (MACHINE.into(), key.clone()),
        _ => return None,
    };
    Some(Observable {
        scenario: scenario.into(),
        phase: phase.into(),
        group,
        counter,
        measure: match unit(c) {
            "events" => Measure::Delta,
            _ => Measure::Level,
        },
    })
}

/// A column's unit, by the counter table: a memory.numa_stat column holds events for the
/// workingset counters it keeps per node, bytes for the rest.
fn unit(c: &Column) -> &'static str {
    use crate::model::counter::{Unit, counter};
    match c {
        Column::Numa { counter: name, .. } => match counter(name) {
            Some(x) if x.unit == Unit::Events => "events",
            _ => "B",
        },
        _ => c.unit(),
    }
}

/// Each phase's name (numbered where it repeats), start and end, then [`END`] over the whole
/// series. Phases of results written before their times were recorded are left out.
fn windows(phases: &[PhaseResult], s: &Series) -> Vec<(String, f64, f64)> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for p in phases.iter().filter(|p| p.end > 0.0) {
        let n = seen.entry(p.measure.name.as_str()).or_default();
        *n += 1;
        let name = match *n {
            1 => p.measure.name.clone(),
            n => format!("{}#{n}", p.measure.name),
        };
        out.push((name, p.start, p.end));
    }
    let last = s.t.last().copied().unwrap_or(0.0);
    out.push((END.into(), f64::NEG_INFINITY, last));
    out
}

/// Adds one scenario's observables to `boot`: each column's value at each phase's end (a
/// level) or its change over the phase (an event count).
pub fn observe(boot: &mut Boot, scenario: &str, phases: &[PhaseResult], s: &Series) {
    if s.is_empty() {
        return;
    }
    boot.ran.insert(scenario.into());
    for (phase, start, end) in windows(phases, s) {
        let (r0, r1) = (row_at(s, start), row_at(s, end));
        for (i, c) in s.columns().iter().enumerate() {
            let Some(o) = observable(scenario, &phase, c) else {
                continue;
            };
            let v = match o.measure {
                Measure::Level => s.get(r1, i),
                Measure::Delta => s.get(r1, i) - s.get(r0, i),
            };
            boot.units.insert(o.clone(), unit(c));
            boot.values.insert(o, v);
        }
    }
}

/// The smallest difference of medians that can count for `unit`, before the relative floor.
fn floor(unit: &str, boot: &Boot, noise: Noise) -> f64 {
    let batch_pages = 2 * 64 * boot.cpus.max(1);
    match unit {
        "B" => (batch_pages * boot.page_size.max(4096)) as f64,
        "pages" => batch_pages as f64,
        _ => noise.events as f64,
    }
}

/// The verdict on one observable shown by every boot of both sides (`b`, `n`: their values).
pub fn shifted(b: &[i64], n: &[i64], abs_floor: f64, noise: Noise) -> Option<ChangeKind> {
    let (sb, sn) = (Spread::of(b), Spread::of(n));
    let gap = if sn.min > sb.max {
        sn.min - sb.max
    } else if sb.min > sn.max {
        sb.min - sn.max
    } else {
        return None;
    };
    let diff = (sn.median - sb.median).abs();
    let rel = noise.rel * sb.median.abs().max(sn.median.abs());
    // The same value in every boot of a side is no noise: one OOM event more is a change.
    if sb.range() == 0 && sn.range() == 0 {
        return (diff >= rel).then_some(ChangeKind::Exact);
    }
    (diff >= abs_floor.max(rel) && gap > sb.range().max(sn.range())).then_some(ChangeKind::Shifted)
}

/// Every observable that changed between the `base` boots and the `new` boots: see the module's
/// comment for the rules. An observable is judged on the boots that ran its scenario, at least
/// [`MIN_BOOTS`] a side; one some boots of a side showed and others did not is no verdict.
/// A changed amount (shifted or exact) counts only with `shift_boots` boots a side; a vanished
/// or appeared key with [`MIN_BOOTS`]. Returns the changes and how
/// many observables were judged.
pub fn judge(
    base: &[Boot],
    new: &[Boot],
    noise: Noise,
    shift_boots: usize,
) -> (Vec<Change>, usize) {
    let all: BTreeSet<&Observable> = (base.iter().chain(new))
        .flat_map(|b| b.values.keys())
        .collect();
    let (mut out, mut judged) = (Vec::new(), 0);
    for o in all {
        let ran = |side: &[Boot]| -> Vec<Option<i64>> {
            (side.iter())
                .filter(|b| b.ran.contains(&o.scenario))
                .map(|b| b.values.get(o).copied())
                .collect()
        };
        let (vb, vn) = (ran(base), ran(new));
        if vb.len() < MIN_BOOTS || vn.len() < MIN_BOOTS {
            continue;
        }
        judged += 1;
        let (b, n): (Vec<i64>, Vec<i64>) = (
            vb.iter().flatten().copied().collect(),
            vn.iter().flatten().copied().collect(),
        );
        let unit = (base.iter().chain(new))
            .find_map(|x| x.units.get(o).copied())
            .unwrap_or("events");
        let kind = match (b.len(), n.len()) {
            (x, 0) if x == vb.len() => Some(ChangeKind::Vanished),
            (0, y) if y == vn.len() => Some(ChangeKind::Appeared),
            (x, y) if x == vb.len() && y == vn.len() => {
                // vb holds at least MIN_BOOTS base boots that ran the scenario.
                let boot = base.iter().find(|x| x.ran.contains(&o.scenario));
                let abs_floor = boot.map_or(0.0, |boot| floor(unit, boot, noise));
                shifted(&b, &n, abs_floor, noise).filter(|_| b.len().min(n.len()) >= shift_boots)
            }
            _ => None,
        };
        if let Some(kind) = kind {
            out.push(Change {
                what: o.clone(),
                unit: unit.into(),
                kind,
                base: (!b.is_empty()).then(|| Spread::of(&b)),
                new: (!n.is_empty()).then(|| Spread::of(&n)),
            });
        }
    }
    (out, judged)
}

/// The report directories below `path`: itself when it holds a results.json, else each of its
/// subdirectories that does (an `ab --report` directory's base-1, base-2, ... are picked by
/// `prefix`), in name order.
pub fn report_dirs(path: &Path, prefix: &str) -> Result<Vec<std::path::PathBuf>> {
    if path.join("results.json").is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let rd =
        std::fs::read_dir(path).with_context(|| format!("read directory {}", path.display()))?;
    let mut out: Vec<_> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("results.json").is_file())
        .filter(|p| (p.file_name().and_then(|n| n.to_str())).is_some_and(|n| n.starts_with(prefix)))
        .collect();
    out.sort();
    Ok(out)
}

/// The run a report directory holds (its results.json).
pub fn run_report(dir: &Path) -> Result<RunReport> {
    let path = dir.join("results.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parse {}", path.display()))
}

/// One boot's observables from its report directory (`run --report DIR`, or a boot of
/// `ab --report`: DIR/base-1, ...): results.json, and `<scenario>.csv` of every scenario that
/// passed or failed (one that stopped with an error or was skipped may not have run its phases).
pub fn load(dir: &Path) -> Result<Boot> {
    let rep = run_report(dir)?;
    let mut boot = Boot {
        cpus: rep.environment.cpus,
        page_size: rep.environment.page_size,
        ..Boot::default()
    };
    for s in (rep.scenarios.iter())
        .filter(|s| matches!(s.status, Status::Pass | Status::Fail | Status::Known))
    {
        let csv = dir.join(format!("{}.csv", s.name));
        let Ok(text) = std::fs::read_to_string(&csv) else {
            continue;
        };
        let series =
            Series::from_csv(&text).map_err(|e| anyhow::anyhow!("{}: {e}", csv.display()))?;
        observe(&mut boot, &s.name, &s.phases, &series);
    }
    Ok(boot)
}

/// The human table: one line per change, grouped by scenario, then how many were judged.
pub fn render(changes: &[Change], judged: usize) -> String {
    let mut s = String::new();
    for c in changes {
        s += &c.line();
        s.push('\n');
    }
    s += &format!(
        "behaviour: {} of {judged} observables changed between the kernels\n",
        changes.len()
    );
    s
}

/// The boots of one side of `compare --behaviour`: every report directory `path` is or holds.
fn side(path: &Path) -> Result<Vec<Boot>> {
    let dirs = report_dirs(path, "")?;
    if dirs.len() < MIN_BOOTS {
        anyhow::bail!(
            "{}: {} report directories (results.json and the scenarios' CSV files), a verdict needs {MIN_BOOTS}",
            path.display(),
            dirs.len()
        );
    }
    dirs.iter().map(|d| load(d)).collect()
}

/// `memcgtest compare --behaviour BASE NEW`: the changes (human table or JSON `changes`) and
/// the exit code: 0, or 1 for a change with `fail_on_change`; unreadable input is 2.
pub fn command(base: &Path, new: &Path, json: bool, fail_on_change: bool) -> Result<u8, Error> {
    let (b, n) = match (side(base), side(new)) {
        (Ok(b), Ok(n)) => (b, n),
        (Err(e), _) | (_, Err(e)) => return Err(Error::Usage(format!("{e:#}"))),
    };
    let (changes, judged) = judge(&b, &n, NOISE, SHIFT_BOOTS);
    if judged == 0 {
        return Err(Error::Usage(format!(
            "{} and {} have no observable in common with {MIN_BOOTS} boots a side (other scenarios, or no samples)",
            base.display(),
            new.display()
        )));
    }
    if b.len().min(n.len()) < SHIFT_BOOTS {
        eprintln!(
            "memcgtest compare: {} and {} boots: enough for a key that vanished or appeared, too few for a changed amount ({SHIFT_BOOTS} a side)",
            b.len(),
            n.len()
        );
    }
    if json {
        let v = serde_json::json!({ "judged": judged, "changes": changes });
        println!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| Error::Internal(e.to_string()))?
        );
    } else {
        print!("{}", render(&changes, judged));
    }
    Ok(if fail_on_change && !changes.is_empty() {
        exit::FAIL
    } else {
        exit::OK
    })
}

#[cfg(test)]
#[path = "behaviour_tests.rs"]
mod tests;
