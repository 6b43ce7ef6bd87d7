//! A scenario file's text as its readers use it: errors that point at a line and column, and
//! typed values read from the spans of the TOML the file holds.

use std::ops::Range;
use std::time::Duration;

use toml::Spanned;

use super::error::ScenarioError;
use super::units::{parse_duration_within, parse_size};

/// The largest size a scenario may give: 1 TiB (no memcg test writes or holds more, and sums of
/// sizes cannot overflow).
pub const MAX_SIZE: u64 = 1 << 40;

/// One scenario file: its name (for errors) and its text.
#[derive(Debug, Clone, Copy)]
pub struct Text<'a> {
    pub file: &'a str,
    pub text: &'a str,
}

impl Text<'_> {
    /// An error at the byte range `span` of the file.
    pub fn err(&self, span: Range<usize>, msg: impl Into<String>) -> ScenarioError {
        let (line, col) = line_col(self.text, span.start);
        ScenarioError {
            file: self.file.to_string(),
            line,
            col,
            msg: msg.into(),
        }
    }

    /// A size of at most `MAX_SIZE`.
    pub fn size(&self, s: &Spanned<String>) -> Result<u64, ScenarioError> {
        match parse_size(s.get_ref()).map_err(|m| self.err(s.span(), m))? {
            n if n > MAX_SIZE => {
                Err(self.err(s.span(), format!("{:?} is more than 1 TiB", s.get_ref())))
            }
            n => Ok(n),
        }
    }

    /// A size that must not be 0 (`key` names it in the message).
    pub fn positive_size(&self, s: &Spanned<String>, key: &str) -> Result<u64, ScenarioError> {
        match self.size(s)? {
            0 => Err(self.err(s.span(), format!("{key} must be more than 0"))),
            n => Ok(n),
        }
    }

    /// A value of the file as a `T`, read again from its text so that an error points into it
    /// (at the element of a list) with serde's message.
    pub fn typed<T: serde::de::DeserializeOwned>(
        &self,
        v: &Spanned<toml::Value>,
    ) -> Result<T, ScenarioError> {
        let span = v.span();
        toml::de::ValueDeserializer::parse(&self.text[span.clone()])
            .and_then(T::deserialize)
            .map_err(|e| {
                let at = e
                    .span()
                    .map_or(span.clone(), |s| span.start + s.start..span.start + s.end);
                self.err(at, e.message().trim())
            })
    }

    /// Any duration: at most a day.
    pub fn duration(&self, s: &Spanned<String>) -> Result<Duration, ScenarioError> {
        self.duration_within(s, Duration::ZERO)
    }

    /// A duration of at least `min` and at most a day.
    pub fn duration_within(
        &self,
        s: &Spanned<String>,
        min: Duration,
    ) -> Result<Duration, ScenarioError> {
        parse_duration_within(s.get_ref(), min).map_err(|m| self.err(s.span(), m))
    }

    /// Free text that reaches reports (KTAP diagnostics, one line each): no control characters
    /// (a newline would forge KTAP lines such as `ok 1 forged-pass`), at most 200 characters.
    pub fn one_line(&self, s: &Spanned<String>, key: &str) -> Result<String, ScenarioError> {
        let t = s.get_ref();
        if t.chars().any(char::is_control) {
            return Err(self.err(
                s.span(),
                format!("{key} must be one line without control characters"),
            ));
        }
        if t.chars().count() > 200 {
            return Err(self.err(s.span(), format!("{key} is longer than 200 characters")));
        }
        Ok(t.clone())
    }

    /// A /proc/vmstat key: [a-z0-9_].
    pub fn vmstat_key(&self, s: &Spanned<String>) -> Result<String, ScenarioError> {
        let t = s.get_ref();
        if t.is_empty()
            || !t
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(self.err(
                s.span(),
                format!("{t:?} is not a /proc/vmstat key ([a-z0-9_])"),
            ));
        }
        Ok(t.clone())
    }
}

/// A name as reports print it: non-empty [A-Za-z0-9_-].
pub fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, col)
}

