//! `rtscope pdlt` — the preemption scan (heursch-2001 §2.5–2.7): PDLT against the offset of a
//! timer interrupt from the start of a long system call; non-preemptible stretches show up as
//! triangles.

use super::common::{bench_err, bench_record, emit, OutArgs, RecordInfo};
use crate::cmd::common::{check_output, write_atomic};
use crate::usage;
use anyhow::Result;
use rtscope_bench::common::{self as bc, reaper::Reaper, BenchError};
use rtscope_bench::pdlt::{self, Config, Syscall};
use rtscope_model::bench::BenchResult;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// CPU of consumer and producer [default: the last online CPU]
    /// (one CPU, e.g. `--cpus 1`; `--cpu N`, its old name, still works)
    #[arg(long = "cpus", value_name = "LIST", alias = "cpu")]
    cpus: Option<String>,
    /// SCHED_FIFO priority of the producer (2..=99).
    #[arg(long, default_value_t = 80)]
    priority: u32,
    /// SCHED_FIFO priority of the consumer (below the producer).
    #[arg(long, default_value_t = 70)]
    consumer_priority: u32,
    /// The long system call: read, munmap, getdents, mmap_populate.
    #[arg(long, default_value = "read", value_parser = ["read", "munmap", "getdents", "mmap_populate"])]
    syscall: String,
    /// Bytes (read, munmap, mmap_populate; suffix K/M/G) or directory entries (getdents)
    /// [default: 8M read, 16M munmap/mmap_populate, 20000 getdents]
    #[arg(long)]
    size: Option<String>,
    /// Offset step, µs (0.01..=1000000).
    #[arg(long, default_value_t = 1.0)]
    step_us: f64,
    /// Offsets START:END in µs [default: -2 to 1.25 × the calibrated call duration + 2]
    #[arg(long, value_name = "START:END")]
    offsets_us: Option<String>,
    /// Points per offset (1..=10000).
    #[arg(long, default_value_t = 1)]
    repeats: u32,
    /// Where the scratch file or directory is created (removed on every exit path).
    #[arg(long)]
    scratch_dir: Option<PathBuf>,
    /// Scan under every preemption model (needs a writable /sys/kernel/debug/sched/preempt).
    #[arg(long)]
    compare_preempt: bool,
    /// Cap on each scan's duration, seconds (0.1..=86400).
    #[arg(long, default_value_t = 300.0)]
    max_seconds: f64,
    /// Write every point as CSV.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write the figure (PDLT vs offset, the call's duration on the x axis) as SVG.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    #[command(flatten)]
    out: OutArgs,
}

fn parse_size(s: &str) -> Result<u64> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let v: u64 = num.parse().map_err(|_| {
        usage!("--size: '{s}' is not a size (a whole number, optional K/M/G suffix)")
    })?;
    v.checked_mul(mult)
        .ok_or_else(|| usage!("--size: '{s}' is too large"))
}

fn parse_offsets(s: &str) -> Result<(i64, i64)> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| usage!("--offsets-us: '{s}' must be START:END in µs, e.g. -5:800"))?;
    let p = |x: &str| -> Result<i64> {
        let v: f64 = x
            .trim()
            .parse()
            .map_err(|_| usage!("--offsets-us: '{x}' is not a number of µs"))?;
        if !v.is_finite() || v.abs() > 1e7 {
            return Err(usage!(
                "--offsets-us: {x} is out of range (-10000000..=10000000 µs)"
            ));
        }
        Ok((v * 1000.0).round() as i64)
    };
    Ok((p(a)?, p(b)?))
}

pub fn run(a: Args) -> Result<()> {
    let syscall = Syscall::parse(&a.syscall).map_err(|e| usage!("{e}"))?;
    let size = match &a.size {
        Some(s) => parse_size(s)?,
        None => syscall.default_size(),
    };
    if !a.step_us.is_finite() || !(0.01..=1e6).contains(&a.step_us) {
        return Err(usage!(
            "--step-us: must be 0.01..=1000000, got {}",
            a.step_us
        ));
    }
    if !a.max_seconds.is_finite() || !(0.1..=86_400.0).contains(&a.max_seconds) {
        return Err(usage!(
            "--max-seconds: must be 0.1..=86400, got {}",
            a.max_seconds
        ));
    }
    let cfg = Config {
        cpu: super::common::one_cpu(a.cpus.as_deref(), bc::default_cpu)?,
        producer_priority: a.priority,
        consumer_priority: a.consumer_priority,
        syscall,
        size,
        step_ns: (a.step_us * 1000.0).round() as u64,
        range_ns: a.offsets_us.as_deref().map(parse_offsets).transpose()?,
        repeats: a.repeats,
        scratch_dir: a.scratch_dir.clone().unwrap_or_else(std::env::temp_dir),
        compare_preempt: a.compare_preempt,
        max_duration_ns: (a.max_seconds * 1e9) as u64,
    };
    cfg.validate().map_err(bench_err)?;
    for (flag, p) in [("--csv", &a.csv), ("--svg", &a.svg)] {
        if let Some(p) = p {
            check_output(flag, p)?;
        }
    }
    let tags = a.out.validate()?;
    if cfg.compare_preempt {
        // Said before anything starts: on this kind of machine the model cannot be switched.
        if let Err(BenchError::Unavailable(m)) = pdlt::check_compare_preempt() {
            return Err(anyhow::anyhow!(m));
        }
    }
    super::common::require(
        "pdlt",
        rtscope_session::privilege::Need::RealTime,
        "SCHED_FIFO, mlockall",
    )?;
    super::common::recover_leftovers();
    bc::install_stop_handlers().map_err(anyhow::Error::new)?;
    let reaper = Reaper::start().map_err(anyhow::Error::new)?;
    let started = std::time::SystemTime::now();
    let t0 = std::time::Instant::now();
    a.out.progress(&format!(
        "rtscope pdlt: {} of {} on CPU {}, producer FIFO {}, consumer FIFO {}, step {} µs",
        syscall.name(),
        size,
        cfg.cpu,
        cfg.producer_priority,
        cfg.consumer_priority,
        a.step_us
    ));
    let res = pdlt::run(&cfg, &reaper, |m| {
        a.out.progress(&format!("  scanning under preempt={m} …"))
    });
    drop(reaper);
    let res = res.map_err(bench_err)?;
    if a.out.text() {
        print!("{}", rtscope_report::bench::pdlt(&res));
    }
    if let Some(p) = &a.csv {
        write_atomic(p, rtscope_report::bench::pdlt_csv(&res).as_bytes())?;
        eprintln!("rtscope: wrote {}", p.display());
    }
    if let Some(p) = &a.svg {
        write_atomic(p, rtscope_report::bench::pdlt_svg(&res).as_bytes())?;
        eprintln!("rtscope: wrote {}", p.display());
    }
    let rec = bench_record(
        RecordInfo {
            verb: "pdlt",
            cpu: cfg.cpu,
            priority: cfg.producer_priority,
            started,
            wall_s: t0.elapsed().as_secs_f64(),
            interrupted: bc::stop_requested(),
            warnings: Vec::new(),
            tags,
        },
        BenchResult::Pdlt(Box::new(res)),
    );
    emit(&a.out, &rec)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn sizes_and_offsets() {
        assert_eq!(parse_size("8M").unwrap(), 8 << 20);
        assert_eq!(parse_size("20000").unwrap(), 20000);
        assert!(parse_size("x").is_err());
        assert_eq!(parse_offsets("-2:10.5").unwrap(), (-2000, 10500));
        assert!(parse_offsets("5").is_err());
    }
}
