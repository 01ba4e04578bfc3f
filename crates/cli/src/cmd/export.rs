//! `rtscope export RUN --format json|csv`: a stored run for other tools.
//!
//! CSV: one row per non-empty histogram bucket, `scope,cpu,latency_ns,count`; `scope` is `all`
//! for the run's merged histogram and `thread` for each measurement thread. Buckets are exact
//! below 2048 ns and ≤ 0.1 % wide above (the stored HDR histogram; see docs/reports.md).

use super::db::{self, DbArgs};
use rtscope_model::RunRecord;

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Format {
    Json,
    Csv,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// Run id (or a unique prefix of one)
    run: String,
    #[arg(long, value_enum, default_value = "json")]
    format: Format,
    /// Write to FILE instead of stdout
    #[arg(short, long, value_name = "FILE")]
    output: Option<std::path::PathBuf>,
}

pub fn csv(rec: &RunRecord) -> String {
    let mut out = String::from("scope,cpu,latency_ns,count\n");
    for (v, c) in rec.histogram.buckets() {
        out.push_str(&format!("all,,{v},{c}\n"));
    }
    for t in &rec.threads {
        for (v, c) in t.histogram.buckets() {
            out.push_str(&format!("thread,{},{v},{c}\n", t.cpu));
        }
    }
    out
}

pub fn run(a: Args) -> anyhow::Result<()> {
    if let Some(p) = &a.output {
        super::common::check_output("-o", p)?;
    }
    let mut store = db::open_read(&a.db)?;
    let rec = store.get_run(&a.run).map_err(db::map_err)?;
    let text = match a.format {
        Format::Json => rtscope_report::json::run_record(&rec) + "\n",
        Format::Csv => csv(&rec),
    };
    match &a.output {
        Some(p) => {
            super::common::write_atomic(p, text.as_bytes())?;
        }
        None => db::out(&text)?,
    }
    Ok(())
}
