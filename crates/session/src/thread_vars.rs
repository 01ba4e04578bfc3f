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

use rtscope_analysis::bound::thread::{self, ThreadMeasurer};
use rtscope_model::event::Event;
use rtscope_model::thread_vars::{CpuThreadMeasure, ThreadVarsRun, TracefsReader};
use rtscope_model::warning::{Warning, WarningCode};
use rtscope_trace::preemptirq;
use rtscope_trace::preemptirq_tracefs::{self as pitf, Reader, ReaderTotals, Record};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// One CPU's events through the state machine, restarted at each gap.
#[derive(Clone, Debug, Default)]
pub struct CpuStream {
    cpu: u32,
    /// The state machine since the last gap (or the start).
    m: ThreadMeasurer,
    /// Maxima and counts of the segments before the last gap.
    done: thread::CpuThreadMeasure,
    /// Gaps after which the state machine was restarted.
    pub restarts: u64,
}

fn fold(a: &mut thread::CpuThreadMeasure, b: &thread::CpuThreadMeasure) {
    a.vars.poid_ns = a.vars.poid_ns.max(b.vars.poid_ns);
    a.vars.paie_ns = a.vars.paie_ns.max(b.vars.paie_ns);
    a.vars.psd_ns = a.vars.psd_ns.max(b.vars.psd_ns);
    a.vars.dst_ns = a.vars.dst_ns.max(b.vars.dst_ns);
    a.irq_entry_exit_ns = a.irq_entry_exit_ns.max(b.irq_entry_exit_ns);
    a.preemptirq_events += b.preemptirq_events;
    a.sched_sections += b.sched_sections;
    a.irq_arrivals += b.irq_arrivals;
}

impl CpuStream {
    pub fn new(cpu: u32) -> CpuStream {
        CpuStream {
            cpu,
            ..Default::default()
        }
    }

    /// One event of this CPU, in its time order.
    pub fn push(&mut self, e: &Event) {
        self.m.push(e);
    }

    /// A gap: what was measured so far is kept, the state machine starts again.
    pub fn restart(&mut self) {
        if let Some(m) = std::mem::take(&mut self.m).finish().remove(&self.cpu) {
            fold(&mut self.done, &m);
        }
        self.restarts += 1;
    }

    /// The CPU's measure so far: every segment's maxima, their counts summed.
    pub fn measure(&self) -> thread::CpuThreadMeasure {
        let mut out = self.done.clone();
        if let Some(m) = self.m.get(self.cpu) {
            fold(&mut out, m);
        }
        out
    }
}

/// The measured CPUs' streams; records of other CPUs are ignored.
#[derive(Clone, Debug, Default)]
pub struct Streams {
    pub cpus: BTreeMap<u32, CpuStream>,
}

impl Streams {
    pub fn new(cpus: &[u32]) -> Streams {
        Streams {
            cpus: cpus.iter().map(|&c| (c, CpuStream::new(c))).collect(),
        }
    }

