//! Every reader bounded in memory and time (docs/reliability.md, "Readers under attack"): each
//! crafted input below is written by code here (nothing binary is shipped) and given to the real
//! binary, which must end within 10 s at a peak RSS of 256 MiB or less, and either succeed or
//! exit 1 or 2 with one line naming the field at fault. The inputs are the audit's kinds — many
//! cheap-looking threads, CPUs, sources, snapshots; events that defeat a quadratic algorithm;
//! SQLite views where tables are expected; numbers at the integer edges — scaled so that the
//! suite takes seconds: one budget refuses them, not caps tuned to them.

use rtscope_model::event::{Event, EventKind};
use rtscope_model::record::RawSample;
use rtscope_testkit::{bin, run_measured, Measured};
use rtscope_trace::rtt::{KeptKind, KeptWindowInfo, RttFile};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const TIME_LIMIT: Duration = Duration::from_secs(10);
const RSS_CEILING_KIB: u64 = 256 * 1024;

fn run(args: &[&str]) -> Measured {
    let mut c = Command::new(bin!());
    c.args(args).env_remove("RTSCOPE_MAX_DECODE_MB");
    run_measured(c, TIME_LIMIT)
}

/// Within the limits, and either a success or exit 1/2 with one line that says `needle`.
fn within(what: &str, o: &Measured, needle: Option<&str>) {
    assert!(
        !o.timed_out && o.elapsed <= TIME_LIMIT,
        "{what}: still running after {:?}",
        o.elapsed
    );
    assert!(
        o.maxrss_kib <= RSS_CEILING_KIB,
        "{what}: peak RSS {} MiB",
        o.maxrss_kib / 1024
    );
    match needle {
        Some(n) => {
            assert!(
                o.code == 1 || o.code == 2,
                "{what}: exit {} (stderr: {})",
                o.code,
                o.stderr
            );
            let lines: Vec<&str> = o.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
            assert_eq!(lines.len(), 1, "{what}: one line expected:\n{}", o.stderr);
            assert!(lines[0].contains(n), "{what}: '{n}' not in: {}", lines[0]);
        }
        None => assert_eq!(o.code, 0, "{what}: {}", o.stderr),
    }
    println!(
        "{what}: exit {} in {:.2} s, peak RSS {} MiB{}",
        o.code,
        o.elapsed.as_secs_f64(),
        o.maxrss_kib / 1024,
        o.stderr
            .lines()
            .next()
            .map(|l| format!(": {l}"))
            .unwrap_or_default()
    );
}

/// [`within`], refused with exit `code` (README: 2 for bad input, 1 for a stored run or a
/// database that cannot be read).
fn refused_with(what: &str, o: &Measured, needle: &str, code: i32) {
    within(what, o, Some(needle));
    assert_eq!(
        o.code, code,
        "{what}: exit {} (stderr: {})",
        o.code, o.stderr
    );
}

/// Where a test writes its inputs: a temporary directory, or `$RTSCOPE_HOSTILE_DIR/<test>`
/// kept for measuring them by hand (docs/reliability.md).
struct Dir {
    _tmp: Option<tempfile::TempDir>,
    path: PathBuf,
}

impl Dir {
    fn path(&self) -> &Path {
        &self.path
    }
}

fn dir(test: &str) -> Dir {
    match std::env::var_os("RTSCOPE_HOSTILE_DIR") {
        Some(d) => {
            let path = PathBuf::from(d).join(test);
            std::fs::create_dir_all(&path).expect("RTSCOPE_HOSTILE_DIR");
            Dir { _tmp: None, path }
        }
        None => {
            let t = rtscope_testkit::tmp();
            Dir {
                path: t.path().to_path_buf(),
                _tmp: Some(t),
            }
        }
    }
}

/// A database path with nothing at it (a kept directory is reused).
fn fresh(p: PathBuf) -> PathBuf {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
    }
    p
}

fn put(dir: &Path, name: &str, data: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).expect("write input");
    p
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

fn status_line(t: u32, prio: &str, cycles: &str, min: &str) -> String {
    format!("T:{t:2} ({:5}) P:{prio} I:1000 C:{cycles:>7} Min:{min:>7} Act:    2 Avg:    2 Max:      5\n", 1000 + t)
}

