//! The one run lifecycle. Every verb that runs a measurement (`run`, `measure`, `cyclictest`)
//! resolves its flags into a [`Plan`] (validated: nothing started) and calls [`execute`], which
//! does, in this order:
//!
//! 1. signals (stop on SIGINT/SIGTERM/SIGHUP, snapshot on SIGUSR2) and the system capture;
//! 2. the loads, from this long-lived thread (their death signal is tied to it), given half a
//!    second to reach full intensity;
//! 3. the kernel capture, then the measurement threads;
//! 4. the streaming loop, ~10 times a second: drain every thread's sample ring, poll the
//!    capture, explain every sample whose window the event stream has passed (bounded look-back),
//!    feed the online bound and the trace file, update the live view, write a checkpoint when due;
//! 5. the end: join the threads, stop capture and loads, explain what is pending, build the
//!    record, store it (replacing its checkpoint) and write the files.
//!
//! Nothing held here grows with the run's length: samples and events are consumed as they arrive
//! and only bounded summaries stay (histograms, worst-N with their event windows, per-source
//! interrupt summaries and arrival curves). What the user asked to keep on disk (`--raw`,
//! `--trace-file-mode all`) is written as it comes.
//!
//! The other verbs go through the same pieces: their flags resolved against the machine
//! ([`input`], [`resolve`]), the lifecycle of work without measurement threads ([`work`]: the
//! privilege it needs, leftovers of killed runs, stop signals, its record) and the outputs
//! ([`outputs`]: store, then `--json`, with a fallback file). One module per verb family does the
//! rest from the resolved flags: [`cyclictest`], [`import`], [`load_only`], [`capture`],
//! [`analyze`], [`bound`], [`bench`](mod@bench), [`taskset`], [`mbwi`], [`campaign`], and
//! [`stored`] for the verbs that read the results store.

pub mod analyze;
pub mod bench;
pub mod bound;
pub mod campaign;
pub mod capture;
pub mod checkpoint;
pub mod cyclictest;
pub mod flight;
pub mod import;
pub mod input;
pub mod live;
pub mod load_only;
pub mod mbwi;
pub mod mirror;
pub mod monitor;
pub mod osnoise;
pub mod outputs;
pub mod preset;
pub mod privilege;
pub mod record;
pub mod resolve;
pub mod schedule;
pub mod stored;
/// The one signal module (it lives in `probe`, the lowest crate that runs work).
pub use rtscope_probe::signals;
pub mod stream;
pub mod synth;
pub mod taskset;
pub mod thread_vars;
pub mod work;

pub use input::VerbError;
pub use live::{LiveSnapshot, ThreadLive, View};
pub use outputs::Outputs;
pub use stream::TraceFileMode;

use rtscope_model::{CheckpointInfo, EndReason, RawSample, RunConfig, RunRecord};
use rtscope_probe::{MeasureSpec, Measurement};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

/// Default interval between checkpoints of a stored run.
pub const DEFAULT_CHECKPOINT: Duration = Duration::from_secs(600);
/// How often the orchestrating thread drains, explains and refreshes the view.
const TICK: Duration = Duration::from_millis(100);

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{0}")]
    Probe(#[from] rtscope_probe::ProbeError),
    #[error("starting the {mechanism} capture: {source}")]
    TraceStart {
        mechanism: &'static str,
        source: rtscope_trace::TraceError,
    },
    #[error("trace capture: {0}")]
    Trace(rtscope_trace::TraceError),
    #[error("{0}")]
    Load(rtscope_load::LoadError),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("storing the run: {0}")]
    Store(String),
    #[error("--trace-file {path}: {detail}")]
    TraceFile { path: String, detail: String },
}

/// Where the run's record goes.
#[derive(Clone, Debug)]
pub struct StorePlan {
    /// SQLite path or postgres:// URL (None: the default SQLite file).
    pub db: Option<String>,
    /// Interim records every this long (None: none).
    pub checkpoint: Option<Duration>,
}

