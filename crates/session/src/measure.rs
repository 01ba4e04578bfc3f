//! The measurement tool: what `run`, `measure`, `cyclictest` and `monitor` run through
//! [`run_tool`] from a resolved [`Plan`]. Its steps:
//!
//! - begin: the stop signals (SIGINT/SIGTERM/SIGHUP; a snapshot on SIGUSR2), leftovers of killed
//!   runs repaired;
//! - start: the allocator pinned; the system capture; the loads, from this long-lived thread (their death signal is
//!   tied to it), given half a second to reach full intensity; the kernel capture, then the
//!   measurement threads;
//! - step, ~10 times a second: drain every thread's sample ring, poll the capture, explain every
//!   sample whose window the event stream has passed (bounded look-back), feed the online bound
//!   and the trace file, update the live view, write a checkpoint when due;
//! - stop: join the threads, stop capture and loads;
//! - record: explain what is pending and build the record;
//! - outputs: store it (replacing its checkpoint), then write the files.
//!
//! Nothing held here grows with the run's length: samples and events are consumed as they arrive
//! and only bounded summaries stay (histograms, worst-N with their event windows, per-source
//! interrupt summaries and arrival curves). What the user asked to keep on disk (`--raw`,
//! `--trace-file-mode all`) is written as it comes.

use crate::input::VerbError;
use crate::live::{LiveSnapshot, ThreadLive, View};
use crate::tool::{run_tool, Begin, Flow, Tool, Work};
use crate::{checkpoint, outputs, record, signals, stream, Outcome, Plan, SessionError};
use rtscope_model::{CheckpointInfo, EndReason, RawSample, RunRecord, SystemInfo};
use rtscope_probe::Measurement;
use std::time::{Duration, Instant, SystemTime};

/// How often the orchestrating thread drains, explains and refreshes the view.
const TICK: Duration = Duration::from_millis(100);

/// How often, within a tick, the orchestrating thread looks at the stop signals. A signal only
/// sets an atomic (the handler may do nothing else), so it is seen at the next look: at 25 ms
/// the stop reaches the measuring threads well within the 100 ms every run promises.
const STOP_POLL: Duration = Duration::from_millis(25);

/// How often it looks whether every thread has ended once they were asked to, or once the
/// run's duration is over: a thread ends within one period of that, and the record is made
/// from the moment the last one ends, not at the next tick.
const END_POLL: Duration = Duration::from_millis(1);

/// Run a plan from start to end, `view` showing its progress ([`crate::live::default_view`]).
pub fn run(plan: &Plan, view: &mut dyn View) -> Result<Outcome, VerbError> {
    run_tool(MeasureTool::new(plan, view))
}

/// Run a resolved plan the way `measure` and `run` do: the default live view (none with
/// `quiet`), then the summary (not with `--json -`), the files written and where the run was
/// stored.
pub fn run_plan(plan: Plan, quiet: bool) -> Result<(), VerbError> {
    let total = plan.config.duration_s.map(Duration::from_secs_f64);
    let mut view = crate::live::default_view(quiet, total);
    let outcome = run(&plan, view.as_mut())?;
    report(&plan, &outcome)
}

/// What a finished run says on the terminal: the summary (not with `--json -`), the files
/// written, where the run was stored.
pub fn report(plan: &Plan, outcome: &Outcome) -> Result<(), VerbError> {
    let json_stdout = plan.outputs.json.as_deref() == Some(std::path::Path::new("-"));
    outputs::report_outcome(outcome, !json_stdout)
}

/// A measurement of `plan`: its steps are the module comment's.
pub struct MeasureTool<'a> {
    pub plan: &'a Plan,
    pub view: &'a mut dyn View,
    run: Option<Running>,
}

