//! The streaming analysis of a traced run: samples and kernel events in as they arrive, every
//! sample explained once its CPU's event stream has passed its window, the online bound fed,
//! the trace file written as the run goes (a flight recorder by default). Everything here holds
//! bounded state; see the crate comment.

use crate::SessionError;
use rtscope_analysis::attribution::{
    AttributionOptions, KeptWindow, SampleAttribution, StreamingAttribution,
};
use rtscope_analysis::bound::online::{Grid, OnlineBound};
use rtscope_model::event::{Event, EventKind, NameTables};
use rtscope_model::{RawSample, RunRecord};
use rtscope_report::notes;
use std::collections::BTreeMap;
use std::path::PathBuf;

pub use rtscope_trace::flight::TraceFileMode;

/// Events kept per CPU before the oldest pending sample: the context a kept window carries
/// (the switch that put the current task on the CPU, an interrupt still open at E).
const LOOKBACK_NS: u64 = 2_000_000;
/// Names learned from /proc for tasks the capture saw switching in, at most this many (pids are
/// recycled; a long run under `--load exec` sees millions).
const PROC_NAMES_CAP: usize = 16_384;

pub struct Explain {
    attr: StreamingAttribution,
    bound: Option<OnlineBound>,
    writer: Option<rtscope_trace::flight::RttWriter>,
    trace_file: Option<PathBuf>,
    names: NameTables,
    proc_names: BTreeMap<u32, String>,
    names_refreshed_ns: u64,
    /// When the next point of the time-to-bound series is due (simulated or real monotonic ns).
    next_point_ns: u64,
    point_every_ns: u64,
    regular_points_left: u32,
    first_ts_ns: Option<u64>,
    /// The latest instant any delivered sample or event reached: series points stop there (the
    /// final flush passes an unbounded watermark).
    last_ts_ns: u64,
    /// Writing the trace file failed: the run goes on untraced-to-disk, and says so.
    writer_error: Option<String>,
    /// The bound's thread terms measured from the kernel's preemptirq tracepoints (ECRTS'20
    /// Table 1), where it has them: as `trace thread-vars --mechanism auto` does, reduced in eBPF
    /// where that can run, else streamed from a tracefs instance of their own — whatever
    /// `--trace` captures (its trace keeps out the preemptirq events, far too many for a
    /// run's stream: `trace record --preemptirq` writes them).
    kernel_thread: Option<KernelThread>,
    /// Why the in-kernel measurement is not running although the kernel has the tracepoints.
    kernel_thread_error: Option<String>,
    /// Tracing in bursts: the finished bursts' captures added up (their events already
    /// explained); None while the run has one capture from start to end.
    bursts: Option<Bursts>,
}

/// Where the bound's thread terms are measured.
enum KernelThread {
    Bpf(Box<rtscope_trace::preemptirq::Reducer>),
    Tracefs(crate::thread_vars::Background),
}

/// What the bursts of a run traced, summed over the captures that ended.
pub struct Bursts {
    /// Lost events, steal, bytes and notes summed; `events` empty (explained as they came),
    /// `start_ns` the first burst's, `end_ns` the last one's.
    pub total: rtscope_trace::Capture,
    pub count: u32,
    pub traced_ns: u64,
}

impl Bursts {
    fn add(&mut self, c: &rtscope_trace::Capture) {
        let t = &mut self.total;
        if self.count == 0 {
            t.mechanism = c.mechanism;
            t.cpus = c.cpus.clone();
            t.start_ns = c.start_ns;
            t.keep = c.keep;
        }
        t.end_ns = t.end_ns.max(c.end_ns);
        for (&cpu, &n) in &c.lost_per_cpu {
            *t.lost_per_cpu.entry(cpu).or_default() += n;
        }
        for (&cpu, &n) in &c.steal_ns_per_cpu {
            *t.steal_ns_per_cpu.entry(cpu).or_default() += n;
        }
        t.kernel_bytes += c.kernel_bytes;
        t.filtered += c.filtered;
        for n in &c.notes {
            if !t.notes.contains(n) {
                t.notes.push(n.clone());
            }
        }
        self.count += 1;
        self.traced_ns += c.end_ns.saturating_sub(c.start_ns);
    }
}

