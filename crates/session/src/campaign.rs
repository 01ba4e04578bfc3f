//! `rtscope campaign FILE.toml`: a matrix of measurements (format: `rtscope_store::campaign`,
//! docs/reports.md), run in order, with progress and ETA. Resumable: a cell whose run is stored
//! complete (tag `campaign=NAME`, `cell=ID`) is skipped, so after Ctrl-C or a crash the same
//! command continues where it stopped. Each cell is one `rtscope measure` child process — the
//! very binary running — so a cell is measured exactly as a user's own `measure` would be.

use crate::input::{bad, VerbError};
use rtscope_store::campaign::{Campaign, Cell, KernelAxis};
use rtscope_store::RunFilter;
use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Instant;

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
) -> Result<BTreeSet<String>, VerbError> {
    let runs = store.load_runs(&RunFilter {
        tags: vec![("campaign".into(), name.into())],
        ..Default::default()
    })?;
    Ok(rtscope_store::campaign::finished_cells(name, &runs))
}

fn measure_command(
    c: &Campaign,
    cell: &Cell,
    db_arg: &str,
) -> Result<std::process::Command, VerbError> {
    let exe = std::env::current_exe()
        .map_err(|e| VerbError::context("locating the rtscope binary", e))?;
    let mut cmd = std::process::Command::new(exe);
    let tags = c
        .tags
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .chain([format!("campaign={}", c.name), format!("cell={}", cell.id)]);
    let measure = |cmd: &mut std::process::Command| {
        cmd.arg("measure")
            .args(["--policy", &cell.policy])
            .args(["--load", &cell.load.replace('+', ",")])
            .args(["-i", &cell.interval_us.to_string()])
            .args(["-D", &cell.duration]);
    };
    match &cell.kernel {
        KernelAxis::Host => {
            measure(&mut cmd);
            cmd.args(["--db", db_arg]);
            for t in tags {
                cmd.args(["--tag", &t]);
            }
            cmd.arg("-q").args(&c.extra_args);
        }
        // Inside a lab kernel: the lab stores the guest's record in the host's database with
        // the campaign's tags and its own (kernel, preempt, emulated).
        KernelAxis::Lab { kernel, preempt } => {
            cmd.args(["lab", "run", "--kernel", kernel]);
            if let Some(p) = preempt {
                cmd.args(["--preempt", p]);
            }
            cmd.args(&c.lab_args).args(["--db", db_arg]);
            for t in tags {
                cmd.args(["--tag", &t]);
            }
            cmd.arg("-q").arg("--");
            measure(&mut cmd);
            cmd.arg("-q").args(&c.extra_args);
        }
    }
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

/// Run the campaign in `file` (or, with `dry_run`, only say which cells are stored already).
pub fn run(file: &Path, db: Option<&str>, dry_run: bool) -> Result<(), VerbError> {
    let text = crate::input::read("campaign file", file)?;
    let c = Campaign::parse(&file.display().to_string(), &text).map_err(|e| bad!("{e}"))?;
    let db_arg = db
        .map(String::from)
        .unwrap_or_else(|| rtscope_store::default_db_path().display().to_string());
    let cells = c.cells();
    // A dry run only reads: no database is created for it.
    let done = if dry_run {
        match rtscope_store::Store::open_read_only(Some(&db_arg)) {
            Ok(mut store) => finished_cells(&mut store, &c.name)?,
            Err(rtscope_store::StoreError::Missing(_)) => Default::default(),
            Err(e) => return Err(e.into()),
        }
    } else {
        finished_cells(&mut crate::stored::open(Some(&db_arg))?, &c.name)?
    };
    let todo: Vec<&Cell> = cells.iter().filter(|x| !done.contains(&x.id)).collect();
    let planned_s: f64 = todo.iter().map(|x| x.duration_s).sum();
    eprintln!(
        "campaign {}: {} cells ({} kernels × {} policies × {} loads × {} intervals × {} durations × {} repetitions), {} already stored, {} to run, ≥ {} of measurement",
        c.name,
        cells.len(),
        c.kernels.len(),
        c.policies.len(),
        c.loads.len(),
        c.intervals_us.len(),
        c.durations.len(),
        c.repetitions,
        cells.len() - todo.len(),
        todo.len(),
        fmt_dur(planned_s)
    );
    if dry_run {
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
    crate::signals::install_handlers();
    let started = Instant::now();
    let (mut spent_planned, mut failed, mut ran) = (0.0f64, Vec::new(), 0usize);
    for (i, cell) in todo.iter().enumerate() {
        if crate::signals::stop_requested() {
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
        let status = cmd.status().map_err(|e| {
            VerbError::context(
                format!("starting `rtscope measure` for cell {}", cell.id),
                e,
            )
        })?;
        spent_planned += cell.duration_s;
        ran += 1;
        if !status.success() {
            eprintln!("  cell {} failed ({status})", cell.id);
            failed.push(cell.id.clone());
        }
    }
    let now_done = finished_cells(&mut crate::stored::open(Some(&db_arg))?, &c.name)?;
    let missing = cells.iter().filter(|x| !now_done.contains(&x.id)).count();
    eprintln!(
        "campaign {}: {}/{} cells stored in {} ({} run this session)",
        c.name,
        cells.len() - missing,
        cells.len(),
        fmt_dur(started.elapsed().as_secs_f64()),
        ran
    );
    if crate::signals::stop_requested() {
        return Err(VerbError::failed(format!(
            "interrupted: {missing} cells left; run the same command again to resume"
        )));
    }
    if !failed.is_empty() || missing > 0 {
        return Err(VerbError::failed(format!(
            "{} cells failed ({}); run the same command again to retry them",
            failed.len().max(missing),
            failed.join(", ")
        )));
    }
    eprintln!("next: rtscope report --campaign {} -o report.html", c.name);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(cmd: &std::process::Command) -> Vec<String> {
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn host_and_lab_cells_become_measure_and_lab_run() {
        let text = "name = \"k\"\npolicies = [\"fifo\"]\nintervals_us = [1000]\ndurations = [\"10s\"]\nkernels = [\"host\", \"trace:full\"]\nlab_args = [\"--icount\", \"--smp\", \"1\"]\nextra_args = [\"--trace\", \"bpf\"]\n";
        let c = Campaign::parse("k.toml", text).unwrap();
        let cells = c.cells();
        let host = args(&measure_command(&c, &cells[0], "/d.db").unwrap());
        assert_eq!(host[0], "measure");
        assert!(host.windows(2).any(|w| w == ["--db", "/d.db"]));
        assert!(host
            .windows(2)
            .any(|w| w == ["--tag", "cell=fifo-idle-i1000-10s-r1"]));
        assert_eq!(&host[host.len() - 2..], ["--trace", "bpf"]);
        let lab = args(&measure_command(&c, &cells[1], "/d.db").unwrap());
        let sep = lab.iter().position(|a| a == "--").unwrap();
        assert_eq!(
            &lab[..9],
            [
                "lab",
                "run",
                "--kernel",
                "trace",
                "--preempt",
                "full",
                "--icount",
                "--smp",
                "1"
            ]
        );
        // Storing and tags are the lab's (host side); the guest's measure only measures.
        assert!(lab[..sep].windows(2).any(|w| w == ["--db", "/d.db"]));
        assert!(lab[..sep]
            .windows(2)
            .any(|w| w == ["--tag", "cell=trace.full-fifo-idle-i1000-10s-r1"]));
        assert_eq!(lab[sep + 1], "measure");
        assert!(!lab[sep..].iter().any(|a| a == "--db" || a == "--tag"));
        assert_eq!(&lab[lab.len() - 2..], ["--trace", "bpf"]);
    }
}
