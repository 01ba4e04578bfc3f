//! eBPF capture: the skeleton built from `src/bpf/rtscope.bpf.c`, one ring buffer filled with
//! `BPF_RB_NO_WAKEUP` and drained by a thread every 10 ms.
//!
//! The skeleton borrows its `OpenObject` storage, so the whole BPF lifetime (open, load, attach,
//! poll, detach) lives on one reader thread; `start` waits for it to report "attached" or the
//! error. Dropping the skeleton closes the link fds, which detaches every program — also when the
//! process dies by any signal, since the kernel closes the fds.

use crate::skel::{RtscopeSkel, RtscopeSkelBuilder};
use crate::{Capture, Mechanism, TraceError};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, RingBufferBuilder};
use rtscope_model::event::{Event, EventKind, Vector};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// Size of `struct rec` (ts u64, cpu u32, kind u16, pad u16, a u32, b u32, c u64, d u64).
pub const REC_SIZE: usize = 40;
/// Ring-buffer record header the kernel adds (struct bpf_ringbuf_hdr).
const RB_HDR: u64 = 8;

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

/// Decode one ring-buffer record. None for a short or unknown record.
pub fn decode_rec(b: &[u8]) -> Option<Event> {
    if b.len() < REC_SIZE {
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
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // CAP_BPF + CAP_PERFMON would also do; we only claim support for root.
        return Err("eBPF capture needs root (CAP_BPF and CAP_PERFMON)".into());
    }
    Ok(())
}

struct Out {
    events: Vec<Event>,
    comms: BTreeMap<u32, String>,
    lost: BTreeMap<u32, u64>,
    bytes: u64,
    notes: Vec<String>,
}

pub struct BpfSession {
    cpus: Vec<u32>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<Out, TraceError>>>,
    start_ns: u64,
    steal0: BTreeMap<u32, u64>,
}

impl BpfSession {
    pub fn start(cpus: &[u32]) -> Result<Self, TraceError> {
        available().map_err(TraceError::Unavailable)?;
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel::<Result<(), TraceError>>();
        let cpus_v = cpus.to_vec();
        let stop2 = stop.clone();
        let steal0 = crate::sys::steal_ns();
        let thread = std::thread::Builder::new()
            .name("rtscope-bpf".into())
            .spawn(move || run(cpus_v, stop2, tx))
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
            cpus: cpus.to_vec(),
            stop,
            thread: Some(thread),
            start_ns: crate::sys::monotonic_ns(),
            steal0,
        })
    }

    pub fn stop(mut self) -> Result<Capture, TraceError> {
        let end_ns = crate::sys::monotonic_ns();
        let steal1 = crate::sys::steal_ns();
        self.stop.store(true, Ordering::SeqCst);
        let out = match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| TraceError::Capture("BPF reader thread panicked".into()))??,
            None => return Err(TraceError::Capture("BPF reader was not running".into())),
        };
        let mut events = out.events;
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
        })
    }
}

impl Drop for BpfSession {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join(); // the skeleton (links, maps) is dropped on that thread
        }
    }
}

fn bpf_err(what: &str) -> impl Fn(libbpf_rs::Error) -> TraceError + '_ {
    move |e| TraceError::Setup(format!("bpf: {what}: {e}"))
}

fn run(
    cpus: Vec<u32>,
    stop: Arc<AtomicBool>,
    ready: mpsc::Sender<Result<(), TraceError>>,
) -> Result<Out, TraceError> {
    let mut storage = MaybeUninit::uninit();
    let skel = match open_load_attach(&cpus, &mut storage) {
        Ok(s) => s,
        Err(e) => {
            let _ = ready.send(Err(TraceError::Setup(e.to_string())));
            return Err(e);
        }
    };
    let (skel, notes) = skel;
    let events: Rc<RefCell<Vec<Event>>> = Rc::new(RefCell::new(Vec::with_capacity(1 << 16)));
    let bytes = Rc::new(RefCell::new(0u64));
    let bad = Rc::new(RefCell::new(0u64));
    let mut rbb = RingBufferBuilder::new();
    {
        let ev = events.clone();
        let by = bytes.clone();
        let bad = bad.clone();
        rbb.add(&skel.maps.events, move |data: &[u8]| {
            *by.borrow_mut() += data.len() as u64 + RB_HDR;
            match decode_rec(data) {
                Some(e) => ev.borrow_mut().push(e),
                None => *bad.borrow_mut() += 1,
            }
            0
        })
        .map_err(bpf_err("ring buffer"))?;
    }
    let rb = rbb.build().map_err(bpf_err("ring buffer"))?;
    let _ = ready.send(Ok(()));
    loop {
        let last = stop.load(Ordering::SeqCst);
        // consume() drains without waiting; the producer never wakes us (BPF_RB_NO_WAKEUP).
        if let Err(e) = rb.consume() {
            return Err(TraceError::Capture(format!(
                "bpf: draining ring buffer: {e}"
            )));
        }
        if last {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(rb);
    // Per-CPU loss counters.
    let mut lost = BTreeMap::new();
    let key = 0u32.to_ne_bytes();
    if let Ok(Some(vals)) = skel.maps.lost.lookup_percpu(&key, MapFlags::ANY) {
        for (cpu, v) in vals.iter().enumerate() {
            if v.len() >= 8 {
                let n = u64::from_ne_bytes([v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]]);
                if cpus.contains(&(cpu as u32)) || n > 0 {
                    lost.insert(cpu as u32, n);
                }
            }
        }
    }
    let mut comms = BTreeMap::new();
    for k in skel.maps.comms.keys() {
        if k.len() < 4 {
            continue;
        }
        let pid = u32::from_ne_bytes([k[0], k[1], k[2], k[3]]);
        if let Ok(Some(v)) = skel.maps.comms.lookup(&k, MapFlags::ANY) {
            let end = v.iter().position(|&c| c == 0).unwrap_or(v.len());
            comms.insert(pid, String::from_utf8_lossy(&v[..end]).into_owned());
        }
    }
    let mut notes = notes;
    let bad = *bad.borrow();
    if bad > 0 {
        notes.push(format!(
            "bpf: {bad} ring-buffer records could not be decoded"
        ));
    }
    drop(skel); // detaches every program
    let events = Rc::try_unwrap(events)
        .map(RefCell::into_inner)
        .unwrap_or_default();
    let bytes = *bytes.borrow();
    Ok(Out {
        events,
        comms,
        lost,
        bytes,
        notes,
    })
}

fn open_load_attach<'o>(
    cpus: &[u32],
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
    let mut skel = open.load().map_err(bpf_err("load (verifier)"))?;
    for &c in cpus {
        skel.maps
            .cpu_filter
            .update(&c.to_ne_bytes(), &[1u8], MapFlags::ANY)
            .map_err(bpf_err("cpu filter (cpu number beyond 1023?)"))?;
    }
    skel.attach().map_err(bpf_err("attach"))?;
    Ok((skel, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_switch_record() {
        let mut b = vec![0u8; REC_SIZE];
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
