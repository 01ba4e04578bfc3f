//! Text of the benchmark verbs (rhealstone, sched-scale, pdlt) and of `load`: what the cli
//! prints, built from the results alone.

use crate::svg::{LinePlot, Series};
use rtscope_model::bench::{PdltResult, RhealstoneMetric, RhealstoneResult, SchedScaleResult};
use rtscope_model::LoadReport;
use std::fmt::Write as _;

/// µs with two decimals, `-` when unknown.
pub fn us(ns: Option<f64>) -> String {
    ns.map_or("-".into(), |v| format!("{:.2}", v / 1000.0))
}

pub fn us_u(ns: Option<u64>) -> String {
    us(ns.map(|v| v as f64))
}

fn pct(cv: Option<f64>) -> String {
    cv.map_or("-".into(), |v| format!("{:.1}", v * 100.0))
}

/// Row marker of a metric: the nearest measurable quantity is never shown as the paper's.
fn rhealstone_marker(m: &RhealstoneMetric) -> &'static str {
    if m.is_nearest_measurable() {
        "  (nearest measurable quantity, not the paper's)"
    } else if !m.is_papers_quantity() {
        "  (a different interval, not the paper's)"
    } else if m.primary {
        ""
    } else {
        "  (variant)"
    }
}

pub fn rhealstone(r: &RhealstoneResult) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<19} {:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "metric", "variant", "samples", "mean_us", "min_us", "median_us", "p99_us", "max_us"
    );
    let row = |o: &mut String, a: &str, b: &str, s: &rtscope_model::Stats, tail: &str| {
        let _ = writeln!(
            o,
            "{:<19} {:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}{}",
            a,
            b,
            s.samples,
            us(s.avg_ns),
            us_u(s.min_ns),
            us_u(s.median_ns),
            us_u(s.percentile(99.0).map(|p| p.value_ns)),
            us_u(s.max_ns),
            tail
        );
    };
    for m in &r.metrics {
        if let Some(u) = &m.unavailable {
            let _ = writeln!(
                o,
                "{:<19} {:<14} unavailable: {u}{}",
                m.metric,
                m.variant,
                rhealstone_marker(m)
            );
            continue;
        }
        row(
            &mut o,
            &m.metric,
            &m.variant,
            &m.stats,
            rhealstone_marker(m),
        );
        // Intervals of the same samples, indented under their metric.
        for p in &m.parts {
            row(&mut o, &format!("  {}", p.name), "", &p.stats, "  (part)");
        }
        if let Some(e) = &m.stopped_early {
            let _ = writeln!(o, "{:<34} note: {e}", "");
        }
    }
    if let Some(c) = &r.composite {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "Rhealstone composite: {:.0} Rhealstones/s (mean component {:.2} µs){}",
            c.rhealstones_per_s,
            c.mean_component_ns / 1000.0,
            if c.missing.is_empty() {
                String::new()
            } else {
                format!(" — PARTIAL, missing: {}", c.missing.join(", "))
            }
        );
        let _ = writeln!(o, "  formula: {}", c.formula);
        let _ = writeln!(o, "  source:  {}", c.citation);
        let nearest: Vec<&str> = r
            .metrics
            .iter()
            .filter(|m| m.primary && m.is_nearest_measurable() && m.unavailable.is_none())
            .map(|m| m.metric.as_str())
            .collect();
        if !nearest.is_empty() {
            let _ = writeln!(
                o,
                "  note:    {} entered as the nearest measurable quantity, not the paper's",
                nearest.join(", ")
            );
        }
    }
    o
}

