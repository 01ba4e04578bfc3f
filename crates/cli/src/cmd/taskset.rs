//! `rtscope taskset gen|check|run`: generate random task sets, predict their
//! schedulability, run them under SCHED_DEADLINE / SCHED_FIFO / CFS and compare.
//!
//! Flags are resolved and validated (task set read, placement computed) before a thread is
//! started or a cpuset created; bad input exits 2 with one line naming the option.

use crate::usage;
use anyhow::Context;
use rtscope_analysis::sched::{Fit, PriorityOrder};
use rtscope_bench::taskset::{
    self as ts, gen, rtapp, work::Access, PlacementKind, PolicyKind, RunOptions, RunPlan,
    TasksetError,
};
use rtscope_model::taskset::{TaskSet, TasksetResult};
use rtscope_report::taskset as text;
use std::path::PathBuf;

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
    /// CPUs). `--cpus N` (its old name) still works; `--cpus` elsewhere is a CPU list.
    #[arg(long = "cpu-count", value_name = "N", alias = "cpus")]
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
    #[arg(long, default_value = "deadline", value_parser = ["deadline", "fifo", "other", "cfs"])]
    policy: String,
    /// Fixed priorities for --policy fifo: rm | dm
    #[arg(long, default_value = "rm", value_parser = ["rm", "dm"])]
    priorities: String,
    /// global | partitioned | clustered
    #[arg(long, default_value = "global", value_parser = ["global", "partitioned", "clustered"])]
    placement: String,
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
    /// Run an rt-app JSON workload of periodic tasks instead.
    #[arg(long, conflicts_with = "set")]
    rt_app: Option<PathBuf>,
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
        Sub::Gen(g) => gen_cmd(g),
        Sub::Check(c) => check_cmd(c),
        Sub::Run(r) => run_cmd(r),
    }
}

fn invalid(e: TasksetError) -> anyhow::Error {
    match e {
        TasksetError::Invalid(s) => usage!("{s}"),
        other => anyhow::Error::new(other),
    }
}

fn gen_cmd(g: GenArgs) -> anyhow::Result<()> {
    let method = match g.method.as_str() {
        "randfixedsum" => gen::Method::RandFixedSum,
        "uunifast-discard" | "uunifast" => gen::Method::UUniFastDiscard,
        m => {
            return Err(usage!(
                "--method: randfixedsum or uunifast-discard, got '{m}'"
            ))
        }
    };
    let constrained = match g.deadlines.as_str() {
        "implicit" => false,
        "constrained" => true,
        d => return Err(usage!("--deadlines: implicit or constrained, got '{d}'")),
    };
    let toml_format = match g.format.as_str() {
        "json" => false,
        "toml" => true,
        f => return Err(usage!("--format: json or toml, got '{f}'")),
    };
    let ms = |x: f64, name: &str| -> anyhow::Result<u64> {
        if !(x > 0.0 && x <= 3_600_000.0) {
            return Err(usage!("{name}: must be in (0, 3600000] ms, got {x}"));
        }
        Ok((x * 1e6).round() as u64)
    };
    let tmin = ms(g.tmin_ms, "--tmin-ms")?;
    let tmax = ms(g.tmax_ms, "--tmax-ms")?;
    let period_set = g
        .periods_ms
        .iter()
        .map(|&p| ms(p, "--periods-ms"))
        .collect::<anyhow::Result<Vec<u64>>>()?;
    let cpus = match g.cpus {
        Some(c) => c,
        None => rtscope_probe::sys::online_cpus()
            .map(|v| v.len() as u32)
            .unwrap_or(1),
    };
    if g.utilisation > cpus as f64 {
        return Err(usage!(
            "-u: U = {} exceeds the {cpus} CPUs the set is for (--cpu-count): infeasible on any scheduler",
            g.utilisation
        ));
    }
    if g.count < 1 || g.count > 100_000 {
        return Err(usage!("--count: must be 1..=100000, got {}", g.count));
    }
    if g.period_gran_us == 0 {
        return Err(usage!("--period-gran-us: must be ≥ 1"));
    }
    let base = gen::GenParams {
        n: g.n,
        utilisation: g.utilisation,
        method,
        tmin_ns: tmin,
        tmax_ns: tmax,
        period_set_ns: period_set,
        granularity_ns: g.period_gran_us * 1000,
        cmin_ns: g.cmin_us.map(|c| c * 1000),
        umax: g.umax,
        constrained,
        dmin_frac: g.dmin_frac,
        seed: g.seed,
        index: 0,
    };
    gen::validate(&base).map_err(|e| usage!("{e}"))?;
    // Generate everything before writing anything: nothing half-written on error.
    let sets = (0..g.count)
        .map(|i| {
            gen::generate(&gen::GenParams {
                index: i,
                ..base.clone()
            })
        })
        .collect::<Result<Vec<TaskSet>, _>>()
        .map_err(|e| usage!("{e}"))?;
    let ext = if toml_format { "toml" } else { "json" };
    match (&g.output, g.count) {
        (None, 1) => println!("{}", ts::write_set(&sets[0], toml_format)?),
        (None, _) => return Err(usage!("--count > 1 needs -o DIR")),
        (Some(p), 1) if !p.is_dir() && !p.to_string_lossy().ends_with('/') => {
            super::common::write_atomic(p, ts::write_set(&sets[0], toml_format)?.as_bytes())?;
        }
        (Some(dir), _) => {
            super::common::check_output_dir("-o", dir)?;
            for (i, s) in sets.iter().enumerate() {
                let p = dir.join(format!("set-{i:03}.{ext}"));
                super::common::write_atomic(&p, ts::write_set(s, toml_format)?.as_bytes())?;
            }
            eprintln!("wrote {} sets to {}", sets.len(), dir.display());
        }
    }
    Ok(())
}

