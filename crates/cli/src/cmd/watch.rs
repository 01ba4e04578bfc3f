//! `rtscope watch (--pid PID… | --comm NAME | --cgroup PATH | -- CMD ARGS…)`: the latency of an unmodified
//! process's threads, measured from the kernel and explained (`rtscope_verbs::watch`).

use super::common::{self, micros, OutArgs};
use anyhow::Result;
use rtscope_verbs::watch::{Target, WatchPlan};

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["pid", "comm", "cgroup", "command"])))]
pub struct Args {
    /// Watch these processes (a thread id stands for its process), comma-separated or repeated
    #[arg(long, value_name = "PID", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pid: Vec<u32>,
    /// Watch every process of this name (1..=15 bytes), those that start later included
    #[arg(long, value_name = "NAME")]
    comm: Option<String>,
    /// Watch every task in this cgroup-v2 directory, those moved into it later included
    /// (filtered in the kernel by the cgroup's id)
    #[arg(long, value_name = "PATH")]
    cgroup: Option<std::path::PathBuf>,
    /// How long to watch: 30s, 5m, 1h (1ms ..= 30d) [default: until the target exits or Ctrl-C]
    #[command(flatten)]
    duration: common::DurationArg,
    /// The period jitter is measured against (a bare number is µs) [default: each thread's
    /// median period]
    #[arg(long, value_name = "TIME", value_parser = micros)]
    period: Option<u64>,
    /// Keep every activation above this latency with its explanation (a bare number is µs)
    #[arg(long, value_name = "US", value_parser = micros)]
    threshold: Option<u64>,
    /// Run this shell command (sh -c) when an activation exceeds --threshold: at most once a
    /// second and one at a time, never waited for; its environment has RTSCOPE_LATENCY_US,
    /// RTSCOPE_TID, RTSCOPE_COMM, RTSCOPE_CPU, RTSCOPE_SKIPPED (docs/watch.md)
    #[arg(long, value_name = "CMD")]
    on_threshold: Option<String>,
    /// How many worst activations to keep per thread, with their timelines (1..=10000)
    #[arg(long, default_value_t = 10, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10000))]
    worst: u64,
    /// Do not capture the other CPUs' events: measure only, explain nothing
    #[arg(long)]
    no_explain: bool,
    #[command(flatten)]
    out: OutArgs,
    /// Start this command and watch it and its children (after `--`, run without a shell)
    #[arg(last = true, value_name = "CMD ARGS")]
    command: Vec<String>,
}

pub fn run(a: Args) -> Result<()> {
    let target = if !a.pid.is_empty() {
        Target::Pids(a.pid)
    } else if let Some(c) = a.comm {
        Target::Comm(c)
    } else if let Some(p) = a.cgroup {
        Target::Cgroup(p)
    } else {
        Target::Command(a.command)
    };
    let plan = WatchPlan {
        target,
        duration: a.duration.duration,
        period_ns: a.period.map(|us| us.saturating_mul(1000)),
        threshold_us: a.threshold,
        worst_n: a.worst as usize,
        explain: !a.no_explain,
        on_threshold: a.on_threshold,
    };
    rtscope_verbs::watch::run(&plan, &a.out.lib()).map_err(crate::fields::usage)
}
