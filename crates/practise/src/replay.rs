//! Replay mode: the queues driven by a recorded trace instead of random events, so a structure
//! is exercised on the event order a real workload produced. Single-threaded and deterministic:
//! the trace decides which task is where, the structures only follow (no push or pull is run —
//! the real kernel already migrated what it migrated), and every structure is checked after
//! every event.
//!
//! Events and what they do to the emulated queues (keys are the trace's `prio` + 1, so this is
//! always fixed-priority order; SCHED_DEADLINE tasks, `prio` -1, order first):
//! - `sched_waking` / `sched_wakeup` (pid, prio, target_cpu): the task is queued on target_cpu
//!   (moved there if it is queued elsewhere; nothing if it is already there). sched_waking names
//!   the task's CPU before the wake-up chooses one; a following `sched_migrate_task` and
//!   `sched_wakeup` correct it, and either alone suffices.
//! - `sched_switch` on CPU c: `prev` stays queued on c if it was still runnable (`prev_state`
//!   with no sleep bit in its low byte: 0, or 0x100 for a preempted task as tracefs reports
//!   it), else it leaves the queue; `next` is queued on c if it was not (a task runnable since
//!   before the trace started: "discovered").
//! - `sched_migrate_task` (pid, orig, dest): a queued task moves to dest; a sleeping one is only
//!   noted.
//!
//! A task seen with a new priority is re-queued with it (priority inheritance, sched_setattr).
//! The find of the push structure is timed at each wake-up, and the pull structure's at each
//! block, on the real event order; their answers are not compared with the kernel's choice
//! (the kernel's select_task_rq also weighs affinity, capacity and cache).

use crate::clock::OpClock;
use crate::machine::Machine;
use crate::queue::QueueKind;
use crate::stats::{Op, Rec};
use crate::structures::{Fault, StructureKind};
use crate::task::{Task, MAX_CPUS};
use crate::PractiseError;
use rtscope_model::event::{Event, EventKind};
use rtscope_model::practise::{
    PractiseQueued, PractiseReplayCounts, PractiseRun, PractiseViolation,
};
use std::collections::HashMap;

/// The scheduling events of a trace, in time order; and the number of CPUs they name.
pub fn sched_events(events: &[Event]) -> (Vec<Event>, usize) {
    let mut v: Vec<Event> = events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::Switch { .. }
                    | EventKind::Wakeup { .. }
                    | EventKind::Waking { .. }
                    | EventKind::Migrate { .. }
            )
        })
        .copied()
        .collect();
    v.sort_by_key(|e| (e.ts_ns, e.cpu));
    let mut m = 0usize;
    for e in &v {
        let mut see = |c: u32| m = m.max(c as usize + 1);
        see(e.cpu);
        match e.kind {
            EventKind::Wakeup { target_cpu, .. } | EventKind::Waking { target_cpu, .. } => {
                see(target_cpu)
            }
            EventKind::Migrate {
                orig_cpu, dest_cpu, ..
            } => {
                see(orig_cpu);
                see(dest_cpu)
            }
            _ => {}
        }
    }
    (v, m)
}

/// `prio` → key (`prio` + 1; SCHED_DEADLINE's -1 → 0).
fn key_of(prio: i32) -> u64 {
    (prio.max(-1) + 1) as u64
}

/// A sleep bit in the low byte of `prev_state` (TASK_REPORT_MAX, 0x100, marks preemption).
fn still_runnable(prev_state: u64) -> bool {
    prev_state & 0xff == 0
}

struct Replayer {
    machine: Machine,
    rec: Rec,
    /// Queued tasks: pid → (cpu, key).
    queued: HashMap<u32, (usize, u64)>,
    counts: PractiseReplayCounts,
}

impl Replayer {
    fn dequeue(&mut self, pid: u32) -> bool {
        let Some((cpu, _)) = self.queued.remove(&pid) else {
            return false;
        };
        let mut q = self.machine.lock(cpu);
        self.machine
            .dequeue_id(cpu, &mut q, pid as u64, &mut self.rec);
        self.counts.dequeues += 1;
        true
    }

