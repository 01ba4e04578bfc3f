//! The `.rtt` trace file: kernel events + samples + name tables + per-CPU loss + metadata, so
//! `rtscope analyze` can redo attribution offline on any machine. Format: docs/trace-format.md.
//!
//! Layout (all integers little-endian):
//! ```text
//! header  : magic "RTSTRACE" (8) | version u16 | flags u16 (0) | reserved u32 (0)
//! section*: tag [u8;4] | payload length u64 | payload | crc32(payload) u32
//!   "META" JSON RttMeta      v1/v2: exactly one, first. v3: one or more, the last one wins (the
//!                            writer puts a provisional one first and the final one at the end)
//!   "NAME" JSON NameTables   v1/v2: exactly one. v3: any number, the last one wins (at the end)
//!   "EVTS" cpu varint | count varint | events (delta-coded from 0, see encode_event)
//!                            v1/v2: at most one per CPU. v3: chunks, any number per CPU
//!   "EVTZ" (v2) instead of EVTS: raw length varint | raw deflate of an EVTS payload
//!   "SMPL" count varint | samples (delta-coded). v1/v2: exactly one. v3: chunks, any number
//!   "WIND" (v3) a kept window or snapshot: kind u8 (0 window, 1 snapshot) | from_ns varint |
//!          to_ns varint | window only: cpu varint, the sample (5 varints as in SMPL, absolute) |
//!          reason count varint | per reason: byte length varint, UTF-8
//!   "END\0" empty, last: the file is complete
//! ```
//! A v1/v2 file without END is an error. A v3 file is written as the run goes, so a missing END
//! means the run stopped writing (a crash): every complete section before the cut is read and
//! `RttFile::truncated_at` says where it ends — at a section that runs past the end of the
//! file, fails its checksum, or where only zero bytes remain (a file extended but never written
//! after a power loss), unless the file ends with a valid END (then those are corruption).
//! Flight files (META `file_mode` "flight") hold chunks that may overlap in time: per CPU the
//! events are merged by time and exact duplicates dropped; the samples are the SMPL samples plus
//! each window's sample, without duplicates (same cpu, tid and cycle).
//!
//! Varints are LEB128; signed values are zigzag-coded. Timestamps are deltas from the previous
//! record of the same section (first one from 0), so a typical event costs 4–8 bytes.

use rtscope_model::event::{Event, EventKind, NameTables, Vector};
use rtscope_model::limits::{Budget, OverBudget};
use rtscope_model::record::RawSample;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub const MAGIC: &[u8; 8] = b"RTSTRACE";
/// Written version. Version 2 added EVTZ (compressed events) and the META fields `keep` and
/// `filtered_events`; version 3 sections written as the run goes (chunks, WIND, META/NAME at the
/// end, truncation tolerated) and the flight-recorder META fields. Versions 1 and 2 are still
/// read.
pub const VERSION: u16 = 3;
/// Oldest version this build reads.
pub const MIN_VERSION: u16 = 1;
/// deflate level of EVTZ sections: 6 compresses an io trace 2.4× at ~25 MB/s on one core of a
/// 2-vCPU KVM guest (docs/trace-format.md).
const DEFLATE_LEVEL: u32 = 6;
const HEADER_LEN: usize = 16;

/// Everything about the capture that is not an event or a sample.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct RttMeta {
    pub tool_version: String,
    /// "bpf" or "tracefs".
    pub mechanism: String,
    pub cpus: Vec<u32>,
    /// CLOCK_MONOTONIC ns when capture started / stopped.
    pub start_ns: u64,
    pub end_ns: u64,
    pub kernel: String,
    pub hostname: String,
    /// Events the kernel could not hand us, per CPU (ring buffer full).
    pub lost_per_cpu: BTreeMap<u32, u64>,
    /// Steal time per CPU over the capture (from /proc/stat, ns; USER_HZ resolution).
    pub steal_ns_per_cpu: BTreeMap<u32, u64>,
    /// Bytes the kernel produced for us (ring buffer records incl. headers, or tracefs pages).
    pub kernel_bytes: u64,
    /// Free-form notes (events not available on this kernel, ...).
    pub notes: Vec<String>,
    /// "relevant" (the relevance filter ran: `reduce` module) or "all". Files written before
    /// the filter existed read as "all".
    #[serde(default = "keep_all")]
    pub keep: String,
    /// Events seen on the traced CPUs and left out by the relevance filter.
    #[serde(default)]
    pub filtered_events: u64,
    /// (v3) "all": every event and sample of the run; "flight": only the kept windows and
    /// periodic snapshots (`windows_kept`, `snapshots_kept`). Older files read as "all".
    #[serde(default = "keep_all")]
    pub file_mode: String,
    /// (v3) Windows kept (explained samples with their look-back).
    #[serde(default)]
    pub windows_kept: u64,
    /// (v3) Periodic snapshots kept (every CPU, every event and sample).
    #[serde(default)]
    pub snapshots_kept: u64,
    /// (v3) Snapshot period and length, ns (flight files; 0: none).
    #[serde(default)]
    pub snapshot_every_ns: u64,
    #[serde(default)]
    pub snapshot_len_ns: u64,
    /// (v3) Samples measured in the run, and how many of them the file holds (0 and 0 in older
    /// files: then the file holds every sample).
    #[serde(default)]
    pub samples_in_run: u64,
    #[serde(default)]
    pub samples_kept: u64,
}

fn keep_all() -> String {
    "all".into()
}

/// What a WIND section describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeptKind {
    /// One explained sample's CPU, from its look-back to its end.
    Window,
    /// Every CPU: all events and samples of the stretch.
    Snapshot,
}

/// A kept window or snapshot (WIND section).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptWindowInfo {
    pub kind: KeptKind,
    /// The window's CPU (its sample's); None for a snapshot (every CPU).
    pub cpu: Option<u32>,
    /// Events with `from_ns <= ts_ns <= to_ns` were kept (CLOCK_MONOTONIC ns).
    pub from_ns: u64,
    pub to_ns: u64,
    /// The explained sample (windows).
    pub sample: Option<RawSample>,
    /// Why it was kept, e.g. `worst-n`, `worst-of:irq:10:eth0`; `snapshot` for snapshots.
    pub reasons: Vec<String>,
}

/// A whole trace file in memory.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RttFile {
    pub meta: RttMeta,
    pub names: NameTables,
    /// Sorted by (ts_ns, cpu) within each CPU; across CPUs merged by time.
    pub events: Vec<Event>,
    pub samples: Vec<RawSample>,
    /// (v3) The kept windows and snapshots, in file order.
    pub windows: Vec<KeptWindowInfo>,
    /// (v3) The file has no END: it was cut at this byte (everything before it was read).
    pub truncated_at: Option<u64>,
}