/// A measurement under way, from `start` to `record`.
struct Running {
    started_wall: SystemTime,
    /// The plan's warnings and the leftovers `begin` repaired: every record of the run has them.
    warnings: Vec<rtscope_model::Warning>,
    system0: SystemInfo,
    steal_before: Vec<(u32, u64)>,
    /// The orchestrating thread at SCHED_FIFO 1 while the run is traced.
    _prio: Option<crate::MainPriority>,
    /// The orchestrating thread (and the readers it spawned) on the housekeeping CPUs.
    placement: Option<crate::housekeeping::Placement>,
    /// Freed memory is kept in the process from the window's start to the sampling's end.
    retaining: bool,
    loads: Option<rtscope_load::RunningLoads>,
    load_reports: Vec<rtscope_model::LoadReport>,
    capture: Option<rtscope_trace::TraceSession>,
    stopped_capture: Option<Result<rtscope_trace::Capture, rtscope_trace::TraceError>>,
    explain: Option<stream::Explain>,
    bursts: Option<rtscope_model::TraceBursts>,
    burst: BurstClock,
    raw_csv: Option<outputs::RawCsv>,
    checkpointer: Option<checkpoint::Checkpointer>,
    last_checkpoint: Option<CheckpointInfo>,
    /// What the session keeps of each thread's streamed samples (the tail model, the floor of
    /// the streaming analysis).
    feeds: Vec<crate::tail::Feed>,
    /// Samples the rings could not hand over (counted when the threads were joined).
    ring_dropped: u64,
    m: Option<Measurement>,
    joined: Option<rtscope_probe::MeasureOutcome>,
    t0: Instant,
    wall_s: f64,
    total: Option<Duration>,
    interrupted: bool,
    /// The capture or a file failed mid-run: the measurement was stopped, this is the error.
    failure: Option<SessionError>,
    notices: Vec<String>,
    batch: Vec<RawSample>,
    explained_batch: Vec<RawSample>,
    events: Vec<rtscope_model::event::Event>,
    /// `--until-stable`.
    stable: Option<crate::tail::UntilStable>,
}

fn failed(e: SessionError) -> VerbError {
    VerbError::failed(e)
}

impl<'a> MeasureTool<'a> {
    /// The measurement of `plan`, nothing started yet; `view` shows its progress.
    pub fn new(plan: &'a Plan, view: &'a mut dyn View) -> MeasureTool<'a> {
        MeasureTool {
            plan,
            view,
            run: None,
        }
    }
}

impl Tool for MeasureTool<'_> {
    type Output = Outcome;

    fn begin(&self) -> Begin {
        // The stop signals, and the repaired leftovers in the record; the privileges the plan
        // needs were checked when it was resolved.
        Begin::live(&self.plan.verb, crate::privilege::Need::Nothing, "")
    }

    fn start(&mut self, w: &Work) -> Result<(), VerbError> {
        crate::pin_malloc_mmap_threshold();
        // Freed memory is kept from the set-up on: a block glibc mapped on its own during the
        // set-up and freed inside the window would be unmapped there (measured in the lab: a
        // 666 µs munmap 0.2 s into the window when retention began at the window's start).
        rtscope_sys::mem::retain_freed(true);
        match Running::start(self.plan, w, &*self.view) {
            Ok(r) => self.run = Some(r),
            Err(e) => {
                rtscope_sys::mem::retain_freed(false);
                return Err(failed(e));
            }
        }
        Ok(())
    }

    fn step(&mut self, _w: &Work) -> Result<Flow, VerbError> {
        let r = running(&mut self.run)?;
        r.wait_tick();
        r.tick(self.plan, &mut *self.view).map_err(failed)
    }

    fn request_stop(&mut self) {
        if let Some(r) = self.run.as_mut() {
            r.interrupted = true;
            if let Some(m) = &r.m {
                m.request_stop();
            }
        }
    }

    fn stop(&mut self, _w: &Work) -> Result<(), VerbError> {
        self.view.finish();
        running(&mut self.run)?.stop().map_err(failed)
    }

    fn record(&mut self, _w: &Work) -> Result<Option<RunRecord>, VerbError> {
        let plan = self.plan;
        let r = running(&mut self.run)?;
        let mut rec = r.final_record(plan).map_err(failed)?;
        r.finish_streams(plan, &mut rec).map_err(failed)?;
        crate::tail::attach(&r.feeds, &mut rec);
        let wall_s = rec.wall_duration_s;
        if let (Some(u), Some(m)) = (r.stable.as_ref(), rec.measurement_mut()) {
            m.stable = Some(u.end(wall_s));
        }
        Ok(Some(rec))
    }

    fn outputs(mut self, _w: &Work, rec: Option<RunRecord>) -> Result<Outcome, VerbError> {
        let rec = rec.ok_or_else(|| VerbError::failed("the run made no record"))?;
        let notices = self.run.take().map(|r| r.notices).unwrap_or_default();
        store_and_write(self.plan, rec, notices).map_err(failed)
    }
}

fn running(run: &mut Option<Running>) -> Result<&mut Running, VerbError> {
    run.as_mut().ok_or_else(|| failed(SessionError::NotRunning))
}

/// The loads, from this long-lived thread (their death signal is tied to it), given half a
/// second to reach full intensity.
fn start_loads(plan: &Plan) -> Result<Option<rtscope_load::RunningLoads>, SessionError> {
    let Some((kinds, opts)) = &plan.loads else {
        return Ok(None);
    };
    let l = rtscope_load::start(kinds, opts).map_err(SessionError::Load)?;
    std::thread::sleep(Duration::from_millis(500));
    Ok(Some(l))
}

