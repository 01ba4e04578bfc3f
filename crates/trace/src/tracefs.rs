//! tracefs fallback: a private instance under `instances/`, the events enabled there only, the
//! `mono` clock (so timestamps equal CLOCK_MONOTONIC), and per-CPU `trace_pipe_raw` read a whole
//! sub-buffer (page) per read() — no per-event syscalls, no text formatting in the kernel. The
//! ring-buffer page format (`header_page`, `header_event`) and each event's `format` file are
//! parsed here; trace-cmd/libtraceevent are not used.
//!
//! The reader hands each pass's events below the watermark to the consumer (`crate::Feed`),
//! through the relevance filter ([`Reducer`]) when it applies. Each CPU's ring buffer is read in
//! its write order, and a non-blocking read of `trace_pipe_raw` returns everything committed on
//! that CPU so far, a partly filled page included (`ring_buffer_read_page` copies the events out
//! of the page the writer is on). So once a pass that started at T has read every CPU until
//! EAGAIN, every event stamped before T minus [`crate::WATERMARK_MARGIN_NS`] (the writer's
//! stamp-to-commit delay, argued there) has been read; events are ordered by time per pass, and
//! one read below a watermark already handed out is counted as late (none in the tests: the
//! ring buffer's write order is time order, deltas are never negative). The watermark also stays
//! below the filter's held switches and open bursts ([`Reducer::bound_ns`]).

use crate::reduce::{Keep, Reducer};
use crate::{Capture, Feed, Mechanism, ReaderGone, Stream, TraceError, WATERMARK_MARGIN_NS};
use rtscope_model::event::{Event, EventKind, Vector};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const TRACEFS: &str = "/sys/kernel/tracing";
const INSTANCE_PREFIX: &str = "rtscope-";

/// The events we enable, as (system, name). Absent ones are skipped with a note.
pub const EVENTS: &[(&str, &str)] = &[
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
    ("irq", "softirq_raise"),
    ("irq", "softirq_entry"),
    ("irq", "softirq_exit"),
    ("irq_vectors", "local_timer_entry"),
    ("irq_vectors", "local_timer_exit"),
    ("irq_vectors", "reschedule_entry"),
    ("irq_vectors", "reschedule_exit"),
    ("irq_vectors", "call_function_entry"),
    ("irq_vectors", "call_function_exit"),
    ("irq_vectors", "call_function_single_entry"),
    ("irq_vectors", "call_function_single_exit"),
    ("irq_vectors", "irq_work_entry"),
    ("irq_vectors", "irq_work_exit"),
    ("irq_vectors", "error_apic_entry"),
    ("irq_vectors", "error_apic_exit"),
    ("irq_vectors", "spurious_apic_entry"),
    ("irq_vectors", "spurious_apic_exit"),
    ("irq_vectors", "thermal_apic_entry"),
    ("irq_vectors", "thermal_apic_exit"),
    ("irq_vectors", "x86_platform_ipi_entry"),
    ("irq_vectors", "x86_platform_ipi_exit"),
    ("nmi", "nmi_handler"),
    ("timer", "hrtimer_expire_entry"),
    ("timer", "hrtimer_expire_exit"),
    ("sched", "sched_waking"),
    ("sched", "sched_wakeup"),
    ("sched", "sched_switch"),
    ("sched", "sched_migrate_task"),
    ("power", "cpu_idle"),
];

/// The preemptirq events (CONFIG_PREEMPTIRQ_TRACEPOINTS), enabled only when asked for: on a
/// kernel that has them they fire on every preemption-count and IRQ-mask transition, hundreds
/// of thousands a second per CPU (ECRTS'20 §5: "more than 800 MB of data per CPU" a second).
pub const PREEMPTIRQ_EVENTS: [(&str, &str); 4] = [
    ("preemptirq", "preempt_disable"),
    ("preemptirq", "preempt_enable"),
    ("preemptirq", "irq_disable"),
    ("preemptirq", "irq_enable"),
];

/// Pure: whether the tracefs tree at `root` has the four preemptirq events (their `format`
/// files), or the one-line reason it has not.
pub fn preemptirq_availability(root: &Path) -> Result<(), String> {
    if !root.join("events").is_dir() {
        return Err(format!(
            "tracefs is not mounted at {} (no events directory)",
            root.display()
        ));
    }
    let missing: Vec<String> = PREEMPTIRQ_EVENTS
        .iter()
        .filter(|(sys, name)| {
            !root
                .join("events")
                .join(sys)
                .join(name)
                .join("format")
                .is_file()
        })
        .map(|(sys, name)| format!("{sys}:{name}"))
        .collect();
    match missing.len() {
        0 => Ok(()),
        4 => Err(format!(
            "kernel built without CONFIG_PREEMPTIRQ_TRACEPOINTS (no events/preemptirq/ in {})",
            root.display()
        )),
        _ => Err(format!(
            "the kernel lacks {} (CONFIG_PREEMPTIRQ_TRACEPOINTS with CONFIG_TRACE_IRQFLAGS, e.g. \
             from CONFIG_IRQSOFF_TRACER, gives the irq_* ones)",
            missing.join(", ")
        )),
    }
}

/// Does this kernel's tracefs have the preemptirq events? When tracefs is mountable but not
/// mounted this cannot be told without mounting it: Ok, and starting the capture checks again.
pub fn preemptirq_available() -> Result<(), String> {
    available()?;
    if !Path::new(TRACEFS).join("events").is_dir() {
        return Ok(());
    }
    preemptirq_availability(Path::new(TRACEFS))
}

/// Is tracefs usable (mounted or mountable)? No side effects beyond a read-only stat.
pub fn available() -> Result<(), String> {
    if Path::new(TRACEFS).join("instances").is_dir() {
        return Ok(());
    }
    if Path::new(TRACEFS).is_dir() && Path::new("/proc/filesystems").exists() {
        let fs = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
        if fs.lines().any(|l| l.trim_end().ends_with("tracefs")) {
            return Ok(()); // mountable: start() mounts it
        }
    }
    Err(format!(
        "tracefs is not mounted at {TRACEFS} and the kernel does not offer it"
    ))
}

