//! `rtscope compare RUN…`: side-by-side statistics and a verdict per pair against the baseline
//! (the first run, or `--baseline`). With `--threshold PCT`, exits 3 when a candidate regressed
//! on `--metric` by more than PCT and the difference is significant at 99 %: a CI gate.

use super::db::{self, DbArgs};
use crate::exit::{ExitCode, REGRESSION};
use crate::usage;
use rtscope_analysis::compare::{self as cmp, Metric, Options};
use rtscope_report::compare::{render, Out, PairOut, RunOut, CAVEAT};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// Run ids (or unique prefixes); the first is the baseline unless --baseline is given
    #[arg(required = true, num_args = 1..)]
    runs: Vec<String>,
    /// Baseline run (default: the first RUN)
    #[arg(long)]
    baseline: Option<String>,
    /// Exit with code 3 when a run regressed on --metric by more than PCT percent (0..=10000)
    #[arg(long, value_name = "PCT")]
    threshold: Option<f64>,
    /// Metric the threshold applies to: avg, median, p99, p99.99, max
    #[arg(long, default_value = "p99", value_parser = ["avg", "mean", "median", "p50", "p99", "p99.99", "p9999", "max"])]
    metric: String,
    /// The comparison as JSON (FILE, or stdout with `-`); tables otherwise
    #[command(flatten)]
    json: super::common::JsonOut,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    a.json.check()?;
    let metric = Metric::parse(&a.metric).ok_or_else(|| {
        usage!(
            "--metric: '{}' is not one of avg, median, p99, p99.99, max",
            a.metric
        )
    })?;
    if let Some(t) = a.threshold {
        if !(0.0..=10_000.0).contains(&t) {
            return Err(usage!("--threshold: must be 0..=10000 percent, got {t}"));
        }
    }
    let mut ids = a.runs.clone();
    if let Some(b) = &a.baseline {
        ids.retain(|x| x != b);
        ids.insert(0, b.clone());
    }
    if ids.len() < 2 {
        return Err(usage!(
            "compare: give at least two runs (got {})",
            ids.len()
        ));
    }
    let mut store = db::open_read(&a.db)?;
    let recs = db::load(&mut store, &ids)?;
    let opts = Options::default();
    let runs: Vec<RunOut> = recs
        .iter()
        .map(|r| RunOut {
            id: r.id.clone(),
            label: db::label(r),
            stats: if has_distribution(r) {
                cmp::side(&r.histogram, &opts)
            } else {
                cmp::side_from_stats(&r.stats)
            },
        })
        .collect();
    let base = &recs[0];
    let mut notes = Vec::new();
    for r in recs.iter().filter(|r| !has_distribution(r)) {
        notes.push(format!(
            "{}: no latency distribution stored (imported from cyclictest status lines): only samples, min, avg and max are shown; it takes part in no test",
            r.id
        ));
    }
    let pairs: Vec<PairOut> = recs[1..]
        .iter()
        .filter(|c| has_distribution(base) && has_distribution(c))
        .map(|c| {
            let comparison = cmp::compare(&base.histogram, &c.histogram, &opts);
            let regression = a.threshold.and_then(|t| comparison.regression(metric, t));
            PairOut {
                baseline: base.id.clone(),
                candidate: c.id.clone(),
                comparison,
                regression,
            }
        })
        .collect();
    let out = Out {
        baseline: base.id.clone(),
        runs,
        pairs,
        notes,
        caveat: CAVEAT,
    };
    if a.json.path.is_some() {
        a.json.write(&serde_json::to_string_pretty(&out)?)?;
    }
    if !a.json.to_stdout() {
        db::out(&render(&out))?;
    }
    let regressions: Vec<String> = out
        .pairs
        .iter()
        .filter_map(|p| {
            p.regression
                .as_ref()
                .map(|r| format!("{}: {r}", p.candidate))
        })
        .collect();
    if !regressions.is_empty() {
        return Err(ExitCode(
            REGRESSION,
            format!("regression: {}", regressions.join("; ")),
        )
        .into());
    }
    Ok(())
}

/// Samples without a histogram: a run that kept only summary statistics.
fn has_distribution(r: &rtscope_model::RunRecord) -> bool {
    r.histogram.count() > 0 || r.stats.samples == 0
}