    /// One record from the reader.
    pub fn on_record(&mut self, r: Record) {
        match r {
            Record::Event(e) => {
                if let Some(s) = self.cpus.get_mut(&e.cpu) {
                    s.push(&e);
                }
            }
            Record::Gap { cpu, .. } => {
                if let Some(s) = self.cpus.get_mut(&cpu) {
                    s.restart();
                }
            }
        }
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
                    streams.on_record(rec);
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

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::bound::ThreadVars;
    use rtscope_model::event::EventKind::*;

    fn ev(cpu: u32, ts: u64, kind: rtscope_model::event::EventKind) -> Event {
        Event {
            ts_ns: ts,
            cpu,
            kind,
        }
    }

    fn sw(ts: u64) -> Event {
        ev(
            0,
            ts,
            Switch {
                prev_pid: 1,
                prev_prio: 120,
                prev_state: 0,
                next_pid: 2,
                next_prio: 120,
            },
        )
    }

    /// A gap restarts the state machine: an interval open across it is not measured, the
    /// maxima before it are kept, the counts add up.
    #[test]
    fn a_gap_restarts_the_state_machine() {
        let mut s = Streams::new(&[0]);
        // IRQs off 0–40 (POID 40), then a scheduler section 100–160 with its switch at 130.
        for e in [
            ev(0, 0, IrqDisable),
            ev(0, 40, IrqEnable),
            ev(0, 100, PreemptDisable),
            sw(130),
            ev(0, 160, PreemptEnable),
            // Opened before the gap; its enable after the gap is never paired with it.
            ev(0, 200, PreemptDisable),
        ] {
            s.on_record(Record::Event(e));
        }
        s.on_record(Record::Gap { cpu: 0, missed: 5 });
        // After the gap: the enable at 10_000 would close a 9_800 ns POID had the gap not
        // restarted the state machine; then IRQs off 10_100–10_130 (POID 30).
        for e in [
            ev(0, 10_000, PreemptEnable),
            ev(0, 10_100, IrqDisable),
            ev(0, 10_130, IrqEnable),
        ] {
            s.on_record(Record::Event(e));
        }
        // Another CPU's record is not ours.
        s.on_record(Record::Event(ev(3, 10_200, IrqDisable)));
        let m = s.cpus[&0].measure();
        assert_eq!(
            m.vars,
            ThreadVars {
                poid_ns: 40,
                paie_ns: 0,
                psd_ns: 60,
                dst_ns: 0
            }
        );
        assert_eq!((m.preemptirq_events, m.sched_sections), (8, 1));
        assert_eq!(s.cpus[&0].restarts, 1);
        // Without the gap, the same events give the 9_800 ns interval.
        let mut whole = Streams::new(&[0]);
        for e in [
            ev(0, 0, IrqDisable),
            ev(0, 40, IrqEnable),
            ev(0, 100, PreemptDisable),
            sw(130),
            ev(0, 160, PreemptEnable),
            ev(0, 200, PreemptDisable),
            ev(0, 10_000, PreemptEnable),
        ] {
            whole.on_record(Record::Event(e));
        }
        assert_eq!(whole.cpus[&0].measure().vars.poid_ns, 9_800);
    }

    #[test]
    fn the_document_says_the_loss_and_the_reader() {
        let mut s = Streams::new(&[0, 1]);
        for e in [ev(0, 0, IrqDisable), ev(0, 50, IrqEnable)] {
            s.on_record(Record::Event(e));
        }
        let mut t = ReaderTotals {
            start_ns: 1_000,
            end_ns: 2_000_001_000,
            records: 2,
            bytes: 4096,
            ..Default::default()
        };
        let ok = document(&s, &t, 7, false);
        assert_eq!(ok.lost_events, 0);
        assert_eq!(ok.mechanism, "tracefs");
        assert_eq!(ok.duration_ns, 2_000_000_000);
        assert_eq!(ok.started_ns, 1_000);
        assert_eq!(ok.cpus[0].thread.poid_ns, 50);
        assert_eq!(ok.cpus[0].preemptirq_events, 2);
        assert!(ok
            .warnings
            .iter()
            .all(|w| w.code != WarningCode::LostEvents));
        // CPU 1 saw nothing: said.
        assert!(ok.warnings.iter().any(|w| w.message.contains("cpu 1")));
        let r = ok.reader.expect("reader");
        assert_eq!((r.records, r.bytes, r.cpu_ns), (2, 4096, 7));
        // The stats counter and the pages disagree: the larger counts.
        t.dropped.insert(0, 3);
        t.paged_missed.insert(0, 5);
        t.dropped.insert(1, 2);
        let bad = document(&s, &t, 7, false);
        assert_eq!(bad.lost_events, 7);
        assert_eq!((bad.cpus[0].lost_events, bad.cpus[1].lost_events), (5, 2));
        let w = &bad.warnings[0];
        assert_eq!(w.code, WarningCode::LostEvents);
        assert!(w.message.contains("cpu 0 5, cpu 1 2"), "{}", w.message);
    }
}
