//! The spin lock of Table 2.3 (`raw_spin_lock` → `pthread_spin_lock` in PRAcTISE), in Rust.
//!
//! Test-and-test-and-set: acquire by a compare-exchange with Acquire ordering (what
//! `raw_spin_lock` gives: nothing in the critical section moves before it), release by a store
//! with Release ordering (`raw_spin_unlock`: nothing moves after it). The kernel's queued
//! spin lock is fair and disables preemption; a user-space thread holding this lock can be
//! preempted, and with more emulated CPUs than real ones (testing mode allows it, §2.3.3) the
//! waiters would spin through the holder's whole time slice. So a waiter yields its CPU after
//! [`YIELD_AFTER`] spins: in performance mode (one pinned thread per CPU) that never happens
//! unless the holder was preempted by something else.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// Spins before a waiter calls sched_yield().
pub const YIELD_AFTER: u32 = 256;

pub struct SpinLock<T> {
    locked: AtomicBool,
    data: UnsafeCell<T>,
}

// SAFETY: the data is only reached through a guard, and one guard exists at a time.
unsafe impl<T: Send> Sync for SpinLock<T> {}
unsafe impl<T: Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    pub fn new(v: T) -> Self {
        SpinLock {
            locked: AtomicBool::new(false),
            data: UnsafeCell::new(v),
        }
    }

    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, T> {
        let mut spins = 0u32;
        loop {
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return SpinGuard { lock: self };
            }
            // Wait on a plain load (the cache line stays shared) until the lock looks free.
            while self.locked.load(Ordering::Relaxed) {
                std::hint::spin_loop();
                spins += 1;
                if spins >= YIELD_AFTER {
                    std::thread::yield_now();
                    spins = 0;
                }
            }
        }
    }
}

pub struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock, and `&mut self` makes this the only reference.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn excludes_concurrent_increments() {
        let l = Arc::new(SpinLock::new(0u64));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        // A read-modify-write that loses updates without mutual exclusion.
                        let mut g = l.lock();
                        let v = *g;
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*l.lock(), 80_000);
    }
}
