//! `scan`, the kernel's pull without a structure (kernel/sched/deadline.c `pull_dl_task`,
//! kernel/sched/rt.c `pull_rt_task`): look at the overloaded CPUs only (`dlo_mask`/`rto_mask`,
//! [`super::Overload`]) and read each one's earliest waiting key (`dl_rq->earliest_dl.next`)
//! without its lock. §2.3.4: "no special data structure is used to speed up this operation".
//!
//! Its preempt/finish publish the CPU's earliest waiting key, as the kernel updates
//! `earliest_dl.next` under the run-queue lock; readers load it racily (`READ_ONCE` → Relaxed),
//! and the puller re-checks under both locks before it moves a task.

use super::{fmt_keys, GlobalStructure, Overload, Violated};
use crate::task::{dl_time_before, Key, EMPTY};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;

pub struct Scan {
    next: Vec<AtomicU64>,
    overload: Arc<Overload>,
}

impl Scan {
    pub fn new(m: usize, overload: Arc<Overload>) -> Scan {
        Scan {
            next: (0..m).map(|_| AtomicU64::new(EMPTY)).collect(),
            overload,
        }
    }
}

impl GlobalStructure for Scan {
    fn name(&self) -> &'static str {
        "scan"
    }

    fn preempt(&self, cpu: usize, key: Key) {
        self.next[cpu].store(key, Relaxed);
    }

    fn finish(&self, cpu: usize, key: Option<Key>) {
        self.next[cpu].store(key.unwrap_or(EMPTY), Relaxed);
    }

    fn find(&self, key: Option<Key>, this_cpu: usize) -> Option<usize> {
        // `if (likely(!dl_overloaded(this_rq))) return; smp_rmb();` — Acquire on the count pairs
        // with the Release in Overload::set, so the mask read next holds the CPU's bit.
        if self.overload.count.load(Acquire) == 0 {
            return None;
        }
        let mut mask = self.overload.mask.load(Relaxed) & !(1u64 << this_cpu);
        let mut best: Option<(usize, Key)> = None;
        while mask != 0 {
            let c = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let w = self.next.get(c).map_or(EMPTY, |n| n.load(Relaxed));
            if w == EMPTY {
                continue;
            }
            if key.is_none_or(|k| dl_time_before(w, k))
                && best.is_none_or(|(_, b)| dl_time_before(w, b))
            {
                best = Some((c, w));
            }
        }
        best.map(|(c, _)| c)
    }

    fn check(&self, expected: &[Option<Key>]) -> Result<(), Violated> {
        for (cpu, want) in expected.iter().enumerate().take(self.next.len()) {
            let w = self.next[cpu].load(Relaxed);
            let got = (w != EMPTY).then_some(w);
            if got != *want {
                let all: Vec<Option<Key>> = self
                    .next
                    .iter()
                    .map(|n| Some(n.load(Relaxed)).filter(|&w| w != EMPTY))
                    .collect();
                return Err(Violated::new(
                    format!("scan earliest-next: cpu {cpu} shows {got:?}, its queue's waiting task is {want:?}"),
                    format!("next {}; queues show {}", fmt_keys(&all), fmt_keys(expected)),
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
    fn scans_only_overloaded_cpus() {
        let o = Arc::new(Overload::default());
        let s = Scan::new(3, o.clone());
        s.preempt(1, 30);
        s.preempt(2, 20);
        assert_eq!(s.find(None, 0), None, "no CPU is marked overloaded");
        o.set(1);
        assert_eq!(s.find(None, 0), Some(1));
        o.set(2);
        assert_eq!(s.find(Some(25), 0), Some(2));
        assert_eq!(s.find(Some(15), 0), None);
        o.clear(2);
        assert_eq!(s.find(Some(40), 0), Some(1));
        s.check(&[None, Some(30), Some(20)]).unwrap();
    }
}
