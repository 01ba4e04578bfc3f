//! The tail model's verdict in words (the summary's `tail model` lines): per CPU and for the
//! run, the latencies at 1e-6, 1e-9 and 1e-12 per sample and per hour with their 95 %
//! intervals, how often a sample as large as the observed maximum is expected, how much longer
//! the run needs, the bound on the same scale; unreliable fits shown and labelled.

use crate::figures::Figure;
use crate::svg::{Plot, Scale, PALETTE};
use rtscope_model::tail::{Interval, TailFit, TailPer, TailReport, TAIL_PROBABILITIES};
use rtscope_model::Measurement;
use std::fmt::Write;

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

fn interval(iv: &Interval) -> String {
    format!(
        "[{}, {}]",
        iv.low.map_or("-".into(), us),
        iv.high.map_or("open".into(), us)
    )
}

/// A period in the unit a test engineer would say it in ("3.2 h", "41 days", "2e6 years").
pub fn period_words(s: f64) -> String {
    const YEAR: f64 = 365.25 * 86_400.0;
    if !s.is_finite() {
        "never".into()
    } else if s < 120.0 {
        format!("{s:.1} s")
    } else if s < 7_200.0 {
        format!("{:.1} min", s / 60.0)
    } else if s < 3.0 * 86_400.0 {
        format!("{:.1} h", s / 3_600.0)
    } else if s < YEAR {
        format!("{:.0} days", s / 86_400.0)
    } else if s < 1e4 * YEAR {
        format!("{:.0} years", s / YEAR)
    } else {
        format!("{:.0e} years", s / YEAR)
    }
}

fn who(f: &TailFit) -> String {
    f.cpu.map_or("run".into(), |c| format!("CPU {c}"))
}

fn fit_lines(s: &mut String, f: &TailFit) {
    let w = who(f);
    if f.gev.is_none() {
        let _ = match f.needed_blocks {
            Some(n) => writeln!(
                s,
                "tail {w}: {} block maxima (one per {:.3} s), a fit needs {n}: no estimate",
                f.blocks, f.block_s
            ),
            None => writeln!(s, "tail {w}: no fit (the block maxima are all equal)"),
        };
        return;
    }
    let label = if f.reliable { "" } else { " UNRELIABLE" };
    for per in [TailPer::Sample, TailPer::Hour] {
        let parts: Vec<String> = TAIL_PROBABILITIES
            .iter()
            .filter_map(|&p| f.level(p, per))
            .map(|l| {
                format!(
                    "{:.0e} {} {}",
                    l.exceedance_probability,
                    us(l.latency_ns),
                    interval(&l.ci95_ns)
                )
            })
            .collect();
        let per_word = match per {
            TailPer::Sample => "per sample",
            TailPer::Hour => "per hour",
        };
        let _ = writeln!(
            s,
            "tail {w}{label} {per_word} (µs, 95 %): {}",
            parts.join(" | ")
        );
    }
    let mut facts = vec![format!(
        "{} maxima of {} samples ({:.1} s)",
        f.blocks, f.block_samples, f.block_s
    )];
    facts.push(match f.observed_max_return_period_s {
        Some(p) => format!(
            "a sample as large as the max {} µs is expected about once every {}",
            us(f.observed_max_ns as f64),
            period_words(p)
        ),
        None => format!(
            "the max {} µs lies beyond the fitted tail's end",
            us(f.observed_max_ns as f64)
        ),
    });
    facts.push(match f.more_run_s_for_10pct {
        Some(0.0) => "the 1e-9 interval is within ±10 %".into(),
        Some(more) => format!("±10 % at 1e-9 needs about {} more", period_words(more)),
        None => "the 1e-9 interval is open: no estimate of the run time needed".into(),
    });
    if let Some(b) = &f.bound {
        facts.push(format!(
            "bound {} µs: {:.1e} per sample, about once every {}",
            us(b.bound_ns as f64),
            b.exceedance_per_sample,
            b.return_period_s.map_or("never".into(), period_words)
        ));
    }
    let _ = writeln!(s, "tail {w}: {}", facts.join("; "));
    for c in f.checks.iter().filter(|c| !c.passed) {
        let _ = writeln!(
            s,
            "tail {w} UNRELIABLE: {} ({} {:.3}{})",
            rtscope_analysis::tail::check_words(c.code),
            c.code.as_str(),
            c.statistic,
            c.p_value
                .map_or(String::new(), |p| format!(", p = {p:.2e}"))
        );
    }
}

/// The summary's tail model section.
pub fn summary_lines(s: &mut String, t: &TailReport) {
    let _ = writeln!(
        s,
        "tail model (GEV on block maxima; an estimate, not a bound; docs/tail.md):"
    );
    for f in t.cpus.iter().chain(t.run.as_ref()) {
        fit_lines(s, f);
    }
}

