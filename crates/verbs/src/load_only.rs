//! `rtscope load KIND[,KIND…] [-- CMD ARGS…]`: background workloads on their own, until `-D` or a
//! stop signal; their intensity figures are printed and stored like every verb's result (a
//! record with `loads` and no latency samples).

use crate::input::{self, VerbError};
use crate::outputs::RecordOutputs;
use rtscope_load::{LoadKind, LoadSettings};
use rtscope_model::RunRecord;
use rtscope_session::tool::{run_tool, Begin, Flow, Tool, Work};
use std::time::{Duration, Instant};

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
        Some(d) => Some(Duration::from_secs_f64(input::duration(
            &input::Field::Duration.to_string(),
            d,
        )?)),
        None => None,
    };
    let cpus = match &l.cpus {
        Some(c) => input::cpus(&rtscope_load::Field::Cpus.to_string(), Some(c))?,
        None => Vec::new(),
    };
    let tags = out.validate()?;
    let opts = l.settings.options(cpus, l.force, l.exec.clone())?;
    rtscope_load::validate(&l.kinds, &opts)?;

    run_tool(LoadTool {
        kinds: &l.kinds,
        opts,
        duration,
        tags,
        out,
        running: None,
        reports: Vec::new(),
        interrupted: false,
    })
}

/// The loads on their own, as a tool of the one lifecycle: start them, wait (a step every
/// 20 ms) until `-D` or a stop signal, stop them, record their figures.
struct LoadTool<'a> {
    kinds: &'a [LoadKind],
    opts: rtscope_load::LoadOptions,
    duration: Option<Duration>,
    tags: std::collections::BTreeMap<String, String>,
    out: &'a RecordOutputs,
    /// The loads and when they began to run (`-D` counts from there).
    running: Option<(rtscope_load::RunningLoads, Instant)>,
    reports: Vec<rtscope_model::LoadReport>,
    interrupted: bool,
}

impl Tool for LoadTool<'_> {
    type Output = ();

    fn begin(&self) -> Begin {
        // The session's one set of handlers: SIGINT, SIGTERM and SIGHUP stop the loads cleanly.
        Begin::live("load", crate::privilege::Need::Nothing, "")
    }

    fn start(&mut self, _w: &Work) -> Result<(), VerbError> {
        let loads = rtscope_load::start(self.kinds, &self.opts)?;
        let names: Vec<&str> = self.kinds.iter().map(|k| k.name()).collect();
        match self.duration {
            _ if self.out.quiet => {}
            Some(d) => eprintln!(
                "rtscope: load {} running for {d:?} (Ctrl-C stops)",
                names.join(",")
            ),
            None => eprintln!("rtscope: load {} running until Ctrl-C", names.join(",")),
        }
        self.running = Some((loads, Instant::now()));
        Ok(())
    }

    fn step(&mut self, _w: &Work) -> Result<Flow, VerbError> {
        let up = self.running.as_ref().map(|(_, t0)| t0.elapsed());
        if self.interrupted || self.duration.zip(up).is_some_and(|(d, up)| up >= d) {
            return Ok(Flow::Done);
        }
        std::thread::sleep(Duration::from_millis(20));
        Ok(Flow::Continue)
    }

    fn request_stop(&mut self) {
        self.interrupted = true;
    }

    fn stop(&mut self, _w: &Work) -> Result<(), VerbError> {
        if let Some((loads, _)) = self.running.take() {
            self.reports = loads.stop();
        }
        Ok(())
    }

    fn record(&mut self, work: &Work) -> Result<Option<RunRecord>, VerbError> {
        let mut warnings = Vec::new();
        for r in &self.reports {
            for w in &r.warnings {
                warnings.push(rtscope_model::Warning::new(
                    rtscope_model::WarningCode::Load,
                    format!("load {}: {w}", r.kind),
                ));
            }
        }
        let policy = match self.opts.policy {
            rtscope_load::LoadPolicy::Other => "other".to_string(),
            rtscope_load::LoadPolicy::Fifo(p) => format!("fifo:{p}"),
        };
        Ok(Some(work.record(crate::record::WorkInfo {
            verb: "load".into(),
            cpus: if self.opts.cpus.is_empty() {
                rtscope_probe::sys::online_cpus().unwrap_or_default()
            } else {
                self.opts.cpus.clone()
            },
            interrupted: self.interrupted,
            hygiene: rtscope_model::Hygiene::default(),
            warnings,
            tags: std::mem::take(&mut self.tags),
            loads: self.reports.clone(),
            kind: rtscope_model::RunKind::Load(Box::new(rtscope_model::LoadOnly { policy })),
        })))
    }

    fn outputs(self, _w: &Work, rec: Option<RunRecord>) -> Result<(), VerbError> {
        if self.out.text() {
            print!(
                "{}",
                rtscope_report::bench::loads(&self.reports, self.interrupted)
            );
        }
        match rec {
            Some(rec) => self.out.emit(&rec),
            None => Ok(()),
        }
    }
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
                "⟨load.load⟩: 'net' overlaps 'io' in 'io,net' (io = hackbench+disk+net)",
            ),
            (
                LoadOnly {
                    duration: Some("0s".into()),
                    ..l.clone()
                },
                out.clone(),
                "⟨duration⟩: 0s is out of range (1ms ..= 30d)",
            ),
            (
                LoadOnly {
                    cpus: Some("4095".into()),
                    ..l.clone()
                },
                out.clone(),
                "⟨load.cpus⟩: CPU 4095 is not online",
            ),
            (
                l.clone(),
                RecordOutputs {
                    tags: vec!["x".into()],
                    ..out.clone()
                },
                "⟨tags⟩: 'x' is not key=value",
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
                "⟨load.disk_size⟩: expected a size like 4096, 64K, 20M or 1G, got 'x'",
            ),
            (
                LoadOnly {
                    kinds: vec![Exec],
                    ..l.clone()
                },
                out.clone(),
                "⟨load.exec⟩: needs a command",
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
