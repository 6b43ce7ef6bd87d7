//! limit-counters: what a group reports about its limit agrees with its usage. The page
//! counter's high watermark (v1 memory.max_usage_in_bytes, v2 memory.peak) is at least every
//! sampled usage and, for a limited group, at most its limit. The charges that failed at the
//! limit (v1 memory.failcnt, v2 memory.events `max`) stay 0 while the watermark stayed clear of
//! the limit, and, with `hit = true` (the workload needs more than the limit), rise once the
//! usage reached it.

use crate::check::args::CheckArgs;
use crate::check::{Check, CheckResult, CheckSpec, Kind, Needs, Outcome, columns, missing, opt};
use crate::model::contract::{v1, v2};
use crate::model::counter::{LIMIT_HITS, PEAK, USAGE};
use crate::model::error::ScenarioError;
use crate::model::units::human_bytes;
use crate::model::{CgroupSpec, Column, Record};

/// `limit-counters`: the watermark and the limit-hit count of `cgroup` agree with its usage.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitCounters {
    pub cgroup: String,
    /// The workload needs more than the group's limit: charges must fail at it.
    pub hit: bool,
}

/// `limit-counters` in the check table.
pub const KIND: Kind = Kind {
    kind: "limit-counters",
    doc: "What a group reports about its limit agrees with its usage. The page counter's high \
watermark (`peak`: v1 memory.max_usage_in_bytes, v2 memory.peak) is at least every \
sampled usage and, for a limited group, at most its limit. Charges that failed at the \
limit (`limit_hits`: v1 memory.failcnt, v2 memory.events `max`) stay 0 while the \
watermark stayed more than 2 MiB + 64 pages (2.25 MiB with 4 KiB pages) below the \
limit (a charge tries the 64-page batch or a THP at once, and fails only when that \
would pass the limit; for an unlimited group: never); with `hit = true` (the workload \
needs more than the limit) they must have risen once the watermark reached it, and the \
check is not exercised when it never did. On v2 a limited group below this one counts \
into its events (memory.events is hierarchical), so \"only when\" is not judged then. \
Swap likewise: v2 memory.swap.events `max` stays 0 while the swap watermark \
(memory.swap.peak) stayed more than that margin below memory.swap.max, `high` while it \
stayed at or below memory.swap.high (neither judged where a group above or below also \
limits swap: v2 counts an ancestor's refusals in the group and a child's events in its \
parent); v1 memory.memsw.failcnt while the memory+swap watermark stayed clear of \
memory.memsw.limit_in_bytes. Tolerance: the unflushed-stats bound + 2 MiB (a THP charge \
is added before the limit is compared). Result name: `limit-counters(<cgroup>)`.",
    keys: &[
        opt("cgroup", "the group (default: the only declared group)"),
        opt(
            "hit",
            "the workload needs more than the limit: charges must fail at it (default `false`)",
        ),
    ],
    parse,
    promises: &[
        &v2::PEAK_MAX,
        &v2::EVENTS_MAX,
        &v2::SWAP_EVENTS,
        &v1::MAX_USAGE,
        &v1::FAILCNT,
        &v1::MEMSW_FAILCNT,
    ],
};

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    Ok(Check::new(LimitCounters {
        cgroup: i.cgroup("cgroup")?,
        hit: i.get::<bool>("hit")?.is_some_and(|b| b.into_inner()),
    }))
}

impl CheckSpec for LimitCounters {
    fn name(&self) -> String {
        format!("limit-counters({})", self.cgroup)
    }
    fn needs(&self) -> Needs {
        Needs {
            counters: [USAGE, PEAK, LIMIT_HITS].map(String::from).to_vec(),
            ..Needs::default()
        }
    }
    fn evaluate(&self, rec: &Record) -> CheckResult {
        limit_counters(self.name(), rec, &self.cgroup, self.hit)
    }
}

