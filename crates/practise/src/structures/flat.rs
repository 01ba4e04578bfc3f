//! `flat`, our alternative: one atomic word per CPU holding the key it shows (its running task
//! for push, its best waiting task for pull), no lock at all. Modify is one store, O(1); find
//! scans every CPU's word, O(M) — the opposite trade-off to cpudl (a locked O(log M) heap update
//! for an O(1) find). With M a few dozen, the scan is a handful of cache lines; the question the
//! lab answers is where that beats a global lock under contention.
//!
//! Memory ordering: each word is written only under its CPU's run-queue lock (so writes to one
//! word never race) and read without a lock. Relaxed both ways: the word is self-contained and a
//! find's answer is re-validated under both run-queue locks before a task moves, as for every
//! structure here; this is the kernel's `WRITE_ONCE`/`READ_ONCE` of `earliest_dl.curr`.

use super::{fmt_keys, GlobalStructure, Role, Violated};
use crate::task::{dl_time_before, first_after, Key, EMPTY};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub struct Flat {
    role: Role,
    slots: Vec<AtomicU64>,
}

impl Flat {
    pub fn new(m: usize, role: Role) -> Flat {
        Flat {
            role,
            slots: (0..m).map(|_| AtomicU64::new(EMPTY)).collect(),
        }
    }
    fn get(&self, cpu: usize) -> Option<Key> {
        let w = self.slots[cpu].load(Relaxed);
        (w != EMPTY).then_some(w)
    }
}

impl GlobalStructure for Flat {
    fn name(&self) -> &'static str {
        "flat"
    }

    fn preempt(&self, cpu: usize, key: Key) {
        self.slots[cpu].store(key, Relaxed);
    }

    fn finish(&self, cpu: usize, key: Option<Key>) {
        self.slots[cpu].store(key.unwrap_or(EMPTY), Relaxed);
    }

    fn find(&self, key: Option<Key>, this_cpu: usize) -> Option<usize> {
        match self.role {
            // A free CPU (first after this one), else the latest key if the task's is earlier.
            Role::Push => {
                let mut free = 0u64;
                let mut worst: Option<(usize, Key)> = None;
                for c in (0..self.slots.len()).filter(|&c| c != this_cpu) {
                    match self.get(c) {
                        None => free |= 1 << c,
                        Some(k) => {
                            if worst.is_none_or(|(_, w)| dl_time_before(w, k)) {
                                worst = Some((c, k));
                            }
                        }
                    }
                }
                if free != 0 {
                    return first_after(free, this_cpu);
                }
                let (c, w) = worst?;
                key.is_some_and(|k| dl_time_before(k, w)).then_some(c)
            }
            // The earliest waiting key elsewhere, if it beats this CPU's running task.
            Role::Pull => {
                let mut best: Option<(usize, Key)> = None;
                for c in (0..self.slots.len()).filter(|&c| c != this_cpu) {
                    if let Some(k) = self.get(c) {
                        if best.is_none_or(|(_, b)| dl_time_before(k, b)) {
                            best = Some((c, k));
                        }
                    }
                }
                let (c, b) = best?;
                key.is_none_or(|k| dl_time_before(b, k)).then_some(c)
            }
        }
    }

    fn check(&self, expected: &[Option<Key>]) -> Result<(), Violated> {
        let got: Vec<Option<Key>> = (0..self.slots.len()).map(|c| self.get(c)).collect();
        for (cpu, want) in expected.iter().enumerate().take(got.len()) {
            if got[cpu] != *want {
                return Err(Violated::new(
                    format!(
                        "flat ({}) content: cpu {cpu} holds {:?}, its queue shows {want:?}",
                        if self.role == Role::Push {
                            "push"
                        } else {
                            "pull"
                        },
                        got[cpu]
                    ),
                    format!(
                        "slots {}; queues show {}",
                        fmt_keys(&got),
                        fmt_keys(expected)
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_and_pull_finds_by_hand() {
        let p = Flat::new(3, Role::Push);
        p.preempt(0, 100);
        assert_eq!(p.find(Some(5), 0), Some(1));
        p.preempt(1, 300);
        p.preempt(2, 200);
        assert_eq!(p.find(Some(250), 0), Some(1));
        assert_eq!(p.find(Some(300), 0), None);
        p.check(&[Some(100), Some(300), Some(200)]).unwrap();
        let q = Flat::new(3, Role::Pull);
        q.preempt(1, 70);
        q.preempt(2, 40);
        assert_eq!(q.find(None, 0), Some(2));
        assert_eq!(q.find(Some(50), 2), None, "70 does not beat 50");
        assert_eq!(q.find(Some(80), 2), Some(1));
        q.finish(2, None);
        assert!(q.check(&[None, Some(70), Some(40)]).is_err());
    }
}
