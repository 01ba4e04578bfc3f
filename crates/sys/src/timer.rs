//! Kernel timers that wake a thread periodically and report expirations: timerfd, and a POSIX
//! timer delivering a real-time signal to one thread. `wait` is called once per sample: inlined,
//! one syscall, no allocation.

use crate::clock::{ns_to_ts, Clock};
use crate::signals::SignalMask;
use std::io;

/// A timerfd armed at an absolute first expiry, then every interval.
pub struct TimerFd {
    fd: i32,
}

impl TimerFd {
    pub fn new(
        clock: Clock,
        first_ns: u64,
        interval_ns: u64,
    ) -> Result<TimerFd, (&'static str, io::Error)> {
        // SAFETY: plain syscall.
        let fd = unsafe { libc::timerfd_create(clock.raw(), libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(("timerfd_create", io::Error::last_os_error()));
        }
        let t = TimerFd { fd };
        let its = libc::itimerspec {
            it_interval: ns_to_ts(interval_ns),
            it_value: ns_to_ts(first_ns),
        };
        // SAFETY: `its` is valid for the call.
        let rc = unsafe {
            libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &its, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(("timerfd_settime", io::Error::last_os_error()));
        }
        Ok(t)
    }

    /// A timerfd on `clock`, not armed yet (see [`TimerFd::arm_at`]).
    pub fn unarmed(clock: Clock) -> io::Result<TimerFd> {
        // SAFETY: plain syscall.
        let fd = unsafe { libc::timerfd_create(clock.raw(), libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(TimerFd { fd })
    }

    /// Arm once, to expire at the absolute time `at_ns` (no interval).
    pub fn arm_at(&self, at_ns: u64) -> io::Result<()> {
        let its = libc::itimerspec {
            it_interval: ns_to_ts(0),
            it_value: ns_to_ts(at_ns),
        };
        // SAFETY: valid itimerspec; old value not requested.
        let rc = unsafe {
            libc::timerfd_settime(self.fd, libc::TFD_TIMER_ABSTIME, &its, std::ptr::null_mut())
        };
        crate::check(rc).map(|_| ())
    }

    /// One blocking read of the expiration count (no retry: EINTR is the caller's).
    #[inline]
    pub fn read_once(&self) -> io::Result<u64> {
        let mut n: u64 = 0;
        // SAFETY: reading 8 bytes into a u64.
        let rc = unsafe { libc::read(self.fd, &mut n as *mut u64 as *mut _, 8) };
        if rc == 8 {
            Ok(n)
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Block until the timer expires; the number of expirations since the last read (≥ 1).
    /// EINTR is retried.
    #[inline]
    pub fn wait(&self) -> io::Result<u64> {
        let mut n: u64 = 0;
        loop {
            // SAFETY: reading 8 bytes into a u64.
            let rc = unsafe { libc::read(self.fd, &mut n as *mut u64 as *mut _, 8) };
            if rc == 8 {
                return Ok(n);
            }
            let e = io::Error::last_os_error();
            if !crate::is_eintr(&e) {
                return Err(e);
            }
        }
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        crate::process::close(self.fd);
    }
}

/// A POSIX timer that sends SIGRTMIN+1 to the creating thread only (SIGEV_THREAD_ID), with that
/// signal blocked so that [`ThreadTimer::wait`] takes it synchronously.
pub struct ThreadTimer {
    id: libc::timer_t,
    set: SignalMask,
}

impl ThreadTimer {
    pub fn new(
        clock: Clock,
        first_ns: u64,
        interval_ns: u64,
    ) -> Result<ThreadTimer, (&'static str, io::Error)> {
        let (set, signo) = SignalMask::realtime(1);
        set.block();
        let its = libc::itimerspec {
            it_interval: ns_to_ts(interval_ns),
            it_value: ns_to_ts(first_ns),
        };
        // SAFETY: sigevent is plain data initialised before use; timer_create writes the id.
        unsafe {
            let mut sev: libc::sigevent = std::mem::zeroed();
            sev.sigev_notify = libc::SIGEV_THREAD_ID;
            sev.sigev_signo = signo;
            sev.sigev_notify_thread_id = crate::sched::gettid();
            let mut id: libc::timer_t = std::ptr::null_mut();
            if libc::timer_create(clock.raw(), &mut sev, &mut id) != 0 {
                return Err(("timer_create", io::Error::last_os_error()));
            }
            let t = ThreadTimer { id, set };
            if libc::timer_settime(id, libc::TIMER_ABSTIME, &its, std::ptr::null_mut()) != 0 {
                return Err(("timer_settime", io::Error::last_os_error()));
            }
            Ok(t)
        }
    }

    /// Block until the timer's signal arrives (EINTR retried); the overrun count (periods that
    /// expired without a delivered signal).
    #[inline]
    pub fn wait(&self) -> io::Result<u64> {
        loop {
            match self.set.wait() {
                Ok(_) => break,
                Err(e) if crate::is_eintr(&e) => continue,
                Err(e) => return Err(e),
            }
        }
        // SAFETY: id is a live timer.
        Ok(unsafe { libc::timer_getoverrun(self.id) }.max(0) as u64)
    }
}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        // SAFETY: deleting the timer this value created.
        unsafe { libc::timer_delete(self.id) };
    }
}
