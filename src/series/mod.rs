//! `memcgtest series`: gates a patch series patch by patch. The base and every patch on it are
//! built (incrementally, in a checkout of the series' own), booted in the VM under each chosen
//! cgroup layout and run; each patch is judged against the base and the patch before it, and the
//! first patch that turned a check red is named. Everything built and run is kept under the
//! output directory, keyed by the commit's tree, so an interrupted series continues where it
//! stopped and the same series given as an mbox and as a range shares its work.

pub mod build;
pub mod git;
pub mod html;
pub mod kcidb;
pub mod render;
mod strategy;
pub mod verdict;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, anyhow};

use crate::model::error::{Error, exit};
use crate::sys::cleanup;
use crate::sys::outdir::{binary_id, load, lock, save};
use crate::vm;
use build::{Builder, Built};
use git::{Patch, Refused};
use verdict::{LayoutRun, PatchReport, PatchVerdict, SeriesReport};

/// Where the patches come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A `git format-patch` or `b4 am` mbox, applied on `base` (a revision of the tree).
    Mbox { file: PathBuf, base: String },
    /// The commits of `base..head` in the tree.
    Range { base: String, head: String },
}

impl Source {
    /// `--range BASE..HEAD`; `None` when it is not that.
    pub fn range(r: &str) -> Option<Source> {
        match r.split_once("..") {
            Some((b, h)) if !b.is_empty() && !h.is_empty() && !h.starts_with('.') => {
                Some(Source::Range {
                    base: b.into(),
                    head: h.into(),
                })
            }
            _ => None,
        }
    }
}

/// Options of `memcgtest series`.
#[derive(Debug, Clone)]
pub struct Options {
    pub tree: PathBuf,
    pub source: Source,
    /// The user's fragments, merged after the project's.
    pub fragments: Vec<PathBuf>,
    pub cgroups: Vec<String>,
    pub output: PathBuf,
    pub jobs: usize,
    /// The VM and the guest command (`run ...`); the kernel and cgroup are set per boot.
    pub vm: vm::Options,
    /// `--ab`: each patch's A/B against the base.
    pub ab: Option<AbOptions>,
    /// `--strategy`; None: [`Strategy::auto`].
    pub strategy: Option<Strategy>,
}

/// Which patches are booted (every one is built: a series must build at every step).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Every patch, in order.
    Every,
    /// The base and the head; when the head is red, bisection to the first bad patch.
    Head,
}

impl Strategy {
    /// `head` for a series of more than 3 patches (fewer boots when the head is green, and
    /// about log2(n) more when it is red), else `every` (also with `--ab`, see `run`).
    pub fn auto(patches: usize) -> Strategy {
        if patches > 3 {
            Strategy::Head
        } else {
            Strategy::Every
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Every => "every",
            Strategy::Head => "head",
        }
    }
}

/// What each patch's A/B against the base runs (`memcgtest ab`, under the first layout).
#[derive(Debug, Clone)]
pub struct AbOptions {
    pub judging: crate::ab::Judging,
    /// The guest command: run [NAMES] [RUN OPTIONS].
    pub guest: Vec<String>,
}

