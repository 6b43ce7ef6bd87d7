//! The checks of the documented knobs and events: knob, limit-takes, peak-reset, notifies,
//! notified, oom-waits, slowed, stalled and no-oom. Each passes where the kernel kept its promise,
//! fails where it broke it (naming the file, the amount or the time, and the promise), and is not
//! exercised, never passed, where nothing put the promise to the test.

use std::time::Duration;

use super::moves::move_record;
use super::*;
use crate::check::events::notified::Notified;
use crate::check::events::oom_waits::OomWaits;
use crate::check::limits::knob::Knob;
use crate::check::limits::limit_takes::LimitTakes;
use crate::check::limits::no_oom::NoOom;
use crate::check::limits::peak_reset::PeakReset;
use crate::check::limits::slowed::Slowed;
use crate::check::limits::stalled::{Bound, Stalled};
use crate::model::contract::{v1, v2};
use crate::model::{CgroupSpec, KnobWrite, Notice, Version};

mod events;
mod in_force;

/// `cols` sampled every 0.1 s for 3 s (phase "move", 0..2.9 s), each value `at(col, t)`; no steps.
fn sampled(cols: &[&str], at: impl Fn(&str, f64) -> i64) -> Record {
    let mut r = move_record(0, None);
    r.steps.clear();
    r.series = Series::new(cols.iter().map(|c| Column::from(*c)).collect());
    for i in 0..30 {
        let t = i as f64 * 0.1;
        let row: Vec<i64> = cols.iter().map(|c| at(c, t)).collect();
        r.series.push(t, &row);
    }
    r
}

/// A step of `kind` in `cgroup` from `start` to `end` (64 MiB: an exhaust step's task finished).
fn step(kind: StepKind, cgroup: &str, start: f64, end: f64) -> StepRecord {
    StepRecord {
        kind,
        describe: kind.name().into(),
        start,
        end,
        bytes: 64 << 20,
        cgroup: cgroup.into(),
        ..Default::default()
    }
}

/// A `set` step on `cgroup` from `t` to 50 ms later that did `knob`.
fn set(cgroup: &str, t: f64, knob: KnobWrite) -> StepRecord {
    StepRecord {
        knob: Some(knob),
        ..step(StepKind::Set, cgroup, t, t + 0.05)
    }
}

/// Writing `value` to `file` (None: only reading it), refused with `error` (None: it succeeded).
fn wrote(file: &str, value: Option<&str>, error: Option<&str>) -> KnobWrite {
    KnobWrite {
        file: file.into(),
        written: value.map(String::from),
        error: error.map(String::from),
        ..Default::default()
    }
}

/// That `file` of `group` signalled at `t`.
fn notice(t: f64, group: &str, file: &str) -> Notice {
    Notice {
        t,
        group: group.into(),
        file: file.into(),
        count: 1,
        refused: None,
    }
}

/// A declared group `name` with a memory limit and memory.high (in bytes).
fn group(name: &str, limit: Option<i64>, high: Option<i64>) -> CgroupSpec {
    let (limit, high) = (limit.map(|l| l as u64), high.map(|h| h as u64));
    let name = name.into();
    CgroupSpec {
        name,
        limit,
        high,
        ..Default::default()
    }
}

/// The verdict as a scenario's check gives it: with the promises judged and the one broken.
fn judge(spec: impl CheckSpec + 'static, rec: &Record) -> CheckResult {
    Check::new(spec).judge(rec)
}

/// Asserts that `c` passed, showing `actual`.
#[track_caller]
fn passes(c: &CheckResult, actual: &str) {
    assert!(c.outcome == Outcome::Pass && c.actual == actual, "{c:?}");
}

/// Asserts that `c` failed showing `actual`, its detail saying `why`, and that it broke
/// `promise` ("": none).
#[track_caller]
fn fails(c: &CheckResult, actual: &str, why: &str, promise: &str) {
    assert!(c.outcome == Outcome::Fail && c.actual == actual, "{c:?}");
    assert!(c.detail.contains(why), "{}", c.detail);
    assert_eq!(c.broke.as_deref().unwrap_or(""), promise, "{c:?}");
}

