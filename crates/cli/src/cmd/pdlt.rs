//! `rtscope pdlt` — the preemption scan (heursch-2001 §2.5–2.7, `rtscope_bench::pdlt`): PDLT
//! against the offset of a timer interrupt from the start of a long system call; non-preemptible
//! stretches show up as triangles.

use super::common::OutArgs;
use anyhow::Result;
use rtscope_bench::pdlt;
use std::path::PathBuf;

mod flags;
pub use flags::*;

pub fn run(a: Args) -> Result<()> {
    let flags = pdlt::Flags {
        cpus: a.cpu.cpu.map(|c| c.to_string()),
        priority: a.priority,
        consumer_priority: a.consumer_priority,
        syscall: a.syscall.clone(),
        size: a.size.clone(),
        step: a.step,
        offsets_ns: a.offsets,
        repeats: a.repeats,
        scratch_dir: a.scratch_dir.clone(),
        compare_preempt: a.compare_preempt,
        timeout: a.timeout,
        points: a.points,
    };
    let cfg = flags.resolve(&rtscope_verbs::bench::Rules)?;
    let files = (a.csv.as_deref(), a.svg.as_deref());
    Ok(rtscope_verbs::bench::pdlt(&cfg, files, &a.out.lib())?)
}
