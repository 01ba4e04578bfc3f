//! One interrupt source as it was at each instant of the time-to-bound series, without copying
//! a prefix per instant.
//!
//! The series asks, at instants t_1 < … < t_P, for the sliding-window bound of the instances that
//! had ended by t_k: a prefix of each source's sorted instances, whose length m_k only grows. The
//! view keeps the prefix's oWCET, oMIAT and total as running values (advanced instance by
//! instance, once over the run), and remembers B(Δ) of every window length Δ the fixed point
//! asked for, with the prefix length it was computed on. Asked again at a longer prefix m > m₀,
//! only windows that can hold an instance of [m₀, m) are new: those starting on an arrival
//! after a_{m₀} − Δ (a window [a_i, a_i + Δ) that ends by a_{m₀} holds old instances only, and
//! its demand is already in B_{m₀}(Δ)). So a window length the fixed point keeps asking for
//! costs, over the whole series, one pass over the instances plus, per instant, those within Δ
//! of the previous prefix's end; the values are exactly those of the prefix's own
//! [`super::window::max_demand_ns`]. Only a window length never asked before costs a pass over
//! the prefix: the fixed point's iterations change only where the bound of some instant grows.

use super::source::{InterruptSource, SourceKind};
use super::window;
use super::Interference;
use std::cell::RefCell;
use std::collections::HashMap;

/// Window lengths remembered per source: a fixed point takes tens of iterations per instant,
/// a series has at most a few thousand instants; past this the memory starts afresh.
const MAX_REMEMBERED: usize = 1 << 16;

/// A source's first `m` instances (see the module's comment).
pub(crate) struct PrefixSource<'a> {
    src: &'a InterruptSource,
    m: usize,
    owcet_ns: u64,
    omiat_ns: Option<u64>,
    total_ns: u64,
    /// Δ → (prefix length, B(Δ) over that prefix).
    demand: RefCell<HashMap<u64, (usize, u64)>>,
}

impl<'a> PrefixSource<'a> {
    pub(crate) fn new(src: &'a InterruptSource) -> Self {
        PrefixSource {
            src,
            m: 0,
            owcet_ns: 0,
            omiat_ns: None,
            total_ns: 0,
            demand: RefCell::new(HashMap::new()),
        }
    }

    /// Grow the prefix to the instances that had ended by `t_ns` (never shrinks).
    pub(crate) fn advance_to(&mut self, t_ns: u64) {
        let to = self.src.ended_by(t_ns).max(self.m);
        let (a, d) = (self.src.starts(), self.src.durations());
        for i in self.m..to {
            self.owcet_ns = self.owcet_ns.max(d[i]);
            // Building the source checked that the total fits in u64.
            self.total_ns = self.total_ns.saturating_add(d[i]);
            if i > 0 {
                let gap = a[i] - a[i - 1];
                self.omiat_ns = Some(self.omiat_ns.map_or(gap, |g| g.min(gap)));
            }
        }
        self.m = to;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.m == 0
    }
}

impl Interference for PrefixSource<'_> {
    fn name(&self) -> &str {
        &self.src.name
    }
    fn kind(&self) -> SourceKind {
        self.src.kind
    }
    fn count(&self) -> u64 {
        self.m as u64
    }
    fn owcet_ns(&self) -> u64 {
        self.owcet_ns
    }
    fn omiat_ns(&self) -> Option<u64> {
        self.omiat_ns
    }
    fn demand_ns(&self, delta_ns: u64) -> u64 {
        let (a, d) = (
            &self.src.starts()[..self.m],
            &self.src.durations()[..self.m],
        );
        let mut memo = self.demand.borrow_mut();
        let known = memo.get(&delta_ns).copied();
        let b = match known {
            Some((m0, b0)) if m0 == self.m => b0,
            Some((m0, b0)) if m0 < self.m && delta_ns > 0 => {
                // Windows starting on an arrival whose window reaches past a_{m0}.
                let first_new = a[m0];
                let lo = a.partition_point(|&x| x.saturating_add(delta_ns) <= first_new);
                let total: u64 = d[lo..].iter().fold(0u64, |s, &x| s.saturating_add(x));
                b0.max(window::max_demand_in(&a[lo..], &d[lo..], total, delta_ns))
            }
            _ => window::max_demand_in(a, d, self.total_ns, delta_ns),
        };
        if memo.len() >= MAX_REMEMBERED {
            memo.clear();
        }
        memo.insert(delta_ns, (self.m, b));
        b
    }
    fn arrivals(&self, delta_ns: u64) -> u64 {
        // Not asked by the series (sliding window only); exact over the prefix.
        window::max_arrivals_in(&self.src.starts()[..self.m], delta_ns)
    }
}