/// Gates the series; the report is also written to OUTPUT/series.json.
pub fn run(o: &Options) -> Result<SeriesReport> {
    std::fs::create_dir_all(&o.output).with_context(|| format!("mkdir {}", o.output.display()))?;
    // make and the scripts run in the checkout: every path absolute.
    let o = &Options {
        output: (o.output.canonicalize())
            .with_context(|| format!("--output {}", o.output.display()))?,
        ..o.clone()
    };
    let _lock = lock(&o.output)?;
    cleanup::install_signal_handlers();
    let builder = builder(o)?;
    let (patches, refused) = patches(o, &builder.src)?;
    if let Some(r) = &refused {
        eprintln!(
            "memcgtest series: patch {} ({}) does not apply: {}",
            r.number, r.subject, r.error
        );
    }
    eprintln!(
        "memcgtest series: {} on {} {}, layouts {}",
        verdict::patches(patches.len() - 1),
        patches[0].short(),
        patches[0].subject,
        o.cgroups.join(" ")
    );
    let strategy = match (o.strategy, &o.ab) {
        (Some(Strategy::Head), Some(_)) => {
            let why = "--ab needs --strategy every: a performance regression is not bisected";
            return Err(Error::Usage(format!("series: {why}")).into());
        }
        (Some(s), _) => s,
        (None, Some(_)) => Strategy::Every,
        (None, None) => Strategy::auto(patches.len() - 1),
    };
    let mut vm = o.vm.clone();
    let (mut reports, mut cost) = gate(o, &mut vm, &builder, &patches, strategy)?;
    cost.every = (reports.iter())
        .filter(|p| matches!(p.build, Built::Image { .. }))
        .count()
        * o.cgroups.len();
    eprintln!(
        "memcgtest series: strategy {}: {} ({} booted now); every patch: {}",
        strategy.as_str(),
        render::runs(cost.runs),
        cost.booted,
        render::runs(cost.every)
    );
    if let Some(ab) = &o.ab {
        ab_against_base(o, &vm, &builder, ab, &mut reports)?;
    }
    let red = verdict::judge(&mut reports);
    let (code, line, first_bad) = verdict::verdict(&reports, refused.as_ref());
    let rep = SeriesReport {
        tool: format!("memcgtest {}", env!("CARGO_PKG_VERSION")),
        tree: (o.tree.canonicalize().unwrap_or_else(|_| o.tree.clone()))
            .display()
            .to_string(),
        cgroups: o.cgroups.clone(),
        guest: o.vm.guest_args.clone(),
        patches: reports,
        refused,
        red,
        first_bad,
        exit: code,
        verdict: line,
        strategy: strategy.as_str().into(),
        cost,
    };
    save(&o.output.join("series.json"), &rep)?;
    write_reports(o, &builder, &rep)?;
    Ok(rep)
}

/// The base built and booted, then the patches as `strategy` chooses; without a base to judge
/// them against, the patches are not built nor booted.
fn gate(
    o: &Options,
    vm: &mut vm::Options,
    b: &Builder,
    patches: &[Patch],
    strategy: Strategy,
) -> Result<(Vec<PatchReport>, verdict::Cost)> {
    let mut cost = verdict::Cost::default();
    let n = patches.len() - 1;
    let mut base = unrun(&patches[0], build_patch(o, b, &patches[0], n)?);
    boot_layouts(o, vm, b, &mut base, n, &mut cost)?;
    let mut reports = vec![base];
    if !verdict::judges(&reports[0]) {
        eprintln!("memcgtest series: the base cannot be judged: the patches are not tested");
        return Ok((reports, cost));
    }
    match strategy {
        Strategy::Every => strategy::every(o, vm, b, patches, &mut reports, &mut cost)?,
        Strategy::Head => strategy::head(o, vm, b, patches, &mut reports, &mut cost)?,
    }
    Ok((reports, cost))
}

/// OUTPUT/kcidb.json and OUTPUT/index.html (linking each boot's own report).
fn write_reports(o: &Options, b: &Builder, rep: &SeriesReport) -> Result<()> {
    let k = o.output.join("kcidb.json");
    std::fs::write(&k, kcidb::render(rep, crate::model::kcidb::DEFAULT_ORIGIN))
        .with_context(|| format!("write {}", k.display()))?;
    let link = |i: usize, cg: &str| {
        let p = &rep.patches.iter().find(|p| p.patch.index == i)?.patch;
        let dir = patch_dir(o, b, p).join(run_key(o, cg)).join("index.html");
        Some(dir.strip_prefix(&o.output).ok()?.display().to_string())
    };
    let h = o.output.join("index.html");
    std::fs::write(&h, html::render(rep, link)).with_context(|| format!("write {}", h.display()))
}

fn builder(o: &Options) -> Result<Builder> {
    if git::git(&o.tree, &["rev-parse", "--git-dir"]).is_err() {
        let what = format!("series: --tree {}: not a git repository", o.tree.display());
        return Err(Error::Usage(what).into());
    }
    let src = git::checkout(&o.tree, &o.output)?;
    let mut fragments = vec![(
        "ci/kernel.config".to_string(),
        build::PROJECT_FRAGMENT.to_string(),
    )];
    for f in &o.fragments {
        let text = std::fs::read_to_string(f)
            .map_err(|e| Error::Usage(format!("--config {}: {e}", f.display())))?;
        fragments.push((f.display().to_string(), text));
    }
    Ok(Builder {
        src,
        build: o.output.join("build"),
        fragments,
        jobs: o.jobs,
    })
}

