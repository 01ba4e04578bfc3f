//! The guest verb as the host sizes the guest for it: how long it runs (the limit in the guest's
//! own time) and what its disk load writes (the scratch disk). The caller reads these from the
//! verb's typed flags, parsed by the binary's own grammar before anything boots; nothing here
//! sees a flag or an argv.

use crate::guest::GuestLimit;
use std::time::Duration;

/// Room on the scratch disk beyond the disk load's file: the load's own 64 MiB margin (small
/// files, metadata) and the file system's tables.
pub const SCRATCH_EXTRA: u64 = 128 << 20;

/// Emulated seconds taken for a verb that states no length (it runs until stopped, or for a
/// default of its own).
pub const UNSIZED_S: f64 = 60.0;

/// The verb must end within `LENGTH_FACTOR` × its length + [`LENGTH_MARGIN_S`] of emulated time:
/// its set-up and record under TCG cost emulated time of their own.
pub const LENGTH_FACTOR: f64 = 3.0;
pub const LENGTH_MARGIN_S: f64 = 180.0;

/// Host seconds the boot may take before the verb starts.
pub const BOOT_S: f64 = 600.0;

/// The host-time limit when none is given: the last resort behind the limit in guest time. The
/// host cost of an emulated second varies by orders of magnitude with icount, busy vCPUs and
/// the host's load, so no host limit fits every run.
pub const LAST_RESORT: Duration = Duration::from_secs(7 * 86400);

/// What the verb asks of the guest.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VerbWork {
    /// Emulated seconds the verb runs: its duration (for a sweep, every run's); None when the
    /// verb states none.
    pub length_s: Option<f64>,
    /// It runs a background load (any kind but idle): each vCPU is busy.
    pub load: bool,
    /// Bytes of the file its disk load writes; None when no load of it writes files.
    pub disk_file: Option<u64>,
}

impl VerbWork {
    /// The scratch disk the verb's disk load needs: its file plus [`SCRATCH_EXTRA`].
    pub fn scratch_disk(&self) -> Option<u64> {
        self.disk_file.map(|b| b.saturating_add(SCRATCH_EXTRA))
    }

    /// The limit in the guest's own time: [`LENGTH_FACTOR`] × the verb's length (or
    /// [`UNSIZED_S`]) + [`LENGTH_MARGIN_S`], [`BOOT_S`] to boot; with every vCPU in one host
    /// thread, a load keeps all `smp` of them busy.
    pub fn guest_limit(&self, smp: u32, single_thread: bool) -> GuestLimit {
        GuestLimit {
            verb_s: LENGTH_FACTOR * self.length_s.unwrap_or(UNSIZED_S) + LENGTH_MARGIN_S,
            busy_vcpus: if single_thread && self.load { smp } else { 1 },
            boot_s: BOOT_S,
        }
    }

    /// The host-time limit and the limit in guest time: a given `timeout` alone, else
    /// [`LAST_RESORT`] behind [`VerbWork::guest_limit`].
    pub fn limits(
        &self,
        timeout: Option<Duration>,
        smp: u32,
        single_thread: bool,
    ) -> (Duration, Option<GuestLimit>) {
        match timeout {
            Some(t) => (t, None),
            None => (LAST_RESORT, Some(self.guest_limit(smp, single_thread))),
        }
    }
}

/// A load sweep's length: every point × set × policy is one run of `run_s`.
pub fn sweep_length_s(points: usize, sets: u32, policies: usize, run_s: f64) -> f64 {
    points as f64 * sets as f64 * policies as f64 * run_s
}

/// The verb's length back from its limit (the inverse of [`VerbWork::guest_limit`]).
pub fn length_of(limit: &GuestLimit) -> f64 {
    (limit.verb_s - LENGTH_MARGIN_S) / LENGTH_FACTOR
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_disk_for_disk_loads_only() {
        let w = VerbWork {
            disk_file: Some(1 << 30),
            ..VerbWork::default()
        };
        assert_eq!(w.scratch_disk(), Some((1 << 30) + (128 << 20)));
        assert_eq!(VerbWork::default().scratch_disk(), None);
        let huge = VerbWork {
            disk_file: Some(u64::MAX),
            ..VerbWork::default()
        };
        assert_eq!(huge.scratch_disk(), Some(u64::MAX));
    }

    #[test]
    fn the_limit_follows_the_length_and_the_load() {
        let w = VerbWork {
            length_s: Some(10.0),
            load: true,
            disk_file: None,
        };
        let l = w.guest_limit(4, true);
        assert_eq!((l.verb_s, l.busy_vcpus, l.boot_s), (210.0, 4, 600.0));
        assert_eq!(length_of(&l), 10.0);
        // One host thread per vCPU: a load does not multiply the host time.
        assert_eq!(w.guest_limit(4, false).busy_vcpus, 1);
        let idle = VerbWork::default().guest_limit(4, true);
        assert_eq!((idle.verb_s, idle.busy_vcpus), (360.0, 1));
        assert_eq!(
            w.limits(Some(Duration::from_secs(30)), 2, true),
            (Duration::from_secs(30), None)
        );
        assert_eq!(
            w.limits(None, 2, true),
            (LAST_RESORT, Some(w.guest_limit(2, true)))
        );
    }

    #[test]
    fn a_sweep_runs_every_point_set_and_policy() {
        // 3 loads × 4 sets × 2 policies × 2 s.
        assert_eq!(sweep_length_s(3, 4, 2, 2.0), 48.0);
        assert_eq!(sweep_length_s(1, 50, 1, 10.0), 500.0);
    }
}