/// Asserts that `c` was not exercised, saying `why`, and judged no promise.
#[track_caller]
fn idle(c: &CheckResult, why: &str) {
    assert_eq!(c.outcome, Outcome::NotExercised, "{c:?}");
    assert!(c.detail.contains(why), "{}", c.detail);
    assert!(c.promises.is_empty() && c.broke.is_none(), "{c:?}");
}

// ---- knob

/// knob of a's `file`: each write then reads `reads`, or fails with `fails`.
fn knob(file: &str, reads: Option<&str>, fails: Option<&str>) -> Knob {
    Knob {
        cgroup: "a".into(),
        files: vec![file.into()],
        key: None,
        value: None,
        phase: None,
        reads: reads.map(String::from),
        fails: fails.map(String::from),
        changes: false,
        unsupported: None,
    }
}

/// Group a's `set` steps, one every half second from 0.5 s.
fn knob_record(writes: Vec<KnobWrite>) -> Record {
    let mut r = sampled(&["a.usage"], |_, _| 0);
    let at = |i: usize| 0.5 + i as f64 * 0.5;
    let steps = writes.into_iter().enumerate();
    r.steps = steps.map(|(i, k)| set("a", at(i), k)).collect();
    r
}

/// `k`, then the file reading `after`.
fn reads(after: &str, mut k: KnobWrite) -> KnobWrite {
    k.after = Some(after.into());
    k
}

#[test]
fn a_limit_that_reads_back_as_written_passes() {
    let spec = knob("memory.max", Some("written"), None);
    let k = reads("67108864", wrote("memory.max", Some("64M"), None));
    passes(&judge(spec, &knob_record(vec![k])), "reads 67108864");
    // A flat-keyed file is judged by its key's line; a read (no value) judges what it held.
    let mut spec = knob("memory.stat", Some("64M"), None);
    spec.key = Some("hierarchical_memory_limit".into());
    let stat = "cache 0\nhierarchical_memory_limit 67108864\nrss 4096";
    let k = reads(stat, wrote("memory.stat", None, None));
    let c = judge(spec, &knob_record(vec![k]));
    passes(&c, "reads 67108864");
    assert_eq!(c.name, "knob(a: memory.stat hierarchical_memory_limit)");
}

#[test]
fn a_limit_that_reads_back_otherwise_fails_naming_the_file_and_what_it_read() {
    let spec = knob("memory.limit_in_bytes", Some("written"), None);
    let k = wrote("memory.limit_in_bytes", Some("64M"), None);
    let mut rec = knob_record(vec![reads("67104768", k)]);
    rec.version = Version::V1;
    let mut check = Check::new(spec.clone());
    check.promises = vec![&v1::LIMIT_READBACK];
    let c = check.judge(&rec);
    let why = "writing \"64M\" to a's memory.limit_in_bytes: the file then read \"67104768\", not written";
    fails(&c, "reads \"67104768\"", why, "v1.limit.readback");
    assert_eq!(c.expected, "succeeds, then reads written");
    assert!(c.detail.contains("it breaks cgroup-v1/memory.rst"), "{c:?}");
    // knob judges no promise of its own: undeclared, its failure quotes none.
    fails(&judge(spec, &rec), "reads \"67104768\"", why, "");
}

#[test]
fn a_write_the_kernel_takes_where_it_must_refuse_it_fails() {
    let mut check = Check::new(knob("memory.reclaim", None, Some("EAGAIN")));
    check.promises = vec![&v2::RECLAIM_EAGAIN];
    let reclaim = |error| knob_record(vec![wrote("memory.reclaim", Some("1G"), error)]);
    passes(&check.judge(&reclaim(Some("EAGAIN"))), "failed with EAGAIN");
    let c = check.judge(&reclaim(None));
    let why = "writing \"1G\" to a's memory.reclaim: the kernel took it, where it should refuse it with EAGAIN";
    fails(&c, "succeeded", why, "v2.reclaim.eagain");
    let c = check.judge(&reclaim(Some("EBUSY")));
    let why = "the kernel refused it with EBUSY, not EAGAIN";
    fails(&c, "failed with EBUSY", why, "v2.reclaim.eagain");
    // A write that must succeed and was refused fails with the errno.
    let high = knob_record(vec![wrote("memory.high", Some("1M"), Some("EINVAL"))]);
    let c = judge(knob("memory.high", None, None), &high);
    let why = "memory.high: the kernel refused it with EINVAL";
    fails(&c, "failed with EINVAL", why, "");
}

