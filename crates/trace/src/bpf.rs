//! eBPF capture: the skeleton built from `src/bpf/rtscope.bpf.c`. Records go into per-CPU
//! lock-free slot regions of a memory-mapped BPF array (one region per measured CPU, one shared
//! by the other CPUs); a thread (SCHED_FIFO 1 when allowed) drains them every 10 ms through the
//! mapping (no syscall per event, no wake-up of the reader by the traced CPU). The protocol is described in the BPF
//! source: claim with an atomic add, fill, commit with an atomic exchange of `seq`.
//!
//! Each pass hands the events below the watermark to the consumer (`crate::Feed`, a bounded
//! queue) and keeps the rest for the next pass. The watermark of a region advances to the pass's
//! start minus [`crate::WATERMARK_MARGIN_NS`] when the pass drained it to its head, and stays
//! below the relevance filter's held switch and open burst of a traced CPU: those are written
//! later with their own, earlier time (rtscope.bpf.c `held`, `bgs`), so the reader reads both
//! per-CPU maps at the start of each pass — before draining, so that a switch flushed meanwhile
//! is either still seen as held or already claimed in its region (a flush claims its slot a few
//! instructions after taking the held record).
//!
//! The skeleton borrows its `OpenObject` storage, so the whole BPF lifetime (open, load, attach,
//! poll, detach) lives on one reader thread; `start` waits for it to report "attached" or the
//! error. Dropping the skeleton closes the link fds, which detaches every program — also when the
//! process dies by any signal, since the kernel closes the fds.

use crate::skel::{RtscopeSkel, RtscopeSkelBuilder};
use crate::{Capture, Feed, Keep, Mechanism, ReaderGone, Stream, TraceError, WATERMARK_MARGIN_NS};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};
use rtscope_model::event::{Event, EventKind, Vector};
use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

// Record kinds and vector ids: keep in sync with rtscope.bpf.c.
const K_IRQ_ENTRY: u16 = 1;
const K_IRQ_EXIT: u16 = 2;
const K_SOFTIRQ_RAISE: u16 = 3;
const K_SOFTIRQ_ENTRY: u16 = 4;
const K_SOFTIRQ_EXIT: u16 = 5;
const K_VEC_ENTRY: u16 = 6;
const K_VEC_EXIT: u16 = 7;
const K_NMI: u16 = 8;
const K_HRT_ENTRY: u16 = 9;
const K_HRT_EXIT: u16 = 10;
const K_WAKING: u16 = 11;
const K_WAKEUP: u16 = 12;
const K_SWITCH: u16 = 13;
const K_MIGRATE: u16 = 14;
const K_IDLE: u16 = 15;
const K_BACKGROUND: u16 = 16;

/// Size of `struct rec` (ts u64, cpu u32, kind u16, pad u16, a u32, b u32, c u64, d u64, seq u64).
pub const REC_SIZE: usize = 48;
/// Offset of `seq` (slot index + 1 once the record is committed).
const SEQ_OFF: usize = 40;
/// Slots per region: keep in sync with SLOT_BITS in rtscope.bpf.c.
const SLOT_BITS: u32 = 17;
const SLOTS: u64 = 1 << SLOT_BITS;
/// `cpu_filter` flag of a measured CPU (rtscope.bpf.c TRACED).
const TRACED: u32 = 1 << 31;
/// `cpu_filter` flag: apply the relevance filter (rtscope.bpf.c RELEVANT).
const RELEVANT: u32 = 1 << 30;
/// Offsets in rtscope.bpf.c's `struct held_sw` (valid u64, ts u64, ...) and `struct bg_burst`
/// (first u64, last u64, count u64, last_rec u64, idle_bits u64).
const HELD_VALID_OFF: usize = 0;
const HELD_TS_OFF: usize = 8;
const BG_FIRST_OFF: usize = 0;
const BG_COUNT_OFF: usize = 16;
/// Between drain passes.
const PASS: Duration = Duration::from_millis(10);
/// Entries of `cpu_filter` and `heads` (rtscope.bpf.c MAX_CPUS).
const MAX_CPUS: usize = 1024;

