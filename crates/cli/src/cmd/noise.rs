//! `rtscope noise`: per-CPU OS noise and its sources from the kernel's osnoise tracer, as
//! `rtla osnoise top` (rtscope_verbs::osnoise; docs/rtla.md).

use super::common::{self, micros, CpuListArg, OutArgs};
use anyhow::Result;
use rtscope_verbs::osnoise::{self, NoisePlan};
use std::time::Duration;

mod flags;
pub use flags::*;

pub fn run(a: Args) -> Result<()> {
    let plan = NoisePlan {
        cpus: a.cpus.resolve()?,
        duration_s: a.duration.as_secs_f64(),
        period_us: a.period,
        runtime_us: a.runtime.unwrap_or(a.period),
        threshold_us: a.min_noise,
        stop_us: a.stop,
        top: a.top,
        lab_hint: lab_hint(),
        field_names: crate::fields_verbs::osnoise,
    };
    Ok(osnoise::noise(&plan, &a.out.lib())?)
}

/// The lab command that runs this command line in the trace kernel.
pub fn lab_hint() -> String {
    let argv = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    format!("rtscope lab run --kernel trace -- {argv}")
}