/// A fully validated run: nothing has been started when this exists.
pub struct Plan {
    pub id: String,
    /// `measure`, `run`, `cyclictest`.
    pub verb: String,
    /// This process's argv, passwords masked.
    pub cmdline: Vec<String>,
    pub tags: std::collections::BTreeMap<String, String>,
    pub config: RunConfig,
    pub spec: MeasureSpec,
    /// Resolved capture mechanism (never Auto): Off when untraced.
    pub trace: rtscope_trace::Mechanism,
    pub trace_keep: rtscope_trace::Keep,
    pub trace_file: Option<PathBuf>,
    pub trace_file_mode: TraceFileMode,
    /// `--bound`: points of the time-to-bound series.
    pub bound_points: Option<u32>,
    pub loads: Option<(Vec<rtscope_load::LoadKind>, rtscope_load::LoadOptions)>,
    /// `--raw`: every sample as CSV, streamed to disk.
    pub raw_csv: Option<PathBuf>,
    /// None: `--no-store`.
    pub store: Option<StorePlan>,
    pub outputs: Outputs,
    /// Warnings found while resolving (they go into the record).
    pub warnings: Vec<rtscope_model::Warning>,
}

/// What a run produced.
pub struct Outcome {
    pub record: RunRecord,
    /// Files written ("what: path").
    pub written: Vec<String>,
    /// Where the record was stored, or the fallback file and why.
    pub stored: Option<rtscope_store::Saved>,
    /// Output files that could not be written (the record was stored before they were tried).
    pub failed_outputs: Vec<String>,
    /// Warnings for the terminal only (already printed once when they happened: none here yet).
    pub notices: Vec<String>,
}

