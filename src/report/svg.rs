//! SVG timelines, written by hand: one panel per sampled counter (every group's value and the
//! global /proc/vmstat value, in bytes), one panel for the sampled vmstat event counters (change
//! since the start), phases shaded and named, antagonist periods hatched, sync steps dotted, and
//! for each failed check a red line at the failing sample, a ring on the failing value and the
//! bound it was held to. No plotting crate: the picture needs lines, rectangles and text, and a
//! crate would bring fonts or system libraries for none of that.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::model::Column;
use crate::model::Record;
use crate::model::ScenarioResult;
use crate::model::{CheckResult, Outcome};

const WIDTH: f64 = 1100.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 230.0;
const TOP: f64 = 80.0;
const PANEL: f64 = 170.0;
const GAP: f64 = 38.0;
/// Global counters: a wide grey band under the groups' lines, so agreement shows as a line on a band.
const GLOBAL: &str = "#b8bec8";
const COLORS: [&str; 6] = [
    "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// One line in a panel.
struct Line {
    label: String,
    col: usize,
    color: &'static str,
    dashed: bool,
    /// Multiply the raw value (pages for vmstat) to get the panel's unit.
    scale: i64,
    /// Subtract the first sample (event counters).
    delta: bool,
}

struct Panel {
    title: String,
    /// Counter name (from the counter table) failed checks are matched against; empty for events.
    counter: String,
    bytes: bool,
    lines: Vec<Line>,
}

/// Groups the series' columns into panels.
fn panels(rec: &Record) -> Vec<Panel> {
    let cols = rec.series.columns();
    let mut by_counter: BTreeMap<String, Panel> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut groups: Vec<String> = Vec::new();
    for (i, c) in cols.iter().enumerate() {
        let Column::Group {
            group,
            counter,
            local,
        } = c
        else {
            continue;
        };
        let local = *local;
        let (group, counter) = (group.as_str(), counter.as_str());
        if !groups.iter().any(|g| g == group) {
            groups.push(group.to_string());
        }
        let gi = groups.iter().position(|g| g == group).unwrap();
        let p = by_counter.entry(counter.to_string()).or_insert_with(|| {
            order.push(counter.to_string());
            Panel {
                title: counter.to_string(),
                counter: counter.to_string(),
                bytes: true,
                lines: Vec::new(),
            }
        });
        p.lines.push(Line {
            label: if local {
                format!("{group} (own)")
            } else {
                group.to_string()
            },
            col: i,
            color: COLORS[gi % COLORS.len()],
            dashed: local,
            scale: 1,
            delta: false,
        });
    }
    // The per-file truth (cachestat of the files a group wrote): dashed, in the group's colour.
    for (gi, group) in groups.iter().enumerate() {
        for (counter, p) in by_counter.iter_mut() {
            if let Some(i) = rec.series.col(&Column::files(group, counter, false)) {
                p.lines.push(Line {
                    label: format!("{group}'s files (cachestat)"),
                    col: i,
                    color: COLORS[gi % COLORS.len()],
                    dashed: true,
                    scale: 1,
                    delta: false,
                });
            }
        }
    }
    let page = rec.machine.page_size as i64;
    for (counter, p) in by_counter.iter_mut() {
        let global = crate::model::counter::global_key(counter)
            .and_then(|k| Some((k, rec.series.col(&Column::vmstat(k))?)));
        if let Some((k, i)) = global {
            p.lines.insert(
                0,
                Line {
                    label: format!("global {k}"),
                    col: i,
                    color: GLOBAL,
                    dashed: false,
                    scale: page,
                    delta: false,
                },
            );
        }
    }
    let mut out: Vec<Panel> = order
        .iter()
        .map(|c| by_counter.remove(c).unwrap())
        .collect();
    let events = event_lines(cols);
    if !events.is_empty() {
        out.push(Panel {
            title: "vmstat events (since start)".into(),
            counter: String::new(),
            bytes: false,
            lines: events,
        });
    }
    out
}

/// The vmstat event counters (not nr_* levels), as deltas since the start.
fn event_lines(cols: &[Column]) -> Vec<Line> {
    cols.iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let Column::Vmstat { key, pre: false } = c else {
                return None;
            };
            (!key.starts_with("nr_")).then_some((i, key))
        })
        .enumerate()
        .map(|(n, (i, k))| Line {
            label: k.to_string(),
            col: i,
            color: COLORS[(n + 2) % COLORS.len()],
            dashed: false,
            scale: 1,
            delta: true,
        })
        .collect()
}

/// A round step for axis ticks: about `n` ticks over `span`.
fn nice_step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    mag * if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    }
}

