//! heursch-2001 §4, Table 3: the time the scheduler takes before it gives the CPU to a
//! SCHED_FIFO thread, timed in the kernel (`src/bpf/schedtime.bpf.c`): fentry on the
//! scheduler's entry points (`schedule`, `schedule_idle`, `preempt_schedule_irq`) — or, where
//! the trampoline is itself a preemption point (PREEMPT_RT), the last preemptirq
//! `preempt_disable` before the switch — to the `sched_switch` tracepoint that switches to a
//! SCHED_FIFO thread of one process on one CPU.
//!
//! `__schedule`, where the entry points meet, is `notrace`, so no fentry/fexit program can
//! attach to it; its fexit would anyway run only when the task that entered it runs again.
//! Each duration includes the fentry trampoline and the start program (a constant of a few
//! hundred instructions), like the paper's TSC reads included their own cost.
//!
//! The kernel may refuse (lockdown `integrity` answers EPERM to fentry programs): `attach` says
//! why, in one line.

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, OpenObject};
use std::mem::MaybeUninit;

skeleton!("schedtime.skel.rs");
use skel::{SchedtimeSkel, SchedtimeSkelBuilder};

/// The kernel functions whose entry starts a timing (fentry and fexit programs).
pub const ENTRIES: [&str; 3] = ["schedule", "schedule_idle", "preempt_schedule_irq"];

const PROGRAMS: &str = "the scheduler timing programs (fentry on schedule, schedule_idle, preempt_schedule_irq; tp_btf sched_switch)";
/// `cfg` map keys (CFG_* in schedtime.bpf.c).
const CFG_TGID: u32 = 0;
const CFG_CPU: u32 = 1;
/// `counters` map keys (C_* in schedtime.bpf.c).
const C_MISSED: u32 = 0;
const C_DROPPED: u32 = 1;

/// The attached programs. Dropping it detaches them.
pub struct SchedTiming {
    // Declared before `_storage`: fields drop in order, so the skeleton (which borrows the
    // storage) is gone before the storage is freed.
    skel: SchedtimeSkel<'static>,
    _storage: Box<MaybeUninit<OpenObject>>,
}

/// What one drain found since the previous one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Drained {
    /// Scheduler entry → switch to the SCHED_FIFO thread, ns, in the order they happened.
    pub samples_ns: Vec<u64>,
    /// Switches to the thread with no scheduler entry seen (reached through `preempt_schedule`,
    /// which is `notrace`).
    pub missed: u64,
    /// Durations lost because the queue (65536) was full.
    pub dropped: u64,
}

/// How the scheduler's entry is marked: fentry on its entry points, or (needed on PREEMPT_RT,
/// where the trampoline's migrate_disable() is itself a preemption point) the last
/// preempt_disable before the switch. Which one a run used goes into its record.
pub fn start_method(tracepoints: bool) -> &'static str {
    if tracepoints {
        "the last preempt_disable (0 → 1) before the switch, preemptirq tracepoints; fentry on schedule_idle"
    } else {
        "fentry on schedule, schedule_idle, preempt_schedule_irq"
    }
}

/// The programs one method loads (the others keep autoload off).
fn wanted(prog: &str, rt: bool) -> bool {
    match prog {
        "rt_preempt_off" | "rt_preempt_on" => rt,
        "schedule_entry"
        | "schedule_exit"
        | "preempt_schedule_irq_entry"
        | "preempt_schedule_irq_exit" => !rt,
        _ => true,
    }
}

/// Load and attach the programs for switches to SCHED_FIFO threads of process `tgid` on `cpu`,
/// or say in one line why the kernel refused. `tracepoints`: mark the scheduler's entry with the
/// preemptirq tracepoints ([`start_method`]); PREEMPT_RT needs it, other kernels allow it.
pub fn attach(tgid: u32, cpu: u32, tracepoints: bool) -> Result<SchedTiming, String> {
    if let Some(f) = crate::kfuncs::missing_in_btf(&ENTRIES) {
        return Err(format!(
            "kernel function {f} is not in this kernel's BTF (/sys/kernel/btf/vmlinux): fentry cannot attach to it"
        ));
    }
    if tracepoints && crate::kfuncs::missing_in_btf(&["btf_trace_preempt_disable"]).is_some() {
        return Err("this kernel has no preemptirq tracepoints (CONFIG_TRACE_PREEMPT_TOGGLE): the scheduler's entry cannot be marked by them (under PREEMPT_RT fentry's trampoline is itself a preemption point)".into());
    }
    let (skel, storage) = crate::kfuncs::build_quietly(|slot| {
        SchedtimeSkelBuilder::default()
            .open(slot)
            .map_err(|e| crate::kfuncs::refusal("open", &e, PROGRAMS))
            .and_then(|mut open| {
                for mut p in open.open_object_mut().progs_mut() {
                    let name = p.name().to_string_lossy().into_owned();
                    if !wanted(&name, tracepoints) {
                        p.set_autoload(false);
                    }
                }
                open.load()
                    .map_err(|e| crate::kfuncs::refusal("load", &e, PROGRAMS))
            })
            .and_then(|mut skel| {
                for (k, v) in [(CFG_TGID, tgid), (CFG_CPU, cpu)] {
                    skel.maps
                        .cfg
                        .update(&k.to_ne_bytes(), &v.to_ne_bytes(), MapFlags::ANY)
                        .map_err(|e| format!("bpf: setting the scheduler timing's filter: {e}"))?;
                }
                skel.attach()
                    .map_err(|e| crate::kfuncs::refusal("attach", &e, PROGRAMS))?;
                Ok(skel)
            })
    })?;
    Ok(SchedTiming {
        skel,
        _storage: storage,
    })
}

impl SchedTiming {
    /// Everything timed since the last drain (the queue is emptied, the counters zeroed).
    pub fn drain(&self) -> Drained {
        let mut d = Drained::default();
        while let Ok(Some(v)) = self.skel.maps.samples.lookup_and_delete(&[]) {
            d.samples_ns.push(u64::from_ne_bytes(
                v.as_slice().try_into().unwrap_or([0; 8]),
            ));
        }
        let c = &self.skel.maps.counters;
        for (k, slot) in [(C_MISSED, &mut d.missed), (C_DROPPED, &mut d.dropped)] {
            let key = k.to_ne_bytes();
            if let Ok(Some(per_cpu)) = c.lookup_percpu(&key, MapFlags::ANY) {
                *slot = per_cpu.iter().map(|v| sum_u64(v)).sum();
                let zeros = vec![vec![0u8; 8]; per_cpu.len()];
                let _ = c.update_percpu(&key, &zeros, MapFlags::ANY);
            }
        }
        d
    }
}

fn sum_u64(b: &[u8]) -> u64 {
    b.get(..8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_method_loads_its_own_start_programs() {
        for p in ["schedule_entry", "preempt_schedule_irq_exit"] {
            assert!(wanted(p, false) && !wanted(p, true), "{p}");
        }
        for p in ["rt_preempt_off", "rt_preempt_on"] {
            assert!(!wanted(p, false) && wanted(p, true), "{p}");
        }
        // The idle task's entry and the switch are timed either way.
        for p in ["schedule_idle_entry", "schedule_idle_exit", "on_switch"] {
            assert!(wanted(p, false) && wanted(p, true), "{p}");
        }
        assert!(start_method(true).contains("preemptirq tracepoints"));
    }

    #[test]
    fn counter_values() {
        assert_eq!(sum_u64(&7u64.to_ne_bytes()), 7);
        assert_eq!(sum_u64(&[1, 2]), 0);
    }
}
