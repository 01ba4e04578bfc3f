//! Exact worst-case arrival curves of one source over a half-open window [t, t+Δ).
//!
//! The maximum over all t is reached with t on an arrival: sliding the window right until its
//! left edge meets the first arrival inside loses nothing and can only gain on the right. So one
//! pass with two pointers over the sorted arrivals is exact and O(n) per Δ (rtsl re-sorted the
//! events per window, O(n²)).

use super::source::InterruptSource;

/// B_s(Δ) for the `sliding_window` characterization: the largest sum of durations of instances
/// whose arrivals fall in one window [t, t+Δ).
pub fn max_demand_ns(src: &InterruptSource, delta_ns: u64) -> u64 {
    max_demand_in(src.starts(), src.durations(), src.total_ns(), delta_ns)
}

/// [`max_demand_ns`] over windows that start on one of `a` (sorted arrivals, `d` their
/// durations, `total` the sum of `d`) and hold only instances of `a`.
pub(crate) fn max_demand_in(a: &[u64], d: &[u64], total: u64, delta_ns: u64) -> u64 {
    max_weight_in(a, |j| d[j], total, delta_ns)
}

/// The largest number of arrivals in one window [t, t+Δ) (for `sliding_window_owcet`).
pub fn max_arrivals(src: &InterruptSource, delta_ns: u64) -> u64 {
    max_arrivals_in(src.starts(), delta_ns)
}

/// [`max_arrivals`] over the sorted arrivals `a`.
pub(crate) fn max_arrivals_in(a: &[u64], delta_ns: u64) -> u64 {
    max_weight_in(a, |_| 1, a.len() as u64, delta_ns)
}

/// The largest sum of `w(j)` over the arrivals `a[j]` (sorted) of one window [t, t+Δ) that
/// starts on an arrival; `total` is the sum over all of them.
fn max_weight_in(a: &[u64], w: impl Fn(usize) -> u64, total: u64, delta_ns: u64) -> u64 {
    let n = a.len();
    if n == 0 || delta_ns == 0 {
        return 0;
    }
    // Shortcut: a window longer than the whole record holds every instance.
    if a[n - 1] - a[0] < delta_ns {
        return total;
    }
    let mut best = 0u64;
    let mut sum = 0u64;
    let mut j = 0usize;
    for i in 0..n {
        let end = a[i].saturating_add(delta_ns);
        // Invariant: j > i after the loop since a[i] < a[i] + Δ (Δ ≥ 1) unless saturated.
        if j < i {
            j = i;
            sum = 0;
        }
        while j < n && a[j] < end {
            sum += w(j);
            j += 1;
        }
        if sum > best {
            best = sum;
        }
        if j == n {
            // Every later window is a suffix of this one: it cannot hold more.
            break;
        }
        if j > i {
            sum -= w(i);
        }
    }
    best
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bound::source::{RawInstance, SourceKind};

    /// A source of (arrival, duration) instances.
    pub(crate) fn src(v: &[(u64, u64)]) -> InterruptSource {
        source("x", SourceKind::Irq, v, "test")
    }

    /// The source `name` of `kind` from (arrival, duration) pairs, its rows numbered in order
    /// (`origin` names them in its errors).
    pub(crate) fn source(
        name: &str,
        kind: SourceKind,
        v: &[(u64, u64)],
        origin: &str,
    ) -> InterruptSource {
        let raw = v
            .iter()
            .enumerate()
            .map(|(i, &(s, d))| RawInstance {
                start_ns: s,
                duration_ns: d,
                row: i as u64,
            })
            .collect();
        InterruptSource::build(name, kind, raw, origin).unwrap().0
    }

    /// Brute force over every real-valued t is equivalent to t on each arrival (see module doc),
    /// and also to t = arrival - Δ + 1 style shifts; we check all integer t in a range.
    fn brute(v: &[(u64, u64)], delta: u64) -> (u64, u64) {
        let mut best = (0, 0);
        let hi = v.iter().map(|x| x.0).max().unwrap_or(0) + 1;
        for t in 0..=hi {
            let inw: Vec<_> = v.iter().filter(|x| x.0 >= t && x.0 < t + delta).collect();
            best.0 = best.0.max(inw.iter().map(|x| x.1).sum());
            best.1 = best.1.max(inw.len() as u64);
        }
        best
    }

    #[test]
    fn hand_worked() {
        // Arrivals 0,10,15,40 with durations 3,2,4,1.
        let v = [(0, 3), (10, 2), (15, 4), (40, 1)];
        let s = src(&v);
        // Δ=1: any single instance, the largest is 4.
        assert_eq!(max_demand_ns(&s, 1), 4);
        assert_eq!(max_arrivals(&s, 1), 1);
        // Δ=6: [10,16) holds 10 and 15 -> 2+4 = 6 and 2 arrivals.
        assert_eq!(max_demand_ns(&s, 6), 6);
        assert_eq!(max_arrivals(&s, 6), 2);
        // Δ=5: [10,15) is half-open, 15 is excluded -> best is still 4 (a single instance).
        assert_eq!(max_demand_ns(&s, 5), 4);
        // Δ=16: [0,16) holds 0,10,15 -> 3+2+4 = 9.
        assert_eq!(max_demand_ns(&s, 16), 9);
        assert_eq!(max_arrivals(&s, 16), 3);
        // Δ=41: everything, 3+2+4+1 = 10.
        assert_eq!(max_demand_ns(&s, 41), 10);
        assert_eq!(max_arrivals(&s, 41), 4);
        // Δ=0: empty window.
        assert_eq!(max_demand_ns(&s, 0), 0);
    }

    #[test]
    fn arrival_at_the_end_of_time() {
        // a[i] + Δ saturates at u64::MAX: the window [MAX, MAX) is empty, no underflow.
        let s = src(&[(0, 1), (u64::MAX, 2)]);
        assert_eq!(max_demand_ns(&s, 5), 1);
        assert_eq!(max_arrivals(&s, 5), 1);
    }

    #[test]
    fn matches_brute_force() {
        let v = [(2, 1), (3, 0), (7, 2), (20, 5), (26, 1), (27, 1), (31, 3)];
        let s = src(&v);
        for delta in 0..40 {
            let (sum, cnt) = brute(&v, delta);
            assert_eq!(max_demand_ns(&s, delta), sum, "delta {delta}");
            assert_eq!(max_arrivals(&s, delta), cnt, "delta {delta}");
        }
    }
}
