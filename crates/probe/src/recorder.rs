//! Per-thread sample recording. Everything is allocated before the loop starts; recording a
//! sample is a few integer updates (see benches/record.rs: the cost is measured, not assumed).

use rtscope_model::histogram::LinearHistogram;
use rtscope_model::worst::WorstN;
use rtscope_model::{Histogram, SampleRef};

pub struct Recorder {
    pub cpu: u32,
    pub tid: u32,
    pub hist: Histogram,
    pub linear: LinearHistogram,
    pub cycles: u64,
    pub overruns: u64,
    worst: WorstN<SampleRef>,
    threshold_ns: u64,
    pub above: Vec<SampleRef>,
    pub above_dropped: u64,
}

impl Recorder {
    pub fn new(
        cpu: u32,
        tid: u32,
        linear_max_us: u32,
        worst_n: usize,
        threshold_ns: Option<u64>,
        above_cap: usize,
    ) -> Self {
        Recorder {
            cpu,
            tid,
            hist: Histogram::new(),
            linear: LinearHistogram::new(linear_max_us),
            cycles: 0,
            overruns: 0,
            worst: WorstN::new(worst_n),
            threshold_ns: threshold_ns.unwrap_or(u64::MAX),
            above: Vec::with_capacity(if threshold_ns.is_some() { above_cap } else { 0 }),
            above_dropped: 0,
        }
    }

    /// Bytes of buffers this recorder holds (reported as prefaulted heap).
    pub fn footprint_bytes(&self) -> u64 {
        (std::mem::size_of::<u64>() * (self.linear.counts().len() + 28 * 1024)
            + self.worst.heap_bytes()
            + std::mem::size_of::<SampleRef>() * self.above.capacity()) as u64
    }

    #[inline]
    pub fn record(&mut self, expected_ns: u64, latency_ns: u64) {
        let cycle = self.cycles;
        self.cycles += 1;
        self.hist.record(latency_ns);
        self.linear.record(latency_ns);
        if self.worst.enters(latency_ns, cycle) {
            self.push_worst(cycle, expected_ns, latency_ns);
        }
        if latency_ns > self.threshold_ns {
            self.push_above(cycle, expected_ns, latency_ns);
        }
    }

    #[cold]
    fn push_worst(&mut self, cycle: u64, expected_ns: u64, latency_ns: u64) {
        let s = self.sample(cycle, expected_ns, latency_ns);
        self.worst.push(latency_ns, cycle, s);
    }

    #[cold]
    fn push_above(&mut self, cycle: u64, expected_ns: u64, latency_ns: u64) {
        if self.above.len() < self.above.capacity() {
            let s = self.sample(cycle, expected_ns, latency_ns);
            self.above.push(s);
        } else {
            self.above_dropped += 1;
        }
    }

    fn sample(&self, cycle: u64, expected_ns: u64, latency_ns: u64) -> SampleRef {
        SampleRef {
            cpu: self.cpu,
            tid: self.tid,
            cycle,
            expected_ns,
            latency_ns,
        }
    }

    /// Add `delta`, the samples a thread recorded after those already here (its recorder as the
    /// thread handed it over, see [`crate::measure::Measurement::collect`]), as if they had
    /// been recorded here: the histograms add up, the worst-N and the first `above_cap` samples
    /// above the threshold are the run's, not the delta's. `delta.cycles` is the thread's
    /// running count (a handed-over recorder continues the numbering), so it is taken as is.
    pub fn absorb(&mut self, delta: &Recorder) {
        self.cpu = delta.cpu;
        self.tid = delta.tid;
        self.cycles = self.cycles.max(delta.cycles);
        self.overruns += delta.overruns;
        self.hist.merge(&delta.hist);
        self.linear.merge(&delta.linear);
        for s in delta.worst.iter() {
            self.worst.push(s.latency_ns, s.cycle, *s);
        }
        for s in &delta.above {
            if self.above.len() < self.above.capacity() {
                self.above.push(*s);
            } else {
                self.above_dropped += 1;
            }
        }
        self.above_dropped += delta.above_dropped;
    }

    /// Empty again for the thread to record into, every buffer kept (no allocation).
    pub fn clear(&mut self) {
        self.hist.reset();
        self.linear.reset();
        self.cycles = 0;
        self.overruns = 0;
        self.worst.clear();
        self.above.clear();
        self.above_dropped = 0;
    }

    /// Continue `prev`'s numbering and identity: what a recorder takes over when a thread
    /// swaps it in for the one it hands over.
    #[inline]
    pub fn continue_from(&mut self, prev: &Recorder) {
        self.cycles = prev.cycles;
        self.cpu = prev.cpu;
        self.tid = prev.tid;
    }

    /// The worst samples, largest first.
    pub fn worst(&self) -> Vec<SampleRef> {
        self.worst.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_and_threshold_are_exact() {
        let mut r = Recorder::new(0, 1, 100, 3, Some(50_000), 2);
        let lats = [10_000u64, 70_000, 5_000, 60_000, 90_000, 20_000, 80_000];
        for (i, &l) in lats.iter().enumerate() {
            r.record(i as u64 * 1_000_000, l);
        }
        let w: Vec<u64> = r.worst().iter().map(|s| s.latency_ns).collect();
        assert_eq!(w, vec![90_000, 80_000, 70_000]);
        assert_eq!(r.worst()[0].cycle, 4);
        // above 50 µs: 70, 60, 90, 80 → 2 kept (cap), 2 dropped
        assert_eq!(r.above.len(), 2);
        assert_eq!(r.above_dropped, 2);
        assert_eq!(r.above[0].latency_ns, 70_000);
        assert_eq!(r.hist.count(), 7);
        assert_eq!(r.linear.counts()[5], 1);
    }

    /// A run recorded in handed-over pieces and absorbed in order is the run recorded whole.
    #[test]
    fn absorbed_pieces_equal_one_recorder() {
        let lats = [
            10_000u64, 70_000, 5_000, 60_000, 90_000, 20_000, 80_000, 90_000, 55_000, 1_000,
        ];
        let new = || Recorder::new(2, 7, 100, 3, Some(50_000), 4);
        let mut whole = new();
        whole.overruns = 3;
        for (i, &l) in lats.iter().enumerate() {
            whole.record(i as u64 * 1_000_000, l);
        }
        let mut acc = new();
        let mut cur = new();
        let mut spare = new();
        cur.overruns = 3;
        for (i, &l) in lats.iter().enumerate() {
            cur.record(i as u64 * 1_000_000, l);
            if i % 3 == 2 {
                spare.continue_from(&cur);
                std::mem::swap(&mut cur, &mut spare);
                acc.absorb(&spare);
                spare.clear();
            }
        }
        acc.absorb(&cur);
        assert_eq!(acc.cycles, whole.cycles);
        assert_eq!(acc.overruns, whole.overruns);
        assert!(acc.hist == whole.hist);
        assert_eq!(acc.linear, whole.linear);
        assert_eq!(acc.worst(), whole.worst());
        assert_eq!(acc.above, whole.above);
        assert_eq!(acc.above_dropped, whole.above_dropped);
        assert_eq!((acc.cpu, acc.tid), (2, 7));
    }
}