    fn enqueue(&mut self, pid: u32, cpu: usize, key: u64) {
        let task = Task {
            id: pid as u64,
            key,
            end_ns: u64::MAX,
        };
        let mut q = self.machine.lock(cpu);
        self.machine.enqueue(cpu, &mut q, task, &mut self.rec);
        self.queued.insert(pid, (cpu, key));
        self.counts.enqueues += 1;
    }

    /// Make `pid` queued on `cpu` with `key`: nothing if it is, a move or a re-queue if it is
    /// elsewhere or has a new key, an enqueue (`new` counts it) if it was not queued.
    fn ensure(&mut self, pid: u32, cpu: usize, key: u64) -> bool {
        match self.queued.get(&pid).copied() {
            Some((c, k)) if c == cpu && k == key => false,
            Some((c, k)) => {
                self.dequeue(pid);
                if c != cpu {
                    self.counts.migrations += 1;
                }
                if k != key {
                    self.counts.requeued += 1;
                }
                self.enqueue(pid, cpu, key);
                false
            }
            None => {
                self.enqueue(pid, cpu, key);
                true
            }
        }
    }

    fn apply(&mut self, e: &Event) {
        self.counts.events += 1;
        match e.kind {
            EventKind::Waking {
                pid,
                prio,
                target_cpu,
            }
            | EventKind::Wakeup {
                pid,
                prio,
                target_cpu,
            } if pid != 0 => {
                let key = key_of(prio);
                self.ensure(pid, target_cpu as usize, key);
                let t0 = self.rec.begin();
                let _ = self.machine.push.find(Some(key), target_cpu as usize);
                self.rec.end(Op::PushFind, t0);
            }
            EventKind::Switch {
                prev_pid,
                prev_prio,
                prev_state,
                next_pid,
                next_prio,
            } => {
                let cpu = e.cpu as usize;
                if prev_pid != 0 {
                    if still_runnable(prev_state) {
                        if self.ensure(prev_pid, cpu, key_of(prev_prio)) {
                            self.counts.discovered += 1;
                        }
                    } else if self.dequeue(prev_pid) {
                        let local = self.machine.lock(cpu).first().map(|t| t.key);
                        let t0 = self.rec.begin();
                        let _ = self.machine.pull.find(local, cpu);
                        self.rec.end(Op::PullFind, t0);
                    }
                }
                if next_pid != 0 {
                    if self.ensure(next_pid, cpu, key_of(next_prio)) {
                        self.counts.discovered += 1;
                    }
                    let top = self.machine.lock(cpu).first().map(|t| t.id);
                    if next_prio < 100 && top != Some(next_pid as u64) {
                        self.counts.top_mismatch_rt += 1;
                    }
                }
            }
            EventKind::Migrate {
                pid,
                orig_cpu: _,
                dest_cpu,
            } => match self.queued.get(&pid).copied() {
                Some((_, key)) => {
                    self.ensure(pid, dest_cpu as usize, key);
                }
                None => self.counts.migrate_sleeping += 1,
            },
            _ => {}
        }
    }
}

