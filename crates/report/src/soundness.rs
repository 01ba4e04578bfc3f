//! The soundness experiment's report (calibrate, then validate; `rtscope_analysis::soundness`):
//! a table per cell and CPU, the same as Markdown for docs/bound.md, and the paper's Fig. 26
//! (bars per interrupt characterization beside the observed maximum, per kernel and load).

use crate::figures::Figure;
use crate::svg::{esc, Plot, Scale, PALETTE};
use rtscope_analysis::soundness::{BoundCheck, CellResult, Spread, CHARACTERIZATIONS};
use std::fmt::Write;

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

fn ous(ns: Option<u64>) -> String {
    ns.map_or("-".into(), |v| us(v as f64))
}

fn secs(s: f64) -> String {
    if s >= 60.0 && (s % 60.0).abs() < 1e-9 {
        format!("{} min", s / 60.0)
    } else {
        format!("{} s", crate::svg::fmt_num(s))
    }
}

/// `kernel preempt, load, N vCPU, CPU c`.
pub fn cell_label(r: &CellResult) -> String {
    let k = &r.key;
    let kernel = if k.preempt == "rt" || k.preempt == "host" || k.preempt == "default" {
        k.kernel.clone()
    } else {
        format!("{} {}", k.kernel, k.preempt)
    };
    format!("{kernel}, {}, {} vCPU, CPU {}", k.load, k.smp, r.cpu)
}

/// `min / median / max` of the converged bounds in µs, with the boots that did not converge or
/// did not reach the prefix.
fn bounds_cell(c: &BoundCheck) -> String {
    let Spread { min, median, max } = c.spread_ns;
    let mut s = match (min, median, max) {
        (Some(a), Some(m), Some(b)) => format!("{} / {} / {}", us(a), us(m), us(b)),
        _ => "n.c.".into(),
    };
    if c.not_converged > 0 && min.is_some() {
        let _ = write!(s, " ({} n.c.)", c.not_converged);
    }
    if c.too_short > 0 {
        let _ = write!(s, " ({} shorter)", c.too_short);
    }
    s
}

fn above_cell(c: &BoundCheck) -> String {
    if c.spread_ns.min.is_none() {
        return "-".into();
    }
    let n = if c.samples_above.exact {
        c.samples_above.n.to_string()
    } else {
        format!("≤ {}", c.samples_above.n)
    };
    if c.boots_exceeded > 0 {
        format!("{n} ({}/{} boots)", c.boots_exceeded, c.bounds_ns.len())
    } else {
        n
    }
}

fn time_cell(s: &Spread, never: usize) -> String {
    let mut t = match (s.median, s.max) {
        (Some(m), Some(x)) => format!("{} / {}", secs_round(m), secs_round(x)),
        _ => "-".into(),
    };
    if never > 0 {
        let _ = write!(t, " ({never} never)");
    }
    t
}

fn secs_round(s: f64) -> String {
    format!("{s:.1} s")
}

/// The table's columns: the cell, the emulated time per role, the largest latency of each role,
/// the sliding-window bound per prefix T_c and the validation samples above it, the same for the
/// six characterizations at the calibration runs' end, the time to bound.
fn rows(results: &[CellResult]) -> (Vec<String>, Vec<Vec<String>>) {
    let Some(first) = results.first() else {
        return (Vec::new(), Vec::new());
    };
    let mut head = vec![
        "cell".to_string(),
        "boots cal. / val.".into(),
        "emulated cal. / val.".into(),
        "max latency cal. / val. (µs)".into(),
    ];
    for p in &first.prefixes {
        let t = secs(p.prefix_s.unwrap_or(0.0));
        head.push(format!("SW bound at {t} (µs, min / med / max)"));
        head.push(format!("val. samples above (at {t})"));
    }
    for c in CHARACTERIZATIONS {
        head.push(format!("{c} at the end (µs)"));
        head.push(format!("above {c}"));
    }
    head.push("time to cover val. max (median / max)".into());
    head.push("time to final bound (median / max)".into());
    let body = results
        .iter()
        .map(|r| {
            let mut row = vec![
                cell_label(r),
                format!("{} / {}", r.calibration_runs.len(), r.validation_runs.len()),
                format!("{} / {}", secs(r.calibration_s), secs(r.validation_s)),
                format!(
                    "{} / {}",
                    ous(r.calibration_observed_max_ns),
                    ous(r.validation_max_ns)
                ),
            ];
            // Rows of one report share the prefixes (one analysis call).
            for p in &r.prefixes {
                row.push(bounds_cell(p));
                row.push(above_cell(p));
            }
            for f in &r.finals {
                row.push(bounds_cell(f));
                row.push(above_cell(f));
            }
            row.push(time_cell(&r.time_to_cover_s, r.never_covered));
            row.push(time_cell(&r.time_to_settle_s, 0));
            row
        })
        .collect();
    (head, body)
}

