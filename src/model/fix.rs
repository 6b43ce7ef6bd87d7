//! Fix tags: the upstream kernel fixes a scenario guards, named as a `Fixes:` trailer names a
//! commit (the first 12 hex digits of its id and its subject). LTP tags its regression tests the
//! same way; a failure of a tagged scenario says which fix once cured such a failure, so the
//! developer of a patch that breaks it again knows where to look first.

use serde::{Deserialize, Serialize};

/// One upstream fix: `8a8792f600ab ("mm: memcg: fix memcg file_dirty numa stat")`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixTag {
    /// The first 12 hex digits of the mainline commit id, lower case.
    pub commit: String,
    /// The commit's subject line.
    pub subject: String,
}

impl FixTag {
    /// Parses `<12 hex digits> ("<subject>")`; the error says what is wrong.
    pub fn parse(s: &str) -> Result<FixTag, String> {
        let form = "a fix is written <12 hex digits> (\"<subject>\")";
        let (commit, rest) = s.split_once(' ').ok_or_else(|| format!("{s:?}: {form}"))?;
        if commit.len() != 12 || !commit.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')) {
            return Err(format!(
                "{commit:?} is not 12 lower-case hex digits of a commit id ({form})"
            ));
        }
        let subject = rest
            .strip_prefix("(\"")
            .and_then(|r| r.strip_suffix("\")"))
            .filter(|r| !r.trim().is_empty() && !r.contains('\n'))
            .ok_or_else(|| format!("{rest:?}: the subject goes in (\"...\") ({form})"))?;
        Ok(FixTag {
            commit: commit.to_string(),
            subject: subject.to_string(),
        })
    }
}

impl std::fmt::Display for FixTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (\"{}\")", self.commit, self.subject)
    }
}

/// The tags of a list, joined for one line.
pub fn join_fixes(fixes: &[FixTag]) -> String {
    let v: Vec<String> = fixes.iter().map(|f| f.to_string()).collect();
    v.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_a_tag() {
        let t =
            FixTag::parse("8a8792f600ab (\"mm: memcg: fix memcg file_dirty numa stat\")").unwrap();
        assert_eq!(t.commit, "8a8792f600ab");
        assert_eq!(t.subject, "mm: memcg: fix memcg file_dirty numa stat");
        assert_eq!(
            t.to_string(),
            "8a8792f600ab (\"mm: memcg: fix memcg file_dirty numa stat\")"
        );
    }

    #[test]
    fn rejects_bad_tags() {
        for bad in [
            "8a8792f600a (\"short id\")",
            "8A8792F600AB (\"upper case\")",
            "8a8792f600ab no parentheses",
            "8a8792f600ab (\"\")",
            "8a8792f600ab",
            "8a8792f600abc (\"13 digits\")",
        ] {
            assert!(FixTag::parse(bad).is_err(), "{bad}");
        }
    }
}
