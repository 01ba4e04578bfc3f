//! The seeds' fine-grained benchmarks and the task-set engine: Rhealstone (heursch-2001 §3),
//! sched-scale (heursch-2001 Table 3), the PDLT scan (heursch-2001 §4), M-BWI on the kernel
//! (lelli-2014 Ch. 4), and task sets / rt-app workloads under DEADLINE, FIFO and CFS
//! (lelli-2014 §2.3).
//!
//! What it owns: each benchmark's threads, its kernel objects (SysV, futexes, cpusets) and their
//! cleanup, and the typed result it hands back.
//!
//! What it must not do: format output (that is `rtscope_report`'s), parse argv or name flags, or
//! call libc (kernel access goes through `rtscope_sys`).
pub mod common;
pub mod labdev;
pub mod mbwi;
pub mod pdlt;
pub mod rhealstone;
pub mod sched_scale;
pub mod taskset;
