//! The tail model: extreme-value theory on block maxima (docs/tail.md).
//!
//! Online, per CPU, in constant memory: [`BlockMaxima`] keeps the maximum of each block of
//! consecutive samples in a reservoir of fixed capacity; when it fills, neighbouring blocks are
//! merged pairwise (the maximum of two blocks is the maximum of their union), so the blocks
//! double in length and every stored maximum always covers the same number of samples.
//!
//! At the end of a run (or on demand, for `--until-stable` and the live metrics), [`fit`] fits
//! a GEV to the maxima by maximum likelihood ([`gev`]), gives profile-likelihood 95 % intervals
//! for its parameters and for the latencies exceeded with probability 1e-6, 1e-9 and 1e-12 per
//! sample and per hour, and checks the assumptions ([`checks`]). Block maxima of m samples
//! with GEV G give, for one sample, F(x)^m ≈ G(x) (Coles 2001 §3.1.2), so a per-sample
//! exceedance p is the block level with t(x) = −m ln(1 − p).
//!
//! Pure: no clocks, no syscalls; a period and a block length in seconds are inputs.

pub mod checks;
pub mod gev;
mod stable;
#[cfg(test)]
mod tests;

pub use stable::StableTracker;

use gev::{profile_interval, Gev, Interest};
use rtscope_model::tail::{
    GevParams, Interval, TailBound, TailFit, TailLevel, TailPer, TailReport, TAIL_PROBABILITIES,
};
use rtscope_model::{Warning, WarningCode};

/// Block maxima a fit needs: with fewer the likelihood is too flat for ξ to mean anything
/// (Coles' examples start near 40 annual maxima).
pub const MIN_BLOCKS: usize = 40;

/// Maxima a reservoir holds before merging pairwise (so a fit sees between half this and
/// this many): 2 KiB per CPU, and a fit with profile intervals well under 50 ms.
pub const RESERVOIR_CAPACITY: usize = 256;

/// The relative half-width the "how much longer" answer aims at.
pub const TARGET_HALF_WIDTH: f64 = 0.10;

/// The first block length: one second's samples at `interval_ns` (at least 10 samples), so a
/// run of a minute already has enough maxima and a 24-hour run at 1 kHz ends with blocks of
/// about 11 minutes after doubling.
pub fn first_block_samples(interval_ns: u64) -> u64 {
    (1_000_000_000 / interval_ns.max(1)).max(10)
}

/// The maxima of consecutive blocks of samples, in a fixed-capacity reservoir.
#[derive(Clone, Debug)]
pub struct BlockMaxima {
    block_samples: u64,
    capacity: usize,
    maxima: Vec<u64>,
    cur_n: u64,
    cur_max: u64,
    observed_max: u64,
    samples: u64,
}

impl BlockMaxima {
    /// `capacity` is rounded up to an even number ≥ 2; allocated once, here.
    pub fn new(block_samples: u64, capacity: usize) -> BlockMaxima {
        let capacity = capacity.max(2).next_multiple_of(2);
        BlockMaxima {
            block_samples: block_samples.max(1),
            capacity,
            maxima: Vec::with_capacity(capacity),
            cur_n: 0,
            cur_max: 0,
            observed_max: 0,
            samples: 0,
        }
    }

    /// One sample. Allocation-free.
    #[inline]
    pub fn push(&mut self, latency_ns: u64) {
        self.samples += 1;
        self.observed_max = self.observed_max.max(latency_ns);
        self.cur_max = self.cur_max.max(latency_ns);
        self.cur_n += 1;
        if self.cur_n >= self.block_samples {
            if self.maxima.len() == self.capacity {
                for i in 0..self.capacity / 2 {
                    self.maxima[i] = self.maxima[2 * i].max(self.maxima[2 * i + 1]);
                }
                self.maxima.truncate(self.capacity / 2);
                // The block that just ended has the old length: it is the first half of the
                // next, longer block, so its count and maximum carry on.
                self.block_samples *= 2;
                return;
            }
            self.maxima.push(self.cur_max);
            self.cur_n = 0;
            self.cur_max = 0;
        }
    }

    /// The completed blocks' maxima, oldest first (the block under way is not included).
    pub fn maxima(&self) -> &[u64] {
        &self.maxima
    }
    /// Samples per stored block.
    pub fn block_samples(&self) -> u64 {
        self.block_samples
    }
    pub fn observed_max_ns(&self) -> u64 {
        self.observed_max
    }
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

/// What one fit is given.
#[derive(Clone, Copy, Debug)]
pub struct TailInput<'a> {
    /// None for the run's fit.
    pub cpu: Option<u32>,
    pub maxima: &'a [u64],
    pub block_samples: u64,
    /// A block's length in time.
    pub block_s: f64,
    pub observed_max_ns: u64,
    /// The measured bound (sliding window) for this CPU or run, if any.
    pub bound_ns: Option<u64>,
}