/// The base and the patches, as commits of the series' checkout.
fn patches(o: &Options, src: &Path) -> Result<(Vec<Patch>, Option<Refused>)> {
    let usage =
        |e: anyhow::Error| -> anyhow::Error { Error::Usage(format!("series: {e:#}")).into() };
    match &o.source {
        Source::Range { base, head } => {
            let b = git::commit_of(&o.tree, base).map_err(usage)?;
            let h = git::commit_of(&o.tree, head).map_err(usage)?;
            let list = git::range(src, &b, &h).map_err(usage)?;
            if list.len() < 2 {
                return Err(usage(anyhow!("{base}..{head} has no commits")));
            }
            Ok((list, None))
        }
        Source::Mbox { file, base } => {
            let b = git::commit_of(&o.tree, base).map_err(usage)?;
            git::apply_mbox(src, &b, file, &o.output).map_err(usage)
        }
    }
}

/// A patch's directory: its image, build log and runs, keyed by its tree and the fragments.
fn patch_dir(o: &Options, b: &Builder, p: &Patch) -> PathBuf {
    o.output
        .join("patches")
        .join(format!("{}-{}", &p.tree[..12], &b.stamp()[..8]))
}

/// Builds one patch, or finds it built.
fn build_patch(o: &Options, b: &Builder, p: &Patch, n: usize) -> Result<Built> {
    let dir = patch_dir(o, b, p);
    let built_file = dir.join("build.json");
    let built: Built = match load(&built_file) {
        Some(built) => built,
        None => {
            eprintln!("memcgtest series: {}: building", what(p, n));
            git::switch(&b.src, &p.commit)?;
            let built = b.build(&dir)?;
            interrupted()?;
            save(&built_file, &built)?;
            built
        }
    };
    match &built {
        Built::Image { seconds, .. } => {
            eprintln!("memcgtest series: {}: built in {seconds:.0} s", what(p, n))
        }
        Built::Failed { .. } => eprintln!("memcgtest series: {}: the build failed", what(p, n)),
    }
    Ok(built)
}

/// "#3/6 0123456789ab subject".
fn what(p: &Patch, n: usize) -> String {
    format!("#{}/{n} {} {}", p.index, p.short(), p.subject)
}

/// Runs (or finds run) a built patch under every layout. `vm`: the VM options, whose
/// accelerator the first boot settles (a fallback to TCG is kept).
fn boot_layouts(
    o: &Options,
    vm: &mut vm::Options,
    b: &Builder,
    r: &mut PatchReport,
    n: usize,
    cost: &mut verdict::Cost,
) -> Result<()> {
    let Built::Image { image, .. } = &r.build else {
        return Ok(());
    };
    let dir = patch_dir(o, b, &r.patch);
    for cg in &o.cgroups {
        let (run, booted) = layout_run(o, vm, &dir, image, cg, &what(&r.patch, n))?;
        cost.runs += 1;
        cost.booted += usize::from(booted);
        r.runs.push(run);
    }
    Ok(())
}

/// A patch built, not run yet.
fn unrun(p: &Patch, build: Built) -> PatchReport {
    PatchReport {
        patch: p.clone(),
        build,
        runs: Vec::new(),
        ab: None,
        verdict: PatchVerdict::Untestable,
    }
}

