//! The one run lifecycle, after rtla's `struct tool_ops` and `run_tool()`: every verb's work is a
//! [`tool::Tool`] built from its resolved, validated configuration and run by the one
//! [`tool::run_tool`] — `begin` (privilege, leftovers of killed runs, signals), `start`, `step`
//! (each tick, or the whole work of a tool that runs to completion), `stop`, `record`,
//! `outputs`. The measurement verbs (`run`, `measure`, `cyclictest`, `monitor`) share one tool,
//! [`measure::MeasureTool`], from a [`Plan`].
//!
//! What it owns: flags resolved against the machine ([`input`], [`resolve`], [`preset`]), the
//! privilege rule ([`privilege`]), the work's clock and leftovers ([`tool::Work`]), the measurement's
//! streaming analysis ([`stream`], [`thread_vars`]), checkpoints ([`checkpoint`]), the live
//! figures ([`live`], from what the threads publish), the record ([`record`]) and the outputs ([`outputs`]: store,
//! then `--json`, with a fallback file).
//!
//! What it must not do: hold a verb's own work (that is `rtscope-verbs`), parse argv, or format
//! text that belongs to `rtscope-report`.

pub mod checkpoint;
pub mod housekeeping;
pub mod input;
/// What a run shows while it goes: the figures (`rtscope_model::live`) and the views that draw
/// them (`rtscope_report::live`).
pub mod live {
    pub use rtscope_model::live::*;
    pub use rtscope_report::live::*;
}
pub mod measure;
pub mod outputs;
pub mod preset;
pub mod privilege;
pub mod record;
pub mod resolve;

/// The one signal module (it lives in `probe`, the lowest crate that runs work).
pub use rtscope_probe::signals;
pub mod stream;
pub mod tail;
pub mod thread_vars;
pub mod tool;

pub use input::VerbError;
pub use live::{LiveSnapshot, ThreadLive, View};
pub use outputs::Outputs;
pub use stream::TraceFileMode;

use rtscope_model::{RunConfig, RunRecord};
use rtscope_probe::MeasureSpec;
use std::path::PathBuf;
use std::time::Duration;

/// Default interval between checkpoints of a stored run.
pub const DEFAULT_CHECKPOINT: Duration = Duration::from_secs(600);

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{0}")]
    Probe(#[from] rtscope_probe::ProbeError),
    #[error("starting the {mechanism} capture: {source}")]
    TraceStart {
        mechanism: &'static str,
        source: rtscope_trace::TraceError,
    },
    #[error("trace capture: {0}")]
    Trace(rtscope_trace::TraceError),
    #[error("{0}")]
    Load(rtscope_load::LoadError),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("storing the run: {0}")]
    Store(String),
    #[error("{} {path}: {detail}", input::Field::TraceFile)]
    TraceFile { path: String, detail: String },
    #[error("the measurement is not running")]
    NotRunning,
}

/// Where the run's record goes.
#[derive(Clone, Debug)]
pub struct StorePlan {
    /// SQLite path or postgres:// URL (None: the default SQLite file).
    pub db: Option<String>,
    /// Interim records every this long (None: none).
    pub checkpoint: Option<Duration>,
    /// Where a record the database does not take is kept (None: the user's fallback directory,
    /// `rtscope_store::fallback::fallback_dir`); a campaign worker gives each cell its own.
    pub fallback_dir: Option<PathBuf>,
}

/// A fully validated run: nothing has been started when this exists.
pub struct Plan {
    pub id: String,
    /// `measure`, `run`, `cyclictest`.
    pub verb: String,
    /// This process's argv, passwords masked.
    pub cmdline: Vec<String>,
    pub tags: std::collections::BTreeMap<String, String>,
    pub config: RunConfig,
    pub spec: MeasureSpec,
    /// Resolved capture mechanism (never Auto): Off when untraced.
    pub trace: rtscope_trace::Mechanism,
    pub trace_keep: rtscope_trace::Keep,
    pub trace_file: Option<PathBuf>,
    pub trace_file_mode: TraceFileMode,
    /// `--bound`: points of the time-to-bound series.
    pub bound_points: Option<u32>,
    pub loads: Option<(Vec<rtscope_load::LoadKind>, rtscope_load::LoadOptions)>,
    /// `--raw`: every sample as CSV, streamed to disk.
    pub raw_csv: Option<PathBuf>,
    /// None: `--no-store`.
    pub store: Option<StorePlan>,
    pub outputs: Outputs,
    /// Warnings found while resolving (they go into the record).
    pub warnings: Vec<rtscope_model::Warning>,
    /// `--until-stable`.
    pub until_stable: Option<resolve::UntilStable>,
    /// How the caller names each field: the record's warnings written during the run refer to
    /// fields through it, as the plan's own do.
    pub field_names: fn(input::Field) -> &'static str,
}

/// What a run produced.
pub struct Outcome {
    pub record: RunRecord,
    /// Files written ("what: path").
    pub written: Vec<String>,
    /// Where the record was stored, or the fallback file and why.
    pub stored: Option<rtscope_store::Saved>,
    /// Output files that could not be written (the record was stored before they were tried).
    pub failed_outputs: Vec<String>,
    /// Warnings for the terminal only (already printed once when they happened: none here yet).
    pub notices: Vec<String>,
}

/// Return the heap a checkpoint freed to the kernel. Building, serialising and storing the
/// interim record takes megabytes for a moment; glibc keeps freed memory for reuse, and with the
/// next checkpoint's slightly different sizes the heap's high-water mark (locked under
/// mlockall) crept up by 1–3 MiB per checkpoint in an hour-long run.
pub(crate) fn release_free_heap() {
    rtscope_sys::mem::malloc_trim();
}

/// Large allocations in their own mappings, returned to the kernel when freed or shrunk.
/// glibc raises its mmap threshold to the size of any mapped block that is freed (up to
/// 32 MiB), so after one burst (a backlog of events during a host stall) buffers of megabytes
/// come from the heap, whose pages stay resident and locked under mlockall after the buffers
/// shrink. A fixed threshold turns that dynamic raise off.
pub(crate) fn pin_malloc_mmap_threshold() {
    // 128 KiB is glibc's default value.
    rtscope_sys::mem::set_mmap_threshold(128 * 1024);
}

/// The calling thread at SCHED_FIFO 1 until dropped (then its old policy again).
pub struct MainPriority(#[allow(dead_code)] rtscope_sys::sched::FifoGuard);

impl MainPriority {
    pub fn fifo1() -> Option<MainPriority> {
        rtscope_sys::sched::FifoGuard::enter(1).map(MainPriority)
    }
}

pub(crate) fn mono_now_ns() -> u64 {
    rtscope_sys::clock::monotonic_ns()
}
