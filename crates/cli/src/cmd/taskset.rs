//! `rtscope taskset gen|check|run`: generate random task sets, predict their schedulability,
//! run them under SCHED_DEADLINE / SCHED_FIFO / CFS and compare (`rtscope_bench::taskset::job`:
//! every flag resolved and checked before a thread is started or a cpuset created).

use rtscope_bench::taskset::job::{self, Generated};
use rtscope_report::taskset as text;
use rtscope_verbs::bench::Rules;
use std::path::PathBuf;

/// `--policy`: the policy a task set runs under (`cfs` is another name of `other`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PolicyArg {
    Deadline,
    Fifo,
    #[value(alias = "cfs")]
    Other,
}

impl PolicyArg {
    /// The library's name of the policy.
    fn name(self) -> &'static str {
        match self {
            PolicyArg::Deadline => "deadline",
            PolicyArg::Fifo => "fifo",
            PolicyArg::Other => "other",
        }
    }
}

/// `--placement` of `taskset check|run`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PlacementArg {
    Global,
    Partitioned,
    Clustered,
}

/// `--placement` of `taskset sweep`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SweepPlacementArg {
    Partitioned,
    Global,
}

/// The library's name of a placement.
fn placement_name(p: impl clap::ValueEnum) -> String {
    p.to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Sub,
}