impl Explain {
    pub fn new(plan: &crate::Plan) -> Result<Explain, SessionError> {
        let writer = match &plan.trace_file {
            Some(p) => Some(
                rtscope_trace::flight::RttWriter::create(
                    p,
                    plan.trace_file_mode,
                    &plan.config.cpus,
                )
                .map_err(|e| SessionError::TraceFile {
                    path: p.display().to_string(),
                    detail: e.to_string(),
                })?,
            ),
            None => None,
        };
        let mut x = Explain::offline(
            &plan.config.cpus,
            plan.config.worst_n,
            plan.config.threshold_us.map(|u| u * 1000),
            plan.bound_points,
            plan.config.duration_s,
        );
        x.writer = writer;
        x.trace_file = plan.trace_file.clone();
        if plan.bound_points.is_some() {
            if rtscope_trace::preemptirq::available().is_ok() {
                // Attached with the CPUs off: [`Explain::switch_kernel_thread_on`] starts the
                // window once the run's set-up is over.
                match rtscope_trace::preemptirq::Reducer::attach(&plan.config.cpus) {
                    Ok(r) => x.kernel_thread = Some(KernelThread::Bpf(Box::new(r))),
                    Err(e) => x.kernel_thread_error = Some(e),
                }
            } else if rtscope_trace::preemptirq_tracefs::available().is_ok()
                && rtscope_trace::tracefs::preemptirq_availability(std::path::Path::new(
                    rtscope_trace::tracefs::TRACEFS,
                ))
                .is_ok()
            {
                // The kernel has the tracepoints, eBPF cannot attach to them (no BTF/tp_btf).
                match crate::thread_vars::Background::start(&plan.config.cpus) {
                    Ok(r) => x.kernel_thread = Some(KernelThread::Tracefs(r)),
                    Err(e) => x.kernel_thread_error = Some(e),
                }
            }
        }
        x.names.irqs = rtscope_trace::sys::irq_names(&rtscope_trace::sys::read_interrupts());
        Ok(x)
    }

    /// The pipeline without a kernel or a file (the replay benchmark, tests).
    pub fn offline(
        cpus: &[u32],
        worst_n: usize,
        tail_threshold_ns: Option<u64>,
        bound_points: Option<u32>,
        duration_s: Option<f64>,
    ) -> Explain {
        let opts = AttributionOptions {
            tail_threshold_ns,
            top_n: worst_n.max(1),
            ..Default::default()
        };
        // The time-to-bound series: a point every duration/points (or every 10 s for open-ended
        // runs); the online series decimates itself, so any run length stays bounded.
        let points = bound_points.unwrap_or(60).max(1);
        let every = duration_s
            .map(|d| (d * 1e9 / points as f64) as u64)
            .unwrap_or(10_000_000_000)
            .max(100_000_000);
        Explain {
            attr: StreamingAttribution::new(opts, LOOKBACK_NS),
            // One spare so that `points` instants fit before the series decimates itself.
            bound: bound_points.map(|_| {
                OnlineBound::new(cpus, Grid::default()).with_series_points(points as usize + 1)
            }),
            writer: None,
            trace_file: None,
            names: NameTables::default(),
            proc_names: BTreeMap::new(),
            names_refreshed_ns: 0,
            next_point_ns: 0,
            point_every_ns: every,
            // A fixed-length run: points − 1 regular instants, the last one at the end.
            regular_points_left: duration_s.map_or(u32::MAX, |_| points - 1),
            first_ts_ns: None,
            last_ts_ns: 0,
            writer_error: None,
            kernel_thread: None,
            kernel_thread_error: None,
            bursts: None,
        }
    }

    /// Trace in bursts: [`Explain::end_burst`] closes each capture; samples are pushed only
    /// while one runs.
    pub fn in_bursts(&mut self) {
        self.bursts = Some(Bursts {
            total: rtscope_trace::Capture::default(),
            count: 0,
            traced_ns: 0,
        });
    }

