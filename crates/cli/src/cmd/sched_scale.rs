//! `rtscope sched-scale` — SCHED_FIFO wake-up/scheduling time against the number of runnable
//! SCHED_OTHER load processes on the same CPU (heursch-2001 §4, Table 3), with the fitted slope
//! and its 95 % confidence interval.

use super::common::{bench_err, bench_record, emit, OutArgs, RecordInfo};
use crate::cmd::common::{check_output, write_atomic};
use crate::usage;
use anyhow::Result;
use rtscope_bench::common::{self as bc, reaper::Reaper};
use rtscope_bench::sched_scale::{self, parse_loads, Config, DEFAULT_LOADS};
use rtscope_model::bench::BenchResult;
use rtscope_model::{WarningCode, Warnings};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// CPU of the SCHED_FIFO thread and all load processes [default: the last online CPU]
    /// (one CPU, e.g. `--cpus 1`; `--cpu N`, its old name, still works)
    #[arg(long = "cpus", value_name = "LIST", alias = "cpu")]
    cpus: Option<String>,
    /// SCHED_FIFO priority of the measuring thread (1..=99).
    #[arg(long, default_value_t = 80)]
    priority: u32,
    /// Numbers of SCHED_OTHER load processes, comma-separated (each 0..=1000, distinct).
    #[arg(long, default_value = "0,10,20,30,40,50,100,150,200")]
    loads: String,
    /// Wake-ups per load level (2..=100000; the paper used 200).
    #[arg(long, default_value_t = 200)]
    wakeups: u64,
    /// Sleep between wake-ups, ms (0.1..=10000; the paper slept 1000 ms).
    #[arg(long, default_value_t = 10.0)]
    sleep_ms: f64,
    /// Do not capture kernel events (tracefs instance).
    #[arg(long)]
    no_trace: bool,
    /// Write the per-N table as CSV.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write the figure (mean wake-up→run vs N, with the fit) as SVG.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    #[command(flatten)]
    out: OutArgs,
}

pub fn run(a: Args) -> Result<()> {
    let loads = parse_loads(&a.loads).map_err(|e| usage!("{e}"))?;
    if !a.sleep_ms.is_finite() || !(0.1..=10_000.0).contains(&a.sleep_ms) {
        return Err(usage!(
            "--sleep-ms: must be 0.1..=10000, got {}",
            a.sleep_ms
        ));
    }
    let cfg = Config {
        cpu: super::common::one_cpu(a.cpus.as_deref(), bc::default_cpu)?,
        priority: a.priority,
        loads,
        wakeups: a.wakeups,
        sleep_ns: (a.sleep_ms * 1e6) as u64,
        trace: !a.no_trace,
    };
    cfg.validate().map_err(bench_err)?;
    for (flag, p) in [("--csv", &a.csv), ("--svg", &a.svg)] {
        if let Some(p) = p {
            check_output(flag, p)?;
        }
    }
    let tags = a.out.validate()?;
    super::common::require(
        "sched-scale",
        rtscope_session::privilege::Need::Root,
        "SCHED_FIFO, mlockall, tracefs",
    )?;
    super::common::recover_leftovers();
    bc::install_stop_handlers().map_err(anyhow::Error::new)?;
    let reaper = Reaper::start().map_err(anyhow::Error::new)?;
    let started = std::time::SystemTime::now();
    let t0 = std::time::Instant::now();
    a.out.progress(&format!(
        "rtscope sched-scale: CPU {}, SCHED_FIFO {}, {} wake-ups every {} ms per level, N = {:?}",
        cfg.cpu, cfg.priority, cfg.wakeups, a.sleep_ms, cfg.loads
    ));
    let res = sched_scale::run(&cfg, &reaper, |n| a.out.progress(&format!("  N = {n} …")));
    drop(reaper);
    let res = res.map_err(bench_err)?;
    if a.out.text() {
        print!("{}", rtscope_report::bench::sched_scale(&res));
    }
    if let Some(p) = &a.csv {
        write_atomic(p, rtscope_report::bench::sched_scale_csv(&res).as_bytes())?;
        eprintln!("rtscope: wrote {}", p.display());
    }
    if let Some(p) = &a.svg {
        write_atomic(p, rtscope_report::bench::sched_scale_svg(&res).as_bytes())?;
        eprintln!("rtscope: wrote {}", p.display());
    }
    let mut warnings = Vec::new();
    if let Some(t) = &res.trace_unavailable {
        warnings.warn(WarningCode::Trace, format!("kernel events: {t}"));
    }
    if DEFAULT_LOADS.len() != res.rows.len() && bc::stop_requested() {
        warnings.warn(
            WarningCode::Interrupted,
            "interrupted: not every load level was measured",
        );
    }
    let rec = bench_record(
        RecordInfo {
            verb: "sched-scale",
            cpu: cfg.cpu,
            priority: cfg.priority,
            started,
            wall_s: t0.elapsed().as_secs_f64(),
            interrupted: bc::stop_requested(),
            warnings,
            tags,
        },
        BenchResult::SchedScale(Box::new(res)),
    );
    emit(&a.out, &rec)
}
