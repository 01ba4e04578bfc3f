//! The modes of `rtscope practise` from their flags to their stored records (lelli-2014 §2.3):
//! random events on emulated CPUs with checkers (`test`) or per-operation costs (`perf`), a
//! recorded trace's event order (`replay`), and the kernel's own cpudl/cpupri costs timed with
//! fentry/fexit under a small task-set load (`kernel`, §2.3.9, Fig. 2.24). Every value is checked
//! before a thread starts; each refusal names its field.

use crate::{queue::QueueKind, structures as st};
use rtscope_bench::taskset::{job, PolicyKind, PriorityOrder};
use rtscope_model::practise::{PractiseKernelResult, PractiseResult};
use rtscope_model::RunKind;
use rtscope_session::input::{self, VerbError};
use rtscope_session::outputs::RecordOutputs;
use rtscope_session::privilege::Need;
use rtscope_session::tool::{run_once, Begin, Made, Work};
use std::path::{Path, PathBuf};
use std::time::Duration;

rtscope_model::request_fields! {
    /// The fields of a scheduler-lab request as its errors name them; the caller renders each
    /// token ([`rtscope_model::field::render`]).
    pub enum Field in "practise" {
        Structure = "structure" => STRUCTURE,
        Svg = "svg" => SVG,
        EmulatedCpus = "emulated_cpus" => EMULATED_CPUS,
        PArrival = "p_arrival" => P_ARRIVAL,
        PFinish = "p_finish" => P_FINISH,
        Cycle = "cycle" => CYCLE,
        Duration = "duration" => DURATION,
        CheckEvery = "check_every" => CHECK_EVERY,
        Policy = "policy" => POLICY,
        Cpus = "cpus" => CPUS,
        /// `trace record`'s event filter, named in the hint for a trace without scheduling events.
        TraceKeep = "trace_keep" => TRACE_KEEP,
    }
}

macro_rules! bad {
    ($($t:tt)*) => { VerbError::BadInput(format!($($t)*)) };
}

/// What every mode but `kernel` shares, typed.
#[derive(Clone, Debug, PartialEq)]
pub struct Common {
    /// The structures serving push() and pull(), each run in turn (`st::ALL_STRUCTURES`: all).
    pub structures: Vec<st::StructureKind>,
    pub queue: QueueKind,
    /// A deliberately broken structure (checker self-test).
    pub inject_fault: Option<st::Fault>,
    /// The modify/query boxplots as SVG.
    pub svg: Option<PathBuf>,
}

/// `test` and `perf`'s request, typed; the ranges are the lab's (`crate::Config::validate`).
#[derive(Clone, Debug, PartialEq)]
pub struct Random {
    /// M values, one set of runs each; default the online CPUs.
    pub emulated_cpus: Option<Vec<u32>>,
    /// Of each run ([`crate::DURATION_NS`]).
    pub duration: Duration,
    /// One random event per CPU per cycle ([`crate::CYCLE_NS`]).
    pub cycle: Duration,
    pub p_arrival: f64,
    pub p_finish: f64,
    pub policy: crate::PolicyChoice,
    /// Random when absent (stored in the result).
    pub seed: Option<u64>,
    /// How often the checker runs (testing mode, [`crate::CHECK_EVERY_NS`]).
    pub check_every: Duration,
}

/// `kernel`'s task-set load while the kernel's functions are timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelLoad {
    /// A SCHED_DEADLINE set: the kernel's cpudl.
    Deadline,
    /// A SCHED_FIFO set: the kernel's cpupri.
    Fifo,
    /// Whatever the machine runs.
    None,
}

impl KernelLoad {
    /// The name stored in the result.
    pub fn name(self) -> &'static str {
        match self {
            KernelLoad::Deadline => "deadline",
            KernelLoad::Fifo => "fifo",
            KernelLoad::None => "none",
        }
    }
}

type Setup = (Vec<st::StructureKind>, QueueKind, Option<st::Fault>);

fn setup(
    c: &Common,
    out: &RecordOutputs,
) -> Result<(Setup, std::collections::BTreeMap<String, String>), VerbError> {
    if c.structures.is_empty() {
        return Err(config_err(crate::ConfigError::NoStructures));
    }
    c.svg
        .as_ref()
        .map_or(Ok(()), |p| input::output(&SVG.to_string(), p))?;
    Ok((
        (c.structures.clone(), c.queue, c.inject_fault),
        out.validate()?,
    ))
}

/// The lab's refusals name no field: the request's are added here.
fn config_err(e: crate::ConfigError) -> VerbError {
    use crate::ConfigError::*;
    let field = match &e {
        NoCpus | EmulatedCpus { .. } => EMULATED_CPUS.to_string(),
        Probability {
            which: crate::Prob::Arrival,
            ..
        } => P_ARRIVAL.to_string(),
        Probability { .. } => P_FINISH.to_string(),
        ProbabilitySum { .. } => format!("{P_ARRIVAL} + {P_FINISH}"),
        Cycle { .. } => CYCLE.to_string(),
        Duration { .. } => DURATION.to_string(),
        CheckEvery { .. } => CHECK_EVERY.to_string(),
        CpupriUnderEdf => format!("{POLICY} edf with {STRUCTURE} cpupri"),
        NoStructures => STRUCTURE.to_string(),
    };
    bad!("{field}: {e}")
}

