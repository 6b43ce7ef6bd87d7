//! `memcgtest mutate`: the kill matrix of the mutant schemata kernel
//! (kernel-patches/schemata/memcg-mutate.patch). A first boot with no mutant runs the quick suite
//! (it must be green: the patch with nothing chosen is the stock kernel) and says, through the
//! coverage table, in which scenarios each field moves. Then every mutant (a kernel item and a
//! fault) boots on its own (`memcg_mutate=KIND:ITEM:MODE`) and runs only those scenarios, quickest
//! first, stopping at the first failure: killed (by which check, with its message) or survived.
//! Every boot's result is kept under the output directory, so a matrix run again continues.

pub mod pairs;
pub mod render;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::model::error::{Error, exit};
use crate::model::mutant::{Entry, Fate, Matrix, Mode};
use crate::model::{Outcome, RunReport, Status, Version};
use crate::sys::outdir::{binary_id, load, lock, save};
use crate::vm;
use pairs::Plan;

/// What `memcgtest mutate` was asked for.
pub struct Options {
    /// The VM (its kernel the schemata kernel, its cgroup layout the matrix's).
    pub vm: vm::Options,
    pub version: Version,
    pub output: PathBuf,
    /// A quick suite's results on this kernel and layout instead of the first boot.
    pub results: Option<PathBuf>,
    /// Only the mutants of these fields or kernel items (all when empty).
    pub fields: Vec<String>,
    /// Only these faults (all when empty).
    pub modes: Vec<Mode>,
    /// Only these mutants, as the kernel command line names them (`stat:file_dirty:drop`).
    pub mutants: Vec<String>,
    /// Where the scenarios come from (as `run --scenario-dir`).
    pub scenario_dir: Option<PathBuf>,
    /// Plan only: every mutant untested, with the scenarios it would run.
    pub dry_run: bool,
}

/// Runs the matrix (what is recorded under the output directory is reused) and writes it to
/// OUTPUT/matrix-<cgroup>.json.
pub fn run(o: &Options) -> Result<Matrix> {
    let dir = o.output.join(o.version.as_str());
    std::fs::create_dir_all(&dir).with_context(|| format!("mkdir {}", dir.display()))?;
    let _lock = lock(&o.output)?;
    let base = baseline(o, &dir)?;
    let scenarios = crate::scenario::load_all(o.scenario_dir.as_deref())?;
    let tables = crate::coverage::tables(std::slice::from_ref(&base), None, &scenarios);
    let table = (tables.into_iter())
        .find(|t| t.version == o.version)
        .ok_or_else(|| {
            Error::Usage(format!(
                "the results are not of cgroup {}",
                o.version.as_str()
            ))
        })?;
    let seconds: BTreeMap<String, f64> = (base.scenarios.iter())
        .map(|s| (s.name.clone(), s.seconds))
        .collect();
    let (plans, unmapped) = pairs::plan(&table, &seconds);
    let chosen: Vec<&Plan> = plans.iter().filter(|p| wanted(o, p)).collect();
    if chosen.is_empty() {
        return Err(Error::Usage(format!(
            "no mutant of the fields the suite moves matches --field {:?} --mode {:?} --mutant {:?}",
            o.fields, o.modes, o.mutants
        ))
        .into());
    }
    let names: BTreeMap<String, String> = (table.rows.iter())
        .map(|r| (r.field.clone(), r.name.replace(" (per node)", "")))
        .collect();
    // What the suite judges now: a recorded kill stands only while its check still exists.
    let judged: std::collections::BTreeSet<(String, String)> = (scenarios.iter())
        .flat_map(|sc| sc.checks.iter().map(|c| (sc.name.clone(), c.name())))
        .collect();
    let mut vm = o.vm.clone();
    let mut entries = Vec::new();
    for (i, p) in chosen.iter().enumerate() {
        let e = match o.dry_run {
            true if p.equivalent.is_none() => {
                untested(p, 0.0, format!("planned: {}", p.scenarios.join(" ")))
            }
            _ => mutant_entry(o, &mut vm, &dir, p, (&names, &judged))?,
        };
        eprintln!(
            "memcgtest mutate: [{}/{}] {}: {}",
            i + 1,
            chosen.len(),
            p.mutant,
            render::fate_line(&e)
        );
        entries.push(e);
    }
    let matrix = Matrix {
        cgroup: o.version,
        kernel: base.environment.kernel.clone(),
        measured: measured(vm.accel),
        entries,
        unmapped,
    };
    if !o.dry_run {
        save(
            &o.output.join(format!("matrix-{}.json", o.version.as_str())),
            &matrix,
        )?;
    }
    Ok(matrix)
}

