//! The thread variables streamed from a capture that may lose events (a tracefs ring buffer):
//! per CPU the state machine of [`super::thread`], restarted after each gap with the maxima
//! kept, so no interval is measured across events that were never seen — an interval open
//! across a gap is not measured at all, which is why a loss makes the maxima possibly low,
//! never high. Memory is constant for any duration.

use super::thread::{CpuThreadMeasure, ThreadMeasurer};
use rtscope_model::event::Event;
use std::collections::BTreeMap;

/// One CPU's events through the state machine, restarted at each gap.
#[derive(Clone, Debug, Default)]
pub struct CpuStream {
    pub cpu: u32,
    /// The state machine since the last gap (or the start).
    m: ThreadMeasurer,
    /// Maxima and counts of the segments before the last gap.
    done: CpuThreadMeasure,
    /// Gaps after which the state machine was restarted.
    pub restarts: u64,
}

fn fold(a: &mut CpuThreadMeasure, b: &CpuThreadMeasure) {
    a.vars.poid_ns = a.vars.poid_ns.max(b.vars.poid_ns);
    a.vars.paie_ns = a.vars.paie_ns.max(b.vars.paie_ns);
    a.vars.psd_ns = a.vars.psd_ns.max(b.vars.psd_ns);
    a.vars.dst_ns = a.vars.dst_ns.max(b.vars.dst_ns);
    a.irq_entry_exit_ns = a.irq_entry_exit_ns.max(b.irq_entry_exit_ns);
    a.preemptirq_events += b.preemptirq_events;
    a.sched_sections += b.sched_sections;
    a.irq_arrivals += b.irq_arrivals;
}

impl CpuStream {
    pub fn new(cpu: u32) -> CpuStream {
        CpuStream {
            cpu,
            ..Default::default()
        }
    }

    /// One event of this CPU, in its time order.
    pub fn push(&mut self, e: &Event) {
        self.m.push(e);
    }

    /// A gap: what was measured so far is kept, the state machine starts again.
    pub fn restart(&mut self) {
        if let Some(m) = std::mem::take(&mut self.m).finish().remove(&self.cpu) {
            fold(&mut self.done, &m);
        }
        self.restarts += 1;
    }

    /// The CPU's measure so far: every segment's maxima, their counts summed.
    pub fn measure(&self) -> CpuThreadMeasure {
        let mut out = self.done.clone();
        if let Some(m) = self.m.get(self.cpu) {
            fold(&mut out, m);
        }
        out
    }
}

/// The measured CPUs' streams; records of other CPUs are ignored.
#[derive(Clone, Debug, Default)]
pub struct Streams {
    pub cpus: BTreeMap<u32, CpuStream>,
}

impl Streams {
    pub fn new(cpus: &[u32]) -> Streams {
        Streams {
            cpus: cpus.iter().map(|&c| (c, CpuStream::new(c))).collect(),
        }
    }

    /// One event, in its CPU's time order (events of CPUs not measured are ignored).
    pub fn event(&mut self, e: &Event) {
        if let Some(s) = self.cpus.get_mut(&e.cpu) {
            s.push(e);
        }
    }

    /// The reader lost events of `cpu` here: what follows does not continue what came before.
    pub fn gap(&mut self, cpu: u32) {
        if let Some(s) = self.cpus.get_mut(&cpu) {
            s.restart();
        }
    }
}
