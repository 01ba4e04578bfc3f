//! The one lifecycle every verb runs through, after rtla's `struct tool_ops` and its one
//! `run_tool()`: a tool is built from an already resolved, validated configuration (nothing has
//! been started when it exists), and [`run_tool`] takes it through the same steps, in order:
//!
//! 1. begin: the tool says what its work needs ([`Tool::begin`], a [`Begin`]); `run_tool` checks
//!    the privilege (a refusal is exit 1), repairs what killed runs left behind, installs the
//!    stop signals and starts the clock ([`Work`]);
//! 2. [`Tool::start`]: its threads, captures and loads;
//! 3. [`Tool::step`], again and again until it says [`Flow::Done`] — a tick of a streamed
//!    measurement, or the whole work of a tool that runs to completion (its `main`); between
//!    steps `run_tool` checks the stop signals (SIGINT, SIGTERM, SIGHUP) and asks the tool to
//!    wind down ([`Tool::request_stop`]) once;
//! 4. [`Tool::stop`]: threads joined, captures and loads stopped;
//! 5. [`Tool::record`]: its [`RunRecord`], if it makes one;
//! 6. [`Tool::outputs`]: the record stored, then its files and text ([`Once`]: a tool whose
//!    whole work is one call).

use crate::input::VerbError;
use crate::outputs::RecordOutputs;
use crate::privilege::Need;
use crate::record::WorkInfo;
use rtscope_model::{RunKind, RunRecord, Warning, WarningCode};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Instant, SystemTime};

/// What a step says: go on, or the work is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Done,
}

/// What a tool's work needs before it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Begin {
    /// Offline work (a simulation, a replay, a file read): the clock only, and a stop signal
    /// ends it outright.
    Offline,
    /// Work on the real kernel: `verb` needs `need` (`why`; a refusal is exit 1); what killed
    /// runs left is repaired and the stop signals are installed first.
    Live {
        verb: String,
        need: Need,
        why: String,
    },
}

impl Begin {
    pub fn live(verb: &str, need: Need, why: &str) -> Begin {
        Begin::Live {
            verb: verb.into(),
            need,
            why: why.into(),
        }
    }
}

/// One verb's work, as [`run_tool`] drives it.
pub trait Tool {
    /// What the tool hands back at the end.
    type Output;

    /// What the work needs before it starts. The default is offline work.
    fn begin(&self) -> Begin {
        Begin::Offline
    }

    /// Start the work's threads, captures and loads.
    fn start(&mut self, _w: &Work) -> Result<(), VerbError> {
        Ok(())
    }

    /// One tick of the work, or all of it for a tool that runs to completion.
    fn step(&mut self, w: &Work) -> Result<Flow, VerbError>;

    /// A stop signal arrived: end the work at the next steps, keeping what was measured.
    fn request_stop(&mut self) {}

    /// The work has ended: join its threads, stop its captures and loads.
    fn stop(&mut self, _w: &Work) -> Result<(), VerbError> {
        Ok(())
    }

    /// The work's record (None for a verb that makes none).
    fn record(&mut self, _w: &Work) -> Result<Option<RunRecord>, VerbError> {
        Ok(None)
    }

    /// Store the record, write the files, say what was written.
    fn outputs(self, w: &Work, rec: Option<RunRecord>) -> Result<Self::Output, VerbError>;
}

/// Run `tool` through its steps (the module comment says which, in which order).
pub fn run_tool<T: Tool>(mut tool: T) -> Result<T::Output, VerbError> {
    let w = Work::begin(&tool.begin())?;
    tool.start(&w)?;
    let mut stop_asked = false;
    while tool.step(&w)? == Flow::Continue {
        if !stop_asked && w.is_live() && crate::signals::stop_requested() {
            stop_asked = true;
            tool.request_stop();
        }
    }
    tool.stop(&w)?;
    let rec = tool.record(&w)?;
    tool.outputs(&w, rec)
}

