//! Latency histograms.
//!
//! [`Histogram`] is the exact-statistics, log-bucketed record of every sample: an HDR histogram with
//! 3 significant digits (relative error ≤ 1/1024 < 0.1 %; values below 2048 ns are exact to the ns)
//! covering 1 ns … 100 s, plus exact count/min/max/sum/sum-of-squares so that min, max, mean and
//! standard deviation carry no bucketing error at all. A measuring thread's histogram is the dense
//! HDR array, a fixed ~230 KB whatever the run length (what bounds rtscope's memory for a 24 h run,
//! and an allocation-free record). A histogram decoded from a file ([`Histogram::sparse`],
//! [`Histogram::from_data`]) holds only its non-empty buckets, 16 bytes each, and turns dense
//! when that would be larger: an imported cyclictest thread with min/avg/max and no buckets costs
//! bytes, not 230 KB, so the decoders' budget can follow the data.
//!
//! [`LinearHistogram`] is cyclictest's `-h` view: one counter per whole microsecond (latency
//! truncated to µs, as cyclictest computes it), plus an overflow count. It is recorded exactly
//! beside the HDR histogram rather than derived from it, because above 16 µs HDR buckets straddle
//! microsecond boundaries.

use serde::{Deserialize, Serialize};

/// Largest value the log histogram resolves; larger samples are clamped into the top bucket
/// (their exact value still reaches `max_ns`, and `clamped` counts them).
pub const HIGHEST_TRACKABLE_NS: u64 = 100_000_000_000;
const SIGFIG: u8 = 3;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum HistogramError {
    #[error("histogram bucket value {0} ns is outside 1..={HIGHEST_TRACKABLE_NS}")]
    OutOfRange(u64),
    #[error("histogram summary disagrees with its buckets: {0}")]
    Inconsistent(&'static str),
}

/// The bucket counters: HDR's dense array, or the non-empty buckets as (lowest value of the
/// bucket, count), ascending, with the same bucket boundaries.
#[derive(Clone, Debug)]
enum Counts {
    Dense(Box<hdrhistogram::Histogram<u64>>),
    Sparse(Vec<(u64, u64)>),
}

fn dense() -> Box<hdrhistogram::Histogram<u64>> {
    // Bounds are constants that hdrhistogram accepts; this cannot fail.
    Box::new(
        hdrhistogram::Histogram::new_with_bounds(1, HIGHEST_TRACKABLE_NS, SIGFIG)
            .expect("constant histogram bounds are valid"),
    )
}

/// One dense histogram for the bucket arithmetic of sparse ones (`lowest_equivalent` and
/// `highest_equivalent` depend only on the bounds and the precision, which all share).
fn layout() -> &'static hdrhistogram::Histogram<u64> {
    static LAYOUT: std::sync::OnceLock<Box<hdrhistogram::Histogram<u64>>> =
        std::sync::OnceLock::new();
    LAYOUT.get_or_init(dense)
}

/// Bytes of one sparse bucket.
pub const SPARSE_BUCKET_BYTES: u64 = std::mem::size_of::<(u64, u64)>() as u64;

/// A sparse histogram with more buckets than this turns dense: past it, the dense array is the
/// smaller of the two.
fn sparse_max() -> usize {
    layout().distinct_values() / 2
}

#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Counts,
    count: u64,
    min_ns: u64,
    max_ns: u64,
    sum_ns: u128,
    sum_sq_ns2: u128,
    clamped: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for Histogram {
    fn eq(&self, other: &Self) -> bool {
        self.count == other.count
            && self.min_ns == other.min_ns
            && self.max_ns == other.max_ns
            && self.sum_ns == other.sum_ns
            && self.sum_sq_ns2 == other.sum_sq_ns2
            && self.clamped == other.clamped
            && self.buckets() == other.buckets()
    }
}

impl Histogram {
    /// A dense histogram: its record never allocates (a measuring thread's).
    pub fn new() -> Self {
        Self::with_counts(Counts::Dense(dense()))
    }

    /// A sparse histogram: it costs what its non-empty buckets hold (a decoded one's).
    pub fn sparse() -> Self {
        Self::with_counts(Counts::Sparse(Vec::new()))
    }