fn resolve_cpus(spec: &Option<String>) -> anyhow::Result<Vec<u32>> {
    super::common::resolve_cpus("--cpus", spec.as_deref())
}

fn resolve_policy(p: &PlanArgs) -> anyhow::Result<(PolicyKind, PlacementKind)> {
    let order = match p.priorities.as_str() {
        "rm" => PriorityOrder::RateMonotonic,
        "dm" => PriorityOrder::DeadlineMonotonic,
        o => return Err(usage!("--priorities: rm or dm, got '{o}'")),
    };
    let policy = match p.policy.as_str() {
        "deadline" => PolicyKind::Deadline,
        "fifo" => PolicyKind::Fifo(order),
        "other" | "cfs" => PolicyKind::Other,
        o => return Err(usage!("--policy: deadline, fifo or other, got '{o}'")),
    };
    let fit = match p.fit.as_str() {
        "first" | "first-fit" => Fit::FirstFit,
        "best" | "best-fit" => Fit::BestFit,
        "worst" | "worst-fit" => Fit::WorstFit,
        f => return Err(usage!("--fit: first, best or worst, got '{f}'")),
    };
    let placement = match p.placement.as_str() {
        "global" => PlacementKind::Global,
        "partitioned" => PlacementKind::Partitioned(fit),
        "clustered" => PlacementKind::Clustered {
            size: p.cluster_size,
            fit,
        },
        o => {
            return Err(usage!(
                "--placement: global, partitioned or clustered, got '{o}'"
            ))
        }
    };
    if !["policy", "deadline"].contains(&p.bin_test.as_str()) {
        return Err(usage!(
            "--bin-test: policy or deadline, got '{}'",
            p.bin_test
        ));
    }
    if p.margin_us > 100_000 {
        return Err(usage!(
            "--margin-us: must be 0..=100000, got {}",
            p.margin_us
        ));
    }
    if !(1.0..=2.0).contains(&p.margin) {
        return Err(usage!("--margin: must be in [1, 2], got {}", p.margin));
    }
    if !(0.0..=100_000.0).contains(&p.inflate_us) {
        return Err(usage!(
            "--inflate-us: must be in [0, 100000], got {}",
            p.inflate_us
        ));
    }
    Ok((policy, placement))
}

fn plan_options(p: &PlanArgs) -> ts::plan::PlanOptions {
    ts::plan::PlanOptions {
        margin: p.margin,
        extra_runtime_ns: p.margin_us * 1000,
        same_bins: p.bin_test == "deadline",
    }
}

