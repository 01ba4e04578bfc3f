//! Test scaffolding shared by the real-kernel tests: a minimal cyclic measurement thread (the
//! real loop is the probe crate's) and a SCHED_OTHER ping-pong load.
#![allow(dead_code)]

use rtscope_model::record::RawSample;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub fn now() -> u64 {
    rtscope_trace::sys::monotonic_ns()
}

/// A minimal cyclic measurement thread (test scaffolding; the real loop is the probe crate's).
pub fn measure(cpu: u32, cycles: u64, period_ns: u64) -> Vec<RawSample> {
    std::thread::spawn(move || {
        // SAFETY: plain syscalls on the calling thread with valid arguments.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            let p = libc::sched_param { sched_priority: 90 };
            libc::sched_setscheduler(0, libc::SCHED_FIFO, &p);
        }
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
        let mut out = Vec::with_capacity(cycles as usize);
        let mut next = now() + 10 * period_ns;
        for cycle in 0..cycles {
            let ts = libc::timespec {
                tv_sec: (next / 1_000_000_000) as i64,
                tv_nsec: (next % 1_000_000_000) as i64,
            };
            // SAFETY: valid timespec; remaining time not needed for TIMER_ABSTIME.
            unsafe {
                libc::clock_nanosleep(
                    libc::CLOCK_MONOTONIC,
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                )
            };
            let t = now();
            out.push(RawSample {
                cpu,
                tid,
                cycle,
                expected_ns: next,
                latency_ns: t.saturating_sub(next),
            });
            next += period_ns;
        }
        out
    })
    .join()
    .unwrap_or_default()
}

/// `pairs` pairs of SCHED_OTHER threads passing one byte back and forth over Unix sockets (a
/// miniature hackbench), each spinning `work_us` before answering: with 100 µs, about 10 000
/// switches and wake-ups per second per CPU between SCHED_OTHER tasks (the order of
/// `rtscope load io`). Stops when the returned guard is dropped.
pub struct PingPong {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<u64>>,
}

impl PingPong {
    pub fn start(pairs: usize, work_us: u64) -> std::io::Result<PingPong> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for _ in 0..pairs {
            let (a, b) = std::os::unix::net::UnixStream::pair()?;
            for (mut s, first) in [(a, true), (b, false)] {
                let stop = stop.clone();
                s.set_read_timeout(Some(std::time::Duration::from_millis(50)))?;
                threads.push(std::thread::spawn(move || {
                    let mut n = 0u64;
                    let mut buf = [0u8; 1];
                    if first && s.write_all(&[1]).is_err() {
                        return 0;
                    }
                    while !stop.load(Ordering::Relaxed) {
                        match s.read(&mut buf) {
                            Ok(1) => {
                                n += 1;
                                let t = now();
                                while now() - t < work_us * 1000 {
                                    std::hint::spin_loop();
                                }
                                if s.write_all(&buf).is_err() {
                                    break;
                                }
                            }
                            Ok(_) => break,
                            Err(_) => continue, // timeout: look at the flag
                        }
                    }
                    n
                }));
            }
        }
        Ok(PingPong { stop, threads })
    }

    /// Stop and return the number of messages passed.
    pub fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.threads.drain(..).map(|t| t.join().unwrap_or(0)).sum()
    }
}

impl Drop for PingPong {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The tasks a capture shows switched out at least once. A task switched in and never out in a
/// capture that keeps every switch is one the kernel hides from the probes (docs/tracing.md).
pub fn switched_out(events: &[rtscope_model::event::Event]) -> std::collections::HashSet<u32> {
    events
        .iter()
        .filter_map(|e| match e.kind {
            rtscope_model::event::EventKind::Switch { prev_pid, .. } => Some(prev_pid),
            _ => None,
        })
        .collect()
}
