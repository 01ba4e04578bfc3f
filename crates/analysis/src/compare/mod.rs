//! Statistics for comparing latency runs, computed on the exact histograms (no sample lists).
//!
//! * Distribution shift: Mann–Whitney U with tie correction (normal approximation) and its
//!   effect size A = P(candidate > baseline) + ½ P(equal) (Vargha & Delaney's A), plus the
//!   two-sample Kolmogorov–Smirnov D. With millions of samples any shift is "significant", so a
//!   verdict also needs a non-negligible effect (|A − ½| ≥ 0.06, Vargha–Delaney's "small").
//! * Percentiles: bootstrap confidence intervals. The bootstrap distribution of a sample
//!   quantile is known in closed form — the resample's r-th order statistic is the empirical
//!   quantile at U ~ Beta(r, n − r + 1) — so each bootstrap draw is one Beta draw and one
//!   lookup, not a resample of n values. Exactly the ordinary bootstrap, at any n.
//! * Maxima: only comparable at equal sample counts (the maximum grows with n). The larger run
//!   is subsampled to the smaller run's count, as Feather-Trace's tools do; instead of drawing
//!   random subsets we use the exact distribution of a random n-subset's maximum,
//!   P(M ≤ v) = C(c(v), n) / C(N, n) with c(v) the count ≤ v (hypergeometric).
//! * Mean: CLT interval from the exact sums (z₀.₉₉₅ · σ / √n); Welch interval for differences.
//!
//! Caveat printed with every comparison: latency samples of one run are autocorrelated (a host
//! stall hits consecutive samples), so the i.i.d. p-values overstate certainty; effect sizes and
//! repetitions across runs are the guard.

pub mod special;

use rand_distr::{Beta, Distribution};
use rtscope_model::rng::Rng;
use rtscope_model::Histogram;
use serde::Serialize;
use special::{kolmogorov_q, ln_choose, two_sided_p, Z_99};

/// Empirical distribution as (value, cumulative count), ascending.
struct Cdf {
    vals: Vec<u64>,
    cum: Vec<u64>,
    n: u64,
    max: u64,
}

impl Cdf {
    fn of(h: &Histogram) -> Cdf {
        let mut vals = Vec::new();
        let mut cum = Vec::new();
        let mut c = 0;
        for (v, k) in h.buckets() {
            c += k;
            vals.push(v);
            cum.push(c);
        }
        Cdf {
            vals,
            cum,
            n: c,
            max: h.max_ns().unwrap_or(0),
        }
    }
    /// Value of rank r (1-based). The top rank is the exact maximum.
    fn at_rank(&self, r: u64) -> u64 {
        if r >= self.n {
            return self.max;
        }
        let i = self.cum.partition_point(|&c| c < r.max(1));
        self.vals[i.min(self.vals.len() - 1)]
    }
    /// Count of samples with bucket value ≤ v.
    fn count_le(&self, v: u64) -> u64 {
        let i = self.vals.partition_point(|&x| x <= v);
        if i == 0 {
            0
        } else {
            self.cum[i - 1]
        }
    }
    fn count_lt(&self, v: u64) -> u64 {
        let i = self.vals.partition_point(|&x| x < v);
        if i == 0 {
            0
        } else {
            self.cum[i - 1]
        }
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct MannWhitney {
    /// U of the candidate: Σ over candidate samples of (#baseline below + ½ #baseline equal).
    pub u: f64,
    /// A = U / (n₁ n₂): P(candidate sample > baseline sample) + ½ P(equal). 0.5 = no shift.
    pub a: f64,
    pub z: f64,
    pub p_value: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct KolmogorovSmirnov {
    pub d: f64,
    /// Asymptotic p-value; conservative on tied (bucketed) data.
    pub p_value: f64,
}

pub fn mann_whitney(base: &Histogram, cand: &Histogram) -> Option<MannWhitney> {
    let (n1, n2) = (base.count() as f64, cand.count() as f64);
    if n1 == 0.0 || n2 == 0.0 {
        return None;
    }
    let (mut a_it, mut b_it) = (
        base.buckets().into_iter().peekable(),
        cand.buckets().into_iter().peekable(),
    );
    let (mut base_below, mut u, mut ties) = (0.0f64, 0.0f64, 0.0f64);
    loop {
        let v = match (a_it.peek(), b_it.peek()) {
            (None, None) => break,
            (Some(&(x, _)), None) => x,
            (None, Some(&(y, _))) => y,
            (Some(&(x, _)), Some(&(y, _))) => x.min(y),
        };
        let a = match a_it.peek() {
            Some(&(x, c)) if x == v => {
                a_it.next();
                c as f64
            }
            _ => 0.0,
        };
        let b = match b_it.peek() {
            Some(&(y, c)) if y == v => {
                b_it.next();
                c as f64
            }
            _ => 0.0,
        };
        u += b * (base_below + 0.5 * a);
        base_below += a;
        let t = a + b;
        ties += t * t * t - t;
    }
    let n = n1 + n2;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)).max(1.0));
    let z = if var > 0.0 {
        (u - n1 * n2 / 2.0) / var.sqrt()
    } else {
        0.0
    };
    Some(MannWhitney {
        u,
        a: u / (n1 * n2),
        z,
        p_value: if var > 0.0 { two_sided_p(z) } else { 1.0 },
    })
}

