//! Progress of a run, on stderr only (stdout carries only the chosen format).
//!
//! - `Live` (stderr is a terminal): one status line redrawn every 250 ms — scenario k/N, phase,
//!   step and what it measured, elapsed time and an ETA from the durations earlier runs on this
//!   machine took — with the scenarios' starts and ends scrolling above it.
//! - `Lines` (the host of `memcgtest vm` when stderr is not a terminal): one timestamped line per
//!   event, no terminal control.
//! - `Events` (`run --events`, the guest of `memcgtest vm`): every event as a typed JSON line on
//!   stdout (`model::Event`), which the host shows with a display of its own.
//! - `Off` (stderr is not a terminal): nothing.
//!
//! Durations are remembered per scenario and profile (quick or full) in `durations.json` under
//! `$XDG_CACHE_HOME/memcgtest` (else `/var/cache/memcgtest`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::model::{Event, ScenarioResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Off,
    Lines,
    Live,
    Events,
}

#[derive(Default)]
struct State {
    /// 1-based index of the running scenario and the number of scenarios.
    k: usize,
    n: usize,
    scenario: String,
    phase: String,
    step: String,
    scenario_start: Option<Instant>,
    /// What the running scenario took last time.
    expected: Option<f64>,
    /// What the scenarios after it took last time (None when one of them never ran here).
    expected_after: Option<f64>,
}

pub struct Progress {
    mode: Mode,
    start: Instant,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    ticker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// `m:ss` (or `h:mm:ss`).
pub fn clock(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// Seconds left: what the running scenario has left of its last duration (at least 0) plus what
/// the ones after it took; `None` when the running one never ran here. The bool says whether
/// every later scenario is known (else the ETA is a lower bound).
pub fn eta(expected: Option<f64>, elapsed: f64, after: Option<f64>) -> Option<(f64, bool)> {
    let now = (expected? - elapsed).max(0.0);
    Some((now + after.unwrap_or(0.0), after.is_some()))
}

/// The status line, at most `width` characters.
fn status_line(st: &State, run_elapsed: f64, width: usize) -> String {
    let in_scenario = st
        .scenario_start
        .map(|t| t.elapsed().as_secs_f64())
        .unwrap_or(0.0);
    let eta = match eta(st.expected, in_scenario, st.expected_after) {
        Some((s, true)) => format!("ETA {}", clock(s)),
        Some((s, false)) => format!("ETA >{}", clock(s)),
        None => "ETA ?".into(),
    };
    let mut parts = vec![format!("[{}/{}] {}", st.k, st.n, st.scenario)];
    if !st.phase.is_empty() {
        parts.push(format!("phase {}", st.phase));
    }
    if !st.step.is_empty() {
        parts.push(st.step.clone());
    }
    let head = parts.join(" | ");
    let tail = format!(" | {} elapsed | {eta}", clock(run_elapsed));
    // Cut the head (the step is the longest part), never the clock.
    let room = width.saturating_sub(tail.chars().count() + 1);
    let head: String = if head.chars().count() > room {
        let mut h: String = head.chars().take(room.saturating_sub(1)).collect();
        h.push('~');
        h
    } else {
        head
    };
    format!("{head}{tail}")
}

/// Columns of the terminal on stderr (80 when unknown).
fn term_width() -> usize {
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes a winsize into the struct we pass.
    let ok = unsafe { libc::ioctl(2, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        ws.ws_col as usize
    } else {
        80
    }
}

/// Clears the status line and draws it again (with `above` printed first, when given).
fn redraw(st: &State, start: Instant, above: Option<&str>) {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K");
    if let Some(l) = above {
        let _ = writeln!(err, "{l}");
    }
    if st.n > 0 {
        let w = term_width();
        let _ = write!(
            err,
            "{}",
            status_line(st, start.elapsed().as_secs_f64(), w.saturating_sub(1))
        );
    }
    let _ = err.flush();
}

impl Progress {
    pub fn new(mode: Mode) -> Self {
        Progress {
            mode,
            start: Instant::now(),
            state: Arc::new(Mutex::new(State::default())),
            stop: Arc::new(AtomicBool::new(false)),
            ticker: Mutex::new(None),
        }
    }

    /// Starts the redraw thread of a live display.
    fn start_ticker(&self) {
        let mut t = self.ticker.lock().unwrap();
        if self.mode != Mode::Live || t.is_some() {
            return;
        }
        let (state, stop, start) = (self.state.clone(), self.stop.clone(), self.start);
        *t = Some(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                redraw(&state.lock().unwrap(), start, None);
                std::thread::sleep(Duration::from_millis(250));
            }
        }));
    }

