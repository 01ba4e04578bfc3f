//! The report's figures, each a self-contained SVG string: the paper-style latency histogram
//! (seed cerqueira-brandenburg-2013 Figs. 3–7), the CCDF overlay, the slides' "average (99 %
//! conf.) / maximum" charts, attribution bars and bound-vs-observed.

use crate::svg::{esc, fmt_num, Plot, Scale, PALETTE};
use rtscope_model::{Histogram, Measurement, RunRecord};
use std::fmt::Write;

#[derive(Clone, Debug)]
pub struct Figure {
    /// File stem for `--figures DIR` and the element id.
    pub id: String,
    pub title: String,
    pub svg: String,
    pub caption: String,
}

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

/// Counts per whole microsecond: the run's exact cyclictest-style counters when they hold every
/// sample, else derived from the log buckets (≤ 0.1 % wide). Returns (counts, derived?).
pub fn per_us_counts(rec: &Measurement) -> (Vec<u64>, bool) {
    let mut lin: Option<rtscope_model::histogram::LinearHistogram> = None;
    for t in &rec.threads {
        match lin.as_mut() {
            Some(l) => l.merge(&t.linear),
            None => lin = Some(t.linear.clone()),
        }
    }
    if let Some(l) = lin {
        if l.overflow() == 0 && l.total() == rec.histogram.count() && l.total() > 0 {
            let mut c = l.counts().to_vec();
            while c.len() > 1 && c.last() == Some(&0) {
                c.pop();
            }
            return (c, false);
        }
    }
    let mut c: Vec<u64> = Vec::new();
    for (v, n) in rec.histogram.buckets() {
        let i = (v / 1000) as usize;
        if i >= c.len() {
            c.resize(i + 1, 0);
        }
        c[i] += n;
    }
    (c, true)
}

pub fn caption_stats(h: &Histogram) -> String {
    let s = rtscope_model::Stats::from_histogram(h);
    let f = |v: Option<f64>| v.map_or("-".to_string(), us);
    format!(
        "min={} max={} avg={} median={} stdev={} samples={} (µs)",
        f(s.min_ns.map(|v| v as f64)),
        f(s.max_ns.map(|v| v as f64)),
        f(s.avg_ns),
        f(s.median_ns.map(|v| v as f64)),
        f(s.stddev_ns),
        s.samples
    )
}

/// x = latency in 1 µs buckets, y = sample count, log scale.
pub fn histogram(id: &str, title: &str, rec: &Measurement) -> Figure {
    let (counts, derived) = per_us_counts(rec);
    let max_c = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let x_hi = counts.len().max(2) as f64;
    let mut p = Plot::new(
        640.0,
        300.0,
        Scale::Linear { lo: 0.0, hi: x_hi },
        Scale::Log {
            lo: 0.5,
            hi: max_c * 2.0,
        },
    );
    let bw = ((p.px(1.0) - p.px(0.0)) * 0.9).max(1.0);
    let base = p.py(0.5);
    let mut path = String::new();
    for (i, &c) in counts.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let x = p.px(i as f64);
        let y = p.py(c as f64);
        let _ = write!(path, "M{x:.2} {base:.2}V{y:.2}h{bw:.2}V{base:.2}z");
    }
    p.raw(&format!(
        r##"<path d="{path}" fill="#1f4e9c" stroke="none"/>"##
    ));
    p.axes(title, "latency (µs, 1 µs buckets)", "samples (log)");
    let mut caption = caption_stats(&rec.histogram);
    // The paper's caption line, inside the figure so an exported PNG carries it.
    let (tx, ty) = (p.w - p.right - 6.0, p.top + 14.0);
    p.text(tx, ty, "end", 10.0, &caption);
    if derived {
        caption.push_str(" — per-µs counts derived from the log histogram (buckets ≤ 0.1 % wide)");
    }
    Figure {
        id: id.to_string(),
        title: title.to_string(),
        svg: p.finish(id, title),
        caption,
    }
}

