//! A scenario's verdict from its checks' results: its status and the one line that says why.

use crate::model::{CheckResult, Outcome, Status};

/// The most of a scenario's one-line reason its failed checks' summaries take: a failure reads in
/// one line. Each check's own line (the KTAP subtests, the reports) keeps all of its message.
pub(super) const REASON_MAX: usize = 480;

/// The failed checks' summaries ("check: actual (expected ...)"), as many as fit in REASON_MAX
/// (the first always), then the names of the rest ("; " apart, as ci/matrix.sh looks for them).
fn summaries(cs: &[&CheckResult]) -> String {
    let mut s = String::new();
    for (i, c) in cs.iter().enumerate() {
        let one = c.summary();
        if i > 0 && s.len() + 2 + one.len() > REASON_MAX {
            let rest: Vec<&str> = cs[i..].iter().map(|c| c.name.as_str()).collect();
            let n = rest.len();
            let what = if n == 1 { "check" } else { "checks" };
            return format!("{s}; and {n} more failed {what}: {}", rest.join("; "));
        }
        if i > 0 {
            s += "; ";
        }
        s += &one;
    }
    s
}

/// The scenario's status and reason from its checks: a failure not a known issue fails it, a
/// known one makes it known; a check it exists for (`purpose`) left unjudged (not exercised, or
/// inconclusive on a busy machine) makes it a skip, whatever else passed; else it passes, and
/// the reason lists the other checks left unjudged (a paired rate on a busy machine, say).
pub fn verdict(checks: &[CheckResult]) -> (Status, String) {
    let (known, failed): (Vec<&CheckResult>, Vec<&CheckResult>) = checks
        .iter()
        .filter(|c| c.outcome == Outcome::Fail)
        .partition(|c| c.known.is_some());
    // An implied invariant that was not exercised is said in its line; only the checks the
    // scenario declared decide whether it tested what it is about.
    let unjudged = |purpose: bool| -> Vec<&CheckResult> {
        (checks.iter())
            .filter(|c| !c.outcome.judged() && !c.implied && c.purpose == purpose)
            .collect()
    };
    if !failed.is_empty() {
        (Status::Fail, summaries(&failed))
    } else if !known.is_empty() {
        (Status::Known, summaries(&known))
    } else if let skipped @ [_, ..] = unjudged(true).as_slice() {
        let mut why: Vec<String> = Vec::new();
        for c in skipped {
            if !why.contains(&c.detail) {
                why.push(c.detail.clone());
            }
        }
        (Status::Skip, why.join("; "))
    } else {
        let left: Vec<String> = (unjudged(false).iter())
            .map(|c| format!("{} not judged: {}", c.name, c.detail))
            .collect();
        (Status::Pass, left.join("; "))
    }
}
