//! Special functions the comparison statistics need. Pure, deterministic. (Random draws come
//! from rand_distr over the seeded [`rtscope_model::rng::Rng`].)

/// Complementary error function, |relative error| < 1.2e-7 (Numerical Recipes `erfcc`,
/// Chebyshev fit).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let ans = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        ans
    } else {
        2.0 - ans
    }
}

/// Standard normal CDF.
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// Two-sided p-value of a standard normal statistic.
pub fn two_sided_p(z: f64) -> f64 {
    erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0)
}

/// z with P(|Z| ≤ z) = 0.99.
pub const Z_99: f64 = 2.575_829_303_548_901;

/// ln Γ(x) for x > 0, relative error ~1e-15: Stirling's series for x ≥ 15, upward recursion
/// below. Accurate enough that differences of values near 1e9 (ln C(N, n) for N ~ 1e8) keep
/// ~1e-6 absolute precision.
pub fn ln_gamma(x: f64) -> f64 {
    if x < 15.0 {
        // Γ(x) = Γ(x + k) / (x (x+1) … (x+k-1))
        let mut shift = 0.0;
        let mut y = x;
        while y < 15.0 {
            shift += y.ln();
            y += 1.0;
        }
        return ln_gamma(y) - shift;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    // Bernoulli terms B2k / (2k (2k-1) x^(2k-1)), k = 1..6
    let series = inv
        * (1.0 / 12.0
            + inv2
                * (-1.0 / 360.0
                    + inv2
                        * (1.0 / 1260.0
                            + inv2
                                * (-1.0 / 1680.0
                                    + inv2 * (1.0 / 1188.0 + inv2 * (-691.0 / 360_360.0))))));
    (x - 0.5) * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI).ln() + series
}

/// ln C(n, k).
pub fn ln_choose(n: f64, k: f64) -> f64 {
    ln_gamma(n + 1.0) - ln_gamma(k + 1.0) - ln_gamma(n - k + 1.0)
}

/// Kolmogorov distribution tail Q_KS(λ) = 2 Σ_{j≥1} (−1)^{j−1} e^{−2 j² λ²}.
pub fn kolmogorov_q(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    let mut sign = 1.0;
    for j in 1..=100 {
        let term = (-2.0 * (j * j) as f64 * lambda * lambda).exp();
        sum += sign * term;
        if term < 1e-12 {
            break;
        }
        sign = -sign;
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr::{Beta, Distribution};
    use rtscope_model::rng::Rng;

    #[test]
    fn erfc_known_values() {
        // erfc(0) = 1, erfc(1) = 0.157299207, erfc(2) = 0.004677735
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_207).abs() < 1e-7);
        assert!((erfc(2.0) - 0.004_677_735).abs() < 1e-8);
        assert!((normal_cdf(Z_99) - 0.995).abs() < 1e-6);
    }

    #[test]
    fn ln_gamma_known_values() {
        // Γ(5) = 24, Γ(0.5) = √π, ln Γ(101) = ln 100! = 363.739375555563
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
        assert!((ln_gamma(101.0) - 363.739_375_555_563).abs() < 1e-9);
        // C(10, 3) = 120
        assert!((ln_choose(10.0, 3.0).exp() - 120.0).abs() < 1e-9);
    }

    #[test]
    fn kolmogorov_known_values() {
        // Q_KS(1.36) ≈ 0.0494 (the classic 5 % critical value), Q_KS(1.63) ≈ 0.0098
        assert!((kolmogorov_q(1.36) - 0.0494).abs() < 5e-4);
        assert!((kolmogorov_q(1.63) - 0.0098).abs() < 3e-4);
    }

    #[test]
    fn beta_sampler_mean() {
        // Beta(2, 8): mean 0.2, variance 2·8/(10²·11) = 0.014545…
        let mut r = Rng::new(42);
        let beta = Beta::new(2.0, 8.0).unwrap();
        let xs: Vec<f64> = (0..20_000).map(|_| beta.sample(&mut r)).collect();
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64;
        assert!((m - 0.2).abs() < 0.005, "{m}");
        assert!((v - 0.014_545).abs() < 0.001, "{v}");
    }
}