/// Exceedance probability P(latency ≥ x), log–log, one line per series.
pub fn ccdf(id: &str, series: &[(String, &Histogram)]) -> Figure {
    let title = "Latency CCDF (exceedance probability)";
    let nonempty: Vec<&(String, &Histogram)> = series.iter().filter(|s| s.1.count() > 0).collect();
    let min_ns = nonempty
        .iter()
        .filter_map(|s| s.1.min_ns())
        .min()
        .unwrap_or(1)
        .max(1) as f64;
    let max_ns = nonempty
        .iter()
        .filter_map(|s| s.1.max_ns())
        .max()
        .unwrap_or(10)
        .max(2) as f64;
    let max_n = nonempty
        .iter()
        .map(|s| s.1.count())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let mut p = Plot::new(
        640.0,
        340.0,
        Scale::Log {
            lo: min_ns / 1000.0 * 0.8,
            hi: max_ns / 1000.0 * 1.25,
        },
        Scale::Log {
            lo: 0.5 / max_n,
            hi: 1.0,
        },
    );
    let mut legend = Vec::new();
    for (i, (label, h)) in nonempty.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let n = h.count() as f64;
        let buckets = h.buckets();
        let mut pts: Vec<(f64, f64)> = Vec::with_capacity(buckets.len() * 2);
        let mut below = 0u64;
        let top = buckets.len().saturating_sub(1);
        for (j, (v, c)) in buckets.iter().enumerate() {
            // The top bucket's exact value is the run's max.
            let x = if j == top {
                h.max_ns().unwrap_or(*v)
            } else {
                *v
            } as f64
                / 1000.0;
            let y = (n - below as f64) / n;
            if let Some(&(_, py)) = pts.last() {
                pts.push((x, py));
            }
            pts.push((x, y));
            below += c;
        }
        let d = p.path(&pts);
        p.raw(&format!(
            r#"<path d="{d}" fill="none" stroke="{colour}" stroke-width="1.6"/>"#
        ));
        legend.push((label.clone(), colour));
    }
    p.axes(title, "latency (µs, log)", "P(latency ≥ x) (log)");
    p.legend(&legend);
    Figure {
        id: id.to_string(),
        title: title.to_string(),
        svg: p.finish(id, title),
        caption: "Each curve falls by one step per bucket; its last point is the run's maximum, at probability 1/samples. Curves further right at low probability have heavier tails.".into(),
    }
}

/// One cell of the comparison matrix (runs of the same row × column pooled).
#[derive(Clone, Debug)]
pub struct MatrixCell {
    pub row: String,
    pub col: String,
    pub avg_ns: f64,
    pub ci99_ns: (f64, f64),
    pub max_ns: f64,
    pub runs: usize,
}

/// Grouped bars per column (scenario), one bar per row (kernel/policy); `max = false` draws the
/// average with its 99 % interval, `max = true` the maximum.
pub fn matrix_chart(
    id: &str,
    cells: &[MatrixCell],
    rows: &[String],
    cols: &[String],
    max: bool,
) -> Figure {
    let title = if max {
        "Maximum latency"
    } else {
        "Average latency (99 % confidence)"
    };
    let hi = cells
        .iter()
        .map(|c| {
            if max {
                c.max_ns
            } else {
                c.ci99_ns.1.max(c.avg_ns)
            }
        })
        .fold(0.0f64, f64::max)
        / 1000.0;
    let width =
        (160.0 + cols.len() as f64 * (rows.len() as f64 * 26.0 + 30.0)).clamp(420.0, 1000.0);
    let mut p = Plot::new(
        width,
        320.0,
        Scale::Linear {
            lo: 0.0,
            hi: cols.len().max(1) as f64,
        },
        Scale::Linear {
            lo: 0.0,
            hi: (hi * 1.15).max(0.001),
        },
    );
    let group_w = p.px(1.0) - p.px(0.0);
    let bar_w = (group_w * 0.8 / rows.len().max(1) as f64).min(40.0);
    for (ci, col) in cols.iter().enumerate() {
        let gx = p.px(ci as f64) + (group_w - bar_w * rows.len() as f64) / 2.0;
        for (ri, row) in rows.iter().enumerate() {
            let Some(c) = cells.iter().find(|c| &c.row == row && &c.col == col) else {
                continue;
            };
            let v = if max { c.max_ns } else { c.avg_ns } / 1000.0;
            let x = gx + ri as f64 * bar_w;
            let y = p.py(v);
            let base = p.py(0.0);
            let colour = PALETTE[ri % PALETTE.len()];
            p.raw(&format!(
                r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{colour}"><title>{}</title></rect>"#,
                bar_w * 0.9,
                (base - y).max(0.5),
                esc(&format!("{row} / {col}: {} µs", fmt_num(v)))
            ));
            if !max {
                let (lo, hi) = (p.py(c.ci99_ns.0 / 1000.0), p.py(c.ci99_ns.1 / 1000.0));
                let cx = x + bar_w * 0.45;
                p.raw(&format!(
                    r##"<path d="M{cx:.1} {lo:.1}V{hi:.1}M{:.1} {lo:.1}h6M{:.1} {hi:.1}h6" stroke="#000" stroke-width="1"/>"##,
                    cx - 3.0,
                    cx - 3.0
                ));
            }
        }
        let lx = p.px(ci as f64 + 0.5);
        let ly = p.h - p.bottom + 15.0;
        p.text(lx, ly, "middle", 10.0, col);
    }
    // Category axis: no numeric x ticks.
    p.x = Scale::Linear { lo: 0.0, hi: 0.0 };
    let legend: Vec<(String, &str)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.clone(), PALETTE[i % PALETTE.len()]))
        .collect();
    axes_no_x(&mut p, title, "scenario", "latency (µs)");
    p.legend(&legend);
    Figure {
        id: id.to_string(),
        title: title.to_string(),
        svg: p.finish(id, title),
        caption: if max {
            "Largest sample of each cell (repetitions pooled). Maxima grow with the sample count: compare cells of equal duration.".into()
        } else {
            "Mean of each cell (repetitions pooled) with its 99 % confidence interval (z·σ/√n from the exact sums; samples are autocorrelated, so the true uncertainty is larger).".into()
        },
    }
}

