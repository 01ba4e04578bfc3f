//! The preemptirq events read through tracefs, for the thread variables of ECRTS'20 Table 1
//! (`rtscope trace thread-vars --mechanism tracefs`; the state machine runs in
//! `rtscope_session::thread_vars`): the other mechanism besides the eBPF reduction
//! ([`crate::preemptirq`]), for kernels that have the tracepoints where eBPF cannot run (no BTF,
//! no tp_btf, no BPF privileges), and as a check of it.
//!
//! A private tracefs instance enables only what the state machine reads — the four preemptirq
//! events, `sched_switch`, `sched_wakeup`, the IRQ handlers', the x86 system vectors' and the
//! NMI's — on the measured CPUs. [`Reader::drain`] reads each CPU's `trace_pipe_raw` a
//! sub-buffer at a time and hands every record, decoded from the events' `format` files, to the
//! caller at once. A CPU's ring buffer is read in write order, which is time order per CPU, and
//! the state machine needs nothing across CPUs, so no event is held: memory is one page buffer,
//! for any duration (the volume is what §5 warns of: "one second of trace could generate more
//! than 800 MB of data per CPU").
//!
//! Soundness: when the reader falls a whole buffer behind, the ring buffer (overwrite mode)
//! overwrites the oldest events, and the next sub-buffer read carries the "missed events" flag
//! (and, when it had room, the count): [`Record::Gap`] says so before that page's events, and
//! [`Reader::finish`] returns the `per_cpu/cpuN/stats` overrun/drop counters.
//!
//! The reader itself runs on a measured CPU (unless pinned elsewhere): its reads disable
//! preemption and IRQs like any system call, so part of what it measures is its own cost; the
//! eBPF mechanism pays instead inside every tracepoint.

use crate::tracefs::{
    self, cpumask_hex, create_instance, parse_format, parse_header_page, parse_page,
    preemptirq_availability, read_text, remove_instance, stats_lost, wr, Decoders, HeaderPage,
    PageStats, TRACEFS,
};
use crate::TraceError;
use rtscope_model::event::Event;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Events the state machine cannot do without.
pub const REQUIRED: [(&str, &str); 8] = [
    ("preemptirq", "preempt_disable"),
    ("preemptirq", "preempt_enable"),
    ("preemptirq", "irq_disable"),
    ("preemptirq", "irq_enable"),
    ("sched", "sched_switch"),
    ("sched", "sched_wakeup"),
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
];

/// Interrupts whose time is discounted when the kernel has their events (x86 system vectors,
/// the NMI); a missing one is noted, as the eBPF mechanism notes a program it left out.
pub fn optional() -> impl Iterator<Item = (&'static str, &'static str)> {
    tracefs::EVENTS
        .iter()
        .copied()
        .filter(|(sys, _)| *sys == "irq_vectors" || *sys == "nmi")
}

/// Ring-buffer size per CPU (KiB). At the trace kernel's rates under `--icount` (docs/bound.md)
/// this holds well over a second of events, against a reader that drains every
/// [`POLL`].
pub const BUFFER_KB: u64 = 8192;

/// How long a reader should sleep between drains.
pub const POLL: Duration = Duration::from_millis(10);

/// Whether this kernel's tracefs has the preemptirq events (the reason when not). Tracefs that
/// is mountable but not mounted is checked by [`measure`] once mounted.
pub fn available() -> Result<(), String> {
    tracefs::preemptirq_available()
}

/// The instance and its open files; dropping it closes the files, then removes the instance.
struct Instance {
    files: Vec<(u32, File)>,
    path: PathBuf,
    mounted_by_us: bool,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::write(self.path.join("tracing_on"), "0");
        self.files.clear();
        remove_instance(&self.path, self.mounted_by_us);
    }
}

