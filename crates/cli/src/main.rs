//! `rtscope`: measure, explain and bound real-time latency on Linux.
//!
//! What it owns: every clap definition (declared once, in flattened groups with typed values), the
//! mapping from the library's typed fields to flag names, deprecated spellings, exit codes, help,
//! man page and completions. What it must not do: measure, analyse or format a result itself.
//!
//! This binary only wires the library crates: flags are parsed (clap), resolved into a validated
//! configuration before anything starts, then handed to the crate that does the work.

mod cmd;
mod deprecated;
mod exit;
mod fields;
mod fields_bench;
#[cfg(test)]
mod fields_check;
mod fields_lab;
mod fields_load;
mod fields_offline;
mod fields_practise;
mod fields_store;
#[cfg(test)]
mod flag_table;
mod resolver;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "rtscope",
    version,
    about = "Measure, explain and bound real-time latency on Linux",
    after_help = exit::TABLE
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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

fn main() {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let text: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    rtscope_session::record::set_cmdline(&text);
    let cli = match Cli::try_parse_from(deprecated::rewrite_argv(&argv)) {
        Ok(c) => c,
        Err(e) => {
            // clap's own help/version output is not an error.
            if !e.use_stderr() {
                let _ = e.print();
                std::process::exit(0);
            }
            // Bad flags: one line naming the flag (and the accepted values), exit 2. clap
            // quotes the offending value: a password in a --db URL is masked.
            eprintln!(
                "rtscope: {}",
                rtscope_model::secrets::redact(&exit::clap_line(&e))
            );
            std::process::exit(exit::USAGE);
        }
    };
    // Verbs that only read and print: a closed pipe (`rtscope analyze x.rtt | head`) ends them
    // quietly, like any Unix filter. Verbs that change kernel state keep SIGPIPE ignored (Rust's
    // default) so that their clean-up always runs.
    if matches!(
        cli.command,
        Command::Analyze(_)
            | Command::Runs(_)
            | Command::Show(_)
            | Command::Compare(_)
            | Command::Export(_)
    ) {
        // Before any thread exists.
        rtscope_sys::signals::set_default(rtscope_sys::Signal::SIGPIPE);
    }
    let result = match cli.command {
        Command::Run(a) => cmd::run::run(a),
        Command::Measure(a) => cmd::measure::run(a),
        Command::Monitor(a) => cmd::monitor::run(a),
        Command::Cyclictest(a) => cmd::cyclictest::run(a),
        Command::Import(a) => cmd::import::run(a),
        Command::Load(a) => cmd::load::run(a),
        Command::Trace(a) => cmd::trace::run(a),
        Command::Analyze(a) => cmd::analyze::run(a),
        Command::Bound(a) => cmd::bound::run(a),
        Command::Rhealstone(a) => cmd::rhealstone::run(a),
        Command::Noise(a) => cmd::noise::run(a),
        Command::Doctor(a) => cmd::doctor::run(a),
        Command::Watch(a) => cmd::watch::run(a),
        Command::SchedScale(a) => cmd::sched_scale::run(a),
        Command::Pdlt(a) => cmd::pdlt::run(a),
        Command::Mbwi(a) => cmd::mbwi::run(a),
        Command::Practise(a) => cmd::practise::run(a),
        Command::Taskset(a) => cmd::taskset::run(a),
        Command::Lab(a) => cmd::lab::run(a),
        Command::Campaign(a) => cmd::campaign::run(a),
        Command::Runs(a) => cmd::runs::run(a),
        Command::Show(a) => cmd::show::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Report(a) => cmd::report::run(a),
        Command::Export(a) => cmd::export::run(a),
        // Rendered whole, then printed like every read-only verb (a closed pipe ends quietly).
        Command::Completions { shell } => {
            let mut c = <Cli as clap::CommandFactory>::command();
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut c, "rtscope", &mut buf);
            out(&String::from_utf8_lossy(&buf))
        }
        Command::Man { dir: Some(dir) } => man_pages(&dir),
        Command::Man { dir: None } => {
            let c = <Cli as clap::CommandFactory>::command();
            let mut buf = Vec::new();
            clap_mangen::Man::new(c)
                .render(&mut buf)
                .map_err(anyhow::Error::from)
                .and_then(|_| out(&String::from_utf8_lossy(&buf)))
        }
    };
    std::process::exit(exit::report(result));
}

/// One manual page per verb and sub-verb, as `man rtscope-measure` expects them.
fn man_pages(dir: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--dir {}: cannot create the directory", dir.display()))?;
    let c = <Cli as clap::CommandFactory>::command();
    clap_mangen::generate_to(c, dir)
        .with_context(|| format!("--dir {}: writing the manual pages", dir.display()))
}

/// Print to stdout; a closed pipe (`rtscope man | head`) ends the output quietly.
fn out(s: &str) -> anyhow::Result<()> {
    Ok(rtscope_session::outputs::print(s)?)
}