/// Where the samples go besides the threads' histograms: the `--raw` file, the checkpoints,
/// the tail model's per-thread feeds; and the threads' spec, streaming samples when
/// any of them (or the capture, the view, `--until-stable`) reads them.
#[allow(clippy::type_complexity)]
fn sinks(
    plan: &Plan,
    traced: bool,
    view: &dyn View,
) -> Result<
    (
        Option<outputs::RawCsv>,
        Option<checkpoint::Checkpointer>,
        rtscope_probe::MeasureSpec,
        Vec<crate::tail::Feed>,
    ),
    SessionError,
> {
    let raw_csv = match &plan.raw_csv {
        Some(p) => Some(
            outputs::RawCsv::create(p).map_err(|source| SessionError::Io {
                what: crate::input::Field::Raw.token(),
                path: p.display().to_string(),
                source,
            })?,
        ),
        None => None,
    };
    let checkpointer = plan
        .store
        .as_ref()
        .and_then(|s| s.checkpoint.map(|every| (s.db.clone(), every)))
        .map(|(db, every)| checkpoint::Checkpointer::new(db, every));
    let mut spec = plan.spec.clone();
    spec.stream = traced
        || raw_csv.is_some()
        || view.wants_samples()
        || checkpointer.is_some()
        || plan.until_stable.is_some();
    // The threads' figures reach the live view, the SIGUSR2 snapshot and the checkpoints by
    // publication: each thread swaps its filled recorder for an empty one off its hot path.
    // Always on, so a quiet untraced run still answers a snapshot with every CPU.
    spec.publish = true;
    let feeds = spec
        .cpus
        .iter()
        .enumerate()
        .map(|(i, &cpu)| {
            crate::tail::Feed::new(cpu, spec.interval_ns + i as u64 * spec.distance_ns)
        })
        .collect();
    Ok((raw_csv, checkpointer, spec, feeds))
}

impl Running {
    fn start(plan: &Plan, w: &Work, view: &dyn View) -> Result<Running, SessionError> {
        let started_wall = SystemTime::now();
        let warnings = plan.warnings.iter().chain(w.leftovers()).cloned().collect();
        let system0 = rtscope_probe::system::capture(&plan.config.cpus);
        let steal_before = rtscope_probe::system::steal_ns();
        let traced = plan.trace != rtscope_trace::Mechanism::Off;
        // The explanation must keep pace with the kernel: under a load that saturates every CPU
        // a SCHED_OTHER main thread gets a few percent, and the capture's backlog (bounded, but
        // tens of MiB) builds up. SCHED_FIFO 1, as the trace reader: above any load, below the
        // measured threads. Not when those are SCHED_OTHER themselves, and untraced runs do
        // almost nothing. Taken before the loads start: the capture's set-up (loading and
        // verifying the eBPF programs, seconds of CPU in an emulated guest) would otherwise get
        // a 1/N share beside N busy load processes (hackbench's 400). The load supervisor sets
        // SCHED_OTHER for itself and the loads' policy for its workers.
        let _prio = (traced && plan.config.policy != rtscope_model::Policy::Other)
            .then(crate::MainPriority::fifo1)
            .flatten();
        let loads = start_loads(plan)?;
        // The loads (forked above) keep every CPU; the session thread, and the capture's
        // reader threads it spawns from here, move to the housekeeping CPUs.
        let mut placement = crate::housekeeping::Placement::enter(&plan.config.housekeeping_cpus);
        let capture = if traced {
            Some(start_capture(plan)?)
        } else {
            None
        };
        let mut explain = if traced {
            Some(stream::Explain::new(plan)?)
        } else {
            None
        };
        // Tracing in bursts: the capture runs `length` every `every` (the first at the start);
        // only samples whose wake-up was due inside a running burst, past its first moments
        // (what runs at a burst's start is learnt from its events), are explained.
        let bursts = plan.config.trace_bursts.filter(|_| traced);
        // The first burst's clock runs from its capture's start (before the threads start and
        // before the analysis is set up), so a slow start does not lengthen the first burst.
        let burst = BurstClock::new(bursts, capture.as_ref().map(|c| c.start_ns()));
        if let (Some(_), Some(x)) = (bursts, explain.as_mut()) {
            x.in_bursts();
        }
        let (raw_csv, checkpointer, spec, feeds) = sinks(plan, traced, view)?;
        if spec.policy == rtscope_model::Policy::Deadline {
            // Unpinned DEADLINE threads inherit the spawning thread's CPUs.
            placement.widen();
        }
        if let Some(e) = placement.error.take() {
            eprintln!("rtscope: warning: {e}");
        }
        // The window starts once every thread is armed: set-up (memory locked, stacks
        // pre-faulted, BPF maps created, buffers allocated) is over; from here until the sampling
        // ends, freed memory stays in the process (unmapping populated pages is a preempt-off
        // section of the kernel's, docs/bound.md) and the reduction counts. What the set-up
        // allocated for a moment (the kernel's BTF parsed to load the eBPF programs, the loads'
        // and the capture's start-up) was freed into the heap, which retention keeps: it goes
        // back to the kernel now, before the window, or it would stay resident (and locked
        // under mlockall) for the whole run.
        crate::release_free_heap();
        let t0 = Instant::now();
        let m = Measurement::start_then(&spec, || {
            placement.narrow();
            if let Some(x) = explain.as_mut() {
                x.switch_kernel_thread_on();
            }
        });
        let m = m?;
        Ok(Running {
            started_wall,
            warnings,
            system0,
            steal_before,
            _prio,
            placement: Some(placement),
            retaining: true,
            loads,
            load_reports: Vec::new(),
            capture,
            stopped_capture: None,
            explain,
            bursts,
            burst,
            raw_csv,
            checkpointer,
            last_checkpoint: None,
            feeds,
            ring_dropped: 0,
            m: Some(m),
            joined: None,
            t0,
            wall_s: 0.0,
            total: plan.config.duration_s.map(Duration::from_secs_f64),
            interrupted: false,
            failure: None,
            notices: Vec::new(),
            batch: Vec::new(),
            explained_batch: Vec::new(),
            events: Vec::new(),
            stable: plan.until_stable.map(crate::tail::UntilStable::new),
        })
    }

