//! A single-producer single-consumer ring of samples: how a measurement thread hands every sample
//! to the run's analysis without locks, allocation or waiting.
//!
//! The producer (the measurement thread) writes the slot and then publishes it with one release
//! store of `head`; it reads the consumer's `tail` only when its cached copy says the ring is full,
//! so in steady state it touches no cache line the consumer writes. The consumer drains every
//! ~100 ms. A full ring never blocks the measurement: the sample is counted in `dropped` (the
//! thread's own histogram still has it; only the streamed copy misses it) and the run warns.

use rtscope_model::RawSample;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Producer-side state: written only by the measurement thread.
#[repr(align(128))]
struct ProducerSide {
    head: AtomicU64,
    dropped: AtomicU64,
    /// The producer's last view of `tail` (its own copy, so it is not re-read per sample).
    cached_tail: UnsafeCell<u64>,
}

/// Consumer-side state: written only by the draining thread.
#[repr(align(128))]
struct ConsumerSide {
    tail: AtomicU64,
}

pub struct SampleRing {
    slots: Box<[UnsafeCell<RawSample>]>,
    mask: u64,
    prod: ProducerSide,
    cons: ConsumerSide,
}

// SAFETY: a slot is written by the one producer strictly before the release store of `head`
// that publishes it, and read by the one consumer only after an acquire load of `head` shows it
// and before the release store of `tail` that hands it back; `cached_tail` is touched only by the
// producer. The single-producer/single-consumer discipline is the caller's contract (`push` from
// one thread, `drain` from one thread), which `Measurement` upholds: each ring has exactly one
// measurement thread and the orchestrating thread alone drains.
unsafe impl Sync for SampleRing {}
unsafe impl Send for SampleRing {}

impl SampleRing {
    /// A ring of at least `min_capacity` slots (rounded up to a power of two, at least 1024),
    /// every slot written once so that the memory is resident before the loop (mlockall).
    pub fn new(min_capacity: usize) -> SampleRing {
        let cap = min_capacity.max(1024).next_power_of_two();
        let slots: Box<[UnsafeCell<RawSample>]> = (0..cap)
            .map(|_| UnsafeCell::new(RawSample::default()))
            .collect();
        SampleRing {
            slots,
            mask: cap as u64 - 1,
            prod: ProducerSide {
                head: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
                cached_tail: UnsafeCell::new(0),
            },
            cons: ConsumerSide {
                tail: AtomicU64::new(0),
            },
        }
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Producer only. Returns false (and counts the sample as dropped) when the ring is full.
    #[inline]
    pub fn push(&self, s: RawSample) -> bool {
        let head = self.prod.head.load(Ordering::Relaxed);
        // SAFETY: cached_tail is producer-private (see the Sync impl).
        let cached = unsafe { &mut *self.prod.cached_tail.get() };
        if head - *cached > self.mask {
            *cached = self.cons.tail.load(Ordering::Acquire);
            if head - *cached > self.mask {
                self.prod.dropped.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        }
        // SAFETY: slot `head` is not visible to the consumer until the release store below, and
        // the consumer has released it (tail > head - capacity, checked above).
        unsafe { *self.slots[(head & self.mask) as usize].get() = s };
        self.prod.head.store(head + 1, Ordering::Release);
        true
    }

    /// Consumer only: append every published sample to `out`; returns how many.
    pub fn drain(&self, out: &mut Vec<RawSample>) -> usize {
        let tail = self.cons.tail.load(Ordering::Relaxed);
        let head = self.prod.head.load(Ordering::Acquire);
        let n = (head - tail) as usize;
        out.reserve(n);
        for i in tail..head {
            // SAFETY: published by the acquire load of head above; not reused by the producer
            // until the release store of tail below.
            out.push(unsafe { *self.slots[(i & self.mask) as usize].get() });
        }
        self.cons.tail.store(head, Ordering::Release);
        n
    }

    /// Samples the producer could not hand over because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.prod.dropped.load(Ordering::Relaxed)
    }

    /// Samples pushed so far (including those not yet drained).
    pub fn pushed(&self) -> u64 {
        self.prod.head.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(i: u64) -> RawSample {
        RawSample {
            cpu: 0,
            tid: 1,
            cycle: i,
            expected_ns: i * 1000,
            latency_ns: i,
        }
    }

    #[test]
    fn full_ring_drops_and_counts() {
        let r = SampleRing::new(1);
        assert_eq!(r.capacity(), 1024);
        for i in 0..1030 {
            r.push(s(i));
        }
        assert_eq!(r.dropped(), 6);
        let mut out = Vec::new();
        assert_eq!(r.drain(&mut out), 1024);
        assert_eq!(out[1023].cycle, 1023);
        assert!(r.push(s(2000)));
        out.clear();
        r.drain(&mut out);
        assert_eq!(out, vec![s(2000)]);
    }

    #[test]
    fn two_threads_deliver_every_sample_in_order() {
        let r = std::sync::Arc::new(SampleRing::new(4096));
        let p = r.clone();
        const N: u64 = 2_000_000;
        let prod = std::thread::spawn(move || {
            let mut i = 0;
            while i < N {
                if p.push(s(i)) {
                    i += 1;
                } else {
                    // The test wants every sample: undo the drop count and retry.
                    p.prod.dropped.fetch_sub(1, Ordering::Relaxed);
                    std::thread::yield_now();
                }
            }
        });
        let mut got = Vec::new();
        let mut next = 0u64;
        while next < N {
            got.clear();
            r.drain(&mut got);
            for x in &got {
                assert_eq!(x.cycle, next);
                next += 1;
            }
        }
        prod.join().unwrap();
        assert_eq!(r.dropped(), 0);
        assert_eq!(r.pushed(), N);
    }
}
