//! Task-set generation (Lelli 2014 §2.3 and §3.5.1): utilisations by randfixedsum (Stafford 2006,
//! as used by Emberson, Stafford & Davis, WATERS 2010) or UUniFast-discard (Davis & Burns 2009),
//! periods log-uniform in [Tmin, Tmax] or drawn from a set, optional C_min rescaling, implicit
//! or constrained deadlines. Pure: the caller passes the seed; ChaCha8 streams make a set
//! reproducible from (seed, index) on any machine.

use super::field::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rtscope_model::taskset::{GenInfo, Task, TaskSet};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    RandFixedSum,
    UUniFastDiscard,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::RandFixedSum => "randfixedsum",
            Method::UUniFastDiscard => "uunifast-discard",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct GenParams {
    pub n: u32,
    pub utilisation: f64,
    pub method: Method,
    pub tmin_ns: u64,
    pub tmax_ns: u64,
    /// Non-empty: periods drawn uniformly from this set instead of log-uniform.
    pub period_set_ns: Vec<u64>,
    pub granularity_ns: u64,
    pub cmin_ns: Option<u64>,
    pub umax: f64,
    pub constrained: bool,
    pub dmin_frac: f64,
    pub seed: u64,
    pub index: u32,
}

impl Default for GenParams {
    fn default() -> Self {
        GenParams {
            n: 6,
            utilisation: 1.0,
            method: Method::RandFixedSum,
            tmin_ns: 10_000_000,
            tmax_ns: 100_000_000,
            period_set_ns: Vec::new(),
            granularity_ns: 100_000,
            cmin_ns: None,
            umax: 1.0,
            constrained: false,
            dmin_frac: 0.5,
            seed: 1,
            index: 0,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum GenError {
    #[error("{0}")]
    Invalid(String),
    #[error("UUniFast-discard: no set with every U_i ≤ {umax} after {tries} tries (U = {u}, n = {n}); use randfixedsum")]
    Discarded {
        tries: u32,
        u: f64,
        n: u32,
        umax: f64,
    },
}

/// Reject infeasible parameters before drawing anything; messages name the option.
pub fn validate(p: &GenParams) -> Result<(), GenError> {
    let bad = |s: String| Err(GenError::Invalid(s));
    if p.n < 1 || p.n > 10_000 {
        return bad(format!(
            "-n: number of tasks must be 1..=10000, got {}",
            p.n
        ));
    }
    if !(p.utilisation > 0.0 && p.utilisation.is_finite()) {
        return bad(format!(
            "{UTILISATION}: utilisation must be > 0, got {}",
            p.utilisation
        ));
    }
    if !(p.umax > 0.0 && p.umax <= 1.0) {
        return bad(format!(
            "{UMAX}: per-task utilisation cap must be in (0, 1], got {}",
            p.umax
        ));
    }
    if p.utilisation > p.n as f64 * p.umax + 1e-12 {
        return bad(format!(
            "{UTILISATION}: U = {} cannot be split into {} tasks of U_i ≤ {} (max {})",
            p.utilisation,
            p.n,
            p.umax,
            p.n as f64 * p.umax
        ));
    }
    if p.period_set_ns.is_empty() {
        if p.tmin_ns == 0 || p.tmin_ns > p.tmax_ns {
            return bad(format!(
                "{TMIN}/{TMAX}: need 0 < Tmin ≤ Tmax, got Tmin = {} µs, Tmax = {} µs",
                p.tmin_ns / 1000,
                p.tmax_ns / 1000
            ));
        }
    } else if p.period_set_ns.contains(&0) {
        return bad(format!("{PERIODS}: every period must be > 0"));
    }
    if p.granularity_ns == 0 {
        return bad(format!("{PERIOD_GRAN}: must be ≥ 1"));
    }
    if !(0.0..=1.0).contains(&p.dmin_frac) {
        return bad(format!(
            "{DMIN_FRAC}: must be in [0, 1], got {}",
            p.dmin_frac
        ));
    }
    if let Some(cmin) = p.cmin_ns {
        let tmin = p.period_set_ns.iter().copied().min().unwrap_or(p.tmin_ns);
        // Every task gets C_min on top of its scaled share: n·C_min/T_min must leave room.
        if p.n as f64 * cmin as f64 / tmin as f64 >= p.utilisation {
            return bad(format!(
                "{CMIN}: n·C_min/T_min = {}·{}/{} ≥ U = {}: C_min leaves no utilisation to share",
                p.n, cmin, tmin, p.utilisation
            ));
        }
        if cmin as f64 / tmin as f64 > p.umax {
            return bad(format!("{CMIN}: C_min/T_min exceeds {UMAX}"));
        }
    }
    Ok(())
}

/// Stafford's randfixedsum (2006): n values in [a, b] with sum s, uniformly distributed over
/// that slice of the hypercube (exact, no rejection). Direct transcription of the published
/// MATLAB algorithm (for one vector), with 1-based arrays kept for clarity.
pub fn randfixedsum<R: Rng + ?Sized>(n: usize, s: f64, a: f64, b: f64, rng: &mut R) -> Vec<f64> {
    assert!(n >= 1 && b > a && s >= n as f64 * a && s <= n as f64 * b);
    if n == 1 {
        return vec![s];
    }
    let nf = n as f64;
    // Rescale to the unit cube.
    let mut s = (s - nf * a) / (b - a);
    let k = (s.floor() as i64).clamp(0, n as i64 - 1);
    let kf = k as f64;
    s = s.clamp(kf, kf + 1.0);
    // s1(i) = s − (k − i + 1), s2(i) = (k + n − i + 1) − s, i = 1..n.
    let s1: Vec<f64> = (0..=n).map(|i| s - (kf - i as f64 + 1.0)).collect();
    let s2: Vec<f64> = (0..=n).map(|i| (kf + nf - i as f64 + 1.0) - s).collect();
    let realmax = 1e300;
    let tiny = f64::from_bits(1); // 2^-1074
                                  // w: n × (n+1), t: (n−1) × n, 1-based.
    let mut w = vec![vec![0.0f64; n + 2]; n + 1];
    let mut t = vec![vec![0.0f64; n + 1]; n];
    w[1][2] = realmax;
    for i in 2..=n {
        let fi = i as f64;
        for c in 1..=i {
            let tmp1 = w[i - 1][c + 1] * s1[c] / fi;
            let tmp2 = w[i - 1][c] * s2[n - i + c] / fi;
            w[i][c + 1] = tmp1 + tmp2;
            let tmp3 = w[i][c + 1] + tiny;
            let tmp4 = s2[n - i + c] > s1[c];
            t[i - 1][c] = if tmp4 { tmp2 / tmp3 } else { 1.0 - tmp1 / tmp3 };
        }
    }
    let mut x = vec![0.0f64; n + 1];
    let mut j = (k + 1) as usize;
    let mut sm = 0.0;
    let mut pr = 1.0;
    let mut sv = s;
    for i in (1..n).rev() {
        let rt: f64 = rng.gen();
        let rs: f64 = rng.gen();
        let e = if rt <= t[i][j] { 1.0 } else { 0.0 };
        let sx = rs.powf(1.0 / i as f64);
        sm += (1.0 - sx) * pr * sv / (i as f64 + 1.0);
        pr *= sx;
        x[n - i] = sm + pr * e;
        sv -= e;
        if e > 0.0 {
            j -= 1;
        }
    }
    x[n] = sm + pr * sv;
    let mut out: Vec<f64> = x[1..].iter().map(|v| (b - a) * v + a).collect();
    // Random permutation (the algorithm's coordinates are not exchangeable before it).
    for i in (1..out.len()).rev() {
        let r = rng.gen_range(0..=i);
        out.swap(i, r);
    }
    out
}

/// UUniFast (Bini & Buttazzo 2005) with discard of any vector holding a U_i > umax (Davis &
/// Burns 2009). None after `max_tries` rejections.
pub fn uunifast_discard<R: Rng + ?Sized>(
    n: usize,
    u: f64,
    umax: f64,
    max_tries: u32,
    rng: &mut R,
) -> Option<Vec<f64>> {
    for _ in 0..max_tries {
        let mut v = Vec::with_capacity(n);
        let mut sum = u;
        for i in 1..n {
            let r: f64 = rng.gen();
            let next = sum * r.powf(1.0 / (n - i) as f64);
            v.push(sum - next);
            sum = next;
        }
        v.push(sum);
        if v.iter().all(|&x| x <= umax) {
            return Some(v);
        }
    }
    None
}

/// Log-uniform in [lo, hi]: ln T uniform in [ln lo, ln hi].
pub fn log_uniform<R: Rng + ?Sized>(lo: f64, hi: f64, rng: &mut R) -> f64 {
    if hi <= lo {
        return lo;
    }
    let r: f64 = rng.gen();
    (lo.ln() + r * (hi.ln() - lo.ln())).exp()
}

/// The RNG of set `index` of a batch seeded with `seed`.
pub fn rng_for(seed: u64, index: u32) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(index as u64);
    r
}

/// Generate one task set. Periods are drawn first so that C_min rescaling can land exactly on
/// U: utilisations are drawn with total U' = U − Σ C_min/T_i, then C_i = U'_i·T_i + C_min
/// (the thesis subtracts the bound C_min/T_min instead, which undershoots U slightly).
pub fn generate(p: &GenParams) -> Result<TaskSet, GenError> {
    validate(p)?;
    let mut rng = rng_for(p.seed, p.index);
    let n = p.n as usize;
    let gran = p.granularity_ns;
    let periods: Vec<u64> = (0..n)
        .map(|_| {
            if p.period_set_ns.is_empty() {
                let t = log_uniform(p.tmin_ns as f64, p.tmax_ns as f64, &mut rng);
                let r = ((t / gran as f64).round() as u64 * gran).clamp(p.tmin_ns, p.tmax_ns);
                r.max(1)
            } else {
                p.period_set_ns[rng.gen_range(0..p.period_set_ns.len())]
            }
        })
        .collect();
    let cmin = p.cmin_ns.unwrap_or(0) as f64;
    let reserve: f64 = periods.iter().map(|&t| cmin / t as f64).sum();
    let share = p.utilisation - reserve;
    if share <= 0.0 {
        return Err(GenError::Invalid(format!(
            "{CMIN}: Σ C_min/T_i = {reserve:.4} ≥ U = {}",
            p.utilisation
        )));
    }
    // Per-task cap of the shared part (U'_i ≤ umax − C_min/T_min keeps every U_i ≤ umax).
    let tmin = periods.iter().copied().min().unwrap_or(1) as f64;
    let cap = (p.umax - cmin / tmin).min(share);
    if share > cap * n as f64 + 1e-12 {
        return Err(GenError::Invalid(format!(
            "{UTILISATION}: after C_min rescaling U' = {share:.4} exceeds n·(umax − C_min/T_min) = {:.4}",
            cap * n as f64
        )));
    }
    let utils = match p.method {
        Method::RandFixedSum => randfixedsum(n, share, 0.0, cap, &mut rng),
        Method::UUniFastDiscard => {
            const TRIES: u32 = 100_000;
            uunifast_discard(n, share, cap, TRIES, &mut rng).ok_or(GenError::Discarded {
                tries: TRIES,
                u: p.utilisation,
                n: p.n,
                umax: p.umax,
            })?
        }
    };
    let mut tasks = Vec::with_capacity(n);
    for (i, (&u, &t)) in utils.iter().zip(&periods).enumerate() {
        let c = ((u * t as f64 + cmin).round() as u64).clamp(1, t);
        let d = if p.constrained {
            let f: f64 = rng.gen_range(p.dmin_frac..=1.0);
            (c as f64 + f * (t - c) as f64).round() as u64
        } else {
            t
        };
        tasks.push(Task {
            id: i as u32,
            wcet_ns: c,
            period_ns: t,
            deadline_ns: d.clamp(c, t),
            wss_bytes: None,
            name: None,
        });
    }
    Ok(TaskSet {
        schema_version: rtscope_model::SCHEMA_VERSION,
        tasks,
        generated: Some(GenInfo {
            method: p.method.name().into(),
            n: p.n,
            target_utilisation: p.utilisation,
            seed: p.seed,
            index: p.index,
            tmin_ns: p.tmin_ns,
            tmax_ns: p.tmax_ns,
            period_set_ns: p.period_set_ns.clone(),
            period_granularity_ns: gran,
            cmin_ns: p.cmin_ns,
            umax: p.umax,
            deadlines: if p.constrained {
                "constrained"
            } else {
                "implicit"
            }
            .into(),
            dmin_frac: p.dmin_frac,
        }),
    })
}

/// Check a loaded set: C ≥ 1, C ≤ D ≤ T, T > 0; names the task.
pub fn check_set(set: &TaskSet) -> Result<(), GenError> {
    if set.tasks.is_empty() {
        return Err(GenError::Invalid(
            "task set: needs at least one task (N ≥ 1)".into(),
        ));
    }
    for t in &set.tasks {
        if t.period_ns == 0 || t.wcet_ns == 0 {
            return Err(GenError::Invalid(format!(
                "task {}: C and T must be > 0 (C = {} ns, T = {} ns)",
                t.id, t.wcet_ns, t.period_ns
            )));
        }
        if t.wcet_ns > t.deadline_ns {
            return Err(GenError::Invalid(format!(
                "task {}: C = {} ns > D = {} ns: infeasible",
                t.id, t.wcet_ns, t.deadline_ns
            )));
        }
        if t.deadline_ns > t.period_ns {
            return Err(GenError::Invalid(format!(
                "task {}: D = {} ns > T = {} ns: only constrained deadlines (D ≤ T) are supported",
                t.id, t.deadline_ns, t.period_ns
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two-sample Kolmogorov–Smirnov statistic.
    fn ks2(a: &mut [f64], b: &mut [f64]) -> f64 {
        a.sort_by(f64::total_cmp);
        b.sort_by(f64::total_cmp);
        let (mut i, mut j, mut d) = (0usize, 0usize, 0f64);
        while i < a.len() && j < b.len() {
            if a[i] <= b[j] {
                i += 1;
            } else {
                j += 1;
            }
            d = d.max((i as f64 / a.len() as f64 - j as f64 / b.len() as f64).abs());
        }
        d
    }

    #[test]
    fn randfixedsum_sum_and_bounds_exact() {
        let mut rng = rng_for(7, 0);
        for &(n, s) in &[(2usize, 0.3), (5, 2.5), (10, 9.7), (24, 3.3), (3, 1.0)] {
            for _ in 0..200 {
                let v = randfixedsum(n, s, 0.0, 1.0, &mut rng);
                assert_eq!(v.len(), n);
                assert!((v.iter().sum::<f64>() - s).abs() < 1e-9, "sum for n={n}");
                assert!(v.iter().all(|&x| (-1e-12..=1.0 + 1e-12).contains(&x)));
            }
        }
    }

    #[test]
    fn randfixedsum_uniform_on_simplex() {
        // For n = 3, s = 1 the slice is the standard simplex (the cube bound is not active) and a
        // uniform point has marginal CDF F(x) = 1 − (1 − x)^2 (Beta(1, 2)). One-sample KS with
        // 20 000 draws: the 0.1 % critical value is 1.95/√20000 = 0.0138.
        let mut rng = rng_for(11, 0);
        let m = 20_000;
        let mut xs: Vec<f64> = (0..m)
            .map(|_| randfixedsum(3, 1.0, 0.0, 1.0, &mut rng)[0])
            .collect();
        xs.sort_by(f64::total_cmp);
        let d = xs
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = 1.0 - (1.0 - x).powi(2);
                (f - i as f64 / m as f64)
                    .abs()
                    .max((f - (i + 1) as f64 / m as f64).abs())
            })
            .fold(0.0, f64::max);
        assert!(d < 0.0138, "KS D = {d}");
    }

    #[test]
    fn randfixedsum_matches_rejection_sampler_when_cube_bound_active() {
        // n = 4, s = 2.2: the cap x ≤ 1 cuts the simplex. Reference: uniform on the simplex
        // (sorted-uniform spacings × s) conditioned on every x ≤ 1, by rejection — exactly uniform
        // on the same slice. Two-sample KS on the first coordinate and on the max, 8 000 each:
        // 0.1 % critical value 1.95·√(2/8000) = 0.0308.
        let mut rng = rng_for(3, 1);
        let m = 8_000;
        let (n, s) = (4usize, 2.2);
        let mut a0 = Vec::new();
        let mut amax = Vec::new();
        for _ in 0..m {
            let v = randfixedsum(n, s, 0.0, 1.0, &mut rng);
            a0.push(v[0]);
            amax.push(v.iter().copied().fold(0.0, f64::max));
        }
        let mut b0 = Vec::new();
        let mut bmax = Vec::new();
        while b0.len() < m {
            let mut cuts: Vec<f64> = (0..n - 1).map(|_| rng.gen::<f64>()).collect();
            cuts.push(0.0);
            cuts.push(1.0);
            cuts.sort_by(f64::total_cmp);
            let v: Vec<f64> = cuts.windows(2).map(|w| (w[1] - w[0]) * s).collect();
            if v.iter().all(|&x| x <= 1.0) {
                b0.push(v[0]);
                bmax.push(v.iter().copied().fold(0.0, f64::max));
            }
        }
        let d0 = ks2(&mut a0, &mut b0);
        let dm = ks2(&mut amax, &mut bmax);
        assert!(d0 < 0.0308, "KS first coordinate D = {d0}");
        assert!(dm < 0.0308, "KS max D = {dm}");
    }

    #[test]
    fn uunifast_discard_respects_cap_and_sum() {
        let mut rng = rng_for(5, 0);
        let v = uunifast_discard(8, 3.0, 0.6, 10_000, &mut rng).expect("feasible");
        assert!((v.iter().sum::<f64>() - 3.0).abs() < 1e-9);
        assert!(v.iter().all(|&x| x <= 0.6));
        // Σ = 3.9 in 4 tasks of ≤ 0.9 is infeasible: always discarded.
        assert!(uunifast_discard(4, 3.9, 0.9, 1000, &mut rng).is_none());
    }

    #[test]
    fn uunifast_is_uniform_on_simplex_too() {
        // Same Beta(1, 2) marginal as above for n = 3, U = 1 (no discard).
        let mut rng = rng_for(13, 0);
        let m = 20_000;
        let mut a: Vec<f64> = (0..m)
            .map(|_| uunifast_discard(3, 1.0, 1.0, 1, &mut rng).unwrap()[2])
            .collect();
        let mut b: Vec<f64> = (0..m)
            .map(|_| randfixedsum(3, 1.0, 0.0, 1.0, &mut rng)[0])
            .collect();
        // two-sample, 0.1 %: 1.95·√(2/20000) = 0.0195
        assert!(ks2(&mut a, &mut b) < 0.0195);
    }

    #[test]
    fn log_uniform_periods() {
        // ln T uniform: P(T ≤ √(Tmin·Tmax)) = 1/2; for [10, 100] ms the geometric mean is 31.62 ms.
        let mut rng = rng_for(17, 0);
        let m = 20_000;
        let below = (0..m)
            .filter(|_| log_uniform(10.0, 100.0, &mut rng) <= 31.6227766)
            .count();
        let frac = below as f64 / m as f64;
        // σ = √(0.25/20000) = 0.0035; 4σ = 0.014.
        assert!((frac - 0.5).abs() < 0.014, "{frac}");
    }

    #[test]
    fn generate_is_reproducible_and_exact() {
        let p = GenParams {
            n: 8,
            utilisation: 1.6,
            seed: 42,
            ..Default::default()
        };
        let a = generate(&p).unwrap();
        let b = generate(&p).unwrap();
        assert_eq!(a, b);
        let c = generate(&GenParams {
            index: 1,
            ..p.clone()
        })
        .unwrap();
        assert_ne!(a, c);
        // C rounded to ns: U within n·0.5 ns/Tmin = 8·0.5/1e7 of the target.
        assert!((a.utilisation() - 1.6).abs() < 1e-6);
        for t in &a.tasks {
            assert!(t.period_ns >= 10_000_000 && t.period_ns <= 100_000_000);
            assert_eq!(t.period_ns % 100_000, 0);
            assert_eq!(t.deadline_ns, t.period_ns);
        }
    }

    #[test]
    fn cmin_rescaling_and_constrained_deadlines() {
        let p = GenParams {
            n: 20,
            utilisation: 1.2,
            cmin_ns: Some(50_000),
            constrained: true,
            dmin_frac: 0.5,
            seed: 9,
            ..Default::default()
        };
        let s = generate(&p).unwrap();
        assert!((s.utilisation() - 1.2).abs() < 1e-5);
        for t in &s.tasks {
            assert!(t.wcet_ns >= 50_000);
            // D ∈ [C + 0.5(T − C), T]
            assert!(t.deadline_ns <= t.period_ns);
            assert!(
                t.deadline_ns as f64
                    >= t.wcet_ns as f64 + 0.5 * (t.period_ns - t.wcet_ns) as f64 - 1.0
            );
        }
    }

    #[test]
    fn bad_parameters_rejected() {
        let d = GenParams::default();
        assert!(validate(&GenParams { n: 0, ..d.clone() }).is_err());
        assert!(validate(&GenParams {
            utilisation: 7.0,
            n: 6,
            ..d.clone()
        })
        .is_err());
        assert!(validate(&GenParams {
            tmin_ns: 200_000_000,
            ..d.clone()
        })
        .is_err());
        // 6 tasks × 5 ms / 10 ms = 3.0 ≥ U = 1 → C_min leaves nothing.
        assert!(validate(&GenParams {
            cmin_ns: Some(5_000_000),
            ..d.clone()
        })
        .is_err());
        let mut set = generate(&d).unwrap();
        set.tasks[0].wcet_ns = set.tasks[0].deadline_ns + 1;
        assert!(check_set(&set).unwrap_err().to_string().contains("C = "));
    }
}
