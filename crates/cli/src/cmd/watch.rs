//! `rtscope watch (--pid PID… | --comm NAME | --cgroup PATH | -- CMD ARGS…)`: the latency of an unmodified
//! process's threads, measured from the kernel and explained (`rtscope_verbs::watch`).

use super::common::{self, micros, OutArgs};
use anyhow::Result;
use rtscope_verbs::watch::{Target, WatchPlan};

mod flags;
pub use flags::*;

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
