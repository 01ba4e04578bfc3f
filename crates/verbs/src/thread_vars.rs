//! `rtscope trace thread-vars`: ECRTS'20 Table 1's thread variables (D_POID, D_PAIE, D_PSD,
//! D_ST) per CPU, by one of two mechanisms:
//! - `bpf`: the state machine runs in the kernel at every tracepoint
//!   (`rtscope_trace::preemptirq`), keeping only maxima;
//! - `tracefs`: the events are read from a tracefs ring buffer
//!   (`rtscope_trace::preemptirq_tracefs`) and streamed through the session's state machine
//!   ([`rtscope_session::thread_vars`], the one `measure --bound` also runs in the background).
//!
//! `auto` takes `bpf` where it can run, else `tracefs`.

use crate::input::VerbError;
use crate::outputs::JsonDest;
use crate::tool::{run_tool, Begin, Flow, Tool, Work};
use rtscope_model::thread_vars::ThreadVarsRun;
use rtscope_model::RunRecord;
use rtscope_session::thread_vars::{cpu_time_ns, document, on_record, Streams, NOT_FIFO};
use rtscope_trace::preemptirq::{self, MeasureError};
use rtscope_trace::preemptirq_tracefs::{self as pitf, Reader};
use rtscope_trace::TraceError;
use std::time::{Duration, Instant};

/// Which mechanism measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    Auto,
    Bpf,
    Tracefs,
}

/// The capture's names ([`rtscope_trace::Mechanism`]) without `off`: thread-vars always measures.
impl std::str::FromStr for Mechanism {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        use rtscope_trace::Mechanism as M;
        Ok(match M::parse_among(s, &[M::Auto, M::Bpf, M::Tracefs])? {
            M::Bpf => Mechanism::Bpf,
            M::Tracefs => Mechanism::Tracefs,
            _ => Mechanism::Auto,
        })
    }
}

