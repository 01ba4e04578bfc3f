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

/// `mbwi sim --protocol`: the inheritance protocols of the thesis' Ch. 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum ProtocolArg {
    /// no inheritance: a plain futex mutex
    #[value(name = "none")]
    NoInheritance,
    /// mainline SCHED_DEADLINE with a PI futex
    Mainline,
    /// full M-BWI (thesis §4.2.5)
    Mbwi,
    /// the thesis' Linux implementation (§4.3.2): one inherited server, not its affinity
    MbwiImpl,
    /// the same, inheriting the donor's affinity too
    MbwiImplAffinity,
    /// every protocol, one simulation each
    All,
}

/// `mbwi run --mutex`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum MutexArg {
    Pi,
    Plain,
    Both,
}

/// `mbwi run --scenario`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum ScenarioArg {
    OneCpu,
    OneCpuOverrun,
    TwoCpus,
    All,
}

#[derive(clap::Args)]
pub(super) struct SimArgs {
    /// The task-set file
    #[arg(required_unless_present = "example", conflicts_with = "example")]
    pub(super) file: Option<PathBuf>,
    /// A built-in set: the thesis' figures or the kernel experiment's sets
    #[arg(long, value_parser = sim::EXAMPLES)]
    pub(super) example: Option<String>,
    /// The inheritance protocol simulated, or all of them
    #[arg(long, value_enum, default_value_t = ProtocolArg::All)]
    pub(super) protocol: ProtocolArg,
    #[command(flatten)]
    pub(super) fig: FigArgs,
    #[command(flatten)]
    pub(super) out: OutArgs,
}

#[derive(clap::Args)]
pub(super) struct RunArgs {
    /// CPUs: the last hosts the one-CPU scenarios, the last two the two-CPU one [default: all
    /// online]
    #[command(flatten)]
    pub(super) cpus: CpuListArg,
    /// Length of each run (200ms..=600s)
    #[arg(short = 'D', long = "duration", default_value = "5s", value_name = "TIME", value_parser = common::duration(0.2, 600.0))]
    pub(super) duration: Duration,
    /// The mutex the threads share: a PI futex, a plain one, or a run with each
    #[arg(long, value_enum, default_value_t = MutexArg::Both)]
    pub(super) mutex: MutexArg,
    /// The scenarios of the thesis' §4.4.2 run (the one-CPU ones on the last of --cpus, the
    /// two-CPU one on the last two), or all of them
    #[arg(long, value_enum, default_value_t = ScenarioArg::All)]
    pub(super) scenario: ScenarioArg,
    /// Budget enforcement granularity of the simulations, whole µs (e.g. 4ms; 0 ..= 1s;
    /// 0: exact)
    #[arg(long, default_value = "0s", value_name = "TIME", value_parser = common::duration(0.0, 1.0))]
    pub(super) tick: Duration,
    /// Schedule capture: auto, bpf, tracefs, off
    #[arg(long, value_enum, default_value_t = TraceArg::Auto)]
    pub(super) mechanism: TraceArg,
    #[command(flatten)]
    pub(super) fig: FigArgs,
    #[command(flatten)]
    pub(super) out: OutArgs,
}

#[derive(clap::Args)]
pub(super) struct OverheadArgs {
    /// The threads' CPUs [default: all online]
    #[command(flatten)]
    pub(super) cpus: CpuListArg,
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
