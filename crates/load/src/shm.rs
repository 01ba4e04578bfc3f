//! Counters shared between rtscope and its load processes: one anonymous `MAP_SHARED` mapping
//! created before the first fork, so every descendant writes into memory the parent reads.
//! Each worker owns one cache-line slot (no false sharing, no contention on the hot path).

use crate::LoadError;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

pub(crate) const NCOUNTERS: usize = 7;

/// One worker's counters. `pid` is written by the worker itself so rtscope can still kill it if
/// the supervisor is gone.
#[repr(C, align(64))]
pub(crate) struct Slot {
    pub pid: AtomicI64,
    pub c: [AtomicU64; NCOUNTERS],
}

/// Supervisor state, read by rtscope.
#[repr(C, align(64))]
pub(crate) struct Header {
    /// 0 starting, 1 every worker forked, 2 failed (`errno` holds the cause), 3 stopped cleanly.
    pub state: AtomicU64,
    pub errno: AtomicU64,
    /// Workers that exited before stop (crashed, refused setup, or an exec command that ended).
    pub early_exits: AtomicU64,
    pub supervisor_pid: AtomicI64,
}

pub(crate) const STATE_READY: u64 = 1;
pub(crate) const STATE_FAILED: u64 = 2;
pub(crate) const STATE_STOPPED: u64 = 3;

pub(crate) struct Shared {
    map: rtscope_sys::mem::SharedMap,
    nslots: usize,
}

impl Shared {
    pub fn new(nslots: usize) -> Result<Shared, LoadError> {
        let len = std::mem::size_of::<Header>() + nslots.max(1) * std::mem::size_of::<Slot>();
        // Zero-filled memory is a valid bit pattern for Header and Slot (all atomics).
        let map = rtscope_sys::mem::SharedMap::new(len).map_err(|source| LoadError::Os {
            what: "mmap of the shared counters".into(),
            source,
        })?;
        Ok(Shared { map, nslots })
    }

    pub fn header(&self) -> &Header {
        // SAFETY: base is page-aligned, the mapping starts with a Header and lives as long as self.
        unsafe { &*(self.map.as_ptr() as *const Header) }
    }

    pub fn slot(&self, i: usize) -> &Slot {
        assert!(i < self.nslots, "slot {i} out of {}", self.nslots);
        // SAFETY: in bounds (checked above), 64-byte aligned (Header and Slot are 64-byte sized).
        unsafe {
            let first = self.map.as_ptr().add(std::mem::size_of::<Header>()) as *const Slot;
            &*first.add(i)
        }
    }

    pub fn nslots(&self) -> usize {
        self.nslots
    }
}

impl Slot {
    pub fn set(&self, i: usize, v: u64) {
        self.c[i].store(v, Ordering::Relaxed);
    }
    pub fn add(&self, i: usize, v: u64) {
        // Only the owning worker writes, so load+store is enough and avoids a locked RMW.
        let c = &self.c[i];
        c.store(c.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
    }
    pub fn get(&self, i: usize) -> u64 {
        self.c[i].load(Ordering::Relaxed)
    }
    pub fn pid(&self) -> i64 {
        self.pid.load(Ordering::Relaxed)
    }
}
