//! The argument groups the verbs flatten, as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

/// `--cpus LIST`: the CPUs a verb uses [default: every online CPU].
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CpuListArg {
    /// CPUs, e.g. 0,2-3 [default: all online CPUs]
    #[arg(short = 'c', long = "cpus", value_name = "LIST")]
    pub cpus: Option<CpuList>,
}

/// `--cpu N`: the one CPU a benchmark pins every thread to.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CpuArg {
    /// The one CPU every thread is pinned to [default: the last online CPU]
    #[arg(long = "cpu", value_name = "CPU")]
    pub cpu: Option<u32>,
}

/// `-D/--duration TIME` with a verb's default.
#[derive(clap::Args, Debug, Clone)]
pub struct DurationArg {
    /// Run time: 30s, 5m, 1h, 1d (1ms ..= 30d)
    #[arg(short = 'D', long, value_name = "TIME", value_parser = run_time(), allow_hyphen_values = true)]
    pub duration: Option<Duration>,
}

/// `--json FILE|-`, the same in every verb: the verb's JSON document to FILE (written atomically)
/// or, with `-` or no value, to stdout (then the human text is not printed: stdout stays JSON).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct JsonOut {
    /// Write the result as JSON to FILE, or to stdout with `-` (or no value)
    #[arg(long = "json", value_name = "FILE|-", num_args = 0..=1, default_missing_value = "-")]
    pub path: Option<PathBuf>,
}

/// Where a run is stored: `--db`, `--no-store`, `--tag` (every producing verb stores by
/// default).
#[derive(clap::Args, Debug, Clone)]
pub struct StoreArgs {
    #[command(flatten)]
    pub db: crate::cmd::db::DbArgs,
    /// Do not store the run in the results database
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
    /// Storing is the default; kept so that older scripts still run
    #[arg(long, hide = true)]
    pub store: bool,
    /// key=value tag stored with the run (repeatable)
    #[arg(long = "tag", value_name = "K=V", value_parser = parse_tag)]
    pub tags: Vec<(String, String)>,
}

/// The output flags of every verb that produces a run: `--json FILE|-`, the store group, `-q`.
#[derive(clap::Args, Debug, Clone)]
pub struct OutArgs {
    /// The RunRecord as JSON: FILE, or stdout with `-` (the text is then not printed)
    #[command(flatten)]
    pub json: JsonOut,
    #[command(flatten)]
    pub store: StoreArgs,
    /// No progress lines (the result and errors are still printed)
    #[arg(short, long)]
    pub quiet: bool,
}