    /// A burst's capture ended: its last events explained with every sample pending, the
    /// CPUs' states forgotten until the next burst (nothing is traced in between).
    pub fn end_burst(&mut self, capture: rtscope_trace::Capture) -> Result<(), SessionError> {
        for (p, c) in &capture.comms {
            self.names.comms.insert(*p, c.clone());
        }
        self.learn_names(&capture.events);
        self.step_inner(&[], &capture.events, capture.end_ns, true)?;
        self.feed_kernel_thread();
        if let Some(b) = self.bursts.as_mut() {
            b.add(&capture);
        }
        Ok(())
    }

    /// Bursts so far (count, traced seconds), and the events the ended ones lost.
    pub fn burst_totals(&self) -> Option<(u32, f64, u64)> {
        self.bursts.as_ref().map(|b| {
            (
                b.count,
                b.traced_ns as f64 / 1e9,
                b.total.lost_per_cpu.values().sum(),
            )
        })
    }

    /// The sampling starts: the in-kernel thread terms from here on (the eBPF reduction was
    /// attached with its CPUs off, so the run's set-up — maps created, buffers allocated,
    /// threads spawned — is no part of the window).
    pub fn switch_kernel_thread_on(&mut self) {
        if let Some(KernelThread::Bpf(r)) = self.kernel_thread.as_mut() {
            if let Err(e) = r.switch_on() {
                self.kernel_thread = None;
                self.kernel_thread_error = Some(e);
            }
        }
    }

    /// The sampling ended: the in-kernel thread terms stop here. What the run does afterwards
    /// (joining the measurement threads, tearing the capture down — freeing its BPF maps, whose
    /// vfree drains the page allocator's per-CPU lists with preemption disabled —, stopping the
    /// loads — unmapping their working sets under the page-table lock) is no part of the
    /// window whose latencies the bound is compared with; on a non-RT kernel those sections
    /// last 0.6–1.1 ms under `--icount` (docs/bound.md, "Soundness in the lab").
    pub fn end_kernel_thread_window(&mut self) {
        // The tracefs reader drains what was committed up to here first; then its maxima are
        // final.
        if let Some(KernelThread::Tracefs(r)) = &self.kernel_thread {
            r.stop();
        }
        self.feed_kernel_thread();
        // A CPU left on only lets later readings grow: the bound stays sound, merely looser.
        if let Some(KernelThread::Bpf(r)) = &self.kernel_thread {
            let _ = r.stop();
        }
    }

    /// The in-kernel thread terms so far into the bound (running maxima: a reading only grows).
    fn feed_kernel_thread(&mut self) {
        match (&self.kernel_thread, self.bound.as_mut()) {
            (Some(KernelThread::Bpf(r)), Some(b)) => {
                for (cpu, m) in r.read() {
                    b.set_kernel_thread(cpu, (&m).into(), m.lost_events);
                }
            }
            (Some(KernelThread::Tracefs(r)), Some(b)) => {
                for (cpu, (m, lost)) in r.read() {
                    b.set_kernel_thread(cpu, m, lost);
                }
            }
            _ => {}
        }
    }

    pub fn set_names(&mut self, names: NameTables) {
        self.names = names;
    }

    /// One step: samples and events delivered since the last, and the capture's watermark (all
    /// events before it have been delivered).
    pub fn tick(
        &mut self,
        samples: &[RawSample],
        events: &[Event],
        watermark_ns: u64,
        capture: &mut rtscope_trace::TraceSession,
    ) -> Result<(), SessionError> {
        // Names: the capture's (the BPF comm map) once a second, /proc for tasks seen switching
        // in that it does not know yet.
        if watermark_ns >= self.names_refreshed_ns + 1_000_000_000 {
            self.names.comms = capture.comms();
            self.names_refreshed_ns = watermark_ns;
            self.feed_kernel_thread();
        }
        self.learn_names(events);
        self.step(samples, events, watermark_ns)
    }

    /// [`Explain::tick`] without a capture (names as set).
    pub fn step(
        &mut self,
        samples: &[RawSample],
        events: &[Event],
        watermark_ns: u64,
    ) -> Result<(), SessionError> {
        self.step_inner(samples, events, watermark_ns, false)
    }

