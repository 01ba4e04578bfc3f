//! What `rtscope doctor` found: one [`Finding`] per check that fired, each with a stable code
//! (`RT001-irq-on-measured-cpu`), and, when a traced run was joined, what that run saw of it.

use serde::{Deserialize, Serialize};

/// Version of the doctor JSON document (bumped on incompatible change).
pub const DOCTOR_SCHEMA_VERSION: u32 = 1;

/// How much a finding matters to a real-time measurement, least first (so `max` is the worst).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; no latency is expected from it alone.
    Info,
    /// Adds latency or makes the measurement less sound under some loads.
    Warning,
    /// Puts kernel or device work on the measured CPUs, or bounds latency from below.
    High,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::High => "high",
        }
    }
}

/// How a finding is fixed.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct Fix {
    /// What to do, for a person.
    pub text: String,
    /// Files `doctor --fix` writes at run time: (path, value). Empty: not fixable at run time.
    #[serde(default)]
    pub writes: Vec<(String, String)>,
    /// Parameters to add to the kernel command line (doctor prints them, never applies them).
    #[serde(default)]
    pub boot_params: Vec<String>,
}

/// What a traced run saw of a finding, joined by IRQ number, CPU and thread id.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct RunEvidence {
    /// One sentence: "IRQ 41 (virtio3-rx) delayed the probe in 12 samples, max 8 µs, and explains
    /// 31 % of the p99 tail".
    pub text: String,
    /// Share of the p99 tail's latency explained (0..1).
    pub tail_p99_share: f64,
    pub samples_affected: u64,
    pub max_ns: u64,
}

/// One check that fired.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Finding {
    /// Stable code: `RT` + three digits + `-` + a slug. Never reused for another meaning.
    pub code: String,
    pub severity: Severity,
    /// One line: what is wrong.
    pub title: String,
    /// What was read, with the file it was read from.
    pub evidence: Vec<String>,
    pub fix: Fix,
    /// Kernel Documentation file, or the paper's section.
    pub reference: String,
    /// IRQ numbers, CPUs and thread ids the finding is about (what a run is joined on).
    #[serde(default)]
    pub irqs: Vec<u32>,
    #[serde(default)]
    pub cpus: Vec<u32>,
    #[serde(default)]
    pub pids: Vec<u32>,
    /// What a traced run saw (None without a run, or when the run saw nothing of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunEvidence>,
}

/// The whole report: what `--json` writes.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct DoctorReport {
    pub schema_version: u32,
    /// RFC 3339, UTC.
    pub taken_at: String,
    pub hostname: String,
    pub kernel_release: String,
    /// The CPUs judged as measured ones.
    pub cpus: Vec<u32>,
    /// Ranked: by tail share when a run was joined, then by severity, then by code.
    pub findings: Vec<Finding>,
    /// Codes of every check that ran (fired or not).
    pub checks_run: Vec<String>,
    /// The run joined (its id), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The run's p99 latency and tail size, ns and samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_p99_latency_ns: Option<u64>,
    #[serde(default)]
    pub run_tail_p99_samples: u64,
    /// Share of the p99 tail the findings do not explain (what other causes took), 0..1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_unexplained_share: Option<f64>,
}