// ---------- format files ----------

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Field {
    pub offset: usize,
    pub size: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Format {
    pub name: String,
    pub id: u16,
    pub fields: HashMap<String, Field>,
}

impl Format {
    /// The field `n` of event `event`, or an error naming both.
    pub fn field(&self, event: &str, n: &str) -> Result<Field, String> {
        self.fields
            .get(n)
            .copied()
            .ok_or_else(|| format!("{event}: format has no field '{n}'"))
    }
}

/// Parse an `events/<sys>/<name>/format` file.
pub fn parse_format(text: &str) -> Result<Format, String> {
    let mut name = String::new();
    let mut id = None;
    let mut fields = HashMap::new();
    for line in text.lines() {
        let l = line.trim();
        if let Some(n) = l.strip_prefix("name:") {
            name = n.trim().to_string();
        } else if let Some(i) = l.strip_prefix("ID:") {
            id = i.trim().parse::<u16>().ok();
        } else if let Some(f) = l.strip_prefix("field:") {
            // "field:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;"
            let mut parts = f.split(';');
            let decl = parts.next().unwrap_or("").trim();
            let mut offset = None;
            let mut size = None;
            for p in parts {
                let p = p.trim();
                if let Some(v) = p.strip_prefix("offset:") {
                    offset = v.parse::<usize>().ok();
                } else if let Some(v) = p.strip_prefix("size:") {
                    size = v.parse::<usize>().ok();
                }
            }
            let fname = decl
                .split_whitespace()
                .last()
                .unwrap_or("")
                .split('[')
                .next()
                .unwrap_or("")
                .to_string();
            if let (Some(offset), Some(size)) = (offset, size) {
                fields.insert(fname, Field { offset, size });
            }
        }
    }
    let id = id.ok_or_else(|| format!("format of '{name}' has no ID line"))?;
    Ok(Format { name, id, fields })
}

/// Offsets in a ring-buffer page, from `header_page`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeaderPage {
    pub commit_offset: usize,
    pub commit_size: usize,
    pub data_offset: usize,
}

pub fn parse_header_page(text: &str) -> Result<HeaderPage, String> {
    let f = parse_format(&format!("ID: 0\n{text}"))?;
    let get = |n: &str| {
        f.fields
            .get(n)
            .copied()
            .ok_or_else(|| format!("header_page has no '{n}' field"))
    };
    let commit = get("commit")?;
    let data = get("data")?;
    Ok(HeaderPage {
        commit_offset: commit.offset,
        commit_size: commit.size,
        data_offset: data.offset,
    })
}

// ---------- decoding ----------

#[derive(Clone, Copy, Debug)]
enum Dec {
    IrqEntry {
        irq: Field,
    },
    IrqExit {
        irq: Field,
        ret: Field,
    },
    SoftRaise {
        vec: Field,
    },
    SoftEntry {
        vec: Field,
    },
    SoftExit {
        vec: Field,
    },
    VecEntry(Vector),
    VecExit(Vector),
    Nmi {
        delta: Field,
    },
    HrtEntry {
        timer: Field,
        function: Field,
        now: Field,
    },
    HrtExit {
        timer: Field,
    },
    Waking {
        comm: Field,
        pid: Field,
        prio: Field,
        target: Field,
        wakeup: bool,
    },
    Switch {
        prev_comm: Field,
        prev_pid: Field,
        prev_prio: Field,
        prev_state: Field,
        next_comm: Field,
        next_pid: Field,
        next_prio: Field,
    },
    Migrate {
        pid: Field,
        orig: Field,
        dest: Field,
    },
    Idle {
        state: Field,
    },
    /// preemptirq:*: `caller_offs` and `parent_offs` (s32, from `_stext`).
    PreemptIrq {
        kind: PiKind,
        caller: Field,
        parent: Field,
    },
}

/// Which preemptirq event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PiKind {
    PreemptDisable,
    PreemptEnable,
    IrqDisable,
    IrqEnable,
}

/// Decoders by event id, built from the format files.
#[derive(Clone, Debug, Default)]
pub struct Decoders {
    by_id: HashMap<u16, Dec>,
}

impl Decoders {
    /// Build a decoder for one (system, name) from its parsed format.
    pub fn add(&mut self, name: &str, f: &Format) -> Result<(), String> {
        let g = |n: &str| f.field(name, n);
        let dec = match name {
            "irq_handler_entry" => Dec::IrqEntry { irq: g("irq")? },
            "irq_handler_exit" => Dec::IrqExit {
                irq: g("irq")?,
                ret: g("ret")?,
            },
            "softirq_raise" => Dec::SoftRaise { vec: g("vec")? },
            "softirq_entry" => Dec::SoftEntry { vec: g("vec")? },
            "softirq_exit" => Dec::SoftExit { vec: g("vec")? },
            "nmi_handler" => Dec::Nmi {
                delta: g("delta_ns")?,
            },
            "hrtimer_expire_entry" => Dec::HrtEntry {
                timer: g("hrtimer")?,
                function: g("function")?,
                now: g("now")?,
            },
            "hrtimer_expire_exit" => Dec::HrtExit {
                timer: g("hrtimer")?,
            },
            "sched_waking" | "sched_wakeup" => Dec::Waking {
                comm: g("comm")?,
                pid: g("pid")?,
                prio: g("prio")?,
                target: g("target_cpu")?,
                wakeup: name == "sched_wakeup",
            },
            "sched_switch" => Dec::Switch {
                prev_comm: g("prev_comm")?,
                prev_pid: g("prev_pid")?,
                prev_prio: g("prev_prio")?,
                prev_state: g("prev_state")?,
                next_comm: g("next_comm")?,
                next_pid: g("next_pid")?,
                next_prio: g("next_prio")?,
            },
            "sched_migrate_task" => Dec::Migrate {
                pid: g("pid")?,
                orig: g("orig_cpu")?,
                dest: g("dest_cpu")?,
            },
            "cpu_idle" => Dec::Idle { state: g("state")? },
            "preempt_disable" | "preempt_enable" | "irq_disable" | "irq_enable" => {
                // include/trace/events/preemptirq.h: `s32 caller_offs; s32 parent_offs;`, the
                // ip and parent ip as offsets from _stext. Anything else is a layout we do not
                // know how to read.
                let s32 = |n: &str| -> Result<Field, String> {
                    let f = g(n)?;
                    if f.size != 4 {
                        return Err(format!(
                            "{name}: field '{n}' is {} bytes, expected an s32",
                            f.size
                        ));
                    }
                    Ok(f)
                };
                Dec::PreemptIrq {
                    kind: match name {
                        "preempt_disable" => PiKind::PreemptDisable,
                        "preempt_enable" => PiKind::PreemptEnable,
                        "irq_disable" => PiKind::IrqDisable,
                        _ => PiKind::IrqEnable,
                    },
                    caller: s32("caller_offs")?,
                    parent: s32("parent_offs")?,
                }
            }
            n => {
                if let Some(stem) = n.strip_suffix("_entry") {
                    Dec::VecEntry(
                        Vector::from_name(stem)
                            .ok_or_else(|| format!("unknown vector event {n}"))?,
                    )
                } else if let Some(stem) = n.strip_suffix("_exit") {
                    Dec::VecExit(
                        Vector::from_name(stem)
                            .ok_or_else(|| format!("unknown vector event {n}"))?,
                    )
                } else {
                    return Err(format!("no decoder for event {n}"));
                }
            }
        };
        self.by_id.insert(f.id, dec);
        Ok(())
    }
}

