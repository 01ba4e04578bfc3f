//! `taskset`'s typed flags: a bad value of each is refused by clap, which names the flag and
//! what it accepts (exit 2, one line, nothing started); the other names a value had keep working,
//! and the typed values reach the run as the library's words. The runs are real (SCHED_OTHER
//! on CPU 0), seconds each.

use rtscope_testkit::{bin, run_measured, Measured};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn run(args: &[&str], data: &Path) -> Measured {
    let mut c = Command::new(bin!());
    c.args(args).env("XDG_DATA_HOME", data);
    run_measured(c, Duration::from_secs(60))
}

/// Two small tasks (U = 0.2).
fn small_set(dir: &Path) -> String {
    let p = dir.join("set.json");
    std::fs::write(
        &p,
        br#"{"schema_version":1,"tasks":[{"id":0,"wcet_ns":1000000,"period_ns":10000000,"deadline_ns":10000000},{"id":1,"wcet_ns":2000000,"period_ns":20000000,"deadline_ns":20000000}]}"#,
    )
    .expect("write the set");
    p.display().to_string()
}

#[test]
fn a_bad_value_is_refused_by_clap_naming_the_flag_and_what_it_accepts() {
    let d = tempfile::tempdir().expect("tmp");
    let set = small_set(d.path());
    let set = set.as_str();
    let db = d.path().join("r.db").display().to_string();
    let db = db.as_str();
    let out = d.path().join("out.json").display().to_string();
    let out = out.as_str();
    let gen_ = ["taskset", "gen", "-u", "0.5", "-o", out];
    let check = ["taskset", "check", set];
    let run_ = ["taskset", "run", set, "--db", db];
    let sweep = [
        "taskset",
        "sweep",
        "--placement",
        "partitioned",
        "--loads",
        "0.2",
        "--db",
        db,
    ];
    let rt_app = ["taskset", "run", "--rt-app", set];
    const POLICIES: &str = "[possible values: deadline, fifo, other]";
    const WORK: &str = "[possible values: calibrated, cputime]";
    const RANGE: &str = "500ms ..= 10m";
    let cases: Vec<(&[&str], &[&str], &[&str])> = vec![
        (
            &gen_,
            &["--method", "x"],
            &["[possible values: randfixedsum, uunifast-discard]"],
        ),
        (
            &gen_,
            &["--deadlines", "x"],
            &["[possible values: implicit, constrained]"],
        ),
        (
            &gen_,
            &["--format", "yaml"],
            &["[possible values: json, toml]"],
        ),
        (&gen_, &["--count", "0"], &["0 is not in 1..=100000"]),
        (&gen_, &["--tmin", "0"], &["0 is out of range (1us ..= 1h)"]),
        (&gen_, &["--tmax", "x"], &["'x' is not a duration"]),
        (
            &gen_,
            &["--periods", "10ms,2h"],
            &["2h is out of range (1us ..= 1h)"],
        ),
        (
            &gen_,
            &["--period-gran", "500ns"],
            &["500ns is out of range (1us ..= 1h)"],
        ),
        (
            &gen_,
            &["--cmin", "11s"],
            &["11s is out of range (0ns ..= 10s)"],
        ),
        (&check, &["--policy", "rr"], &[POLICIES]),
        (
            &check,
            &["--priorities", "x"],
            &["[possible values: rm, dm]"],
        ),
        (
            &check,
            &["--placement", "ring"],
            &["[possible values: global, partitioned, clustered]"],
        ),
        (
            &check,
            &["--fit", "next"],
            &["[possible values: first, best, worst]"],
        ),
        (
            &check,
            &["--bin-test", "x"],
            &["[possible values: policy, deadline]"],
        ),
        (
            &check,
            &["--cluster-by", "l1"],
            &["[possible values: l2, l3, llc, numa]"],
        ),
        (&check, &["--cpus", "x"], &["expected a list like 0,2-3"]),
        (
            &check,
            &["--margin-add", "200ms"],
            &["200ms is out of range (0ns ..= 100ms)"],
        ),
        (
            &check,
            &["--inflate", "0.2s"],
            &["0.2s is out of range (0ns ..= 100ms)"],
        ),
        (&check, &["--inflate", "x"], &["is not a duration"]),
        (&run_, &["--cpus", "a-b"], &["expected a list like 0,2-3"]),
        (
            &run_,
            &["--access", "x"],
            &["[possible values: seq, random]"],
        ),
        (&run_, &["--work", "x"], &[WORK]),
        (
            &rt_app,
            &["--engine", "x"],
            &["[possible values: rt-app, native]"],
        ),
        (&run_, &["-D", "11m"], &[RANGE]),
        (&run_, &["--duration", "0.1s"], &[RANGE]),
        (&run_, &["-D", "x"], &["is not a duration"]),
        (&run_, &["-D", "-1"], &["is not a duration"]),
        (&run_, &["--wss-kb", "0"], &["1..=1048576"]),
        (&sweep, &["--policies", "deadline,rr"], &[POLICIES]),
        (&sweep, &["--work", "x"], &[WORK]),
        (&sweep, &["--sets", "0"], &["0 is not in 1..=1000"]),
        (
            &sweep,
            &["--margin-add", "101ms"],
            &["101ms is out of range (0ns ..= 100ms)"],
        ),
        (
            &sweep,
            &["--cmin", "11s"],
            &["11s is out of range (0ns ..= 10s)"],
        ),
        (
            &sweep,
            &["--tmin", "0"],
            &["0 is out of range (1us ..= 1h)"],
        ),
        (
            &sweep,
            &["--tmax", "2h"],
            &["2h is out of range (1us ..= 1h)"],
        ),
        (
            &sweep,
            &["--rt-runtime", "-2"],
            &["or -1 (unlimited): no limit"],
        ),
        (
            &sweep,
            &["--rt-runtime", "2h"],
            &["2h is out of range (1us ..= 1h)"],
        ),
        (&sweep, &["--fair-server", "x"], &["is not a duration"]),
        (
            &sweep,
            &["--fair-server", "2h"],
            &["2h is out of range (0ns ..= 1h)"],
        ),
        (&sweep, &["-D", "0.4"], &[RANGE]),
        (&sweep, &["--cpus", "x"], &["expected a list like 0,2-3"]),
        (
            &["taskset", "sweep", "--loads", "0.2"],
            &["--placement", "clustered"],
            &["[possible values: partitioned, global]"],
        ),
    ];
    let mut bad = Vec::new();
    for (verb, args, want) in &cases {
        let flag = args[0];
        let all: Vec<&str> = verb.iter().chain(args.iter()).copied().collect();
        let o = run(&all, d.path());
        let lines: Vec<&str> = o.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        let line = lines.first().copied().unwrap_or("");
        let long = match flag {
            "-D" => "--duration",
            f => f,
        };
        let ok = o.code == 2
            && lines.len() == 1
            && line.starts_with("rtscope: error: invalid value")
            && line.contains(&format!("'{long} <"))
            && want.iter().all(|w| line.contains(w))
            && o.elapsed < Duration::from_secs(3);
        if ok {
            println!("{all:?}: {line}");
        } else {
            bad.push(format!(
                "{all:?}: exit {} in {:?}: {}",
                o.code,
                o.elapsed,
                o.stderr.trim()
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(
        !Path::new(db).exists(),
        "a refused run created the database"
    );
    assert!(!Path::new(out).exists(), "a refused gen wrote its output");
}

/// The other names of a value (`cfs`, `best-fit`, `uunifast`, `sequential`) are the same value.
#[test]
fn the_other_names_of_a_value_keep_working() {
    let d = tempfile::tempdir().expect("tmp");
    let set = small_set(d.path());
    let set = set.as_str();
    let o = run(
        &[
            "taskset",
            "gen",
            "-u",
            "0.5",
            "-n",
            "2",
            "--cpu-count",
            "1",
            "--method",
            "uunifast",
            "--deadlines",
            "constrained",
            "--format",
            "toml",
        ],
        d.path(),
    );
    assert_eq!(o.code, 0, "gen: {}", o.stderr);
    assert!(
        o.stdout.contains("method = \"uunifast-discard\"")
            && o.stdout.contains("deadlines = \"constrained\""),
        "{}",
        o.stdout
    );
    let o = run(
        &[
            "taskset",
            "check",
            set,
            "--policy",
            "cfs",
            "--placement",
            "partitioned",
            "--fit",
            "best-fit",
            "--cpus",
            "0",
            "--json",
            "-",
        ],
        d.path(),
    );
    assert_eq!(o.code, 0, "check: {}", o.stderr);
    let v: Value = serde_json::from_str(&o.stdout).expect("check --json -");
    assert_eq!(v["placement"]["kind"], "partitioned", "{v}");
    assert_eq!(v["placement"]["heuristic"], "best-fit", "{v}");
}

/// `taskset run` with every typed flag given: the record holds the library's words and the
/// duration as given.
#[test]
fn typed_values_reach_taskset_run() {
    rtscope_testkit::need_root!("the affinities of a task-set run");
    let d = tempfile::tempdir().expect("tmp");
    let set = small_set(d.path());
    let set = set.as_str();
    let o = run(
        &[
            "taskset",
            "run",
            set,
            "--policy",
            "cfs",
            "--cpus",
            "0",
            "-D",
            "500ms",
            "--access",
            "sequential",
            "--work",
            "cputime",
            "--wss-kb",
            "32",
            "--margin",
            "1.2",
            "-q",
            "--no-store",
            "--json",
            "-",
        ],
        d.path(),
    );
    assert_eq!(o.code, 0, "taskset run: {}", o.stderr);
    let v: Value = serde_json::from_str(&o.stdout).expect("the record as JSON");
    let c = &v["kind"]["taskset"]["config"];
    assert_eq!(c["policy"], "other", "{c}");
    assert_eq!(c["access"], "seq", "{c}");
    assert_eq!(c["work"], "cputime", "{c}");
    assert_eq!(c["duration_s"].as_f64(), Some(0.5), "{c}");
    assert_eq!(c["wss_bytes"].as_u64(), Some(32 << 10), "{c}");
}

/// `taskset sweep` without `-D` runs each set for 10 s; its policies and work arrive as the
/// library's words.
#[test]
fn typed_values_and_the_default_duration_reach_taskset_sweep() {
    rtscope_testkit::need_root!("the cpusets of a partitioned sweep");
    let d = tempfile::tempdir().expect("tmp");
    let o = run(
        &[
            "taskset",
            "sweep",
            "--placement",
            "partitioned",
            "--loads",
            "0.2",
            "--sets",
            "1",
            "--tasks-per-cpu",
            "2",
            "--policies",
            "cfs",
            "--cpus",
            "0",
            "--work",
            "calibrated",
            "--margin",
            "1.2",
            "-q",
            "--no-store",
            "--json",
            "-",
        ],
        d.path(),
    );
    assert_eq!(o.code, 0, "taskset sweep: {}", o.stderr);
    let v: Value = serde_json::from_str(&o.stdout).expect("the record as JSON");
    let c = &v["kind"]["taskset_sweep"]["config"];
    assert_eq!(c["policies"], serde_json::json!(["other"]), "{c}");
    assert_eq!(c["work"], "calibrated", "{c}");
    assert_eq!(c["placement"], "partitioned", "{c}");
    assert_eq!(c["duration_s"].as_f64(), Some(10.0), "{c}");
    assert_eq!(c["margin"].as_f64(), Some(1.2), "{c}");
    assert_eq!(c["cpus"], serde_json::json!([0]), "{c}");
}

/// `taskset gen`'s durations reach the generator as given: periods from the list, C at least
/// `--cmin`.
#[test]
fn typed_durations_reach_taskset_gen() {
    let d = tempfile::tempdir().expect("tmp");
    let o = run(
        &[
            "taskset",
            "gen",
            "-u",
            "0.6",
            "-n",
            "6",
            "--cpu-count",
            "1",
            "--periods",
            "10ms,20.5ms",
            "--period-gran",
            "500us",
            "--cmin",
            "100us",
        ],
        d.path(),
    );
    assert_eq!(o.code, 0, "gen: {}", o.stderr);
    let v: Value = serde_json::from_str(&o.stdout).expect("the set as JSON");
    let tasks = v["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 6, "{v}");
    for t in tasks {
        let p = t["period_ns"].as_u64().expect("period_ns");
        assert!([10_000_000, 20_500_000].contains(&p), "{t}");
        assert!(t["wcet_ns"].as_u64().expect("wcet_ns") >= 100_000, "{t}");
    }
}
