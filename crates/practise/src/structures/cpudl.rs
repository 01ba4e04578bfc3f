//! cpudl, the SCHED_DEADLINE push structure (thesis §2.2.6, Figs. 2.13–2.15), with the
//! semantics of the kernel's kernel/sched/cpudeadline.c: a max-heap of the deadlines of the
//! tasks running on each CPU, an index array from CPU to heap position so that a CPU's entry
//! can be updated in place, and a mask of the free CPUs (no deadline task). `find` returns a
//! free CPU if there is one, else the CPU running the latest deadline if the task's deadline is
//! earlier.
//!
//! The same code with the order reversed is the thesis' proposed *pull* structure (§2.3.4: "a
//! min-heap for reducing the duration of the pull operation"; Fig. 2.27): a min-heap of each
//! CPU's earliest waiting deadline, whose root is the best task to pull.
//!
//! Locking (Table 2.3): every update takes the heap's spin lock (`raw_spin_lock_irqsave` in
//! `cpudl_set`/`cpudl_clear`); `find` takes no lock, as `cpudl_find` does not. The kernel reads
//! `elements[0].cpu` and `.dl` as plain racy loads; Rust forbids that on memory being written, so
//! the root (and, for the pull heap, the runner-up) is published into one atomic word per update,
//! CPU and key packed together — a reader cannot pair one update's CPU with another's key.

use super::{fmt_keys, Fault, GlobalStructure, Violated};
use crate::spin::SpinLock;
use crate::task::{cpu_mask, dl_time_before, first_after, pack, unpack, Key, EMPTY};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

const IDX_INVALID: i32 = -1;

#[derive(Clone, Copy, Debug, Default)]
struct Item {
    dl: Key,
    cpu: usize,
}

/// The locked part: `struct cpudl` minus the lock and the free mask. The kernel shares one
/// `elements[]` array for heap slots (`.dl`, `.cpu`) and the index (`.idx` of CPU i is in
/// `elements[i]`); two arrays here, same content.
struct Heap {
    size: usize,
    elements: Vec<Item>,
    idx: Vec<i32>,
}

pub struct CpuDl {
    name: &'static str,
    /// Max-heap (cpudl, push) or min-heap (the pull heap).
    max: bool,
    m: usize,
    heap: SpinLock<Heap>,
    /// CPUs not in the heap. Updated under the heap lock with atomic bit operations
    /// (`cpumask_set_cpu`/`cpumask_clear_cpu` are `set_bit`/`clear_bit`), read without it.
    free_cpus: AtomicU64,
    root: AtomicU64,
    runner_up: AtomicU64,
    fault: Option<Fault>,
}

#[inline]
fn parent(i: usize) -> usize {
    (i - 1) / 2
}
#[inline]
fn left_child(i: usize) -> usize {
    2 * i + 1
}
#[inline]
fn right_child(i: usize) -> usize {
    2 * i + 2
}

impl CpuDl {
    /// `cpudl_init` for the push side: every CPU free, the heap empty.
    pub fn push_heap(m: usize, fault: Option<Fault>) -> CpuDl {
        Self::new("cpudl", true, m, fault)
    }

    /// The thesis' pull min-heap.
    pub fn pull_heap(m: usize) -> CpuDl {
        Self::new("pullheap", false, m, None)
    }

    fn new(name: &'static str, max: bool, m: usize, fault: Option<Fault>) -> CpuDl {
        CpuDl {
            name,
            max,
            m,
            heap: SpinLock::new(Heap {
                size: 0,
                elements: vec![Item::default(); m],
                idx: vec![IDX_INVALID; m],
            }),
            free_cpus: AtomicU64::new(cpu_mask(m)),
            root: AtomicU64::new(EMPTY),
            runner_up: AtomicU64::new(EMPTY),
            fault,
        }
    }

    /// `a` belongs above `b`: later deadline in the max-heap (`dl_time_before(b, a)`), earlier in
    /// the min-heap.
    #[inline]
    fn above(&self, a: Key, b: Key) -> bool {
        if self.max {
            dl_time_before(b, a)
        } else {
            dl_time_before(a, b)
        }
    }

    /// `cpudl_heapify_down`: the element at `idx` sinks; children move up into the hole and the
    /// saved element is written once at the end.
    fn heapify_down(&self, h: &mut Heap, mut idx: usize) {
        let orig = h.elements[idx];
        if left_child(idx) >= h.size {
            return;
        }
        loop {
            let (l, r) = (left_child(idx), right_child(idx));
            let mut largest = idx;
            let mut largest_dl = orig.dl;
            if l < h.size && self.above(h.elements[l].dl, orig.dl) {
                largest = l;
                largest_dl = h.elements[l].dl;
            }
            let right_considered = self.fault != Some(Fault::CpudlLeftOnly);
            if right_considered && r < h.size && self.above(h.elements[r].dl, largest_dl) {
                largest = r;
            }
            if largest == idx {
                break;
            }
            h.elements[idx] = h.elements[largest];
            let c = h.elements[idx].cpu;
            h.idx[c] = idx as i32;
            idx = largest;
        }
        h.elements[idx] = orig;
        h.idx[orig.cpu] = idx as i32;
    }

