//! Summary statistics derived from a [`Histogram`].

use crate::Histogram;
use serde::{Deserialize, Serialize};

/// Percentiles every summary reports.
pub const STANDARD_PERCENTILES: [f64; 5] = [90.0, 99.0, 99.9, 99.99, 99.999];

/// A percentile needs at least this many samples *above* it to mean anything: with fewer, the
/// value is one or two samples and is flagged `reliable: false`.
pub const MIN_SAMPLES_ABOVE_PERCENTILE: f64 = 10.0;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Percentile {
    /// e.g. 99.9
    pub percent: f64,
    pub value_ns: u64,
    /// false when the run has fewer than `10 / (1 - p)` samples: fewer than ten samples lie above.
    pub reliable: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct Stats {
    pub samples: u64,
    pub min_ns: Option<u64>,
    pub max_ns: Option<u64>,
    pub avg_ns: Option<f64>,
    pub median_ns: Option<u64>,
    pub stddev_ns: Option<f64>,
    pub percentiles: Vec<Percentile>,
}

impl Stats {
    pub fn from_histogram(h: &Histogram) -> Stats {
        let n = h.count();
        let percentiles = if n == 0 {
            Vec::new()
        } else {
            STANDARD_PERCENTILES
                .iter()
                .map(|&p| Percentile {
                    percent: p,
                    value_ns: h.quantile_ns(p / 100.0).unwrap_or(0),
                    reliable: percentile_reliable(n, p),
                })
                .collect()
        };
        Stats {
            samples: n,
            min_ns: h.min_ns(),
            max_ns: h.max_ns(),
            avg_ns: h.mean_ns(),
            median_ns: h.quantile_ns(0.5),
            stddev_ns: h.stddev_ns(),
            percentiles,
        }
    }

    pub fn percentile(&self, percent: f64) -> Option<&Percentile> {
        self.percentiles
            .iter()
            .find(|p| (p.percent - percent).abs() < 1e-9)
    }
}

pub fn percentile_reliable(samples: u64, percent: f64) -> bool {
    let tail = 1.0 - percent / 100.0;
    tail > 0.0 && samples as f64 * tail >= MIN_SAMPLES_ABOVE_PERCENTILE - 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reliability_threshold() {
        assert!(percentile_reliable(1000, 99.0));
        assert!(!percentile_reliable(999, 99.0));
        assert!(!percentile_reliable(999_999, 99.999));
        assert!(percentile_reliable(1_000_000, 99.999));
    }

    #[test]
    fn hand_checked_summary() {
        let mut h = Histogram::new();
        for v in [1000, 2000, 3000, 4000] {
            h.record(v);
        }
        let s = Stats::from_histogram(&h);
        assert_eq!(s.samples, 4);
        assert_eq!(s.min_ns, Some(1000));
        assert_eq!(s.max_ns, Some(4000));
        assert_eq!(s.avg_ns, Some(2500.0));
        assert_eq!(s.median_ns, Some(2000)); // nearest rank ⌈0.5·4⌉ = 2nd
                                             // population stddev of {1,2,3,4} µs = sqrt(1.25) µs
        assert!((s.stddev_ns.unwrap() - 1118.034).abs() < 0.01);
        assert!(!s.percentile(90.0).unwrap().reliable);
    }
}
