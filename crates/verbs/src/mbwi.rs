//! `rtscope mbwi` — bandwidth inheritance (Lelli 2014 thesis Ch. 4): `sim` simulates a task set
//! or one of the thesis' examples; `run` measures SCHED_DEADLINE threads sharing a PI or a plain
//! mutex (§4.4.2) beside the simulator, their schedule from `sched_switch`; `overhead` times
//! lock/unlock with and without PI (§4.4.3).

use crate::input::{self, VerbError};
use crate::outputs::{write_file, RecordOutputs};
use crate::privilege::Need;
use crate::tool::{run_once, Begin, Made, Work};
use rtscope_bench::common::reaper::Reaper;
use rtscope_bench::mbwi as km;
use rtscope_model::{mbwi::*, RunKind};
use rtscope_report::mbwi as rep;
use rtscope_trace::Mechanism;
use std::path::PathBuf;
use std::time::Duration;

rtscope_model::request_fields! {
    /// The fields of an M-BWI job the benchmark crate does not hold (its own are
    /// `rtscope_bench::mbwi::Field`), as the refusals name them.
    pub enum Field in "mbwi_job" {
        Svg = "svg" => SVG,
        FigureDir = "figure_dir" => FIGURE_DIR,
        Mechanism = "mechanism" => MECHANISM,
    }
}

/// What to do, with its flags as given.
#[derive(Clone, Debug, PartialEq)]
pub enum Job {
    /// A task-set file or a built-in example under `protocol` (one, or `all`).
    Sim {
        file: Option<PathBuf>,
        example: Option<String>,
        protocol: String,
    },
    /// The kernel experiment: `scenario` (or all) with `mutex` (pi, plain, both).
    Run {
        cpus: Option<String>,
        /// Each run's length (200 ms ..= 10 min).
        duration: Duration,
        mutex: String,
        scenario: String,
        /// The simulations' budget enforcement granularity (whole µs; zero: exact).
        tick: Duration,
        mechanism: Mechanism,
    },
    Overhead {
        cpus: Option<String>,
        iterations: u32,
        contended_iterations: u32,
    },
}

/// The Gantt charts asked for: the first as SVG, every one into a directory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    pub svg: Option<PathBuf>,
    pub figure_dir: Option<PathBuf>,
}

impl Figures {
    fn check(&self) -> Result<(), VerbError> {
        self.svg
            .as_ref()
            .map_or(Ok(()), |p| input::output(&SVG.to_string(), p))?;
        let d = self.figure_dir.as_ref();
        d.map_or(Ok(()), |p| input::output_dir(&FIGURE_DIR.to_string(), p))
    }

    fn write(&self, res: &MbwiResult) -> Result<(), VerbError> {
        let figs = rep::figures(res);
        if let (Some(p), Some((_, svg))) = (&self.svg, figs.first()) {
            write_file(p, svg.as_bytes())?;
        }
        if let Some(d) = &self.figure_dir {
            for (name, svg) in &figs {
                write_file(&d.join(format!("{name}.svg")), svg.as_bytes())?;
            }
        }
        Ok(())
    }
}

