//! Text and JSON shapes of `rtscope compare`: the side-by-side table and the per-pair verdicts.

use rtscope_analysis::compare as cmp;
use serde::Serialize;

/// µs with one decimal, `-` when unknown.
fn us(ns: Option<f64>) -> String {
    ns.map_or("-".into(), |v| format!("{:.1}", v / 1e3))
}

#[derive(Serialize)]
pub struct Out {
    pub baseline: String,
    pub runs: Vec<RunOut>,
    pub pairs: Vec<PairOut>,
    /// Runs left out of the pairwise tests, and why.
    pub notes: Vec<String>,
    pub caveat: &'static str,
}
#[derive(Serialize)]
pub struct RunOut {
    pub id: String,
    pub label: String,
    pub stats: cmp::Side,
}
#[derive(Serialize)]
pub struct PairOut {
    pub baseline: String,
    pub candidate: String,
    pub comparison: cmp::PairComparison,
    pub regression: Option<String>,
    /// The maxima through the runs' tail models (docs/tail.md), where both runs have one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail_maxima: Option<rtscope_analysis::tail::MaxComparison>,
}

pub const CAVEAT: &str = "samples within a run are autocorrelated (a host stall hits consecutive samples): p-values assume independence and overstate certainty; repeat runs to be sure";

fn ci(v: Option<f64>, c: Option<(f64, f64)>) -> String {
    match (v, c) {
        (Some(v), Some((lo, hi))) => format!("{:.1} [{:.1}, {:.1}]", v / 1e3, lo / 1e3, hi / 1e3),
        (v, _) => us(v),
    }
}

/// How one table row is read from a run's statistics.
type RowFn = Box<dyn Fn(&cmp::Side) -> String>;

pub fn render(o: &Out) -> String {
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
        ("min", Box::new(move |s: &cmp::Side| us(f(s.min_ns)))),
        (
            "avg [99% CI]",
            Box::new(|s: &cmp::Side| ci(s.avg_ns, s.avg_ci99_ns)),
        ),
        ("median", Box::new(move |s: &cmp::Side| us(f(s.median_ns)))),
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
        ("max", Box::new(move |s: &cmp::Side| us(f(s.max_ns)))),
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
        if let Some(t) = &p.tail_maxima {
            out.push_str(&format!("  - {}\n", tail_maxima_words(t)));
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

/// The maxima's difference through the tail models, in words.
fn tail_maxima_words(t: &rtscope_analysis::tail::MaxComparison) -> String {
    let verdict = if t.base_max_ns == t.cand_max_ns {
        "the maxima are equal".to_string()
    } else if t.beyond {
        "the maxima differ beyond what the runs' tail models explain".to_string()
    } else {
        "the maxima differ within what the runs' tail models explain".to_string()
    };
    format!(
        "tail models: {verdict} (max {:.1} vs {:.1} µs; the higher max under the lower run's model p = {:.2e}, the lower under the higher's p = {:.2e}){}",
        t.base_max_ns as f64 / 1e3,
        t.cand_max_ns as f64 / 1e3,
        t.p_higher_under_lower,
        t.p_lower_under_higher,
        if t.reliable { "" } else { " — UNRELIABLE: a fit failed its checks" }
    )
}
