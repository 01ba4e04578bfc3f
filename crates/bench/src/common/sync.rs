//! Futex primitives with explicit semantics (no libc/pthread layer in between), so each
//! benchmark knows exactly which kernel path it measures:
//! - [`Sem`]: a counting semaphore on FUTEX_WAIT/FUTEX_WAKE (the "futex" shuffle variant and the
//!   benchmarks' own signalling). Waits time out so a stop request is always seen.
//! - [`PiMutex`]: FUTEX_LOCK_PI/FUTEX_UNLOCK_PI, the kernel's priority-inheriting rt_mutex.
//! - [`PlainMutex`]: Drepper's three-state futex mutex ("Futexes Are Tricky", mutex2): no
//!   priority inheritance, to show the inversion.

use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use rtscope_sys::ipc::{as_futex_word, futex_lock_pi, futex_unlock_pi, futex_wait, futex_wake};

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
        futex_wake(&self.count, 1);
    }

    /// Take one unit; gives up (returns false) once `give_up()` is true, checked every 20 ms.
    #[inline]
    pub fn wait(&self, give_up: impl Fn() -> bool) -> bool {
        let slice = std::time::Duration::from_millis(20);
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
            let _ = futex_wait(&self.count, 0, Some(slice));
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
            if futex_lock_pi(&self.word).is_ok() {
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
        futex_unlock_pi(&self.word);
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
            let _ = futex_wait(as_futex_word(&self.word), 2, None);
        }
    }

    pub fn unlock(&self) {
        if self.word.swap(0, Ordering::Release) == 2 {
            futex_wake(as_futex_word(&self.word), 1);
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
