//! cpupri, the SCHED_FIFO/RR push structure (thesis §2.2.1: "a 2 dimensional bitmap: the first
//! dimension is for priority class and the second for CPUs in that class"), with the semantics
//! of the kernel's kernel/sched/cpupri.c: for each priority level a count and a CPU mask, and
//! for each CPU its current level. A push finds the lowest level below the task's with a CPU in
//! it: O(levels), no lock.
//!
//! Levels (cpupri.h): `CPUPRI_NORMAL` 0 (no real-time task: idle or SCHED_NORMAL),
//! 1..=99 the real-time priorities (higher is more urgent), `CPUPRI_HIGHER` 100 (a deadline task
//! runs there). `convert_prio` maps a task's `prio` to a level; here from the key, `prio + 1`.
//!
//! Locking (Table 2.3, Fig. 2.23): no lock; `cpupri_set` is called under the CPU's run-queue lock
//! and orders its atomics so that `cpupri_find` never misses a CPU that is moving between levels:
//! the new level's mask bit and count are set before the old level's count and bit are cleared.

use super::{fmt_keys, GlobalStructure, Violated};
use crate::task::{cpu_mask, first_after, Key};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering::*};

pub const CPUPRI_NORMAL: usize = 0;
pub const CPUPRI_HIGHER: usize = 100;
pub const CPUPRI_NR_PRIORITIES: usize = 101;

/// `convert_prio`, from a key (`prio + 1`; `None`: nothing real-time runs).
pub fn level(key: Option<Key>) -> usize {
    match key {
        None => CPUPRI_NORMAL,
        Some(0) => CPUPRI_HIGHER,
        // prio 0..=98 → 99..=1
        Some(k) if k <= 99 => 100 - k as usize,
        // prio 99 (MAX_RT_PRIO-1, the "no RT task" value) and SCHED_NORMAL
        Some(_) => CPUPRI_NORMAL,
    }
}

#[derive(Default)]
struct PriVec {
    count: AtomicI32,
    mask: AtomicU64,
}

pub struct CpuPri {
    m: usize,
    pri_to_cpu: Vec<PriVec>,
    /// Written only by the CPU's own updates (under its run-queue lock); a plain `int` in the
    /// kernel, an atomic here only so that the checker may read it.
    cpu_to_pri: Vec<AtomicI32>,
}

impl CpuPri {
    /// `cpupri_init`, then every CPU at `CPUPRI_NORMAL` (what `rq_online_rt` sets).
    pub fn new(m: usize) -> CpuPri {
        let pri_to_cpu: Vec<PriVec> = (0..CPUPRI_NR_PRIORITIES)
            .map(|_| PriVec::default())
            .collect();
        pri_to_cpu[CPUPRI_NORMAL].mask.store(cpu_mask(m), Relaxed);
        pri_to_cpu[CPUPRI_NORMAL].count.store(m as i32, Relaxed);
        CpuPri {
            m,
            pri_to_cpu,
            cpu_to_pri: (0..m)
                .map(|_| AtomicI32::new(CPUPRI_NORMAL as i32))
                .collect(),
        }
    }

    /// `cpupri_set`.
    fn set(&self, cpu: usize, newpri: usize) {
        let oldpri = self.cpu_to_pri[cpu].load(Relaxed) as usize;
        if newpri == oldpri {
            return;
        }
        let bit = 1u64 << cpu;
        // The kernel: cpumask_set_cpu(); smp_mb__before_atomic(); atomic_inc(&vec->count).
        // A SeqCst read-modify-write is a full barrier on both sides (x86: a locked
        // instruction, where the kernel's smp_mb__{before,after}_atomic() are only compiler
        // barriers for the same reason), so the bit is visible before the count.
        let v = &self.pri_to_cpu[newpri];
        v.mask.fetch_or(bit, SeqCst);
        v.count.fetch_add(1, SeqCst);
        // The kernel: smp_mb__after_atomic(); atomic_dec(&vec->count); smp_mb__after_atomic();
        // cpumask_clear_cpu(): the new level is complete before the old one loses the CPU, and
        // the count drops before the bit, so a finder that sees a count of 0 skips a level whose
        // bit may still be set, never the other way round.
        let o = &self.pri_to_cpu[oldpri];
        o.count.fetch_sub(1, SeqCst);
        o.mask.fetch_and(!bit, SeqCst);
        self.cpu_to_pri[cpu].store(newpri as i32, Relaxed);
    }
}

