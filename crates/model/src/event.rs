//! Kernel events as rtscope records them (decoded from eBPF or tracefs), in a form the pure
//! analysis can consume. Timestamps are CLOCK_MONOTONIC ns (the kernel's `ktime_get_ns`, which is
//! what eBPF's `bpf_ktime_get_ns` and tracefs' `mono` clock give), so they line up with samples.
//!
//! Plain data: the capture (`trace`) produces it, the analysis consumes it.

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
    ErrorApic,
    SpuriousApic,
    ThermalApic,
    X86PlatformIpi,
    /// Any other vector, by number.
    Other(u32),
}

impl Vector {
    /// The tracepoint stem (`local_timer` for `irq_vectors:local_timer_entry`).
    pub fn name(self) -> String {
        match self {
            Vector::LocalTimer => "local_timer".into(),
            Vector::Reschedule => "reschedule".into(),
            Vector::CallFunction => "call_function".into(),
            Vector::CallFunctionSingle => "call_function_single".into(),
            Vector::IrqWork => "irq_work".into(),
            Vector::ErrorApic => "error_apic".into(),
            Vector::SpuriousApic => "spurious_apic".into(),
            Vector::ThermalApic => "thermal_apic".into(),
            Vector::X86PlatformIpi => "x86_platform_ipi".into(),
            Vector::Other(n) => format!("vector_{n:#x}"),
        }
    }

    /// Inverse of [`Vector::name`] for the named vectors.
    pub fn from_name(s: &str) -> Option<Vector> {
        Some(match s {
            "local_timer" => Vector::LocalTimer,
            "reschedule" => Vector::Reschedule,
            "call_function" => Vector::CallFunction,
            "call_function_single" => Vector::CallFunctionSingle,
            "irq_work" => Vector::IrqWork,
            "error_apic" => Vector::ErrorApic,
            "spurious_apic" => Vector::SpuriousApic,
            "thermal_apic" => Vector::ThermalApic,
            "x86_platform_ipi" => Vector::X86PlatformIpi,
            _ => return None,
        })
    }
}

/// Softirq vector names, indexed by `vec` (include/linux/interrupt.h, stable since 2.6.x).
pub const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// Name of softirq `vec` (`SOFTIRQ_10` beyond the known table).
pub fn softirq_name(vec: u32) -> String {
    SOFTIRQ_NAMES
        .get(vec as usize)
        .map(|s| (*s).to_string())
        .unwrap_or_else(|| format!("SOFTIRQ_{vec}"))
}

/// Power state value of `power:cpu_idle` meaning "leaving idle" (PWR_EVENT_EXIT = (u32)-1).
pub const IDLE_EXIT: u32 = u32::MAX;

/// Names that turn numbers in events into words: thread names by pid, IRQ action names by number.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct NameTables {
    pub comms: std::collections::BTreeMap<u32, String>,
    pub irqs: std::collections::BTreeMap<u32, String>,
}

