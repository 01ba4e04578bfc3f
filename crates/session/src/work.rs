//! The lifecycle around work that runs without measurement threads (benchmarks, task sets, loads,
//! captures): the privileges it needs, what killed runs left behind, the stop signals, its clock
//! and its record.

use crate::input::VerbError;
use crate::privilege::Need;
use rtscope_model::{RunKind, RunRecord, Warning, WarningCode};
use std::collections::BTreeMap;
use std::time::{Instant, SystemTime};

/// What SIGKILLed rtscope processes left behind (a kill skips every clean-up): the kernel
/// settings in the knob journal (`rtscope_sys::knob::repair_stale`), their cpusets,
/// the root cpuset's `sched_load_balance` and the DEADLINE bandwidth of their killed threads
/// (`rtscope_bench::taskset::cpuset::remove_stale`), their tracefs instances. Repaired at the
/// start of every verb that runs work; each line says what was repaired, is printed, and goes
/// into the run's warnings. Unprivileged, nothing can be repaired and nothing is tried.
pub fn recover_leftovers() -> Vec<Warning> {
    if !crate::privilege::Privileges::current().root {
        return Vec::new();
    }
    // Kernel settings first (the knob journal): a cpuset's sched_load_balance before its
    // directories go.
    let mut notes = rtscope_sys::knob::repair_stale();
    notes.extend(rtscope_bench::taskset::cpuset::remove_stale());
    notes.extend(rtscope_trace::remove_stale_instances());
    for n in &notes {
        eprintln!("rtscope: left by a killed run: {n}");
    }
    notes
        .into_iter()
        .map(|n| Warning::new(WarningCode::System, format!("left by a killed run: {n}")))
        .collect()
}

/// The one privilege rule ([`crate::privilege::require`]); a refusal is a failure (exit 1), not
/// bad input.
pub fn require(verb: &str, need: Need, why: &str) -> Result<(), VerbError> {
    crate::privilege::require(verb, need, why).map_err(VerbError::failed)
}

/// The start of a verb's work that needs `need`: the privilege checked (a refusal is exit 1),
/// leftovers of killed runs repaired, the stop signals installed, the clock started.
pub fn begin(verb: &str, need: Need, why: &str) -> Result<Work, VerbError> {
    require(verb, need, why)?;
    let leftovers = recover_leftovers();
    let mut w = Work::start();
    w.leftovers = leftovers;
    Ok(w)
}

/// A verb's work under way: when it started, and the stop signals installed.
pub struct Work {
    pub started: SystemTime,
    t0: Instant,
    /// What killed runs left and [`begin`] repaired: warnings of this work's record.
    leftovers: Vec<Warning>,
    /// Work on the real kernel ([`Work::start`]), not offline ([`Work::clock`]).
    live: bool,
}

impl Work {
    /// Stop on SIGINT/SIGTERM/SIGHUP (the session's one set of handlers) and start the clock.
    pub fn start() -> Work {
        crate::signals::install_handlers();
        Work {
            started: SystemTime::now(),
            t0: Instant::now(),
            leftovers: Vec::new(),
            live: true,
        }
    }

    /// Start the clock only: for offline work (simulations, replays) that a signal ends outright.
    pub fn clock() -> Work {
        Work {
            started: SystemTime::now(),
            t0: Instant::now(),
            leftovers: Vec::new(),
            live: false,
        }
    }

    /// Work on the real kernel, whose stop signals are installed.
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// What killed runs left and were repaired before this work began.
    pub fn leftovers(&self) -> &[Warning] {
        &self.leftovers
    }

    pub fn set_leftovers(&mut self, w: Vec<Warning>) {
        self.leftovers = w;
    }

    pub fn wall_s(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }

    pub fn elapsed(&self) -> std::time::Duration {
        self.t0.elapsed()
    }

    /// A stop signal arrived: the results are partial.
    pub fn interrupted(&self) -> bool {
        crate::signals::stop_requested()
    }

    /// The end of a verb's work: its text (unless `--json -`), its files (each said on stderr),
    /// then its record stored and written.
    pub fn finish(
        &self,
        out: &crate::outputs::RecordOutputs,
        text: &str,
        files: &[Option<(&std::path::Path, String)>],
        rec: &RunRecord,
    ) -> Result<(), VerbError> {
        if out.text() {
            print!("{text}");
        }
        for (p, data) in files.iter().flatten() {
            crate::outputs::write_file(p, data.as_bytes())?;
            eprintln!("rtscope: wrote {}", p.display());
        }
        out.emit(rec)
    }

    /// The record of this work: the envelope around `w`'s result, with this work's start and
    /// wall time.
    pub fn record(&self, mut w: crate::record::WorkInfo) -> RunRecord {
        w.warnings.extend(self.leftovers.iter().cloned());
        crate::record::work_record(self.started, self.wall_s(), w)
    }

    /// The record of a benchmark (pinned SCHED_FIFO threads, memory locked) that ran on `cpu`
    /// with `priority` the highest of its threads.
    pub fn bench_record(
        &self,
        verb: &str,
        (cpu, priority): (u32, u32),
        warnings: Vec<Warning>,
        tags: BTreeMap<String, String>,
        kind: RunKind,
    ) -> RunRecord {
        self.record(crate::record::WorkInfo {
            verb: verb.into(),
            cpus: vec![cpu],
            interrupted: self.interrupted(),
            hygiene: if !self.live {
                rtscope_model::Hygiene {
                    notes: vec!["offline: a simulation or replay, no real-time threads".into()],
                    ..Default::default()
                }
            } else if priority > 0 {
                rtscope_model::Hygiene {
                    mlockall: true,
                    prefaulted_stack_bytes: rtscope_bench::common::rt::PREFAULT_STACK_BYTES
                        as u64,
                    notes: vec![format!(
                        "benchmark threads pinned, SCHED_FIFO (highest priority {priority}), memory locked; RT throttling left on (drivers rest 10 ms every 100 ms)"
                    )],
                    ..Default::default()
                }
            } else {
                rtscope_model::Hygiene {
                    mlockall: true,
                    notes: vec![
                        "threads pinned, memory locked; their policies are in the result".into(),
                    ],
                    ..Default::default()
                }
            },
            warnings,
            tags,
            loads: Vec::new(),
            kind,
        })
    }
}