/// Replay `events` (any events; the scheduling ones are used) on one configuration.
pub fn replay_one(
    events: &[Event],
    m: usize,
    kind: StructureKind,
    queue: QueueKind,
    fault: Option<Fault>,
    clock: OpClock,
) -> Result<(PractiseRun, Option<PractiseViolation>), PractiseError> {
    if m == 0 {
        return Err(PractiseError::NoSchedEvents);
    }
    if m > MAX_CPUS {
        return Err(PractiseError::TooManyCpus { cpus: m });
    }
    let mut r = Replayer {
        machine: Machine::new(m, kind, queue, fault),
        rec: Rec::new(clock),
        queued: HashMap::new(),
        counts: PractiseReplayCounts::default(),
    };
    let t0 = crate::clock::mono_ns();
    let mut violation = None;
    for (i, e) in events.iter().enumerate() {
        r.apply(e);
        let guards = r.machine.lock_all();
        let res = r.machine.check_locked(&guards);
        drop(guards);
        if let Err(v) = res {
            violation = Some(PractiseViolation {
                structure: kind.name().into(),
                emulated_cpus: m as u32,
                invariant: v.invariant,
                state: format!(
                    "after trace event {} of {} ({:?} at {} ns on CPU {}): {}",
                    i + 1,
                    events.len(),
                    e.kind,
                    e.ts_ns,
                    e.cpu,
                    v.state
                ),
            });
            break;
        }
    }
    let wall_ns = crate::clock::mono_ns() - t0;
    let final_queues = r
        .machine
        .queues()
        .into_iter()
        .map(|q| {
            q.into_iter()
                .map(|t| PractiseQueued {
                    id: t.id,
                    key: t.key,
                })
                .collect()
        })
        .collect();
    let run = PractiseRun {
        structure: kind.name().into(),
        push_structure: kind.push_name().into(),
        pull_structure: kind.pull_name().into(),
        policy: "fp".into(),
        emulated_cpus: m as u32,
        wall_ns,
        counts: Default::default(),
        ops: r.rec.ops(),
        checks: None,
        replay: Some(r.counts),
        final_queues,
    };
    Ok((run, violation))
}

fn ev(ts: u64, cpu: u32, kind: EventKind) -> Event {
    Event {
        ts_ns: ts,
        cpu,
        kind,
    }
}

