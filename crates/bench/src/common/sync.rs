//! Futex primitives with explicit semantics (no libc/pthread layer in between), so each
//! benchmark knows exactly which kernel path it measures:
//! - [`Sem`]: a counting semaphore on FUTEX_WAIT/FUTEX_WAKE (the "futex" shuffle variant and the
//!   benchmarks' own signalling). Waits time out so a stop request is always seen.
//! - [`PiMutex`]: FUTEX_LOCK_PI/FUTEX_UNLOCK_PI, the kernel's priority-inheriting rt_mutex.
//! - [`PlainMutex`]: Drepper's three-state futex mutex ("Futexes Are Tricky", mutex2): no
//!   priority inheritance, to show the inversion.

use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

const FUTEX_WAIT: i32 = 0;
const FUTEX_WAKE: i32 = 1;
const FUTEX_LOCK_PI: i32 = 6;
const FUTEX_UNLOCK_PI: i32 = 7;
const FUTEX_PRIVATE_FLAG: i32 = 128;

fn futex(addr: *const u32, op: i32, val: u32, timeout: Option<&libc::timespec>) -> libc::c_long {
    let t = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: addr points to a live, aligned u32 owned by the caller for the call's duration.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            addr,
            op | FUTEX_PRIVATE_FLAG,
            val,
            t,
            0usize,
            0u32,
        )
    }
}

/// Counting semaphore.
#[derive(Default)]
pub struct Sem {
    count: AtomicU32,
}

impl Sem {
    pub fn new(v: u32) -> Self {
        Sem {
            count: AtomicU32::new(v),
        }
    }

    #[inline]
    pub fn post(&self) {
        self.count.fetch_add(1, Ordering::Release);
        futex(self.count.as_ptr(), FUTEX_WAKE, 1, None);
    }

    /// Take one unit; gives up (returns false) once `give_up()` is true, checked every 20 ms.
    #[inline]
    pub fn wait(&self, give_up: impl Fn() -> bool) -> bool {
        let slice = libc::timespec {
            tv_sec: 0,
            tv_nsec: 20_000_000,
        };
        loop {
            let v = self.count.load(Ordering::Acquire);
            if v > 0 {
                if self
                    .count
                    .compare_exchange_weak(v, v - 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return true;
                }
                continue;
            }
            if give_up() {
                return false;
            }
            futex(self.count.as_ptr(), FUTEX_WAIT, 0, Some(&slice));
        }
    }
}

/// Priority-inheriting mutex: the futex word holds the owner's TID (kernel PI protocol).
#[derive(Default)]
pub struct PiMutex {
    word: AtomicU32,
}

impl PiMutex {
    pub fn lock(&self, tid: u32) {
        if self
            .word
            .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        loop {
            // The kernel queues us on the rt_mutex and boosts the owner.
            let rc = futex(self.word.as_ptr(), FUTEX_LOCK_PI, 0, None);
            if rc == 0 {
                return;
            }
            // EINTR/EAGAIN: retry.
        }
    }

    pub fn unlock(&self, tid: u32) {
        if self
            .word
            .compare_exchange(tid, 0, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        // FUTEX_WAITERS is set: the kernel hands the lock to the top waiter.
        futex(self.word.as_ptr(), FUTEX_UNLOCK_PI, 0, None);
    }
}

/// Mutex without priority inheritance (0 free, 1 locked, 2 locked with waiters).
#[derive(Default)]
pub struct PlainMutex {
    word: AtomicI32,
}

impl PlainMutex {
    pub fn lock(&self) {
        if self
            .word
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        while self.word.swap(2, Ordering::Acquire) != 0 {
            futex(self.word.as_ptr() as *const u32, FUTEX_WAIT, 2, None);
        }
    }

    pub fn unlock(&self) {
        if self.word.swap(0, Ordering::Release) == 2 {
            futex(self.word.as_ptr() as *const u32, FUTEX_WAKE, 1, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn sem_counts_and_gives_up() {
        let s = Sem::new(2);
        assert!(s.wait(|| true));
        assert!(s.wait(|| true));
        assert!(!s.wait(|| true)); // empty: gives up instead of blocking
        s.post();
        assert!(s.wait(|| false));
    }

    #[test]
    fn mutexes_exclude() {
        let pi = Arc::new(PiMutex::default());
        let plain = Arc::new(PlainMutex::default());
        // One counter per mutex: each is only ever touched under its own lock.
        let pi_count = Arc::new(AtomicU32::new(0));
        let plain_count = Arc::new(AtomicU32::new(0));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let (pi, plain) = (pi.clone(), plain.clone());
                let (c, d) = (pi_count.clone(), plain_count.clone());
                std::thread::spawn(move || {
                    let tid = rtscope_probe::sys::gettid() as u32;
                    for _ in 0..2000 {
                        pi.lock(tid);
                        // Non-atomic read-modify-write under the lock: lost updates if it leaks.
                        let v = c.load(Ordering::Relaxed);
                        c.store(v + 1, Ordering::Relaxed);
                        pi.unlock(tid);
                        plain.lock();
                        let v = d.load(Ordering::Relaxed);
                        d.store(v + 1, Ordering::Relaxed);
                        plain.unlock();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(pi_count.load(Ordering::Relaxed), 4 * 2000);
        assert_eq!(plain_count.load(Ordering::Relaxed), 4 * 2000);
    }
}
