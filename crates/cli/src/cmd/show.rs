//! `rtscope show RUN`: one stored run, in full (text summary or JSON).

use super::db::{self, DbArgs};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// Run id (or a unique prefix of one)
    run: String,
    /// The whole RunRecord as JSON (FILE, or stdout with `-`)
    #[command(flatten)]
    json: super::common::JsonOut,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    a.json.check()?;
    let mut store = db::open_read(&a.db)?;
    let rec = store.get_run(&a.run).map_err(db::map_err)?;
    if a.json.path.is_some() {
        return a.json.write(&rtscope_report::json::run_record(&rec));
    }
    let esc = |s: &str| s.escape_debug().to_string();
    let mut o = String::new();
    use std::fmt::Write;
    writeln!(o, "run       {}", esc(&rec.id))?;
    let state = rtscope_store::run_state(
        &rtscope_store::stored_state(&rec),
        rec.checkpoint
            .as_ref()
            .filter(|_| rec.end_reason == rtscope_model::EndReason::Checkpoint)
            .map(|c| (c.hostname.as_str(), c.pid)),
    );
    writeln!(
        o,
        "started   {}  ({:.1} s, {})",
        esc(&rec.started_at),
        rec.wall_duration_s,
        esc(&state)
    )?;
    writeln!(
        o,
        "host      {}  kernel {} ({})",
        esc(&rec.system.hostname),
        esc(&rec.system.kernel_release),
        esc(&rec.system.preempt_model)
    )?;
    writeln!(
        o,
        "command   {}",
        esc(&rtscope_model::secrets::redact_argv(&rec.config.cmdline).join(" "))
    )?;
    let tags = rtscope_store::all_tags(&rec);
    if !tags.is_empty() {
        let t: Vec<String> = tags
            .iter()
            .map(|(k, v)| format!("{}={}", esc(k), esc(v)))
            .collect();
        writeln!(o, "tags      {}", t.join(" "))?;
    }
    if let Some(t) = &rec.trace_file {
        writeln!(o, "trace     {}", esc(t))?;
    }
    writeln!(o)?;
    o.push_str(&rtscope_report::text::summary(&rec));
    db::out(&o)?;
    Ok(())
}
