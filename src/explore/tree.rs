//! A case's group tree: drawn at random, and the questions the strategies, motifs and declared
//! checks ask of it (which groups are leaves, the least cap above a group, where protection can
//! be judged).

use super::dice::Dice;
use super::machine::MIB;
use super::machine::Machine;
use crate::model::Version;
use crate::model::record::within;
use crate::scenario::CgroupSpec;

/// A random tree: 1..6 groups, 3 levels at most, names g0, g0/g1, ...; some with limits.
pub fn tree(d: &mut Dice, m: &Machine) -> Vec<CgroupSpec> {
    let mut groups: Vec<CgroupSpec> = Vec::new();
    let n = d.range(1, 6);
    for i in 0..n {
        let parents: Vec<String> = groups
            .iter()
            .filter(|g| g.name.matches('/').count() < 2)
            .map(|g| g.name.clone())
            .collect();
        let name = if parents.is_empty() || d.chance(35) {
            format!("g{i}")
        } else {
            format!("{}/g{i}", d.pick(&parents))
        };
        let g = knobs(d, m, &groups, name);
        groups.push(g);
    }
    groups
}

/// A new group `name` with its knobs drawn: memory.max; under v2 memory.high, low, min and
/// oom.group; where it has a limit, no swap or a swap limit.
fn knobs(d: &mut Dice, m: &Machine, groups: &[CgroupSpec], name: String) -> CgroupSpec {
    let budget = m.budget() / MIB;
    let mut g = CgroupSpec {
        name,
        swap: true,
        ..Default::default()
    };
    if d.chance(40) {
        g.limit = Some(d.mib(16, budget));
    }
    if m.version == Version::V2 {
        if d.chance(15) {
            g.high = Some(d.mib(16, budget));
        }
        if d.chance(10) {
            g.low = Some(d.mib(8, budget / 2));
        }
        if d.chance(10) {
            let min = d.mib(8, budget / 2);
            g.min = Some(min.min(min_room(groups, &g.name))).filter(|&m| m >= 8 * MIB);
        }
        if d.chance(10) {
            g.oom_group = true;
        }
    }
    if g.limit.is_some() && d.chance(25) {
        g.swap = false;
    } else if m.swap && g.limit.is_some() && d.chance(20) {
        g.swap_max = Some(d.mib(1, 16));
    }
    g
}

/// The least of a group's own memory.max and memory.high, where it has one.
pub fn own_cap(a: &CgroupSpec) -> Option<u64> {
    [a.limit, a.high].into_iter().flatten().min()
}

/// Whether no group lies below `g`.
pub fn is_leaf(groups: &[CgroupSpec], g: &str) -> bool {
    !groups.iter().any(|c| c.name != g && within(&c.name, g))
}

/// The leaves of the tree, in order.
pub fn leaves(groups: &[CgroupSpec]) -> Vec<String> {
    (groups.iter())
        .filter(|g| is_leaf(groups, &g.name))
        .map(|g| g.name.clone())
        .collect()
}

/// Where `protected` can judge `g`: a leaf with memory.min whose parent is where reclaim is
/// rooted (the parent has memory.max or memory.high, nothing above it does: reclaim rooted
/// higher protects the group only as far as the parent is protected; a group with groups below
/// holds its memory there, where its min reaches only as a share). Its min, its parent and the
/// parent's least limit.
pub fn protectable<'a>(groups: &'a [CgroupSpec], g: &'a CgroupSpec) -> Option<(u64, &'a str, u64)> {
    let min = g.min?;
    let (parent, _) = g.name.rsplit_once('/')?;
    let parent_cap = groups.iter().find(|a| a.name == parent).and_then(own_cap)?;
    let above = |a: &&CgroupSpec| a.name != parent && within(parent, &a.name);
    let capped_above = groups.iter().filter(above).any(|a| own_cap(a).is_some());
    (is_leaf(groups, &g.name) && !capped_above).then_some((min, parent, parent_cap))
}

/// The least memory.max or memory.high of `g` and its ancestors; u64::MAX without one.
pub fn cap_above(groups: &[CgroupSpec], g: &str) -> u64 {
    (groups.iter())
        .filter(|a| within(g, &a.name))
        .filter_map(own_cap)
        .min()
        .unwrap_or(u64::MAX)
}

/// The most memory.min a new group `g` may get: at most half of each ancestor's memory.max or
/// memory.high, less what groups below that ancestor already protect. When an ancestor's limit
/// reclaims, the protection of the groups below it counts in full (its children's effective min is
/// their own memory.min), so memory the limit cannot reclaim leaves the kernel the OOM killer, as
/// documented: a case that asked for it would be a false alarm (explore of stock 6.12, seed 11: a
/// child with min 53M under a 33M limit, its writer OOM-killed).
fn min_room(groups: &[CgroupSpec], g: &str) -> u64 {
    groups
        .iter()
        .filter(|a| a.name != g && within(g, &a.name))
        .filter_map(|a| {
            let cap = own_cap(a)?;
            Some((cap / 2).saturating_sub(protected_below(groups, &a.name)))
        })
        .min()
        .unwrap_or(u64::MAX)
}

/// The memory.min of the groups strictly below `a`.
pub fn protected_below(groups: &[CgroupSpec], a: &str) -> u64 {
    (groups.iter())
        .filter(|o| o.name != a && within(&o.name, a))
        .filter_map(|o| o.min)
        .sum()
}
