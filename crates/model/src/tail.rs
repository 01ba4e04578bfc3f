//! The tail model of a measurement (extreme-value theory on block maxima), as stored and
//! exported: per CPU and for the run, the fitted GEV, the latencies at small exceedance
//! probabilities with their 95 % intervals, the return period of the observed maximum, how much
//! longer the run would need, the bound's position, and the checks of the fit's assumptions.
//! Computed by `rtscope_analysis::tail`; the method is docs/tail.md.

use serde::{Deserialize, Serialize};

/// Exceedance probabilities every verdict reports (per sample, and per hour of operation).
pub const TAIL_PROBABILITIES: [f64; 3] = [1e-6, 1e-9, 1e-12];

/// The tail model of one run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct TailReport {
    /// `gev_block_maxima`: a GEV fitted by maximum likelihood to the maxima of consecutive
    /// blocks of samples, with profile-likelihood intervals.
    pub method: String,
    /// Per measured CPU (one per measurement thread, in the run's order).
    pub cpus: Vec<TailFit>,
    /// The run: the maximum over CPUs of each block (the first blocks every CPU has), so "per
    /// sample" means per sample of any CPU. None with one CPU (its fit is the run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<TailFit>,
}

/// One fitted tail (one CPU, or the run).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct TailFit {
    /// None for the run's fit.
    pub cpu: Option<u32>,
    /// Block maxima the fit used.
    pub blocks: u64,
    /// Samples per block (blocks double in length as the bounded reservoir fills).
    pub block_samples: u64,
    /// A block's length in time (block_samples × the CPU's period).
    pub block_s: f64,
    /// The largest sample the blocks saw.
    pub observed_max_ns: u64,
    /// The fitted GEV of the block maxima; None when there were too few maxima
    /// (`needed_blocks` says how many) or the likelihood had no maximum.
    pub gev: Option<GevParams>,
    /// Latency at each exceedance probability of [`TAIL_PROBABILITIES`], per sample then per
    /// hour; empty without a fit.
    pub levels: Vec<TailLevel>,
    /// Expected time between samples at least as large as the observed maximum.
    pub observed_max_return_period_s: Option<f64>,
    /// Run time still needed, at this rate of blocks, for the 1e-9-per-sample interval to be
    /// within ±10 % of its estimate (0 when it already is; extrapolated as 1/√blocks).
    pub more_run_s_for_10pct: Option<f64>,
    /// The ECRTS'20 bound (sliding window) on the same scale, where one was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<TailBound>,
    /// The checks of the model's assumptions; a failed one makes the fit unreliable.
    pub checks: Vec<TailCheck>,
    /// false when a check failed: the numbers are shown, labelled unreliable.
    pub reliable: bool,
    /// Set when there were too few maxima: the number a fit needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needed_blocks: Option<u64>,
}

/// GEV parameters (location μ, scale σ, shape ξ; ξ > 0 heavy tail, ξ < 0 bounded tail), each
/// with its 95 % profile-likelihood interval.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct GevParams {
    pub location_ns: f64,
    pub scale_ns: f64,
    pub shape: f64,
    pub location_ci95_ns: Interval,
    pub scale_ci95_ns: Interval,
    pub shape_ci95: Interval,
}

/// A 95 % interval; an end is None where the profile likelihood never fell below the 95 %
/// level (the data do not rule out any value on that side).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct Interval {
    pub low: Option<f64>,
    pub high: Option<f64>,
}

/// What an exceedance probability refers to.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TailPer {
    /// One sample exceeds the latency with this probability.
    Sample,
    /// One hour of operation contains a sample above the latency with this probability.
    Hour,
}

/// The latency exceeded with a given probability.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TailLevel {
    pub exceedance_probability: f64,
    pub per: TailPer,
    pub latency_ns: f64,
    pub ci95_ns: Interval,
}

/// The measured bound on the tail model's scale.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct TailBound {
    pub bound_ns: u64,
    /// The model's probability that one sample exceeds the bound (0 where the fitted tail ends
    /// below it).
    pub exceedance_per_sample: f64,
    /// The model's expected time between samples above the bound (None: never).
    pub return_period_s: Option<f64>,
}

/// Which assumption a check tests.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum TailCheckCode {
    /// Ljung–Box on the block maxima: no autocorrelation up to lag h.
    Independence,
    /// Two-sample Kolmogorov–Smirnov, first half of the maxima against the second.
    Stationarity,
    /// Anderson–Darling of the maxima against the fitted GEV.
    GoodnessOfFit,
}

impl TailCheckCode {
    pub fn as_str(self) -> &'static str {
        match self {
            TailCheckCode::Independence => "independence",
            TailCheckCode::Stationarity => "stationarity",
            TailCheckCode::GoodnessOfFit => "goodness_of_fit",
        }
    }
}

/// One assumption check.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TailCheck {
    pub code: TailCheckCode,
    /// Q (Ljung–Box), D (KS) or A² (Anderson–Darling).
    pub statistic: f64,
    /// The test's p-value where it has one (Ljung–Box, KS).
    pub p_value: Option<f64>,
    /// The value at which the check fails (the p-value's level, or A²'s critical value).
    pub threshold: f64,
    pub passed: bool,
}

impl TailFit {
    /// The level at `p` per `per`, if fitted.
    pub fn level(&self, p: f64, per: TailPer) -> Option<&TailLevel> {
        self.levels
            .iter()
            .find(|l| l.per == per && (l.exceedance_probability / p - 1.0).abs() < 1e-9)
    }
}

/// Why `--until-stable` ended a run (in the record's `stable` field).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct StableEnd {
    /// `tail` (the 1e-9 interval alone: no bound was measured), `tail_and_bound` (both series
    /// stopped moving), or `max_duration` (neither did before `--max-duration`).
    pub criterion: String,
    /// The tolerance and window that were asked for.
    pub tolerance: f64,
    pub window_s: f64,
    /// Seconds into the run at which it was ended.
    pub ended_at_s: f64,
}
