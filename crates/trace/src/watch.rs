//! `rtscope watch`'s capture: the scheduling events of the watched thread groups only
//! (`src/bpf/watch.bpf.c`, which filters on the TGID in the kernel and says why its soft expiry
//! is cyclictest's `next`). The events come through a BPF ring buffer: their rate is the watched
//! threads' own (a few per activation), so the ring's one lock costs nothing measurable.
//!
//! Each poll hands on the events older than [`MARGIN_NS`] in time order: the ring holds them in
//! the order they were reserved, and a record's time is read after its reservation, so two CPUs'
//! records may be a few hundred ns out of order.
//!
//! Dropping a [`WatchCapture`] closes the program links, which detaches them — also when the
//! process dies by any signal, since the kernel closes its fds.

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, OpenObject, RingBuffer, RingBufferBuilder};
use rtscope_model::watch::{WatchEvent, WatchKind};
use std::mem::MaybeUninit;
use std::sync::{Arc, Mutex};
use std::time::Duration;

skeleton!("watch.skel.rs");
use skel::{WatchSkel, WatchSkelBuilder};

// Record kinds: keep in sync with watch.bpf.c.
const W_WAKING: u32 = 1;
const W_SWITCH_IN: u32 = 2;
const W_SWITCH_OUT: u32 = 3;
const W_NEW_TASK: u32 = 4;
const W_EXIT: u32 = 5;
/// Size of `struct wrec`.
pub const REC_SIZE: usize = 48;
/// Events younger than this stay for the next poll (see the module comment).
pub const MARGIN_NS: u64 = 2_000_000;

const PROGRAMS: &str = "the watch programs (tp_btf sched_waking, sched_switch, sched_process_fork/exec/exit, hrtimer_expire_entry/exit)";

/// Which thread groups to watch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchSpec {
    /// Watched from the start.
    pub tgids: Vec<u32>,
    /// Processes that start later with this name (exec, or fork of a process so named) join.
    pub comm: Option<String>,
    /// Children of a watched process join (`watch -- CMD`).
    pub follow_children: bool,
    /// Every task in this cgroup-v2 cgroup (its id: the directory's inode number) is watched,
    /// those moved into it later included (`watch --cgroup`).
    pub cgroup_id: Option<u64>,
}

/// Can the watch programs load here (kernel BTF, root)? Loads nothing.
pub fn available() -> Result<(), String> {
    crate::bpf::available()
}

/// Decode one ring-buffer record. None for a short or unknown record.
pub fn decode(b: &[u8]) -> Option<WatchEvent> {
    let u64_at =
        |o: usize| -> Option<u64> { Some(u64::from_ne_bytes(b.get(o..o + 8)?.try_into().ok()?)) };
    let u32_at =
        |o: usize| -> Option<u32> { Some(u32::from_ne_bytes(b.get(o..o + 4)?.try_into().ok()?)) };
    let ts_ns = u64_at(0)?;
    let kind = u32_at(8)?;
    let tid = u32_at(12)?;
    let tgid = u32_at(16)?;
    let cpu = u32_at(20)?;
    let other = u32_at(24)?;
    let other_prio = u32_at(28)? as i32;
    let x = u64_at(32)?;
    let y = u64_at(40)?;
    let kind = match kind {
        W_WAKING => WatchKind::Waking {
            waker: other,
            timer_soft_ns: x,
        },
        W_SWITCH_IN => WatchKind::SwitchIn { prev: other },
        W_SWITCH_OUT => WatchKind::SwitchOut {
            next: other,
            next_prio: other_prio,
            preempted: y != 0 || x == 0,
        },
        W_NEW_TASK => WatchKind::NewTask { parent: other },
        W_EXIT => WatchKind::Exit,
        _ => return None,
    };
    Some(WatchEvent {
        ts_ns,
        cpu,
        tid,
        tgid,
        kind,
    })
}

