//! Clocks and sleeps. `now_ns` and `sleep_until` are the calls of the per-sample loop: inlined,
//! one vDSO call / one syscall each, no allocation.

use std::io;

/// A kernel clock id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock(libc::clockid_t);

impl Clock {
    pub const MONOTONIC: Clock = Clock(libc::CLOCK_MONOTONIC);
    pub const REALTIME: Clock = Clock(libc::CLOCK_REALTIME);
    /// CPU time consumed by the calling thread.
    pub const THREAD_CPUTIME: Clock = Clock(libc::CLOCK_THREAD_CPUTIME_ID);
}

impl From<rtscope_model::ClockId> for Clock {
    fn from(c: rtscope_model::ClockId) -> Clock {
        match c {
            rtscope_model::ClockId::Monotonic => Clock::MONOTONIC,
            rtscope_model::ClockId::Realtime => Clock::REALTIME,
        }
    }
}

#[inline]
pub(crate) fn ts_to_ns(ts: &libc::timespec) -> u64 {
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[inline]
pub(crate) fn ns_to_ts(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// `clock` now, in ns.
#[inline]
pub fn now_ns(clock: Clock) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec; the clock ids of `Clock` are always supported (vDSO).
    unsafe { libc::clock_gettime(clock.0, &mut ts) };
    ts_to_ns(&ts)
}

/// CLOCK_MONOTONIC now, in ns (the clock samples and kernel event timestamps are on).
#[inline]
pub fn monotonic_ns() -> u64 {
    now_ns(Clock::MONOTONIC)
}

/// CPU time of the calling thread, in ns.
#[inline]
pub fn thread_cpu_ns() -> u64 {
    now_ns(Clock::THREAD_CPUTIME)
}

/// One absolute sleep until `t_ns` on `clock` (clock_nanosleep, TIMER_ABSTIME). `Err` carries the
/// errno, EINTR included: the caller decides whether a signal ends the wait.
#[inline]
pub fn sleep_until_once(clock: Clock, t_ns: u64) -> io::Result<()> {
    let ts = ns_to_ts(t_ns);
    // SAFETY: ts is valid; the remaining time is unused with TIMER_ABSTIME.
    let rc =
        unsafe { libc::clock_nanosleep(clock.0, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// Sleep until `t_ns` on `clock`, resuming after signals (an absolute deadline does not move).
#[inline]
pub fn sleep_until(clock: Clock, t_ns: u64) -> io::Result<()> {
    loop {
        match sleep_until_once(clock, t_ns) {
            Err(e) if crate::is_eintr(&e) => continue,
            r => return r,
        }
    }
}

/// Sleep `ns` on `clock` (relative clock_nanosleep), resuming with the remaining time after
/// signals.
#[inline]
pub fn sleep_for(clock: Clock, ns: u64) -> io::Result<()> {
    let mut req = ns_to_ts(ns);
    loop {
        let mut rem = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: req/rem valid.
        let rc = unsafe { libc::clock_nanosleep(clock.0, 0, &req, &mut rem) };
        match rc {
            0 => return Ok(()),
            libc::EINTR => req = rem,
            e => return Err(io::Error::from_raw_os_error(e)),
        }
    }
}

impl Clock {
    pub(crate) fn raw(self) -> libc::clockid_t {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_until_an_absolute_instant() {
        let t = monotonic_ns() + 2_000_000;
        sleep_until(Clock::MONOTONIC, t).unwrap();
        assert!(monotonic_ns() >= t);
        let t0 = monotonic_ns();
        sleep_for(Clock::MONOTONIC, 1_000_000).unwrap();
        assert!(monotonic_ns() >= t0 + 1_000_000);
    }

    #[test]
    fn timespec_roundtrip() {
        for ns in [0, 1, 999_999_999, 1_000_000_000, 12_345_678_901_234] {
            assert_eq!(ts_to_ns(&ns_to_ts(ns)), ns);
        }
    }
}
