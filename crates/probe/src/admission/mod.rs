//! Admission backends: how a measurement thread is given its scheduling policy and how it is
//! released. The measurement loop never looks at which backend it runs under (the point of the
//! LITMUS^RT port in Cerqueira & Brandenburg 2013 §2.2–2.3: only admission and exit change, so
//! no bias enters the measurement).

mod deadline;
mod posix;

pub use deadline::{admission_limit, DeadlineBackend};
pub use posix::PosixBackend;

use crate::ProbeError;
use rtscope_model::{DeadlineParams, Policy};

/// What a thread observed of its own scheduling after admission (read back from the kernel).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub policy: String,
    pub priority: i32,
    pub nice: i32,
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}

pub trait Admission: Send + Sync {
    fn name(&self) -> &'static str;
    /// Whether the thread may be pinned to one CPU before admission (SCHED_DEADLINE may not:
    /// the kernel refuses a DL task whose affinity is narrower than its root domain).
    fn may_pin(&self) -> bool {
        true
    }
    /// Admit the calling thread.
    fn admit(&self) -> Result<(), ProbeError>;
    /// Return the calling thread to SCHED_OTHER, nice 0.
    fn release(&self) -> Result<(), ProbeError> {
        let attr = crate::sys::SchedAttr {
            sched_policy: crate::sys::SCHED_OTHER,
            ..Default::default()
        };
        crate::sys::sched_setattr(0, &attr).map_err(|e| ProbeError::Sched {
            what: "restore SCHED_OTHER",
            source: e,
        })
    }
}

/// Read the calling (or given) thread's scheduling attributes back from the kernel.
pub fn observe(tid: i32) -> Result<Observed, ProbeError> {
    let a = crate::sys::sched_getattr(tid).map_err(|e| ProbeError::Sched {
        what: "sched_getattr",
        source: e,
    })?;
    Ok(Observed {
        policy: crate::sys::policy_name(a.sched_policy).to_string(),
        priority: a.sched_priority as i32,
        nice: a.sched_nice,
        runtime_ns: a.sched_runtime,
        deadline_ns: a.sched_deadline,
        period_ns: a.sched_period,
    })
}

/// Pick the backend for a resolved policy.
pub fn backend(
    policy: Policy,
    priority: u32,
    nice: i32,
    deadline: Option<&DeadlineParams>,
) -> Box<dyn Admission> {
    match (policy, deadline) {
        (Policy::Deadline, Some(d)) => Box::new(DeadlineBackend::new(d.clone())),
        (Policy::Deadline, None) => Box::new(DeadlineBackend::new(DeadlineParams {
            runtime_ns: 100_000,
            deadline_ns: 1_000_000,
            period_ns: 1_000_000,
            reset_on_fork: true,
            dl_overrun: false,
        })),
        (p, _) => Box::new(PosixBackend::new(p, priority, nice)),
    }
}