/// The per-sample level of a fit at exceedance probability `p` (ns), from its GEV.
fn level_ns(f: &TailFit, p: f64) -> Option<f64> {
    let g = f.gev.as_ref()?;
    let y = f.block_samples as f64 * -(-p).ln_1p();
    let z = if g.shape.abs() < 1e-7 {
        -y.ln()
    } else {
        ((-g.shape * y.ln()).exp() - 1.0) / g.shape
    };
    Some(g.location_ns + g.scale_ns * z)
}

/// The fits to draw: each CPU's, then the run's.
fn drawn(t: &TailReport) -> Vec<&TailFit> {
    t.cpus
        .iter()
        .chain(t.run.as_ref())
        .filter(|f| f.gev.is_some())
        .collect()
}

/// The measured CCDF per CPU with its fitted tail continued down to 1e-12 per sample and the
/// 95 % band through the intervals at 1e-6, 1e-9 and 1e-12 (open ends drawn to the plot's edge).
pub fn ccdf_figure(id: &str, m: &Measurement) -> Option<Figure> {
    let t = m.tail.as_ref()?;
    let fits = drawn(t);
    if fits.is_empty() {
        return None;
    }
    let title = "Tail model: CCDF per sample with the fitted GEV tail and its 95 % band";
    let lo_ns = m
        .threads
        .iter()
        .filter_map(|t| t.histogram.min_ns())
        .min()?
        .max(1) as f64;
    let hi_ns = fits
        .iter()
        .flat_map(|f| f.levels.iter())
        .filter(|l| l.per == TailPer::Sample)
        .flat_map(|l| [Some(l.latency_ns), l.ci95_ns.high])
        .flatten()
        .chain(fits.iter().map(|f| f.observed_max_ns as f64))
        .fold(2.0, f64::max);
    let (x_lo, x_hi) = (lo_ns / 1000.0 * 0.8, hi_ns / 1000.0 * 1.25);
    let mut p = Plot::new(
        640.0,
        360.0,
        Scale::Log { lo: x_lo, hi: x_hi },
        Scale::Log { lo: 1e-13, hi: 1.0 },
    );
    let mut legend = Vec::new();
    for (i, f) in fits.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let Some(th) = f
            .cpu
            .and_then(|c| m.threads.iter().find(|t| t.cpu == c))
            .map(|t| &t.histogram)
        else {
            // The run's fit: its model line only.
            let pts: Vec<(f64, f64)> = (0..=120)
                .map(|k| 10f64.powf(-(k as f64) / 10.0))
                .filter_map(|q| level_ns(f, q).map(|v| (v / 1000.0, q)))
                .filter(|(x, _)| *x > 0.0)
                .collect();
            p.raw(&format!(
                r#"<path d="{}" fill="none" stroke="{colour}" stroke-width="1.4" stroke-dasharray="5 3"/>"#,
                p.path(&pts)
            ));
            legend.push((format!("{} fitted (any CPU)", who(f)), colour));
            continue;
        };
        let n = th.count().max(1) as f64;
        let mut below = 0u64;
        let mut pts = Vec::new();
        for (v, c) in th.buckets() {
            let y = (n - below as f64) / n;
            pts.push((v as f64 / 1000.0, y));
            below += c;
        }
        p.raw(&format!(
            r#"<path d="{}" fill="none" stroke="{colour}" stroke-width="1.6"/>"#,
            p.path(&pts)
        ));
        // The fitted tail from where the blocks speak (one sample in a block) downwards.
        let start = 1.0 / f.block_samples.max(1) as f64;
        let fit_pts: Vec<(f64, f64)> = (0..=120)
            .map(|k| start * 10f64.powf(-(k as f64) / 10.0))
            .filter(|q| *q >= 1e-13)
            .filter_map(|q| level_ns(f, q).map(|v| (v / 1000.0, q)))
            .filter(|(x, _)| *x > 0.0)
            .collect();
        p.raw(&format!(
            r#"<path d="{}" fill="none" stroke="{colour}" stroke-width="1.4" stroke-dasharray="5 3"/>"#,
            p.path(&fit_pts)
        ));
        let lv: Vec<_> = TAIL_PROBABILITIES
            .iter()
            .filter_map(|&q| f.level(q, TailPer::Sample))
            .collect();
        if !lv.is_empty() {
            let mut band: Vec<(f64, f64)> = lv
                .iter()
                .map(|l| {
                    (
                        l.ci95_ns.low.unwrap_or(lo_ns) / 1000.0,
                        l.exceedance_probability,
                    )
                })
                .collect();
            band.extend(lv.iter().rev().map(|l| {
                (
                    l.ci95_ns.high.map_or(x_hi, |h| h / 1000.0),
                    l.exceedance_probability,
                )
            }));
            p.raw(&format!(
                r#"<path d="{}Z" fill="{colour}" fill-opacity="0.15" stroke="none"/>"#,
                p.path(&band)
            ));
        }
        let label = if f.reliable {
            who(f)
        } else {
            format!("{} (UNRELIABLE)", who(f))
        };
        legend.push((label, colour));
    }
    p.axes(
        title,
        "latency (µs, log)",
        "P(latency ≥ x) per sample (log)",
    );
    p.legend(&legend);
    Some(Figure {
        id: id.to_string(),
        title: title.to_string(),
        svg: p.finish(id, title),
        caption: "Solid: the measured exceedance per sample. Dashed: the fitted GEV tail of the block maxima, continued to 1e-12. Shaded: the 95 % profile-likelihood band through the intervals at 1e-6, 1e-9 and 1e-12. An estimate, not a bound (docs/tail.md).".into(),
    })
}

