//! The series as one HTML page: the patches (build, runs, verdict), the table scenario x patch,
//! what each patch turned red and the verdict. Each boot's own report (index.html with its
//! checks, samples and timelines) is in the patch's directory, linked from its row.

use super::build::Built;
use super::verdict::{PatchVerdict, SeriesReport};
use crate::report::html::{STYLE, esc};

/// The page; `runs` links each patch's run directories relative to the page.
pub fn render(rep: &SeriesReport, runs: impl Fn(usize, &str) -> Option<String>) -> String {
    let mut h = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    h += &format!("<title>memcgtest series: {}</title>\n", esc(&rep.verdict));
    h += &format!("<style>{STYLE}</style></head><body>\n");
    h += &format!(
        "<h1>memcgtest series: {}</h1>\n<p><b>{}</b> (exit {})</p>\n<p class=\"mono\">{}; each boot: {}</p>\n",
        super::verdict::patches(rep.patches.len().saturating_sub(1)),
        esc(&rep.verdict),
        rep.exit,
        esc(&rep.tree),
        esc(&rep.guest.join(" "))
    );
    h += "<h2>Patches</h2>\n<table>\n<tr><th>#</th><th>commit</th><th>subject</th><th>build</th>";
    for cg in &rep.cgroups {
        h += &format!("<th>{}</th>", esc(cg));
    }
    let ab = rep.patches.iter().any(|p| p.ab.is_some());
    if ab {
        h += "<th>ab vs base</th>";
    }
    h += "<th>verdict</th></tr>\n";
    for p in &rep.patches {
        let build = match &p.build {
            Built::Image { seconds, .. } => format!("<td class=\"pass\">{seconds:.0} s</td>"),
            Built::Failed { errors, .. } => format!(
                "<td class=\"fail\">failed<pre>{}</pre></td>",
                esc(&errors.join("\n"))
            ),
        };
        h += &format!(
            "<tr><td>{}</td><td class=\"mono\">{}</td><td>{}</td>{build}",
            p.patch.index,
            esc(p.patch.short()),
            esc(&p.patch.subject)
        );
        for cg in &rep.cgroups {
            let cell = p.runs.iter().find(|r| &r.cgroup == cg);
            let text = cell.map_or("-".into(), |r| {
                format!("{} ({:.0} s)", r.counts(), r.seconds)
            });
            h += &match runs(p.patch.index, cg) {
                Some(link) if cell.is_some() => {
                    format!("<td><a href=\"{}\">{}</a></td>", esc(&link), esc(&text))
                }
                _ => format!("<td>{}</td>", esc(&text)),
            };
        }
        if ab {
            h += &match &p.ab {
                Some(a) => format!(
                    "<td title=\"{}\">{}</td>",
                    esc(&a.verdict),
                    super::render::ab_word(a.exit)
                ),
                None => "<td>-</td>".into(),
            };
        }
        let class = match p.verdict {
            PatchVerdict::Bad | PatchVerdict::BuildFailed => "fail",
            PatchVerdict::StillRed | PatchVerdict::Untestable | PatchVerdict::NotBooted => "skip",
            PatchVerdict::Green | PatchVerdict::Base => "pass",
        };
        h += &format!(
            "<td class=\"st {class}\">{}</td></tr>\n",
            p.verdict.as_str()
        );
    }
    h += "</table>\n";
    h += &grid(rep);
    if !rep.red.is_empty() {
        h += "<h2>Turned red</h2>\n<table>\n<tr><th>patch</th><th>where</th><th>check</th><th>message</th></tr>\n";
        for r in &rep.red {
            h += &format!(
                "<tr><td>#{}</td><td>{} ({})</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td></tr>\n",
                r.patch,
                esc(&r.scenario),
                esc(&r.cgroup),
                esc(&r.check),
                esc(&r.message)
            );
        }
        h += "</table>\n";
    }
    h += "</body></html>\n";
    h
}

/// The table scenario (layout) x patch.
fn grid(rep: &SeriesReport) -> String {
    let rows = rep.rows();
    let mut h = String::from("<h2>Scenarios</h2>\n<table>\n<tr><th>scenario (layout)</th>");
    for p in &rep.patches {
        h += &format!("<th>#{}</th>", p.patch.index);
    }
    h += "</tr>\n";
    for (name, cg) in &rows {
        h += &format!("<tr><td>{} ({})</td>", esc(name), esc(cg));
        for p in &rep.patches {
            let st = p.status(name, cg);
            h += &match st {
                Some(s) => format!("<td class=\"st {0}\">{0}</td>", s.as_str()),
                None => "<td>-</td>".into(),
            };
        }
        h += "</tr>\n";
    }
    h + "</table>\n"
}
