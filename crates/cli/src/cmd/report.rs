//! `rtscope report RUN…|--campaign NAME -o report.html [--figures DIR]`: one self-contained HTML
//! report (inline SVG, no network, prints well); optionally every figure as SVG and PNG.

use super::db::{self, DbArgs};
use crate::usage;
use rtscope_report::html::{build, write_figures, ReportOptions};
use rtscope_store::RunFilter;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// Run ids (or unique prefixes); the first is the comparison baseline [default: the latest
    /// stored run]
    runs: Vec<String>,
    /// Every run of this campaign (in the order they were taken)
    #[arg(long, value_name = "NAME")]
    campaign: Option<String>,
    /// Output HTML file
    #[arg(short, long, value_name = "FILE", default_value = "report.html")]
    output: PathBuf,
    /// Also write each figure as SVG and PNG into DIR
    #[arg(long, value_name = "DIR")]
    figures: Option<PathBuf>,
    /// Report title
    #[arg(long)]
    title: Option<String>,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let mut store = db::open_read(&a.db)?;
    // No ids and no campaign: the latest stored run, as a user expects.
    let ids: Vec<String> = if a.runs.is_empty() && a.campaign.is_none() {
        let latest = store
            .list_runs(&RunFilter {
                limit: Some(1),
                ..Default::default()
            })
            .map_err(db::map_err)?;
        match latest.last() {
            Some(r) => vec![r.id.clone()],
            None => {
                return Err(usage!(
                    "report: no stored runs in {} (give run ids, --campaign NAME or --db)",
                    store.location()
                ))
            }
        }
    } else {
        a.runs.clone()
    };
    let mut runs = db::load(&mut store, &ids)?;
    if let Some(c) = &a.campaign {
        let found = store
            .load_runs(&RunFilter {
                tags: vec![("campaign".into(), c.clone())],
                ..Default::default()
            })
            .map_err(db::map_err)?;
        // A campaign report shows what the campaign measured: complete runs only (an
        // interrupted cell was measured again on resumption).
        let total = found.len();
        let found: Vec<_> = found
            .into_iter()
            .filter(rtscope_store::campaign::is_complete)
            .collect();
        if found.len() < total {
            eprintln!(
                "report: {} interrupted/partial run(s) of campaign '{c}' left out",
                total - found.len()
            );
        }
        if found.is_empty() {
            return Err(usage!(
                "--campaign: no stored runs of campaign '{c}' (see `rtscope runs --campaign {c}`)"
            ));
        }
        runs.extend(found);
    }
    let title = a.title.clone().unwrap_or_else(|| match &a.campaign {
        Some(c) => format!("rtscope campaign {c}"),
        None => "rtscope latency report".into(),
    });
    let opts = ReportOptions {
        title,
        generated_at: super::common::rfc3339(std::time::SystemTime::now()),
        command: super::common::cmdline().join(" "),
    };
    let report = build(&runs, &opts);
    super::common::write_atomic(&a.output, report.html.as_bytes())?;
    eprintln!(
        "report: {} ({} runs, {} figures)",
        a.output.display(),
        runs.len(),
        report.figures.len()
    );
    if let Some(dir) = &a.figures {
        let files = write_figures(&report.figures, dir)?;
        eprintln!("figures: {} files in {}", files.len(), dir.display());
    }
    Ok(())
}