pub fn kolmogorov_smirnov(base: &Histogram, cand: &Histogram) -> Option<KolmogorovSmirnov> {
    let (ca, cb) = (Cdf::of(base), Cdf::of(cand));
    if ca.n == 0 || cb.n == 0 {
        return None;
    }
    let mut d = 0.0f64;
    for &v in ca.vals.iter().chain(cb.vals.iter()) {
        let fa = ca.count_le(v) as f64 / ca.n as f64;
        let fb = cb.count_le(v) as f64 / cb.n as f64;
        d = d.max((fa - fb).abs());
    }
    let ne = (ca.n as f64 * cb.n as f64) / (ca.n + cb.n) as f64;
    let sq = ne.sqrt();
    // Numerical Recipes' small-sample correction of the asymptotic distribution.
    let lambda = (sq + 0.12 + 0.11 / sq) * d;
    Some(KolmogorovSmirnov {
        d,
        p_value: kolmogorov_q(lambda),
    })
}

/// Bootstrap draws of the q-quantile of a resample of `c` (see the module comment). None only
/// for an empty `c` (Beta needs r ≥ 1 and n − r + 1 ≥ 1).
fn quantile_draws(c: &Cdf, q: f64, rng: &mut Rng, b: usize) -> Option<Vec<f64>> {
    let n = c.n;
    let r = ((q * n as f64).ceil() as u64).clamp(1, n);
    let beta = Beta::new(r as f64, (n - r + 1) as f64).ok()?;
    let draws = (0..b)
        .map(|_| {
            let u = beta.sample(rng);
            let rank = ((u * n as f64).ceil() as u64).clamp(1, n);
            c.at_rank(rank) as f64
        })
        .collect();
    Some(draws)
}

fn interval(mut xs: Vec<f64>, level: f64) -> (f64, f64) {
    xs.sort_by(|a, b| a.total_cmp(b));
    let k = xs.len();
    let lo = ((1.0 - level) / 2.0 * k as f64).floor() as usize;
    let hi = (((1.0 + level) / 2.0 * k as f64).ceil() as usize).clamp(1, k) - 1;
    (xs[lo.min(k - 1)], xs[hi])
}

/// 99 % bootstrap CI of the q-quantile of one run.
pub fn quantile_ci99(h: &Histogram, q: f64, iterations: usize, seed: u64) -> Option<(f64, f64)> {
    let c = Cdf::of(h);
    if c.n == 0 {
        return None;
    }
    let mut rng = Rng::new(seed);
    Some(interval(
        quantile_draws(&c, q, &mut rng, iterations.max(100))?,
        0.99,
    ))
}

/// 99 % CI of the mean (CLT on the exact sums).
pub fn mean_ci99(h: &Histogram) -> Option<(f64, f64)> {
    let (m, sd) = (h.mean_ns()?, h.stddev_ns()?);
    let half = Z_99 * sd / (h.count() as f64).sqrt();
    Some((m - half, m + half))
}

/// One run's row of the side-by-side table.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Side {
    pub samples: u64,
    pub min_ns: Option<u64>,
    pub avg_ns: Option<f64>,
    pub avg_ci99_ns: Option<(f64, f64)>,
    pub median_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub p99_ci99_ns: Option<(f64, f64)>,
    pub p9999_ns: Option<u64>,
    pub p9999_ci99_ns: Option<(f64, f64)>,
    /// false when fewer than 10 samples lie above p99.99 (n < 100 000).
    pub p9999_reliable: bool,
    pub max_ns: Option<u64>,
}

