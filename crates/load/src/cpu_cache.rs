//! `cpu-cache`: a tight loop of random reads and writes over a working set larger than the caches,
//! one pinned worker per CPU (paper §3.2: "a tight loop accessing random memory locations to
//! generate cache misses", 20 MiB working set per task, larger than the L2).

use crate::shm::Slot;
use std::convert::Infallible;

/// Counter: random accesses done (a read and a write each count as one).
pub(crate) const C_ACCESSES: usize = 0;
/// Set to 1 once the working set is allocated and touched; `start` waits for it so the
/// measurement never begins while the load is still page-faulting its memory in.
pub(crate) const C_WARM: usize = 4;

/// How often the local count is published (a store to our own cache line, cheap but not free).
const PUBLISH_EVERY: u64 = 1 << 14;

pub(crate) fn run(slot: &Slot, wss_bytes: u64) -> Infallible {
    let words = (wss_bytes / 8).max(1) as usize;
    // Touch every page now so the loop measures cache misses, not page faults.
    let mut ws: Vec<u64> = (0..words as u64).collect();
    slot.set(C_WARM, 1);
    // rand's SmallRng (Xoshiro256++): a few ns per draw, no allocation in the loop.
    let mut rng: rand::rngs::SmallRng =
        rand::SeedableRng::seed_from_u64(crate::sys::getpid() as u64);
    let mut sum: u64 = 0;
    let mut done: u64 = 0;
    loop {
        for _ in 0..PUBLISH_EVERY / 2 {
            let x = rand::RngCore::next_u64(&mut rng);
            // Lemire's multiply-shift maps x onto 0..words without a division.
            let i = ((x as u128 * words as u128) >> 64) as usize;
            let j = ((x.rotate_left(32) as u128 * words as u128) >> 64) as usize;
            sum = sum.wrapping_add(ws[i]);
            ws[j] = ws[j].wrapping_add(sum | 1);
        }
        done += PUBLISH_EVERY;
        slot.set(C_ACCESSES, done);
        std::hint::black_box(sum);
    }
}
