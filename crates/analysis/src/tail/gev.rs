//! The generalized extreme-value distribution, its maximum-likelihood fit and profile-likelihood
//! intervals (Coles, *An Introduction to Statistical Modeling of Extreme Values*, 2001, §3.3).
//!
//! G(x) = exp(−t(x)), t(x) = (1 + ξ (x − μ)/σ)^(−1/ξ)  (ξ ≠ 0), exp(−(x − μ)/σ)  (ξ = 0).
//!
//! The fit works on standardized data (z = (x − a)/b with a, b the maxima's mean and standard
//! deviation), so the optimizer sees values of order 1 whatever the latencies' scale; the
//! log-likelihood differs by the constant n ln b, which leaves the maximum and every
//! likelihood-ratio interval unchanged. The optimizer is Nelder–Mead on (μ, ln σ, ξ): the
//! likelihood is cheap, three-dimensional, and undefined outside the support, which a
//! derivative-free simplex handles by rejecting the point (an infinite value).

/// χ²₁ 95 % quantile / 2: a profile-likelihood 95 % interval is where the negative
/// log-likelihood is within this of its minimum (Coles §2.6.6).
pub const HALF_CHI2_1_95: f64 = 3.841_458_820_694_124 / 2.0;

/// Below this |ξ| the Gumbel limit is used (the ξ ≠ 0 formulas lose precision).
const XI_ZERO: f64 = 1e-7;
/// The likelihood is unbounded for ξ ≤ −1 and the estimator irregular beyond; latencies
/// above ξ = 3 would have no finite mean of any power above 1/3.
const XI_MIN: f64 = -1.0;
const XI_MAX: f64 = 3.0;

/// μ, σ, ξ.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gev {
    pub mu: f64,
    pub sigma: f64,
    pub xi: f64,
}

impl Gev {
    /// t(x): G(x) = exp(−t). 0 above a bounded tail's end, ∞ below a heavy tail's start.
    pub fn t(&self, x: f64) -> f64 {
        let z = (x - self.mu) / self.sigma;
        if self.xi.abs() < XI_ZERO {
            return (-z).exp();
        }
        let u = 1.0 + self.xi * z;
        if u <= 0.0 {
            return if self.xi > 0.0 { f64::INFINITY } else { 0.0 };
        }
        (-u.ln() / self.xi).exp()
    }

    pub fn cdf(&self, x: f64) -> f64 {
        (-self.t(x)).exp()
    }

    /// 1 − G(x), exact for tiny values.
    pub fn sf(&self, x: f64) -> f64 {
        -(-self.t(x)).exp_m1()
    }

    /// The x with t(x) = y, i.e. G(x) = exp(−y).
    pub fn quantile_t(&self, y: f64) -> f64 {
        level_from(self.mu, self.sigma, self.xi, y)
    }

    /// A draw by inversion from a uniform u in (0, 1).
    pub fn from_uniform(&self, u: f64) -> f64 {
        self.quantile_t(-u.ln())
    }
}

fn level_from(mu: f64, sigma: f64, xi: f64, y: f64) -> f64 {
    if xi.abs() < XI_ZERO {
        mu - sigma * y.ln()
    } else {
        mu + sigma * ((-xi * y.ln()).exp() - 1.0) / xi
    }
}

/// −log-likelihood of standardized data at (μ, ln σ, ξ); ∞ outside the support or the ξ range.
pub fn nll(z: &[f64], mu: f64, ln_sigma: f64, xi: f64) -> f64 {
    if !(XI_MIN..=XI_MAX).contains(&xi) || !ln_sigma.is_finite() || !mu.is_finite() {
        return f64::INFINITY;
    }
    let inv_s = (-ln_sigma).exp();
    let mut acc = z.len() as f64 * ln_sigma;
    if xi.abs() < XI_ZERO {
        for &x in z {
            let t = (x - mu) * inv_s;
            acc += t + (-t).exp();
        }
    } else {
        let k = 1.0 + 1.0 / xi;
        for &x in z {
            let u = 1.0 + xi * (x - mu) * inv_s;
            if u <= 0.0 {
                return f64::INFINITY;
            }
            let lu = u.ln();
            acc += k * lu + (-lu / xi).exp();
        }
    }
    if acc.is_finite() {
        acc
    } else {
        f64::INFINITY
    }
}

