//! The HTML report: one self-contained file (inline SVG and CSS, no script, no network; a
//! Content-Security-Policy forbids anything else), readable on screen and on paper.
//! Every string that came from a system or a trace is escaped (`svg::esc`).

use crate::figures::{self, Figure, MatrixCell};
use crate::svg::esc;
use rtscope_analysis::compare::{self as cmp, Options};
use rtscope_model::{Histogram, Measurement, RunKind, RunRecord};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default)]
pub struct ReportOptions {
    pub title: String,
    /// Shown in the header (the caller's clock; this crate reads none).
    pub generated_at: String,
    /// The command that produced the report.
    pub command: String,
}

pub struct Report {
    pub html: String,
    pub figures: Vec<Figure>,
}

#[derive(Debug, thiserror::Error)]
pub enum FigureError {
    #[error("cannot write {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("figure {0}: cannot render to PNG: {1}")]
    Render(String, String),
}

/// Row label of the comparison matrix: kernel (a `kernel` tag, else the release) / policy.
pub fn row_label(r: &RunRecord) -> String {
    let tags = &r.tags;
    let kernel = tags
        .get("kernel")
        .cloned()
        .unwrap_or_else(|| r.system.kernel_release.clone());
    format!("{kernel} / {}", r.policy_name())
}

/// Column label: the scenario (a `scenario` tag, else the loads, `idle` when none).
pub fn col_label(r: &RunRecord) -> String {
    if let Some(s) = r.tags.get("scenario") {
        return s.clone();
    }
    let loads = r.load_names();
    if loads.is_empty() {
        "idle".into()
    } else {
        loads.join("+")
    }
}

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}
fn ous(ns: Option<u64>) -> String {
    ns.map_or("-".into(), |v| us(v as f64))
}

