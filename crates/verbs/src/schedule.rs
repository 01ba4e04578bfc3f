//! The schedule of a bench run from the kernel: `sched_switch` captured (every event kept) around
//! each M-BWI kernel run (`rtscope_bench::mbwi::ScheduleCapture`).

use rtscope_bench::mbwi::{NoCapture, ScheduleCapture};
use rtscope_model::event::Event;
use rtscope_trace::{Mechanism, TraceSession};

struct SchedSwitch(Mechanism, Option<TraceSession>);

impl ScheduleCapture for SchedSwitch {
    fn start(&mut self, cpus: &[u32]) -> Result<(), String> {
        let s = TraceSession::start_with(cpus, self.0, rtscope_trace::Keep::All);
        self.1 = Some(s.map_err(|e| e.to_string())?);
        Ok(())
    }
    fn stop(&mut self) -> Result<(Vec<Event>, String, u64), String> {
        let c = self.1.take().ok_or("not started")?.stop();
        let c = c.map_err(|e| e.to_string())?;
        let (lost, label) = (
            c.lost_total(),
            format!("sched_switch ({})", c.mechanism.name()),
        );
        Ok((c.events, label, lost))
    }
}

/// The capture for a resolved mechanism: none when `Off`.
pub fn capture(m: Mechanism) -> Box<dyn ScheduleCapture> {
    match m {
        Mechanism::Off => Box::new(NoCapture),
        m => Box::new(SchedSwitch(m, None)),
    }
}