/// How close to its limit a group's usage must come before a charge can fail there: a charge
/// tries the batch (64 pages) or a whole THP (2 MiB) at once, and fails when that would pass it.
pub fn hit_margin(page_size: u64) -> i64 {
    (2 << 20) + 64 * page_size as i64
}

/// What the check reads off the record for one group.
struct Seen<'a> {
    rec: &'a Record,
    cgroup: &'a str,
    usage: usize,
    peak: usize,
    hits: usize,
    limit: Option<i64>,
    /// usage vs watermark read skew.
    tol: i64,
    /// The row of the highest watermark.
    top: usize,
    max_peak: i64,
    max_hits: i64,
    /// v1: the memory+swap counter's failures (memory.memsw.failcnt). With a memsw limit at the
    /// memory limit, try_charge charges memsw first, so a group at its limit fails there and
    /// its memory counter never fails.
    memsw_hits: i64,
    margin: i64,
    /// The watermark came within `margin` of the limit.
    reached: bool,
}

impl Seen<'_> {
    fn at(&self, r: usize) -> String {
        at(self.rec, r)
    }

    fn limit_text(&self) -> String {
        self.limit.map_or("no limit".to_string(), |l| {
            format!("limit {}", human_bytes(l))
        })
    }

    fn fail(
        &self,
        name: &str,
        r: usize,
        actual: String,
        expected: String,
        detail: String,
    ) -> CheckResult {
        fail_at(self.rec, name, r, actual, expected, detail)
    }
}

pub fn limit_counters(name: String, rec: &Record, cgroup: &str, hit: bool) -> CheckResult {
    if let Some(why) = crate::check::limits_changed(rec, cgroup) {
        return missing(name, why);
    }
    let want = [USAGE, PEAK, LIMIT_HITS].map(String::from);
    let [usage, peak, hits] = match columns(rec, cgroup, &want) {
        Ok(c) => [c[0].1, c[1].1, c[2].1],
        Err(e) => return missing(name, e),
    };
    let s = &rec.series;
    if s.is_empty() {
        return missing(name, "no samples".into());
    }
    let limit = rec.limit_of(cgroup).map(|l| l as i64);
    let top = (0..s.len()).max_by_key(|&r| s.get(r, peak)).unwrap_or(0);
    let max_peak = s.get(top, peak);
    let margin = hit_margin(rec.machine.page_size);
    let v = Seen {
        rec,
        cgroup,
        usage,
        peak,
        hits,
        limit,
        // usage and the watermark are read a moment apart, and try_charge adds a charge to
        // the counter before it compares with the limit (and takes it back when over).
        tol: rec.machine.stat_batch_bytes() as i64 + (2 << 20),
        top,
        max_peak,
        max_hits: (0..s.len()).map(|r| s.get(r, hits)).max().unwrap_or(0),
        memsw_hits: s
            .col(&Column::group(cgroup, "memsw_hits"))
            .map_or(0, |c| (0..s.len()).map(|r| s.get(r, c)).max().unwrap_or(0)),
        margin,
        reached: limit.is_some_and(|l| max_peak >= l - margin),
    };
    if let Some(f) = watermark(&v, &name).or_else(|| failures(&v, &name, hit)) {
        return f;
    }
    let swap = match swap_events(rec, cgroup, &name) {
        Ok(lines) => lines,
        Err(f) => return *f,
    };
    let mut res = passed(&v, name);
    if !swap.is_empty() {
        res.detail += &format!("; {}", swap.join("; "));
    }
    res
}