    /// `cpudl_heapify_up`: the element at `idx` rises past every parent it is not below.
    fn heapify_up(&self, h: &mut Heap, mut idx: usize) {
        let orig = h.elements[idx];
        if idx == 0 {
            return;
        }
        loop {
            let p = parent(idx);
            if self.above(h.elements[p].dl, orig.dl) {
                break;
            }
            h.elements[idx] = h.elements[p];
            let c = h.elements[idx].cpu;
            h.idx[c] = idx as i32;
            idx = p;
            if idx == 0 {
                break;
            }
        }
        h.elements[idx] = orig;
        h.idx[orig.cpu] = idx as i32;
    }

    /// `cpudl_heapify`: up if the element now belongs above its parent, else down.
    fn heapify(&self, h: &mut Heap, idx: usize) {
        if idx > 0 && self.above(h.elements[idx].dl, h.elements[parent(idx)].dl) {
            self.heapify_up(h, idx);
        } else {
            self.heapify_down(h, idx);
        }
    }

    /// `cpudl_set`: insert the CPU or update its key in place.
    fn set(&self, cpu: usize, dl: Key) {
        let mut h = self.heap.lock();
        let old_idx = h.idx[cpu];
        if old_idx == IDX_INVALID {
            let new_idx = h.size;
            h.size += 1;
            h.elements[new_idx] = Item { dl, cpu };
            h.idx[cpu] = new_idx as i32;
            self.heapify_up(&mut h, new_idx);
            self.free_cpus.fetch_and(!(1u64 << cpu), Relaxed);
        } else {
            h.elements[old_idx as usize].dl = dl;
            self.heapify(&mut h, old_idx as usize);
        }
        self.publish(&h);
    }

    /// `cpudl_clear`: the last element fills the CPU's slot and is re-heapified. (When the CPU
    /// is the last element, the kernel heapifies index `size`, past the end: that reads the
    /// stale slot and returns at once, as here.)
    fn clear(&self, cpu: usize) {
        let mut h = self.heap.lock();
        let old_idx = h.idx[cpu];
        if old_idx != IDX_INVALID {
            let old_idx = old_idx as usize;
            let last = h.elements[h.size - 1];
            h.elements[old_idx] = last;
            h.size -= 1;
            h.idx[last.cpu] = old_idx as i32;
            h.idx[cpu] = IDX_INVALID;
            self.heapify(&mut h, old_idx);
            self.free_cpus.fetch_or(1u64 << cpu, Relaxed);
        }
        self.publish(&h);
    }

    /// The words `find` reads. Relaxed: each word is self-contained, nothing else is read
    /// through it, and every find is re-validated under both run-queue locks before a task
    /// moves (the kernel's `find_lock_later_rq` re-checks the same way).
    fn publish(&self, h: &Heap) {
        let (root, runner) = Self::top_two(self, h);
        self.root.store(root, Relaxed);
        self.runner_up.store(runner, Relaxed);
    }

    fn top_two(&self, h: &Heap) -> (u64, u64) {
        let w = |i: usize| pack(h.elements[i].cpu, h.elements[i].dl);
        let root = if h.size > 0 { w(0) } else { EMPTY };
        let runner = match h.size {
            0 | 1 => EMPTY,
            2 => w(1),
            _ => {
                if self.above(h.elements[2].dl, h.elements[1].dl) {
                    w(2)
                } else {
                    w(1)
                }
            }
        };
        (root, runner)
    }

    fn dump(&self, h: &Heap) -> String {
        let items: Vec<String> = (0..h.size)
            .map(|i| format!("c{}:{}", h.elements[i].cpu, h.elements[i].dl))
            .collect();
        let idx: Vec<String> = h.idx.iter().map(|i| i.to_string()).collect();
        format!(
            "heap (size {}) [{}], cpu_to_idx [{}], free_cpus {:#x}",
            h.size,
            items.join(" "),
            idx.join(" "),
            self.free_cpus.load(Relaxed)
        )
    }
}

