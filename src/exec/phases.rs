//! Running a scenario's phases: antagonists, the steps in order (each with its progress
//! watchdog), and what the record keeps of them. A phase that stopped half way (a timeout, a
//! stall) is still recorded up to that moment, so the checks can judge what happened.

use std::cell::RefCell;
use std::path::Path;
use std::time::{Duration, Instant};

use super::context::{Context, Guard, Stop};
use super::load::LoadProbe;
use super::online::Online;
use super::sample::Sampler;
use super::steps::{
    Holders, StepEnv, execute_step, idle_by_design, prepare_probe, tune_machine, waits_on_writeback,
};
use super::watchdog::Watchdog;
use super::workload::{self, Job, JobResult};
use crate::check;
use crate::model::error::Error;
use crate::model::{MoveRecord, PhaseRecord, Record, StepKind, StepRecord};
use crate::scenario::{Antagonist, Phase, Scenario, Step};
use crate::sys::cgroup::Cgroup;
use crate::sys::proc;

/// Where a scenario's phases run and what they write to.
pub(super) struct Run<'a> {
    pub(super) ctx: &'a Context,
    pub(super) sc: &'a Scenario,
    /// The sampler, running for the whole scenario; the runner stops it after the phases.
    pub(super) sampler: Sampler,
    pub(super) t0: Instant,
    pub(super) deadline: Instant,
    pub(super) aux: &'a Cgroup,
    pub(super) groups: &'a [(String, Cgroup)],
    pub(super) scratch: &'a Path,
    pub(super) phases: Vec<PhaseRecord>,
    pub(super) steps: Vec<StepRecord>,
    pub(super) moves: Vec<MoveRecord>,
    /// The step a stall or timeout cut off (see `Record::stopped`).
    pub(super) stopped: Option<StepRecord>,
    /// The scenario's top group: its workers and tasks are the run's own load.
    pub(super) root: &'a Cgroup,
    /// Notes for the result (repetitions run again because the machine was busy).
    pub(super) notes: Vec<String>,
    /// The online checks (None with --keep-going or without any), and the record's parts that
    /// do not change while the phases run (its series, phases and steps are left empty).
    pub(super) online: Option<(Online<'a>, Record)>,
    /// When the running phase started.
    pub(super) phase_start: f64,
    /// The round of the running phase (see `second_round_due`), which its steps record.
    pub(super) round_no: u32,
    /// What the record holds besides the samples, phases, steps and moves.
    pub(super) base: Record,
}

/// How many repetitions of a measured phase may be run again because the machine was busy
/// during one of their measured steps: as many as the phase has, none for a phase written to
/// run once (its steps need not be repeatable: an unlink, a release).
fn rerun_budget(phase: &Phase) -> u32 {
    if phase.repeat > 1 { phase.repeat } else { 0 }
}

