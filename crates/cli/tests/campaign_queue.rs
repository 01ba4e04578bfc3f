//! Campaigns drained by several workers from one PostgreSQL (RTSCOPE_TEST_PG_URL; CI starts one
//! on 127.0.0.1 with scripts/ci-postgres.sh): three workers, each in a UTS namespace of its own
//! (its own host name, as on three machines), one SIGKILLed mid-cell; every cell ends with
//! exactly one completed run, nothing lost, nothing duplicated. A worker with another file under
//! the same campaign name is refused.

use rtscope_testkit::{need_root, tmp};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn pg_url() -> Option<String> {
    match std::env::var("RTSCOPE_TEST_PG_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            println!("SKIPPED: needs PostgreSQL: RTSCOPE_TEST_PG_URL is unset (scripts/test.sh starts one)");
            None
        }
    }
}

fn campaign_file(dir: &Path, name: &str, duration: &str, repetitions: u32) -> std::path::PathBuf {
    let p = dir.join(format!("{name}-{duration}.toml"));
    std::fs::write(
        &p,
        format!(
            "name = \"{name}\"\npolicies = [\"fifo\"]\nloads = [\"idle\"]\nintervals_us = [1000]\ndurations = [\"{duration}\"]\nrepetitions = {repetitions}\nextra_args = [\"--cpus\", \"0\"]\n"
        ),
    )
    .unwrap();
    p
}

/// A worker in a UTS namespace named `host`.
fn worker(file: &Path, url: &str, host: &str, data: &Path) -> Child {
    Command::new("unshare")
        .args(["--uts", "sh", "-c"])
        .arg(format!(
            "hostname {host} && exec \"$0\" campaign \"$1\" --db \"$2\" --lease 5s"
        ))
        .arg(rtscope_testkit::bin!())
        .arg(file)
        .arg(url)
        .env("XDG_DATA_HOME", data)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("worker")
}

