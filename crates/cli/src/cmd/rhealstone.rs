//! `rtscope rhealstone` — the Rhealstone suite (Kar & Porter 1989; heursch-2001 §3.1,
//! `rtscope_bench::rhealstone`): task switch, preemption, intertask message, semaphore shuffle,
//! deadlock break and interrupt response, each pinned to one CPU under SCHED_FIFO with memory
//! locked, with the full distribution and Kar's composite figure.

use super::common::OutArgs;
use anyhow::Result;
use rtscope_bench::rhealstone;

mod flags;
pub use flags::*;

pub fn run(a: Args) -> Result<()> {
    // Everything is validated before a thread starts or a resource exists.
    let flags = rhealstone::Flags {
        cpus: a.cpu.cpu.map(|c| c.to_string()),
        priority: a.priority,
        iterations: a.iterations,
        timeout: a.timeout,
        timer_interval: a.timer_interval,
        irq_iterations: a.irq_iterations,
        medium_burst: a.medium_burst,
        only: a.only,
        no_variants: a.no_variants,
        variants: a.variants,
    };
    let cfg = flags.resolve(&rtscope_verbs::bench::Rules)?;
    Ok(rtscope_verbs::bench::rhealstone(&cfg, &a.out.lib())?)
}