    fn measurement(&self) -> Result<&Measurement, SessionError> {
        self.m.as_ref().ok_or(SessionError::NotRunning)
    }

    /// Sleep until the next tick, or less: until a stop signal arrives (seen within
    /// [`STOP_POLL`]), or, once the threads were asked to stop or the duration is over, until
    /// every thread has ended (seen within [`END_POLL`]).
    fn wait_tick(&self) {
        let now = Instant::now();
        let next = now + TICK;
        let end = self.total.map(|d| self.t0 + d);
        loop {
            let now = Instant::now();
            if now >= next || self.m.as_ref().is_none_or(Measurement::all_done) {
                return;
            }
            let ending = self.interrupted
                || self.m.as_ref().is_some_and(Measurement::stop_requested)
                || end.is_some_and(|e| now >= e);
            if !ending && signals::stop_requested() {
                return;
            }
            let mut slice = if ending { END_POLL } else { STOP_POLL };
            if let Some(e) = end.filter(|&e| e > now) {
                slice = slice.min(e - now);
            }
            std::thread::sleep(slice.min(next - now));
        }
    }

    /// One tick: drain, explain, show, checkpoint. Done once every thread has ended.
    fn tick(&mut self, plan: &Plan, view: &mut dyn View) -> Result<Flow, SessionError> {
        let m = self.m.as_mut().ok_or(SessionError::NotRunning)?;
        let done = m.all_done();
        // Drain after reading `done`: a thread that is done has published its last sample.
        drain(m, &mut self.batch, &mut self.feeds);
        m.collect();
        view.samples(&self.batch);
        if let Err(e) = self.explain_batch(plan, done) {
            // The capture or a file failed mid-run: stop measuring, keep what was measured.
            self.failure = Some(e);
            self.measurement()?.request_stop();
        }
        let elapsed = self.t0.elapsed();
        let asked = signals::take_snapshot_request();
        let due = view.update_due(elapsed);
        if asked || due {
            let snap = self.snapshot(elapsed)?;
            if due {
                view.update(&snap);
            }
            if asked {
                eprint!("{}", crate::live::snapshot_text(&snap));
            }
        }
        if let Some(u) = self.stable.as_mut() {
            let bound = self.explain.as_ref().and_then(|x| x.bound_latest());
            if u.step(elapsed.as_secs_f64(), &self.feeds, bound) && !done {
                if let Some(m) = self.m.as_ref() {
                    m.request_stop();
                }
            }
        }
        let cp_due = self.checkpointer.as_ref().is_some_and(|cp| cp.due(elapsed)) && !done;
        let view_due = view.interim_due(elapsed) && !done;
        if cp_due || view_due {
            self.interim(plan, view, elapsed, cp_due, view_due);
        }
        Ok(if done { Flow::Done } else { Flow::Continue })
    }

