//! `rtscope trace record`: capture kernel events on some CPUs for a while into a `.rtt` file
//! (no samples: `rtscope measure --trace` adds those). Useful alone to look at what a machine's
//! CPUs do, and to test the capture mechanisms.

use anyhow::Context;
use rtscope_trace::{Mechanism, TraceSession};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Sub,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// Record kernel events into a .rtt file.
    Record(RecordArgs),
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
    /// real-time or DEADLINE thread's; `all` keeps every event (docs/tracing.md).
    #[arg(long = "keep", default_value = "relevant", value_name = "relevant|all", value_parser = ["relevant", "all"])]
    keep: String,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    match a.cmd {
        Sub::Record(r) => record(r),
    }
}

fn record(a: RecordArgs) -> anyhow::Result<()> {
    // Validate everything before touching the kernel.
    let dur = Duration::from_secs_f64(super::common::parse_duration_in(
        "--duration",
        &a.duration,
        0.001,
        86400.0,
    )?);
    let cpus = super::common::resolve_cpus("--cpus", a.cpus.as_deref())?;
    let mech: Mechanism = a
        .mechanism
        .parse()
        .map_err(|e| crate::usage!("--mechanism: {e}"))?;
    if mech == Mechanism::Off {
        return Err(crate::usage!(
            "--mechanism: must be one of auto, bpf, tracefs for 'trace record'"
        ));
    }
    let keep: rtscope_trace::Keep = a.keep.parse().map_err(|e| crate::usage!("--keep: {e}"))?;
    super::common::check_output("--output", &a.output)?;
    let resolved =
        rtscope_trace::check(mech).with_context(|| format!("--mechanism {}", mech.name()))?;
    if resolved == Mechanism::Off {
        anyhow::bail!(
            "no capture mechanism available: {}",
            rtscope_trace::unavailable_reasons().join("; ")
        );
    }
    // SIGINT/SIGTERM set a flag; the loop stops and tracing state is removed as on a normal end.
    super::common::install_signal_handlers();
    super::common::recover_leftovers();
    let session =
        TraceSession::start_with(&cpus, resolved, keep).context("starting the capture")?;
    eprintln!(
        "rtscope: tracing cpus {cpus:?} with {} for {:?} (Ctrl-C stops early)",
        resolved.name(),
        dur
    );
    let t0 = Instant::now();
    while t0.elapsed() < dur && !super::common::stop_requested() {
        std::thread::sleep(Duration::from_millis(20).min(dur.saturating_sub(t0.elapsed())));
    }
    let interrupted = super::common::stop_requested();
    let cap = session.stop().context("stopping the capture")?;
    let secs = (cap.end_ns.saturating_sub(cap.start_ns)) as f64 / 1e9;
    let n = cap.events.len();
    let lost = cap.lost_total();
    let kbytes = cap.kernel_bytes;
    let lost_line = cap
        .lost_per_cpu
        .iter()
        .map(|(c, n)| format!("cpu{c}={n}"))
        .collect::<Vec<_>>()
        .join(" ");
    let notes = cap.notes.clone();
    let filtered = cap.filtered;
    let keep_name = cap.keep.name();
    let file = cap.into_rtt(Vec::new());
    let bytes = rtscope_trace::write_rtt(&a.output, &file).context("writing the trace file")?;
    println!(
        "{}: {n} events in {secs:.2} s ({:.0} events/s) on {} CPU(s), mechanism {}, file {bytes} bytes \
         ({:.1} KB/s/CPU), kernel buffer {:.1} KB/s/CPU, lost {lost} ({lost_line}), \
         left out by the relevance filter {filtered} (keep {keep_name}){}",
        a.output.display(),
        n as f64 / secs.max(1e-9),
        cpus.len(),
        resolved.name(),
        bytes as f64 / 1024.0 / secs.max(1e-9) / cpus.len() as f64,
        kbytes as f64 / 1024.0 / secs.max(1e-9) / cpus.len() as f64,
        if interrupted { " [interrupted]" } else { "" }
    );
    if lost > 0 {
        eprintln!("rtscope: warning: {lost} events were lost; attribution of affected samples is incomplete");
    }
    for n in notes {
        eprintln!("rtscope: note: {n}");
    }
    Ok(())
}
