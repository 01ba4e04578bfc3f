//! The flags of `rtscope doctor` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The measured CPUs the checks judge, e.g. 1-3 [default: the run's CPUs with --from or
    /// --run, else the isolated CPUs, else every online CPU but the first]
    #[arg(short = 'c', long = "cpus", value_name = "LIST")]
    pub(super) cpus: Option<CpuList>,
    /// Measure for this long with eBPF tracing (as `measure --trace bpf`) and tie each finding to
    /// the share of the run's p99 tail it explains: 30s, 5m (1ms ..= 30d)
    #[arg(long, value_name = "TIME", value_parser = common::run_time(), conflicts_with = "from")]
    pub(super) run: Option<Duration>,
    /// A stored traced run to tie the findings to (rtscope runs lists them)
    #[arg(long, value_name = "RUN_ID")]
    pub(super) from: Option<String>,
    /// Apply the run-time fixes of these checks (RT001 or RT001-irq-on-measured-cpu; needs
    /// root), kept until --revert; boot parameters are printed, never applied
    #[arg(long, value_name = "CODE", num_args = 1..)]
    pub(super) fix: Vec<String>,
    /// Write back every value a --fix changed (and any a killed doctor left half-applied)
    #[arg(long, conflicts_with_all = ["fix", "run", "from"])]
    pub(super) revert: bool,
    /// The idle-state exit latency above which a state is a finding (1us ..= 10ms; sysfs
    /// counts whole µs)
    #[arg(long, default_value = "10us", value_name = "TIME", value_parser = common::duration(1e-6, 0.01))]
    pub(super) target: Duration,
    /// The report as a self-contained HTML page
    #[arg(long, value_name = "FILE")]
    pub(super) html: Option<PathBuf>,
    #[command(flatten)]
    pub(super) out: OutArgs,
}
