//! Where rtscope's own threads run while it measures: the orchestrating (session) thread and the
//! trace reader on housekeeping CPUs, away from the measured ones when the machine has any.
//!
//! Why: everything rtscope does besides sampling — draining rings, decoding events, explaining
//! samples, writing files — is kernel work too (system calls, page faults, the page allocator),
//! and on a measured CPU it is inside the latencies and the preempt-off sections it reports
//! (ECRTS'20 Table 1: D_POID is whatever keeps preemption or IRQs disabled, the measuring tool's
//! own included). The measurement threads pin themselves; the reader threads are spawned by the
//! session thread after it moved and inherit its CPUs.

use crate::input::{field, Field, VerbError};

/// The housekeeping CPUs of a run measuring `measured`, and a warning when they overlap it.
///
/// `requested`: `--housekeeping`; every CPU must be online (else a [`VerbError::Field`]).
/// Default: the online CPUs this process may use that are not measured; when every one of them
/// is measured (a 2-CPU machine by default), all of them, with a warning — the run still works.
pub fn resolve(
    requested: Option<&[u32]>,
    measured: &[u32],
) -> Result<(Vec<u32>, Option<String>), VerbError> {
    if let Some(list) = requested {
        let online = crate::input::online_cpus(Field::Housekeeping, Some(list))?;
        let allowed = rtscope_sys::affinity::affinity(0).unwrap_or_default();
        if let Some(c) = online
            .iter()
            .find(|c| !allowed.is_empty() && !allowed.contains(c))
        {
            return Err(field!(
                Field::Housekeeping,
                "CPU {c} is not in this process's CPU affinity ({})",
                crate::input::fmt_cpus(&allowed)
            ));
        }
        let shared: Vec<u32> = online
            .iter()
            .copied()
            .filter(|c| measured.contains(c))
            .collect();
        let warning = (!shared.is_empty()).then(|| {
            format!(
                "{} names measured CPU(s) {}: rtscope's session and trace reader run there, inside what is measured",
                Field::Housekeeping,
                crate::input::fmt_cpus(&shared)
            )
        });
        return Ok((online, warning));
    }
    let online = crate::input::online_cpus(Field::Housekeeping, None)?;
    let allowed = rtscope_sys::affinity::affinity(0).unwrap_or_else(|_| online.clone());
    let usable: Vec<u32> = online
        .iter()
        .copied()
        .filter(|c| allowed.contains(c))
        .collect();
    Ok(default_for(&usable, measured))
}

/// The default housekeeping set among `usable` CPUs (pure: the rule itself).
pub fn default_for(usable: &[u32], measured: &[u32]) -> (Vec<u32>, Option<String>) {
    let free: Vec<u32> = usable
        .iter()
        .copied()
        .filter(|c| !measured.contains(c))
        .collect();
    if !free.is_empty() {
        return (free, None);
    }
    (
        usable.to_vec(),
        Some(format!(
            "every CPU is measured: rtscope's session and trace reader share the measured CPUs \
             (measure fewer CPUs with {} or name others with {})",
            Field::Cpus,
            Field::Housekeeping
        )),
    )
}

/// The calling thread moved to the housekeeping CPUs; [`Placement::widen`] gives it back its
/// CPUs for a moment (threads spawned then inherit them: SCHED_DEADLINE threads, which the
/// kernel refuses with an affinity narrower than their root domain).
pub struct Placement {
    housekeeping: Vec<u32>,
    before: Vec<u32>,
    /// The move failed (said once in the record's notes by the caller).
    pub error: Option<String>,
}

impl Placement {
    /// Move the caller to `cpus` (nothing when `cpus` is empty).
    pub fn enter(cpus: &[u32]) -> Placement {
        let before = rtscope_sys::affinity::affinity(0).unwrap_or_default();
        let mut p = Placement {
            housekeeping: cpus.to_vec(),
            before,
            error: None,
        };
        p.narrow();
        p
    }

    /// The caller on the housekeeping CPUs.
    pub fn narrow(&mut self) {
        if self.housekeeping.is_empty() {
            return;
        }
        if let Err(e) = rtscope_sys::affinity::set_affinity(0, &self.housekeeping) {
            self.error.get_or_insert_with(|| {
                format!(
                    "the session thread could not be moved to its housekeeping CPUs {}: {e}",
                    crate::input::fmt_cpus(&self.housekeeping)
                )
            });
        }
    }

    /// The caller on the CPUs it had before [`Placement::enter`].
    pub fn widen(&mut self) {
        if !self.before.is_empty() {
            let _ = rtscope_sys::affinity::set_affinity(0, &self.before);
        }
    }
}

impl Drop for Placement {
    fn drop(&mut self) {
        self.widen();
    }
}
