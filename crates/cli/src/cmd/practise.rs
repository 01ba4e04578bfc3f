//! `rtscope practise` — the SCHED_DEADLINE thesis' scheduler lab, PRAcTISE (lelli-2014 §2.3,
//! `rtscope_practise::modes`): emulated CPUs as threads, cpudl/cpupri/pull-heap/flat behind push
//! and pull, checkers (`test`), per-operation costs (`perf`), or a recorded trace's event order
//! (`replay`); and the kernel's own cpudl/cpupri costs, timed with fentry/fexit (`kernel`,
//! §2.3.9).

use super::common::OutArgs;
use anyhow::Result;
use rtscope_practise::{self as pr, modes};
use std::path::PathBuf;

mod flags;
pub use flags::*;

pub fn run(a: Args) -> Result<()> {
    Ok(match a.mode {
        Mode::Test { run, check_every } => random(pr::Mode::Test, run, check_every),
        Mode::Perf { run } => random(pr::Mode::Perf, run, "1ms".into()),
        Mode::Replay { file, common: c } => modes::replay(&file, &c.lib(), &c.out.lib()),
        Mode::Kernel {
            duration,
            load,
            out,
        } => modes::kernel(&duration, &load, &out.lib()),
    }?)
}

fn random(
    mode: pr::Mode,
    a: RunArgs,
    check_every: String,
) -> Result<(), rtscope_session::VerbError> {
    let r = modes::Random {
        emulated_cpus: a.emulated_cpus,
        duration: a.duration,
        cycle: a.cycle,
        p_arrival: a.p_arrival,
        p_finish: a.p_finish,
        policy: a.policy,
        seed: a.seed,
        check_every,
    };
    modes::random(mode, &r, &a.common.lib(), &a.common.out.lib())
}

impl Common {
    fn lib(&self) -> modes::Common {
        modes::Common {
            structure: self.structure.clone(),
            queue: self.queue.clone(),
            inject_fault: self.inject_fault.clone(),
            svg: self.svg.clone(),
        }
    }
}