/// A random-events run: testing mode (checkers) or performance mode (per-operation costs).
pub fn random(
    mode: crate::Mode,
    a: &Random,
    c: &Common,
    out: &RecordOutputs,
) -> Result<(), VerbError> {
    let (setup, tags) = setup(c, out)?;
    let online = input::cpus(&EMULATED_CPUS.to_string(), None)?;
    let cfg = config(mode, a, setup, &online)?;
    run_once(Begin::live("practise", Need::Nothing, ""), out, |work| {
        let progress = &mut |l: &str| out.progress(l);
        let stop = || work.interrupted();
        let res =
            crate::run(&cfg, online.len() as u32, &stop, progress).map_err(VerbError::failed)?;
        Ok(made(res, c, tags, work))
    })
}

/// A random-events run's configuration, checked; `online` are the CPUs performance mode pins to.
fn config(
    mode: crate::Mode,
    a: &Random,
    (structures, queue, fault): Setup,
    online: &[u32],
) -> Result<crate::Config, VerbError> {
    let ms = match &a.emulated_cpus {
        Some(m) => m.iter().map(|&m| m as usize).collect(),
        None => vec![online.len().min(crate::MAX_TEST_CPUS)],
    };
    let cfg = crate::Config {
        mode,
        emulated_cpus: ms,
        structures,
        queue,
        policy: a.policy,
        cycle_ns: ns(a.cycle),
        p_arrival: a.p_arrival,
        p_finish: a.p_finish,
        duration_ns: ns(a.duration),
        seed: a.seed.unwrap_or_else(rand_seed),
        check_every_ns: ns(a.check_every),
        pin_cpus: online.to_vec(),
        fault,
    };
    cfg.validate().map_err(config_err)?;
    Ok(cfg)
}

/// Nanoseconds of a duration, saturating (then out of every range the lab takes).
fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn rand_seed() -> u64 {
    let n = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    n.map(|d| d.as_nanos() as u64).unwrap_or(1) ^ ((std::process::id() as u64) << 32)
}

/// The queues driven by a recorded trace's scheduling events, in their order.
pub fn replay(file: &Path, c: &Common, out: &RecordOutputs) -> Result<(), VerbError> {
    let ((structures, queue, fault), tags) = setup(c, out)?;
    let bad = |e: &dyn std::fmt::Display| bad!("FILE {}: {e}", file.display());
    let f = rtscope_trace::read_rtt(file).map_err(|e| bad(&e))?;
    let cfg = crate::ReplayConfig {
        structures,
        queue,
        fault,
        trace_file: Some(file.display().to_string()),
    };
    run_once(Begin::Offline, out, |work| {
        let res = match crate::replay(&f.events, &cfg) {
            Err(
                e
                @ (crate::PractiseError::NoSchedEvents | crate::PractiseError::TooManyCpus { .. }),
            ) => {
                return Err(bad(&format!(
                    "{e}; record one with `rtscope trace record {TRACE_KEEP} all`"
                )))
            }
            r => r.map_err(VerbError::failed)?,
        };
        Ok(made(res, c, tags, work))
    })
}

/// A run's text, boxplots and record; a checker's violation fails the verb once the record is
/// stored.
fn made(
    res: PractiseResult,
    c: &Common,
    tags: std::collections::BTreeMap<String, String>,
    work: &Work,
) -> Made {
    let text = rtscope_report::practise::text(&res);
    let svg = c
        .svg
        .clone()
        .map(|p| (p, rtscope_report::practise::boxplot_svg(&res)));
    let then = res.violation.as_ref().map(|v| {
        VerbError::failed(format!(
            "checker failed: {} ({}, M = {}); state: {}",
            v.invariant, v.structure, v.emulated_cpus, v.state
        ))
    });
    let warnings = crate::warnings(&res);
    let res = RunKind::Practise(Box::new(res));
    Made {
        text,
        files: svg.into_iter().collect(),
        info: Some(work.bench_info("practise", (0, 0), warnings, tags, res)),
        then,
    }
}