/// What SIGKILLed rtscope processes left behind (a kill skips every clean-up): the kernel
/// settings in the knob journal (`rtscope_sys::knob::repair_stale`), their cpusets,
/// the root cpuset's `sched_load_balance` and the DEADLINE bandwidth of their killed threads
/// (`rtscope_bench::taskset::cpuset::remove_stale`), their tracefs instances. Repaired at the
/// start of every verb that runs work; each line says what was repaired, is printed, and goes
/// into the run's warnings. Unprivileged, nothing can be repaired and nothing is tried.
fn recover_leftovers() -> Vec<Warning> {
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

/// A verb's work under way: when it started, what killed runs left, and whether the stop
/// signals are installed.
pub struct Work {
    pub started: SystemTime,
    t0: Instant,
    /// What killed runs left and the begin repaired: warnings of this work's record.
    leftovers: Vec<Warning>,
    /// Work on the real kernel, not offline.
    live: bool,
}

impl Work {
    /// The begin step of [`run_tool`]: for live work the privilege checked, leftovers of killed
    /// runs repaired and the stop signals (the session's one set of handlers) installed; then
    /// the clock started.
    fn begin(b: &Begin) -> Result<Work, VerbError> {
        let mut leftovers = Vec::new();
        if let Begin::Live { verb, need, why } = b {
            crate::privilege::require(verb, *need, why).map_err(VerbError::failed)?;
            leftovers = recover_leftovers();
            crate::signals::install_handlers();
        }
        Ok(Work {
            started: SystemTime::now(),
            t0: Instant::now(),
            leftovers,
            live: *b != Begin::Offline,
        })
    }

    /// Work on the real kernel, whose stop signals are installed.
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// What killed runs left and were repaired before this work began.
    pub fn leftovers(&self) -> &[Warning] {
        &self.leftovers
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
        out: &RecordOutputs,
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
    pub fn record(&self, mut w: WorkInfo) -> RunRecord {
        w.warnings.extend(self.leftovers.iter().cloned());
        crate::record::work_record(self.started, self.wall_s(), w)
    }

    /// The record's content for a benchmark (pinned SCHED_FIFO threads, memory locked) that ran
    /// on `cpu` with `priority` the highest of its threads.
    pub fn bench_info(
        &self,
        verb: &str,
        (cpu, priority): (u32, u32),
        warnings: Vec<Warning>,
        tags: BTreeMap<String, String>,
        kind: RunKind,
    ) -> WorkInfo {
        WorkInfo {
            verb: verb.into(),
            cpus: vec![cpu],
            interrupted: self.interrupted(),
            hygiene: if !self.live {
                rtscope_model::Hygiene {
                    notes: vec!["offline: a simulation or replay, no real-time threads".into()],
                    ..Default::default()
                }
            } else {
                rtscope_bench::common::rt::hygiene(priority)
            },
            warnings,
            tags,
            loads: Vec::new(),
            kind,
        }
    }
}

/// What the one call of a [`Once`] tool made.
pub struct Made {
    /// Printed unless `--json -`.
    pub text: String,
    /// Written after the text, each said on stderr.
    pub files: Vec<(PathBuf, String)>,
    /// The record's content ([`Work::record`] wraps it).
    pub info: Option<WorkInfo>,
    /// A failure the work found and reports after its record is stored (a checker's
    /// violation: exit 1 with the record kept).
    pub then: Option<VerbError>,
}

/// The tool of a verb whose whole work is one call: begin as `begin` says, one step (the call),
/// its record, its text and files, the record stored and written.
pub struct Once<'a, F> {
    begin: Begin,
    out: &'a RecordOutputs,
    work: Option<F>,
    made: Option<Made>,
}

/// Run `work` as a [`Once`] tool.
pub fn run_once<F>(begin: Begin, out: &RecordOutputs, work: F) -> Result<(), VerbError>
where
    F: FnOnce(&Work) -> Result<Made, VerbError>,
{
    run_tool(Once {
        begin,
        out,
        work: Some(work),
        made: None,
    })
}

impl<F> Tool for Once<'_, F>
where
    F: FnOnce(&Work) -> Result<Made, VerbError>,
{
    type Output = ();

    fn begin(&self) -> Begin {
        self.begin.clone()
    }

    fn step(&mut self, w: &Work) -> Result<Flow, VerbError> {
        let work = self
            .work
            .take()
            .ok_or_else(|| VerbError::failed("the work ran twice"))?;
        self.made = Some(work(w)?);
        Ok(Flow::Done)
    }

    fn record(&mut self, w: &Work) -> Result<Option<RunRecord>, VerbError> {
        let info = self.made.as_mut().and_then(|m| m.info.take());
        Ok(info.map(|i| w.record(i)))
    }

    fn outputs(self, w: &Work, rec: Option<RunRecord>) -> Result<(), VerbError> {
        let (Some(made), Some(rec)) = (self.made, rec) else {
            return Err(VerbError::failed("the work made no record"));
        };
        let files: Vec<_> = made
            .files
            .iter()
            .map(|(p, d)| Some((p.as_path(), d.clone())))
            .collect();
        w.finish(self.out, &made.text, &files, &rec)?;
        made.then.map_or(Ok(()), Err)
    }
}
