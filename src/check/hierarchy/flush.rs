//! When a stale parent was flushed, as all its counters tell. A memcg flush moves every statistic
//! of a group at once, so a parent read at one sample shows what its parts summed to at one
//! moment, the same for every counter. A counter whose parent value fits only moments that its
//! other counters rule out is not stale but wrong: a statistic not passed to the ancestors shows
//! an old value while the parent's other counters are fresh.

use super::parts::{ANCESTOR_LAG, Parts};
use crate::check::STALE_WINDOW;
use crate::model::Record;

/// The parent's flushed counters of one hierarchy check.
pub(super) struct Flush<'a> {
    pub(super) parts: Vec<&'a Parts>,
}

impl Flush<'_> {
    /// The first row of the ANCESTOR_LAG window that ends at row `r`.
    fn window(rec: &Record, r: usize) -> usize {
        let t = rec.series.t[r];
        (0..=r)
            .rev()
            .take_while(|&q| t - rec.series.t[q] <= ANCESTOR_LAG)
            .last()
            .unwrap_or(r)
    }

    /// For each row q of the window ending at `r` (oldest first): whether the parent's value of
    /// `x` at r is what its parts summed to between q and q + 1 (at r: now), within `x`'s
    /// tolerance at r.
    fn feasible(rec: &Record, x: &Parts, r: usize) -> Vec<bool> {
        let pv = rec.series.get(r, x.p);
        let tol = x.tol(rec, r);
        (Self::window(rec, r)..=r)
            .map(|q| {
                let (a, b) = (x.sum(rec, q), x.sum(rec, (q + 1).min(r)));
                a.min(b) - tol <= pv && pv <= a.max(b) + tol
            })
            .collect()
    }

    /// How long ago the parent's `x` at row `r` was what its parts summed to, if the parent is
    /// stale: the latest such moment in the window, and once the gap has lasted `STALE_WINDOW`
    /// (a flush racing another shows parts of moments apart for a while), one that every other
    /// counter whose parent value rules some moments out allows too. Where those disagree among
    /// themselves they tell nothing.
    pub(super) fn stale_by(&self, rec: &Record, x: &Parts, r: usize, since: f64) -> Option<f64> {
        let lo = Self::window(rec, r);
        let fx = Self::feasible(rec, x, r);
        let mut common = vec![true; fx.len()];
        if rec.series.t[r] - since > STALE_WINDOW {
            for y in self.parts.iter().filter(|y| !std::ptr::eq(**y, x)) {
                let fy = Self::feasible(rec, y, r);
                if fy.iter().all(|&b| b) {
                    continue;
                }
                common.iter_mut().zip(&fy).for_each(|(c, f)| *c &= *f);
            }
            if !common.iter().any(|&b| b) {
                common = vec![true; fx.len()];
            }
        }
        let t = rec.series.t[r];
        (lo..r)
            .rev()
            .find(|&q| fx[q - lo] && common[q - lo])
            .map(|q| t - rec.series.t[q])
    }
}