    fn with_counts(counts: Counts) -> Self {
        Histogram {
            counts,
            count: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
            sum_sq_ns2: 0,
            clamped: 0,
        }
    }

    /// Record one latency. Allocation-free; this is the probe's per-sample hot path.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    #[inline]
    pub fn record_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        let v = ns.clamp(1, HIGHEST_TRACKABLE_NS);
        if v != ns.max(1) {
            self.clamped = self.clamped.saturating_add(n);
        }
        self.add_to_bucket(v, n);
        // Saturating: counts from an imported file may be crafted near 2^64 (importers refuse
        // totals that do not fit; this keeps a sum from wrapping into a plausible value).
        self.count = self.count.saturating_add(n);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns = self.sum_ns.saturating_add(ns as u128 * n as u128);
        self.sum_sq_ns2 = self
            .sum_sq_ns2
            .saturating_add((ns as u128 * ns as u128).saturating_mul(n as u128));
    }

    /// Add `n` to the bucket of `v` (inside the bounds), and nothing else.
    fn add_to_bucket(&mut self, v: u64, n: u64) {
        match &mut self.counts {
            // `v` is inside the constant bounds, so the HDR record cannot fail.
            Counts::Dense(h) => {
                let _ = h.record_n(v, n);
            }
            Counts::Sparse(b) => {
                let key = layout().lowest_equivalent(v);
                match b.binary_search_by_key(&key, |&(k, _)| k) {
                    Ok(i) => b[i].1 = b[i].1.saturating_add(n),
                    Err(i) => b.insert(i, (key, n)),
                }
                if b.len() > sparse_max() {
                    self.densify();
                }
            }
        }
    }

    fn densify(&mut self) {
        if let Counts::Sparse(b) = &self.counts {
            let mut h = dense();
            for &(v, n) in b {
                let _ = h.record_n(v, n);
            }
            self.counts = Counts::Dense(h);
        }
    }

    /// Non-empty buckets as (lowest value of the bucket, count), ascending.
    fn each_bucket(&self) -> Box<dyn Iterator<Item = (u64, u64)> + '_> {
        match &self.counts {
            Counts::Dense(h) => Box::new(h.iter_recorded().map(|it| {
                (
                    h.lowest_equivalent(it.value_iterated_to()),
                    it.count_at_value(),
                )
            })),
            Counts::Sparse(b) => Box::new(b.iter().copied()),
        }
    }

    pub fn merge(&mut self, other: &Histogram) {
        if other.count == 0 {
            return;
        }
        match (&mut self.counts, &other.counts) {
            // Same constant bounds on both sides: add cannot fail.
            (Counts::Dense(a), Counts::Dense(b)) => {
                let _ = a.add(b.as_ref());
            }
            _ => {
                for (v, n) in other.each_bucket() {
                    self.add_to_bucket(v, n);
                }
            }
        }
        self.count = self.count.saturating_add(other.count);
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
        self.sum_sq_ns2 = self.sum_sq_ns2.saturating_add(other.sum_sq_ns2);
        self.clamped = self.clamped.saturating_add(other.clamped);
    }

    /// Empty again, keeping its counter array (no allocation: a measurement thread's recorders
    /// are reused, see `rtscope_probe::measure`).
    pub fn reset(&mut self) {
        match &mut self.counts {
            Counts::Dense(h) => h.reset(),
            Counts::Sparse(b) => b.clear(),
        }
        self.count = 0;
        self.min_ns = u64::MAX;
        self.max_ns = 0;
        self.sum_ns = 0;
        self.sum_sq_ns2 = 0;
        self.clamped = 0;
    }

    /// Bytes of its counters (what one histogram costs beyond its struct): a dense one's array
    /// covers 1 ns … 100 s, whatever it holds; a sparse one's, its non-empty buckets.
    pub fn heap_bytes(&self) -> u64 {
        match &self.counts {
            Counts::Dense(h) => (h.distinct_values() as u64).saturating_mul(8),
            Counts::Sparse(b) => (b.capacity() as u64).saturating_mul(SPARSE_BUCKET_BYTES),
        }
    }

    /// Whether its counters are the dense array.
    pub fn is_dense(&self) -> bool {
        matches!(self.counts, Counts::Dense(_))
    }

    pub fn count(&self) -> u64 {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    pub fn min_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min_ns)
    }
    pub fn max_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max_ns)
    }
    pub fn sum_ns(&self) -> u128 {
        self.sum_ns
    }
    pub fn clamped(&self) -> u64 {
        self.clamped
    }
    pub fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns as f64 / self.count as f64)
    }
    /// Population standard deviation (exact sums; the final step is f64).
    pub fn stddev_ns(&self) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let n = self.count as f64;
        let mean = self.sum_ns as f64 / n;
        let var = (self.sum_sq_ns2 as f64 / n - mean * mean).max(0.0);
        Some(var.sqrt())
    }

    /// Nearest-rank quantile: the smallest recorded value v such that at least ⌈q·n⌉ samples are
    /// ≤ v (q = 0 gives the minimum). Exact below 2048 ns, within 1/1024 relative above; clamped
    /// into the exact [min, max].
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        if rank == self.count {
            return Some(self.max_ns);
        }
        let mut seen = 0u64;
        for (lowest, n) in self.each_bucket() {
            seen = seen.saturating_add(n);
            if seen >= rank {
                let v = layout().highest_equivalent(lowest);
                return Some(v.clamp(self.min_ns, self.max_ns));
            }
        }
        Some(self.max_ns)
    }

    /// Non-empty buckets as (lowest value of the bucket in ns, count), ascending.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        match &self.counts {
            Counts::Sparse(b) => b.clone(),
            Counts::Dense(_) => self.each_bucket().collect(),
        }
    }

    /// Number of samples ≥ `ns` (bucket resolution: exact below 2048 ns).
    pub fn count_at_or_above(&self, ns: u64) -> u64 {
        let lo = layout().lowest_equivalent(ns.clamp(1, HIGHEST_TRACKABLE_NS));
        self.each_bucket()
            .filter(|&(lowest, _)| lowest >= lo)
            .map(|(_, n)| n)
            .fold(0u64, u64::saturating_add)
    }

    pub fn to_data(&self) -> HistogramData {
        HistogramData {
            count: self.count,
            min_ns: self.min_ns(),
            max_ns: self.max_ns(),
            sum_ns: self.sum_ns,
            sum_sq_ns2: self.sum_sq_ns2,
            clamped: self.clamped,
            significant_digits: SIGFIG,
            buckets: self.buckets(),
        }
    }

    /// Sparse (a decoded histogram costs what its buckets hold), dense past the size where the
    /// dense array is smaller.
    pub fn from_data(d: &HistogramData) -> Result<Self, HistogramError> {
        let mut h = Histogram::sparse();
        if d.buckets.len() > sparse_max() {
            h.densify();
        }
        let mut n = 0u64;
        for &(v, c) in &d.buckets {
            if v == 0 || v > HIGHEST_TRACKABLE_NS {
                return Err(HistogramError::OutOfRange(v));
            }
            h.add_to_bucket(v, c);
            n = n
                .checked_add(c)
                .ok_or(HistogramError::Inconsistent("bucket counts overflow"))?;
        }
        if n != d.count {
            return Err(HistogramError::Inconsistent(
                "count != sum of bucket counts",
            ));
        }
        if d.count > 0 && (d.min_ns.is_none() || d.max_ns.is_none()) {
            return Err(HistogramError::Inconsistent("min_ns/max_ns missing"));
        }
        h.count = d.count;
        h.min_ns = d.min_ns.unwrap_or(u64::MAX);
        h.max_ns = d.max_ns.unwrap_or(0);
        h.sum_ns = d.sum_ns;
        h.sum_sq_ns2 = d.sum_sq_ns2;
        h.clamped = d.clamped;
        Ok(h)
    }
}