    /// Writes `e` on stdout as one line, in `Events` mode only.
    pub fn event(&self, e: &Event) {
        if self.mode == Mode::Events {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(e.to_line().as_bytes());
            let _ = out.flush();
        }
    }

    /// A line for people: scrolls above the status line (live), or a timestamped line.
    pub fn say(&self, msg: &str) {
        match self.mode {
            Mode::Off => {}
            Mode::Lines => eprintln!("[{:7.1}s] {msg}", self.start.elapsed().as_secs_f64()),
            Mode::Live => redraw(&self.state.lock().unwrap(), self.start, Some(msg)),
            Mode::Events => self.event(&Event::Note {
                message: msg.into(),
            }),
        }
    }

    /// Scenario `k` of `n` starts; `expected` is what it took last time, `expected_after` what
    /// the ones after it took (None if one never ran here).
    pub fn scenario(
        &self,
        (k, n): (usize, usize),
        name: &str,
        summary: &str,
        expected: Option<f64>,
        expected_after: Option<f64>,
    ) {
        if self.mode == Mode::Events {
            self.event(&Event::ScenarioBegin {
                index: k,
                count: n,
                name: name.into(),
                summary: summary.into(),
            });
            return;
        }
        {
            let mut st = self.state.lock().unwrap();
            *st = State {
                k,
                n,
                scenario: name.to_string(),
                scenario_start: Some(Instant::now()),
                expected,
                expected_after,
                ..Default::default()
            };
        }
        self.say(&format!("[{k}/{n}] {name}: {summary}"));
        self.start_ticker();
    }

    pub fn phase(&self, scenario: &str, phase: &str, (i, n): (usize, usize)) {
        match self.mode {
            Mode::Live => {
                let mut st = self.state.lock().unwrap();
                st.phase = format!("{phase} ({i}/{n})");
                st.step.clear();
            }
            Mode::Events => self.event(&Event::Phase {
                scenario: scenario.into(),
                phase: phase.into(),
                index: i,
                count: n,
            }),
            Mode::Lines | Mode::Off => self.say(&format!("{scenario}: phase {phase} ({i}/{n})")),
        }
    }

    pub fn step(&self, scenario: &str, step: &str) {
        match self.mode {
            Mode::Live => self.state.lock().unwrap().step = step.to_string(),
            Mode::Events => self.event(&Event::Step {
                scenario: scenario.into(),
                step: step.into(),
            }),
            Mode::Lines | Mode::Off => self.say(&format!("{scenario}:   {step}")),
        }
    }

    /// What the running step measured (MB/s, faults/s, a move's cost): shown after the step on
    /// the live line, a line of its own otherwise.
    pub fn measured(&self, scenario: &str, what: &str) {
        match self.mode {
            Mode::Live => {
                let mut st = self.state.lock().unwrap();
                st.step = format!("{}: {what}", st.step);
            }
            Mode::Events => self.event(&Event::Measured {
                scenario: scenario.into(),
                what: what.into(),
            }),
            Mode::Lines | Mode::Off => self.say(&format!("{scenario}:     {what}")),
        }
    }

    /// The running scenario ended with `r` (in `Events` mode the whole result goes out).
    pub fn done(&self, r: &ScenarioResult) {
        match self.mode {
            Mode::Events => self.event(&Event::ScenarioEnd {
                result: Box::new(r.clone()),
            }),
            _ => self.say(&format!(
                "{}: {} ({:.1} s)",
                r.name,
                r.status.as_str(),
                r.seconds
            )),
        }
    }

