//! Hostile inputs, secrets and files (docs/reliability.md): every verb that reads an outside
//! file refuses a crafted "small file, huge claim" with exit 2 and one line, inside an address
//! space of 1 GiB (RLIMIT_AS) and under 256 MiB of peak RSS; bad flags get the same shape; no
//! password reaches a file, a report or the terminal; read-only verbs never write; a full disk is
//! found before the run, not after it.

use rtscope_testkit::bin;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Address space of every child: decoders that believe a claim fail here instead of being
/// granted untouched pages by overcommit.
const AS_LIMIT: u64 = 1 << 30;
/// Peak RSS allowed for a refused input, KiB.
const RSS_CEILING_KIB: u64 = 256 * 1024;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
    maxrss_kib: u64,
}

/// Run rtscope with `args` under RLIMIT_AS; exit code, output and peak RSS (wait4).
fn run(args: &[&str], env: &[(&str, &Path)], limit: bool) -> Out {
    let mut c = Command::new(bin!());
    c.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    if limit {
        // SAFETY: only async-signal-safe setrlimit between fork and exec.
        unsafe {
            c.pre_exec(|| {
                let rl = libc::rlimit {
                    rlim_cur: AS_LIMIT,
                    rlim_max: AS_LIMIT,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &rl) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    // Reaped by wait4 below (for its rusage), not by Child::wait.
    #[allow(clippy::zombie_processes)]
    let mut child = c.spawn().expect("spawn rtscope");
    let mut so = child.stdout.take().expect("stdout");
    let mut se = child.stderr.take().expect("stderr");
    let t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let mut stderr = String::new();
    let _ = se.read_to_string(&mut stderr);
    let stdout = t.join().expect("stdout reader");
    let pid = child.id() as i32;
    let mut status = 0;
    // SAFETY: zeroed rusage is valid; wait4 fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child (std has not reaped it: `child` is never waited).
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid, "wait4");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    Out {
        code,
        stdout,
        stderr,
        maxrss_kib: ru.ru_maxrss as u64,
    }
}

fn assert_refused(what: &str, o: &Out) {
    let lines: Vec<&str> = o.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(o.code, 2, "{what}: exit {} (stderr: {})", o.code, o.stderr);
    assert_eq!(
        lines.len(),
        1,
        "{what}: one line expected, got:\n{}",
        o.stderr
    );
    assert!(lines[0].starts_with("rtscope: "), "{what}: {}", lines[0]);
    assert!(
        o.maxrss_kib < RSS_CEILING_KIB,
        "{what}: peak RSS {} KiB",
        o.maxrss_kib
    );
    println!(
        "refused {what}: exit 2, peak RSS {} MiB: {}",
        o.maxrss_kib / 1024,
        lines[0]
    );
}

fn put(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).expect("write input");
    p
}

fn section(out: &mut Vec<u8>, tag: &[u8; 4], body: &[u8]) {
    out.extend_from_slice(tag);
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&rtscope_trace::rtt::crc32(body).to_le_bytes());
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A real deflate bomb in the `.rtt` layout (docs/trace-format.md): one EVTZ section of about
/// 150 KB that inflates to 150 MB of valid 2-byte events (75 M events, 2.4 GB decoded).
fn rtt_bomb() -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(b"RTSTRACE");
    f.extend_from_slice(&3u16.to_le_bytes());
    f.extend_from_slice(&[0; 6]);
    let meta = serde_json::to_vec(&rtscope_trace::RttMeta::default()).expect("meta");
    section(&mut f, b"META", &meta);
    let n: u64 = 75_000_000;
    let mut head = Vec::new();
    varint(&mut head, 0);
    varint(&mut head, n);
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(&head).expect("deflate");
    // Timestamp delta 0, event 16 (preempt_disable): 2 bytes, no fields.
    let chunk: Vec<u8> = [0u8, 16].repeat(1 << 20);
    let mut left = n;
    while left > 0 {
        let k = left.min(1 << 20);
        enc.write_all(&chunk[..2 * k as usize]).expect("deflate");
        left -= k;
    }
    let z = enc.finish().expect("deflate");
    let mut body = Vec::new();
    varint(&mut body, head.len() as u64 + 2 * n);
    body.extend_from_slice(&z);
    section(&mut f, b"EVTZ", &body);
    section(&mut f, b"END\0", &[]);
    f
}

#[test]
fn small_files_with_huge_claims_are_refused_within_limits() {
    let d = tempfile::tempdir().expect("tmp");
    let t = d.path();
    let bomb = rtt_bomb();
    assert!(bomb.len() < 1 << 20, "bomb is {} bytes", bomb.len());
    println!(
        "deflate bomb: {} bytes on disk, 150 000 002 bytes inflated, 75 000 000 events",
        bomb.len()
    );
    let bomb = put(t, "bomb.rtt", &bomb);
    let ct_bucket = put(
        t,
        "bucket.txt",
        b"# Histogram\n000000 000001\n4000000000 000001\n# Total: 000000002\n# Min Latencies: 00001\n# Avg Latencies: 00001\n# Max Latencies: 00001\n",
    );
    let ct_wrap = put(
        t,
        "wrap.txt",
        b"# Histogram\n000000 18446744073709551615\n000001 000000000000000002\n# Total: 000000001\n# Min Latencies: 00001\n# Avg Latencies: 00001\n# Max Latencies: 00001\n",
    );
    let threads: Vec<String> = (0..40)
        .map(|i| {
            format!(
                r#""{i}": {{"histogram": {{"{}": 1}}, "cycles": 1, "min": 1, "max": 1, "avg": 1.0, "cpu": 0, "node": 0}}"#,
                if i == 39 { 99_999_999 } else { 1 }
            )
        })
        .collect();
    let ct_json = put(
        t,
        "threads.json",
        format!(
            r#"{{"file_version": 1, "thread": {{{}}}}}"#,
            threads.join(",")
        )
        .as_bytes(),
    );
    let one = r#"{"linear":{"max_us":100000000,"overflow":0,"buckets":[]}}"#;
    let record = put(
        t,
        "record.json",
        format!(
            r#"{{"schema_version":1,"threads":[{}]}}"#,
            vec![one; 40].join(",")
        )
        .as_bytes(),
    );
    let set99 = put(
        t,
        "set99.json",
        br#"{"schema_version": 99, "tasks": [{"id": 0, "wcet_ns": 1000, "period_ns": 10000, "deadline_ns": 10000}]}"#,
    );
    let set_key = put(
        t,
        "setkey.json",
        br#"{"schema_version": 1, "tasks": [], "colour": "blue"}"#,
    );
    let set_toml = put(
        t,
        "set.toml",
        b"schema_version = 1\ntasks = [\n  { id = \"x\" \n",
    );
    let camp = put(
        t,
        "camp.toml",
        b"name = \"c\"\npolicies = [\"fifo\"]\nloads = [\"idle\"]\nintervals_us = [1000]\nrepetitions = 1\ndurations = [\"99999999999d\"]\n",
    );
    let not_utf8 = put(t, "bin.json", &[0x7b, 0xff, 0xfe, 0x7d]);
    let rtapp = put(
        t,
        "rtapp.json",
        br#"{"tasks":{"a":{"instance":1000000000,"run":1000,"timer":{"ref":"x","period":10000}}}}"#,
    );
    let bound_json = put(
        t,
        "bound.json",
        br#"{"cpus":[{"cpu":0,"thread":{"poid_ns":1,"paie_ns":1,"psd_ns":1,"dst_ns":1},"irqs":[{"source":"33","start_ns":18446744073709551615,"duration_ns":18446744073709551615}]}]}"#,
    );
    let junk_db: Vec<u8> = (0..3000u32).map(|i| (i * 131 % 251) as u8).collect();
    let junk_db = put(t, "junk.db", &junk_db);
    let s = |p: &Path| p.display().to_string();
    let xdg = t.join("xdg");
    std::fs::create_dir(&xdg).expect("xdg");
    let env: [(&str, &Path); 2] = [("XDG_DATA_HOME", xdg.as_path()), ("HOME", t)];
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "analyze: .rtt deflate bomb",
            vec!["analyze".into(), s(&bomb)],
        ),
        (
            "bound: .rtt deflate bomb",
            vec!["bound".into(), "--trace".into(), s(&bomb)],
        ),
        (
            "import: cyclictest bucket at 4e9 us",
            vec!["import".into(), "--no-store".into(), s(&ct_bucket)],
        ),
        (
            "import: cyclictest counts of 2^64-1",
            vec!["import".into(), "--no-store".into(), s(&ct_wrap)],
        ),
        (
            "import: cyclictest JSON, 40 threads, bucket 1e8",
            vec!["import".into(), "--no-store".into(), s(&ct_json)],
        ),
        (
            "import: run record, 40 threads x 1e8 buckets",
            vec![
                "import".into(),
                "run".into(),
                "--no-store".into(),
                s(&record),
            ],
        ),
        (
            "taskset run --rt-app: 10^9 instances",
            vec![
                "taskset".into(),
                "run".into(),
                "--rt-app".into(),
                s(&rtapp),
                "--no-store".into(),
            ],
        ),
        (
            "bound --input: times of 2^64-1",
            vec!["bound".into(), "--input".into(), s(&bound_json)],
        ),
        (
            "bound --rtsl-db: not a database",
            vec!["bound".into(), "--rtsl-db".into(), s(&junk_db)],
        ),
        (
            "import: not UTF-8",
            vec!["import".into(), "--no-store".into(), s(&not_utf8)],
        ),
        (
            "taskset check: schema_version 99",
            vec!["taskset".into(), "check".into(), s(&set99)],
        ),
        (
            "taskset check: unknown key",
            vec!["taskset".into(), "check".into(), s(&set_key)],
        ),
        (
            "taskset check: broken TOML",
            vec!["taskset".into(), "check".into(), s(&set_toml)],
        ),
        (
            "campaign --dry-run: 99999999999d",
            vec!["campaign".into(), s(&camp), "--dry-run".into()],
        ),
        (
            "runs --since 2027-13-45",
            vec!["runs".into(), "--since".into(), "2027-13-45".into()],
        ),
        (
            "runs --db on a missing directory",
            vec![
                "runs".into(),
                "--db".into(),
                s(&t.join("typo/dir/results.db")),
            ],
        ),
        (
            "cyclictest -p 2^32+50",
            vec!["cyclictest".into(), "-p".into(), "4294967346".into()],
        ),
        (
            "cyclictest -t 2^32+1",
            vec!["cyclictest".into(), "-t".into(), "4294967297".into()],
        ),
        (
            "cyclictest -h 2^32",
            vec!["cyclictest".into(), "-h".into(), "4294967296".into()],
        ),
        (
            "measure --db ''",
            vec!["measure".into(), "--db".into(), String::new()],
        ),
        (
            "measure --db mysql://x/y",
            vec!["measure".into(), "--db".into(), "mysql://x/y".into()],
        ),
        (
            "runs --db mysql://x/y",
            vec!["runs".into(), "--db".into(), "mysql://x/y".into()],
        ),
    ];
    for (what, args) in &cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run(&a, &env, true);
        assert_refused(what, &o);
    }
    // Nothing was created by the refusals: no database, no directory, no stray SQLite file.
    assert!(!t.join("typo").exists(), "runs created directories");
    assert!(
        !xdg.join("rtscope").join("results.db").exists(),
        "a refused verb created the default database"
    );
    assert!(!Path::new("mysql:").exists(), "--db mysql:// became a file");
}

