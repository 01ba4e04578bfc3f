//! `rtscope doctor`: the machine's real-time settings judged, tied to a traced run's tail, fixed
//! at run time until reverted (rtscope_verbs::doctor; docs/doctor.md). Every flag is checked here
//! before anything is read or written.

use super::common::{self, CpuList, OutArgs};
use crate::usage;
use anyhow::Result;
use rtscope_verbs::doctor::{DoctorPlan, RunSource};
use std::path::PathBuf;
use std::time::Duration;

mod flags;
pub use flags::*;

/// The codes of `--fix` as full codes; CPUs online; root and a writable /sys for a change.
pub fn check(
    a: &Args,
    online: &[u32],
    root: bool,
    read_only: &dyn Fn(&str) -> bool,
) -> Result<Vec<String>> {
    use rtscope_analysis::doctor::{check_code, cpu_list};
    let mut codes = Vec::new();
    for c in &a.fix {
        match check_code(c) {
            Some(full) if !codes.iter().any(|x| x == full) => codes.push(full.to_string()),
            Some(_) => {}
            None => {
                return Err(usage!(
                    "--fix: unknown check code {c:?}; the codes are RT001..RT031, RT040, RT041 (docs/doctor.md)"
                ))
            }
        }
    }
    if let Some(cpus) = &a.cpus {
        let off: Vec<u32> = cpus
            .0
            .iter()
            .copied()
            .filter(|c| !online.contains(c))
            .collect();
        if !off.is_empty() {
            return Err(usage!(
                "--cpus: CPU {} is not online (online: {})",
                cpu_list(&off),
                cpu_list(online)
            ));
        }
    }
    if !a.fix.is_empty() || a.revert {
        let flag = if a.revert { "--revert" } else { "--fix" };
        if !root {
            return Err(usage!(
                "{flag}: needs root (it writes /proc/sys and /sys): run it with sudo"
            ));
        }
        for d in ["/sys", "/proc/sys"] {
            if read_only(d) {
                return Err(usage!(
                    "{flag}: {d} is mounted read-only, so nothing can be changed"
                ));
            }
        }
    }
    Ok(codes)
}

pub fn run(a: Args) -> Result<()> {
    let online = rtscope_sys::affinity::online_cpus()?;
    let fix = check(&a, &online, rtscope_sys::system::is_root(), &|d| {
        rtscope_sys::fs::space(std::path::Path::new(d)).is_ok_and(|s| s.read_only)
    })?;
    let lib = a.out.lib();
    lib.validate()?;
    let source = if let Some(d) = a.run {
        let mut req = super::measure::defaults();
        req.cpus = a.cpus.as_ref().map(|c| c.0.clone());
        req.duration = Some(d);
        req.trace = rtscope_trace::Mechanism::Bpf;
        req.quiet = a.out.quiet;
        req.db = a.out.store.db.db.clone();
        req.no_store = a.out.store.no_store;
        req.tags = a.out.store.tags.iter().cloned().collect();
        req.cmdline = rtscope_session::record::cmdline();
        let plan = rtscope_session::resolve::measure(&req, "doctor", None)
            .map_err(crate::fields::usage)?;
        RunSource::Run(Box::new(plan))
    } else if let Some(id) = &a.from {
        RunSource::From {
            db: a.out.store.db.db.clone(),
            id: id.clone(),
        }
    } else {
        RunSource::None
    };
    Ok(rtscope_verbs::doctor::doctor(DoctorPlan {
        cpus: a.cpus.map(|c| c.0),
        source,
        json: a.out.json.path.clone(),
        html: a.html,
        fix,
        revert: a.revert,
        target: a.target,
        quiet: a.out.quiet,
    })?)
}