impl RttFile {
    /// A flight-recorder file: only kept windows and snapshots.
    pub fn is_flight(&self) -> bool {
        self.meta.file_mode == "flight"
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RttError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("byte {offset}: {what}")]
    Corrupt { offset: u64, what: String },
    /// A writer argument out of range (names the argument).
    #[error("{0}")]
    Invalid(String),
}

fn corrupt(offset: usize, what: impl Into<String>) -> RttError {
    RttError::Corrupt {
        offset: offset as u64,
        what: what.into(),
    }
}

// ---------- primitives ----------

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, init and final xor !0): the checksum
/// zlib, gzip and PNG use, so any of their tools can check a section. Public for the fuzz test,
/// which repairs checksums so mutations reach the section parsers.
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

/// A bounds-checked reader over a byte slice that reports absolute file offsets.
struct Cur<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Absolute offset of buf[0] in the file.
    base: usize,
}

impl<'a> Cur<'a> {
    fn off(&self) -> usize {
        self.base + self.pos
    }
    fn varint(&mut self, what: &str) -> Result<u64, RttError> {
        let start = self.off();
        let mut v: u64 = 0;
        let mut shift = 0u32;
        loop {
            let b = *self
                .buf
                .get(self.pos)
                .ok_or_else(|| corrupt(start, format!("truncated varint ({what})")))?;
            self.pos += 1;
            if shift == 63 && b > 1 {
                return Err(corrupt(start, format!("varint overflows 64 bits ({what})")));
            }
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(corrupt(
                    start,
                    format!("varint longer than 10 bytes ({what})"),
                ));
            }
        }
    }
    fn u32v(&mut self, what: &str) -> Result<u32, RttError> {
        let at = self.off();
        let v = self.varint(what)?;
        u32::try_from(v).map_err(|_| corrupt(at, format!("{what} = {v} does not fit in 32 bits")))
    }
    fn i32v(&mut self, what: &str) -> Result<i32, RttError> {
        let at = self.off();
        let v = unzigzag(self.varint(what)?);
        i32::try_from(v).map_err(|_| corrupt(at, format!("{what} = {v} does not fit in 32 bits")))
    }
    fn byte(&mut self, what: &str) -> Result<u8, RttError> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| corrupt(self.off(), format!("truncated ({what})")))?;
        self.pos += 1;
        Ok(b)
    }
    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }
}

// ---------- events ----------

// Kind bytes; never renumber (that is a format change).
const E_IRQ_ENTRY: u8 = 1;
const E_IRQ_EXIT: u8 = 2;
const E_SOFTIRQ_RAISE: u8 = 3;
const E_SOFTIRQ_ENTRY: u8 = 4;
const E_SOFTIRQ_EXIT: u8 = 5;
const E_VEC_ENTRY: u8 = 6;
const E_VEC_EXIT: u8 = 7;
const E_NMI: u8 = 8;
const E_HRT_ENTRY: u8 = 9;
const E_HRT_EXIT: u8 = 10;
const E_WAKING: u8 = 11;
const E_WAKEUP: u8 = 12;
const E_SWITCH: u8 = 13;
const E_MIGRATE: u8 = 14;
const E_IDLE: u8 = 15;
const E_PREEMPT_DISABLE: u8 = 16;
const E_PREEMPT_ENABLE: u8 = 17;
const E_IRQ_DISABLE: u8 = 18;
const E_IRQ_ENABLE: u8 = 19;
/// Version 2: activity left out by the relevance filter.
const E_BACKGROUND: u8 = 20;

fn vector_code(v: Vector) -> u64 {
    match v {
        Vector::LocalTimer => 0,
        Vector::Reschedule => 1,
        Vector::CallFunction => 2,
        Vector::CallFunctionSingle => 3,
        Vector::IrqWork => 4,
        Vector::ErrorApic => 5,
        Vector::SpuriousApic => 6,
        Vector::ThermalApic => 7,
        Vector::X86PlatformIpi => 8,
        Vector::Other(n) => 16 + n as u64,
    }
}

fn vector_decode(c: &mut Cur, what: &str) -> Result<Vector, RttError> {
    let at = c.off();
    let v = c.varint(what)?;
    Ok(match v {
        0 => Vector::LocalTimer,
        1 => Vector::Reschedule,
        2 => Vector::CallFunction,
        3 => Vector::CallFunctionSingle,
        4 => Vector::IrqWork,
        5 => Vector::ErrorApic,
        6 => Vector::SpuriousApic,
        7 => Vector::ThermalApic,
        8 => Vector::X86PlatformIpi,
        16..=0x1_0000_000f => Vector::Other((v - 16) as u32),
        _ => return Err(corrupt(at, format!("unknown vector code {v}"))),
    })
}

fn encode_event(out: &mut Vec<u8>, k: &EventKind) {
    match *k {
        EventKind::IrqEntry { irq } => {
            out.push(E_IRQ_ENTRY);
            put_varint(out, irq as u64);
        }
        EventKind::IrqExit { irq, handled } => {
            out.push(E_IRQ_EXIT);
            put_varint(out, irq as u64);
            out.push(handled as u8);
        }
        EventKind::SoftirqRaise { vec } => {
            out.push(E_SOFTIRQ_RAISE);
            put_varint(out, vec as u64);
        }
        EventKind::SoftirqEntry { vec } => {
            out.push(E_SOFTIRQ_ENTRY);
            put_varint(out, vec as u64);
        }
        EventKind::SoftirqExit { vec } => {
            out.push(E_SOFTIRQ_EXIT);
            put_varint(out, vec as u64);
        }
        EventKind::VectorEntry { vector } => {
            out.push(E_VEC_ENTRY);
            put_varint(out, vector_code(vector));
        }
        EventKind::VectorExit { vector } => {
            out.push(E_VEC_EXIT);
            put_varint(out, vector_code(vector));
        }
        EventKind::Nmi { delta_ns } => {
            out.push(E_NMI);
            put_varint(out, delta_ns);
        }
        EventKind::HrtimerEntry {
            timer,
            function,
            now_ns,
        } => {
            out.push(E_HRT_ENTRY);
            put_varint(out, timer);
            put_varint(out, function);
            put_varint(out, now_ns);
        }
        EventKind::HrtimerExit { timer } => {
            out.push(E_HRT_EXIT);
            put_varint(out, timer);
        }
        EventKind::Waking {
            pid,
            prio,
            target_cpu,
        } => {
            out.push(E_WAKING);
            put_varint(out, pid as u64);
            put_varint(out, zigzag(prio as i64));
            put_varint(out, target_cpu as u64);
        }
        EventKind::Wakeup {
            pid,
            prio,
            target_cpu,
        } => {
            out.push(E_WAKEUP);
            put_varint(out, pid as u64);
            put_varint(out, zigzag(prio as i64));
            put_varint(out, target_cpu as u64);
        }
        EventKind::Switch {
            prev_pid,
            prev_prio,
            prev_state,
            next_pid,
            next_prio,
        } => {
            out.push(E_SWITCH);
            put_varint(out, prev_pid as u64);
            put_varint(out, zigzag(prev_prio as i64));
            put_varint(out, prev_state);
            put_varint(out, next_pid as u64);
            put_varint(out, zigzag(next_prio as i64));
        }
        EventKind::Migrate {
            pid,
            orig_cpu,
            dest_cpu,
        } => {
            out.push(E_MIGRATE);
            put_varint(out, pid as u64);
            put_varint(out, orig_cpu as u64);
            put_varint(out, dest_cpu as u64);
        }
        EventKind::CpuIdle { state } => {
            out.push(E_IDLE);
            put_varint(out, state as u64);
        }
        EventKind::PreemptDisable => out.push(E_PREEMPT_DISABLE),
        EventKind::PreemptEnable => out.push(E_PREEMPT_ENABLE),
        EventKind::IrqDisable => out.push(E_IRQ_DISABLE),
        EventKind::IrqEnable => out.push(E_IRQ_ENABLE),
        EventKind::Background { len_ns, events } => {
            out.push(E_BACKGROUND);
            put_varint(out, len_ns);
            put_varint(out, events as u64);
        }
    }
}

