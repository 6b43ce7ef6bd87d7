//! index.html in `--report DIR`: one self-contained page (inline CSS, no script, no network):
//! the run's environment, a table of scenarios and checks with status colours, and per scenario
//! its checks' actual/expected/tolerance lines, its notes, its SVG timeline inline and a link to
//! its CSV samples.

use crate::model::Outcome;
use crate::model::RunReport;
use crate::model::units::human_bytes;
use crate::model::{ScenarioResult, Status};

/// What `--report DIR` holds for one scenario besides the results: its timeline (empty when it
/// has none) and whether its CSV is there.
pub struct Files {
    pub svg: String,
    pub csv: bool,
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn status_cell(s: Status) -> String {
    format!(
        "<td class=\"st {}\">{}</td>",
        s.as_str(),
        s.as_str().to_uppercase()
    )
}

fn outcome_cell(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "<td class=\"st pass\">ok</td>",
        Outcome::Fail => "<td class=\"st fail\">FAIL</td>",
        Outcome::NotExercised => "<td class=\"st skip\">skip</td>",
        Outcome::Inconclusive => "<td class=\"st skip\">inconclusive</td>",
    }
}

/// An anchor for a scenario (names are `[A-Za-z0-9_-]`).
fn anchor(name: &str) -> String {
    format!("s-{name}")
}

/// An SVG document made fit to sit inline: no XML declaration, its ids (the hatch pattern)
/// prefixed so two timelines on one page do not share them.
fn inline_svg(svg: &str, prefix: &str) -> String {
    let body = match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => return String::new(),
    };
    body.replace("id=\"", &format!("id=\"{prefix}-"))
        .replace("url(#", &format!("url(#{prefix}-"))
}