impl Run<'_> {
    fn now(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }

    /// Runs every phase; a phase that stops half way is recorded up to then.
    pub(super) fn phases(&mut self, guard: &mut Guard) -> Result<(), Stop> {
        let mut holders = Holders::new();
        let sc = self.sc;
        for (pi, phase) in sc.phases.iter().enumerate() {
            self.ctx
                .progress
                .phase(&sc.name, &phase.name, (pi + 1, sc.phases.len()));
            let vmstat_start = read_vmstat()?;
            let start = self.now();
            self.phase_start = start;
            let ran = self.phase(pi, phase, guard, &mut holders);
            self.phases.push(PhaseRecord {
                name: phase.name.clone(),
                start,
                end: self.now(),
                antagonists: phase
                    .antagonists
                    .iter()
                    .map(|a| format!("{a:?}").to_lowercase())
                    .collect(),
                warmup: phase.warmup,
                vmstat_start,
                vmstat_end: read_vmstat()?,
            });
            ran?;
        }
        Ok(())
    }

    /// One phase: its antagonists around its steps.
    fn phase(
        &mut self,
        pi: usize,
        phase: &Phase,
        guard: &mut Guard,
        holders: &mut Holders,
    ) -> Result<(), Stop> {
        let first = guard.workers.len();
        for a in &phase.antagonists {
            let job = match a {
                Antagonist::Compaction => Job::Compaction,
            };
            guard.workers.push(workload::spawn(&job, self.aux)?);
        }
        let mut ran = self.round(pi, phase, 0, guard, holders);
        if let Ok(next) = ran
            && let Some(why) = self.second_round_due(phase)
        {
            let note = format!(
                "phase {}: a second round of {} repetitions: {why}; a performance check fails only when both rounds fail",
                phase.name, phase.repeat
            );
            self.ctx.progress.measured(&self.sc.name, &note);
            self.notes.push(note);
            self.round_no = 1;
            ran = self.round(pi, phase, next, guard, holders);
            self.round_no = 0;
        }
        // Antagonists are the last workers started; stop them at the end of their phase.
        for mut w in guard.workers.drain(first..) {
            w.kill(Duration::from_secs(10));
        }
        ran.map(|_| ())
    }

    /// One round of a phase's repetitions, numbered from `first`; returns the number the next
    /// one would have.
    fn round(
        &mut self,
        pi: usize,
        phase: &Phase,
        first: u32,
        guard: &mut Guard,
        holders: &mut Holders,
    ) -> Result<u32, Stop> {
        let (mut rep, mut reps, mut reruns) = (first, first + phase.repeat, 0);
        while rep < reps {
            for step in phase.order(rep) {
                self.step((pi, rep), &phase.name, step, guard, holders)?;
            }
            // A repetition measured while the rest of the machine was busy says nothing about
            // the kernel: it is kept in the record (marked) and run again, within a budget.
            if let Some(why) = self.busy_rep(pi, rep).filter(|_| phase.measures())
                && reruns < rerun_budget(phase)
            {
                reruns += 1;
                reps += 1;
                let note = format!(
                    "phase {}: repetition {} ran again: the machine was busy during it ({why})",
                    phase.name,
                    rep + 1
                );
                self.ctx.progress.measured(&self.sc.name, &note);
                self.notes.push(note);
            }
            rep += 1;
        }
        Ok(rep)
    }

    /// Why the running phase must run a second round, if it must: a performance check judged on it
    /// (`CheckSpec::confirmed_in`) fails on its first round's steps.
    fn second_round_due(&self, phase: &Phase) -> Option<String> {
        let judged_here = |c: &&check::Check| c.confirmed_in() == Some(phase.name.as_str());
        let checks: Vec<&check::Check> = self.sc.checks.iter().filter(judged_here).collect();
        if checks.is_empty() || !phase.measures() {
            return None;
        }
        // The phases so far, the running one up to now.
        let mut phases = self.phases.clone();
        phases.push(running(phase, self.phase_start, self.now()));
        let rec = Record {
            phases,
            steps: self.steps.clone(),
            ..self.base.clone()
        };
        let failed: Vec<String> = checks
            .iter()
            .map(|c| c.evaluate(&rec))
            .filter(|r| r.outcome == crate::model::Outcome::Fail)
            .map(|r| format!("{} failed in the first ({})", r.name, r.actual))
            .collect();
        (!failed.is_empty()).then(|| failed.join("; "))
    }

    /// One step: its watchdog and the online checks while it runs, a probe's preparation and the
    /// machine's knobs before it, what it did (or how far it got) in the record after it.
    fn step(
        &mut self,
        (pi, rep): (usize, u32),
        phase: &str,
        step: &Step,
        guard: &mut Guard,
        holders: &mut Holders,
    ) -> Result<(), Stop> {
        let (ctx, sc) = (self.ctx, self.sc);
        ctx.progress.step(&sc.name, &step.describe());
        let kind = step.kind();
        let watchdog = RefCell::new(self.watchdog(step));
        let s_start = self.t0.elapsed().as_secs_f64();
        // The moves so far: a move step, the one that adds to them, is not judged while it runs.
        let moves = self.moves.clone();
        // The record so far, the running step cut off now, as the online checks see it.
        let so_far = SoFar {
            t0: self.t0,
            sampler: &self.sampler,
            phases: &self.phases,
            steps: &self.steps,
            moves: &moves,
            phase: &sc.phases[pi],
            phase_start: self.phase_start,
            step: ((pi, rep), step, s_start),
        };
        let failing = (self.online.as_ref())
            .filter(|_| kind != StepKind::Move)
            .map(|(o, base)| move || o.failure(std::time::Instant::now(), || so_far.record(base)));
        let failing = failing.as_ref().map(|f| f as &dyn Fn() -> Option<String>);
        let mut env = StepEnv {
            ctx,
            sc,
            phase,
            step,
            deadline: self.deadline,
            watchdog: &watchdog,
            failing,
            aux: self.aux,
            groups: self.groups,
            scratch: self.scratch,
            holders,
            moves: &mut self.moves,
            notes: &mut self.notes,
        };
        let probe_mark = before_step(&env, &self.sampler, guard)?;
        let probe = || {
            kind.measured()
                .then(|| LoadProbe::read(self.root))
                .flatten()
        };
        let before = probe();
        let ran = execute_step(&mut env);
        let s_end = self.t0.elapsed().as_secs_f64();
        let after = probe();
        // A step stopped by a timeout or a stall is recorded up to now (with nothing measured),
        // so the checks judge what the samples show during it.
        let res = match ran {
            Ok(r) => r,
            Err(e @ (Stop::Timeout(_) | Stop::Stalled(_) | Stop::Failing(_))) => {
                let describe = format!("{} (stopped)", step.describe());
                self.stopped = Some(unmeasured((pi, rep), step, describe, (s_start, s_end)));
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        self.record_step((pi, rep), step, (s_start, s_end), &res, (before, after));
        after_step(&self.sampler, guard, kind, probe_mark)
    }

    /// A step's progress watchdog over the declared groups at the top (their children are below
    /// them; not the helpers').
    fn watchdog(&self, step: &Step) -> Watchdog {
        let top = self.groups.iter().filter(|(n, _)| !n.contains('/'));
        Watchdog::new(
            top.map(|(_, c)| c.clone()).collect(),
            Path::new(proc::PROC),
            self.ctx.stall.map(|s| s + idle_by_design(step)),
            waits_on_writeback(step),
        )
    }

    /// Records a step that ran to its end, `at` (phase, repetition), with what it measured and
    /// the load on the machine from `before` to `after` it; says a write's speed.
    fn record_step(
        &mut self,
        at: (usize, u32),
        step: &Step,
        (start, end): (f64, f64),
        res: &JobResult,
        (before, after): (Option<LoadProbe>, Option<LoadProbe>),
    ) {
        let (ctx, kind) = (self.ctx, step.kind());
        if kind == StepKind::Write && res.seconds > 0.0 {
            ctx.progress.measured(
                &self.sc.name,
                &format!("{:.1} MB/s", res.bytes as f64 / res.seconds / 1e6),
            );
        }
        self.steps.push(StepRecord {
            round: self.round_no,
            bytes: res.bytes,
            seconds: res.seconds,
            cpu_seconds: res.cpu_seconds,
            killed: res.killed,
            task_killed: res.task_killed,
            survived: res.survived,
            minflt: res.minflt,
            majflt: res.majflt,
            knob: res.knob.clone(),
            declined: res.declined.clone(),
            made: res.made,
            placed: res.placed.clone(),
            immune: res.immune,
            immune_survived: res.immune_survived,
            outside_killed: res.outside_killed,
            waited: res.waited,
            load: match (&before, &after) {
                (Some(b), Some(a)) => {
                    let own = if kind == StepKind::Write {
                        res.bytes
                    } else {
                        0
                    };
                    Some(a.since(b, own, ctx.machine.page_size))
                }
                _ => None,
            },
            ..unmeasured(at, step, step.describe(), (start, end))
        });
    }
}

impl Run<'_> {
    /// Why repetition `rep` of phase `pi` was measured on a busy machine, if it was.
    fn busy_rep(&self, pi: usize, rep: u32) -> Option<String> {
        self.steps
            .iter()
            .filter(|s| s.phase == pi && s.rep == rep)
            .find_map(|s| s.load.filter(|l| l.busy()))
            .map(|l| l.describe())
    }
}

