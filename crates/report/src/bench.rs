//! Text of the benchmark verbs (rhealstone, sched-scale, pdlt) and of `load`: what the cli
//! prints, built from the results alone.

use rtscope_model::bench::{PdltResult, RhealstoneResult, SchedScaleResult};
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

pub fn rhealstone(r: &RhealstoneResult) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<19} {:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "metric", "variant", "samples", "mean_us", "min_us", "median_us", "p99_us", "max_us"
    );
    for m in &r.metrics {
        if let Some(u) = &m.unavailable {
            let _ = writeln!(o, "{:<19} {:<14} unavailable: {u}", m.metric, m.variant);
            continue;
        }
        let s = &m.stats;
        let _ = writeln!(
            o,
            "{:<19} {:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}{}",
            m.metric,
            m.variant,
            s.samples,
            us(s.avg_ns),
            us_u(s.min_ns),
            us_u(s.median_ns),
            us_u(s.percentile(99.0).map(|p| p.value_ns)),
            us_u(s.max_ns),
            if m.primary { "" } else { "  (variant)" }
        );
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
    for (name, f) in [
        ("wake-up→run", &r.fit_wakeup_to_run),
        ("irq→run", &r.fit_irq_to_run),
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
