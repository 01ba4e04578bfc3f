//! The emulated machine: M ready queues and the two global structures, with the scheduling
//! functions of Fig. 2.21 (`on_activation`, `on_block`, `pull`, `push`). Everything here is
//! called from the emulated CPUs' threads (or the single replay thread); the structures are
//! updated only inside a run-queue critical section, as the kernel updates `cpudl`/`cpupri`
//! under `rq->lock`.
//!
//! Lock order: run-queue locks by ascending CPU number (the kernel's `double_lock_balance`),
//! then a structure's own lock, innermost. find() takes no run-queue lock, so what it returns can
//! be stale by the time the locks are held: push and pull re-check under both locks and count a
//! stale answer instead of moving the wrong task (kernel: `find_lock_later_rq` retries,
//! `pull_dl_task` re-reads under `double_lock_balance`).

use crate::queue::{QueueKind, RunQueue};
use crate::spin::{SpinGuard, SpinLock};
use crate::stats::{Op, Rec};
use crate::structures::{self, Fault, GlobalStructure, Overload, StructureKind, Violated};
use crate::task::{dl_time_before, Key, Task};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// One run queue per cache line: CPUs do not slow each other down through false sharing.
#[repr(align(64))]
struct Padded<T>(T);

/// What a queue shows the global structures: its top key, its second key, its length.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Shown {
    top: Option<Key>,
    next: Option<Key>,
    len: usize,
}

fn shown(q: &RunQueue) -> Shown {
    Shown {
        top: q.first().map(|t| t.key),
        next: q.second().map(|t| t.key),
        len: q.len(),
    }
}

pub struct Machine {
    pub m: usize,
    pub kind: StructureKind,
    rqs: Vec<Padded<SpinLock<RunQueue>>>,
    pub push: Box<dyn GlobalStructure>,
    pub pull: Box<dyn GlobalStructure>,
    overload: Arc<Overload>,
}

/// How the M highest-priority ready tasks relate to the running ones at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Global {
    /// The running tasks are the M highest-priority ready tasks.
    Holds,
    /// A CPU is idle while another has a task waiting.
    IdleWhileWaiting,
    /// A waiting task has a higher priority than a task running elsewhere.
    WaitingBeatsRunning,
}

/// The global EDF/FP invariant from each queue's top and second key (the best waiting task of a
/// queue is its second, so the best waiting task anywhere is the best second).
pub fn global_invariant(tops: &[Option<Key>], nexts: &[Option<Key>]) -> Global {
    let waiting = nexts.iter().flatten().copied().reduce(|a, b| a.min(b));
    let Some(best_waiting) = waiting else {
        return Global::Holds;
    };
    if tops.iter().any(Option::is_none) {
        return Global::IdleWhileWaiting;
    }
    let worst_running = tops.iter().flatten().copied().max();
    if worst_running.is_some_and(|w| dl_time_before(best_waiting, w)) {
        Global::WaitingBeatsRunning
    } else {
        Global::Holds
    }
}

/// Everything a check saw, for the global invariant.
pub struct Snapshot {
    pub tops: Vec<Option<Key>>,
    pub nexts: Vec<Option<Key>>,
}

impl Machine {
    pub fn new(m: usize, kind: StructureKind, queue: QueueKind, fault: Option<Fault>) -> Machine {
        let overload = Arc::new(Overload::default());
        let (push, pull) = structures::build(kind, m, fault, &overload);
        Machine {
            m,
            kind,
            rqs: (0..m)
                .map(|_| Padded(SpinLock::new(RunQueue::new(queue))))
                .collect(),
            push,
            pull,
            overload,
        }
    }