fn read_vmstat() -> Result<crate::sys::cgroup::stat::Stat, Stop> {
    Ok(proc::vmstat_snapshot(Path::new(proc::PROC))?)
}

/// A step's record with nothing measured: step `step` of repetition `rep` of phase `pi`,
/// described as `describe`, from `start` to `end`.
fn unmeasured(
    (pi, rep): (usize, u32),
    step: &Step,
    describe: String,
    (start, end): (f64, f64),
) -> StepRecord {
    StepRecord {
        phase: pi,
        rep,
        kind: step.kind(),
        describe,
        start,
        end,
        cgroup: step.cgroup().unwrap_or_default().to_string(),
        ..Default::default()
    }
}

/// The record of a phase still running, from `start` to `end`, as checks judged meanwhile see it.
fn running(phase: &Phase, start: f64, end: f64) -> PhaseRecord {
    PhaseRecord {
        name: phase.name.clone(),
        start,
        end,
        antagonists: Vec::new(),
        warmup: phase.warmup,
        vmstat_start: Default::default(),
        vmstat_end: Default::default(),
    }
}

/// What the online checks judge while a step runs: the record so far, with the running phase up
/// to now and the running step cut off now.
struct SoFar<'r> {
    t0: Instant,
    sampler: &'r Sampler,
    phases: &'r [PhaseRecord],
    steps: &'r [StepRecord],
    moves: &'r [MoveRecord],
    /// The running phase and when it started.
    phase: &'r Phase,
    phase_start: f64,
    /// The running step: (phase, repetition), the step, when it started.
    step: ((usize, u32), &'r Step, f64),
}