    /// A step; with `stretch_end` the capture has stopped at `watermark_ns` (a burst ended):
    /// everything pending is explained and the CPUs' states are forgotten.
    fn step_inner(
        &mut self,
        samples: &[RawSample],
        events: &[Event],
        watermark_ns: u64,
        stretch_end: bool,
    ) -> Result<(), SessionError> {
        if self.first_ts_ns.is_none() {
            self.first_ts_ns = samples
                .iter()
                .map(|s| s.expected_ns)
                .chain(events.iter().map(|e| e.ts_ns))
                .min();
            if let Some(t) = self.first_ts_ns {
                self.next_point_ns = t + self.point_every_ns;
            }
        }
        let latest = samples
            .iter()
            .map(|s| s.expected_ns.saturating_add(s.latency_ns))
            .chain(events.iter().map(|e| e.ts_ns))
            .max()
            .unwrap_or(0);
        self.last_ts_ns = self.last_ts_ns.max(latest);
        self.attr.push_samples(samples);
        self.attr.push_events(events);
        if let Some(b) = self.bound.as_mut() {
            b.push_events(events);
        }
        if let Some(w) = self.writer.as_mut() {
            let r = w.on_events(events).and_then(|_| w.on_samples(samples));
            if let Err(e) = r {
                self.writer_error = Some(e.to_string());
                self.writer = None;
            }
        }
        let Explain {
            attr,
            bound,
            writer,
            names,
            writer_error,
            ..
        } = self;
        let mut keep = |k: KeptWindow| keep_window(writer, writer_error, &k);
        let mut each = |_, a: &SampleAttribution| bound_sample(bound, a);
        if stretch_end {
            attr.end_stretch(watermark_ns, names, &mut keep, &mut each);
        } else {
            attr.advance_observed(watermark_ns, names, &mut keep, &mut each);
        }
        if let Some(b) = self.bound.as_mut() {
            let until = watermark_ns.min(self.last_ts_ns);
            while self.next_point_ns > 0
                && until >= self.next_point_ns
                && self.regular_points_left > 0
            {
                self.regular_points_left -= 1;
                b.record_point(
                    self.next_point_ns,
                    &rtscope_analysis::bound::Options::default(),
                );
                self.next_point_ns += self.point_every_ns;
            }
        }
        Ok(())
    }

    fn learn_names(&mut self, events: &[Event]) {
        for e in events {
            if let EventKind::Switch { next_pid, .. } = e.kind {
                if next_pid != 0
                    && !self.names.comms.contains_key(&next_pid)
                    && !self.proc_names.contains_key(&next_pid)
                {
                    if self.proc_names.len() >= PROC_NAMES_CAP {
                        self.proc_names.clear();
                    }
                    let c = rtscope_trace::sys::comm_of(next_pid)
                        .unwrap_or_else(|| format!("pid{next_pid}"));
                    self.proc_names.insert(next_pid, c);
                }
            }
        }
        for (p, c) in &self.proc_names {
            self.names.comms.entry(*p).or_insert_with(|| c.clone());
        }
    }

    pub fn dominant_tail_cause(&self) -> Option<(String, f64)> {
        self.attr.dominant_tail_cause()
    }

    /// No sample still to arrive has an expected wake-up below `ns`.
    pub fn set_sample_floor(&mut self, ns: u64) {
        self.attr.set_sample_floor(ns);
    }

    pub fn buffered_events(&self) -> usize {
        self.attr.buffered_events()
    }

    pub fn pending_samples(&self) -> usize {
        self.attr.pending_samples()
    }

    /// (attribution, bound) heap bytes.
    pub fn heap_parts(&self) -> (usize, usize) {
        (
            self.attr.heap_bytes(),
            self.bound.as_ref().map_or(0, |b| b.heap_bytes()),
        )
    }

    pub fn heap_bytes(&self) -> usize {
        self.attr.heap_bytes() + self.bound.as_ref().map_or(0, |b| b.heap_bytes())
    }

    /// The latest point of the time-to-bound series per CPU (the sliding-window bound), for
    /// `--until-stable`; None before every CPU has one or without `--bound`.
    pub fn bound_latest(&self) -> Option<Vec<f64>> {
        let series = self.bound.as_ref()?.series();
        let mut latest: BTreeMap<u32, f64> = BTreeMap::new();
        for p in &series {
            if let Some(v) = p.sliding_window_ns {
                latest.insert(p.cpu, v as f64);
            }
        }
        (!latest.is_empty()).then(|| latest.into_values().collect())
    }