/// The attached watch programs and their ring buffer.
pub struct WatchCapture {
    // Fields drop in order: the ring buffer, then the skeleton (which borrows the storage),
    // then the storage.
    ring: RingBuffer<'static>,
    skel: WatchSkel<'static>,
    _storage: Box<MaybeUninit<OpenObject>>,
    /// Filled by the ring buffer's callback.
    incoming: Arc<Mutex<Incoming>>,
    /// Events read but younger than the margin.
    held: Vec<WatchEvent>,
}

#[derive(Default)]
struct Incoming {
    events: Vec<WatchEvent>,
    undecodable: u64,
}

impl WatchCapture {
    /// Load and attach the programs for `spec`, or say in one line why the kernel refused.
    pub fn attach(spec: &WatchSpec) -> Result<WatchCapture, String> {
        crate::bpf::available()?;
        let comm = spec.comm.as_deref().unwrap_or("");
        if comm.len() > 15 {
            return Err(format!(
                "the name {comm:?} is longer than a kernel task name (15 bytes)"
            ));
        }
        let (skel, storage) = crate::kfuncs::build_quietly(|slot| {
            let mut open = WatchSkelBuilder::default()
                .open(slot)
                .map_err(|e| crate::kfuncs::refusal("open", &e, PROGRAMS))?;
            let ro = open.maps.rodata_data.as_deref_mut().ok_or_else(|| {
                "bpf: the watch program has no read-only data section".to_string()
            })?;
            ro.follow_children = u8::from(spec.follow_children);
            ro.by_comm = u8::from(spec.comm.is_some());
            ro.target_cgid = spec.cgroup_id.unwrap_or(0);
            for (d, s) in ro.target_comm.iter_mut().zip(comm.bytes()) {
                *d = s as _;
            }
            let mut skel = open
                .load()
                .map_err(|e| crate::kfuncs::refusal("load", &e, PROGRAMS))?;
            for &t in &spec.tgids {
                skel.maps
                    .targets
                    .update(&t.to_ne_bytes(), &[1u8], MapFlags::ANY)
                    .map_err(|e| format!("bpf: adding thread group {t} to the watch: {e}"))?;
            }
            skel.attach()
                .map_err(|e| crate::kfuncs::refusal("attach", &e, PROGRAMS))?;
            Ok(skel)
        })?;
        let incoming = Arc::new(Mutex::new(Incoming::default()));
        let sink = incoming.clone();
        let mut rb = RingBufferBuilder::new();
        rb.add(&skel.maps.events, move |data: &[u8]| {
            if let Ok(mut g) = sink.lock() {
                match decode(data) {
                    Some(e) => g.events.push(e),
                    None => g.undecodable += 1,
                }
            }
            0
        })
        .map_err(|e| format!("bpf: the watch ring buffer: {e}"))?;
        let ring = rb
            .build()
            .map_err(|e| format!("bpf: the watch ring buffer: {e}"))?;
        Ok(WatchCapture {
            ring,
            skel,
            _storage: storage,
            incoming,
            held: Vec::new(),
        })
    }

    /// Watch one more thread group from now on.
    pub fn add_tgid(&self, tgid: u32) -> Result<(), String> {
        self.skel
            .maps
            .targets
            .update(&tgid.to_ne_bytes(), &[1u8], MapFlags::ANY)
            .map_err(|e| format!("bpf: adding thread group {tgid} to the watch: {e}"))
    }

    /// The thread groups watched now (those that joined by fork or exec included).
    pub fn tgids(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .skel
            .maps
            .targets
            .keys()
            .filter_map(|k| Some(u32::from_ne_bytes(k.get(..4)?.try_into().ok()?)))
            .collect();
        v.sort_unstable();
        v
    }

    fn read(&mut self) {
        let _ = self.ring.consume();
        if let Ok(mut g) = self.incoming.lock() {
            self.held.append(&mut g.events);
        }
    }

