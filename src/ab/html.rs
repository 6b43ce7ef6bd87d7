//! The A/B as one HTML page (`--report DIR`: DIR/index.html): the boots, the measurements'
//! comparison and, with `--behaviour`, every behaviour change with both sides' values. Each
//! boot's own report (index.html with its checks, samples and timelines) is DIR/SIDE-ROUND,
//! linked from its row.

use super::AbReport;
use crate::model::behaviour::Change;
use crate::report::html::{STYLE, esc};

/// The page.
pub fn render(rep: &AbReport) -> String {
    let mut h = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    h += &format!("<title>memcgtest ab: {}</title>\n", esc(&rep.verdict));
    h += &format!("<style>{STYLE}</style></head><body>\n");
    h += &format!(
        "<h1>memcgtest ab</h1>\n<p><b>{}</b> (exit {})</p>\n<p class=\"mono\">base {}<br>new {}{}</p>\n",
        esc(&rep.verdict),
        rep.exit,
        esc(&rep.base.display().to_string()),
        esc(&rep.new.display().to_string()),
        match rep.new_append.as_str() {
            "" => String::new(),
            a => format!(" (booted with {})", esc(a)),
        }
    );
    h += &boots(rep);
    if !rep.rows.is_empty() {
        h += "<h2>Measurements</h2>\n<table>\n<tr><th>scenario</th><th>measurement</th><th>base median</th><th>new median</th><th>change</th><th>verdict</th></tr>\n";
        for r in &rep.rows {
            let class = if r.verdict.is_change() {
                "fail"
            } else {
                "pass"
            };
            h += &format!(
                "<tr><td>{}</td><td>{}</td><td>{:.1} {}</td><td>{:.1}</td><td>{:+.1} %</td><td class=\"{class}\">{}</td></tr>\n",
                esc(&r.scenario),
                esc(&r.measurement),
                r.base_median,
                esc(&r.unit),
                r.new_median,
                r.change_pct,
                r.verdict.as_str()
            );
        }
        h += "</table>\n";
    }
    if rep.behaviour {
        h += &changes(&rep.changes, rep.behaviour_judged);
    }
    h + "</body></html>\n"
}

fn boots(rep: &AbReport) -> String {
    let mut h = String::from(
        "<h2>Boots</h2>\n<table>\n<tr><th>round</th><th>side</th><th>exit</th><th>seconds</th><th>host busy (CPUs)</th><th>failed</th></tr>\n",
    );
    for b in &rep.boots {
        let label = format!("{}-{}", b.side.as_str(), b.round);
        let side = match b.used {
            true => format!("<a href=\"{label}/index.html\">{}</a>", b.side.as_str()),
            false => format!("{} (booted again: busy host)", b.side.as_str()),
        };
        let failed: Vec<String> = (b.failures.iter())
            .map(|(n, why)| format!("{} ({})", esc(n), esc(why.lines().next().unwrap_or(""))))
            .collect();
        h += &format!(
            "<tr><td>{}</td><td>{side}</td><td class=\"{}\">{}</td><td>{:.0}</td><td>{:.2}</td><td>{}</td></tr>\n",
            b.round,
            if b.code == 0 { "pass" } else { "fail" },
            b.code,
            b.seconds,
            b.host_busy_cpus,
            failed.join("; ")
        );
    }
    h + "</table>\n"
}

fn changes(changes: &[Change], judged: usize) -> String {
    let mut h = format!(
        "<h2>Behaviour</h2>\n<p>{} of {judged} observables changed between the kernels (docs/ab.md: the noise model).</p>\n",
        changes.len()
    );
    if changes.is_empty() {
        return h;
    }
    h += "<table>\n<tr><th>scenario</th><th>phase</th><th>group</th><th>observable</th><th>how</th><th>base</th><th>new</th><th>change</th></tr>\n";
    for c in changes {
        let o = &c.what;
        let side = |s: &Option<crate::model::behaviour::Spread>| match s {
            None => "absent".to_string(),
            Some(s) => format!("{} ({}..{}, {} boots)", s.median, s.min, s.max, s.boots),
        };
        h += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} [{}]</td><td>{}</td><td>{}</td><td>{}</td><td class=\"fail\">{}</td></tr>\n",
            esc(&o.scenario),
            esc(&o.phase),
            esc(&o.group),
            esc(&o.counter),
            esc(&c.unit),
            c.kind.as_str(),
            side(&c.base),
            side(&c.new),
            match c.pct() {
                Some(p) => format!("{p:+.1} %"),
                None => format!("{:+}", c.delta()),
            }
        );
    }
    h + "</table>\n"
}
