//! `rtscope compare RUN…`: side-by-side statistics and a verdict per pair against the baseline
//! (the first run, or `--baseline`). With `--threshold PCT`, exits 3 when a candidate regressed
//! on `--metric` by more than PCT and the difference is significant at 99 %: a CI gate.

use super::db::{self, DbArgs};
use crate::exit::{ExitCode, REGRESSION};
use crate::usage;
use rtscope_analysis::compare::{self as cmp, Metric, Options};
use serde::Serialize;

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

#[derive(Serialize)]
struct Out {
    baseline: String,
    runs: Vec<RunOut>,
    pairs: Vec<PairOut>,
    /// Runs left out of the pairwise tests, and why.
    notes: Vec<String>,
    caveat: &'static str,
}
#[derive(Serialize)]
struct RunOut {
    id: String,
    label: String,
    stats: cmp::Side,
}
#[derive(Serialize)]
struct PairOut {
    baseline: String,
    candidate: String,
    comparison: cmp::PairComparison,
    regression: Option<String>,
}

const CAVEAT: &str = "samples within a run are autocorrelated (a host stall hits consecutive samples): p-values assume independence and overstate certainty; repeat runs to be sure";

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

fn ci(v: Option<f64>, c: Option<(f64, f64)>) -> String {
    match (v, c) {
        (Some(v), Some((lo, hi))) => format!("{:.1} [{:.1}, {:.1}]", v / 1e3, lo / 1e3, hi / 1e3),
        (v, _) => db::us(v),
    }
}

/// How one table row is read from a run's statistics.
type RowFn = Box<dyn Fn(&cmp::Side) -> String>;

fn render(o: &Out) -> String {
    let n = o.runs.len() + 1;
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut head = vec!["µs".to_string()];
    head.extend(o.runs.iter().enumerate().map(|(i, r)| {
        format!(
            "{}{} ({})",
            if i == 0 { "baseline " } else { "" },
            r.id,
            r.label
        )
    }));
    rows.push(head);
    let f = |v: Option<u64>| v.map(|x| x as f64);
    let lines: Vec<(&str, RowFn)> = vec![
        ("min", Box::new(move |s: &cmp::Side| db::us(f(s.min_ns)))),
        (
            "avg [99% CI]",
            Box::new(|s: &cmp::Side| ci(s.avg_ns, s.avg_ci99_ns)),
        ),
        (
            "median",
            Box::new(move |s: &cmp::Side| db::us(f(s.median_ns))),
        ),
        (
            "p99 [99% CI]",
            Box::new(move |s: &cmp::Side| ci(f(s.p99_ns), s.p99_ci99_ns)),
        ),
        (
            "p99.99 [99% CI]",
            Box::new(move |s: &cmp::Side| {
                let t = ci(f(s.p9999_ns), s.p9999_ci99_ns);
                if s.p9999_reliable {
                    t
                } else {
                    format!("{t} (few samples)")
                }
            }),
        ),
        ("max", Box::new(move |s: &cmp::Side| db::us(f(s.max_ns)))),
        ("samples", Box::new(|s: &cmp::Side| s.samples.to_string())),
    ];
    for (name, get) in &lines {
        let mut r = vec![name.to_string()];
        r.extend(o.runs.iter().map(|x| get(&x.stats)));
        rows.push(r);
    }
    let arr: Vec<Vec<String>> = rows
        .into_iter()
        .map(|mut r| {
            r.resize(n, String::new());
            r
        })
        .collect();
    let mut out = String::new();
    let mut w = vec![0usize; n];
    for r in &arr {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.escape_debug().to_string().chars().count());
        }
    }
    for r in &arr {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{:<width$}", c.escape_debug().to_string(), width = w[i]))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push('\n');
    for p in &o.pairs {
        out.push_str(&format!(
            "{} vs baseline {}: {}\n",
            p.candidate,
            p.baseline,
            p.comparison.verdict.text().to_uppercase()
        ));
        for r in &p.comparison.reasons {
            out.push_str(&format!("  - {r}\n"));
        }
        if let Some(ks) = &p.comparison.kolmogorov_smirnov {
            out.push_str(&format!(
                "  - Kolmogorov–Smirnov D = {:.4}, p = {:.2e}\n",
                ks.d, ks.p_value
            ));
        }
        if let Some(m) = &p.comparison.max_at_equal_count {
            if let (Some(med), Some((lo, hi))) =
                (m.subsampled_max_median_ns, m.subsampled_max_range99_ns)
            {
                out.push_str(&format!(
                    "  - max at {} samples: subsampled {} max median {:.1} µs (99% range {:.1}–{:.1}) vs other run {:.1} µs\n",
                    m.samples,
                    m.subsampled,
                    med as f64 / 1e3,
                    lo as f64 / 1e3,
                    hi as f64 / 1e3,
                    if m.subsampled == "baseline" { m.candidate_max_ns } else { m.baseline_max_ns } / 1e3
                ));
            }
        }
        if let Some(r) = &p.regression {
            out.push_str(&format!("  ! REGRESSION: {r}\n"));
        }
    }
    for n in &o.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out.push_str(&format!("\nnote: {CAVEAT}\n"));
    out
}