const CSS: &str = r#"
body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;color:#111;line-height:1.4;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #1f4e9c;padding-bottom:.2em;margin-top:2em}
h3{margin-top:1.5em}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}
th,td{border:1px solid #bbb;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#eef2f8}td.n{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:1em 0;page-break-inside:avoid;break-inside:avoid}
figcaption{font-size:.85em;color:#333;max-width:640px}
svg.figure{max-width:100%;height:auto;border:1px solid #eee}
code,pre{font-family:"DejaVu Sans Mono",monospace;font-size:.85em;white-space:pre-wrap;word-break:break-all}
.worse{color:#b00;font-weight:bold}.better{color:#070;font-weight:bold}.warn{color:#a60}
.run{page-break-before:always;break-before:page}
@media print{body{margin:0;max-width:none}h2{page-break-after:avoid}a{color:inherit;text-decoration:none}}
"#;

fn figure_html(f: &Figure) -> String {
    format!(
        "<figure>{}<figcaption><b>{}</b> — {}</figcaption></figure>\n",
        f.svg,
        esc(&f.title),
        esc(&f.caption)
    )
}

fn pooled(runs: &[(&RunRecord, &Measurement)]) -> Histogram {
    let mut h = Histogram::new();
    for (_, m) in runs {
        h.merge(&m.histogram);
    }
    h
}

pub fn build(runs: &[RunRecord], opts: &ReportOptions) -> Report {
    let mut figs: Vec<Figure> = Vec::new();
    let mut body = String::new();
    let title = if opts.title.is_empty() {
        "rtscope latency report".to_string()
    } else {
        opts.title.clone()
    };
    let _ = write!(
        body,
        "<h1>{}</h1><p>{} run(s). Generated {} by <code>{}</code>.</p>",
        esc(&title),
        runs.len(),
        esc(&opts.generated_at),
        esc(&rtscope_model::secrets::redact(&opts.command))
    );

    // Runs overview.
    body.push_str("<h2 id=\"runs\">Runs</h2><table><tr><th>id</th><th>started</th><th>host</th><th>kernel</th><th>policy</th><th>scenario</th><th>samples</th><th>avg µs</th><th>max µs</th><th>tags</th></tr>");
    for r in runs {
        let t: Vec<String> = r.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let stats = r.stats();
        let _ = write!(
            body,
            "<tr><td><a href=\"#run-{id}\">{id}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td></tr>",
            esc(&r.started_at),
            esc(&r.system.hostname),
            esc(&r.system.kernel_release),
            esc(&r.policy_name()),
            esc(&col_label(r)),
            stats.samples,
            stats.avg_ns.map_or("-".into(), us),
            ous(stats.max_ns),
            esc(&t.join(" ")),
            id = esc(&r.id)
        );
    }
    body.push_str("</table>");

    // System information, once per distinct machine state.
    body.push_str("<h2 id=\"system\">System</h2>");
    let mut seen: Vec<String> = Vec::new();
    for r in runs {
        let s = &r.system;
        let key = format!(
            "{}|{}|{}|{}",
            s.hostname, s.kernel_release, s.kernel_version, s.kernel_cmdline
        );
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let rows: Vec<(&str, String)> = vec![
            ("host", s.hostname.clone()),
            (
                "kernel",
                format!("{} {}", s.kernel_release, s.kernel_version),
            ),
            (
                "preemption model",
                format!("{} (from {})", s.preempt_model, s.preempt_model_source),
            ),
            ("kernel command line", s.kernel_cmdline.clone()),
            ("CPU", s.cpu_model.clone()),
            (
                "online CPUs",
                s.online_cpus
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            ("clocksource", s.clocksource.clone()),
            ("HZ", s.hz.map_or("-".into(), |h| h.to_string())),
            (
                "hypervisor",
                s.hypervisor
                    .clone()
                    .unwrap_or_else(|| "none detected".into()),
            ),
            (
                "cpuidle",
                format!(
                    "{} / {}",
                    s.cpuidle_driver.clone().unwrap_or_default(),
                    s.cpuidle_governor.clone().unwrap_or_default()
                ),
            ),
            (
                "isolcpus / nohz_full",
                format!(
                    "{} / {}",
                    s.isolcpus.clone().unwrap_or_default(),
                    s.nohz_full.clone().unwrap_or_default()
                ),
            ),
            (
                "RT throttling (runtime / period)",
                format!(
                    "{} / {} µs",
                    s.sched_rt_runtime_us.map_or("-".into(), |v| v.to_string()),
                    s.sched_rt_period_us.map_or("-".into(), |v| v.to_string())
                ),
            ),
        ];
        body.push_str("<table>");
        for (k, v) in rows {
            let _ = write!(body, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
        }
        body.push_str("</table>");
    }
    body.push_str("<h3>Command lines</h3><table><tr><th>run</th><th>command</th></tr>");
    for r in runs {
        let _ = write!(
            body,
            "<tr><td>{}</td><td><code>{}</code></td></tr>",
            esc(&r.id),
            esc(&shell_join(&rtscope_model::secrets::redact_argv(
                &r.cmdline
            )))
        );
    }
    body.push_str("</table>");

    // Comparison of the latency measurements: matrix, charts, CCDF, verdicts.
    let meas: Vec<(&RunRecord, &Measurement)> = runs
        .iter()
        .filter_map(|r| Some((r, r.measurement()?)))
        .collect();
    if meas.len() >= 2 {
        body.push_str("<h2 id=\"comparison\">Comparison</h2>");
        let mut rows: Vec<String> = Vec::new();
        let mut cols: Vec<String> = Vec::new();
        let mut groups: BTreeMap<(String, String), Vec<(&RunRecord, &Measurement)>> =
            BTreeMap::new();
        for &(r, m) in &meas {
            let (row, col) = (row_label(r), col_label(r));
            if !rows.contains(&row) {
                rows.push(row.clone());
            }
            if !cols.contains(&col) {
                cols.push(col.clone());
            }
            groups.entry((row, col)).or_default().push((r, m));
        }
        let cells: Vec<MatrixCell> = groups
            .iter()
            .filter_map(|((row, col), rs)| {
                let h = pooled(rs);
                Some(MatrixCell {
                    row: row.clone(),
                    col: col.clone(),
                    avg_ns: h.mean_ns()?,
                    ci99_ns: cmp::mean_ci99(&h)?,
                    max_ns: h.max_ns()? as f64,
                    runs: rs.len(),
                })
            })
            .collect();
        body.push_str("<p>Rows: kernel / policy; columns: scenario. Each cell: average latency in µs with its 99 % confidence interval, and the maximum (repetitions of a cell pooled).</p><table><tr><th></th>");
        for c in &cols {
            let _ = write!(body, "<th>{}</th>", esc(c));
        }
        body.push_str("</tr>");
        for row in &rows {
            let _ = write!(body, "<tr><th>{}</th>", esc(row));
            for col in &cols {
                match cells.iter().find(|c| &c.row == row && &c.col == col) {
                    Some(c) => {
                        let _ = write!(
                            body,
                            "<td class=n>avg {} [{}, {}]<br>max {}<br><small>{} run(s)</small></td>",
                            us(c.avg_ns),
                            us(c.ci99_ns.0),
                            us(c.ci99_ns.1),
                            us(c.max_ns),
                            c.runs
                        );
                    }
                    None => body.push_str("<td>-</td>"),
                }
            }
            body.push_str("</tr>");
        }
        body.push_str("</table>");
        let f = figures::matrix_chart("matrix-avg", &cells, &rows, &cols, false);
        body.push_str(&figure_html(&f));
        figs.push(f);
        let f = figures::matrix_chart("matrix-max", &cells, &rows, &cols, true);
        body.push_str(&figure_html(&f));
        figs.push(f);

        // CCDF: one curve per run, or per cell when that would be too many curves.
        let pooled_cells: Vec<(String, Histogram)> = if meas.len() > 8 {
            groups
                .iter()
                .map(|((r, c), rs)| (format!("{r} / {c}"), pooled(rs)))
                .collect()
        } else {
            meas.iter()
                .map(|(r, m)| {
                    (
                        format!("{} {} / {}", short(&r.id), row_label(r), col_label(r)),
                        m.histogram.clone(),
                    )
                })
                .collect()
        };
        let series: Vec<(String, &Histogram)> =
            pooled_cells.iter().map(|(l, h)| (l.clone(), h)).collect();
        let f = figures::ccdf("ccdf", &series);
        body.push_str(&figure_html(&f));
        figs.push(f);

        // Verdicts against the baseline (the first run).
        let (base, base_m) = meas[0];
        let o = Options::default();
        let _ = write!(
            body,
            "<h3>Verdicts against baseline {}</h3><p>Distribution shift: Mann–Whitney U (with effect size A) and Kolmogorov–Smirnov on the exact histograms; percentile intervals: bootstrap (99 %); maxima compared at equal sample counts (the larger run subsampled to the smaller's count, exact distribution). Samples within a run are autocorrelated, so p-values overstate certainty.</p><table><tr><th>run</th><th>verdict</th><th>avg Δ</th><th>p99 Δ [99 % CI µs]</th><th>max at equal count</th><th>why</th></tr>",
            esc(&base.id)
        );
        for (r, m) in &meas[1..] {
            let c = cmp::compare(&base_m.histogram, &m.histogram, &o);
            let class = match c.verdict {
                cmp::Verdict::Worse => "worse",
                cmp::Verdict::Better => "better",
                cmp::Verdict::NoSignificantChange => "",
            };
            let d = |m| {
                c.delta(m)
                    .map_or("-".to_string(), |d: &cmp::Delta| match d.diff_ci99_ns {
                        Some((lo, hi)) => format!(
                            "{:+.1} % [{:+.1}, {:+.1}]",
                            d.change_pct,
                            lo / 1e3,
                            hi / 1e3
                        ),
                        None => format!("{:+.1} %", d.change_pct),
                    })
            };
            let mx = c
                .max_at_equal_count
                .as_ref()
                .map_or("-".to_string(), |m| m.note.clone());
            let _ = write!(
                body,
                "<tr><td>{}</td><td class=\"{class}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&r.id),
                c.verdict.text(),
                esc(&d(cmp::Metric::Avg)),
                esc(&d(cmp::Metric::P99)),
                esc(&mx),
                esc(&c.reasons.join("; "))
            );
        }
        body.push_str("</table>");
    } else if let Some((r, m)) = meas.first() {
        let f = figures::ccdf("ccdf", &[(short(&r.id).to_string(), &m.histogram)]);
        body.push_str("<h2 id=\"comparison\">Tail</h2>");
        body.push_str(&figure_html(&f));
        figs.push(f);
    }

    // Attribution overview across runs.
    let attributed: Vec<(String, &rtscope_model::attribution::AttributionSummary)> = meas
        .iter()
        .filter_map(|(r, m)| {
            m.attribution.as_ref().map(|a| {
                (
                    format!(
                        "{} / {} {}",
                        r.policy_name(),
                        col_label(r),
                        &short(&r.id)[short(&r.id).len().saturating_sub(4)..]
                    ),
                    a,
                )
            })
        })
        .filter(|(_, a)| !a.causes.is_empty())
        .collect();
    if !attributed.is_empty() {
        body.push_str("<h2 id=\"attribution\">Attribution</h2>");
        let f = figures::attribution_bars("attribution", &attributed);
        body.push_str(&figure_html(&f));
        figs.push(f);
    }

    // The soundness experiment (calibrate, then validate), when these are its runs.
    let sound =
        rtscope_analysis::soundness::analyze(runs, &rtscope_analysis::soundness::prefixes_of(runs));
    if !sound.is_empty() {
        let f = crate::soundness::fig26("soundness", &sound);
        body.push_str(&crate::soundness::html_section(&sound, f.as_ref()));
        figs.extend(f);
    }

    // Per run.
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(
            body,
            "<section class=\"run\"><h2 id=\"run-{id}\">Run {id}</h2><p>{} on {} — {} — {} / {} — {}, {:?}</p>",
            esc(&r.started_at),
            esc(&r.system.hostname),
            esc(&r.verb),
            esc(&row_label(r)),
            esc(&col_label(r)),
            match r.measurement() {
                Some(m) => format!("{} samples", m.stats.samples),
                None => format!("a {} run", r.kind.name()),
            },
            r.end_reason,
            id = esc(&r.id)
        );
        match r.measurement() {
            Some(m) => {
                let f = figures::histogram(
                    &format!("hist-{i}"),
                    &format!("Latency histogram — {}", short(&r.id)),
                    m,
                );
                body.push_str(&figure_html(&f));
                figs.push(f);
                thread_tables(&mut body, m);
            }
            None => other_kind(&mut body, &mut figs, i, r),
        }
        run_tables(&mut body, r);
        if let Some(f) = figures::worst_timelines(&format!("worst-{i}"), r) {
            body.push_str("<h3>Worst samples</h3>");
            body.push_str(&figure_html(&f));
            figs.push(f);
        }
        if let Some(f) = figures::bound_vs_observed(&format!("bound-{i}"), r) {
            body.push_str("<h3>Bound vs observed</h3>");
            body.push_str(&figure_html(&f));
            figs.push(f);
        }
        if let Some(f) = figures::bound_series(&format!("bound-series-{i}"), r) {
            body.push_str(&figure_html(&f));
            figs.push(f);
        }
        if let Some(m) = r.measurement() {
            let tail = [
                crate::tail::ccdf_figure(&format!("tail-ccdf-{i}"), m),
                crate::tail::return_level_figure(&format!("tail-return-{i}"), m),
            ];
            if tail.iter().any(Option::is_some) {
                body.push_str("<h3>Tail model</h3>");
            }
            for f in tail.into_iter().flatten() {
                body.push_str(&figure_html(&f));
                figs.push(f);
            }
        }
        body.push_str("</section>");
    }

    let html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{}</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n",
        esc(&title)
    );
    Report {
        html,
        figures: figs,
    }
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// argv as a shell would need it typed (single-quoted where needed).
pub fn shell_join(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A run that is not a latency measurement: the verb's own text, and its figure where it has one.
fn other_kind(body: &mut String, figs: &mut Vec<Figure>, i: usize, r: &RunRecord) {
    let fig = |id: &str, title: &str, svg: String, caption: &str| Figure {
        id: format!("{id}-{i}"),
        title: title.to_string(),
        svg,
        caption: caption.to_string(),
    };
    let f = match &r.kind {
        RunKind::Pdlt(p) => Some(fig(
            "pdlt",
            "PDLT vs timer offset",
            crate::bench::pdlt_svg(p),
            "Process dispatch latency of the woken producer against where in the system call the timer expired (heursch-2001 Fig. 3); plateaus are non-preemptible regions.",
        )),
        RunKind::SchedScale(p) => Some(fig(
            "sched-scale",
            "Wake-up to run vs SCHED_OTHER load processes",
            crate::bench::sched_scale_svg(p),
            "Mean wake-up to run of the SCHED_FIFO thread per number of SCHED_OTHER load processes, with the fitted slope (heursch-2001 §4).",
        )),
        RunKind::Practise(p) => Some(fig(
            "practise",
            "Operation durations per structure",
            crate::practise::boxplot_svg(p),
            "Per structure and operation, the distribution of one call's duration (thesis §2.3.9).",
        )),
        _ => None,
    };
    let text = crate::text::summary(r);
    let _ = write!(body, "<pre>{}</pre>", esc(&text));
    if let Some(f) = f {
        body.push_str(&figure_html(&f));
        figs.push(f);
    }
}

fn thread_tables(body: &mut String, r: &Measurement) {
    body.push_str("<h3>Per CPU</h3><table><tr><th>CPU</th><th>tid</th><th>policy</th><th>prio</th><th>cycles</th><th>overruns</th><th>min µs</th><th>avg µs</th><th>median µs</th><th>p99 µs</th><th>p99.99 µs</th><th>max µs</th></tr>");
    for t in &r.threads {
        let pct = |p: f64| {
            t.stats.percentile(p).map_or("-".to_string(), |x| {
                format!(
                    "{}{}",
                    us(x.value_ns as f64),
                    if x.reliable { "" } else { "*" }
                )
            })
        };
        let _ = write!(
            body,
            "<tr><td class=n>{}</td><td class=n>{}</td><td>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td></tr>",
            t.cpu,
            t.tid,
            esc(&t.observed_policy),
            t.observed_priority,
            t.cycles,
            t.overruns,
            ous(t.stats.min_ns),
            t.stats.avg_ns.map_or("-".into(), us),
            ous(t.stats.median_ns),
            pct(99.0),
            pct(99.99),
            ous(t.stats.max_ns)
        );
    }
    body.push_str("</table><p><small>* fewer than 10 samples above this percentile: not reliable.</small></p>");
    let worst: Vec<_> = r.threads.iter().flat_map(|t| t.worst.iter()).collect();
    if !worst.is_empty() {
        let mut w = worst.clone();
        w.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
        w.truncate(10);
        body.push_str("<h3>Worst samples</h3><table><tr><th>latency µs</th><th>CPU</th><th>tid</th><th>cycle</th><th>planned wake-up (s)</th></tr>");
        for s in w {
            let _ = write!(
                body,
                "<tr><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{:.6}</td></tr>",
                us(s.latency_ns as f64),
                s.cpu,
                s.tid,
                s.cycle,
                s.expected_ns as f64 / 1e9
            );
        }
        body.push_str("</table>");
    }
    if let Some(a) = &r.attribution {
        attribution_table(body, a);
    }
}

fn attribution_table(body: &mut String, a: &rtscope_model::attribution::AttributionSummary) {
    body.push_str("<h3>Tail causes</h3><table><tr><th>cause</th><th>samples affected</th><th>total µs</th><th>max µs</th><th>p99 contribution µs</th><th>share of tail above p99</th></tr>");
    for c in &a.causes {
        let _ = write!(
                body,
                "<tr><td>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{:.1} %</td></tr>",
                esc(&c.cause),
                c.samples_affected,
                us(c.total_ns as f64),
                us(c.max_ns as f64),
                us(c.p99_contribution_ns as f64),
                c.tail_p99_share * 100.0
            );
    }
    body.push_str("</table>");
    if !a.per_cpu_tail.is_empty() {
        body.push_str("<ul>");
        for (cpu, what) in &a.per_cpu_tail {
            let _ = write!(body, "<li>CPU {cpu}: {}</li>", esc(what));
        }
        body.push_str("</ul>");
    }
    let _ = write!(
        body,
        "<p>{} samples attributed, {} unattributed, {} events lost.</p>",
        a.samples_attributed, a.samples_unattributed, a.lost_events
    );
}

fn run_tables(body: &mut String, r: &RunRecord) {
    if !r.loads.is_empty() {
        body.push_str("<h3>Load intensity</h3><table><tr><th>load</th><th>parameters</th><th>figures</th><th>duration s</th><th>warnings</th></tr>");
        for l in &r.loads {
            let params: Vec<String> = l.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let figs: Vec<String> = l
                .figures
                .iter()
                .map(|(k, v)| format!("{k} = {v:.1}"))
                .collect();
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=n>{:.1}</td><td>{}</td></tr>",
                esc(&l.kind),
                esc(&params.join(", ")),
                esc(&figs.join("; ")),
                l.duration_s,
                esc(&l.warnings.join("; "))
            );
        }
        body.push_str("</table>");
    }
    if !r.warnings.is_empty() || !r.hygiene.notes.is_empty() {
        body.push_str("<h3>Warnings</h3><ul>");
        for w in &r.warnings {
            let _ = write!(
                body,
                "<li class=warn><code>{}</code> {}</li>",
                w.code.as_str(),
                esc(&w.message)
            );
        }
        for n in &r.hygiene.notes {
            let _ = write!(body, "<li class=warn>{}</li>", esc(n));
        }
        body.push_str("</ul>");
    }
    if let Some(t) = &r.trace_file {
        let _ = write!(body, "<p>Trace file: <code>{}</code></p>", esc(t));
    }
}

/// `--figures DIR`: every figure as `<id>.svg` and `<id>.png` (2× scale, white background).
pub fn write_figures(figs: &[Figure], dir: &Path) -> Result<Vec<PathBuf>, FigureError> {
    let io = |p: &Path| {
        let path = p.display().to_string();
        move |source| FigureError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut opt = resvg::usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let mut out = Vec::new();
    for f in figs {
        let svg_path = dir.join(format!("{}.svg", f.id));
        rtscope_files::write_atomic(&svg_path, f.svg.as_bytes(), rtscope_files::SHARED_FILE)
            .map_err(io(&svg_path))?;
        out.push(svg_path);
        let png_path = dir.join(format!("{}.png", f.id));
        let png = render_png(&f.svg, &opt).map_err(|e| FigureError::Render(f.id.clone(), e))?;
        rtscope_files::write_atomic(&png_path, &png, rtscope_files::SHARED_FILE)
            .map_err(io(&png_path))?;
        out.push(png_path);
    }
    Ok(out)
}

pub fn render_png(svg: &str, opt: &resvg::usvg::Options) -> Result<Vec<u8>, String> {
    let tree = resvg::usvg::Tree::from_str(svg, opt).map_err(|e| e.to_string())?;
    let size = tree.size().to_int_size();
    let scale = 2.0;
    let mut pixmap = resvg::tiny_skia::Pixmap::new(
        (size.width() as f32 * scale) as u32,
        (size.height() as f32 * scale) as u32,
    )
    .ok_or("empty figure")?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| e.to_string())
}