    /// This tick's samples into the raw CSV, and (traced) with this tick's events into the
    /// analysis; a burst ended or started when due.
    fn explain_batch(&mut self, plan: &Plan, done: bool) -> Result<(), SessionError> {
        if let Some(x) = self.explain.as_mut() {
            // A thread still running late delivers its sample after the trace passed it: keep
            // the events its next wake-up may need.
            let floor = self
                .feeds
                .iter()
                .map(|f| f.next_expected_ns().unwrap_or(0))
                .min()
                .unwrap_or(0);
            x.set_sample_floor(floor);
        }
        let to_explain: &[RawSample] = if self.bursts.is_some() {
            self.explained_batch.clear();
            if self.capture.is_some() {
                let from = self.burst.explain_from_ns;
                let due = self.batch.iter().filter(|s| s.expected_ns >= from);
                self.explained_batch.extend(due);
            }
            &self.explained_batch
        } else {
            &self.batch
        };
        feed(
            &self.batch,
            to_explain,
            &mut self.events,
            self.capture.as_mut(),
            self.explain.as_mut(),
            self.raw_csv.as_mut(),
        )?;
        if let (Some(b), Some(x)) = (self.bursts, self.explain.as_mut()) {
            self.burst
                .step(&b, &mut self.capture, x, plan, done, &mut self.notices)?;
        }
        Ok(())
    }

    fn snapshot(&self, elapsed: Duration) -> Result<LiveSnapshot, SessionError> {
        let explain = self.explain.as_ref();
        let capture = self.capture.as_ref();
        let bursts = explain.and_then(|x| x.burst_totals());
        let m = self.measurement()?;
        Ok(LiveSnapshot {
            elapsed,
            total: self.total,
            threads: m.published().iter().map(thread_live).collect(),
            dominant_tail_cause: explain.and_then(|x| x.dominant_tail_cause()),
            // Bursts that ended lost theirs; the running capture its own so far.
            events_lost: match (capture, bursts) {
                (c, Some((_, _, ended))) => {
                    Some(ended + c.map_or(0, |c| c.lost_so_far().values().sum::<u64>()))
                }
                (c, None) => c.map(|c| c.lost_so_far().values().sum()),
            },
            bursts: bursts.map(|(n, s, _)| (n, s)),
            ring_dropped: ring_dropped(m),
            rss_kib: record::current_rss_kib(),
            checkpoints: self.checkpointer.as_ref().map_or(0, |c| c.written),
            analysis_heap_bytes: explain.map(|x| {
                let (a, b) = x.heap_parts();
                (a as u64, b as u64)
            }),
            trace_backlog: capture.map(|c| {
                let b = c.backlog();
                (b.queued_batches, b.held_events + b.unpolled_events)
            }),
            pending_samples: explain.map(|x| x.pending_samples()),
        })
    }

    /// The record so far, for the view that asked for it and the checkpoint that is due.
    fn interim(
        &mut self,
        plan: &Plan,
        view: &mut dyn View,
        elapsed: Duration,
        cp_due: bool,
        view_due: bool,
    ) {
        let mut rec = self.interim_record(plan, elapsed);
        if view_due {
            view.interim(&rec, elapsed);
        }
        if let Some(cp) = self.checkpointer.as_mut().filter(|_| cp_due) {
            let info = CheckpointInfo {
                number: cp.written + 1,
                written_at: record::rfc3339(SystemTime::now()),
                elapsed_s: elapsed.as_secs_f64(),
                pid: std::process::id(),
                hostname: rec.system.hostname.clone(),
                interval_s: cp.every().as_secs_f64(),
            };
            rec.checkpoint = Some(info.clone());
            let failed = cp.write(&rec, elapsed);
            if failed.is_none() && cp.written == info.number {
                self.last_checkpoint = Some(info);
            }
            if let Some(e) = failed {
                let msg = format!(
                    "checkpoint not stored ({e}); the run goes on and its record will be written at the end"
                );
                eprintln!("rtscope: warning: {msg}");
                self.notices.push(msg);
            }
        }
        drop(rec);
        // Trimming unmaps the freed pages: not from a measured CPU inside the window.
        let measured = &plan.config.cpus;
        if !self.retaining
            || !plan
                .config
                .housekeeping_cpus
                .iter()
                .any(|c| measured.contains(c))
        {
            crate::release_free_heap();
        }
    }

