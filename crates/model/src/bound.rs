//! Latency-bound results (ECRTS'20 Theorem 8). These JSON field names are a published interface:
//! `{"schema_version", "cpus":[{"cpu", "ifl_ns", "thread":{…}, "bounds":{"no_interrupts":
//! {"latency_ns","converged"}, …}}]}`; everything else here is additive. Schema:
//! `docs/schema/bound.schema.json`. Plain data; the analysis lives in `rtscope-analysis::bound`.

use serde::{Deserialize, Serialize};

/// Version of the bound JSON (`docs/schema/bound.schema.json`).
pub const BOUND_SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct BoundReport {
    pub schema_version: u32,
    pub cpus: Vec<CpuBound>,
    /// True when some thread terms were estimated (kernel lacks preemptirq tracepoints): the
    /// numbers are then an **estimate, not a sound bound**.
    #[serde(default)]
    pub estimate: bool,
    /// True only when the bound is sound as far as rtscope can tell: every thread term measured
    /// per the paper and nothing lost by the capture or the in-kernel reduction (a lost event can
    /// hide an interrupt or the end of an interval, so any maximum may be low). Records from
    /// before this field read as false; `not_sound_because` says why, one sentence per cause.
    #[serde(default)]
    pub sound: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_sound_because: Vec<String>,
    /// Where the data came from: `json`, `rtsl-db`, `trace`.
    #[serde(default)]
    pub input: String,
    /// Fixed-point iterations stop (not converged) once L exceeds this.
    #[serde(default)]
    pub cap_ns: u64,
    /// Normalisations applied to the input and other things the reader should know.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Time-to-bound series (bound and observed maximum as the run progressed), when recorded.
    #[serde(default)]
    pub series: Vec<BoundSeriesPoint>,
    /// Present when the bound was computed from the online (streaming) summary of a run rather
    /// than from every interrupt instance; absent for the exact analysis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online_summary: Option<OnlineSummaryInfo>,
}

/// How an online bound summarised the run. The sliding-window curves are exact at the grid's
/// window lengths and, between them, take the next larger one (beyond the grid's end or a
/// shortened source's last window: sub-additive extrapolation), so every bound computed from the
/// summary is at or above the exact bound on the same data.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct OnlineSummaryInfo {
    /// Always `summary`: the kind of analysis input, beside `input` (where the data came from).
    pub input_kind: String,
    /// Smallest and largest window length Δ of the grid.
    pub grid_start_ns: u64,
    pub grid_end_ns: u64,
    /// Largest ratio between consecutive grid window lengths (above 1 ns steps).
    pub grid_ratio: f64,
    pub grid_points: u64,
    /// Per source, at most this many instances are held for the sliding windows (memory cap).
    pub max_window_instances: u64,
    /// Sources whose largest tracked window was shortened to respect `max_window_instances`:
    /// their longer windows are extrapolated (still never below the exact curve).
    #[serde(default)]
    pub shortened_sources: u64,
}

/// The four thread-context variables of Table 1 (maxima, ns).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct ThreadVars {
    pub poid_ns: u64,
    pub paie_ns: u64,
    pub psd_ns: u64,
    pub dst_ns: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct CpuBound {
    pub cpu: u32,
    /// Interference-free latency, Lemma 7: max(D_ST, D_POID) + D_PAIE + D_PSD.
    pub ifl_ns: u64,
    pub thread: ThreadVars,
    /// The thread terms are not measured per the paper (fallback): estimate, not a sound bound.
    #[serde(default)]
    pub thread_estimated: bool,
    /// An IRQ arrival's hard-IRQ context outside its handler (entry and exit code, ns), added to
    /// every IRQ source's instances in the characterizations (`sources` keep the handlers' own
    /// times); 0 when not measured (no preemptirq events).
    #[serde(default)]
    pub irq_entry_exit_ns: u64,
    /// Largest latency observed in the same run on this CPU, when known.
    #[serde(default)]
    pub observed_max_latency_ns: Option<u64>,
    #[serde(default)]
    pub sources: Vec<SourceSummary>,
    pub bounds: Bounds,
}

/// One interrupt source (an IRQ line, a system vector, or the NMI) on one CPU.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct SourceSummary {
    pub source: String,
    /// `irq` (lines and vectors) or `nmi`.
    pub kind: String,
    pub count: u64,
    pub owcet_ns: u64,
    /// Minimum gap between consecutive arrivals; None when seen once.
    pub omiat_ns: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct Bounds {
    pub no_interrupts: CharBound,
    pub worst_single: CharBound,
    pub single_of_each: CharBound,
    pub sporadic: CharBound,
    pub sliding_window: CharBound,
    pub sliding_window_owcet: CharBound,
}

