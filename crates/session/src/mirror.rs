//! The orchestrating thread's copy of each measurement thread's figures, fed from the sample
//! rings: what the live view shows and what a checkpoint stores while the run is going. The
//! threads' own recorders stay the source of the final record (they see every sample even if a
//! ring overflowed); the mirror uses the same `Recorder`, so a checkpoint and the final record
//! have the same shape.

use rtscope_model::RawSample;
use rtscope_probe::recorder::Recorder;

pub struct Mirror {
    pub rec: Recorder,
    pub interval_ns: u64,
    last_expected_ns: Option<u64>,
    pub cur_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub sum_ns: u128,
    /// The tail model's block maxima (bounded reservoir, docs/tail.md).
    pub tail: rtscope_analysis::tail::BlockMaxima,
}

impl Mirror {
    /// The thread's next wake-up is due no earlier than this (None before its first sample).
    pub fn next_expected_ns(&self) -> Option<u64> {
        self.last_expected_ns.map(|e| e + self.interval_ns)
    }

    pub fn new(cpu: u32, interval_ns: u64, c: &rtscope_model::RunConfig) -> Mirror {
        Self::with(
            cpu,
            interval_ns,
            c.linear_max_us,
            c.worst_n,
            c.threshold_us.map(|u| u * 1000),
        )
    }

    pub fn with(
        cpu: u32,
        interval_ns: u64,
        linear_max_us: u32,
        worst_n: usize,
        threshold_ns: Option<u64>,
    ) -> Mirror {
        Mirror {
            rec: Recorder::new(
                cpu,
                0,
                linear_max_us,
                worst_n,
                threshold_ns,
                rtscope_probe::measure::ABOVE_THRESHOLD_CAP,
            ),
            interval_ns,
            last_expected_ns: None,
            cur_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
            tail: rtscope_analysis::tail::BlockMaxima::new(
                rtscope_analysis::tail::first_block_samples(interval_ns),
                rtscope_analysis::tail::RESERVOIR_CAPACITY,
            ),
        }
    }

    pub fn push(&mut self, s: &RawSample) {
        // Missed periods are the gap between consecutive planned wake-ups beyond one interval
        // (the loop re-arms at the next future period after an overrun).
        if let Some(prev) = self.last_expected_ns {
            if self.interval_ns > 0 && s.expected_ns > prev {
                self.rec.overruns += ((s.expected_ns - prev) / self.interval_ns).saturating_sub(1);
            }
        }
        self.last_expected_ns = Some(s.expected_ns);
        self.rec.tid = s.tid;
        self.rec.cpu = s.cpu;
        self.rec.record(s.expected_ns, s.latency_ns);
        self.cur_ns = s.latency_ns;
        self.min_ns = self.min_ns.min(s.latency_ns);
        self.max_ns = self.max_ns.max(s.latency_ns);
        self.sum_ns += s.latency_ns as u128;
        self.tail.push(s.latency_ns);
    }

    pub fn samples(&self) -> u64 {
        self.rec.cycles
    }

    pub fn avg_ns(&self) -> u64 {
        self.sum_ns
            .checked_div(self.rec.cycles as u128)
            .unwrap_or(0) as u64
    }

    pub fn p999_ns(&self) -> Option<u64> {
        self.rec.hist.quantile_ns(0.999)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overruns_from_planned_wakeups() {
        let mut m = Mirror::with(0, 1000, 100, 3, None);
        for (e, l) in [(1000u64, 5u64), (2000, 7), (5000, 3), (6000, 9)] {
            m.push(&RawSample {
                cpu: 0,
                tid: 9,
                cycle: 0,
                expected_ns: e,
                latency_ns: l,
            });
        }
        assert_eq!(m.rec.overruns, 2);
        assert_eq!(m.samples(), 4);
        assert_eq!((m.min_ns, m.max_ns, m.cur_ns, m.avg_ns()), (3, 9, 9, 6));
    }
}