    /// The record of a run still going, from what the threads published so far (their own
    /// recorders are theirs until they end).
    fn interim_record(&self, plan: &Plan, elapsed: Duration) -> RunRecord {
        let published = self.m.as_ref().map_or(&[][..], |m| m.published());
        let threads: Vec<record::ThreadIn<'_>> = published
            .iter()
            .enumerate()
            .map(|(i, p)| record::ThreadIn {
                index: i as u32,
                cpu: p.recorder.cpu,
                recorder: &p.recorder,
                observed_policy: plan.config.policy.name().to_string(),
                observed_priority: plan.config.priority as i32,
                error: None,
            })
            .collect();
        let mut system = self.system0.clone();
        // Steal so far on the measured CPUs, as the final record has it for the whole run.
        let steal_now = rtscope_probe::system::steal_ns();
        let cpus = &plan.config.cpus;
        rtscope_probe::system::set_steal(&mut system, &self.steal_before, &steal_now, cpus);
        let hygiene = rtscope_model::Hygiene {
            peak_rss_kib: record::peak_rss_kib(),
            ..Default::default()
        };
        let mut input = self.record_in(plan, system, hygiene, elapsed.as_secs_f64());
        input.end_reason = EndReason::Checkpoint;
        let mut rec = record::build(input, &threads);
        rec.warnings.push(rtscope_model::Warning::new(
            rtscope_model::WarningCode::Interrupted,
            format!(
                "interim record (checkpoint at {:.0} s): the run had not finished when this was written",
                elapsed.as_secs_f64()
            ),
        ));
        if let Some(x) = self.explain.as_ref() {
            x.fill_interim(&mut rec);
        }
        crate::tail::attach(&self.feeds, &mut rec);
        rec
    }

    /// The one description of this run a record is built from (interim and final alike): the
    /// final record then says how the run ended.
    fn record_in<'a>(
        &'a self,
        plan: &'a Plan,
        system: SystemInfo,
        hygiene: rtscope_model::Hygiene,
        wall_s: f64,
    ) -> record::RecordIn<'a> {
        record::RecordIn {
            id: &plan.id,
            verb: &plan.verb,
            cmdline: &plan.cmdline,
            tags: &plan.tags,
            config: &plan.config,
            warnings: &self.warnings,
            system,
            hygiene,
            started_at: record::rfc3339(self.started_wall),
            wall_s,
            end_reason: EndReason::Completed,
            break_sample: None,
            stop_signal: None,
        }
    }

    /// The threads joined, the capture and the loads stopped. A failure of the capture or a file
    /// mid-run is the run's error, now that everything is stopped.
    fn stop(&mut self) -> Result<(), SessionError> {
        if let Some(x) = self.explain.as_mut() {
            x.end_kernel_thread_window();
        }
        let m = self.m.take().ok_or(SessionError::NotRunning)?;
        self.ring_dropped = ring_dropped(&m);
        let joined = m.join();
        self.wall_s = self.t0.elapsed().as_secs_f64();
        // The sampling is over: teardown may free and unmap again, and what the run kept goes
        // back to the kernel.
        if self.retaining {
            self.retaining = false;
            rtscope_sys::mem::retain_freed(false);
            crate::release_free_heap();
        }
        self.placement = None;
        // The threads are gone: anything still in the rings (none unless a thread ended between
        // the last drain and `done`) was drained, since rings are drained after `done` is read.
        self.stopped_capture = self.capture.take().map(|c| c.finish());
        self.load_reports = self.loads.take().map(|l| l.stop()).unwrap_or_default();
        self.joined = Some(joined?);
        match self.failure.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The final record from the threads' own recorders.
    fn final_record(&mut self, plan: &Plan) -> Result<RunRecord, SessionError> {
        let out = self.joined.take().ok_or(SessionError::NotRunning)?;
        let mut system = self.system0.clone();
        let steal_after = rtscope_probe::system::steal_ns();
        let cpus = &plan.config.cpus;
        rtscope_probe::system::set_steal(&mut system, &self.steal_before, &steal_after, cpus);
        let mut hygiene = out.hygiene;
        hygiene.peak_rss_kib = record::peak_rss_kib();
        let threads: Vec<record::ThreadIn<'_>> = out
            .threads
            .iter()
            .map(|t| record::ThreadIn {
                index: t.index,
                cpu: record::reported_cpu(plan.config.policy, t.cpu, t.last_cpu),
                recorder: &t.recorder,
                observed_policy: t.observed.policy.clone(),
                observed_priority: t.observed.priority,
                error: t.error.clone(),
            })
            .collect();
        let mut input = self.record_in(plan, system, hygiene, self.wall_s);
        input.end_reason = if out.break_sample.is_some() {
            EndReason::BreakAbove
        } else if self.interrupted {
            EndReason::Interrupted
        } else {
            EndReason::Completed
        };
        input.break_sample = out.break_sample;
        input.stop_signal = self.interrupted.then(signals::stop_signal_name);
        let mut rec = record::build(input, &threads);
        for l in &self.load_reports {
            for w in &l.warnings {
                rec.warnings.push(rtscope_model::Warning::new(
                    rtscope_model::WarningCode::Load,
                    format!("load {}: {w}", l.kind),
                ));
            }
        }
        rec.loads = std::mem::take(&mut self.load_reports);
        rec.hygiene.ring_dropped_samples = self.ring_dropped;
        if rec.hygiene.ring_dropped_samples > 0 {
            rec.warnings.push(rtscope_model::Warning::new(
                rtscope_model::WarningCode::LostEvents,
                rtscope_report::notes::ring_dropped(
                    rec.hygiene.ring_dropped_samples,
                    (plan.field_names)(crate::input::Field::Raw),
                ),
            ));
        }
        Ok(rec)
    }

    /// What streamed to the analysis and the files ends: pending samples explained, the trace
    /// file and the raw CSV finished, the checkpoints said.
    fn finish_streams(&mut self, plan: &Plan, rec: &mut RunRecord) -> Result<(), SessionError> {
        if let Some(x) = self.explain.take() {
            let c = self.stopped_capture.take().transpose();
            x.finish(c.map_err(SessionError::Trace)?, rec)?;
        }
        if let Some(w) = self.raw_csv.take() {
            let (p, _) = w.finish().map_err(|source| SessionError::Io {
                what: crate::input::Field::Raw.token(),
                path: plan
                    .raw_csv
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                source,
            })?;
            self.notices
                .push(format!("raw samples CSV: {}", p.display()));
        }
        if let Some(cp) = &self.checkpointer {
            if let Some(n) = cp.note() {
                rec.hygiene.notes.push(n);
            }
            rec.checkpoint = self.last_checkpoint.take();
            if let Some(f) = &cp.failure {
                rec.warnings.push(rtscope_model::Warning::new(
                    rtscope_model::WarningCode::Other,
                    format!("checkpoints could not be stored during the run ({f})"),
                ));
            }
        }
        Ok(())
    }
}