fn runs(url: &str, name: &str) -> Vec<serde_json::Value> {
    let o = Command::new(rtscope_testkit::bin!())
        .args([
            "runs",
            "--db",
            url,
            "--tag",
            &format!("campaign={name}"),
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice::<serde_json::Value>(&o.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn three_workers_one_killed_every_cell_once() {
    need_root!("SCHED_FIFO measurement, UTS namespaces");
    let Some(url) = pg_url() else { return };
    let d = tmp();
    let name = format!("q{:08x}", rand_suffix());
    let cells = 6;
    let file = campaign_file(d.path(), &name, "2s", cells);
    let t0 = Instant::now();
    let mut ws: Vec<Child> = ["w1", "w2", "w3"]
        .iter()
        .map(|h| worker(&file, &url, h, d.path()))
        .collect();
    // w1 dies in the middle of its first cell: its measurement stops (PDEATHSIG) unfinished and
    // its lease runs out 5 s later, when another worker takes the cell.
    std::thread::sleep(Duration::from_millis(1500));
    ws[0].kill().unwrap();
    let _ = ws[0].wait();
    for w in &mut ws[1..] {
        let st = w.wait().unwrap();
        let mut err = String::new();
        use std::io::Read;
        let _ = w.stderr.take().unwrap().read_to_string(&mut err);
        assert!(st.success(), "worker: {st:?}\n{err}");
        assert!(
            err.contains("queue: 6 done, 0 failed, 0 todo, 0 running"),
            "{err}"
        );
    }
    let wall = t0.elapsed().as_secs_f64();
    let rs = runs(&url, &name);
    let mut completed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in &rs {
        if r["state"] == "completed" {
            completed
                .entry(r["tags"]["cell"].as_str().unwrap().to_string())
                .or_default()
                .push(r["tags"]["host"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(completed.len(), cells as usize, "{completed:?}");
    for (cell, hosts) in &completed {
        assert_eq!(hosts.len(), 1, "{cell}: {hosts:?}");
        assert_ne!(
            hosts[0], "w1",
            "{cell}: the killed worker completed nothing"
        );
    }
    // The host tag and the recorded host name agree: `runs --host` and `compare` tell workers
    // (boards) apart.
    for r in rs.iter().filter(|r| r["state"] == "completed") {
        assert_eq!(r["tags"]["host"], r["hostname"]);
    }
    // The killed worker's cell: an unfinished run by w1 beside the completed one.
    assert!(
        rs.iter()
            .any(|r| r["tags"]["host"] == "w1" && r["state"] != "completed"),
        "{rs:?}"
    );
    // compare names the host of each run when they come from several.
    let by = |h: &str| {
        rs.iter()
            .find(|r| r["state"] == "completed" && r["hostname"] == h)
            .map(|r| r["id"].as_str().unwrap().to_string())
            .unwrap()
    };
    let o = Command::new(rtscope_testkit::bin!())
        .args(["compare", "--db", &url, &by("w2"), &by("w3")])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("w2 fifo/idle") && out.contains("w3 fifo/idle"),
        "{out}"
    );
    println!("6 cells of 2 s, 3 workers (one killed at 1.5 s), lease 5 s: {wall:.1} s wall");
}

#[test]
fn another_file_under_the_same_name_is_refused() {
    need_root!("SCHED_FIFO measurement");
    let Some(url) = pg_url() else { return };
    let d = tmp();
    let name = format!("q{:08x}", rand_suffix());
    let a = campaign_file(d.path(), &name, "1s", 1);
    let o = Command::new(rtscope_testkit::bin!())
        .args(["campaign", a.to_str().unwrap(), "--db", &url])
        .env("XDG_DATA_HOME", d.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let b = campaign_file(d.path(), &name, "2s", 1);
    let o = Command::new(rtscope_testkit::bin!())
        .args(["campaign", b.to_str().unwrap(), "--db", &url])
        .env("XDG_DATA_HOME", d.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.trim().starts_with(&format!(
            "rtscope: error: campaign '{name}' in the database was started from another file"
        )) && err.trim().lines().count() == 1,
        "{err}"
    );
    // The same file again: nothing left to run, nothing run twice.
    let o = Command::new(rtscope_testkit::bin!())
        .args(["campaign", a.to_str().unwrap(), "--db", &url])
        .env("XDG_DATA_HOME", d.path())
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(runs(&url, &name).len(), 1);
}

/// A campaign name of its own for each test run (the database outlives the test).
fn rand_suffix() -> u32 {
    rand::random()
}

/// A worker logged in with only the role docs/fleet.md documents (rows of the tables, no DDL)
/// runs its cells: the schema was made by the administrator's connection before.
#[test]
fn a_worker_with_the_least_privilege_role_works() {
    need_root!("SCHED_FIFO measurement");
    let Some(url) = pg_url() else { return };
    let role = format!("rtscope_worker_{:08x}", rand_suffix());
    let psql = |sql: &str| {
        let o = Command::new("psql")
            .args([url.as_str(), "-v", "ON_ERROR_STOP=1", "-qc", sql])
            .output()
            .expect("psql");
        assert!(
            o.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    // The schema exists (an administrator's rtscope opened the database once).
    let o = Command::new(rtscope_testkit::bin!())
        .args(["runs", "--db", &url, "--limit", "1"])
        .output()
        .unwrap();
    assert!(o.status.success());
    psql(&format!(
        "CREATE ROLE {role} LOGIN;
         GRANT USAGE ON SCHEMA public TO {role};
         GRANT SELECT ON rtscope_meta TO {role};
         GRANT SELECT, INSERT, UPDATE, DELETE ON runs, run_tags TO {role};
         GRANT SELECT, INSERT, UPDATE ON campaigns, campaign_cells TO {role};"
    ));
    let worker_url = url.replacen("postgres@", &format!("{role}@"), 1);
    assert_ne!(worker_url, url, "the test URL names its user: {url}");
    let d = tmp();
    let name = format!("q{:08x}", rand_suffix());
    let f = campaign_file(d.path(), &name, "1s", 2);
    let o = Command::new(rtscope_testkit::bin!())
        .args(["campaign", f.to_str().unwrap(), "--db", &worker_url])
        .env("XDG_DATA_HOME", d.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    psql(&format!("DROP OWNED BY {role}; DROP ROLE {role};"));
    assert!(o.status.success(), "{err}");
    assert!(err.contains("queue: 2 done"), "{err}");
    assert_eq!(runs(&url, &name).len(), 2);
}
