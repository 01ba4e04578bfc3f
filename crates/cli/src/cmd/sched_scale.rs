//! `rtscope sched-scale` — SCHED_FIFO wake-up/scheduling time against the number of runnable
//! SCHED_OTHER load processes on the same CPU (heursch-2001 §4, Table 3,
//! `rtscope_bench::sched_scale`), with the fitted slope and its 95 % confidence interval.

use super::common::OutArgs;
use anyhow::Result;
use rtscope_bench::sched_scale;
use std::path::PathBuf;

mod flags;
pub use flags::*;

pub fn run(a: Args) -> Result<()> {
    let flags = sched_scale::Flags {
        cpus: a.cpu.cpu.map(|c| c.to_string()),
        priority: a.priority,
        loads: a.loads.clone(),
        wakeups: a.wakeups,
        sleep: a.sleep,
        protocol: a.protocol.clone(),
        no_trace: a.no_trace,
        sched_time: match a.sched_time {
            SchedTime::Auto => sched_scale::SchedTime::Auto,
            SchedTime::On => sched_scale::SchedTime::On,
            SchedTime::Preemptirq => sched_scale::SchedTime::Preemptirq,
            SchedTime::Off => sched_scale::SchedTime::Off,
        },
    };
    let cfg = flags.resolve(&rtscope_verbs::bench::Rules)?;
    let files = (a.csv.as_deref(), a.svg.as_deref());
    Ok(rtscope_verbs::bench::sched_scale(
        &cfg,
        files,
        &a.out.lib(),
    )?)
}
