//! `rtscope practise` — the SCHED_DEADLINE thesis' scheduler lab, PRAcTISE (lelli-2014 §2.3):
//! emulated CPUs as threads, cpudl/cpupri/pull-heap/flat behind push and pull, checkers
//! (`test`), per-operation costs (`perf`), or a recorded trace's event order (`replay`); and
//! the kernel's own cpudl/cpupri costs, timed with fentry/fexit (`kernel`, §2.3.9).

use super::common::{self, OutArgs};
use super::common::{bench_record, RecordInfo};
use crate::usage;
use anyhow::Result;
use rtscope_model::{bench::BenchResult, practise::PractiseResult};
use rtscope_practise::{self as pr, queue::QueueKind, structures as st};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(clap::Subcommand)]
enum Mode {
    /// Testing mode: threads unpinned (M up to 48, more than the CPUs allowed), a checker thread
    /// locks every queue and verifies every structure; a violation exits 1.
    Test {
        #[command(flatten)]
        run: RunArgs,
        /// How often the checker runs (100us..=10s)
        #[arg(long, default_value = "1ms", value_name = "TIME")]
        check_every: String,
    },
    /// Performance mode: one thread pinned per online CPU, memory locked, per-operation costs.
    Perf {
        #[command(flatten)]
        run: RunArgs,
    },
    /// Drive the queues from a .rtt trace's sched_switch/sched_wakeup/sched_migrate_task events.
    Replay {
        /// The trace (e.g. `rtscope trace record --keep all -o FILE`)
        file: PathBuf,
        #[command(flatten)]
        common: Common,
    },
    /// Time the kernel's own cpudl_set/cpudl_find/cpupri_set/cpupri_find (fentry/fexit) under a
    /// small task-set load (§2.3.9, Fig. 2.24). Needs a kernel without lockdown.
    Kernel {
        /// How long to time (10ms..=1d)
        #[arg(short = 'D', long, default_value = "5s", value_name = "TIME")]
        duration: String,
        /// Load while timing: deadline (SCHED_DEADLINE set: cpudl), fifo (SCHED_FIFO set:
        /// cpupri), none (whatever the machine runs)
        #[arg(long, default_value = "deadline", value_parser = ["deadline", "fifo", "none"])]
        load: String,
        #[command(flatten)]
        out: OutArgs,
    },
}

#[derive(clap::Args)]
struct Common {
    /// Push/pull structures: cpudl (kernel DL: cpudl + scan), pullheap (cpudl + the thesis' pull
    /// min-heap), cpupri (kernel RT: cpupri + scan), flat (ours: lock-free arrays), or all
    #[arg(long, default_value = "all", value_parser = ["cpudl", "pullheap", "cpupri", "flat", "all"])]
    structure: String,
    /// Ready queues: heap (binary heap, as PRAcTISE) or btree (ordered map, as the kernel's rb-tree)
    #[arg(long, default_value = "heap", value_parser = ["heap", "btree"])]
    queue: String,
    /// A deliberately broken structure (checker self-test)
    #[arg(long, hide = true, value_parser = ["cpudl-left-only"])]
    inject_fault: Option<String>,
    /// Write the modify/query boxplots per structure and M as SVG
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    #[command(flatten)]
    out: OutArgs,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Emulated CPUs M, one set of runs per value: 2, 1-2, 2,4,8 [default: the online CPUs]
    #[arg(long = "emulated-cpus", alias = "cpus-emulated", value_name = "LIST")]
    emulated_cpus: Option<String>,
    /// Duration of each run (each structure at each M), 10ms..=1d
    #[arg(short = 'D', long, default_value = "5s", value_name = "TIME")]
    duration: String,
    /// Thread cycle, one random event per CPU per cycle (thesis §2.3.9: 10 ms), 10us..=10s
    #[arg(long, default_value = "10ms", value_name = "TIME")]
    cycle: String,
    /// Probability of an activation per cycle (thesis: 0.2)
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true)]
    p_arrival: f64,
    /// Probability of an early finish per cycle (thesis: 0.1); the rest is "nothing"
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    p_finish: f64,
    /// auto (cpupri under FP, the others under EDF, as the thesis), edf, fp
    #[arg(long, default_value = "auto", value_parser = ["auto", "edf", "fp"])]
    policy: String,
    /// Random seed [default: random; stored in the result]
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    common: Common,
}

pub fn run(a: Args) -> Result<()> {
    match a.mode {
        Mode::Test { run, check_every } => random(pr::Mode::Test, run, &check_every),
        Mode::Perf { run } => random(pr::Mode::Perf, run, "1ms"),
        Mode::Replay { file, common } => replay(file, common),
        Mode::Kernel {
            duration,
            load,
            out,
        } => kernel(&duration, &load, &out),
    }
}