/// The time interrupt handlers of `src` ran inside [from, to), using `cum` (cum[i] = the sum of
/// the first i durations): instances of one source do not overlap and are sorted, so all but
/// the first and last instance that meet the interval lie wholly inside it. O(log n).
pub(crate) fn irq_time_in(src: &InterruptSource, cum: &[u64], from: u64, to: u64) -> u64 {
    let (a, d) = (src.starts(), src.durations());
    let i0 = src.ended_by(from);
    let i1 = a.partition_point(|&x| x < to);
    if i0 >= i1 {
        return 0;
    }
    let edge = |i: usize| super::events::overlap_ns(a[i], d[i], from, to);
    if i1 - i0 == 1 {
        return edge(i0);
    }
    let inner = cum[i1 - 1] - cum[i0 + 1];
    edge(i0).saturating_add(inner).saturating_add(edge(i1 - 1))
}

/// cum[i] = the sum of the first i durations of `src` (n + 1 entries).
pub(crate) fn cumulative(src: &InterruptSource) -> Vec<u64> {
    let mut cum = Vec::with_capacity(src.len() + 1);
    let mut s = 0u64;
    cum.push(0);
    for &x in src.durations() {
        s = s.saturating_add(x);
        cum.push(s);
    }
    cum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bound::window::tests::src;

    /// At every prefix and every Δ, asked in any order and again at longer prefixes, the view
    /// answers what a copied prefix answers.
    #[test]
    fn matches_a_copied_prefix() {
        let mut v = Vec::new();
        let mut t = 0u64;
        for k in 0..200u64 {
            let dur = 1 + (k * 7919) % 13;
            v.push((t, dur));
            t += dur + 1 + (k * 104_729) % 29;
        }
        let s = src(&v);
        let mut view = PrefixSource::new(&s);
        let deltas = [1u64, 2, 5, 17, 40, 100, 333, 1_000, 5_000, 100_000];
        for end in (0..=t + 50).step_by(37) {
            view.advance_to(end);
            let copy = s.prefix(s.ended_by(end));
            assert_eq!(view.count(), copy.len() as u64);
            assert_eq!(view.owcet_ns(), copy.owcet_ns());
            assert_eq!(view.omiat_ns(), copy.omiat_ns());
            for (i, &delta) in deltas.iter().enumerate() {
                // Skip some lengths at some instants, so memos of every age are updated.
                if (end / 37 + i as u64).is_multiple_of(3) {
                    continue;
                }
                assert_eq!(
                    view.demand_ns(delta),
                    window::max_demand_ns(&copy, delta),
                    "prefix to {end}, delta {delta}"
                );
                assert_eq!(
                    view.arrivals(delta),
                    window::max_arrivals(&copy, delta),
                    "prefix to {end}, delta {delta}"
                );
            }
        }
    }

    #[test]
    fn irq_time_matches_the_walk() {
        let v = [(10, 5), (20, 3), (30, 10), (50, 1), (60, 4)];
        let s = src(&v);
        let cum = cumulative(&s);
        for from in 0..70 {
            for to in from..75 {
                let walk: u64 = v
                    .iter()
                    .map(|&(a, d)| super::super::events::overlap_ns(a, d, from, to))
                    .sum();
                assert_eq!(irq_time_in(&s, &cum, from, to), walk, "[{from}, {to})");
            }
        }
    }
}
