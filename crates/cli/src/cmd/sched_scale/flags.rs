//! The flags of `rtscope sched-scale` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

/// `--sched-time`: whether the scheduler itself is timed.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(super) enum SchedTime {
    Auto,
    On,
    Preemptirq,
    Off,
}

#[derive(clap::Args)]
pub struct Args {
    /// CPU of the SCHED_FIFO thread and all load processes [default: the last online CPU]
    #[command(flatten)]
    pub(super) cpu: crate::cmd::common::CpuArg,
    /// SCHED_FIFO priority of the measuring thread (1..=99).
    #[arg(long, default_value_t = 80)]
    pub(super) priority: u32,
    /// Numbers of SCHED_OTHER load processes, comma-separated (each 0..=1000, distinct)
    /// [default: 0,10,20,30,40,50,100,150,200]
    #[arg(long)]
    pub(super) loads: Option<String>,
    /// Wake-ups per load level (2..=100000; the paper used 200) [default: 200]
    #[arg(long)]
    pub(super) wakeups: Option<u64>,
    /// Sleep between wake-ups (100us..=10s; the paper slept 1s) [default: 10ms]
    #[arg(long, value_name = "TIME", value_parser = crate::cmd::common::duration(0.0001, 10.0))]
    pub(super) sleep: Option<std::time::Duration>,
    /// A paper's whole protocol instead of --loads/--wakeups/--sleep: heursch2001 (Table 3's
    /// N, 200 wake-ups 1000 ms apart per N: about 31 minutes)
    #[arg(long, value_name = "NAME")]
    pub(super) protocol: Option<String>,
    /// Do not capture kernel events (tracefs instance).
    #[arg(long)]
    pub(super) no_trace: bool,
    /// Time the scheduler itself, Table 3's quantity (fentry on schedule/schedule_idle/
    /// preempt_schedule_irq → sched_switch; on PREEMPT_RT the preemptirq tracepoints mark the
    /// entry): auto (when the kernel allows it), on (stop with exit 2 when it cannot attach),
    /// preemptirq (on, with the tracepoint method on any kernel), off
    #[arg(long, value_enum, default_value_t = SchedTime::Auto)]
    pub(super) sched_time: SchedTime,
    /// Write the per-N table as CSV.
    #[arg(long, value_name = "FILE")]
    pub(super) csv: Option<PathBuf>,
    /// Write the figure (mean wake-up→run vs N, with the fit) as SVG.
    #[arg(long, value_name = "FILE")]
    pub(super) svg: Option<PathBuf>,
    #[command(flatten)]
    pub(super) out: OutArgs,
}