impl Bounds {
    /// (name, bound) in the order of the paper (§5).
    pub fn named(&self) -> [(&'static str, &CharBound); 6] {
        [
            ("no_interrupts", &self.no_interrupts),
            ("worst_single", &self.worst_single),
            ("single_of_each", &self.single_of_each),
            ("sporadic", &self.sporadic),
            ("sliding_window", &self.sliding_window),
            ("sliding_window_owcet", &self.sliding_window_owcet),
        ]
    }
}

/// One interrupt characterization's result.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct CharBound {
    /// The bound; null when not converged.
    pub latency_ns: Option<u64>,
    pub converged: bool,
    #[serde(default)]
    pub reason: Option<NonConvergence>,
    /// The largest term of the final equation: `poid`, `dst`, `paie`, `psd`, or a source name.
    #[serde(default)]
    pub dominant: Option<String>,
    #[serde(default)]
    pub dominant_ns: Option<u64>,
    /// Fixed-point iterations (like rtsl's text: first all contributions, then only the changed).
    #[serde(default)]
    pub iterations: Vec<Iteration>,
    /// Total iterations performed (`iterations` keeps at most the first 64 and the last).
    #[serde(default)]
    pub iteration_count: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NonConvergence {
    /// Sporadic model: a source's oWCET ≥ oMIAT, its demand alone never stops growing.
    OwcetGeOmiat {
        source: String,
        owcet_ns: u64,
        omiat_ns: u64,
    },
    /// L grew beyond the cap.
    ExceedsCap { cap_ns: u64, last_ns: u64 },
    /// Too many iterations (each adds at least 1 ns, so this only guards run time).
    IterationLimit { iterations: u64, last_ns: u64 },
}

impl std::fmt::Display for NonConvergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NonConvergence::OwcetGeOmiat {
                source,
                owcet_ns,
                omiat_ns,
            } => {
                write!(
                    f,
                    "source {source}: oWCET {owcet_ns} ns >= oMIAT {omiat_ns} ns"
                )
            }
            NonConvergence::ExceedsCap { cap_ns, last_ns } => {
                write!(f, "L = {last_ns} ns exceeds the cap {cap_ns} ns")
            }
            NonConvergence::IterationLimit {
                iterations,
                last_ns,
            } => {
                write!(
                    f,
                    "no fixed point after {iterations} iterations (L = {last_ns} ns)"
                )
            }
        }
    }
}

/// One step L_k -> L_{k+1} of a fixed-point iteration.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct Iteration {
    /// L_k, the window the interference was evaluated over.
    pub window_ns: u64,
    /// Per-source interference over the window; after the first step only sources whose
    /// contribution changed (rtsl's "<- new!").
    pub contributions: Vec<Contribution>,
    /// L_{k+1} = IFL + Σ contributions.
    pub latency_ns: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct Contribution {
    pub source: String,
    pub ns: u64,
}

/// One point of the time-to-bound series.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct BoundSeriesPoint {
    /// Seconds since the start of the run.
    pub t_s: f64,
    pub cpu: u32,
    pub sliding_window_ns: Option<u64>,
    pub observed_max_ns: Option<u64>,
}

// ---------- raw inputs, as readers hand them to the analysis (before validation) ----------

/// One interrupt instance as a reader found it; `row` names it in error messages (SQLite rowid,
/// JSON array index, trace event index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawInstance {
    pub start_ns: u64,
    pub duration_ns: u64,
    pub row: u64,
}

/// One source's unvalidated instances; `origin` is what errors are prefixed with
/// (e.g. `cpu0.db table irq`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RawSource {
    pub name: String,
    pub nmi: bool,
    pub origin: String,
    pub instances: Vec<RawInstance>,
}

/// One CPU's unvalidated input.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RawCpu {
    pub cpu: u32,
    pub thread: ThreadVars,
    pub thread_estimated: bool,
    /// See [`CpuBound::irq_entry_exit_ns`]; 0 when the reader has none.
    pub irq_entry_exit_ns: u64,
    pub observed_max_latency_ns: Option<u64>,
    pub sources: Vec<RawSource>,
}