impl Serialize for Histogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_data().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Histogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let data = HistogramData::deserialize(d)?;
        Histogram::from_data(&data).map_err(serde::de::Error::custom)
    }
}

/// Serialized form of [`Histogram`]: sparse buckets plus the exact sums.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HistogramData {
    pub count: u64,
    pub min_ns: Option<u64>,
    pub max_ns: Option<u64>,
    pub sum_ns: u128,
    pub sum_sq_ns2: u128,
    #[serde(default)]
    pub clamped: u64,
    pub significant_digits: u8,
    /// `[lowest_ns_of_bucket, count]`, ascending, non-empty buckets only.
    pub buckets: Vec<(u64, u64)>,
}

/// cyclictest's `-h` histogram: counts per whole µs (`latency_ns / 1000`), `0..=max_us`, with
/// everything above counted in `overflow`.
///
/// It also keeps the range of buckets that may be non-zero (`lo..hi`), so that adding one
/// histogram to another and emptying one cost the buckets its samples reached, not `max_us`: a
/// measuring thread's recorder is handed over and emptied several times a second, and with
/// cyclictest's `-h 100000` a whole pass is 100 000 counters (0.8 MB) each time.
#[derive(Clone, Debug)]
pub struct LinearHistogram {
    counts: Vec<u64>,
    overflow: u64,
    /// Every bucket outside `lo..hi` is zero (`lo >= hi`: all are).
    lo: usize,
    hi: usize,
}