    /// The explanation so far into an interim record.
    pub fn fill_interim(&self, rec: &mut RunRecord) {
        if let Some(p) = &self.trace_file {
            rec.trace_file = Some(p.display().to_string());
        }
        let Some(m) = rec.measurement_mut() else {
            return;
        };
        let r = self.attr.snapshot(&self.names);
        m.attribution = Some(r.summary);
        if let Some(b) = &self.bound {
            let mut report = b.report(&rtscope_analysis::bound::Options::default());
            report.series = b.series();
            m.bound = Some(report);
        }
    }

    /// The kernel-side measurement of the bound's thread terms into the record: where each
    /// CPU's D_POID term comes from, what the measurement lost, why it did not run.
    fn kernel_thread_into(&self, rec: &mut RunRecord) {
        // Where each CPU's D_POID term comes from, as kernel symbols (it often dominates the
        // bound on a non-RT kernel: docs/bound.md, "Soundness in the lab").
        if let Some(KernelThread::Tracefs(r)) = &self.kernel_thread {
            r.stop();
            if let Some(e) = r.error() {
                rec.warnings.push(rtscope_model::Warning::new(
                    rtscope_model::WarningCode::Bound,
                    format!("the tracefs preemptirq reader failed ({e}): the bound's thread terms cover the run up to then"),
                ));
            }
            if let Some(run) = r.summary() {
                rec.hygiene.notes.extend(notes::tracefs_reader(&run));
                thread_terms_into(rec, run);
            }
        }
        if let Some(KernelThread::Bpf(r)) = &self.kernel_thread {
            let mut run = r.summary(false);
            rtscope_trace::kallsyms::symbolize_run(&mut run);
            for c in &run.cpus {
                if let Some(at) = &c.poid_at {
                    rec.hygiene
                        .notes
                        .push(rtscope_report::thread_vars::poid_line(
                            c.cpu,
                            c.thread.poid_ns,
                            at,
                            run.started_ns,
                        ));
                }
            }
            thread_terms_into(rec, run);
        }
        if let Some(e) = &self.kernel_thread_error {
            rec.warnings.push(rtscope_model::Warning::new(
                rtscope_model::WarningCode::Bound,
                format!("the in-kernel preemptirq measurement did not start ({e}): the bound's thread terms are estimated"),
            ));
        }
    }