#[test]
fn a_knob_no_write_put_to_the_test_is_not_exercised() {
    let mut spec = knob("memory.failcnt", Some("0"), None);
    let c = judge(spec.clone(), &knob_record(vec![]));
    idle(&c, "no set step on a's memory.failcnt");
    // A file this kernel lacks, or a key it refuses as unknown: not exercised, with the reason.
    let absent = knob_record(vec![wrote("memory.failcnt", Some("0"), Some("ENOENT"))]);
    let c = judge(spec.clone(), &absent);
    idle(&c, "this kernel has no memory.failcnt");
    let mut newer = knob("memory.reclaim", None, None);
    newer.unsupported = Some("EINVAL".into());
    let k = wrote("memory.reclaim", Some("1M swappiness=0"), Some("EINVAL"));
    let c = judge(newer, &knob_record(vec![k]));
    idle(&c, "failed with EINVAL: this kernel does not have it");
    // With `changes`, resetting a count that already read 0 proves nothing.
    spec.changes = true;
    let mut k = reads("0", wrote("memory.failcnt", Some("0"), None));
    k.before = Some("0".into());
    let c = judge(spec, &knob_record(vec![k]));
    idle(&c, "no set step on a's memory.failcnt changed what it read");
}

// ---- limit-takes

/// Group a at 60 MiB until t=1.0 and `after` from then on; a `set` step writes `value` to `file`
/// at 0.92..0.97 s (the sample before it: t=0.9, the one after: t=1.0).
fn lowered(file: &str, value: &str, error: Option<&str>, after: i64) -> Record {
    let mut r = sampled(&["a.usage"], |_, t| if t < 1.0 { 60 * MIB } else { after });
    r.steps = vec![set("a", 0.92, wrote(file, Some(value), error))];
    r
}

/// limit-takes of a on `rec`.
fn limit_takes(rec: &Record) -> CheckResult {
    judge(LimitTakes { cgroup: "a".into() }, rec)
}

/// a's memory.max lowered to 32 MiB, the usage then `after`.
fn to_32m(after: i64) -> Record {
    lowered("memory.max", "32M", None, after)
}

#[test]
fn a_limit_lowered_below_the_usage_that_takes_at_once_passes() {
    let c = limit_takes(&to_32m(30 * MIB));
    passes(&c, "60.0 MiB -> 32.0 MiB (usage then 30.0 MiB)");
    assert_eq!(c.promises, vec!["v2.max.lowered"]);
    // Within the charge stock and a huge page (2.5 MiB on 2 CPUs) above it.
    let c = limit_takes(&to_32m(34 * MIB));
    passes(&c, "60.0 MiB -> 32.0 MiB (usage then 34.0 MiB)");
}

#[test]
fn usage_still_above_a_lowered_limit_fails_with_the_file_the_amount_and_the_time() {
    let c = limit_takes(&to_32m(48 * MIB));
    let why = "a's memory.max was lowered from a usage of 60.0 MiB to 32.0 MiB; at t=1.000s, after the write returned, the usage was still 48.0 MiB";
    fails(&c, "usage 48.0 MiB", why, "v2.max.lowered");
    assert_eq!(c.expected, "<= 32.0 MiB (the limit written)");
    assert_eq!((c.at, c.bound), (Some(1.0), Some(32 * MIB)));
    let tolerance = c.tolerance.unwrap_or_default();
    let stock = "2.5 MiB (64 pages x 2 CPUs of charge stock + a 2 MiB huge page)";
    assert_eq!(tolerance, stock);
    // v1 breaks memory.rst's limit.
    let mut rec = lowered("memory.limit_in_bytes", "32M", None, 48 * MIB);
    rec.version = Version::V1;
    let why = "a's memory.limit_in_bytes was lowered from a usage of 60.0 MiB to 32.0 MiB";
    fails(&limit_takes(&rec), "usage 48.0 MiB", why, "v1.limit");
}

