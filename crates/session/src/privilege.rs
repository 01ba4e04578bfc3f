//! Who may run what: real-time and DEADLINE policies need root or CAP_SYS_NICE, locking a run's
//! memory needs CAP_IPC_LOCK (or a large RLIMIT_MEMLOCK). One rule for every verb.

use crate::input::Field;
use rtscope_model::Policy;

/// What the caller may do, read once before anything starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Privileges {
    pub root: bool,
    pub sys_nice: bool,
    pub ipc_lock: bool,
}

impl Privileges {
    pub fn current() -> Privileges {
        use rtscope_probe::sys;
        let root = sys::is_root();
        Privileges {
            root,
            sys_nice: root || sys::has_capability(sys::CAP_SYS_NICE),
            ipc_lock: root || sys::has_capability(CAP_IPC_LOCK),
        }
    }

    /// May threads be given `policy`?
    pub fn allows(&self, policy: Policy) -> bool {
        policy == Policy::Other || self.sys_nice
    }
}

/// linux/capability.h
const CAP_IPC_LOCK: u32 = 14;

/// What a verb needs beyond an ordinary user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Real-time policies and locked memory: root or CAP_SYS_NICE.
    RealTime,
    /// Kernel state only root may change (tracefs instances, cpusets, preemption model).
    Root,
    /// Nothing up front: the work's own checks say what it lacks (a load's policy, a capture
    /// mechanism's requirements).
    Nothing,
}

/// The one check and message for every verb: `Err` says what `verb` needs, why, and how to
/// grant it.
pub fn require(verb: &str, need: Need, why: &str) -> Result<(), String> {
    let p = Privileges::current();
    match need {
        Need::RealTime if !p.sys_nice => Err(format!(
            "{verb} needs root or CAP_SYS_NICE ({why}): run it with sudo, or `setcap cap_sys_nice,cap_ipc_lock+ep $(command -v rtscope)`"
        )),
        Need::Root if !p.root => Err(format!("{verb} needs root ({why}): run it with sudo")),
        _ => Ok(()),
    }
}

/// The one message for a policy the caller may not use.
pub fn denied_message(policy: Policy) -> String {
    format!(
        "{} {} needs root or CAP_SYS_NICE (run with sudo, or `setcap cap_sys_nice,cap_ipc_lock+ep $(command -v rtscope)`, or pass {} to measure under SCHED_OTHER)",
        Field::Policy,
        policy.name(),
        Field::AllowUnprivileged
    )
}
