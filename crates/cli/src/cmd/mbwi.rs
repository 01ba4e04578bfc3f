//! `rtscope mbwi` — bandwidth inheritance (Lelli 2014 thesis Ch. 4, `rtscope_verbs::mbwi`):
//! `sim` simulates a task set or one of the thesis' examples; `run` measures SCHED_DEADLINE
//! threads sharing a PI or a plain mutex (§4.4.2) beside the simulator; `overhead` times
//! lock/unlock with and without PI (§4.4.3).

use super::common::OutArgs;
use anyhow::Result;
use rtscope_analysis::mbwi as sim;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Sub,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// Simulate a task set (JSON or TOML, see docs/mbwi.md) under each protocol.
    Sim(SimArgs),
    /// SCHED_DEADLINE threads sharing a PI or plain mutex; the schedule from sched_switch.
    Run(RunArgs),
    /// Lock/unlock cost with and without PI under SCHED_DEADLINE.
    Overhead(OverheadArgs),
}

#[derive(clap::Args)]
struct SimArgs {
    /// The task-set file
    #[arg(required_unless_present = "example", conflicts_with = "example")]
    file: Option<PathBuf>,
    /// A built-in set: the thesis' figures or the kernel experiment's sets
    #[arg(long, value_parser = sim::EXAMPLES)]
    example: Option<String>,
    /// none, mainline, mbwi, mbwi-impl, mbwi-impl-affinity, or all
    #[arg(long, default_value = "all", value_parser = ["none", "mainline", "mbwi", "mbwi-impl", "mbwi-impl-affinity", "all"])]
    protocol: String,
    #[command(flatten)]
    fig: FigArgs,
    #[command(flatten)]
    out: OutArgs,
}

#[derive(clap::Args)]
struct RunArgs {
    /// CPUs: the last hosts the one-CPU scenarios, the last two the two-CPU one [default: all online]
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// Length of each run (200ms..=600s)
    #[arg(
        short = 'D',
        long = "duration",
        default_value = "5s",
        value_name = "TIME"
    )]
    duration: String,
    #[arg(long, default_value = "both", value_parser = ["pi", "plain", "both"])]
    mutex: String,
    #[arg(long, default_value = "all", value_parser = ["one-cpu", "one-cpu-overrun", "two-cpus", "all"])]
    scenario: String,
    /// Budget enforcement granularity of the simulations, µs (0..=1000000; 0: exact)
    #[arg(long, default_value_t = 0)]
    tick_us: u64,
    /// Schedule capture: auto, bpf, tracefs, off
    #[arg(long, default_value = "auto", value_parser = ["auto", "bpf", "tracefs", "off"])]
    mechanism: String,
    #[command(flatten)]
    fig: FigArgs,
    #[command(flatten)]
    out: OutArgs,
}

#[derive(clap::Args)]
struct OverheadArgs {
    /// The threads' CPUs [default: all online]
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// Uncontended lock/unlock pairs per mutex kind (1000..=10000000)
    #[arg(long, default_value_t = 100_000)]
    iterations: u32,
    /// Hand-overs to a waiter blocked in the kernel per mutex kind (10..=1000000)
    #[arg(long, default_value_t = 2000)]
    contended_iterations: u32,
    #[command(flatten)]
    out: OutArgs,
}

#[derive(clap::Args)]
struct FigArgs {
    /// Write the first Gantt chart as SVG
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Write every Gantt chart as DIR/<name>.svg
    #[arg(long, value_name = "DIR")]
    figure_dir: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<()> {
    use rtscope_verbs::mbwi::{self, Figures, Job};
    let figs = |f: FigArgs| Figures {
        svg: f.svg,
        figure_dir: f.figure_dir,
    };
    let (job, figures, out) = match a.cmd {
        Sub::Sim(a) => {
            let (file, example, protocol) = (a.file, a.example, a.protocol);
            let job = Job::Sim {
                file,
                example,
                protocol,
            };
            (job, figs(a.fig), a.out)
        }
        Sub::Run(a) => {
            let job = Job::Run {
                cpus: a.cpus,
                duration: a.duration,
                mutex: a.mutex,
                scenario: a.scenario,
                tick_us: a.tick_us,
                mechanism: a.mechanism,
            };
            (job, figs(a.fig), a.out)
        }
        Sub::Overhead(a) => {
            let job = Job::Overhead {
                cpus: a.cpus,
                iterations: a.iterations,
                contended_iterations: a.contended_iterations,
            };
            (job, Figures::default(), a.out)
        }
    };
    Ok(mbwi::run(&job, &figures, &out.lib())?)
}
