//! Tasks and their ordering keys.
//!
//! One key orders tasks under both policies, smaller is more urgent:
//! - EDF: the absolute deadline, ns since the run started;
//! - FP: the kernel's `task->prio` + 1 (SCHED_DEADLINE's -1 → 0, real-time 0..=98 → 1..=99,
//!   SCHED_NORMAL 100..=139 → 101..=140), so that the traces' `prio` fields map directly.
//!
//! Structures that publish a (CPU, key) pair for lock-free readers pack both into one word
//! ([`pack`]): a reader never sees the key of one update with the CPU of another.

/// A task's ordering key (see the module comment).
pub type Key = u64;

/// Keys must stay below this to be packed with a CPU number (6 bits) into one word; 2^58 ns is
/// nine years of run time.
pub const MAX_KEY: Key = (1 << 58) - 2;

/// Emulated CPUs fit one 64-bit mask (free CPUs, cpupri masks, overload mask).
pub const MAX_CPUS: usize = 64;

/// The packed "nothing here" word.
pub const EMPTY: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    /// Unique per run (random mode: CPU << 48 | counter; replay: the pid).
    pub id: u64,
    pub key: Key,
    /// When the running task blocks on its own: its deadline (EDF) or the end of its run time
    /// (FP), §2.3.6 ("the deadline of the executing task is checked against the current time").
    pub end_ns: u64,
}

impl Task {
    /// Queue order: key, then id (FIFO among equal keys for tasks created in order).
    pub fn order(&self) -> (Key, u64) {
        (self.key, self.id)
    }
}

/// The kernel's `dl_time_before(a, b)`: `a` is earlier than `b` on a wrapping u64 clock
/// (include/linux/sched/deadline.h). Keys stay far below 2^63 apart, so this equals `a < b`;
/// it is kept so that the structures read like kernel/sched/cpudeadline.c.
#[inline]
pub fn dl_time_before(a: Key, b: Key) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// Pack a CPU and a key into one word (key in the high 58 bits).
#[inline]
pub fn pack(cpu: usize, key: Key) -> u64 {
    debug_assert!(cpu < MAX_CPUS && key <= MAX_KEY);
    (key.min(MAX_KEY) << 6) | cpu as u64
}

/// Inverse of [`pack`]; `None` for [`EMPTY`].
#[inline]
pub fn unpack(w: u64) -> Option<(usize, Key)> {
    (w != EMPTY).then_some(((w & 63) as usize, w >> 6))
}

/// A mask of the first `m` CPUs.
#[inline]
pub fn cpu_mask(m: usize) -> u64 {
    if m >= 64 {
        u64::MAX
    } else {
        (1u64 << m) - 1
    }
}

/// The first CPU set in `mask` after `this` (cyclically), so that finds spread their choices
/// instead of always naming CPU 0.
#[inline]
pub fn first_after(mask: u64, this: usize) -> Option<usize> {
    if mask == 0 {
        return None;
    }
    let shift = ((this + 1) % 64) as u32;
    let rot = mask.rotate_right(shift);
    Some((rot.trailing_zeros() as usize + shift as usize) % 64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips() {
        assert_eq!(unpack(pack(5, 1234)), Some((5, 1234)));
        assert_eq!(unpack(pack(63, MAX_KEY)), Some((63, MAX_KEY)));
        assert_ne!(pack(63, MAX_KEY), EMPTY);
        assert_eq!(unpack(EMPTY), None);
    }

    #[test]
    fn time_before_wraps_like_the_kernel() {
        assert!(dl_time_before(1, 2));
        assert!(!dl_time_before(2, 2));
        assert!(dl_time_before(u64::MAX, 1));
    }

    #[test]
    fn first_after_is_cyclic() {
        assert_eq!(first_after(0b1011, 0), Some(1));
        assert_eq!(first_after(0b1011, 1), Some(3));
        assert_eq!(first_after(0b1011, 3), Some(0));
        assert_eq!(first_after(0, 3), None);
        assert_eq!(first_after(1 << 63, 63), Some(63));
        assert_eq!(cpu_mask(3), 0b111);
        assert_eq!(cpu_mask(64), u64::MAX);
    }
}
