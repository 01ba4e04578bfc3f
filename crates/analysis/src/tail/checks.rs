//! The checks of the tail model's assumptions: the block maxima are independent (Ljung–Box),
//! identically distributed over the run (first half against second half, two-sample
//! Kolmogorov–Smirnov), and GEV-distributed as fitted (Anderson–Darling).
//!
//! Each is a standard test with a fixed level; the three together on i.i.d. GEV data fail at
//! most about 2 % + 1 % + (well under) 5 % of the time, and on the data the checks are meant
//! for — periodic interference, bursts, a tick and host stalls mixed, drift — they fail loudly.

use super::gev::Gev;
use crate::compare::special::{kolmogorov_q, ln_gamma};
use rtscope_model::tail::{TailCheck, TailCheckCode};

/// Ljung–Box and KS fail below this p-value.
pub const P_LEVEL: f64 = 0.01;

/// Anderson–Darling 5 % critical value for a fully specified distribution (Stephens 1974,
/// Table 1, case 0). With the parameters estimated from the same data the statistic is
/// smaller, so the check is conservative: it fails on a clear misfit, rarely on a good one.
pub const AD_CRITICAL: f64 = 2.492;

/// Ljung–Box portmanteau test of the maxima (in their order) up to lag h = min(10, n/5).
pub fn ljung_box(x: &[f64]) -> TailCheck {
    let n = x.len();
    let h = (n / 5).clamp(1, 10);
    let mean = x.iter().sum::<f64>() / n.max(1) as f64;
    let c0: f64 = x.iter().map(|v| (v - mean).powi(2)).sum();
    let mut q = 0.0;
    if c0 > 0.0 {
        for k in 1..=h.min(n.saturating_sub(1)) {
            let ck: f64 = (k..n).map(|i| (x[i] - mean) * (x[i - k] - mean)).sum();
            let r = ck / c0;
            q += r * r / (n - k) as f64;
        }
        q *= (n * (n + 2)) as f64;
    }
    let p = chi2_sf(q, h as f64);
    TailCheck {
        code: TailCheckCode::Independence,
        statistic: q,
        p_value: Some(p),
        threshold: P_LEVEL,
        passed: p >= P_LEVEL,
    }
}

/// Two-sample Kolmogorov–Smirnov of the first half of the maxima against the second.
pub fn halves_ks(x: &[f64]) -> TailCheck {
    let mid = x.len() / 2;
    let mut a = x[..mid].to_vec();
    let mut b = x[mid..].to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0usize, 0usize, 0.0f64);
    while i < a.len() && j < b.len() {
        let v = a[i].min(b[j]);
        while i < a.len() && a[i] <= v {
            i += 1;
        }
        while j < b.len() && b[j] <= v {
            j += 1;
        }
        d = d.max((i as f64 / na - j as f64 / nb).abs());
    }
    let ne = if na + nb > 0.0 {
        na * nb / (na + nb)
    } else {
        0.0
    };
    let sq = ne.sqrt();
    // Numerical Recipes' small-sample correction of the asymptotic distribution.
    let p = if ne > 0.0 {
        kolmogorov_q((sq + 0.12 + 0.11 / sq) * d)
    } else {
        1.0
    };
    TailCheck {
        code: TailCheckCode::Stationarity,
        statistic: d,
        p_value: Some(p),
        threshold: P_LEVEL,
        passed: p >= P_LEVEL,
    }
}

/// Anderson–Darling statistic of the maxima against the fitted GEV.
pub fn anderson_darling(x: &[f64], g: &Gev) -> TailCheck {
    let mut u: Vec<f64> = x
        .iter()
        .map(|&v| g.cdf(v).clamp(1e-300, 1.0 - 1e-16))
        .collect();
    u.sort_by(f64::total_cmp);
    let n = u.len();
    let mut s = 0.0;
    for i in 0..n {
        let w = (2 * i + 1) as f64;
        s += w * (u[i].ln() + (-u[n - 1 - i]).ln_1p());
    }
    let a2 = -(n as f64) - s / n.max(1) as f64;
    TailCheck {
        code: TailCheckCode::GoodnessOfFit,
        statistic: a2,
        p_value: None,
        threshold: AD_CRITICAL,
        passed: a2 <= AD_CRITICAL,
    }
}

/// P(χ²_k > q): the regularized upper incomplete gamma Q(k/2, q/2).
pub fn chi2_sf(q: f64, k: f64) -> f64 {
    if q <= 0.0 {
        return 1.0;
    }
    gamma_q(0.5 * k, 0.5 * q)
}

/// Regularized upper incomplete gamma Q(a, x): the series for P below x < a + 1, Lentz's
/// continued fraction above (Numerical Recipes §6.2).
pub fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let lg = ln_gamma(a);
    if x < a + 1.0 {
        let (mut ap, mut sum, mut del) = (a, 1.0 / a, 1.0 / a);
        for _ in 0..1000 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-15 {
                break;
            }
        }
        (1.0 - sum * (-x + a * x.ln() - lg).exp()).clamp(0.0, 1.0)
    } else {
        const TINY: f64 = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / TINY;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..1000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < TINY {
                d = TINY;
            }
            c = b + an / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-15 {
                break;
            }
        }
        ((-x + a * x.ln() - lg).exp() * h).clamp(0.0, 1.0)
    }
}