fn decode_event(c: &mut Cur) -> Result<EventKind, RttError> {
    let at = c.off();
    let k = c.byte("event kind")?;
    Ok(match k {
        E_IRQ_ENTRY => EventKind::IrqEntry {
            irq: c.u32v("irq")?,
        },
        E_IRQ_EXIT => {
            let irq = c.u32v("irq")?;
            let hat = c.off();
            let handled = match c.byte("handled")? {
                0 => false,
                1 => true,
                b => {
                    return Err(corrupt(
                        hat,
                        format!("handled flag must be 0 or 1, got {b}"),
                    ))
                }
            };
            EventKind::IrqExit { irq, handled }
        }
        E_SOFTIRQ_RAISE => EventKind::SoftirqRaise {
            vec: c.u32v("vec")?,
        },
        E_SOFTIRQ_ENTRY => EventKind::SoftirqEntry {
            vec: c.u32v("vec")?,
        },
        E_SOFTIRQ_EXIT => EventKind::SoftirqExit {
            vec: c.u32v("vec")?,
        },
        E_VEC_ENTRY => EventKind::VectorEntry {
            vector: vector_decode(c, "vector")?,
        },
        E_VEC_EXIT => EventKind::VectorExit {
            vector: vector_decode(c, "vector")?,
        },
        E_NMI => EventKind::Nmi {
            delta_ns: c.varint("delta_ns")?,
        },
        E_HRT_ENTRY => EventKind::HrtimerEntry {
            timer: c.varint("timer")?,
            function: c.varint("function")?,
            now_ns: c.varint("now_ns")?,
        },
        E_HRT_EXIT => EventKind::HrtimerExit {
            timer: c.varint("timer")?,
        },
        E_WAKING => EventKind::Waking {
            pid: c.u32v("pid")?,
            prio: c.i32v("prio")?,
            target_cpu: c.u32v("target_cpu")?,
        },
        E_WAKEUP => EventKind::Wakeup {
            pid: c.u32v("pid")?,
            prio: c.i32v("prio")?,
            target_cpu: c.u32v("target_cpu")?,
        },
        E_SWITCH => EventKind::Switch {
            prev_pid: c.u32v("prev_pid")?,
            prev_prio: c.i32v("prev_prio")?,
            prev_state: c.varint("prev_state")?,
            next_pid: c.u32v("next_pid")?,
            next_prio: c.i32v("next_prio")?,
        },
        E_MIGRATE => EventKind::Migrate {
            pid: c.u32v("pid")?,
            orig_cpu: c.u32v("orig_cpu")?,
            dest_cpu: c.u32v("dest_cpu")?,
        },
        E_IDLE => EventKind::CpuIdle {
            state: c.u32v("state")?,
        },
        E_PREEMPT_DISABLE => EventKind::PreemptDisable,
        E_PREEMPT_ENABLE => EventKind::PreemptEnable,
        E_IRQ_DISABLE => EventKind::IrqDisable,
        E_IRQ_ENABLE => EventKind::IrqEnable,
        E_BACKGROUND => EventKind::Background {
            len_ns: c.varint("background length")?,
            events: c.u32v("background events")?,
        },
        _ => return Err(corrupt(at, format!("unknown event kind {k}"))),
    })
}

// ---------- sections ----------

pub(crate) fn push_section(out: &mut Vec<u8>, tag: &[u8; 4], payload: &[u8]) {
    out.extend_from_slice(tag);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32(payload).to_le_bytes());
}

/// The 16-byte header of a file written by this build.
pub(crate) fn header() -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(MAGIC);
    h[8..10].copy_from_slice(&VERSION.to_le_bytes());
    h
}

/// Events per EVTS/EVTZ chunk and samples per SMPL chunk: a reader's and writer's working set
/// per section (≈ 2 MiB of events), and what a truncated file can lose at most per CPU.
pub const CHUNK_EVENTS: usize = 1 << 16;

/// An EVTS payload: one CPU's events (any order; deltas are signed).
pub(crate) fn evts_payload<'a>(
    cpu: u32,
    n: usize,
    events: impl IntoIterator<Item = &'a Event>,
) -> Vec<u8> {
    let mut p = Vec::with_capacity(n * 6 + 8);
    put_varint(&mut p, cpu as u64);
    put_varint(&mut p, n as u64);
    let mut prev = 0u64;
    for e in events {
        // Deltas are signed: per-CPU streams are time-ordered in practice, but the format must
        // not depend on it.
        put_varint(&mut p, zigzag(e.ts_ns.wrapping_sub(prev) as i64));
        prev = e.ts_ns;
        encode_event(&mut p, &e.kind);
    }
    p
}

/// One event section: EVTZ (deflate) or EVTS.
pub(crate) fn push_events(out: &mut Vec<u8>, payload: &[u8], compress: bool) {
    if compress {
        let mut z = Vec::with_capacity(payload.len() / 2 + 16);
        put_varint(&mut z, payload.len() as u64);
        let mut enc =
            flate2::write::DeflateEncoder::new(z, flate2::Compression::new(DEFLATE_LEVEL));
        // Writing into a Vec cannot fail.
        let _ = std::io::Write::write_all(&mut enc, payload);
        let z = enc.finish().unwrap_or_default();
        push_section(out, b"EVTZ", &z);
    } else {
        push_section(out, b"EVTS", payload);
    }
}

fn put_sample(p: &mut Vec<u8>, s: &RawSample, prev_expected: u64) {
    put_varint(p, s.cpu as u64);
    put_varint(p, s.tid as u64);
    put_varint(p, s.cycle);
    put_varint(p, zigzag(s.expected_ns.wrapping_sub(prev_expected) as i64));
    put_varint(p, s.latency_ns);
}

