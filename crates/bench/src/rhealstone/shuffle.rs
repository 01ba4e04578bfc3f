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
use rtscope_sys::ipc::{PosixSem, SysvSemSet};
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
    sysv: Option<SysvSemSet>,
    posix: Option<[PosixSem; 2]>,
    futex: [Sem; 2],
    closed: AtomicBool,
}

impl<'r> SemPair<'r> {
    pub fn open(kind: SemKind, reaper: &'r Reaper) -> Result<SemPair<'r>> {
        let mut p = SemPair {
            kind,
            reaper,
            resource: None,
            sysv: None,
            posix: None,
            futex: [Sem::new(1), Sem::new(0)],
            closed: AtomicBool::new(false),
        };
        match kind {
            SemKind::SysvSem => {
                // A new private set of two starts at 0, 0.
                let set = SysvSemSet::create_private(2).map_err(|e| BenchError::io("semget", e))?;
                p.sysv = Some(set);
                let r = Resource::SysvSem(set.id());
                reaper.register(&r);
                p.resource = Some(r);
                p.give(Which::Held)?;
            }
            SemKind::PosixSem => {
                let init = |v| PosixSem::new(v).map_err(|e| BenchError::io("sem_init", e));
                p.posix = Some([init(1)?, init(0)?]);
            }
            SemKind::Futex => {}
        }
        Ok(p)
    }

    fn sysv_set(&self) -> std::io::Result<&SysvSemSet> {
        self.sysv.as_ref().ok_or_else(rtscope_sys::einval)
    }

    fn posix_sem(&self, w: Which) -> std::io::Result<&PosixSem> {
        self.posix
            .as_ref()
            .map(|p| &p[w as usize])
            .ok_or_else(rtscope_sys::einval)
    }

    /// V: release one unit.
    #[inline]
    pub fn give(&self, w: Which) -> Result<()> {
        let r = match self.kind {
            SemKind::SysvSem => self.sysv_set().and_then(|s| s.op(w as u16, 1)),
            SemKind::PosixSem => self.posix_sem(w).and_then(PosixSem::post),
            SemKind::Futex => {
                self.futex[w as usize].post();
                Ok(())
            }
        };
        match r {
            Err(e) if !self.closed.load(Ordering::Relaxed) => {
                Err(BenchError::io(format!("{} release", self.kind.name()), e))
            }
            _ => Ok(()),
        }
    }

    /// P: take one unit, blocking. `false` once the pair was aborted.
    #[inline]
    pub fn take(&self, w: Which) -> Result<bool> {
        loop {
            let r = match self.kind {
                SemKind::SysvSem => self.sysv_set().and_then(|s| s.op(w as u16, -1)),
                SemKind::PosixSem => self.posix_sem(w).and_then(PosixSem::wait),
                SemKind::Futex => {
                    if self.futex[w as usize].wait(|| self.closed.load(Ordering::Relaxed)) {
                        Ok(())
                    } else {
                        return Ok(false);
                    }
                }
            };
            let closed = self.closed.load(Ordering::Relaxed);
            let Err(e) = r else {
                return Ok(!closed);
            };
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
                for s in self.posix.iter().flatten() {
                    let _ = s.post();
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
        // The POSIX semaphores are destroyed when their field drops.
    }
}
