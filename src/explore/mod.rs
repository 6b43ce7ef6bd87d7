//! `memcgtest explore`: generated scenarios under every invariant, failures confirmed and shrunk
//! to a minimal scenario file.
//!
//! Each case is drawn from (seed, index) (`generator`), written to `<out>/cases/` as a scenario file,
//! read back as any scenario is, and run like one: the invariants every scenario gets judge
//! every group at every sample, and the case declares the few generic checks that need no
//! expectation (`case::Declared`). A case that fails runs again: a failure that does not repeat
//! is flaky (reported with both runs, not the kernel's fault); one that does is shrunk (`shrink`)
//! while the same check keeps failing, and the smallest case is written to `<out>` beside the
//! original, with the reports of both runs.

pub mod case;
mod declare;
mod dice;
pub mod generator;
pub mod machine;
mod motifs;
pub mod shrink;
mod strategy;
mod tree;
mod world;

/// The step strategies the generator draws from and the motifs it adds, as markdown tables
/// (docs/explore.md), each with the kind of condition it makes.
pub fn strategies_table() -> String {
    format!("{}\n{}", strategy::table(), motifs::table())
}

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::exec::runner;
use crate::model::error::{Error, exit};
use crate::model::{KnownIssue, Outcome, ScenarioResult, Status};
use crate::suite::{self, Place, Session};
use crate::sys::cleanup;
use case::Case;

/// What `memcgtest explore` was asked for.
pub struct Options<'a> {
    /// The run's options (format, report directory, events, ...); no names, no --quick.
    pub run: suite::Options<'a>,
    pub seed: Option<u64>,
    /// Stop starting cases after this long.
    pub budget: Duration,
    /// Stop after this many cases.
    pub cases: Option<u32>,
    /// Where cases, failures and shrunk cases go.
    pub out: Option<&'a Path>,
    /// The longest one failure is shrunk.
    pub shrink_time: Duration,
    /// Stop after the first confirmed failure is shrunk.
    pub first: bool,
}

/// One confirmed failure: the check, the case and the smallest case that still fails it.
struct Found {
    check: String,
    /// How long after the start its first failing run ended (time to first failure).
    after: Duration,
    original: Case,
    shrunk: Case,
    shrink_runs: u32,
    /// What the reported case did when it ran on its own.
    alone: Alone,
}

/// How the shrunk case fared on its own.
enum Alone {
    /// It failed in its `runs`-th run; it is `back` of the shrinker's steps larger than its
    /// smallest case (the smaller ones did not fail on their own).
    Failed { runs: u32, back: usize },
    /// Neither it nor the larger cases tried failed, in `runs` runs in all (0: interrupted).
    Never { runs: u32 },
}

/// How often the shrunk case runs on its own before it is called intermittent: a failure near
/// its tolerance (a mutant that shows only in some pages' placement) may not repeat every run.
const ALONE_RUNS: u32 = 3;

/// How many of the shrinker's larger cases run on their own (twice each) when the smallest did
/// not fail in its ALONE_RUNS.
const BACK_OFF: usize = 3;

pub fn explore(place: &Place, o: &Options) -> Result<u8, Error> {
    let seed = o.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs())
    });
    let session = suite::open_session(place, &o.run, true)?;
    let out = out_dir(o, seed)?;
    let m = machine(&session);
    let e = Explorer {
        session: &session,
        known: generic_known()?,
        out: &out,
        start: Instant::now(),
    };
    e.say(&format!(
        "seed {seed} (memcgtest explore --seed {seed} makes the same cases), cases in {}",
        out.join("cases").display()
    ));
    let mut t = Tally::default();
    let mut index = 0u32;
    while !cleanup::interrupted()
        && e.start.elapsed() < o.budget
        && o.cases.is_none_or(|n| index < n)
    {
        let case = generator::generate(seed, index, &m);
        index += 1;
        for c in strategy::conditions(&case.phases) {
            *t.conditions.entry(c).or_default() += 1;
        }
        if let Some(f) = e.case(case, o, &mut t)? {
            t.found.push(f);
            if o.first {
                break;
            }
        }
    }
    e.conclude(o, seed, index, t)
}

