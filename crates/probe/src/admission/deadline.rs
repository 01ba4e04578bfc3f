//! SCHED_DEADLINE via sched_setattr (Lelli 2014 thesis §2.2).

use super::Admission;
use crate::{sys, ProbeError};
use rtscope_model::DeadlineParams;

pub struct DeadlineBackend {
    params: DeadlineParams,
}

impl DeadlineBackend {
    pub fn new(params: DeadlineParams) -> Self {
        DeadlineBackend { params }
    }
}

/// Total SCHED_DEADLINE bandwidth the kernel admits per CPU (sched_rt_runtime_us /
/// sched_rt_period_us; 1.0 when the runtime is -1, no limit): for explaining an EBUSY refusal
/// and for the task-set engines' admission arithmetic.
pub fn admission_limit() -> Option<f64> {
    let rt = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").ok()?;
    let per = std::fs::read_to_string("/proc/sys/kernel/sched_rt_period_us").ok()?;
    let rt: f64 = rt.trim().parse().ok()?;
    let per: f64 = per.trim().parse().ok()?;
    if rt < 0.0 {
        return Some(1.0);
    }
    Some(rt / per)
}

impl Admission for DeadlineBackend {
    fn name(&self) -> &'static str {
        "deadline"
    }
    fn may_pin(&self) -> bool {
        false
    }
    fn admit(&self) -> Result<(), ProbeError> {
        let p = &self.params;
        let mut flags = 0;
        if p.reset_on_fork {
            flags |= sys::SCHED_FLAG_RESET_ON_FORK;
        }
        if p.dl_overrun {
            flags |= sys::SCHED_FLAG_DL_OVERRUN;
        }
        let attr = sys::SchedAttr {
            sched_policy: sys::SCHED_DEADLINE,
            sched_flags: flags,
            sched_runtime: p.runtime_ns,
            sched_deadline: p.deadline_ns,
            sched_period: p.period_ns,
            ..Default::default()
        };
        sys::sched_setattr(0, &attr).map_err(|e| {
            if rtscope_sys::is_ebusy(&e) {
                ProbeError::DeadlineAdmission {
                    asked: p.runtime_ns as f64 / p.period_ns as f64,
                    limit_per_cpu: admission_limit(),
                }
            } else {
                ProbeError::Sched {
                    what: "sched_setattr(SCHED_DEADLINE)",
                    source: e,
                }
            }
        })
    }
}
