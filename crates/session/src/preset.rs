//! A preset: a published measurement set-up in one value. The preset fills what the request
//! left at its default; a value given otherwise wins, and the record then says that the run is
//! not the publication's set-up (a warning naming each difference).

use crate::input::Field;
use crate::resolve::{MeasureRequest, Preset};
use rtscope_model::Policy;
use std::time::Duration;

/// The request with the preset applied, and the preset's differences from what was asked.
pub struct Applied {
    pub request: MeasureRequest,
    pub name: &'static str,
    pub overridden: Vec<String>,
}

impl Preset {
    pub fn name(self) -> &'static str {
        match self {
            Preset::Ospert13 => "ospert13",
        }
    }
}

/// Cerqueira & Brandenburg, OSPERT'13, §2.2 and §3: cyclictest with one SCHED_FIFO thread of
/// priority 99 per core, pinned, memory locked, intervals I = 1000 µs plus a 500 µs step per
/// thread (`-i 1000 -d 500`, cyclictest's defaults as they ran it), 20 minutes per
/// configuration; the CPU-bound load with a 20 MiB working set per core (§3.2); the I/O load's
/// disk part by bonnie++ with direct I/O (§3.3, here when installed). The scenario itself is
/// the load.
fn ospert13(f: &MeasureRequest) -> Applied {
    let mut g = f.clone();
    let mut over = Vec::new();
    if f.policy != Policy::Fifo {
        over.push(format!(
            "{} {} (the paper: fifo)",
            Field::Policy,
            f.policy.name()
        ));
    }
    match f.priority {
        None => g.priority = Some(99),
        Some(99) => {}
        Some(p) => over.push(format!("{} {p} (the paper: 99)", Field::Priority)),
    }
    if f.interval_us != 1000 {
        over.push(format!(
            "{} {} (the paper: 1000 us)",
            Field::Interval,
            f.interval_us
        ));
    }
    match f.distance_us {
        0 => g.distance_us = 500,
        500 => {}
        d => over.push(format!("{} {d} (the paper: 500 us)", Field::Distance)),
    }
    const PAPER: Duration = Duration::from_secs(1200);
    match (f.duration, f.loops) {
        (None, None) => g.duration = Some(PAPER),
        (Some(d), _) if d == PAPER => {}
        (Some(d), _) => over.push(format!(
            "{} {} (the paper: 20 min)",
            Field::Duration,
            rtscope_model::duration::human(d.as_secs_f64())
        )),
        (None, Some(l)) => over.push(format!("{} {l} (the paper: 20 min)", Field::Loops)),
    }
    if let Some(c) = &f.cpus {
        over.push(format!(
            "{} {} (the paper: one thread on every core)",
            Field::Cpus,
            crate::input::fmt_cpus(c)
        ));
    }
    match &f.load_settings.wss {
        None => g.load_settings.wss = Some("20M".into()),
        Some(w) if rtscope_load::parse_size(w) == Ok(20 << 20) => {}
        Some(w) => over.push(format!("{} {w} (the paper: 20 MiB per core)", Field::Wss)),
    }
    if f.load_settings.disk_tool == rtscope_load::DiskTool::Builtin {
        g.load_settings.disk_tool = rtscope_load::DiskTool::Auto;
    }
    Applied {
        request: g,
        name: Preset::Ospert13.name(),
        overridden: over,
    }
}

/// Apply the request's preset (None: the request as given).
pub fn apply(f: &MeasureRequest) -> Option<Applied> {
    match f.preset? {
        Preset::Ospert13 => Some(ospert13(f)),
    }
}
