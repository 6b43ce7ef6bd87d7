//! The events `memcgtest run --events` streams on stdout, one JSON object a line: how the guest of
//! `memcgtest vm` tells the host what runs and what came of it. Every line carries
//! `"memcgtest": VERSION`, so the host tells an event from anything else (and from an event of
//! another version) and says which.
//!
//! A run is `start`, then per scenario `scenario-begin`, its `phase`, `step`, `measured` and
//! `note` lines and `scenario-end` with the result, then `finish`. A stream that stops before
//! `finish` is a run the guest did not complete (a kernel panic, a hang).
//!
//! The result crosses the guest's emulated 16550 UART, which under TCG moves about 400 KB/s (an
//! interrupt for every 16 bytes) while the run waits on the write: `scenario-end` carries it
//! deflated and in base64 (the 2.2 MB of a quick suite's results took about 5 s as JSON).

use serde::{Deserialize, Serialize};

use super::result::{RunReport, ScenarioResult};
use crate::model::Format;

/// The version of the stream; the host refuses lines of any other. 2: `finish` carries the run's
/// wall time; 3: `scenario-end` carries its result packed (`result_packed`).
pub const VERSION: u32 = 3;

/// One event of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// The run starts: the format stdout is to carry, and the report without scenarios (the
    /// environment, the KCIDB ids, the start time).
    Start {
        format: Format,
        report: Box<RunReport>,
    },
    /// Scenario `index` (1-based) of `count` starts.
    ScenarioBegin {
        index: usize,
        count: usize,
        name: String,
        summary: String,
    },
    /// Phase `index` (1-based) of `count` of the running scenario starts.
    Phase {
        scenario: String,
        phase: String,
        index: usize,
        count: usize,
    },
    /// A step of the running phase starts.
    Step { scenario: String, step: String },
    /// What the running step measured ("812.3 MB/s").
    Measured { scenario: String, what: String },
    /// A line for people.
    Note { message: String },
    /// The running scenario ended with this result (on the wire: its JSON deflated, in base64).
    ScenarioEnd {
        #[serde(rename = "result_packed", with = "packed")]
        result: Box<ScenarioResult>,
    },
    /// The run is complete: every scenario that ran has ended, in `seconds` of wall time.
    Finish { seconds: f64 },
}

/// The wire form: the version field first, then the event.
#[derive(Serialize)]
struct Line<'a> {
    memcgtest: u32,
    #[serde(flatten)]
    event: &'a Event,
}

impl Event {
    /// The event as one line of the stream, newline included.
    pub fn to_line(&self) -> String {
        let line = Line {
            memcgtest: VERSION,
            event: self,
        };
        serde_json::to_string(&line).expect("events serialize") + "\n"
    }

    /// One line of the stream (without its newline) as an event; the error says what the line is
    /// instead.
    pub fn parse(line: &str) -> Result<Event, String> {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("not a JSON event ({e})"))?;
        match v.get("memcgtest").map(|n| n.as_u64()) {
            Some(Some(n)) if n == u64::from(VERSION) => {}
            Some(Some(n)) => {
                return Err(format!(
                    "an event of version {n}; this memcgtest reads version {VERSION}"
                ));
            }
            _ => return Err("not a memcgtest event (no \"memcgtest\" version field)".into()),
        }
        serde_json::from_value(v).map_err(|e| format!("a malformed event ({e})"))
    }
}

/// A result as the wire carries it: its JSON, deflated (RFC 1951), in standard base64.
mod packed {
    use super::ScenarioResult;
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};
    use std::io::{Read, Write};

    pub fn serialize<S: Serializer>(r: &ScenarioResult, s: S) -> Result<S::Ok, S::Error> {
        let json = serde_json::to_vec(r).expect("results serialize");
        let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&json).expect("deflating to memory");
        s.serialize_str(&STANDARD.encode(z.finish().expect("deflating to memory")))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Box<ScenarioResult>, D::Error> {
        let text = String::deserialize(d)?;
        let bytes = (STANDARD.decode(text.as_bytes()))
            .map_err(|e| D::Error::custom(format!("result_packed is not base64: {e}")))?;
        let mut json = Vec::new();
        (flate2::read::DeflateDecoder::new(&bytes[..]).read_to_end(&mut json))
            .map_err(|e| D::Error::custom(format!("result_packed does not inflate: {e}")))?;
        serde_json::from_slice(&json).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events() -> Vec<Event> {
        let mut rep = crate::model::fixtures::report();
        let result = rep.scenarios.remove(1);
        rep.scenarios.clear();
        rep.count();
        vec![
            Event::Start {
                format: Format::Ktap,
                report: Box::new(rep),
            },
            Event::ScenarioBegin {
                index: 1,
                count: 2,
                name: "b".into(),
                summary: "buffered writes\n\"quoted\"".into(),
            },
            Event::Phase {
                scenario: "b".into(),
                phase: "migrate".into(),
                index: 2,
                count: 3,
            },
            Event::Step {
                scenario: "b".into(),
                step: "write test/file 64 MiB".into(),
            },
            Event::Measured {
                scenario: "b".into(),
                what: "812.3 MB/s".into(),
            },
            Event::Note {
                message: "waiting".into(),
            },
            Event::ScenarioEnd {
                result: Box::new(result),
            },
            Event::Finish { seconds: 12.5 },
        ]
    }

    #[test]
    fn every_event_is_one_line_and_reads_back_the_same() {
        for e in events() {
            let line = e.to_line();
            assert!(line.starts_with("{\"memcgtest\":3,\"event\":"), "{line}");
            assert_eq!(line.matches('\n').count(), 1, "{line}");
            let back = Event::parse(line.trim_end()).unwrap();
            // Same event: the same line again.
            assert_eq!(back.to_line(), line);
        }
        let Event::ScenarioEnd { result } = Event::parse(events()[6].to_line().trim_end()).unwrap()
        else {
            panic!("not a scenario end")
        };
        assert_eq!(result.name, "b");
        assert_eq!(result.status, crate::model::Status::Fail);
        assert_eq!(result.reason, "x: 0.14 (expected >= 0.70)");
    }

    #[test]
    fn anything_else_is_refused_with_what_it_is() {
        let no = |l: &str| Event::parse(l).unwrap_err();
        assert!(no("ok 1 dirty-accounting").starts_with("not a JSON event"));
        assert!(no("{\"tool\":\"memcgtest\"}").starts_with("not a memcgtest event"));
        assert!(no("{\"memcgtest\":4,\"event\":\"finish\"}").contains("version 4"));
        // Version 1's finish had no wall time.
        assert!(no("{\"memcgtest\":1,\"event\":\"finish\"}").contains("version 1"));
        assert!(no("{\"memcgtest\":3,\"event\":\"reboot\"}").starts_with("a malformed event"));
        assert!(no("{\"memcgtest\":3,\"event\":\"step\"}").starts_with("a malformed event"));
        let bad = "{\"memcgtest\":3,\"event\":\"scenario-end\",\"result_packed\":\"x!\"}";
        assert!(no(bad).contains("not base64"), "{}", no(bad));
        // Cut mid-line (the guest died while writing it).
        let cut = events()[0].to_line();
        assert!(no(&cut[..cut.len() / 2]).starts_with("not a JSON event"));
    }
}
