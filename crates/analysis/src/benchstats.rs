//! Statistics for the fine-grained benchmarks (rhealstone, sched-scale, pdlt). Pure: no clocks,
//! no syscalls; every function is checked on hand-computed fixtures below.
//!
//! - [`fit_line`]: ordinary least squares with the slope's Student-t confidence interval
//!   (heursch-2001 §4 states the scheduling time is "a linear function" of the number of load
//!   processes; the slope and its CI say whether that still holds).
//! - [`rhealstone_composite`]: Kar's single Rhealstone figure from the six component means.
//! - [`pdlt_triangles`]: the non-preemptible regions of a PDLT scan (heursch-2001 §2.6: each
//!   appears as a triangle whose height falls with slope −1 as the interrupt comes later).

use rtscope_model::bench::{LinearFit, PdltPoint, PdltTriangle, RhealstoneComposite};

/// Kar's formula as printed in every output that shows the composite.
pub const RHEALSTONE_FORMULA: &str =
    "Rhealstone = 1 / t_mean, t_mean = (t1+t2+t3+t4+t5+t6)/6 s; t1 task switch, t2 preemption, \
     t3 interrupt latency, t4 semaphore shuffle, t5 deadlock break, t6 intertask message latency \
     (mean times in seconds; result in Rhealstones per second)";
pub const RHEALSTONE_CITATION: &str = "R. P. Kar and K. Porter, \"Rhealstone: A Real-Time \
     Benchmarking Proposal\", Dr. Dobb's Journal 14(2), Feb. 1989; R. P. Kar, \"Implementing the \
     Rhealstone Real-Time Benchmark\", Dr. Dobb's Journal, Apr. 1990";

/// Least-squares line y = intercept + slope·x with a two-sided `confidence` interval on the
/// slope. Needs at least 3 points with distinct x (the CI has points − 2 degrees of freedom).
pub fn fit_line(xs: &[f64], ys: &[f64], confidence: f64) -> Option<LinearFit> {
    let n = xs.len();
    if n < 3 || ys.len() != n || !(0.0..1.0).contains(&confidence) || confidence <= 0.0 {
        return None;
    }
    if xs.iter().chain(ys).any(|v| !v.is_finite()) {
        return None;
    }
    let nf = n as f64;
    let mx = xs.iter().sum::<f64>() / nf;
    let my = ys.iter().sum::<f64>() / nf;
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let sse: f64 = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| {
            let r = y - (intercept + slope * x);
            r * r
        })
        .sum();
    let sst: f64 = ys.iter().map(|y| (y - my) * (y - my)).sum();
    let df = nf - 2.0;
    let slope_stderr = (sse / df / sxx).sqrt();
    let t_critical = student_t_quantile(0.5 + confidence / 2.0, df)?;
    let half = t_critical * slope_stderr;
    Some(LinearFit {
        points: n as u32,
        slope,
        intercept,
        slope_stderr,
        slope_ci_low: slope - half,
        slope_ci_high: slope + half,
        confidence,
        t_critical,
        r_squared: if sst > 0.0 { 1.0 - sse / sst } else { 1.0 },
    })
}

/// Quantile of Student's t distribution with `df` degrees of freedom, for 0.5 < p < 1.
pub fn student_t_quantile(p: f64, df: f64) -> Option<f64> {
    // Written to be false for NaN too.
    let ok = p > 0.5 && p < 1.0 && df > 0.0;
    if !ok {
        return None;
    }
    // Bisection on the CDF: monotone, and 200 halvings of [0, 1e7] reach far below 1e-9.
    let (mut lo, mut hi) = (0.0f64, 1e7f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if student_t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(0.5 * (lo + hi))
}

/// CDF of Student's t for t ≥ 0: 1 − ½·I_{df/(df+t²)}(df/2, ½).
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * reg_inc_beta(x, df / 2.0, 0.5);
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

fn ln_gamma(x: f64) -> f64 {
    // Lanczos approximation (g = 7, n = 9), accurate to ~1e-15 for x > 0.5.
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Regularized incomplete beta I_x(a, b) by its continued fraction (modified Lentz).
fn reg_inc_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    // The fraction converges fast for x < (a+1)/(a+b+2); use the symmetry otherwise.
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - reg_inc_beta(1.0 - x, b, a);
    }
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut f = d;
    for m in 1..=300 {
        let m = m as f64;
        let num = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 + num * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + num / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        f *= d * c;
        let num = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 + num * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + num / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let delta = d * c;
        f *= delta;
        if (delta - 1.0).abs() < 1e-15 {
            break;
        }
    }
    ln_front.exp() * f / a
}

