//! The flags of `rtscope taskset` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

/// `--policy`: the policy a task set runs under (`cfs` is another name of `other`).
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
    #[arg(long, default_value_t = 50)]
    pub(super) sets: u32,
    /// Tasks per CPU (N = this × CPUs; thesis Ch. 3: N = 3m).
    #[arg(long, default_value_t = 3)]
    pub(super) tasks_per_cpu: u32,
    /// Policies, comma separated: deadline, other (CFS), fifo (RM priorities).
    #[arg(long, value_delimiter = ',', default_value = "deadline,other")]
    pub(super) policies: Vec<String>,
    /// Each run's length (0.5s..=10m; a bare number is seconds).
    #[arg(short = 'D', long, default_value = "10", value_name = "TIME")]
    pub(super) duration: String,
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// SCHED_DEADLINE runtime = C × margin + margin-us (Lelli 2014 §2.3: "slightly larger than
    /// C"; the same default as `taskset run`/`check`).
    #[arg(long, default_value_t = 1.1)]
    pub(super) margin: f64,
    /// SCHED_DEADLINE runtime allowance added after the margin (µs): per-job overhead.
    #[arg(long, default_value_t = 50)]
    pub(super) margin_us: u64,
    /// Job work: cputime (until C of thread CPU time) | calibrated (element count).
    #[arg(long, default_value = "cputime", value_name = "cputime|calibrated")]
    pub(super) work: String,
    /// Every C ≥ this (µs; C_min rescaling, thesis §3.5.1; 0 = off).
    #[arg(long, default_value_t = 50)]
    pub(super) cmin_us: u64,
    #[arg(long, default_value_t = 10.0)]
    pub(super) tmin_ms: f64,
    #[arg(long, default_value_t = 100.0)]
    pub(super) tmax_ms: f64,
    /// Working-set size per task, KiB.
    #[arg(long, default_value_t = 16)]
    pub(super) wss_kb: u64,
    /// CPUs to use (kernel list); default: all online.
    #[arg(long, value_name = "LIST")]
    pub(super) cpus: Option<String>,
    /// Set /proc/sys/kernel/sched_rt_runtime_us to this for the sweep (-1 or up to
    /// sched_rt_period_us); the old value is written back at the end.
    #[arg(long, value_name = "US", allow_negative_numbers = true)]
    pub(super) rt_runtime_us: Option<i64>,
    /// Set every CPU's fair-server runtime (debugfs, Linux ≥ 6.12) to this many µs per its
    /// period for the sweep; the old values are written back at the end.
    #[arg(long, value_name = "US")]
    pub(super) fair_server_us: Option<u64>,
    /// Output and store flags; `-q` prints only the table.
    #[command(flatten)]
    pub(super) out: crate::cmd::common::OutArgs,
}

#[derive(clap::Args)]
pub(super) struct GenArgs {
    /// Number of tasks.
    #[arg(short = 'n', long = "tasks", default_value_t = 6)]
    pub(super) n: u32,
    /// Total utilisation U (e.g. 1.4 = 140 %).
    #[arg(short = 'u', long)]
    pub(super) utilisation: f64,
    /// randfixedsum | uunifast-discard
    #[arg(long, default_value = "randfixedsum", value_parser = ["randfixedsum", "uunifast-discard", "uunifast"])]
    pub(super) method: String,
    #[arg(long, default_value_t = 10.0)]
    pub(super) tmin_ms: f64,
    #[arg(long, default_value_t = 100.0)]
    pub(super) tmax_ms: f64,
    /// Draw periods from this list (ms, comma separated) instead of log-uniform [tmin, tmax].
    #[arg(long, value_delimiter = ',')]
    pub(super) periods_ms: Vec<f64>,
    /// Periods are rounded to this granularity (µs).
    #[arg(long, default_value_t = 100)]
    pub(super) period_gran_us: u64,
    /// C_min rescaling (Lelli 2014 §3.5.1): every C ≥ this many µs (e.g. 50).
    #[arg(long)]
    pub(super) cmin_us: Option<u64>,
    /// Per-task utilisation cap.
    #[arg(long, default_value_t = 1.0)]
    pub(super) umax: f64,
    /// implicit | constrained
    #[arg(long, default_value = "implicit", value_parser = ["implicit", "constrained"])]
    pub(super) deadlines: String,
    /// Constrained deadlines: D uniform in [C + f·(T − C), T].
    #[arg(long, default_value_t = 0.5)]
    pub(super) dmin_frac: f64,
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Number of sets (each its own RNG stream of the seed).
    #[arg(long, default_value_t = 1)]
    pub(super) count: u32,
    /// How many CPUs the set is meant for: U above this is rejected (default: the online
    /// CPUs).
    #[arg(long = "cpu-count", value_name = "N")]
    pub(super) cpus: Option<u32>,
    /// Output file, or directory (count > 1, an existing directory or a path ending in '/':
    /// set-000.json …); stdout when absent.
    #[arg(short = 'o', long)]
    pub(super) output: Option<PathBuf>,
    /// json | toml
    #[arg(long, default_value = "json", value_parser = ["json", "toml"])]
    pub(super) format: String,
}