pub fn sched_scale(r: &SchedScaleResult) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "wake-up → run (own clock: programmed expiry → first user-space instruction), µs"
    );
    let _ = writeln!(
        o,
        "{:>6} {:>8} {:>9} {:>9} {:>9} {:>9} {:>8} | {:>9} {:>9} {:>9} {:>8} | {:>10}",
        "N",
        "wakeups",
        "mean",
        "min",
        "max",
        "stddev",
        "sd/mean%",
        "irq→run",
        "min",
        "max",
        "sd/mean%",
        "wake→swtch"
    );
    for row in &r.rows {
        let s = &row.wakeup_to_run_stats;
        let k = row.irq_to_run_stats.as_ref();
        let _ = writeln!(
            o,
            "{:>6} {:>8} {:>9} {:>9} {:>9} {:>9} {:>8} | {:>9} {:>9} {:>9} {:>8} | {:>10}",
            row.load_processes,
            row.wakeups,
            us(s.avg_ns),
            us(s.min_ns.map(|v| v as f64)),
            us(s.max_ns.map(|v| v as f64)),
            us(s.stddev_ns),
            pct(row.wakeup_to_run_cv),
            us(k.and_then(|k| k.avg_ns)),
            us(k.and_then(|k| k.min_ns).map(|v| v as f64)),
            us(k.and_then(|k| k.max_ns).map(|v| v as f64)),
            pct(row.irq_to_run_cv),
            us(row.waking_to_switch_stats.as_ref().and_then(|w| w.avg_ns)),
        );
    }
    if r.rows.iter().any(|row| row.sched_time_stats.is_some()) {
        let _ = writeln!(
            o,
            "time in the scheduler (Table 3's quantity: entry of schedule()/schedule_idle()/preempt_schedule_irq() → sched_switch to the FIFO thread; entry marked by {}), µs",
            r.sched_time_method
                .as_deref()
                .unwrap_or("fentry on schedule, schedule_idle, preempt_schedule_irq")
        );
        let _ = writeln!(
            o,
            "{:>6} {:>8} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8}",
            "N", "timed", "mean", "min", "max", "stddev", "sd/mean%", "untimed"
        );
        for row in &r.rows {
            let Some(s) = row.sched_time_stats.as_ref() else {
                continue;
            };
            let _ = writeln!(
                o,
                "{:>6} {:>8} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8}",
                row.load_processes,
                s.samples,
                us(s.avg_ns),
                us(s.min_ns.map(|v| v as f64)),
                us(s.max_ns.map(|v| v as f64)),
                us(s.stddev_ns),
                pct(row.sched_time_cv),
                row.sched_time_missed,
            );
        }
    }
    for (name, f) in [
        ("wake-up→run", &r.fit_wakeup_to_run),
        ("irq→run", &r.fit_irq_to_run),
        ("in the scheduler", &r.fit_sched_time),
    ] {
        if let Some(f) = f {
            let _ = writeln!(o,
                "fit {name}: {:.4} µs per load process, {:.0}% CI [{:.4}, {:.4}], intercept {:.2} µs, R² {:.3} ({} levels)",
                f.slope / 1000.0,
                f.confidence * 100.0,
                f.slope_ci_low / 1000.0,
                f.slope_ci_high / 1000.0,
                f.intercept / 1000.0,
                f.r_squared,
                f.points
            );
        }
    }
    let _ = writeln!(o, "(heursch-2001 Table 3, Linux 2.4.0-test6, AMD K6 400 MHz: 1.0 µs at N=0 … 52.1 µs at N=200, ≈0.26 µs per load process)");
    if let Some(t) = &r.trace_unavailable {
        let _ = writeln!(o, "kernel events: {t}");
    }
    if r.rows.iter().any(|row| {
        row.sched_time_stats
            .as_ref()
            .is_some_and(|s| row.sched_time_missed > s.samples)
    }) {
        let _ = writeln!(
            o,
            "time in the scheduler: most switches to the thread were untimed (reached without a traced scheduler entry, e.g. through preempt_schedule(), which is notrace): those levels' means are not Table 3's quantity"
        );
    }
    if let Some(t) = &r.sched_time_unavailable {
        let _ = writeln!(o, "time in the scheduler: not measured: {t}");
    }
    o
}

