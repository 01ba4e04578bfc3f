//! What a run shows while it goes: the figures so far ([`LiveSnapshot`]) and what a view does
//! with them ([`View`]). The figures are what each measurement thread published of its own
//! recorder (a swap of buffers every ~50 ms, `rtscope_probe::measure`), never read from the
//! threads while they record, so a view costs the loop one comparison per sample. The
//! views that draw text are `rtscope_report::live`'s.

use std::time::Duration;

/// One thread's figures so far.
#[derive(Clone, Debug, Default)]
pub struct ThreadLive {
    pub cpu: u32,
    pub tid: u32,
    pub samples: u64,
    pub overruns: u64,
    pub cur_ns: u64,
    pub min_ns: u64,
    pub avg_ns: u64,
    pub max_ns: u64,
    pub p999_ns: Option<u64>,
}

/// The run so far, as a view sees it.
#[derive(Clone, Debug, Default)]
pub struct LiveSnapshot {
    pub elapsed: Duration,
    pub total: Option<Duration>,
    pub threads: Vec<ThreadLive>,
    /// The cause with the largest share of the p99 tail so far (traced runs).
    pub dominant_tail_cause: Option<(String, f64)>,
    /// Kernel events the capture lost so far (traced runs).
    pub events_lost: Option<u64>,
    /// Runs traced in bursts: the bursts ended so far and the seconds they traced.
    pub bursts: Option<(u32, f64)>,
    /// Samples a ring could not hand over (the thread's own histogram still has them).
    pub ring_dropped: u64,
    pub rss_kib: Option<u64>,
    pub checkpoints: u32,
    /// Heap the streaming analysis holds: (attribution: look-back, pending samples, summary,
    /// worst-N; bound: interrupt histories and arrival curves).
    pub analysis_heap_bytes: Option<(u64, u64)>,
    /// What the capture holds: (queued batches, held events).
    pub trace_backlog: Option<(usize, usize)>,
    /// Samples drained from the rings and waiting for the trace to pass them.
    pub pending_samples: Option<usize>,
}

pub trait View {
    /// Called a few times a second with the figures so far, when [`View::update_due`].
    fn update(&mut self, s: &LiveSnapshot);
    /// Does the view want the figures now (`elapsed` since the start)? Building them reads every
    /// thread's percentiles and the process's RSS: a view that shows nothing, or shows a line a
    /// minute, spares the run that work at every tick.
    fn update_due(&self, _elapsed: Duration) -> bool {
        true
    }
    /// Called once at the end (clear or leave the display).
    fn finish(&mut self) {}
    /// Does the view need the sample stream (live figures)? A view that shows nothing does not,
    /// and then an untraced run streams nothing at all.
    fn wants_samples(&self) -> bool {
        true
    }
    /// Every sample drained from the rings, as it is drained (streamed runs only).
    fn samples(&mut self, _batch: &[crate::RawSample]) {}
    /// Does the view want an interim record now (`elapsed` since the start)?
    fn interim_due(&self, _elapsed: Duration) -> bool {
        false
    }
    /// The interim record the view asked for (the same a checkpoint stores: the threads'
    /// figures so far and, on traced runs, the attribution and bound so far).
    fn interim(&mut self, _rec: &crate::RunRecord, _elapsed: Duration) {}
}

pub struct NoView;
impl View for NoView {
    fn update(&mut self, _: &LiveSnapshot) {}
    fn update_due(&self, _elapsed: Duration) -> bool {
        false
    }
    fn wants_samples(&self) -> bool {
        false
    }
}