/// Nelder–Mead minimisation (Lagarias et al. 1998 coefficients 1, 2, ½, ½). Returns the best
/// point and its value; stops when the simplex's values agree to `ftol` or after `max_evals`.
pub fn nelder_mead<const N: usize>(
    f: &mut dyn FnMut(&[f64; N]) -> f64,
    x0: [f64; N],
    step: [f64; N],
    ftol: f64,
    max_evals: usize,
) -> ([f64; N], f64) {
    let mut pts: Vec<([f64; N], f64)> = Vec::with_capacity(N + 1);
    let f0 = f(&x0);
    pts.push((x0, f0));
    for i in 0..N {
        let mut x = x0;
        x[i] += step[i];
        let mut v = f(&x);
        if !v.is_finite() {
            x[i] = x0[i] - step[i];
            v = f(&x);
        }
        pts.push((x, v));
    }
    let mut evals = N + 1;
    let cmp = |a: &([f64; N], f64), b: &([f64; N], f64)| a.1.total_cmp(&b.1);
    while evals < max_evals {
        pts.sort_by(cmp);
        let (best, worst) = (pts[0].1, pts[N].1);
        if worst.is_finite() && (worst - best).abs() <= ftol {
            break;
        }
        let mut c = [0.0; N];
        for p in &pts[..N] {
            for (ci, pi) in c.iter_mut().zip(&p.0) {
                *ci += pi / N as f64;
            }
        }
        let along = |t: f64| {
            let mut x = [0.0; N];
            for i in 0..N {
                x[i] = c[i] + t * (pts[N].0[i] - c[i]);
            }
            x
        };
        let xr = along(-1.0);
        let fr = f(&xr);
        evals += 1;
        if fr < pts[0].1 {
            let xe = along(-2.0);
            let fe = f(&xe);
            evals += 1;
            pts[N] = if fe < fr { (xe, fe) } else { (xr, fr) };
        } else if fr < pts[N - 1].1 {
            pts[N] = (xr, fr);
        } else {
            let (xc, fc) = if fr < pts[N].1 {
                let x = along(-0.5);
                (x, f(&x))
            } else {
                let x = along(0.5);
                (x, f(&x))
            };
            evals += 1;
            if fc < pts[N].1.min(fr) {
                pts[N] = (xc, fc);
            } else {
                let b = pts[0].0;
                for p in pts.iter_mut().skip(1) {
                    for (pi, bi) in p.0.iter_mut().zip(&b) {
                        *pi = bi + 0.5 * (*pi - bi);
                    }
                    p.1 = f(&p.0);
                }
                evals += N;
            }
        }
    }
    pts.sort_by(cmp);
    pts[0]
}

const FTOL: f64 = 1e-9;
const MAX_EVALS: usize = 3000;

/// The maximum-likelihood GEV of standardized data, with its −log-likelihood; None when no
/// start reaches a finite likelihood.
pub fn fit_standardized(z: &[f64]) -> Option<(Gev, f64)> {
    // Gumbel moments of standardized data (mean 0, sd 1): σ = √6/π, μ = −γσ.
    let s0 = 6f64.sqrt() / std::f64::consts::PI;
    let m0 = -0.577_215_664_9 * s0;
    let mut best: Option<([f64; 3], f64)> = None;
    for xi0 in [0.0, 0.2, -0.2] {
        let mut f = |p: &[f64; 3]| nll(z, p[0], p[1], p[2]);
        if !f(&[m0, s0.ln(), xi0]).is_finite() {
            continue;
        }
        let r = nelder_mead(&mut f, [m0, s0.ln(), xi0], [0.2, 0.2, 0.1], FTOL, MAX_EVALS);
        if best.is_none_or(|b| r.1 < b.1) {
            best = Some(r);
        }
    }
    let (p, _) = best?;
    // One restart from the optimum: the simplex may have collapsed early.
    let mut f = |p: &[f64; 3]| nll(z, p[0], p[1], p[2]);
    let (p, v) = nelder_mead(&mut f, p, [0.05, 0.05, 0.05], FTOL, MAX_EVALS);
    v.is_finite().then_some((
        Gev {
            mu: p[0],
            sigma: p[1].exp(),
            xi: p[2],
        },
        v,
    ))
}

/// A quantity whose profile-likelihood interval is wanted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Interest {
    Location,
    /// ln σ (so the search never leaves σ > 0).
    LogScale,
    Shape,
    /// The level z with t(z) = y (exceeded by a block maximum with probability 1 − e^(−y)).
    Level {
        y: f64,
    },
}