/// Many threads that each cost a thread of the record, in every cyclictest format: each costs
/// what it holds (a sparse histogram), so 20 000 cheap threads are imported within the limits,
/// and the same number of threads claiming wide histograms is refused before they are built.
#[test]
fn cyclictest_threads_are_charged_at_their_real_size() {
    let d = dir("threads");
    let n = 20_000u32;
    let q: String = (0..n).map(|t| status_line(t, "90", "100", "1")).collect();
    let mut json = String::from("{\"file_version\":1,\"thread\":{");
    for t in 0..n {
        let comma = if t + 1 < n { "," } else { "" };
        let _ = write!(
            json,
            "\"{t}\":{{\"histogram\":{{\"1\":1}},\"cycles\":1,\"min\":1,\"max\":1,\"avg\":1,\"cpu\":0,\"node\":0}}{comma}"
        );
    }
    json.push_str("}}");
    let ones = vec!["1"; n as usize].join("\t");
    let h = format!(
        "# Histogram\n000001\t{ones}\n# Total: {}\n# Min Latencies: {}\n# Max Latencies: {}\n",
        ones.replace('\t', " "),
        ones.replace('\t', " "),
        ones.replace('\t', " ")
    );
    let v: String = (0..4096)
        .map(|t| format!("{t:8}:{:8}:{:8}\n", 0, 5))
        .collect();
    for (name, text) in [("q.txt", q), ("ct.json", json), ("h.txt", h), ("v.txt", v)] {
        let p = put(d.path(), name, text);
        let o = run(&["import", s(&p), "--no-store"]);
        within(&format!("cyclictest {name}"), &o, None);
        assert!(
            o.stdout
                .contains(&format!("{}", if name == "v.txt" { 4096 } else { n })),
            "cyclictest {name}: the thread count is not in the summary:\n{}",
            o.stdout
        );
    }
    // One row at bucket 100 000 µs: 20 000 threads × 100 001 µs buckets claimed by 40 KB.
    let wide = format!(
        "# Histogram\n100000\t{ones}\n# Total: {}\n# Min Latencies: {}\n# Max Latencies: {}\n",
        ones.replace('\t', " "),
        vec!["100000"; n as usize].join(" "),
        vec!["100000"; n as usize].join(" ")
    );
    let p = put(d.path(), "wide.txt", wide);
    let o = run(&["import", s(&p), "--no-store"]);
    refused_with(
        "cyclictest wide.txt",
        &o,
        "20000 threads × 100001 buckets",
        2,
    );
}

/// A run record of 20 000 one-bucket threads: imported, and stored then read by every verb
/// that reads the store, within the limits (each thread costs what it holds).
#[test]
fn a_record_with_many_threads_is_read_within_the_limits_by_import_and_by_the_store() {
    let d = dir("record");
    let one = rtscope_report::import::record(
        &status_line(0, "90", "100", "1"),
        None,
        "q.txt",
        "hostile-0001".into(),
        "2026-01-01T00:00:00Z".into(),
    )
    .expect("a one-thread import");
    let mut v = serde_json::to_value(&one).expect("record JSON");
    let threads = v["kind"]["measurement"]["threads"]
        .as_array()
        .expect("threads")
        .clone();
    let many: Vec<serde_json::Value> = (0..20_000).map(|_| threads[0].clone()).collect();
    v["kind"]["measurement"]["threads"] = serde_json::Value::Array(many);
    let big = serde_json::to_string(&v).expect("JSON");
    let rec = put(d.path(), "rec.json", &big);
    within(
        "import run, 20 000 threads",
        &run(&["import", "run", s(&rec), "--no-store"]),
        None,
    );
    // The same record in a results database.
    let db = fresh(d.path().join("results.db"));
    let mut st = rtscope_store::Store::open_sqlite(&db).expect("create the database");
    st.insert_run(&one).expect("store one run");
    drop(st);
    let c = rusqlite::Connection::open(&db).expect("open");
    c.execute(
        "UPDATE runs SET record_json = ?1 WHERE id = 'hostile-0001'",
        [&big],
    )
    .expect("plant the record");
    drop(c);
    let out = d.path().join("out");
    for args in [
        vec!["show", "hostile-0001"],
        vec!["export", "hostile-0001"],
        vec!["report", "hostile-0001", "-o", s(&out)],
        vec!["compare", "hostile-0001", "hostile-0001"],
    ] {
        let mut a = args.clone();
        a.extend(["--db", s(&db)]);
        within(&format!("{} on it", args[0]), &run(&a), None);
    }
}

