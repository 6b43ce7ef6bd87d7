//! The command line: arguments and subcommands (clap).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use memcgtest::model::units;
use memcgtest::sys::cgroup::detect::Choice;
use memcgtest::sys::env;
use memcgtest::{compare, report, vm};

/// The options of a run of scenarios, shared by `run` and `explore` (one test per scenario or
/// case).
#[derive(Args, Debug)]
pub struct SessionArgs {
    /// What stdout carries: text, KTAP, JSON, JUnit XML or KCIDB JSON.
    #[arg(long, value_enum, default_value = "human")]
    pub format: report::Format,
    /// Write results.ktap, results.json, results.xml (JUnit), kcidb.json, index.html and
    /// per-scenario CSV and SVG into DIR.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Per-scenario timeout overriding the scenario's own (e.g. 120s, 10m; explore's cases: 120s).
    #[arg(long, value_parser = units::parse_cli_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Stop a scenario whose workload made no progress for this long (no task of its groups
    /// read, wrote or faulted; for sync steps, no page written back) and judge its checks on
    /// what was sampled: default 30s, 10s with --quick; 0 turns the watchdog off.
    #[arg(long, value_parser = units::parse_cli_duration_or_off)]
    pub stall: Option<std::time::Duration>,
    /// Run every scenario to its end. By default the invariants that judge each sample (no
    /// underflow, usage covers its parts, hierarchy, limits, ...) are judged while a scenario
    /// runs, and the first failure stops it (the rest of its checks are then not judged).
    #[arg(long)]
    pub keep_going: bool,
    /// When another run owns the vm sysctls, stop (exit 125) instead of waiting for it.
    #[arg(long)]
    pub no_wait: bool,
    /// The machine is this run's alone (a VM of its own; `memcgtest vm` passes it): also run
    /// the scenarios that put the whole machine under memory pressure or change machine-wide
    /// knobs (requires.features = ["dedicated"]); without it they are skipped.
    #[arg(long)]
    pub dedicated: bool,
    /// A known failure (a failed check a scenario's [[known]] entry expects on this kernel)
    /// fails the run (exit 1) instead of exiting 0.
    #[arg(long)]
    pub strict: bool,
    /// Stream typed events (JSON lines: scenario begin and end with the result, progress) on
    /// stdout instead of printing the format: what the guest of `memcgtest vm` does for the host.
    #[arg(long, hide = true)]
    pub events: bool,
}

#[derive(Parser)]
#[command(
    name = "memcgtest",
    version,
    about = "Testsuite for the Linux memory cgroup controller"
)]
pub struct Cli {
    /// Which cgroup version to test (auto: v2 when it carries the memory controller, else v1).
    #[arg(long, global = true, value_enum, default_value = "auto")]
    pub cgroup: Choice,
    /// Create test cgroups below this cgroup directory instead of the one memcgtest runs in.
    #[arg(long, global = true, value_name = "PATH")]
    pub parent: Option<PathBuf>,
    /// Directory for scratch files (must be on a filesystem with writeback, not tmpfs).
    #[arg(long, global = true, value_name = "DIR", default_value = env::DEFAULT_SCRATCH)]
    pub scratch: PathBuf,
    /// A directory on a slow disk for the scenarios that ask for one (`scratch = "slow"`: pages
    /// under writeback stay so for seconds). `memcgtest vm` gives its guest one.
    #[arg(long, global = true, value_name = "DIR")]
    pub slow_scratch: Option<PathBuf>,
    /// Also load scenario files from this directory (they replace built-ins of the same name).
    #[arg(long, global = true, value_name = "DIR")]
    pub scenario_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

/// `--format` of the subcommands that print for people or programs (`env`, `list`, `compare`,
/// `ab`): text, or one JSON document. `run` and `explore` add the report formats
/// (`report::Format`), `coverage` and `contracts` Markdown ([`CoverageFormat`]).
/// `series --strategy`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    Every,
    Head,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

/// `--format human|json` of `env` and `list`, and the `--json` they took before it.
#[derive(Args)]
pub struct FormatArgs {
    /// What stdout carries: text, or one JSON document.
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
    /// --format json (kept for scripts written before --format).
    #[arg(long, hide = true, conflicts_with = "format")]
    json: bool,
}

impl FormatArgs {
    /// The format asked for, `--json` as `--format json`.
    pub fn format(&self) -> Format {
        match self.json {
            true => Format::Json,
            false => self.format,
        }
    }
}

/// `coverage --format` and `contracts --format`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CoverageFormat {
    Human,
    Json,
    /// A Markdown page: docs/coverage.md and docs/contracts.md are made this way.
    Markdown,
}

