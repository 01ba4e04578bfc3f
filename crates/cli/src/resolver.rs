//! A campaign cell's `rtscope measure` arguments read by this binary's own grammar: the
//! campaign file's `extra_args` are parsed by the same clap definitions as the command line
//! (old spellings rewritten with their notice), then resolved by the session, with every
//! refusal one line naming the flag. The campaign (`rtscope_verbs::campaign`) calls
//! [`measure_plan`] for each host cell and measures it in this process.

use crate::cmd::measure::{Args, ProbeArg, TraceArg};
use clap::Parser;
use rtscope_session::{resolve, Plan, VerbError};
use rtscope_store::campaign::Campaign;

mod flags;
use flags::*;

/// `args` (what follows `rtscope measure`) parsed; a refusal is clap's one line.
fn parse(args: &[String]) -> Result<Args, VerbError> {
    let argv: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
    let argv =
        std::iter::once("measure".into()).chain(crate::deprecated::rewrite("measure", &argv));
    let m = Measure::try_parse_from(argv)
        .map_err(|e| VerbError::BadInput(format!("measure {}", crate::exit::clap_line(&e))))?;
    if m.args.probe == ProbeArg::Timerlat {
        return Err(VerbError::BadInput(
            "--probe timerlat: a campaign cell is a user-space measurement".into(),
        ));
    }
    Ok(m.args)
}

/// A cell's measurement, resolved: `args` as they follow `rtscope measure` (the cell's axes,
/// then the campaign's `extra_args`). The record's command line is that `measure` command.
pub fn measure_plan(args: &[String]) -> Result<Plan, VerbError> {
    let a = parse(args)?;
    let mut req = a.flags.request(TraceArg::Off);
    let cmdline: Vec<String> = ["rtscope", "measure"]
        .into_iter()
        .map(String::from)
        .chain(args.iter().cloned())
        .collect();
    req.cmdline = rtscope_model::secrets::redact_argv(&cmdline);
    resolve::measure(&req, "measure", None).map_err(|e| match e {
        e if e.is_bad_input() => {
            VerbError::BadInput(crate::exit::libraries(&e.render(crate::fields::flag)))
        }
        e => e,
    })
}

/// Every cell's `measure` arguments parse (nothing is resolved against this machine: a lab cell
/// runs elsewhere), before the first cell starts; a refusal is one line naming the cell and the
/// argument. A command for `--load exec` (`--load-exec`) runs only with `allow_exec`: a
/// campaign file is often someone else's.
pub fn check_campaign(c: &Campaign, allow_exec: bool) -> Result<(), VerbError> {
    for cell in c.cells() {
        let a = parse(&rtscope_verbs::campaign::measure_args(c, &cell))
            .map_err(|e| VerbError::BadInput(format!("campaign cell {}: {e}", cell.id)))?;
        if !a.flags.load_exec.is_empty() && !allow_exec {
            return Err(VerbError::BadInput(format!(
                "campaign cell {}: --load-exec {}: a campaign file runs a command of its own only with --allow-exec",
                cell.id,
                a.flags.load_exec.join(" ")
            )));
        }
    }
    Ok(())
}
