//! Checks judged while a scenario runs. A kernel that throttles writers to a trickle makes
//! progress (no stall) and would cost the scenario's whole timeout, although an invariant knew
//! in the first second. So while a step waits, the runner judges the scenario's online checks
//! (those whose failure on the record so far stays a failure of the whole record, see
//! `CheckSpec::online`) on the record so far, every `EVERY`; the first failure stops the
//! scenario, which is then judged like one a stall stopped (`--keep-going` turns this off).

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use crate::check::{Check, CheckResult, Outcome};
use crate::model::Record;

/// How often the record so far is judged; longer while judging costs more than a fiftieth of
/// it (a long scenario's record grows, and the judging runs beside the workloads).
const EVERY: Duration = Duration::from_secs(2);

/// The online checks of one scenario and what they found.
pub(super) struct Online<'a> {
    checks: Vec<&'a Check>,
    next: Cell<Instant>,
    /// The first failure, as the record so far showed it.
    found: RefCell<Option<CheckResult>>,
}

impl<'a> Online<'a> {
    /// The scenario's online checks; None when it has none.
    pub(super) fn new(checks: &'a [Check]) -> Option<Online<'a>> {
        let checks: Vec<&Check> = checks.iter().filter(|c| c.online()).collect();
        (!checks.is_empty()).then(|| Online {
            checks,
            next: Cell::new(Instant::now() + EVERY),
            found: RefCell::new(None),
        })
    }

    /// When it is time, judges the record `so_far` builds; the first failing check's message.
    pub(super) fn failure(&self, now: Instant, so_far: impl FnOnce() -> Record) -> Option<String> {
        if let Some(f) = &*self.found.borrow() {
            return Some(message(f));
        }
        if now < self.next.get() {
            return None;
        }
        let rec = so_far();
        let fail = self
            .checks
            .iter()
            .map(|c| c.judge(&rec))
            .find(|r| r.outcome == Outcome::Fail && r.at.is_none_or(|at| settled(&rec, at)));
        let cost = now.elapsed();
        self.next.set(Instant::now() + EVERY.max(cost * 50));
        let msg = fail.as_ref().map(message);
        *self.found.borrow_mut() = fail;
        msg
    }

    /// The failure that stopped the scenario, if one did, with the names of the online checks.
    pub(super) fn into_cut(self) -> Option<Cut> {
        let stop = self.found.into_inner()?;
        let online = self.checks.iter().map(|c| c.name()).collect();
        Some(Cut { online, stop })
    }
}

/// A scenario an online failure stopped: the failure and the checks that were judged online.
pub(super) struct Cut {
    online: Vec<String>,
    stop: CheckResult,
}

/// How far past a failing sample the record must reach before the failure is believed: the
/// rules of the online checks look a little ahead (hierarchy's read skew at the next sample, a
/// charge forced for an OOM victim within half a second).
const LOOKAHEAD: f64 = 1.0;

/// Whether the record reaches far enough past `at` (two samples and `LOOKAHEAD`).
fn settled(rec: &Record, at: f64) -> bool {
    let t = &rec.series.t;
    let after = t.iter().rev().take_while(|&&x| x > at).count();
    after >= 2 && t.last().is_some_and(|&last| last - at >= LOOKAHEAD)
}

fn message(f: &CheckResult) -> String {
    format!(
        "stopped at the first confirmed failure, {} at {}: {} (expected {})",
        f.name,
        f.at.map_or("the end".to_string(), |t| format!("{t:.1} s")),
        f.actual,
        f.expected
    )
}

/// After an online failure stopped the scenario: the checks that are not online were judged on
/// a record cut short, which proves nothing either way; they say so instead of a verdict. The
/// failure that stopped it stays a failure even if the few samples taken since changed the
/// verdict of its rule (they cannot for an online check; if they did, the prefix's verdict is the
/// one that was confirmed).
pub(super) fn cut_short(checks: &mut [CheckResult], cut: &Cut) {
    let stop = &cut.stop;
    for c in checks.iter_mut() {
        if c.name == stop.name && c.outcome != Outcome::Fail {
            let implied = c.implied;
            *c = stop.clone();
            c.implied = implied;
        } else if !cut.online.contains(&c.name) && c.outcome.judged() {
            c.outcome = Outcome::NotExercised;
            c.passed = false;
            c.detail = format!(
                "not judged: the scenario stopped at the first confirmed failure ({}); \
                 --keep-going runs it to the end",
                stop.name
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Machine, Series};

    const SCENARIO: &str = r#"
name = "t"
summary = "s"
[requires]
writeback = true
[origin]
subject = "x"
[[cgroup]]
name = "test"
[[phase]]
name = "p"
steps = [{ action = "write", cgroup = "test", size = "8M" }, { action = "sync" }]
[[check]]
kind = "no-underflow"
cgroup = "test"
counters = ["dirty"]
[[check]]
kind = "settles"
cgroup = "test"
counters = ["dirty"]
"#;

    /// test.dirty sampled every 0.1 s up to `until`: 1 MiB, then -4 KiB from t = 2.
    fn so_far(until: f64) -> Record {
        let mut series = Series::new(vec!["test.dirty".into()]);
        for i in 0..=(until * 10.0).round() as usize {
            let t = i as f64 * 0.1;
            series.push(t, &[if t >= 2.0 { -4096 } else { 1 << 20 }]);
        }
        let machine = Machine {
            cpus: 2,
            page_size: 4096,
            node_drift_pages: 48,
            lru_gen: false,
            top_flushed: true,
        };
        Record::bare(series, machine, crate::model::Version::V2)
    }

    #[test]
    fn only_checks_that_cannot_change_their_mind_are_online() {
        let sc = crate::scenario::parse("t.toml", SCENARIO).unwrap();
        let o = Online::new(&sc.checks).unwrap();
        let names: Vec<String> = o.checks.iter().map(|c| c.name()).collect();
        assert!(
            names.contains(&"no-underflow(test)".to_string()),
            "{names:?}"
        );
        for offline in ["settles(test)", "faults(test)", "limit-counters(test)"] {
            assert!(!names.contains(&offline.to_string()), "{names:?}");
        }
    }

    /// A failure is believed once the record reaches a second past it, and only every EVERY.
    #[test]
    fn the_first_failure_stops_once_the_record_reaches_past_it() {
        let sc = crate::scenario::parse("t.toml", SCENARIO).unwrap();
        let o = Online::new(&sc.checks).unwrap();
        let now = Instant::now();
        assert_eq!(o.failure(now, || panic!("judged before its time")), None);
        let later = now + EVERY + Duration::from_millis(1);
        assert_eq!(o.failure(later, || so_far(1.5)), None);
        o.next.set(later);
        assert_eq!(
            o.failure(later, || so_far(2.5)),
            None,
            "too close to the end"
        );
        o.next.set(later);
        let why = o.failure(later, || so_far(3.5)).unwrap();
        assert!(why.contains("no-underflow(test) at 2.0 s"), "{why}");
        // Found once, it is the answer from then on.
        assert_eq!(o.failure(now, || panic!("judged again")), Some(why));
        assert_eq!(o.into_cut().unwrap().stop.outcome, Outcome::Fail);
    }

    /// After the stop, the checks that are not online are not judged, and the stopping one
    /// stays failed.
    #[test]
    fn a_record_cut_short_leaves_the_other_checks_unjudged() {
        let sc = crate::scenario::parse("t.toml", SCENARIO).unwrap();
        let o = Online::new(&sc.checks).unwrap();
        o.next.set(Instant::now());
        o.failure(Instant::now(), || so_far(4.0)).unwrap();
        let cut = o.into_cut().unwrap();
        let rec = so_far(4.0);
        let mut checks: Vec<CheckResult> = sc.checks.iter().map(|c| c.judge(&rec)).collect();
        // As if the few samples since had changed every verdict to a pass.
        for c in checks.iter_mut() {
            c.outcome = Outcome::Pass;
        }
        let i = (checks.iter().position(|c| c.name == "no-underflow(test)")).unwrap();
        cut_short(&mut checks, &cut);
        assert_eq!(checks[i].outcome, Outcome::Fail);
        let settles = checks.iter().find(|c| c.name == "settles(test)").unwrap();
        assert_eq!(settles.outcome, Outcome::NotExercised);
        assert!(
            settles.detail.contains("--keep-going"),
            "{}",
            settles.detail
        );
    }
}