pub(crate) fn rd(data: &[u8], f: Field) -> Option<u64> {
    let b = data.get(f.offset..f.offset + f.size)?;
    Some(match f.size {
        1 => b[0] as u64,
        2 => u16::from_le_bytes([b[0], b[1]]) as u64,
        4 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64,
        8 => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        _ => return None,
    })
}

fn rd_comm(data: &[u8], f: Field) -> Option<String> {
    let b = data.get(f.offset..f.offset + f.size)?;
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    Some(String::from_utf8_lossy(&b[..end]).into_owned())
}

/// Decode one event payload (starting with common_type). None: not ours or too short.
pub fn decode_payload(
    d: &Decoders,
    data: &[u8],
    comms: &mut BTreeMap<u32, String>,
) -> Option<EventKind> {
    let id = u16::from_le_bytes([*data.first()?, *data.get(1)?]);
    let dec = d.by_id.get(&id)?;
    let u32f = |f: Field| rd(data, f).map(|v| v as u32);
    let i32f = |f: Field| rd(data, f).map(|v| v as u32 as i32);
    Some(match *dec {
        Dec::IrqEntry { irq } => EventKind::IrqEntry { irq: u32f(irq)? },
        Dec::IrqExit { irq, ret } => EventKind::IrqExit {
            irq: u32f(irq)?,
            handled: u32f(ret)? != 0,
        },
        Dec::SoftRaise { vec } => EventKind::SoftirqRaise { vec: u32f(vec)? },
        Dec::SoftEntry { vec } => EventKind::SoftirqEntry { vec: u32f(vec)? },
        Dec::SoftExit { vec } => EventKind::SoftirqExit { vec: u32f(vec)? },
        Dec::VecEntry(v) => EventKind::VectorEntry { vector: v },
        Dec::VecExit(v) => EventKind::VectorExit { vector: v },
        Dec::Nmi { delta } => EventKind::Nmi {
            delta_ns: rd(data, delta)?,
        },
        Dec::HrtEntry {
            timer,
            function,
            now,
        } => EventKind::HrtimerEntry {
            timer: rd(data, timer)?,
            function: rd(data, function)?,
            now_ns: rd(data, now)?,
        },
        Dec::HrtExit { timer } => EventKind::HrtimerExit {
            timer: rd(data, timer)?,
        },
        Dec::Waking {
            comm,
            pid,
            prio,
            target,
            wakeup,
        } => {
            let p = u32f(pid)?;
            if let std::collections::btree_map::Entry::Vacant(v) = comms.entry(p) {
                v.insert(rd_comm(data, comm)?);
            }
            let (prio, target_cpu) = (i32f(prio)?, u32f(target)?);
            if wakeup {
                EventKind::Wakeup {
                    pid: p,
                    prio,
                    target_cpu,
                }
            } else {
                EventKind::Waking {
                    pid: p,
                    prio,
                    target_cpu,
                }
            }
        }
        Dec::Switch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state,
            next_comm,
            next_pid,
            next_prio,
        } => {
            let pp = u32f(prev_pid)?;
            let np = u32f(next_pid)?;
            if let std::collections::btree_map::Entry::Vacant(v) = comms.entry(pp) {
                v.insert(rd_comm(data, prev_comm)?);
            }
            if let std::collections::btree_map::Entry::Vacant(v) = comms.entry(np) {
                v.insert(rd_comm(data, next_comm)?);
            }
            EventKind::Switch {
                prev_pid: pp,
                prev_prio: i32f(prev_prio)?,
                prev_state: rd(data, prev_state)?,
                next_pid: np,
                next_prio: i32f(next_prio)?,
            }
        }
        Dec::Migrate { pid, orig, dest } => EventKind::Migrate {
            pid: u32f(pid)?,
            orig_cpu: u32f(orig)?,
            dest_cpu: u32f(dest)?,
        },
        Dec::Idle { state } => EventKind::CpuIdle {
            state: u32f(state)?,
        },
        Dec::PreemptIrq { kind, caller, .. } => {
            // Too short a record is not ours, like every other event.
            rd(data, caller)?;
            match kind {
                PiKind::PreemptDisable => EventKind::PreemptDisable,
                PiKind::PreemptEnable => EventKind::PreemptEnable,
                PiKind::IrqDisable => EventKind::IrqDisable,
                PiKind::IrqEnable => EventKind::IrqEnable,
            }
        }
    })
}

/// A preemptirq record's `caller_offs` and `parent_offs` (signed offsets from `_stext`: the
/// code that toggled and its caller). None: not a preemptirq record, or too short.
pub fn preemptirq_offsets(d: &Decoders, data: &[u8]) -> Option<(i32, i32)> {
    let id = u16::from_le_bytes([*data.first()?, *data.get(1)?]);
    match *d.by_id.get(&id)? {
        Dec::PreemptIrq { caller, parent, .. } => Some((
            rd(data, caller)? as u32 as i32,
            rd(data, parent)? as u32 as i32,
        )),
        _ => None,
    }
}

/// A kernel address from `_stext` and a preemptirq offset (0 when `_stext` is not known).
pub fn stext_address(stext: u64, offs: i32) -> u64 {
    if stext == 0 {
        0
    } else {
        stext.wrapping_add_signed(i64::from(offs))
    }
}

// Ring-buffer event header: type_len (5 bits) | time_delta (27 bits).
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
const TS_SHIFT: u32 = 27;
const RB_MISSED_EVENTS: u64 = 1 << 31;
const RB_MISSED_STORED: u64 = 1 << 30;

/// What one page held.
#[derive(Debug, Default, PartialEq)]
pub struct PageStats {
    pub events: u64,
    /// Events the kernel says it dropped before this page (when it stored the count).
    pub missed: u64,
    /// The kernel flagged a loss without a count.
    pub missed_unknown: bool,
    pub undecoded: u64,
}

/// Read `cpu`'s `trace_pipe_raw` (opened non-blocking) page by page into `buf` until it has
/// nothing more for now (EAGAIN) or `page`, which decodes each page, says the pass is over
/// (`Ok(false)`). The error names the CPU and what failed: the read or a page's decoding.
pub(crate) fn read_pages(
    cpu: u32,
    file: &mut impl Read,
    buf: &mut [u8],
    mut page: impl FnMut(&[u8]) -> Result<bool, String>,
) -> Result<(), String> {
    loop {
        match file.read(buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                let more = page(&buf[..n])
                    .map_err(|e| format!("cpu{cpu}: undecodable ring-buffer page: {e}"))?;
                if !more {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("cpu{cpu}: reading trace_pipe_raw: {e}")),
        }
    }
}