    pub fn lock(&self, cpu: usize) -> SpinGuard<'_, RunQueue> {
        self.rqs[cpu].0.lock()
    }

    /// Both queues, locked in CPU order; returned as (a's, b's). `a != b`.
    fn lock_two(&self, a: usize, b: usize) -> (SpinGuard<'_, RunQueue>, SpinGuard<'_, RunQueue>) {
        if a < b {
            let ga = self.lock(a);
            (ga, self.lock(b))
        } else {
            let gb = self.lock(b);
            (self.lock(a), gb)
        }
    }

    /// Every queue, locked in CPU order (the checker's view, §2.3.7: "periodically, all ready
    /// queues are locked").
    pub fn lock_all(&self) -> Vec<SpinGuard<'_, RunQueue>> {
        self.rqs.iter().map(|q| q.0.lock()).collect()
    }

    /// After a queue changed: tell the structures what it shows now (data_preempt on an
    /// enqueue, data_finish on a dequeue), and keep the overload mask.
    fn track(&self, cpu: usize, before: Shown, q: &RunQueue, enqueue: bool, rec: &mut Rec) {
        let after = shown(q);
        if after.top != before.top {
            match (enqueue, after.top) {
                (true, Some(k)) => {
                    let t0 = rec.begin();
                    self.push.preempt(cpu, k);
                    rec.end(Op::PushPreempt, t0);
                }
                (_, top) => {
                    let t0 = rec.begin();
                    self.push.finish(cpu, top);
                    rec.end(Op::PushFinish, t0);
                }
            }
        }
        if after.next != before.next {
            match (enqueue, after.next) {
                (true, Some(k)) => {
                    let t0 = rec.begin();
                    self.pull.preempt(cpu, k);
                    rec.end(Op::PullPreempt, t0);
                }
                (_, next) => {
                    let t0 = rec.begin();
                    self.pull.finish(cpu, next);
                    rec.end(Op::PullFinish, t0);
                }
            }
        }
        match (before.len >= 2, after.len >= 2) {
            (false, true) => self.overload.set(cpu),
            (true, false) => self.overload.clear(cpu),
            _ => {}
        }
    }

    pub fn enqueue(&self, cpu: usize, q: &mut RunQueue, t: Task, rec: &mut Rec) {
        let before = shown(q);
        let t0 = rec.begin();
        q.insert(t);
        rec.end(Op::Enqueue, t0);
        self.track(cpu, before, q, true, rec);
    }

    fn dequeue_with(
        &self,
        cpu: usize,
        q: &mut RunQueue,
        rec: &mut Rec,
        f: impl FnOnce(&mut RunQueue) -> Option<Task>,
    ) -> Option<Task> {
        let before = shown(q);
        let t0 = rec.begin();
        let t = f(q);
        rec.end(Op::Dequeue, t0);
        if t.is_some() {
            self.track(cpu, before, q, false, rec);
        }
        t
    }

    pub fn dequeue_first(&self, cpu: usize, q: &mut RunQueue, rec: &mut Rec) -> Option<Task> {
        self.dequeue_with(cpu, q, rec, RunQueue::pop_first)
    }

    pub fn dequeue_second(&self, cpu: usize, q: &mut RunQueue, rec: &mut Rec) -> Option<Task> {
        self.dequeue_with(cpu, q, rec, RunQueue::remove_second)
    }

    pub fn dequeue_id(&self, cpu: usize, q: &mut RunQueue, id: u64, rec: &mut Rec) -> Option<Task> {
        self.dequeue_with(cpu, q, rec, |q| q.remove(id))
    }

    /// Fig. 2.21 `on_activation`: enqueue locally, then pull (pre-schedule) and push
    /// (post-schedule).
    pub fn on_activation(&self, cpu: usize, task: Task, rec: &mut Rec) {
        {
            let mut q = self.lock(cpu);
            self.enqueue(cpu, &mut q, task, rec);
        }
        self.pull(cpu, rec);
        self.push_all(cpu, rec);
    }

    /// Fig. 2.21 `on_block`: the running task leaves the queue, then pull and push. With
    /// `expired_at`, only if the running task's deadline/run time ended by then (§2.3.6).
    /// Returns whether a task blocked.
    pub fn on_block(&self, cpu: usize, expired_at: Option<u64>, rec: &mut Rec) -> bool {
        {
            let mut q = self.lock(cpu);
            let Some(top) = q.first() else {
                return false;
            };
            if expired_at.is_some_and(|now| top.end_ns > now) {
                return false;
            }
            self.dequeue_first(cpu, &mut q, rec);
        }
        self.pull(cpu, rec);
        self.push_all(cpu, rec);
        true
    }

    /// Fig. 2.21 `pull()`: find the CPU whose waiting task beats this CPU's running task most,
    /// move it here. Returns whether a task moved.
    pub fn pull(&self, cpu: usize, rec: &mut Rec) -> bool {
        let t0 = rec.begin();
        let local = self.lock(cpu).first().map(|t| t.key);
        let f0 = rec.begin();
        let src = self.pull.find(local, cpu);
        rec.end(Op::PullFind, f0);
        let moved = match src {
            Some(src) if src != cpu && src < self.m => {
                let (mut here, mut there) = self.lock_two(cpu, src);
                let beats = |c: &Task| here.first().is_none_or(|l| dl_time_before(c.key, l.key));
                if there.second().is_some_and(|c| beats(&c)) {
                    if let Some(t) = self.dequeue_second(src, &mut there, rec) {
                        self.enqueue(cpu, &mut here, t, rec);
                    }
                    rec.counts.pulls += 1;
                    true
                } else {
                    rec.counts.pull_stale += 1;
                    false
                }
            }
            _ => false,
        };
        rec.end(Op::Pull, t0);
        moved
    }

    /// Fig. 2.21 `push()`, once: move this CPU's best waiting task to the CPU find names, if
    /// under both locks it still beats what runs there.
    pub fn push_once(&self, cpu: usize, rec: &mut Rec) -> bool {
        let t0 = rec.begin();
        let next = self.lock(cpu).second();
        let moved = match next {
            None => false,
            Some(task) => {
                let f0 = rec.begin();
                let dest = self.push.find(Some(task.key), cpu);
                rec.end(Op::PushFind, f0);
                match dest {
                    Some(d) if d != cpu && d < self.m => {
                        let (mut here, mut there) = self.lock_two(cpu, d);
                        let still_ours = here.second().map(|t| t.id) == Some(task.id);
                        let beats = there
                            .first()
                            .is_none_or(|c| dl_time_before(task.key, c.key));
                        if still_ours && beats {
                            if let Some(t) = self.dequeue_second(cpu, &mut here, rec) {
                                self.enqueue(d, &mut there, t, rec);
                            }
                            rec.counts.pushes += 1;
                            true
                        } else {
                            rec.counts.push_stale += 1;
                            false
                        }
                    }
                    _ => false,
                }
            }
        };
        rec.end(Op::Push, t0);
        moved
    }

    /// Post-schedule push, repeated while it moves a task (the kernel's `push_dl_tasks`:
    /// `while (push_dl_task(rq))`), at most M times.
    pub fn push_all(&self, cpu: usize, rec: &mut Rec) {
        for _ in 0..self.m {
            if !self.push_once(cpu, rec) {
                break;
            }
        }
    }

    /// `data_check` on everything, with every queue locked: each queue's own order, the push
    /// structure against the tops, the pull structure against the seconds, the overload mask
    /// against the lengths. The first broken invariant, or what the queues show.
    pub fn check_locked(&self, qs: &[SpinGuard<'_, RunQueue>]) -> Result<Snapshot, Violated> {
        let mut tops = Vec::with_capacity(self.m);
        let mut nexts = Vec::with_capacity(self.m);
        let mut over = 0u64;
        for (cpu, q) in qs.iter().enumerate() {
            q.check()
                .map_err(|e| Violated::new(format!("run queue {cpu} order"), e))?;
            let s = shown(q);
            tops.push(s.top);
            nexts.push(s.next);
            if s.len >= 2 {
                over |= 1 << cpu;
            }
        }
        self.push.check(&tops)?;
        self.pull.check(&nexts)?;
        let (mask, count) = (
            self.overload.mask.load(Relaxed),
            self.overload.count.load(Relaxed),
        );
        if mask != over || count != over.count_ones() {
            let lens: Vec<usize> = qs.iter().map(|q| q.len()).collect();
            return Err(Violated::new(
                format!("overloaded flag: mask {mask:#x} count {count}, the queues with a waiting task are {over:#x}"),
                format!("queue lengths {lens:?}"),
            ));
        }
        Ok(Snapshot { tops, nexts })
    }

    /// Every queue's tasks, highest priority first (replay results, tests).
    pub fn queues(&self) -> Vec<Vec<Task>> {
        self.lock_all().iter().map(|q| q.sorted()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::OpClock;
    use crate::structures::ALL_STRUCTURES;

    fn t(id: u64, key: u64) -> Task {
        Task {
            id,
            key,
            end_ns: u64::MAX,
        }
    }

    fn ids(m: &Machine) -> Vec<Vec<u64>> {
        m.queues()
            .iter()
            .map(|q| q.iter().map(|t| t.id).collect())
            .collect()
    }

    /// Hand-checked, two CPUs, for every configuration (FP-style small keys work under all,
    /// cpupri included: keys 10..=60 are real-time levels):
    /// - CPU 0 activates A(30): it runs on 0; push finds nothing to push.
    /// - CPU 0 activates B(10): B preempts A on 0; push moves A (waiting) to idle CPU 1.
    /// - CPU 0 activates C(20): C waits on 0 behind B; push finds CPU 1 running A(30), later
    ///   than 20: C moves to 1 and preempts A there. Queues: 0 [B], 1 [C, A].
    /// - CPU 0 blocks B: 0 is idle; its pull takes A (waiting on 1). Queues: 0 [A], 1 [C].
    #[test]
    fn fig_2_21_by_hand() {
        for kind in ALL_STRUCTURES {
            let m = Machine::new(2, kind, QueueKind::Heap, None);
            let mut rec = Rec::new(OpClock::Monotonic);
            m.on_activation(0, t(1, 30), &mut rec);
            assert_eq!(ids(&m), vec![vec![1], vec![]], "{kind:?}");
            m.on_activation(0, t(2, 10), &mut rec);
            assert_eq!(ids(&m), vec![vec![2], vec![1]], "{kind:?}");
            m.on_activation(0, t(3, 20), &mut rec);
            assert_eq!(ids(&m), vec![vec![2], vec![3, 1]], "{kind:?}");
            assert!(m.on_block(0, None, &mut rec));
            assert_eq!(ids(&m), vec![vec![1], vec![3]], "{kind:?}");
            assert_eq!(rec.counts.pushes, 2, "{kind:?}");
            assert_eq!(rec.counts.pulls, 1, "{kind:?}");
            let g = m.lock_all();
            let s = m.check_locked(&g).unwrap();
            assert_eq!(s.tops, vec![Some(30), Some(20)]);
            assert_eq!(global_invariant(&s.tops, &s.nexts), Global::Holds);
            drop(g);
            // Expiry: only a task whose end has passed blocks.
            assert!(!m.on_block(1, Some(0), &mut rec));
            let ops = rec.ops();
            for op in [
                "enqueue",
                "dequeue",
                "push",
                "pull",
                "push_find",
                "push_modify",
            ] {
                assert!(
                    ops.iter().any(|o| o.op == op && o.count > 0),
                    "{kind:?} {op}"
                );
            }
        }
    }

    #[test]
    fn global_invariant_by_hand() {
        use Global::*;
        assert_eq!(global_invariant(&[Some(5), None], &[None, None]), Holds);
        assert_eq!(
            global_invariant(&[Some(5), None], &[Some(7), None]),
            IdleWhileWaiting
        );
        assert_eq!(
            global_invariant(&[Some(5), Some(9)], &[Some(7), None]),
            WaitingBeatsRunning
        );
        assert_eq!(
            global_invariant(&[Some(5), Some(7)], &[Some(7), None]),
            Holds,
            "a tie is not a violation"
        );
    }

    #[test]
    fn checker_sees_a_structure_that_disagrees() {
        let m = Machine::new(2, StructureKind::Cpudl, QueueKind::Btree, None);
        let mut rec = Rec::new(OpClock::Monotonic);
        m.on_activation(1, t(1, 30), &mut rec);
        // A structure update the queues did not make.
        m.push.preempt(0, 99);
        let g = m.lock_all();
        let v = m.check_locked(&g).err().unwrap();
        assert!(v.invariant.contains("cpudl content: cpu 0"), "{v:?}");
    }
}
