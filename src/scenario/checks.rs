//! Reading a `[[check]]` table: its `kind` picks an entry of the check table
//! (`crate::check::KINDS`), whose parser reads the other keys (`crate::check::CheckArgs`) against
//! an outline of the scenario built here.

use toml::Spanned;

use super::raw::RawCheck;
use super::{CgroupSpec, Phase, ScenarioError, Step};
use crate::check::{Check, CheckArgs, KINDS, Outline, PhaseOutline};
use crate::model::Version;
use crate::model::source::{Keys, Text};

/// What checks may refer to: the declared groups, the phases with their step kinds and held
/// tasks, the cgroup versions.
pub(super) fn outline(cgroups: &[CgroupSpec], phases: &[Phase], versions: &[Version]) -> Outline {
    Outline {
        groups: cgroups.iter().map(|c| c.name.clone()).collect(),
        phases: phases
            .iter()
            .map(|p| PhaseOutline {
                name: p.name.clone(),
                steps: p.steps.iter().map(Step::kind).collect(),
                holds: p
                    .steps
                    .iter()
                    .filter_map(|s| match s {
                        Step::Hold(h) => Some(h.task.clone()),
                        _ => None,
                    })
                    .collect(),
                not_quick: p.quick_repeat == Some(0),
            })
            .collect(),
        versions: versions.to_vec(),
    }
}

/// The `[[check]]` tables, each marked as one the scenario exists for or not (see
/// `check::purposes`).
pub(super) fn resolve_checks(
    text: Text,
    raw: &[Spanned<RawCheck>],
    outline: &Outline,
) -> Result<Vec<Check>, ScenarioError> {
    let (mut checks, mut explicit) = (Vec::new(), Vec::new());
    for c in raw {
        let (check, purpose) = resolve_check(text, c, outline)?;
        checks.push(check);
        explicit.push(purpose);
    }
    crate::check::purposes(&mut checks, &explicit);
    for v in &outline.versions {
        let mut here = (checks.iter()).filter(|c| c.only.is_none_or(|o| o == *v));
        let (any, purpose) = (here.clone().next().is_some(), here.any(|c| c.purpose));
        if any && !purpose {
            return Err(text.err(
                raw[0].span(),
                format!(
                    "under cgroup {}, no check is one the scenario exists for (every one says purpose = false, or is a performance check beside others): mark one purpose = true",
                    v.as_str()
                ),
            ));
        }
    }
    Ok(checks)
}

/// One `[[check]]` table: its check, and its `purpose` key when set.
fn resolve_check(
    text: Text,
    c: &Spanned<RawCheck>,
    outline: &Outline,
) -> Result<(Check, Option<bool>), ScenarioError> {
    let table = c.get_ref();
    let Some((_, kind)) = table.iter().find(|(k, _)| k.get_ref() == "kind") else {
        return Err(text.err(c.span(), "missing field `kind`"));
    };
    let kind_name: String = text.typed(kind)?;
    let Some(entry) = KINDS.iter().find(|k| k.kind == kind_name) else {
        let known: Vec<&str> = KINDS.iter().map(|k| k.kind).collect();
        return Err(text.err(
            kind.span(),
            format!("unknown check {kind_name:?} (known: {})", known.join(", ")),
        ));
    };
    let keys = Keys {
        text,
        table,
        span: c.span(),
        what: format!("check {kind_name:?}"),
        tag: "kind",
    };
    let mut names: Vec<&str> = entry.keys.iter().map(|k| k.name).collect();
    names.extend(["promise", "purpose", "versions"]);
    keys.only(&names)?;
    let declared = promises(&keys, outline)?;
    let purpose = keys.get::<bool>("purpose")?.map(Spanned::into_inner);
    // A check only about one version's promises, in a scenario of both, runs under that one:
    // its counters are read against that version's files; `versions` says otherwise.
    let only = match versions(&keys, outline)? {
        Some(v) if v.len() == 1 && outline.versions.len() > 1 => Some(v[0]),
        Some(_) => None,
        None => only_version(&declared, outline),
    };
    let narrowed = Outline {
        versions: only.map_or_else(|| outline.versions.clone(), |v| vec![v]),
        ..outline.clone()
    };
    let args = CheckArgs {
        keys,
        outline: &narrowed,
        allowed: entry.keys,
    };
    let mut check = (entry.parse)(&args)?;
    check.promises = declared;
    check.only = only;
    Ok((check, purpose))
}

/// The `versions` key: the cgroup versions a check runs under, each one the scenario runs under
/// (`versions = ["v1", "v2"]` for a check whose promise is one version's but whose counters the
/// other version's files print too).
fn versions(keys: &Keys, outline: &Outline) -> Result<Option<Vec<Version>>, ScenarioError> {
    let Some(list) = keys.get::<Vec<String>>("versions")? else {
        return Ok(None);
    };
    let mut out = Vec::new();
    for v in list.get_ref() {
        let version = match v.as_str() {
            "v1" => Version::V1,
            "v2" => Version::V2,
            other => {
                return Err(keys.text.err(
                    list.span(),
                    format!("unknown cgroup version {other:?} (v1 or v2)"),
                ));
            }
        };
        if !outline.versions.contains(&version) {
            return Err(keys.text.err(
                list.span(),
                format!("the scenario does not run under cgroup {v}"),
            ));
        }
        out.push(version);
    }
    Ok(Some(out))
}

/// The one cgroup version all `declared` promises are made for, where the scenario runs under
/// more than one.
fn only_version(
    declared: &[&'static crate::model::contract::Contract],
    outline: &Outline,
) -> Option<Version> {
    let mut versions: Vec<Version> = declared.iter().map(|p| version_of(p)).collect();
    versions.dedup();
    (versions.len() == 1 && outline.versions.len() > 1).then(|| versions[0])
}

fn version_of(p: &crate::model::contract::Contract) -> Version {
    match p.doc {
        crate::model::contract::Doc::V1 => Version::V1,
        crate::model::contract::Doc::V2 => Version::V2,
    }
}

/// The documented promises a `[[check]]` says it judges (`promise = "v2.max.lowered"`, or a
/// list): contracts of `crate::model::contract`, each made for a cgroup version the scenario
/// runs under.
fn promises(
    keys: &Keys,
    outline: &Outline,
) -> Result<Vec<&'static crate::model::contract::Contract>, ScenarioError> {
    // Spans of a list's items are lost when it is read again: errors point at the key's value.
    let ids: Vec<toml::Spanned<String>> = match keys.get::<String>("promise") {
        Ok(Some(one)) => vec![one],
        Ok(None) => return Ok(Vec::new()),
        Err(_) => match keys.get::<Vec<String>>("promise")? {
            Some(list) => (list.get_ref().iter())
                .map(|id| toml::Spanned::new(list.span(), id.clone()))
                .collect(),
            None => Vec::new(),
        },
    };
    let mut out = Vec::new();
    for id in ids {
        let Some(c) = crate::model::contract::get(id.get_ref()) else {
            return Err(keys.text.err(
                id.span(),
                format!(
                    "unknown promise {:?} (memcgtest contracts lists them)",
                    id.get_ref()
                ),
            ));
        };
        let version = version_of(c);
        if !outline.versions.contains(&version) {
            return Err(keys.text.err(
                id.span(),
                format!(
                    "promise {:?} is made for cgroup {}, which the scenario does not run under",
                    c.id,
                    version.as_str()
                ),
            ));
        }
        out.push(c);
    }
    Ok(out)
}
