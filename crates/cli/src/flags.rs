//! The command line as clap declares it: the verbs, completions and the manual page;
//! the parent module does the work.

use super::*;

#[derive(Parser)]
#[command(
    name = "rtscope",
    version,
    about = "Measure, explain and bound real-time latency on Linux",
    after_help = exit::TABLE
)]
pub struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Subcommand)]
pub(super) enum Command {
    /// The default job: measure all online CPUs, print a summary, write JSON + histogram files.
    Run(cmd::run::Args),
    /// cyclictest-class latency measurement.
    Measure(cmd::measure::Args),
    /// Measure continuously (as `measure`, until stopped) and serve the figures as Prometheus metrics; the record is checkpointed every window
    Monitor(cmd::monitor::Args),
    /// Drop-in for cyclictest: accepts its common flags and prints its formats.
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Cyclictest(cmd::cyclictest::Args),
    /// Import results: cyclictest -h/-H text, -v output, -q status lines and --json, rtscope run-record JSON (rtsl databases: `bound --rtsl-db`).
    Import(cmd::import::Args),
    /// Run a background workload on its own (idle, cpu-cache, hackbench, disk, net, io, exec).
    Load(cmd::load::Args),
    /// Kernel event capture.
    Trace(cmd::trace::Args),
    /// Re-run per-sample attribution on a recorded .rtt trace file.
    Analyze(cmd::analyze::Args),
    /// Latency bound (rtsl analysis, ECRTS'20 Theorem 8).
    Bound(cmd::bound::Args),
    /// The Rhealstone suite.
    Rhealstone(cmd::rhealstone::Args),
    /// SCHED_FIFO scheduling time vs number of SCHED_OTHER load processes.
    SchedScale(cmd::sched_scale::Args),
    /// Preemption scan of a system call (process dispatch latency vs timer offset).
    Pdlt(cmd::pdlt::Args),
    /// Bandwidth inheritance (M-BWI): simulator, SCHED_DEADLINE + PI futex runs, lock overheads.
    Mbwi(cmd::mbwi::Args),
    /// The thesis' scheduler lab (PRAcTISE): cpudl/cpupri/pull structures on emulated CPUs.
    Practise(cmd::practise::Args),
    /// Task sets: generate and run.
    Taskset(cmd::taskset::Args),
    /// What on this machine stands between it and real-time: checks with stable codes, tied to a traced run's tail, fixed at run time until --revert.
    Doctor(cmd::doctor::Args),
    /// The latency of an unmodified process's threads, measured from the kernel and explained.
    Watch(cmd::watch::Args),
    /// OS noise per CPU and its sources (the kernel's osnoise tracer, as `rtla osnoise top`).
    Noise(cmd::noise::Args),
    /// Kernels as inputs: build (presets from linux-source-6.12, Debian images), list, and run
    /// any verb inside one under QEMU (optionally -icount) with its records brought home.
    Lab(cmd::lab::Args),
    /// Run a matrix of measurements from a TOML file.
    Campaign(cmd::campaign::Args),
    /// List stored runs.
    Runs(cmd::runs::Args),
    /// Show one stored run.
    Show(cmd::show::Args),
    /// Compare stored runs.
    Compare(cmd::compare::Args),
    /// Write an HTML report.
    Report(cmd::report::Args),
    /// Export a stored run.
    Export(cmd::export::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell), generated from the
    /// same flag definitions as --help.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), generated from the same flag definitions as --help.
    Man {
        /// Write one page per verb instead (rtscope.1, rtscope-measure.1, rtscope-lab-run.1, …)
        /// into this directory, created if missing: what a package installs in man1.
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
}
