//! ECRTS'20 Table 1's thread variables (D_POID, D_PAIE, D_PSD, D_ST) per CPU from the
//! preemptirq events of a tracefs ring buffer (`rtscope_trace::preemptirq_tracefs`), streamed
//! as they arrive through `rtscope_analysis::bound::thread`'s state machine — the one
//! `rtscope bound --trace` runs on a recorded trace and the eBPF programs mirror. Nothing is
//! stored: per CPU the state machine and its maxima, so memory is constant for any duration.
//! The streaming analysis of a `--bound` run reads it in the background ([`Background`]); the
//! `trace thread-vars` verb runs it in the foreground.
//!
//! Loss (tracefs): a page read after the ring buffer dropped events restarts that CPU's state
//! machine (its maxima kept), so no interval is measured across events that were never seen —
//! an interval open across a gap is not measured at all, which is why a loss makes the maxima
//! possibly low, never high.

use rtscope_analysis::bound::thread;
pub use rtscope_analysis::bound::thread_stream::{CpuStream, Streams};
use rtscope_model::thread_vars::{CpuThreadMeasure, ThreadVarsRun, TracefsReader};
use rtscope_model::warning::{Warning, WarningCode};
use rtscope_trace::preemptirq;
use rtscope_trace::preemptirq_tracefs::{self as pitf, Reader, ReaderTotals, Record};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// One record from the reader into `streams`.
pub fn on_record(streams: &mut Streams, r: Record) {
    match r {
        Record::Event(e) => streams.event(&e),
        Record::Gap { cpu, .. } => streams.gap(cpu),
    }
}

/// Pure: the run document from the streams and the reader's totals (a CPU's loss is the larger
/// of its `stats` drop counter and its pages' count).
pub fn document(
    streams: &Streams,
    t: &ReaderTotals,
    cpu_ns: u64,
    interrupted: bool,
) -> ThreadVarsRun {
    let cpus: Vec<CpuThreadMeasure> = streams
        .cpus
        .values()
        .map(|s| {
            let m = s.measure();
            CpuThreadMeasure {
                cpu: s.cpu,
                thread: m.vars,
                preemptirq_events: m.preemptirq_events,
                sched_sections: m.sched_sections,
                irq_entry_exit_ns: m.irq_entry_exit_ns,
                irq_arrivals: m.irq_arrivals,
                lost_events: t
                    .dropped
                    .get(&s.cpu)
                    .copied()
                    .unwrap_or(0)
                    .max(t.paged_missed.get(&s.cpu).copied().unwrap_or(0)),
                ..Default::default()
            }
        })
        .collect();
    let lost: u64 = cpus.iter().map(|c| c.lost_events).sum();
    let duration_ns = t.end_ns.saturating_sub(t.start_ns);
    let mut run = preemptirq::summarize(
        cpus,
        duration_ns,
        0,
        Vec::new(),
        t.notes.clone(),
        interrupted,
    );
    if lost > 0 {
        let per_cpu: Vec<String> = run
            .cpus
            .iter()
            .filter(|c| c.lost_events > 0)
            .map(|c| format!("cpu {} {}", c.cpu, c.lost_events))
            .collect();
        run.warnings.insert(
            0,
            Warning::new(
                WarningCode::LostEvents,
                format!(
                    "{lost} events were dropped by the tracefs ring buffer before the reader read \
                     them ({}): the state machine restarted after each gap, so an interval open \
                     across one was not measured — the thread variables may be low, not a sound \
                     measurement",
                    per_cpu.join(", ")
                ),
            ),
        );
    }
    if t.undecoded > 0 {
        run.warnings.push(Warning::new(
            WarningCode::Trace,
            format!(
                "{} ring-buffer records had an event id no decoder knew: they did not reach the \
                 state machine",
                t.undecoded
            ),
        ));
    }
    run.lost_events = lost;
    run.started_ns = t.start_ns;
    run.mechanism = "tracefs".into();
    run.reader = Some(TracefsReader {
        records: t.records,
        bytes: t.bytes,
        cpu_ns,
        restarts: streams.cpus.values().map(|s| s.restarts).sum(),
        undecoded: t.undecoded,
    });
    run
}

/// CPU time of this process (user + system), ns.
pub fn cpu_time_ns() -> u64 {
    rtscope_sys::mem::usage_self().map_or(0, |u| u.user_ns + u.system_ns)
}

