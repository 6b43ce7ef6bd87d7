//! What exists while a case's steps are generated: the files, the held tasks, the page cache
//! each group surely holds. Strategies read it to draw only steps valid when they run, and
//! update it through the methods here, so the bookkeeping lives in one place.

use super::tree::{cap_above, own_cap};
use crate::model::record::within;
use crate::scenario::CgroupSpec;

/// What exists while the steps are generated: files written (and not unlinked), files created
/// for readers, held tasks (the group each is in, the anon it holds, the memory in all), and the
/// groups an `exhaust` ran in (no task may be held there: the OOM killer could take it).
#[derive(Default)]
pub struct World {
    pub files: Vec<(String, u64)>,
    pub created: Vec<(String, u64)>,
    pub tasks: Vec<Task>,
    next_file: u32,
    next_task: u32,
    pub synced: bool,
    pub exhausted: Vec<String>,
    /// (file, group) for every step that writes or dirties a file: holds-files has a truth for
    /// a group only when its subtree writes a file nobody outside it writes.
    pub writers: Vec<(String, String)>,
    /// (group, bytes) of every buffered write: page cache the group must charge.
    pub writes: Vec<(String, u64)>,
    /// (file, group, bytes) of page cache a group's writes made that is surely still there: what
    /// a `reclaim` step may ask back (see `World::cache`).
    cache: Vec<(String, String, u64)>,
    /// Every group a held task has been in: a task that moves on leaves its charges behind
    /// (charges move only with v1's move_charge_at_immigrate), anon that only swap can reclaim.
    pub held_in: Vec<String>,
}

#[derive(Clone)]
pub struct Task {
    pub name: String,
    pub group: String,
    /// The anonymous region its hold mapped, the one `advise` works on.
    pub anon: u64,
    pub bytes: u64,
    /// The written file its hold maps, if any.
    pub file: Option<String>,
}

impl World {
    /// What a new task or a transient allocation in `g` may take so that no limit above it
    /// (memory.max or memory.high of `g` or an ancestor) is more than half used by held tasks:
    /// a task the OOM killer took would be a false alarm, and one memory.high throttles only
    /// slows the case down.
    pub fn room(&self, groups: &[CgroupSpec], g: &str, budget: u64) -> u64 {
        groups
            .iter()
            .filter(|a| within(g, &a.name))
            .filter_map(|a| {
                let cap = own_cap(a)?;
                Some((cap / 2).saturating_sub(self.held_below(&a.name)))
            })
            .min()
            .unwrap_or(budget)
            .min(budget)
    }

    /// What the tasks held at or below `a` hold.
    pub fn held_below(&self, a: &str) -> u64 {
        (self.tasks.iter())
            .filter(|t| within(&t.group, a))
            .map(|t| t.bytes)
            .sum()
    }

    /// Page cache `g` surely holds: what its writes made (truncates and unlinks taken off), at
    /// most a quarter of any limit or memory.high above it (the limit reclaims the rest, and held
    /// tasks may take up to half). Cache of a group that exhausted its memory is not counted
    /// (the OOM path reclaims it first).
    pub fn cache(&self, groups: &[CgroupSpec], g: &str) -> u64 {
        if self.exhausted.iter().any(|x| x == g) {
            return 0;
        }
        let made: u64 = (self.cache.iter())
            .filter(|(_, x, _)| x == g)
            .map(|(_, _, b)| b)
            .sum();
        (cap_above(groups, g) / 4).min(made)
    }

    /// A buffered write of `bytes` by `g` to a new file; its name.
    pub fn write(&mut self, groups: &[CgroupSpec], g: &str, bytes: u64) -> String {
        let file = self.mmap_write(groups, g, bytes);
        self.writes.push((g.to_string(), bytes));
        file
    }

    /// A write of `bytes` by `g` through a shared mapping of a new file; its name. Not a
    /// buffered write: the mapping's pages are charged as it faults them, not past a limit.
    pub fn mmap_write(&mut self, groups: &[CgroupSpec], g: &str, bytes: u64) -> String {
        let file = self.fresh_file(bytes);
        self.writers.push((file.clone(), g.to_string()));
        self.cached(groups, &file, g, bytes);
        file
    }

    /// A new file of `bytes` for readers, made (not measured) before it is read; its name.
    pub fn create(&mut self, bytes: u64) -> String {
        let f = format!("r{}", self.next_file);
        self.next_file += 1;
        self.created.push((f.clone(), bytes));
        f
    }

    /// `file` truncated to `bytes`: the cache it held beyond is gone.
    pub fn truncate(&mut self, file: &str, bytes: u64) {
        for c in self.cache.iter_mut().filter(|c| c.0 == file) {
            c.2 = c.2.min(bytes);
        }
    }

    /// The `i`-th written file unlinked, with its cache; its name.
    pub fn unlink(&mut self, i: usize) -> String {
        let (file, _) = self.files.remove(i);
        self.cache.retain(|c| c.0 != file);
        file
    }

    /// A new task held in `g` (where it will be at the end) with `anon` of anonymous memory
    /// among `bytes` in all; its name.
    pub fn hold(&mut self, g: &str, anon: u64, bytes: u64) -> String {
        let name = format!("t{}", self.next_task);
        self.next_task += 1;
        self.held_in.push(g.to_string());
        self.tasks.push(Task {
            name: name.clone(),
            group: g.to_string(),
            anon,
            bytes,
            file: None,
        });
        name
    }