fn vector_of(id: u32, nr: u32) -> Vector {
    match id {
        1 => Vector::LocalTimer,
        2 => Vector::Reschedule,
        3 => Vector::CallFunction,
        4 => Vector::CallFunctionSingle,
        5 => Vector::IrqWork,
        6 => Vector::ErrorApic,
        7 => Vector::SpuriousApic,
        8 => Vector::ThermalApic,
        9 => Vector::X86PlatformIpi,
        _ => Vector::Other(nr),
    }
}

/// Decode one slot record (its first 40 bytes; `seq` is the reader's business). None for a
/// short or unknown record.
pub fn decode_rec(b: &[u8]) -> Option<Event> {
    if b.len() < SEQ_OFF {
        return None;
    }
    let u64_at = |o: usize| {
        u64::from_le_bytes([
            b[o],
            b[o + 1],
            b[o + 2],
            b[o + 3],
            b[o + 4],
            b[o + 5],
            b[o + 6],
            b[o + 7],
        ])
    };
    let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let ts = u64_at(0);
    let cpu = u32_at(8);
    let kind = u16::from_le_bytes([b[12], b[13]]);
    let a = u32_at(16);
    let bb = u32_at(20);
    let c = u64_at(24);
    let d = u64_at(32);
    let kind = match kind {
        K_IRQ_ENTRY => EventKind::IrqEntry { irq: a },
        K_IRQ_EXIT => EventKind::IrqExit {
            irq: a,
            handled: bb != 0,
        },
        K_SOFTIRQ_RAISE => EventKind::SoftirqRaise { vec: a },
        K_SOFTIRQ_ENTRY => EventKind::SoftirqEntry { vec: a },
        K_SOFTIRQ_EXIT => EventKind::SoftirqExit { vec: a },
        K_VEC_ENTRY => EventKind::VectorEntry {
            vector: vector_of(a, bb),
        },
        K_VEC_EXIT => EventKind::VectorExit {
            vector: vector_of(a, bb),
        },
        K_NMI => EventKind::Nmi { delta_ns: c },
        K_HRT_ENTRY => EventKind::HrtimerEntry {
            timer: c,
            function: d,
            now_ns: 0,
        },
        K_HRT_EXIT => EventKind::HrtimerExit { timer: c },
        K_WAKING => EventKind::Waking {
            pid: a,
            prio: c as u32 as i32,
            target_cpu: bb,
        },
        K_WAKEUP => EventKind::Wakeup {
            pid: a,
            prio: c as u32 as i32,
            target_cpu: bb,
        },
        K_SWITCH => EventKind::Switch {
            prev_pid: a,
            prev_prio: d as u32 as i32,
            prev_state: c,
            next_pid: bb,
            next_prio: (d >> 32) as u32 as i32,
        },
        K_MIGRATE => EventKind::Migrate {
            pid: a,
            orig_cpu: bb,
            dest_cpu: c as u32,
        },
        K_IDLE => EventKind::CpuIdle { state: a },
        K_BACKGROUND => EventKind::Background {
            len_ns: c,
            events: a,
        },
        _ => return None,
    };
    Some(Event {
        ts_ns: ts,
        cpu,
        kind,
    })
}

/// Tracepoints whose absence on a kernel is tolerated (program not loaded, noted).
fn optional_tracepoint(prog: &str) -> Option<(&'static str, String)> {
    let vec_stems = [
        "reschedule",
        "call_function",
        "call_function_single",
        "irq_work",
        "error_apic",
        "spurious_apic",
        "thermal_apic",
        "x86_platform_ipi",
    ];
    for s in vec_stems {
        if prog == format!("{s}_entry") || prog == format!("{s}_exit") {
            return Some(("irq_vectors", prog.to_string()));
        }
    }
    match prog {
        "cpu_idle" => Some(("power", "cpu_idle".into())),
        "nmi_handler" => Some(("nmi", "nmi_handler".into())),
        _ => None,
    }
}

