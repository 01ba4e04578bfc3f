//! Kernel event capture for rtscope: eBPF (primary) and a tracefs instance (fallback),
//! decoded into `rtscope_model::event::Event`, and the `.rtt` trace file (docs/trace-format.md).
//!
//! What it owns: the capture mechanisms, their kernel objects (BPF programs and maps, tracefs
//! instances) and their removal on every exit path, the decoders and the `.rtt` format. What it
//! must not do: analyse (attribution and the bound are `rtscope_analysis`'s, fed with its events),
//! format output, or call libc outside the eBPF glue (`bpf.rs`).
//!
//! Typical use, all at the end (what `trace record` does):
//! ```no_run
//! # use rtscope_trace::*;
//! let mech = check(Mechanism::Auto)?;             // resolve, no side effects
//! let session = TraceSession::start(&[0, 1], mech)?;
//! // ... run the measurement ...
//! let capture = session.stop()?;                   // Drop alone also removes all tracing state
//! let file = capture.into_rtt(Vec::new());         // add the samples
//! write_rtt(std::path::Path::new("run.rtt"), &file)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Streaming, for runs of any length (what the session does): poll ~10 times a second; memory
//! stays bounded (the reader hands over batches through a bounded queue) and the trace file is
//! written as the run goes ([`flight::RttWriter`]):
//! ```no_run
//! # use rtscope_trace::*;
//! # use rtscope_trace::flight::{RttWriter, TraceFileMode};
//! let mut session = TraceSession::start(&[0], check(Mechanism::Auto)?)?;
//! let mut file = RttWriter::create("run.rtt".as_ref(), TraceFileMode::default(), &[0])?;
//! let mut events = Vec::new();
//! for _ in 0..100 {
//!     std::thread::sleep(std::time::Duration::from_millis(100));
//!     events.clear();
//!     session.poll(&mut events)?;                  // per CPU in time order
//!     let complete_below = session.watermark_ns(); // no event below this comes any more
//!     file.on_events(&events)?;
//! #   let _ = complete_below;
//! }
//! let rest = session.finish()?;                     // what was not polled yet
//! file.on_events(&rest.events)?;
//! let names = rest.names(&[]);
//! file.finish(rest.into_rtt_named(Vec::new(), names.clone()).meta, &names)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

/// `mod skel`: the skeleton `build.rs` generated for one BPF object (`$file` in `OUT_DIR`),
/// generated code and so without lints. One per capture module.
macro_rules! skeleton {
    ($file:literal) => {
        #[allow(
            clippy::all,
            clippy::pedantic,
            dead_code,
            non_snake_case,
            non_camel_case_types,
            unused
        )]
        mod skel {
            include!(concat!(env!("OUT_DIR"), "/", $file));
        }
    };
}

mod bpf;
pub mod flight;
pub mod kallsyms;
pub mod kfuncs;
pub mod osnoise;
pub mod preemptirq;
pub mod preemptirq_tracefs;
pub mod reduce;
pub mod rtt;
pub mod schedtime;
pub mod sys;
pub mod tracefs;
pub mod watch;

skeleton!("rtscope.skel.rs");

pub use flight::{RttWriter, TraceFileMode};
pub use reduce::{Keep, Reducer};
pub use rtt::{read_rtt, write_rtt, KeptKind, KeptWindowInfo, RttError, RttFile, RttMeta};

use rtscope_model::event::{Event, NameTables};
use rtscope_model::record::RawSample;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How to capture. `Auto` prefers eBPF, then tracefs, then none (with a warning).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mechanism {
    Auto,
    Bpf,
    Tracefs,
    #[default]
    Off,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Auto => "auto",
            Mechanism::Bpf => "bpf",
            Mechanism::Tracefs => "tracefs",
            Mechanism::Off => "off",
        }
    }

    pub const ALL: [Mechanism; 4] = [
        Mechanism::Auto,
        Mechanism::Bpf,
        Mechanism::Tracefs,
        Mechanism::Off,
    ];

    /// The mechanism named `s` among `among` (a verb may take fewer than all); the error lists
    /// them.
    pub fn parse_among(s: &str, among: &[Mechanism]) -> Result<Mechanism, String> {
        among
            .iter()
            .copied()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = among.iter().map(|m| m.name()).collect();
                format!("must be one of {}; got '{s}'", names.join(", "))
            })
    }
}

