//! The flags of `rtscope taskset` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;
use crate::cmd::common::{self, CpuListArg, JsonOut, OutArgs};

/// `--policy` and `--policies`: the policy a task set runs under (`cfs` is another name of
/// `other`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum PolicyArg {
    Deadline,
    Fifo,
    #[value(alias = "cfs")]
    Other,
}

/// `--placement` of `taskset check|run`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum PlacementArg {
    Global,
    Partitioned,
    Clustered,
}

/// `--placement` of `taskset sweep`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum SweepPlacementArg {
    Partitioned,
    Global,
}

/// `--priorities`: the fixed priorities of `--policy fifo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum PrioritiesArg {
    /// rate monotonic: the shorter the period, the higher the priority
    Rm,
    /// deadline monotonic: the shorter the relative deadline, the higher the priority
    Dm,
}

/// `--fit`: the bin packing of partitioned and clustered placements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum FitArg {
    #[value(alias = "first-fit")]
    First,
    #[value(alias = "best-fit")]
    Best,
    #[value(alias = "worst-fit")]
    Worst,
}

/// `--bin-test`: the test that decides whether a task fits a bin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum BinTestArg {
    /// the policy's own: EDF for deadline and other, RTA for fifo
    Policy,
    /// every policy packed like SCHED_DEADLINE: the same placement for all policies
    Deadline,
}

/// `--cluster-by`: what the CPUs of one cluster share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum ClusterByArg {
    #[value(name = "l2")]
    L2,
    #[value(name = "l3")]
    L3,
    /// the last-level cache: the highest cache level sysfs lists
    #[value(name = "llc")]
    Llc,
    /// a NUMA node
    #[value(name = "numa")]
    Numa,
}

/// `--work`: what a job does for its C.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum WorkArg {
    /// a calibrated element count over the task's working set (Lelli 2014 §3.5.1)
    Calibrated,
    /// until C of the thread's CPU time
    Cputime,
}

/// `--access`: how a job walks its working set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum AccessArg {
    #[value(alias = "sequential")]
    Seq,
    Random,
}

/// `--engine`: who runs an rt-app file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum EngineArg {
    /// the installed rt-app itself
    #[value(name = "rt-app")]
    RtApp,
    /// rtscope's own threads: periodic files only, the rest refused
    Native,
}

/// `--method`: how `taskset gen` draws the utilisations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum MethodArg {
    /// randfixedsum (Stafford 2006)
    #[value(name = "randfixedsum")]
    RandFixedSum,
    /// UUniFast-discard (Davis & Burns 2009)
    #[value(name = "uunifast-discard", alias = "uunifast")]
    UUniFastDiscard,
}

/// `--deadlines` of `taskset gen`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum DeadlinesArg {
    /// D = T
    Implicit,
    /// D ≤ T (see --dmin-frac)
    Constrained,
}

/// `--format` of `taskset gen`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum FormatArg {
    Json,
    Toml,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub(super) cmd: Sub,
}

#[derive(clap::Subcommand)]
pub(super) enum Sub {
    /// Generate random task sets (randfixedsum or UUniFast-discard, log-uniform periods).
    Gen(GenArgs),
    /// Print the schedulability tests for a set, policy and placement (nothing is run).
    Check(CheckArgs),
    /// Run a task set (or an rt-app JSON workload) and compare predicted vs observed.
    Run(RunArgs),
    /// Run a whole load sweep (Lelli 2014 Tables 2.1–2.2): sets generated from a seed, every
    /// set × policy run in this process, one record with the per-point miss % table.
    Sweep(SweepArgs),
}

/// `-D/--duration TIME` of `taskset run` and `taskset sweep`: how long one run lasts.
#[derive(clap::Args, Debug, Clone)]
pub(super) struct RunTimeArg {
    /// How long each run lasts: 500ms ..= 10m (e.g. 30s, 2m; a bare number is seconds)
    /// [default: sweep 10s; run: an rt-app file's global.duration, else 3s]
    #[arg(short = 'D', long, value_name = "TIME", allow_hyphen_values = true,
          value_parser = crate::cmd::common::duration(0.5, 600.0))]
    pub(super) duration: Option<Duration>,
}

/// `--margin` and `--margin-add`: the SCHED_DEADLINE reservation, the same in `taskset check`,
/// `run` and `sweep`.
#[derive(clap::Args, Debug, Clone)]
pub(super) struct ReserveArgs {
    /// SCHED_DEADLINE runtime = C × margin + margin-add, 1..=2 (Lelli 2014 §2.3: "slightly
    /// larger than C")
    #[arg(long, default_value_t = 1.1)]
    pub(super) margin: f64,
    /// SCHED_DEADLINE runtime allowance added after the margin: per-job overhead (0 ..= 100ms)
    #[arg(long, default_value = "50us", value_name = "TIME",
          value_parser = common::duration(0.0, 0.1))]
    pub(super) margin_add: Duration,
}

/// A period of a generated set: 1us ..= 1h.
fn period() -> impl clap::builder::TypedValueParser<Value = Duration> {
    common::duration(1e-6, 3600.0)
}

