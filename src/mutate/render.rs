//! The kill matrix as text: one line per mutant and the summary.

use crate::model::mutant::{Entry, Fate, Matrix};
use crate::model::{Outcome, RunReport, Status};

/// One mutant's fate in a line.
pub fn fate_line(e: &Entry) -> String {
    match e.fate {
        Fate::Killed => format!(
            "killed in {:.0} s by {} {}: {}",
            e.seconds,
            e.scenario.as_deref().unwrap_or("?"),
            e.check.as_deref().unwrap_or(""),
            e.message
        ),
        Fate::Survived => format!(
            "SURVIVED in {:.0} s: {}{}",
            e.seconds,
            e.message,
            crate::model::mutant::survivor_reason(&e.mutant)
                .map(|why| format!(" (why: {why})"))
                .unwrap_or_default()
        ),
        Fate::Equivalent => e.message.clone(),
        Fate::Untested => format!("untested in {:.0} s: {}", e.seconds, e.message),
    }
}

/// The scenarios a survivor passed.
pub fn passed(rep: &RunReport) -> String {
    let mut v: Vec<String> = Vec::new();
    for s in &rep.scenarios {
        let judged = (s.checks.iter())
            .filter(|c| c.outcome == Outcome::Pass)
            .count();
        v.push(format!(
            "{} {} ({judged} checks passed)",
            s.name,
            s.status.as_str()
        ));
    }
    v.join(", ")
}

/// What failed or was not judged in a run, in a line.
pub fn failures(rep: &RunReport) -> String {
    let bad: Vec<String> = (rep.scenarios.iter())
        .filter(|s| !matches!(s.status, Status::Pass | Status::Known))
        .map(|s| format!("{} {}: {}", s.name, s.status.as_str(), s.reason))
        .collect();
    if bad.is_empty() {
        "every scenario passed".into()
    } else {
        bad.join("; ")
    }
}

/// The summary line: how many mutants were killed, of those that can be.
pub fn summary(m: &Matrix) -> String {
    let [killed, survived, equivalent, untested] = m.counts();
    let judged = killed + survived;
    let reasoned = (m.entries.iter())
        .filter(|e| e.fate == Fate::Survived)
        .filter(|e| crate::model::mutant::survivor_reason(&e.mutant).is_some())
        .count();
    format!(
        "cgroup {} on Linux {} ({}): {killed} of {judged} mutants killed ({:.0} %), {survived} survived ({reasoned} with a reason), {equivalent} equivalent, {untested} untested; {} fields the suite moves have no mutant",
        m.cgroup.as_str(),
        m.kernel,
        m.measured,
        100.0 * killed as f64 / judged.max(1) as f64,
        m.unmapped.len()
    )
}

/// The matrix as a table.
pub fn render(m: &Matrix) -> String {
    let mut s = format!("{:<44} {:<9} {:>5}  by / why\n", "mutant", "fate", "secs");
    for e in &m.entries {
        let by = match e.fate {
            Fate::Killed => format!(
                "{} {}: {}",
                e.scenario.as_deref().unwrap_or("?"),
                e.check.as_deref().unwrap_or(""),
                e.message
            ),
            Fate::Survived => match crate::model::mutant::survivor_reason(&e.mutant) {
                Some(why) => format!("{} (why: {why})", e.message),
                None => e.message.clone(),
            },
            _ => e.message.clone(),
        };
        s += &format!(
            "{:<44} {:<9} {:>5.0}  {}\n",
            e.mutant.to_string(),
            fate_word(e.fate),
            e.seconds,
            by
        );
    }
    for (f, why) in &m.unmapped {
        s += &format!("{f:<44} {:<9} {:>5}  {why}\n", "no mutant", "");
    }
    s + &summary(m) + "\n"
}

pub fn fate_word(f: Fate) -> &'static str {
    match f {
        Fate::Killed => "killed",
        Fate::Survived => "SURVIVED",
        Fate::Equivalent => "equivalent",
        Fate::Untested => "untested",
    }
}
