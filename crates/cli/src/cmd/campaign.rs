//! `rtscope campaign FILE.toml`: run a matrix of measurements (format: `rtscope_store::campaign`,
//! docs/reports.md), in order, with progress and ETA. Resumable: a cell whose run is stored
//! complete (tag `campaign=NAME`, `cell=ID`) is skipped, so after Ctrl-C or a crash the same
//! command continues where it stopped. Each cell is one `rtscope measure` child process — the
//! very binary running — so a cell is measured exactly as a user's own `measure` would be.

use super::db::{self, DbArgs};
use crate::usage;
use anyhow::Context;
use rtscope_store::campaign::{Campaign, Cell};
use rtscope_store::RunFilter;
use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// Campaign file (TOML)
    file: PathBuf,
    /// Print the cells and what would run, run nothing
    #[arg(long)]
    dry_run: bool,
}

fn fmt_dur(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s / 60) % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// Cells already stored complete.
fn finished_cells(
    store: &mut rtscope_store::Store,
    name: &str,
) -> anyhow::Result<BTreeSet<String>> {
    let runs = store
        .load_runs(&RunFilter {
            tags: vec![("campaign".into(), name.into())],
            ..Default::default()
        })
        .map_err(db::map_err)?;
    Ok(rtscope_store::campaign::finished_cells(name, &runs))
}

fn measure_command(
    c: &Campaign,
    cell: &Cell,
    db_arg: &str,
) -> anyhow::Result<std::process::Command> {
    let exe = std::env::current_exe().context("locating the rtscope binary")?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("measure")
        .args(["--policy", &cell.policy])
        .args(["--load", &cell.load.replace('+', ",")])
        .args(["-i", &cell.interval_us.to_string()])
        .args(["-D", &cell.duration])
        .args(["--db", db_arg]);
    for (k, v) in &c.tags {
        cmd.args(["--tag", &format!("{k}={v}")]);
    }
    cmd.args(["--tag", &format!("campaign={}", c.name)])
        .args(["--tag", &format!("cell={}", cell.id)])
        .arg("-q")
        .args(&c.extra_args);
    // SAFETY: prctl is async-signal-safe; the child dies with us even if we are SIGKILLed.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(cmd)
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let text = super::common::read_input("campaign file", &a.file)?;
    let c = Campaign::parse(&a.file.display().to_string(), &text).map_err(|e| usage!("{e}"))?;
    let db_arg =
        a.db.db
            .clone()
            .unwrap_or_else(|| rtscope_store::default_db_path().display().to_string());
    let cells = c.cells();
    // A dry run only reads: no database is created for it.
    let done = if a.dry_run {
        match rtscope_store::Store::open_read_only(Some(&db_arg)) {
            Ok(mut store) => finished_cells(&mut store, &c.name)?,
            Err(rtscope_store::StoreError::Missing(_)) => Default::default(),
            Err(e) => return Err(db::map_err(e)),
        }
    } else {
        let mut store = db::open(&DbArgs {
            db: Some(db_arg.clone()),
        })?;
        finished_cells(&mut store, &c.name)?
    };
    let todo: Vec<&Cell> = cells.iter().filter(|x| !done.contains(&x.id)).collect();
    let planned_s: f64 = todo.iter().map(|x| x.duration_s).sum();
    eprintln!(
        "campaign {}: {} cells ({} policies × {} loads × {} intervals × {} durations × {} repetitions), {} already stored, {} to run, ≥ {} of measurement",
        c.name,
        cells.len(),
        c.policies.len(),
        c.loads.len(),
        c.intervals_us.len(),
        c.durations.len(),
        c.repetitions,
        cells.len() - todo.len(),
        todo.len(),
        fmt_dur(planned_s)
    );
    if a.dry_run {
        for cell in &cells {
            let state = if done.contains(&cell.id) {
                "done"
            } else {
                "todo"
            };
            println!("{state}  {}", cell.id);
        }
        return Ok(());
    }
    super::common::install_signal_handlers();
    let started = Instant::now();
    let (mut spent_planned, mut failed, mut ran) = (0.0f64, Vec::new(), 0usize);
    for (i, cell) in todo.iter().enumerate() {
        if super::common::stop_requested() {
            break;
        }
        // ETA: remaining planned time scaled by how much wall time each planned second took
        // so far (start-up, load spin-up, storing).
        let remaining: f64 = todo[i..].iter().map(|x| x.duration_s).sum();
        let ratio = if spent_planned > 0.0 {
            started.elapsed().as_secs_f64() / spent_planned
        } else {
            1.05
        };
        eprintln!(
            "[{}/{}] {}  elapsed {}  ETA {}",
            i + 1,
            todo.len(),
            cell.id,
            fmt_dur(started.elapsed().as_secs_f64()),
            fmt_dur(remaining * ratio)
        );
        let mut cmd = measure_command(&c, cell, &db_arg)?;
        let status = cmd
            .status()
            .with_context(|| format!("starting `rtscope measure` for cell {}", cell.id))?;
        spent_planned += cell.duration_s;
        ran += 1;
        if !status.success() {
            eprintln!("  cell {} failed ({status})", cell.id);
            failed.push(cell.id.clone());
        }
    }
    let mut store = db::open(&DbArgs {
        db: Some(db_arg.clone()),
    })?;
    let now_done = finished_cells(&mut store, &c.name)?;
    let missing = cells.iter().filter(|x| !now_done.contains(&x.id)).count();
    eprintln!(
        "campaign {}: {}/{} cells stored in {} ({} run this session)",
        c.name,
        cells.len() - missing,
        cells.len(),
        fmt_dur(started.elapsed().as_secs_f64()),
        ran
    );
    if super::common::stop_requested() {
        anyhow::bail!("interrupted: {missing} cells left; run the same command again to resume");
    }
    if !failed.is_empty() || missing > 0 {
        anyhow::bail!(
            "{} cells failed ({}); run the same command again to retry them",
            failed.len().max(missing),
            failed.join(", ")
        );
    }
    eprintln!("next: rtscope report --campaign {} -o report.html", c.name);
    Ok(())
}