    /// Stops the live display and clears its line.
    pub fn finish(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.lock().unwrap().take() {
            let _ = t.join();
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Durations of earlier runs on this machine, seconds per `scenario:profile`.
pub struct Durations {
    path: Option<PathBuf>,
    pub seconds: BTreeMap<String, f64>,
}

pub fn key(scenario: &str, quick: bool) -> String {
    format!("{scenario}:{}", if quick { "quick" } else { "full" })
}

impl Durations {
    fn default_path() -> PathBuf {
        match std::env::var_os("XDG_CACHE_HOME") {
            Some(d) if !d.is_empty() => PathBuf::from(d).join("memcgtest"),
            _ => PathBuf::from("/var/cache/memcgtest"),
        }
        .join("durations.json")
    }

    /// The remembered durations (none when the file is missing or unreadable).
    pub fn load() -> Durations {
        let path = Self::default_path();
        let seconds = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        Durations {
            path: Some(path),
            seconds,
        }
    }

    /// No file: nothing remembered, nothing saved.
    pub fn none() -> Durations {
        Durations {
            path: None,
            seconds: BTreeMap::new(),
        }
    }

    /// What `keys[i]` took last time, and what all after it took (None if one is unknown).
    pub fn expected(&self, keys: &[String], i: usize) -> (Option<f64>, Option<f64>) {
        let this = self.seconds.get(&keys[i]).copied();
        let after = keys[i + 1..]
            .iter()
            .map(|k| self.seconds.get(k).copied())
            .sum::<Option<f64>>();
        (this, after)
    }

    /// Saves, best effort: an unwritable cache only costs the next run its ETA.
    pub fn save(&self) {
        if let Some(p) = &self.path {
            if let Some(d) = p.parent() {
                let _ = std::fs::create_dir_all(d);
            }
            if let Ok(t) = serde_json::to_string_pretty(&self.seconds) {
                let _ = std::fs::write(p, t + "\n");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_and_eta() {
        assert_eq!(clock(0.4), "0:00");
        assert_eq!(clock(75.0), "1:15");
        assert_eq!(clock(3725.0), "1:02:05");
        // 30 s into a scenario that took 50 s, then 100 s more.
        assert_eq!(eta(Some(50.0), 30.0, Some(100.0)), Some((120.0, true)));
        // Over its old time: the rest only; a later unknown makes it a lower bound.
        assert_eq!(eta(Some(50.0), 80.0, None), Some((0.0, false)));
        assert_eq!(eta(None, 1.0, Some(5.0)), None);
    }

    #[test]
    fn expected_durations_sum_only_when_all_known() {
        let mut d = Durations::none();
        d.seconds.insert(key("a", true), 10.0);
        d.seconds.insert(key("c", true), 5.0);
        let keys = ["a", "b", "c"].map(|n| key(n, true)).to_vec();
        assert_eq!(d.expected(&keys, 0), (Some(10.0), None));
        assert_eq!(d.expected(&keys, 1), (None, Some(5.0)));
        assert_eq!(d.expected(&keys, 2), (Some(5.0), Some(0.0)));
    }

    #[test]
    fn the_status_line_fits_and_keeps_the_clock() {
        let st = State {
            k: 2,
            n: 5,
            scenario: "dirty-migration".into(),
            phase: "migrate (3/5)".into(),
            step: "write test/file 640 MiB in 1 MiB blocks".into(),
            scenario_start: Some(Instant::now()),
            expected: Some(65.0),
            expected_after: Some(60.0),
        };
        let l = status_line(&st, 42.0, 200);
        assert!(l.starts_with("[2/5] dirty-migration | phase migrate (3/5) | write test"));
        assert!(l.ends_with("| 0:42 elapsed | ETA 2:05"), "{l}");
        let short = status_line(&st, 42.0, 60);
        assert!(short.chars().count() <= 60, "{short}");
        assert!(short.ends_with("0:42 elapsed | ETA 2:05"), "{short}");
    }
}
