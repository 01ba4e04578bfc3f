//! The job body: calibrated work over a private working set (Lelli 2014 §3.5.1): an array of
//! 64-byte (one cache line) elements, visited sequentially or in a random cyclic order, four
//! reads for every write. The number of elements a job visits is C divided by the calibrated cost
//! of one visit, measured in thread CPU time so that preemption during calibration does not
//! inflate it.

use rand::Rng;

#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Elem {
    next: u32,
    data: [u32; 15],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Sequential,
    Random,
}

impl Access {
    pub fn name(self) -> &'static str {
        match self {
            Access::Sequential => "seq",
            Access::Random => "random",
        }
    }
}

pub struct WorkingSet {
    elems: Vec<Elem>,
    pos: usize,
    visits: u64,
    acc: u32,
}

impl WorkingSet {
    /// `bytes` rounded up to whole 64-byte elements (at least one). `seed` orders the random walk.
    pub fn new(bytes: u64, access: Access, seed: u64) -> WorkingSet {
        let n = (bytes.div_ceil(64)).max(1) as usize;
        let mut elems = vec![
            Elem {
                next: 0,
                data: [0; 15]
            };
            n
        ];
        match access {
            Access::Sequential => {
                for (i, e) in elems.iter_mut().enumerate() {
                    e.next = ((i + 1) % n) as u32;
                }
            }
            Access::Random => {
                // Sattolo's algorithm: a uniformly random single cycle through all elements, so
                // the walk touches the whole working set before repeating.
                let mut perm: Vec<u32> = (0..n as u32).collect();
                let mut rng = super::gen::rng_for(seed, 0xC0FFEE);
                for i in (1..n).rev() {
                    let j = rng.gen_range(0..i);
                    perm.swap(i, j);
                }
                for i in 0..n {
                    elems[perm[i] as usize].next = perm[(i + 1) % n];
                }
                if n == 1 {
                    elems[0].next = 0;
                }
            }
        }
        WorkingSet {
            elems,
            pos: 0,
            visits: 0,
            acc: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.elems.len()
    }

    pub fn is_empty(&self) -> bool {
        self.elems.is_empty()
    }

    /// Visit `count` elements: read one word of each (4 of every 5 visits) or read-modify-write
    /// it (1 in 5), then follow `next`.
    #[inline(never)]
    pub fn visit(&mut self, count: u64) {
        let base = self.elems.as_mut_ptr();
        let mut pos = self.pos;
        let mut acc = self.acc;
        let mut v = self.visits;
        for _ in 0..count {
            // SAFETY: pos < len always (next indices are built in range).
            unsafe {
                let e = base.add(pos);
                let d = std::ptr::addr_of_mut!((*e).data[(v % 15) as usize]);
                let x = std::ptr::read_volatile(d);
                acc = acc.wrapping_add(x);
                if v % 5 == 4 {
                    std::ptr::write_volatile(d, acc);
                }
                pos = std::ptr::read_volatile(std::ptr::addr_of!((*e).next)) as usize;
            }
            v += 1;
        }
        self.pos = pos;
        self.acc = acc;
        self.visits = v;
    }

    /// Touch every element once (faults pages in, warms the cache).
    pub fn warm(&mut self) {
        let n = self.elems.len() as u64;
        self.visit(n);
    }
}

pub fn thread_cpu_ns() -> u64 {
    rtscope_sys::clock::thread_cpu_ns()
}

/// Cost of one element visit in ns (median of `rounds` bursts of about `burst_ns` CPU time each),
/// measured by the calling thread in its own CPU time.
pub fn calibrate(ws: &mut WorkingSet, burst_ns: u64, rounds: usize) -> f64 {
    ws.warm();
    // Size the burst: grow until it takes ≥ burst_ns/8, then scale.
    let mut count: u64 = 1024;
    loop {
        let t0 = thread_cpu_ns();
        ws.visit(count);
        let dt = thread_cpu_ns().saturating_sub(t0);
        if dt >= burst_ns / 8 || count > (1 << 34) {
            count = ((count as f64) * burst_ns as f64 / dt.max(1) as f64).max(1024.0) as u64;
            break;
        }
        count *= 4;
    }
    let mut per: Vec<f64> = (0..rounds.max(1))
        .map(|_| {
            let t0 = thread_cpu_ns();
            ws.visit(count);
            let dt = thread_cpu_ns().saturating_sub(t0);
            dt as f64 / count as f64
        })
        .collect();
    per.sort_by(f64::total_cmp);
    per[per.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_walk_is_one_cycle() {
        let mut ws = WorkingSet::new(64 * 1000, Access::Random, 3);
        let mut seen = vec![false; ws.len()];
        let mut p = 0usize;
        for _ in 0..ws.len() {
            assert!(!seen[p]);
            seen[p] = true;
            p = ws.elems[p].next as usize;
        }
        assert_eq!(p, 0);
        assert!(seen.iter().all(|&s| s));
        ws.visit(5000);
        assert_eq!(ws.visits, 5000);
    }

    #[test]
    fn calibration_predicts_work_time() {
        // Calibrate, then run 2 ms worth of visits: CPU time within a factor 2 (CI machines are
        // noisy; the run reports the real per-job execution times anyway).
        let mut ws = WorkingSet::new(16 * 1024, Access::Sequential, 1);
        let ns = calibrate(&mut ws, 500_000, 5);
        assert!(ns > 0.0 && ns < 1000.0, "{ns}");
        let count = (2_000_000.0 / ns) as u64;
        let t0 = thread_cpu_ns();
        ws.visit(count);
        let dt = thread_cpu_ns() - t0;
        assert!(dt > 1_000_000 && dt < 4_000_000, "{dt} ns");
    }
}
