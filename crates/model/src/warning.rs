//! A run's warnings: each one a stable code (for scripts and the JSON) and a sentence for people.
//!
//! A warning is raised only where its condition was detected (a hypervisor by CPUID, lost events
//! by the kernel's own counter, …); the code says which condition, the message says what it
//! means for this run. Codes are part of the JSON schema (`docs/schema/run-record.schema.json`):
//! new codes may be added, existing ones never change meaning. Records written before codes
//! existed hold plain strings; they read back as warnings whose code is recovered from the text
//! where the wording is known (see [`Warning::legacy`]), `other` otherwise.

use serde::{Deserialize, Serialize};

/// What a warning is about. Serialized in snake_case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningCode {
    /// Running under a hypervisor (detected by CPUID or cpuinfo): host stalls show up as latency.
    Hypervisor,
    /// Stopped by a signal: the results are partial.
    Interrupted,
    /// A measurement thread ended early (an error), so its CPU's results are partial.
    ThreadStopped,
    /// Not measured as asked for real time: SCHED_OTHER fallback, memory not locked, timer slack.
    NotRealtime,
    /// Missed periods (overruns) in the measuring loop.
    Overruns,
    /// The kernel dropped trace events (buffer full), or the trace could not be kept.
    LostEvents,
    /// Tracing was off, degraded, or limited by the kernel (lockdown, missing tracepoints).
    Trace,
    /// Too few samples for a percentile or statistic the output shows.
    FewSamples,
    /// A background load reported a problem.
    Load,
    /// The latency bound is an estimate, did not converge, or had inputs missing.
    Bound,
    /// Imported data loses precision (whole µs, overflow buckets, status lines only).
    Import,
    /// Work-loop calibration drifted, or jobs ran longer than their C.
    Calibration,
    /// SCHED_DEADLINE runtime overruns (SIGXCPU) and the misses that followed them.
    DeadlineOverrun,
    /// A kernel setting left by an earlier run was found and restored, or a knob is not as a
    /// real-time run wants it (RT throttling, cpu_dma_latency).
    System,
    /// A benchmark metric or variant could not be measured here.
    Unavailable,
    /// The kernel-side measurement of the bound's thread terms lost events (queue or nesting
    /// overflows, recursion misses, ring-buffer drops): the terms may be low. The figures are
    /// in `hygiene.thread_terms`.
    ThreadTermsLost,
    /// Too few block maxima for the tail model: no tail numbers (the message says how many
    /// the fit needs).
    TailFewMaxima,
    /// A check of the tail model's assumptions failed (dependent or non-stationary maxima, or a
    /// poor fit): its numbers are labelled unreliable.
    TailUnreliable,
    /// The kernel's tracer stopped itself before the run's end: a single noise reached its stop
    /// threshold (`noise`'s `stop_us` and `stopped_by_tracer` hold the figures).
    TracerStopped,
    /// Anything else, and legacy warnings whose wording is not recognised.
    #[serde(other)]
    Other,
}

impl WarningCode {
    pub fn as_str(self) -> &'static str {
        match self {
            WarningCode::Hypervisor => "hypervisor",
            WarningCode::Interrupted => "interrupted",
            WarningCode::ThreadStopped => "thread_stopped",
            WarningCode::NotRealtime => "not_realtime",
            WarningCode::Overruns => "overruns",
            WarningCode::LostEvents => "lost_events",
            WarningCode::Trace => "trace",
            WarningCode::FewSamples => "few_samples",
            WarningCode::Load => "load",
            WarningCode::Bound => "bound",
            WarningCode::Import => "import",
            WarningCode::Calibration => "calibration",
            WarningCode::DeadlineOverrun => "deadline_overrun",
            WarningCode::System => "system",
            WarningCode::Unavailable => "unavailable",
            WarningCode::ThreadTermsLost => "thread_terms_lost",
            WarningCode::TailFewMaxima => "tail_few_maxima",
            WarningCode::TailUnreliable => "tail_unreliable",
            WarningCode::TracerStopped => "tracer_stopped",
            WarningCode::Other => "other",
        }
    }
}

/// One warning of a run.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Warning {
    pub code: WarningCode,
    pub message: String,
}

impl Warning {
    pub fn new(code: WarningCode, message: impl Into<String>) -> Warning {
        Warning {
            code,
            message: message.into(),
        }
    }