fn check_cmd(c: CheckArgs) -> anyhow::Result<()> {
    c.json.check()?;
    let set = ts::read_set(&c.set).map_err(invalid)?;
    let (policy, placement) = resolve_policy(&c.plan)?;
    let cpus = resolve_cpus(&c.plan.cpus)?;
    let (adm, lim) = ts::runner::admission_info(
        cpus.len() as u32,
        !c.plan.no_probe && policy == PolicyKind::Deadline,
    );
    let plan = ts::plan::plan_with(&set, policy, placement, &cpus, lim, &plan_options(&c.plan))
        .map_err(invalid)?;
    let preds = ts::predict(&plan, lim, (c.plan.inflate_us * 1000.0) as u64);
    c.json
        .write(&serde_json::to_string_pretty(&serde_json::json!({
            "schema_version": rtscope_model::SCHEMA_VERSION,
            "utilisation": set.utilisation(),
            "placement": plan.placement,
            "admission": adm,
            "predictions": preds,
        }))?)?;
    if !c.json.to_stdout() {
        println!(
            "task set {}: {} tasks, U = {:.4}",
            c.set.display(),
            set.tasks.len(),
            set.utilisation()
        );
        let groups: Vec<(Vec<u32>, u32, f64)> = plan
            .specs
            .iter()
            .map(|s| (s.cpus.clone(), s.task.id, s.task.utilisation()))
            .collect();
        print!(
            "{}",
            text::placement(&plan.placement.kind, &plan.placement.heuristic, &groups)
        );
        println!("admission: {}", adm.method);
        print!("{}", text::predictions(&preds));
    }
    Ok(())
}