/// Does the running kernel have this tracepoint? Looks for `btf_trace_<name>` in vmlinux BTF —
/// the type tp_btf attach needs — by a substring scan of the BTF string section.
fn kernel_has_tracepoint(btf: &[u8], name: &str) -> bool {
    let needle = format!("btf_trace_{name}\0");
    btf.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Can we load BPF at all? Opens and loads nothing: checks BTF and privileges only.
pub fn available() -> Result<(), String> {
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Err(
            "kernel BTF (/sys/kernel/btf/vmlinux) is missing: tp_btf needs CONFIG_DEBUG_INFO_BTF"
                .into(),
        );
    }
    if !rtscope_sys::system::is_root() {
        // CAP_BPF + CAP_PERFMON would also do; we only claim support for root.
        return Err("eBPF capture needs root (CAP_BPF and CAP_PERFMON)".into());
    }
    Ok(())
}

struct Out {
    /// Events not handed to the consumer (all of them when nobody polled).
    rest: Vec<Event>,
    filtered: u64,
    comms: BTreeMap<u32, String>,
    lost: BTreeMap<u32, u64>,
    bytes: u64,
    notes: Vec<String>,
}

pub struct BpfSession {
    keep: Keep,
    cpus: Vec<u32>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<Out, TraceError>>>,
    start_ns: u64,
    steal0: BTreeMap<u32, u64>,
    pub(crate) stream: Stream,
}

impl BpfSession {
    pub fn start(cpus: &[u32], keep: Keep) -> Result<Self, TraceError> {
        available().map_err(TraceError::Unavailable)?;
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel::<Result<(), TraceError>>();
        let cpus_v = cpus.to_vec();
        let stop2 = stop.clone();
        let steal0 = crate::sys::steal_ns();
        let (feed, stream) = Feed::new();
        let thread = std::thread::Builder::new()
            .name("rtscope-bpf".into())
            .spawn(move || run(cpus_v, keep, stop2, tx, feed))
            .map_err(|e| TraceError::Setup(format!("spawning the BPF reader thread: {e}")))?;
        match rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                return Err(match thread.join() {
                    Ok(Err(e)) => e,
                    _ => TraceError::Setup("BPF reader thread ended before attaching".into()),
                });
            }
        }
        Ok(BpfSession {
            keep,
            cpus: cpus.to_vec(),
            stop,
            thread: Some(thread),
            start_ns: crate::sys::monotonic_ns(),
            steal0,
            stream,
        })
    }

    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    pub fn poll(&mut self, out: &mut Vec<Event>) -> Result<(), TraceError> {
        self.stream
            .poll(out)
            .map_err(|ReaderGone| match self.thread.take().map(|t| t.join()) {
                Some(Ok(Err(e))) => e,
                Some(Err(_)) => TraceError::Capture("BPF reader thread panicked".into()),
                _ => TraceError::Capture("BPF reader thread ended during the capture".into()),
            })
    }

    pub fn finish(mut self) -> Result<Capture, TraceError> {
        let end_ns = crate::sys::monotonic_ns();
        let steal1 = crate::sys::steal_ns();
        self.stop.store(true, Ordering::SeqCst);
        // The reader may be waiting for room in the queue: take what is queued until it ends.
        let mut events = Vec::new();
        self.stream.drain_to_end(&mut events);
        let out = match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| TraceError::Capture("BPF reader thread panicked".into()))??,
            None => return Err(TraceError::Capture("BPF reader was not running".into())),
        };
        if events.is_empty() {
            events = out.rest;
        } else {
            events.extend(out.rest);
        }
        events.sort_by_key(|e| (e.ts_ns, e.cpu));
        let steal = self
            .cpus
            .iter()
            .map(|&c| {
                (
                    c,
                    steal1
                        .get(&c)
                        .copied()
                        .unwrap_or(0)
                        .saturating_sub(self.steal0.get(&c).copied().unwrap_or(0)),
                )
            })
            .collect();
        let mut lost = out.lost;
        for &c in &self.cpus {
            lost.entry(c).or_insert(0);
        }
        Ok(Capture {
            mechanism: Mechanism::Bpf,
            cpus: self.cpus.clone(),
            start_ns: self.start_ns,
            end_ns,
            events,
            comms: out.comms,
            lost_per_cpu: lost,
            steal_ns_per_cpu: steal,
            kernel_bytes: out.bytes,
            notes: out.notes,
            keep: self.keep,
            filtered: out.filtered,
        })
    }
}