/// A SMPL payload.
pub(crate) fn smpl_payload(samples: &[RawSample]) -> Vec<u8> {
    let mut p = Vec::with_capacity(samples.len() * 8 + 8);
    put_varint(&mut p, samples.len() as u64);
    let mut prev = 0u64;
    for s in samples {
        put_sample(&mut p, s, prev);
        prev = s.expected_ns;
    }
    p
}

/// A WIND payload.
pub(crate) fn wind_payload(w: &KeptWindowInfo) -> Vec<u8> {
    let mut p = Vec::with_capacity(64);
    match (w.kind, w.cpu, &w.sample) {
        (KeptKind::Window, Some(cpu), Some(s)) => {
            p.push(0);
            put_varint(&mut p, w.from_ns);
            put_varint(&mut p, w.to_ns);
            put_varint(&mut p, cpu as u64);
            put_sample(&mut p, s, 0);
        }
        _ => {
            p.push(1);
            put_varint(&mut p, w.from_ns);
            put_varint(&mut p, w.to_ns);
        }
    }
    put_varint(&mut p, w.reasons.len() as u64);
    for r in &w.reasons {
        put_varint(&mut p, r.len() as u64);
        p.extend_from_slice(r.as_bytes());
    }
    p
}

/// Serialise a trace into bytes (see module docs), events compressed (EVTZ).
pub fn encode(f: &RttFile) -> Vec<u8> {
    encode_with(f, true)
}

/// Serialise with or without compressing the event sections (EVTZ or EVTS). Written whole:
/// META and NAME first, events in chunks of [`CHUNK_EVENTS`] per CPU, the samples, the windows.
pub fn encode_with(f: &RttFile, compress: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + f.events.len() * 6 + f.samples.len() * 8);
    out.extend_from_slice(&header());
    // serde_json of plain structs with string keys cannot fail.
    let meta = serde_json::to_vec(&f.meta).unwrap_or_default();
    push_section(&mut out, b"META", &meta);
    let names = serde_json::to_vec(&f.names).unwrap_or_default();
    push_section(&mut out, b"NAME", &names);
    let mut per_cpu: BTreeMap<u32, Vec<&Event>> = BTreeMap::new();
    for e in &f.events {
        per_cpu.entry(e.cpu).or_default().push(e);
    }
    for (cpu, evs) in per_cpu {
        for chunk in evs.chunks(CHUNK_EVENTS) {
            let p = evts_payload(cpu, chunk.len(), chunk.iter().copied());
            push_events(&mut out, &p, compress);
        }
    }
    let mut chunks = f.samples.chunks(CHUNK_EVENTS).peekable();
    if chunks.peek().is_none() {
        push_section(&mut out, b"SMPL", &smpl_payload(&[]));
    }
    for c in chunks {
        push_section(&mut out, b"SMPL", &smpl_payload(c));
    }
    for w in &f.windows {
        push_section(&mut out, b"WIND", &wind_payload(w));
    }
    push_section(&mut out, b"END\0", &[]);
    out
}

/// Whether `buf` ends with a complete, empty END section (tag, zero length, CRC-32 of nothing).
fn ends_with_end(buf: &[u8]) -> bool {
    buf.len() >= HEADER_LEN + 16 && {
        let t = &buf[buf.len() - 16..];
        &t[..4] == b"END\0" && t[4..].iter().all(|&b| b == 0)
    }
}

/// Parse a trace from bytes. Every failure names the byte offset where the file went wrong; a
/// version-3 file cut short is not a failure (`truncated_at`).
/// Decode a whole file with the default budget for its size (`rtscope_model::limits`): a file
/// whose counts or compressed sections claim more than its size can honestly hold is refused
/// before anything is allocated for it.
pub fn decode(buf: &[u8]) -> Result<RttFile, RttError> {
    decode_within(buf, &mut Budget::for_input_env(buf.len() as u64))
}

fn over(offset: usize, e: OverBudget) -> RttError {
    corrupt(offset, e.to_string())
}

const EVENT_BYTES: u64 = std::mem::size_of::<Event>() as u64;
const SAMPLE_BYTES: u64 = std::mem::size_of::<RawSample>() as u64;