/// Time for `duration` under `load`: deadline (a SCHED_DEADLINE set: cpudl), fifo (a SCHED_FIFO
/// set: cpupri) or none (whatever the machine runs).
pub fn kernel(duration: Duration, load: KernelLoad, out: &RecordOutputs) -> Result<(), VerbError> {
    let duration_ns = ns(duration);
    let (lo, hi) = crate::DURATION_NS;
    if !(lo..=hi).contains(&duration_ns) {
        return Err(config_err(crate::ConfigError::Duration { ns: duration_ns }));
    }
    let tags = out.validate()?;
    let policy = match load {
        KernelLoad::Deadline => Some(PolicyKind::Deadline),
        KernelLoad::Fifo => Some(PolicyKind::Fifo(PriorityOrder::RateMonotonic)),
        KernelLoad::None => None,
    };
    let cpus = input::cpus(&CPUS.to_string(), None)?;
    let timing = rtscope_trace::kfuncs::attach().map_err(VerbError::failed)?;
    run_once(Begin::live("practise", Need::Nothing, ""), out, |clock| {
        let mut notes = vec![
            "durations are fentry to fexit: they include the BPF trampolines and the timing programs, not only the kernel function"
                .to_string(),
        ];
        if let Some(policy) = policy {
            let warnings =
                job::background(policy, &cpus, duration_ns).map_err(VerbError::failed)?;
            notes.extend(warnings.iter().map(|w| format!("load: {w}")));
        } else {
            while clock.elapsed().as_nanos() < duration_ns as u128 && !clock.interrupted() {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        let res = PractiseKernelResult {
            duration_ns,
            load: load.name().to_string(),
            functions: timing.read(),
            notes,
        };
        drop(timing);
        let text = rtscope_report::practise::kernel_text(&res);
        let kind = RunKind::PractiseKernel(Box::new(res));
        Ok(Made {
            text,
            files: Vec::new(),
            info: Some(clock.bench_info("practise", (0, 0), Vec::new(), tags, kind)),
            then: None,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random() -> Random {
        Random {
            emulated_cpus: Some(vec![2, 4]),
            duration: Duration::from_secs(1),
            cycle: Duration::from_millis(10),
            p_arrival: 0.2,
            p_finish: 0.1,
            policy: crate::PolicyChoice::Auto,
            seed: Some(7),
            check_every: Duration::from_millis(1),
        }
    }

    fn common() -> Common {
        Common {
            structures: vec![st::StructureKind::Flat],
            queue: QueueKind::Btree,
            inject_fault: None,
            svg: None,
        }
    }

    fn resolve(mode: crate::Mode, a: &Random, c: &Common) -> Result<crate::Config, VerbError> {
        let out = RecordOutputs {
            no_store: true,
            ..RecordOutputs::default()
        };
        let (setup, _) = setup(c, &out)?;
        config(mode, a, setup, &[0, 1])
    }

    #[test]
    fn flags_resolve_to_the_lab_config() {
        let c = resolve(crate::Mode::Test, &random(), &common()).unwrap();
        assert_eq!(c.emulated_cpus, vec![2, 4]);
        assert_eq!(c.structures, vec![st::StructureKind::Flat]);
        assert_eq!((c.queue, c.seed), (QueueKind::Btree, 7));
        assert_eq!(
            (c.duration_ns, c.cycle_ns, c.check_every_ns),
            (1_000_000_000, 10_000_000, 1_000_000)
        );
        assert_eq!(c.pin_cpus, vec![0, 1]);
        let all = Common {
            structures: st::ALL_STRUCTURES.to_vec(),
            ..common()
        };
        let c = resolve(crate::Mode::Test, &random(), &all).unwrap();
        assert_eq!(c.structures, st::ALL_STRUCTURES.to_vec());
    }

    #[test]
    fn refusals_name_the_flag() {
        let rows: Vec<(crate::Mode, Random, Common, &str)> = vec![
            (
                crate::Mode::Perf,
                random(),
                common(),
                "⟨practise.emulated_cpus⟩: 4 is out of range (1..=2: performance mode pins one emulated CPU per online CPU)",
            ),
            (
                crate::Mode::Test,
                Random { emulated_cpus: Some(Vec::new()), ..random() },
                common(),
                "⟨practise.emulated_cpus⟩: no number of emulated CPUs given",
            ),
            (
                crate::Mode::Test,
                Random { p_arrival: 2.0, ..random() },
                common(),
                "⟨practise.p_arrival⟩: 2 is not a probability (0..=1)",
            ),
            (
                crate::Mode::Test,
                Random { p_arrival: 0.9, p_finish: 0.5, ..random() },
                common(),
                "⟨practise.p_arrival⟩ + ⟨practise.p_finish⟩: 0.9 + 0.5 = 1.4 exceeds 1",
            ),
            (
                crate::Mode::Test,
                Random { cycle: Duration::from_micros(1), ..random() },
                common(),
                "⟨practise.cycle⟩: 1000 ns is out of range",
            ),
            (
                crate::Mode::Test,
                Random { check_every: Duration::from_secs(20), ..random() },
                common(),
                "⟨practise.check_every⟩: 20000000000 ns is out of range",
            ),
            (
                crate::Mode::Test,
                Random { policy: crate::PolicyChoice::Edf, ..random() },
                Common { structures: vec![st::StructureKind::Cpupri], ..common() },
                "⟨practise.policy⟩ edf with ⟨practise.structure⟩ cpupri: cpupri tracks fixed priorities",
            ),
            (
                crate::Mode::Test,
                random(),
                Common { structures: Vec::new(), ..common() },
                "⟨practise.structure⟩: no structure given",
            ),
        ];
        for (mode, a, c, want) in rows {
            match resolve(mode, &a, &c) {
                Err(VerbError::BadInput(got)) => assert!(got.starts_with(want), "{got} / {want}"),
                Err(e) => panic!("{want}: not bad input: {e}"),
                Ok(_) => panic!("{want}: accepted"),
            }
        }
    }
}