impl NameTables {
    pub fn comm(&self, pid: u32) -> String {
        if pid == 0 {
            return "swapper".into();
        }
        self.comms
            .get(&pid)
            .cloned()
            .unwrap_or_else(|| format!("pid{pid}"))
    }
    pub fn irq(&self, irq: u32) -> String {
        self.irqs
            .get(&irq)
            .cloned()
            .unwrap_or_else(|| format!("irq{irq}"))
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    IrqEntry {
        irq: u32,
    },
    IrqExit {
        irq: u32,
        handled: bool,
    },
    SoftirqRaise {
        vec: u32,
    },
    SoftirqEntry {
        vec: u32,
    },
    SoftirqExit {
        vec: u32,
    },
    VectorEntry {
        vector: Vector,
    },
    VectorExit {
        vector: Vector,
    },
    /// nmi:nmi_handler fires after the handler ran: `delta_ns` is its duration.
    Nmi {
        delta_ns: u64,
    },
    /// `now_ns` is the hrtimer core's `now` (tracefs); 0 when not captured (eBPF does not read it).
    HrtimerEntry {
        timer: u64,
        function: u64,
        now_ns: u64,
    },
    HrtimerExit {
        timer: u64,
    },
    /// `prio` is the kernel's `task->prio` (0..99 real-time, 100..139 normal; lower is higher),
    /// as printed by tracefs; the same for `Switch`.
    Waking {
        pid: u32,
        prio: i32,
        target_cpu: u32,
    },
    Wakeup {
        pid: u32,
        prio: i32,
        target_cpu: u32,
    },
    Switch {
        prev_pid: u32,
        prev_prio: i32,
        prev_state: u64,
        next_pid: u32,
        next_prio: i32,
    },
    Migrate {
        pid: u32,
        orig_cpu: u32,
        dest_cpu: u32,
    },
    /// power:cpu_idle; `state == u32::MAX` (PWR_EVENT_EXIT) is the exit from idle.
    CpuIdle {
        state: u32,
    },
    // New variants go at the end: the .rtt encoding numbers them (docs/trace-format.md).
    /// preemptirq:preempt_disable (CONFIG_PREEMPTIRQ_TRACEPOINTS; fires when the preempt count
    /// leaves 0). Absent on kernels built without those tracepoints.
    PreemptDisable,
    /// preemptirq:preempt_enable (the preempt count returns to 0).
    PreemptEnable,
    /// preemptirq:irq_disable (local IRQs masked).
    IrqDisable,
    /// preemptirq:irq_enable (local IRQs unmasked).
    IrqEnable,
    /// Not a kernel event: `events` events that the capture's relevance filter left out
    /// (SCHED_OTHER switches and wake-ups, hrtimer expiries) happened from this event's time to `len_ns` later,
    /// no two of them (nor the ends and the recorded events around) further apart than the
    /// filter's split distance (10 µs). It keeps the evidence that the guest was running: an
    /// eventless stretch is never hidden by the filter.
    Background {
        len_ns: u64,
        events: u32,
    },
}

impl EventKind {
    /// The tracepoint's name (`irq:irq_handler_entry` → `irq_handler_entry`; the system vectors
    /// share `vector_entry`/`vector_exit`), for counts and listings.
    pub fn kind_name(&self) -> &'static str {
        match self {
            EventKind::IrqEntry { .. } => "irq_handler_entry",
            EventKind::IrqExit { .. } => "irq_handler_exit",
            EventKind::SoftirqRaise { .. } => "softirq_raise",
            EventKind::SoftirqEntry { .. } => "softirq_entry",
            EventKind::SoftirqExit { .. } => "softirq_exit",
            EventKind::VectorEntry { .. } => "vector_entry",
            EventKind::VectorExit { .. } => "vector_exit",
            EventKind::Nmi { .. } => "nmi_handler",
            EventKind::HrtimerEntry { .. } => "hrtimer_expire_entry",
            EventKind::HrtimerExit { .. } => "hrtimer_expire_exit",
            EventKind::Waking { .. } => "sched_waking",
            EventKind::Wakeup { .. } => "sched_wakeup",
            EventKind::Switch { .. } => "sched_switch",
            EventKind::Migrate { .. } => "sched_migrate_task",
            EventKind::CpuIdle { .. } => "cpu_idle",
            EventKind::PreemptDisable => "preempt_disable",
            EventKind::PreemptEnable => "preempt_enable",
            EventKind::IrqDisable => "irq_disable",
            EventKind::IrqEnable => "irq_enable",
            EventKind::Background { .. } => "background",
        }
    }
}

/// Events per CPU and kind name (`EventKind::kind_name`), both sorted. Pure.
pub fn count_by_kind(
    events: &[Event],
) -> std::collections::BTreeMap<u32, std::collections::BTreeMap<&'static str, u64>> {
    let mut m: std::collections::BTreeMap<u32, std::collections::BTreeMap<&'static str, u64>> =
        Default::default();
    for e in events {
        *m.entry(e.cpu)
            .or_default()
            .entry(e.kind.kind_name())
            .or_default() += 1;
    }
    m
}

#[cfg(test)]
mod kind_tests {
    use super::*;

    #[test]
    fn counts_per_cpu_and_kind() {
        let e = |cpu, kind| Event {
            ts_ns: 0,
            cpu,
            kind,
        };
        let v = [
            e(0, EventKind::IrqEntry { irq: 3 }),
            e(0, EventKind::IrqEntry { irq: 4 }),
            e(1, EventKind::CpuIdle { state: 1 }),
            e(
                0,
                EventKind::Background {
                    len_ns: 5,
                    events: 9,
                },
            ),
        ];
        let m = count_by_kind(&v);
        assert_eq!(m[&0]["irq_handler_entry"], 2);
        assert_eq!(m[&0]["background"], 1);
        assert_eq!(m[&1]["cpu_idle"], 1);
        assert_eq!(m[&0].len(), 2);
    }
}