/// [`decode`] with an explicit budget.
pub fn decode_within(buf: &[u8], budget: &mut Budget) -> Result<RttFile, RttError> {
    if buf.len() < HEADER_LEN {
        return Err(corrupt(
            buf.len(),
            format!(
                "file is {} bytes, shorter than the 16-byte header",
                buf.len()
            ),
        ));
    }
    if &buf[0..8] != MAGIC {
        return Err(corrupt(
            0,
            "not an rtscope trace file (magic \"RTSTRACE\" missing)",
        ));
    }
    let version = u16::from_le_bytes([buf[8], buf[9]]);
    if !(MIN_VERSION..=VERSION).contains(&version) {
        return Err(corrupt(
            8,
            format!(
                "unsupported format version {version} (this build reads {MIN_VERSION}..={VERSION})"
            ),
        ));
    }
    let v3 = version >= 3;
    // A v3 file without a final END was cut (the writer stopped): what does not parse at its
    // end is the cut, not corruption.
    let cut_tolerated = v3 && !ends_with_end(buf);
    let mut pos = HEADER_LEN;
    let mut meta: Option<RttMeta> = None;
    let mut meta_at = HEADER_LEN;
    let mut names: Option<NameTables> = None;
    let mut events: Vec<Event> = Vec::new();
    let mut samples: Option<Vec<RawSample>> = None;
    let mut windows: Vec<KeptWindowInfo> = Vec::new();
    let mut ended = false;
    let mut truncated_at: Option<u64> = None;
    let mut cpus_seen = std::collections::BTreeSet::new();
    while pos < buf.len() {
        let sec_at = pos;
        if cut_tolerated && buf[pos..].iter().all(|&b| b == 0) {
            truncated_at = Some(sec_at as u64);
            break;
        }
        if buf.len() - pos < 12 {
            if cut_tolerated {
                truncated_at = Some(sec_at as u64);
                break;
            }
            return Err(corrupt(sec_at, "truncated section header"));
        }
        let mut tag = [0u8; 4];
        tag.copy_from_slice(&buf[pos..pos + 4]);
        let mut lb = [0u8; 8];
        lb.copy_from_slice(&buf[pos + 4..pos + 12]);
        let len = u64::from_le_bytes(lb);
        let body_at = pos + 12;
        let avail = (buf.len() - body_at) as u64;
        if len > avail || avail - len < 4 {
            if cut_tolerated {
                truncated_at = Some(sec_at as u64);
                break;
            }
            return Err(corrupt(
                sec_at + 4,
                format!("section length {len} runs past the end of the file"),
            ));
        }
        let len = len as usize;
        let body = &buf[body_at..body_at + len];
        let mut cb = [0u8; 4];
        cb.copy_from_slice(&buf[body_at + len..body_at + len + 4]);
        if u32::from_le_bytes(cb) != crc32(body) {
            if cut_tolerated {
                truncated_at = Some(sec_at as u64);
                break;
            }
            return Err(corrupt(
                body_at + len,
                format!(
                    "checksum mismatch in section {:?}",
                    String::from_utf8_lossy(&tag)
                ),
            ));
        }
        pos = body_at + len + 4;
        if ended {
            return Err(corrupt(sec_at, "data after the END section"));
        }
        match &tag {
            b"META" => {
                if meta.is_some() && !v3 {
                    return Err(corrupt(sec_at, "second META section"));
                }
                // Parsed JSON takes at most a few times its text.
                budget
                    .take(len as u64, 8, "META section")
                    .map_err(|e| over(sec_at, e))?;
                rtscope_model::json_keys::reject_duplicate_keys(&String::from_utf8_lossy(body))
                    .map_err(|e| corrupt(body_at, format!("META: {e}")))?;
                let m: RttMeta = serde_json::from_slice(body)
                    .map_err(|e| corrupt(body_at, format!("META: {e}")))?;
                meta_at = body_at;
                meta = Some(m);
            }
            b"NAME" => {
                if names.is_some() && !v3 {
                    return Err(corrupt(sec_at, "second NAME section"));
                }
                budget
                    .take(len as u64, 8, "NAME section")
                    .map_err(|e| over(sec_at, e))?;
                names = Some(
                    serde_json::from_slice(body)
                        .map_err(|e| corrupt(body_at, format!("NAME: {e}")))?,
                );
            }
            b"EVTS" => parse_evts(
                body,
                body_at,
                sec_at,
                v3,
                &mut cpus_seen,
                &mut events,
                budget,
            )?,
            b"EVTZ" if version >= 2 => {
                let mut c = Cur {
                    buf: body,
                    pos: 0,
                    base: body_at,
                };
                let raw_len = c.varint("uncompressed length")?;
                let zlen = (len - c.pos) as u64;
                // deflate expands at most ~1032:1; refuse lengths no stream of this size can
                // produce (no huge allocation from a corrupt length).
                if raw_len > zlen.saturating_mul(1100) + 64 {
                    return Err(corrupt(
                        body_at,
                        format!("EVTZ: uncompressed length {raw_len} impossible for {zlen} compressed bytes"),
                    ));
                }
                // The inflated payload (freed after parsing) and the events it can hold (at
                // least 2 bytes each) must fit before the first byte is inflated.
                budget
                    .check(
                        raw_len,
                        1 + EVENT_BYTES / 2,
                        "EVTZ section (uncompressed length × events it can hold)",
                    )
                    .map_err(|e| over(sec_at, e))?;
                let raw = inflate(&body[c.pos..], raw_len as usize)
                    .map_err(|e| corrupt(body_at + c.pos, format!("EVTZ: {e}")))?;
                // Offsets inside the decompressed payload are reported relative to it.
                parse_evts(&raw, 0, sec_at, v3, &mut cpus_seen, &mut events, budget).map_err(
                    |e| match e {
                        RttError::Corrupt { offset, what } => corrupt(
                            sec_at,
                            format!("EVTZ section (decompressed byte {offset}): {what}"),
                        ),
                        other => other,
                    },
                )?;
            }
            b"SMPL" => {
                if samples.is_some() && !v3 {
                    return Err(corrupt(sec_at, "second SMPL section"));
                }
                let v = samples.get_or_insert_with(Vec::new);
                parse_smpl(body, body_at, v, budget)?;
            }
            b"WIND" if v3 => {
                budget
                    .take(len as u64 + 128, 2, "WIND section")
                    .map_err(|e| over(sec_at, e))?;
                windows.push(parse_wind(body, body_at)?)
            }
            b"END\0" => {
                if len != 0 {
                    return Err(corrupt(body_at, "END section must be empty"));
                }
                ended = true;
            }
            _ => {
                return Err(corrupt(
                    sec_at,
                    format!("unknown section tag {:?}", String::from_utf8_lossy(&tag)),
                ));
            }
        }
    }
    if !ended {
        if !v3 {
            return Err(corrupt(
                buf.len(),
                "file ends without the END section (truncated)",
            ));
        }
        truncated_at.get_or_insert(pos as u64);
    }
    let meta = meta.ok_or_else(|| corrupt(HEADER_LEN, "no META section"))?;
    // Loss counts are added up wherever they are reported: a total past 2^64 would wrap to a
    // small number and hide the loss.
    rtscope_model::limits::checked_sum(meta.lost_per_cpu.values().copied(), "META: lost_per_cpu")
        .map_err(|e| corrupt(meta_at, e))?;
    // The last META is the file's (a writer's first one is provisional: end_ns 0 until the
    // capture ends). An end before the start would make every rate nonsense.
    if meta.end_ns != 0 && meta.end_ns < meta.start_ns {
        return Err(corrupt(
            meta_at,
            format!(
                "META: end_ns {} is before start_ns {}",
                meta.end_ns, meta.start_ns
            ),
        ));
    }
    let names = match names {
        Some(n) => n,
        None if v3 => NameTables::default(),
        None => return Err(corrupt(HEADER_LEN, "no NAME section")),
    };
    let mut samples = match samples {
        Some(s) => s,
        None if v3 => Vec::new(),
        None => return Err(corrupt(HEADER_LEN, "no SMPL section")),
    };
    // Merge the per-CPU streams by time (stable: per-CPU order kept on equal timestamps). The
    // stable sort borrows a buffer of half the events.
    budget
        .check(
            events.len() as u64 / 2 + 1,
            EVENT_BYTES,
            "sorting the events",
        )
        .map_err(|e| over(HEADER_LEN, e))?;
    events.sort_by_key(|e| (e.ts_ns, e.cpu));
    let flight = meta.file_mode == "flight";
    if flight {
        dedup_events(&mut events);
        samples.extend(windows.iter().filter_map(|w| w.sample));
        samples.sort_by_key(|s| (s.expected_ns, s.cpu, s.tid, s.cycle, s.latency_ns));
        samples.dedup_by_key(|s| (s.cpu, s.tid, s.cycle));
    }
    Ok(RttFile {
        meta,
        names,
        events,
        samples,
        windows,
        truncated_at,
    })
}

/// Drop exact duplicates (same time, CPU and fields) from events sorted by (ts, cpu): chunks
/// of a flight file may overlap. Duplicates of one event lie in the same (ts, cpu) run.
/// In place: no second copy of the events.
fn dedup_events(events: &mut Vec<Event>) {
    // A run longer than this is searched through a set of the kept events' encodings (a crafted
    // file can put every event at one timestamp: a linear search per event would be quadratic).
    const SHORT_RUN: usize = 16;
    let mut kept = 0usize;
    let mut run_start = 0usize;
    let mut seen: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
    let key = |e: &Event| {
        let mut b = Vec::with_capacity(16);
        encode_event(&mut b, &e.kind);
        b
    };
    for r in 0..events.len() {
        let starts_run = kept == 0
            || (events[kept - 1].ts_ns, events[kept - 1].cpu) != (events[r].ts_ns, events[r].cpu);
        if starts_run {
            run_start = kept;
            seen.clear();
        }
        let dup = if kept - run_start < SHORT_RUN {
            events[run_start..kept].contains(&events[r])
        } else {
            if seen.is_empty() {
                seen.extend(events[run_start..kept].iter().map(key));
            }
            !seen.insert(key(&events[r]))
        };
        if !dup {
            // Slots kept..r hold events already dropped: the swap moves one of them back.
            events.swap(kept, r);
            kept += 1;
        }
    }
    events.truncate(kept);
}

