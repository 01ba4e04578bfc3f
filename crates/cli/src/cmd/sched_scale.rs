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
        sleep_ms: a.sleep.map(|d| d.as_secs_f64() * 1e3),
        protocol: a.protocol.clone(),
        no_trace: a.no_trace,
        sched_time: clap::ValueEnum::to_possible_value(&a.sched_time)
            .map(|v| v.get_name().to_string())
            .unwrap_or_default(),
    };
    let cfg = flags.resolve(&rtscope_verbs::bench::Rules)?;
    let files = (a.csv.as_deref(), a.svg.as_deref());
    Ok(rtscope_verbs::bench::sched_scale(
        &cfg,
        cfg.sleep_ns as f64 / 1e6,
        files,
        &a.out.lib(),
    )?)
}