fn run_cmd(r: RunArgs) -> anyhow::Result<()> {
    let tags = r.out.validate()?;
    let cpus = resolve_cpus(&r.plan.cpus)?;
    let access = match r.access.as_str() {
        "seq" | "sequential" => Access::Sequential,
        "random" => Access::Random,
        a => return Err(usage!("--access: seq or random, got '{a}'")),
    };
    let work_by_cputime = match r.work.as_str() {
        "calibrated" => false,
        "cputime" => true,
        w => return Err(usage!("--work: calibrated or cputime, got '{w}'")),
    };
    if !(1..=1024 * 1024).contains(&r.wss_kb) {
        return Err(usage!("--wss-kb: must be 1..=1048576, got {}", r.wss_kb));
    }
    let (policy, placement) = resolve_policy(&r.plan)?;
    let online = rtscope_probe::sys::online_cpus().context("reading online CPUs")?;
    if policy == PolicyKind::Deadline && placement == PlacementKind::Global && cpus != online {
        return Err(usage!(
            "--cpus: global SCHED_DEADLINE runs on its whole root domain (CPUs {online:?}); the kernel refuses narrower affinities — use --placement partitioned or clustered"
        ));
    }
    let inflate_ns = (r.plan.inflate_us * 1000.0) as u64;
    let is_dl = |p: &RunPlan| {
        p.specs
            .iter()
            .any(|s| matches!(s.policy, ts::ThreadPolicy::Deadline { .. }))
    };
    let mut admission = None;
    let (plan, set, source, file_duration, notes) = match (&r.set, &r.rt_app) {
        (Some(path), None) => {
            let set = ts::read_set(path).map_err(invalid)?;
            // Probe only for DEADLINE (the only policy with kernel admission): the bin test of
            // partitioned DEADLINE needs the capacity the kernel really offers per CPU.
            let probe = !r.plan.no_probe && policy == PolicyKind::Deadline;
            let (info, lim) = ts::runner::admission_info(cpus.len() as u32, probe);
            let plan =
                ts::plan::plan_with(&set, policy, placement, &cpus, lim, &plan_options(&r.plan))
                    .map_err(invalid)?;
            admission = Some((info, lim));
            (plan, set, path.display().to_string(), None, Vec::new())
        }
        (None, Some(path)) => {
            let text = super::common::read_input("--rt-app", path)?;
            let w = rtapp::parse(&text, &cpus)
                .map_err(|e| usage!("--rt-app {}: {e}", path.display()))?;
            let set = TaskSet {
                schema_version: rtscope_model::SCHEMA_VERSION,
                tasks: w.specs.iter().map(|s| s.task.clone()).collect(),
                generated: None,
            };
            let u = set.utilisation();
            if u > cpus.len() as f64 {
                return Err(usage!(
                    "--rt-app: U = {u:.4} > {} CPUs: infeasible",
                    cpus.len()
                ));
            }
            let pinned = w.specs.iter().all(|s| s.cpus.len() == 1);
            let scopes = if pinned {
                cpus.iter()
                    .map(|&c| {
                        let idx = (0..w.specs.len())
                            .filter(|&i| w.specs[i].cpus == [c])
                            .collect();
                        (format!("cpu{c}"), vec![c], idx)
                    })
                    .collect()
            } else {
                vec![(
                    "all".to_string(),
                    cpus.clone(),
                    (0..w.specs.len()).collect(),
                )]
            };
            if pinned
                && w.specs
                    .iter()
                    .any(|s| matches!(s.policy, ts::ThreadPolicy::Deadline { .. }))
            {
                return Err(usage!("--rt-app: SCHED_DEADLINE threads cannot be pinned to one CPU through 'cpus' (the kernel refuses affinities narrower than the root domain); drop 'cpus' or use a task-set file with --placement partitioned"));
            }
            let plan = RunPlan {
                placement: rtscope_model::taskset::Placement {
                    kind: if pinned { "partitioned" } else { "global" }.into(),
                    heuristic: "rt-app cpus".into(),
                    cpus: w
                        .specs
                        .iter()
                        .map(|s| {
                            if s.cpus.is_empty() {
                                cpus.clone()
                            } else {
                                s.cpus.clone()
                            }
                        })
                        .collect(),
                },
                specs: w.specs,
                groups: Vec::new(),
                scopes,
                policy: "rt-app".into(),
                priorities: None,
                margin: 1.0,
            };
            (
                plan,
                set,
                format!("rt-app:{}", path.display()),
                w.duration_s,
                w.notes,
            )
        }
        _ => return Err(usage!("taskset run: give a task-set FILE or --rt-app FILE")),
    };
    let duration = match &r.duration {
        Some(d) => Some(super::common::parse_duration_in(
            "--duration",
            d,
            0.5,
            600.0,
        )?),
        None => None,
    }
    .or(file_duration)
    .unwrap_or(3.0);
    if !(0.5..=600.0).contains(&duration) {
        return Err(usage!("--duration: must be 0.5..=600 s, got {duration}"));
    }
    // CFS at nice ≥ 0 needs nothing; any real-time policy or negative nice needs CAP_SYS_NICE.
    if plan
        .specs
        .iter()
        .any(|s| !matches!(s.policy, ts::ThreadPolicy::Other(n) if n >= 0))
    {
        super::common::require(
            "taskset run",
            rtscope_session::privilege::Need::RealTime,
            "SCHED_DEADLINE/SCHED_FIFO threads or negative nice",
        )?;
    }
    for n in &notes {
        eprintln!("rtscope: note: {n}");
    }
    let opts = RunOptions {
        duration_ns: (duration * 1e9) as u64,
        wss_bytes: r.wss_kb * 1024,
        access,
        seed: r.seed,
        inflate_ns,
        probe_admission: !r.plan.no_probe && is_dl(&plan),
        cpus: cpus.clone(),
        source,
        dl_overrun_signal: !r.no_overrun_signal,
        admission,
        work_by_cputime,
    };
    let started = std::time::SystemTime::now();
    let res = ts::run(&plan, &opts, &set).map_err(|e| match e {
        TasksetError::Invalid(s) => usage!("{s}"),
        other => anyhow::Error::new(other),
    })?;
    let wall = started.elapsed().map(|d| d.as_secs_f64()).unwrap_or(0.0);
    if !r.out.text() {
    } else if r.out.quiet {
        println!("{}", text::summary_line(&res));
    } else {
        print!("{}", text::result(&res));
    }
    let rec = record(&res, &cpus, started, wall, tags);
    super::common::emit(&r.out, &rec)?;
    // Like every verb: a stop by SIGINT/SIGTERM is a finished run with partial results (exit
    // 0), marked `interrupted` in the record.
    if res.interrupted {
        eprintln!("rtscope: interrupted: results are partial (the record says so)");
    }
    Ok(())
}

fn record(
    res: &TasksetResult,
    cpus: &[u32],
    started: std::time::SystemTime,
    wall: f64,
    tags: std::collections::BTreeMap<String, String>,
) -> rtscope_model::RunRecord {
    use rtscope_model::Policy;
    rtscope_session::record::work_record(rtscope_session::record::WorkInfo {
        verb: "taskset".into(),
        cmdline: super::common::cmdline(),
        cpus: cpus.to_vec(),
        policy: match res.config.policy.as_str() {
            "deadline" => Policy::Deadline,
            "fifo" => Policy::Fifo,
            _ => Policy::Other,
        },
        priority: 0,
        duration_s: Some(res.config.duration_s),
        started,
        wall_s: wall,
        interrupted: res.interrupted,
        hygiene: rtscope_model::Hygiene {
            mlockall: true,
            timer_slack_ns: Some(1),
            notes: vec![
                "task threads: timer slack 1 ns, memory locked, working sets prefaulted".into(),
            ],
            ..Default::default()
        },
        overruns: res.total_misses,
        warnings: res.warnings.clone(),
        tags,
        loads: Vec::new(),
        bench: Some(rtscope_model::bench::BenchResult::Taskset(res.clone())),
    })
}