impl Drop for BpfSession {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Disconnect first: a reader waiting for room in the queue then goes on.
        self.stream.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join(); // the skeleton (links, maps) is dropped on that thread
        }
    }
}

fn bpf_err(what: &str) -> impl Fn(libbpf_rs::Error) -> TraceError + '_ {
    move |e| TraceError::Setup(format!("bpf: {what}: {e}"))
}

/// A read-only shared mapping of a BPF_F_MMAPABLE array map.
struct Mapping {
    ptr: *const u8,
    len: usize,
}

impl Mapping {
    fn new(fd: std::os::fd::BorrowedFd<'_>, bytes: usize, what: &str) -> Result<Self, TraceError> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let len = bytes.div_ceil(page) * page;
        // SAFETY: a fresh read-only shared mapping of a map fd that outlives it (the skeleton is
        // dropped after the Mapping); the kernel validates length and flags.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(TraceError::Setup(format!(
                "bpf: mmap of the {what} map ({len} bytes): {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(Mapping {
            ptr: p as *const u8,
            len,
        })
    }

    /// The u64 at byte offset `off`, read once (the kernel writes it concurrently).
    fn u64_at(&self, off: usize) -> u64 {
        assert!(off + 8 <= self.len && off.is_multiple_of(8));
        // SAFETY: in bounds and aligned (checked above); volatile because BPF programs on other
        // CPUs store to it concurrently.
        unsafe { std::ptr::read_volatile(self.ptr.add(off) as *const u64) }
    }

    fn copy(&self, off: usize, out: &mut [u8; REC_SIZE]) {
        assert!(off + REC_SIZE <= self.len);
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: in bounds (checked above); byte-wise volatile copy of memory a writer
            // may be changing (the reader re-checks `seq` afterwards and drops torn copies).
            *b = unsafe { std::ptr::read_volatile(self.ptr.add(off + i)) };
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: exactly the region mmap returned.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
        }
    }
}

/// Reader state of one slot region.
#[derive(Default)]
struct Region {
    tail: u64,
    lost: u64,
}

/// Copy every committed record of region `r` from `tail` up to the current head into `out`. A
/// slot that a writer has already reused (the reader fell a whole region behind) is lost; an
/// uncommitted slot (its writer is still filling it) ends this pass. Returns the records copied
/// and whether the pass reached the head read at its start.
fn drain(
    heads: &Mapping,
    recs: &Mapping,
    r: usize,
    st: &mut Region,
    out: &mut Vec<Event>,
    bad: &mut u64,
) -> (u64, bool) {
    let head = heads.u64_at(r * 8);
    fence(Ordering::Acquire);
    if head > st.tail + SLOTS {
        st.lost += head - SLOTS - st.tail;
        st.tail = head - SLOTS;
    }
    let mut copied = 0;
    let mut buf = [0u8; REC_SIZE];
    while st.tail < head {
        let off = ((r << SLOT_BITS) + (st.tail & (SLOTS - 1)) as usize) * REC_SIZE;
        let want = st.tail + 1;
        let seq = recs.u64_at(off + SEQ_OFF);
        if seq != want {
            if seq > want {
                // Overwritten by a writer one lap ahead.
                st.lost += 1;
                st.tail += 1;
                continue;
            }
            return (copied, false); // not committed yet
        }
        fence(Ordering::Acquire);
        recs.copy(off, &mut buf);
        fence(Ordering::Acquire);
        if recs.u64_at(off + SEQ_OFF) != want {
            st.lost += 1; // reused while we copied
        } else {
            match decode_rec(&buf) {
                Some(e) => out.push(e),
                None => *bad += 1,
            }
            copied += 1;
        }
        st.tail += 1;
    }
    (copied, true)
}

