//! POSIX policies: SCHED_FIFO, SCHED_RR (priority 1–99) and SCHED_OTHER (nice −20…19).

use super::Admission;
use crate::{sys, ProbeError};
use rtscope_model::Policy;

pub struct PosixBackend {
    policy: Policy,
    priority: u32,
    nice: i32,
}

impl PosixBackend {
    pub fn new(policy: Policy, priority: u32, nice: i32) -> Self {
        PosixBackend {
            policy,
            priority,
            nice,
        }
    }
}

impl Admission for PosixBackend {
    fn name(&self) -> &'static str {
        self.policy.name()
    }

    fn admit(&self) -> Result<(), ProbeError> {
        let attr = match self.policy {
            Policy::Fifo | Policy::Rr => sys::SchedAttr {
                sched_policy: if self.policy == Policy::Fifo {
                    sys::SCHED_FIFO
                } else {
                    sys::SCHED_RR
                },
                sched_priority: self.priority,
                // Reset-on-fork: anything the thread might fork does not inherit RT priority.
                sched_flags: sys::SCHED_FLAG_RESET_ON_FORK,
                ..Default::default()
            },
            _ => sys::SchedAttr {
                sched_policy: sys::SCHED_OTHER,
                sched_nice: self.nice,
                ..Default::default()
            },
        };
        sys::sched_setattr(0, &attr).map_err(|e| ProbeError::Sched {
            what: "sched_setattr",
            source: e,
        })?;
        if self.policy == Policy::Other {
            // Cerqueira & Brandenburg 2013 §2.4: SCHED_OTHER threads get the default 50 µs timer
            // slack, a systematic delay that is not latency. RT threads have none in the kernel.
            rtscope_sys::sched::set_timer_slack(1).map_err(|source| ProbeError::Sched {
                what: "PR_SET_TIMERSLACK",
                source,
            })?;
        }
        Ok(())
    }
}
