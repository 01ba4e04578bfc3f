//! The flags of `rtscope mbwi` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub(super) cmd: Sub,
}

#[derive(clap::Subcommand)]
pub(super) enum Sub {
    /// Simulate a task set (JSON or TOML, see docs/mbwi.md) under each protocol.
    Sim(SimArgs),
    /// SCHED_DEADLINE threads sharing a PI or plain mutex; the schedule from sched_switch.
    Run(RunArgs),
    /// Lock/unlock cost with and without PI under SCHED_DEADLINE.
    Overhead(OverheadArgs),
}

#[derive(clap::Args)]
pub(super) struct SimArgs {
    /// The task-set file
    #[arg(required_unless_present = "example", conflicts_with = "example")]
    pub(super) file: Option<PathBuf>,
    /// A built-in set: the thesis' figures or the kernel experiment's sets
    #[arg(long, value_parser = sim::EXAMPLES)]
    pub(super) example: Option<String>,
    /// none, mainline, mbwi, mbwi-impl, mbwi-impl-affinity, or all
    #[arg(long, default_value = "all", value_parser = ["none", "mainline", "mbwi", "mbwi-impl", "mbwi-impl-affinity", "all"])]
    pub(super) protocol: String,
    #[command(flatten)]
    pub(super) fig: FigArgs,
    #[command(flatten)]
    pub(super) out: OutArgs,
}

#[derive(clap::Args)]
pub(super) struct RunArgs {
    /// CPUs: the last hosts the one-CPU scenarios, the last two the two-CPU one [default: all online]
    #[arg(long, value_name = "LIST")]
    pub(super) cpus: Option<String>,
    /// Length of each run (200ms..=600s)
    #[arg(
        short = 'D',
        long = "duration",
        default_value = "5s",
        value_name = "TIME"
    )]
    pub(super) duration: String,
    #[arg(long, default_value = "both", value_parser = ["pi", "plain", "both"])]
    pub(super) mutex: String,
    #[arg(long, default_value = "all", value_parser = ["one-cpu", "one-cpu-overrun", "two-cpus", "all"])]
    pub(super) scenario: String,
    /// Budget enforcement granularity of the simulations, µs (0..=1000000; 0: exact)
    #[arg(long, default_value_t = 0)]
    pub(super) tick_us: u64,
    /// Schedule capture: auto, bpf, tracefs, off
    #[arg(long, default_value = "auto", value_parser = ["auto", "bpf", "tracefs", "off"])]
    pub(super) mechanism: String,
    #[command(flatten)]
    pub(super) fig: FigArgs,
    #[command(flatten)]
    pub(super) out: OutArgs,
}

#[derive(clap::Args)]
pub(super) struct OverheadArgs {
    /// The threads' CPUs [default: all online]
    #[arg(long, value_name = "LIST")]
    pub(super) cpus: Option<String>,
    /// Uncontended lock/unlock pairs per mutex kind (1000..=10000000)
    #[arg(long, default_value_t = 100_000)]
    pub(super) iterations: u32,
    /// Hand-overs to a waiter blocked in the kernel per mutex kind (10..=1000000)
    #[arg(long, default_value_t = 2000)]
    pub(super) contended_iterations: u32,
    #[command(flatten)]
    pub(super) out: OutArgs,
}

#[derive(clap::Args)]
pub(super) struct FigArgs {
    /// Write the first Gantt chart as SVG
    #[arg(long, value_name = "FILE")]
    pub(super) svg: Option<PathBuf>,
    /// Write every Gantt chart as DIR/<name>.svg
    #[arg(long, value_name = "DIR")]
    pub(super) figure_dir: Option<PathBuf>,
}
