//! `--preset NAME`: a published measurement set-up in one flag. The preset fills what the user
//! left at its default; a flag given with another value wins, and the record then says that
//! the run is not the publication's set-up (a warning naming each difference).

use crate::input::{bad, VerbError};
use crate::resolve::MeasureFlags;
use rtscope_model::Policy;

pub const NAMES: &[&str] = &["ospert13"];

/// The flags with the preset applied, and the preset's differences from what the user gave.
pub struct Applied {
    pub flags: MeasureFlags,
    pub name: &'static str,
    pub overridden: Vec<String>,
}

/// Cerqueira & Brandenburg, OSPERT'13, §2.2 and §3: cyclictest with one SCHED_FIFO thread of
/// priority 99 per core, pinned, memory locked, intervals I = 1000 µs plus a 500 µs step per
/// thread (`-i 1000 -d 500`, cyclictest's defaults as they ran it), 20 minutes per
/// configuration; the CPU-bound load with a 20 MiB working set per core (§3.2); the I/O load's
/// disk part by bonnie++ with direct I/O (§3.3, here when installed). The scenario itself is
/// `--load` (idle, cpu-cache, io).
fn ospert13(f: &MeasureFlags) -> Applied {
    let mut g = f.clone();
    let mut over = Vec::new();
    if f.policy != Policy::Fifo {
        over.push(format!("--policy {} (the paper: fifo)", f.policy.name()));
    }
    match f.priority {
        None => g.priority = Some(99),
        Some(99) => {}
        Some(p) => over.push(format!("--priority {p} (the paper: 99)")),
    }
    if f.interval != 1000 {
        over.push(format!("--interval {} (the paper: 1000 us)", f.interval));
    }
    match f.distance {
        0 => g.distance = 500,
        500 => {}
        d => over.push(format!("--distance {d} (the paper: 500 us)")),
    }
    match (&f.duration, f.loops) {
        (None, None) => g.duration = Some("20m".into()),
        (Some(d), _) if d == "20m" || d == "1200" || d == "1200s" => {}
        (Some(d), _) => over.push(format!("--duration {d} (the paper: 20 min)")),
        (None, Some(l)) => over.push(format!("--loops {l} (the paper: 20 min)")),
    }
    if let Some(c) = &f.cpus {
        over.push(format!("--cpus {c} (the paper: one thread on every core)"));
    }
    match &f.load_settings.wss {
        None => g.load_settings.wss = Some("20M".into()),
        Some(w) if rtscope_load::parse_size(w) == Ok(20 << 20) => {}
        Some(w) => over.push(format!("--wss {w} (the paper: 20 MiB per core)")),
    }
    if f.load_settings.disk_tool == rtscope_load::DiskTool::Builtin {
        g.load_settings.disk_tool = rtscope_load::DiskTool::Auto;
    }
    Applied {
        flags: g,
        name: "ospert13",
        overridden: over,
    }
}

/// Apply `--preset` (None: the flags as given).
pub fn apply(f: &MeasureFlags) -> Result<Option<Applied>, VerbError> {
    match f.preset.as_deref() {
        None => Ok(None),
        Some("ospert13") => Ok(Some(ospert13(f))),
        Some(other) => Err(bad!(
            "--preset: unknown preset '{other}'; accepted: {}",
            NAMES.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ospert13_fills_the_defaults_and_names_what_was_given() {
        let f = MeasureFlags {
            preset: Some("ospert13".into()),
            ..MeasureFlags::default()
        };
        let a = apply(&f).unwrap().unwrap();
        assert_eq!(a.flags.priority, Some(99));
        assert_eq!(a.flags.distance, 500);
        assert_eq!(a.flags.interval, 1000);
        assert_eq!(a.flags.duration.as_deref(), Some("20m"));
        assert_eq!(a.flags.load_settings.wss.as_deref(), Some("20M"));
        assert_eq!(
            a.flags.load_settings.disk_tool,
            rtscope_load::DiskTool::Auto
        );
        assert!(a.overridden.is_empty());

        let f = MeasureFlags {
            preset: Some("ospert13".into()),
            priority: Some(80),
            duration: Some("2m".into()),
            ..MeasureFlags::default()
        };
        let a = apply(&f).unwrap().unwrap();
        assert_eq!(a.flags.priority, Some(80));
        assert_eq!(a.flags.duration.as_deref(), Some("2m"));
        assert_eq!(
            a.overridden,
            [
                "--priority 80 (the paper: 99)",
                "--duration 2m (the paper: 20 min)"
            ]
        );
    }

    #[test]
    fn an_unknown_preset_is_bad_input() {
        let f = MeasureFlags {
            preset: Some("ospert14".into()),
            ..MeasureFlags::default()
        };
        let e = apply(&f).err().unwrap().to_string();
        assert!(
            e.contains("--preset: unknown preset 'ospert14'; accepted: ospert13"),
            "{e}"
        );
    }
}
