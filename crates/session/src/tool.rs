//! The one lifecycle every verb runs through, after rtla's `struct tool_ops` and its one
//! `run_tool()`: a tool is built from an already resolved, validated configuration (nothing has
//! been started when it exists), and [`run_tool`] takes it through the same steps, in order:
//!
//! 1. [`Tool::begin`]: the privilege its work needs (a refusal is exit 1), leftovers of killed
//!    runs repaired, the stop signals installed, the clock started ([`Work`]);
//! 2. [`Tool::start`]: its threads, captures and loads;
//! 3. [`Tool::step`], again and again until it says [`Flow::Done`] — a tick of a streamed
//!    measurement, or the whole work of a tool that runs to completion (its `main`); between
//!    steps `run_tool` checks the stop signals (SIGINT, SIGTERM, SIGHUP) and asks the tool to
//!    wind down ([`Tool::request_stop`]) once;
//! 4. [`Tool::stop`]: threads joined, captures and loads stopped;
//! 5. [`Tool::record`]: its [`RunRecord`], if it makes one;
//! 6. [`Tool::outputs`]: the record stored, then its files and text.

use crate::input::VerbError;
use crate::work::Work;
use rtscope_model::RunRecord;

/// What a step says: go on, or the work is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Done,
}

/// One verb's work, as [`run_tool`] drives it.
pub trait Tool {
    /// What the tool hands back at the end.
    type Output;

    /// Privilege, leftovers of killed runs, signals, clock. The default is offline work (a
    /// replay, a file read): the clock only, and a signal ends it outright.
    fn begin(&mut self) -> Result<Work, VerbError> {
        Ok(Work::clock())
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
    let w = tool.begin()?;
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