/// One SMPL payload, appended to `out`.
fn parse_smpl(
    body: &[u8],
    body_at: usize,
    out: &mut Vec<RawSample>,
    budget: &mut Budget,
) -> Result<(), RttError> {
    let len = body.len();
    let mut c = Cur {
        buf: body,
        pos: 0,
        base: body_at,
    };
    let n_at = c.off();
    let n = c.varint("sample count")?;
    if n > (len as u64) / 5 {
        return Err(corrupt(
            n_at,
            format!("sample count {n} exceeds what the {len}-byte section can hold"),
        ));
    }
    budget
        .take(n, SAMPLE_BYTES, "SMPL sample count")
        .map_err(|e| over(n_at, e))?;
    out.reserve_exact(n as usize);
    let mut prev = 0u64;
    for _ in 0..n {
        let s = read_sample(&mut c, &mut prev)?;
        out.push(s);
    }
    if !c.done() {
        return Err(corrupt(c.off(), "trailing bytes in SMPL section"));
    }
    Ok(())
}

fn read_sample(c: &mut Cur, prev: &mut u64) -> Result<RawSample, RttError> {
    let cpu = c.u32v("cpu")?;
    let tid = c.u32v("tid")?;
    let cycle = c.varint("cycle")?;
    let d = unzigzag(c.varint("expected_ns delta")?);
    *prev = prev.wrapping_add(d as u64);
    let latency_ns = c.varint("latency_ns")?;
    Ok(RawSample {
        cpu,
        tid,
        cycle,
        expected_ns: *prev,
        latency_ns,
    })
}

/// One WIND payload.
fn parse_wind(body: &[u8], body_at: usize) -> Result<KeptWindowInfo, RttError> {
    let mut c = Cur {
        buf: body,
        pos: 0,
        base: body_at,
    };
    let k_at = c.off();
    let kind = match c.byte("window kind")? {
        0 => KeptKind::Window,
        1 => KeptKind::Snapshot,
        k => return Err(corrupt(k_at, format!("unknown window kind {k}"))),
    };
    let from_ns = c.varint("from_ns")?;
    let to_at = c.off();
    let to_ns = c.varint("to_ns")?;
    if to_ns < from_ns {
        return Err(corrupt(
            to_at,
            format!("window ends ({to_ns}) before it starts ({from_ns})"),
        ));
    }
    let (cpu, sample) = match kind {
        KeptKind::Window => {
            let cpu = c.u32v("window cpu")?;
            let mut prev = 0u64;
            (Some(cpu), Some(read_sample(&mut c, &mut prev)?))
        }
        KeptKind::Snapshot => (None, None),
    };
    let n_at = c.off();
    let n = c.varint("reason count")?;
    if n > (body.len() - c.pos) as u64 {
        return Err(corrupt(
            n_at,
            format!("reason count {n} exceeds what the section can hold"),
        ));
    }
    let mut reasons = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let l_at = c.off();
        let l = c.varint("reason length")?;
        if l > (body.len() - c.pos) as u64 {
            return Err(corrupt(
                l_at,
                format!("reason length {l} runs past the section"),
            ));
        }
        let b = &body[c.pos..c.pos + l as usize];
        let r = std::str::from_utf8(b)
            .map_err(|e| corrupt(c.off(), format!("reason is not UTF-8: {e}")))?;
        reasons.push(r.to_string());
        c.pos += l as usize;
    }
    if !c.done() {
        return Err(corrupt(c.off(), "trailing bytes in WIND section"));
    }
    Ok(KeptWindowInfo {
        kind,
        cpu,
        from_ns,
        to_ns,
        sample,
        reasons,
    })
}

/// Inflate a raw deflate stream that must decompress to exactly `raw_len` bytes.
fn inflate(z: &[u8], raw_len: usize) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut out = Vec::with_capacity(raw_len);
    let mut d = flate2::read::DeflateDecoder::new(z).take(raw_len as u64 + 1);
    d.read_to_end(&mut out)
        .map_err(|e| format!("corrupt compressed data: {e}"))?;
    if out.len() != raw_len {
        return Err(format!(
            "decompressed to {} bytes, the section says {raw_len}",
            out.len()
        ));
    }
    Ok(out)
}

/// One EVTS payload: cpu, count, events. `base` is the payload's offset in the file (0 for a
/// decompressed EVTZ payload), `sec_at` the section's; `chunks`: several per CPU allowed (v3).
fn parse_evts(
    body: &[u8],
    base: usize,
    sec_at: usize,
    chunks: bool,
    cpus_seen: &mut std::collections::BTreeSet<u32>,
    events: &mut Vec<Event>,
    budget: &mut Budget,
) -> Result<(), RttError> {
    let len = body.len();
    let mut c = Cur {
        buf: body,
        pos: 0,
        base,
    };
    let cpu = c.u32v("cpu")?;
    if !cpus_seen.insert(cpu) && !chunks {
        return Err(corrupt(
            sec_at,
            format!("second event section for cpu {cpu}"),
        ));
    }
    let n_at = c.off();
    let n = c.varint("event count")?;
    // Each event is at least 2 bytes: refuse counts the payload cannot hold (no huge
    // allocation from a corrupt count).
    if n > (len as u64) / 2 {
        return Err(corrupt(
            n_at,
            format!("event count {n} exceeds what the {len}-byte section can hold"),
        ));
    }
    budget
        .take(n, EVENT_BYTES, &format!("event count {n} (cpu {cpu})"))
        .map_err(|e| over(n_at, e))?;
    events.reserve_exact(n as usize);
    let mut ts = 0u64;
    for _ in 0..n {
        let d = unzigzag(c.varint("timestamp delta")?);
        ts = ts.wrapping_add(d as u64);
        let kind = decode_event(&mut c)?;
        events.push(Event {
            ts_ns: ts,
            cpu,
            kind,
        });
    }
    if !c.done() {
        return Err(corrupt(c.off(), "trailing bytes in EVTS section"));
    }
    Ok(())
}

/// Write atomically: a temporary file beside `path` (unpredictable name, created with
/// `O_EXCL`), renamed into place, so a crash never leaves a half-written trace under the final
/// name. For a run too long to hold in memory, [`crate::flight::RttWriter`] writes as it goes.
pub fn write_rtt(path: &Path, f: &RttFile) -> Result<u64, RttError> {
    let bytes = encode(f);
    let mut out = crate::flight::PartFile::create(path)?;
    out.write_all(&bytes)?;
    out.persist()?;
    Ok(bytes.len() as u64)
}

