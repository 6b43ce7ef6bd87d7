//! The series report for people: a line per patch (build, each layout's counts, verdict), the
//! table scenario x patch, the checks each patch turned red, and the verdict line last.

use std::fmt::Write;

use super::build::Built;
use super::verdict::{PatchReport, SeriesReport};
use crate::model::Status;

/// The whole report as text.
pub fn render(rep: &SeriesReport) -> String {
    let mut s = String::new();
    let guest = rep.guest.join(" ");
    let _ = writeln!(
        s,
        "series of {} on {}; layouts {}; each boot runs: {guest}",
        super::verdict::patches(rep.patches.len().saturating_sub(1)),
        rep.tree,
        rep.cgroups.join(" ")
    );
    s.push('\n');
    patches(&mut s, rep);
    s.push('\n');
    table(&mut s, rep);
    if let Some(r) = &rep.refused {
        let _ = writeln!(s, "\npatch {} does not apply: {}", r.number, r.subject);
        for l in r.error.lines().take(12) {
            let _ = writeln!(s, "  {l}");
        }
    }
    turned_red(&mut s, rep);
    if !rep.strategy.is_empty() {
        let c = &rep.cost;
        let _ = writeln!(
            s,
            "\nstrategy {}: {} ({} booted now, {} recorded before); every patch: {}",
            rep.strategy,
            runs(c.runs),
            c.booted,
            c.runs - c.booted,
            runs(c.every)
        );
    }
    let _ = writeln!(s, "\n{}", rep.verdict);
    s
}

/// A line per patch: number, commit, build, each layout's counts, verdict, subject.
fn patches(s: &mut String, rep: &SeriesReport) {
    let _ = write!(s, "{:>3}  {:<12}  {:<8}", "#", "commit", "build");
    for cg in &rep.cgroups {
        let _ = write!(s, "  {:<28}", format!("{cg} (boot)"));
    }
    let ab = rep.patches.iter().any(|p| p.ab.is_some());
    if ab {
        let _ = write!(s, "  {:<14}", "ab vs base");
    }
    let _ = writeln!(s, "  {:<12}  subject", "verdict");
    for p in &rep.patches {
        let build = match &p.build {
            Built::Image { seconds, .. } => format!("{seconds:.0} s"),
            Built::Failed { .. } => "FAILED".into(),
        };
        let _ = write!(
            s,
            "{:>3}  {:<12}  {build:<8}",
            p.patch.index,
            p.patch.short()
        );
        for cg in &rep.cgroups {
            let cell = match p.runs.iter().find(|r| &r.cgroup == cg) {
                Some(r) => format!("{} ({:.0} s)", r.counts(), r.seconds),
                None => "-".into(),
            };
            let _ = write!(s, "  {cell:<28}");
        }
        if ab {
            let _ = write!(
                s,
                "  {:<14}",
                p.ab.as_ref().map_or("-", |a| ab_word(a.exit))
            );
        }
        let _ = writeln!(s, "  {:<12}  {}", p.verdict.as_str(), p.patch.subject);
    }
}

/// The table scenario (layout) x patch: pass, FAIL, skip, known, ERROR; `-` not run.
fn table(s: &mut String, rep: &SeriesReport) {
    let rows = rep.rows();
    if rows.is_empty() {
        return;
    }
    let width = rows
        .iter()
        .map(|(n, c)| n.len() + c.len() + 3)
        .max()
        .unwrap_or(0);
    let _ = write!(s, "{:<width$}", "scenario (layout)");
    for p in &rep.patches {
        let _ = write!(s, " {:>6}", format!("#{}", p.patch.index));
    }
    s.push('\n');
    for (name, cg) in &rows {
        let _ = write!(s, "{:<width$}", format!("{name} ({cg})"));
        for p in &rep.patches {
            let _ = write!(s, " {:>6}", status(p, name, cg));
        }
        s.push('\n');
    }
}

fn status(p: &PatchReport, scenario: &str, cgroup: &str) -> &'static str {
    match p.status(scenario, cgroup) {
        None if matches!(p.build, Built::Failed { .. }) => "build",
        None => "-",
        Some(Status::Pass) => "pass",
        Some(Status::Fail) => "FAIL",
        Some(Status::Error) => "ERROR",
        Some(Status::Skip) => "skip",
        Some(Status::Known) => "known",
    }
}

/// What each patch turned red, with the failing check's message; a build's error lines.
fn turned_red(s: &mut String, rep: &SeriesReport) {
    if rep.red.is_empty() {
        return;
    }
    s.push_str("\nturned red:\n");
    for r in &rep.red {
        let Some(p) = rep.patches.iter().find(|p| p.patch.index == r.patch) else {
            continue;
        };
        let head = format!("#{} {}", r.patch, p.patch.short());
        if r.check == "build" {
            let _ = writeln!(s, "  {head}: the build failed:");
            if let Built::Failed { errors, log, .. } = &p.build {
                for e in errors.iter().take(20) {
                    let _ = writeln!(s, "      {e}");
                }
                let _ = writeln!(s, "      (log: {})", log.display());
            }
            continue;
        }
        if r.cgroup == "ab" {
            let _ = writeln!(s, "  {head}: ab against the base: {}", r.message);
            continue;
        }
        let what = if r.check.is_empty() {
            format!("{} ({})", r.scenario, r.cgroup)
        } else {
            format!("{} ({}) {}", r.scenario, r.cgroup, r.check)
        };
        let _ = writeln!(s, "  {head}: {what}: {}", r.message);
    }
}

/// An A/B's exit code in a word.
pub fn ab_word(code: u8) -> &'static str {
    match code {
        0 => "no regression",
        1 => "REGRESSION",
        2 => "refused",
        _ => "inconclusive",
    }
}

/// "1 run", "4 runs".
pub fn runs(n: usize) -> String {
    if n == 1 {
        "1 run".into()
    } else {
        format!("{n} runs")
    }
}