#[derive(clap::Args, Clone)]
pub(super) struct PlanArgs {
    /// deadline | fifo | other
    #[arg(long, value_enum, default_value_t = PolicyArg::Deadline)]
    pub(super) policy: PolicyArg,
    /// Fixed priorities for --policy fifo: rm | dm
    #[arg(long, default_value = "rm", value_parser = ["rm", "dm"])]
    pub(super) priorities: String,
    /// global | partitioned | clustered
    #[arg(long, value_enum, default_value_t = PlacementArg::Global)]
    pub(super) placement: PlacementArg,
    /// Bin packing for partitioned/clustered (decreasing utilisation): first | best | worst
    #[arg(long, default_value = "worst", value_parser = ["first", "best", "worst", "first-fit", "best-fit", "worst-fit"])]
    pub(super) fit: String,
    /// Bin test for partitioned/clustered: policy (EDF for deadline/other, RTA for fifo) |
    /// deadline (every policy packed like SCHED_DEADLINE: same placement for all policies).
    #[arg(long, default_value = "policy", value_parser = ["policy", "deadline"])]
    pub(super) bin_test: String,
    /// CPUs per cluster for --placement clustered.
    #[arg(long, default_value_t = 1)]
    pub(super) cluster_size: u32,
    /// Clusters for --placement clustered from the topology: the CPUs that share an l2, l3 or
    /// the last-level cache (llc), or a NUMA node (sysfs); all clusters must be of one size
    #[arg(long, value_name = "l2|l3|llc|numa")]
    pub(super) cluster_by: Option<String>,
    /// SCHED_DEADLINE runtime = C × margin + margin-us (Lelli 2014 §2.3: "slightly larger than C").
    #[arg(long, default_value_t = 1.1)]
    pub(super) margin: f64,
    /// SCHED_DEADLINE runtime allowance added after the margin (µs): per-job overhead.
    #[arg(long, default_value_t = 50)]
    pub(super) margin_us: u64,
    /// Add this measured overhead bound (µs) to every C in the predictions.
    #[arg(long, default_value_t = 0.0)]
    pub(super) inflate_us: f64,
    /// CPUs to use (kernel list, e.g. 0-1); default: all online.
    #[arg(long, value_name = "LIST")]
    pub(super) cpus: Option<String>,
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
    pub(super) json: crate::cmd::common::JsonOut,
}

#[derive(clap::Args)]
pub(super) struct RunArgs {
    /// Task-set file (JSON, or TOML by extension).
    pub(super) set: Option<PathBuf>,
    /// Run an rt-app JSON workload instead.
    #[arg(long, conflicts_with = "set")]
    pub(super) rt_app: Option<PathBuf>,
    /// Who runs an rt-app file: rt-app (the installed rt-app itself; the default when it is
    /// installed) or native (rtscope's threads: periodic files only, the rest refused).
    #[arg(long, value_name = "rt-app|native", value_parser = ["rt-app", "native"], requires = "rt_app")]
    pub(super) engine: Option<String>,
    #[command(flatten)]
    pub(super) plan: PlanArgs,
    /// How long (0.5s..=10m; a bare number is seconds; rt-app files: default their
    /// global.duration).
    #[arg(short = 'D', long, value_name = "TIME")]
    pub(super) duration: Option<String>,
    /// Working-set size per task, KiB (Lelli 2014 §3.5.3 used 16 and 256).
    #[arg(long, default_value_t = 16)]
    pub(super) wss_kb: u64,
    /// seq | random
    #[arg(long, default_value = "seq", value_parser = ["seq", "sequential", "random"])]
    pub(super) access: String,
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Job work: calibrated (element count, Lelli 2014) | cputime (until C of thread CPU time).
    #[arg(long, default_value = "calibrated", value_parser = ["calibrated", "cputime"])]
    pub(super) work: String,
    /// Do not ask for SIGXCPU on DEADLINE runtime overruns.
    #[arg(long)]
    pub(super) no_overrun_signal: bool,
    /// Output and store flags; `-q` prints only the summary line.
    #[command(flatten)]
    pub(super) out: crate::cmd::common::OutArgs,
}