/// The job as a tool of the one lifecycle: its whole work is one step (a simulation is
/// offline; the kernel runs need root).
pub fn run(job: &Job, figs: &Figures, out: &RecordOutputs) -> Result<(), VerbError> {
    match job {
        Job::Sim {
            file,
            example,
            protocol,
        } => {
            let (set, name) =
                km::sim_set(file.as_deref(), example.as_deref(), &crate::bench::Rules)?;
            figs.check()?;
            let tags = out.validate()?;
            // Simulations are offline: a signal ends them outright.
            run_once(Begin::Offline, out, |w| {
                let res = simulate(&set, &name, protocol, figs)?;
                Ok(made(w, res, tags, 0))
            })
        }
        Job::Run {
            cpus,
            duration,
            mutex,
            scenario,
            tick,
            mechanism,
        } => {
            let cpus = input::cpus(&km::CPUS.to_string(), cpus.as_deref())?;
            let mech = *mechanism;
            let dur = rtscope_model::duration::human(duration.as_secs_f64());
            let cfg = km::ExperimentConfig::new(scenario, mutex, &cpus, *duration, *tick)?;
            figs.check()?;
            let tags = out.validate()?;
            let why = "SCHED_DEADLINE threads, cpusets, tracefs";
            run_once(Begin::live("mbwi run", Need::Root, why), out, |w| {
                let mech = rtscope_trace::check(mech)
                    .map_err(|e| VerbError::context(format!("{MECHANISM} {}", mech.name()), e))?;
                let reaper = Reaper::start()?;
                let mut cap = crate::schedule::capture(mech);
                out.progress(&format!(
                    "rtscope mbwi run: {dur} s per run, capture {}",
                    mech.name()
                ));
                let res = km::experiment(&cfg, &reaper, cap.as_mut(), &|l| out.progress(l))?;
                figs.write(&res)?;
                Ok(made(w, res, tags, cfg.one_cpu))
            })
        }
        Job::Overhead {
            cpus,
            iterations,
            contended_iterations,
        } => {
            let cfg = km::OverheadConfig {
                cpus: input::cpus(&km::CPUS.to_string(), cpus.as_deref())?,
                iterations: *iterations,
                contended_iterations: *contended_iterations,
            };
            cfg.validate()?;
            let tags = out.validate()?;
            let need = Begin::live("mbwi overhead", Need::Root, "SCHED_DEADLINE threads");
            run_once(need, out, |w| {
                let res = MbwiResult {
                    overhead: Some(km::overhead(&cfg)?),
                    kernel_release: km::kernel_release(),
                    load_avg: km::load_avg(),
                    ..Default::default()
                };
                Ok(made(w, res, tags, cfg.cpus[0]))
            })
        }
    }
}

/// The text and record of a result that ran on `cpu`.
fn made(w: &Work, res: MbwiResult, tags: Tags, cpu: u32) -> Made {
    let text = rep::text(&res);
    let res = RunKind::Mbwi(Box::new(res));
    Made {
        text,
        files: Vec::new(),
        info: Some(w.bench_info("mbwi", (cpu, 0), Vec::new(), tags, res)),
        then: None,
    }
}

type Tags = std::collections::BTreeMap<String, String>;

fn simulate(
    set: &MbwiTaskSet,
    name: &str,
    protocol: &str,
    figs: &Figures,
) -> Result<MbwiResult, VerbError> {
    let protos = MbwiProtocol::parse(protocol).map_or(MbwiProtocol::ALL.to_vec(), |p| vec![p]);
    let simulations =
        rtscope_analysis::mbwi::simulate_all(name, set, &protos).map_err(VerbError::failed)?;
    let res = MbwiResult {
        simulations,
        ..Default::default()
    };
    figs.write(&res)?;
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_runs_are_checked_before_anything_starts() {
        let run_job = |duration: Duration, tick: Duration| Job::Run {
            cpus: None,
            duration,
            mutex: "both".into(),
            scenario: "all".into(),
            tick,
            mechanism: Mechanism::Auto,
        };
        let out = RecordOutputs {
            no_store: true,
            ..RecordOutputs::default()
        };
        let rows = [
            (
                run_job(Duration::from_millis(100), Duration::ZERO),
                format!("{}: 100ms is out of range (200ms ..= 10m)", km::DURATION),
            ),
            (
                run_job(Duration::from_secs(5), Duration::from_nanos(1500)),
                format!("{}: must be whole µs in 0 ..= 1s, got 1.5us", km::TICK),
            ),
            (
                Job::Sim {
                    file: None,
                    example: Some("fig9.9".into()),
                    protocol: "all".into(),
                },
                "⟨mbwi.example⟩".to_string(),
            ),
        ];
        for (job, want) in rows {
            match run(&job, &Figures::default(), &out) {
                Err(VerbError::BadInput(got)) => assert_eq!(got, want),
                other => panic!("{want}: {other:?}"),
            }
        }
    }
}
