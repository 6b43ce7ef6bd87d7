//! SVG timelines: not implemented yet (the accounting issue); `timeline` returns an empty string and
//! no file is written.
use crate::record::Record;
use crate::runner::ScenarioResult;

pub fn timeline(_r: &ScenarioResult, _rec: &Record) -> String {
    String::new()
}