#[test]
fn a_limit_never_lowered_below_the_usage_is_not_exercised() {
    // Raised above the usage; refused (v1's EBUSY, where reclaim cannot make it fit).
    let raised = lowered("memory.max", "128M", None, 60 * MIB);
    let refused = lowered("memory.limit_in_bytes", "32M", Some("EBUSY"), 60 * MIB);
    for rec in [raised, refused] {
        let c = limit_takes(&rec);
        idle(&c, "no set step lowered a's limit below its usage");
    }
    let mut unsampled = to_32m(48 * MIB);
    unsampled.series.rename(0, "b.usage".into());
    idle(&limit_takes(&unsampled), "a's usage was not sampled");
}

// ---- peak-reset

/// Group a using 20 MiB and 20 MiB of swap throughout; at 1.0..1.05 s a `set` step writes `file`,
/// which read `before`, then `fresh` through a new descriptor and `own` through the one written.
fn reset(file: &str, error: Option<&str>, [before, fresh, own]: [i64; 3]) -> Record {
    let mut r = sampled(&["a.usage", "a.swap"], |_, _| 20 * MIB);
    let mut k = wrote(file, Some("reset"), error);
    let n = |b: i64| Some(b.to_string());
    (k.before, k.after, k.same_fd) = (n(before), n(fresh), n(own));
    r.steps = vec![set("a", 1.0, k)];
    r
}

/// peak-reset of a's `file` on `rec`.
fn peak(file: &str, rec: &Record) -> CheckResult {
    let (cgroup, file) = ("a".into(), file.into());
    judge(PeakReset { cgroup, file }, rec)
}

#[test]
fn a_watermark_reset_for_the_writer_only_passes() {
    let rec = reset("memory.peak", None, [100 * MIB, 100 * MIB, 20 * MIB]);
    let c = peak("memory.peak", &rec);
    let what = "100.0 MiB -> 20.0 MiB for the writer, 100.0 MiB for others";
    passes(&c, what);
    assert_eq!(c.promises, vec!["v2.peak.reset"]);
}

#[test]
fn a_watermark_the_write_left_as_it_was_fails_naming_what_the_writer_read() {
    let rec = reset("memory.peak", None, [100 * MIB; 3]);
    let c = peak("memory.peak", &rec);
    let why = "after 'set' (t=1.050s): through the descriptor reset, it then read 100.0 MiB: not the usage of the moment (a's memory.peak read 100.0 MiB before the reset, the usage was 20.0 MiB..20.0 MiB around it)";
    fails(&c, "100.0 MiB", why, "v2.peak.reset");
    assert_eq!(c.at, Some(1.05));
}

#[test]
fn a_reset_that_reaches_other_descriptors_fails_breaking_the_swap_watermark_promise() {
    let rec = reset("memory.swap.peak", None, [100 * MIB, 20 * MIB, 20 * MIB]);
    let c = peak("memory.swap.peak", &rec);
    let why = "through a new descriptor it then read 20.0 MiB: the group's own watermark was reset too (a's memory.swap.peak read 100.0 MiB before";
    fails(&c, "20.0 MiB", why, "v2.swap.peak.reset");
}

#[test]
fn a_reset_this_kernel_refuses_or_one_near_the_usage_is_not_exercised() {
    let old = reset("memory.peak", Some("EINVAL"), [100 * MIB; 3]);
    let why = "writing a's memory.peak failed with EINVAL: this kernel cannot reset it (6.12+)";
    idle(&peak("memory.peak", &old), why);
    // A watermark within twice the tolerance of the usage: a reset that did nothing would pass.
    let near = reset("memory.peak", None, [24 * MIB; 3]);
    let why = "no reset of a's memory.peak found its watermark above the usage";
    idle(&peak("memory.peak", &near), why);
}

/// An exhaust step in `cgroup` at `start`..`end` that killed `killed` tasks.
fn exhausts(cgroup: &str, (start, end): (f64, f64), killed: u32) -> StepRecord {
    let mut st = step(StepKind::Exhaust, cgroup, start, end);
    st.killed = killed;
    st
}

// ---- oom-waits