fn axes_no_x(p: &mut Plot, title: &str, xlabel: &str, ylabel: &str) {
    // Draw y ticks and frame with the normal helper, then no x ticks (the scale is empty).
    p.axes(title, xlabel, ylabel);
}

/// Horizontal stacked bars: share of the latency above p99 each cause explains, per run.
pub fn attribution_bars(
    id: &str,
    runs: &[(String, &rtscope_model::attribution::AttributionSummary)],
) -> Figure {
    let title = "What the tail is made of (share of latency above p99)";
    // The causes that matter most over all runs (largest share in any run) get their own colour;
    // the rest are summed as "other causes", so the legend stays readable with many runs.
    const KEEP: usize = 9;
    let mut best: Vec<(String, f64)> = Vec::new();
    for (_, a) in runs {
        for c in &a.causes {
            match best.iter_mut().find(|b| b.0 == c.cause) {
                Some(b) => b.1 = b.1.max(c.tail_p99_share),
                None => best.push((c.cause.clone(), c.tail_p99_share)),
            }
        }
    }
    best.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let lumped = best.len().saturating_sub(KEEP);
    let mut causes: Vec<String> = best.iter().take(KEEP).map(|b| b.0.clone()).collect();
    let other_label = format!("other causes ({lumped})");
    if lumped > 0 {
        causes.push(other_label.clone());
    }
    const OTHERS: [&str; 10] = [
        "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#bcbd22", "#e377c2",
        "#393b79", "#637939",
    ];
    let colour = |cause: &str| -> &'static str {
        match cause {
            "no_guest_activity" => "#d62728",
            "unattributed" => "#b0b0b0",
            c if c == other_label => "#5a5a5a",
            c => {
                let i = causes
                    .iter()
                    .filter(|x| !matches!(x.as_str(), "no_guest_activity" | "unattributed"))
                    .position(|x| x == c)
                    .unwrap_or(0);
                OTHERS[i % OTHERS.len()]
            }
        }
    };
    let legend_rows = (causes.len() + 1).div_ceil(2);
    let h = 70.0 + runs.len() as f64 * 24.0 + legend_rows as f64 * 14.0;
    let mut p = Plot::new(
        680.0,
        h.max(180.0),
        Scale::Linear { lo: 0.0, hi: 100.0 },
        Scale::Linear { lo: 0.0, hi: 1.0 },
    );
    p.left = 190.0;
    p.bottom = 62.0 + legend_rows as f64 * 14.0;
    let band = (p.h - p.top - p.bottom) / runs.len().max(1) as f64;
    for (ri, (label, a)) in runs.iter().enumerate() {
        let y = p.top + ri as f64 * band + band * 0.15;
        let mut x = p.px(0.0);
        let mut total = 0.0f64;
        // Shares per legend entry for this run (lumped causes summed).
        let mut shares: Vec<(String, f64)> = Vec::new();
        for c in &a.causes {
            let key = if causes[..causes.len() - usize::from(lumped > 0)].contains(&c.cause) {
                c.cause.clone()
            } else {
                other_label.clone()
            };
            match shares.iter_mut().find(|s| s.0 == key) {
                Some(s) => s.1 += c.tail_p99_share,
                None => shares.push((key, c.tail_p99_share)),
            }
        }
        shares.sort_by_key(|s| causes.iter().position(|c| c == &s.0).unwrap_or(usize::MAX));
        for (cause, share) in &shares {
            let share = share.clamp(0.0, (1.0 - total).max(0.0));
            total += share;
            let w = p.px(share * 100.0) - p.px(0.0);
            p.raw(&format!(
                r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{:.1}" fill="{}"><title>{}</title></rect>"#,
                band * 0.7,
                colour(cause),
                esc(&format!("{cause}: {:.1} %", share * 100.0))
            ));
            x += w;
        }
        let rest = (1.0 - total).max(0.0);
        let w = p.px(rest * 100.0) - p.px(0.0);
        p.raw(&format!(
            r##"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{:.1}" fill="#e8e8e8"><title>unexplained: {:.1} %</title></rect>"##,
            band * 0.7,
            rest * 100.0
        ));
        p.text(p.left - 6.0, y + band * 0.45, "end", 10.0, label);
    }
    p.y = Scale::Linear { lo: 0.0, hi: 0.0 };
    p.axes(title, "", "");
    let x_mid = (p.left + p.w - p.right) / 2.0;
    let xl = p.h - p.bottom + 32.0;
    p.text(
        x_mid,
        xl,
        "middle",
        11.0,
        "% of the latency of samples above p99",
    );
    let ly = xl + 20.0;
    for (i, c) in causes
        .iter()
        .map(|c| (c.as_str(), colour(c)))
        .chain(std::iter::once(("unexplained", "#e8e8e8")))
        .enumerate()
    {
        let x = p.left + (i % 2) as f64 * 240.0;
        let y = ly + (i / 2) as f64 * 14.0;
        p.raw(&format!(
            r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{}"/>"#,
            y - 9.0,
            c.1
        ));
        p.text(x + 14.0, y, "start", 10.0, c.0);
    }
    Figure {
        id: id.to_string(),
        title: title.to_string(),
        svg: p.finish(id, title),
        caption: format!(
            "Per run, the share of the latency of samples above p99 that each cause explains (attribution summary); the {KEEP} causes with the largest share in any run have their own colour{}; light grey is what no recorded event explains.",
            if lumped > 0 { format!(", the other {lumped} are summed") } else { String::new() }
        ),
    }
}