/// Swap refused at a swap limit only when the swap counter reached it; swap.high events only
/// when the swap counter passed swap.high. v2: memory.swap.events `max` and `high` against
/// memory.swap.peak; v1: memory.memsw.failcnt against memory.memsw.max_usage_in_bytes. A charge
/// tries a whole THP (2 MiB) at once. Not judged where a group above or below also limits swap
/// (v2 counts an ancestor's refusals in the group and a child's events in its parent). Returns
/// what was judged, for the pass line.
fn swap_events(rec: &Record, cgroup: &str, name: &str) -> Result<Vec<String>, Box<CheckResult>> {
    let Some(spec) = rec.group(cgroup) else {
        return Ok(Vec::new());
    };
    let swap_limited = |c: &CgroupSpec| c.swap_max.is_some() || !c.swap;
    let swap = Swap {
        rec,
        cgroup,
        name,
        spec,
        margin: hit_margin(rec.machine.page_size),
        above: (rec.cgroups.iter())
            .any(|c| cgroup.starts_with(&format!("{}/", c.name)) && swap_limited(c)),
        below: rec.any_below(cgroup, swap_limited),
        swap_limit: if spec.swap { spec.swap_max } else { Some(0) },
    };
    let mut lines = Vec::new();
    lines.extend(swap.memsw()?);
    // v2: memory.swap.events against the swap watermark.
    if let (Some(peak), false) = (swap.col("swap_peak"), swap.above) {
        let p = swap.max_of(peak);
        lines.extend(swap.swap_max(p)?);
        lines.extend(swap.swap_high(p)?);
    }
    Ok(lines)
}

/// What the swap counters are judged against: the group's spec and swap limit, whether a group
/// above or below also limits swap, and the margin within which a charge can fail.
struct Swap<'a> {
    rec: &'a Record,
    cgroup: &'a str,
    name: &'a str,
    spec: &'a CgroupSpec,
    margin: i64,
    /// A group above limits swap too.
    above: bool,
    /// A group below limits swap too.
    below: bool,
    /// memory.swap.max (0 with `swap = false`).
    swap_limit: Option<u64>,
}

