//! Background workloads for latency measurements: the idle, CPU-bound and I/O-bound scenarios
//! of the LITMUS^RT / PREEMPT_RT comparison study (Cerqueira & Brandenburg, OSPERT'13, §3),
//! plus any external command.
//!
//! A latency figure means nothing without the load it was measured under, so every load reports
//! its own counters and machine-wide /proc deltas as [`rtscope_model::LoadReport`]s.
//!
//! Process model (see `supervise.rs`): [`start`] forks one *supervisor* process (own process
//! group, `PR_SET_PDEATHSIG(SIGTERM)` so it can still clean up when rtscope is SIGKILLed), which
//! forks the workers (each `PR_SET_PDEATHSIG(SIGKILL)`, own process group so anything an `exec`
//! load spawns is killed too). Counters live in a shared anonymous mapping; workers never print.
//!
//! Call [`start`] from a thread that outlives the load (e.g. the main thread):
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked exits, not the process.

mod cpu_cache;
mod disk;
mod error;
mod exec;
mod hackbench;
mod net;
mod options;
mod plan;
pub mod procstat;
mod report;
mod shm;
mod supervise;
mod sys;
mod validate;

pub use error::{Field, LoadError};
pub use options::{parse_size, DiskTool, LoadKind, LoadOptions, LoadPolicy, LoadSettings};
pub use supervise::RunningLoads;
pub use sys::parse_cpu_list;

/// Parses a comma-separated list of kinds (`"cpu-cache,io"`). Duplicates, overlaps (`io,disk`)
/// and `idle` mixed with real loads are refused.
pub fn parse_kinds(spec: &str) -> Result<Vec<LoadKind>, LoadError> {
    options::parse_kinds(spec)
}

/// Checks kinds given one by one (typed on the command line) as [`parse_kinds`] checks a list:
/// no duplicates, no overlaps, `idle` alone.
pub fn check_kinds(kinds: &[LoadKind]) -> Result<(), LoadError> {
    let spec: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    options::check_kinds_in(kinds, &spec.join(","))
}

/// Checks every option against the machine (CPUs online, memory for the working set, scratch
/// directory writable and large enough, port free, RT throttling on for `fifo`) without changing
/// anything. A `LoadError` here is bad input: nothing has been started.
pub fn validate(kinds: &[LoadKind], opts: &LoadOptions) -> Result<(), LoadError> {
    validate::validate(kinds, opts).map(|_| ())
}

/// Validates, then starts the loads. Returns once every worker has been forked; the loads stop on
/// [`RunningLoads::stop`] or when the handle is dropped.
pub fn start(kinds: &[LoadKind], opts: &LoadOptions) -> Result<RunningLoads, LoadError> {
    let resolved = validate::validate(kinds, opts)?;
    supervise::start(kinds, opts, resolved)
}
