//! Streaming per-sample attribution: the batch `attribute` for runs too long to hold in memory.
//!
//! Events and samples arrive in pieces; the caller promises a watermark W (no event with a
//! timestamp below W arrives any more). A sample's window [E, R) is complete once R < W, and it
//! is explained then by the same `attribute_one` the batch uses, on the same per-CPU event
//! sequence (events inserted in time order, recorded order on equal timestamps — the batch's
//! stable sort) and the same CPU state at E (all earlier events of that CPU applied). So each
//! sample's attribution equals the batch's, and the run summary is built online
//! (`online.rs`: exact counts, sums and maxima; p99 and the p99 tail to 1/64).
//!
//! What stays in memory: per CPU the events from (oldest pending sample's E, or W when none is
//! pending) − lookback onward, at most [`MAX_LOOKBACK_EVENTS`] of them before that point; the
//! pending samples; the online summary; the worst `top_n` samples. None of it grows with the
//! run's length. Events that leave the buffer are folded into the CPU's state at the buffer's
//! start, and swept for the whole-capture steal cross-check on the way.
//!
//! Where the stream can differ from the batch, and how it tells:
//! - an event below the watermark (the caller broke its promise) is dropped and counted
//!   (`late_events`);
//! - an NMI is recorded when its handler returns, `delta_ns` after it began: when the start lies
//!   below the watermark, samples already explained did not see it (counted). The start is
//!   placed at its true time when the buffer still holds that time, otherwise at the buffer's
//!   start;
//! - a sample whose E precedes the buffered events (it arrived more than the lookback after
//!   the watermark passed it) is explained with the state at the buffer's start (counted);
//! - causes are named with the `NameTables` passed when the sample is explained; `snapshot` and
//!   `finish` rename `thread:pid<N>` causes whose thread became known since.

use super::online::{attribution_heap_bytes, OnlineSummary};
use super::{
    attribute_one, busy_silence_ns, ev_out, expand, AttributionOptions, AttributionResult,
    CpuSlice, CpuState, Ev, SampleAttribution,
};
use rtscope_model::event::{Event, NameTables};
use rtscope_model::record::RawSample;
use rtscope_model::worst::WorstN;
use std::collections::{BTreeMap, VecDeque};

/// Events kept per CPU before the oldest pending sample for context, whatever the lookback.
pub const MAX_LOOKBACK_EVENTS: usize = 4096;

/// How long past the watermark a sample that has not arrived yet keeps its events in memory
/// (see [`StreamingAttribution::set_sample_floor`]): a measurement thread held off longer than
/// this (a CPU stalled for a second) has its sample explained with the state at the buffer's
/// start, and counted.
pub const MAX_SAMPLE_WAIT_NS: u64 = 1_000_000_000;

/// A sample worth keeping with its events (the flight recorder writes these to disk).
#[derive(Clone, Debug, PartialEq)]
pub struct KeptWindow {
    pub sample: RawSample,
    /// Why: `worst-n` (it entered the worst `top_n` so far), `worst-of:<cause>` (its
    /// contribution from that cause is the largest so far).
    pub reasons: Vec<String>,
    /// With its timeline (`segments`, and the events inside the window in `events`).
    pub attribution: SampleAttribution,
    /// The sample's CPU's events with `from_ns <= ts_ns <= to_ns` (wakings issued on another CPU
    /// for a task queued here carry that CPU's number).
    pub events: Vec<Event>,
    /// E − lookback, or later when the buffer no longer reached back that far.
    pub from_ns: u64,
    /// The window end R = E + latency.
    pub to_ns: u64,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    /// Arrival order: ties in latency go to the earlier sample, as the batch's index order does.
    seq: u64,
    s: RawSample,
}

impl Pending {
    fn end_ns(&self) -> u64 {
        self.s.expected_ns.saturating_add(self.s.latency_ns)
    }
}

/// One CPU's buffered events and the states around them.
#[derive(Debug, Default)]
struct CpuStream {
    ts: VecDeque<u64>,
    ev: VecDeque<Ev>,
    /// State after every event that left the buffer (the state at the buffer's start).
    base: CpuState,
    /// Every event of this CPU at or after this time is still in the buffer.
    frontier_ns: u64,
    /// `at_cursor` is `base` with the buffer's first `cursor` events applied: samples are
    /// explained in order of E, so each one only applies the events since the previous one.
    cursor: usize,
    at_cursor: CpuState,
    pending: Vec<Pending>,
    /// Any event (or remote waking) was seen: the CPU has a steal cross-check line.
    has_events: bool,
    /// The steal cross-check's sweep over the events that left the buffer.
    gap_prev_ts: Option<u64>,
    gap_ns: u64,
}

