//! The host's side of the guest's event stream (`model::Event`, one JSON line each on the events
//! channel): fed the bytes as they arrive, it shows the progress on the host's stderr and keeps
//! what the run's report is built from: the header, every scenario that ended, the one running.

use std::time::Instant;

use crate::model::{Event, RunReport, ScenarioResult};
use crate::report::Format;
use crate::report::progress::Progress;

/// The scenario that began and has not ended yet.
#[derive(Debug)]
struct Running {
    name: String,
    summary: String,
    since: Instant,
}

/// What the events said so far.
#[derive(Debug, Default)]
pub struct Stream {
    /// Bytes after the last newline: the start of a line still being written.
    pending: Vec<u8>,
    /// Complete lines read.
    lines: usize,
    /// From `start`: the format stdout is to carry and the report without scenarios.
    start: Option<(Format, RunReport)>,
    results: Vec<ScenarioResult>,
    running: Option<Running>,
    /// The run's wall time, once `finish` arrived.
    finished: Option<f64>,
    /// When `start` arrived: the wall time of a run that never finished.
    since: Option<Instant>,
    /// Lines that were no events, each with its number and why.
    pub errors: Vec<String>,
}

impl Stream {
    /// Takes the bytes that arrived: every complete line is parsed, shown on `progress` and
    /// kept; the rest waits for its newline.
    pub fn feed(&mut self, bytes: &[u8], progress: &Progress) {
        for text in complete_lines(&mut self.pending, bytes) {
            self.lines += 1;
            match Event::parse(&text) {
                Ok(e) => self.apply(e, progress),
                Err(why) => {
                    let shown: String = text.chars().take(120).collect();
                    self.errors
                        .push(format!("line {}: {why}: {shown:?}", self.lines));
                }
            }
        }
    }

    fn apply(&mut self, e: Event, progress: &Progress) {
        match e {
            Event::Start { format, report } => {
                self.start = Some((format, *report));
                self.since = Some(Instant::now());
            }
            Event::ScenarioBegin {
                index,
                count,
                name,
                summary,
            } => {
                progress.scenario((index, count), &name, &summary, None, None);
                self.running = Some(Running {
                    name,
                    summary,
                    since: Instant::now(),
                });
            }
            Event::Phase {
                scenario,
                phase,
                index,
                count,
            } => progress.phase(&scenario, &phase, (index, count)),
            Event::Step { scenario, step } => progress.step(&scenario, &step),
            Event::Measured { scenario, what } => progress.measured(&scenario, &what),
            Event::Note { message } => progress.say(&message),
            Event::ScenarioEnd { result } => {
                progress.done(&result);
                self.running = None;
                self.results.push(*result);
            }
            Event::Finish { seconds } => {
                progress.finish();
                self.finished = Some(seconds);
            }
        }
    }

    /// Whether the run completed (`finish` arrived).
    pub fn finished(&self) -> bool {
        self.finished.is_some()
    }

    /// The run as the events tell it, and the format stdout is to carry: the header with every
    /// scenario that ended, plus, when the stream stopped before `finish` (the guest died), the
    /// scenario running then, failed with `cut` as the reason. None when the run never started.
    pub fn report(&self, cut: &str) -> Option<(RunReport, Format)> {
        let (format, header) = self.start.as_ref()?;
        let mut rep = header.clone();
        rep.scenarios = self.results.clone();
        rep.seconds = self.finished.unwrap_or_else(|| {
            self.since
                .map(|t| t.elapsed().as_secs_f64())
                .unwrap_or_default()
        });
        if self.finished.is_none()
            && let Some(r) = &self.running
        {
            let seconds = r.since.elapsed().as_secs_f64();
            rep.scenarios.push(ScenarioResult::unfinished(
                &r.name, &r.summary, cut, seconds,
            ));
        }
        rep.count();
        Some((rep, *format))
    }
}