/// Run a plan from start to end. `view` shows progress; see [`live::default_view`].
pub fn execute(plan: &Plan, view: &mut dyn View) -> Result<Outcome, SessionError> {
    signals::install_handlers();
    pin_malloc_mmap_threshold();
    let started_wall = SystemTime::now();
    let mut system = rtscope_probe::system::capture(&plan.config.cpus);
    let steal_before = rtscope_probe::system::steal_ns();
    let traced = plan.trace != rtscope_trace::Mechanism::Off;
    // The explanation must keep pace with the kernel: under a load that saturates every CPU a
    // SCHED_OTHER main thread gets a few percent, and the capture's backlog (bounded, but tens
    // of MiB) builds up. SCHED_FIFO 1, as the trace reader: above any load, below the measured
    // threads. Not when those are SCHED_OTHER themselves, and untraced runs do almost nothing.
    // Taken before the loads start: the capture's set-up (loading and verifying the eBPF
    // programs, seconds of CPU in an emulated guest) would otherwise get a 1/N share beside N
    // busy load processes (hackbench's 400). The load supervisor sets SCHED_OTHER for itself
    // and the loads' policy for its workers.
    let _prio = (traced && plan.config.policy != rtscope_model::Policy::Other)
        .then(MainPriority::fifo1)
        .flatten();
    let running_loads = match &plan.loads {
        Some((kinds, opts)) => {
            let l = rtscope_load::start(kinds, opts).map_err(SessionError::Load)?;
            std::thread::sleep(Duration::from_millis(500));
            Some(l)
        }
        None => None,
    };
    let mut capture = if traced {
        Some(
            rtscope_trace::TraceSession::start_with(&plan.config.cpus, plan.trace, plan.trace_keep)
                .map_err(|source| SessionError::TraceStart {
                    mechanism: plan.trace.name(),
                    source,
                })?,
        )
    } else {
        None
    };
    let mut explain = if traced {
        Some(stream::Explain::new(plan)?)
    } else {
        None
    };
    // Tracing in bursts: the capture runs `length` every `every` (the first at the start); only
    // samples whose wake-up was due inside a running burst, past its first moments (what runs
    // at a burst's start is learnt from its events), are explained.
    let bursts = plan.config.trace_bursts.filter(|_| traced);
    let mut burst = BurstClock::new(bursts);
    if let (Some(_), Some(x)) = (bursts, explain.as_mut()) {
        x.in_bursts();
    }
    let mut explained_batch: Vec<RawSample> = Vec::new();
    let mut raw_csv = match &plan.raw_csv {
        Some(p) => Some(
            outputs::RawCsv::create(p).map_err(|source| SessionError::Io {
                what: "--raw",
                path: p.display().to_string(),
                source,
            })?,
        ),
        None => None,
    };
    let mut checkpointer = plan
        .store
        .as_ref()
        .and_then(|s| s.checkpoint.map(|every| (s.db.clone(), every)))
        .map(|(db, every)| checkpoint::Checkpointer::new(db, every));
    let streaming = traced || raw_csv.is_some() || view.wants_samples() || checkpointer.is_some();
    let mut spec = plan.spec.clone();
    spec.stream = streaming;
    let mut mirrors: Vec<mirror::Mirror> = spec
        .cpus
        .iter()
        .enumerate()
        .map(|(i, &cpu)| {
            mirror::Mirror::new(
                cpu,
                spec.interval_ns + i as u64 * spec.distance_ns,
                &plan.config,
            )
        })
        .collect();

    let t0 = Instant::now();
    let m = Measurement::start(&spec)?;
    let total = plan.config.duration_s.map(Duration::from_secs_f64);
    let mut interrupted = false;
    let mut batch: Vec<RawSample> = Vec::new();
    let mut events = Vec::new();
    let mut notices = Vec::new();
    let mut failure: Option<SessionError> = None;
    let mut last_checkpoint: Option<CheckpointInfo> = None;
    let system0 = system.clone();
    loop {
        std::thread::sleep(TICK);
        if signals::stop_requested() && !interrupted {
            interrupted = true;
            m.request_stop();
        }
        let done = m.all_done();
        // Drain after reading `done`: a thread that is done has published its last sample.
        drain(&m, &mut batch, &mut mirrors);
        view.samples(&batch);
        if let Some(x) = explain.as_mut() {
            // A thread still running late delivers its sample after the trace passed it: keep
            // the events its next wake-up may need.
            let floor = mirrors
                .iter()
                .map(|mi| mi.next_expected_ns().unwrap_or(0))
                .min()
                .unwrap_or(0);
            x.set_sample_floor(floor);
        }
        let to_explain: &[RawSample] = if bursts.is_some() {
            explained_batch.clear();
            if capture.is_some() {
                explained_batch.extend(
                    batch
                        .iter()
                        .filter(|s| s.expected_ns >= burst.explain_from_ns),
                );
            }
            &explained_batch
        } else {
            &batch
        };
        if let Err(e) = feed(
            &batch,
            to_explain,
            &mut events,
            capture.as_mut(),
            explain.as_mut(),
            raw_csv.as_mut(),
        ) {
            // The capture or a file failed mid-run: stop measuring, keep what was measured.
            failure = Some(e);
            m.request_stop();
        }
        if let (Some(b), Some(x)) = (bursts, explain.as_mut()) {
            if let Err(e) = burst.step(&b, &mut capture, x, plan, done, &mut notices) {
                failure = Some(e);
                m.request_stop();
            }
        }
        let elapsed = t0.elapsed();
        let snap = snapshot(
            &m,
            &mirrors,
            elapsed,
            total,
            explain.as_ref(),
            capture.as_ref(),
            checkpointer.as_ref().map_or(0, |c| c.written),
        );
        view.update(&snap);
        if signals::take_snapshot_request() {
            eprint!("{}", live::snapshot_text(&snap));
        }
        let cp_due = checkpointer.as_ref().is_some_and(|cp| cp.due(elapsed)) && !done;
        let view_due = view.interim_due(elapsed) && !done;
        if cp_due || view_due {
            let mut rec = interim_record(plan, &system0, &mirrors, started_wall, elapsed);
            // Steal so far on the measured CPUs, as the final record has it for the whole run.
            rtscope_probe::system::set_steal(
                &mut rec.system,
                &steal_before,
                &rtscope_probe::system::steal_ns(),
                &plan.config.cpus,
            );
            if let Some(x) = explain.as_ref() {
                x.fill_interim(&mut rec);
            }
            if view_due {
                view.interim(&rec, elapsed);
            }
            if let Some(cp) = checkpointer.as_mut().filter(|_| cp_due) {
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
                    last_checkpoint = Some(info);
                }
                if let Some(e) = failed {
                    let msg = format!(
                        "checkpoint not stored ({e}); the run goes on and its record will be written at the end"
                    );
                    eprintln!("rtscope: warning: {msg}");
                    notices.push(msg);
                }
            }
            drop(rec);
            release_free_heap();
        }
        if done {
            break;
        }
    }
    if let Some(x) = explain.as_mut() {
        x.end_kernel_thread_window();
    }
    view.finish();
    let joined = m.join();
    let wall = t0.elapsed().as_secs_f64();
    // The threads are gone: anything still in the rings (none unless a thread ended between
    // the last drain and `done`) was drained above, since rings are drained after `done` read.
    let stopped_capture = capture.map(|c| c.finish());
    let load_reports = running_loads.map(|l| l.stop()).unwrap_or_default();
    let out = joined?;
    if let Some(e) = failure {
        return Err(e);
    }
    let steal_after = rtscope_probe::system::steal_ns();
    rtscope_probe::system::set_steal(&mut system, &steal_before, &steal_after, &plan.config.cpus);
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
    let end_reason = if out.break_sample.is_some() {
        EndReason::BreakAbove
    } else if interrupted {
        EndReason::Interrupted
    } else {
        EndReason::Completed
    };
    let mut rec = record::build(
        record::RecordIn {
            id: &plan.id,
            verb: &plan.verb,
            cmdline: &plan.cmdline,
            tags: &plan.tags,
            config: &plan.config,
            warnings: &plan.warnings,
            system,
            hygiene,
            started_at: record::rfc3339(started_wall),
            wall_s: wall,
            end_reason,
            break_sample: out.break_sample,
            stop_signal: interrupted.then(signals::stop_signal_name),
        },
        &threads,
    );
    for l in &load_reports {
        for w in &l.warnings {
            rec.warnings.push(rtscope_model::Warning::new(
                rtscope_model::WarningCode::Load,
                format!("load {}: {w}", l.kind),
            ));
        }
    }
    rec.loads = load_reports;
    let dropped: u64 = m_dropped(&mirrors, &rec);
    if dropped > 0 {
        rec.warnings.push(rtscope_model::Warning::new(rtscope_model::WarningCode::LostEvents, format!(
            "{dropped} samples could not be streamed to the analysis in time (the sample ring was full): they are in the histograms but not explained, not in --raw and not in the trace file"
        )));
    }
    if let Some(x) = explain.take() {
        let c = stopped_capture.transpose().map_err(SessionError::Trace)?;
        x.finish(c, &mut rec)?;
    }
    if let Some(w) = raw_csv.take() {
        let (p, _) = w.finish().map_err(|source| SessionError::Io {
            what: "--raw",
            path: plan
                .raw_csv
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            source,
        })?;
        notices.push(format!("raw samples CSV: {}", p.display()));
    }
    if let Some(cp) = &checkpointer {
        if let Some(n) = cp.note() {
            rec.hygiene.notes.push(n);
        }
        rec.checkpoint = last_checkpoint;
        if let Some(f) = &cp.failure {
            rec.warnings.push(rtscope_model::Warning::new(
                rtscope_model::WarningCode::Other,
                format!("checkpoints could not be stored during the run ({f})"),
            ));
        }
    }
    // Store first, then the files: a file that cannot be written never costs the stored run.
    let stored = match &plan.store {
        Some(s) => Some(
            rtscope_store::replace_or_fallback(s.db.as_deref(), &rec)
                .map_err(|e| SessionError::Store(e.to_string()))?,
        ),
        None => None,
    };
    let (mut written, mut failed_outputs) = outputs::write(&plan.outputs, &rec);
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
    written.append(
        &mut notices
            .into_iter()
            .filter(|n| n.starts_with("raw samples CSV"))
            .collect(),
    );
    Ok(Outcome {
        record: rec,
        written,
        stored,
        failed_outputs,
        notices: Vec::new(),
    })
}

