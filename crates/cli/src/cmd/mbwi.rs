//! `rtscope mbwi` — bandwidth inheritance (Lelli 2014 thesis Ch. 4): `sim` simulates a task set
//! or one of the thesis' examples; `run` measures SCHED_DEADLINE threads sharing a PI or a plain
//! mutex (§4.4.2) beside the simulator; `overhead` times lock/unlock with and without PI (§4.4.3).

use super::common::{self, check_output, check_output_dir, write_atomic, OutArgs};
use super::common::{bench_err, bench_record, emit, RecordInfo};
use crate::usage;
use anyhow::{Context, Result};
use rtscope_analysis::mbwi as sim;
use rtscope_bench::common::{self as bc, reaper::Reaper};
use rtscope_bench::mbwi as km;
use rtscope_model::{bench::BenchResult, event::Event, mbwi::*};
use rtscope_report::mbwi as rep;
use rtscope_session::privilege::Need;
use rtscope_trace::{Mechanism, TraceSession};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Sub,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// Simulate a task set (JSON or TOML, see docs/mbwi.md) under each protocol.
    Sim(SimArgs),
    /// SCHED_DEADLINE threads sharing a PI or plain mutex; the schedule from sched_switch.
    Run(RunArgs),
    /// Lock/unlock cost with and without PI under SCHED_DEADLINE.
    Overhead(OverheadArgs),
}

#[derive(clap::Args)]
struct SimArgs {
    /// The task-set file
    #[arg(required_unless_present = "example", conflicts_with = "example")]
    file: Option<PathBuf>,
    /// A built-in set: the thesis' figures or the kernel experiment's sets
    #[arg(long, value_parser = sim::EXAMPLES)]
    example: Option<String>,
    /// none, mainline, mbwi, mbwi-impl, mbwi-impl-affinity, or all
    #[arg(long, default_value = "all", value_parser = ["none", "mainline", "mbwi", "mbwi-impl", "mbwi-impl-affinity", "all"])]
    protocol: String,
    #[command(flatten)]
    fig: FigArgs,
    #[command(flatten)]
    out: OutArgs,
}

#[derive(clap::Args)]
struct RunArgs {
    /// CPUs: the last hosts the one-CPU scenarios, the last two the two-CPU one [default: all online]
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// Length of each run (200ms..=600s)
    #[arg(
        short = 'D',
        long = "duration",
        default_value = "5s",
        value_name = "TIME"
    )]
    duration: String,
    #[arg(long, default_value = "both", value_parser = ["pi", "plain", "both"])]
    mutex: String,
    #[arg(long, default_value = "all", value_parser = ["one-cpu", "one-cpu-overrun", "two-cpus", "all"])]
    scenario: String,
    /// Budget enforcement granularity of the simulations, µs (0..=1000000; 0: exact)
    #[arg(long, default_value_t = 0)]
    tick_us: u64,
    /// Schedule capture: auto, bpf, tracefs, off
    #[arg(long, default_value = "auto", value_parser = ["auto", "bpf", "tracefs", "off"])]
    mechanism: String,
    #[command(flatten)]
    fig: FigArgs,
    #[command(flatten)]
    out: OutArgs,
}

#[derive(clap::Args)]
struct OverheadArgs {
    /// The threads' CPUs [default: all online]
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// Uncontended lock/unlock pairs per mutex kind (1000..=10000000)
    #[arg(long, default_value_t = 100_000)]
    iterations: u32,
    /// Hand-overs to a waiter blocked in the kernel per mutex kind (10..=1000000)
    #[arg(long, default_value_t = 2000)]
    contended_iterations: u32,
    #[command(flatten)]
    out: OutArgs,
}

#[derive(clap::Args)]
struct FigArgs {
    /// Write the first Gantt chart as SVG
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Write every Gantt chart as DIR/<name>.svg
    #[arg(long, value_name = "DIR")]
    figure_dir: Option<PathBuf>,
}

impl FigArgs {
    fn check(&self) -> Result<()> {
        self.svg
            .as_ref()
            .map_or(Ok(()), |p| check_output("--svg", p))?;
        let d = self.figure_dir.as_ref();
        d.map_or(Ok(()), |p| check_output_dir("--figure-dir", p))
    }
    fn write(&self, res: &MbwiResult) -> Result<()> {
        let figs = rep::figures(res);
        if let (Some(p), Some((_, svg))) = (&self.svg, figs.first()) {
            write_atomic(p, svg.as_bytes())?;
        }
        if let Some(d) = &self.figure_dir {
            for (name, svg) in &figs {
                write_atomic(&d.join(format!("{name}.svg")), svg.as_bytes())?;
            }
        }
        Ok(())
    }
}

/// The sched_switch capture around each kernel run (rtscope-trace; every event kept).
struct Capture(Mechanism, Option<TraceSession>);