impl GlobalStructure for CpuDl {
    fn name(&self) -> &'static str {
        self.name
    }

    fn preempt(&self, cpu: usize, key: Key) {
        self.set(cpu, key);
    }

    fn finish(&self, cpu: usize, key: Option<Key>) {
        match key {
            Some(k) => self.set(cpu, k),
            None => self.clear(cpu),
        }
    }

    fn find(&self, key: Option<Key>, this_cpu: usize) -> Option<usize> {
        if self.max {
            // cpudl_find: a free CPU first (kernel: `cpumask_and(later_mask, free_cpus, …)`),
            // then the latest-deadline CPU if the task's deadline is earlier.
            let free = self.free_cpus.load(Relaxed) & cpu_mask(self.m) & !(1u64 << this_cpu);
            if free != 0 {
                return first_after(free, this_cpu);
            }
            let (cpu, dl) = unpack(self.root.load(Relaxed))?;
            (cpu != this_cpu && key.is_some_and(|k| dl_time_before(k, dl))).then_some(cpu)
        } else {
            // The pull heap: the earliest waiting deadline elsewhere; if the root is this CPU's
            // own, the runner-up (the better child of the root) is the best elsewhere.
            let mut w = self.root.load(Relaxed);
            if unpack(w).is_some_and(|(c, _)| c == this_cpu) {
                w = self.runner_up.load(Relaxed);
            }
            let (cpu, dl) = unpack(w)?;
            (cpu != this_cpu && key.is_none_or(|k| dl_time_before(dl, k))).then_some(cpu)
        }
    }

    fn check(&self, expected: &[Option<Key>]) -> Result<(), Violated> {
        let h = self.heap.lock();
        let name = self.name;
        let state = || format!("{}; queues show {}", self.dump(&h), fmt_keys(expected));
        // The heap property (§2.3.7: "if B is a child node of A, then deadline(A) ≥
        // deadline(B)"; reversed for the min-heap).
        for i in 1..h.size {
            let p = parent(i);
            if self.above(h.elements[i].dl, h.elements[p].dl) {
                return Err(Violated::new(
                    format!("{name} heap property: elements[{i}] (cpu {}, key {}) belongs above its parent elements[{p}] (cpu {}, key {})",
                        h.elements[i].cpu, h.elements[i].dl, h.elements[p].cpu, h.elements[p].dl),
                    state(),
                ));
            }
        }
        // Heap/index consistency: each slot's CPU points back at the slot, and only heap CPUs
        // have an index.
        for i in 0..h.size {
            let c = h.elements[i].cpu;
            if c >= self.m || h.idx[c] != i as i32 {
                return Err(Violated::new(
                    format!("{name} heap/index consistency: elements[{i}] holds cpu {c} but cpu_to_idx[{c}] is {}",
                        h.idx.get(c).copied().unwrap_or(IDX_INVALID)),
                    state(),
                ));
            }
        }
        let in_heap = h.idx.iter().filter(|&&i| i != IDX_INVALID).count();
        if in_heap != h.size {
            return Err(Violated::new(
                format!(
                    "{name} heap/index consistency: {in_heap} CPUs have an index, size is {}",
                    h.size
                ),
                state(),
            ));
        }
        // Content: each CPU's entry is its queue's key, and the free mask is the complement.
        let mut free = 0u64;
        for (cpu, want) in expected.iter().enumerate().take(self.m) {
            let got = (h.idx[cpu] != IDX_INVALID).then(|| h.elements[h.idx[cpu] as usize].dl);
            if got != *want {
                return Err(Violated::new(
                    format!("{name} content: cpu {cpu} holds {got:?}, its queue shows {want:?}"),
                    state(),
                ));
            }
            if want.is_none() {
                free |= 1 << cpu;
            }
        }
        if self.free_cpus.load(Relaxed) & cpu_mask(self.m) != free {
            return Err(Violated::new(
                format!(
                    "{name} free_cpus: {:#x}, the CPUs outside the heap are {free:#x}",
                    self.free_cpus.load(Relaxed)
                ),
                state(),
            ));
        }
        let (root, runner) = self.top_two(&h);
        if self.root.load(Relaxed) != root || self.runner_up.load(Relaxed) != runner {
            return Err(Violated::new(
                format!(
                    "{name} published root: {:?}/{:?}, the heap's top is {:?}/{:?}",
                    unpack(self.root.load(Relaxed)),
                    unpack(self.runner_up.load(Relaxed)),
                    unpack(root),
                    unpack(runner)
                ),
                state(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn find_prefers_free_then_latest_deadline() {
        let d = CpuDl::push_heap(3, None);
        // Everything free: any CPU but this one.
        assert_eq!(d.find(Some(100), 0), Some(1));
        d.preempt(0, 100);
        d.preempt(1, 300);
        assert_eq!(d.find(Some(50), 0), Some(2), "CPU 2 is free");
        d.preempt(2, 200);
        // No free CPU: the latest deadline (300, CPU 1) if the task's is earlier.
        assert_eq!(d.find(Some(250), 0), Some(1));
        assert_eq!(d.find(Some(300), 0), None, "not strictly earlier");
        d.finish(1, Some(150));
        assert_eq!(d.find(Some(199), 0), Some(2));
        d.finish(2, None);
        assert_eq!(d.find(Some(10_000), 0), Some(2));
        d.check(&[Some(100), Some(150), None]).unwrap();
    }

    #[test]
    fn pull_heap_finds_the_earliest_waiting_elsewhere() {
        let p = CpuDl::pull_heap(3);
        assert_eq!(p.find(None, 0), None, "nothing waits anywhere");
        p.preempt(0, 40);
        p.preempt(1, 70);
        // CPU 0 holds the root: the runner-up (CPU 1) is the best elsewhere.
        assert_eq!(p.find(None, 0), Some(1));
        assert_eq!(p.find(Some(80), 0), Some(1));
        assert_eq!(p.find(Some(60), 0), None, "70 does not beat 60");
        assert_eq!(p.find(Some(50), 2), Some(0));
        p.finish(0, None);
        assert_eq!(p.find(Some(50), 2), None);
        p.check(&[None, Some(70), None]).unwrap();
    }

    /// Hand-checked: cpudl with keys 50 (cpu 0), 40 (cpu 1), 45 (cpu 2) is the heap
    /// [c0:50, c1:40, c2:45]. Lowering cpu 0 to 10 sinks it: the correct heapify swaps it with
    /// the larger child (c2:45); the left-only variant swaps it with c1:40 and leaves 45 below
    /// 40 — the checker must name the heap property.
    #[test]
    fn left_only_heapify_breaks_the_heap_property() {
        for (fault, ok) in [(None, true), (Some(Fault::CpudlLeftOnly), false)] {
            let d = CpuDl::push_heap(3, fault);
            d.preempt(0, 50);
            d.preempt(1, 40);
            d.preempt(2, 45);
            d.finish(0, Some(10));
            let r = d.check(&[Some(10), Some(40), Some(45)]);
            assert_eq!(r.is_ok(), ok, "{r:?}");
            if let Err(v) = r {
                assert!(v.invariant.starts_with("cpudl heap property"), "{v:?}");
                assert!(v.state.contains("c1:40 c0:10 c2:45"), "{}", v.state);
            } else {
                assert_eq!(unpack(d.root.load(Relaxed)), Some((2, 45)));
            }
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Set(usize, u64),
        Clear(usize),
        Find(u64, usize),
    }

    fn ops(m: usize) -> impl Strategy<Value = Vec<Op>> {
        proptest::collection::vec(
            prop_oneof![
                3 => (0..m, 0u64..50).prop_map(|(c, k)| Op::Set(c, k)),
                1 => (0..m).prop_map(Op::Clear),
                2 => (0u64..50, 0..m).prop_map(|(k, c)| Op::Find(k, c)),
            ],
            0..150,
        )
    }

    proptest! {
        /// cpudl and the pull heap against a plain per-CPU array (the reference model): after
        /// every operation the checker passes, and find answers what the model says.
        #[test]
        fn heaps_match_an_array(m in 1usize..9, ops in ops(8)) {
            for max in [true, false] {
                let d = if max { CpuDl::push_heap(m, None) } else { CpuDl::pull_heap(m) };
                let mut model: Vec<Option<u64>> = vec![None; m];
                for o in &ops {
                    match *o {
                        Op::Set(c, k) if c < m => { d.preempt(c, k); model[c] = Some(k); }
                        Op::Clear(c) if c < m => { d.finish(c, None); model[c] = None; }
                        Op::Find(k, this) if this < m => {
                            let got = d.find(Some(k), this);
                            if max {
                                let free: Vec<usize> = (0..m).filter(|&c| c != this && model[c].is_none()).collect();
                                if !free.is_empty() {
                                    prop_assert!(got.is_some_and(|g| free.contains(&g)), "{got:?} not free in {model:?}");
                                } else {
                                    let best = model.iter().flatten().max().copied();
                                    match got {
                                        Some(g) => {
                                            prop_assert_eq!(model[g], best);
                                            prop_assert!(g != this && best.is_some_and(|b| k < b));
                                        }
                                        // None: the maximum is this CPU's or not later than k.
                                        None => prop_assert!(best.is_none_or(|b| k >= b || model[this] == Some(b))),
                                    }
                                }
                            } else {
                                let best = (0..m).filter(|&c| c != this).filter_map(|c| model[c]).min();
                                match got {
                                    Some(g) => {
                                        prop_assert!(g != this);
                                        prop_assert_eq!(model[g], best);
                                        prop_assert!(best.is_some_and(|b| b < k));
                                    }
                                    None => prop_assert!(best.is_none_or(|b| b >= k)),
                                }
                            }
                        }
                        _ => {}
                    }
                    prop_assert!(d.check(&model).is_ok(), "{:?}", d.check(&model));
                }
            }
        }
    }
}
