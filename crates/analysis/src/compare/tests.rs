//! Hand-checked fixtures: the arithmetic is in the comments.
use super::*;

fn hist(xs: &[u64]) -> Histogram {
    let mut h = Histogram::new();
    for &x in xs {
        h.record(x);
    }
    h
}

#[test]
fn mann_whitney_separated() {
    // base {1,2,3}, cand {4,5,6}: every cand sample beats every base sample: U = 3·3 = 9,
    // A = 1. No ties (Σ t³−t = 0): σ² = 3·3/12 · 7 = 5.25, z = (9 − 4.5)/√5.25 = 1.96396,
    // p = erfc(1.96396/√2) = 0.04953.
    let m = mann_whitney(&hist(&[1, 2, 3]), &hist(&[4, 5, 6])).unwrap();
    assert_eq!(m.u, 9.0);
    assert_eq!(m.a, 1.0);
    assert!((m.z - 1.963_961).abs() < 1e-5, "{}", m.z);
    assert!((m.p_value - 0.049_53).abs() < 1e-4, "{}", m.p_value);
}

#[test]
fn mann_whitney_with_ties() {
    // base {1,1,2}, cand {1,2,2}. Value 1: a=2, b=1 → U += 1·(0 + ½·2) = 1;
    // value 2: a=1, b=2 → U += 2·(2 + ½·1) = 5. U = 6, A = 6/9 = 0.6667.
    // Ties: t=3 at both values → Σ(t³−t) = 48; N = 6: σ² = 9/12·(7 − 48/30) = 4.05,
    // z = 1.5/√4.05 = 0.745356, p = 2(1 − Φ(0.745356)) = 0.45606.
    let m = mann_whitney(&hist(&[1, 1, 2]), &hist(&[1, 2, 2])).unwrap();
    assert_eq!(m.u, 6.0);
    assert!((m.a - 2.0 / 3.0).abs() < 1e-12);
    assert!((m.z - 0.745_356).abs() < 1e-5);
    assert!((m.p_value - 0.456_06).abs() < 1e-4, "{}", m.p_value);
    // Symmetry: swapping the sides mirrors A.
    let r = mann_whitney(&hist(&[1, 2, 2]), &hist(&[1, 1, 2])).unwrap();
    assert!((r.a - 1.0 / 3.0).abs() < 1e-12);
}

#[test]
fn ks_separated() {
    // D = 1. nₑ = 9/6 = 1.5, √nₑ = 1.224745, λ = (1.224745 + 0.12 + 0.11/1.224745)·1 = 1.434560,
    // Q = 2(e^{−2λ²} − e^{−8λ²} + …) = 2(0.016330 − 7.1e−8) = 0.03266.
    let k = kolmogorov_smirnov(&hist(&[1, 2, 3]), &hist(&[4, 5, 6])).unwrap();
    assert_eq!(k.d, 1.0);
    assert!((k.p_value - 0.032_66).abs() < 2e-4, "{}", k.p_value);
    // Identical distributions: D = 0, p = 1.
    let k = kolmogorov_smirnov(&hist(&[1, 2, 3]), &hist(&[3, 2, 1])).unwrap();
    assert_eq!((k.d, k.p_value), (0.0, 1.0));
}

#[test]
fn max_subsampling_is_hypergeometric() {
    // Baseline 1..=10 (N = 10), candidate {1, 2, 10} (n = 3): the baseline is subsampled to 3.
    // P(M ≤ 8) = C(8,3)/C(10,3) = 56/120 = 0.4667; P(M ≤ 9) = 84/120 = 0.7 → median M = 9.
    // Candidate max 10: P(M ≥ 10) = 1 − P(M ≤ 9) = 0.3; P(M ≤ 10) = 1.
    let base = hist(&(1..=10).collect::<Vec<_>>());
    let cand = hist(&[1, 2, 10]);
    let m = max_at_equal_count(&base, &cand, 0.01).unwrap();
    assert_eq!(m.samples, 3);
    assert_eq!(m.subsampled, "baseline");
    assert_eq!(m.subsampled_max_median_ns, Some(9));
    assert!((m.p_subsampled_ge_other.unwrap() - 0.3).abs() < 1e-9);
    assert!((m.p_subsampled_le_other.unwrap() - 1.0).abs() < 1e-12);
    assert_eq!(m.direction, 0, "0.3 is no evidence");
    // P(M ≤ 2) = C(2,3) = 0 → the low quantile of M is 3 (P(M ≤ 3) = 1/120 = 0.0083 ≥ 0.005).
    assert_eq!(m.subsampled_max_range99_ns, Some((3, 10)));
}