impl Swap<'_> {
    /// The group's column of counter `c`, if sampled.
    fn col(&self, c: &str) -> Option<usize> {
        self.rec.series.col(&Column::group(self.cgroup, c))
    }

    /// The highest value of column `c` over the run.
    fn max_of(&self, c: usize) -> i64 {
        let s = &self.rec.series;
        (0..s.len()).map(|r| s.get(r, c)).max().unwrap_or(0)
    }

    /// The first row of column `c` above 0 (or the first row).
    fn first_above_0(&self, c: usize) -> usize {
        let s = &self.rec.series;
        (0..s.len()).find(|&r| s.get(r, c) > 0).unwrap_or(0)
    }

    /// v1: the memory+swap counter's failures, its own only (failcnt is not hierarchical): the
    /// pass line's part, or nothing where they are not sampled.
    fn memsw(&self) -> Result<Option<String>, Box<CheckResult>> {
        let (Some(hits), Some(peak)) = (self.col("memsw_hits"), self.col("memsw_peak")) else {
            return Ok(None);
        };
        let (cgroup, margin) = (self.cgroup, self.margin);
        let limit = match (self.spec.limit, self.swap_limit) {
            (Some(l), Some(m)) => Some(l as i64 + m as i64),
            _ => None,
        };
        let (h, p) = (self.max_of(hits), self.max_of(peak));
        if h > 0 && limit.is_none_or(|l| p < l - margin) {
            let r = self.first_above_0(hits);
            return Err(Box::new(fail_at(
                self.rec,
                self.name,
                r,
                format!("{cgroup}.memsw_hits = {h}"),
                "0 while memory+swap stays clear of its limit".into(),
                format!(
                    "{} {cgroup} counted {h} memory+swap charges failing at its limit (memory.memsw.failcnt), yet its memory+swap watermark stayed at {} ({}; a charge can fail only within {} of it)",
                    at(self.rec, r),
                    human_bytes(p),
                    limit.map_or("no memsw limit".into(), |l| format!(
                        "limit {}",
                        human_bytes(l)
                    )),
                    human_bytes(margin)
                ),
            )));
        }
        Ok(Some(format!(
            "memsw peak {}, {h} memsw charges failed",
            human_bytes(p)
        )))
    }

    /// v2: swap charges refused at memory.swap.max only when the swap watermark (`p`) came
    /// within the margin of it: the pass line's part, or nothing where not judged.
    fn swap_max(&self, p: i64) -> Result<Option<String>, Box<CheckResult>> {
        let Some(maxed) = self.col("swap_max_events").filter(|_| !self.below) else {
            return Ok(None);
        };
        let (cgroup, margin, swap_limit) = (self.cgroup, self.margin, self.swap_limit);
        let n = self.max_of(maxed);
        if n > 0 && swap_limit.is_none_or(|m| p < m as i64 - margin) {
            let r = self.first_above_0(maxed);
            return Err(Box::new(fail_at(
                self.rec,
                self.name,
                r,
                format!("{cgroup}.swap_max_events = {n}"),
                "0 while swap stays clear of memory.swap.max".into(),
                format!(
                    "{} {cgroup} counted {n} swap charges refused at memory.swap.max (memory.swap.events max), yet its swap watermark stayed at {} ({}; a swap charge can fail only within {} of the limit)",
                    at(self.rec, r),
                    human_bytes(p),
                    swap_limit.map_or("no swap limit".into(), |m| format!(
                        "memory.swap.max {}",
                        human_bytes(m as i64)
                    )),
                    human_bytes(margin)
                ),
            )));
        }
        Ok(Some(format!(
            "swap peak {}, {n} swap.max events",
            human_bytes(p)
        )))
    }

    /// v2: swap.high events only when the swap watermark (`p`) passed memory.swap.high: the pass
    /// line's part, or nothing where not judged.
    fn swap_high(&self, p: i64) -> Result<Option<String>, Box<CheckResult>> {
        let Some(high) = (self.col("swap_high_events")).filter(|_| !self.below && !self.above)
        else {
            return Ok(None);
        };
        let cgroup = self.cgroup;
        let n = self.max_of(high);
        let h = self.spec.swap_high.map(|h| h as i64);
        if n > 0 && h.is_none_or(|h| p <= h) {
            let r = self.first_above_0(high);
            return Err(Box::new(fail_at(
                self.rec,
                self.name,
                r,
                format!("{cgroup}.swap_high_events = {n}"),
                "0 while swap stays at or below memory.swap.high".into(),
                format!(
                    "{} {cgroup} counted {n} swap.high events (memory.swap.events high), yet its swap watermark stayed at {} ({})",
                    at(self.rec, r),
                    human_bytes(p),
                    h.map_or("no swap.high".into(), |h| format!(
                        "memory.swap.high {}",
                        human_bytes(h)
                    ))
                ),
            )));
        }
        Ok(Some(format!("{n} swap.high events")))
    }
}

/// "at t=... (phase ...)" of row `r`, as the messages begin.
fn at(rec: &Record, r: usize) -> String {
    let t = rec.series.t[r];
    format!("at t={t:.3}s (phase {})", rec.phase_at(t))
}

/// A failure found at row `r`.
fn fail_at(
    rec: &Record,
    name: &str,
    r: usize,
    actual: String,
    expected: String,
    detail: String,
) -> CheckResult {
    let mut res = CheckResult::new(name.to_string(), Outcome::Fail, actual, expected, detail);
    res.at = Some(rec.series.t[r]);
    res
}

/// The watermark holds every usage it saw and never passed the limit.
fn watermark(v: &Seen, name: &str) -> Option<CheckResult> {
    let (s, cgroup, tol) = (&v.rec.series, v.cgroup, v.tol);
    if let Some(r) = (0..s.len()).find(|&r| s.get(r, v.usage) - s.get(r, v.peak) > tol) {
        return Some(v.fail(
            name,
            r,
            format!(
                "{cgroup}.usage {} > {cgroup}.peak {}",
                human_bytes(s.get(r, v.usage)),
                human_bytes(s.get(r, v.peak))
            ),
            format!("usage <= peak + {}", human_bytes(tol)),
            format!(
                "{} {cgroup}'s usage was {} above its high watermark: the page counter's watermark missed charges: {}",
                v.at(r),
                human_bytes(s.get(r, v.usage) - s.get(r, v.peak)),
                s.describe_row(r)
            ),
        ));
    }
    let l = v.limit.filter(|&l| v.max_peak > l + tol)?;
    Some(v.fail(
        name,
        v.top,
        format!("{cgroup}.peak {}", human_bytes(v.max_peak)),
        format!("<= limit {}", human_bytes(l)),
        format!(
            "{} {cgroup}'s high watermark was {} above its limit of {}: charges got past the limit between samples",
            v.at(v.top),
            human_bytes(v.max_peak - l),
            human_bytes(l)
        ),
    ))
}