pub fn pdlt(res: &PdltResult) -> String {
    let mut o = String::new();
    for sc in &res.scans {
        let _ = writeln!(o,
            "preempt={}: {} points; {} alone: median {:.1} µs (min {:.1}, max {:.1}); PDLT baseline {:.1} µs, max {:.1} µs",
            sc.preempt_model,
            sc.points.len(),
            res.syscall,
            sc.syscall_calibration.median_ns.unwrap_or(0) as f64 / 1000.0,
            sc.syscall_calibration.min_ns.unwrap_or(0) as f64 / 1000.0,
            sc.syscall_calibration.max_ns.unwrap_or(0) as f64 / 1000.0,
            sc.baseline_pdlt_ns.unwrap_or(0) as f64 / 1000.0,
            sc.max_pdlt_ns.unwrap_or(0) as f64 / 1000.0
        );
        let mut irt: Vec<u64> = sc.points.iter().filter_map(|p| p.irt_ns).collect();
        if !irt.is_empty() {
            irt.sort_unstable();
            let _ = writeln!(
                o,
                "  interrupt response (device interrupt → handler's first statement): median {:.2} µs, max {:.2} µs over {} points",
                irt[irt.len() / 2] as f64 / 1000.0,
                irt[irt.len() - 1] as f64 / 1000.0,
                irt.len()
            );
        }
        let _ = writeln!(
            o,
            "  non-preemptible regions (offset start…end µs, peak PDLT µs, slope):"
        );
        for t in &sc.triangles {
            let _ = writeln!(
                o,
                "    {:>9.1} … {:>9.1}  peak {:>8.1}  slope {:+.2}",
                t.start_offset_ns as f64 / 1000.0,
                t.end_offset_ns as f64 / 1000.0,
                t.peak_pdlt_ns as f64 / 1000.0,
                t.slope
            );
        }
    }
    for n in &res.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}

pub fn loads(reports: &[LoadReport], interrupted: bool) -> String {
    let mut o = String::new();
    for r in reports {
        let _ = writeln!(
            o,
            "load {} ran {:.2} s{}",
            r.kind,
            r.duration_s,
            if interrupted {
                " (stopped by signal)"
            } else {
                ""
            }
        );
        for (k, v) in &r.params {
            let _ = writeln!(o, "  {k:<34} {v}");
        }
        for (k, v) in r.figures.iter().filter(|(k, _)| !k.starts_with("sys_")) {
            let _ = writeln!(o, "  {k:<34} {}", fmt_figure(*v));
        }
        for w in &r.warnings {
            let _ = writeln!(o, "  warning: {w}");
        }
    }
    // The /proc deltas are machine-wide and identical in every report: print them once.
    if let Some(r) = reports.first() {
        let _ = writeln!(
            o,
            "machine-wide, /proc deltas over the run (all loads and everything else):"
        );
        for (k, v) in r.figures.iter().filter(|(k, _)| k.starts_with("sys_")) {
            let _ = writeln!(o, "  {k:<34} {}", fmt_figure(*v));
        }
    }
    o
}