    /// Events older than `now_ns` − [`MARGIN_NS`], in time order, appended to `out`.
    pub fn poll(&mut self, now_ns: u64, out: &mut Vec<WatchEvent>) {
        self.read();
        let cut = now_ns.saturating_sub(MARGIN_NS);
        self.held.sort_by_key(|e| (e.ts_ns, e.cpu));
        let n = self.held.partition_point(|e| e.ts_ns < cut);
        out.extend(self.held.drain(..n));
    }

    /// Wait up to `timeout` for the ring buffer to have something (a sleep that wakes early).
    pub fn wait(&self, timeout: Duration) {
        let _ = self.ring.poll_raw(timeout);
    }

    /// Every event still unread, in time order (the end of the watch).
    pub fn drain_all(&mut self, out: &mut Vec<WatchEvent>) {
        self.read();
        self.held.sort_by_key(|e| (e.ts_ns, e.cpu));
        out.append(&mut self.held);
    }

    /// Records the ring buffer had no room for, and records that could not be decoded.
    pub fn dropped(&self) -> u64 {
        let key = 0u32.to_ne_bytes();
        let in_kernel: u64 = match self.skel.maps.dropped.lookup_percpu(&key, MapFlags::ANY) {
            Ok(Some(v)) => v
                .iter()
                .filter_map(|b| Some(u64::from_ne_bytes(b.get(..8)?.try_into().ok()?)))
                .sum(),
            _ => 0,
        };
        in_kernel + self.incoming.lock().map_or(0, |g| g.undecodable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kind: u32, other: u32, prio: i32, x: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(1234u64.to_ne_bytes());
        b.extend(kind.to_ne_bytes());
        b.extend(42u32.to_ne_bytes());
        b.extend(40u32.to_ne_bytes());
        b.extend(1u32.to_ne_bytes());
        b.extend(other.to_ne_bytes());
        b.extend((prio as u32).to_ne_bytes());
        b.extend(x.to_ne_bytes());
        b.extend(0u64.to_ne_bytes());
        b
    }

    #[test]
    fn a_switch_out_is_a_preemption_when_the_kernel_says_so_or_the_task_stays_runnable() {
        let mut b = rec(W_SWITCH_OUT, 9, 120, 1);
        let kind = |b: &[u8]| decode(b).map(|e| e.kind);
        assert_eq!(
            kind(&b),
            Some(WatchKind::SwitchOut {
                next: 9,
                next_prio: 120,
                preempted: false
            })
        );
        b[40..48].copy_from_slice(&1u64.to_ne_bytes());
        assert!(matches!(
            kind(&b),
            Some(WatchKind::SwitchOut {
                preempted: true,
                ..
            })
        ));
    }

    #[test]
    fn decodes_each_kind() {
        let e = decode(&rec(W_WAKING, 7, 0, 999)).expect("decodes");
        assert_eq!((e.ts_ns, e.tid, e.tgid, e.cpu), (1234, 42, 40, 1));
        assert_eq!(
            e.kind,
            WatchKind::Waking {
                waker: 7,
                timer_soft_ns: 999
            }
        );
        let e = decode(&rec(W_SWITCH_OUT, 9, -1, 0)).expect("decodes");
        assert_eq!(
            e.kind,
            WatchKind::SwitchOut {
                next: 9,
                next_prio: -1,
                preempted: true
            }
        );
        assert_eq!(
            decode(&rec(W_SWITCH_IN, 3, 120, 0)).map(|e| e.kind),
            Some(WatchKind::SwitchIn { prev: 3 })
        );
        assert_eq!(
            decode(&rec(W_EXIT, 0, 0, 0)).map(|e| e.kind),
            Some(WatchKind::Exit)
        );
        assert!(decode(&rec(99, 0, 0, 0)).is_none());
        assert!(decode(&rec(W_EXIT, 0, 0, 0)[..47]).is_none());
    }
}
