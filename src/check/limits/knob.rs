//! knob: what a group's file says after a `set` step wrote it (or read it): the value read
//! back, or the errno the kernel refused the write with. The documented knobs promise both: a
//! limit written is the limit read (to the page), a deprecated knob ignores writes, a request
//! the kernel cannot fulfil fails (memory.reclaim's EAGAIN).

use crate::check::args::CheckArgs;
use crate::check::{CGROUP, Check, CheckResult, CheckSpec, Kind, Outcome, missing, opt, req};
use crate::model::error::ScenarioError;
use crate::model::units::parse_size;
use crate::model::{KnobWrite, Record, StepKind};

/// `knob` in the check table.
pub const KIND: Kind = Kind {
    kind: "knob",
    doc: "Each `set` step on the group's `file` (only those that wrote `value`, when given) \
ended as the documentation promises: the write failed with the errno `fails` names, or it \
succeeded and the file (its `key` line, for a flat-keyed file such as memory.stat) then read \
`reads`: `max` (v2 `max`, or v1's PAGE_COUNTER_MAX in bytes: any number of 2^62 or more), \
`written` (the size written, in bytes; `max` for `max` or `-1`), `page` (the size written \
rounded up to a multiple of the page size, as both documents say a limit is: since the page \
counters (3.19) the kernel rounds down, a known issue of knobs-v1 and knobs-v2), or a literal (sizes \
compared in bytes, other text as it is). A `set` without a value only reads: `reads` judges \
what the file held (a default). The file is read through a new descriptor right after the write \
returns. Not exercised when no such step ran. Result name: `knob(<cgroup>: <file>)`, with a key \
`knob(<cgroup>: <file> <key>)`. With `changes = true` a write counts only where the file read \
otherwise before it (a reset of a count that was 0 proves nothing); with `unsupported`, a write \
refused with that errno means this kernel lacks what is written (a key added later, such as \
memory.reclaim's `swappiness=`, 6.11): not exercised, with the reason.",
    keys: &[
        CGROUP,
        req(
            "file",
            "the file the `set` steps wrote, or a list of files (each judged alike)",
        ),
        opt(
            "key",
            "the line of a flat-keyed file (`hierarchical_memory_limit`)",
        ),
        opt("value", "only the `set` steps that wrote this"),
        opt("phase", "only the `set` steps of this declared phase"),
        opt(
            "reads",
            "what the file must read after the write: `max`, `written`, `page` or a literal",
        ),
        opt(
            "fails",
            "the errno name the write must fail with (`EINVAL`, `EAGAIN`); none: it must succeed",
        ),
        opt(
            "changes",
            "only writes after which the file reads otherwise than before count (default false)",
        ),
        opt(
            "unsupported",
            "the errno name with which a kernel that lacks what is written refuses it",
        ),
    ],
    parse,
    promises: &[],
};

/// What a `knob` check expects of each write.
#[derive(Debug, Clone, PartialEq)]
pub struct Knob {
    pub cgroup: String,
    pub files: Vec<String>,
    pub key: Option<String>,
    pub value: Option<String>,
    pub phase: Option<String>,
    pub reads: Option<String>,
    pub fails: Option<String>,
    pub changes: bool,
    pub unsupported: Option<String>,
}

/// An errno name key (`EINVAL`).
fn errno(i: &CheckArgs, key: &str) -> Result<Option<String>, ScenarioError> {
    let Some(f) = i.get::<String>(key)? else {
        return Ok(None);
    };
    let name = f.get_ref();
    if name.len() > 1 && name.starts_with('E') && name.bytes().all(|b| b.is_ascii_uppercase()) {
        Ok(Some(f.into_inner()))
    } else {
        Err(i.err(
            f.span(),
            format!("{key} must be an errno name such as EINVAL"),
        ))
    }
}

pub fn parse(i: &CheckArgs) -> Result<Check, ScenarioError> {
    let fails = errno(i, "fails")?;
    let reads = i.one_line("reads")?;
    if fails.is_some() && reads.is_some() {
        return Err(i.err(
            i.span(),
            "a failed write reads nothing new: give reads or fails",
        ));
    }
    Ok(Check::new(Knob {
        cgroup: match i.get::<String>("cgroup")? {
            Some(c) if c.get_ref() == "/" => "/".to_string(),
            _ => i.cgroup("cgroup")?,
        },
        files: match i.get::<String>("file") {
            Ok(Some(f)) => vec![f.into_inner()],
            _ => i.need::<Vec<String>>("file")?.into_inner(),
        },
        key: i.one_line("key")?,
        value: i.one_line("value")?,
        phase: i.phase()?,
        reads,
        fails,
        changes: i.get::<bool>("changes")?.is_some_and(|b| b.into_inner()),
        unsupported: errno(i, "unsupported")?,
    }))
}

impl CheckSpec for Knob {
    fn name(&self) -> String {
        let files = self.files.join(", ");
        match &self.key {
            Some(k) => format!("knob({}: {files} {k})", self.cgroup),
            None => format!("knob({}: {files})", self.cgroup),
        }
    }