impl<'a> TailInput<'a> {
    /// A CPU's reservoir, its period and its bound.
    pub fn from_reservoir(
        cpu: u32,
        r: &'a BlockMaxima,
        interval_ns: u64,
        bound_ns: Option<u64>,
    ) -> TailInput<'a> {
        TailInput {
            cpu: Some(cpu),
            maxima: r.maxima(),
            block_samples: r.block_samples(),
            block_s: r.block_samples() as f64 * interval_ns as f64 / 1e9,
            observed_max_ns: r.observed_max_ns(),
            bound_ns,
        }
    }
}

/// The block level t for an exceedance probability `p` per sample or per hour.
fn level_t(p: f64, per: TailPer, block_samples: u64, block_s: f64) -> f64 {
    let per_unit = -(-p).ln_1p();
    match per {
        // F(x)^m = G(x): t = −ln G = −m ln F = −m ln(1 − p).
        TailPer::Sample => block_samples as f64 * per_unit,
        // G(x)^(blocks per hour) = 1 − p.
        TailPer::Hour => per_unit * block_s / 3600.0,
    }
}

/// Standardization of the maxima: z = (x − a) / b.
struct Scale {
    a: f64,
    b: f64,
}

impl Scale {
    fn ns(&self, z: f64) -> f64 {
        self.a + self.b * z
    }
    fn z(&self, ns: f64) -> f64 {
        (ns - self.a) / self.b
    }
    fn interval(&self, iv: [Option<f64>; 2]) -> Interval {
        Interval {
            low: iv[0].map(|z| self.ns(z)),
            high: iv[1].map(|z| self.ns(z)),
        }
    }
}

/// A fit on standardized data: the scale, the data, the GEV and its −log-likelihood.
struct Fitted {
    s: Scale,
    x: Vec<f64>,
    z: Vec<f64>,
    g: Gev,
    nll: f64,
}

