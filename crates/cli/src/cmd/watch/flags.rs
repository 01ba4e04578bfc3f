//! The flags of `rtscope watch` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["pid", "comm", "cgroup", "command"])))]
pub struct Args {
    /// Watch these processes (a thread id stands for its process), comma-separated or repeated
    #[arg(long, value_name = "PID", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pub(super) pid: Vec<u32>,
    /// Watch every process of this name (1..=15 bytes), those that start later included
    #[arg(long, value_name = "NAME")]
    pub(super) comm: Option<String>,
    /// Watch every task in this cgroup-v2 directory, those moved into it later included
    /// (filtered in the kernel by the cgroup's id)
    #[arg(long, value_name = "PATH")]
    pub(super) cgroup: Option<std::path::PathBuf>,
    /// How long to watch: 30s, 5m, 1h (1ms ..= 30d) [default: until the target exits or Ctrl-C]
    #[command(flatten)]
    pub(super) duration: common::DurationArg,
    /// The period jitter is measured against (a bare number is µs) [default: each thread's
    /// median period]
    #[arg(long, value_name = "TIME", value_parser = micros)]
    pub(super) period: Option<u64>,
    /// Keep every activation above this latency with its explanation (a bare number is µs)
    #[arg(long, value_name = "US", value_parser = micros)]
    pub(super) threshold: Option<u64>,
    /// Run this shell command (sh -c) when an activation exceeds --threshold: at most once a
    /// second and one at a time, never waited for; its environment has RTSCOPE_LATENCY_US,
    /// RTSCOPE_TID, RTSCOPE_COMM, RTSCOPE_CPU, RTSCOPE_SKIPPED (docs/watch.md)
    #[arg(long, value_name = "CMD")]
    pub(super) on_threshold: Option<String>,
    /// How many worst activations to keep per thread, with their timelines (1..=10000)
    #[arg(long, default_value_t = 10, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10000))]
    pub(super) worst: u64,
    /// Do not capture the other CPUs' events: measure only, explain nothing
    #[arg(long)]
    pub(super) no_explain: bool,
    #[command(flatten)]
    pub(super) out: OutArgs,
    /// Start this command and watch it and its children (after `--`, run without a shell)
    #[arg(last = true, value_name = "CMD ARGS")]
    pub(super) command: Vec<String>,
}
