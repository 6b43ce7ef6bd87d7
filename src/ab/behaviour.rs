//! `ab --behaviour`: the boots' observables read back from their report directories and judged
//! by `compare::behaviour`.

use std::path::PathBuf;

use super::Side;
use crate::compare::behaviour::{self, Boot, NOISE};
use crate::model::behaviour::Change;

/// The boots an amount's shift needs a side to count (`SHIFT_BOOTS`): more than the first set
/// of 3 or 4 rounds has, so a shift that set finds makes the second set run (see
/// [`FIRST_SET`]) and counts only over the boots of both.
pub const POOLED: usize = behaviour::SHIFT_BOOTS;
/// The boots a shift needs a side in the first set to make the second set run.
pub const FIRST_SET: usize = behaviour::MIN_BOOTS;

/// The changes between the base's and the new kernel's boots (`dirs`: each counted boot's side
/// and report directory), an amount's shift counted only with `shift_boots` boots a side, and
/// how many observables were judged.
pub fn judge(dirs: &[(Side, PathBuf)], shift_boots: usize) -> (Vec<Change>, usize) {
    // A boot whose report directory cannot be read (the guest's report failed to write) shows
    // nothing: it counts for no observable, and says why.
    let side = |s: Side| -> Vec<Boot> {
        (dirs.iter().filter(|(x, _)| *x == s))
            .filter_map(|(_, d)| {
                behaviour::load(d)
                    .map_err(|e| eprintln!("memcgtest ab: behaviour: {e:#}; that boot is left out"))
                    .ok()
            })
            .collect()
    };
    behaviour::judge(&side(Side::Base), &side(Side::New), NOISE, shift_boots)
}