impl PartialEq for LinearHistogram {
    fn eq(&self, other: &Self) -> bool {
        self.counts == other.counts && self.overflow == other.overflow
    }
}

impl LinearHistogram {
    pub fn new(max_us: u32) -> Self {
        LinearHistogram {
            counts: vec![0; max_us as usize + 1],
            overflow: 0,
            lo: usize::MAX,
            hi: 0,
        }
    }
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let us = (ns / 1000) as usize;
        match self.counts.get_mut(us) {
            Some(c) => {
                *c += 1;
                self.lo = self.lo.min(us);
                self.hi = self.hi.max(us + 1);
            }
            None => self.overflow += 1,
        }
    }
    pub fn max_us(&self) -> u32 {
        (self.counts.len() - 1) as u32
    }
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }
    pub fn overflow(&self) -> u64 {
        self.overflow
    }
    pub fn total(&self) -> u64 {
        self.counts.iter().sum::<u64>() + self.overflow
    }
    pub fn merge(&mut self, other: &LinearHistogram) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        if other.lo < other.hi {
            let (lo, hi) = (other.lo, other.hi);
            for (a, b) in self.counts[lo..hi].iter_mut().zip(&other.counts[lo..hi]) {
                *a += b;
            }
            self.lo = self.lo.min(lo);
            self.hi = self.hi.max(hi);
        }
        self.overflow += other.overflow;
    }
    /// Every count back to zero, keeping the array (no allocation).
    pub fn reset(&mut self) {
        if self.lo < self.hi {
            self.counts[self.lo..self.hi].fill(0);
        }
        self.lo = usize::MAX;
        self.hi = 0;
        self.overflow = 0;
    }
    /// Build from explicit counts (e.g. parsed from a cyclictest histogram file).
    pub fn from_counts(counts: Vec<u64>, overflow: u64) -> Self {
        let counts = if counts.is_empty() { vec![0] } else { counts };
        let lo = counts.iter().position(|&c| c > 0).unwrap_or(usize::MAX);
        let hi = counts.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
        LinearHistogram {
            counts,
            overflow,
            lo,
            hi,
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinearData {
    max_us: u32,
    overflow: u64,
    /// `[us, count]` for non-zero buckets.
    buckets: Vec<(u32, u64)>,
}

impl Serialize for LinearHistogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        LinearData {
            max_us: self.max_us(),
            overflow: self.overflow,
            buckets: self
                .counts
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(i, &c)| (i as u32, c))
                .collect(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for LinearHistogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let data = LinearData::deserialize(d)?;
        if data.max_us > 100_000_000 {
            return Err(serde::de::Error::custom(
                "linear histogram max_us above 100 s",
            ));
        }
        let mut h = LinearHistogram::new(data.max_us);
        for (us, c) in data.buckets {
            match h.counts.get_mut(us as usize) {
                Some(slot) => {
                    *slot += c;
                    if c > 0 {
                        h.lo = h.lo.min(us as usize);
                        h.hi = h.hi.max(us as usize + 1);
                    }
                }
                None => {
                    return Err(serde::de::Error::custom(format!(
                        "linear histogram bucket {us} us above max_us {}",
                        data.max_us
                    )))
                }
            }
        }
        h.overflow = data.overflow;
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn exact_quantile(sorted: &[u64], q: f64) -> u64 {
        let n = sorted.len() as u64;
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        sorted[(rank - 1) as usize]
    }

    proptest! {
        #[test]
        fn matches_brute_force(mut xs in proptest::collection::vec(1u64..20_000_000, 1..2000),
                               q in 0.0f64..=1.0) {
            let mut h = Histogram::new();
            for &x in &xs { h.record(x); }
            xs.sort_unstable();
            prop_assert_eq!(h.count(), xs.len() as u64);
            prop_assert_eq!(h.min_ns(), Some(xs[0]));
            prop_assert_eq!(h.max_ns(), Some(*xs.last().unwrap()));
            let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len() as f64;
            prop_assert!((h.mean_ns().unwrap() - mean).abs() <= mean * 1e-12);
            let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / xs.len() as f64;
            let sd = h.stddev_ns().unwrap();
            prop_assert!((sd - var.sqrt()).abs() <= var.sqrt() * 1e-6 + 1e-3, "sd {} vs {}", sd, var.sqrt());
            let exact = exact_quantile(&xs, q);
            let got = h.quantile_ns(q).unwrap();
            if exact < 2048 {
                prop_assert_eq!(got, exact);
            } else {
                let err = (got as f64 - exact as f64).abs() / exact as f64;
                prop_assert!(err <= 1.0 / 1024.0, "q={} exact={} got={}", q, exact, got);
            }
        }

        #[test]
        fn merge_equals_single(a in proptest::collection::vec(1u64..5_000_000, 0..500),
                               b in proptest::collection::vec(1u64..5_000_000, 0..500)) {
            let (mut ha, mut hb, mut hall) = (Histogram::new(), Histogram::new(), Histogram::new());
            for &x in &a { ha.record(x); hall.record(x); }
            for &x in &b { hb.record(x); hall.record(x); }
            ha.merge(&hb);
            prop_assert!(ha == hall);
        }

        /// A sparse histogram answers every query as the dense one does, whichever side of a
        /// merge each is on, and turns dense only past the size where dense is smaller.
        #[test]
        fn sparse_equals_dense(a in proptest::collection::vec(1u64..HIGHEST_TRACKABLE_NS, 0..400),
                               b in proptest::collection::vec(1u64..50_000_000, 0..400),
                               probe in 1u64..HIGHEST_TRACKABLE_NS) {
            let (mut da, mut db) = (Histogram::new(), Histogram::new());
            let (mut sa, mut sb) = (Histogram::sparse(), Histogram::sparse());
            for &x in &a { da.record(x); sa.record(x); }
            for &x in &b { db.record(x); sb.record(x); }
            prop_assert!(!sa.is_dense() && sa.heap_bytes() <= (a.len() as u64 * 2).max(4) * SPARSE_BUCKET_BYTES);
            prop_assert!(sa == da);
            for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
                prop_assert_eq!(sa.quantile_ns(q), da.quantile_ns(q));
            }
            prop_assert_eq!(sa.count_at_or_above(probe), da.count_at_or_above(probe));
            prop_assert_eq!(sa.buckets(), da.buckets());
            let mut all = da.clone();
            all.merge(&db);
            for (x, y) in [(&da, &sb), (&sa, &db), (&sa, &sb)] {
                let mut m = x.clone();
                m.merge(y);
                prop_assert!(m == all);
                prop_assert_eq!(m.quantile_ns(0.99), all.quantile_ns(0.99));
                prop_assert_eq!(m.stddev_ns(), all.stddev_ns());
            }
            let back = Histogram::from_data(&da.to_data()).unwrap();
            prop_assert!(!back.is_dense() && back == da);
        }

        #[test]
        fn serde_round_trip(xs in proptest::collection::vec(1u64..HIGHEST_TRACKABLE_NS, 0..300)) {
            let mut h = Histogram::new();
            for &x in &xs { h.record(x); }
            let s = serde_json::to_string(&h).unwrap();
            let back: Histogram = serde_json::from_str(&s).unwrap();
            prop_assert!(back == h);
            for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
                prop_assert_eq!(back.quantile_ns(q), h.quantile_ns(q));
            }
        }

        #[test]
        fn linear_counts_truncate_to_us(xs in proptest::collection::vec(0u64..50_000, 0..500)) {
            let mut l = LinearHistogram::new(20);
            for &x in &xs { l.record(x); }
            for us in 0..=20u64 {
                let want = xs.iter().filter(|&&x| x / 1000 == us).count() as u64;
                prop_assert_eq!(l.counts()[us as usize], want);
            }
            prop_assert_eq!(l.overflow(), xs.iter().filter(|&&x| x >= 21_000).count() as u64);
        }

        /// Recording in pieces, each piece added to a total and then emptied for the next (as a
        /// measuring thread's recorder is handed over and reused), gives the histogram of
        /// recording everything at once, and an emptied piece is all zeros: adding and
        /// emptying only the buckets a piece reached loses nothing.
        #[test]
        fn linear_pieces_merged_and_reset_equal_the_whole(
            pieces in proptest::collection::vec(proptest::collection::vec(0u64..120_000, 0..60), 1..12),
            from_counts in proptest::bool::ANY,
        ) {
            let mut whole = LinearHistogram::new(100);
            let mut total = if from_counts {
                LinearHistogram::from_counts(vec![0; 101], 0)
            } else {
                LinearHistogram::new(100)
            };
            let mut piece = LinearHistogram::new(100);
            for p in &pieces {
                for &x in p {
                    whole.record(x);
                    piece.record(x);
                }
                total.merge(&piece);
                // Round trip through the serialized form too: it must keep what is non-zero.
                let back: LinearHistogram =
                    serde_json::from_str(&serde_json::to_string(&total).unwrap()).unwrap();
                prop_assert_eq!(&back, &total);
                total = back;
                piece.reset();
                prop_assert!(piece.counts().iter().all(|&c| c == 0));
                prop_assert_eq!(piece.overflow(), 0);
            }
            prop_assert_eq!(&total, &whole);
            prop_assert_eq!(total.total(), pieces.iter().map(|p| p.len() as u64).sum::<u64>());
        }
    }

    #[test]
    fn a_sparse_histogram_turns_dense_past_half_the_dense_size_and_stays_equal() {
        let dense_bytes = Histogram::new().heap_bytes();
        let mut s = Histogram::sparse();
        let mut d = Histogram::new();
        let mut v = 1u64;
        while !s.is_dense() {
            s.record(v);
            d.record(v);
            assert!(
                s.heap_bytes() <= dense_bytes * 2,
                "{} bytes",
                s.heap_bytes()
            );
            // The next bucket's lowest value.
            v = layout().highest_equivalent(v) + 1;
        }
        // One new bucket per record: it turned dense past half the dense array's counters.
        assert_eq!(s.buckets().len(), sparse_max() + 1);
        assert_eq!(s.heap_bytes(), dense_bytes);
        assert!(s == d);
        s.reset();
        assert!(s.is_empty() && s.buckets().is_empty());
        // An empty sparse one costs nothing beyond its struct.
        assert_eq!(Histogram::sparse().heap_bytes(), 0);
    }

    #[test]
    fn huge_values_are_clamped_but_max_exact() {
        let mut h = Histogram::new();
        h.record(200_000_000_000);
        h.record(5);
        assert_eq!(h.max_ns(), Some(200_000_000_000));
        assert_eq!(h.clamped(), 1);
        assert_eq!(h.quantile_ns(1.0), Some(200_000_000_000));
        assert_eq!(h.quantile_ns(0.5), Some(5));
    }

    #[test]
    fn corrupt_data_is_rejected() {
        let mut d = Histogram::new().to_data();
        d.count = 3;
        assert!(Histogram::from_data(&d).is_err());
        let bad = r#"{"count":1,"min_ns":1,"max_ns":1,"sum_ns":1,"sum_sq_ns2":1,"significant_digits":3,"buckets":[[0,1]]}"#;
        assert!(serde_json::from_str::<Histogram>(bad).is_err());
    }
}