    /// End of the run: explain what is pending, finish the trace file, fill the record.
    pub fn finish(
        mut self,
        capture: Option<rtscope_trace::Capture>,
        rec: &mut RunRecord,
    ) -> Result<(), SessionError> {
        // In bursts: the last one (if it still ran) ends like the others; the record gets the
        // bursts' sum and says how much of the run was traced.
        let capture = match (capture, self.bursts.is_some()) {
            (Some(c), false) => c,
            (last, true) => {
                if let Some(c) = last {
                    self.end_burst(c)?;
                }
                let Some(b) = self.bursts.take() else {
                    return Ok(());
                };
                let traced = rtscope_model::TracedBursts {
                    count: b.count,
                    traced_s: b.traced_ns as f64 / 1e9,
                };
                rec.hygiene.notes.push(notes::traced_bursts(&traced));
                rec.hygiene.traced_bursts = Some(traced);
                b.total
            }
            (None, false) => return Ok(()),
        };
        // What the capture delivered after the last poll.
        let mut tids: Vec<u32> = rec
            .measurement()
            .map_or(Vec::new(), |m| m.threads.iter().map(|t| t.tid).collect());
        tids.sort_unstable();
        tids.dedup();
        for (p, c) in &capture.comms {
            self.names.comms.insert(*p, c.clone());
        }
        self.learn_names(&capture.events);
        for &t in &tids {
            if let Some(c) = rtscope_trace::sys::comm_of(t) {
                self.names.comms.entry(t).or_insert(c);
            }
        }
        self.step(&[], &capture.events, u64::MAX)?;
        self.feed_kernel_thread();
        self.kernel_thread_into(rec);
        let lost = capture.lost_total();
        if lost > 0 {
            rec.warnings.push(rtscope_model::Warning::new(rtscope_model::WarningCode::LostEvents, format!(
                "TRACE LOST EVENTS: {lost} kernel events lost ({:?} per CPU): attribution on those CPUs is incomplete",
                capture.lost_per_cpu
            )));
        }
        self.attr.set_loss_and_steal(
            capture.lost_per_cpu.iter().map(|(&c, &n)| (c, n)).collect(),
            capture
                .steal_ns_per_cpu
                .iter()
                .map(|(&c, &n)| (c, n))
                .collect(),
        );
        let Explain {
            attr,
            bound,
            mut writer,
            names,
            mut writer_error,
            trace_file,
            ..
        } = self;
        let mut keep = |k: KeptWindow| keep_window(&mut writer, &mut writer_error, &k);
        let mut bound = bound;
        let result =
            attr.finish_observed(&names, &mut keep, &mut |_, a| bound_sample(&mut bound, a));
        // The attribution's own limits (unexplained stretches, missing events).
        rec.warnings.extend(
            result
                .warnings
                .iter()
                .map(|w| rtscope_model::Warning::new(rtscope_model::WarningCode::Trace, w.clone())),
        );
        if let Some(m) = rec.measurement_mut() {
            m.attribution = Some(result.summary);
            if let Some(mut b) = bound {
                b.set_lost(&capture.lost_per_cpu);
                let opts = rtscope_analysis::bound::Options::default();
                b.record_point(capture.end_ns, &opts);
                let mut report = b.report(&opts);
                report.series = b.series();
                m.bound = Some(report);
            }
        }
        if let (Some(w), Some(p)) = (writer, &trace_file) {
            let meta = rtt_meta(&capture);
            match w.finish(meta, &names) {
                Ok(_) => rec.trace_file = Some(p.display().to_string()),
                Err(e) => writer_error = Some(e.to_string()),
            }
        }
        if let Some(e) = writer_error {
            rec.warnings.push(rtscope_model::Warning::new(
                rtscope_model::WarningCode::Trace,
                format!(
                    "{TRACE_FILE_NOT_WRITTEN} ({e}): the run's explanation is in the record only"
                ),
            ));
        }
        Ok(())
    }
}

/// How the warning of a trace file that could not be written begins (the run then fails).
pub const TRACE_FILE_NOT_WRITTEN: &str = "the trace file could not be written";

/// An empty record to fill offline (the replay benchmark).
pub fn empty_record() -> RunRecord {
    let config = rtscope_model::RunConfig {
        trace: "replay".into(),
        ..Default::default()
    };
    crate::record::build(
        crate::record::RecordIn {
            id: "replay",
            verb: "replay",
            cmdline: &[],
            tags: &Default::default(),
            config: &config,
            warnings: &[],
            system: Default::default(),
            hygiene: Default::default(),
            started_at: crate::record::rfc3339(std::time::UNIX_EPOCH),
            wall_s: 0.0,
            end_reason: rtscope_model::EndReason::Completed,
            break_sample: None,
            stop_signal: None,
        },
        &[],
    )
}

impl Explain {
    /// End of an offline run (no capture): explain what is pending and fill the record.
    pub fn finish_offline(self, end_ns: u64, rec: &mut RunRecord) {
        let capture = rtscope_trace::Capture {
            end_ns,
            ..Default::default()
        };
        let _ = self.finish(Some(capture), rec);
    }
}

/// The trace file's metadata from the capture that wrote it.
fn rtt_meta(capture: &rtscope_trace::Capture) -> rtscope_trace::RttMeta {
    rtscope_trace::RttMeta {
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        mechanism: capture.mechanism.name().to_string(),
        cpus: capture.cpus.clone(),
        start_ns: capture.start_ns,
        end_ns: capture.end_ns,
        kernel: rtscope_trace::sys::kernel_release(),
        hostname: rtscope_trace::sys::hostname(),
        lost_per_cpu: capture.lost_per_cpu.clone(),
        steal_ns_per_cpu: capture.steal_ns_per_cpu.clone(),
        kernel_bytes: capture.kernel_bytes,
        notes: capture.notes.clone(),
        keep: capture.keep.name().to_string(),
        filtered_events: capture.filtered,
        ..Default::default()
    }
}

