//! Known issues: a check a scenario expects to fail on some kernels (a kernel behaviour found,
//! reported and not fixed yet). A failure it covers is a known failure (KTAP `# XFAIL`, JUnit
//! skipped, a KCIDB issue and incident) and exits 0 unless `--strict`; where the issue applies
//! and its check passed, the issue is reported as fixed.

use serde::{Deserialize, Serialize};

use super::Version;

/// A kernel release as dotted numbers ("6.18.44-cloud-amd64" is 6.18.44). Releases compare
/// number by number, a shorter one first: 6.18 <= 6.18.44 < 6.19.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Release(pub Vec<u32>);

impl Release {
    /// The leading dotted numbers of `s`; None when it does not start with one.
    pub fn parse(s: &str) -> Option<Release> {
        let head: &str = s
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .next()
            .unwrap_or("");
        let nums: Option<Vec<u32>> = head
            .split('.')
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().ok())
            .collect();
        nums.filter(|n| !n.is_empty()).map(Release)
    }
}

impl std::fmt::Display for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|n| n.to_string()).collect();
        f.write_str(&parts.join("."))
    }
}

/// One `[[known]]` entry of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnownIssue {
    /// A result name ("limit-counters(p)") or a check kind ("limit-counters"): the checks it
    /// covers.
    pub check: String,
    /// The first release with the issue (a release counts from its first number on: "6.18"
    /// covers 6.18.0 and 6.18.44).
    pub from: Release,
    /// The first release without it, if known.
    pub to: Option<Release>,
    /// Only under this cgroup version.
    pub cgroup: Option<Version>,
    pub text: String,
    pub link: Option<String>,
    /// A text the failure's message must contain: the issue covers only failures that say it
    /// (a check can fail for other reasons too). An issue with one is also known to `explore`,
    /// for its generated cases' checks of the same kind.
    pub matches: Option<String>,
    /// Set when the issue is applied beyond the scenario that carries it (explore's cases): the
    /// scenario's name. Such a case passing its check says nothing about a fix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub borrowed_from: Option<String>,
}

impl KnownIssue {
    /// Whether the issue is expected on kernel `release` under cgroup `version`.
    pub fn applies(&self, release: &str, version: Option<Version>) -> bool {
        let Some(r) = Release::parse(release) else {
            return false;
        };
        // 6.18.44 is within "6.18": compare only as many numbers as the bound has.
        let within_from =
            r.0.iter().take(self.from.0.len()).cmp(self.from.0.iter()) >= std::cmp::Ordering::Equal;
        let before_to = self
            .to
            .as_ref()
            .is_none_or(|t| r.0.iter().take(t.0.len()).cmp(t.0.iter()) == std::cmp::Ordering::Less);
        within_from && before_to && self.cgroup.is_none_or(|c| Some(c) == version)
    }

    /// Whether the check result `name` ("kind(args)") is one it covers.
    pub fn covers(&self, name: &str) -> bool {
        name == self.check
            || (!self.check.contains('(')
                && name
                    .strip_prefix(&self.check)
                    .is_some_and(|r| r.starts_with('(')))
    }

    /// Whether it covers this failure: the check's name, and the text it must contain (in the
    /// failure's actual figure or its explanation).
    pub fn covers_failure(&self, name: &str, actual: &str, detail: &str) -> bool {
        self.covers(name)
            && self
                .matches
                .as_ref()
                .is_none_or(|m| actual.contains(m.as_str()) || detail.contains(m.as_str()))
    }

    /// The same issue for any check of its kind ("limit-counters(g)" becomes "limit-counters"),
    /// borrowed from `scenario`: how `explore` applies it to its generated cases.
    pub fn for_kind(&self, scenario: &str) -> KnownIssue {
        let kind = self.check.split('(').next().unwrap_or(&self.check);
        KnownIssue {
            check: kind.to_string(),
            borrowed_from: Some(scenario.to_string()),
            ..self.clone()
        }
    }

    /// A stable id for reports (KCIDB issues): the scenario, the check and the first release.
    pub fn id(&self, scenario: &str) -> String {
        let clean: String = format!("{scenario}-{}-{}", self.check, self.from)
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        clean
    }

    /// The issue in one line: its text, the kernels and its link.
    pub fn describe(&self) -> String {
        let range = match &self.to {
            Some(t) => format!("{} to before {t}", self.from),
            None => format!("{} on", self.from),
        };
        let cg = self
            .cgroup
            .map(|c| format!(", cgroup {}", c.as_str()))
            .unwrap_or_default();
        let link = self
            .link
            .as_ref()
            .map(|l| format!(" ({l})"))
            .unwrap_or_default();
        let from = self
            .borrowed_from
            .as_ref()
            .map(|s| format!("; the known issue of scenario {s}"))
            .unwrap_or_default();
        format!("{} [kernels {range}{cg}{from}]{link}", self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(from: &str, to: Option<&str>, cg: Option<Version>) -> KnownIssue {
        KnownIssue {
            check: "limit-counters".into(),
            from: Release::parse(from).unwrap(),
            to: to.map(|t| Release::parse(t).unwrap()),
            cgroup: cg,
            text: "t".into(),
            link: None,
            matches: None,
            borrowed_from: None,
        }
    }

    #[test]
    fn releases_are_ranges_of_dotted_numbers() {
        assert_eq!(
            Release::parse("6.18.44-cloud-amd64"),
            Some(Release(vec![6, 18, 44]))
        );
        assert_eq!(
            Release::parse("6.1.0-57-cloud-amd64"),
            Some(Release(vec![6, 1, 0]))
        );
        assert_eq!(Release::parse("x6.1"), None);
        let k = issue("6.18", Some("6.19"), Some(Version::V1));
        assert!(k.applies("6.18.44", Some(Version::V1)));
        assert!(k.applies("6.18", Some(Version::V1)));
        assert!(!k.applies("6.18.44", Some(Version::V2)));
        assert!(!k.applies("6.12.118", Some(Version::V1)));
        assert!(!k.applies("6.19.1", Some(Version::V1)));
        assert!(!k.applies("garbage", Some(Version::V1)));
        let open = issue("6.12.100", None, None);
        assert!(open.applies("6.12.118", Some(Version::V2)));
        assert!(open.applies("7.0", None));
        assert!(!open.applies("6.12.99", None));
    }

    #[test]
    fn an_issue_covers_its_result_name_or_every_result_of_its_kind() {
        let mut k = issue("6.18", None, None);
        assert!(k.covers("limit-counters(p)"));
        assert!(!k.covers("limit-counters-x(p)"));
        assert!(!k.covers("under-limit(p)"));
        k.check = "limit-counters(p)".into();
        assert!(k.covers("limit-counters(p)"));
        assert!(!k.covers("limit-counters(p/a)"));
    }

    #[test]
    fn an_issue_with_a_text_covers_only_the_failures_that_say_it() {
        let mut k = issue("6.18", None, None);
        k.check = "limit-counters(g)".into();
        k.matches = Some("no charge failed".into());
        assert!(k.covers_failure(
            "limit-counters(g)",
            "0 failed",
            "yet no charge failed at it"
        ));
        assert!(!k.covers_failure("limit-counters(g)", "7 failed", "failcnt fell by 3"));
        assert!(!k.covers_failure("limit-counters(h)", "", "no charge failed"));
        let any = k.for_kind("memsw-failcnt");
        assert!(any.covers_failure("limit-counters(g0/g1)", "", "no charge failed"));
        assert!(!any.covers_failure("under-limit(g0)", "", "no charge failed"));
    }
}