pub const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#111;max-width:1200px}\
table{border-collapse:collapse;margin:0.5em 0 1em}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top;font-size:14px}\
th{background:#f3f4f6}\
.st{font-weight:bold;white-space:nowrap}\
.pass{background:#dcfce7;color:#166534}\
.fail{background:#fee2e2;color:#991b1b}\
.skip{background:#fef9c3;color:#854d0e}\
.error{background:#fde68a;color:#7c2d12}\
.known{background:#e0e7ff;color:#3730a3}\
.mono{font-family:monospace;font-size:13px}\
.reason{background:#fef2f2;border-left:4px solid #b91c1c;padding:4px 8px}\
.note{background:#f8fafc;border-left:4px solid #64748b;padding:4px 8px}\
pre{white-space:pre-wrap;font-size:12px;background:#f9fafb;padding:6px}\
svg{max-width:100%;height:auto;border:1px solid #ddd}\
section{margin-top:2em;border-top:2px solid #e5e7eb}";

pub fn render(rep: &RunReport, files: &[Files]) -> String {
    let e = &rep.environment;
    let t = &rep.totals;
    let mut h = String::new();
    h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
    h += &format!(
        "<title>memcgtest: Linux {}: {} passed, {} failed</title>\n",
        esc(&e.kernel),
        t.passed,
        t.failed
    );
    h += &format!("<style>{STYLE}</style></head><body>\n");
    h += &format!(
        "<h1>memcgtest {} on Linux {}</h1>\n",
        esc(&rep.version),
        esc(&e.kernel)
    );
    h += &format!(
        "<p><b>{} passed, {} failed, {} skipped, {} errors</b> &mdash; started {}{}</p>\n",
        t.passed,
        t.failed,
        t.skipped,
        t.errors,
        esc(&rep.started),
        if rep.quick { ", quick profile" } else { "" }
    );

    h += &environment_table(rep);

    h += "<h2>Scenarios</h2>\n<table>\n<tr><th>scenario</th><th>status</th><th>time</th><th>cgroup</th><th>checks</th><th>samples</th></tr>\n";
    for r in &rep.scenarios {
        let checks: Vec<String> = r
            .checks
            .iter()
            .map(|c| {
                let class = match c.outcome {
                    Outcome::Pass => "pass",
                    Outcome::Fail => "fail",
                    Outcome::NotExercised | Outcome::Inconclusive => "skip",
                };
                format!("<span class=\"{class}\">{}</span>", esc(&c.name))
            })
            .collect();
        h += &format!(
            "<tr><td><a href=\"#{}\">{}</a></td>{}<td>{:.1} s</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            anchor(&r.name),
            esc(&r.name),
            status_cell(r.status),
            r.seconds,
            r.cgroup_version.map(|v| v.as_str()).unwrap_or("-"),
            checks.join(" "),
            r.samples
        );
    }
    h += "</table>\n";

    for (i, r) in rep.scenarios.iter().enumerate() {
        h += &scenario_section(r, files.get(i), i);
    }
    h += "</body></html>\n";
    h
}

/// The environment table: kernel, machine, cgroup, scratch, oracle, sysctls, KCIDB build.
fn environment_table(rep: &RunReport) -> String {
    let e = &rep.environment;
    let mut h = String::new();
    h += "<h2>Environment</h2>\n<table>\n";
    let row = |k: &str, v: String| format!("<tr><th>{}</th><td>{}</td></tr>\n", k, esc(&v));
    h += &row("kernel", format!("{} {}", e.kernel, e.kernel_build));
    h += &row(
        "machine",
        format!(
            "{}, {} CPUs, {}, page size {}",
            e.arch,
            e.cpus,
            human_bytes(e.memory_bytes as i64),
            e.page_size
        ),
    );
    h += &row(
        "cgroup",
        format!(
            "layout {}, tested {}",
            e.cgroup.layout,
            match &e.cgroup.selected {
                Ok(v) => v.as_str().to_string(),
                Err(why) => why.clone(),
            }
        ),
    );
    h += &row(
        "scratch",
        format!(
            "{} ({})",
            e.scratch.path.display(),
            e.scratch.fstype.as_deref().unwrap_or("?")
        ),
    );
    h += &row("accounting oracle", e.oracle.kind.clone());
    h += &row(
        "sysctls",
        e.sysctls
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    h += &row("KCIDB build", rep.kcidb.build_id.clone());
    h += "</table>\n";
    h
}

fn scenario_section(r: &ScenarioResult, files: Option<&Files>, i: usize) -> String {
    let mut h = format!(
        "<section id=\"{}\">\n<h2>{} <span class=\"st {}\">{}</span></h2>\n<p>{}</p>\n",
        anchor(&r.name),
        esc(&r.name),
        r.status.as_str(),
        r.status.as_str().to_uppercase(),
        esc(&r.summary)
    );
    if !r.reason.is_empty() {
        // A pass's reason names what was left unjudged: a note, not the red box of a failure.
        let class = if r.status == Status::Pass {
            "note"
        } else {
            "reason"
        };
        h += &format!("<p class=\"{class}\">{}</p>\n", esc(&r.reason));
    }
    if !r.checks.is_empty() {
        h += "<table>\n<tr><th>check</th><th></th><th>actual</th><th>expected</th><th>tolerance</th></tr>\n";
        for c in &r.checks {
            h += &format!(
                "<tr><td class=\"mono\">{}</td>{}<td>{}</td><td>{}</td><td>{}</td></tr>\n<tr><td></td><td colspan=\"4\">{}</td></tr>\n",
                esc(&c.name),
                outcome_cell(c.outcome),
                esc(&c.actual),
                esc(&c.expected),
                esc(c.tolerance.as_deref().unwrap_or("")),
                esc(&c.detail)
            );
        }
        h += "</table>\n";
    }
    let lines: Vec<String> = super::detail_lines(r)
        .into_iter()
        .filter(|l| l.starts_with("phase ") || l.starts_with("note: "))
        .collect();
    if !lines.is_empty() {
        h += &format!("<pre>{}</pre>\n", esc(&lines.join("\n")));
    }
    if let Some(f) = files {
        if f.csv {
            h += &format!(
                "<p>Samples: <a href=\"{0}.csv\">{0}.csv</a></p>\n",
                esc(&r.name)
            );
        }
        if !f.svg.is_empty() {
            h += &format!(
                "<figure>{}</figure>\n",
                inline_svg(&f.svg, &format!("t{i}"))
            );
        }
    }
    h += "</section>\n";
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::{check, report};

    #[test]
    fn page_is_self_contained_and_shows_every_check() {
        let mut rep = report();
        rep.scenarios[1].checks = vec![check("tracks-global(test)", Outcome::Fail)];
        let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\"><defs><pattern id=\"hatch\"/></defs><rect fill=\"url(#hatch)\"/></svg>\n";
        let files = [
            Files {
                svg: svg.into(),
                csv: true,
            },
            Files {
                svg: svg.into(),
                csv: false,
            },
            Files {
                svg: String::new(),
                csv: false,
            },
        ];
        let h = render(&rep, &files);
        assert!(h.starts_with("<!DOCTYPE html>"));
        // Nothing to fetch, nothing to run.
        assert!(!h.contains("<script") && !h.contains("src=") && !h.contains("<link"));
        assert!(h.contains("<a href=\"a.csv\">a.csv</a>"));
        assert!(!h.contains("b.csv"));
        assert!(h.contains("id=\"t0-hatch\"") && h.contains("url(#t1-hatch)"));
        assert!(h.contains("<td>0.1 &lt;x&gt;</td>"));
        assert!(h.contains("class=\"st fail\">FAIL"));
        assert!(h.contains("tracks-global(test)"));
        // The reason of a skip, escaped.
        assert!(h.contains("cannot verify\nmigration"));
    }
}