/// Every output of a run stored with a password in its database URL: the run record, the
/// fallback file, the database it is imported into, `show`, the HTML report, stdout and stderr.
#[test]
fn no_password_reaches_a_file_a_report_or_the_terminal() {
    if !rtscope_testkit::is_root() {
        rtscope_testkit::skipped("needs root (measure runs SCHED_FIFO threads)");
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let t = d.path();
    let xdg = t.join("xdg");
    std::fs::create_dir(&xdg).expect("xdg");
    let env: [(&str, &Path); 1] = [("XDG_DATA_HOME", xdg.as_path())];
    // Port 9 (discard) on loopback: refused at once, so the record goes to the fallback file.
    let url = "postgres://alice:SECRET-7f3a@127.0.0.1:9/rt?password=SECRET-7f3a";
    let mut outputs = String::new();
    let json = t.join("o.json");
    let o = run(
        &[
            "measure",
            "-D",
            "0.3s",
            "-q",
            "--db",
            url,
            "--json",
            &json.display().to_string(),
            "--histogram-file",
            &t.join("h.txt").display().to_string(),
        ],
        &env,
        false,
    );
    assert_eq!(o.code, 0, "measure: {}", o.stderr);
    outputs.push_str(&o.stdout);
    outputs.push_str(&o.stderr);
    let o = run(
        &[
            "run",
            "-D",
            "0.3s",
            "-q",
            "--trace",
            "off",
            "--db",
            url,
            "-o",
            &t.join("runs").display().to_string(),
        ],
        &env,
        false,
    );
    assert_eq!(o.code, 0, "run: {}", o.stderr);
    outputs.push_str(&o.stdout);
    outputs.push_str(&o.stderr);
    // The fallback files, imported into a SQLite store, then shown and reported from it.
    let fb: Vec<PathBuf> = std::fs::read_dir(xdg.join("rtscope/fallback"))
        .expect("fallback files")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(fb.len(), 2, "two fallback records");
    let db = t.join("r.db");
    let dbs = db.display().to_string();
    for f in &fb {
        let o = run(
            &["import", "--db", &dbs, &f.display().to_string()],
            &env,
            false,
        );
        assert_eq!(o.code, 0, "import: {}", o.stderr);
        outputs.push_str(&o.stdout);
        outputs.push_str(&o.stderr);
    }
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("o.json")).expect("json");
    let id = rec["id"].as_str().expect("id").to_string();
    for args in [
        vec!["show", "--db", &dbs, &id],
        vec!["runs", "--db", &dbs],
        vec!["export", "--db", &dbs, &id],
        vec![
            "report",
            "--db",
            &dbs,
            &id,
            "-o",
            &t.join("r.html").display().to_string(),
        ],
    ] {
        let o = run(&args, &env, false);
        assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
        outputs.push_str(&o.stdout);
        outputs.push_str(&o.stderr);
    }
    // A refused flag quotes the value: masked there too.
    let o = run(
        &["runs", "--db", "mysql://bob:SECRET-7f3a@h/x"],
        &env,
        false,
    );
    assert_eq!(o.code, 2);
    outputs.push_str(&o.stderr);
    assert!(!outputs.contains("SECRET"), "terminal output: {outputs}");
    let mut files = 0;
    let mut stack = vec![t.to_path_buf()];
    while let Some(p) = stack.pop() {
        for e in std::fs::read_dir(&p).expect("dir") {
            let e = e.expect("entry").path();
            if e.is_dir() {
                stack.push(e);
            } else {
                files += 1;
                let b = std::fs::read(&e).expect("read");
                assert!(
                    !b.windows(6).any(|w| w == b"SECRET"),
                    "{} holds the password",
                    e.display()
                );
            }
        }
    }
    assert!(files >= 10, "only {files} files checked");
    // The run directory and the files of record are private.
    let rundir = std::fs::read_dir(t.join("runs"))
        .expect("runs")
        .next()
        .expect("a run dir")
        .expect("entry")
        .path();
    let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(&rundir) & 0o077, 0, "run dir {:o}", mode(&rundir));
    assert_eq!(mode(&rundir.join("run.json")) & 0o077, 0);
    assert_eq!(mode(&db) & 0o077, 0, "database {:o}", mode(&db));
    println!("secrets: {files} files and every command's output checked, 0 passwords found");
}