/// Store first, then the files: a file that cannot be written never costs the stored run.
fn store_and_write(
    plan: &Plan,
    rec: RunRecord,
    notices: Vec<String>,
) -> Result<Outcome, SessionError> {
    let stored = match &plan.store {
        Some(s) => Some(
            match &s.fallback_dir {
                Some(dir) => {
                    rtscope_store::fallback::replace_or_fallback_in(s.db.as_deref(), &rec, dir)
                }
                None => rtscope_store::replace_or_fallback(s.db.as_deref(), &rec),
            }
            .map_err(|e| SessionError::Store(e.to_string()))?,
        ),
        None => None,
    };
    let (mut written, mut failed_outputs) = outputs::write(&plan.outputs, &rec);
    // A trace file that could not be written (a full disk mid-run) fails the run like any other
    // output file: the record says why, and the exit says it too.
    if let Some(p) = &plan.trace_file {
        if let Some(w) = rec
            .warnings
            .iter()
            .find(|w| w.message.starts_with(stream::TRACE_FILE_NOT_WRITTEN))
        {
            failed_outputs.push(format!(
                "{} {}: {}",
                crate::input::Field::TraceFile,
                p.display(),
                w.message
            ));
        }
    }
    // A run that was not stored and lost an output file is kept in the fallback directory: a
    // failed write never loses the measurement.
    if !failed_outputs.is_empty() && stored.is_none() {
        match rtscope_store::fallback::keep_in_fallback(&rec) {
            Ok(p) => failed_outputs.push(format!(
                "(the record was kept in {}; `rtscope import` stores it)",
                p.display()
            )),
            Err(e) => failed_outputs.push(format!("(the record could not be kept either: {e})")),
        }
    }
    written.extend(
        notices
            .into_iter()
            .filter(|n| n.starts_with("raw samples CSV")),
    );
    Ok(Outcome {
        record: rec,
        written,
        stored,
        failed_outputs,
        notices: Vec::new(),
    })
}

fn start_capture(plan: &Plan) -> Result<rtscope_trace::TraceSession, SessionError> {
    rtscope_trace::TraceSession::start_with(&plan.config.cpus, plan.trace, plan.trace_keep).map_err(
        |source| SessionError::TraceStart {
            mechanism: plan.trace.name(),
            source,
        },
    )
}