impl std::str::FromStr for Mechanism {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Mechanism::parse_among(s, &Mechanism::ALL)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The mechanism cannot work on this machine (reason given); nothing was changed.
    #[error("{0}")]
    Unavailable(String),
    /// Setting up failed; whatever was set up has been removed again.
    #[error("{0}")]
    Setup(String),
    /// Reading or decoding failed during the capture.
    #[error("{0}")]
    Capture(String),
    #[error("invalid CPU list: {0}")]
    BadCpus(String),
}

/// Resolve `Auto` and check that the mechanism can work, without touching any kernel state.
/// `Auto` resolves to `Bpf`, else `Tracefs`, else `Off` (the caller warns).
pub fn check(mech: Mechanism) -> Result<Mechanism, TraceError> {
    match mech {
        Mechanism::Off => Ok(Mechanism::Off),
        Mechanism::Bpf => bpf::available()
            .map(|_| Mechanism::Bpf)
            .map_err(TraceError::Unavailable),
        Mechanism::Tracefs => tracefs::available()
            .map(|_| Mechanism::Tracefs)
            .map_err(TraceError::Unavailable),
        Mechanism::Auto => {
            if bpf::available().is_ok() {
                Ok(Mechanism::Bpf)
            } else if tracefs::available().is_ok() {
                Ok(Mechanism::Tracefs)
            } else {
                Ok(Mechanism::Off)
            }
        }
    }
}

/// Why `check(Auto)` would fall back: one line per mechanism that is not usable.
pub fn unavailable_reasons() -> Vec<String> {
    let mut v = Vec::new();
    if let Err(e) = bpf::available() {
        v.push(format!("bpf: {e}"));
    }
    if let Err(e) = tracefs::available() {
        v.push(format!("tracefs: {e}"));
    }
    v
}

/// Everything one capture produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Capture {
    pub mechanism: Mechanism,
    pub cpus: Vec<u32>,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Sorted by (ts_ns, cpu).
    pub events: Vec<Event>,
    pub comms: BTreeMap<u32, String>,
    pub lost_per_cpu: BTreeMap<u32, u64>,
    pub steal_ns_per_cpu: BTreeMap<u32, u64>,
    pub kernel_bytes: u64,
    pub notes: Vec<String>,
    /// What the capture kept (`reduce` module).
    pub keep: Keep,
    /// Events seen on the traced CPUs but left out by the relevance filter.
    pub filtered: u64,
}

impl Capture {
    pub fn lost_total(&self) -> u64 {
        self.lost_per_cpu.values().sum()
    }

    /// Name tables for attribution: comms seen in the capture (plus /proc for threads that never
    /// switched out while traced) and IRQ names from /proc/interrupts.
    pub fn names(&self, extra_pids: &[u32]) -> NameTables {
        let mut comms = self.comms.clone();
        // Tasks switched to but never seen leaving the CPU (the eBPF capture learns a comm when
        // its task switches out): ask /proc while they may still exist.
        let mut switched_in: Vec<u32> = self
            .events
            .iter()
            .filter_map(|e| match e.kind {
                rtscope_model::event::EventKind::Switch { next_pid, .. } => Some(next_pid),
                _ => None,
            })
            .filter(|p| *p != 0 && !comms.contains_key(p))
            .collect();
        switched_in.sort_unstable();
        switched_in.dedup();
        for &p in extra_pids.iter().chain(switched_in.iter()) {
            if let std::collections::btree_map::Entry::Vacant(v) = comms.entry(p) {
                if let Some(c) = sys::comm_of(p) {
                    v.insert(c);
                }
            }
        }
        NameTables {
            comms,
            irqs: sys::irq_names(&sys::read_interrupts()),
        }
    }

    /// Package with samples into a trace file.
    pub fn into_rtt(self, samples: Vec<RawSample>) -> RttFile {
        let mut tids: Vec<u32> = samples.iter().map(|s| s.tid).collect();
        tids.sort_unstable();
        tids.dedup();
        let names = self.names(&tids);
        self.into_rtt_named(samples, names)
    }