impl km::ScheduleCapture for Capture {
    fn start(&mut self, cpus: &[u32]) -> Result<(), String> {
        let s = TraceSession::start_with(cpus, self.0, rtscope_trace::Keep::All);
        self.1 = Some(s.map_err(|e| e.to_string())?);
        Ok(())
    }
    fn stop(&mut self) -> Result<(Vec<Event>, String, u64), String> {
        let c = self.1.take().ok_or("not started")?.stop();
        let c = c.map_err(|e| e.to_string())?;
        let (lost, label) = (
            c.lost_total(),
            format!("sched_switch ({})", c.mechanism.name()),
        );
        Ok((c.events, label, lost))
    }
}

fn simulate(a: SimArgs) -> Result<(MbwiResult, OutArgs, Tags, u32)> {
    let set = match (&a.file, &a.example) {
        (Some(f), _) => km::parse_set(&common::read_input("FILE", f)?)
            .map_err(|e| usage!("{}: {e}", f.display()))?,
        (None, e) => e
            .as_deref()
            .and_then(sim::example)
            .ok_or_else(|| usage!("--example"))?,
    };
    a.fig.check()?;
    let tags = a.out.validate()?;
    let protos = MbwiProtocol::parse(&a.protocol).map_or(MbwiProtocol::ALL.to_vec(), |p| vec![p]);
    let name = a.example.clone().unwrap_or_else(|| {
        let f = a.file.as_ref().and_then(|f| f.file_stem());
        f.map_or(String::new(), |s| s.to_string_lossy().into_owned())
    });
    let simulations = sim::simulate_all(&name, &set, &protos)?;
    let res = MbwiResult {
        simulations,
        ..Default::default()
    };
    a.fig.write(&res)?;
    Ok((res, a.out, tags, 0))
}

fn kernel(a: RunArgs) -> Result<(MbwiResult, OutArgs, Tags, u32)> {
    let dur = common::parse_duration_in("--duration", &a.duration, 0.2, 600.0)?;
    let cpus = common::resolve_cpus("--cpus", a.cpus.as_deref())?;
    let mech: Mechanism = a
        .mechanism
        .parse()
        .map_err(|e| usage!("--mechanism: {e}"))?;
    let dur_ns = (dur * 1e9) as u64;
    let cfg = km::ExperimentConfig::new(&a.scenario, &a.mutex, &cpus, dur_ns, a.tick_us);
    let cfg = cfg.map_err(bench_err)?;
    a.fig.check()?;
    let tags = a.out.validate()?;
    common::require(
        "mbwi run",
        Need::Root,
        "SCHED_DEADLINE threads, cpusets, tracefs",
    )?;
    let mech =
        rtscope_trace::check(mech).with_context(|| format!("--mechanism {}", mech.name()))?;
    common::recover_leftovers();
    bc::install_stop_handlers().map_err(anyhow::Error::new)?;
    let reaper = Reaper::start().map_err(anyhow::Error::new)?;
    let mut cap: Box<dyn km::ScheduleCapture> = match mech {
        Mechanism::Off => Box::new(km::NoCapture),
        m => Box::new(Capture(m, None)),
    };
    a.out.progress(&format!(
        "rtscope mbwi run: {dur} s per run, capture {}",
        mech.name()
    ));
    let res = km::experiment(&cfg, &reaper, cap.as_mut(), &|l| a.out.progress(l));
    let res = res.map_err(bench_err)?;
    a.fig.write(&res)?;
    Ok((res, a.out, tags, cfg.one_cpu))
}

fn overhead(a: OverheadArgs) -> Result<(MbwiResult, OutArgs, Tags, u32)> {
    let cpus = common::resolve_cpus("--cpus", a.cpus.as_deref())?;
    let (iterations, contended_iterations) = (a.iterations, a.contended_iterations);
    let cfg = km::OverheadConfig {
        cpus,
        iterations,
        contended_iterations,
    };
    cfg.validate().map_err(bench_err)?;
    let tags = a.out.validate()?;
    common::require("mbwi overhead", Need::Root, "SCHED_DEADLINE threads")?;
    common::recover_leftovers();
    bc::install_stop_handlers().map_err(anyhow::Error::new)?;
    let overhead = Some(km::overhead(&cfg).map_err(bench_err)?);
    let (kernel_release, load_avg) = (km::kernel_release(), km::load_avg());
    let res = MbwiResult {
        kernel_release,
        load_avg,
        overhead,
        ..Default::default()
    };
    Ok((res, a.out, tags, cfg.cpus[0]))
}

type Tags = std::collections::BTreeMap<String, String>;

pub fn run(a: Args) -> Result<()> {
    let (started, t0) = (std::time::SystemTime::now(), std::time::Instant::now());
    let (res, out, tags, cpu) = match a.cmd {
        Sub::Sim(a) => simulate(a)?,
        Sub::Run(a) => kernel(a)?,
        Sub::Overhead(a) => overhead(a)?,
    };
    if out.text() {
        print!("{}", rep::text(&res));
    }
    let (wall_s, interrupted) = (t0.elapsed().as_secs_f64(), bc::stop_requested());
    let info = RecordInfo {
        verb: "mbwi",
        cpu,
        priority: 0,
        started,
        wall_s,
        interrupted,
        warnings: vec![],
        tags,
    };
    emit(&out, &bench_record(info, BenchResult::Mbwi(Box::new(res))))
}