impl CpuStream {
    fn insert(&mut self, ts: u64, ev: Ev) {
        self.has_events = true;
        if self.ts.back().is_none_or(|&last| last <= ts) {
            self.ts.push_back(ts);
            self.ev.push_back(ev);
            return;
        }
        // After every buffered event with ts ≤ this one: the batch's stable sort keeps the
        // recorded order on equal timestamps.
        let pos = self.ts.partition_point(|&t| t <= ts);
        self.ts.insert(pos, ts);
        self.ev.insert(pos, ev);
        if pos < self.cursor {
            self.cursor = 0;
            self.at_cursor = self.base.clone();
        }
    }

    /// Fold the first `k` buffered events into `base`, sweeping them for the steal check.
    fn drop_front(&mut self, k: usize, opts: &AttributionOptions) {
        for _ in 0..k {
            let (Some(ts), Some(ev)) = (self.ts.pop_front(), self.ev.pop_front()) else {
                break;
            };
            if let Some(prev) = self.gap_prev_ts {
                self.gap_ns += busy_silence_ns(&self.base, ts - prev, opts);
            }
            self.base.apply(ts, &ev);
            self.gap_prev_ts = Some(ts);
            self.frontier_ns = self.frontier_ns.max(ts.saturating_add(1));
        }
        rtscope_model::slack::release_slack_deque(&mut self.ts);
        rtscope_model::slack::release_slack_deque(&mut self.ev);
        if self.cursor >= k {
            self.cursor -= k;
        } else {
            self.cursor = 0;
            self.at_cursor = self.base.clone();
        }
    }

    /// The steal cross-check's eventless busy total over the events that left the buffer and
    /// the buffered ones below `until_ns`.
    fn gap_total(&self, until_ns: u64, opts: &AttributionOptions) -> u64 {
        let mut st = self.base.clone();
        let mut prev = self.gap_prev_ts;
        let mut total = self.gap_ns;
        for (&ts, ev) in self.ts.iter().zip(&self.ev) {
            if ts >= until_ns {
                break;
            }
            if let Some(p) = prev {
                total += busy_silence_ns(&st, ts - p, opts);
            }
            st.apply(ts, ev);
            prev = Some(ts);
        }
        total
    }

    fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.ts.capacity() * size_of::<u64>()
            + self.ev.capacity() * size_of::<Ev>()
            + self.pending.capacity() * size_of::<Pending>()
            + self.base.stack.heap_bytes()
            + self.at_cursor.stack.heap_bytes()
    }
}

/// Per-sample attribution over a stream of events and samples, in memory independent of the
/// run's length (see the module comment for what is kept and what is exact).
#[derive(Debug)]
pub struct StreamingAttribution {
    opts: AttributionOptions,
    lookback_ns: u64,
    cpus: BTreeMap<u32, CpuStream>,
    watermark_ns: u64,
    next_seq: u64,
    summary: OnlineSummary,
    /// The worst `top_n` explained so far, worst first (ties: earlier arrival first).
    worst: WorstN<SampleAttribution>,
    late_events: u64,
    late_samples: u64,
    nmi_starts_below_watermark: u64,
    ready: Vec<Pending>,
    new_max: Vec<u16>,
    sample_floor_ns: Option<u64>,
}

impl StreamingAttribution {
    /// `lookback_ns`: events kept per CPU before the oldest pending sample (context for kept
    /// windows), at most [`MAX_LOOKBACK_EVENTS`] of them. It is also how far behind the
    /// watermark a sample's E may be when the sample arrives and still be explained exactly.
    pub fn new(opts: AttributionOptions, lookback_ns: u64) -> Self {
        StreamingAttribution {
            summary: OnlineSummary::new(opts.tail_threshold_ns),
            worst: WorstN::new(opts.top_n),
            opts,
            lookback_ns,
            cpus: BTreeMap::new(),
            watermark_ns: 0,
            next_seq: 0,
            late_events: 0,
            late_samples: 0,
            nmi_starts_below_watermark: 0,
            ready: Vec::new(),
            new_max: Vec::new(),
            sample_floor_ns: None,
        }
    }