/// A thread's live figures, from what it published so far.
fn thread_live(p: &rtscope_probe::measure::Published) -> ThreadLive {
    let r = &p.recorder;
    ThreadLive {
        cpu: r.cpu,
        tid: r.tid,
        samples: r.hist.count(),
        overruns: r.overruns,
        cur_ns: p.last_ns,
        min_ns: r.hist.min_ns().unwrap_or(0),
        avg_ns: r.hist.mean_ns().map_or(0, |m| m as u64),
        max_ns: r.hist.max_ns().unwrap_or(0),
        p999_ns: r.hist.quantile_ns(0.999),
    }
}

/// Samples the rings could not hand over (the threads' own recorders still have them).
fn ring_dropped(m: &Measurement) -> u64 {
    m.rings.iter().map(|r| r.dropped()).sum()
}

fn drain(m: &Measurement, batch: &mut Vec<RawSample>, feeds: &mut [crate::tail::Feed]) {
    batch.clear();
    for (ring, f) in m.rings.iter().zip(feeds.iter_mut()) {
        let from = batch.len();
        ring.drain(batch);
        for s in &batch[from..] {
            f.push(s);
        }
    }
}

/// When the bursts of a run traced in bursts start and end.
struct BurstClock {
    /// The running burst's capture start, or the last one's (CLOCK_MONOTONIC ns).
    started_ns: u64,
    /// Samples due from here on are explained (CLOCK_MONOTONIC ns).
    explain_from_ns: u64,
    /// A burst's capture could not start: said once.
    start_failed: bool,
}

/// What a burst needs to have seen before a sample is explained: the switch that put the
/// running task on the CPU, an interrupt already open (the streaming look-back's length).
const BURST_SETTLE_NS: u64 = 2_000_000;

impl BurstClock {
    fn new(b: Option<rtscope_model::TraceBursts>, capture_start_ns: Option<u64>) -> BurstClock {
        let started_ns = capture_start_ns.unwrap_or_else(crate::mono_now_ns);
        BurstClock {
            started_ns,
            explain_from_ns: b.map_or(0, |_| started_ns + BURST_SETTLE_NS),
            start_failed: false,
        }
    }

    /// End the running burst when its length is up; start the next when it is due.
    fn step(
        &mut self,
        b: &rtscope_model::TraceBursts,
        capture: &mut Option<rtscope_trace::TraceSession>,
        explain: &mut stream::Explain,
        plan: &Plan,
        done: bool,
        notices: &mut Vec<String>,
    ) -> Result<(), SessionError> {
        let since = crate::mono_now_ns().saturating_sub(self.started_ns) as f64 / 1e9;
        if capture.is_some() && since >= b.length_s && !done {
            if let Some(c) = capture.take() {
                explain.end_burst(c.finish().map_err(SessionError::Trace)?)?;
            }
        } else if capture.is_none() && since >= b.every_s && !done {
            // Restarted from now when the capture cannot start, so a failing start is retried
            // once per period, not on every tick.
            self.started_ns = crate::mono_now_ns();
            match rtscope_trace::TraceSession::start_with(
                &plan.config.cpus,
                plan.trace,
                plan.trace_keep,
            ) {
                Ok(c) => {
                    self.started_ns = c.start_ns();
                    self.explain_from_ns = self.started_ns + BURST_SETTLE_NS;
                    *capture = Some(c);
                }
                // The measurement goes on untraced until the next burst is due.
                Err(e) if !self.start_failed => {
                    self.start_failed = true;
                    let msg = format!(
                        "a tracing burst could not start ({e}); the next one is tried when due"
                    );
                    eprintln!("rtscope: warning: {msg}");
                    notices.push(msg);
                }
                Err(_) => {}
            }
        }
        Ok(())
    }
}

/// One tick of the streaming pipeline: samples and events into the analysis and the files
/// (every sample to the raw CSV, `to_explain` to the analysis).
fn feed(
    samples: &[RawSample],
    to_explain: &[RawSample],
    events: &mut Vec<rtscope_model::event::Event>,
    capture: Option<&mut rtscope_trace::TraceSession>,
    explain: Option<&mut stream::Explain>,
    raw: Option<&mut outputs::RawCsv>,
) -> Result<(), SessionError> {
    if let Some(w) = raw {
        w.push(samples).map_err(|source| SessionError::Io {
            what: crate::input::Field::Raw.token(),
            path: String::new(),
            source,
        })?;
    }
    if let (Some(c), Some(x)) = (capture, explain) {
        events.clear();
        c.poll(events).map_err(SessionError::Trace)?;
        let watermark = c.watermark_ns();
        x.tick(to_explain, events, watermark, c)?;
        // Cleared before the next poll; a burst's capacity goes back now.
        rtscope_model::slack::release_slack(events);
    }
    Ok(())
}