fn fit_standard(maxima: &[u64]) -> Option<Fitted> {
    let x: Vec<f64> = maxima.iter().map(|&v| v as f64).collect();
    let n = x.len() as f64;
    let a = x.iter().sum::<f64>() / n;
    let b = (x.iter().map(|v| (v - a).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    if b.is_nan() || b <= 0.0 {
        return None;
    }
    let s = Scale { a, b };
    let z: Vec<f64> = x.iter().map(|&v| s.z(v)).collect();
    let (g, nll) = gev::fit_standardized(&z)?;
    Some(Fitted { s, x, z, g, nll })
}

/// The latency exceeded with probability `p` per sample, with its 95 % interval (ns): the
/// quick form `--until-stable` and the live metrics use. None with too few maxima or no fit.
pub fn sample_level(maxima: &[u64], block_samples: u64, p: f64) -> Option<(f64, Interval)> {
    if maxima.len() < MIN_BLOCKS {
        return None;
    }
    let f = fit_standard(maxima)?;
    let y = level_t(p, TailPer::Sample, block_samples, 0.0);
    let v = f.s.ns(f.g.quantile_t(y));
    let iv = profile_interval(&f.z, &f.g, f.nll, Interest::Level { y });
    Some((v, f.s.interval(iv)))
}

/// The tail model of one CPU or of the run.
pub fn fit(input: &TailInput) -> TailFit {
    let n = input.maxima.len();
    let mut out = TailFit {
        cpu: input.cpu,
        blocks: n as u64,
        block_samples: input.block_samples,
        block_s: input.block_s,
        observed_max_ns: input.observed_max_ns,
        reliable: false,
        ..TailFit::default()
    };
    if n < MIN_BLOCKS {
        out.needed_blocks = Some(MIN_BLOCKS as u64);
        return out;
    }
    let Some(f) = fit_standard(input.maxima) else {
        return out;
    };
    let (s, g) = (&f.s, f.g);
    let ci = |what| profile_interval(&f.z, &g, f.nll, what);
    let ls = ci(Interest::LogScale);
    out.gev = Some(GevParams {
        location_ns: s.ns(g.mu),
        scale_ns: s.b * g.sigma,
        shape: g.xi,
        location_ci95_ns: s.interval(ci(Interest::Location)),
        scale_ci95_ns: Interval {
            low: ls[0].map(|v| s.b * v.exp()),
            high: ls[1].map(|v| s.b * v.exp()),
        },
        shape_ci95: {
            let iv = ci(Interest::Shape);
            Interval {
                low: iv[0],
                high: iv[1],
            }
        },
    });
    for per in [TailPer::Sample, TailPer::Hour] {
        for p in TAIL_PROBABILITIES {
            let y = level_t(p, per, input.block_samples, input.block_s);
            out.levels.push(TailLevel {
                exceedance_probability: p,
                per,
                latency_ns: s.ns(g.quantile_t(y)),
                ci95_ns: s.interval(ci(Interest::Level { y })),
            });
        }
    }
    let q_obs = g.sf(s.z(input.observed_max_ns as f64));
    out.observed_max_return_period_s = (q_obs > 0.0).then(|| input.block_s / q_obs);
    out.more_run_s_for_10pct = out
        .level(1e-9, TailPer::Sample)
        .and_then(|l| more_run_s(l, n, input.block_s));
    out.bound = input.bound_ns.map(|b| {
        let t = g.t(s.z(b as f64));
        let q_block = -(-t).exp_m1();
        TailBound {
            bound_ns: b,
            exceedance_per_sample: -(-t / input.block_samples as f64).exp_m1(),
            return_period_s: (q_block > 0.0).then(|| input.block_s / q_block),
        }
    });
    out.checks = vec![
        checks::ljung_box(&f.x),
        checks::halves_ks(&f.x),
        checks::anderson_darling(&f.z, &g),
    ];
    out.reliable = out.checks.iter().all(|c| c.passed);
    out
}

/// Run time still needed for the interval of `l` to be within ±10 % of its estimate, assuming
/// its width shrinks as 1/√(blocks) at the current block rate; None when an end is open.
fn more_run_s(l: &TailLevel, blocks: usize, block_s: f64) -> Option<f64> {
    let (lo, hi) = (l.ci95_ns.low?, l.ci95_ns.high?);
    if l.latency_ns.is_nan() || l.latency_ns <= 0.0 {
        return None;
    }
    let half = (hi - l.latency_ns).max(l.latency_ns - lo) / l.latency_ns;
    if half <= TARGET_HALF_WIDTH {
        return Some(0.0);
    }
    let needed = blocks as f64 * (half / TARGET_HALF_WIDTH).powi(2);
    Some((needed - blocks as f64) * block_s)
}

/// The run's maxima: per block, the maximum over CPUs (the first blocks every CPU has). None
/// with fewer than two CPUs or blocks of unequal length (CPUs with different periods).
pub fn run_maxima(cpus: &[TailInput]) -> Option<(Vec<u64>, u64)> {
    if cpus.len() < 2
        || cpus
            .iter()
            .any(|c| c.block_samples != cpus[0].block_samples)
    {
        return None;
    }
    let len = cpus.iter().map(|c| c.maxima.len()).min()?;
    let maxima = (0..len)
        .map(|i| cpus.iter().map(|c| c.maxima[i]).max().unwrap_or(0))
        .collect();
    Some((maxima, cpus.iter().map(|c| c.block_samples).sum()))
}

/// The tail report of a run from its CPUs' inputs: one fit per CPU, and the run's.
pub fn report(cpus: &[TailInput]) -> TailReport {
    assemble(cpus, cpus.iter().map(fit).collect())
}

/// The tail report from the CPUs' inputs and their fits (made elsewhere, e.g. in parallel):
/// adds the run's fit.
pub fn assemble(cpus: &[TailInput], fits: Vec<TailFit>) -> TailReport {
    let run = run_maxima(cpus).map(|(maxima, block_samples)| {
        let bound_ns = if cpus.iter().all(|c| c.bound_ns.is_some()) {
            cpus.iter().filter_map(|c| c.bound_ns).max()
        } else {
            None
        };
        fit(&TailInput {
            cpu: None,
            maxima: &maxima,
            block_samples,
            block_s: cpus[0].block_s,
            observed_max_ns: cpus.iter().map(|c| c.observed_max_ns).max().unwrap_or(0),
            bound_ns,
        })
    });
    TailReport {
        method: "gev_block_maxima".into(),
        cpus: fits,
        run,
    }
}

fn who(f: &TailFit) -> String {
    match f.cpu {
        Some(c) => format!("CPU {c}"),
        None => "the run".into(),
    }
}

/// The warnings a tail report raises: too few maxima (how many are needed, and about how much
/// longer to run), and fits whose checks failed.
pub fn warnings(r: &TailReport) -> Vec<Warning> {
    let mut w = Vec::new();
    let few: Vec<&TailFit> = r
        .cpus
        .iter()
        .filter(|f| f.needed_blocks.is_some())
        .collect();
    if let Some(f) = few.first() {
        let need = f.needed_blocks.unwrap_or(MIN_BLOCKS as u64);
        let more_s = need.saturating_sub(f.blocks) as f64 * f.block_s;
        w.push(Warning::new(
            WarningCode::TailFewMaxima,
            format!(
                "tail model: {} has {} block maxima (one per {:.3} s), a fit needs {need}: no \
                 tail estimate; run about {:.0} s longer{}",
                who(f),
                f.blocks,
                f.block_s,
                more_s.ceil(),
                if few.len() > 1 {
                    format!(" ({} CPUs alike)", few.len())
                } else {
                    String::new()
                }
            ),
        ));
    }
    for f in r.cpus.iter().chain(r.run.as_ref()) {
        if f.gev.is_none() || f.reliable {
            continue;
        }
        let failed: Vec<String> = f
            .checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| match c.p_value {
                Some(p) => format!("{} (p = {p:.2e})", check_words(c.code)),
                None => format!(
                    "{} (A² = {:.2} > {:.3})",
                    check_words(c.code),
                    c.statistic,
                    c.threshold
                ),
            })
            .collect();
        w.push(Warning::new(
            WarningCode::TailUnreliable,
            format!(
                "tail model of {} is unreliable: {}",
                who(f),
                failed.join(", ")
            ),
        ));
    }
    w
}

/// What a failed check means, in words.
pub fn check_words(c: rtscope_model::tail::TailCheckCode) -> &'static str {
    use rtscope_model::tail::TailCheckCode::*;
    match c {
        Independence => "the block maxima are dependent",
        Stationarity => "the first and second halves of the run differ",
        GoodnessOfFit => "the GEV does not fit the block maxima",
    }
}