/// A key a kind of step or check takes: the one list its reader refuses other keys against, and
/// the references are generated from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub name: &'static str,
    /// The step cannot do without it (the reference marks it).
    pub required: bool,
    /// What it holds, and its default when optional.
    pub doc: &'static str,
}

pub const fn req(name: &'static str, doc: &'static str) -> Key {
    Key {
        name,
        required: true,
        doc,
    }
}

pub const fn opt(name: &'static str, doc: &'static str) -> Key {
    Key {
        name,
        required: false,
        doc,
    }
}

/// The Markdown table of a kind's keys for the references; `tag` names the key every table has.
pub fn key_table(keys: &[Key], tag: &str) -> String {
    if keys.is_empty() {
        return format!("It takes no keys but `{tag}`.\n");
    }
    let mut s = String::from("| key | | meaning |\n|---|---|---|\n");
    for k in keys {
        s += &format!(
            "| `{}` | {} | {} |\n",
            k.name,
            if k.required { "required" } else { "optional" },
            k.doc.replace('|', "\\|")
        );
    }
    s
}

/// A table of a scenario file as written (`[[check]]`, a step): its keys and values with their
/// spans, read by the kind its `kind` or `action` key names.
pub type Table = std::collections::BTreeMap<Spanned<String>, Spanned<toml::Value>>;

/// What a kind's reader needs of a `Table`: typed values by key, and an error at any key it does
/// not take. `what` names the table in messages (`check "settles"`, `action "write"`).
pub struct Keys<'a> {
    pub text: Text<'a>,
    pub table: &'a Table,
    /// The table's own span (errors about a missing key point there).
    pub span: Range<usize>,
    pub what: String,
    /// The key that picks the kind (`kind`, `action`): never foreign.
    pub tag: &'static str,
}

impl Keys<'_> {
    /// Refuses any key set that is not in `keys` (the first in the file).
    pub fn only(&self, keys: &[&str]) -> Result<(), ScenarioError> {
        let mut foreign: Vec<(&Spanned<String>, &Spanned<toml::Value>)> = self
            .table
            .iter()
            .filter(|(k, _)| k.get_ref() != self.tag && !keys.contains(&k.get_ref().as_str()))
            .collect();
        foreign.sort_by_key(|(k, _)| k.span().start);
        match foreign.first() {
            Some((k, v)) => Err(self.text.err(
                v.span(),
                format!("{} takes no {:?}", self.what, k.get_ref()),
            )),
            None => Ok(()),
        }
    }

    /// An error at `span`.
    pub fn err(&self, span: Range<usize>, msg: impl Into<String>) -> ScenarioError {
        self.text.err(span, msg)
    }

    /// The value of `key` as a `T`, if set; a value of another type is an error at the value.
    pub fn get<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Option<Spanned<T>>, ScenarioError> {
        let Some((_, v)) = self.table.iter().find(|(k, _)| k.get_ref() == key) else {
            return Ok(None);
        };
        Ok(Some(Spanned::new(v.span(), self.text.typed(v)?)))
    }

    /// The value of a key the kind cannot do without.
    pub fn need<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Spanned<T>, ScenarioError> {
        self.get(key)?.ok_or_else(|| {
            self.text
                .err(self.span.clone(), format!("{} needs {key:?}", self.what))
        })
    }

    /// A size (`64M`) of at most 1 TiB, if set.
    pub fn size(&self, key: &str) -> Result<Option<u64>, ScenarioError> {
        self.get::<String>(key)?
            .map(|s| self.text.size(&s))
            .transpose()
    }

    /// A duration of at most a day, if set.
    pub fn duration(&self, key: &str) -> Result<Option<Duration>, ScenarioError> {
        self.get::<String>(key)?
            .map(|d| self.text.duration(&d))
            .transpose()
    }

    /// A flag, false when not set.
    pub fn flag(&self, key: &str) -> Result<bool, ScenarioError> {
        Ok(self.get::<bool>(key)?.is_some_and(|b| b.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_are_one_based() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("ab", 99), (1, 3));
    }
}