/// Kar's composite from (metric name, mean ns or None when unavailable), in the order t1…t6.
/// Returns None when no component is available. A partial figure (some missing) is flagged by
/// a non-empty `missing` list: Kar's figure is only comparable with all six.
pub fn rhealstone_composite(components: &[(&str, Option<f64>)]) -> Option<RhealstoneComposite> {
    let have: Vec<(String, f64)> = components
        .iter()
        .filter_map(|(n, v)| {
            v.filter(|x| x.is_finite() && *x > 0.0)
                .map(|x| (n.to_string(), x))
        })
        .collect();
    if have.is_empty() {
        return None;
    }
    let missing = components
        .iter()
        .filter(|(_, v)| v.filter(|x| x.is_finite() && *x > 0.0).is_none())
        .map(|(n, _)| n.to_string())
        .collect();
    let mean_ns = have.iter().map(|(_, v)| v).sum::<f64>() / have.len() as f64;
    Some(RhealstoneComposite {
        formula: RHEALSTONE_FORMULA.to_string(),
        citation: RHEALSTONE_CITATION.to_string(),
        components_mean_ns: have,
        missing,
        mean_component_ns: mean_ns,
        rhealstones_per_s: 1e9 / mean_ns,
    })
}

/// Median of a slice (lower median for even lengths), None when empty.
pub fn median_u64(v: &[u64]) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    Some(s[(s.len() - 1) / 2])
}

/// PDLT baseline: median PDLT of the points whose timer expired after the system call ended
/// (the producer then preempts user-space code only). Falls back to the lowest decile of all
/// points when no point lies after the call.
pub fn pdlt_baseline(points: &[PdltPoint]) -> Option<u64> {
    let after: Vec<u64> = points
        .iter()
        .filter(|p| p.offset_ns >= 0 && p.offset_ns as u64 > p.syscall_ns)
        .map(|p| p.pdlt_ns)
        .collect();
    if !after.is_empty() {
        return median_u64(&after);
    }
    let mut all: Vec<u64> = points.iter().map(|p| p.pdlt_ns).collect();
    all.sort_unstable();
    all.get(all.len() / 10).copied()
}

/// Non-preemptible regions of a scan: maximal runs of consecutive points (by offset) whose PDLT
/// exceeds `baseline + threshold`, split where PDLT jumps *up* by more than `threshold` and half
/// the previous excess (a preemption point ends one triangle and the next begins, heursch-2001
/// Fig. 5). Points whose timer expired before the call started (offset < 0) are ignored.
/// Runs of fewer than `min_points` points are ignored (isolated host stalls are not triangles).
pub fn pdlt_triangles(
    points: &[PdltPoint],
    baseline_ns: u64,
    threshold_ns: u64,
    min_points: usize,
) -> Vec<PdltTriangle> {
    let mut s: Vec<&PdltPoint> = points.iter().filter(|p| p.offset_ns >= 0).collect();
    s.sort_by_key(|p| p.offset_ns);
    let limit = baseline_ns.saturating_add(threshold_ns);
    let mut out = Vec::new();
    let mut run: Vec<&PdltPoint> = Vec::new();
    let flush = |run: &mut Vec<&PdltPoint>, out: &mut Vec<PdltTriangle>| {
        if run.len() >= min_points.max(2) {
            let xs: Vec<f64> = run.iter().map(|p| p.offset_ns as f64).collect();
            let ys: Vec<f64> = run.iter().map(|p| p.pdlt_ns as f64).collect();
            let slope = slope_only(&xs, &ys).unwrap_or(f64::NAN);
            out.push(PdltTriangle {
                start_offset_ns: run[0].offset_ns,
                end_offset_ns: run[run.len() - 1].offset_ns,
                peak_pdlt_ns: run.iter().map(|p| p.pdlt_ns).max().unwrap_or(0),
                slope,
            });
        }
        run.clear();
    };
    for p in s {
        if p.pdlt_ns <= limit {
            flush(&mut run, &mut out);
            continue;
        }
        if let Some(last) = run.last() {
            // A new triangle starts where PDLT jumps up by more than the threshold *and* by more
            // than half of the previous point's excess: near the end of a region the excess is
            // small, so a preemption point shows as a big jump, while the run-to-run jitter of a
            // long call (heights of hundreds of µs varying by tens) does not split it.
            let excess = last.pdlt_ns.saturating_sub(baseline_ns);
            if p.pdlt_ns > last.pdlt_ns.saturating_add(threshold_ns.max(excess / 2)) {
                flush(&mut run, &mut out);
            }
        }
        run.push(p);
    }
    flush(&mut run, &mut out);
    out
}