/// Where cases, failures and shrunk cases go (made here): --out, or explore/ in the report
/// directory, or memcgtest-explore-SEED.
fn out_dir(o: &Options, seed: u64) -> Result<PathBuf, Error> {
    let out = o
        .out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| match o.run.report_dir {
            Some(r) => r.join("explore"),
            None => PathBuf::from(format!("memcgtest-explore-{seed}")),
        });
    let cases = out.join("cases");
    std::fs::create_dir_all(&cases)
        .map_err(|e| Error::Environment(format!("explore: create {}: {e}", cases.display())))?;
    Ok(out)
}

/// What the generator needs to know of this machine.
fn machine(session: &Session) -> machine::Machine {
    machine::Machine {
        version: session.ctx.parent.version,
        memory: crate::sys::proc::mem_total_bytes(),
        swap: crate::sys::proc::swap_enabled(),
        charge_moving: crate::sys::env::probe_charge_moving(&session.ctx.parent) == "available",
        per_file: crate::sys::cachestat::support().is_ok(),
        numa: crate::sys::numa::memory_nodes().len() >= 2,
    }
}

/// One exploration's session, known issues and output directory.
struct Explorer<'a> {
    session: &'a Session,
    known: Vec<KnownIssue>,
    out: &'a Path,
    start: Instant,
}

/// What the cases so far gave: their results, the confirmed failures, the flaky ones.
#[derive(Default)]
struct Tally {
    results: Vec<ScenarioResult>,
    found: Vec<Found>,
    flaky: u32,
    /// How many cases made each kind of condition (`strategy::conditions`).
    conditions: std::collections::BTreeMap<strategy::Condition, u32>,
}

impl Explorer<'_> {
    fn say(&self, msg: &str) {
        self.session.ctx.progress.say(&format!("explore: {msg}"));
    }

    fn run(&self, case: &Case, dir: &Path) -> Result<ScenarioResult, Error> {
        run_case(self.session, &self.known, case, dir)
    }

    /// Runs `case`; a failure runs again, and a confirmed one is shrunk: the failure found.
    fn case(&self, case: Case, o: &Options, t: &mut Tally) -> Result<Option<Found>, Error> {
        let r = self.run(&case, &self.out.join("cases"))?;
        let seen = self.start.elapsed();
        let Some(check) = failed_check(&r) else {
            // A case that did not fail keeps its verdict, not its samples: hundreds of cases'
            // records would grow the runner by hundreds of MiB over 20 minutes (memory a
            // worker forked from it carries until it execs, and that a 2 GiB guest lacks).
            t.results.push(ScenarioResult { record: None, ..r });
            return Ok(None);
        };
        self.say(&format!("{}: {check} failed; running it again", case.name));
        let mut again = self.run(&case, &self.out.join("cases"))?;
        let confirmed = still_fails(&again, &check);
        t.results.push(r);
        again.name = format!("{} (again)", case.name);
        if !confirmed {
            t.flaky += 1;
            again.notes.push(format!(
                "flaky: {check} failed in the first run and not in this one; not counted as the kernel's failure"
            ));
            if again.status == Status::Fail {
                again.status = Status::Skip;
                again.reason = format!("flaky: {check} did not fail again");
            }
            t.results.push(again);
            return Ok(None);
        }
        t.results.push(again);
        write(
            &self.out.join(format!("{}.toml", case.name)),
            &case.to_toml(),
        )?;
        let (chain, runs) = shrink(
            self.session,
            &self.known,
            &case,
            &check,
            self.out,
            o.shrink_time,
        )?;
        let (min, alone) = self.minimal(&case, &chain, &check, &mut t.results)?;
        write(&self.out.join(format!("{}.toml", min.name)), &min.to_toml())?;
        self.say(&format!(
            "{}: shrunk in {runs} runs to {} groups and {} steps: {}",
            case.name,
            min.groups.len(),
            min.steps(),
            self.out.join(format!("{}.toml", min.name)).display()
        ));
        Ok(Some(Found {
            check,
            after: seen,
            original: case,
            shrunk: min,
            shrink_runs: runs,
            alone,
        }))
    }

    /// The minimal case of a shrink `chain` and how it fared alone. The smallest case runs on
    /// its own; a failure near its tolerance (one that needs the flusher to start writeback
    /// during a step, say) may not repeat there, because the shrinker kept a variant on a single
    /// failing run and may have dropped what made the failure likely. Then the larger cases the
    /// shrinker went through run, back to BACK_OFF of them, and the first that fails on its own
    /// is the minimal case.
    fn minimal(
        &self,
        case: &Case,
        chain: &[Case],
        check: &str,
        results: &mut Vec<ScenarioResult>,
    ) -> Result<(Case, Alone), Error> {
        let name = format!("{}-min", case.name);
        let mut total = 0;
        let mut alone = Alone::Never { runs: 0 };
        'back: for (back, c) in chain.iter().rev().take(BACK_OFF + 1).enumerate() {
            let mut min = c.clone();
            min.name = name.clone();
            let tries = if back == 0 { ALONE_RUNS } else { 2 };
            for runs in 1..=tries {
                if cleanup::interrupted() {
                    break 'back;
                }
                let mut last = self.run(&min, self.out)?;
                let failed = still_fails(&last, check);
                total += 1;
                if total > 1 {
                    last.name = format!("{name} (run {total})");
                }
                results.push(last);
                if failed {
                    alone = Alone::Failed { runs, back };
                    break 'back;
                }
            }
            alone = Alone::Never { runs: total };
        }
        let back = match alone {
            Alone::Failed { back, .. } => back,
            Alone::Never { .. } => 0,
        };
        let mut min = chain[chain.len() - 1 - back].clone();
        min.name = name;
        Ok((min, alone))
    }

    /// The report, the summary (said and written to summary.txt) and the exit code: 1 for a
    /// confirmed failure, an environment error when no case ran to the end.
    fn conclude(&self, o: &Options, seed: u64, cases: u32, t: Tally) -> Result<u8, Error> {
        let mut rep = self.session.report(t.results, false);
        rep.scenarios
            .iter_mut()
            .for_each(|r| r.measurements.clear());
        let known_failures = (rep.scenarios.iter())
            .filter(|r| r.status == Status::Known)
            .count();
        let summary = summary(
            seed,
            cases,
            self.start.elapsed(),
            &t.found,
            (t.flaky, known_failures),
            self.out,
        ) + &reached(&t.conditions);
        self.say(&summary);
        write(&self.out.join("summary.txt"), &summary)?;
        let verdict = if cleanup::interrupted() {
            Err(Error::Interrupted)
        } else if !t.found.is_empty() {
            Ok(exit::FAIL)
        } else if cases == 0 || rep.scenarios.iter().all(|r| r.status == Status::Skip) {
            Err(Error::Environment(format!(
                "explore ran no case to the end in {:?} (every case skipped)",
                o.budget
            )))
        } else {
            Ok(exit::OK)
        };
        suite::close_session(self.session, &rep, &o.run, verdict)
    }
}