type Setup = (Vec<st::StructureKind>, QueueKind, Option<st::Fault>);

fn setup(c: &Common) -> Result<(Setup, std::collections::BTreeMap<String, String>)> {
    let kinds = match c.structure.as_str() {
        "all" => st::ALL_STRUCTURES.to_vec(),
        s => vec![st::StructureKind::parse(s).ok_or_else(|| usage!("--structure: unknown '{s}'"))?],
    };
    let queue =
        QueueKind::parse(&c.queue).ok_or_else(|| usage!("--queue: unknown '{}'", c.queue))?;
    let fault = c.inject_fault.as_deref().and_then(st::Fault::parse);
    if let Some(p) = &c.svg {
        common::check_output("--svg", p)?;
    }
    Ok(((kinds, queue, fault), c.out.validate()?))
}

fn config_err(e: pr::ConfigError) -> anyhow::Error {
    use pr::ConfigError::*;
    let flag = match &e {
        NoCpus | EmulatedCpus { .. } => "--emulated-cpus",
        Probability {
            which: pr::Prob::Arrival,
            ..
        } => "--p-arrival",
        Probability { .. } => "--p-finish",
        ProbabilitySum { .. } => "--p-arrival + --p-finish",
        Cycle { .. } => "--cycle",
        Duration { .. } => "-D/--duration",
        CheckEvery { .. } => "--check-every",
        CpupriUnderEdf => "--policy edf with --structure cpupri",
        NoStructures => "--structure",
    };
    usage!("{flag}: {e}")
}

fn random(mode: pr::Mode, a: RunArgs, check_every: &str) -> Result<()> {
    let ((structures, queue, fault), tags) = setup(&a.common)?;
    let online = common::resolve_cpus("--emulated-cpus", None)?;
    let ms = match &a.emulated_cpus {
        Some(s) => rtscope_model::cpus::parse_cpu_list(s)
            .map_err(|e| usage!("--emulated-cpus: {e} (a count or a list: 2, 1-2, 2,4,8)"))?
            .into_iter()
            .map(|m| m as usize)
            .collect(),
        None => vec![online.len().min(pr::MAX_TEST_CPUS)],
    };
    let ns = |s: f64| (s * 1e9).round() as u64;
    let cfg = pr::Config {
        mode,
        emulated_cpus: ms,
        structures,
        queue,
        policy: pr::PolicyChoice::parse(&a.policy).unwrap_or(pr::PolicyChoice::Auto),
        cycle_ns: ns(common::parse_duration_in("--cycle", &a.cycle, 1e-5, 10.0)?),
        p_arrival: a.p_arrival,
        p_finish: a.p_finish,
        duration_ns: ns(common::parse_duration_in(
            "-D/--duration",
            &a.duration,
            0.01,
            86_400.0,
        )?),
        seed: a.seed.unwrap_or_else(rand_seed),
        check_every_ns: ns(common::parse_duration_in(
            "--check-every",
            check_every,
            1e-4,
            10.0,
        )?),
        pin_cpus: online.clone(),
        fault,
    };
    cfg.validate().map_err(config_err)?;
    let (started, t0) = (std::time::SystemTime::now(), std::time::Instant::now());
    common::install_signal_handlers();
    let progress = &mut |l: &str| a.common.out.progress(l);
    let res = pr::run(&cfg, online.len() as u32, &common::stop_requested, progress)?;
    finish(res, &a.common, tags, started, t0)
}

fn rand_seed() -> u64 {
    let n = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    n.map(|d| d.as_nanos() as u64).unwrap_or(1) ^ ((std::process::id() as u64) << 32)
}

fn replay(file: PathBuf, c: Common) -> Result<()> {
    let ((structures, queue, fault), tags) = setup(&c)?;
    let bad = |e: &dyn std::fmt::Display| usage!("FILE {}: {e}", file.display());
    let f = rtscope_trace::read_rtt(&file).map_err(|e| bad(&e))?;
    let cfg = pr::ReplayConfig {
        structures,
        queue,
        fault,
        trace_file: Some(file.display().to_string()),
    };
    let (started, t0) = (std::time::SystemTime::now(), std::time::Instant::now());
    let res = match pr::replay(&f.events, &cfg) {
        Err(e @ (pr::PractiseError::NoSchedEvents | pr::PractiseError::TooManyCpus { .. })) => {
            return Err(bad(&format!(
                "{e}; record one with `rtscope trace record --keep all`"
            )))
        }
        r => r?,
    };
    finish(res, &c, tags, started, t0)
}

