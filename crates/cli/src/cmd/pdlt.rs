//! `rtscope pdlt` — the preemption scan (heursch-2001 §2.5–2.7, `rtscope_bench::pdlt`): PDLT
//! against the offset of a timer interrupt from the start of a long system call; non-preemptible
//! stretches show up as triangles.

use super::common::OutArgs;
use anyhow::Result;
use rtscope_bench::pdlt;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// CPU of consumer and producer [default: the last online CPU]
    #[command(flatten)]
    cpu: super::common::CpuArg,
    /// SCHED_FIFO priority of the producer (2..=99).
    #[arg(long, default_value_t = 80)]
    priority: u32,
    /// SCHED_FIFO priority of the consumer (below the producer).
    #[arg(long, default_value_t = 70)]
    consumer_priority: u32,
    /// The long system call: read, munmap, getdents, mmap_populate, or driver (the paper's
    /// test driver and its device interrupt: the kernel lab's rtscope_lab module)
    #[arg(long, default_value = "read", value_parser = ["read", "munmap", "getdents", "mmap_populate", "driver"])]
    syscall: String,
    /// Bytes (read, munmap, mmap_populate; suffix K/M/G), directory entries (getdents) or loop
    /// iterations (driver) [default: 8M read, 16M munmap/mmap_populate, 20000 getdents,
    /// 50000 driver]
    #[arg(long)]
    size: Option<String>,
    /// Preemption points in the driver's loop (heursch-2001 Figs. 5–8: 1, 2, 3, 23), evenly
    /// spaced; `--syscall driver` only
    #[arg(long, default_value_t = 0)]
    points: u32,
    /// Offset step, µs (0.01..=1000000).
    #[arg(long, default_value_t = 1.0)]
    step_us: f64,
    /// Offsets START:END in µs [default: -2 to 1.25 × the calibrated call duration + 2]
    #[arg(long, value_name = "START:END")]
    offsets_us: Option<String>,
    /// Points per offset (1..=10000).
    #[arg(long, default_value_t = 1)]
    repeats: u32,
    /// Where the scratch file or directory is created (removed on every exit path).
    #[arg(long)]
    scratch_dir: Option<PathBuf>,
    /// Scan under every preemption model (needs a writable /sys/kernel/debug/sched/preempt).
    #[arg(long)]
    compare_preempt: bool,
    /// Cap on each scan's duration (100ms..=1d).
    #[arg(long, default_value = "300s", value_name = "TIME", value_parser = super::common::duration(0.1, 86400.0))]
    timeout: std::time::Duration,
    /// Write every point as CSV.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write the figure (PDLT vs offset, the call's duration on the x axis) as SVG.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    #[command(flatten)]
    out: OutArgs,
}

pub fn run(a: Args) -> Result<()> {
    let flags = pdlt::Flags {
        cpus: a.cpu.cpu.map(|c| c.to_string()),
        priority: a.priority,
        consumer_priority: a.consumer_priority,
        syscall: a.syscall.clone(),
        size: a.size.clone(),
        step_us: a.step_us,
        offsets_us: a.offsets_us.clone(),
        repeats: a.repeats,
        scratch_dir: a.scratch_dir.clone(),
        compare_preempt: a.compare_preempt,
        max_seconds: a.timeout.as_secs_f64(),
        points: a.points,
    };
    let cfg = flags.resolve(&rtscope_verbs::bench::Rules)?;
    let files = (a.csv.as_deref(), a.svg.as_deref());
    Ok(rtscope_verbs::bench::pdlt(
        &cfg,
        a.step_us,
        files,
        &a.out.lib(),
    )?)
}