    /// A warning stored as a plain string (records written before codes existed): the code is
    /// recovered from the wording those versions used.
    pub fn legacy(message: String) -> Warning {
        const KNOWN: &[(&str, WarningCode)] = &[
            ("hypervisor", WarningCode::Hypervisor),
            ("virtual machine", WarningCode::Hypervisor),
            ("interrupted", WarningCode::Interrupted),
            ("stopped early", WarningCode::ThreadStopped),
            ("events lost", WarningCode::LostEvents),
            ("lost events", WarningCode::LostEvents),
            ("SCHED_OTHER", WarningCode::NotRealtime),
            ("memory not locked", WarningCode::NotRealtime),
            ("unprivileged", WarningCode::NotRealtime),
            ("imported from cyclictest", WarningCode::Import),
            ("overflow samples", WarningCode::Import),
            ("calibration drifted", WarningCode::Calibration),
            ("SIGXCPU", WarningCode::DeadlineOverrun),
            ("overrun", WarningCode::Overruns),
            ("load ", WarningCode::Load),
            ("unavailable", WarningCode::Unavailable),
            ("stopped itself", WarningCode::TracerStopped),
            ("kernel events", WarningCode::Trace),
            ("trace", WarningCode::Trace),
            ("bound", WarningCode::Bound),
        ];
        let code = KNOWN
            .iter()
            .find(|(k, _)| message.contains(k))
            .map(|&(_, c)| c)
            .unwrap_or(WarningCode::Other);
        Warning { code, message }
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl<'de> Deserialize<'de> for Warning {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Warning, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Stored {
            Coded { code: WarningCode, message: String },
            Legacy(String),
        }
        Ok(match Stored::deserialize(d)? {
            Stored::Coded { code, message } => Warning { code, message },
            Stored::Legacy(s) => Warning::legacy(s),
        })
    }
}

/// A list of warnings built in steps, each with its code.
pub trait Warnings {
    fn warn(&mut self, code: WarningCode, message: impl Into<String>);
}

impl Warnings for Vec<Warning> {
    fn warn(&mut self, code: WarningCode, message: impl Into<String>) {
        self.push(Warning::new(code, message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coded_and_legacy_forms_read_back() {
        let w = Warning::new(WarningCode::Hypervisor, "running under a hypervisor (kvm)");
        let j = serde_json::to_string(&w).unwrap();
        assert_eq!(
            j,
            r#"{"code":"hypervisor","message":"running under a hypervisor (kvm)"}"#
        );
        assert_eq!(serde_json::from_str::<Warning>(&j).unwrap(), w);
        let old: Vec<Warning> = serde_json::from_str(
            r#"["interrupted by SIGINT: partial results", "something new", "thread on CPU 1 stopped early: EPERM"]"#,
        )
        .unwrap();
        assert_eq!(
            old.iter().map(|w| w.code).collect::<Vec<_>>(),
            [
                WarningCode::Interrupted,
                WarningCode::Other,
                WarningCode::ThreadStopped
            ]
        );
        assert_eq!(old[1].message, "something new");
        // A code from a newer version reads as `other`, message intact.
        let newer: Warning =
            serde_json::from_str(r#"{"code":"quantum_noise","message":"m"}"#).unwrap();
        assert_eq!(
            (newer.code, newer.message.as_str()),
            (WarningCode::Other, "m")
        );
    }

    #[test]
    fn codes_serialize_as_their_names() {
        for c in [
            WarningCode::Hypervisor,
            WarningCode::DeadlineOverrun,
            WarningCode::NotRealtime,
            WarningCode::TracerStopped,
            WarningCode::Other,
        ] {
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                serde_json::Value::String(c.as_str().into())
            );
        }
    }

    /// `noise` stored its stop as `other` before it had a code: such records read unchanged,
    /// and a plain string of that wording gets the code.
    #[test]
    fn a_stopped_tracer_reads_in_every_form() {
        let old = r#"{"code":"other","message":"the tracer stopped itself: a single noise reached --stop 20 us"}"#;
        let w: Warning = serde_json::from_str(old).unwrap();
        assert_eq!(w.code, WarningCode::Other);
        assert!(w.message.ends_with("--stop 20 us"), "{w}");
        let w: Warning = serde_json::from_str(
            r#""the tracer stopped itself: a single noise reached --stop 20 us""#,
        )
        .unwrap();
        assert_eq!(w.code, WarningCode::TracerStopped);
        let j = serde_json::to_string(&Warning::new(WarningCode::TracerStopped, "m")).unwrap();
        assert_eq!(j, r#"{"code":"tracer_stopped","message":"m"}"#);
    }
}