fn rtt(dir: &Path, name: &str, f: &RttFile) -> PathBuf {
    put(dir, name, rtscope_trace::rtt::encode(f))
}

fn waking(ts_ns: u64, cpu: u32, pid: u32) -> Event {
    Event {
        ts_ns,
        cpu,
        kind: EventKind::Waking {
            pid,
            prio: 120,
            target_cpu: cpu,
        },
    }
}

fn flight_meta(f: &mut RttFile) {
    f.meta.file_mode = "flight".into();
    f.meta.start_ns = 1;
    f.meta.end_ns = 10_000_000_000;
    f.meta.keep = "all".into();
}

/// Trace files whose content defeats a per-CPU expansion, a quadratic duplicate removal, an
/// uncapped timeline or a per-sample walk of every event.
#[test]
fn trace_files_are_read_and_analysed_in_bounded_time_and_memory() {
    let d = dir("trace");
    // META lists 100 000 CPUs; 10 000 snapshots.
    let mut f = RttFile::default();
    flight_meta(&mut f);
    f.meta.cpus = (0..100_000).collect();
    f.windows = (0..10_000u64)
        .map(|i| KeptWindowInfo {
            kind: KeptKind::Snapshot,
            cpu: None,
            from_ns: i * 1_000_000,
            to_ns: i * 1_000_000 + 1000,
            sample: None,
            reasons: vec!["snapshot".into()],
        })
        .collect();
    let p = rtt(d.path(), "cpus_x_snapshots.rtt", &f);
    within(
        "analyze, 100 000 CPUs x 10 000 snapshots",
        &run(&["analyze", s(&p)]),
        None,
    );

    // 500 000 distinct events at one timestamp, in a flight file (duplicates are removed).
    let mut f = RttFile::default();
    flight_meta(&mut f);
    f.meta.cpus = vec![0];
    f.events = (0..500_000).map(|i| waking(1000, 0, i)).collect();
    let p = rtt(d.path(), "one_timestamp.rtt", &f);
    within(
        "analyze, 500 000 events at one timestamp",
        &run(&["analyze", s(&p)]),
        None,
    );
    let o = run(&["bound", "--trace", s(&p)]);
    // No samples in the file: no thread terms, which is bad input for the bound (exit 2).
    refused_with(
        "bound --trace, 500 000 events at one timestamp",
        &o,
        "--trace",
        2,
    );

    // 20 unattributed samples of 2^40 ns over 300 000 events: the timelines are capped.
    let mut f = RttFile::default();
    f.meta.cpus = vec![0];
    f.meta.start_ns = 1;
    f.meta.end_ns = 1 << 41;
    f.events = (0..300_000u64)
        .map(|i| waking(10 + i * 1000, 0, 7))
        .collect();
    f.samples = (0..20)
        .map(|i| RawSample {
            cpu: 0,
            tid: 99,
            cycle: i,
            expected_ns: 5 + i,
            latency_ns: 1 << 40,
        })
        .collect();
    let p = rtt(d.path(), "unattributed.rtt", &f);
    let out = d.path().join("unattributed.json");
    within(
        "analyze --json, 20 unattributed samples over 300 000 events",
        &run(&["analyze", s(&p), "--json", s(&out)]),
        None,
    );
    let len = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    assert!(len < 32 << 20, "analyze JSON of {len} bytes");

    // 300 000 events, 20 000 samples whose windows all cover them (the thread is woken at
    // the end, so every window walks every event).
    let mut f = RttFile::default();
    f.meta.cpus = vec![0];
    f.meta.start_ns = 1;
    f.meta.end_ns = 1 << 41;
    f.events = (0..300_000u64)
        .map(|i| waking(1_000_000 + i * 10, 0, 7))
        .collect();
    f.events.push(waking(10_000_000, 0, 99));
    f.samples = (0..20_000)
        .map(|i| RawSample {
            cpu: 0,
            tid: 99,
            cycle: i,
            expected_ns: 10 + i,
            latency_ns: 10_000_000 - i,
        })
        .collect();
    let p = rtt(d.path(), "overlapping_windows.rtt", &f);
    within(
        "analyze, 20 000 windows over 300 000 events",
        &run(&["analyze", s(&p)]),
        None,
    );

    // Loss counts that add up past 2^64 would wrap to a small total and hide the loss.
    let mut f = RttFile::default();
    f.meta.cpus = vec![0, 1];
    f.meta.start_ns = 1;
    f.meta.end_ns = 2;
    f.meta.lost_per_cpu = [(0, u64::MAX), (1, 1)].into_iter().collect();
    let p = rtt(d.path(), "lost.rtt", &f);
    let o = run(&["analyze", s(&p)]);
    within("analyze, lost counts past 2^64", &o, Some("lost_per_cpu"));
    assert_eq!(o.code, 2, "lost counts past 2^64: bad input is exit 2");
}

