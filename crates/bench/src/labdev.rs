//! The user side of `/dev/rtscope_lab`, the lab's test driver (crates/lab/module/rtscope_lab.c):
//! heursch-2001's device interrupt (an `outb()` to a parallel port raises its IRQ) and its
//! driver call with N preemption points. The device exists only in the kernel lab's guests
//! (`rtscope lab run`, kernels built by `rtscope lab kernel build`).
//!
//! The structs mirror the module's; the ioctl numbers are `_IOWR('R', n, struct)`.

use crate::common::{BenchError, Result};
use std::os::fd::OwnedFd;

pub const DEVICE: &str = "/dev/rtscope_lab";

/// Why the device cannot be used here (None: it can).
pub fn unavailable() -> Option<String> {
    if std::path::Path::new(DEVICE).exists() {
        None
    } else {
        Some(format!(
            "{DEVICE} is missing: the device interrupt and the test driver come from the rtscope_lab module, which `rtscope lab run` loads into the kernels the lab builds (e.g. `rtscope lab run {} trace -- …`)",
            rtscope_model::field::LAB_KERNEL
        ))
    }
}

#[repr(C)]
#[derive(Default, Debug)]
struct Irt {
    count: u32,
    timeouts: u32,
    samples: u64,
    cpu: i32,
    pad: u32,
}

/// The driver call's parameters and results.
#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
pub struct Run {
    pub loops: u32,
    pub points: u32,
    /// Raise the interrupt at this iteration (1 ..= loops − 1); 0: never.
    pub raise_at: u32,
    pub points_done: u32,
    pub t_start: u64,
    pub t_raise: u64,
    pub t_end: u64,
    pub sink: u64,
}

/// What the producer's wait returns.
#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
pub struct Wait {
    pub t_raise: u64,
    pub t_isr: u64,
    pub t_woken: u64,
    pub timed_out: u32,
    pad: u32,
}

const fn iowr(nr: u64, size: usize) -> u64 {
    (3 << 30) | ((size as u64) << 16) | ((b'R' as u64) << 8) | nr
}
const IOC_IRT: u64 = iowr(1, std::mem::size_of::<Irt>());
const IOC_RUN: u64 = iowr(2, std::mem::size_of::<Run>());
const IOC_WAIT: u64 = iowr(3, std::mem::size_of::<Wait>());

/// Samples the module accepts per IRT call.
pub const MAX_IRT: u32 = 100_000;
/// Longest loop the driver call accepts.
pub const MAX_LOOPS: u32 = 100_000_000;

pub struct Device(OwnedFd);

impl Device {
    pub fn open() -> Result<Device> {
        if let Some(why) = unavailable() {
            return Err(BenchError::Unavailable(why));
        }
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(DEVICE)
            .map_err(|e| BenchError::io(format!("opening {DEVICE}"), e))?;
        Ok(Device(f.into()))
    }

    fn ioctl<T>(&self, req: u64, arg: &mut T, what: &str) -> Result<()> {
        // SAFETY: `arg` is the #[repr(C)] struct the module expects for `req` (same size, encoded
        // in the request number), valid for reads and writes for the call.
        let r = unsafe { rtscope_sys::fs::ioctl(&self.0, req, arg) };
        if r.is_err() {
            return Err(BenchError::last_os(format!("{DEVICE}: {what}")));
        }
        Ok(())
    }

    /// Raise the device interrupt `n` times from this thread (in the driver, interrupts on) and
    /// return, per raise, the clock read just before the `outb()` → the handler's first clock
    /// read (ns; `None` for a raise whose handler did not run within 10 ms), and the CPU.
    pub fn interrupt_response(&self, n: u32) -> Result<(Vec<Option<u64>>, i32)> {
        let n = n.clamp(1, MAX_IRT);
        let mut buf = vec![0u64; n as usize];
        let mut a = Irt {
            count: n,
            samples: buf.as_mut_ptr() as u64,
            ..Default::default()
        };
        self.ioctl(IOC_IRT, &mut a, "interrupt response")?;
        buf.truncate(a.count.min(n) as usize);
        Ok((
            buf.into_iter()
                .map(|v| (v != u64::MAX).then_some(v))
                .collect(),
            a.cpu,
        ))
    }

    /// The driver call: `loops` iterations, `points` preemption points, the interrupt at
    /// `raise_at` (0: none).
    pub fn run(&self, loops: u32, points: u32, raise_at: u32) -> Result<Run> {
        let mut a = Run {
            loops,
            points,
            raise_at,
            ..Default::default()
        };
        self.ioctl(IOC_RUN, &mut a, "driver call")?;
        Ok(a)
    }

    /// Block until the next device interrupt (at most 200 ms).
    pub fn wait(&self) -> Result<Wait> {
        let mut a = Wait::default();
        self.ioctl(IOC_WAIT, &mut a, "wait")?;
        Ok(a)
    }
}

/// Raise the device interrupt from user space (the PDLT scan's points after the call: the
/// producer then preempts a process running in user space). Needs I/O port access (root; the
/// guest has no lockdown).
pub struct PortAccess;

impl PortAccess {
    pub fn get() -> Result<PortAccess> {
        if rtscope_sys::system::ioperm(PARPORT_IO as u64, 3, true).is_err() {
            return Err(BenchError::last_os("ioperm on the parallel port"));
        }
        Ok(PortAccess)
    }

    /// One raise (the module's CTR_RAISE to the control register).
    #[inline]
    pub fn raise(&self) {
        // SAFETY: the port is ours (ioperm above); outb to the control register.
        unsafe {
            std::arch::asm!("out dx, al", in("dx") PARPORT_IO + 2, in("al") CTR_RAISE, options(nomem, nostack, preserves_flags));
        }
    }
}

impl Drop for PortAccess {
    fn drop(&mut self) {
        let _ = rtscope_sys::system::ioperm(PARPORT_IO as u64, 3, false);
    }
}

const PARPORT_IO: u16 = 0x378;
/// SELECT | INIT | INTEN, STROBE low: the module's raise.
const CTR_RAISE: u8 = 0x08 | 0x04 | 0x10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_structs_and_requests_match_the_module() {
        // struct rtl_irt: u32 count, u32 timeouts, u64 samples, s32 cpu, u32 pad = 24 bytes;
        // rtl_run: 4 × u32 + 4 × u64 = 48; rtl_wait: 3 × u64 + 2 × u32 = 32.
        assert_eq!(std::mem::size_of::<Irt>(), 24);
        assert_eq!(std::mem::size_of::<Run>(), 48);
        assert_eq!(std::mem::size_of::<Wait>(), 32);
        // _IOWR('R', 1, 24 bytes) = 0xC0000000 | 24 << 16 | 0x52 << 8 | 1.
        assert_eq!(IOC_IRT, 0xC018_5201);
        assert_eq!(IOC_RUN, 0xC030_5202);
        assert_eq!(IOC_WAIT, 0xC020_5203);
    }

    #[test]
    fn without_the_module_it_says_where_it_comes_from() {
        if std::path::Path::new(DEVICE).exists() {
            return;
        }
        let e = Device::open().err().expect("no device here");
        assert!(e.to_string().contains("rtscope lab run"), "{e}");
    }
}