/// The run's worst samples, one row each: the timeline from the planned wake-up (x = 0) to the
/// return to user space, each segment coloured by its cause (the attribution's timeline).
pub fn worst_timelines(id: &str, rec: &RunRecord) -> Option<Figure> {
    let a = rec.measurement()?.attribution.as_ref()?;
    let rows: Vec<&rtscope_model::attribution::WorstSample> = a
        .worst
        .iter()
        .filter(|w| !w.segments.is_empty())
        .take(10)
        .collect();
    if rows.is_empty() {
        return None;
    }
    let title = "Worst samples: where the time went";
    let mut causes: Vec<String> = Vec::new();
    for w in &rows {
        for sg in &w.segments {
            if !causes.contains(&sg.cause) {
                causes.push(sg.cause.clone());
            }
        }
    }
    let hi_us = rows
        .iter()
        .map(|w| w.latency_ns as f64 / 1e3)
        .fold(0.0, f64::max)
        .max(1.0);
    // Fixed colours for the two causes a reader looks for first; the others from a list without
    // red and grey, so no two causes share a colour in one figure (up to 12 others).
    const OTHERS: [&str; 12] = [
        "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#bcbd22", "#e377c2",
        "#393b79", "#637939", "#8c6d31", "#7b4173",
    ];
    let colour = |cause: &str| -> &'static str {
        match cause {
            "no_guest_activity" => "#d62728",
            "unattributed" => "#b0b0b0",
            c => {
                let i = causes
                    .iter()
                    .filter(|x| x.as_str() != "no_guest_activity" && x.as_str() != "unattributed")
                    .position(|x| x == c)
                    .unwrap_or(0);
                OTHERS[i % OTHERS.len()]
            }
        }
    };
    let legend_rows = causes.len().div_ceil(2);
    let legend_h = legend_rows as f64 * 14.0;
    let h = 96.0 + rows.len() as f64 * 26.0 + legend_h;
    let mut p = Plot::new(
        680.0,
        h,
        Scale::Linear { lo: 0.0, hi: hi_us },
        Scale::Linear { lo: 0.0, hi: 1.0 },
    );
    p.left = 190.0;
    p.bottom = 62.0 + legend_h;
    let band = (p.h - p.top - p.bottom) / rows.len() as f64;
    for (ri, w) in rows.iter().enumerate() {
        let y = p.top + ri as f64 * band + band * 0.15;
        for sg in &w.segments {
            let x0 = p.px(sg.start_ns as f64 / 1e3);
            let x1 = p.px(sg.end_ns as f64 / 1e3);
            p.raw(&format!(
                r#"<rect x="{x0:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}</title></rect>"#,
                (x1 - x0).max(0.5),
                band * 0.7,
                colour(&sg.cause),
                esc(&format!(
                    "{} {}: {}..{} µs",
                    sg.cause,
                    sg.detail,
                    us(sg.start_ns as f64),
                    us(sg.end_ns as f64)
                ))
            ));
        }
        p.text(
            p.left - 6.0,
            y + band * 0.45,
            "end",
            10.0,
            &format!("CPU {} #{} {} µs", w.cpu, w.cycle, us(w.latency_ns as f64)),
        );
    }
    p.y = Scale::Linear { lo: 0.0, hi: 0.0 };
    p.axes(title, "", "");
    let x_mid = (p.left + p.w - p.right) / 2.0;
    let xl = p.h - p.bottom + 32.0;
    p.text(x_mid, xl, "middle", 11.0, "µs after the planned wake-up");
    let ly = xl + 20.0;
    let colw = 240.0;
    for (i, c) in causes.iter().enumerate() {
        let x = p.left + (i % 2) as f64 * colw;
        let y = ly + (i / 2) as f64 * 14.0;
        p.raw(&format!(
            r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{}"/>"#,
            y - 9.0,
            colour(c)
        ));
        p.text(x + 14.0, y, "start", 10.0, c);
    }
    Some(Figure {
        id: id.to_string(),
        title: title.to_string(),
        svg: p.finish(id, title),
        caption: "Each row is one of the run's worst samples (CPU, cycle, latency): its timeline from the planned wake-up to the return to user space, coloured by cause (hover for the thread, IRQ or gap). The parts add up to the latency exactly.".into(),
    })
}