/// `bound --input` and `--rtsl-db` with many CPUs, sources and vectors; rtsl tables that are
/// views.
#[test]
fn bound_inputs_are_charged_and_views_refused() {
    let d = dir("bound");
    let cpu = |c: u32, irqs: &str| {
        format!(
            "{{\"cpu\":{c},\"thread\":{{\"poid_ns\":1,\"paie_ns\":1,\"psd_ns\":1,\"dst_ns\":1}},\"irqs\":[{irqs}]}}"
        )
    };
    let cpus: Vec<String> = (0..30_000).map(|c| cpu(c, "")).collect();
    let p = put(
        d.path(),
        "cpus.json",
        format!("{{\"cpus\":[{}]}}", cpus.join(",")),
    );
    refused_with(
        "bound --input, 30 000 CPUs",
        &run(&["bound", "--input", s(&p)]),
        "cpus",
        2,
    );
    let irqs: Vec<String> = (0..200_000)
        .map(|i| {
            format!(
                "{{\"source\":\"s{i}\",\"start_ns\":{},\"duration_ns\":1}}",
                i * 10
            )
        })
        .collect();
    let p = put(
        d.path(),
        "sources.json",
        format!("{{\"cpus\":[{}]}}", cpu(0, &irqs.join(","))),
    );
    refused_with(
        "bound --input, 200 000 sources",
        &run(&["bound", "--input", s(&p)]),
        "source",
        2,
    );
    let p = put(
        d.path(),
        "dup.json",
        r#"{"cpus":[{"cpu":0,"cpu":1,"thread":{"poid_ns":1,"paie_ns":1,"psd_ns":1,"dst_ns":1}}]}"#,
    );
    refused_with(
        "bound --input, a repeated key",
        &run(&["bound", "--input", s(&p)]),
        "duplicate key \"cpus[0].cpu\"",
        2,
    );

    let rtsl = |name: &str, irq: &str, fill: &dyn Fn(&rusqlite::Connection)| {
        let p = fresh(d.path().join(name));
        let c = rusqlite::Connection::open(&p).expect("rtsl db");
        c.execute_batch(&format!(
            "CREATE TABLE poid (cpu INTEGER, value INTEGER); CREATE TABLE paie (cpu INTEGER, value INTEGER);
             CREATE TABLE psd (cpu INTEGER, value INTEGER); CREATE TABLE dst (cpu INTEGER, value INTEGER);
             CREATE TABLE nmi (cpu INTEGER, start_time INTEGER, duration INTEGER);
             {irq}
             INSERT INTO poid VALUES (0, 1); INSERT INTO paie VALUES (0, 1);
             INSERT INTO psd VALUES (0, 1); INSERT INTO dst VALUES (0, 1);"
        ))
        .expect("rtsl schema");
        fill(&c);
        p
    };
    let p = rtsl(
        "vectors.db",
        "CREATE TABLE irq (cpu INTEGER, vector TEXT, start_time INTEGER, duration INTEGER);",
        &|c| {
            c.execute_batch(
                "WITH RECURSIVE r(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM r WHERE n < 199999)
                 INSERT INTO irq SELECT 0, 'v' || n, n * 10, 1 FROM r;",
            )
            .expect("vectors");
        },
    );
    refused_with(
        "bound --rtsl-db, 200 000 vectors",
        &run(&["bound", "--rtsl-db", s(&p)]),
        "vector",
        2,
    );
    let p = rtsl(
        "view.db",
        "CREATE VIEW irq AS WITH RECURSIVE r(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM r)
         SELECT 0 AS cpu, 'v' AS vector, n AS start_time, 1 AS duration FROM r;",
        &|_| {},
    );
    refused_with(
        "bound --rtsl-db, irq a recursive view",
        &run(&["bound", "--rtsl-db", s(&p)]),
        "irq is a view",
        2,
    );
}

