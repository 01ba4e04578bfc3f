//! Long-lived buffers that give back what a burst made them grow to.
//!
//! A run's buffers (events waiting for their sample, the capture's held records, the tick's
//! event list) are sized by the worst moment: a host stall or a backlog makes them grow by
//! megabytes for a second. A `Vec` keeps its capacity when it drains, and under `mlockall`
//! every page of it stays resident, so over hours the footprint ratchets up to the largest
//! burst seen. These helpers shrink a buffer to twice its length once its capacity is more
//! than four times that (hysteresis: no reallocation churn at a steady rate) and the excess is
//! worth returning. Pure: no syscalls.

use std::collections::VecDeque;

/// Capacity, in bytes, below which a buffer is left alone.
pub const MIN_RELEASE_BYTES: usize = 256 * 1024;

fn too_big(capacity: usize, len: usize, elem: usize) -> bool {
    capacity.saturating_mul(elem.max(1)) >= MIN_RELEASE_BYTES && capacity / 4 > len
}

/// Shrink `v` to twice its length if it holds much more capacity than it uses.
pub fn release_slack<T>(v: &mut Vec<T>) {
    if too_big(v.capacity(), v.len(), std::mem::size_of::<T>()) {
        v.shrink_to(v.len() * 2);
    }
}

/// [`release_slack`] for a `VecDeque`.
pub fn release_slack_deque<T>(v: &mut VecDeque<T>) {
    if too_big(v.capacity(), v.len(), std::mem::size_of::<T>()) {
        v.shrink_to(v.len() * 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shrinks_only_large_mostly_empty_buffers() {
        // 1 MiB of u64 with 1 000 used: shrunk to about 2 000.
        let mut v: Vec<u64> = Vec::with_capacity(131_072);
        v.extend(0..1_000);
        release_slack(&mut v);
        assert!(
            v.capacity() >= 2_000 && v.capacity() < 4_000,
            "{}",
            v.capacity()
        );
        assert_eq!(v.len(), 1_000);
        // A quarter used or more: kept (no churn at a steady rate).
        let mut w: Vec<u64> = Vec::with_capacity(131_072);
        w.extend(0..40_000);
        release_slack(&mut w);
        assert!(w.capacity() >= 131_072);
        // Small buffers are left to the allocator.
        let mut s: Vec<u64> = Vec::with_capacity(1_000);
        release_slack(&mut s);
        assert!(s.capacity() >= 1_000);
        // An empty large one goes to nothing.
        let mut e: VecDeque<u64> = VecDeque::with_capacity(65_536);
        release_slack_deque(&mut e);
        assert_eq!(e.capacity(), 0);
    }
}