/// Return levels: the latency expected to be exceeded once per return period, from one block
/// to 10⁶ years, with the observed maximum at its return period and the bound where measured.
pub fn return_level_figure(id: &str, m: &Measurement) -> Option<Figure> {
    let t = m.tail.as_ref()?;
    let fits = drawn(t);
    if fits.is_empty() {
        return None;
    }
    let title = "Tail model: return levels";
    const YEAR_H: f64 = 365.25 * 24.0;
    let h_lo = fits
        .iter()
        .map(|f| f.block_s / 3600.0)
        .fold(f64::INFINITY, f64::min);
    let h_hi = 1e6 * YEAR_H;
    let curve = |f: &TailFit| -> Vec<(f64, f64)> {
        (0..=100)
            .map(|k| h_lo * (h_hi / h_lo).powf(k as f64 / 100.0))
            .filter(|h| *h * 3600.0 > f.block_s)
            .filter_map(|h| {
                // Exceeded once per h hours: per block 1/(h·3600/block_s); per sample /m.
                let q_block = f.block_s / (h * 3600.0);
                let p_sample = -(-q_block).ln_1p() / f.block_samples.max(1) as f64;
                level_ns(f, p_sample).map(|v| (h, v / 1000.0))
            })
            .collect()
    };
    let curves: Vec<Vec<(f64, f64)>> = fits.iter().map(|f| curve(f)).collect();
    let y_hi = curves
        .iter()
        .flatten()
        .map(|p| p.1)
        .chain(
            fits.iter()
                .filter_map(|f| f.bound.as_ref().map(|b| b.bound_ns as f64 / 1000.0)),
        )
        .chain(fits.iter().map(|f| f.observed_max_ns as f64 / 1000.0))
        .fold(1.0, f64::max)
        * 1.1;
    let mut p = Plot::new(
        640.0,
        340.0,
        Scale::Log { lo: h_lo, hi: h_hi },
        Scale::Linear { lo: 0.0, hi: y_hi },
    );
    let mut legend = Vec::new();
    for (i, (f, c)) in fits.iter().zip(&curves).enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        p.raw(&format!(
            r#"<path d="{}" fill="none" stroke="{colour}" stroke-width="1.6"/>"#,
            p.path(c)
        ));
        // The intervals at their return periods (per hour: once per h/p hours).
        for l in f.levels.iter().filter(|l| l.per == TailPer::Hour) {
            let h = 1.0 / l.exceedance_probability;
            let (lo, hi) = (
                l.ci95_ns.low.map_or(0.0, |v| v / 1000.0),
                l.ci95_ns.high.map_or(y_hi, |v| v / 1000.0),
            );
            p.raw(&format!(
                r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{colour}" stroke-width="2" stroke-opacity="0.5"/>"#,
                p.py(lo),
                p.py(hi),
                x = p.px(h)
            ));
        }
        if let Some(rp) = f.observed_max_return_period_s {
            p.raw(&format!(
                r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="none" stroke="{colour}" stroke-width="1.5"/>"#,
                p.px(rp / 3600.0),
                p.py(f.observed_max_ns as f64 / 1000.0)
            ));
        }
        if let Some(b) = &f.bound {
            let y = p.py(b.bound_ns as f64 / 1000.0);
            p.raw(&format!(
                r#"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{colour}" stroke-width="1" stroke-dasharray="2 3"/>"#,
                p.px(h_lo),
                p.px(h_hi)
            ));
        }
        let label = if f.reliable {
            who(f)
        } else {
            format!("{} (UNRELIABLE)", who(f))
        };
        legend.push((label, colour));
    }
    p.axes(title, "return period (hours, log)", "latency (µs)");
    p.legend(&legend);
    Some(Figure {
        id: id.to_string(),
        title: title.to_string(),
        svg: p.finish(id, title),
        caption: "The latency exceeded on average once per return period. Bars: 95 % intervals at 1e-6, 1e-9 and 1e-12 per hour (at 10⁶, 10⁹, 10¹² h). Circle: the observed maximum at its return period. Dotted: the measured bound. An estimate, not a bound (docs/tail.md).".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_in_words() {
        assert_eq!(period_words(11_520.0), "3.2 h");
        assert_eq!(period_words(30.0), "30.0 s");
        assert_eq!(period_words(86_400.0 * 41.0), "41 days");
        assert_eq!(period_words(f64::INFINITY), "never");
    }
}