/// A results database whose `runs` is an endless view, and one that is corrupt.
#[test]
fn store_views_are_refused_and_corruption_is_named_alike() {
    let d = dir("store");
    let db = fresh(d.path().join("view.db"));
    let one = rtscope_report::import::record(
        &status_line(0, "90", "100", "1"),
        None,
        "q.txt",
        "hostile-0002".into(),
        "2026-01-01T00:00:00Z".into(),
    )
    .expect("a one-thread import");
    let mut st = rtscope_store::Store::open_sqlite(&db).expect("create the database");
    st.insert_run(&one).expect("store one run");
    drop(st);
    let c = rusqlite::Connection::open(&db).expect("open");
    c.execute_batch(
        "PRAGMA journal_mode = DELETE; PRAGMA foreign_keys = OFF; DROP TABLE run_tags; ALTER TABLE runs RENAME TO real_runs;
         CREATE VIEW runs AS WITH RECURSIVE r(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM r)
         SELECT 'x' || n AS id, started_at, hostname, kernel_release, verb, record_json, policy, scenario,
                samples, min_ns, max_ns, avg_ns, state FROM r, real_runs;",
    )
    .expect("plant the view");
    drop(c);
    let out = d.path().join("out");
    for args in [
        vec!["runs"],
        vec!["show", "x1"],
        vec!["export", "x1"],
        vec!["report", "x1", "-o", s(&out)],
        vec!["compare", "x1", "x2"],
    ] {
        let mut a = args.clone();
        a.extend(["--db", s(&db)]);
        refused_with(
            &format!("{} on a view", args[0]),
            &run(&a),
            "runs is a view",
            1,
        );
    }
    // A database whose pages are garbage after its header: every verb names it the same way.
    let bad = fresh(d.path().join("corrupt.db"));
    let mut st = rtscope_store::Store::open_sqlite(&bad).expect("create the database");
    st.insert_run(&one).expect("store one run");
    drop(st);
    let c = rusqlite::Connection::open(&bad).expect("open");
    c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;")
        .expect("checkpoint");
    drop(c);
    let mut bytes = std::fs::read(&bad).expect("read");
    let page = 4096;
    for b in bytes.iter_mut().skip(page).take(page) {
        *b = 0x5a;
    }
    std::fs::write(&bad, &bytes).expect("corrupt");
    let mut said = Vec::new();
    for args in [
        vec!["runs"],
        vec!["show", "hostile-0002"],
        vec!["compare", "hostile-0002", "hostile-0002"],
    ] {
        let mut a = args.clone();
        a.extend(["--db", s(&bad)]);
        let o = run(&a);
        refused_with(
            &format!("{} on a corrupt database", args[0]),
            &o,
            "malformed",
            1,
        );
        said.push(o.stderr);
    }
    assert!(
        said.iter().all(|m| !m.contains("not an rtscope")),
        "{said:?}"
    );
}