/// Set the instance up: its settings, the decoders of the events it enables, and the notes on
/// optional events the kernel lacks. A required event missing is `Unavailable`.
fn set_up(inst: &Path, cpus: &[u32]) -> Result<(HeaderPage, Decoders, Vec<String>), TraceError> {
    wr(&inst.join("tracing_on"), "0")?;
    // CLOCK_MONOTONIC stamps, as the eBPF mechanism's bpf_ktime_get_ns.
    wr(&inst.join("trace_clock"), "mono")?;
    // Overwrite mode: when the reader falls a buffer behind, the oldest events are overwritten,
    // and the next sub-buffer read carries the "missed events" flag (and count) exactly where
    // the gap is, so the state machine restarts there. In producer/consumer mode new events
    // are dropped instead, counted in `stats` only: the pages say nothing, and an interval
    // would be measured across the gap, as long as the gap (docs/bound.md).
    wr(&inst.join("options/overwrite"), "1")?;
    wr(&inst.join("buffer_size_kb"), &BUFFER_KB.to_string())?;
    wr(&inst.join("tracing_cpumask"), &cpumask_hex(cpus))?;
    let hp_text = read_text(&inst.join("events/header_page"))
        .or_else(|_| read_text(&Path::new(TRACEFS).join("events/header_page")))
        .map_err(|e| TraceError::Setup(format!("reading header_page: {e}")))?;
    let hp = parse_header_page(&hp_text).map_err(TraceError::Setup)?;
    let mut dec = Decoders::default();
    let mut notes = Vec::new();
    let opt: Vec<(&str, &str)> = optional().collect();
    for (sys, name) in REQUIRED.iter().copied().chain(opt.iter().copied()) {
        let dir = inst.join("events").join(sys).join(name);
        let Ok(text) = read_text(&dir.join("format")) else {
            if REQUIRED.contains(&(sys, name)) {
                return Err(TraceError::Unavailable(format!(
                    "the kernel has no {sys}:{name} event in tracefs"
                )));
            }
            notes.push(format!(
                "tracepoint {name} not in this kernel: that interrupt's time is not discounted"
            ));
            continue;
        };
        let f = parse_format(&text).map_err(TraceError::Setup)?;
        dec.add(name, &f).map_err(TraceError::Setup)?;
        wr(&dir.join("enable"), "1")?;
    }
    Ok((hp, dec, notes))
}

/// Put the calling thread (the one that drains) at SCHED_FIFO 1 when allowed: above any
/// SCHED_OTHER load, which otherwise holds the reader off until the ring buffer wraps, below
/// every measurement thread. Whether it worked.
pub fn reader_priority() -> bool {
    rtscope_sys::sched::set_scheduler(0, rtscope_sys::sched::Policy::fifo(1)).is_ok()
}

/// What [`Reader::drain`] hands on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Record {
    /// One event of a CPU, in that CPU's time order.
    Event(Event),
    /// The ring buffer dropped events of `cpu` here (`missed` of them; 0: it did not say how
    /// many): what follows does not continue what came before.
    Gap { cpu: u32, missed: u64 },
}

/// Pure: one page of `cpu`'s `trace_pipe_raw` as records: a gap first when the page follows a
/// loss, then its events. `buf` is scratch (one page's events).
pub fn page_records(
    page: &[u8],
    hp: &HeaderPage,
    cpu: u32,
    dec: &Decoders,
    buf: &mut Vec<Event>,
    each: &mut dyn FnMut(Record),
) -> Result<PageStats, String> {
    buf.clear();
    let mut comms = BTreeMap::new();
    let st = parse_page(page, hp, cpu, dec, buf, &mut comms)?;
    if st.missed > 0 || st.missed_unknown {
        each(Record::Gap {
            cpu,
            missed: st.missed,
        });
    }
    for e in buf.iter() {
        each(Record::Event(*e));
    }
    Ok(st)
}

/// What the reader read, and the ring buffer's own count of what it dropped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReaderTotals {
    /// Started (CLOCK_MONOTONIC) and stopped tracing.
    pub start_ns: u64,
    pub end_ns: u64,
    /// Records decoded and records whose event id no decoder knew.
    pub records: u64,
    pub undecoded: u64,
    pub bytes: u64,
    /// Per CPU, `overrun` + `dropped events` of its `stats`.
    pub dropped: BTreeMap<u32, u64>,
    /// Per CPU, the pages' "missed events" (a flagged page without a count counts one).
    pub paged_missed: BTreeMap<u32, u64>,
    /// Optional events this kernel lacks, one sentence each.
    pub notes: Vec<String>,
}

/// A running capture of the preemptirq events (and what the state machine needs besides).
/// Dropping it stops tracing and removes the instance.
pub struct Reader {
    inst: Instance,
    hp: HeaderPage,
    dec: Decoders,
    page: Vec<u8>,
    buf: Vec<Event>,
    totals: ReaderTotals,
}

impl Reader {
    /// Set up the instance on `cpus` and start tracing. Needs root and the events
    /// ([`available`]); `Unavailable` says why not.
    pub fn start(cpus: &[u32]) -> Result<Reader, TraceError> {
        if cpus.is_empty() {
            return Err(TraceError::BadCpus("no CPUs given".into()));
        }
        tracefs::available().map_err(TraceError::Unavailable)?;
        tracefs::preemptirq_available().map_err(TraceError::Unavailable)?;
        if !rtscope_sys::system::is_root() {
            return Err(TraceError::Unavailable(
                "a tracefs instance needs root".into(),
            ));
        }
        let (path, mounted_by_us) = create_instance()?;
        let mut inst = Instance {
            files: Vec::new(),
            path,
            mounted_by_us,
        };
        // Checked again now that tracefs is surely mounted.
        preemptirq_availability(Path::new(TRACEFS)).map_err(TraceError::Unavailable)?;
        let (hp, dec, notes) = set_up(&inst.path, cpus)?;
        let subbuf_kb = read_text(&inst.path.join("buffer_subbuf_size_kb"))
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .unwrap_or(4);
        for &c in cpus {
            let p = inst.path.join(format!("per_cpu/cpu{c}/trace_pipe_raw"));
            let f = rtscope_sys::fs::open_read_nonblocking(&p)
                .map_err(|e| TraceError::Setup(format!("opening {}: {e}", p.display())))?;
            inst.files.push((c, f));
        }
        let start_ns = crate::sys::monotonic_ns();
        wr(&inst.path.join("tracing_on"), "1")?;
        Ok(Reader {
            inst,
            hp,
            dec,
            page: vec![0u8; subbuf_kb * 1024],
            buf: Vec::new(),
            totals: ReaderTotals {
                start_ns,
                notes,
                ..Default::default()
            },
        })
    }