/// v1 group w: oom_kill_disable written at 0.1 s (refused with `error`), then `exhaust`.
fn waiting(error: Option<&str>, exhaust: StepRecord) -> Record {
    let mut r = sampled(&["w.usage"], |_, _| 32 * MIB);
    r.version = Version::V1;
    let disable = wrote("memory.oom_control", Some("1"), error);
    r.steps = vec![set("w", 0.1, disable), exhaust];
    r
}

/// An exhaust step in w at 0.5..2.0 s: tasks killed, whether it waited under OOM, bytes touched
/// (0: the task did not finish).
fn exhaust(killed: u32, waited: Option<bool>, bytes: u64) -> StepRecord {
    let mut st = exhausts("w", (0.5, 2.0), killed);
    (st.waited, st.bytes) = (waited, bytes);
    st
}

fn oom_waits(rec: &Record) -> CheckResult {
    judge(OomWaits { cgroup: "w".into() }, rec)
}

const WAITS: &str = "v1.oom_control.disable";
const DONE: u64 = 64 << 20;

#[test]
fn a_task_that_waits_under_oom_and_finishes_once_raised_passes() {
    let c = oom_waits(&waiting(None, exhaust(0, Some(true), DONE)));
    passes(&c, "1 OOMs waited, none killed");
    assert_eq!(c.promises, vec![WAITS]);
}

#[test]
fn a_kill_with_oom_kill_disable_set_fails_with_the_step_and_its_time() {
    let c = oom_waits(&waiting(None, exhaust(1, Some(true), DONE)));
    let why = "in 'exhaust' (t=0.500s..2.000s): the OOM killer killed a task although oom_kill_disable was set";
    fails(&c, "1 tasks killed", why, WAITS);
    assert_eq!(c.at, Some(2.0));
    // Not under OOM while it waited; never waited; never finished.
    let cases = [
        (Some(false), DONE, "under_oom 0", "group under OOM"),
        (None, DONE, "the task did not wait", "into the limit"),
        (Some(true), 0, "the task did not finish", "was raised"),
    ];
    for (waited, bytes, actual, why) in cases {
        let c = oom_waits(&waiting(None, exhaust(0, waited, bytes)));
        fails(&c, actual, why, WAITS);
    }
    // A step cut off while it waited is judged too.
    let mut cut = waiting(None, exhaust(0, Some(true), DONE));
    cut.stopped = Some(exhaust(0, Some(true), 0));
    let (actual, why) = ("the task did not finish", "after the limit was raised");
    fails(&oom_waits(&cut), actual, why, WAITS);
}

#[test]
fn oom_waits_without_oom_kill_disable_or_an_exhaust_after_it_is_not_exercised() {
    let refused = waiting(Some("EINVAL"), exhaust(1, None, 0));
    idle(&oom_waits(&refused), "oom_kill_disable was not set in w");
    let mut before = exhaust(1, None, 0);
    before.start = 0.0;
    let c = oom_waits(&waiting(None, before));
    idle(&c, "no exhaust step ran in w after oom_kill_disable");
}

/// oom_kill_disable set, then cleared (0 written): the OOM killer may kill again.
#[test]
fn a_kill_after_oom_kill_disable_was_cleared_does_not_fail() {
    let mut rec = waiting(None, exhaust(0, Some(true), DONE));
    let enable = wrote("memory.oom_control", Some("0"), None);
    rec.steps.push(set("w", 2.1, enable));
    rec.steps.push(exhausts("w", (2.5, 2.8), 1));
    assert_ne!(oom_waits(&rec).outcome, Outcome::Fail);
}

// ---- slowed

/// Usemem steps in a of phase "move", the i-th at 1 + 10 i s lasting `took[i]` seconds.
fn usemem(took: &[f64]) -> Record {
    let mut r = sampled(&["a.usage"], |_, _| 0);
    let at = |i: usize| 1.0 + 10.0 * i as f64;
    let usemem = |(i, d): (usize, &f64)| step(StepKind::Usemem, "a", at(i), at(i) + d);
    r.steps = took.iter().enumerate().map(usemem).collect();
    r
}

