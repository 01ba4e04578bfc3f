//! `rtscope mbwi` — bandwidth inheritance (Lelli 2014 thesis Ch. 4, `rtscope_verbs::mbwi`):
//! `sim` simulates a task set or one of the thesis' examples; `run` measures SCHED_DEADLINE
//! threads sharing a PI or a plain mutex (§4.4.2) beside the simulator; `overhead` times
//! lock/unlock with and without PI (§4.4.3).

use super::common::{self, value_name, CpuListArg, OutArgs};
use super::measure::TraceArg;
use anyhow::Result;
use rtscope_analysis::mbwi as sim;
use std::path::PathBuf;
use std::time::Duration;

mod flags;
pub use flags::*;

pub fn run(a: Args) -> Result<()> {
    use rtscope_verbs::mbwi::{self, Figures, Job};
    let figs = |f: FigArgs| Figures {
        svg: f.svg,
        figure_dir: f.figure_dir,
    };
    let (job, figures, out) = match a.cmd {
        Sub::Sim(a) => {
            let job = Job::Sim {
                file: a.file,
                example: a.example,
                protocol: value_name(&a.protocol),
            };
            (job, figs(a.fig), a.out)
        }
        Sub::Run(a) => {
            let job = Job::Run {
                cpus: a.cpus.spec(),
                duration: a.duration,
                mutex: value_name(&a.mutex),
                scenario: value_name(&a.scenario),
                tick: a.tick,
                mechanism: a.mechanism.mechanism(),
            };
            (job, figs(a.fig), a.out)
        }
        Sub::Overhead(a) => {
            let job = Job::Overhead {
                cpus: a.cpus.spec(),
                iterations: a.iterations,
                contended_iterations: a.contended_iterations,
            };
            (job, Figures::default(), a.out)
        }
    };
    Ok(mbwi::run(&job, &figures, &out.lib())?)
}