    /// [`Capture::into_rtt`] with name tables the caller already has from [`Capture::names`]
    /// (which scans every event and reads /proc).
    pub fn into_rtt_named(self, samples: Vec<RawSample>, names: NameTables) -> RttFile {
        let meta = RttMeta {
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            mechanism: self.mechanism.name().to_string(),
            cpus: self.cpus,
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            kernel: sys::kernel_release(),
            hostname: sys::hostname(),
            lost_per_cpu: self.lost_per_cpu,
            steal_ns_per_cpu: self.steal_ns_per_cpu,
            kernel_bytes: self.kernel_bytes,
            notes: self.notes,
            keep: self.keep.name().to_string(),
            filtered_events: self.filtered,
            file_mode: "all".into(),
            samples_in_run: samples.len() as u64,
            samples_kept: samples.len() as u64,
            ..Default::default()
        };
        RttFile {
            meta,
            names,
            events: self.events,
            samples,
            ..Default::default()
        }
    }
}

// ---------- streaming: reader thread → consumer ----------

/// How far below the start of the reader's last complete drain pass the watermark stays.
///
/// An event's timestamp is taken before its record becomes readable: eBPF reads the clock, then
/// claims a slot (atomic add on the region head) and commits it (exchange of `seq`); the tracefs
/// ring buffer reserves, stamps and commits likewise. A record stamped before the pass started is
/// therefore readable by then unless its writer was held up between the stamp and the claim
/// (the record is not even claimed yet, so the reader cannot see that it is missing). What can
/// hold a writer up there: a hard IRQ and the soft-IRQs run on its exit (up to 2 ms by
/// `MAX_SOFTIRQ_TIME`), an NMI, or, on PREEMPT_RT where soft-IRQs and most handlers are
/// threads, preemption by a higher-priority thread. 20 ms covers all of these by an order of
/// magnitude on a machine fit for real-time work, and costs the consumer only 20 ms more delay
/// before it may close a window. A record that still arrives below the watermark is delivered
/// anyway and counted as late in the capture's notes (the check is cheap, so a broken margin
/// never goes unseen).
///
/// Claimed but uncommitted records are not a risk: the reader stops at an uncommitted slot and
/// does not advance that region's watermark for the pass.
pub const WATERMARK_MARGIN_NS: u64 = 20_000_000;

/// Batches the reader may queue for the consumer (one per drain pass: 10 ms eBPF, 20 ms
/// tracefs, so 2.5–5 s). Past that the reader folds its passes into one spill batch of at most
/// [`SPILL_EVENTS`], then waits for the consumer: the kernel side then overflows and counts the
/// loss — memory never grows with a slow consumer.
pub const QUEUE_BATCHES: usize = 256;

/// Largest spill batch the reader builds while the queue is full (≈ 8 MiB of events).
pub const SPILL_EVENTS: usize = 1 << 18;

/// How often the reader refreshes the loss counters (and the comm names, when asked for).
const STATS_EVERY: Duration = Duration::from_secs(1);

/// One hand-over: events (per CPU in time order) and the watermark that holds once they are
/// delivered. `watermark_ns == 0`: no new watermark with this batch.
pub(crate) struct Batch {
    pub events: Vec<Event>,
    pub watermark_ns: u64,
}

/// Counters the reader publishes about once a second.
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedStats {
    pub lost: BTreeMap<u32, u64>,
    pub filtered: u64,
    pub comms: BTreeMap<u32, String>,
}

/// What the reader thread and the consumer share besides the batches.
#[derive(Default)]
pub(crate) struct Shared {
    pub stats: Mutex<SharedStats>,
    /// Set by the first `poll`: until then the reader keeps its passes (the `stop`-only use).
    pub streaming: AtomicBool,
    /// Set by `comms()`: the reader reads the names at its next stats refresh.
    pub comms_wanted: AtomicBool,
    /// Batches in the queue now.
    pub queued: AtomicUsize,
    /// Events the reader holds: drained but above the watermark, plus its spill batch.
    pub held_events: AtomicUsize,
    /// Events kept because nobody polls.
    pub unpolled: AtomicUsize,
}

/// How much the capture holds in memory right now (a long run's check that nothing grows).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReaderBacklog {
    /// Events the reader holds back (above the watermark, or spilled while the queue is full).
    pub held_events: usize,
    /// Batches waiting in the queue for `poll` (at most [`QUEUE_BATCHES`]).
    pub queued_batches: usize,
    /// Events the reader kept because `poll` was never called (the `stop`-at-the-end use).
    pub unpolled_events: usize,
}