/// The known issues of the built-in scenarios that say what their failure looks like (`matches`),
/// for any check of their kind: a generated case that fails so is a known failure, not a finding
/// (6.18's v1 memory.memsw.failcnt would otherwise fail every case that declares a limit hit).
fn generic_known() -> Result<Vec<KnownIssue>, Error> {
    let builtin = crate::scenario::load_all(None)
        .map_err(|e| Error::Internal(format!("a built-in scenario does not load: {e}")))?;
    Ok(builtin
        .iter()
        .flat_map(|sc| sc.known.iter().map(move |k| (sc, k)))
        .filter(|(_, k)| k.matches.is_some())
        .map(|(sc, k)| k.for_kind(&sc.name))
        .collect())
}

/// Writes the case, reads it back as a scenario file is read, and runs it with the `known`
/// issues.
fn run_case(
    s: &Session,
    known: &[KnownIssue],
    case: &Case,
    dir: &Path,
) -> Result<ScenarioResult, Error> {
    let path = dir.join(format!("{}.toml", case.name));
    let text = case.to_toml();
    write(&path, &text)?;
    let mut sc = crate::scenario::parse(&path.display().to_string(), &text)
        .map_err(|e| Error::Internal(format!("explore made a case that does not parse: {e}")))?;
    sc.known = known.to_vec();
    s.ctx
        .progress
        .scenario((1, 1), &sc.name, &sc.summary, None, None);
    let r = runner::run_scenario(&s.ctx, &sc);
    s.ctx.progress.done(&r);
    Ok(r)
}