fn slope_only(xs: &[f64], ys: &[f64]) -> Option<f64> {
    let n = xs.len() as f64;
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    if sxx <= 0.0 {
        return None;
    }
    Some(
        xs.iter()
            .zip(ys)
            .map(|(x, y)| (x - mx) * (y - my))
            .sum::<f64>()
            / sxx,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn exact_line_has_zero_width_ci() {
        // y = 1 + 2x exactly: slope 2, intercept 1, no residual, so stderr 0 and CI [2, 2].
        let f = fit_line(&[0.0, 1.0, 2.0, 3.0], &[1.0, 3.0, 5.0, 7.0], 0.95).unwrap();
        assert_eq!(f.slope, 2.0);
        assert_eq!(f.intercept, 1.0);
        assert_eq!(f.slope_stderr, 0.0);
        assert_eq!((f.slope_ci_low, f.slope_ci_high), (2.0, 2.0));
        assert_eq!(f.r_squared, 1.0);
        assert_eq!(f.points, 4);
    }

    #[test]
    fn noisy_line_hand_checked() {
        // x̄ = 2, ȳ = 2; Sxx = 4+1+0+1+4 = 10; Sxy = 4+1+0+1+6 = 12 → slope 1.2, intercept −0.4.
        // Residuals 0.4, 0.2, −1.0, −0.2, 0.6 → SSE 1.6; s² = 1.6/3; se = sqrt(s²/10) = 0.230940.
        // t(0.975, 3) = 3.182446 → half width 0.734961; SST = 16 → R² = 0.9.
        let f = fit_line(&[0., 1., 2., 3., 4.], &[0., 1., 1., 3., 5.], 0.95).unwrap();
        assert!(close(f.slope, 1.2, 1e-12));
        assert!(close(f.intercept, -0.4, 1e-12));
        assert!(close(f.slope_stderr, 0.230_940, 1e-6));
        assert!(close(f.t_critical, 3.182_446, 1e-5));
        assert!(close(f.slope_ci_low, 1.2 - 0.734_961, 1e-5));
        assert!(close(f.slope_ci_high, 1.2 + 0.734_961, 1e-5));
        assert!(close(f.r_squared, 0.9, 1e-12));
    }

    #[test]
    fn fit_rejects_degenerate_input() {
        assert!(fit_line(&[1.0, 2.0], &[1.0, 2.0], 0.95).is_none()); // too few points
        assert!(fit_line(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0], 0.95).is_none()); // Sxx = 0
        assert!(fit_line(&[1.0, 2.0, 3.0], &[1.0, f64::NAN, 3.0], 0.95).is_none());
        assert!(fit_line(&[1.0, 2.0, 3.0], &[1.0, 2.0], 0.95).is_none());
    }

    #[test]
    fn t_quantiles_match_tables() {
        // Standard two-sided 95 % critical values.
        for (df, t) in [
            (1.0, 12.706_205),
            (3.0, 3.182_446),
            (7.0, 2.364_624),
            (10.0, 2.228_139),
            (30.0, 2.042_272),
        ] {
            let q = student_t_quantile(0.975, df).unwrap();
            assert!(close(q, t, 1e-5), "df {df}: {q} vs {t}");
        }
        // Large df tends to the normal quantile 1.959964.
        assert!(close(
            student_t_quantile(0.975, 1e6).unwrap(),
            1.959_964,
            1e-4
        ));
        assert!(student_t_quantile(0.4, 5.0).is_none());
    }

    #[test]
    fn composite_hand_checked() {
        // Means 1..6 µs: t_mean = 21/6 = 3.5 µs → 1 / 3.5e-6 s = 285 714.2857 Rhealstones/s.
        let c = rhealstone_composite(&[
            ("task_switch", Some(1000.0)),
            ("preemption", Some(2000.0)),
            ("interrupt_response", Some(3000.0)),
            ("semaphore_shuffle", Some(4000.0)),
            ("deadlock_break", Some(5000.0)),
            ("intertask_message", Some(6000.0)),
        ])
        .unwrap();
        assert!(close(c.mean_component_ns, 3500.0, 1e-9));
        assert!(close(c.rhealstones_per_s, 285_714.285_714, 1e-3));
        assert!(c.missing.is_empty());
        // One missing: mean of the other five (1+2+4+5+6)/5 = 3.6 µs, flagged partial.
        let p = rhealstone_composite(&[
            ("task_switch", Some(1000.0)),
            ("preemption", Some(2000.0)),
            ("interrupt_response", None),
            ("semaphore_shuffle", Some(4000.0)),
            ("deadlock_break", Some(5000.0)),
            ("intertask_message", Some(6000.0)),
        ])
        .unwrap();
        assert_eq!(p.missing, vec!["interrupt_response".to_string()]);
        assert!(close(p.mean_component_ns, 3600.0, 1e-9));
        assert!(rhealstone_composite(&[("x", None)]).is_none());
    }

    fn pt(offset: i64, pdlt: u64, sys: u64) -> PdltPoint {
        PdltPoint {
            requested_offset_ns: offset.max(0) as u64,
            offset_ns: offset,
            pdlt_ns: pdlt,
            syscall_ns: sys,
            repeat: 0,
            irt_ns: None,
        }
    }

    #[test]
    fn triangles_from_synthetic_scan() {
        // A 10 µs call with one preemption point at 5 µs, baseline 2 µs, 1 µs steps:
        // offsets 0..4 → PDLT = 2 + (5 − o) µs (7,6,5,4,3); offsets 5..9 → 2 + (10 − o) µs
        // (7,6,5,4,3); offsets 10..14 → baseline 2 µs. Threshold 0.5 µs, ≥ 3 points.
        let mut pts = Vec::new();
        for o in 0..15i64 {
            let pdlt = if o < 5 {
                2 + (5 - o)
            } else if o < 10 {
                2 + (10 - o)
            } else {
                2
            };
            pts.push(pt(o * 1000, pdlt as u64 * 1000, 10_000));
        }
        assert_eq!(pdlt_baseline(&pts), Some(2000)); // offsets 11..14 lie after the call
        let t = pdlt_triangles(&pts, 2000, 500, 3);
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t[0].start_offset_ns, t[0].end_offset_ns, t[0].peak_pdlt_ns),
            (0, 4000, 7000)
        );
        assert_eq!(
            (t[1].start_offset_ns, t[1].end_offset_ns, t[1].peak_pdlt_ns),
            (5000, 9000, 7000)
        );
        assert!(close(t[0].slope, -1.0, 1e-12));
        assert!(close(t[1].slope, -1.0, 1e-12));
        // One long region with ±30 µs jitter on heights of ~500 µs stays one triangle, and a
        // point before the call (offset < 0) is ignored.
        let jit: Vec<PdltPoint> = (0..20i64)
            .map(|o| {
                let h = 2_000 + (500 - 10 * o) as u64 * 1000;
                pt(o * 10_000, if o % 2 == 0 { h + 30_000 } else { h }, 200_000)
            })
            .chain(std::iter::once(pt(-5_000, 900_000, 200_000)))
            .collect();
        let t = pdlt_triangles(&jit, 2000, 500, 3);
        assert_eq!(t.len(), 1);
        assert_eq!(
            (t[0].start_offset_ns, t[0].end_offset_ns, t[0].peak_pdlt_ns),
            (0, 190_000, 532_000)
        );
        // A lone spike (host stall) is not a triangle.
        let mut spike = pts[10..].to_vec();
        spike[2].pdlt_ns = 50_000;
        assert!(pdlt_triangles(&spike, 2000, 500, 3).is_empty());
    }

    #[test]
    fn medians() {
        assert_eq!(median_u64(&[]), None);
        assert_eq!(median_u64(&[5, 1, 3]), Some(3));
        assert_eq!(median_u64(&[4, 1, 3, 2]), Some(2));
    }
}
