//! Per-operation duration records (§2.3.8 "By default, PRAcTISE measures … duration and number
//! of pull and push operations, enqueue and dequeue, data_preempt, data_finish and data_find").
//! The thesis kept every sample in an array and printed them at the end; a run here may last
//! hours, so each thread keeps a fixed-size histogram per operation instead (2 significant
//! digits: exact below 256 ns, within 1 % above — finer than the run-to-run spread), with the
//! exact minimum, maximum and sum beside it.

use crate::clock::OpClock;
use rtscope_model::practise::{PractiseCounts, PractiseOp};

/// The timed operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Enqueue,
    Dequeue,
    Push,
    Pull,
    PushPreempt,
    PushFinish,
    PushFind,
    PullPreempt,
    PullFinish,
    PullFind,
}

pub const OPS: [Op; 10] = [
    Op::Enqueue,
    Op::Dequeue,
    Op::Push,
    Op::Pull,
    Op::PushPreempt,
    Op::PushFinish,
    Op::PushFind,
    Op::PullPreempt,
    Op::PullFinish,
    Op::PullFind,
];

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Enqueue => "enqueue",
            Op::Dequeue => "dequeue",
            Op::Push => "push",
            Op::Pull => "pull",
            Op::PushPreempt => "push_preempt",
            Op::PushFinish => "push_finish",
            Op::PushFind => "push_find",
            Op::PullPreempt => "pull_preempt",
            Op::PullFinish => "pull_finish",
            Op::PullFind => "pull_find",
        }
    }
}

/// Highest duration a histogram holds (longer ones are counted at this value; the exact
/// maximum is kept beside it).
const HIGHEST_NS: u64 = 10_000_000_000;

#[derive(Clone, Debug)]
pub struct OpHist {
    h: hdrhistogram::Histogram<u64>,
    min_ns: u64,
    max_ns: u64,
    sum_ns: u128,
}

impl Default for OpHist {
    fn default() -> Self {
        Self::new()
    }
}

impl OpHist {
    pub fn new() -> OpHist {
        OpHist {
            // Bounds are constants within hdrhistogram's limits: this cannot fail.
            h: hdrhistogram::Histogram::new_with_bounds(1, HIGHEST_NS, 2)
                .expect("constant histogram bounds"),
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
        }
    }
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.h.saturating_record(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns += ns as u128;
    }
    pub fn count(&self) -> u64 {
        self.h.len()
    }
    pub fn merge(&mut self, o: &OpHist) {
        // Same bounds on both sides: addition cannot fail.
        let _ = self.h.add(&o.h);
        self.min_ns = self.min_ns.min(o.min_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
        self.sum_ns += o.sum_ns;
    }
    /// The boxplot figures; `None` when nothing was recorded.
    pub fn summary(&self, op: &str) -> Option<PractiseOp> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        // Quantiles from the histogram, clamped into the exact [min, max].
        let q = |p: f64| self.h.value_at_quantile(p).clamp(self.min_ns, self.max_ns);
        Some(PractiseOp {
            op: op.to_string(),
            count: n,
            min_ns: self.min_ns,
            q1_ns: q(0.25),
            median_ns: q(0.5),
            q3_ns: q(0.75),
            p99_ns: q(0.99),
            max_ns: self.max_ns,
            mean_ns: self.sum_ns as f64 / n as f64,
        })
    }
}

/// One thread's records: a histogram per operation and the event counts.
pub struct Rec {
    pub clock: OpClock,
    pub hists: Vec<OpHist>,
    pub counts: PractiseCounts,
}

impl Rec {
    pub fn new(clock: OpClock) -> Rec {
        Rec {
            clock,
            hists: OPS.iter().map(|_| OpHist::new()).collect(),
            counts: PractiseCounts::default(),
        }
    }
    #[inline(always)]
    pub fn begin(&self) -> u64 {
        self.clock.start()
    }
    #[inline(always)]
    pub fn end(&mut self, op: Op, t0: u64) {
        let t1 = self.clock.stop();
        let ns = self.clock.ns(t1.wrapping_sub(t0));
        self.hists[op as usize].record(ns);
    }
    pub fn merge(&mut self, o: &Rec) {
        for (a, b) in self.hists.iter_mut().zip(&o.hists) {
            a.merge(b);
        }
        let (c, d) = (&mut self.counts, &o.counts);
        c.cycles += d.cycles;
        c.missed_cycles += d.missed_cycles;
        c.activations += d.activations;
        c.early_finishes += d.early_finishes;
        c.finish_on_idle += d.finish_on_idle;
        c.expiries += d.expiries;
        c.pushes += d.pushes;
        c.pulls += d.pulls;
        c.push_stale += d.push_stale;
        c.pull_stale += d.pull_stale;
    }
    /// Every recorded operation, then `push_modify`/`pull_modify` (preempt and finish together:
    /// the "modify" of Figs. 2.24–2.27).
    pub fn ops(&self) -> Vec<PractiseOp> {
        let mut out: Vec<PractiseOp> = OPS
            .iter()
            .filter_map(|&op| self.hists[op as usize].summary(op.name()))
            .collect();
        for (name, a, b) in [
            ("push_modify", Op::PushPreempt, Op::PushFinish),
            ("pull_modify", Op::PullPreempt, Op::PullFinish),
        ] {
            let mut h = self.hists[a as usize].clone();
            h.merge(&self.hists[b as usize]);
            out.extend(h.summary(name));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_of_a_known_set() {
        let mut h = OpHist::new();
        for v in 1..=100u64 {
            h.record(v);
        }
        let s = h.summary("x").unwrap();
        assert_eq!((s.count, s.min_ns, s.max_ns), (100, 1, 100));
        // Values below 256 are exact at 2 significant digits.
        assert_eq!((s.q1_ns, s.median_ns, s.q3_ns, s.p99_ns), (25, 50, 75, 99));
        assert!((s.mean_ns - 50.5).abs() < 1e-9);
        let mut g = OpHist::new();
        g.record(0);
        g.record(20_000);
        h.merge(&g);
        let s = h.summary("x").unwrap();
        assert_eq!((s.count, s.min_ns, s.max_ns), (102, 0, 20_000));
        assert!(OpHist::new().summary("x").is_none());
    }
}