/// Parse one ring-buffer page (as read from `trace_pipe_raw`) into events for `cpu`.
pub fn parse_page(
    page: &[u8],
    hp: &HeaderPage,
    cpu: u32,
    dec: &Decoders,
    out: &mut Vec<Event>,
    comms: &mut BTreeMap<u32, String>,
) -> Result<PageStats, String> {
    walk_page(page, hp, |ts_ns, payload| {
        match decode_payload(dec, payload, comms) {
            Some(kind) => {
                out.push(Event { ts_ns, cpu, kind });
                true
            }
            None => false,
        }
    })
}

/// Walk one ring-buffer page: `each(timestamp, payload)` for every data event (the payload
/// starts with `common_type`); it returns whether it decoded the event (`events` vs
/// `undecoded` in the stats). Layout per kernel/trace/ring_buffer.c (`rb_event_length`,
/// `rb_update_event`).
pub fn walk_page(
    page: &[u8],
    hp: &HeaderPage,
    mut each: impl FnMut(u64, &[u8]) -> bool,
) -> Result<PageStats, String> {
    let mut st = PageStats::default();
    let ts0 = rd(page, Field { offset: 0, size: 8 }).ok_or("page shorter than its timestamp")?;
    let commit = rd(
        page,
        Field {
            offset: hp.commit_offset,
            size: hp.commit_size,
        },
    )
    .ok_or("page shorter than its commit field")?;
    let size = (commit & !(RB_MISSED_EVENTS | RB_MISSED_STORED) & 0xffff_ffff) as usize;
    let data = page
        .get(hp.data_offset..hp.data_offset + size)
        .ok_or_else(|| {
            format!(
                "page commit size {size} exceeds the {}-byte read",
                page.len()
            )
        })?;
    if commit & RB_MISSED_EVENTS != 0 {
        if commit & RB_MISSED_STORED != 0 {
            st.missed = rd(
                page,
                Field {
                    offset: hp.data_offset + size,
                    size: 8,
                },
            )
            .unwrap_or(0);
        } else {
            st.missed_unknown = true;
        }
    }
    let mut ts = ts0;
    let mut p = 0usize;
    while p + 4 <= data.len() {
        let hdr = u32::from_le_bytes([data[p], data[p + 1], data[p + 2], data[p + 3]]);
        let type_len = hdr & 0x1f;
        let delta = (hdr >> 5) as u64;
        let arr0 = || {
            data.get(p + 4..p + 8)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64)
                .ok_or_else(|| {
                    format!("event header at page byte {} truncated", hp.data_offset + p)
                })
        };
        let payload = match type_len {
            TYPE_PADDING => {
                if delta == 0 {
                    break; // rest of the page is padding
                }
                let len = arr0()? as usize;
                p += 4 + len;
                ts += delta;
                continue;
            }
            TYPE_TIME_EXTEND => {
                ts += delta + (arr0()? << TS_SHIFT);
                p += 8;
                continue;
            }
            TYPE_TIME_STAMP => {
                // Absolute stamp: low 59 bits; the top bits come from the page base.
                let abs = delta + (arr0()? << TS_SHIFT);
                ts = (ts0 & !((1u64 << 59) - 1)) | abs;
                p += 8;
                continue;
            }
            0 => {
                let len = arr0()? as usize; // includes the 4 bytes of array[0]
                if len < 4 {
                    return Err(format!(
                        "event length {len} at page byte {}",
                        hp.data_offset + p
                    ));
                }
                ts += delta;
                let payload = data.get(p + 8..p + 4 + len).ok_or_else(|| {
                    format!("event at page byte {} runs past commit", hp.data_offset + p)
                })?;
                p += 4 + len;
                payload
            }
            n => {
                let len = 4 * n as usize;
                ts += delta;
                let payload = data.get(p + 4..p + 4 + len).ok_or_else(|| {
                    format!("event at page byte {} runs past commit", hp.data_offset + p)
                })?;
                p += 4 + len;
                payload
            }
        };
        if each(ts, payload) {
            st.events += 1;
        } else {
            st.undecoded += 1;
        }
    }
    Ok(st)
}

// ---------- the session ----------

struct Reader {
    /// Events not handed to the consumer (all of them when nobody polled).
    rest: Vec<Event>,
    comms: BTreeMap<u32, String>,
    missed: BTreeMap<u32, u64>,
    bytes: u64,
    filtered: u64,
    late: u64,
    error: Option<String>,
}

pub struct TracefsSession {
    inst: PathBuf,
    cpus: Vec<u32>,
    keep: Keep,
    /// The preemptirq events are enabled too.
    preemptirq: bool,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Reader>>,
    mounted_by_us: bool,
    notes: Vec<String>,
    start_ns: u64,
    steal0: BTreeMap<u32, u64>,
    pub(crate) stream: Stream,
    /// The reader's end, until the reader starts.
    feed: Option<Feed>,
}

