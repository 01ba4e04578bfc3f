//! Operation timing (§2.3.8). The thesis reads the TSC with `CPUID; RDTSC … RDTSCP; CPUID`
//! (Fig. 2.22). CPUID is a VM exit under a hypervisor — thousands of cycles, and this lab runs
//! in one — so the serialising fences are LFENCE instead: `lfence; rdtsc` at the start (nothing
//! earlier is still executing, nothing later starts before the read) and `rdtscp; lfence` at
//! the end (rdtscp waits for everything before it; the fence keeps later work out). Intel's and
//! AMD's guidance for timing short code; the kernel enables LFENCE's dispatch-serialising mode on
//! AMD for the same use (X86_FEATURE_LFENCE_RDTSC).
//!
//! The TSC is used only when the CPU says it ticks at a constant rate through frequency changes
//! and idle states (`constant_tsc` and `nonstop_tsc` in /proc/cpuinfo) and has `rdtscp`; its
//! rate is calibrated against CLOCK_MONOTONIC. Otherwise durations come from CLOCK_MONOTONIC.
//! Threads stay on their CPU during a measurement in performance mode (§2.3.8: "a 1:1
//! association between threads and CPUs"), so TSC skew between CPUs does not enter.

use rtscope_model::practise::PractiseClock;

#[derive(Clone, Copy, Debug)]
pub enum OpClock {
    Tsc { ns_per_tick: f64 },
    Monotonic,
}

/// CLOCK_MONOTONIC now, ns.
pub fn mono_ns() -> u64 {
    rtscope_sys::clock::monotonic_ns()
}

impl OpClock {
    #[inline(always)]
    pub fn start(self) -> u64 {
        match self {
            #[cfg(target_arch = "x86_64")]
            OpClock::Tsc { .. } => {
                // SAFETY: lfence and rdtsc have no memory operands; rdtscp was checked present.
                unsafe {
                    core::arch::x86_64::_mm_lfence();
                    core::arch::x86_64::_rdtsc()
                }
            }
            _ => mono_ns(),
        }
    }

    #[inline(always)]
    pub fn stop(self) -> u64 {
        match self {
            #[cfg(target_arch = "x86_64")]
            OpClock::Tsc { .. } => {
                let mut aux = 0u32;
                // SAFETY: as in start(); `aux` receives IA32_TSC_AUX.
                unsafe {
                    let t = core::arch::x86_64::__rdtscp(&mut aux);
                    core::arch::x86_64::_mm_lfence();
                    t
                }
            }
            _ => mono_ns(),
        }
    }

    /// Ticks between start() and stop() in ns.
    #[inline]
    pub fn ns(self, ticks: u64) -> u64 {
        match self {
            OpClock::Tsc { ns_per_tick } => (ticks as f64 * ns_per_tick).round() as u64,
            OpClock::Monotonic => ticks,
        }
    }

    /// Pick the clock, calibrate it, and measure the cost of an empty timed region.
    pub fn detect() -> (OpClock, PractiseClock) {
        let flags = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("flags"))
                    .map(|l| l.to_string())
            })
            .unwrap_or_default();
        let has = |f: &str| flags.split_whitespace().any(|x| x == f);
        let tsc_ok = cfg!(target_arch = "x86_64")
            && has("constant_tsc")
            && has("nonstop_tsc")
            && has("rdtscp");
        let (clock, hz, why) = if tsc_ok {
            let ns_per_tick = calibrate();
            (
                OpClock::Tsc { ns_per_tick },
                Some(1e9 / ns_per_tick),
                "the CPU has constant_tsc, nonstop_tsc and rdtscp: TSC read with lfence;rdtsc … rdtscp;lfence (CPUID, Fig. 2.22's fence, is a VM exit under a hypervisor), rate calibrated against CLOCK_MONOTONIC over 50 ms".to_string(),
            )
        } else {
            (
                OpClock::Monotonic,
                None,
                "no invariant TSC with rdtscp (constant_tsc, nonstop_tsc, rdtscp in /proc/cpuinfo): CLOCK_MONOTONIC through the vDSO".to_string(),
            )
        };
        let overhead_ns = clock.overhead_ns();
        (
            clock,
            PractiseClock {
                source: match clock {
                    OpClock::Tsc { .. } => "tsc".into(),
                    OpClock::Monotonic => "clock_monotonic".into(),
                },
                tsc_hz: hz,
                overhead_ns,
                why,
            },
        )
    }

    /// Median of 10 001 empty timed regions.
    pub fn overhead_ns(self) -> u64 {
        let mut v: Vec<u64> = (0..10_001)
            .map(|_| {
                let a = self.start();
                let b = self.stop();
                self.ns(b.saturating_sub(a))
            })
            .collect();
        v.sort_unstable();
        v[v.len() / 2]
    }
}

/// ns per TSC tick: TSC and CLOCK_MONOTONIC read around a 50 ms sleep, each monotonic reading
/// taken as the midpoint of two around the TSC read.
#[cfg(target_arch = "x86_64")]
fn calibrate() -> f64 {
    let pair = || {
        let a = mono_ns();
        // SAFETY: as in OpClock::start.
        let t = unsafe { core::arch::x86_64::_rdtsc() };
        let b = mono_ns();
        ((a + b) / 2, t)
    };
    let (m0, t0) = pair();
    std::thread::sleep(std::time::Duration::from_millis(50));
    let (m1, t1) = pair();
    (m1 - m0) as f64 / (t1.wrapping_sub(t0)).max(1) as f64
}

#[cfg(not(target_arch = "x86_64"))]
fn calibrate() -> f64 {
    1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detected_clock_measures_a_sleep() {
        let (c, info) = OpClock::detect();
        let a = c.start();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let d = c.ns(c.stop() - a);
        // 20 ms asleep: at least 20 ms, and not absurdly more even on a loaded 2-CPU VM.
        assert!((20_000_000..400_000_000).contains(&d), "{d} ns ({info:?})");
        assert!(info.overhead_ns < 100_000, "{info:?}");
        if let Some(hz) = info.tsc_hz {
            assert!((1e8..1e11).contains(&hz), "{hz}");
        }
    }
}