#[derive(Subcommand)]
pub enum Command {
    /// Describe this machine: kernel, cgroup layout, capabilities, scratch filesystem.
    Env {
        #[command(flatten)]
        output: FormatArgs,
    },
    /// List the scenarios.
    List {
        #[command(flatten)]
        output: FormatArgs,
    },
    /// Validate scenario files.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Run scenarios (all when none is named).
    Run {
        names: Vec<String>,
        /// KCIDB origin: the CI system submitting ([a-z0-9_]+).
        #[arg(long, default_value = report::kcidb::DEFAULT_ORIGIN)]
        origin: String,
        /// KCIDB build id (ORIGIN: is prepended unless it has an origin prefix); default: the
        /// kernel release, architecture and a hash of `uname -v`.
        #[arg(long, value_name = "ID")]
        build_id: Option<String>,
        /// Scale sizes down 8x for smoke runs on slow machines; every check still runs.
        #[arg(long)]
        quick: bool,
        /// Sampling interval overriding the scenarios' own (for measuring the sampler's cost).
        #[arg(long, value_parser = units::parse_cli_duration)]
        sample_interval: Option<std::time::Duration>,
        /// A performance check (a paired ratio, a throughput) that reached no verdict, e.g.
        /// inconclusive because the machine was busy, makes the run a skip (exit 125) instead of
        /// passing on the accounting checks: for `git bisect run` over a slowdown.
        #[arg(long)]
        require_performance: bool,
        /// Stop after the first scenario that fails (the run's verdict is then known; the
        /// scenarios not run are not in the report). For `memcgtest mutate`.
        #[arg(long)]
        fail_fast: bool,
        #[command(flatten)]
        session: SessionArgs,
    },
    /// Generate scenarios from the step and check tables and run them under every invariant; a
    /// failure is confirmed by a second run and shrunk to a minimal scenario file (exit 1).
    Explore {
        /// The cases are drawn from this seed (default: the time); the same seed on the same
        /// machine makes byte-identical scenario files.
        #[arg(long)]
        seed: Option<u64>,
        /// Stop starting cases after this long (e.g. 10m, 1h).
        #[arg(long, default_value = "10m", value_parser = units::parse_cli_duration)]
        budget: std::time::Duration,
        /// Stop after this many cases.
        #[arg(long)]
        cases: Option<u32>,
        /// Where the cases, failures, shrunk cases and summary go (default: DIR/explore with
        /// --report DIR, else ./memcgtest-explore-SEED).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// The longest one failure is shrunk.
        #[arg(long, default_value = "10m", value_parser = units::parse_cli_duration)]
        shrink_time: std::time::Duration,
        /// Stop at the first confirmed failure, once it is shrunk (for `git bisect run`: one
        /// failure is the verdict).
        #[arg(long)]
        first: bool,
        #[command(flatten)]
        session: SessionArgs,
    },
    /// Compare the measurements of two sets of `run --format json` results, files or directories
    /// of them: one sample per run, a verdict from 3 runs a side (exit 1 on a regression).
    Compare {
        base: PathBuf,
        new: PathBuf,
        /// Minimum change of the median, in percent, that can count as a regression.
        #[arg(long, default_value_t = 5.0, value_parser = compare::parse_threshold)]
        threshold: f64,
        /// Pool every repetition of every run as a sample, instead of one sample per run (its
        /// median). Repetitions of one run are not independent: the output says so.
        #[arg(long)]
        pool_repetitions: bool,
        /// One sample per run: the default (kept for scripts written before it was).
        #[arg(long, hide = true)]
        per_run: bool,
        /// What stdout carries: the table, or one JSON document.
        #[arg(long, value_enum, default_value = "human")]
        format: Format,
        /// Compare behaviour instead of measurements: every counter of every group at each
        /// phase's end, BASE and NEW each a report directory (`run --report`) or a directory of
        /// them (3 a side at least), e.g. an `ab --report` directory's base-* and new-*.
        #[arg(long)]
        behaviour: bool,
        /// With --behaviour: exit 1 when behaviour changed (else 0, with the table).
        #[arg(long, requires = "behaviour")]
        fail_on_change: bool,
    },
    /// Every file and field of the memcg interface with the invariants that judge it, whether it
    /// moved in the given results (so they could fail), the mutants that prove them, and for the
    /// rest why not. Without --results: the interface of the running kernel (needs root).
    Coverage {
        /// `run --format json` result files or directories of them (one table per cgroup version).
        #[arg(long, value_name = "PATH")]
        results: Vec<PathBuf>,
        /// What stdout carries: text, one JSON document, or a Markdown page.
        #[arg(long, value_enum, default_value = "human")]
        format: CoverageFormat,
        /// Exit 2 when less than this share (percent) of the counted fields is covered (the suite
        /// falls short, not the kernel).
        #[arg(long, value_name = "PERCENT")]
        require: Option<f64>,
        /// A kill matrix of `memcgtest mutate` (OUTPUT/matrix-v2.json) for the proven column,
        /// beside (and before) the ones memcgtest ships (docs/mutate/); repeatable.
        #[arg(long, value_name = "FILE")]
        matrix: Vec<PathBuf>,
    },
    /// Every behavioural promise of the cgroup memory documentation (v2 and v1) with the checks
    /// that judge it, the scenarios that reach its condition and the mutants written from it; for
    /// the few no test can judge, why. With --results: where each was judged and how it came out.
    Contracts {
        /// `run --format json` result files or directories of them.
        #[arg(long, value_name = "PATH")]
        results: Vec<PathBuf>,
        /// What stdout carries: text, one JSON document, or a Markdown page.
        #[arg(long, value_enum, default_value = "human")]
        format: CoverageFormat,
        /// Exit 2 when the suite judges less than this share (percent) of the promises; with
        /// --results, of the promises of the cgroup versions the results ran under, those the
        /// results judged (the suite falls short, not the kernel).
        #[arg(long, value_name = "PERCENT")]
        require: Option<f64>,
    },
    /// Remove what runs killed with SIGKILL left behind (cgroups, scratch files, sysctls).
    Cleanup,
    /// Print a shell completion script (e.g. memcgtest completions bash > /etc/bash_completion.d/memcgtest).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): memcgtest man > memcgtest.1; man ./memcgtest.1
    Man,
    /// Boot a kernel image in qemu and run memcgtest inside it:
    /// memcgtest vm --kernel BZIMAGE [OPTIONS] -- run [NAMES] [RUN OPTIONS].
    /// The guest's cgroup layout is --cgroup (auto means v2).
    Vm {
        /// The kernel image (bzImage, e.g. arch/x86/boot/bzImage or /boot/vmlinuz-*).
        #[arg(long, value_name = "BZIMAGE")]
        kernel: PathBuf,
        /// A lib/modules/<release> tree for kernels with virtio-pci/virtio-blk as modules.
        #[arg(long, value_name = "DIR")]
        modules: Option<PathBuf>,
        /// Save the kernel console to FILE.
        #[arg(long, value_name = "FILE")]
        console_log: Option<PathBuf>,
        /// Copy the guest's report directory (KTAP, JSON, CSV, SVG) to DIR.
        #[arg(long, value_name = "DIR")]
        report: Option<PathBuf>,
        /// Self-tests of the VM runner: panic, hang.
        #[arg(long, hide = true)]
        selftest: Option<String>,
        #[command(flatten)]
        vm: VmArgs,
        /// The command the guest runs (run, env or list, with their options).
        #[arg(last = true)]
        guest: Vec<String>,
    },
    /// Compare a base and a new kernel: boot them alternately in qemu (A B, B A, ...), run the
    /// same scenarios in each, and judge every measurement on the boots' medians as `compare`
    /// does (exit 1 on a regression or a failure of the new kernel):
    /// memcgtest ab --base BZIMAGE --new BZIMAGE [OPTIONS] -- run [NAMES] [RUN OPTIONS].
    Ab {
        /// The reference kernel image.
        #[arg(long, value_name = "BZIMAGE")]
        base: PathBuf,
        /// The kernel under test.
        #[arg(long, value_name = "BZIMAGE")]
        new: PathBuf,
        /// lib/modules/<release> tree of the base kernel (see vm --modules).
        #[arg(long, value_name = "DIR")]
        base_modules: Option<PathBuf>,
        /// lib/modules/<release> tree of the new kernel.
        #[arg(long, value_name = "DIR")]
        new_modules: Option<PathBuf>,
        /// Kernel command line for the new kernel's boots only, after --append: the schemata
        /// kernel as both, a mutant chosen for new (`--new-append memcg_mutate=stat:percpu:double`).
        #[arg(long, value_name = "ARGS", default_value = "")]
        new_append: String,
        /// Rounds: each boots both kernels once. Each boot is one sample per measurement; a
        /// verdict needs 3 a side, and an even count balances the boot order.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(3..=100))]
        rounds: u32,
        /// Minimum change of the median, in percent, that can count as a regression.
        #[arg(long, default_value_t = 5.0, value_parser = compare::parse_threshold)]
        threshold: f64,
        /// What stdout carries: the boots and the table, or one JSON document.
        #[arg(long, value_enum, default_value = "human")]
        format: Format,
        /// Write every boot's report directory (DIR/base-1, DIR/new-1, ...) and console
        /// (DIR/base-1.console, ...), its result (DIR/base/1.json, ...: `memcgtest compare
        /// DIR/base DIR/new` judges them again) and the comparison (DIR/ab.json).
        #[arg(long, value_name = "DIR")]
        report: Option<PathBuf>,
        /// Compare behaviour too: every counter of every group at each phase's end, base
        /// against new, a change reported beyond the noise between the base's own boots (see
        /// docs/ab.md). A change is a verdict of its own: exit 0 with the table.
        #[arg(long)]
        behaviour: bool,
        /// With --behaviour: exit 1 when behaviour changed.
        #[arg(long, requires = "behaviour")]
        fail_on_change: bool,
        #[command(flatten)]
        vm: VmArgs,
        /// The command each guest runs: run [NAMES] [RUN OPTIONS].
        #[arg(last = true)]
        guest: Vec<String>,
    },
    /// Gate a patch series patch by patch: build the base and every patch on it (incrementally,
    /// in a clone of the tree of its own under --output, with ci/kernel.config merged), boot each
    /// in qemu under --cgroup (v1, v2 or both; auto: v2) and run the same scenarios; judge every
    /// patch against the base and name the first bad one (exit 1). Resumable: what is built and
    /// run is kept under --output, keyed by the commit's tree:
    /// memcgtest series --tree DIR (--mbox FILE [--base REV] | --range BASE..HEAD) [-- run ARGS].
    Series {
        /// The kernel tree, a git repository. Only read: the series is applied and built in a
        /// clone of its own (sharing its objects) under --output.
        #[arg(long, value_name = "DIR")]
        tree: PathBuf,
        /// The patches as an mbox (git format-patch, b4 am), applied on --base with git am.
        #[arg(long, value_name = "FILE", required_unless_present = "range")]
        mbox: Option<PathBuf>,
        /// The revision of the tree the mbox applies to.
        #[arg(
            long,
            value_name = "REV",
            default_value = "HEAD",
            conflicts_with = "range"
        )]
        base: String,
        /// The commits BASE..HEAD of the tree, the base included as patch 0.
        #[arg(long, value_name = "BASE..HEAD", conflicts_with = "mbox")]
        range: Option<String>,
        /// A kernel config fragment merged after the project's (ci/kernel.config); repeatable.
        #[arg(long = "config", value_name = "FRAGMENT")]
        config: Vec<PathBuf>,
        /// Where the checkout, the build directory, each patch's image, build log, runs and
        /// consoles, and series.json go; a series run again with it continues where it stopped.
        #[arg(long, value_name = "DIR", default_value = "memcgtest-series")]
        output: PathBuf,
        /// make -j (default: this machine's CPUs).
        #[arg(long)]
        jobs: Option<usize>,
        /// What stdout carries: the table and the verdict, or one JSON document.
        #[arg(long, value_enum, default_value = "human")]
        format: Format,
        /// Also judge each patch's performance against the base with `memcgtest ab` (rounds x 2
        /// boots per patch, under the first layout): a regression turns the patch red.
        #[arg(long)]
        ab: bool,
        /// The scenarios each A/B runs (with --quick when the series' guest has it).
        #[arg(
            long,
            value_name = "NAMES",
            value_delimiter = ',',
            default_value = "fault-overhead"
        )]
        ab_scenarios: Vec<String>,
        /// Rounds of each A/B (see ab --rounds).
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(3..=100))]
        ab_rounds: u32,
        /// Minimum change of a median, in percent, that can count as a regression.
        #[arg(long, default_value_t = 5.0, value_parser = compare::parse_threshold)]
        ab_threshold: f64,
        /// Each A/B compares behaviour too (see ab --behaviour): its changes are in the patch's
        /// ab verdict.
        #[arg(long, requires = "ab")]
        ab_behaviour: bool,
        /// With --ab-behaviour: a behaviour change turns the patch red.
        #[arg(long, requires = "ab_behaviour")]
        ab_fail_on_change: bool,
        /// Which patches are booted (every patch is built): `head` boots the base and the head
        /// and bisects a red head to its first bad patch; `every` boots each patch. Default:
        /// head for more than 3 patches, else every; every with --ab (head and --ab: exit 2).
        #[arg(long, value_enum)]
        strategy: Option<StrategyArg>,
        #[command(flatten)]
        vm: VmArgs,
        /// The command each guest runs: run [NAMES] [RUN OPTIONS] (default: run --quick).
        #[arg(last = true)]
        guest: Vec<String>,
    },
    /// The kill matrix of the mutant schemata kernel (kernel-patches/schemata): a boot with no
    /// mutant runs the quick suite (it must pass) and says where each field moves; then each
    /// mutant (a kernel item of a field the suite moves and a fault: drop, leak, double, local,
    /// fraction) boots with memcg_mutate=KIND:ITEM:MODE and runs those scenarios: killed (by
    /// which check) or survived. Resumable; the matrix goes to OUTPUT/matrix-<cgroup>.json.
    Mutate {
        /// The schemata kernel (ci/build-kernel.sh kernel-patches/schemata/memcg-mutate.patch).
        #[arg(long, value_name = "BZIMAGE")]
        kernel: PathBuf,
        /// Only the mutants of these fields (memory.stat:file_dirty) or kernel items
        /// (file_dirty, pgfault, memory); repeatable.
        #[arg(long = "field", value_name = "F")]
        fields: Vec<String>,
        /// Only these faults; repeatable.
        #[arg(long = "mode", value_name = "M", value_parser = parse_mode)]
        modes: Vec<memcgtest::model::mutant::Mode>,
        /// Only this mutant, as the kernel command line names it (stat:file_dirty:drop);
        /// repeatable.
        #[arg(long = "mutant", value_name = "KIND:ITEM:MODE")]
        mutants: Vec<String>,
        /// A quick suite's results on this kernel and layout (run --format json), instead of the
        /// first boot with no mutant.
        #[arg(long, value_name = "FILE")]
        results: Option<PathBuf>,
        /// Where each boot's result, report and console and the matrix go; run again with it,
        /// the matrix continues where it stopped.
        #[arg(long, value_name = "DIR", default_value = "memcgtest-mutate")]
        output: PathBuf,
        /// List the mutants and the scenarios each would run; boot none (but the first, unless
        /// --results).
        #[arg(long)]
        dry_run: bool,
        /// What stdout carries: the table and the summary, or the matrix as JSON.
        #[arg(long, value_enum, default_value = "human")]
        format: Format,
        #[command(flatten)]
        vm: VmArgs,
    },
    /// Internal: run one workload job (JSON) inside the cgroup it was placed in.
    #[command(name = "__worker", hide = true)]
    Worker { job: String },
}