fn fmt_figure(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// CSV of every point of every scan.
pub fn pdlt_csv(r: &PdltResult) -> String {
    let mut s = String::from(
        "preempt_model,repeat,requested_offset_ns,offset_ns,pdlt_ns,syscall_ns,irt_ns\n",
    );
    for sc in &r.scans {
        for p in &sc.points {
            s.push_str(&format!(
                "{},{},{},{},{},{},{}\n",
                sc.preempt_model,
                p.repeat,
                p.requested_offset_ns,
                p.offset_ns,
                p.pdlt_ns,
                p.syscall_ns,
                p.irt_ns.map(|v| v.to_string()).unwrap_or_default()
            ));
        }
    }
    s
}

/// Figure: PDLT vs offset (µs), the call's median duration as a thick bar on the x axis.
pub fn pdlt_svg(r: &PdltResult) -> String {
    let colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];
    let series = r
        .scans
        .iter()
        .enumerate()
        .map(|(i, sc)| Series {
            label: format!("preempt={}", sc.preempt_model),
            color: colors[i % colors.len()],
            points: sc
                .points
                .iter()
                .map(|p| (p.offset_ns as f64 / 1000.0, p.pdlt_ns as f64 / 1000.0))
                .collect(),
            line: false,
        })
        .collect::<Vec<_>>();
    // The device interrupt's response of the driver's points, as the paper's Fig. 3 draws the
    // IRT under the PDLT.
    let mut series = series;
    for sc in r
        .scans
        .iter()
        .filter(|sc| sc.points.iter().any(|p| p.irt_ns.is_some()))
    {
        series.push(Series {
            label: format!("IRT, preempt={}", sc.preempt_model),
            color: "#7f7f7f",
            points: sc
                .points
                .iter()
                .filter_map(|p| Some((p.offset_ns as f64 / 1000.0, p.irt_ns? as f64 / 1000.0)))
                .collect(),
            line: false,
        });
    }
    let driver = r.syscall == "driver";
    let x_bars = r
        .scans
        .first()
        .and_then(|sc| sc.syscall_calibration.median_ns)
        .map(|d| {
            vec![(
                0.0,
                d as f64 / 1000.0,
                format!("{} duration (median)", r.syscall),
            )]
        })
        .unwrap_or_default();
    let title = if driver {
        let n = r.preemption_points.unwrap_or(0);
        format!(
            "PDLT scan of the test driver ({} iterations, {n} preemption point{}), CPU {}",
            r.size,
            if n == 1 { "" } else { "s" },
            r.cpu
        )
    } else {
        format!(
            "PDLT scan of {} ({} {}), CPU {}",
            r.syscall,
            r.size,
            if r.syscall == "getdents" {
                "entries"
            } else {
                "bytes"
            },
            r.cpu
        )
    };
    let (x_label, y_label) = if driver {
        (
            "device interrupt raised − driver call start [µs]",
            "PDLT: interrupt → producer running [µs]",
        )
    } else {
        (
            "timer expiry − system call start [µs]",
            "PDLT: expiry → producer running [µs]",
        )
    };
    LinePlot {
        title,
        x_label: x_label.into(),
        y_label: y_label.into(),
        series,
        x_bars,
    }
    .render()
}

pub fn sched_scale_csv(r: &SchedScaleResult) -> String {
    let mut s = String::from("load_processes,wakeups,mean_ns,min_ns,max_ns,stddev_ns,cv,irq_to_run_mean_ns,irq_to_run_min_ns,irq_to_run_max_ns,irq_to_run_stddev_ns,waking_to_switch_mean_ns,sched_time_count,sched_time_mean_ns,sched_time_min_ns,sched_time_max_ns,sched_time_stddev_ns,sched_time_untimed\n");
    let f = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.1}"));
    let u = |v: Option<u64>| v.map_or(String::new(), |x| x.to_string());
    for row in &r.rows {
        let st = &row.wakeup_to_run_stats;
        let k = row.irq_to_run_stats.as_ref();
        let t = row.sched_time_stats.as_ref();
        s.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            row.load_processes,
            row.wakeups,
            f(st.avg_ns),
            u(st.min_ns),
            u(st.max_ns),
            f(st.stddev_ns),
            row.wakeup_to_run_cv
                .map_or(String::new(), |c| format!("{c:.4}")),
            f(k.and_then(|k| k.avg_ns)),
            u(k.and_then(|k| k.min_ns)),
            u(k.and_then(|k| k.max_ns)),
            f(k.and_then(|k| k.stddev_ns)),
            f(row.waking_to_switch_stats.as_ref().and_then(|w| w.avg_ns)),
            t.map_or(String::new(), |t| t.samples.to_string()),
            f(t.and_then(|t| t.avg_ns)),
            u(t.and_then(|t| t.min_ns)),
            u(t.and_then(|t| t.max_ns)),
            f(t.and_then(|t| t.stddev_ns)),
            t.map_or(String::new(), |_| row.sched_time_missed.to_string()),
        ));
    }
    s
}