/// Mount a tmpfs (root); None when the kernel refuses.
fn tmpfs(at: &Path, opts: &str) -> Option<()> {
    std::fs::create_dir_all(at).ok()?;
    let st = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            opts,
            "tmpfs",
            &at.display().to_string(),
        ])
        .status()
        .ok()?;
    st.success().then_some(())
}

fn umount(at: &Path) {
    let _ = Command::new("umount").arg(at).status();
}

#[test]
fn read_only_verbs_read_a_read_only_database_and_change_nothing() {
    if !rtscope_testkit::is_root() {
        rtscope_testkit::skipped("needs root (mounts a read-only tmpfs)");
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let ro = d.path().join("ro");
    if tmpfs(&ro, "size=16m").is_none() {
        rtscope_testkit::skipped("mount -t tmpfs refused");
        return;
    }
    let db = ro.join("results.db");
    let dbs = db.display().to_string();
    let ct =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/fixtures/cyclictest-h20-H.txt");
    let o = run(
        &["import", "--db", &dbs, &ct.display().to_string()],
        &[],
        false,
    );
    assert_eq!(o.code, 0, "import: {}", o.stderr);
    let id = o
        .stdout
        .split("imported as run ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("run id")
        .to_string();
    let before: Vec<String> = {
        let mut v: Vec<String> = std::fs::read_dir(&ro)
            .expect("ro")
            .map(|e| e.expect("e").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let bytes = std::fs::read(&db).expect("db");
    let st = Command::new("mount")
        .args(["-o", "remount,ro", &ro.display().to_string()])
        .status()
        .expect("remount");
    assert!(st.success(), "remount ro");
    let out = d.path().join("e.json").display().to_string();
    let html = d.path().join("r.html").display().to_string();
    let latest = d.path().join("latest.html").display().to_string();
    let mut failures = Vec::new();
    for args in [
        vec!["runs", "--db", &dbs],
        vec!["show", "--db", &dbs, &id],
        vec!["export", "--db", &dbs, &id, "-o", &out],
        vec!["report", "--db", &dbs, &id, "-o", &html],
        // No id: the latest stored run.
        vec!["report", "--db", &dbs, "-o", &latest],
        vec!["compare", "--db", &dbs, &id, &id],
    ] {
        let o = run(&args, &[], false);
        if o.code != 0 && !(args[0] == "compare" && o.code == 3) {
            failures.push(format!("{args:?}: exit {}: {}", o.code, o.stderr));
        }
    }
    let after: Vec<String> = {
        let mut v: Vec<String> = std::fs::read_dir(&ro)
            .expect("ro")
            .map(|e| e.expect("e").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let same = std::fs::read(&db).expect("db") == bytes;
    umount(&ro);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let l = std::fs::read_to_string(&latest).expect("latest.html");
    assert!(l.contains(&id), "the report of the latest run names it");
    assert_eq!(before, after, "files appeared or went");
    assert!(same, "the database changed");
}

#[test]
fn a_full_disk_is_found_before_the_run() {
    if !rtscope_testkit::is_root() {
        rtscope_testkit::skipped("needs root (mounts a small tmpfs)");
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let full = d.path().join("full");
    if tmpfs(&full, "size=64k").is_none() {
        rtscope_testkit::skipped("mount -t tmpfs refused");
        return;
    }
    let fulls = full.display().to_string();
    let t0 = std::time::Instant::now();
    let cases = [
        vec![
            "run".to_string(),
            "-D".into(),
            "30s".into(),
            "-o".into(),
            format!("{fulls}/dir"),
        ],
        vec![
            "measure".to_string(),
            "-D".into(),
            "30s".into(),
            "--no-store".into(),
            "--json".into(),
            format!("{fulls}/o.json"),
        ],
        vec![
            "trace".to_string(),
            "record".into(),
            "-D".into(),
            "30s".into(),
            "-o".into(),
            "/proc/x.rtt".into(),
        ],
        vec![
            "load".to_string(),
            "cpu-cache".into(),
            "-D".into(),
            "30s".into(),
            "--json".into(),
            "/proc/x.json".into(),
        ],
        vec![
            "measure".to_string(),
            "-D".into(),
            "30s".into(),
            "--no-store".into(),
            "--json".into(),
            "/proc/x.json".into(),
        ],
    ];
    let mut outs = Vec::new();
    for a in &cases {
        let args: Vec<&str> = a.iter().map(String::as_str).collect();
        outs.push((a.join(" "), run(&args, &[], false)));
    }
    let left: Vec<_> = std::fs::read_dir(&full)
        .expect("full")
        .map(|e| e.expect("e").file_name())
        .collect();
    umount(&full);
    for (what, o) in &outs {
        assert_refused(what, o);
    }
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(20),
        "a refused run ran: {:?}",
        t0.elapsed()
    );
    assert!(left.is_empty(), "left on the full disk: {left:?}");
}

/// One error shape for every verb: a bad flag or a missing input is one line on stderr naming
/// it, exit 2, and nothing runs.
#[test]
fn every_verb_refuses_bad_input_in_one_line() {
    let d = tempfile::tempdir().expect("tmp");
    let t = d.path();
    let xdg = t.join("xdg");
    std::fs::create_dir(&xdg).expect("xdg");
    let env: [(&str, &Path); 2] = [("XDG_DATA_HOME", xdg.as_path()), ("HOME", t)];
    let missing = t.join("missing.file").display().to_string();
    let db = t.join("none.db").display().to_string();
    let table: Vec<Vec<&str>> = vec![
        vec!["run", "-D", "0s"],
        vec!["run", "--interval", "0"],
        vec!["measure", "-D", "31d"],
        vec!["measure", "--priority", "100"],
        vec!["measure", "--cpus", "9999"],
        vec!["monitor", "--window", "0s"],
        vec!["monitor", "--listen", "nowhere"],
        vec!["monitor", "--checkpoint", "1m"],
        vec!["cyclictest", "-i", "x"],
        vec!["cyclictest", "--bogus"],
        vec!["load", "nosuchload", "-D", "1s"],
        vec!["trace", "record", "-D", "x"],
        vec!["analyze", &missing],
        vec!["bound", "--input", &missing],
        vec!["rhealstone", "--timeout", "0"],
        vec!["rhealstone", "--variants", "user_spin"],
        vec!["measure", "--preset", "ospert14"],
        vec!["load", "disk", "--disk-tool", "bonnie"],
        vec!["monitor", "--trace-burst", "5s/5s"],
        vec!["sched-scale", "--sleep", "0"],
        vec!["pdlt", "--step", "0"],
        vec!["taskset", "check", &missing],
        vec!["taskset", "gen", "--utilisation=-1"],
        vec![
            "taskset",
            "sweep",
            "--placement",
            "global",
            "--loads",
            "9",
            "--cpus",
            "0",
        ],
        vec![
            "taskset",
            "sweep",
            "--placement",
            "partitioned",
            "--loads",
            "0.6",
            "--sets",
            "0",
        ],
        vec!["taskset", "sweep", "--placement", "ring", "--loads", "0.6"],
        vec![
            "taskset",
            "sweep",
            "--placement",
            "global",
            "--loads",
            "1",
            "--rt-runtime",
            "2s",
        ],
        vec!["campaign", &missing],
        vec!["runs", "--limit", "x"],
        vec!["runs", "--db", &db],
        vec!["show", "--db", &db, "nosuchrun"],
        vec!["compare", "--db", &db, "a", "b"],
        vec!["report", "--db", &db, "nosuchrun"],
        vec!["import", &missing],
        vec!["export", "--db", &db, "nosuchrun"],
        vec!["nosuchverb"],
    ];
    let mut bad = Vec::new();
    for args in &table {
        let o = run(args, &env, true);
        let lines = o.stderr.lines().filter(|l| !l.trim().is_empty()).count();
        if o.code != 2 || lines != 1 || !o.stderr.starts_with("rtscope: ") {
            bad.push(format!(
                "{args:?}: exit {}, {lines} lines: {}",
                o.code,
                o.stderr.trim()
            ));
        } else {
            println!("{args:?}: {}", o.stderr.trim());
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(
        !t.join("none.db").exists(),
        "a read-only verb created the database"
    );
}

fn our_cgroups() -> Vec<String> {
    let mut out = Vec::new();
    for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/cpuset"] {
        if let Ok(rd) = std::fs::read_dir(root) {
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                if n.starts_with("rtscope-taskset-") {
                    out.push(format!("{root}/{n}"));
                }
            }
        }
    }
    out
}

/// SIGKILL of a partitioned `taskset run` leaves its cpusets (and, on cgroup v1, the root's
/// `sched_load_balance = 0`): the next run verb repairs them before it measures and says so in
/// its record.
#[test]
fn the_next_run_repairs_what_a_killed_run_left() {
    if !rtscope_testkit::is_root() {
        rtscope_testkit::skipped("needs root (cpusets, SCHED_DEADLINE)");
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let set = put(
        d.path(),
        "set.json",
        br#"{"schema_version":1,"tasks":[{"id":0,"wcet_ns":1000000,"period_ns":10000000,"deadline_ns":10000000},{"id":1,"wcet_ns":1000000,"period_ns":10000000,"deadline_ns":10000000}]}"#,
    );
    let mut child = Command::new(bin!())
        .args([
            "taskset",
            "run",
            &set.display().to_string(),
            "--policy",
            "deadline",
            "--placement",
            "partitioned",
            "--duration",
            "20",
            "--no-store",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("taskset run");
    let t0 = std::time::Instant::now();
    while our_cgroups().is_empty() && t0.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let before = our_cgroups();
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    if before.is_empty() {
        let mut e = String::new();
        let _ = child.stderr.take().map(|mut s| s.read_to_string(&mut e));
        panic!("the partitioned run made no cpuset within 10 s: {e}");
    }
    // The kill skipped every clean-up.
    assert!(
        !our_cgroups().is_empty(),
        "the killed run's cpusets vanished by themselves"
    );
    let json = d.path().join("o.json");
    let o = run(
        &[
            "measure",
            "-D",
            "0.2s",
            "-q",
            "--no-store",
            "--json",
            &json.display().to_string(),
        ],
        &[],
        false,
    );
    assert_eq!(o.code, 0, "measure: {}", o.stderr);
    assert!(our_cgroups().is_empty(), "left: {:?}", our_cgroups());
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("o.json")).expect("json");
    let warnings = rec["warnings"].as_array().expect("warnings");
    assert!(
        warnings.iter().any(|w| w["code"] == "system"
            && w["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("left by a killed run"))),
        "{warnings:?}"
    );
    assert!(o.stderr.contains("left by a killed run"), "{}", o.stderr);
}

fn our_instances() -> Vec<String> {
    std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("rtscope-"))
                .collect()
        })
        .unwrap_or_default()
}

/// SIGKILL of a tracefs capture leaves its instance tracing into its own buffers; the next run
/// verb removes it (and says so).
#[test]
fn the_next_run_removes_a_killed_capture_instance() {
    if !rtscope_testkit::is_root() {
        rtscope_testkit::skipped("needs root (tracefs)");
        return;
    }
    if !Path::new("/sys/kernel/tracing/instances").is_dir() {
        rtscope_testkit::skipped("tracefs is not mounted at /sys/kernel/tracing");
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let mut child = Command::new(bin!())
        .args([
            "trace",
            "record",
            "--mechanism",
            "tracefs",
            "-D",
            "20s",
            "-o",
            &d.path().join("t.rtt").display().to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("trace record");
    let pid = child.id();
    let mine = format!("rtscope-{pid}-");
    let t0 = std::time::Instant::now();
    while !our_instances().iter().any(|n| n.starts_with(&mine))
        && t0.elapsed() < std::time::Duration::from_secs(10)
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: signals our own child.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let _ = child.wait();
    assert!(
        our_instances().iter().any(|n| n.starts_with(&mine)),
        "the killed capture left no instance: {:?}",
        our_instances()
    );
    let o = run(&["measure", "-D", "0.2s", "-q", "--no-store"], &[], false);
    assert_eq!(o.code, 0, "measure: {}", o.stderr);
    assert!(
        !our_instances().iter().any(|n| n.starts_with(&mine)),
        "still there: {:?}",
        our_instances()
    );
    assert!(o.stderr.contains("stale tracefs instance"), "{}", o.stderr);
}
