//! The arithmetic of the Rhealstone intervals: from the clock reads the threads take to the
//! quantities heursch-2001 §3.1 defines. Pure: no clocks, no system calls.

/// One semaphore-shuffle round, as CLOCK_MONOTONIC ns read by the two threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShuffleStamps {
    /// The high-priority thread, just before it asks for the semaphore the low one holds.
    pub request: u64,
    /// The low-priority holder, first read after it is back on the CPU (the request blocked).
    pub holder_resumed: u64,
    /// The holder, just before it releases the semaphore.
    pub release: u64,
    /// The high-priority thread, first read after its request returned: it owns the semaphore.
    pub obtained: u64,
}

/// The intervals of one shuffle round, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShuffleSample {
    /// heursch-2001 §3.1's semaphore shuffle time: request → obtain, minus the time the holder
    /// runs until it releases = `request_to_holder_ns + release_to_own_ns`.
    pub shuffle_ns: u64,
    /// Request → holder back on the CPU: the request's system call, blocking, the scheduler and
    /// the switch to the holder.
    pub request_to_holder_ns: u64,
    /// Release → the requester owns the semaphore: the wake-up and the switch back.
    pub release_to_own_ns: u64,
    /// The holder's own run time between resuming and releasing (excluded from the shuffle).
    pub holder_run_ns: u64,
    /// Request → obtain as the requester sees it (shuffle + holder run).
    pub request_to_obtain_ns: u64,
}

/// The round's intervals, or `None` when the reads are out of order (request ≤ holder resumed
/// ≤ release ≤ obtained must hold if the request blocked and the holder ran in between).
pub fn shuffle_sample(s: &ShuffleStamps) -> Option<ShuffleSample> {
    if !(s.request <= s.holder_resumed && s.holder_resumed <= s.release && s.release <= s.obtained)
    {
        return None;
    }
    let request_to_obtain_ns = s.obtained - s.request;
    let holder_run_ns = s.release - s.holder_resumed;
    Some(ShuffleSample {
        shuffle_ns: request_to_obtain_ns - holder_run_ns,
        request_to_holder_ns: s.holder_resumed - s.request,
        release_to_own_ns: s.obtained - s.release,
        holder_run_ns,
        request_to_obtain_ns,
    })
}

/// One preemption: the preempted thread's read just before the call that makes the preempting
/// thread the highest-priority runnable one → the preempting thread's first read. `None` when
/// the second read is not after the first.
pub fn preemption_sample(before_call: u64, preemptor_first_read: u64) -> Option<u64> {
    preemptor_first_read
        .checked_sub(before_call)
        .filter(|_| preemptor_first_read >= before_call)
}

/// The `LOC` (local timer interrupts) count of `cpu` in /proc/interrupts text.
pub fn local_timer_interrupts(proc_interrupts: &str, cpu: u32) -> Option<u64> {
    let mut lines = proc_interrupts.lines();
    let header = lines.next()?;
    let col = header
        .split_whitespace()
        .position(|w| w == format!("CPU{cpu}"))?;
    let line = lines.find(|l| l.trim_start().starts_with("LOC:"))?;
    let (_, rest) = line.split_once(':')?;
    rest.split_whitespace().nth(col)?.parse().ok()
}

/// `after − before` of a counter; `None` when it went backwards (a different source was read).
pub fn delta(before: u64, after: u64) -> Option<u64> {
    after.checked_sub(before)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffle_subtracts_the_holders_run_time() {
        // Request at 1000; the holder is back at 2300 (1300 ns of block + switch), runs 1000 ns
        // (its own work) and releases at 3300; the requester owns it at 4100 (800 ns).
        // Request → obtain = 3100; minus the holder's 1000 = 2100 = 1300 + 800.
        let s = shuffle_sample(&ShuffleStamps {
            request: 1000,
            holder_resumed: 2300,
            release: 3300,
            obtained: 4100,
        })
        .unwrap();
        assert_eq!(
            s,
            ShuffleSample {
                shuffle_ns: 2100,
                request_to_holder_ns: 1300,
                release_to_own_ns: 800,
                holder_run_ns: 1000,
                request_to_obtain_ns: 3100,
            }
        );
        // A holder that releases at once: nothing to subtract.
        let s = shuffle_sample(&ShuffleStamps {
            request: 10,
            holder_resumed: 15,
            release: 15,
            obtained: 19,
        })
        .unwrap();
        assert_eq!((s.shuffle_ns, s.holder_run_ns), (9, 0));
    }

    #[test]
    fn shuffle_refuses_reads_out_of_order() {
        // The holder "resumed" before the request: the request cannot have blocked.
        for st in [
            ShuffleStamps {
                request: 100,
                holder_resumed: 90,
                release: 120,
                obtained: 130,
            },
            ShuffleStamps {
                request: 100,
                holder_resumed: 110,
                release: 105,
                obtained: 130,
            },
            ShuffleStamps {
                request: 100,
                holder_resumed: 110,
                release: 120,
                obtained: 119,
            },
        ] {
            assert_eq!(shuffle_sample(&st), None, "{st:?}");
        }
    }

    #[test]
    fn preemption_is_the_forward_difference() {
        assert_eq!(preemption_sample(5_000, 6_250), Some(1_250));
        assert_eq!(preemption_sample(5_000, 5_000), Some(0));
        assert_eq!(preemption_sample(5_000, 4_999), None);
    }

    #[test]
    fn local_timer_count_of_one_cpu() {
        // The shape of a 2-vCPU guest's /proc/interrupts (trimmed).
        let t = "           CPU0       CPU1       \n  \
              4:        120          0   IO-APIC   4-edge      ttyS0\n\
             NMI:          0          0   Non-maskable interrupts\n\
             LOC:   55201179   63073496   Local timer interrupts\n\
             RES:      81234      92345   Rescheduling interrupts\n\
             ERR:          0\n";
        assert_eq!(local_timer_interrupts(t, 0), Some(55_201_179));
        assert_eq!(local_timer_interrupts(t, 1), Some(63_073_496));
        assert_eq!(local_timer_interrupts(t, 2), None);
        assert_eq!(local_timer_interrupts("", 0), None);
        assert_eq!(delta(10, 25), Some(15));
        assert_eq!(delta(25, 10), None);
    }
}