/// The reader thread's end of the hand-over.
pub(crate) struct Feed {
    tx: SyncSender<Batch>,
    pub shared: Arc<Shared>,
    /// Passes kept while nobody polls, in fixed chunks (one growing Vec would, at some doubling,
    /// allocate and fault in a large block at once while the traced CPUs keep writing). The
    /// chunks are small: freed memory stays in the process while a measurement runs
    /// (`rtscope_sys::mem::retain_freed`), so a chunk sized for the worst backlog would stay
    /// resident for the whole run after a set-up that kept a few hundred events.
    backlog: Vec<Vec<Event>>,
    /// A batch the full queue did not take; later passes are appended to it.
    spill: Option<Batch>,
    last_stats: Option<Instant>,
}

/// Events per backlog chunk (8 192 × 48 bytes = 384 KiB).
const BACKLOG_CHUNK: usize = 1 << 13;

impl Feed {
    /// The bounded queue and both of its ends.
    pub fn new() -> (Feed, Stream) {
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE_BATCHES);
        let shared = Arc::new(Shared::default());
        (
            Feed {
                tx,
                shared: shared.clone(),
                backlog: Vec::new(),
                spill: None,
                last_stats: None,
            },
            Stream {
                rx: Some(rx),
                shared,
                watermark_ns: 0,
            },
        )
    }

    /// Hand over one pass. Never blocks while the queue has room or the spill batch is below
    /// [`SPILL_EVENTS`]; then it waits for the consumer.
    pub fn deliver(&mut self, events: Vec<Event>, watermark_ns: u64, held: usize) {
        if !self.shared.streaming.load(Ordering::Acquire) {
            for e in events {
                if self.backlog.last().is_none_or(|c| c.len() == c.capacity()) {
                    self.backlog.push(Vec::with_capacity(BACKLOG_CHUNK));
                }
                if let Some(c) = self.backlog.last_mut() {
                    c.push(e);
                }
            }
            let kept: usize = self.backlog.iter().map(Vec::len).sum();
            self.shared.unpolled.store(kept, Ordering::Relaxed);
            self.shared.held_events.store(held, Ordering::Relaxed);
            return;
        }
        self.shared.unpolled.store(0, Ordering::Relaxed);
        // The first passes after `poll` started: what was kept so far goes first.
        for chunk in std::mem::take(&mut self.backlog) {
            self.send_blocking(Batch {
                events: chunk,
                watermark_ns: 0,
            });
        }
        let batch = match self.spill.take() {
            Some(mut b) => {
                b.events.extend(events);
                b.watermark_ns = b.watermark_ns.max(watermark_ns);
                b
            }
            None => Batch {
                events,
                watermark_ns,
            },
        };
        if batch.events.len() >= SPILL_EVENTS {
            self.send_blocking(batch);
        } else {
            match self.tx.try_send(batch) {
                Ok(()) => {
                    self.shared.queued.fetch_add(1, Ordering::Relaxed);
                }
                Err(TrySendError::Full(b)) => self.spill = Some(b),
                // The consumer is gone (the session is being dropped): nothing to keep.
                Err(TrySendError::Disconnected(_)) => {}
            }
        }
        let spilled = self.spill.as_ref().map_or(0, |b| b.events.len());
        self.shared
            .held_events
            .store(held + spilled, Ordering::Relaxed);
    }

    fn send_blocking(&mut self, b: Batch) {
        if self.tx.send(b).is_ok() {
            self.shared.queued.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether the stats are due for a refresh (streaming, about once a second).
    pub fn stats_due(&mut self) -> bool {
        if !self.shared.streaming.load(Ordering::Relaxed) {
            return false;
        }
        let due = self.last_stats.is_none_or(|t| t.elapsed() >= STATS_EVERY);
        if due {
            self.last_stats = Some(Instant::now());
        }
        due
    }

    /// Whether the consumer asked for the names since the last refresh (clears the request).
    pub fn comms_wanted(&self) -> bool {
        self.shared.comms_wanted.swap(false, Ordering::Relaxed)
    }

    pub fn publish(&self, f: impl FnOnce(&mut SharedStats)) {
        if let Ok(mut st) = self.shared.stats.lock() {
            f(&mut st);
        }
    }

    /// At the end: what the consumer has not been handed (kept passes, the spill batch).
    pub fn into_rest(self) -> Vec<Event> {
        let mut v: Vec<Event> = self.backlog.concat();
        if let Some(b) = self.spill {
            v.extend(b.events);
        }
        v
    }
}

/// The consumer's end of the hand-over (owned by the session).
pub(crate) struct Stream {
    rx: Option<Receiver<Batch>>,
    shared: Arc<Shared>,
    watermark_ns: u64,
}

/// The reader thread ended before `finish`.
pub(crate) struct ReaderGone;

impl Stream {
    pub fn poll(&mut self, out: &mut Vec<Event>) -> Result<(), ReaderGone> {
        self.shared.streaming.store(true, Ordering::Release);
        let Some(rx) = &self.rx else {
            return Err(ReaderGone);
        };
        loop {
            match rx.try_recv() {
                Ok(b) => {
                    self.shared.queued.fetch_sub(1, Ordering::Relaxed);
                    out.extend(b.events);
                    self.watermark_ns = self.watermark_ns.max(b.watermark_ns);
                }
                Err(TryRecvError::Empty) => return Ok(()),
                Err(TryRecvError::Disconnected) => {
                    self.rx = None;
                    return Err(ReaderGone);
                }
            }
        }
    }

    pub fn watermark_ns(&self) -> u64 {
        self.watermark_ns
    }

    pub fn stats(&self) -> SharedStats {
        self.shared
            .stats
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    pub fn comms(&self) -> BTreeMap<u32, String> {
        self.shared.comms_wanted.store(true, Ordering::Relaxed);
        self.shared
            .stats
            .lock()
            .map(|s| s.comms.clone())
            .unwrap_or_default()
    }

    pub fn backlog(&self) -> ReaderBacklog {
        ReaderBacklog {
            held_events: self.shared.held_events.load(Ordering::Relaxed),
            queued_batches: self.shared.queued.load(Ordering::Relaxed),
            unpolled_events: self.shared.unpolled.load(Ordering::Relaxed),
        }
    }

    /// After the reader was told to stop: every batch still queued, until the reader ends.
    pub fn drain_to_end(&mut self, out: &mut Vec<Event>) {
        if let Some(rx) = self.rx.take() {
            while let Ok(b) = rx.recv() {
                out.extend(b.events);
            }
        }
    }

    /// Disconnect (the reader's sends fail from now on, so it never waits for us).
    pub fn close(&mut self) {
        self.rx = None;
    }
}

enum Inner {
    Bpf(bpf::BpfSession),
    Tracefs(tracefs::TracefsSession),
    Off { cpus: Vec<u32>, start_ns: u64 },
}

/// A running capture. Either `poll` it as the run goes and `finish` at the end (memory stays
/// bounded), or only `stop` at the end (everything is kept until then). Dropping it without
/// either removes all tracing state as well (BPF links, the tracefs instance).
pub struct TraceSession {
    inner: Inner,
}

impl TraceSession {
    /// Start capturing on `cpus` (online CPU numbers). `Auto` is resolved as in [`check`].
    /// Start with the default filter ([`Keep::Relevant`]).
    pub fn start(cpus: &[u32], mech: Mechanism) -> Result<Self, TraceError> {
        Self::start_with(cpus, mech, Keep::default())
    }

    /// Start a capture on `cpus` that keeps `keep` (see the `reduce` module).
    pub fn start_with(cpus: &[u32], mech: Mechanism, keep: Keep) -> Result<Self, TraceError> {
        Self::start_opts(cpus, mech, keep, false)
    }

    /// [`TraceSession::start_with`], with the preemptirq events when `preemptirq`: tracefs only
    /// (the eBPF capture has no programs for them; `Unavailable` otherwise) and `keep` all.
    pub fn start_opts(
        cpus: &[u32],
        mech: Mechanism,
        keep: Keep,
        preemptirq: bool,
    ) -> Result<Self, TraceError> {
        if cpus.is_empty() {
            return Err(TraceError::BadCpus("no CPUs given".into()));
        }
        let ncpu = rtscope_sys::affinity::configured_cpus().map_or(-1, i64::from);
        if let Some(&c) = cpus
            .iter()
            .find(|&&c| (c as i64) >= ncpu.max(1) as i64 || c >= 1024)
        {
            return Err(TraceError::BadCpus(format!(
                "cpu {c} does not exist (0..={})",
                ncpu.max(1) - 1
            )));
        }
        let inner = match check(mech)? {
            Mechanism::Bpf if preemptirq => {
                return Err(TraceError::Unavailable(
                    "the eBPF capture does not record preemptirq events (tracefs does)".into(),
                ))
            }
            Mechanism::Bpf => Inner::Bpf(bpf::BpfSession::start(cpus, keep)?),
            Mechanism::Tracefs => {
                Inner::Tracefs(tracefs::TracefsSession::start_with(cpus, keep, preemptirq)?)
            }
            _ => Inner::Off {
                cpus: cpus.to_vec(),
                start_ns: sys::monotonic_ns(),
            },
        };
        Ok(TraceSession { inner })
    }

    /// When the capture began recording (CLOCK_MONOTONIC ns): after the programs were
    /// attached or the tracefs instance switched on, so set-up time is not counted as traced.
    pub fn start_ns(&self) -> u64 {
        match &self.inner {
            Inner::Bpf(b) => b.start_ns(),
            Inner::Tracefs(t) => t.start_ns(),
            Inner::Off { start_ns, .. } => *start_ns,
        }
    }

    pub fn mechanism(&self) -> Mechanism {
        match self.inner {
            Inner::Bpf(_) => Mechanism::Bpf,
            Inner::Tracefs(..) => Mechanism::Tracefs,
            Inner::Off { .. } => Mechanism::Off,
        }
    }

    /// Everything captured that was not polled: [`TraceSession::finish`] (the name of the
    /// all-at-the-end use).
    pub fn stop(self) -> Result<Capture, TraceError> {
        self.finish()
    }

    /// Events delivered since the last call, appended to `out`: any interleaving across CPUs,
    /// per CPU in time order. The first call switches the capture to streaming: until then the
    /// reader keeps what it read for `finish` (so a caller that only stops at the end gets
    /// everything). Errors when the reader thread failed (what it read is then lost).
    pub fn poll(&mut self, out: &mut Vec<Event>) -> Result<(), TraceError> {
        match &mut self.inner {
            Inner::Bpf(s) => s.poll(out),
            Inner::Tracefs(s) => s.poll(out),
            Inner::Off { .. } => Ok(()),
        }
    }

    /// What the capture holds in memory now (queued batches, held and unpolled events).
    pub fn backlog(&self) -> ReaderBacklog {
        match &self.inner {
            Inner::Bpf(s) => s.stream.backlog(),
            Inner::Tracefs(s) => s.stream.backlog(),
            Inner::Off { .. } => ReaderBacklog::default(),
        }
    }

    /// CLOCK_MONOTONIC ns up to which every event has been delivered by [`TraceSession::poll`]:
    /// no event with `ts_ns` below it comes any more (within [`WATERMARK_MARGIN_NS`]'s
    /// argument; a violation is counted in the capture's notes). Monotone; 0 before the first
    /// poll. Held back, on top of the margin, while the relevance filter still holds a switch or
    /// an open burst of left-out events with an earlier time (they are written later with their
    /// own time). Untraced: now.
    pub fn watermark_ns(&self) -> u64 {
        match &self.inner {
            Inner::Bpf(s) => s.stream.watermark_ns(),
            Inner::Tracefs(s) => s.stream.watermark_ns(),
            Inner::Off { .. } => sys::monotonic_ns(),
        }
    }

    /// Events lost so far per traced CPU, as [`Capture::lost_per_cpu`] counts them (eBPF: the
    /// programs' recursion misses included), refreshed about once a second while polling.
    pub fn lost_so_far(&self) -> BTreeMap<u32, u64> {
        match &self.inner {
            Inner::Bpf(s) => s.stream.stats().lost,
            Inner::Tracefs(s) => s.stream.stats().lost,
            Inner::Off { .. } => BTreeMap::new(),
        }
    }

    /// Events left out by the relevance filter so far (refreshed as `lost_so_far`).
    pub fn filtered_so_far(&self) -> u64 {
        match &self.inner {
            Inner::Bpf(s) => s.stream.stats().filtered,
            Inner::Tracefs(s) => s.stream.stats().filtered,
            Inner::Off { .. } => 0,
        }
    }

    /// Comm names learned so far (eBPF: the `comms` map; tracefs: the names in switch and
    /// wake-up records). Asking makes the reader read them at its next refresh (at most about
    /// once a second), so this returns the names as of the previous request.
    pub fn comms(&mut self) -> BTreeMap<u32, String> {
        match &self.inner {
            Inner::Bpf(s) => s.stream.comms(),
            Inner::Tracefs(s) => s.stream.comms(),
            Inner::Off { .. } => BTreeMap::new(),
        }
    }

    /// What the capture holds in memory right now.
    pub fn reader_backlog(&self) -> ReaderBacklog {
        match &self.inner {
            Inner::Bpf(s) => s.stream.backlog(),
            Inner::Tracefs(s) => s.stream.backlog(),
            Inner::Off { .. } => ReaderBacklog::default(),
        }
    }

    /// Stop and remove all tracing state. The capture holds what `poll` did not deliver (all of
    /// it when `poll` was never called), sorted by (ts, cpu), and the final counters and names.
    pub fn finish(self) -> Result<Capture, TraceError> {
        match self.inner {
            Inner::Bpf(s) => s.finish(),
            Inner::Tracefs(s) => s.finish(),
            Inner::Off { cpus, start_ns } => Ok(Capture {
                mechanism: Mechanism::Off,
                cpus,
                start_ns,
                end_ns: sys::monotonic_ns(),
                ..Default::default()
            }),
        }
    }
}

/// Remove what SIGKILLed rtscope processes left in tracefs (their instances); returns what was
/// done. The osnoise settings a killed `noise`/`measure --probe timerlat` had changed are knobs,
/// written back by `rtscope_sys::knob::repair_stale`. Without tracefs mounted there is nothing
/// to do.
pub fn remove_stale_instances() -> Vec<String> {
    let root = std::path::Path::new(tracefs::TRACEFS);
    if !root.join("instances").is_dir() {
        return Vec::new();
    }
    // The osnoise settings of killed runs are knobs: written back by the knob journal's repair.
    tracefs::remove_stale_instances(root)
}

/// Tracefs instances this process (or a dead rtscope) left behind; empty after a clean stop.
pub fn leftover_instances() -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(std::path::Path::new(tracefs::TRACEFS).join("instances")) else {
        return Vec::new();
    };
    rd.flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rtscope-"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::event::EventKind;

    fn evs(from: u64, n: u64) -> Vec<Event> {
        (from..from + n)
            .map(|ts| Event {
                ts_ns: ts,
                cpu: 0,
                kind: EventKind::CpuIdle { state: 1 },
            })
            .collect()
    }

    /// Nobody polls: the reader keeps everything for the end. Polling: the queue takes
    /// QUEUE_BATCHES batches, then passes fold into one spill batch (bounded), handed over in
    /// order once there is room; the watermark arrives with the events below it.
    #[test]
    fn feed_keeps_until_polled_then_bounds_the_queue() {
        let (mut feed, mut stream) = Feed::new();
        feed.deliver(evs(0, 10), 10, 0);
        assert_eq!(stream.backlog().unpolled_events, 10);
        let mut out = Vec::new();
        stream.poll(&mut out).map_err(|_| "gone").expect("poll");
        assert!(out.is_empty());
        assert_eq!(stream.watermark_ns(), 0);
        // Streaming now: the kept pass goes first.
        let mut ts = 10;
        for _ in 0..QUEUE_BATCHES + 5 {
            feed.deliver(evs(ts, 3), ts + 3, 7);
            ts += 3;
        }
        let b = stream.backlog();
        assert_eq!(b.queued_batches, QUEUE_BATCHES);
        assert_eq!(b.unpolled_events, 0);
        // The kept pass took one slot: 6 passes of 3 events spilled, plus 7 held.
        assert_eq!(b.held_events, 6 * 3 + 7);
        stream.poll(&mut out).map_err(|_| "gone").expect("poll");
        assert_eq!(out, evs(0, 10 + 3 * (QUEUE_BATCHES as u64 - 1)));
        let wm = stream.watermark_ns();
        assert!(out.iter().all(|e| e.ts_ns < wm));
        feed.deliver(evs(ts, 2), ts + 2, 0);
        stream.poll(&mut out).map_err(|_| "gone").expect("poll");
        assert_eq!(out, evs(0, ts + 2));
        assert_eq!(stream.watermark_ns(), ts + 2);
        assert_eq!(stream.backlog().queued_batches, 0);
        // The reader ends: what it still holds is returned by it, the queue is drained.
        feed.deliver(evs(ts + 2, 1), ts + 3, 0);
        let rest = feed.into_rest();
        assert!(rest.is_empty());
        let mut tail = Vec::new();
        stream.drain_to_end(&mut tail);
        assert_eq!(tail, evs(ts + 2, 1));
        assert!(stream.poll(&mut out).is_err());
    }
}