/// Per traced CPU (index in `cpus`): the earliest time the relevance filter may still write a
/// record with — its held switch's or open burst's — or `u64::MAX`. Unreadable maps give 0
/// (no watermark progress rather than a wrong one).
fn kernel_held_bounds(skel: &RtscopeSkel<'_>, cpus: &[u32]) -> Vec<u64> {
    let key = 0u32.to_ne_bytes();
    let u64_at = |v: &[u8], o: usize| -> Option<u64> {
        Some(u64::from_ne_bytes(v.get(o..o + 8)?.try_into().ok()?))
    };
    let mut b = vec![u64::MAX; cpus.len()];
    for (map, valid_off, ts_off) in [
        (&skel.maps.held, HELD_VALID_OFF, HELD_TS_OFF),
        (&skel.maps.bgs, BG_COUNT_OFF, BG_FIRST_OFF),
    ] {
        let vals = match map.lookup_percpu(&key, MapFlags::ANY) {
            Ok(Some(v)) => v,
            _ => return vec![0; cpus.len()],
        };
        for (i, &c) in cpus.iter().enumerate() {
            let Some(v) = vals.get(c as usize) else {
                continue;
            };
            match (u64_at(v, valid_off), u64_at(v, ts_off)) {
                (Some(0), _) => {}
                (Some(_), Some(ts)) => b[i] = b[i].min(ts),
                _ => b[i] = 0,
            }
        }
    }
    b
}

/// Loss and filter counters, as `lost_per_cpu` counts them (see `run`).
struct Counters {
    lost: BTreeMap<u32, u64>,
    filtered: u64,
    shared_lost: u64,
    nested: u64,
    missed: u64,
    missed_by: Vec<String>,
}

fn counters(skel: &RtscopeSkel<'_>, cpus: &[u32], regions: &[Region], keep: Keep) -> Counters {
    // Per-CPU loss: records that had no region (BPF side) plus slots lost in each CPU's region;
    // a loss in the shared region (wake-ups/migrations from other CPUs) may concern any measured
    // CPU, so it is added to each of them.
    let mut lost = BTreeMap::new();
    for (cpu, n) in percpu_u64(&skel.maps.lost) {
        if cpus.contains(&cpu) || n > 0 {
            lost.insert(cpu, n);
        }
    }
    let filtered: u64 = percpu_u64(&skel.maps.filtered)
        .into_iter()
        .filter(|(cpu, _)| cpus.contains(cpu))
        .map(|(_, n)| n)
        .sum();
    let shared_lost = regions[cpus.len()].lost;
    for (i, &c) in cpus.iter().enumerate() {
        *lost.entry(c).or_insert(0) += regions[i].lost + shared_lost;
    }
    // Hits the kernel skipped because the same program was already running on that CPU (an
    // hrtimer expiring in hard-IRQ context inside a soft-IRQ hrtimer's callback). The `_nested`
    // programs record those for the hrtimer tracepoints (rtscope.bpf.c); what neither recorded
    // (the primaries' misses minus the nested records) is lost. Their CPU is unknown, so they
    // count on every measured CPU.
    let nested: u64 = percpu_u64(&skel.maps.nested_recs)
        .into_iter()
        .map(|(_, n)| n)
        .sum();
    let mut missed = 0u64;
    let mut missed_by: Vec<String> = Vec::new();
    for p in skel.object().progs().filter(|p| {
        let n = p.name().to_string_lossy();
        // With the relevance filter the hrtimer programs record nothing (activity only).
        let recordless = keep == Keep::Relevant && n.starts_with("hrtimer_expire");
        !(n.ends_with("_nested") || recordless)
    }) {
        let n = recursion_misses_of(p.as_fd());
        if n > 0 {
            missed += n;
            missed_by.push(format!("{} {n}", p.name().to_string_lossy()));
        }
    }
    let missed = missed.saturating_sub(nested);
    if missed > 0 {
        for &c in cpus {
            *lost.entry(c).or_insert(0) += missed;
        }
    }
    Counters {
        lost,
        filtered,
        shared_lost,
        nested,
        missed,
        missed_by,
    }
}