pub fn read_rtt(path: &Path) -> Result<RttFile, RttError> {
    let bytes = rtscope_files::read_bounded(path, rtscope_files::max_input_bytes(), "a trace file")
        .map_err(|e| RttError::Io {
            path: path.display().to_string(),
            source: e,
        })?;
    decode(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample_file() -> RttFile {
        let mut names = NameTables::default();
        names.comms.insert(42, "rtscope-m0".into());
        names.irqs.insert(11, "virtio0".into());
        let e = |ts, cpu, kind| Event {
            ts_ns: ts,
            cpu,
            kind,
        };
        RttFile {
            meta: RttMeta {
                mechanism: "bpf".into(),
                cpus: vec![0, 1],
                start_ns: 10,
                end_ns: 99,
                ..Default::default()
            },
            names,
            events: vec![
                e(
                    1000,
                    0,
                    EventKind::VectorEntry {
                        vector: Vector::LocalTimer,
                    },
                ),
                e(1000, 1, EventKind::IrqEntry { irq: 11 }),
                e(
                    1100,
                    0,
                    EventKind::HrtimerEntry {
                        timer: 0xffff_8880_0000_1000,
                        function: 0xffff_ffff_8100_0000,
                        now_ns: 1099,
                    },
                ),
                e(
                    1200,
                    0,
                    EventKind::Waking {
                        pid: 42,
                        prio: 0,
                        target_cpu: 0,
                    },
                ),
                e(
                    1300,
                    0,
                    EventKind::VectorExit {
                        vector: Vector::Other(0xec),
                    },
                ),
                e(
                    1400,
                    0,
                    EventKind::Switch {
                        prev_pid: 0,
                        prev_prio: 120,
                        prev_state: 0,
                        next_pid: 42,
                        next_prio: -1,
                    },
                ),
                e(
                    1500,
                    1,
                    EventKind::IrqExit {
                        irq: 11,
                        handled: true,
                    },
                ),
                e(1600, 1, EventKind::Nmi { delta_ns: 3000 }),
                e(1700, 1, EventKind::CpuIdle { state: u32::MAX }),
                e(
                    1800,
                    1,
                    EventKind::Migrate {
                        pid: 7,
                        orig_cpu: 1,
                        dest_cpu: 0,
                    },
                ),
                e(1900, 1, EventKind::SoftirqEntry { vec: 9 }),
            ],
            samples: vec![
                RawSample {
                    cpu: 0,
                    tid: 42,
                    cycle: 0,
                    expected_ns: 1000,
                    latency_ns: 500,
                },
                RawSample {
                    cpu: 0,
                    tid: 42,
                    cycle: 1,
                    expected_ns: 900,
                    latency_ns: u64::MAX,
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn round_trip() {
        let f = sample_file();
        let b = encode(&f);
        assert_eq!(decode(&b).expect("decodes"), f);
    }

    #[test]
    fn compressed_and_plain_and_version_1() {
        let f = sample_file();
        let z = encode(&f);
        let plain = encode_with(&f, false);
        assert!(z.windows(4).any(|w| w == b"EVTZ"));
        assert!(!plain.windows(4).any(|w| w == b"EVTZ"));
        assert_eq!(decode(&plain).expect("plain decodes"), f);
        // A version-1 file (no EVTZ, META without keep/filtered_events) still reads.
        let mut v1f = f.clone();
        v1f.meta.keep = "all".into();
        v1f.meta.filtered_events = 0;
        let mut v1 = encode_with(&v1f, false);
        v1[8] = 1;
        assert_eq!(decode(&v1).expect("v1 decodes"), v1f);
        // A version-1 META has neither field.
        let m: RttMeta = serde_json::from_str(
            r#"{"tool_version":"0.1.0","mechanism":"bpf","cpus":[0],"start_ns":0,"end_ns":1,
                "kernel":"k","hostname":"h","lost_per_cpu":{},"steal_ns_per_cpu":{},
                "kernel_bytes":0,"notes":[]}"#,
        )
        .expect("v1 meta");
        assert_eq!((m.keep.as_str(), m.filtered_events), ("all", 0));
        assert_eq!((m.file_mode.as_str(), m.samples_in_run), ("all", 0));
        // EVTZ in a version-1 file is an unknown section.
        let mut zv1 = z.clone();
        zv1[8] = 1;
        assert!(decode(&zv1)
            .unwrap_err()
            .to_string()
            .contains("unknown section"));
        // Version 4 is refused with the range.
        let mut v4 = z.clone();
        v4[8] = 4;
        assert!(decode(&v4).unwrap_err().to_string().contains("reads 1..=3"));
        // WIND is a version-3 section.
        let mut wf = f.clone();
        wf.windows.push(KeptWindowInfo {
            kind: KeptKind::Snapshot,
            cpu: None,
            from_ns: 5,
            to_ns: 9,
            sample: None,
            reasons: vec!["snapshot".into()],
        });
        let mut w2 = encode(&wf);
        assert_eq!(decode(&w2).expect("v3 decodes"), wf);
        w2[8] = 2;
        assert!(decode(&w2)
            .unwrap_err()
            .to_string()
            .contains("unknown section"));
    }

    /// An EVTZ section whose stated length disagrees with its stream, or whose stream is cut,
    /// is an error naming the section (checksums repaired so the parser is reached).
    #[test]
    fn corrupt_compressed_section() {
        let f = sample_file();
        let z = encode(&f);
        let at = z.windows(4).position(|w| w == b"EVTZ").expect("has EVTZ");
        let len = u64::from_le_bytes(z[at + 4..at + 12].try_into().expect("8 bytes")) as usize;
        let body = at + 12;
        // Stated raw length + 1 (first varint byte, small payload: one byte).
        let mut b = z.clone();
        b[body] += 1;
        let c = crc32(&b[body..body + len]);
        b[body + len..body + len + 4].copy_from_slice(&c.to_le_bytes());
        let e = decode(&b).unwrap_err().to_string();
        assert!(e.contains("EVTZ") && e.contains("decompressed to"), "{e}");
        // Garbage stream.
        let mut b = z.clone();
        for x in &mut b[body + 1..body + len] {
            *x = 0xff;
        }
        let c = crc32(&b[body..body + len]);
        b[body + len..body + len + 4].copy_from_slice(&c.to_le_bytes());
        let e = decode(&b).unwrap_err().to_string();
        assert!(e.contains("EVTZ"), "{e}");
        // Impossible length: 2^40 bytes from a few compressed bytes.
        let mut p = Vec::new();
        put_varint(&mut p, 1 << 40);
        p.extend_from_slice(&[0u8; 4]);
        let mut b = z[..at].to_vec();
        push_section(&mut b, b"EVTZ", &p);
        b.extend_from_slice(&z[body + len + 4..]);
        let e = decode(&b).unwrap_err().to_string();
        assert!(e.contains("impossible"), "{e}");
    }

    /// A deflate bomb: a few KB of EVTZ that inflate to 8 MB of valid events (2 bytes each,
    /// 4 M events, over 100 MB decoded). Refused by the budget before inflating; decoded when the
    /// user raises the budget.
    #[test]
    fn a_deflate_bomb_is_refused_before_it_is_inflated() {
        use std::io::Write as _;
        let f = sample_file();
        let z = encode(&f);
        let at = z.windows(4).position(|w| w == b"EVTZ").expect("has EVTZ");
        let len = u64::from_le_bytes(z[at + 4..at + 12].try_into().expect("8 bytes")) as usize;
        let n: u64 = 4 << 20;
        let mut raw = Vec::new();
        put_varint(&mut raw, 7); // cpu 7 (its own stream)
        put_varint(&mut raw, n);
        for _ in 0..n {
            raw.push(0); // timestamp delta 0
            raw.push(E_PREEMPT_DISABLE);
        }
        let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&raw).expect("deflate");
        let zraw = enc.finish().expect("deflate");
        let mut p = Vec::new();
        put_varint(&mut p, raw.len() as u64);
        p.extend_from_slice(&zraw);
        let mut b = z[..at].to_vec();
        push_section(&mut b, b"EVTZ", &p);
        b.extend_from_slice(&z[at + 12 + len + 4..]);
        assert!(b.len() < 128 << 10, "a small file: {} bytes", b.len());
        let e = decode(&b).unwrap_err().to_string();
        assert!(e.contains("MiB of memory"), "{e}");
        // The same bytes with room to decode them: the events are all there.
        let back = decode_within(&b, &mut Budget::bytes(2 << 30)).expect("decodes with room");
        assert_eq!(
            back.events.iter().filter(|e| e.cpu == 7).count() as u64,
            n,
            "every event of the bomb"
        );
    }

    #[test]
    fn a_count_the_budget_cannot_hold_is_refused_and_start_after_end_too() {
        let mut f = sample_file();
        f.meta.end_ns = f.meta.start_ns.saturating_sub(1);
        let e = decode(&encode(&f)).unwrap_err().to_string();
        assert!(e.contains("end_ns") && e.contains("before start_ns"), "{e}");
        let f = sample_file();
        let b = encode_with(&f, false);
        let e = decode_within(&b, &mut Budget::bytes(64))
            .unwrap_err()
            .to_string();
        assert!(e.contains("MiB of memory"), "{e}");
    }

    #[test]
    fn flight_dedup_in_place_keeps_one_of_each() {
        let ev = |ts, cpu, state| Event {
            ts_ns: ts,
            cpu,
            kind: EventKind::CpuIdle { state },
        };
        let mut v = vec![
            ev(1, 0, 1),
            ev(1, 0, 1),
            ev(1, 0, 2),
            ev(1, 0, 1),
            ev(1, 1, 1),
            ev(2, 0, 1),
            ev(2, 0, 1),
        ];
        dedup_events(&mut v);
        assert_eq!(v, vec![ev(1, 0, 1), ev(1, 0, 2), ev(1, 1, 1), ev(2, 0, 1)]);
    }

    #[test]
    fn truncation_names_offset() {
        let mut b = encode(&sample_file());
        // A version-2 file is written whole: a missing END is corruption.
        b[8] = 2;
        // Cut inside the END section's checksum: the length check names the END length field.
        let cut = &b[..b.len() - 2];
        match decode(cut) {
            Err(RttError::Corrupt { offset, .. }) => assert_eq!(offset as usize, b.len() - 16 + 4),
            other => panic!("expected corrupt error, got {other:?}"),
        }
        // Whole sections missing: END absent → offset = file length.
        let end_start = b.len() - 16;
        match decode(&b[..end_start]) {
            Err(RttError::Corrupt { offset, what }) => {
                assert_eq!(offset as usize, end_start);
                assert!(what.contains("END"), "{what}");
            }
            other => panic!("expected corrupt error, got {other:?}"),
        }
    }

    /// A version-3 file cut anywhere after its first META reads up to the last complete
    /// section and says where it was cut; a file that ends with END but has a bad section in
    /// the middle is corrupt.
    #[test]
    fn v3_truncation_reads_up_to_the_cut() {
        let f = sample_file();
        let b = encode_with(&f, false);
        // Section starts.
        let mut starts = Vec::new();
        let mut pos = HEADER_LEN;
        while pos < b.len() {
            starts.push(pos);
            let len = u64::from_le_bytes(b[pos + 4..pos + 12].try_into().expect("8")) as usize;
            pos += 12 + len + 4;
        }
        let first_after_meta = starts[1];
        for cut in first_after_meta..b.len() {
            let got = decode(&b[..cut]).expect("a cut v3 file reads");
            let complete = starts
                .iter()
                .rev()
                .find(|&&s| s <= cut)
                .copied()
                .unwrap_or(0);
            assert_eq!(got.truncated_at, Some(complete as u64), "cut at {cut}");
            assert_eq!(got.meta, f.meta);
            // Every event section complete before the cut is there.
            assert!(got.events.len() <= f.events.len());
        }
        // Zeros where the rest should be (a file extended but never written).
        let mut z = b[..starts[3]].to_vec();
        z.extend(std::iter::repeat_n(0u8, 100));
        assert_eq!(
            decode(&z).expect("zero tail").truncated_at,
            Some(starts[3] as u64)
        );
        // The whole file is not truncated.
        assert_eq!(decode(&b).expect("whole").truncated_at, None);
        // A flipped byte in a complete file (it ends with END) is still an error.
        let mut c = b.clone();
        c[starts[2] + 13] ^= 0x10;
        assert!(decode(&c).unwrap_err().to_string().contains("checksum"));
    }

    #[test]
    fn flipped_byte_is_caught_by_checksum() {
        let mut b = encode(&sample_file());
        // Byte 16+12 is the first META payload byte.
        b[28] ^= 0x55;
        match decode(&b) {
            Err(RttError::Corrupt { what, .. }) => assert!(what.contains("checksum"), "{what}"),
            other => panic!("expected checksum error, got {other:?}"),
        }
    }

    #[test]
    fn bad_magic_and_version() {
        let mut b = encode(&sample_file());
        b[8] = 9;
        assert!(matches!(
            decode(&b),
            Err(RttError::Corrupt { offset: 8, .. })
        ));
        b[0] = b'X';
        assert!(matches!(
            decode(&b),
            Err(RttError::Corrupt { offset: 0, .. })
        ));
        assert!(matches!(
            decode(&b[..5]),
            Err(RttError::Corrupt { offset: 5, .. })
        ));
    }

    #[test]
    fn crc_known_value() {
        // Standard check value of CRC-32/ISO-HDLC for "123456789".
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }
}
