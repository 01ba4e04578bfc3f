//! The flags of `rtscope pdlt` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// CPU of consumer and producer [default: the last online CPU]
    #[command(flatten)]
    pub(super) cpu: crate::cmd::common::CpuArg,
    /// SCHED_FIFO priority of the producer (2..=99).
    #[arg(long, default_value_t = 80)]
    pub(super) priority: u32,
    /// SCHED_FIFO priority of the consumer (below the producer).
    #[arg(long, default_value_t = 70)]
    pub(super) consumer_priority: u32,
    /// The long system call: read, munmap, getdents, mmap_populate, or driver (the paper's
    /// test driver and its device interrupt: the kernel lab's rtscope_lab module)
    #[arg(long, default_value = "read", value_parser = ["read", "munmap", "getdents", "mmap_populate", "driver"])]
    pub(super) syscall: String,
    /// Bytes (read, munmap, mmap_populate; suffix K/M/G), directory entries (getdents) or loop
    /// iterations (driver) [default: 8M read, 16M munmap/mmap_populate, 20000 getdents,
    /// 50000 driver]
    #[arg(long)]
    pub(super) size: Option<String>,
    /// Preemption points in the driver's loop (heursch-2001 Figs. 5–8: 1, 2, 3, 23), evenly
    /// spaced; `--syscall driver` only
    #[arg(long, default_value_t = 0)]
    pub(super) points: u32,
    /// Offset step (10ns ..= 1s)
    #[arg(long, default_value = "1us", value_name = "TIME",
          value_parser = crate::cmd::common::duration(1e-8, 1.0))]
    pub(super) step: std::time::Duration,
    /// Offsets START:END from the call's start, each -10s ..= 10s (e.g. -2us:800us)
    /// [default: -2us to 1.25 × the calibrated call duration + 2us]
    #[arg(long, value_name = "START:END", allow_hyphen_values = true,
          value_parser = crate::cmd::common::offset_range(10.0))]
    pub(super) offsets: Option<(i64, i64)>,
    /// Points per offset (1..=10000).
    #[arg(long, default_value_t = 1)]
    pub(super) repeats: u32,
    /// Where the scratch file or directory is created (removed on every exit path).
    #[arg(long)]
    pub(super) scratch_dir: Option<PathBuf>,
    /// Scan under every preemption model (needs a writable /sys/kernel/debug/sched/preempt).
    #[arg(long)]
    pub(super) compare_preempt: bool,
    /// Cap on each scan's duration (100ms..=1d).
    #[arg(long, default_value = "300s", value_name = "TIME", value_parser = crate::cmd::common::duration(0.1, 86400.0))]
    pub(super) timeout: std::time::Duration,
    /// Write every point as CSV.
    #[arg(long, value_name = "FILE")]
    pub(super) csv: Option<PathBuf>,
    /// Write the figure (PDLT vs offset, the call's duration on the x axis) as SVG.
    #[arg(long, value_name = "FILE")]
    pub(super) svg: Option<PathBuf>,
    #[command(flatten)]
    pub(super) out: OutArgs,
}