fn wanted(o: &Options, p: &Plan) -> bool {
    let field_ok = o.fields.is_empty()
        || (o.fields.iter()).any(|f| p.mutant.item == *f || p.fields.contains(f));
    field_ok
        && (o.modes.is_empty() || o.modes.contains(&p.mutant.mode))
        && (o.mutants.is_empty() || o.mutants.contains(&p.mutant.to_string()))
}

/// Date, host and accelerator of the measurement.
fn measured(accel: vm::AccelChoice) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host = host.trim();
    let cpus = crate::sys::proc::machine(Path::new(crate::sys::proc::PROC)).cpus;
    format!(
        "{} on {host} ({cpus} CPUs, qemu {accel:?})",
        chrono::Utc::now().format("%Y-%m-%d")
    )
}

/// The quick suite with no mutant: given (--results) or the first boot's. Not green is not a
/// matrix: what the mutants break could not be told from what was broken before (125).
fn baseline(o: &Options, dir: &Path) -> Result<RunReport> {
    if let Some(f) = &o.results {
        let text = std::fs::read_to_string(f).with_context(|| format!("read {}", f.display()))?;
        return serde_json::from_str(&text).map_err(|e| {
            Error::Usage(format!("{}: not a run's results: {e}", f.display())).into()
        });
    }
    let mut v = o.vm.clone();
    v.guest_args = vec!["run".into(), "--quick".into()];
    // Another binary judges the stock kernel again: its checks must pass there too.
    let file = dir.join(format!(
        "baseline-{}-{:08x}.json",
        key(&v),
        binary_id() as u32
    ));
    if let Some(rep) = load::<RunReport>(&file) {
        eprintln!("memcgtest mutate: no mutant: done before");
        return Ok(rep);
    }
    eprintln!("memcgtest mutate: no mutant: the quick suite (it must be green)");
    let mut kept = v.clone();
    let out = vm::boot_recorded(&mut kept, v, dir, "baseline")?.0?;
    let Some((rep, _)) = out.report else {
        return Err(Error::Environment(format!(
            "no mutant: the guest wrote no report: {}",
            out.reason
        ))
        .into());
    };
    if out.code != exit::OK {
        return Err(Error::Environment(format!(
            "with no mutant the quick suite is not green (exit {}): {}; see {}",
            out.code,
            render::failures(&rep),
            dir.join("baseline").display()
        ))
        .into());
    }
    save(&file, &rep)?;
    Ok(rep)
}

/// A run's key: what the guest runs, in which VM on which kernel (a mutant's boot is kept under
/// the key without the guest's arguments: see `recorded`). Not the binary: a matrix outlives its
/// builds; a survivor is judged again by another binary, see `Recorded`.
fn key(v: &vm::Options) -> String {
    let text = format!("{} {} {:?}", v.cgroup, v.shape(), v.kernel);
    format!("{:08x}", crate::model::kcidb::fnv1a(text.as_bytes()) as u32)
}

/// A mutant's entry: equivalent, recorded, or booted now.
fn mutant_entry(
    o: &Options,
    vm: &mut vm::Options,
    dir: &Path,
    p: &Plan,
    (names, judged): (
        &BTreeMap<String, String>,
        &std::collections::BTreeSet<(String, String)>,
    ),
) -> Result<Entry> {
    if let Some(why) = p.equivalent {
        return Ok(pairs::equivalent_entry(p, why));
    }
    let mut v = vm.clone();
    v.guest_args = ["run", "--quick", "--fail-fast"]
        .into_iter()
        .map(String::from)
        .chain(p.scenarios.iter().cloned())
        .collect();
    v.append = format!("{} memcg_mutate={}", o.vm.append, p.mutant)
        .trim()
        .to_string();
    let stem = p.mutant.to_string().replace(':', "-");
    let setup = key(&vm::Options {
        guest_args: Vec::new(),
        ..v.clone()
    });
    if let Some(e) = recorded(dir, &stem, &setup, p, judged) {
        return Ok(e);
    }
    let file = dir.join(format!("{stem}-{setup}.json"));
    let (result, secs) = vm::boot_recorded(vm, v, dir, &stem)?;
    let e = match result {
        Ok(out) => judge(p, &out, secs, names),
        Err(err) => match err.downcast_ref::<Error>() {
            Some(Error::Usage(_)) => return Err(err),
            _ => untested(p, secs, format!("{err:#}")),
        },
    };
    if e.fate != Fate::Untested {
        let r = Recorded {
            binary: binary_id(),
            setup,
            entry: e,
        };
        save(&file, &r)?;
        return Ok(r.entry);
    }
    Ok(e)
}