/// Samples the rings dropped: the threads' own counts against what the mirrors received.
fn m_dropped(mirrors: &[mirror::Mirror], rec: &RunRecord) -> u64 {
    if mirrors.iter().all(|m| m.samples() == 0) {
        return 0;
    }
    rec.measurement()
        .map_or(&[][..], |m| &m.threads[..])
        .iter()
        .zip(mirrors)
        .map(|(t, m)| t.cycles.saturating_sub(m.samples()))
        .sum()
}

/// Return the heap a checkpoint freed to the kernel. Building, serialising and storing the
/// interim record takes megabytes for a moment; glibc keeps freed memory for reuse, and with the
/// next checkpoint's slightly different sizes the heap's high-water mark (locked under
/// mlockall) crept up by 1–3 MiB per checkpoint in an hour-long run.
fn release_free_heap() {
    rtscope_sys::mem::malloc_trim();
}

/// Large allocations in their own mappings, returned to the kernel when freed or shrunk.
/// glibc raises its mmap threshold to the size of any mapped block that is freed (up to
/// 32 MiB), so after one burst (a backlog of events during a host stall) buffers of megabytes
/// come from the heap, whose pages stay resident and locked under mlockall after the buffers
/// shrink. A fixed threshold turns that dynamic raise off.
fn pin_malloc_mmap_threshold() {
    // 128 KiB is glibc's default value.
    rtscope_sys::mem::set_mmap_threshold(128 * 1024);
}

