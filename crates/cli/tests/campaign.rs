//! `rtscope campaign` on one machine (SQLite): every cell's `measure` arguments are read by the
//! `measure` grammar before anything starts (exit 2, one line naming the cell and the argument),
//! a command for `--load exec` from the file runs only with `--allow-exec`, `--dry-run` prints
//! every cell's full command line, and the cells are measured in the campaign's own process.

use rtscope_testkit::{bin, need_root, tmp};
use std::path::Path;
use std::process::Command;

fn file(dir: &Path, extra: &str) -> std::path::PathBuf {
    let p = dir.join("c.toml");
    std::fs::write(
        &p,
        format!(
            "name = \"c1\"\npolicies = [\"fifo\", \"other\"]\nloads = [\"idle\"]\nintervals_us = [1000]\ndurations = [\"1s\"]\nextra_args = [{extra}]\n"
        ),
    )
    .unwrap();
    p
}

fn campaign(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(bin!())
        .arg("campaign")
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_bad_extra_arg_is_refused_naming_the_cell_and_the_arg() {
    let d = tmp();
    let db = d.path().join("r.db");
    for (extra, arg) in [
        ("\"--bogus\"", "--bogus"),
        ("\"--interval\", \"5\"", "--interval"),
        ("\"--cpus\", \"0-\"", "--cpus"),
    ] {
        let f = file(d.path(), extra);
        let (code, out, err) = campaign(&[f.to_str().unwrap(), "--db", db.to_str().unwrap()]);
        assert_eq!(code, 2, "{extra}: {err}");
        assert!(out.is_empty(), "{out}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(
            lines[0].contains("campaign cell fifo-idle-i1000-1s-r1") && lines[0].contains(arg),
            "{extra}: {err}"
        );
        // Nothing started: not even the database was created.
        assert!(!db.exists());
    }
}

#[test]
fn load_exec_from_the_file_runs_only_with_allow_exec() {
    let d = tmp();
    let db = d.path().join("r.db");
    let f = file(d.path(), "\"--load-exec\", \"true\"");
    let (code, _, err) = campaign(&[f.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--load-exec true") && err.contains("--allow-exec"),
        "{err}"
    );
    assert!(!db.exists());
    let (code, out, err) = campaign(&[
        f.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--dry-run",
        "--allow-exec",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("--load-exec true"), "{out}");
}

#[test]
fn a_dry_run_prints_every_cells_command_line() {
    let d = tmp();
    let db = d.path().join("r.db");
    let f = file(d.path(), "\"--cpus\", \"0\", \"--tag\", \"note=two words\"");
    let (code, out, err) = campaign(&[
        f.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--dry-run",
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    for (line, policy) in lines.iter().zip(["fifo", "other"]) {
        let cell = format!("{policy}-idle-i1000-1s-r1");
        assert!(
            line.starts_with(&format!("todo  {cell}  rtscope measure --db ")),
            "{line}"
        );
        for part in [
            format!("--tag campaign=c1 --tag cell={cell}"),
            format!(
                "--policy {policy} --load idle -i 1000 -D 1s -q --cpus 0 --tag 'note=two words'"
            ),
        ] {
            assert!(line.contains(&part), "{line}\nlacks: {part}");
        }
    }
    assert!(!db.exists(), "a dry run creates no database");
}

/// Two host cells measured in the campaign's own process (no `rtscope measure` child: the
/// campaign's only child processes would be loads, and these cells are idle), stored complete,
/// each with its cell's command line; the same command again runs nothing.
#[test]
fn host_cells_are_measured_in_process_and_stored() {
    need_root!("SCHED_FIFO measurement");
    let d = tmp();
    let db = d.path().join("r.db");
    let f = file(d.path(), "\"--cpus\", \"0\"");
    let mut child = Command::new(bin!())
        .arg("campaign")
        .args([f.to_str().unwrap(), "--db", db.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // While it runs, the campaign has no child `rtscope` process.
    let pid = child.id();
    let t0 = std::time::Instant::now();
    let mut children_seen = Vec::new();
    while child.try_wait().unwrap().is_none() && t0.elapsed().as_secs() < 60 {
        if let Ok(c) = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) {
            children_seen.extend(c.split_whitespace().map(String::from));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        children_seen.is_empty(),
        "child processes: {children_seen:?}\n{err}"
    );
    assert!(err.contains("campaign c1: 2/2 cells stored"), "{err}");
    let runs = Command::new(bin!())
        .args([
            "runs",
            "--db",
            db.to_str().unwrap(),
            "--campaign",
            "c1",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    assert!(runs.status.success());
    let v: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 2, "{v}");
    let again = campaign(&[f.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    assert_eq!(again.0, 0, "{}", again.2);
    assert!(
        again.2.contains("2 already stored, 0 to run"),
        "{}",
        again.2
    );
}