/// Axis label for a value: MiB (or KiB) for bytes, plain counts otherwise.
fn axis_label(v: f64, bytes: bool, step: f64) -> String {
    if !bytes {
        return if step >= 1000.0 {
            format!("{}k", v / 1000.0)
        } else {
            format!("{v}")
        };
    }
    if step >= 1048576.0 / 8.0 {
        format!("{} MiB", (v / 1048576.0 * 100.0).round() / 100.0)
    } else {
        format!("{} KiB", (v / 1024.0).round())
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Points of one line, thinned to at most two per pixel column (min and max) so spikes survive.
fn points(rec: &Record, line: &Line, x: &dyn Fn(f64) -> f64, y: &dyn Fn(f64) -> f64) -> String {
    let s = &rec.series;
    let base = if line.delta && !s.is_empty() {
        s.get(0, line.col)
    } else {
        0
    };
    let val = |r: usize| ((s.get(r, line.col) - base) * line.scale) as f64;
    let mut out = String::new();
    let mut r = 0;
    while r < s.len() {
        let px = x(s.t[r]).floor();
        let (mut lo, mut hi, mut first, mut last) = (r, r, r, r);
        let mut k = r + 1;
        while k < s.len() && x(s.t[k]).floor() == px {
            if val(k) < val(lo) {
                lo = k;
            }
            if val(k) > val(hi) {
                hi = k;
            }
            last = k;
            k += 1;
        }
        let mut picks = vec![first, lo, hi, last];
        picks.sort_unstable();
        picks.dedup();
        for p in picks {
            push_tenths(&mut out, x(s.t[p]));
            out.push(',');
            push_tenths(&mut out, y(val(p)));
            out.push(' ');
        }
        first = k;
        r = first;
    }
    out
}

/// Writes `v` rounded to one decimal, as `{:.1}` would (but for rounding ties), by integer
/// formatting: a timeline has hundreds of thousands of points, and float formatting with a
/// precision made rendering them take seconds in a TCG guest.
fn push_tenths(out: &mut String, v: f64) {
    let t = (v * 10.0).round() as i64;
    if t < 0 {
        out.push('-');
    }
    let a = t.unsigned_abs();
    let _ = write!(out, "{}.{}", a / 10, a % 10);
}

/// The status and the line under the title a scenario's timeline shows.
fn status_and_sub(r: &ScenarioResult) -> (String, String) {
    let status = format!("{:?}", r.status).to_lowercase();
    let sub = if r.reason.is_empty() {
        r.summary.clone()
    } else {
        r.reason.lines().next().unwrap_or("").to_string()
    };
    (status, sub)
}

/// The timeline of one scenario as an SVG document.
pub fn timeline(r: &ScenarioResult, rec: &Record) -> String {
    let (status, sub) = status_and_sub(r);
    render(&r.name, &status, &sub, &r.checks, rec)
}

/// The title line (name and status) and the line under it.
fn title(name: &str, status: &str, sub: &str) -> String {
    let status_color = match status {
        "pass" => "#15803d",
        "skip" => "#a16207",
        _ => "#b91c1c",
    };
    format!(
        "<text x=\"{LEFT}\" y=\"22\" font-size=\"16\" font-weight=\"bold\">{} <tspan fill=\"{status_color}\">{status}</tspan></text>\n\
         <text x=\"{LEFT}\" y=\"40\" fill=\"#444\">{}</text>\n",
        esc(name),
        esc(&sub.chars().take(150).collect::<String>())
    )
}

/// A timeline written earlier with its title re-rendered from `r` (the VM host's rewrite when a
/// kernel splat failed the scenario; the samples are unchanged).
pub fn retitle(svg: &str, r: &ScenarioResult) -> String {
    let (status, sub) = status_and_sub(r);
    let first = format!("<text x=\"{LEFT}\" y=\"22\"");
    let second = format!("<text x=\"{LEFT}\" y=\"40\"");
    let mut out = String::new();
    for line in svg.lines() {
        if line.starts_with(&first) {
            out += &title(&r.name, &status, &sub);
        } else if !line.starts_with(&second) {
            out += line;
            out.push('\n');
        }
    }
    out
}

/// Draws a record: `status` is pass/fail/skip/error, `sub` a line under the title.
pub fn render(name: &str, status: &str, sub: &str, checks: &[CheckResult], rec: &Record) -> String {
    let s = &rec.series;
    if s.is_empty() {
        return String::new();
    }
    let panels = panels(rec);
    let t_end = s.t[s.len() - 1].max(0.001);
    let plot_w = WIDTH - LEFT - RIGHT;
    let x = |t: f64| LEFT + t / t_end * plot_w;
    let height = TOP + panels.len() as f64 * (PANEL + GAP) + 30.0;
    let failed: Vec<_> = checks
        .iter()
        .filter(|c| c.outcome == Outcome::Fail)
        .collect();

    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"#
    );
    o += r##"<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffedd5"/><line x1="0" y1="0" x2="0" y2="6" stroke="#fdba74" stroke-width="2"/></pattern></defs>
<rect width="100%" height="100%" fill="white"/>
"##;
    o += &title(name, status, sub);
    let _ = writeln!(
        o,
        r##"<text x="{LEFT}" y="56" fill="#666">{} samples over {:.2} s; phases shaded, antagonists hatched, sync dotted{}</text>"##,
        s.len(),
        t_end,
        if failed.is_empty() {
            String::new()
        } else {
            "; red: where a check failed".into()
        }
    );

    for (pi, p) in panels.iter().enumerate() {
        panel(&mut o, rec, p, pi, &failed, t_end, &x);
    }
    o += "</svg>\n";
    o
}

/// One panel: its title, the phases, the axes, the lines with their legend, and where checks
/// failed.
fn panel(
    o: &mut String,
    rec: &Record,
    p: &Panel,
    pi: usize,
    failed: &[&CheckResult],
    t_end: f64,
    x: &dyn Fn(f64) -> f64,
) {
    let top = TOP + pi as f64 * (PANEL + GAP) + 14.0;
    let bottom = top + PANEL;
    let (lo, hi, step) = value_range(rec, p, failed);
    let y = |v: f64| bottom - (v - lo) / (hi - lo) * PANEL;

    let _ = writeln!(
        o,
        r#"<text x="{LEFT}" y="{:.1}" font-weight="bold">{}</text>"#,
        top - 4.0,
        esc(&p.title)
    );
    phase_bands(o, rec, pi, top, t_end, x);
    for st in rec
        .steps
        .iter()
        .filter(|st| st.kind == crate::model::StepKind::Sync)
    {
        let xs = x(st.end);
        let _ = writeln!(
            o,
            r##"<line x1="{xs:.1}" y1="{top:.1}" x2="{xs:.1}" y2="{bottom:.1}" stroke="#999" stroke-dasharray="1,3"/>"##
        );
    }
    axes(o, p, (lo, hi, step), (top, bottom), t_end, x, &y);
    lines_and_legend(o, rec, p, top, x, &y);
    failed_marks(o, rec, p, failed, (top, bottom), x, &y);
}

/// A panel's value range over all its lines and the failed checks' bounds, always including 0,
/// rounded out to its tick step: (low, high, step).
fn value_range(rec: &Record, p: &Panel, failed: &[&CheckResult]) -> (f64, f64, f64) {
    let s = &rec.series;
    let (mut lo, mut hi) = (0f64, 0f64);
    for l in &p.lines {
        let base = if l.delta { s.get(0, l.col) } else { 0 };
        for row in 0..s.len() {
            let v = ((s.get(row, l.col) - base) * l.scale) as f64;
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    for c in failed.iter().filter(|c| shows(c, &p.counter)) {
        if let Some(b) = c.bound {
            lo = lo.min(b as f64);
            hi = hi.max(b as f64);
        }
    }
    if hi - lo <= 0.0 {
        hi = lo + if p.bytes { 1048576.0 } else { 1.0 };
    }
    let step = if p.bytes && hi - lo >= 1048576.0 {
        nice_step((hi - lo) / 1048576.0, 4.0) * 1048576.0
    } else {
        nice_step(hi - lo, 4.0)
    };
    let lo = (lo / step).floor() * step;
    let hi = (hi / step).ceil() * step;
    (lo, hi, step)
}

/// Phase bands (antagonist phases hatched); the first panel also names them.
fn phase_bands(
    o: &mut String,
    rec: &Record,
    pi: usize,
    top: f64,
    t_end: f64,
    x: &dyn Fn(f64) -> f64,
) {
    for (i, ph) in rec.phases.iter().enumerate() {
        let (x0, x1) = (x(ph.start), x(ph.end.min(t_end)));
        let fill = if ph.antagonists.is_empty() {
            if i % 2 == 0 { "#eef2f7" } else { "#f7f9fb" }
        } else {
            "url(#hatch)"
        };
        let _ = writeln!(
            o,
            r#"<rect x="{x0:.1}" y="{top:.1}" width="{:.1}" height="{PANEL}" fill="{fill}"/>"#,
            (x1 - x0).max(0.5)
        );
        if pi == 0 {
            let label = if ph.antagonists.is_empty() {
                ph.name.clone()
            } else {
                format!("{} +{}", ph.name, ph.antagonists.join(","))
            };
            // Names go inside the first panel's band, cut to the band's width.
            let fit = ((x1 - x0) / 5.5).floor() as usize;
            let label: String = label.chars().take(fit).collect();
            let _ = writeln!(
                o,
                r##"<text x="{:.1}" y="{:.1}" font-size="9" fill="#555">{}</text>"##,
                x0 + 2.0,
                top + 10.0,
                esc(&label)
            );
        }
    }
}

/// Axes, grid and tick labels.
fn axes(
    o: &mut String,
    p: &Panel,
    (lo, hi, step): (f64, f64, f64),
    (top, bottom): (f64, f64),
    t_end: f64,
    x: &dyn Fn(f64) -> f64,
    y: &dyn Fn(f64) -> f64,
) {
    let plot_w = WIDTH - LEFT - RIGHT;
    let mut v = lo;
    while v <= hi + step / 2.0 {
        let yy = y(v);
        let _ = writeln!(
            o,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#444">{}</text>"##,
            LEFT + plot_w,
            LEFT - 4.0,
            yy + 4.0,
            axis_label(v, p.bytes, step)
        );
        v += step;
    }
    let _ = writeln!(
        o,
        r##"<rect x="{LEFT}" y="{top:.1}" width="{plot_w}" height="{PANEL}" fill="none" stroke="#888"/>"##
    );
    let tstep = nice_step(t_end, 10.0);
    let mut t = 0.0;
    while t <= t_end + 1e-9 {
        let _ = writeln!(
            o,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#444">{}s</text>"##,
            x(t),
            bottom + 13.0,
            (t * 1000.0).round() / 1000.0
        );
        t += tstep;
    }
}

/// The panel's lines and their legend.
fn lines_and_legend(
    o: &mut String,
    rec: &Record,
    p: &Panel,
    top: f64,
    x: &dyn Fn(f64) -> f64,
    y: &dyn Fn(f64) -> f64,
) {
    let plot_w = WIDTH - LEFT - RIGHT;
    for (li, l) in p.lines.iter().enumerate() {
        let _ = writeln!(
            o,
            r#"<polyline fill="none" stroke="{}" stroke-width="{}"{} points="{}"/>"#,
            l.color,
            if l.color == GLOBAL { 4 } else { 1 },
            if l.dashed {
                r#" stroke-dasharray="5,3""#
            } else {
                ""
            },
            points(rec, l, &x, &y)
        );
        let ly = top + 12.0 + li as f64 * 15.0;
        let lx = LEFT + plot_w + 10.0;
        let _ = writeln!(
            o,
            r#"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="{}"{}/><text x="{:.1}" y="{ly:.1}">{}</text>"#,
            ly - 4.0,
            lx + 18.0,
            ly - 4.0,
            l.color,
            if l.color == GLOBAL { 4 } else { 2 },
            if l.dashed {
                r#" stroke-dasharray="5,3""#
            } else {
                ""
            },
            lx + 22.0,
            esc(&l.label)
        );
    }
}

/// Whether a check's columns show `counter` (the panel of that counter draws its marks).
fn shows(c: &CheckResult, counter: &str) -> bool {
    c.columns.iter().any(|col| col.counter() == Some(counter))
}

/// Failed checks: the bound, the failing time and the failing value.
fn failed_marks(
    o: &mut String,
    rec: &Record,
    p: &Panel,
    failed: &[&CheckResult],
    (top, bottom): (f64, f64),
    x: &dyn Fn(f64) -> f64,
    y: &dyn Fn(f64) -> f64,
) {
    let s = &rec.series;
    let plot_w = WIDTH - LEFT - RIGHT;
    for c in failed {
        let here = shows(c, &p.counter);
        if let (true, Some(b)) = (here, c.bound) {
            let yb = y(b as f64);
            let _ = writeln!(
                o,
                r##"<line x1="{LEFT}" y1="{yb:.1}" x2="{:.1}" y2="{yb:.1}" stroke="#dc2626" stroke-dasharray="6,3"/><text x="{:.1}" y="{:.1}" fill="#dc2626" text-anchor="end">bound of {}</text>"##,
                LEFT + plot_w,
                LEFT + plot_w - 4.0,
                yb - 3.0,
                esc(&c.name)
            );
        }
        if let Some(at) = c.at {
            let xa = x(at);
            let _ = writeln!(
                o,
                r##"<line x1="{xa:.1}" y1="{top:.1}" x2="{xa:.1}" y2="{bottom:.1}" stroke="#dc2626" stroke-width="1.5"/>"##
            );
            if here {
                // Labels right of the middle grow leftwards, away from the legend.
                let right_half = xa > LEFT + plot_w / 2.0;
                let _ = writeln!(
                    o,
                    r##"<text x="{:.1}" y="{:.1}" fill="#dc2626" text-anchor="{}">{} failed</text>"##,
                    if right_half { xa - 4.0 } else { xa + 4.0 },
                    top + 24.0,
                    if right_half { "end" } else { "start" },
                    esc(&c.name)
                );
                // A ring on each failing column's value at that sample.
                let row = (0..s.len()).rev().find(|&k| s.t[k] <= at).unwrap_or(0);
                let mut sum = 0i64;
                let mut any = false;
                for column in &c.columns {
                    if let Some(ci) = s.col(column) {
                        sum += s.get(row, ci);
                        any = true;
                    }
                }
                if any {
                    let _ = writeln!(
                        o,
                        r##"<circle cx="{xa:.1}" cy="{:.1}" r="5" fill="none" stroke="#dc2626" stroke-width="2"/>"##,
                        y(sum as f64)
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed accounting check on a record whose group stayed at 0 while global dirty rose (a
    /// clamped underflow): the timeline draws the global band, names the check at the failing
    /// sample and rings the failing value.
    #[test]
    fn a_failed_check_is_marked_at_its_sample() {
        use crate::model::{Machine, PhaseRecord, Record, Series, StepRecord};
        let mut series = Series::new(vec![
            Column::vmstat("nr_dirty"),
            Column::group("test", "dirty"),
            Column::group("test", "writeback"),
        ]);
        for i in 0..50 {
            series.push(i as f64 * 0.1, &[i * 256, 0, 0]);
        }
        let rec = Record {
            series,
            phases: vec![PhaseRecord {
                name: "write".into(),
                start: 0.0,
                end: 4.9,
                antagonists: vec![],
                warmup: false,
                vmstat_start: Default::default(),
                vmstat_end: Default::default(),
            }],
            steps: vec![StepRecord {
                kind: crate::model::StepKind::Write,
                describe: "write".into(),
                start: 0.5,
                end: 4.5,
                ..Default::default()
            }],
            machine: Machine {
                cpus: 2,
                page_size: 4096,
                node_drift_pages: 64,
                lru_gen: false,
                top_flushed: true,
            },
            moves: vec![],
            charge_moving: None,
            cgroups: vec![],
            stopped: None,
            dirty: None,
            version: crate::model::Version::V2,
            notices: None,
            repeated: None,
        };
        let mut c = crate::model::fixtures::check("tracks-global(test)", Outcome::Fail);
        c.columns = vec![
            Column::group("test", "dirty"),
            Column::group("test", "writeback"),
        ];
        c.at = Some(2.0);
        c.bound = Some(1 << 20);
        let svg = render("clamped", "fail", &c.actual, std::slice::from_ref(&c), &rec);
        assert!(svg.contains("global nr_dirty"));
        assert!(svg.contains("tracks-global(test) failed"));
        assert!(svg.contains("<circle"));
        // MEMCGTEST_SVG_OUT=path keeps the picture for looking at.
        if let Ok(p) = std::env::var("MEMCGTEST_SVG_OUT") {
            std::fs::write(p, svg).unwrap();
        }
    }

    #[test]
    fn counters_match_failed_columns() {
        let mut c = crate::model::fixtures::check("x", Outcome::Fail);
        c.columns = vec![Column::group("a", "dirty"), Column::group("a", "writeback")];
        assert!(shows(&c, "dirty"));
        assert!(shows(&c, "writeback"));
        c.columns = vec![Column::local("p", "dirty")];
        assert!(shows(&c, "dirty"));
        assert!(!shows(&c, "writeback"));
        assert!(!shows(&c, ""));
    }

    #[test]
    fn tenths_are_written_as_with_a_precision_of_one() {
        for v in [0.0, 0.04, 0.06, 1.25, 12.96, 999.94, -0.5, -3.27, 1234.5678] {
            let mut s = String::new();
            push_tenths(&mut s, v);
            let want = format!("{:.1}", (v * 10.0_f64).round() / 10.0);
            assert_eq!(s, if want == "-0.0" { "0.0".into() } else { want }, "{v}");
        }
    }

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(100.0, 4.0), 50.0);
        assert_eq!(nice_step(7.0, 10.0), 1.0);
        assert_eq!(nice_step(3e8, 4.0), 1e8);
    }
}