/// Appends `bytes` to `pending` and takes the complete lines out of it (without their newlines);
/// what follows the last newline stays.
pub(super) fn complete_lines(pending: &mut Vec<u8>, bytes: &[u8]) -> Vec<String> {
    pending.extend_from_slice(bytes);
    let Some(last) = pending.iter().rposition(|&b| b == b'\n') else {
        return Vec::new();
    };
    let done: Vec<u8> = pending.drain(..=last).collect();
    done[..last]
        .split(|&b| b == b'\n')
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::Status;
    use crate::report::progress::Mode;

    /// The stream of a run of the test report's scenarios a, b, c in `format`.
    pub(crate) fn run_events(format: Format) -> String {
        let full = crate::model::fixtures::report();
        let mut header = full.clone();
        header.scenarios.clear();
        header.count();
        let mut s = Event::Start {
            format,
            report: Box::new(header),
        }
        .to_line();
        for (i, r) in full.scenarios.iter().enumerate() {
            s += &Event::ScenarioBegin {
                index: i + 1,
                count: full.scenarios.len(),
                name: r.name.clone(),
                summary: r.summary.clone(),
            }
            .to_line();
            s += &Event::Step {
                scenario: r.name.clone(),
                step: "sync".into(),
            }
            .to_line();
            s += &Event::ScenarioEnd {
                result: Box::new(r.clone()),
            }
            .to_line();
        }
        s + &Event::Finish { seconds: 3.0 }.to_line()
    }

    pub(crate) fn fed(bytes: &[u8]) -> Stream {
        let mut st = Stream::default();
        st.feed(bytes, &Progress::new(Mode::Off));
        st
    }

    #[test]
    fn a_whole_run_reads_back_as_the_guest_had_it() {
        let text = run_events(Format::Junit);
        // In pieces as the serial port delivers them, cut anywhere (mid-line, mid-character).
        let mut st = Stream::default();
        let off = Progress::new(Mode::Off);
        for piece in text.as_bytes().chunks(7) {
            st.feed(piece, &off);
        }
        assert!(st.errors.is_empty(), "{:?}", st.errors);
        assert!(st.finished());
        let (rep, format) = st.report("unused").unwrap();
        assert_eq!(format, Format::Junit);
        let names: Vec<&str> = rep.scenarios.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        let guest = crate::model::fixtures::report();
        assert_eq!(
            crate::report::ktap(&rep),
            crate::report::ktap(&guest),
            "the host renders what the guest would have"
        );
    }

    /// The guest died in scenario b (a panic, a hang): a ended, b is failed with the reason, c
    /// never began; the half line it was writing is no error.
    #[test]
    fn a_stream_cut_mid_run_fails_the_scenario_running_then() {
        let text = run_events(Format::Ktap);
        // b's end is the second scenario-end (a result is packed: its name is not in the text).
        let end = "\"event\":\"scenario-end\"";
        let a_end = text.find(end).unwrap();
        let b_end = a_end + 1 + text[a_end + 1..].find(end).unwrap();
        let st = fed(&text.as_bytes()[..b_end + 20]);
        assert!(st.errors.is_empty(), "{:?}", st.errors);
        assert!(!st.finished());
        let (rep, _) = st
            .report("kernel panic: Kernel panic - not syncing: x")
            .unwrap();
        let got: Vec<(&str, Status)> = rep
            .scenarios
            .iter()
            .map(|r| (r.name.as_str(), r.status))
            .collect();
        assert_eq!(got, [("a", Status::Pass), ("b", Status::Fail)]);
        assert_eq!(
            rep.scenarios[1].reason,
            "kernel panic: Kernel panic - not syncing: x"
        );
        assert_eq!((rep.totals.passed, rep.totals.failed), (1, 1));
        let k = crate::report::ktap(&rep);
        assert!(k.contains("1..2\n") && k.contains("not ok 2 b\n"), "{k}");
        // Before any scenario, or before the run started: no scenario to blame.
        let start_only = text.lines().next().unwrap().to_string() + "\n";
        assert!(
            fed(start_only.as_bytes())
                .report("x")
                .unwrap()
                .0
                .scenarios
                .is_empty()
        );
        assert!(fed(b"").report("x").is_none());
    }

    #[test]
    fn a_garbage_line_is_an_error_with_its_number() {
        let text = run_events(Format::Ktap);
        let mut lines: Vec<&str> = text.lines().collect();
        lines.insert(2, "ok 1 a");
        let st = fed((lines.join("\n") + "\n").as_bytes());
        assert_eq!(st.errors.len(), 1, "{:?}", st.errors);
        assert!(
            st.errors[0].starts_with("line 3: not a JSON event"),
            "{}",
            st.errors[0]
        );
        assert!(st.errors[0].ends_with("\"ok 1 a\""), "{}", st.errors[0]);
        // The events around it still count.
        assert!(st.finished());
        assert_eq!(st.report("").unwrap().0.scenarios.len(), 3);
    }
}