impl GlobalStructure for CpuPri {
    fn name(&self) -> &'static str {
        "cpupri"
    }

    fn preempt(&self, cpu: usize, key: Key) {
        self.set(cpu, level(Some(key)));
    }

    fn finish(&self, cpu: usize, key: Option<Key>) {
        self.set(cpu, level(key));
    }

    /// `cpupri_find` / `__cpupri_find`: the lowest level below the task's whose count is
    /// non-zero (`atomic_read`, then `smp_rmb()` before the mask: Acquire on the count) and whose
    /// mask has a CPU.
    fn find(&self, key: Option<Key>, this_cpu: usize) -> Option<usize> {
        let task_pri = level(key);
        let others = cpu_mask(self.m) & !(1u64 << this_cpu);
        for v in &self.pri_to_cpu[..task_pri] {
            if v.count.load(Acquire) == 0 {
                continue;
            }
            let mask = v.mask.load(Relaxed) & others;
            if mask != 0 {
                return first_after(mask, this_cpu);
            }
        }
        None
    }

    fn check(&self, expected: &[Option<Key>]) -> Result<(), Violated> {
        let levels: Vec<usize> = (0..self.m)
            .map(|c| self.cpu_to_pri[c].load(Relaxed) as usize)
            .collect();
        let state = || {
            let vecs: Vec<String> = self
                .pri_to_cpu
                .iter()
                .enumerate()
                .filter(|(_, v)| v.count.load(Relaxed) != 0 || v.mask.load(Relaxed) != 0)
                .map(|(i, v)| {
                    format!(
                        "{i}:count {} mask {:#x}",
                        v.count.load(Relaxed),
                        v.mask.load(Relaxed)
                    )
                })
                .collect();
            format!(
                "cpu_to_pri {levels:?}; pri_to_cpu [{}]; queues show {}",
                vecs.join(", "),
                fmt_keys(expected)
            )
        };
        for (cpu, want) in expected.iter().enumerate().take(self.m) {
            if levels[cpu] != level(*want) {
                return Err(Violated::new(
                    format!(
                        "cpupri vs highest task: cpu {cpu} is at level {}, its highest task {want:?} is level {}",
                        levels[cpu],
                        level(*want)
                    ),
                    state(),
                ));
            }
        }
        for (i, v) in self.pri_to_cpu.iter().enumerate() {
            let want: u64 = (0..self.m)
                .filter(|&c| levels[c] == i)
                .fold(0, |a, c| a | 1 << c);
            let (count, mask) = (v.count.load(Relaxed), v.mask.load(Relaxed));
            if mask != want || count != want.count_ones() as i32 {
                return Err(Violated::new(
                    format!("cpupri level {i}: count {count}, mask {mask:#x}; the CPUs at that level are {want:#x}"),
                    state(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn levels_follow_convert_prio() {
        assert_eq!(level(None), 0);
        assert_eq!(level(Some(0)), 100, "deadline task (prio -1)");
        assert_eq!(level(Some(1)), 99, "prio 0 = rt_priority 99");
        assert_eq!(level(Some(99)), 1, "prio 98 = rt_priority 1");
        assert_eq!(level(Some(100)), 0, "prio 99: no RT task");
        assert_eq!(level(Some(121)), 0, "SCHED_NORMAL nice 0");
    }

    #[test]
    fn find_takes_the_lowest_level_below_the_task() {
        let p = CpuPri::new(3);
        // All at NORMAL: any other CPU.
        assert_eq!(p.find(Some(50), 0), Some(1));
        p.preempt(0, 10); // level 90
        p.preempt(1, 60); // level 40
        p.preempt(2, 30); // level 70
                          // A task of key 20 (level 80) from CPU 0: lowest level below 80 is 40 (CPU 1).
        assert_eq!(p.find(Some(20), 0), Some(1));
        // key 61 (level 39): nothing below.
        assert_eq!(p.find(Some(61), 0), None);
        p.finish(1, None);
        assert_eq!(p.find(Some(61), 0), Some(1));
        p.check(&[Some(10), None, Some(30)]).unwrap();
        assert!(p.check(&[Some(10), Some(5), Some(30)]).is_err());
    }

    proptest! {
        /// Against a per-CPU level array: check passes, find returns a CPU at the lowest level
        /// below the task's.
        #[test]
        fn matches_an_array(m in 1usize..9, ops in proptest::collection::vec((0usize..8, proptest::option::of(1u64..101), 1u64..101), 0..120)) {
            let p = CpuPri::new(m);
            let mut model: Vec<Option<u64>> = vec![None; m];
            for (c, k, probe) in ops {
                if c >= m { continue; }
                match k { Some(k) => p.preempt(c, k), None => p.finish(c, None) }
                model[c] = k;
                prop_assert!(p.check(&model).is_ok());
                let this = (c + 1) % m;
                let want = (0..m).filter(|&x| x != this).map(|x| level(model[x])).filter(|&l| l < level(Some(probe))).min();
                let got = p.find(Some(probe), this);
                prop_assert_eq!(got.map(|g| level(model[g])), want);
                prop_assert!(got != Some(this));
            }
        }
    }
}
