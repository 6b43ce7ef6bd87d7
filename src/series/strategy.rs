//! Which patches of a series are booted. `every`: each one, in order. `head`: every patch is
//! built first (a series must build at every step), then the base and the head are booted; a
//! head that is green vouches for the patches below it, a red one is bisected to the first
//! patch whose runs fail what the base's did not, by the same rules `every` judges by.

use anyhow::Result;

use super::build::{Builder, Built};
use super::git::Patch;
use super::verdict::{self, Cost, PatchReport, Seen};
use super::{Options, boot_layouts, build_patch, unrun};
use crate::vm;

/// Each patch after the base (`reports` holds it, booted) built and booted, in order.
pub(super) fn every(
    o: &Options,
    vm: &mut vm::Options,
    b: &Builder,
    patches: &[Patch],
    reports: &mut Vec<PatchReport>,
    cost: &mut Cost,
) -> Result<()> {
    let n = patches.len() - 1;
    for p in &patches[1..] {
        let mut r = unrun(p, build_patch(o, b, p, n)?);
        boot_layouts(o, vm, b, &mut r, n, cost)?;
        reports.push(r);
    }
    Ok(())
}

/// Each patch after the base (`reports` holds it, booted) built; the head (the last patch
/// before the first that does not build) and, when it is red, the patches bisection picks,
/// booted.
pub(super) fn head(
    o: &Options,
    vm: &mut vm::Options,
    b: &Builder,
    patches: &[Patch],
    reports: &mut Vec<PatchReport>,
    cost: &mut Cost,
) -> Result<()> {
    let n = patches.len() - 1;
    for p in &patches[1..] {
        reports.push(unrun(p, build_patch(o, b, p, n)?));
    }
    let built = |r: &PatchReport| matches!(r.build, Built::Image { .. });
    let head = reports
        .iter()
        .position(|r| !built(r))
        .unwrap_or(reports.len())
        - 1;
    if head == 0 {
        return Ok(());
    }
    let mut seen: Vec<Option<Seen>> = vec![None; head + 1];
    seen[0] = Some(Seen::Green);
    let mut next = Some(head);
    while let Some(i) = next {
        boot_layouts(o, vm, b, &mut reports[i], n, cost)?;
        let s = look(&reports[i], &reports[0]);
        eprintln!(
            "memcgtest series: {}: {}",
            what_seen(&reports[i], n),
            word(s)
        );
        seen[i] = Some(s);
        if i == head && s != Seen::Red {
            break;
        }
        next = verdict::next_to_boot(&seen);
    }
    Ok(())
}

/// What a patch's runs say against the base's.
fn look(r: &PatchReport, base: &PatchReport) -> Seen {
    if verdict::red_against(r, base) {
        Seen::Red
    } else if verdict::tested(r) {
        Seen::Green
    } else {
        Seen::Untestable
    }
}

fn what_seen(r: &PatchReport, n: usize) -> String {
    format!("#{}/{n} {}", r.patch.index, r.patch.short())
}

fn word(s: Seen) -> &'static str {
    match s {
        Seen::Green => "green against the base",
        Seen::Red => "red against the base",
        Seen::Untestable => "untestable (bisection goes around it)",
    }
}