/// slowed of the usemem steps (of `phase`) at 1.5 s at least, on `rec`.
fn slowed(phase: Option<&str>, rec: &Record) -> CheckResult {
    let (step, phase) = (StepKind::Usemem, phase.map(String::from));
    let at_least = Duration::from_millis(1500);
    let spec = Slowed {
        step,
        phase,
        at_least,
    };
    judge(spec, rec)
}

#[test]
fn steps_that_took_the_penalty_pass() {
    let c = slowed(None, &usemem(&[2.0, 1.6]));
    passes(&c, "2.000 s, 1.600 s");
    assert_eq!(c.promises, vec!["v2.swap.high"]);
    passes(&slowed(Some("move"), &usemem(&[2.0])), "2.000 s");
}

#[test]
fn a_step_shorter_than_the_penalty_fails_with_its_time() {
    let c = slowed(None, &usemem(&[2.0, 0.4]));
    let why = "'usemem' (t=11.000s..11.400s) took 0.400 s: too short for the sleep the kernel owes a task of a group above its memory.swap.high or memory.high";
    fails(&c, "0.400 s", why, "v2.swap.high");
    assert_eq!((c.expected.as_str(), c.at), (">= 1.500 s", Some(11.4)));
}

#[test]
fn slowed_with_no_such_step_is_not_exercised() {
    idle(&slowed(None, &usemem(&[])), "no usemem step ran");
    let elsewhere = slowed(Some("other"), &usemem(&[0.4]));
    idle(&elsewhere, "no usemem step ran");
}

// ---- stalled

/// Reads of a's memory.pressure, the i-th at 0.5 + 2 i s, showing `some total=` of each (None:
/// the read failed with EOPNOTSUPP, PSI off).
fn pressure_reads(totals: &[Option<u64>]) -> Record {
    let mut r = sampled(&["a.usage"], |_, _| 0);
    let read = |total: &Option<u64>| match total {
        Some(us) => reads(&psi(*us), wrote("memory.pressure", None, None)),
        None => wrote("memory.pressure", None, Some("EOPNOTSUPP")),
    };
    let at = |i: usize| 0.5 + 2.0 * i as f64;
    let reads = totals.iter().enumerate();
    r.steps = reads.map(|(i, t)| set("a", at(i), read(t))).collect();
    r
}

/// memory.pressure's text, `us` in its `some total=`.
fn psi(us: u64) -> String {
    let avg = "avg10=1.00 avg60=0.50 avg300=0.10";
    format!("some {avg} total={us}\nfull {avg} total={}", us / 2)
}

fn stalled(totals: &[Option<u64>]) -> CheckResult {
    let bound = Bound::AtLeast(Duration::from_secs(2));
    judge(
        Stalled {
            cgroup: "a".into(),
            bound,
        },
        &pressure_reads(totals),
    )
}

#[test]
fn a_group_that_only_wrote_a_limit_stalls_at_most_the_bound() {
    let bound = Bound::AtMost(Duration::from_millis(2));
    let c = |totals: &[Option<u64>]| {
        judge(
            Stalled {
                cgroup: "a".into(),
                bound,
            },
            &pressure_reads(totals),
        )
    };
    passes(&c(&[Some(10), Some(1_810)]), "+0.002 s");
    let why = "a's memory.pressure some total rose by 0.030 s between t=0.550s and t=2.550s: its tasks stalled on memory although they only wrote a limit";
    fails(&c(&[Some(0), Some(30_000)]), "+0.030 s", why, "v2.pressure");
}

#[test]
fn a_stall_as_long_as_the_throttling_passes() {
    let c = stalled(&[Some(1_000_000), Some(3_500_000)]);
    passes(&c, "+2.500 s");
    assert_eq!(c.promises, vec!["v2.pressure"]);
}

#[test]
fn too_little_stall_fails_naming_the_file_the_rise_and_the_times() {
    let c = stalled(&[Some(1_000_000), Some(1_100_000)]);
    let why = "a's memory.pressure some total rose by 0.100 s between t=0.550s and t=2.550s: less than the stall";
    fails(&c, "+0.100 s", why, "v2.pressure");
    assert_eq!((c.expected.as_str(), c.at), (">= +2.000 s", Some(2.55)));
}