impl SoFar<'_> {
    /// The record so far on top of `base` (the parts that do not change while the phases run).
    fn record(&self, base: &Record) -> Record {
        let now = self.t0.elapsed().as_secs_f64();
        let mut all = self.phases.to_vec();
        all.push(running(self.phase, self.phase_start, now));
        let (at, step, start) = self.step;
        Record {
            series: self.sampler.snapshot(),
            phases: all,
            steps: self.steps.to_vec(),
            moves: self.moves.to_vec(),
            stopped: Some(unmeasured(
                at,
                step,
                format!("{} (running)", step.describe()),
                (start, now),
            )),
            ..base.clone()
        }
    }
}

/// Before a step: a probe's clean ballast and writeback held off, and the knobs a `pressure` or
/// `khugepaged` step turns. Returns the mark `after_step` restores the sysctls to.
fn before_step(env: &StepEnv, sampler: &Sampler, guard: &mut Guard) -> Result<usize, Stop> {
    // The probe holds writeback off while it writes and while the sampler looks.
    let probe_mark = guard.sysctls.mark();
    if let Step::Probe {
        cgroup, file, size, ..
    } = env.step
    {
        prepare_probe(env, cgroup, file, *size, guard)?;
        // The window starts from a sample taken after the ballast is clean.
        sampler.wait_newer();
    }
    tune_machine(env.step, &mut guard.sysctls)?;
    Ok(probe_mark)
}

/// After a step: samples that show its effect, the probe's sysctls back, and the sampler's
/// health.
fn after_step(
    sampler: &Sampler,
    guard: &mut Guard,
    kind: StepKind,
    probe_mark: usize,
) -> Result<(), Stop> {
    // At least one sample taken after every step, so checks see its effect before the next;
    // after a sync, samples for STALE_WINDOW, so a reading left stale by a concurrent
    // stats flush is refreshed before the next step starts.
    sampler.wait_newer();
    if kind == StepKind::Sync {
        let until = Instant::now() + Duration::from_secs_f64(check::STALE_WINDOW);
        while Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        sampler.wait_newer();
    }
    guard.sysctls.restore_to(probe_mark)?;
    // Counter files that opened and read at the start and broke mid-run: the kernel's.
    if let Some(e) = sampler.error() {
        return Err(Stop::Failed(Error::Kernel(format!("sampler: {e}"))));
    }
    Ok(())
}