/// The kernel-side measurement of the bound's thread terms into the record, and what it lost
/// said as a warning (which kind of loss made the bound's "not sound" warning: the fix differs —
/// a longer queue, deeper nesting, or a program the kernel skipped while it ran).
fn thread_terms_into(rec: &mut RunRecord, run: rtscope_model::thread_vars::ThreadVarsRun) {
    if let Some(msg) = notes::thread_terms_lost(&run) {
        rec.warnings.push(rtscope_model::Warning::new(
            rtscope_model::WarningCode::ThreadTermsLost,
            msg,
        ));
    }
    rec.hygiene.thread_terms = Some(run);
}

/// An explained sample into the online bound. The exact analysis' non-interrupt delay subtracts
/// hard IRQs, vectors and NMIs only (softirqs and threads are thread interference): the bound
/// computes it from the interrupt instances it holds, pushed before the samples they delay.
fn bound_sample(bound: &mut Option<OnlineBound>, a: &SampleAttribution) {
    if let Some(b) = bound.as_mut() {
        b.push_raw_sample(&RawSample {
            cpu: a.cpu,
            tid: a.tid,
            cycle: a.cycle,
            expected_ns: a.expected_ns,
            latency_ns: a.latency_ns,
        });
    }
}

fn keep_window(
    writer: &mut Option<rtscope_trace::flight::RttWriter>,
    err: &mut Option<String>,
    k: &KeptWindow,
) {
    if let Some(w) = writer.as_mut() {
        if let Err(e) = w.keep_window(&k.sample, &k.reasons, &k.events, k.from_ns, k.to_ns) {
            *err = Some(e.to_string());
            *writer = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::event::{Event, EventKind};

    /// A run whose capture lost events: its record's bound is labelled not sound in the record,
    /// its JSON and the summary text, though every thread term was measured.
    #[test]
    fn a_capture_that_lost_events_gives_a_bound_labelled_not_sound() {
        let ev = |ts_ns, kind| Event {
            ts_ns,
            cpu: 0,
            kind,
        };
        let events = vec![
            ev(1_000_000, EventKind::PreemptDisable),
            ev(1_040_000, EventKind::PreemptEnable),
            ev(2_000_000, EventKind::IrqDisable),
            ev(2_010_000, EventKind::IrqEnable),
        ];
        let sample = RawSample {
            cpu: 0,
            tid: 1,
            cycle: 0,
            expected_ns: 3_000_000,
            latency_ns: 20_000,
        };
        let run = |lost: u64| {
            let mut x = Explain::offline(&[0], 10, None, Some(4), Some(0.01));
            if let Err(e) = x.step(&[sample], &events, 5_000_000) {
                panic!("step: {e}");
            }
            let mut rec = empty_record();
            let capture = rtscope_trace::Capture {
                cpus: vec![0],
                start_ns: 0,
                end_ns: 10_000_000,
                lost_per_cpu: [(0, lost)].into(),
                ..Default::default()
            };
            if let Err(e) = x.finish(Some(capture), &mut rec) {
                panic!("finish: {e}");
            }
            rec
        };
        let clean = run(0);
        let b = clean.measurement().and_then(|m| m.bound.clone());
        let b = b.unwrap_or_default();
        assert!(!b.estimate, "{:?}", b.warnings);
        assert!(b.sound, "{:?}", b.not_sound_because);

        let lossy = run(5);
        let b = lossy.measurement().and_then(|m| m.bound.clone());
        let b = b.unwrap_or_default();
        assert!(!b.sound);
        assert_eq!(
            b.not_sound_because,
            vec!["CPU 0: the capture lost 5 events"]
        );
        let json = serde_json::to_value(&lossy).unwrap_or_default();
        let found = json.to_string();
        assert!(
            found.contains(r#""sound":false"#)
                && found.contains(r#""not_sound_because":["CPU 0: the capture lost 5 events"]"#),
            "{found}"
        );
        let text = rtscope_report::text::summary(&lossy);
        assert!(
            text.contains(
                "latency bound (ECRTS'20 Theorem 8) (NOT A SOUND BOUND: CPU 0: the capture lost 5 events):"
            ),
            "{text}"
        );
    }
}