#[test]
fn stalled_without_psi_or_two_reads_is_not_exercised() {
    let why = "a has no readable memory.pressure here (PSI off), or fewer than two reads";
    for totals in [&[Some(1_000_000)][..], &[Some(1_000_000), None], &[]] {
        idle(&stalled(totals), why);
    }
}

// ---- no-oom

/// Group a with `limit` and `high` using `usage` throughout; its `rising` OOM count goes 0 -> 1
/// at t=1.5 s.
fn ooms([limit, high]: [Option<i64>; 2], usage: i64, rising: Option<&str>) -> Record {
    let cols = ["a.usage", "a.oom_kills", "a.oom_events"];
    let mut r = sampled(&cols, |c, t| match c {
        "a.usage" => usage,
        c => (Some(c) == rising && t >= 1.5) as i64,
    });
    r.cgroups = vec![group("a", limit, high)];
    r
}

fn no_oom(rec: &Record) -> CheckResult {
    judge(NoOom { cgroup: "a".into() }, rec)
}

const HIGH: [Option<i64>; 2] = [None, Some(32 * MIB)];
const LIMIT: [Option<i64>; 2] = [Some(64 * MIB), None];

#[test]
fn usage_over_memory_high_or_at_a_limit_without_an_oom_passes() {
    let c = no_oom(&ooms(HIGH, 40 * MIB, None));
    passes(&c, "usage up to 40.0 MiB, no OOM");
    let counts = "its OOM counts (a.oom_kills, a.oom_events) stayed";
    assert!(c.detail.contains(counts), "{c:?}");
    assert_eq!(c.promises, vec!["v2.high.no-oom"]);
    let c = no_oom(&ooms(LIMIT, 60 * MIB, None));
    passes(&c, "usage up to 60.0 MiB, no OOM");
    assert_eq!(c.promises, vec!["v2.max.no-oom-kinds", "v2.events.oom"]);
}

#[test]
fn an_oom_over_memory_high_fails_with_the_counter_and_the_time() {
    let c = no_oom(&ooms(HIGH, 40 * MIB, Some("a.oom_events")));
    let why = "at t=1.500s (phase move) a.oom_events rose from 0 to 1 while a's usage met a memory.high of 32.0 MiB";
    fails(&c, "a.oom_events 0 -> 1", why, "v2.high.no-oom");
    assert_eq!(c.at, Some(1.5));
    // At a limit, the page cache's promise.
    let c = no_oom(&ooms(LIMIT, 60 * MIB, Some("a.oom_kills")));
    let why = "a.oom_kills rose from 0 to 1 while a's usage met a limit of 64.0 MiB";
    fails(&c, "a.oom_kills 0 -> 1", why, "v2.max.no-oom-kinds");
}

#[test]
fn a_task_killed_at_memory_high_fails() {
    let mut rec = ooms(HIGH, 40 * MIB, None);
    rec.steps = vec![exhausts("a", (1.0, 2.0), 2)];
    let why = "2 of a's tasks died of SIGKILL while its usage met a memory.high of 32.0 MiB";
    fails(&no_oom(&rec), "2 tasks killed", why, "v2.high.no-oom");
}

#[test]
fn usage_that_never_met_a_limit_is_not_exercised_even_with_an_oom() {
    // At memory.high, not above it; below 90 % of the limit (57.6 MiB of 64 MiB).
    let at_high = ooms(HIGH, 32 * MIB, Some("a.oom_kills"));
    let below_limit = ooms(LIMIT, 57 * MIB, Some("a.oom_kills"));
    for rec in [at_high, below_limit] {
        idle(&no_oom(&rec), "never met a limit or memory.high");
    }
    let mut unsampled = ooms(HIGH, 40 * MIB, None);
    unsampled.series.rename(0, "b.usage".into());
    idle(&no_oom(&unsampled), "a's usage was not sampled");
}

#[test]
fn no_oom_without_either_oom_count_sampled_is_not_exercised() {
    let mut rec = ooms([None, Some(16 * MIB)], 24 * MIB, None);
    rec.series = Series::new(vec!["a.usage".into()]);
    rec.series.push(0.0, &[24 * MIB]);
    rec.series.push(0.1, &[24 * MIB]);
    idle(&no_oom(&rec), "neither OOM count of a was sampled");
}