/// Every (pid, comm) of the `comms` hash map: batched (one syscall per 1024 entries) where the
/// kernel supports it, else key by key.
fn read_comms(map: &impl MapCore) -> BTreeMap<u32, String> {
    let mut comms = BTreeMap::new();
    let mut put = |k: &[u8], v: &[u8]| {
        if k.len() < 4 {
            return;
        }
        let pid = u32::from_ne_bytes([k[0], k[1], k[2], k[3]]);
        let end = v.iter().position(|&c| c == 0).unwrap_or(v.len());
        comms.insert(pid, String::from_utf8_lossy(&v[..end]).into_owned());
    };
    let mut any = false;
    if let Ok(it) = map.lookup_batch(1024, MapFlags::ANY, MapFlags::ANY) {
        for (k, v) in it {
            any = true;
            put(&k, &v);
        }
    }
    if !any {
        for k in map.keys() {
            if let Ok(Some(v)) = map.lookup(&k, MapFlags::ANY) {
                put(&k, &v);
            }
        }
    }
    comms
}

fn run(
    cpus: Vec<u32>,
    keep: Keep,
    stop: Arc<AtomicBool>,
    ready: mpsc::Sender<Result<(), TraceError>>,
    mut feed: Feed,
) -> Result<Out, TraceError> {
    // The reader runs at SCHED_FIFO 1 when allowed: above any SCHED_OTHER load (which could
    // otherwise hold it off until slots are reused) and below every measurement thread.
    let reader_fifo =
        rtscope_sys::sched::set_scheduler(0, rtscope_sys::sched::Policy::fifo(1)).is_ok();
    let mut storage = MaybeUninit::uninit();
    let nreg = cpus.len() + 1;
    let attached = open_load_attach(&cpus, keep, &mut storage).and_then(|(skel, notes)| {
        let heads = Mapping::new(skel.maps.heads.as_fd(), MAX_CPUS * 8, "heads")?;
        let recs = Mapping::new(
            skel.maps.recs.as_fd(),
            (nreg << SLOT_BITS) * REC_SIZE,
            "records",
        )?;
        Ok((skel, notes, heads, recs))
    });
    let (skel, notes, heads, recs) = match attached {
        Ok(x) => x,
        Err(e) => {
            let _ = ready.send(Err(TraceError::Setup(e.to_string())));
            return Err(e);
        }
    };
    // Region of each CPU's records (rtscope.bpf.c cpu_filter): its own when traced, else the
    // shared last one.
    let mut region_of = vec![cpus.len() as u16; MAX_CPUS];
    for (i, &c) in cpus.iter().enumerate() {
        region_of[c as usize] = i as u16;
    }
    let region = |cpu: u32| {
        region_of
            .get(cpu as usize)
            .map_or(cpus.len(), |&r| r as usize)
    };
    let mut regions: Vec<Region> = (0..nreg).map(|_| Region::default()).collect();
    // Per region: drained to the head at a pass that started at `drained_ns[r]`; the watermark
    // handed out (monotone).
    let mut drained_ns = vec![0u64; nreg];
    let mut wm = vec![0u64; nreg];
    let mut pending: Vec<Event> = Vec::new();
    let mut bad = 0u64;
    let mut late = 0u64;
    let mut records = 0u64;
    let _ = ready.send(Ok(()));
    loop {
        let last = stop.load(Ordering::SeqCst);
        let pass_ns = crate::sys::monotonic_ns();
        let held = if keep == Keep::Relevant {
            kernel_held_bounds(&skel, &cpus)
        } else {
            vec![u64::MAX; cpus.len()]
        };
        for (r, st) in regions.iter_mut().enumerate() {
            let from = pending.len();
            let (n, complete) = drain(&heads, &recs, r, st, &mut pending, &mut bad);
            records += n;
            late += pending[from..].iter().filter(|e| e.ts_ns < wm[r]).count() as u64;
            if complete {
                drained_ns[r] = pass_ns;
            }
        }
        if last {
            break;
        }
        for r in 0..nreg {
            let mut w = drained_ns[r].saturating_sub(WATERMARK_MARGIN_NS);
            if let Some(&h) = held.get(r) {
                w = w.min(h);
            }
            wm[r] = wm[r].max(w);
        }
        // Sized once: a batch grown by doubling would leave its smaller copies behind in this
        // thread's arena, which keeps freed memory for the whole measurement.
        let due = pending
            .iter()
            .filter(|e| e.ts_ns < wm[region(e.cpu)])
            .count();
        let mut batch = Vec::with_capacity(due);
        pending.retain(|e| {
            let due = e.ts_ns < wm[region(e.cpu)];
            if due {
                batch.push(*e);
            }
            !due
        });
        rtscope_model::slack::release_slack(&mut pending);
        batch.sort_by_key(|e| (e.ts_ns, e.cpu));
        let watermark = wm.iter().copied().min().unwrap_or(0);
        feed.deliver(batch, watermark, pending.len());
        if feed.stats_due() {
            let c = counters(&skel, &cpus, &regions, keep);
            let comms = feed.comms_wanted().then(|| read_comms(&skel.maps.comms));
            feed.publish(|st| {
                st.lost = c.lost;
                st.filtered = c.filtered;
                if let Some(m) = comms {
                    st.comms = m;
                }
            });
        }
        std::thread::sleep(PASS);
    }
    let mut rest = feed.into_rest();
    pending.sort_by_key(|e| (e.ts_ns, e.cpu));
    rest.extend(pending);
    let c = counters(&skel, &cpus, &regions, keep);
    let mut notes = notes;
    if !reader_fifo {
        notes.push("bpf: the reader thread could not get SCHED_FIFO 1 (runs as SCHED_OTHER): under heavy load it may fall behind and lose events".into());
    }
    if c.shared_lost > 0 {
        notes.push(format!(
            "bpf: {} records from non-measured CPUs (cross-CPU wake-ups, migrations) were lost; counted on every measured CPU",
            c.shared_lost
        ));
    }
    let comms = read_comms(&skel.maps.comms);
    if bad > 0 {
        notes.push(format!("bpf: {bad} slot records could not be decoded"));
    }
    if late > 0 {
        notes.push(format!(
            "bpf: {late} records became readable more than {} ms after their timestamp, when the stream had been handed on past it: delivered late, out of time order",
            WATERMARK_MARGIN_NS / 1_000_000
        ));
    }
    if c.nested > 0 {
        notes.push(format!(
            "bpf: {} nested hrtimer events recorded by the second program",
            c.nested
        ));
    }
    if c.missed > 0 {
        notes.push(format!(
            "bpf: {} events not recorded: the kernel skipped a program already running on its CPU (misses: {}; {} of them caught by the nested programs); counted as lost on every measured CPU",
            c.missed,
            c.missed_by.join(", "),
            c.nested
        ));
    }
    drop(recs);
    drop(heads);
    drop(skel); // detaches every program
    Ok(Out {
        rest,
        filtered: c.filtered,
        comms,
        lost: c.lost,
        bytes: records * REC_SIZE as u64,
        notes,
    })
}