/// Whether two runs' maxima differ beyond what their tail models explain.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MaxComparison {
    pub base_max_ns: u64,
    pub cand_max_ns: u64,
    /// Under the lower run's model, the probability that a run as long as the higher one
    /// reaches its maximum or more.
    pub p_higher_under_lower: f64,
    /// Under the higher run's model, the probability that a run as long as the lower one stays
    /// at or below its maximum.
    pub p_lower_under_higher: f64,
    /// Either probability below 2.5 %: the difference is beyond what the models explain.
    pub beyond: bool,
    /// Both fits passed their checks.
    pub reliable: bool,
}

fn gev_ns(f: &TailFit) -> Option<Gev> {
    let p = f.gev.as_ref()?;
    Some(Gev {
        mu: p.location_ns,
        sigma: p.scale_ns,
        xi: p.shape,
    })
}

/// Compare two runs' maxima through their tail models (fits of the run, or of its one CPU):
/// `samples_*` are the runs' sample counts. None when either run has no fit.
pub fn compare_maxima(
    base: &TailFit,
    base_samples: u64,
    cand: &TailFit,
    cand_samples: u64,
) -> Option<MaxComparison> {
    let (gb, gc) = (gev_ns(base)?, gev_ns(cand)?);
    let (lo, n_lo, g_lo, m_lo, hi, n_hi, g_hi, m_hi) =
        if cand.observed_max_ns >= base.observed_max_ns {
            (
                base,
                base_samples,
                gb,
                base.block_samples,
                cand,
                cand_samples,
                gc,
                cand.block_samples,
            )
        } else {
            (
                cand,
                cand_samples,
                gc,
                cand.block_samples,
                base,
                base_samples,
                gb,
                base.block_samples,
            )
        };
    // A run of n samples has n/m blocks: P(max ≤ x) = G(x)^(n/m) = exp(−t(x) n/m).
    let t_hi_under_lo = g_lo.t(hi.observed_max_ns as f64) * n_hi as f64 / m_lo.max(1) as f64;
    let p_higher = -(-t_hi_under_lo).exp_m1();
    let t_lo_under_hi = g_hi.t(lo.observed_max_ns as f64) * n_lo as f64 / m_hi.max(1) as f64;
    let p_lower = (-t_lo_under_hi).exp();
    Some(MaxComparison {
        base_max_ns: base.observed_max_ns,
        cand_max_ns: cand.observed_max_ns,
        p_higher_under_lower: p_higher,
        p_lower_under_higher: p_lower,
        beyond: p_higher < 0.025 || p_lower < 0.025,
        reliable: base.reliable && cand.reliable,
    })
}

/// The fit that speaks for a whole run: the run's own, or its one CPU's.
pub fn run_fit(r: &TailReport) -> Option<&TailFit> {
    r.run.as_ref().or(match r.cpus.as_slice() {
        [one] => Some(one),
        _ => None,
    })
}
