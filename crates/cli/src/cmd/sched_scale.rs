//! `rtscope sched-scale` — SCHED_FIFO wake-up/scheduling time against the number of runnable
//! SCHED_OTHER load processes on the same CPU (heursch-2001 §4, Table 3), with the fitted slope
//! and its 95 % confidence interval.

use super::rhealstone::{bench_err, bench_record, emit, OutArgs, RecordInfo};
use crate::cmd::common::{check_output, write_atomic};
use crate::usage;
use anyhow::Result;
use rtscope_bench::common::{self as bc, reaper::Reaper};
use rtscope_bench::sched_scale::{self, parse_loads, Config, DEFAULT_LOADS};
use rtscope_model::bench::{BenchResult, SchedScaleResult};
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
        write_atomic(p, to_csv(&res).as_bytes())?;
        eprintln!("rtscope: wrote {}", p.display());
    }
    if let Some(p) = &a.svg {
        write_atomic(p, to_svg(&res).as_bytes())?;
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

fn to_csv(r: &SchedScaleResult) -> String {
    let mut s = String::from("load_processes,wakeups,mean_ns,min_ns,max_ns,stddev_ns,cv,irq_to_run_mean_ns,irq_to_run_min_ns,irq_to_run_max_ns,irq_to_run_stddev_ns,waking_to_switch_mean_ns\n");
    let f = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.1}"));
    let u = |v: Option<u64>| v.map_or(String::new(), |x| x.to_string());
    for row in &r.rows {
        let st = &row.wakeup_to_run_stats;
        let k = row.irq_to_run_stats.as_ref();
        s.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{}\n",
            row.load_processes,
            row.wakeups,
            f(st.avg_ns),
            u(st.min_ns),
            u(st.max_ns),
            f(st.stddev_ns),
            row.wakeup_to_run_cv
                .map_or(String::new(), |c| format!("{c:.4}")),
            f(k.and_then(|k| k.avg_ns)),
            u(k.and_then(|k| k.min_ns)),
            u(k.and_then(|k| k.max_ns)),
            f(k.and_then(|k| k.stddev_ns)),
            f(row.waking_to_switch_stats.as_ref().and_then(|w| w.avg_ns)),
        ));
    }
    s
}

fn to_svg(r: &SchedScaleResult) -> String {
    use rtscope_bench::common::svg::{Plot, Series};
    let mut series = vec![Series {
        label: "mean wake-up→run (own clock)".into(),
        color: "#1f77b4",
        points: r
            .rows
            .iter()
            .filter_map(|x| {
                x.wakeup_to_run_stats
                    .avg_ns
                    .map(|m| (x.load_processes as f64, m / 1000.0))
            })
            .collect(),
        line: true,
    }];
    if r.rows.iter().any(|x| x.irq_to_run_stats.is_some()) {
        series.push(Series {
            label: "mean irq→run (trace)".into(),
            color: "#d62728",
            points: r
                .rows
                .iter()
                .filter_map(|x| {
                    x.irq_to_run_stats
                        .as_ref()
                        .and_then(|s| s.avg_ns)
                        .map(|m| (x.load_processes as f64, m / 1000.0))
                })
                .collect(),
            line: true,
        });
    }
    series.push(Series {
        label: "heursch-2001 Table 3 (Linux 2.4)".into(),
        color: "#999999",
        points: vec![
            (0.0, 1.0),
            (10.0, 2.3),
            (20.0, 3.4),
            (30.0, 5.8),
            (40.0, 8.5),
            (50.0, 11.1),
            (100.0, 25.7),
            (150.0, 38.8),
            (200.0, 52.1),
        ],
        line: true,
    });
    if let Some(f) = &r.fit_wakeup_to_run {
        let xmax = r.rows.iter().map(|x| x.load_processes).max().unwrap_or(0) as f64;
        series.push(Series {
            label: format!("fit: {:.4} µs/process", f.slope / 1000.0),
            color: "#2ca02c",
            points: vec![
                (0.0, f.intercept / 1000.0),
                (xmax, (f.intercept + f.slope * xmax) / 1000.0),
            ],
            line: true,
        });
    }
    Plot {
        title: format!("SCHED_FIFO wake-up vs SCHED_OTHER load, CPU {}", r.cpu),
        x_label: "runnable SCHED_OTHER load processes".into(),
        y_label: "µs".into(),
        series,
        x_bars: Vec::new(),
    }
    .render()
}
