//! Hygiene that keeps a measurement honest: memory locked and prefaulted (no page faults in the
//! loop), /dev/cpu_dma_latency held at 0 (no deep C-states adding exit latency), and timer slack.

use crate::ProbeError;
use std::fs::File;
use std::io::{Read, Write};

/// Lock all current and future memory (MCL_FUTURE makes later thread stacks and buffers
/// resident as they are mapped).
pub fn mlockall() -> Result<(), ProbeError> {
    rtscope_sys::mem::lock_all().map_err(ProbeError::Mlock)
}

pub fn munlockall() {
    rtscope_sys::mem::unlock_all();
}

/// Touch `bytes` of this thread's stack so that the measurement loop never faults on it.
#[inline(never)]
pub fn prefault_stack(bytes: usize) -> usize {
    const CHUNK: usize = 16 * 1024;
    fn touch(left: usize) -> usize {
        let mut buf = [0u8; CHUNK];
        // volatile: keep the writes (and so the page faults) from being optimised away.
        for i in (0..CHUNK).step_by(4096) {
            // SAFETY: i < CHUNK.
            unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(i), 1) };
        }
        std::hint::black_box(&buf);
        if left > CHUNK {
            CHUNK + touch(left - CHUNK)
        } else {
            CHUNK
        }
    }
    touch(bytes)
}

/// Holds a PM QoS request on /dev/cpu_dma_latency for as long as it lives. The kernel drops the
/// request when the file is closed — on drop, on exit, and even when rtscope is SIGKILLed — so
/// the setting can never outlive the run.
pub struct CpuDmaLatency {
    _file: File,
    pub requested_us: u32,
    pub previous_us: Option<i32>,
}

impl CpuDmaLatency {
    pub fn hold(us: u32) -> Result<Self, ProbeError> {
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/cpu_dma_latency")
            .map_err(ProbeError::DmaLatency)?;
        let mut cur = [0u8; 4];
        let previous_us = f.read_exact(&mut cur).ok().map(|_| i32::from_ne_bytes(cur));
        f.write_all(&(us as i32).to_ne_bytes())
            .map_err(ProbeError::DmaLatency)?;
        Ok(CpuDmaLatency {
            _file: f,
            requested_us: us,
            previous_us,
        })
    }
}

/// Current aggregated cpu_dma_latency value (µs) — used by tests to check restoration.
pub fn read_cpu_dma_latency() -> std::io::Result<i32> {
    let mut f = File::open("/dev/cpu_dma_latency")?;
    let mut b = [0u8; 4];
    f.read_exact(&mut b)?;
    Ok(i32::from_ne_bytes(b))
}
