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
}