/// `--tmin` and `--tmax`: the range of the generated periods (`taskset gen|sweep`).
#[derive(clap::Args, Debug, Clone)]
pub(super) struct PeriodRangeArgs {
    /// Shortest period: periods are log-uniform in [tmin, tmax] (1us ..= 1h)
    #[arg(long, default_value = "10ms", value_name = "TIME", value_parser = period())]
    pub(super) tmin: Duration,
    /// Longest period (1us ..= 1h)
    #[arg(long, default_value = "100ms", value_name = "TIME", value_parser = period())]
    pub(super) tmax: Duration,
}

/// `--rt-runtime`: the RT tasks' runtime per sched_rt_period_us, or `-1` (`unlimited`): no
/// limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RtRuntimeArg {
    Unlimited,
    Limit(Duration),
}

fn rt_runtime(s: &str) -> Result<RtRuntimeArg, String> {
    match s.trim() {
        "-1" | "unlimited" => Ok(RtRuntimeArg::Unlimited),
        t => rtscope_model::duration::parse_secs_in(t, 1e-6, 3600.0)
            .map(|secs| RtRuntimeArg::Limit(Duration::from_secs_f64(secs)))
            .map_err(|e| format!("{e}; or -1 (unlimited): no limit")),
    }
}

/// `--wss-kb`: each task's working set (`taskset run|sweep`).
#[derive(clap::Args, Debug, Clone)]
pub(super) struct WssArg {
    /// Working-set size per task, KiB, 1..=1048576 (Lelli 2014 §3.5.3 used 16 and 256)
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub(super) wss_kb: u64,
}

#[derive(clap::Args)]
pub(super) struct SweepArgs {
    /// partitioned (per-CPU load R, each CPU its own set pinned in a one-CPU root domain) |
    /// global (one set at total U on every CPU)
    #[arg(long, value_enum)]
    pub(super) placement: SweepPlacementArg,
    /// The points: per-CPU R (partitioned, 0–1) or total U (global, 0–CPUs), comma separated.
    #[arg(long, value_delimiter = ',', required = true, value_name = "LOAD,…")]
    pub(super) loads: Vec<f64>,
    /// Sets per point (1..=1000; the thesis: 50).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(super) sets: u32,
    /// Tasks per CPU (N = this × CPUs; thesis Ch. 3: N = 3m).
    #[arg(long, default_value_t = 3)]
    pub(super) tasks_per_cpu: u32,
    /// Policies, comma separated: deadline, other (CFS), fifo (RM priorities).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "deadline,other",
        value_name = "POLICY,…"
    )]
    pub(super) policies: Vec<PolicyArg>,
    #[command(flatten)]
    pub(super) duration: RunTimeArg,
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    #[command(flatten)]
    pub(super) reserve: ReserveArgs,
    /// Job work
    #[arg(long, value_enum, default_value_t = WorkArg::Cputime)]
    pub(super) work: WorkArg,
    /// Every C ≥ this (C_min rescaling, thesis §3.5.1; 0 = off; 0 ..= 10s)
    #[arg(long, default_value = "50us", value_name = "TIME",
          value_parser = common::duration(0.0, 10.0))]
    pub(super) cmin: Duration,
    #[command(flatten)]
    pub(super) periods: PeriodRangeArgs,
    #[command(flatten)]
    pub(super) wss: WssArg,
    #[command(flatten)]
    pub(super) cpus: CpuListArg,
    /// Set /proc/sys/kernel/sched_rt_runtime_us to this for the sweep: whole µs up to
    /// sched_rt_period_us (e.g. 950ms), or -1 (unlimited); the old value is written back at
    /// the end.
    #[arg(long, value_name = "TIME|-1", allow_hyphen_values = true, value_parser = rt_runtime)]
    pub(super) rt_runtime: Option<RtRuntimeArg>,
    /// Set every CPU's fair-server runtime (debugfs, Linux ≥ 6.12) to this per its period for
    /// the sweep (0 ..= the period, e.g. 50ms); the old values are written back at the end.
    #[arg(long, value_name = "TIME", value_parser = common::duration(0.0, 3600.0))]
    pub(super) fair_server: Option<Duration>,
    /// Output and store flags; `-q` prints only the table.
    #[command(flatten)]
    pub(super) out: OutArgs,
}

