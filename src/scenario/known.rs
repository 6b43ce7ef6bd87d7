//! `[[known]]` tables: the checks a scenario expects to fail on some kernels, resolved.

use toml::Spanned;

use super::raw::RawScenario;
use super::{Check, ScenarioError};
use crate::model::source::Text;
use crate::model::{KnownIssue, Release, Version};

/// `[[known]]`: each names a check of the scenario (a result name or a kind), releases as dotted
/// numbers, optionally a cgroup version the scenario runs under, and a text.
pub(super) fn known(
    cx: &Text,
    raw: &RawScenario,
    checks: &[Check],
    versions: &[Version],
) -> Result<Vec<KnownIssue>, ScenarioError> {
    let mut out = Vec::new();
    for k in &raw.known {
        let k = k.get_ref();
        let from = release(cx, &k.from)?;
        let to = k.to.as_ref().map(|r| release(cx, r)).transpose()?;
        if to.as_ref().is_some_and(|t| *t <= from) {
            return Err(cx.err(
                k.to.as_ref().expect("checked").span(),
                format!(
                    "to = {:?} is not after from = {:?}",
                    to.expect("checked").to_string(),
                    from.to_string()
                ),
            ));
        }
        let cgroup = k
            .cgroup
            .as_ref()
            .map(|c| known_version(cx, c, versions))
            .transpose()?;
        let issue = KnownIssue {
            check: k.check.get_ref().clone(),
            from,
            to,
            cgroup,
            text: cx.one_line(&k.text, "text")?,
            link: k.link.as_ref().map(|l| l.get_ref().clone()),
            matches: match &k.matches {
                Some(m) if m.get_ref().trim().is_empty() => {
                    return Err(cx.err(m.span(), "matches = \"\": name a text the failure says"));
                }
                m => m.as_ref().map(|m| m.get_ref().clone()),
            },
            borrowed_from: None,
        };
        if !checks.iter().any(|c| issue.covers(&c.name())) {
            let mut names: Vec<String> = checks.iter().map(|c| c.name()).collect();
            names.sort();
            names.dedup();
            return Err(cx.err(
                k.check.span(),
                format!(
                    "known issue of check {:?}: the scenario has no such check (its checks: {})",
                    issue.check,
                    names.join(", ")
                ),
            ));
        }
        out.push(issue);
    }
    Ok(out)
}

/// A `[[known]]` release: dotted numbers and nothing else ("6.12.118", not "6.18-rc1").
fn release(cx: &Text, r: &Spanned<String>) -> Result<Release, ScenarioError> {
    Release::parse(r.get_ref())
        .filter(|p| p.to_string() == *r.get_ref())
        .ok_or_else(|| {
            cx.err(
                r.span(),
                format!(
                    "{:?} is not a kernel release: dotted numbers such as \"6.18\" or \"6.12.118\"",
                    r.get_ref()
                ),
            )
        })
}

/// A `[[known]]` issue's `cgroup`: "v1" or "v2", one the scenario runs under.
fn known_version(
    cx: &Text,
    c: &Spanned<String>,
    versions: &[Version],
) -> Result<Version, ScenarioError> {
    let v = match c.get_ref().as_str() {
        "v1" => Version::V1,
        "v2" => Version::V2,
        other => {
            return Err(cx.err(c.span(), format!("cgroup {other:?}: \"v1\" or \"v2\"")));
        }
    };
    if !versions.is_empty() && !versions.contains(&v) {
        return Err(cx.err(
            c.span(),
            format!(
                "cgroup {}: the scenario does not run under it (requires.cgroup)",
                v.as_str()
            ),
        ));
    }
    Ok(v)
}