/// Everything a reader must not miss: violations (each a finding), bounds not labelled sound,
/// cells short of the design.
pub fn findings(results: &[CellResult]) -> Vec<String> {
    let mut out = Vec::new();
    for r in results {
        let label = cell_label(r);
        for c in r.prefixes.iter().chain(&r.finals) {
            if c.samples_above.n == 0 {
                continue;
            }
            let at = c
                .prefix_s
                .map_or("at the calibration runs' end".to_string(), |t| {
                    format!("at T_c = {}", secs(t))
                });
            let by: Vec<String> = c
                .exceeded_by
                .iter()
                .map(|(run, max)| format!("{run} (max {} µs)", us(*max as f64)))
                .collect();
            out.push(format!(
                "VIOLATION {label}: {}{} validation samples above the lowest converged {} bound {} ({} µs), in {}",
                if c.samples_above.exact { "" } else { "up to " },
                c.samples_above.n,
                c.characterization,
                at,
                ous(c.spread_ns.min.map(|v| v as u64)),
                by.join(", ")
            ));
        }
        for n in &r.not_sound {
            out.push(format!("NOT SOUND {label}: {n}"));
        }
        for n in &r.notes {
            out.push(format!("{label}: {n}"));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The table as Markdown (docs/bound.md).
pub fn markdown(results: &[CellResult]) -> String {
    let (head, body) = rows(results);
    if head.is_empty() {
        return String::new();
    }
    let mut s = format!("| {} |\n|", head.join(" | "));
    s.push_str(&"---|".repeat(head.len()));
    s.push('\n');
    for r in body {
        let _ = writeln!(s, "| {} |", r.join(" | "));
    }
    s
}

/// The HTML section: what the experiment is, the findings, the table, Markdown to copy.
pub fn html_section(results: &[CellResult], fig: Option<&Figure>) -> String {
    let mut b = String::from("<h2 id=\"soundness\">Soundness: calibrate, then validate</h2>");
    b.push_str(
        "<p>Calibration boots compute the bound (ECRTS'20 Theorem 8) at each prefix T_c of \
         their run (the sliding-window characterization, from the time-to-bound series) and \
         with all six characterizations at their end; validation boots — new boots of the same \
         kernel, never used to compute it — only contribute latencies. A validation sample \
         above a converged bound is a violation (the target is 0). Bounds: min / median / max \
         over the calibration boots; samples above: above the lowest of them, with the boots \
         whose bound was exceeded; ≤ n: counted at the histogram's resolution. Time to bound: \
         per calibration boot, when its sliding-window bound first reached the largest \
         validation latency, and when it reached its own final value, in seconds since its \
         first event.</p>",
    );
    let f = findings(results);
    if f.is_empty() {
        b.push_str("<p class=\"better\">No validation sample above any converged bound.</p>");
    } else {
        b.push_str("<ul>");
        for x in &f {
            let class = if x.starts_with("VIOLATION") || x.starts_with("NOT SOUND") {
                "worse"
            } else {
                "warn"
            };
            let _ = write!(b, "<li class=\"{class}\">{}</li>", esc(x));
        }
        b.push_str("</ul>");
    }
    if let Some(fig) = fig {
        let _ = write!(
            b,
            "<figure>{}<figcaption><b>{}</b> — {}</figcaption></figure>",
            fig.svg,
            esc(&fig.title),
            esc(&fig.caption)
        );
    }
    let (head, body) = rows(results);
    b.push_str("<table><tr>");
    for h in &head {
        let _ = write!(b, "<th>{}</th>", esc(h));
    }
    b.push_str("</tr>");
    for r in &body {
        b.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let class = if i == 0 { "" } else { " class=n" };
            let _ = write!(b, "<td{class}>{}</td>", esc(c));
        }
        b.push_str("</tr>");
    }
    b.push_str("</table>");
    let _ = write!(
        b,
        "<details><summary>The table as Markdown</summary><pre>{}</pre></details>",
        esc(&markdown(results))
    );
    b
}

/// Fig. 26 of the paper, per cell: a bar per characterization at the calibration runs' end (the
/// lowest converged bound over the calibration boots, a whisker to the highest; ∞ when none
/// converged) and the largest validation latency as a dashed line across the group.
pub fn fig26(id: &str, results: &[CellResult]) -> Option<Figure> {
    if results.is_empty() {
        return None;
    }
    let mut vals: Vec<f64> = Vec::new();
    for r in results {
        for f in &r.finals {
            vals.extend(f.spread_ns.min);
            vals.extend(f.spread_ns.max);
        }
        vals.extend(r.validation_max_ns.map(|v| v as f64));
    }
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min).max(1.0) / 1000.0;
    let hi = vals.iter().copied().fold(0.0, f64::max).max(2.0) / 1000.0;
    let n = results.len() as f64;
    let width = (160.0 * n + 120.0).clamp(680.0, 2400.0);
    let mut p = Plot::new(
        width,
        380.0,
        Scale::Linear { lo: 0.0, hi: n },
        Scale::Log {
            lo: lo * 0.5,
            hi: hi * 3.0,
        },
    );
    p.bottom = 84.0;
    let group_w = p.px(1.0) - p.px(0.0);
    let bar_w = group_w * 0.8 / CHARACTERIZATIONS.len() as f64;
    let base = p.py(lo * 0.5);
    for (gi, r) in results.iter().enumerate() {
        let gx = p.px(gi as f64) + group_w * 0.1;
        for (bi, f) in r.finals.iter().enumerate() {
            let x = gx + bi as f64 * bar_w;
            let colour = PALETTE[bi % PALETTE.len()];
            match (f.spread_ns.min, f.spread_ns.max) {
                (Some(a), Some(b)) => {
                    let y = p.py(a / 1000.0);
                    let yb = p.py(b / 1000.0);
                    let cx = x + bar_w * 0.45;
                    p.raw(&format!(
                        r##"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{colour}"><title>{}</title></rect><path d="M{cx:.1} {y:.1}V{yb:.1}M{:.1} {yb:.1}h{:.1}" stroke="#000" stroke-width="1"/>"##,
                        bar_w * 0.9,
                        (base - y).max(0.5),
                        esc(&format!(
                            "{}: {} µs (lowest of {} calibration boots), {} µs (highest)",
                            f.characterization,
                            us(a),
                            f.bounds_ns.len(),
                            us(b)
                        )),
                        cx - bar_w * 0.2,
                        bar_w * 0.4
                    ));
                }
                _ => p.text(x + bar_w * 0.45, p.top + 10.0, "middle", 9.0, "∞"),
            }
        }
        if let Some(o) = r.validation_max_ns {
            let y = p.py(o as f64 / 1000.0);
            p.raw(&format!(
                r##"<path d="M{:.1} {y:.1}h{:.1}" stroke="#000" stroke-width="2" stroke-dasharray="5 3"><title>{}</title></path>"##,
                gx - 4.0,
                group_w * 0.8 + 8.0,
                esc(&format!("largest validation latency {} µs", ous(Some(o))))
            ));
        }
        let k = &r.key;
        let lines = [
            if k.preempt == "rt" || k.preempt == "host" {
                k.kernel.clone()
            } else {
                format!("{} {}", k.kernel, k.preempt)
            },
            k.load.clone(),
            format!("{} vCPU, CPU {}", k.smp, r.cpu),
        ];
        for (li, l) in lines.iter().enumerate() {
            p.text(
                p.px(gi as f64 + 0.5),
                p.h - p.bottom + 15.0 + 12.0 * li as f64,
                "middle",
                10.0,
                l,
            );
        }
    }
    p.x = Scale::Linear { lo: 0.0, hi: 0.0 };
    let title = "Calibrated bounds vs validation maximum (Fig. 26 style)";
    p.axes(title, "", "latency (µs, log)");
    let mut legend: Vec<(String, &str)> = CHARACTERIZATIONS
        .iter()
        .enumerate()
        .map(|(i, n)| (n.to_string(), PALETTE[i % PALETTE.len()]))
        .collect();
    legend.push(("validation max (dashed)".into(), "#000"));
    p.legend(&legend);
    Some(Figure {
        id: id.to_string(),
        title: title.to_string(),
        svg: p.finish(id, title),
        caption: "Bars: the bound under each interrupt characterization at the end of the \
                  calibration runs, the lowest over the calibration boots (whisker: the highest; \
                  ∞: none converged); dashed line: the largest latency of the validation boots, \
                  which computed no bound. A dashed line above a bar is a violation."
            .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_analysis::soundness::{
        evaluate, Calibration, CalibrationCpu, CellKey, Latencies, Validation,
    };
    use rtscope_model::Histogram;

    fn result() -> Vec<CellResult> {
        let mut h = Histogram::new();
        h.record_n(20_000, 999);
        h.record(45_000);
        let cal = |id: &str, b: u64| Calibration {
            run_id: id.into(),
            duration_s: 60.0,
            not_sound_because: Vec::new(),
            cpus: vec![CalibrationCpu {
                cpu: 0,
                final_ns: [
                    Some(30_000),
                    Some(b),
                    Some(b),
                    None,
                    Some(b + 10_000),
                    Some(b + 20_000),
                ],
                series: vec![(10.0, Some(b)), (60.0, Some(b + 10_000))],
                observed_max_ns: Some(25_000),
            }],
        };
        let val = Validation {
            run_id: "V1".into(),
            duration_s: 60.0,
            cpus: [(
                0,
                vec![Latencies {
                    histogram: h,
                    worst_ns: vec![45_000, 20_000],
                }],
            )]
            .into_iter()
            .collect(),
        };
        let key = CellKey {
            kernel: "trace".into(),
            preempt: "full".into(),
            load: "io".into(),
            smp: "1".into(),
        };
        evaluate(&key, &[cal("A", 50_000), cal("B", 60_000)], &[val], &[60.0])
    }

    #[test]
    fn the_table_names_each_violation() {
        let r = result();
        let md = markdown(&r);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines.len(), 3, "{md}");
        assert!(lines[0].starts_with("| cell | boots cal. / val. |"), "{md}");
        // SW at 60 s: 60 / 65 / 70; no_interrupts 30 µs exceeded by the one 45 µs sample, in
        // both boots.
        assert!(
            lines[2].starts_with("| trace full, io, 1 vCPU, CPU 0 | 2 / 1 | 2 min / 1 min | 25.0 / 45.0 | 60.0 / 65.0 / 70.0 | 0 | 30.0 / 30.0 / 30.0 | 1 (2/2 boots) |"),
            "{md}"
        );
        let f = findings(&r);
        assert!(f.iter().any(|x| x.starts_with(
            "VIOLATION trace full, io, 1 vCPU, CPU 0: 1 validation samples above the lowest converged no_interrupts bound at the calibration runs' end (30.0 µs), in V1 (max 45.0 µs)"
        )), "{f:?}");
        assert!(f
            .iter()
            .any(|x| x.contains("1 validation boots (the design asks for 3)")));
        let html = html_section(&r, fig26("soundness", &r).as_ref());
        assert!(html.contains("<svg") && html.contains("class=\"worse\""));
    }

    #[test]
    fn the_chart_has_a_bar_per_converged_characterization() {
        let r = result();
        let f = fig26("soundness", &r).unwrap();
        // Five converged characterizations (sporadic did not: ∞), one dashed validation line.
        assert_eq!(
            f.svg.matches("(lowest of 2 calibration boots)").count(),
            5,
            "{}",
            f.svg
        );
        assert_eq!(f.svg.matches('∞').count(), 1);
        assert!(f.svg.contains("largest validation latency 45.0 µs"));
        assert!(fig26("x", &[]).is_none());
    }
}