#[derive(clap::Subcommand)]
enum Sub {
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
struct SweepArgs {
    /// partitioned (per-CPU load R, each CPU its own set pinned in a one-CPU root domain) |
    /// global (one set at total U on every CPU)
    #[arg(long, value_enum)]
    placement: SweepPlacementArg,
    /// The points: per-CPU R (partitioned, 0–1) or total U (global, 0–CPUs), comma separated.
    #[arg(long, value_delimiter = ',', required = true, value_name = "LOAD,…")]
    loads: Vec<f64>,
    /// Sets per point (1..=1000; the thesis: 50).
    #[arg(long, default_value_t = 50)]
    sets: u32,
    /// Tasks per CPU (N = this × CPUs; thesis Ch. 3: N = 3m).
    #[arg(long, default_value_t = 3)]
    tasks_per_cpu: u32,
    /// Policies, comma separated: deadline, other (CFS), fifo (RM priorities).
    #[arg(long, value_delimiter = ',', default_value = "deadline,other")]
    policies: Vec<String>,
    /// Each run's length (0.5s..=10m; a bare number is seconds).
    #[arg(short = 'D', long, default_value = "10", value_name = "TIME")]
    duration: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// SCHED_DEADLINE runtime = C × margin + margin-us (Lelli 2014 §2.3: "slightly larger than
    /// C"; the same default as `taskset run`/`check`).
    #[arg(long, default_value_t = 1.1)]
    margin: f64,
    /// SCHED_DEADLINE runtime allowance added after the margin (µs): per-job overhead.
    #[arg(long, default_value_t = 50)]
    margin_us: u64,
    /// Job work: cputime (until C of thread CPU time) | calibrated (element count).
    #[arg(long, default_value = "cputime", value_name = "cputime|calibrated")]
    work: String,
    /// Every C ≥ this (µs; C_min rescaling, thesis §3.5.1; 0 = off).
    #[arg(long, default_value_t = 50)]
    cmin_us: u64,
    #[arg(long, default_value_t = 10.0)]
    tmin_ms: f64,
    #[arg(long, default_value_t = 100.0)]
    tmax_ms: f64,
    /// Working-set size per task, KiB.
    #[arg(long, default_value_t = 16)]
    wss_kb: u64,
    /// CPUs to use (kernel list); default: all online.
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// Set /proc/sys/kernel/sched_rt_runtime_us to this for the sweep (-1 or up to
    /// sched_rt_period_us); the old value is written back at the end.
    #[arg(long, value_name = "US", allow_negative_numbers = true)]
    rt_runtime_us: Option<i64>,
    /// Set every CPU's fair-server runtime (debugfs, Linux ≥ 6.12) to this many µs per its
    /// period for the sweep; the old values are written back at the end.
    #[arg(long, value_name = "US")]
    fair_server_us: Option<u64>,
    /// Output and store flags; `-q` prints only the table.
    #[command(flatten)]
    out: super::common::OutArgs,
}

#[derive(clap::Args)]
struct GenArgs {
    /// Number of tasks.
    #[arg(short = 'n', long = "tasks", default_value_t = 6)]
    n: u32,
    /// Total utilisation U (e.g. 1.4 = 140 %).
    #[arg(short = 'u', long)]
    utilisation: f64,
    /// randfixedsum | uunifast-discard
    #[arg(long, default_value = "randfixedsum", value_parser = ["randfixedsum", "uunifast-discard", "uunifast"])]
    method: String,
    #[arg(long, default_value_t = 10.0)]
    tmin_ms: f64,
    #[arg(long, default_value_t = 100.0)]
    tmax_ms: f64,
    /// Draw periods from this list (ms, comma separated) instead of log-uniform [tmin, tmax].
    #[arg(long, value_delimiter = ',')]
    periods_ms: Vec<f64>,
    /// Periods are rounded to this granularity (µs).
    #[arg(long, default_value_t = 100)]
    period_gran_us: u64,
    /// C_min rescaling (Lelli 2014 §3.5.1): every C ≥ this many µs (e.g. 50).
    #[arg(long)]
    cmin_us: Option<u64>,
    /// Per-task utilisation cap.
    #[arg(long, default_value_t = 1.0)]
    umax: f64,
    /// implicit | constrained
    #[arg(long, default_value = "implicit", value_parser = ["implicit", "constrained"])]
    deadlines: String,
    /// Constrained deadlines: D uniform in [C + f·(T − C), T].
    #[arg(long, default_value_t = 0.5)]
    dmin_frac: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of sets (each its own RNG stream of the seed).
    #[arg(long, default_value_t = 1)]
    count: u32,
    /// How many CPUs the set is meant for: U above this is rejected (default: the online
    /// CPUs).
    #[arg(long = "cpu-count", value_name = "N")]
    cpus: Option<u32>,
    /// Output file, or directory (count > 1, an existing directory or a path ending in '/':
    /// set-000.json …); stdout when absent.
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
    /// json | toml
    #[arg(long, default_value = "json", value_parser = ["json", "toml"])]
    format: String,
}

#[derive(clap::Args, Clone)]
struct PlanArgs {
    /// deadline | fifo | other
    #[arg(long, value_enum, default_value_t = PolicyArg::Deadline)]
    policy: PolicyArg,
    /// Fixed priorities for --policy fifo: rm | dm
    #[arg(long, default_value = "rm", value_parser = ["rm", "dm"])]
    priorities: String,
    /// global | partitioned | clustered
    #[arg(long, value_enum, default_value_t = PlacementArg::Global)]
    placement: PlacementArg,
    /// Bin packing for partitioned/clustered (decreasing utilisation): first | best | worst
    #[arg(long, default_value = "worst", value_parser = ["first", "best", "worst", "first-fit", "best-fit", "worst-fit"])]
    fit: String,
    /// Bin test for partitioned/clustered: policy (EDF for deadline/other, RTA for fifo) |
    /// deadline (every policy packed like SCHED_DEADLINE: same placement for all policies).
    #[arg(long, default_value = "policy", value_parser = ["policy", "deadline"])]
    bin_test: String,
    /// CPUs per cluster for --placement clustered.
    #[arg(long, default_value_t = 1)]
    cluster_size: u32,
    /// Clusters for --placement clustered from the topology: the CPUs that share an l2, l3 or
    /// the last-level cache (llc), or a NUMA node (sysfs); all clusters must be of one size
    #[arg(long, value_name = "l2|l3|llc|numa")]
    cluster_by: Option<String>,
    /// SCHED_DEADLINE runtime = C × margin + margin-us (Lelli 2014 §2.3: "slightly larger than C").
    #[arg(long, default_value_t = 1.1)]
    margin: f64,
    /// SCHED_DEADLINE runtime allowance added after the margin (µs): per-job overhead.
    #[arg(long, default_value_t = 50)]
    margin_us: u64,
    /// Add this measured overhead bound (µs) to every C in the predictions.
    #[arg(long, default_value_t = 0.0)]
    inflate_us: f64,
    /// CPUs to use (kernel list, e.g. 0-1); default: all online.
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// Do not bisect the kernel's free DEADLINE bandwidth (fair-server detection).
    #[arg(long)]
    no_probe: bool,
}

#[derive(clap::Args)]
struct CheckArgs {
    /// Task-set file (JSON, or TOML by extension).
    set: PathBuf,
    #[command(flatten)]
    plan: PlanArgs,
    /// The predictions as JSON (FILE, or stdout with `-`)
    #[command(flatten)]
    json: super::common::JsonOut,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Task-set file (JSON, or TOML by extension).
    set: Option<PathBuf>,
    /// Run an rt-app JSON workload instead.
    #[arg(long, conflicts_with = "set")]
    rt_app: Option<PathBuf>,
    /// Who runs an rt-app file: rt-app (the installed rt-app itself; the default when it is
    /// installed) or native (rtscope's threads: periodic files only, the rest refused).
    #[arg(long, value_name = "rt-app|native", value_parser = ["rt-app", "native"], requires = "rt_app")]
    engine: Option<String>,
    #[command(flatten)]
    plan: PlanArgs,
    /// How long (0.5s..=10m; a bare number is seconds; rt-app files: default their
    /// global.duration).
    #[arg(short = 'D', long, value_name = "TIME")]
    duration: Option<String>,
    /// Working-set size per task, KiB (Lelli 2014 §3.5.3 used 16 and 256).
    #[arg(long, default_value_t = 16)]
    wss_kb: u64,
    /// seq | random
    #[arg(long, default_value = "seq", value_parser = ["seq", "sequential", "random"])]
    access: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Job work: calibrated (element count, Lelli 2014) | cputime (until C of thread CPU time).
    #[arg(long, default_value = "calibrated", value_parser = ["calibrated", "cputime"])]
    work: String,
    /// Do not ask for SIGXCPU on DEADLINE runtime overruns.
    #[arg(long)]
    no_overrun_signal: bool,
    /// Output and store flags; `-q` prints only the summary line.
    #[command(flatten)]
    out: super::common::OutArgs,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    match a.cmd {
        Sub::Gen(g) => match job::generate(&g.lib(), &Rules)? {
            Generated::Text(t) => println!("{t}"),
            Generated::Written(note) => note.iter().for_each(|n| eprintln!("{n}")),
        },
        Sub::Check(c) => {
            c.json.check()?;
            let k = job::check(&c.set, &c.plan.lib(), &Rules)?;
            c.json.write(&serde_json::to_string_pretty(&k.json())?)?;
            if !c.json.to_stdout() {
                let source = c.set.display().to_string();
                let method = &k.admission.method;
                let (place, groups) = (&k.plan.placement, k.groups());
                print!(
                    "{}",
                    text::check(&source, &k.set, place, &groups, method, &k.predictions)
                );
            }
        }
        Sub::Run(r) => {
            let tags = r.out.validate()?;
            let job = job::prepare(&r.lib(), &Rules)?;
            rtscope_verbs::taskset::run(&job, &r.out.lib(), tags)?;
        }
        Sub::Sweep(w) => {
            let tags = w.out.validate()?;
            let job = rtscope_bench::taskset::sweep::prepare(&w.lib(), &Rules)?;
            rtscope_verbs::taskset::sweep(&job, &w.out.lib(), tags)?;
        }
    }
    Ok(())
}

impl GenArgs {
    fn lib(&self) -> job::GenFlags {
        job::GenFlags {
            n: self.n,
            utilisation: self.utilisation,
            method: self.method.clone(),
            tmin_ms: self.tmin_ms,
            tmax_ms: self.tmax_ms,
            periods_ms: self.periods_ms.clone(),
            period_gran_us: self.period_gran_us,
            cmin_us: self.cmin_us,
            umax: self.umax,
            deadlines: self.deadlines.clone(),
            dmin_frac: self.dmin_frac,
            seed: self.seed,
            count: self.count,
            cpu_count: self.cpus,
            output: self.output.clone(),
            format: self.format.clone(),
        }
    }
}

impl PlanArgs {
    fn lib(&self) -> job::PlanFlags {
        job::PlanFlags {
            policy: self.policy.name().into(),
            priorities: self.priorities.clone(),
            placement: placement_name(self.placement),
            fit: self.fit.clone(),
            bin_test: self.bin_test.clone(),
            cluster_size: self.cluster_size,
            cluster_by: self.cluster_by.clone(),
            margin: self.margin,
            margin_us: self.margin_us,
            inflate_us: self.inflate_us,
            cpus: self.cpus.clone(),
            no_probe: self.no_probe,
        }
    }
}

impl RunArgs {
    fn lib(&self) -> job::RunFlags {
        job::RunFlags {
            set: self.set.clone(),
            rt_app: self.rt_app.clone(),
            plan: self.plan.lib(),
            duration: self.duration.clone(),
            wss_kb: self.wss_kb,
            access: self.access.clone(),
            seed: self.seed,
            work: self.work.clone(),
            no_overrun_signal: self.no_overrun_signal,
            engine: self.engine.clone(),
        }
    }
}

impl SweepArgs {
    fn lib(&self) -> rtscope_bench::taskset::sweep::SweepFlags {
        rtscope_bench::taskset::sweep::SweepFlags {
            placement: placement_name(self.placement),
            loads: self.loads.clone(),
            sets: self.sets,
            tasks_per_cpu: self.tasks_per_cpu,
            policies: self.policies.clone(),
            duration: self.duration.clone(),
            seed: self.seed,
            margin: self.margin,
            margin_us: self.margin_us,
            work: self.work.clone(),
            cmin_us: self.cmin_us,
            tmin_ms: self.tmin_ms,
            tmax_ms: self.tmax_ms,
            wss_kb: self.wss_kb,
            cpus: self.cpus.clone(),
            rt_runtime_us: self.rt_runtime_us,
            fair_server_us: self.fair_server_us,
        }
    }
}
