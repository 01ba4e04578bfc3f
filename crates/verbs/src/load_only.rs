//! `rtscope load KIND[,KIND…] [-- CMD ARGS…]`: background workloads on their own, until `-D` or a
//! stop signal; their intensity figures are printed and stored like every verb's result (a
//! record with `loads` and no latency samples).

use crate::input::{self, VerbError};
use crate::outputs::RecordOutputs;
use rtscope_load::{LoadKind, LoadSettings};
use std::time::Duration;

/// The verb's flags as given.
#[derive(Clone, Debug, Default)]
pub struct LoadOnly {
    pub kinds: Vec<LoadKind>,
    /// `-D`: until stopped when absent.
    pub duration: Option<String>,
    /// `--cpus`: every online CPU when absent.
    pub cpus: Option<String>,
    pub force: bool,
    pub settings: LoadSettings,
    /// exec: the command and its arguments.
    pub exec: Vec<String>,
}

pub fn run(l: &LoadOnly, out: &RecordOutputs) -> Result<(), VerbError> {
    // Everything is resolved and checked before the first process is forked.
    rtscope_load::check_kinds(&l.kinds)?;
    let duration = match &l.duration {
        Some(d) => Some(Duration::from_secs_f64(input::duration("--duration", d)?)),
        None => None,
    };
    let cpus = match &l.cpus {
        Some(c) => input::cpus("--cpus", Some(c))?,
        None => Vec::new(),
    };
    let tags = out.validate()?;
    let opts = l.settings.options(cpus, l.force, l.exec.clone())?;
    rtscope_load::validate(&l.kinds, &opts)?;

    // The session's one set of handlers: SIGINT, SIGTERM and SIGHUP stop the loads cleanly.
    let work = crate::work::begin("load", crate::privilege::Need::Nothing, "")?;
    let mut warnings = Vec::new();
    let loads = rtscope_load::start(&l.kinds, &opts)?;
    let names: Vec<&str> = l.kinds.iter().map(|k| k.name()).collect();
    match duration {
        _ if out.quiet => {}
        Some(d) => eprintln!(
            "rtscope: load {} running for {d:?} (Ctrl-C stops)",
            names.join(",")
        ),
        None => eprintln!("rtscope: load {} running until Ctrl-C", names.join(",")),
    }
    // `-D` counts from when the loads run.
    let t0 = std::time::Instant::now();
    let stopped = crate::signals::stop_requested;
    while !stopped() && duration.is_none_or(|d| t0.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let interrupted = stopped();
    let reports = loads.stop();
    if out.text() {
        print!("{}", rtscope_report::bench::loads(&reports, interrupted));
    }
    for r in &reports {
        for w in &r.warnings {
            warnings.push(rtscope_model::Warning::new(
                rtscope_model::WarningCode::Load,
                format!("load {}: {w}", r.kind),
            ));
        }
    }
    let policy = match opts.policy {
        rtscope_load::LoadPolicy::Other => "other".to_string(),
        rtscope_load::LoadPolicy::Fifo(p) => format!("fifo:{p}"),
    };
    let rec = work.record(crate::record::WorkInfo {
        verb: "load".into(),
        cpus: if opts.cpus.is_empty() {
            rtscope_probe::sys::online_cpus().unwrap_or_default()
        } else {
            opts.cpus.clone()
        },
        interrupted,
        hygiene: rtscope_model::Hygiene::default(),
        warnings,
        tags,
        loads: reports,
        kind: rtscope_model::RunKind::Load(Box::new(rtscope_model::LoadOnly { policy })),
    });
    out.emit(&rec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_load::LoadKind::*;

    #[test]
    fn flags_are_checked_before_a_process_is_forked() {
        let l = LoadOnly {
            kinds: vec![CpuCache],
            ..LoadOnly::default()
        };
        let out = RecordOutputs {
            no_store: true,
            ..RecordOutputs::default()
        };
        let rows: Vec<(LoadOnly, RecordOutputs, &str)> = vec![
            (
                LoadOnly {
                    kinds: vec![Io, Net],
                    ..l.clone()
                },
                out.clone(),
                "--load: 'net' overlaps 'io' in 'io,net' (io = hackbench+disk+net)",
            ),
            (
                LoadOnly {
                    duration: Some("0s".into()),
                    ..l.clone()
                },
                out.clone(),
                "--duration: 0s is out of range (1ms ..= 30d)",
            ),
            (
                LoadOnly {
                    cpus: Some("4095".into()),
                    ..l.clone()
                },
                out.clone(),
                "--cpus: CPU 4095 is not online",
            ),
            (
                l.clone(),
                RecordOutputs {
                    tags: vec!["x".into()],
                    ..out.clone()
                },
                "--tag: 'x' is not key=value",
            ),
            (
                LoadOnly {
                    settings: rtscope_load::LoadSettings {
                        disk_size: "x".into(),
                        ..Default::default()
                    },
                    ..l.clone()
                },
                out.clone(),
                "--disk-size: expected a size like 4096, 64K, 20M or 1G, got 'x'",
            ),
            (
                LoadOnly {
                    kinds: vec![Exec],
                    ..l.clone()
                },
                out.clone(),
                "exec: needs a command",
            ),
        ];
        for (l, out, want) in rows {
            match run(&l, &out) {
                Err(VerbError::BadInput(got)) => assert!(got.starts_with(want), "{got} / {want}"),
                other => panic!("{want}: {other:?}"),
            }
        }
    }
}
