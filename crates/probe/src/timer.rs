//! Timer modes. Each wakes the thread at the next planned instant and says which instant that
//! was (`expected_ns`) and how many whole periods were missed before it, so overruns are counted
//! and never folded silently into latency.

use crate::{sys, ProbeError};
use rtscope_model::TimerMode;

pub struct Wake {
    pub expected_ns: u64,
    /// Periods that expired without a sample (kernel-reported for timerfd/POSIX timers).
    pub missed: u64,
}

pub struct Timer {
    mode: TimerMode,
    clock: libc::clockid_t,
    interval_ns: u64,
    next_ns: u64,
    fd: i32,
    posix: Option<(libc::timer_t, libc::sigset_t)>,
}

fn timer_err(what: &'static str) -> ProbeError {
    ProbeError::Timer {
        what,
        source: std::io::Error::last_os_error(),
    }
}

impl Timer {
    /// Arm a timer whose first expiry is `first_ns` on `clock`, then every `interval_ns`.
    pub fn new(
        mode: TimerMode,
        clock: libc::clockid_t,
        first_ns: u64,
        interval_ns: u64,
    ) -> Result<Timer, ProbeError> {
        let mut t = Timer {
            mode,
            clock,
            interval_ns,
            next_ns: first_ns,
            fd: -1,
            posix: None,
        };
        let its = libc::itimerspec {
            it_interval: sys::ns_to_ts(interval_ns),
            it_value: sys::ns_to_ts(first_ns),
        };
        match mode {
            TimerMode::AbsNanosleep | TimerMode::RelNanosleep => {}
            TimerMode::Timerfd => {
                // SAFETY: plain syscalls; `its` is valid for the call.
                let fd = unsafe { libc::timerfd_create(clock, libc::TFD_CLOEXEC) };
                if fd < 0 {
                    return Err(timer_err("timerfd_create"));
                }
                t.fd = fd;
                let rc = unsafe {
                    libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &its, std::ptr::null_mut())
                };
                if rc != 0 {
                    return Err(timer_err("timerfd_settime"));
                }
            }
            TimerMode::PosixTimer => {
                let signo = libc::SIGRTMIN() + 1;
                // SAFETY: sigset and sigevent are plain data initialised before use; the timer
                // is created for this thread only (SIGEV_THREAD_ID) with the signal blocked so
                // that sigwaitinfo picks it up synchronously.
                unsafe {
                    let mut set: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut set);
                    libc::sigaddset(&mut set, signo);
                    libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                    let mut sev: libc::sigevent = std::mem::zeroed();
                    sev.sigev_notify = libc::SIGEV_THREAD_ID;
                    sev.sigev_signo = signo;
                    sev.sigev_notify_thread_id = sys::gettid();
                    let mut id: libc::timer_t = std::ptr::null_mut();
                    if libc::timer_create(clock, &mut sev, &mut id) != 0 {
                        return Err(timer_err("timer_create"));
                    }
                    t.posix = Some((id, set));
                    if libc::timer_settime(id, libc::TIMER_ABSTIME, &its, std::ptr::null_mut()) != 0
                    {
                        return Err(timer_err("timer_settime"));
                    }
                }
            }
        }
        Ok(t)
    }

    /// Sleep until the next planned instant.
    #[inline]
    pub fn wait(&mut self) -> Result<Wake, ProbeError> {
        match self.mode {
            TimerMode::AbsNanosleep => {
                let ts = sys::ns_to_ts(self.next_ns);
                loop {
                    // SAFETY: ts valid; remaining time unused with TIMER_ABSTIME.
                    let rc = unsafe {
                        libc::clock_nanosleep(
                            self.clock,
                            libc::TIMER_ABSTIME,
                            &ts,
                            std::ptr::null_mut(),
                        )
                    };
                    match rc {
                        0 => break,
                        libc::EINTR => continue,
                        e => {
                            return Err(ProbeError::Timer {
                                what: "clock_nanosleep",
                                source: std::io::Error::from_raw_os_error(e),
                            })
                        }
                    }
                }
                Ok(Wake {
                    expected_ns: self.next_ns,
                    missed: 0,
                })
            }
            TimerMode::RelNanosleep => {
                // Relative sleep: the planned instant is "now + interval" at the moment we go to
                // sleep; drift from earlier latencies is not charged to this sample.
                let start = sys::now_ns(self.clock);
                let mut req = sys::ns_to_ts(self.interval_ns);
                loop {
                    let mut rem = libc::timespec {
                        tv_sec: 0,
                        tv_nsec: 0,
                    };
                    // SAFETY: req/rem valid.
                    let rc = unsafe { libc::clock_nanosleep(self.clock, 0, &req, &mut rem) };
                    match rc {
                        0 => break,
                        libc::EINTR => req = rem,
                        e => {
                            return Err(ProbeError::Timer {
                                what: "clock_nanosleep",
                                source: std::io::Error::from_raw_os_error(e),
                            })
                        }
                    }
                }
                Ok(Wake {
                    expected_ns: start + self.interval_ns,
                    missed: 0,
                })
            }
            TimerMode::Timerfd => {
                let mut n: u64 = 0;
                loop {
                    // SAFETY: reading 8 bytes into a u64.
                    let rc = unsafe { libc::read(self.fd, &mut n as *mut u64 as *mut _, 8) };
                    if rc == 8 {
                        break;
                    }
                    let e = std::io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EINTR) {
                        return Err(ProbeError::Timer {
                            what: "timerfd read",
                            source: e,
                        });
                    }
                }
                let missed = n.saturating_sub(1);
                let expected = self.next_ns + missed * self.interval_ns;
                self.next_ns = expected + self.interval_ns;
                Ok(Wake {
                    expected_ns: expected,
                    missed,
                })
            }
            TimerMode::PosixTimer => {
                let Some((id, set)) = self.posix else {
                    return Err(ProbeError::Timer {
                        what: "posix timer not armed",
                        source: std::io::Error::from_raw_os_error(libc::EINVAL),
                    });
                };
                loop {
                    // SAFETY: set is the blocked timer signal.
                    let rc = unsafe { libc::sigwaitinfo(&set, std::ptr::null_mut()) };
                    if rc >= 0 {
                        break;
                    }
                    let e = std::io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EINTR) {
                        return Err(ProbeError::Timer {
                            what: "sigwaitinfo",
                            source: e,
                        });
                    }
                }
                // SAFETY: id is a live timer.
                let missed = unsafe { libc::timer_getoverrun(id) }.max(0) as u64;
                let expected = self.next_ns + missed * self.interval_ns;
                self.next_ns = expected + self.interval_ns;
                Ok(Wake {
                    expected_ns: expected,
                    missed,
                })
            }
        }
    }

    /// After a sample taken at `now_ns`: plan the next instant. For the sleep-based modes, whole
    /// periods already in the past are skipped and returned as missed.
    #[inline]
    pub fn advance(&mut self, now_ns: u64) -> u64 {
        match self.mode {
            TimerMode::AbsNanosleep => {
                self.next_ns += self.interval_ns;
                let mut missed = 0;
                if self.next_ns <= now_ns {
                    missed = (now_ns - self.next_ns) / self.interval_ns + 1;
                    self.next_ns += missed * self.interval_ns;
                }
                missed
            }
            TimerMode::RelNanosleep => {
                // A relative sleep cannot miss a period: it is re-planned from each wake-up.
                0
            }
            TimerMode::Timerfd | TimerMode::PosixTimer => 0,
        }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        // SAFETY: closing resources this Timer created.
        unsafe {
            if self.fd >= 0 {
                libc::close(self.fd);
            }
            if let Some((id, _)) = self.posix {
                libc::timer_delete(id);
            }
        }
    }
}