    /// Held task `i` moved to `to`.
    pub fn move_task(&mut self, i: usize, to: &str) {
        self.tasks[i].group = to.to_string();
        self.held_in.push(to.to_string());
    }

    /// Whether a held task maps `file`: unlinked, its pages would outlive its name (see
    /// `strategy::unlink`).
    pub fn mapped(&self, file: &str) -> bool {
        self.tasks.iter().any(|t| t.file.as_deref() == Some(file))
    }

    /// A task of `g` maps `file` (and may dirty it): `g` writes it too.
    pub fn maps(&mut self, file: &str, g: &str) {
        self.writers.push((file.to_string(), g.to_string()));
    }

    /// An `exhaust` ran in `g`: the OOM killer acted there.
    pub fn exhaust(&mut self, g: &str) {
        self.exhausted.push(g.to_string());
    }

    /// A new file name, remembered as written.
    fn fresh_file(&mut self, size: u64) -> String {
        let f = format!("f{}", self.next_file);
        self.next_file += 1;
        self.files.push((f.clone(), size));
        f
    }

    /// A write of `bytes` to `file` by `g`. Under a limit or memory.high, the cache made before
    /// by any group below it, `g` too, may be what the limit reclaims now: it no longer counts
    /// (stock 6.12, seed 66 case 34: a 42 MiB mmap-write, then 64 MiB written under the same
    /// 48 MiB limit and unlinked, left no cache for the reclaim the generator counted on).
    fn cached(&mut self, groups: &[CgroupSpec], file: &str, g: &str, bytes: u64) {
        let shares_a_cap = |x: &str| {
            groups.iter().any(|a| {
                within(g, &a.name) && within(x, &a.name) && (a.limit.is_some() || a.high.is_some())
            })
        };
        self.cache.retain(|(_, x, _)| !shares_a_cap(x));
        self.cache.push((file.to_string(), g.to_string(), bytes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::machine::MIB;

    /// The budget: what a new allocation may take where nothing caps it.
    const NO_CAP: u64 = 64 * MIB;

    fn groups() -> Vec<CgroupSpec> {
        let g = |name: &str, limit: Option<u64>| CgroupSpec {
            name: name.into(),
            limit,
            swap: true,
            ..Default::default()
        };
        vec![
            g("g0", Some(64 * MIB)),
            g("g0/g1", None),
            g("g0/g2", None),
            g("g3", None),
        ]
    }

    /// Room is half of the least cap above, less what tasks below it hold; the budget without
    /// a cap.
    #[test]
    fn room_is_half_the_cap_above_less_the_held_tasks() {
        let gs = groups();
        let mut w = World::default();
        assert_eq!(w.room(&gs, "g0/g1", NO_CAP), 32 * MIB);
        assert_eq!(w.room(&gs, "g3", NO_CAP), NO_CAP);
        let t = w.hold("g0/g2", 8 * MIB, 12 * MIB);
        assert_eq!(t, "t0");
        assert_eq!(w.room(&gs, "g0/g1", NO_CAP), 20 * MIB);
        assert_eq!(w.held_below("g0"), 12 * MIB);
    }

    /// A write under a cap makes the cache the capped subtree made before uncertain; truncates
    /// and unlinks take their cache off; an exhausted group holds none.
    #[test]
    fn cache_follows_writes_truncates_and_unlinks() {
        let gs = groups();
        let mut w = World::default();
        let f0 = w.write(&gs, "g0/g1", 8 * MIB);
        assert_eq!((f0.as_str(), w.cache(&gs, "g0/g1")), ("f0", 8 * MIB));
        let f1 = w.mmap_write(&gs, "g0/g2", 4 * MIB);
        assert_eq!(
            w.cache(&gs, "g0/g1"),
            0,
            "g0's limit may reclaim g1's cache now"
        );
        assert_eq!(w.cache(&gs, "g0/g2"), 4 * MIB);
        assert_eq!(w.writes, vec![("g0/g1".to_string(), 8 * MIB)]);
        w.truncate(&f1, MIB);
        assert_eq!(w.cache(&gs, "g0/g2"), MIB);
        assert_eq!(w.unlink(1), f1);
        assert_eq!(w.cache(&gs, "g0/g2"), 0);
        w.write(&gs, "g3", 100 * MIB);
        assert_eq!(w.cache(&gs, "g3"), 100 * MIB);
        w.exhaust("g3");
        assert_eq!(w.cache(&gs, "g3"), 0);
    }

    /// Writers are remembered per file, and files for readers are named apart from written ones.
    #[test]
    fn writers_and_created_files() {
        let gs = groups();
        let mut w = World::default();
        let f = w.write(&gs, "g3", MIB);
        w.maps(&f, "g0/g1");
        assert_eq!(w.create(2 * MIB), "r1");
        assert_eq!(
            w.writers,
            vec![("f0".into(), "g3".into()), ("f0".into(), "g0/g1".into())]
        );
        assert_eq!(w.files.len(), 1);
        assert_eq!(w.created, vec![("r1".to_string(), 2 * MIB)]);
    }
}