#[derive(clap::Args)]
pub(super) struct GenArgs {
    /// Number of tasks.
    #[arg(short = 'n', long = "tasks", default_value_t = 6)]
    pub(super) n: u32,
    /// Total utilisation U (e.g. 1.4 = 140 %).
    #[arg(short = 'u', long)]
    pub(super) utilisation: f64,
    /// How the utilisations are drawn
    #[arg(long, value_enum, default_value_t = MethodArg::RandFixedSum)]
    pub(super) method: MethodArg,
    #[command(flatten)]
    pub(super) periods: PeriodRangeArgs,
    /// Draw periods from this list (comma separated, e.g. 10ms,20ms; each 1us ..= 1h) instead
    /// of log-uniform [tmin, tmax].
    #[arg(long = "periods", value_delimiter = ',', value_name = "TIME,…", value_parser = period())]
    pub(super) periods_list: Vec<Duration>,
    /// Periods are rounded to this granularity (1us ..= 1h)
    #[arg(long, default_value = "100us", value_name = "TIME", value_parser = period())]
    pub(super) period_gran: Duration,
    /// C_min rescaling (Lelli 2014 §3.5.1): every C ≥ this (e.g. 50us; 0 ..= 10s)
    #[arg(long, value_name = "TIME", value_parser = common::duration(0.0, 10.0))]
    pub(super) cmin: Option<Duration>,
    /// Per-task utilisation cap.
    #[arg(long, default_value_t = 1.0)]
    pub(super) umax: f64,
    /// The tasks' relative deadlines
    #[arg(long, value_enum, default_value_t = DeadlinesArg::Implicit)]
    pub(super) deadlines: DeadlinesArg,
    /// Constrained deadlines: D uniform in [C + f·(T − C), T].
    #[arg(long, default_value_t = 0.5)]
    pub(super) dmin_frac: f64,
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Number of sets, 1..=100000 (each its own RNG stream of the seed).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub(super) count: u32,
    /// How many CPUs the set is meant for: U above this is rejected (default: the online
    /// CPUs).
    #[arg(long = "cpu-count", value_name = "N")]
    pub(super) cpus: Option<u32>,
    /// Output file, or directory (count > 1, an existing directory or a path ending in '/':
    /// set-000.json …); stdout when absent.
    #[arg(short = 'o', long)]
    pub(super) output: Option<PathBuf>,
    /// The sets' file format
    #[arg(long, value_enum, default_value_t = FormatArg::Json)]
    pub(super) format: FormatArg,
}

#[derive(clap::Args, Clone)]
pub(super) struct PlanArgs {
    /// The policy every task runs under
    #[arg(long, value_enum, default_value_t = PolicyArg::Deadline)]
    pub(super) policy: PolicyArg,
    /// Fixed priorities for --policy fifo
    #[arg(long, value_enum, default_value_t = PrioritiesArg::Rm)]
    pub(super) priorities: PrioritiesArg,
    /// Where the tasks run: every CPU, one CPU each, or one cluster each
    #[arg(long, value_enum, default_value_t = PlacementArg::Global)]
    pub(super) placement: PlacementArg,
    /// Bin packing for partitioned/clustered (decreasing utilisation)
    #[arg(long, value_enum, default_value_t = FitArg::Worst)]
    pub(super) fit: FitArg,
    /// Bin test for partitioned/clustered
    #[arg(long, value_enum, default_value_t = BinTestArg::Policy)]
    pub(super) bin_test: BinTestArg,
    /// CPUs per cluster for --placement clustered.
    #[arg(long, default_value_t = 1)]
    pub(super) cluster_size: u32,
    /// Clusters for --placement clustered from the topology: the CPUs that share a cache
    /// or a NUMA node (sysfs); all clusters must be of one size
    #[arg(long, value_enum, value_name = "SHARED")]
    pub(super) cluster_by: Option<ClusterByArg>,
    #[command(flatten)]
    pub(super) reserve: ReserveArgs,
    /// Add this measured overhead bound to every C in the predictions (0 ..= 100ms)
    #[arg(long, default_value = "0s", value_name = "TIME",
          value_parser = common::duration(0.0, 0.1))]
    pub(super) inflate: Duration,
    #[command(flatten)]
    pub(super) cpus: CpuListArg,
    /// Do not bisect the kernel's free DEADLINE bandwidth (fair-server detection).
    #[arg(long)]
    pub(super) no_probe: bool,
}

#[derive(clap::Args)]
pub(super) struct CheckArgs {
    /// Task-set file (JSON, or TOML by extension).
    pub(super) set: PathBuf,
    #[command(flatten)]
    pub(super) plan: PlanArgs,
    /// The predictions as JSON (FILE, or stdout with `-`)
    #[command(flatten)]
    pub(super) json: JsonOut,
}

#[derive(clap::Args)]
pub(super) struct RunArgs {
    /// Task-set file (JSON, or TOML by extension).
    pub(super) set: Option<PathBuf>,
    /// Run an rt-app JSON workload instead.
    #[arg(long, conflicts_with = "set")]
    pub(super) rt_app: Option<PathBuf>,
    /// Who runs an rt-app file [default: rt-app when it is installed, else native]
    #[arg(long, value_enum, requires = "rt_app")]
    pub(super) engine: Option<EngineArg>,
    #[command(flatten)]
    pub(super) plan: PlanArgs,
    #[command(flatten)]
    pub(super) duration: RunTimeArg,
    #[command(flatten)]
    pub(super) wss: WssArg,
    /// How a job walks its working set
    #[arg(long, value_enum, default_value_t = AccessArg::Seq)]
    pub(super) access: AccessArg,
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Job work
    #[arg(long, value_enum, default_value_t = WorkArg::Calibrated)]
    pub(super) work: WorkArg,
    /// Do not ask for SIGXCPU on DEADLINE runtime overruns.
    #[arg(long)]
    pub(super) no_overrun_signal: bool,
    /// Output and store flags; `-q` prints only the summary line.
    #[command(flatten)]
    pub(super) out: OutArgs,
}