    /// No sample still to arrive has an E below `ns` (the caller's knowledge of its threads: the
    /// next expected wake-up of the slowest). A sample is delivered only once its thread ran,
    /// E + latency after its wake-up was due, so with a long latency the events can pass the
    /// watermark before the sample arrives; events from `ns` − lookback on are then kept for
    /// it (for at most [`MAX_SAMPLE_WAIT_NS`] behind the watermark). Without a floor, only
    /// samples arriving within the lookback after the watermark passed their E are exact.
    pub fn set_sample_floor(&mut self, ns: u64) {
        self.sample_floor_ns = Some(self.sample_floor_ns.map_or(ns, |f| f.max(ns)));
    }

    /// Events lost and steal time per CPU, known at the end of the capture: used by
    /// `snapshot`/`finish` (lost events flag the per-CPU lines and warnings; steal is set beside
    /// the eventless busy stretches).
    pub fn set_loss_and_steal(
        &mut self,
        lost_per_cpu: Vec<(u32, u64)>,
        steal_ns_per_cpu: Vec<(u32, u64)>,
    ) {
        self.opts.lost_per_cpu = lost_per_cpu;
        self.opts.steal_ns_per_cpu = steal_ns_per_cpu;
    }

    /// Kernel events, any interleaving across CPUs, not necessarily sorted. An event below the
    /// watermark already passed to `advance` is counted in `late_events` and dropped.
    pub fn push_events(&mut self, events: &[Event]) {
        let w = self.watermark_ns;
        for e in events {
            if e.ts_ns < w {
                self.late_events += 1;
                continue;
            }
            let cpus = &mut self.cpus;
            let nmi_below = &mut self.nmi_starts_below_watermark;
            expand(e, |cpu, ts, ev| {
                let c = cpus.entry(cpu).or_default();
                if ts < w {
                    // Only an NMI's start precedes its record.
                    *nmi_below += 1;
                }
                c.insert(ts.max(c.frontier_ns), ev);
            });
        }
    }

    /// Samples in any order (each measurement thread delivers its own in order).
    pub fn push_samples(&mut self, samples: &[RawSample]) {
        for s in samples {
            let c = self.cpus.entry(s.cpu).or_default();
            if s.expected_ns < c.frontier_ns {
                self.late_samples += 1;
            }
            c.pending.push(Pending {
                seq: self.next_seq,
                s: *s,
            });
            self.next_seq += 1;
        }
    }

    /// Explain every pending sample whose window end E + latency is below `watermark_ns`, then
    /// drop the events no pending or future sample needs. Each explained sample that enters the
    /// worst `top_n` so far, or holds the largest contribution of some cause so far, is handed to
    /// `keep` with its timeline and its CPU's events from E − lookback to R. Returns the number
    /// of samples explained.
    pub fn advance(
        &mut self,
        watermark_ns: u64,
        names: &NameTables,
        keep: &mut dyn FnMut(KeptWindow),
    ) -> u64 {
        self.advance_observed(watermark_ns, names, keep, &mut |_, _| {})
    }

    /// `advance`, also showing `each` every explained sample (its arrival index and its
    /// attribution) as it is explained.
    pub fn advance_observed(
        &mut self,
        watermark_ns: u64,
        names: &NameTables,
        keep: &mut dyn FnMut(KeptWindow),
        each: &mut dyn FnMut(u64, &SampleAttribution),
    ) -> u64 {
        self.watermark_ns = self.watermark_ns.max(watermark_ns);
        let n = self.explain(Some(self.watermark_ns), names, keep, each);
        self.drop_old_events(Some(self.watermark_ns));
        n
    }

    /// The capture stops for a while (tracing in bursts): explain every pending sample with the
    /// events delivered, fold those events, and forget what each CPU was doing. The caller
    /// promises that every event up to `end_ns` was pushed and that no sample of this stretch is
    /// still to come. The next stretch then starts as a run starts, knowing nothing of what ran
    /// in the gap: a task switched in before the gap is not assumed to be running after it, and
    /// the gap's silence is not swept into the steal cross-check. Returns the samples explained.
    pub fn end_stretch(
        &mut self,
        end_ns: u64,
        names: &NameTables,
        keep: &mut dyn FnMut(KeptWindow),
        each: &mut dyn FnMut(u64, &SampleAttribution),
    ) -> u64 {
        self.watermark_ns = self.watermark_ns.max(end_ns);
        let n = self.explain(None, names, keep, each);
        self.drop_old_events(None);
        for c in self.cpus.values_mut() {
            c.base = CpuState::default();
            c.at_cursor = CpuState::default();
            c.cursor = 0;
            c.gap_prev_ts = None;
            c.frontier_ns = c.frontier_ns.max(end_ns);
        }
        n
    }