/// Numbers at the integer edges in cyclictest files: refused with the field named, never
/// wrapped or truncated into a plausible value.
#[test]
fn cyclictest_numbers_at_the_edges_are_refused_with_the_field() {
    let d = dir("edges");
    let max = u64::MAX.to_string();
    let json = |t: &str| format!("{{\"file_version\":1,\"thread\":{{\"0\":{t}}}}}");
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "P:4294967296000",
            status_line(0, "4294967296000", "1", "1"),
            "P:",
        ),
        (
            "C summing past 2^64",
            status_line(0, "90", &max, "1") + &status_line(1, "90", &max, "1"),
            "C (the threads' cycle counts)",
        ),
        ("Min: -1", status_line(0, "90", "1", "-1"), "Min:"),
        (
            "cycles 1e300",
            json(r#"{"cycles":1e300,"min":1,"max":1,"avg":1,"cpu":0}"#),
            "cycles",
        ),
        (
            "cpu 4294967296000",
            json(r#"{"cycles":1,"min":1,"max":1,"avg":1,"cpu":4294967296000}"#),
            "cpu",
        ),
        (
            "a repeated key",
            json(r#"{"cycles":1,"cycles":2,"min":1,"max":1,"avg":1,"cpu":0}"#),
            "duplicate key \"thread.0.cycles\"",
        ),
    ];
    for (i, (what, text, field)) in cases.into_iter().enumerate() {
        let p = put(d.path(), &format!("edge{i}.txt"), text);
        let o = run(&["import", s(&p), "--no-store"]);
        within(what, &o, Some(field));
        assert_eq!(o.code, 2, "{what}: bad input is exit 2");
    }
}

/// Special files given to every reader flag: a FIFO nobody writes to (opening it to read
/// would wait for a writer forever), /dev/urandom (never ends) and /dev/null. Each is refused
/// before it is opened, exit 2, one line naming the flag or the file and saying what it is.
#[test]
fn special_files_are_refused_before_they_are_read() {
    let d = dir("special");
    let fifo = d.path().join("pipe");
    let _ = std::fs::remove_file(&fifo);
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo (coreutils)");
    assert!(made.success(), "mkfifo {}", fifo.display());
    let db = d.path().join("results.db");
    for (what, special, says) in [
        ("a FIFO", s(&fifo), "FIFO"),
        ("/dev/urandom", "/dev/urandom", "character device"),
        ("/dev/null", "/dev/null", "character device"),
    ] {
        let cases: Vec<(Vec<&str>, &str)> = vec![
            (vec!["import", "--no-store", special], special),
            (vec!["import", "run", "--no-store", special], special),
            (vec!["bound", "--input", special], "--input"),
            (vec!["bound", "--rtsl-db", special], "--rtsl-db"),
            (vec!["bound", "--trace", special], special),
            (vec!["analyze", special], special),
            (
                vec!["campaign", special, "--dry-run", "--db", s(&db)],
                "campaign file",
            ),
            (vec!["taskset", "check", special], special),
            (vec!["taskset", "run", special, "-D", "1s"], special),
        ];
        for (args, flag) in cases {
            let o = run(&args);
            let name = format!("{} {what}", args[..args.len().min(2)].join(" "));
            within(&name, &o, Some(says));
            assert_eq!(o.code, 2, "{name}: {}", o.stderr);
            assert!(
                o.stderr.contains(flag),
                "{name}: '{flag}' not named: {}",
                o.stderr
            );
        }
    }
    assert!(!db.exists(), "a refused campaign created its database");
}

/// Records read together share one budget: twelve stored runs of 8 threads with wide linear
/// histograms each fit one by one (`show` reads each), but `report` and `compare` over all twelve
/// would hold 77 MB of counters and are refused, naming the threads, within the limits.
#[test]
fn records_read_together_share_one_budget() {
    let d = dir("together");
    let one = rtscope_report::import::record(
        &status_line(0, "90", "100", "1"),
        None,
        "q.txt",
        "hostile-t00".into(),
        "2026-01-01T00:00:00Z".into(),
    )
    .expect("a one-thread import");
    let mut v = serde_json::to_value(&one).expect("record JSON");
    let threads = v["kind"]["measurement"]["threads"]
        .as_array()
        .expect("threads")
        .clone();
    // 8 threads each with a 100 000-µs linear histogram (800 KB of counters each): 6.4 MB per
    // record, well inside one read's budget, and 77 MB for 12 read together, over it.
    let mut wide = threads[0].clone();
    wide["linear"]["max_us"] = serde_json::json!(100_000);
    let many: Vec<serde_json::Value> = (0..8).map(|_| wide.clone()).collect();
    v["kind"]["measurement"]["threads"] = serde_json::Value::Array(many);
    let json = serde_json::to_string(&v).expect("JSON");
    let db = fresh(d.path().join("results.db"));
    let mut st = rtscope_store::Store::open_sqlite(&db).expect("create the database");
    let ids: Vec<String> = (0..12).map(|i| format!("hostile-t{i:02}")).collect();
    for id in &ids {
        let mut r = one.clone();
        r.id = id.clone();
        st.insert_run(&r).expect("store a run");
    }
    drop(st);
    let c = rusqlite::Connection::open(&db).expect("open");
    for id in &ids {
        let j = json.replace("hostile-t00", id);
        c.execute("UPDATE runs SET record_json = ?1 WHERE id = ?2", [&j, id])
            .expect("plant the record");
    }
    drop(c);
    within(
        "show, one record of 8 wide threads",
        &run(&["show", &ids[0], "--db", s(&db)]),
        None,
    );
    let out = d.path().join("out");
    let mut report = vec!["report"];
    report.extend(ids.iter().map(String::as_str));
    report.extend(["-o", s(&out), "--db", s(&db)]);
    refused_with("report over 12 records", &run(&report), "threads", 1);
    let mut compare = vec!["compare"];
    compare.extend(ids.iter().map(String::as_str));
    compare.extend(["--db", s(&db)]);
    refused_with("compare of 12 records", &run(&compare), "threads", 1);
}
