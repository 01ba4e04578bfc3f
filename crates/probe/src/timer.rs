//! Timer modes. Each wakes the thread at the next planned instant and says which instant that
//! was (`expected_ns`) and how many whole periods were missed before it, so overruns are counted
//! and never folded silently into latency.

use crate::ProbeError;
use rtscope_model::TimerMode;
use rtscope_sys::clock::{self, Clock};
use rtscope_sys::timer::{ThreadTimer, TimerFd};

pub struct Wake {
    pub expected_ns: u64,
    /// Periods that expired without a sample (kernel-reported for timerfd/POSIX timers).
    pub missed: u64,
}

pub struct Timer {
    mode: TimerMode,
    clock: Clock,
    interval_ns: u64,
    next_ns: u64,
    fd: Option<TimerFd>,
    posix: Option<ThreadTimer>,
}

fn timer_err((what, source): (&'static str, std::io::Error)) -> ProbeError {
    ProbeError::Timer { what, source }
}

impl Timer {
    /// Arm a timer whose first expiry is `first_ns` on `clock`, then every `interval_ns`.
    pub fn new(
        mode: TimerMode,
        clock: Clock,
        first_ns: u64,
        interval_ns: u64,
    ) -> Result<Timer, ProbeError> {
        let mut t = Timer {
            mode,
            clock,
            interval_ns,
            next_ns: first_ns,
            fd: None,
            posix: None,
        };
        match mode {
            TimerMode::AbsNanosleep | TimerMode::RelNanosleep => {}
            TimerMode::Timerfd => {
                t.fd = Some(TimerFd::new(clock, first_ns, interval_ns).map_err(timer_err)?);
            }
            TimerMode::PosixTimer => {
                // The timer is created for this thread only, with its signal blocked so that
                // the wait picks it up synchronously.
                t.posix = Some(ThreadTimer::new(clock, first_ns, interval_ns).map_err(timer_err)?);
            }
        }
        Ok(t)
    }

    /// Sleep until the next planned instant.
    #[inline]
    pub fn wait(&mut self) -> Result<Wake, ProbeError> {
        match self.mode {
            TimerMode::AbsNanosleep => {
                clock::sleep_until(self.clock, self.next_ns).map_err(|source| {
                    ProbeError::Timer {
                        what: "clock_nanosleep",
                        source,
                    }
                })?;
                Ok(Wake {
                    expected_ns: self.next_ns,
                    missed: 0,
                })
            }
            TimerMode::RelNanosleep => {
                // Relative sleep: the planned instant is "now + interval" at the moment we go to
                // sleep; drift from earlier latencies is not charged to this sample.
                let start = clock::now_ns(self.clock);
                clock::sleep_for(self.clock, self.interval_ns).map_err(|source| {
                    ProbeError::Timer {
                        what: "clock_nanosleep",
                        source,
                    }
                })?;
                Ok(Wake {
                    expected_ns: start + self.interval_ns,
                    missed: 0,
                })
            }
            TimerMode::Timerfd => {
                let Some(fd) = &self.fd else {
                    return Err(ProbeError::Timer {
                        what: "timerfd not armed",
                        source: rtscope_sys::einval(),
                    });
                };
                let n = fd.wait().map_err(|source| ProbeError::Timer {
                    what: "timerfd read",
                    source,
                })?;
                let missed = n.saturating_sub(1);
                let expected = self.next_ns + missed * self.interval_ns;
                self.next_ns = expected + self.interval_ns;
                Ok(Wake {
                    expected_ns: expected,
                    missed,
                })
            }
            TimerMode::PosixTimer => {
                let Some(t) = &self.posix else {
                    return Err(ProbeError::Timer {
                        what: "posix timer not armed",
                        source: rtscope_sys::einval(),
                    });
                };
                let missed = t.wait().map_err(|source| ProbeError::Timer {
                    what: "sigwaitinfo",
                    source,
                })?;
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
