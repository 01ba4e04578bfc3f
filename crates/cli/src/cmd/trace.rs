//! `rtscope trace record`: capture kernel events on some CPUs for a while into a `.rtt` file
//! (no samples: `rtscope measure --trace` adds those), stored as a run that points at the file.
//! Useful alone to look at what a machine's CPUs do, and to test the capture mechanisms.
//! `rtscope trace thread-vars`: ECRTS'20 Table 1's thread variables from the preemptirq events,
//! reduced in the kernel (eBPF) or streamed from tracefs (rtscope_verbs::thread_vars).

use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Sub,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// Record kernel events into a .rtt file.
    Record(RecordArgs),
    /// D_POID, D_PAIE, D_PSD, D_ST per CPU (ECRTS'20 Table 1) from the preemptirq tracepoints,
    /// reduced in the kernel (eBPF) or read through tracefs (needs
    /// CONFIG_PREEMPTIRQ_TRACEPOINTS: `rtscope lab kernel build --preset trace`).
    ThreadVars(ThreadVarsArgs),
}

#[derive(clap::Args)]
struct ThreadVarsArgs {
    /// How long to measure, e.g. 10s, 5m (1ms..=30d).
    #[arg(
        short = 'D',
        long = "duration",
        value_name = "TIME",
        default_value = "10s"
    )]
    duration: String,
    /// CPUs to measure: a list like 0,1 or 0-3 (default: all online CPUs).
    #[arg(long = "cpus", value_name = "LIST")]
    cpus: Option<String>,
    /// bpf: the state machine runs in the kernel at each tracepoint (maxima only); tracefs: the
    /// events are read from a tracefs ring buffer and streamed through the same state machine
    /// in user space; auto: bpf where it can run, else tracefs.
    #[arg(
        long = "mechanism",
        default_value = "auto",
        value_name = "auto|bpf|tracefs"
    )]
    mechanism: String,
    #[command(flatten)]
    json: super::common::JsonOut,
}

#[derive(clap::Args)]
struct RecordArgs {
    /// How long to record, e.g. 5s, 500ms, 2m (1ms..=24h).
    #[arg(
        short = 'D',
        long = "duration",
        value_name = "TIME",
        default_value = "5s"
    )]
    duration: String,
    /// CPUs to trace: a list like 0,1 or 0-3 (default: all online CPUs).
    #[arg(long = "cpus", value_name = "LIST")]
    cpus: Option<String>,
    /// Capture mechanism: auto, bpf, tracefs.
    #[arg(long = "mechanism", default_value = "auto", value_parser = ["auto", "bpf", "tracefs"])]
    mechanism: String,
    /// Output trace file.
    #[arg(short = 'o', long = "output", default_value = "trace.rtt")]
    output: PathBuf,
    /// `relevant` leaves out switches between two SCHED_OTHER tasks (except the last before each
    /// recorded event) and wake-ups of SCHED_OTHER tasks — right when the latency you study is a
    /// real-time or DEADLINE thread's; `all` keeps every event (docs/tracing.md). Default:
    /// relevant; all with --preemptirq.
    #[arg(long = "trace-keep", value_enum)]
    trace_keep: Option<super::measure::KeepArg>,
    /// Record the preemptirq events too (preempt/irq disable/enable; tracefs only, the kernel
    /// needs CONFIG_PREEMPTIRQ_TRACEPOINTS), so `rtscope bound --trace FILE` measures the thread
    /// terms from them. Hundreds of thousands of events a second per CPU: keep -D short.
    #[arg(long = "preemptirq")]
    preemptirq: bool,
    /// Stored like every verb's result: a RunRecord pointing at the trace, with the capture's
    /// summary (events per kind, lost events, duration, mechanism).
    #[command(flatten)]
    out: super::common::OutArgs,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    match a.cmd {
        Sub::Record(r) => record(r),
        Sub::ThreadVars(t) => thread_vars(t),
    }
}

/// Where tracefs's missing preemptirq tracepoints are: a lab kernel built with them.
const LAB_HINT: &str = "a lab kernel has them: rtscope lab kernel build --preset trace, then \
                        rtscope lab run --kernel trace -- trace thread-vars --mechanism tracefs \
                        -D 10s";

fn thread_vars(a: ThreadVarsArgs) -> anyhow::Result<()> {
    let secs = super::common::parse_duration("--duration", &a.duration)?;
    let cpus = super::common::resolve_cpus("--cpus", a.cpus.as_deref())?;
    let mech: rtscope_verbs::thread_vars::Mechanism = a
        .mechanism
        .parse()
        .map_err(|e| crate::usage!("--mechanism: {e}"))?;
    Ok(rtscope_verbs::thread_vars::run(
        mech,
        &cpus,
        Duration::from_secs_f64(secs),
        &a.json.dest(),
        LAB_HINT,
    )?)
}

fn record(a: RecordArgs) -> anyhow::Result<()> {
    let r = rtscope_verbs::capture::Record {
        duration: a.duration,
        cpus: a.cpus,
        mechanism: a.mechanism,
        output: a.output,
        keep: a.trace_keep.map(|k| k.keep().name().to_string()),
        preemptirq: a.preemptirq,
    };
    Ok(rtscope_verbs::capture::record(&r, &a.out.lib())?)
}
