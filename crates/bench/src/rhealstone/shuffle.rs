//! Semaphore shuffle as heursch-2001 §3.1 defines it: "the average time in between a process
//! requests a semaphore, that is currently held by another process of lower priority, until it
//! obtains the semaphore. The time the process of lower priority runs until it releases the
//! semaphore is not included."
//!
//! One round, both threads on one CPU:
//! 1. the low-priority holder takes the semaphore `held` (free, so at once) and posts `go`;
//! 2. the high-priority thread, woken by `go`, preempts it, reads the clock (request) and asks
//!    for `held`: it blocks, the scheduler switches back to the holder;
//! 3. the holder reads the clock (resumed), does its own short work, reads the clock (release)
//!    and releases `held`: the high thread is woken, preempts it and reads the clock (obtained);
//! 4. the high thread gives `held` back (no waiter) and waits on `go` again.
//!
//! Shuffle = (obtained − request) − (release − resumed) ([`super::intervals::shuffle_sample`]).
//! Both semaphores are of the variant's kind, so every kernel path in the interval is that
//! kind's: SysV (`semop`), POSIX (`sem_wait`/`sem_post`, futex-based in glibc) or a bare futex.

use crate::common::reaper::{Reaper, Resource};
use crate::common::sync::Sem;
use crate::common::{BenchError, Result};
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SemKind {
    SysvSem,
    PosixSem,
    Futex,
}

impl SemKind {
    pub fn name(self) -> &'static str {
        match self {
            SemKind::SysvSem => "sysv_sem",
            SemKind::PosixSem => "posix_sem",
            SemKind::Futex => "futex",
        }
    }
}

/// Which of the pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// The shuffled semaphore (starts free: value 1).
    Held = 0,
    /// The signal that starts a round (starts at 0).
    Go = 1,
}

pub struct SemPair<'r> {
    kind: SemKind,
    reaper: &'r Reaper,
    resource: Option<Resource>,
    semid: i32,
    posix: Box<[std::cell::UnsafeCell<libc::sem_t>; 2]>,
    futex: [Sem; 2],
    closed: AtomicBool,
}

// SAFETY: the sem_t are only used through sem_post/sem_wait, which are thread-safe; the other
// fields are ids and atomics.
unsafe impl Sync for SemPair<'_> {}

impl<'r> SemPair<'r> {
    pub fn open(kind: SemKind, reaper: &'r Reaper) -> Result<SemPair<'r>> {
        let mut p = SemPair {
            kind,
            reaper,
            resource: None,
            semid: -1,
            // SAFETY: sem_t is plain data, initialised by sem_init below before use.
            posix: Box::new(unsafe { std::mem::zeroed() }),
            futex: [Sem::new(1), Sem::new(0)],
            closed: AtomicBool::new(false),
        };
        match kind {
            SemKind::SysvSem => {
                // SAFETY: plain syscall; a new private set of two starts at 0, 0.
                let id = unsafe { libc::semget(libc::IPC_PRIVATE, 2, libc::IPC_CREAT | 0o600) };
                if id < 0 {
                    return Err(BenchError::last_os("semget"));
                }
                p.semid = id;
                let r = Resource::SysvSem(id);
                reaper.register(&r);
                p.resource = Some(r);
                p.give(Which::Held)?;
            }
            SemKind::PosixSem => {
                for (i, init) in [(0, 1), (1, 0)] {
                    // SAFETY: the sem_t lives in a Box that outlives every user; not shared
                    // across processes (pshared 0).
                    if unsafe { libc::sem_init(p.posix[i].get(), 0, init) } != 0 {
                        return Err(BenchError::last_os("sem_init"));
                    }
                }
            }
            SemKind::Futex => {}
        }
        Ok(p)
    }

    /// V: release one unit.
    #[inline]
    pub fn give(&self, w: Which) -> Result<()> {
        let rc = match self.kind {
            SemKind::SysvSem => {
                let mut op = libc::sembuf {
                    sem_num: w as u16,
                    sem_op: 1,
                    sem_flg: 0,
                };
                // SAFETY: one valid sembuf.
                unsafe { libc::semop(self.semid, &mut op, 1) }
            }
            // SAFETY: initialised sem_t.
            SemKind::PosixSem => unsafe { libc::sem_post(self.posix[w as usize].get()) },
            SemKind::Futex => {
                self.futex[w as usize].post();
                0
            }
        };
        if rc != 0 && !self.closed.load(Ordering::Relaxed) {
            return Err(BenchError::last_os(format!("{} release", self.kind.name())));
        }
        Ok(())
    }

    /// P: take one unit, blocking. `false` once the pair was aborted.
    #[inline]
    pub fn take(&self, w: Which) -> Result<bool> {
        loop {
            let rc = match self.kind {
                SemKind::SysvSem => {
                    let mut op = libc::sembuf {
                        sem_num: w as u16,
                        sem_op: -1,
                        sem_flg: 0,
                    };
                    // SAFETY: one valid sembuf.
                    unsafe { libc::semop(self.semid, &mut op, 1) }
                }
                // SAFETY: initialised sem_t.
                SemKind::PosixSem => unsafe { libc::sem_wait(self.posix[w as usize].get()) },
                SemKind::Futex => {
                    if self.futex[w as usize].wait(|| self.closed.load(Ordering::Relaxed)) {
                        0
                    } else {
                        return Ok(false);
                    }
                }
            };
            let closed = self.closed.load(Ordering::Relaxed);
            if rc == 0 {
                return Ok(!closed);
            }
            let e = std::io::Error::last_os_error();
            if closed {
                // EIDRM after `abort`, or a post that only released us.
                return Ok(false);
            }
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(BenchError::io(format!("{} request", self.kind.name()), e));
            }
        }
    }

    /// Release every blocked thread for good: remove the SysV set (semop returns EIDRM), post
    /// the POSIX and futex semaphores.
    pub fn abort(&mut self) {
        self.closed.store(true, Ordering::Relaxed);
        match self.kind {
            SemKind::SysvSem => {
                if let Some(r) = self.resource.take() {
                    self.reaper.release(&r);
                }
            }
            SemKind::PosixSem => {
                for s in self.posix.iter() {
                    // SAFETY: initialised sem_t.
                    unsafe { libc::sem_post(s.get()) };
                }
            }
            SemKind::Futex => {
                for s in &self.futex {
                    s.post();
                }
            }
        }
    }
}

impl Drop for SemPair<'_> {
    fn drop(&mut self) {
        if let Some(r) = self.resource.take() {
            self.reaper.release(&r);
        }
        if self.kind == SemKind::PosixSem {
            for s in self.posix.iter() {
                // SAFETY: destroying the semaphores we created, once, with no user left.
                unsafe { libc::sem_destroy(s.get()) };
            }
        }
    }
}