fn finish(
    res: PractiseResult,
    c: &Common,
    tags: std::collections::BTreeMap<String, String>,
    started: std::time::SystemTime,
    t0: std::time::Instant,
) -> Result<()> {
    if c.out.text() {
        print!("{}", rtscope_report::practise::text(&res));
    }
    if let Some(p) = &c.svg {
        common::write_atomic(p, rtscope_report::practise::boxplot_svg(&res).as_bytes())?;
        eprintln!("rtscope: wrote {}", p.display());
    }
    let violation = res.violation.clone();
    let info = RecordInfo {
        verb: "practise",
        cpu: 0,
        priority: 0,
        started,
        wall_s: t0.elapsed().as_secs_f64(),
        interrupted: common::stop_requested(),
        warnings: pr::warnings(&res),
        tags,
    };
    common::emit(
        &c.out,
        &bench_record(info, BenchResult::Practise(Box::new(res))),
    )?;
    match violation {
        Some(v) => anyhow::bail!(
            "checker failed: {} ({}, M = {}); state: {}",
            v.invariant,
            v.structure,
            v.emulated_cpus,
            v.state
        ),
        None => Ok(()),
    }
}

/// A small global task set (U = 0.31 per set, periods 10–50 ms, as the thesis' kernel sets of
/// §2.3.9) run under `load` for the whole window: it blocks, wakes, throttles and preempts, so
/// the kernel keeps calling cpudl_* (deadline) or cpupri_* (fifo).
fn kernel(duration: &str, load: &str, out: &OutArgs) -> Result<()> {
    use rtscope_bench::taskset as ts;
    use rtscope_model::taskset::{Task, TaskSet};
    let d_s = common::parse_duration_in("-D/--duration", duration, 0.01, 86_400.0)?;
    let tags = out.validate()?;
    let policy = match load {
        "deadline" => Some(ts::PolicyKind::Deadline),
        "fifo" => Some(ts::PolicyKind::Fifo(
            rtscope_analysis::sched::PriorityOrder::RateMonotonic,
        )),
        "none" => None,
        l => return Err(usage!("--load: unknown '{l}' (deadline, fifo, none)")),
    };
    let cpus = common::resolve_cpus("--cpus", None)?;
    let (started, t0) = (std::time::SystemTime::now(), std::time::Instant::now());
    let timing = rtscope_trace::kfuncs::attach().map_err(|e| anyhow::anyhow!(e))?;
    common::install_signal_handlers();
    let duration_ns = (d_s * 1e9) as u64;
    let mut notes = vec![
        "durations are fentry to fexit: they include the BPF trampolines and \
                          the timing programs, not only the kernel function"
            .to_string(),
    ];
    if let Some(policy) = policy {
        let t = |id, c_ms: u64, t_ms: u64| Task {
            id,
            wcet_ns: c_ms * 1_000_000,
            period_ns: t_ms * 1_000_000,
            deadline_ns: t_ms * 1_000_000,
            wss_bytes: None,
            name: None,
        };
        let set = TaskSet {
            schema_version: 1,
            tasks: vec![t(0, 1, 10), t(1, 2, 20), t(2, 3, 50), t(3, 2, 40)],
            generated: None,
        };
        let lim = ts::runner::admission_info(cpus.len() as u32, false).1;
        let plan = ts::plan(&set, policy, ts::PlacementKind::Global, 1.2, &cpus, lim)?;
        let opts = ts::RunOptions {
            duration_ns,
            wss_bytes: 16 * 1024,
            access: ts::work::Access::Sequential,
            seed: 1,
            inflate_ns: 0,
            probe_admission: false,
            cpus: cpus.clone(),
            source: "practise kernel".into(),
            dl_overrun_signal: false,
            work_by_cputime: true,
            admission: None,
        };
        let r = ts::run(&plan, &opts, &set)?;
        notes.extend(r.warnings.iter().map(|w| format!("load: {}", w.message)));
    } else {
        while t0.elapsed().as_nanos() < duration_ns as u128 && !common::stop_requested() {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    let res = rtscope_model::practise::PractiseKernelResult {
        duration_ns,
        load: load.to_string(),
        functions: timing.read(),
        notes,
    };
    drop(timing);
    if out.text() {
        print!("{}", rtscope_report::practise::kernel_text(&res));
    }
    let info = RecordInfo {
        verb: "practise",
        cpu: 0,
        priority: 0,
        started,
        wall_s: t0.elapsed().as_secs_f64(),
        interrupted: common::stop_requested(),
        warnings: Vec::new(),
        tags,
    };
    let bench = BenchResult::PractiseKernel(Box::new(res));
    common::emit(out, &bench_record(info, bench))
}