/// A crafted two-CPU trace whose replay is hand-checked (this crate's tests and the cli's run
/// it through every structure):
/// 1. CPU 0 switches from idle to pid 10 (prio 50): 10 discovered on 0.       0:[10]
/// 2. pid 11 (prio 40) wakes on CPU 0 (sched_waking names CPU 0).              0:[11,10]
/// 3. CPU 0 switches 10 → 11, 10 preempted (prev_state 0x100 "R+").           0:[11,10]
/// 4. pid 12 (prio 120, SCHED_NORMAL) wakes on CPU 1.                         1:[12]
/// 5. pid 10 migrates 0 → 1 (the kernel pushed it).                           0:[11] 1:[10,12]
/// 6. CPU 1 switches 12 → 10 (12 preempted, prev_state 0).                    1:[10,12]
/// 7. CPU 0 switches 11 → idle, 11 sleeps (prev_state 1 "S").                 0:[]
/// 8. pid 11 wakes with prio 30 (boosted), sched_wakeup on CPU 1.             1:[11,10,12]
/// 9. pid 99 (sleeping, never queued) migrates 1 → 0: only noted.
///
/// Final: CPU 0 empty; CPU 1: 11 (key 31), 10 (key 51), 12 (key 121).
pub fn crafted_trace() -> Vec<Event> {
    vec![
        ev(
            100,
            0,
            EventKind::Switch {
                prev_pid: 0,
                prev_prio: 120,
                prev_state: 0,
                next_pid: 10,
                next_prio: 50,
            },
        ),
        ev(
            200,
            0,
            EventKind::Waking {
                pid: 11,
                prio: 40,
                target_cpu: 0,
            },
        ),
        ev(
            300,
            0,
            EventKind::Switch {
                prev_pid: 10,
                prev_prio: 50,
                prev_state: 0x100,
                next_pid: 11,
                next_prio: 40,
            },
        ),
        ev(
            400,
            1,
            EventKind::Wakeup {
                pid: 12,
                prio: 120,
                target_cpu: 1,
            },
        ),
        ev(
            500,
            0,
            EventKind::Migrate {
                pid: 10,
                orig_cpu: 0,
                dest_cpu: 1,
            },
        ),
        ev(
            600,
            1,
            EventKind::Switch {
                prev_pid: 12,
                prev_prio: 120,
                prev_state: 0,
                next_pid: 10,
                next_prio: 50,
            },
        ),
        ev(
            700,
            0,
            EventKind::Switch {
                prev_pid: 11,
                prev_prio: 40,
                prev_state: 1,
                next_pid: 0,
                next_prio: 120,
            },
        ),
        ev(
            800,
            1,
            EventKind::Wakeup {
                pid: 11,
                prio: 30,
                target_cpu: 1,
            },
        ),
        ev(
            900,
            1,
            EventKind::Migrate {
                pid: 99,
                orig_cpu: 1,
                dest_cpu: 0,
            },
        ),
        ev(950, 1, EventKind::IrqEntry { irq: 5 }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structures::ALL_STRUCTURES;

    #[test]
    fn crafted_trace_gives_the_hand_checked_queues() {
        let (evs, m) = sched_events(&crafted_trace());
        assert_eq!((evs.len(), m), (9, 2));
        for kind in ALL_STRUCTURES {
            for queue in [QueueKind::Heap, QueueKind::Btree] {
                let (run, v) = replay_one(&evs, m, kind, queue, None, OpClock::Monotonic).unwrap();
                assert!(v.is_none(), "{kind:?}: {v:?}");
                let q: Vec<Vec<(u64, u64)>> = run
                    .final_queues
                    .iter()
                    .map(|q| q.iter().map(|t| (t.id, t.key)).collect())
                    .collect();
                assert_eq!(
                    q,
                    vec![vec![], vec![(11, 31), (10, 51), (12, 121)]],
                    "{kind:?}"
                );
                let c = run.replay.unwrap();
                assert_eq!(c.events, 9);
                // 10 (discovered), 11, 12, 10 on 1 (move), 11 on 1 (wake)
                assert_eq!(c.enqueues, 5);
                // 10 off 0 (move), 11 sleeps
                assert_eq!(c.dequeues, 2);
                assert_eq!(c.migrations, 1);
                assert_eq!(c.discovered, 1);
                assert_eq!(c.migrate_sleeping, 1);
                assert_eq!(c.requeued, 0, "11 was not queued when its priority changed");
                assert_eq!(c.top_mismatch_rt, 0);
            }
        }
    }

    #[test]
    fn broken_cpudl_fires_on_a_replay() {
        // Hand-checked: keys 51 (cpu 0), 41 (cpu 1), 46 (cpu 2) make the heap
        // [c0:51 c1:41 c2:46]; a prio-9 task (key 10) wakes on cpu 0 and preempts there:
        // cpudl_set(0, 10) sinks cpu 0's entry, and the left-only heapify swaps it with the
        // left child (41), leaving 46 under 41.
        let sw = |ts, cpu, prev: u32, prev_prio, prev_state, next: u32, next_prio| {
            ev(
                ts,
                cpu,
                EventKind::Switch {
                    prev_pid: prev,
                    prev_prio,
                    prev_state,
                    next_pid: next,
                    next_prio,
                },
            )
        };
        let evs = vec![
            sw(1, 0, 0, 120, 0, 1, 50),
            sw(2, 1, 0, 120, 0, 2, 40),
            sw(3, 2, 0, 120, 0, 3, 45),
            ev(
                4,
                0,
                EventKind::Waking {
                    pid: 4,
                    prio: 9,
                    target_cpu: 0,
                },
            ),
        ];
        let (evs, m) = sched_events(&evs);
        let (_, ok) = replay_one(
            &evs,
            m,
            StructureKind::Cpudl,
            QueueKind::Heap,
            None,
            OpClock::Monotonic,
        )
        .unwrap();
        assert!(ok.is_none());
        let (_, bad) = replay_one(
            &evs,
            m,
            StructureKind::Cpudl,
            QueueKind::Heap,
            Some(Fault::CpudlLeftOnly),
            OpClock::Monotonic,
        )
        .unwrap();
        let bad = bad.expect("the checker must fire");
        assert!(bad.invariant.starts_with("cpudl heap property"), "{bad:?}");
        assert!(
            bad.state.starts_with("after trace event 4 of 4"),
            "{}",
            bad.state
        );
    }
}
