//! Kernel events as rtscope records them (decoded from eBPF or tracefs), in a form the pure
//! analysis can consume. Timestamps are CLOCK_MONOTONIC ns (the kernel's `ktime_get_ns`, which is
//! what eBPF's `bpf_ktime_get_ns` and tracefs' `mono` clock give), so they line up with samples.
//!
//! Owned by the `trace` work (issue 4); extend here, keep it plain data.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Event {
    pub ts_ns: u64,
    pub cpu: u32,
    pub kind: EventKind,
}

/// x86 system vectors seen through `irq_vectors:*`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Vector {
    LocalTimer,
    Reschedule,
    CallFunction,
    CallFunctionSingle,
    IrqWork,
    Other(u32),
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    IrqEntry { irq: u32 },
    IrqExit { irq: u32, handled: bool },
    SoftirqRaise { vec: u32 },
    SoftirqEntry { vec: u32 },
    SoftirqExit { vec: u32 },
    VectorEntry { vector: Vector },
    VectorExit { vector: Vector },
    /// nmi:nmi_handler fires after the handler ran: `delta_ns` is its duration.
    Nmi { delta_ns: u64 },
    HrtimerEntry { timer: u64, function: u64, now_ns: u64 },
    HrtimerExit { timer: u64 },
    Waking { pid: u32, prio: i32, target_cpu: u32 },
    Wakeup { pid: u32, prio: i32, target_cpu: u32 },
    Switch { prev_pid: u32, prev_prio: i32, prev_state: u64, next_pid: u32, next_prio: i32 },
    Migrate { pid: u32, orig_cpu: u32, dest_cpu: u32 },
    /// power:cpu_idle; `state == u32::MAX` (PWR_EVENT_EXIT) is the exit from idle.
    CpuIdle { state: u32 },
}