    /// The result so far (for checkpoints and the live view), as the batch builds it; the steal
    /// cross-check covers the events below the watermark.
    pub fn snapshot(&self, names: &NameTables) -> AttributionResult {
        let gaps = self
            .cpus
            .iter()
            .filter(|(_, c)| c.has_events)
            .map(|(&cpu, c)| (cpu, c.gap_total(self.watermark_ns, &self.opts)))
            .collect();
        let worst = self.worst.iter().cloned().collect();
        let mut r = self.summary.result(&self.opts, worst, gaps, names);
        if self.late_events > 0 {
            r.warnings.push(format!(
                "{} kernel events arrived below the watermark and were dropped",
                self.late_events
            ));
        }
        if self.nmi_starts_below_watermark > 0 {
            r.warnings.push(format!(
                "{} NMIs began below the watermark when they were recorded: samples explained before may miss them",
                self.nmi_starts_below_watermark
            ));
        }
        if self.late_samples > 0 {
            r.warnings.push(format!(
                "{} samples arrived after their CPU's events before E were folded: explained with the state at the oldest buffered event",
                self.late_samples
            ));
        }
        r
    }

    /// Explain everything still pending (end of run) and return the final result.
    pub fn finish(self, names: &NameTables, keep: &mut dyn FnMut(KeptWindow)) -> AttributionResult {
        self.finish_observed(names, keep, &mut |_, _| {})
    }

    /// `finish`, showing `each` every sample explained on the way (as `advance_observed`).
    pub fn finish_observed(
        mut self,
        names: &NameTables,
        keep: &mut dyn FnMut(KeptWindow),
        each: &mut dyn FnMut(u64, &SampleAttribution),
    ) -> AttributionResult {
        self.explain(None, names, keep, each);
        self.drop_old_events(None);
        self.snapshot(names)
    }

    pub fn pending_samples(&self) -> usize {
        self.cpus.values().map(|c| c.pending.len()).sum()
    }

    pub fn buffered_events(&self) -> usize {
        self.cpus.values().map(|c| c.ts.len()).sum()
    }

    /// Events dropped for arriving below the watermark.
    pub fn late_events(&self) -> u64 {
        self.late_events
    }

    /// Samples explained so far.
    pub fn samples_explained(&self) -> u64 {
        self.summary.samples()
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let cpus: usize = self
            .cpus
            .values()
            .map(|c| size_of::<(u32, CpuStream)>() + c.heap_bytes())
            .sum();
        let worst: usize =
            self.worst.heap_bytes() + self.worst.iter().map(attribution_heap_bytes).sum::<usize>();
        cpus + worst
            + self.summary.heap_bytes()
            + self.ready.capacity() * size_of::<Pending>()
            + self.new_max.capacity() * size_of::<u16>()
            + (self.opts.lost_per_cpu.capacity() + self.opts.steal_ns_per_cpu.capacity())
                * size_of::<(u32, u64)>()
    }

    /// The dominant tail cause so far: the largest share of the p99 tail's latency.
    pub fn dominant_tail_cause(&self) -> Option<(String, f64)> {
        self.summary.dominant_tail_cause()
    }

    /// Does a sample with this latency and arrival enter the worst `top_n` so far?
    fn enters_worst(&self, latency_ns: u64, seq: u64) -> bool {
        self.worst.enters(latency_ns, seq)
    }

