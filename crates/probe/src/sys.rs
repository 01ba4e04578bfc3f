//! The kernel calls the probe uses, all from `rtscope_sys`; re-exported here for the probe's
//! callers. No policy lives here.

pub use rtscope_sys::affinity::{current_cpu, online_cpus, set_affinity};
pub use rtscope_sys::clock::{monotonic_ns, now_ns, Clock};
pub use rtscope_sys::sched::{
    gettid, policy_name, sched_getattr, sched_setattr, SchedAttr, SCHED_DEADLINE, SCHED_FIFO,
    SCHED_FLAG_DL_OVERRUN, SCHED_FLAG_RESET_ON_FORK, SCHED_OTHER, SCHED_RR,
};
pub use rtscope_sys::system::{has_capability, is_root, CAP_SYS_NICE};

/// The kernel clock of a configured clock id.
#[inline]
pub fn clock_raw(clock: rtscope_model::ClockId) -> Clock {
    Clock::from(clock)
}

/// Parse a kernel CPU list ("0-3,5,7-8"): the one parser, in `rtscope_model::cpus`.
pub use rtscope_model::cpus::parse_cpu_list;