pub fn side(h: &Histogram, opts: &Options) -> Side {
    Side {
        samples: h.count(),
        min_ns: h.min_ns(),
        avg_ns: h.mean_ns(),
        avg_ci99_ns: mean_ci99(h),
        median_ns: h.quantile_ns(0.5),
        p99_ns: h.quantile_ns(0.99),
        p99_ci99_ns: quantile_ci99(h, 0.99, opts.bootstrap_iterations, opts.seed),
        p9999_ns: h.quantile_ns(0.9999),
        p9999_ci99_ns: quantile_ci99(h, 0.9999, opts.bootstrap_iterations, opts.seed ^ 1),
        p9999_reliable: rtscope_model::stats::percentile_reliable(h.count(), 99.99),
        max_ns: h.max_ns(),
    }
}

/// The row of a run that kept no distribution (cyclictest status lines imported): its exact
/// count, min, average and max; every quantile and interval is unknown.
pub fn side_from_stats(s: &rtscope_model::Stats) -> Side {
    Side {
        samples: s.samples,
        min_ns: s.min_ns,
        avg_ns: s.avg_ns,
        avg_ci99_ns: None,
        median_ns: None,
        p99_ns: None,
        p99_ci99_ns: None,
        p9999_ns: None,
        p9999_ci99_ns: None,
        p9999_reliable: false,
        max_ns: s.max_ns,
    }
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Avg,
    Median,
    P99,
    P9999,
    Max,
}

impl Metric {
    pub fn parse(s: &str) -> Option<Metric> {
        Some(match s {
            "avg" | "mean" => Metric::Avg,
            "median" | "p50" => Metric::Median,
            "p99" => Metric::P99,
            "p99.99" | "p9999" => Metric::P9999,
            "max" => Metric::Max,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Metric::Avg => "avg",
            Metric::Median => "median",
            Metric::P99 => "p99",
            Metric::P9999 => "p99.99",
            Metric::Max => "max",
        }
    }
}

/// Difference candidate − baseline of one metric, with a 99 % interval when one exists.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Delta {
    pub metric: Metric,
    pub baseline_ns: f64,
    pub candidate_ns: f64,
    /// (candidate − baseline) / baseline × 100.
    pub change_pct: f64,
    pub diff_ci99_ns: Option<(f64, f64)>,
    /// The interval excludes zero (for max: the equal-count test below rejects "same").
    pub significant: bool,
}

/// Maxima at equal sample counts.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct MaxAtEqualCount {
    /// Sample count both maxima refer to (the smaller run's).
    pub samples: u64,
    /// `baseline`, `candidate`, or `none` (equal counts).
    pub subsampled: String,
    /// Median and 99 % range of the subsampled run's maximum at `samples`.
    pub subsampled_max_median_ns: Option<u64>,
    pub subsampled_max_range99_ns: Option<(u64, u64)>,
    pub baseline_max_ns: f64,
    pub candidate_max_ns: f64,
    /// P(subsampled max ≥ other run's max) and P(≤); None at equal counts.
    pub p_subsampled_ge_other: Option<f64>,
    pub p_subsampled_le_other: Option<f64>,
    /// −1 candidate lower, 0 no significant difference, +1 candidate higher (α = 1 %).
    pub direction: i8,
    pub note: String,
}

/// Distribution of the maximum of a uniformly random n-subset (without replacement) of `big`.
/// Returns P(M ≤ v) evaluated through the closure.
fn subsample_max_cdf(big: &Cdf, n: u64) -> impl Fn(u64) -> f64 + '_ {
    let big_n = big.n as f64;
    let nn = n as f64;
    let total = ln_choose(big_n, nn);
    move |c_le: u64| {
        let c = c_le as f64;
        if c < nn {
            0.0
        } else if c_le >= big.n {
            1.0
        } else {
            (ln_choose(c, nn) - total).exp().min(1.0)
        }
    }
}