pub const NOT_FIFO: &str =
    "the tracefs reader could not get SCHED_FIFO 1 (it ran as SCHED_OTHER): \
                        under load it may fall behind and lose events";

/// What the background reader last published.
#[derive(Clone, Debug, Default)]
struct Snapshot {
    cpus: BTreeMap<u32, (thread::CpuThreadMeasure, u64)>,
    /// The run document, once the reader finished.
    done: Option<ThreadVarsRun>,
    error: Option<String>,
}

/// The tracefs mechanism in a thread of its own, read like the eBPF reduction
/// (`rtscope_trace::preemptirq::Reducer`): what `measure --bound` takes the thread terms from
/// when eBPF cannot run but tracefs has the events. The thread drains the ring buffers every
/// [`pitf::POLL`] and publishes each CPU's maxima after each drain.
pub struct Background {
    shared: Arc<Mutex<Snapshot>>,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Background {
    /// Start tracing `cpus` (errors, e.g. unavailable, come from here, not the thread).
    pub fn start(cpus: &[u32]) -> Result<Background, String> {
        let mut r = Reader::start(cpus).map_err(|e| e.to_string())?;
        let shared = Arc::new(Mutex::new(Snapshot::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (sh, st) = (shared.clone(), stop.clone());
        let cpus = cpus.to_vec();
        let th = std::thread::Builder::new()
            .name("rtscope-pi-tracefs".into())
            .spawn(move || {
                let fifo = pitf::reader_priority();
                let cpu0 = cpu_time_ns();
                let mut streams = Streams::new(&cpus);
                let mut paged: BTreeMap<u32, u64> = BTreeMap::new();
                let publish = |streams: &Streams, paged: &BTreeMap<u32, u64>| {
                    if let Ok(mut s) = sh.lock() {
                        s.cpus = streams
                            .cpus
                            .iter()
                            .map(|(&c, cs)| {
                                (c, (cs.measure(), paged.get(&c).copied().unwrap_or(0)))
                            })
                            .collect();
                    }
                };
                let on = |streams: &mut Streams, paged: &mut BTreeMap<u32, u64>, rec: Record| {
                    if let Record::Gap { cpu, missed } = rec {
                        *paged.entry(cpu).or_default() += missed.max(1);
                    }
                    on_record(streams, rec);
                };
                while !st.load(Ordering::Relaxed) {
                    if let Err(e) = r.drain(&mut |rec| on(&mut streams, &mut paged, rec)) {
                        if let Ok(mut s) = sh.lock() {
                            s.error = Some(e.to_string());
                        }
                        return;
                    }
                    publish(&streams, &paged);
                    std::thread::sleep(pitf::POLL);
                }
                match r.finish(&mut |rec| on(&mut streams, &mut paged, rec)) {
                    Ok(t) => {
                        let mut doc =
                            document(&streams, &t, cpu_time_ns().saturating_sub(cpu0), false);
                        if !fifo {
                            doc.notes.push(NOT_FIFO.into());
                        }
                        if let Ok(mut s) = sh.lock() {
                            s.cpus = doc
                                .cpus
                                .iter()
                                .map(|c| (c.cpu, (c.into(), c.lost_events)))
                                .collect();
                            s.done = Some(doc);
                        }
                    }
                    Err(e) => {
                        if let Ok(mut s) = sh.lock() {
                            s.error = Some(e.to_string());
                        }
                    }
                }
            })
            .map_err(|e| format!("spawning the tracefs preemptirq reader: {e}"))?;
        Ok(Background {
            shared,
            stop,
            thread: Mutex::new(Some(th)),
        })
    }

    /// Per CPU, the maxima so far and the events lost so far (the ring buffer's drop counters
    /// are read at the end; until then the pages' "missed events").
    pub fn read(&self) -> BTreeMap<u32, (thread::CpuThreadMeasure, u64)> {
        self.shared
            .lock()
            .map(|s| s.cpus.clone())
            .unwrap_or_default()
    }

    /// Stop measuring: the reader drains what was committed, reads the drop counters and
    /// removes its instance; later readings give the maxima up to here.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = t.join();
        }
    }

    /// After [`Background::stop`]: the run document (None if the reader failed: [`Background::error`]).
    pub fn summary(&self) -> Option<ThreadVarsRun> {
        self.shared.lock().ok().and_then(|s| s.done.clone())
    }

    /// Why the reader stopped early, if it did.
    pub fn error(&self) -> Option<String> {
        self.shared.lock().ok().and_then(|s| s.error.clone())
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop();
    }
}
