//! under-high: a group with memory.high stays near it. Once the page counter is above high, each
//! charge adds to the charging task's debt, and a task owing more than the 64-page batch reclaims
//! it before charging on (mm/memcontrol.c: try_charge, mem_cgroup_handle_over_high); what is left
//! is reclaimed on the way back to user space. So the counter's high watermark (v2 memory.peak,
//! which also sees what happens between samples) passes high only by the charges in flight and
//! the small overage reclaim may leave unthrottled (see `overshoot`). Each
//! time reclaim finds the group above high it counts a `high` event (memory.events): the count
//! rises when, and only when, the usage went above high.
//!
//! With `throttled = true` the memory above high cannot be reclaimed (anon in a group without
//! swap): then the kernel slows the charging task down instead (`throttled_growth`), and the
//! bound grows with the time the usage has been above high.

use crate::check::args::CheckArgs;
use crate::check::{Check, CheckResult, CheckSpec, Kind, Needs, Outcome, columns, missing, opt};
use crate::model::contract::v2;
use crate::model::counter::{HIGH_EVENTS, PEAK, USAGE};
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;
use crate::model::{Machine, Record};

/// `under-high`: `cgroup`'s high watermark stays within the overshoot the kernel allows above its
/// memory.high, and its high events agree with the usage. With `hit = true` (the workload needs
/// more than high) the usage must have gone above high and the events must count it.
#[derive(Debug, Clone, PartialEq)]
pub struct UnderHigh {
    pub cgroup: String,
    pub hit: bool,
    /// Reclaim can free nothing above high: the bound is the throttling's.
    pub throttled: bool,
}

/// `under-high` in the check table.
pub const KIND: Kind = Kind {
    kind: "under-high",
    doc: "cgroup v2: the group's high watermark (`peak`, which also sees what happens between \
samples; and `usage`) never passes its memory.high by more than the charges in flight, \
and memory.events `high` rises only once the usage went above high. Above high each \
charge adds to the charging task's debt, and a task owing more than the 64-page batch \
reclaims before charging on (mm/memcontrol.c: try_charge, \
mem_cgroup_handle_over_high); the rest is reclaimed on the way back to user space. The \
bound: 64 pages × CPUs (the per-CPU charge stock) + 128 pages (a task's debt before it \
must reclaim) + 2 MiB (a THP) + high/80 (after one round of reclaim a task goes on \
unthrottled while its penalty, overage² × HZ × debt pages, is at most HZ/100: an \
overage up to 1/80 of high for a 64-page debt). With `hit = true` the events must have \
risen; not exercised when the usage never went above high. A group below with a high \
of its own counts into the events, so \"only when\" is not judged then. With `throttled \
= true` reclaim can free nothing above high (anon, no swap): the kernel puts the \
charging task to sleep instead, and the bound grows with the time t since the usage \
passed high, by high/20 + cbrt(3.75 × high² × t) + 259 pages/s × t: each return to user \
space owing d pages sleeps min(r² × d s, 2 s), r the overage over high \
(calculate_high_delay), so the excess x grows as dx/dt ≤ high²/(0.8 x²) (0.8: a jiffy \
of truncation and one of the timer) and at the 2 s cap by at most one charge per sleep: \
a huge page (512 pages of 4 KiB: a THP fault charges it at once; 128 pages without THP). \
Not exercised when the group has no memory.high (memory.high can be set only in \
v2-only scenarios; the parser does not require v2 of the check itself). Result name: \
`under-high(<cgroup>)`.",
    keys: &[
        opt(
            "cgroup",
            "the group with memory.high (default: the only declared group)",
        ),
        opt(
            "hit",
            "the workload needs more than high: the usage must go above it and the events count it \
(default `false`)",
        ),
        opt(
            "throttled",
            "reclaim can free nothing above high: use the throttling bound (default `false`)",
        ),
    ],
    parse,
    promises: &[&v2::HIGH_THROTTLE, &v2::EVENTS_HIGH],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    if i.versions().contains(&crate::model::Version::V1) {
        return Err(i.err(
            i.span(),
            "under-high judges memory.high, a cgroup v2 setting: add requires.cgroup = [\"v2\"]",
        ));
    }
    let flag = |k| Ok::<_, ScenarioError>(i.get::<bool>(k)?.is_some_and(|b| b.into_inner()));
    Ok(Check::new(UnderHigh {
        cgroup: i.cgroup("cgroup")?,
        hit: flag("hit")?,
        throttled: flag("throttled")?,
    }))
}