pub fn max_at_equal_count(
    base: &Histogram,
    cand: &Histogram,
    alpha: f64,
) -> Option<MaxAtEqualCount> {
    let (cb, cc) = (Cdf::of(base), Cdf::of(cand));
    if cb.n == 0 || cc.n == 0 {
        return None;
    }
    let (bmax, cmax) = (cb.max as f64, cc.max as f64);
    if cb.n == cc.n {
        let direction = 0;
        return Some(MaxAtEqualCount {
            samples: cb.n,
            subsampled: "none".into(),
            subsampled_max_median_ns: None,
            subsampled_max_range99_ns: None,
            baseline_max_ns: bmax,
            candidate_max_ns: cmax,
            p_subsampled_ge_other: None,
            p_subsampled_le_other: None,
            direction,
            note: "equal sample counts: maxima compared directly (one value each, no significance claimed)".into(),
        });
    }
    let (big, small, big_is_base) = if cb.n > cc.n {
        (&cb, &cc, true)
    } else {
        (&cc, &cb, false)
    };
    let n = small.n;
    let cdf = subsample_max_cdf(big, n);
    // The top rank of `big` is its exact max, the others are bucket values: evaluate on the
    // bucket values, with the exact max standing in for the top bucket.
    let value_at = |i: usize| {
        if i + 1 == big.vals.len() {
            big.max
        } else {
            big.vals[i]
        }
    };
    let quant = |p: f64| -> u64 {
        for i in 0..big.vals.len() {
            if cdf(big.cum[i]) >= p {
                return value_at(i);
            }
        }
        big.max
    };
    let other = small.max;
    // P(M ≥ other) = 1 − P(M < other); P(M ≤ other).
    let p_ge = 1.0 - cdf(big.count_lt(other));
    let p_le = if other >= big.max {
        1.0
    } else {
        cdf(big.count_le(other))
    };
    // Subsampled run's maximum is almost surely above the other's → the subsampled run is higher.
    let big_higher = p_le < alpha / 2.0;
    let big_lower = p_ge < alpha / 2.0;
    let big_dir: i8 = if big_higher {
        1
    } else if big_lower {
        -1
    } else {
        0
    };
    let direction = if big_is_base { -big_dir } else { big_dir };
    let who = if big_is_base { "baseline" } else { "candidate" };
    Some(MaxAtEqualCount {
        samples: n,
        subsampled: who.into(),
        subsampled_max_median_ns: Some(quant(0.5)),
        subsampled_max_range99_ns: Some((quant(0.005), quant(0.995))),
        baseline_max_ns: bmax,
        candidate_max_ns: cmax,
        p_subsampled_ge_other: Some(p_ge),
        p_subsampled_le_other: Some(p_le),
        direction,
        note: format!(
            "{who} ({} samples) subsampled to {n} samples: exact distribution of a random {n}-subset's maximum",
            big.n
        ),
    })
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Better,
    Worse,
    NoSignificantChange,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoSignificantChange => "no significant change",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Options {
    /// Significance level of every test (0.01: the 99 % intervals).
    pub alpha: f64,
    /// Smallest |A − ½| that counts as a shift.
    pub min_effect: f64,
    pub bootstrap_iterations: usize,
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.01,
            min_effect: 0.06,
            bootstrap_iterations: 2000,
            seed: 0x5EED,
        }
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PairComparison {
    pub mann_whitney: Option<MannWhitney>,
    pub kolmogorov_smirnov: Option<KolmogorovSmirnov>,
    pub deltas: Vec<Delta>,
    pub max_at_equal_count: Option<MaxAtEqualCount>,
    pub verdict: Verdict,
    /// Why, one line each.
    pub reasons: Vec<String>,
}

impl PairComparison {
    pub fn delta(&self, m: Metric) -> Option<&Delta> {
        self.deltas.iter().find(|d| d.metric == m)
    }

    /// A regression beyond `threshold_pct` on `metric`: the candidate is worse by more than the
    /// threshold AND the difference is statistically significant. Returns the explanation.
    pub fn regression(&self, metric: Metric, threshold_pct: f64) -> Option<String> {
        let d = self.delta(metric)?;
        (d.significant && d.change_pct > threshold_pct).then(|| {
            format!(
                "{} regressed {:+.1}% ({:.0} → {:.0} ns), beyond the {threshold_pct}% threshold and significant at 99%",
                metric.name(),
                d.change_pct,
                d.baseline_ns,
                d.candidate_ns
            )
        })
    }
}

fn pct(b: f64, c: f64) -> f64 {
    if b == 0.0 {
        if c == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (c - b) / b * 100.0
    }
}

pub fn compare(base: &Histogram, cand: &Histogram, opts: &Options) -> PairComparison {
    let mw = mann_whitney(base, cand);
    let ks = kolmogorov_smirnov(base, cand);
    let mx = max_at_equal_count(base, cand, opts.alpha);
    let mut deltas = Vec::new();
    let mut reasons = Vec::new();
    if let (Some(bm), Some(cm)) = (base.mean_ns(), cand.mean_ns()) {
        let (bs, cs) = (
            base.stddev_ns().unwrap_or(0.0),
            cand.stddev_ns().unwrap_or(0.0),
        );
        let se = (bs * bs / base.count() as f64 + cs * cs / cand.count() as f64).sqrt();
        let d = cm - bm;
        let ci = (d - Z_99 * se, d + Z_99 * se);
        deltas.push(Delta {
            metric: Metric::Avg,
            baseline_ns: bm,
            candidate_ns: cm,
            change_pct: pct(bm, cm),
            diff_ci99_ns: Some(ci),
            significant: ci.0 > 0.0 || ci.1 < 0.0,
        });
    }
    let (cb, cc) = (Cdf::of(base), Cdf::of(cand));
    if cb.n > 0 && cc.n > 0 {
        for (m, q) in [
            (Metric::Median, 0.5f64),
            (Metric::P99, 0.99),
            (Metric::P9999, 0.9999),
        ] {
            let mut rb = Rng::new(opts.seed ^ (q.to_bits()));
            let mut rc = Rng::new(opts.seed ^ (q.to_bits()).rotate_left(17));
            let (Some(db), Some(dc)) = (
                quantile_draws(&cb, q, &mut rb, opts.bootstrap_iterations),
                quantile_draws(&cc, q, &mut rc, opts.bootstrap_iterations),
            ) else {
                continue;
            };
            let diffs: Vec<f64> = dc.iter().zip(&db).map(|(c, b)| c - b).collect();
            let ci = interval(diffs, 1.0 - opts.alpha);
            let (bv, cv) = (
                base.quantile_ns(q).unwrap_or(0) as f64,
                cand.quantile_ns(q).unwrap_or(0) as f64,
            );
            deltas.push(Delta {
                metric: m,
                baseline_ns: bv,
                candidate_ns: cv,
                change_pct: pct(bv, cv),
                diff_ci99_ns: Some(ci),
                significant: ci.0 > 0.0 || ci.1 < 0.0,
            });
        }
    }
    if let Some(m) = &mx {
        deltas.push(Delta {
            metric: Metric::Max,
            baseline_ns: m.baseline_max_ns,
            candidate_ns: m.candidate_max_ns,
            change_pct: pct(m.baseline_max_ns, m.candidate_max_ns),
            diff_ci99_ns: None,
            significant: m.direction != 0,
        });
    }
    // Verdict: the bulk (a shift with a non-negligible effect) and the tail (p99 interval).
    let mut score: Vec<i8> = Vec::new();
    if let Some(mw) = &mw {
        let effect = mw.a - 0.5;
        if mw.p_value < opts.alpha && effect.abs() >= opts.min_effect {
            let dir = if effect > 0.0 { 1 } else { -1 };
            score.push(dir);
            reasons.push(format!(
                "distribution shifted {} (Mann–Whitney p = {:.2e}, A = {:.3})",
                if dir > 0 { "up" } else { "down" },
                mw.p_value,
                mw.a
            ));
        } else {
            reasons.push(format!(
                "no material shift of the distribution (Mann–Whitney p = {:.2e}, A = {:.3}; |A − 0.5| < {} is negligible)",
                mw.p_value, mw.a, opts.min_effect
            ));
        }
    }
    let tail = deltas.iter().find(|d| d.metric == Metric::P99).cloned();
    if let Some(t) = tail {
        if t.significant && t.change_pct.abs() >= 5.0 {
            let dir = if t.change_pct > 0.0 { 1 } else { -1 };
            score.push(dir);
            reasons.push(format!(
                "p99 {:+.1}% (99% bootstrap CI of the difference excludes 0)",
                t.change_pct
            ));
        }
    }
    let verdict = if score.contains(&1) {
        Verdict::Worse
    } else if score.contains(&-1) {
        Verdict::Better
    } else {
        Verdict::NoSignificantChange
    };
    if score.contains(&1) && score.contains(&-1) {
        reasons.push("mixed signals: reported as worse, the conservative reading".into());
    }
    if let Some(m) = &mx {
        reasons.push(m.note.clone());
    }
    PairComparison {
        mann_whitney: mw,
        kolmogorov_smirnov: ks,
        deltas,
        max_at_equal_count: mx,
        verdict,
        reasons,
    }
}

#[cfg(test)]
mod tests;
