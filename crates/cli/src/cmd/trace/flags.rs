//! The flags of `rtscope trace` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub(super) cmd: Sub,
}

#[derive(clap::Subcommand)]
pub(super) enum Sub {
    /// Record kernel events into a .rtt file.
    Record(RecordArgs),
    /// D_POID, D_PAIE, D_PSD, D_ST per CPU (ECRTS'20 Table 1) from the preemptirq tracepoints,
    /// reduced in the kernel (eBPF) or read through tracefs (needs
    /// CONFIG_PREEMPTIRQ_TRACEPOINTS: `rtscope lab kernel build --preset trace`).
    ThreadVars(ThreadVarsArgs),
}

#[derive(clap::Args)]
pub(super) struct ThreadVarsArgs {
    /// How long to measure, e.g. 10s, 5m (1ms..=30d).
    #[arg(
        short = 'D',
        long = "duration",
        value_name = "TIME",
        default_value = "10s"
    )]
    pub(super) duration: String,
    /// CPUs to measure: a list like 0,1 or 0-3 (default: all online CPUs).
    #[arg(long = "cpus", value_name = "LIST")]
    pub(super) cpus: Option<String>,
    /// bpf: the state machine runs in the kernel at each tracepoint (maxima only); tracefs: the
    /// events are read from a tracefs ring buffer and streamed through the same state machine
    /// in user space; auto: bpf where it can run, else tracefs.
    #[arg(
        long = "mechanism",
        default_value = "auto",
        value_name = "auto|bpf|tracefs"
    )]
    pub(super) mechanism: String,
    #[command(flatten)]
    pub(super) json: crate::cmd::common::JsonOut,
}

#[derive(clap::Args)]
pub(super) struct RecordArgs {
    /// How long to record, e.g. 5s, 500ms, 2m (1ms..=24h).
    #[arg(
        short = 'D',
        long = "duration",
        value_name = "TIME",
        default_value = "5s"
    )]
    pub(super) duration: String,
    /// CPUs to trace: a list like 0,1 or 0-3 (default: all online CPUs).
    #[arg(long = "cpus", value_name = "LIST")]
    pub(super) cpus: Option<String>,
    /// Capture mechanism: auto, bpf, tracefs.
    #[arg(long = "mechanism", default_value = "auto", value_parser = ["auto", "bpf", "tracefs"])]
    pub(super) mechanism: String,
    /// Output trace file.
    #[arg(short = 'o', long = "output", default_value = "trace.rtt")]
    pub(super) output: PathBuf,
    /// `relevant` leaves out switches between two SCHED_OTHER tasks (except the last before each
    /// recorded event) and wake-ups of SCHED_OTHER tasks — right when the latency you study is a
    /// real-time or DEADLINE thread's; `all` keeps every event (docs/tracing.md). Default:
    /// relevant; all with --preemptirq.
    #[arg(long = "trace-keep", value_enum)]
    pub(super) trace_keep: Option<crate::cmd::measure::KeepArg>,
    /// Record the preemptirq events too (preempt/irq disable/enable; tracefs only, the kernel
    /// needs CONFIG_PREEMPTIRQ_TRACEPOINTS), so `rtscope bound --trace FILE` measures the thread
    /// terms from them. Hundreds of thousands of events a second per CPU: keep -D short.
    #[arg(long = "preemptirq")]
    pub(super) preemptirq: bool,
    /// Stored like every verb's result: a RunRecord pointing at the trace, with the capture's
    /// summary (events per kind, lost events, duration, mechanism).
    #[command(flatten)]
    pub(super) out: crate::cmd::common::OutArgs,
}