pub fn sched_scale_svg(r: &SchedScaleResult) -> String {
    let mut series = vec![Series {
        label: "mean wake-up→run (own clock)".into(),
        color: "#1f77b4",
        points: r
            .rows
            .iter()
            .filter_map(|x| {
                x.wakeup_to_run_stats
                    .avg_ns
                    .map(|m| (x.load_processes as f64, m / 1000.0))
            })
            .collect(),
        line: true,
    }];
    if r.rows.iter().any(|x| x.irq_to_run_stats.is_some()) {
        series.push(Series {
            label: "mean irq→run (trace)".into(),
            color: "#d62728",
            points: r
                .rows
                .iter()
                .filter_map(|x| {
                    x.irq_to_run_stats
                        .as_ref()
                        .and_then(|s| s.avg_ns)
                        .map(|m| (x.load_processes as f64, m / 1000.0))
                })
                .collect(),
            line: true,
        });
    }
    series.push(Series {
        label: "heursch-2001 Table 3 (Linux 2.4)".into(),
        color: "#999999",
        points: vec![
            (0.0, 1.0),
            (10.0, 2.3),
            (20.0, 3.4),
            (30.0, 5.8),
            (40.0, 8.5),
            (50.0, 11.1),
            (100.0, 25.7),
            (150.0, 38.8),
            (200.0, 52.1),
        ],
        line: true,
    });
    if let Some(f) = &r.fit_wakeup_to_run {
        let xmax = r.rows.iter().map(|x| x.load_processes).max().unwrap_or(0) as f64;
        series.push(Series {
            label: format!("fit: {:.4} µs/process", f.slope / 1000.0),
            color: "#2ca02c",
            points: vec![
                (0.0, f.intercept / 1000.0),
                (xmax, (f.intercept + f.slope * xmax) / 1000.0),
            ],
            line: true,
        });
    }
    LinePlot {
        title: format!("SCHED_FIFO wake-up vs SCHED_OTHER load, CPU {}", r.cpu),
        x_label: "runnable SCHED_OTHER load processes".into(),
        y_label: "µs".into(),
        series,
        x_bars: Vec::new(),
    }
    .render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::bench::{
        RhealstonePart, QUANTITY_AS_DEFINED, QUANTITY_CONTRAST, QUANTITY_NEAREST_MEASURABLE,
    };
    use rtscope_model::{Histogram, Stats};

    fn metric(metric: &str, variant: &str, primary: bool, quantity: &str) -> RhealstoneMetric {
        let mut h = Histogram::new();
        h.record(2_000);
        RhealstoneMetric {
            metric: metric.into(),
            variant: variant.into(),
            primary,
            iterations_requested: 1,
            stopped_early: None,
            stats: Stats::from_histogram(&h),
            histogram: h.into(),
            unavailable: None,
            definition: String::new(),
            notes: vec![],
            quantity: quantity.into(),
            parts: vec![],
            counters: Default::default(),
        }
    }

    #[test]
    fn rhealstone_text_names_the_nearest_measurable_quantity_and_the_parts() {
        let mut shuffle = metric("semaphore_shuffle", "sysv_sem", true, QUANTITY_AS_DEFINED);
        let mut h = Histogram::new();
        h.record(1_000);
        shuffle.parts.push(RhealstonePart {
            name: "release_to_own".into(),
            definition: String::new(),
            stats: Stats::from_histogram(&h),
            histogram: h.into(),
        });
        let r = RhealstoneResult {
            cpu: 1,
            priority_high: 80,
            metrics: vec![
                shuffle,
                metric("semaphore_shuffle", "futex", false, QUANTITY_AS_DEFINED),
                metric(
                    "interrupt_response",
                    "hrtimer_expire",
                    true,
                    QUANTITY_NEAREST_MEASURABLE,
                ),
                // A record from before `quantity` existed: its timer interval is still named.
                metric("interrupt_response", "hrtimer_expire", true, ""),
                metric("preemption", "hrtimer_wake", false, QUANTITY_CONTRAST),
                // Before `quantity`, the shuffle was timed from release to own only.
                metric("semaphore_shuffle", "sysv_sem", true, ""),
            ],
            composite: None,
        };
        let t = rhealstone(&r);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[1].starts_with("semaphore_shuffle   sysv_sem") && lines[1].ends_with("2.00"));
        assert!(lines[2].contains("  release_to_own") && lines[2].ends_with("(part)"));
        assert!(lines[3].ends_with("(variant)"));
        for l in &lines[4..6] {
            assert!(
                l.ends_with("(nearest measurable quantity, not the paper's)"),
                "{l}"
            );
        }
        for l in &lines[6..8] {
            assert!(
                l.ends_with("(a different interval, not the paper's)"),
                "{l}"
            );
        }
    }
}