/// The calling thread at SCHED_FIFO 1 until dropped (then its old policy again).
pub(crate) struct MainPriority(#[allow(dead_code)] rtscope_sys::sched::FifoGuard);

impl MainPriority {
    pub(crate) fn fifo1() -> Option<MainPriority> {
        rtscope_sys::sched::FifoGuard::enter(1).map(MainPriority)
    }
}

fn drain(m: &Measurement, batch: &mut Vec<RawSample>, mirrors: &mut [mirror::Mirror]) {
    batch.clear();
    for (ring, mi) in m.rings.iter().zip(mirrors.iter_mut()) {
        let from = batch.len();
        ring.drain(batch);
        for s in &batch[from..] {
            mi.push(s);
        }
    }
}

/// When the bursts of a run traced in bursts start and end.
struct BurstClock {
    /// The running burst's start, or the last one's.
    started: Instant,
    /// Samples due from here on are explained (CLOCK_MONOTONIC ns).
    explain_from_ns: u64,
    /// A burst's capture could not start: said once.
    start_failed: bool,
}

/// What a burst needs to have seen before a sample is explained: the switch that put the
/// running task on the CPU, an interrupt already open (the streaming look-back's length).
const BURST_SETTLE_NS: u64 = 2_000_000;

impl BurstClock {
    fn new(b: Option<rtscope_model::TraceBursts>) -> BurstClock {
        BurstClock {
            started: Instant::now(),
            explain_from_ns: b.map_or(0, |_| mono_now_ns() + BURST_SETTLE_NS),
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
        let since = self.started.elapsed().as_secs_f64();
        if capture.is_some() && since >= b.length_s && !done {
            if let Some(c) = capture.take() {
                explain.end_burst(c.finish().map_err(SessionError::Trace)?)?;
            }
        } else if capture.is_none() && since >= b.every_s && !done {
            self.started = Instant::now();
            match rtscope_trace::TraceSession::start_with(
                &plan.config.cpus,
                plan.trace,
                plan.trace_keep,
            ) {
                Ok(c) => {
                    *capture = Some(c);
                    self.explain_from_ns = mono_now_ns() + BURST_SETTLE_NS;
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

fn mono_now_ns() -> u64 {
    rtscope_sys::clock::monotonic_ns()
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
            what: "--raw",
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

fn snapshot(
    m: &Measurement,
    mirrors: &[mirror::Mirror],
    elapsed: Duration,
    total: Option<Duration>,
    explain: Option<&stream::Explain>,
    capture: Option<&rtscope_trace::TraceSession>,
    checkpoints: u32,
) -> LiveSnapshot {
    let bursts = explain.and_then(|x| x.burst_totals());
    LiveSnapshot {
        elapsed,
        total,
        threads: mirrors
            .iter()
            .map(|mi| ThreadLive {
                cpu: mi.rec.cpu,
                tid: mi.rec.tid,
                samples: mi.samples(),
                overruns: mi.rec.overruns,
                cur_ns: mi.cur_ns,
                min_ns: if mi.min_ns == u64::MAX { 0 } else { mi.min_ns },
                avg_ns: mi.avg_ns(),
                max_ns: mi.max_ns,
                p999_ns: mi.p999_ns(),
            })
            .collect(),
        dominant_tail_cause: explain.and_then(|x| x.dominant_tail_cause()),
        // Bursts that ended lost theirs; the running capture its own so far.
        events_lost: match (capture, bursts) {
            (c, Some((_, _, ended))) => {
                Some(ended + c.map_or(0, |c| c.lost_so_far().values().sum::<u64>()))
            }
            (c, None) => c.map(|c| c.lost_so_far().values().sum()),
        },
        bursts: bursts.map(|(n, s, _)| (n, s)),
        ring_dropped: m.rings.iter().map(|r| r.dropped()).sum(),
        rss_kib: record::current_rss_kib(),
        checkpoints,
        analysis_heap_bytes: explain.map(|x| {
            let (a, b) = x.heap_parts();
            (a as u64, b as u64)
        }),
        trace_backlog: capture.map(|c| {
            let b = c.backlog();
            (b.queued_batches, b.held_events + b.unpolled_events)
        }),
        pending_samples: explain.map(|x| x.pending_samples()),
    }
}

/// The record of a run still going, from the mirrors (the threads' own recorders are theirs
/// until they end).
fn interim_record(
    plan: &Plan,
    system: &rtscope_model::SystemInfo,
    mirrors: &[mirror::Mirror],
    started: SystemTime,
    elapsed: Duration,
) -> RunRecord {
    let threads: Vec<record::ThreadIn<'_>> = mirrors
        .iter()
        .enumerate()
        .map(|(i, mi)| record::ThreadIn {
            index: i as u32,
            cpu: mi.rec.cpu,
            recorder: &mi.rec,
            observed_policy: plan.config.policy.name().to_string(),
            observed_priority: plan.config.priority as i32,
            error: None,
        })
        .collect();
    let mut rec = record::build(
        record::RecordIn {
            id: &plan.id,
            verb: &plan.verb,
            cmdline: &plan.cmdline,
            tags: &plan.tags,
            config: &plan.config,
            warnings: &plan.warnings,
            system: system.clone(),
            hygiene: rtscope_model::Hygiene {
                peak_rss_kib: record::peak_rss_kib(),
                ..Default::default()
            },
            started_at: record::rfc3339(started),
            wall_s: elapsed.as_secs_f64(),
            end_reason: EndReason::Checkpoint,
            break_sample: None,
            stop_signal: None,
        },
        &threads,
    );
    rec.warnings.push(rtscope_model::Warning::new(
        rtscope_model::WarningCode::Interrupted,
        format!(
        "interim record (checkpoint at {:.0} s): the run had not finished when this was written",
        elapsed.as_secs_f64()
    ),
    ));
    rec
}
