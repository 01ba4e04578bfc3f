//! `rtscope sched-scale` — SCHED_FIFO wake-up/scheduling time against the number of runnable
//! SCHED_OTHER load processes on the same CPU (heursch-2001 §4, Table 3,
//! `rtscope_bench::sched_scale`), with the fitted slope and its 95 % confidence interval.

use super::common::OutArgs;
use anyhow::Result;
use rtscope_bench::sched_scale;
use rtscope_session::input;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// CPU of the SCHED_FIFO thread and all load processes [default: the last online CPU]
    /// (one CPU, e.g. `--cpus 1`; `--cpu N`, its old name, still works)
    #[arg(long = "cpus", value_name = "LIST", alias = "cpu")]
    cpus: Option<String>,
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
    /// Sleep between wake-ups, ms (0.1..=10000; the paper slept 1000 ms) [default: 10]
    #[arg(long)]
    sleep_ms: Option<f64>,
    /// A paper's whole protocol instead of --loads/--wakeups/--sleep-ms: heursch2001 (Table 3's
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
    #[arg(long, default_value = "auto", value_name = "auto|on|preemptirq|off")]
    sched_time: String,
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
        cpus: a.cpus.clone(),
        priority: a.priority,
        loads: a.loads.clone(),
        wakeups: a.wakeups,
        sleep_ms: a.sleep_ms,
        protocol: a.protocol.clone(),
        no_trace: a.no_trace,
        sched_time: a.sched_time.clone(),
    };
    let cfg = flags.resolve(&input::Rules)?;
    let files = (a.csv.as_deref(), a.svg.as_deref());
    Ok(rtscope_verbs::bench::sched_scale(
        &cfg,
        cfg.sleep_ns as f64 / 1e6,
        files,
        &a.out.lib(),
    )?)
}