    /// Read every CPU until its file has nothing more (EAGAIN), handing each record on.
    pub fn drain(&mut self, each: &mut dyn FnMut(Record)) -> Result<(), TraceError> {
        let Reader {
            inst,
            hp,
            dec,
            page,
            buf,
            totals,
        } = self;
        // The reader's own reads toggle preemption and IRQs, and on a measured CPU those
        // events land in the buffer it reads: read until EAGAIN, each read would find the
        // events of the one before. A CPU's pass ends at the first page that reaches the pass's
        // start; what follows is read by the next pass.
        let pass_ns = crate::sys::monotonic_ns();
        for (cpu, f) in inst.files.iter_mut() {
            let cpu = *cpu;
            tracefs::read_pages(cpu, f, page, |p| {
                totals.bytes += p.len() as u64;
                let st = page_records(p, hp, cpu, dec, buf, &mut *each)?;
                totals.records += st.events;
                totals.undecoded += st.undecoded;
                if st.missed > 0 || st.missed_unknown {
                    *totals.paged_missed.entry(cpu).or_default() += st.missed.max(1);
                }
                Ok(buf.last().is_none_or(|e| e.ts_ns < pass_ns))
            })
            .map_err(TraceError::Capture)?;
        }
        Ok(())
    }

    /// Stop tracing, hand on what was committed before, read the drop counters, remove the
    /// instance.
    pub fn finish(mut self, each: &mut dyn FnMut(Record)) -> Result<ReaderTotals, TraceError> {
        wr(&self.inst.path.join("tracing_on"), "0")?;
        self.totals.end_ns = crate::sys::monotonic_ns();
        self.drain(each)?;
        for (c, _) in &self.inst.files {
            let t = read_text(&self.inst.path.join(format!("per_cpu/cpu{c}/stats")))
                .unwrap_or_default();
            self.totals.dropped.insert(*c, stats_lost(&t));
        }
        Ok(std::mem::take(&mut self.totals))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tracefs::tests::{header, pi_decoders, pi_page};
    use rtscope_model::event::EventKind;

    /// A page read after a loss: the gap (with the stored count) comes before its events; the
    /// same page without the flags has no gap. Events as in tracefs's hand-built page.
    #[test]
    fn a_page_after_a_loss_starts_with_a_gap() {
        let dec = pi_decoders();
        let mut page = pi_page();
        let mut buf = Vec::new();
        let mut got = Vec::new();
        let st = page_records(&page, &header(), 1, &dec, &mut buf, &mut |r| got.push(r))
            .expect("parses");
        assert_eq!(st.events, 4);
        assert!(got.iter().all(|r| matches!(r, Record::Event(_))));
        assert_eq!(
            got[0],
            Record::Event(Event {
                ts_ns: 5_000_010,
                cpu: 1,
                kind: EventKind::PreemptDisable
            })
        );
        // RB_MISSED_EVENTS | RB_MISSED_STORED in the commit word, the count (17) after the data.
        let size = u64::from_le_bytes(page[8..16].try_into().expect("8 bytes"));
        page[8..16].copy_from_slice(&(size | (1 << 31) | (1 << 30)).to_le_bytes());
        page.extend_from_slice(&17u64.to_le_bytes());
        got.clear();
        page_records(&page, &header(), 1, &dec, &mut buf, &mut |r| got.push(r)).expect("parses");
        assert_eq!(got.len(), 5);
        assert_eq!(got[0], Record::Gap { cpu: 1, missed: 17 });
        // Flagged without a count.
        page[8..16].copy_from_slice(&(size | (1 << 31)).to_le_bytes());
        got.clear();
        page_records(&page, &header(), 1, &dec, &mut buf, &mut |r| got.push(r)).expect("parses");
        assert_eq!(got[0], Record::Gap { cpu: 1, missed: 0 });
    }

    #[test]
    fn the_optional_events_are_the_interrupts() {
        let o: Vec<_> = optional().collect();
        assert!(o.contains(&("irq_vectors", "local_timer_entry")));
        assert!(o.contains(&("nmi", "nmi_handler")));
        assert!(o.iter().all(|e| !REQUIRED.contains(e)));
        assert_eq!(o.len(), 19);
    }
}