/// Read a tracefs text file with large reads: some (header_page) misbehave on the small probe
/// read `read_to_string` starts with and then return only part of their text.
pub(crate) fn read_text(path: &Path) -> std::io::Result<String> {
    let out = rtscope_sys::knob::read_large(&mut File::open(path)?)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

pub(crate) fn wr(path: &Path, v: &str) -> Result<(), TraceError> {
    std::fs::write(path, v)
        .map_err(|e| TraceError::Setup(format!("writing '{v}' to {}: {e}", path.display())))
}

pub(crate) fn cpumask_hex(cpus: &[u32]) -> String {
    // tracing_cpumask: comma-separated 32-bit hex words, most significant first.
    let max = cpus.iter().copied().max().unwrap_or(0);
    let words = (max / 32 + 1) as usize;
    let mut w = vec![0u32; words];
    for &c in cpus {
        w[(c / 32) as usize] |= 1 << (c % 32);
    }
    w.iter()
        .rev()
        .map(|x| format!("{x:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Remove instances left by rtscope processes that died without cleaning up (SIGKILL): an
/// orphaned instance keeps tracing into its own ring buffer (pages per CPU) until removed.
/// Returns what was removed.
pub fn remove_stale_instances(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(root.join("instances")) else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(INSTANCE_PREFIX) else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<i32>().ok());
        if let Some(pid) = pid {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                // Stop it first: rmdir of an instance that is still tracing can be refused.
                let _ = std::fs::write(e.path().join("tracing_on"), "0");
                match std::fs::remove_dir(e.path()) {
                    Ok(()) => out.push(format!(
                        "removed stale tracefs instance {name} (pid {pid} is gone)"
                    )),
                    Err(err) => out.push(format!(
                        "could not remove stale tracefs instance {name} (pid {pid} is gone): {err}"
                    )),
                }
            }
        }
    }
    out
}

/// Mount tracefs when it is not (noted in the bool: the caller unmounts it again), remove
/// instances of dead rtscope processes, and create a private instance (tracing off until set
/// up). [`remove_instance`] undoes it.
pub(crate) fn create_instance() -> Result<(PathBuf, bool), TraceError> {
    let root = Path::new(TRACEFS);
    let mut mounted_by_us = false;
    if !root.join("instances").is_dir() {
        if let Err(e) = rtscope_sys::fs::mount("nodev", Path::new("/sys/kernel/tracing"), "tracefs")
        {
            return Err(TraceError::Unavailable(format!(
                "tracefs: mounting at {TRACEFS}: {e}"
            )));
        }
        mounted_by_us = true;
    }
    let _ = remove_stale_instances(root);
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let inst = root.join("instances").join(format!(
        "{INSTANCE_PREFIX}{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    if let Err(e) = std::fs::create_dir(&inst) {
        if mounted_by_us {
            unmount();
        }
        return Err(TraceError::Setup(format!(
            "creating tracefs instance {}: {e}",
            inst.display()
        )));
    }
    Ok((inst, mounted_by_us))
}

fn unmount() {
    let _ = rtscope_sys::fs::unmount_detach(Path::new("/sys/kernel/tracing"));
}

/// Remove an instance [`create_instance`] made (its readers closed first): rmdir tears down
/// the instance and every event enabled in it.
pub(crate) fn remove_instance(inst: &Path, mounted_by_us: bool) {
    let _ = std::fs::write(inst.join("tracing_on"), "0");
    for _ in 0..50 {
        match std::fs::remove_dir(inst) {
            Ok(()) => break,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    if mounted_by_us {
        unmount();
    }
}

impl TracefsSession {
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// Start; the relevance filter runs in the reader when `keep` is [`Keep::Relevant`] (the
    /// instance has no preemptirq events, which would need every switch kept).
    pub fn start(cpus: &[u32], keep: Keep) -> Result<Self, TraceError> {
        Self::start_with(cpus, keep, false)
    }

    /// [`TracefsSession::start`], with the [`PREEMPTIRQ_EVENTS`] too when `preemptirq` (the
    /// kernel must have them: [`preemptirq_available`]; the relevance filter must be off, as the
    /// thread analysis needs every switch).
    pub fn start_with(cpus: &[u32], keep: Keep, preemptirq: bool) -> Result<Self, TraceError> {
        if preemptirq && keep == Keep::Relevant {
            return Err(TraceError::Setup(
                "tracefs: preemptirq events need every switch: keep all, not relevant".into(),
            ));
        }
        let (inst, mounted_by_us) = create_instance()?;
        if preemptirq {
            // Checked once tracefs is mounted (create_instance mounts it when it was not).
            if let Err(e) = preemptirq_availability(Path::new(TRACEFS)) {
                remove_instance(&inst, mounted_by_us);
                return Err(TraceError::Unavailable(e));
            }
        }
        let (feed, stream) = Feed::new();
        let mut s = TracefsSession {
            inst,
            cpus: cpus.to_vec(),
            keep,
            preemptirq,
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
            mounted_by_us,
            notes: Vec::new(),
            start_ns: 0,
            steal0: BTreeMap::new(),
            stream,
            feed: Some(feed),
        };
        // On any error below, dropping `s` removes the instance.
        s.setup()?;
        Ok(s)
    }

    fn setup(&mut self) -> Result<(), TraceError> {
        let inst = self.inst.clone();
        wr(&inst.join("tracing_on"), "0")?;
        wr(&inst.join("trace_clock"), "mono")?;
        // Producer/consumer mode: when full, new events are dropped and counted, instead of
        // silently overwriting old ones.
        wr(&inst.join("options/overwrite"), "0")?;
        wr(&inst.join("buffer_size_kb"), "8192")?;
        wr(&inst.join("tracing_cpumask"), &cpumask_hex(&self.cpus))?;
        let hp_text = read_text(&inst.join("events/header_page"))
            .or_else(|_| read_text(&Path::new(TRACEFS).join("events/header_page")))
            .map_err(|e| TraceError::Setup(format!("reading header_page: {e}")))?;
        let hp = parse_header_page(&hp_text).map_err(TraceError::Setup)?;
        let mut dec = Decoders::default();
        let extra: &[(&str, &str)] = if self.preemptirq {
            &PREEMPTIRQ_EVENTS
        } else {
            &[]
        };
        for (sys, name) in EVENTS.iter().chain(extra) {
            let dir = inst.join("events").join(sys).join(name);
            let Ok(text) = read_text(&dir.join("format")) else {
                if extra.contains(&(*sys, *name)) {
                    return Err(TraceError::Unavailable(format!(
                        "tracefs: event {sys}:{name} not available on this kernel"
                    )));
                }
                self.notes.push(format!(
                    "tracefs: event {sys}:{name} not available on this kernel"
                ));
                continue;
            };
            let f = parse_format(&text).map_err(TraceError::Setup)?;
            dec.add(name, &f).map_err(TraceError::Setup)?;
            wr(&dir.join("enable"), "1")?;
        }
        let subbuf_kb = read_text(&inst.join("buffer_subbuf_size_kb"))
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .unwrap_or(4);
        let page_size = subbuf_kb * 1024;
        let mut files = Vec::new();
        for &c in &self.cpus {
            let p = inst.join(format!("per_cpu/cpu{c}/trace_pipe_raw"));
            let f = rtscope_sys::fs::open_read_nonblocking(&p)
                .map_err(|e| TraceError::Setup(format!("opening {}: {e}", p.display())))?;
            files.push((c, f));
        }
        self.steal0 = crate::sys::steal_ns();
        self.start_ns = crate::sys::monotonic_ns();
        wr(&inst.join("tracing_on"), "1")?;
        let stop = self.stop.clone();
        let feed = self
            .feed
            .take()
            .ok_or_else(|| TraceError::Setup("tracefs: set up twice".into()))?;
        let ctx = ReaderCtx {
            hp,
            dec,
            page_size,
            stop,
            inst: inst.clone(),
            relevant: self.keep == Keep::Relevant,
        };
        let th = std::thread::Builder::new()
            .name("rtscope-tracefs".into())
            .spawn(move || reader_loop(files, ctx, feed))
            .map_err(|e| TraceError::Setup(format!("spawning the reader thread: {e}")))?;
        self.thread = Some(th);
        Ok(())
    }

    pub fn poll(&mut self, out: &mut Vec<Event>) -> Result<(), TraceError> {
        self.stream
            .poll(out)
            .map_err(|ReaderGone| match self.thread.take().map(|t| t.join()) {
                Some(Ok(r)) => TraceError::Capture(
                    r.error
                        .unwrap_or_else(|| "tracefs reader ended during the capture".into()),
                ),
                _ => TraceError::Capture("tracefs reader thread panicked".into()),
            })
    }

    pub fn finish(mut self) -> Result<Capture, TraceError> {
        let _ = wr(&self.inst.join("tracing_on"), "0");
        let end_ns = crate::sys::monotonic_ns();
        let steal1 = crate::sys::steal_ns();
        self.stop.store(true, Ordering::SeqCst);
        // The reader may be waiting for room in the queue: take what is queued until it ends.
        let mut events = Vec::new();
        self.stream.drain_to_end(&mut events);
        let r = match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| TraceError::Capture("tracefs reader thread panicked".into()))?,
            None => return Err(TraceError::Capture("tracefs reader was not running".into())),
        };
        if let Some(e) = r.error {
            return Err(TraceError::Capture(e));
        }
        let lost = lost_per_cpu(&self.inst, &self.cpus, &r.missed);
        if events.is_empty() {
            events = r.rest;
        } else {
            events.extend(r.rest);
        }
        events.sort_by_key(|e| (e.ts_ns, e.cpu));
        if r.late > 0 {
            self.notes.push(format!(
                "tracefs: {} events were read more than {} ms after their timestamp, when the stream had been handed on past it: delivered late, out of time order",
                r.late,
                WATERMARK_MARGIN_NS / 1_000_000
            ));
        }
        let steal = self.cpus.iter().map(|&c| {
            let d = steal1
                .get(&c)
                .copied()
                .unwrap_or(0)
                .saturating_sub(self.steal0.get(&c).copied().unwrap_or(0));
            (c, d)
        });
        Ok(Capture {
            mechanism: Mechanism::Tracefs,
            cpus: self.cpus.clone(),
            start_ns: self.start_ns,
            end_ns,
            events,
            comms: r.comms,
            lost_per_cpu: lost,
            steal_ns_per_cpu: steal.collect(),
            kernel_bytes: r.bytes,
            notes: std::mem::take(&mut self.notes),
            keep: self.keep,
            filtered: r.filtered,
        })
        // Drop removes the instance.
    }
}

/// Pure: the events a `per_cpu/cpuN/stats` text says the ring buffer lost: `overrun` (old
/// events overwritten, overwrite mode) plus `dropped events` (new events refused when full,
/// producer/consumer mode).
pub fn stats_lost(stats: &str) -> u64 {
    stats
        .lines()
        .filter_map(|l| {
            l.strip_prefix("overrun:")
                .or_else(|| l.strip_prefix("dropped events:"))
        })
        .map(|v| v.trim().parse::<u64>().unwrap_or(0))
        .sum()
}

/// Lost events per CPU: the instance's `per_cpu/cpuN/stats` overrun + dropped events, or the
/// missed-events counts the pages carried, whichever is larger.
fn lost_per_cpu(inst: &Path, cpus: &[u32], missed: &BTreeMap<u32, u64>) -> BTreeMap<u32, u64> {
    let mut lost = BTreeMap::new();
    for &c in cpus {
        let stats = read_text(&inst.join(format!("per_cpu/cpu{c}/stats"))).unwrap_or_default();
        let n = stats_lost(&stats);
        let paged = missed.get(&c).copied().unwrap_or(0);
        lost.insert(c, n.max(paged));
    }
    lost
}

/// What the reader thread needs besides the files and the queue.
struct ReaderCtx {
    hp: HeaderPage,
    dec: Decoders,
    page_size: usize,
    stop: Arc<AtomicBool>,
    inst: PathBuf,
    relevant: bool,
}

fn reader_loop(mut files: Vec<(u32, File)>, ctx: ReaderCtx, mut feed: Feed) -> Reader {
    let mut r = Reader {
        rest: Vec::new(),
        comms: BTreeMap::new(),
        missed: BTreeMap::new(),
        bytes: 0,
        filtered: 0,
        late: 0,
        error: None,
    };
    let cpus: Vec<u32> = files.iter().map(|(c, _)| *c).collect();
    let mut reducer = ctx.relevant.then(Reducer::new);
    let mut page = vec![0u8; ctx.page_size];
    // Read but not yet handed on (at or above the watermark).
    let mut pending: Vec<Event> = Vec::new();
    // Input watermark: every event below it has been read (monotone).
    let mut read_wm = 0u64;
    // What was handed out (monotone).
    let mut wm = 0u64;
    loop {
        // Read the flag before draining: after it is set, one more full drain gets everything.
        let last = ctx.stop.load(Ordering::SeqCst);
        let pass_ns = crate::sys::monotonic_ns();
        let from = pending.len();
        for (cpu, f) in files.iter_mut() {
            let cpu = *cpu;
            let read = read_pages(cpu, f, &mut page, |p| {
                let before = pending.len();
                r.bytes += p.len() as u64;
                let st = parse_page(p, &ctx.hp, cpu, &ctx.dec, &mut pending, &mut r.comms)?;
                *r.missed.entry(cpu).or_default() += st.missed;
                // With the preemptirq events on, every read adds events to the buffer of the
                // CPU it runs on: until EAGAIN it would find those of the read before. The pass
                // ends for the CPU at its first page that reaches the pass's start.
                Ok(pending[before..].last().is_none_or(|e| e.ts_ns < pass_ns))
            });
            if let Err(e) = read {
                r.error = Some(e);
                return r;
            }
        }
        r.late += pending[from..].iter().filter(|e| e.ts_ns < read_wm).count() as u64;
        if last {
            break;
        }
        read_wm = read_wm.max(pass_ns.saturating_sub(WATERMARK_MARGIN_NS));
        let mut batch = Vec::new();
        pending.retain(|e| {
            let due = e.ts_ns < read_wm;
            if due {
                batch.push(*e);
            }
            !due
        });
        batch.sort_by_key(|e| (e.ts_ns, e.cpu));
        let (out, w) = match reducer.as_mut() {
            Some(red) => {
                let mut out = red.push(batch);
                out.extend(red.advance_to(read_wm));
                (out, read_wm.min(red.bound_ns()))
            }
            None => (batch, read_wm),
        };
        wm = wm.max(w);
        let held = pending.len() + reducer.as_ref().map_or(0, Reducer::pending);
        feed.deliver(out, wm, held);
        if feed.stats_due() {
            let lost = lost_per_cpu(&ctx.inst, &cpus, &r.missed);
            let filtered = reducer.as_ref().map_or(0, Reducer::dropped);
            let comms = feed.comms_wanted().then(|| r.comms.clone());
            feed.publish(|st| {
                st.lost = lost;
                st.filtered = filtered;
                if let Some(m) = comms {
                    st.comms = m;
                }
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    pending.sort_by_key(|e| (e.ts_ns, e.cpu));
    let mut rest = feed.into_rest();
    match reducer {
        Some(mut red) => {
            rest.extend(red.push(pending));
            let (tail, dropped) = red.finish();
            rest.extend(tail);
            r.filtered = dropped;
        }
        None => rest.extend(pending),
    }
    r.rest = rest;
    r
}

impl Drop for TracefsSession {
    fn drop(&mut self) {
        let _ = std::fs::write(self.inst.join("tracing_on"), "0");
        self.stop.store(true, Ordering::SeqCst);
        // Disconnect first: a reader waiting for room in the queue then goes on.
        self.stream.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join(); // closes the trace_pipe_raw files
        }
        remove_instance(&self.inst, self.mounted_by_us);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn cpumask() {
        assert_eq!(cpumask_hex(&[0, 1]), "00000003");
        assert_eq!(cpumask_hex(&[1, 33]), "00000002,00000002");
    }

    const SWITCH_FMT: &str = "name: sched_switch\nID: 373\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n";
    // events/header_page as kernel 6.18 (x86_64) prints it.
    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

    #[test]
    fn parses_formats_and_a_hand_built_page() {
        let f = parse_format(SWITCH_FMT).expect("format parses");
        assert_eq!(f.id, 373);
        assert_eq!(
            f.fields["next_prio"],
            Field {
                offset: 60,
                size: 4
            }
        );
        assert_eq!(
            f.fields["prev_comm"],
            Field {
                offset: 8,
                size: 16
            }
        );
        let hp = parse_header_page(HEADER_PAGE).expect("header parses");
        assert_eq!(
            hp,
            HeaderPage {
                commit_offset: 8,
                commit_size: 8,
                data_offset: 16
            }
        );
        let mut dec = Decoders::default();
        dec.add("sched_switch", &f).expect("decoder");

        // Payload: 64 bytes → type_len 16 (64/4), delta 100 ns; then a time-extend of 2^27+5,
        // then the same payload again with delta 7.
        let mut payload = vec![0u8; 64];
        payload[0..2].copy_from_slice(&373u16.to_le_bytes());
        payload[8..12].copy_from_slice(b"idle");
        payload[24..28].copy_from_slice(&0u32.to_le_bytes());
        payload[28..32].copy_from_slice(&120i32.to_le_bytes());
        payload[40..44].copy_from_slice(b"m0\0\0");
        payload[56..60].copy_from_slice(&42u32.to_le_bytes());
        payload[60..64].copy_from_slice(&(-1i32).to_le_bytes());
        let mut data = Vec::new();
        data.extend_from_slice(&((100u32 << 5) | 16).to_le_bytes());
        data.extend_from_slice(&payload);
        data.extend_from_slice(&((5u32 << 5) | 30).to_le_bytes());
        data.extend_from_slice(&1u32.to_le_bytes());
        // A type_len-0 event: array[0] = 64 + 4.
        data.extend_from_slice(&(7u32 << 5).to_le_bytes());
        data.extend_from_slice(&68u32.to_le_bytes());
        data.extend_from_slice(&payload);
        let mut page = vec![0u8; 16];
        page[0..8].copy_from_slice(&1_000_000u64.to_le_bytes());
        page[8..16].copy_from_slice(&(data.len() as u64).to_le_bytes());
        page.extend_from_slice(&data);
        let mut out = Vec::new();
        let mut comms = BTreeMap::new();
        let st = parse_page(&page, &hp, 1, &dec, &mut out, &mut comms).expect("page parses");
        assert_eq!(st.events, 2);
        assert_eq!(out.len(), 2);
        // 1_000_000 + 100
        assert_eq!(out[0].ts_ns, 1_000_100);
        // + (5 + 1<<27) + 7 = 1_000_100 + 134_217_740
        assert_eq!(out[1].ts_ns, 1_000_100 + 5 + (1 << 27) + 7);
        assert_eq!(
            out[0].kind,
            EventKind::Switch {
                prev_pid: 0,
                prev_prio: 120,
                prev_state: 0,
                next_pid: 42,
                next_prio: -1
            }
        );
        assert_eq!(comms.get(&42).map(String::as_str), Some("m0"));
        // Truncated commit → error, not panic.
        page[8..16].copy_from_slice(&10_000u64.to_le_bytes());
        assert!(parse_page(&page, &hp, 1, &dec, &mut out, &mut comms).is_err());
    }

    /// events/preemptirq/preempt_disable/format as kernel 6.12 (x86_64) prints it.
    pub(crate) const PREEMPT_DISABLE_FMT: &str = "name: preempt_disable\nID: 457\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:s32 caller_offs;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:s32 parent_offs;\toffset:12;\tsize:4;\tsigned:1;\n\nprint fmt: \"caller=%pS parent=%pS\", (void *)((unsigned long)(_stext) + REC->caller_offs), (void *)((unsigned long)(_stext) + REC->parent_offs)\n";

    /// The same event under another name and id, its two fields swapped: the decoder reads the
    /// offsets the format gives, not fixed ones.
    fn pi_format(name: &str, id: u16, caller_at: usize, parent_at: usize) -> Format {
        let t = PREEMPT_DISABLE_FMT
            .replace("preempt_disable", name)
            .replace("ID: 457", &format!("ID: {id}"))
            .replace(
                "caller_offs;\toffset:8",
                &format!("caller_offs;\toffset:{caller_at}"),
            )
            .replace(
                "parent_offs;\toffset:12",
                &format!("parent_offs;\toffset:{parent_at}"),
            );
        parse_format(&t).expect("format parses")
    }

    /// A preemptirq record: header (type_len 4 = 16 bytes of payload, `delta`), then the
    /// payload with `caller` and `parent` at the given offsets.
    fn pi_record(id: u16, delta: u32, at: (usize, usize), caller: i32, parent: i32) -> Vec<u8> {
        let mut r = ((delta << 5) | 4).to_le_bytes().to_vec();
        let mut p = [0u8; 16];
        p[0..2].copy_from_slice(&id.to_le_bytes());
        p[4..8].copy_from_slice(&1234i32.to_le_bytes()); // common_pid
        p[at.0..at.0 + 4].copy_from_slice(&caller.to_le_bytes());
        p[at.1..at.1 + 4].copy_from_slice(&parent.to_le_bytes());
        r.extend_from_slice(&p);
        r
    }

    pub(crate) fn pi_decoders() -> Decoders {
        let mut d = Decoders::default();
        d.add(
            "preempt_disable",
            &parse_format(PREEMPT_DISABLE_FMT).expect("fmt"),
        )
        .expect("decoder");
        d.add("preempt_enable", &pi_format("preempt_enable", 458, 8, 12))
            .expect("decoder");
        // Fields swapped in this one.
        d.add("irq_disable", &pi_format("irq_disable", 459, 12, 8))
            .expect("decoder");
        d.add("irq_enable", &pi_format("irq_enable", 460, 8, 12))
            .expect("decoder");
        d
    }

    /// A page of the four preemptirq events, decoded by hand:
    /// base 5_000_000; preempt_disable +10 → 5_000_010 (caller −0x10, parent 0x2000);
    /// irq_disable +5 → 5_000_015 (fields swapped in its format: caller 0x300, parent −4);
    /// irq_enable +20 → 5_000_035; preempt_enable +1 → 5_000_036.
    pub(crate) fn pi_page() -> Vec<u8> {
        let mut data = Vec::new();
        data.extend(pi_record(457, 10, (8, 12), -0x10, 0x2000));
        data.extend(pi_record(459, 5, (12, 8), 0x300, -4));
        data.extend(pi_record(460, 20, (8, 12), 0x40, 0x50));
        data.extend(pi_record(458, 1, (8, 12), 0x60, 0x70));
        let mut page = vec![0u8; 16];
        page[0..8].copy_from_slice(&5_000_000u64.to_le_bytes());
        page[8..16].copy_from_slice(&(data.len() as u64).to_le_bytes());
        page.extend_from_slice(&data);
        page
    }

    pub(crate) fn header() -> HeaderPage {
        parse_header_page(HEADER_PAGE).expect("header parses")
    }

    #[test]
    fn decodes_preemptirq_records_by_their_formats() {
        let f = parse_format(PREEMPT_DISABLE_FMT).expect("format parses");
        assert_eq!((f.name.as_str(), f.id), ("preempt_disable", 457));
        assert_eq!(f.fields["caller_offs"], Field { offset: 8, size: 4 });
        assert_eq!(
            f.fields["parent_offs"],
            Field {
                offset: 12,
                size: 4
            }
        );
        let dec = pi_decoders();
        let page = pi_page();
        let mut out = Vec::new();
        let mut comms = BTreeMap::new();
        let st = parse_page(&page, &header(), 2, &dec, &mut out, &mut comms).expect("parses");
        assert_eq!((st.events, st.undecoded, st.missed), (4, 0, 0));
        let got: Vec<(u64, u32, EventKind)> =
            out.iter().map(|e| (e.ts_ns, e.cpu, e.kind)).collect();
        assert_eq!(
            got,
            [
                (5_000_010, 2, EventKind::PreemptDisable),
                (5_000_015, 2, EventKind::IrqDisable),
                (5_000_035, 2, EventKind::IrqEnable),
                (5_000_036, 2, EventKind::PreemptEnable),
            ]
        );
        // The offsets, signed, from the fields the format names (swapped for irq_disable).
        let payloads: Vec<Vec<u8>> = {
            let mut v = Vec::new();
            walk_page(&page, &header(), |_, p| {
                v.push(p.to_vec());
                true
            })
            .expect("walks");
            v
        };
        assert_eq!(
            preemptirq_offsets(&dec, &payloads[0]),
            Some((-0x10, 0x2000))
        );
        assert_eq!(preemptirq_offsets(&dec, &payloads[1]), Some((0x300, -4)));
        // _stext + offset; unknown _stext gives 0, not a made-up address.
        assert_eq!(
            stext_address(0xffff_ffff_8100_0000, -0x10),
            0xffff_ffff_80ff_fff0
        );
        assert_eq!(
            stext_address(0xffff_ffff_8100_0000, 0x2000),
            0xffff_ffff_8100_2000
        );
        assert_eq!(stext_address(0, 0x2000), 0);
        // Not a preemptirq record, or cut short: none.
        let mut sw = vec![0u8; 64];
        sw[0..2].copy_from_slice(&373u16.to_le_bytes());
        assert_eq!(preemptirq_offsets(&dec, &sw), None);
        assert_eq!(preemptirq_offsets(&dec, &payloads[0][..10]), None);
        assert_eq!(decode_payload(&dec, &payloads[0][..10], &mut comms), None);
    }

    #[test]
    fn a_preemptirq_layout_we_do_not_know_is_refused() {
        let t = PREEMPT_DISABLE_FMT.replace(
            "caller_offs;\toffset:8;\tsize:4",
            "caller_offs;\toffset:8;\tsize:8",
        );
        let mut d = Decoders::default();
        let e = d
            .add("preempt_disable", &parse_format(&t).expect("fmt"))
            .unwrap_err();
        assert!(e.contains("caller_offs") && e.contains("s32"), "{e}");
        let t = PREEMPT_DISABLE_FMT.replace("parent_offs", "parent_ip");
        let e = d
            .add("preempt_disable", &parse_format(&t).expect("fmt"))
            .unwrap_err();
        assert!(e.contains("parent_offs"), "{e}");
    }

    #[test]
    fn preemptirq_availability_names_what_is_missing() {
        let d = tempfile::tempdir().expect("tempdir");
        let e = preemptirq_availability(d.path()).unwrap_err();
        assert!(e.contains("not mounted"), "{e}");
        std::fs::create_dir_all(d.path().join("events/sched")).expect("mkdir");
        let e = preemptirq_availability(d.path()).unwrap_err();
        assert!(e.contains("CONFIG_PREEMPTIRQ_TRACEPOINTS"), "{e}");
        for n in ["preempt_disable", "preempt_enable"] {
            let dir = d.path().join("events/preemptirq").join(n);
            std::fs::create_dir_all(&dir).expect("mkdir");
            std::fs::write(dir.join("format"), "").expect("write");
        }
        let e = preemptirq_availability(d.path()).unwrap_err();
        assert!(
            e.contains("preemptirq:irq_disable, preemptirq:irq_enable"),
            "{e}"
        );
        for n in ["irq_disable", "irq_enable"] {
            let dir = d.path().join("events/preemptirq").join(n);
            std::fs::create_dir_all(&dir).expect("mkdir");
            std::fs::write(dir.join("format"), "").expect("write");
        }
        assert_eq!(preemptirq_availability(d.path()), Ok(()));
    }

    #[test]
    fn stats_count_overruns_and_drops() {
        // per_cpu/cpuN/stats as 6.12 prints it.
        let t = "entries: 10\noverrun: 3\ncommit overrun: 0\nbytes: 4080\noldest event ts:  1.000000\nnow ts:  2.000000\ndropped events: 40\nread events: 7\n";
        assert_eq!(stats_lost(t), 43);
        assert_eq!(stats_lost(""), 0);
    }
}
