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
    /// Numbers of SCHED_OTHER load processes, comma-separated (each 0..=1000, distinct).
    #[arg(long, default_value = "0,10,20,30,40,50,100,150,200")]
    loads: String,
    /// Wake-ups per load level (2..=100000; the paper used 200).
    #[arg(long, default_value_t = 200)]
    wakeups: u64,
    /// Sleep between wake-ups, ms (0.1..=10000; the paper slept 1000 ms).
    #[arg(long, default_value_t = 10.0)]
    sleep_ms: f64,
    /// Do not capture kernel events (tracefs instance).
    #[arg(long)]
    no_trace: bool,
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
        no_trace: a.no_trace,
    };
    let cfg = flags.resolve(&input::Rules)?;
    let files = (a.csv.as_deref(), a.svg.as_deref());
    Ok(rtscope_session::bench::sched_scale(
        &cfg,
        a.sleep_ms,
        files,
        &a.out.lib(),
    )?)
}
