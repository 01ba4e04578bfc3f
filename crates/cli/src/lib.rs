//! `rtscope`: measure, explain and bound real-time latency on Linux.
//!
//! What it owns: every clap definition (declared once, in flattened groups with typed values), the
//! mapping from the library's typed fields to flag names, deprecated spellings, exit codes, help,
//! man page and completions. What it must not do: measure, analyse or format a result itself.
//!
//! The binary (`src/main.rs`) only calls [`main`]: flags are parsed (clap), resolved into a
//! validated configuration before anything starts, then handed to the crate that does the work.
//! It is a library so that its tests (`tests/`) reach the clap tree and the field maps.

pub mod cmd;
pub mod deprecated;
pub mod exit;
pub mod fields;
pub mod fields_bench;
pub mod fields_lab;
pub mod fields_load;
pub mod fields_offline;
pub mod fields_practise;
pub mod fields_store;
pub mod fields_verbs;
pub mod resolver;

use clap::{Parser, Subcommand};

mod flags;
pub use flags::*;

/// The `rtscope` command line: parse `std::env::args_os()`, run the verb, exit with its code.
pub fn main() {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let text: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    rtscope_session::record::set_cmdline(&text);
    // The import command of a record the database did not take names the database's flag.
    rtscope_store::fallback::set_field_names(fields_store::flag);
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