    fn evaluate(&self, rec: &Record) -> CheckResult {
        let phase = self.phase.as_ref().map(|p| rec.phase_by_name(p));
        let writes: Vec<&KnobWrite> = (rec.steps.iter())
            .filter(|s| s.kind == StepKind::Set && s.cgroup == self.cgroup)
            .filter(|s| phase.is_none_or(|p| p == Some(s.phase)))
            .filter_map(|s| s.knob.as_ref())
            .filter(|k| self.files.contains(&k.file))
            .filter(|k| self.value.is_none() || k.written == self.value)
            .collect();
        if let Some(k) = writes.iter().find(|k| k.error.as_deref() == Some("ENOENT")) {
            return missing(
                self.name(),
                format!("this kernel has no {} (a knob of a later release)", k.file),
            );
        }
        if let Some(e) = &self.unsupported
            && let Some(k) = writes.iter().find(|k| k.error.as_ref() == Some(e))
        {
            return missing(
                self.name(),
                format!(
                    "{} failed with {e}: this kernel does not have it",
                    self.what(k)
                ),
            );
        }
        let writes: Vec<&KnobWrite> = (writes.into_iter())
            .filter(|k| !self.changes || k.error.is_some() || k.before != k.after)
            .collect();
        let files = self.files.join(", ");
        if writes.is_empty() {
            let changed = if self.changes {
                " changed what it read"
            } else {
                ""
            };
            return missing(
                self.name(),
                format!("no set step on {}'s {files}{changed}", self.cgroup),
            );
        }
        let page = rec.machine.page_size;
        for k in &writes {
            if let Err(why) = self.judge(k, page) {
                return CheckResult::new(
                    self.name(),
                    Outcome::Fail,
                    why.0,
                    self.expected(),
                    format!("{}: {}", self.what(k), why.1),
                );
            }
        }
        let seen: Vec<String> = writes.iter().map(|k| self.seen(k)).collect();
        CheckResult::new(
            self.name(),
            Outcome::Pass,
            seen.join("; "),
            self.expected(),
            format!(
                "{} set step(s) on {}'s {files} ended as expected",
                writes.len(),
                self.cgroup
            ),
        )
    }
}

impl Knob {
    fn expected(&self) -> String {
        match (&self.fails, &self.reads) {
            (Some(e), _) => format!("the write fails with {e}"),
            (None, Some(r)) => format!("succeeds, then reads {r}"),
            (None, None) => "the write succeeds".into(),
        }
    }

    /// What the step did, in words.
    fn what(&self, k: &KnobWrite) -> String {
        match &k.written {
            Some(v) => format!("writing {v:?} to {}'s {}", self.cgroup, k.file),
            None => format!("reading {}'s {}", self.cgroup, k.file),
        }
    }

    /// How the write ended and what the file read after it.
    fn seen(&self, k: &KnobWrite) -> String {
        let after = self.value_of(k.after.as_deref()).unwrap_or("-");
        match &k.error {
            Some(e) => format!("failed with {e}"),
            None => format!("reads {after}"),
        }
    }

    /// The file's text, or its `key` line's value.
    fn value_of<'a>(&self, text: Option<&'a str>) -> Option<&'a str> {
        let text = text?;
        match &self.key {
            None => Some(text.trim()),
            Some(key) => text.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == key).then_some(v.trim())
            }),
        }
    }

    /// Ok, or (actual, why) for a write that did not end as expected.
    fn judge(&self, k: &KnobWrite, page: u64) -> Result<(), (String, String)> {
        match (&self.fails, &k.error) {
            (Some(want), Some(got)) if want == got => return Ok(()),
            (Some(want), Some(got)) => {
                return Err((
                    format!("failed with {got}"),
                    format!("the kernel refused it with {got}, not {want}"),
                ));
            }
            (Some(want), None) => {
                return Err((
                    "succeeded".into(),
                    format!("the kernel took it, where it should refuse it with {want}"),
                ));
            }
            (None, Some(got)) => {
                return Err((
                    format!("failed with {got}"),
                    format!("the kernel refused it with {got}"),
                ));
            }
            (None, None) => {}
        }
        let Some(want) = &self.reads else {
            return Ok(());
        };
        let after = self.value_of(k.after.as_deref()).unwrap_or("");
        if reads_as(want, k.written.as_deref(), after, page) {
            Ok(())
        } else {
            Err((
                format!("reads {after:?}"),
                format!("the file then read {after:?}, not {want}"),
            ))
        }
    }
}

/// Whether `after` is what `want` (`max`, `written`, `page` or a literal) says for a write of
/// `written`.
fn reads_as(want: &str, written: Option<&str>, after: &str, page: u64) -> bool {
    let is_max = |s: &str| s == "max" || s.parse::<u64>().is_ok_and(|n| n >= 1 << 62);
    let bytes = |s: &str| parse_size(s).ok();
    match want {
        "max" => is_max(after),
        "written" | "page" => match written.map(str::trim) {
            Some("max" | "-1") => is_max(after),
            Some(w) => match (bytes(w), bytes(after)) {
                (Some(w), Some(a)) if want == "written" => w == a,
                (Some(w), Some(a)) => a == w.div_ceil(page) * page,
                _ => false,
            },
            None => false,
        },
        literal => match (bytes(literal), bytes(after)) {
            (Some(l), Some(a)) => l == a,
            _ => literal == after,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_as_follows_the_kinds_of_expectation() {
        assert!(reads_as("max", None, "max", 4096));
        assert!(reads_as("max", None, "9223372036854771712", 4096));
        assert!(!reads_as("max", None, "4194304", 4096));
        assert!(reads_as("written", Some("4M"), "4194304", 4096));
        assert!(!reads_as("written", Some("4M"), "4190208", 4096));
        assert!(reads_as("written", Some("-1"), "9223372036854771712", 4096));
        assert!(!reads_as("page", Some("5000"), "4096", 4096));
        assert!(reads_as("page", Some("5000"), "8192", 4096));
        assert!(reads_as("page", Some("8192"), "8192", 4096));
        assert!(!reads_as("page", Some("5000"), "5000", 4096));
        assert!(!reads_as("page", Some("5000"), "12288", 4096));
        assert!(reads_as("4096", Some("1"), "4096", 4096));
        assert!(!reads_as("4096", Some("1"), "0", 4096));
        assert!(reads_as("0", None, "0", 4096));
    }
}
