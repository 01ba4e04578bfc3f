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

/// `--mechanism`: how the kernel's events are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum MechanismArg {
    /// eBPF where it can run, else tracefs
    Auto,
    /// eBPF programs on the tracepoints
    Bpf,
    /// a tracefs ring buffer read in user space
    Tracefs,
}

#[derive(clap::Args)]
pub(super) struct ThreadVarsArgs {
    /// How long to measure, e.g. 10s, 5m (1ms..=30d).
    #[arg(short = 'D', long = "duration", value_name = "TIME", default_value = "10s", value_parser = common::run_time())]
    pub(super) duration: Duration,
    /// CPUs to measure: a list like 0,1 or 0-3 (default: all online CPUs).
    #[command(flatten)]
    pub(super) cpus: common::CpuListArg,
    /// bpf: the state machine runs in the kernel at each tracepoint (maxima only); tracefs: the
    /// events are read from a tracefs ring buffer and streamed through the same state machine
    /// in user space; auto: bpf where it can run, else tracefs.
    #[arg(long = "mechanism", value_enum, default_value_t = MechanismArg::Auto)]
    pub(super) mechanism: MechanismArg,
    #[command(flatten)]
    pub(super) json: common::JsonOut,
}

#[derive(clap::Args)]
pub(super) struct RecordArgs {
    /// How long to record, e.g. 5s, 500ms, 2m (1ms..=24h).
    #[arg(short = 'D', long = "duration", value_name = "TIME", default_value = "5s", value_parser = common::duration_within(rtscope_verbs::capture::DURATION_RANGE))]
    pub(super) duration: Duration,
    /// CPUs to trace: a list like 0,1 or 0-3 (default: all online CPUs).
    #[command(flatten)]
    pub(super) cpus: common::CpuListArg,
    /// Capture mechanism: auto, bpf, tracefs.
    #[arg(long = "mechanism", value_enum, default_value_t = MechanismArg::Auto)]
    pub(super) mechanism: MechanismArg,
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
    pub(super) out: common::OutArgs,
}