    /// Explain the pending samples whose window ends below `limit` (all with None), per CPU in
    /// order of E; the state at E of each comes from the one before.
    fn explain(
        &mut self,
        limit: Option<u64>,
        names: &NameTables,
        keep: &mut dyn FnMut(KeptWindow),
        each: &mut dyn FnMut(u64, &SampleAttribution),
    ) -> u64 {
        let mut explained = 0u64;
        let cpu_ids: Vec<u32> = self.cpus.keys().copied().collect();
        let mut ready = std::mem::take(&mut self.ready);
        let mut new_max = std::mem::take(&mut self.new_max);
        for cpu in cpu_ids {
            ready.clear();
            {
                let Some(c) = self.cpus.get_mut(&cpu) else {
                    continue;
                };
                c.pending.retain(|p| {
                    let due = limit.is_none_or(|w| p.end_ns() < w);
                    if due {
                        ready.push(*p);
                    }
                    !due
                });
                if ready.is_empty() {
                    continue;
                }
                ready.sort_by_key(|p| (p.s.expected_ns, p.seq));
                c.ts.make_contiguous();
                c.ev.make_contiguous();
            }
            for p in &ready {
                explained += 1;
                let s = &p.s;
                let enters_worst = self.enters_worst(s.latency_ns, p.seq);
                let Some(c) = self.cpus.get_mut(&cpu) else {
                    continue;
                };
                let ce = CpuSlice {
                    ts: c.ts.as_slices().0,
                    ev: c.ev.as_slices().0,
                };
                let first = ce.ts.partition_point(|&t| t < s.expected_ns);
                if c.cursor > first {
                    c.cursor = 0;
                    c.at_cursor = c.base.clone();
                }
                while c.cursor < first {
                    c.at_cursor.apply(ce.ts[c.cursor], &ce.ev[c.cursor]);
                    c.cursor += 1;
                }
                let mut a =
                    attribute_one(s, ce, first, &c.at_cursor, names, &self.opts, enters_worst);
                each(p.seq, &a);
                new_max.clear();
                self.summary.record(&a, &mut new_max);
                if !enters_worst && new_max.is_empty() {
                    continue;
                }
                if !enters_worst {
                    // Only the kept ones pay for a timeline.
                    a = attribute_one(s, ce, first, &c.at_cursor, names, &self.opts, true);
                }
                let to_ns = p.end_ns();
                // A late sample's whole window can lie before the buffer's start: it is kept
                // with what the buffer holds (an empty window at R), never inverted.
                let from_ns = s
                    .expected_ns
                    .saturating_sub(self.lookback_ns)
                    .max(c.frontier_ns)
                    .min(to_ns);
                let i0 = ce.ts.partition_point(|&t| t < from_ns);
                let i1 = ce.ts.partition_point(|&t| t <= to_ns);
                let events = (i0..i1).filter_map(|i| ev_out(ce, i, cpu)).collect();
                let mut reasons = Vec::with_capacity(1 + new_max.len());
                if enters_worst {
                    reasons.push("worst-n".to_string());
                }
                for &id in &new_max {
                    reasons.push(format!("worst-of:{}", self.summary.cause_name(id)));
                }
                if enters_worst {
                    self.worst.push(s.latency_ns, p.seq, a.clone());
                }
                keep(KeptWindow {
                    sample: *s,
                    reasons,
                    attribution: a,
                    events,
                    from_ns,
                    to_ns,
                });
            }
        }
        ready.clear();
        self.ready = ready;
        self.new_max = new_max;
        explained
    }

    /// Fold into each CPU's state the events before (its oldest pending sample's E, or the
    /// watermark when earlier) − lookback, and beyond `MAX_LOOKBACK_EVENTS` before that point.
    /// With None (end of run), all of them.
    fn drop_old_events(&mut self, watermark: Option<u64>) {
        for c in self.cpus.values_mut() {
            let Some(w) = watermark else {
                let k = c.ts.len();
                c.drop_front(k, &self.opts);
                continue;
            };
            let floor = self
                .sample_floor_ns
                .map_or(w, |f| f.max(w.saturating_sub(MAX_SAMPLE_WAIT_NS)));
            let needed_from = c
                .pending
                .iter()
                .map(|p| p.s.expected_ns)
                .min()
                .map_or(w, |e| e.min(w))
                .min(floor);
            let cutoff = needed_from.saturating_sub(self.lookback_ns);
            let by_time = c.ts.partition_point(|&t| t < cutoff);
            let needed = c.ts.partition_point(|&t| t < needed_from);
            let k = by_time.max(needed.saturating_sub(MAX_LOOKBACK_EVENTS));
            c.drop_front(k, &self.opts);
            c.frontier_ns = c.frontier_ns.max(cutoff);
        }
    }
}