/// The options of the virtual machine, shared by `vm`, `ab` and `series`.
#[derive(Args)]
pub struct VmArgs {
    /// auto tries KVM and falls back to TCG when the guest does not start under it.
    #[arg(long, value_enum, default_value = "auto")]
    pub accel: vm::AccelChoice,
    /// Guest CPUs (default: this machine's, at most 4).
    #[arg(long)]
    pub cpus: Option<u32>,
    /// Guest memory.
    #[arg(long, default_value = "2G", value_parser = units::parse_size)]
    pub memory: u64,
    /// NUMA nodes of the guest: its memory split evenly, CPU i on node i mod N (1..=8). With
    /// two, pages migrate across nodes (the numa-migration scenario) and memory.numa_stat has a
    /// second node to be wrong about.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub numa_nodes: u32,
    /// Size of the sparse ext4 scratch disk.
    #[arg(long, default_value = "4G", value_parser = units::parse_size)]
    pub disk: u64,
    /// Write rate of the guest's slow disk (for scenarios with `scratch = "slow"`: pages
    /// under writeback stay so for seconds), bytes per second.
    #[arg(long, default_value = "8M", value_parser = units::parse_nonzero_size)]
    pub slow_disk_bps: u64,
    /// Swap file on the scratch disk, enabled in the guest (0 for none).
    #[arg(long, default_value = "256M", value_parser = units::parse_size)]
    pub swap: u64,
    /// Kill the VM after this long (default 60m under TCG, 20m under KVM): failure "timeout".
    #[arg(long, value_parser = units::parse_cli_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Do not fail a scenario for a kernel WARNING/BUG printed while it ran.
    #[arg(long)]
    pub allow_splats: bool,
    /// Copy the kernel console to stderr as it arrives.
    #[arg(long)]
    pub show_console: bool,
    /// The qemu binary.
    #[arg(long, default_value = "qemu-system-x86_64")]
    pub qemu: String,
    /// More kernel command line for the guest (e.g. memcg_mutate=stat:file_dirty:drop for the
    /// schemata kernel of kernel-patches/schemata).
    #[arg(long, value_name = "ARGS", default_value = "")]
    pub append: String,
}

/// A fault of the mutant schemata.
fn parse_mode(s: &str) -> Result<memcgtest::model::mutant::Mode, String> {
    memcgtest::model::mutant::Mode::parse(s)
        .ok_or_else(|| format!("{s:?}: one of drop, leak, double, local, fraction"))
}
