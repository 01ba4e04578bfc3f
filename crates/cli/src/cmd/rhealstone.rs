//! `rtscope rhealstone` — the Rhealstone suite (Kar & Porter 1989; heursch-2001 §3.1): task
//! switch, preemption, intertask message, semaphore shuffle, deadlock break and interrupt
//! response, each pinned to one CPU under SCHED_FIFO with memory locked, with the full
//! distribution and Kar's composite figure.

use super::common::{bench_err, bench_record, emit, OutArgs, RecordInfo};
use crate::usage;
use anyhow::Result;
use rtscope_bench::common::{self as bc, reaper::Reaper};
use rtscope_bench::rhealstone::{self, Config, METRICS};
use rtscope_model::bench::BenchResult;
use rtscope_model::{WarningCode, Warnings};

#[derive(clap::Args)]
pub struct Args {
    /// CPU every benchmark thread is pinned to [default: the last online CPU]
    /// (one CPU, e.g. `--cpus 1`; `--cpu N`, its old name, still works)
    #[arg(long = "cpus", value_name = "LIST", alias = "cpu")]
    cpus: Option<String>,
    /// Highest SCHED_FIFO priority (21..=99); the medium and low threads run 10 and 20 below.
    #[arg(long, default_value_t = 80)]
    priority: u32,
    /// Samples per metric (1..=100000000).
    #[arg(long, default_value_t = 1_000_000)]
    iterations: u64,
    /// Cap on each metric's run time, seconds (0.1..=3600).
    #[arg(long, default_value_t = 10.0)]
    max_seconds: f64,
    /// Timer period of the preemption and interrupt-response metrics, µs (10..=10000).
    #[arg(long, default_value_t = 50)]
    timer_interval_us: u64,
    /// Samples for interrupt response (1..=100000; each costs trace-buffer space).
    #[arg(long, default_value_t = 20_000)]
    irq_iterations: u64,
    /// Compute burst of the medium-priority thread in deadlock break, µs (1..=10000).
    #[arg(long, default_value_t = 50)]
    medium_burst_us: u64,
    /// Run only these metrics (comma-separated): task_switch, preemption, intertask_message,
    /// semaphore_shuffle, deadlock_break, interrupt_response.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Skip the secondary variants (POSIX mq, pipe, POSIX sem, futex, no-PI mutex).
    #[arg(long)]
    no_variants: bool,
    #[command(flatten)]
    out: OutArgs,
}

pub fn run(a: Args) -> Result<()> {
    // Everything is validated before a thread starts or a resource exists.
    let secs = a.max_seconds;
    if !secs.is_finite() || !(0.1..=3600.0).contains(&secs) {
        return Err(usage!("--max-seconds: must be 0.1..=3600, got {secs}"));
    }
    for m in &a.only {
        if !METRICS.contains(&m.as_str()) {
            return Err(usage!(
                "--only: unknown metric '{m}' (one of {})",
                METRICS.join(", ")
            ));
        }
    }
    let cfg = Config {
        cpu: super::common::one_cpu(a.cpus.as_deref(), bc::default_cpu)?,
        priority_high: a.priority,
        iterations: a.iterations,
        max_duration_ns: (secs * 1e9) as u64,
        timer_interval_ns: a.timer_interval_us.saturating_mul(1000),
        irq_iterations: a.irq_iterations,
        medium_burst_ns: a.medium_burst_us.saturating_mul(1000),
        only: a.only.clone(),
        variants: !a.no_variants,
    };
    cfg.validate().map_err(bench_err)?;
    let tags = a.out.validate()?;
    super::common::require(
        "rhealstone",
        rtscope_session::privilege::Need::RealTime,
        "SCHED_FIFO, mlockall",
    )?;
    super::common::recover_leftovers();
    bc::install_stop_handlers().map_err(anyhow::Error::new)?;
    let reaper = Reaper::start().map_err(anyhow::Error::new)?;
    let started = std::time::SystemTime::now();
    let t0 = std::time::Instant::now();
    a.out.progress(&format!(
        "rtscope rhealstone: CPU {}, SCHED_FIFO {}/{}/{}, {} iterations per metric (cap {secs} s each)",
        cfg.cpu,
        cfg.priority_high,
        cfg.priority_high - 10,
        cfg.priority_high - 20,
        cfg.iterations
    ));
    let res = rhealstone::run(&cfg, &reaper, |m, v| {
        a.out.progress(&format!("  {m} / {v} …"))
    });
    drop(reaper);
    let res = res.map_err(bench_err)?;
    let interrupted = bc::stop_requested();
    if a.out.text() {
        print!("{}", rtscope_report::bench::rhealstone(&res));
    }
    let mut warnings = Vec::new();
    for m in &res.metrics {
        if let Some(s) = &m.stopped_early {
            warnings.warn(
                WarningCode::Interrupted,
                format!("{}/{}: {s}", m.metric, m.variant),
            );
        }
        if let Some(u) = &m.unavailable {
            warnings.warn(
                WarningCode::Unavailable,
                format!("{}/{}: unavailable: {u}", m.metric, m.variant),
            );
        }
    }
    // Said only when a hypervisor was detected, with what detected it.
    if let (Some(h), src) = rtscope_probe::system::hypervisor() {
        warnings.warn(WarningCode::Hypervisor, format!(
            "measured inside a virtual machine ({h}; detected by {}): timer interrupts are injected by the hypervisor, and host stalls appear in the maxima",
            src.unwrap_or_else(|| "cpuinfo".into())
        ));
    }
    let rec = bench_record(
        RecordInfo {
            verb: "rhealstone",
            cpu: cfg.cpu,
            priority: cfg.priority_high,
            started,
            wall_s: t0.elapsed().as_secs_f64(),
            interrupted,
            warnings,
            tags,
        },
        BenchResult::Rhealstone(Box::new(res)),
    );
    emit(&a.out, &rec)
}