/// The first check a result failed (not a known failure), or the kernel error that stopped it.
fn failed_check(r: &ScenarioResult) -> Option<String> {
    let kernel_error = r
        .error
        .as_ref()
        .is_some_and(|e| e.exit_code() == exit::FAIL);
    if r.status != Status::Fail && !kernel_error {
        return None;
    }
    r.checks
        .iter()
        .find(|c| c.outcome == Outcome::Fail && c.known.is_none())
        .map(|c| c.name.clone())
        .or_else(|| Some("error".into()))
}

fn still_fails(r: &ScenarioResult, check: &str) -> bool {
    match check {
        "error" => r
            .error
            .as_ref()
            .is_some_and(|e| e.exit_code() == exit::FAIL),
        c => r
            .checks
            .iter()
            .any(|x| x.name == c && x.outcome == Outcome::Fail && x.known.is_none()),
    }
}

/// Shrinks `case` while `check` keeps failing, for at most `limit`; returns the smallest case
/// and the runs it took.
fn shrink(
    s: &Session,
    known: &[KnownIssue],
    case: &Case,
    check: &str,
    out: &Path,
    limit: Duration,
) -> Result<(Vec<Case>, u32), Error> {
    let dir = out.join("shrink");
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::Environment(format!("explore: create {}: {e}", dir.display())))?;
    let until = Instant::now() + limit;
    let (mut chain, mut runs) = (vec![case.clone()], 0u32);
    'smaller: loop {
        for mut v in shrink::candidates(chain.last().unwrap(), check) {
            if Instant::now() >= until || cleanup::interrupted() {
                break 'smaller;
            }
            runs += 1;
            v.name = format!("{}-s{runs}", case.name);
            let r = run_case(s, known, &v, &dir)?;
            if still_fails(&r, check) {
                s.ctx.progress.say(&format!(
                    "explore: {}: still fails {check} with {} groups, {} steps",
                    case.name,
                    v.groups.len(),
                    v.steps()
                ));
                v.name = case.name.clone();
                chain.push(v);
                continue 'smaller;
            }
        }
        break;
    }
    Ok((chain, runs))
}

/// "; conditions made: workload 8, history 3, ..." (every kind, 0 where no case made it).
fn reached(counts: &std::collections::BTreeMap<strategy::Condition, u32>) -> String {
    let each: Vec<String> = (strategy::Condition::ALL.iter())
        .map(|c| format!("{} {}", c.name(), counts.get(c).copied().unwrap_or(0)))
        .collect();
    format!("conditions made (cases): {}\n", each.join(", "))
}

fn summary(
    seed: u64,
    cases: u32,
    took: Duration,
    found: &[Found],
    (flaky, known): (u32, usize),
    out: &Path,
) -> String {
    let mut s = format!(
        "seed {seed}: {cases} cases in {:.0} s, {} confirmed failures, {flaky} flaky, {known} known failures",
        took.as_secs_f64(),
        found.len()
    );
    for f in found {
        s += &format!(
            "\n  {}: {} — first failed {:.0} s in; shrunk in {} runs from {} groups and {} steps to {} groups and {} steps: memcgtest --scenario-dir {} run {} ({})",
            f.original.name,
            f.check,
            f.after.as_secs_f64(),
            f.shrink_runs,
            f.original.groups.len(),
            f.original.steps(),
            f.shrunk.groups.len(),
            f.shrunk.steps(),
            out.display(),
            f.shrunk.name,
            match f.alone {
                Alone::Failed { runs: 1, .. } => "it failed again on its own".to_string(),
                Alone::Failed { runs: n, back: 0 } => {
                    format!("it failed on its own in run {n} of {n}")
                }
                Alone::Failed { runs: n, back: k } => format!(
                    "it failed on its own in run {n} of {n}, {k} shrink steps back from the smallest, which did not"
                ),
                Alone::Never { runs: 0 } => "interrupted before it ran on its own".to_string(),
                Alone::Never { runs: n } => format!(
                    "neither it nor the larger cases the shrinker went through before it failed in {n} runs on their own: intermittent, the confirmed {} is the reproducer",
                    f.original.name
                ),
            }
        );
    }
    s + "\n"
}

fn write(path: &Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text)
        .map_err(|e| Error::Environment(format!("explore: write {}: {e}", path.display())))
}
