//! `rtscope sched-scale` — SCHED_FIFO wake-up/scheduling time against the number of runnable
//! SCHED_OTHER load processes on the same CPU (heursch-2001 §4, Table 3,
//! `rtscope_bench::sched_scale`), with the fitted slope and its 95 % confidence interval.

use super::common::OutArgs;
use anyhow::Result;
use rtscope_bench::sched_scale;
use std::path::PathBuf;

/// `--sched-time`: whether the scheduler itself is timed.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum SchedTime {
    Auto,
    On,
    Preemptirq,
    Off,
}

#[derive(clap::Args)]
pub struct Args {
    /// CPU of the SCHED_FIFO thread and all load processes [default: the last online CPU]
    #[command(flatten)]
    cpu: super::common::CpuArg,
    /// SCHED_FIFO priority of the measuring thread (1..=99).
    #[arg(long, default_value_t = 80)]
    priority: u32,
    /// Numbers of SCHED_OTHER load processes, comma-separated (each 0..=1000, distinct)
    /// [default: 0,10,20,30,40,50,100,150,200]
    #[arg(long)]
    loads: Option<String>,
    /// Wake-ups per load level (2..=100000; the paper used 200) [default: 200]
    #[arg(long)]
    wakeups: Option<u64>,
    /// Sleep between wake-ups (100us..=10s; the paper slept 1s) [default: 10ms]
    #[arg(long, value_name = "TIME", value_parser = super::common::duration(0.0001, 10.0))]
    sleep: Option<std::time::Duration>,
    /// A paper's whole protocol instead of --loads/--wakeups/--sleep: heursch2001 (Table 3's
    /// N, 200 wake-ups 1000 ms apart per N: about 31 minutes)
    #[arg(long, value_name = "NAME")]
    protocol: Option<String>,
    /// Do not capture kernel events (tracefs instance).
    #[arg(long)]
    no_trace: bool,
    /// Time the scheduler itself, Table 3's quantity (fentry on schedule/schedule_idle/
    /// preempt_schedule_irq → sched_switch; on PREEMPT_RT the preemptirq tracepoints mark the
    /// entry): auto (when the kernel allows it), on (stop with exit 2 when it cannot attach),
    /// preemptirq (on, with the tracepoint method on any kernel), off
    #[arg(long, value_enum, default_value_t = SchedTime::Auto)]
    sched_time: SchedTime,
    /// Write the per-N table as CSV.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write the figure (mean wake-up→run vs N, with the fit) as SVG.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    #[command(flatten)]
    out: OutArgs,
}

pub fn run(a: Args) -> Result<()> {
    let flags = sched_scale::Flags {
        cpus: a.cpu.cpu.map(|c| c.to_string()),
        priority: a.priority,
        loads: a.loads.clone(),
        wakeups: a.wakeups,
        sleep_ms: a.sleep.map(|d| d.as_secs_f64() * 1e3),
        protocol: a.protocol.clone(),
        no_trace: a.no_trace,
        sched_time: clap::ValueEnum::to_possible_value(&a.sched_time)
            .map(|v| v.get_name().to_string())
            .unwrap_or_default(),
    };
    let cfg = flags.resolve(&rtscope_verbs::bench::Rules)?;
    let files = (a.csv.as_deref(), a.svg.as_deref());
    Ok(rtscope_verbs::bench::sched_scale(
        &cfg,
        cfg.sleep_ns as f64 / 1e6,
        files,
        &a.out.lib(),
    )?)
}