impl CheckSpec for UnderHigh {
    fn name(&self) -> String {
        format!("under-high({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: [USAGE, PEAK, HIGH_EVENTS].map(String::from).to_vec(),
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        under_high(self.name(), rec, &self.cgroup, (self.hit, self.throttled))
    }
}

/// How far above memory.high (`high` bytes) the page counter may go: every CPU's stock of
/// pre-charged pages (up to the 64-page batch each), one task's debt before it must reclaim
/// (more than 64 pages plus the batch that crossed: 128), a THP charged at once (2 MiB), and
/// 1/80 of high: after one round of reclaim a task goes on without retrying when its penalty is
/// at most HZ/100, which is so while the overage is below 0.1/sqrt(debt) of high
/// (calculate_high_delay: penalty = overage^2 x HZ x debt pages), 1/80 for a 64-page debt.
pub fn overshoot(m: &Machine, high: i64) -> (i64, String) {
    let pages = 64 * m.cpus + 128;
    let bytes = (pages * m.page_size) as i64 + (2 << 20) + high / 80;
    (
        bytes,
        format!(
            "64 pages x {} CPUs (per-CPU charge stock) + 128 pages (a task's debt before it reclaims) + 2 MiB (a THP) + high/80 (an overage reclaim may leave without throttling) = {}",
            m.cpus,
            human_bytes(bytes)
        ),
    )
}

/// How much further above high (bytes) the usage may be `t` seconds after it passed high, when
/// reclaim can free nothing there. Each return to user space of a task owing `debt` pages charged
/// above high (64 per refill of its CPU's charge stock; more than 64 makes try_charge() handle it
/// at once, so at most 128) runs mem_cgroup_handle_over_high(): reclaim finds nothing, and the
/// task sleeps min(r^2 x debt s, 2 s), r = (usage - high) / high (calculate_high_delay: the
/// overage r << 20, squared, times HZ, shifted right by 34, times debt / 64), unless that is at
/// most HZ/100. So once r is 1/20, each page costs at least r^2 s, less a jiffy of truncation
/// and a jiffy of the timer (at most 20 ms of 160: counted as 0.8 r^2), and the excess x (pages)
/// grows as dx/dt <= high^2 / (0.8 x^2): x^3 by at most 3.75 high^2 per second; at the 2 s cap,
/// by at most one charge per 1.98 s: 128 pages, or a huge page's (page size / 8 pages: 512 of
/// 4 KiB) when a fault maps a THP (charged at once; explore, stock 6.12 seed 63 case 16: 2 MiB
/// every 2.07 s above a 26 MiB high, where 128 pages per sleep allowed 4 times less). Their sum:
/// high/20 + cbrt(3.75 high^2 t) + huge t / 1.98 pages.
pub fn throttled_growth(high: i64, page: u64, t: f64) -> (i64, String) {
    let h = high as f64 / page as f64;
    let t = t.max(0.0);
    let per_sleep = (page as f64 / 8.0).max(128.0);
    let rate = per_sleep / 1.98;
    let pages = h / 20.0 + (3.75 * h * h * t).cbrt() + rate * t;
    let bytes = (pages * page as f64) as i64;
    let text = format!(
        "throttled, reclaim can free nothing: high/20 + cbrt(3.75 x high^2 x t) + {rate:.0} pages/s x t (a huge page per 2 s sleep; t: seconds above high; the sleeps of calculate_high_delay) = {} at t={t:.1}s",
        human_bytes(bytes)
    );
    (bytes, text)
}

/// What the usage may have above high at a sample `t` s after it passed high: the overshoot,
/// and with `throttled` what the throttled task could charge since.
fn allowance(m: &Machine, high: i64, throttled: bool, t: f64) -> (i64, String) {
    let (a, text) = overshoot(m, high);
    if !throttled {
        return (a, text);
    }
    let (g, grown) = throttled_growth(high, m.page_size, t);
    (a + g, format!("{text} + {grown}"))
}

/// When the usage passed high: the last sample at or under it before the first one above.
fn passed_high(rec: &Record, over: impl Fn(usize) -> i64, high: i64) -> f64 {
    let s = &rec.series;
    match (0..s.len()).position(|r| over(r) > high) {
        Some(0) | None => s.t.first().copied().unwrap_or(0.0),
        Some(r) => s.t[r - 1],
    }
}

pub fn under_high(
    name: String,
    rec: &Record,
    cgroup: &str,
    (hit, throttled): (bool, bool),
) -> CheckResult {
    if let Some(why) = crate::check::limits_changed(rec, cgroup) {
        return missing(name, why);
    }
    let Some(high) = rec.high_of(cgroup) else {
        return missing(name, format!("{cgroup} has no memory.high"));
    };
    let want = [USAGE, PEAK, HIGH_EVENTS].map(String::from);
    let [usage, peak, events] = match columns(rec, cgroup, &want) {
        Ok(c) => [c[0].1, c[1].1, c[2].1],
        Err(e) => return missing(name, e),
    };
    let s = &rec.series;
    if s.is_empty() {
        return missing(name, "no samples".into());
    }
    let high = high as i64;
    // The watermark, and the usage in case the watermark is what broke.
    let over = |r: usize| s.get(r, peak).max(s.get(r, usage));
    let t0 = passed_high(rec, over, high);
    let bound = |r: usize| allowance(&rec.machine, high, throttled, s.t[r] - t0);
    let at = |r: usize| at(rec, r);
    let fail = |r: usize, actual: String, expected: String, detail: String| {
        let mut res = CheckResult::new(name.clone(), Outcome::Fail, actual, expected, detail);
        res.at = Some(s.t[r]);
        res.tolerance = Some(bound(r).1);
        res
    };
    let top = (0..s.len()).max_by_key(|&r| over(r)).unwrap_or(0);
    let max_over = over(top);
    if let Some(r) = (0..s.len()).find(|&r| over(r) > high + bound(r).0) {
        return fail(
            r,
            format!("{cgroup}.peak {}", human_bytes(max_over)),
            format!(
                "<= high {} + {}",
                human_bytes(high),
                human_bytes(bound(r).0)
            ),
            format!(
                "{} {cgroup}'s usage reached {}, {} above its memory.high of {}, and went on to {} {}: charges went on past high {}: {}",
                at(r),
                human_bytes(over(r)),
                human_bytes(over(r) - high),
                human_bytes(high),
                human_bytes(max_over),
                at(top),
                ["without reclaim", "faster than the throttling allows"][usize::from(throttled)],
                s.describe_row(r)
            ),
        );
    }
    let max_events = (0..s.len()).map(|r| s.get(r, events)).max().unwrap_or(0);
    // memory.events is hierarchical: a group with a high of its own below counts here too.
    let high_below = rec.any_below(cgroup, |c| c.high.is_some());
    if max_over <= high && max_events > 0 && !high_below {
        let r = (0..s.len()).find(|&r| s.get(r, events) > 0).unwrap_or(0);
        return fail(
            r,
            format!("{cgroup}.high_events = {max_events}"),
            "0 while the usage stays at or under high".into(),
            format!(
                "{} {cgroup} counted {max_events} high events, yet its high watermark stayed at {}, not above its memory.high of {}",
                at(r),
                human_bytes(max_over),
                human_bytes(high)
            ),
        );
    }
    if hit && max_over <= high {
        return never_above(name, cgroup, max_over, high);
    }
    if hit && max_events == 0 {
        return fail(
            top,
            format!("{cgroup}.high_events = 0"),
            "> 0 once the usage went above high".into(),
            format!(
                "{} {cgroup}'s usage went above its memory.high of {} (high watermark {}) and the workload needed more, yet reclaim never counted a high event: {}",
                at(top),
                human_bytes(high),
                human_bytes(max_over),
                s.describe_row(top)
            ),
        );
    }
    let (allow, text) = bound(top);
    let seen = Seen {
        high,
        allow,
        max_over,
        max_events,
    };
    passed(name, cgroup, &seen, text)
}

/// "at t=..s (phase ..)" of row `r`.
fn at(rec: &Record, r: usize) -> String {
    let t = rec.series.t[r];
    format!("at t={t:.3}s (phase {})", rec.phase_at(t))
}

/// The workload was to go above high and never did: not tested.
fn never_above(name: String, cgroup: &str, max_over: i64, high: i64) -> CheckResult {
    missing(
        name,
        format!(
            "{cgroup}'s high watermark stayed at {}, not above its memory.high of {}: the workload never went above high, so its enforcement was not tested",
            human_bytes(max_over),
            human_bytes(high)
        ),
    )
}

/// What the check found, for its pass line.
#[derive(Clone, Copy)]
struct Seen {
    high: i64,
    allow: i64,
    max_over: i64,
    max_events: i64,
}

fn passed(name: String, cgroup: &str, v: &Seen, allow_text: String) -> CheckResult {
    let Seen {
        high,
        allow,
        max_over,
        max_events,
    } = *v;
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!("peak {}, {max_events} high events", human_bytes(max_over)),
        format!(
            "peak <= high {} + {}; events {}",
            human_bytes(high),
            human_bytes(allow),
            if max_over > high {
                "counted (the usage went above high)"
            } else {
                "none (the usage stayed at or under high)"
            }
        ),
        format!(
            "{cgroup}'s high watermark stayed within {} of its memory.high of {} (highest {}); reclaim counted {max_events} high events",
            human_bytes(allow),
            human_bytes(high),
            human_bytes(max_over)
        ),
    );
    res.tolerance = Some(allow_text);
    res
}