/// The tracefs mechanism: measure `cpus` for `duration` (or until `stop()` says so).
pub fn measure_tracefs(
    cpus: &[u32],
    duration: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<ThreadVarsRun, MeasureError> {
    let cpu0 = cpu_time_ns();
    let mut r = Reader::start(cpus).map_err(|e| match e {
        TraceError::Unavailable(m) => MeasureError::Unavailable(m),
        e => MeasureError::Failed(e.to_string()),
    })?;
    let mut streams = Streams::new(cpus);
    let failed = |e: TraceError| MeasureError::Failed(e.to_string());
    let fifo = pitf::reader_priority();
    let t0 = Instant::now();
    loop {
        r.drain(&mut |rec| on_record(&mut streams, rec))
            .map_err(failed)?;
        if t0.elapsed() >= duration || stop() {
            break;
        }
        std::thread::sleep(pitf::POLL.min(duration.saturating_sub(t0.elapsed())));
    }
    let interrupted = t0.elapsed() < duration;
    let totals = r
        .finish(&mut |rec| on_record(&mut streams, rec))
        .map_err(failed)?;
    let mut run = document(
        &streams,
        &totals,
        cpu_time_ns().saturating_sub(cpu0),
        interrupted,
    );
    if !fifo {
        run.notes.push(NOT_FIFO.into());
    }
    Ok(run)
}

/// `rtscope trace thread-vars`: by `mech` (`Auto`: eBPF where it can run, else tracefs; when
/// neither can, `Unavailable` names both reasons).
///
/// `lab_hint` says where the tracepoints are when tracefs has none (the caller's commands for a
/// lab kernel that has them).
pub fn measure(
    mech: Mechanism,
    cpus: &[u32],
    duration: Duration,
    stop: &dyn Fn() -> bool,
    lab_hint: &str,
) -> Result<ThreadVarsRun, MeasureError> {
    // SCHED_FIFO 1 for the set-up and the wait, as `measure` takes it: loading and verifying
    // the eBPF programs costs seconds of CPU in an emulated guest, and beside N busy
    // SCHED_OTHER processes (hackbench's 400) a SCHED_OTHER caller gets 1/N of it — the
    // programs were then attached minutes late, after a load started just before the verb had
    // ended, and the window measured an idle CPU. Where the policy cannot be had, a set-up
    // longer than a second is said in the notes, so the window is never mistaken.
    let _prio = rtscope_session::MainPriority::fifo1();
    let asked = std::time::Instant::now();
    let mut run = measure_by(mech, cpus, duration, stop, lab_hint)?;
    let late = asked.elapsed().saturating_sub(duration);
    if late > Duration::from_secs(1) && !run.interrupted {
        run.notes.push(format!(
            "the measurement began {:.1} s after the verb started (set-up under load): its \
             window is the last {:.1} s",
            late.as_secs_f64(),
            duration.as_secs_f64()
        ));
    }
    Ok(run)
}

fn measure_by(
    mech: Mechanism,
    cpus: &[u32],
    duration: Duration,
    stop: &dyn Fn() -> bool,
    lab_hint: &str,
) -> Result<ThreadVarsRun, MeasureError> {
    match mech {
        Mechanism::Bpf => preemptirq::measure(cpus, duration, stop),
        Mechanism::Tracefs => measure_tracefs(cpus, duration, stop).map_err(|e| match e {
            MeasureError::Unavailable(t) => MeasureError::Unavailable(format!("{t}; {lab_hint}")),
            e => e,
        }),
        // The eBPF reason ends with the lab hint.
        Mechanism::Auto => match preemptirq::measure(cpus, duration, stop) {
            Err(MeasureError::Unavailable(b)) => {
                measure_tracefs(cpus, duration, stop).map_err(|e| match e {
                    MeasureError::Unavailable(t) => {
                        MeasureError::Unavailable(format!("tracefs: {t} — bpf: {b}"))
                    }
                    e => e,
                })
            }
            other => other,
        },
    }
}

/// `rtscope trace thread-vars` through the one lifecycle: begin (the stop signals), one step
/// (the measurement by `mech` on `cpus` until `duration` or a stop signal), outputs (where the
/// longest D_POID began and ended as kernel symbols, the text unless `--json -`, the JSON
/// document). A mechanism the kernel cannot run is bad input (exit 2) naming why.
pub fn run(
    mech: Mechanism,
    cpus: &[u32],
    duration: Duration,
    json: &JsonDest,
    lab_hint: &str,
) -> Result<(), VerbError> {
    json.check()?;
    run_tool(ThreadVarsTool {
        mech,
        cpus,
        duration,
        json,
        lab_hint,
        run: None,
    })
}

struct ThreadVarsTool<'a> {
    mech: Mechanism,
    cpus: &'a [u32],
    duration: Duration,
    json: &'a JsonDest,
    lab_hint: &'a str,
    run: Option<ThreadVarsRun>,
}

impl Tool for ThreadVarsTool<'_> {
    type Output = ();

    fn begin(&self) -> Begin {
        Begin::live("trace thread-vars", crate::privilege::Need::Nothing, "")
    }

    fn step(&mut self, w: &Work) -> Result<Flow, VerbError> {
        let stop = || w.interrupted();
        let run = measure(self.mech, self.cpus, self.duration, &stop, self.lab_hint).map_err(
            |e| match e {
                MeasureError::Unavailable(m) => {
                    VerbError::BadInput(format!("trace thread-vars: {m}"))
                }
                MeasureError::Failed(m) => VerbError::failed(format!("trace thread-vars: {m}")),
            },
        )?;
        self.run = Some(run);
        Ok(Flow::Done)
    }

    fn outputs(self, _w: &Work, _rec: Option<RunRecord>) -> Result<(), VerbError> {
        let mut run = self
            .run
            .ok_or_else(|| VerbError::failed("trace thread-vars: nothing was measured"))?;
        // Where the longest D_POID began and ended, as kernel symbols (root reads real addresses).
        rtscope_trace::kallsyms::symbolize_run(&mut run);
        if !self.json.to_stdout() {
            print!("{}", rtscope_report::thread_vars::text(&run));
        }
        self.json.write(&rtscope_report::thread_vars::json(&run))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mechanisms_parse() {
        assert_eq!("auto".parse(), Ok(Mechanism::Auto));
        assert_eq!("tracefs".parse(), Ok(Mechanism::Tracefs));
        assert!("ebpf"
            .parse::<Mechanism>()
            .unwrap_err()
            .contains("auto, bpf, tracefs"));
    }
}