impl Interest {
    fn at_mle(self, g: &Gev) -> f64 {
        match self {
            Interest::Location => g.mu,
            Interest::LogScale => g.sigma.ln(),
            Interest::Shape => g.xi,
            Interest::Level { y } => g.quantile_t(y),
        }
    }
    /// The two nuisance parameters at the optimum.
    fn nuisance(self, g: &Gev) -> [f64; 2] {
        match self {
            Interest::Location => [g.sigma.ln(), g.xi],
            Interest::LogScale => [g.mu, g.xi],
            Interest::Shape => [g.mu, g.sigma.ln()],
            Interest::Level { .. } => [g.sigma.ln(), g.xi],
        }
    }
    /// (μ, ln σ, ξ) from the value of interest and the nuisance parameters.
    fn params(self, v: f64, a: [f64; 2]) -> (f64, f64, f64) {
        match self {
            Interest::Location => (v, a[0], a[1]),
            Interest::LogScale => (a[0], v, a[1]),
            Interest::Shape => (a[0], a[1], v),
            Interest::Level { y } => {
                let s = a[0].exp();
                // μ such that the level at y is v: v − (level at y of a GEV with μ = 0).
                (v - level_from(0.0, s, a[1], y), a[0], a[1])
            }
        }
    }
    /// The first step away from the estimate when looking for the interval's end.
    fn first_step(self, g: &Gev) -> f64 {
        match self {
            Interest::Location => 0.3 * g.sigma,
            Interest::LogScale => 0.15,
            Interest::Shape => 0.1,
            Interest::Level { y } => 0.3 * ((g.quantile_t(y) - g.mu).abs() + g.sigma),
        }
    }
}

/// The profile −log-likelihood at `v`, minimised over the nuisance parameters from `warm`
/// (updated to the new optimum when finite).
fn profile(z: &[f64], what: Interest, v: f64, warm: &mut [f64; 2]) -> f64 {
    let mut f = |a: &[f64; 2]| {
        let (m, ls, xi) = what.params(v, *a);
        nll(z, m, ls, xi)
    };
    let mut start = *warm;
    if !f(&start).is_finite() {
        // The warm start lies outside the support at this value: try the neighbourhood of
        // ξ = 0 and larger scales before giving up (the value is then outside the interval).
        let alts = [
            [warm[0], 0.0],
            [warm[0] + 0.5, warm[1]],
            [warm[0] + 0.5, 0.0],
            [warm[0] + 1.0, 0.3],
        ];
        match alts.into_iter().find(|a| f(a).is_finite()) {
            Some(a) => start = a,
            None => return f64::INFINITY,
        }
    }
    let (a, val) = nelder_mead(&mut f, start, [0.05, 0.05], FTOL, MAX_EVALS);
    if val.is_finite() {
        *warm = a;
    }
    val
}

/// The 95 % profile-likelihood interval of `what` (in standardized units), given the fit and
/// its minimum −log-likelihood. An end is None when the profile stays within the level over
/// 2^16 first steps (the data do not bound that side).
pub fn profile_interval(z: &[f64], g: &Gev, nll_hat: f64, what: Interest) -> [Option<f64>; 2] {
    let v_hat = what.at_mle(g);
    let h0 = what.first_step(g);
    let level = nll_hat + HALF_CHI2_1_95;
    let mut out = [None, None];
    for (k, dir) in [-1.0f64, 1.0].into_iter().enumerate() {
        let mut warm = what.nuisance(g);
        let mut inside = (v_hat, -HALF_CHI2_1_95);
        let mut outside = None;
        let mut h = h0;
        for _ in 0..16 {
            let v = v_hat + dir * h;
            let gv = profile(z, what, v, &mut warm) - level;
            if gv > 0.0 {
                outside = Some((v, gv));
                break;
            }
            inside = (v, gv);
            h *= 2.0;
        }
        let Some((mut b, mut fb)) = outside else {
            continue;
        };
        // Illinois regula falsi between the last inside and the first outside value;
        // bisection while the outside value is infinite (outside the support).
        let (mut a, mut fa) = inside;
        let tol = 1e-4 * h0;
        let mut side = 0i8;
        for _ in 0..40 {
            if (b - a).abs() <= tol {
                break;
            }
            let c = if fb.is_finite() {
                (a * fb - b * fa) / (fb - fa)
            } else {
                0.5 * (a + b)
            };
            let fc = profile(z, what, c, &mut warm) - level;
            if fc.abs() < 1e-6 {
                (a, b) = (c, c);
                break;
            }
            if fc > 0.0 {
                (b, fb) = (c, fc);
                if side == 1 {
                    fa *= 0.5;
                }
                side = 1;
            } else {
                (a, fa) = (c, fc);
                if side == -1 && fb.is_finite() {
                    fb *= 0.5;
                }
                side = -1;
            }
        }
        let end = 0.5 * (a + b);
        out[k] = Some(end);
    }
    out
}