/// Charges fail at the limit when, and only when, the usage reaches it. A limited group below
/// this one counts its failures here too on v2 (memory.events is hierarchical).
fn failures(v: &Seen, name: &str, hit: bool) -> Option<CheckResult> {
    let (s, cgroup, max_hits) = (&v.rec.series, v.cgroup, v.max_hits);
    let limited_below = v.rec.any_below(cgroup, |c| c.limit.is_some());
    if !v.reached && !limited_below && max_hits > 0 {
        let r = (0..s.len()).find(|&r| s.get(r, v.hits) > 0).unwrap_or(0);
        return Some(v.fail(
            name,
            r,
            format!("{cgroup}.limit_hits = {max_hits}"),
            "0 while the usage stays clear of the limit".into(),
            format!(
                "{} {cgroup} counted {max_hits} charges failing at its limit, yet its high watermark stayed at {} ({}; a charge can fail only within {} of the limit)",
                v.at(r),
                human_bytes(v.max_peak),
                v.limit_text(),
                human_bytes(v.margin)
            ),
        ));
    }
    if hit && !v.reached {
        return Some(missing(
            name.to_string(),
            format!(
                "{cgroup}'s high watermark stayed at {} ({}): the workload never reached the limit, so whether charges fail there was not tested",
                human_bytes(v.max_peak),
                v.limit_text()
            ),
        ));
    }
    (hit && max_hits == 0 && v.memsw_hits == 0).then(|| {
        v.fail(
            name,
            v.top,
            format!("{cgroup}.limit_hits = 0"),
            "> 0 once the usage reached the limit".into(),
            format!(
                "{} {cgroup}'s usage reached its limit (high watermark {}, {}) and the workload needed more, yet no charge failed at the limit (v1 memory.failcnt and memory.memsw.failcnt, v2 memory.events max stayed 0): {}",
                v.at(v.top),
                human_bytes(v.max_peak),
                v.limit_text(),
                s.describe_row(v.top)
            ),
        )
    })
}

fn passed(v: &Seen, name: String) -> CheckResult {
    let (cgroup, max_hits) = (v.cgroup, v.max_hits);
    let mut res = CheckResult::new(
        name,
        Outcome::Pass,
        format!(
            "peak {}, {max_hits} charges failed at the limit",
            human_bytes(v.max_peak)
        ),
        format!(
            "usage <= peak{}; failures {}",
            v.limit
                .map_or(String::new(), |l| format!(" <= {}", human_bytes(l))),
            if v.reached {
                "allowed (the limit was reached)"
            } else {
                "none (the limit was not reached)"
            }
        ),
        format!(
            "{cgroup}'s high watermark held every usage sample{}; charges failed at the limit {}",
            v.limit.map_or(" (no limit)".to_string(), |l| format!(
                " and stayed under its limit of {}",
                human_bytes(l)
            )),
            if v.reached {
                format!("{max_hits} times, after the usage reached it")
            } else {
                "never, and the usage never reached it".into()
            }
        ),
    );
    res.tolerance = Some(format!(
        "{} + 2 MiB (a THP charge added before the limit is compared); a charge fails only within {} of the limit (the 64-page batch or a THP tried at once)",
        v.rec.machine.stat_batch_explained(),
        human_bytes(v.margin)
    ));
    res
}