/// Each built patch's A/B against the base (`memcgtest ab`, the first layout), or the one
/// recorded: kept in the patch's directory, keyed by the base's tree and what the A/B runs.
fn ab_against_base(
    o: &Options,
    vm: &vm::Options,
    b: &Builder,
    ab: &AbOptions,
    reports: &mut [PatchReport],
) -> Result<()> {
    let Some((base, rest)) = reports.split_first_mut() else {
        return Ok(());
    };
    let Built::Image {
        image: base_image, ..
    } = &base.build
    else {
        return Ok(());
    };
    let j = &ab.judging;
    let mut text = format!(
        "{} {} {} {:?} {}",
        base.patch.tree,
        j.rounds,
        j.threshold_pct,
        ab.guest,
        run_key(o, &o.cgroups[0])
    );
    if j.behaviour {
        text += &format!(" behaviour {}", j.fail_on_change);
    }
    let key = format!("ab-{:08x}", crate::model::kcidb::fnv1a(&text) as u32);
    // Under --strategy head, only the patches that booted (the others are vouched for).
    for p in rest.iter_mut().filter(|p| !p.runs.is_empty()) {
        let Built::Image { image, .. } = &p.build else {
            continue;
        };
        let dir = patch_dir(o, b, &p.patch);
        let file = dir.join(format!("{key}.json"));
        if let Some(done) = load(&file) {
            p.ab = Some(done);
            continue;
        }
        eprintln!(
            "memcgtest series: #{} {}: ab against the base",
            p.patch.index,
            p.patch.short()
        );
        let mut v = vm.clone();
        v.cgroup = o.cgroups[0].clone();
        v.guest_args = ab.guest.clone();
        let kernels = crate::ab::Kernels {
            base: (base_image.clone(), None),
            new: (image.clone(), None),
            new_append: String::new(),
        };
        let start = Instant::now();
        let rep = crate::ab::run(&v, &kernels, ab.judging, Some(&dir.join(&key)))?;
        interrupted()?;
        let done = verdict::AbSummary {
            exit: rep.exit,
            verdict: rep.verdict.clone(),
            seconds: start.elapsed().as_secs_f64(),
        };
        eprintln!(
            "memcgtest series: #{}: ab: {} (exit {})",
            p.patch.index, done.verdict, done.exit
        );
        if done.exit != exit::UNTESTABLE {
            save(&file, &done)?;
        }
        p.ab = Some(done);
    }
    Ok(())
}

/// The key of a run: what the guest runs, the VM it runs in (its size and the kernel command
/// line added) and the binary that judges it.
fn run_key(o: &Options, cgroup: &str) -> String {
    let v = &o.vm;
    let text = format!("{cgroup} {} {}", v.shape(), binary_id());
    format!("{cgroup}-{:08x}", crate::model::kcidb::fnv1a(&text) as u32)
}

/// One boot of a patch's image under `cgroup`, or the one recorded.
fn layout_run(
    o: &Options,
    vm: &mut vm::Options,
    dir: &Path,
    image: &Path,
    cgroup: &str,
    what: &str,
) -> Result<(LayoutRun, bool)> {
    let key = run_key(o, cgroup);
    let file = dir.join(format!("{key}.json"));
    if let Some(run) = load::<LayoutRun>(&file) {
        eprintln!(
            "memcgtest series: {what}: {cgroup}: done before: {}",
            run.counts()
        );
        return Ok((run, false));
    }
    eprintln!("memcgtest series: {what}: {cgroup}: booting");
    let mut v = vm.clone();
    v.kernel = image.to_path_buf();
    v.cgroup = cgroup.into();
    let (result, secs) = vm::boot_recorded(vm, v, dir, &key)?;
    let run = match result {
        Ok(out) => match &out.report {
            Some((rep, _)) => {
                let mut run = LayoutRun::from_report(cgroup, out.code, secs, rep);
                run.reason = out.reason.clone();
                run
            }
            None if out.reason.is_empty() => {
                untested(cgroup, out.code, secs, "the guest wrote no report".into())
            }
            None => untested(cgroup, out.code, secs, out.reason.clone()),
        },
        Err(e) => match e.downcast_ref::<Error>() {
            Some(Error::Usage(_)) => return Err(e),
            _ => untested(cgroup, exit::UNTESTABLE, secs, format!("{e:#}")),
        },
    };
    eprintln!(
        "memcgtest series: {what}: {cgroup}: {} in {secs:.0} s",
        run.counts()
    );
    if run.code != exit::UNTESTABLE || !run.cells.is_empty() {
        save(&file, &run)?;
    }
    Ok((run, true))
}

fn untested(cgroup: &str, code: u8, seconds: f64, reason: String) -> LayoutRun {
    LayoutRun {
        cgroup: cgroup.into(),
        code,
        seconds,
        cells: Vec::new(),
        reason,
    }
}

/// A signal stops the series; what was finished is kept, the step it stopped in is done again.
fn interrupted() -> Result<()> {
    if cleanup::interrupted() {
        return Err(Error::Interrupted.into());
    }
    Ok(())
}