/// A boot of this mutant kept under `dir` in the same VM setup that still holds: this binary's
/// over the same scenarios (their order follows the baseline's timings, so it is not compared),
/// or a kill by any binary that `stands`.
fn recorded(
    dir: &Path,
    stem: &str,
    setup: &str,
    p: &Plan,
    judged: &std::collections::BTreeSet<(String, String)>,
) -> Option<Entry> {
    let set = |v: &[String]| v.iter().cloned().collect::<std::collections::BTreeSet<_>>();
    let prefix = format!("{stem}-");
    let mut kept: Vec<Recorded> = (std::fs::read_dir(dir).ok()?.flatten())
        .filter(|f| {
            let n = f.file_name().to_string_lossy().to_string();
            n.strip_prefix(&prefix)
                .and_then(|r| r.strip_suffix(".json"))
                .is_some_and(|k| k.len() == 8 && k.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .filter_map(|f| load::<Recorded>(&f.path()))
        // Boots recorded before the setup was kept were all of this output directory's setup.
        .filter(|r| r.setup.is_empty() || r.setup == setup)
        .collect();
    let same =
        |r: &Recorded| r.binary == binary_id() && set(&r.entry.scenarios) == set(&p.scenarios);
    kept.sort_by_key(|r| !same(r));
    kept.into_iter()
        .find(|r| same(r) || stands(&r.entry, judged))
        .map(|r| r.entry)
}

/// Whether a kill recorded by another binary stands: the kernel died, or the check that killed it
/// is still one of its scenario's.
fn stands(e: &Entry, judged: &std::collections::BTreeSet<(String, String)>) -> bool {
    e.fate == Fate::Killed
        && match (&e.scenario, &e.check) {
            (Some(s), Some(c)) => judged.contains(&(s.clone(), c.clone())),
            (Some(s), None) => s == "boot",
            _ => false,
        }
}

/// A mutant's boot as kept under the output directory: a kill stands while its check does (see
/// `stands`); anything else is booted again by another memcgtest binary (it may check more).
#[derive(serde::Serialize, serde::Deserialize)]
struct Recorded {
    binary: u64,
    /// The VM setup's key (`key` without the guest's arguments).
    #[serde(default)]
    setup: String,
    entry: Entry,
}

/// What a mutant's boot says: killed by its first failed check (or by the kernel dying), survived
/// when the guest passed, untested otherwise.
pub fn judge(p: &Plan, out: &vm::Outcome, secs: f64, names: &BTreeMap<String, String>) -> Entry {
    let mut e = untested(p, secs, out.reason.clone());
    let Some((rep, _)) = &out.report else {
        if out.code == exit::FAIL && !out.reason.is_empty() {
            e.fate = Fate::Killed;
            e.scenario = Some("boot".into());
        } else if e.message.is_empty() {
            e.message = "the guest wrote no report".into();
        }
        return e;
    };
    match out.code {
        exit::FAIL => {
            e.fate = Fate::Killed;
            // A scenario that failed, or else one that stopped in error (a stall: its reason).
            let failed = (rep.scenarios.iter().find(|s| s.status == Status::Fail))
                .or_else(|| rep.scenarios.iter().find(|s| s.status == Status::Error));
            if let Some(s) = failed {
                e.scenario = Some(s.name.clone());
                let check =
                    (s.checks.iter()).find(|c| c.outcome == Outcome::Fail && c.known.is_none());
                e.message = match check {
                    Some(c) => {
                        e.check = Some(c.name.clone());
                        format!("{} (expected {})", c.actual, c.expected)
                    }
                    None => s.reason.clone(),
                };
            }
            e.names_field = names_field(&e.message, &p.fields, names);
        }
        exit::OK => {
            e.fate = Fate::Survived;
            e.message = render::passed(rep);
        }
        code => e.message = format!("exit {code}: {}", render::failures(rep)),
    }
    e
}

/// Whether a message names one of the fields: memcgtest's name for it (`dirty`, `limit_hits`)
/// or the kernel's key, as a word.
fn names_field(msg: &str, fields: &[String], names: &BTreeMap<String, String>) -> bool {
    let words: Vec<&str> = msg
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    fields.iter().any(|f| {
        let key = f.split(':').nth(1).unwrap_or(f);
        let name = names.get(f).map(String::as_str).unwrap_or(key);
        let name = name.trim_end_matches(".local");
        words.iter().any(|w| *w == key || *w == name)
    })
}

fn untested(p: &Plan, secs: f64, reason: String) -> Entry {
    Entry {
        fate: Fate::Untested,
        scenarios: p.scenarios.clone(),
        message: reason,
        seconds: secs,
        ..pairs::equivalent_entry(p, "")
    }
}