/// Per CPU: each characterization's bound beside the observed maximum (log scale).
pub fn bound_vs_observed(id: &str, rec: &RunRecord) -> Option<Figure> {
    let m = rec.measurement()?;
    let b = m.bound.as_ref()?;
    if b.cpus.is_empty() {
        return None;
    }
    let title = if b.estimate {
        "Latency bound vs observed maximum (ESTIMATE, not a sound bound)"
    } else {
        "Latency bound vs observed maximum"
    };
    let names: Vec<&str> = b.cpus[0].bounds.named().iter().map(|(n, _)| *n).collect();
    let observed = |cpu: u32| -> Option<u64> {
        b.cpus
            .iter()
            .find(|c| c.cpu == cpu)
            .and_then(|c| c.observed_max_latency_ns)
            .or_else(|| {
                m.threads
                    .iter()
                    .filter(|t| t.cpu == cpu)
                    .filter_map(|t| t.stats.max_ns)
                    .max()
            })
    };
    let mut vals: Vec<f64> = Vec::new();
    for c in &b.cpus {
        vals.extend(
            c.bounds
                .named()
                .iter()
                .filter_map(|(_, cb)| cb.latency_ns)
                .map(|v| v as f64),
        );
        vals.extend(observed(c.cpu).map(|v| v as f64));
    }
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min).max(1.0) / 1000.0;
    let hi = vals.iter().copied().fold(0.0, f64::max).max(2.0) / 1000.0;
    let mut p = Plot::new(
        680.0,
        340.0,
        Scale::Linear {
            lo: 0.0,
            hi: b.cpus.len() as f64,
        },
        Scale::Log {
            lo: lo * 0.5,
            hi: hi * 2.0,
        },
    );
    p.bottom = 60.0;
    let group_w = p.px(1.0) - p.px(0.0);
    let bar_w = group_w * 0.8 / names.len() as f64;
    for (gi, c) in b.cpus.iter().enumerate() {
        let gx = p.px(gi as f64) + group_w * 0.1;
        for (bi, (name, cb)) in c.bounds.named().iter().enumerate() {
            let x = gx + bi as f64 * bar_w;
            let colour = PALETTE[bi % PALETTE.len()];
            match cb.latency_ns {
                Some(v) => {
                    let y = p.py(v as f64 / 1000.0);
                    let base = p.py(lo * 0.5);
                    p.raw(&format!(
                        r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{colour}"><title>{}</title></rect>"#,
                        bar_w * 0.9,
                        (base - y).max(0.5),
                        esc(&format!("CPU {} {name}: {} µs", c.cpu, us(v as f64)))
                    ));
                }
                None => {
                    let y = p.top + 10.0;
                    p.text(x + bar_w * 0.45, y, "middle", 9.0, "∞");
                }
            }
        }
        if let Some(o) = observed(c.cpu) {
            let y = p.py(o as f64 / 1000.0);
            p.raw(&format!(
                r##"<path d="M{:.1} {y:.1}h{:.1}" stroke="#000" stroke-width="2" stroke-dasharray="5 3"/>"##,
                gx - 4.0,
                group_w * 0.8 + 8.0
            ));
        }
        p.text(
            p.px(gi as f64 + 0.5),
            p.h - p.bottom + 15.0,
            "middle",
            10.0,
            &format!("CPU {}", c.cpu),
        );
    }
    p.x = Scale::Linear { lo: 0.0, hi: 0.0 };
    p.axes(title, "", "latency (µs, log)");
    let mut legend: Vec<(String, &str)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.to_string(), PALETTE[i % PALETTE.len()]))
        .collect();
    legend.push(("observed max (dashed)".into(), "#000"));
    p.legend(&legend);
    Some(Figure {
        id: id.to_string(),
        title: title.to_string(),
        svg: p.finish(id, title),
        caption: format!(
            "Bars: the bound under each interrupt characterization (∞ = did not converge); dashed line: the largest latency observed on that CPU.{}",
            if b.estimate { " Thread terms were estimated on this kernel: an estimate, not a sound bound." } else { "" }
        ),
    })
}

