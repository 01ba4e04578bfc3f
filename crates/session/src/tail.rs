//! The tail model of a measurement (docs/tail.md): fitted when the run has ended, from the
//! block maxima kept of every streamed sample ([`Feed`]), one worker per CPU so that the fits
//! run in parallel where CPUs allow and never on a measuring thread.

use rtscope_analysis::tail::{self, BlockMaxima, TailInput};
use rtscope_model::{RawSample, RunRecord};

/// What the session keeps of one thread's streamed samples: the tail model's block maxima and
/// when the thread's next wake-up is due (the streaming analysis keeps the events that wake-up
/// may need). The thread's figures themselves are its own recorder's, as it publishes them.
pub struct Feed {
    /// The CPU of the last sample (unpinned DEADLINE threads move).
    pub cpu: u32,
    pub interval_ns: u64,
    last_expected_ns: Option<u64>,
    received: u64,
    /// The tail model's block maxima (bounded reservoir, docs/tail.md).
    pub tail: BlockMaxima,
}

impl Feed {
    pub fn new(cpu: u32, interval_ns: u64) -> Feed {
        Feed {
            cpu,
            interval_ns,
            last_expected_ns: None,
            received: 0,
            tail: BlockMaxima::new(
                tail::first_block_samples(interval_ns),
                tail::RESERVOIR_CAPACITY,
            ),
        }
    }

    pub fn push(&mut self, s: &RawSample) {
        self.last_expected_ns = Some(s.expected_ns);
        self.cpu = s.cpu;
        self.received += 1;
        self.tail.push(s.latency_ns);
    }

    /// Samples received from the thread's ring.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// The thread's next wake-up is due no earlier than this (None before its first sample).
    pub fn next_expected_ns(&self) -> Option<u64> {
        self.last_expected_ns.map(|e| e + self.interval_ns)
    }
}

/// Fit every CPU's tail and the run's, and add the report and its warnings to the record.
/// Nothing when the samples were not streamed (the feeds received none).
pub fn attach(feeds: &[Feed], rec: &mut RunRecord) {
    if feeds.iter().all(|f| f.received() == 0) {
        return;
    }
    let Some(m) = rec.measurement_mut() else {
        return;
    };
    let bound_of = |cpu: u32| {
        m.bound.as_ref().and_then(|b| {
            b.cpus
                .iter()
                .find(|c| c.cpu == cpu)
                .and_then(|c| c.bounds.sliding_window.latency_ns)
        })
    };
    let inputs: Vec<TailInput> = feeds
        .iter()
        .map(|f| TailInput::from_reservoir(f.cpu, &f.tail, f.interval_ns, bound_of(f.cpu)))
        .collect();
    let fits = std::thread::scope(|s| {
        let handles: Vec<_> = inputs
            .iter()
            .map(|i| s.spawn(move || tail::fit(i)))
            .collect();
        handles
            .into_iter()
            .zip(&inputs)
            .map(|(h, i)| h.join().unwrap_or_else(|_| tail::fit(i)))
            .collect()
    });
    let report = tail::assemble(&inputs, fits);
    let warnings = tail::warnings(&report);
    m.tail = Some(report);
    rec.warnings.extend(warnings);
}

/// `--until-stable`: every few seconds of the run, the 1e-9-per-sample estimate and its
/// interval per CPU (and, where a bound is measured, its latest time-to-bound point per CPU)
/// into trackers; the run ends when every series has moved less than the tolerance over the
/// window. Refitting runs on the session's thread, which never measures.
pub struct UntilStable {
    cfg: crate::resolve::UntilStable,
    tail: tail::StableTracker,
    bound: tail::StableTracker,
    next_s: f64,
    /// Set when the criterion ended the run.
    pub ended: Option<rtscope_model::tail::StableEnd>,
}

impl UntilStable {
    pub fn new(cfg: crate::resolve::UntilStable) -> UntilStable {
        UntilStable {
            cfg,
            tail: tail::StableTracker::new(cfg.tolerance, cfg.window_s),
            bound: tail::StableTracker::new(cfg.tolerance, cfg.window_s),
            next_s: 0.0,
            ended: None,
        }
    }

    /// How often the series get a point: a fortieth of the window, at least a second.
    fn every_s(&self) -> f64 {
        (self.cfg.window_s / 40.0).max(1.0)
    }

    /// One step at `t_s` into the run; true when the run should end now.
    pub fn step(&mut self, t_s: f64, feeds: &[Feed], bound: Option<Vec<f64>>) -> bool {
        if self.ended.is_some() || t_s < self.next_s {
            return self.ended.is_some();
        }
        self.next_s = t_s + self.every_s();
        let mut v = Vec::with_capacity(3 * feeds.len());
        let mut complete = true;
        for f in feeds {
            match tail::sample_level(f.tail.maxima(), f.tail.block_samples(), 1e-9) {
                Some((est, iv)) => match (iv.low, iv.high) {
                    (Some(lo), Some(hi)) => v.extend([lo, est, hi]),
                    _ => complete = false,
                },
                None => complete = false,
            }
        }
        self.tail.push(t_s, complete.then_some(v));
        let has_bound = bound.is_some();
        self.bound.push(t_s, bound);
        let tail_ok = self.tail.stable(t_s);
        let done = tail_ok && (!has_bound || self.bound.stable(t_s));
        if done {
            self.ended = Some(rtscope_model::tail::StableEnd {
                criterion: if has_bound { "tail_and_bound" } else { "tail" }.into(),
                tolerance: self.cfg.tolerance,
                window_s: self.cfg.window_s,
                ended_at_s: t_s,
            });
        }
        done
    }

    /// What the record says: the criterion that ended the run, or `max_duration`.
    pub fn end(&self, wall_s: f64) -> rtscope_model::tail::StableEnd {
        self.ended
            .clone()
            .unwrap_or_else(|| rtscope_model::tail::StableEnd {
                criterion: "max_duration".into(),
                tolerance: self.cfg.tolerance,
                window_s: self.cfg.window_s,
                ended_at_s: wall_s,
            })
    }
}