#[test]
fn max_of_a_long_clean_run_vs_short_spiky_run() {
    // Baseline: 100 000 samples at 1..=1000 ns (100 each). Candidate: 100 samples of which one
    // is 5000 ns. Subsampled to 100, the baseline's max is ≤ 1000 for sure: P(M ≥ 5000) = 0
    // → the candidate's max is significantly higher.
    let mut base = Histogram::new();
    for v in 1..=1000u64 {
        base.record_n(v, 100);
    }
    let mut cand = Histogram::new();
    cand.record_n(500, 99);
    cand.record(5000);
    let m = max_at_equal_count(&base, &cand, 0.01).unwrap();
    assert_eq!(m.direction, 1);
    assert_eq!(m.p_subsampled_ge_other, Some(0.0));
    // Median of the max of 100 draws from 1..1000 (without replacement): P(M ≤ v) ≈ (v/1000)^100
    // = 0.5 → v ≈ 1000·0.5^(1/100) = 993.1 → 994 (the first value reaching 0.5; exact
    // hypergeometric is within one value of that).
    let med = m.subsampled_max_median_ns.unwrap();
    assert!((993..=994).contains(&med), "{med}");
}

#[test]
fn quantile_ci_matches_order_statistic_theory() {
    // 10 000 samples, 10 at each of 1..=1000 ns. p99 = 990. The rank of the resample's p99 has
    // sd √(n q (1−q)) = √(10000·0.99·0.01) = 9.95 ranks ≈ 1 ns per 10 ranks → 99 % CI ≈
    // 990 ± 2.576·1.0 ≈ [987, 993].
    let mut h = Histogram::new();
    for v in 1..=1000u64 {
        h.record_n(v, 10);
    }
    let (lo, hi) = quantile_ci99(&h, 0.99, 4000, 7).unwrap();
    assert!((985.0..=989.0).contains(&lo), "{lo}");
    assert!((991.0..=995.0).contains(&hi), "{hi}");
    // Reproducible for a seed.
    assert_eq!(quantile_ci99(&h, 0.99, 4000, 7), Some((lo, hi)));
}

#[test]
fn mean_ci_hand_checked() {
    // {1000,2000,3000,4000}: mean 2500, population σ = 1118.034; half-width
    // 2.575829·1118.034/√4 = 1439.93.
    let (lo, hi) = mean_ci99(&hist(&[1000, 2000, 3000, 4000])).unwrap();
    assert!((lo - (2500.0 - 1439.93)).abs() < 0.01);
    assert!((hi - (2500.0 + 1439.93)).abs() < 0.01);
}

fn shifted(n: u64, offset: u64) -> Histogram {
    // n samples spread evenly over 1000..1999 ns, plus `offset`.
    let mut h = Histogram::new();
    for i in 0..n {
        h.record(1000 + offset + i % 1000);
    }
    h
}

#[test]
fn verdicts() {
    let o = Options::default();
    // Same distribution: no change.
    let c = compare(&shifted(20_000, 0), &shifted(20_000, 0), &o);
    assert_eq!(c.verdict, Verdict::NoSignificantChange, "{:?}", c.reasons);
    assert!(c.regression(Metric::P99, 1.0).is_none());
    // +200 ns on a 1000-ns-wide uniform: A = 0.5 + 0.2 − 0.02 = 0.68 → worse.
    let c = compare(&shifted(20_000, 0), &shifted(20_000, 200), &o);
    assert_eq!(c.verdict, Verdict::Worse, "{:?}", c.reasons);
    let a = c.mann_whitney.as_ref().unwrap().a;
    assert!((a - 0.68).abs() < 0.001, "{a}");
    // p99 1989 → 2189: +10.06 %, significant: a 5 % threshold trips, a 20 % one does not.
    assert!(c.regression(Metric::P99, 5.0).is_some());
    assert!(c.regression(Metric::P99, 20.0).is_none());
    // The other way round: better, and no regression at any threshold.
    let c = compare(&shifted(20_000, 200), &shifted(20_000, 0), &o);
    assert_eq!(c.verdict, Verdict::Better);
    assert!(c.regression(Metric::Avg, 0.0).is_none());
    // A tiny shift (+2 ns of 1000): significant with many samples, but negligible effect.
    let c = compare(&shifted(200_000, 0), &shifted(200_000, 2), &o);
    assert_eq!(c.verdict, Verdict::NoSignificantChange, "{:?}", c.reasons);
}

#[test]
fn empty_runs_do_not_panic() {
    let e = Histogram::new();
    let c = compare(&e, &hist(&[1, 2]), &Options::default());
    assert_eq!(c.verdict, Verdict::NoSignificantChange);
    assert!(c.mann_whitney.is_none() && c.max_at_equal_count.is_none());
}