/// Bound and observed maximum as the run progressed (when the run recorded the series).
pub fn bound_series(id: &str, rec: &RunRecord) -> Option<Figure> {
    let b = rec.measurement()?.bound.as_ref()?;
    if b.series.len() < 2 {
        return None;
    }
    let title = "Time to bound: sliding-window bound and observed maximum";
    let t_hi = b.series.iter().map(|s| s.t_s).fold(0.0, f64::max).max(1e-3);
    let v_hi = b
        .series
        .iter()
        .flat_map(|s| [s.sliding_window_ns, s.observed_max_ns])
        .flatten()
        .max()
        .unwrap_or(1) as f64
        / 1000.0;
    let mut p = Plot::new(
        640.0,
        300.0,
        Scale::Linear { lo: 0.0, hi: t_hi },
        Scale::Linear {
            lo: 0.0,
            hi: v_hi * 1.1,
        },
    );
    let mut cpus: Vec<u32> = b.series.iter().map(|s| s.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut legend = Vec::new();
    for (i, cpu) in cpus.iter().enumerate() {
        for (k, pick) in [0usize, 1].iter().enumerate() {
            let mut d = String::new();
            for s in b.series.iter().filter(|s| s.cpu == *cpu) {
                let v = if *pick == 0 {
                    s.sliding_window_ns
                } else {
                    s.observed_max_ns
                };
                if let Some(v) = v {
                    let _ = write!(
                        d,
                        "{}{:.1} {:.1}",
                        if d.is_empty() { "M" } else { "L" },
                        p.px(s.t_s),
                        p.py(v as f64 / 1000.0)
                    );
                }
            }
            let colour = PALETTE[(2 * i + k) % PALETTE.len()];
            let dash = if k == 1 {
                r#" stroke-dasharray="4 3""#
            } else {
                ""
            };
            p.raw(&format!(
                r#"<path d="{d}" fill="none" stroke="{colour}" stroke-width="1.5"{dash}/>"#
            ));
            legend.push((
                format!(
                    "CPU {cpu} {}",
                    if k == 0 { "bound" } else { "observed max" }
                ),
                colour,
            ));
        }
    }
    p.axes(title, "time since start (s)", "latency (µs)");
    p.legend(&legend);
    Some(Figure {
        id: id.to_string(),
        title: title.to_string(),
        svg: p.finish(id, title),
        caption: "Solid: sliding-window bound as data accumulated; dashed: largest latency observed so far.".into(),
    })
}