/// The per-CPU values of entry 0 of a one-entry `BPF_MAP_TYPE_PERCPU_ARRAY` of u64 counters, as
/// (cpu, value); empty if the map cannot be read.
fn percpu_u64(map: &impl MapCore) -> Vec<(u32, u64)> {
    let key = 0u32.to_ne_bytes();
    match map.lookup_percpu(&key, MapFlags::ANY) {
        Ok(Some(vals)) => vals
            .iter()
            .enumerate()
            .filter_map(|(cpu, v)| {
                let b: [u8; 8] = v.get(..8)?.try_into().ok()?;
                Some((cpu as u32, u64::from_ne_bytes(b)))
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn open_load_attach<'o>(
    cpus: &[u32],
    keep: Keep,
    storage: &'o mut MaybeUninit<libbpf_rs::OpenObject>,
) -> Result<(RtscopeSkel<'o>, Vec<String>), TraceError> {
    let builder = RtscopeSkelBuilder::default();
    let mut open = builder.open(storage).map_err(bpf_err("open"))?;
    let btf = std::fs::read("/sys/kernel/btf/vmlinux").unwrap_or_default();
    let mut notes = Vec::new();
    for mut p in open.open_object_mut().progs_mut() {
        let name = p.name().to_string_lossy().into_owned();
        if let Some((sys, tp)) = optional_tracepoint(&name) {
            if !btf.is_empty() && !kernel_has_tracepoint(&btf, &tp) {
                p.set_autoload(false);
                notes.push(format!(
                    "bpf: tracepoint {sys}:{tp} not available on this kernel"
                ));
            }
        }
    }
    // One slot region per measured CPU, plus one shared by every other CPU.
    let nreg = cpus.len() + 1;
    open.maps
        .recs
        .set_max_entries(u32::try_from(nreg << SLOT_BITS).unwrap_or(u32::MAX))
        .map_err(bpf_err("sizing the record array"))?;
    let mut skel = open.load().map_err(bpf_err("load (verifier)"))?;
    let possible = libbpf_rs::num_possible_cpus()
        .unwrap_or(MAX_CPUS)
        .min(MAX_CPUS);
    for c in 0..possible as u32 {
        let mut flags = match cpus.iter().position(|&x| x == c) {
            Some(i) => TRACED | (i as u32 + 1),
            None => cpus.len() as u32 + 1,
        };
        if keep == Keep::Relevant {
            flags |= RELEVANT;
        }
        skel.maps
            .cpu_filter
            .update(&c.to_ne_bytes(), &flags.to_ne_bytes(), MapFlags::ANY)
            .map_err(bpf_err("cpu filter"))?;
    }
    if let Some(&c) = cpus.iter().find(|&&c| c as usize >= possible) {
        return Err(TraceError::Setup(format!(
            "bpf: CPU {c} is beyond the {possible} possible CPUs this capture supports"
        )));
    }
    skel.attach().map_err(bpf_err("attach"))?;
    Ok((skel, notes))
}

/// Runs of a loaded program the kernel skipped because a program was already running on that
/// CPU (`bpf_prog_info.recursion_misses`): events the program never saw. 0 if the info cannot
/// be read.
pub(crate) fn recursion_misses_of(prog: std::os::fd::BorrowedFd<'_>) -> u64 {
    let mut info = libbpf_rs::libbpf_sys::bpf_prog_info::default();
    let mut len = std::mem::size_of_val(&info) as u32;
    // SAFETY: `info` is a plain C struct of `len` bytes the kernel fills for a valid prog fd.
    let ret = unsafe {
        libbpf_rs::libbpf_sys::bpf_obj_get_info_by_fd(
            prog.as_raw_fd(),
            (&mut info as *mut libbpf_rs::libbpf_sys::bpf_prog_info).cast(),
            &mut len,
        )
    };
    if ret == 0 {
        info.recursion_misses
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_switch_record() {
        let mut b = vec![0u8; SEQ_OFF];
        b[0..8].copy_from_slice(&123u64.to_le_bytes());
        b[8..12].copy_from_slice(&1u32.to_le_bytes());
        b[12..14].copy_from_slice(&K_SWITCH.to_le_bytes());
        b[16..20].copy_from_slice(&7u32.to_le_bytes());
        b[20..24].copy_from_slice(&42u32.to_le_bytes());
        b[24..32].copy_from_slice(&1u64.to_le_bytes());
        let prio = ((-1i32 as u32 as u64) << 32) | 120;
        b[32..40].copy_from_slice(&prio.to_le_bytes());
        let e = decode_rec(&b).expect("decodes");
        assert_eq!(e.ts_ns, 123);
        assert_eq!(e.cpu, 1);
        assert_eq!(
            e.kind,
            EventKind::Switch {
                prev_pid: 7,
                prev_prio: 120,
                prev_state: 1,
                next_pid: 42,
                next_prio: -1
            }
        );
        assert!(decode_rec(&b[..39]).is_none());
        b[12] = 99;
        assert!(decode_rec(&b).is_none());
    }
}
