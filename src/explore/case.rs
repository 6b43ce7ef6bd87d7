//! A generated case: a scenario held as its parts (groups, phases, declared checks), so the
//! shrinker can take it apart, and written out as a normal scenario file before it runs.

use crate::model::Version;
use crate::scenario::render;
use crate::scenario::{CgroupSpec, Phase, Step};

/// A check a case declares besides the invariants every scenario gets (those need no
/// expectation: a per-sample bound or a settling after sync).
#[derive(Debug, Clone, PartialEq)]
pub enum Declared {
    /// No counter of the group ever reads negative.
    NoUnderflow(String),
    /// The group's dirty and writeback fall back after every sync.
    Settles(String),
    /// The group's file count holds the page cache its files hold (per-file truth).
    HoldsFiles(String),
    /// The group's dirty and writeback rise and fall with its files' (per-file truth) during its
    /// write steps.
    TracksGlobal(String),
    /// The group stays near its memory.high. `throttled`: an `exhaust` at or below it takes anon
    /// it cannot reclaim (no swap) past high, so the kernel throttles instead and the bound
    /// grows with the time above high (under-high's `throttled = true`).
    UnderHigh { group: String, throttled: bool },
    /// Each `exhaust` in the group ends in an OOM kill of the task that needed the memory.
    OomKills(String),
    /// The group, within its memory.min, keeps its memory in a phase that leaves it alone while
    /// its parent reclaims.
    Protected { group: String, phase: String },
    /// The group's usage stays across each move of a task between two groups below it (v1
    /// charge moving): a `change` of its usage by 0 at `move` steps.
    UsageKept(String),
    /// The group's `counter` rose by at least `by` across the one hold step of `phase` (a task
    /// started there holding that much).
    HoldRaises {
        group: String,
        phase: String,
        counter: &'static str,
        by: u64,
    },
    /// A write below the group needed more page cache than its limit (the least in its chain):
    /// once the usage reached it, charges must have failed there (memory.events max, v1
    /// memory.failcnt).
    LimitHit(String),
    /// A limit written below the group's usage (`limit_motif`) left the usage within it at once.
    LimitTakes(String),
}

impl Declared {
    /// The group it judges.
    pub fn group(&self) -> &str {
        match self {
            Declared::NoUnderflow(g)
            | Declared::Settles(g)
            | Declared::HoldsFiles(g)
            | Declared::TracksGlobal(g)
            | Declared::UnderHigh { group: g, .. }
            | Declared::Protected { group: g, .. }
            | Declared::OomKills(g)
            | Declared::UsageKept(g)
            | Declared::HoldRaises { group: g, .. }
            | Declared::LimitHit(g)
            | Declared::LimitTakes(g) => g,
        }
    }

    /// The check kind it declares (its result names start with it).
    pub fn kind(&self) -> &'static str {
        match self {
            Declared::NoUnderflow(_) => "no-underflow",
            Declared::Settles(_) => "settles",
            Declared::HoldsFiles(_) => "holds-files",
            Declared::TracksGlobal(_) => "tracks-global",
            Declared::UnderHigh { .. } => "under-high",
            Declared::Protected { .. } => "protected",
            Declared::OomKills(_) => "oom-kills",
            Declared::LimitHit(_) => "limit-counters",
            Declared::LimitTakes(_) => "limit-takes",
            Declared::UsageKept(_) | Declared::HoldRaises { .. } => "change",
        }
    }

    fn to_toml(&self) -> String {
        let extra = match self {
            Declared::NoUnderflow(_) => {
                "counters = [\"dirty\", \"writeback\", \"file\", \"anon\", \"shmem\", \"mapped\"]\n"
                    .into()
            }
            Declared::Settles(_) | Declared::TracksGlobal(_) => {
                "counters = [\"dirty\", \"writeback\"]\n".into()
            }
            Declared::UnderHigh {
                throttled: true, ..
            } => "throttled = true\n".into(),
            Declared::LimitHit(_) => "hit = true\n".into(),
            Declared::HoldRaises {
                phase, counter, by, ..
            } => format!(
                "counter = \"{counter}\"\nstep = \"hold\"\nphase = \"{phase}\"\nby = \"{}M\"\nat_least = true\n",
                by >> 20
            ),
            Declared::UsageKept(_) => {
                "counter = \"usage\"\nstep = \"move\"\nby = \"0\"\nneeds = \"charge-moving\"\n"
                    .into()
            }
            Declared::Protected { phase, .. } => format!("phase = \"{phase}\"\n"),
            _ => String::new(),
        };
        format!(
            "[[check]]\nkind = \"{}\"\ncgroup = \"{}\"\n{extra}",
            self.kind(),
            self.group()
        )
    }
}

/// A case: what `explore` generated from (seed, index), or what the shrinker kept of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub name: String,
    pub seed: u64,
    pub index: u32,
    pub version: Version,
    /// Needs swap (a swap limit, a page-out).
    pub swap: bool,
    pub groups: Vec<CgroupSpec>,
    pub phases: Vec<Phase>,
    pub checks: Vec<Declared>,
}

impl Case {
    /// Whether a step writes through the page cache (then the scratch needs writeback).
    fn writes(&self) -> bool {
        self.phases.iter().flat_map(|p| &p.steps).any(|s| {
            matches!(
                s,
                Step::Write { .. } | Step::MmapWrite { .. } | Step::Create { .. }
            ) || matches!(s, Step::Hold(h) if h.file.is_some())
        })
    }

    /// The scenario file: byte for byte the same for the same case.
    pub fn to_toml(&self) -> String {
        let mut out = format!(
            "# Generated by memcgtest explore --seed {} (case {}). Run it alone with\n# memcgtest --scenario-dir DIR run {}\nname = \"{}\"\nsummary = \"explore case {} of seed {}: {} groups, {} steps\"\nscale = false\ntimeout = \"120s\"\n\n[origin]\nsubject = \"memcgtest explore\"\n\n[requires]\ncgroup = [\"{}\"]\n",
            self.seed,
            self.index,
            self.name,
            self.name,
            self.index,
            self.seed,
            self.groups.len(),
            self.steps(),
            self.version.as_str()
        );
        if self.writes() {
            out += "writeback = true\n";
        }
        let numa = (self.phases.iter().flat_map(|p| &p.steps))
            .any(|s| matches!(s, crate::scenario::Step::Migrate { .. }));
        let features: Vec<&str> = [(self.swap, "\"swap\""), (numa, "\"numa\"")]
            .into_iter()
            .filter_map(|(on, f)| on.then_some(f))
            .collect();
        if !features.is_empty() {
            out += &format!("features = [{}]\n", features.join(", "));
        }
        out += "\n[sample]\ninterval = \"20ms\"\n";
        for g in &self.groups {
            out.push('\n');
            out += &render::cgroup(g);
        }
        for p in &self.phases {
            out.push('\n');
            out += &render::phase(p);
        }
        for c in &self.checks {
            out.push('\n');
            out += &c.to_toml();
        }
        out
    }

    /// How many steps it has in all.
    pub fn steps(&self) -> usize {
        self.phases.iter().map(|p| p.steps.len()).sum()
    }
}

/// A phase `name` that runs `steps` once, without antagonists.
pub fn phase(name: String, steps: Vec<Step>) -> Phase {
    Phase {
        name,
        repeat: 1,
        quick_repeat: None,
        warmup: false,
        alternate: false,
        steps,
        antagonists: Vec::new(),
    }
}
