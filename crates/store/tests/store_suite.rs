//! The store test-suite, run against every backend: SQLite always, PostgreSQL when
//! RTSCOPE_TEST_PG_URL is set (CI: `eval "$(scripts/ci-postgres.sh start)"`). Every PostgreSQL
//! test works in its own schema, created fresh.

use rtscope_model::{Policy, RunRecord};
use rtscope_store::fixture::{self, Spec};
use rtscope_store::{RunFilter, Saved, Store, StoreError};
use std::collections::BTreeMap;
use std::path::PathBuf;

enum Backend {
    Sqlite(tempfile::TempDir),
    Pg { url: String, schema: String },
}

impl Backend {
    fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite(_) => "sqlite",
            Backend::Pg { .. } => "postgres",
        }
    }
    fn open_at(&self, version: i64) -> Result<Store, StoreError> {
        match self {
            Backend::Sqlite(d) => Store::open_sqlite_at(&d.path().join("results.db"), version),
            Backend::Pg { url, schema } => Store::open_postgres_at(url, Some(schema), version),
        }
    }
    fn open(&self) -> Store {
        self.open_at(rtscope_store::schema::CURRENT_VERSION)
            .unwrap_or_else(|e| panic!("{}: open: {e}", self.name()))
    }
}

fn backends(test: &str) -> Vec<Backend> {
    let mut v = vec![Backend::Sqlite(tempfile::tempdir().expect("tempdir"))];
    match std::env::var("RTSCOPE_TEST_PG_URL") {
        Ok(url) if !url.is_empty() => {
            let schema = format!("t_{test}");
            let mut c = postgres::Client::connect(&url, postgres::NoTls)
                .unwrap_or_else(|e| panic!("RTSCOPE_TEST_PG_URL={url} unreachable: {e}"));
            c.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                .expect("drop schema");
            v.push(Backend::Pg { url, schema });
        }
        _ => rtscope_testkit::skipped(format_args!(
            "PostgreSQL backend of {test}: RTSCOPE_TEST_PG_URL is unset"
        )),
    }
    v
}

fn rec(id: &str, seed: u64) -> RunRecord {
    fixture::record(&Spec::new(id, seed))
}

#[test]
fn round_trip_is_exact() {
    for b in backends("round_trip") {
        let mut s = b.open();
        let mut spec = Spec::new("run-aaaa1111", 1);
        spec.with_analysis = true;
        spec.loads = vec!["cpu-cache".into()];
        let r = fixture::record(&spec);
        assert_eq!(s.insert_run(&r).unwrap(), "run-aaaa1111");
        let back = s.get_run("run-aaaa1111").unwrap();
        // Histograms compare bucket by bucket and on the exact sums.
        assert_eq!(back, r, "{}", b.name());
        let (bm, rm) = (back.measurement().unwrap(), r.measurement().unwrap());
        assert_eq!(
            bm.histogram.quantile_ns(0.9999),
            rm.histogram.quantile_ns(0.9999)
        );
        // Reopening sees it too (committed, not just cached).
        drop(s);
        let mut s = b.open();
        assert_eq!(s.count_runs().unwrap(), 1);
        let l = s.list_runs(&RunFilter::default()).unwrap();
        assert_eq!(l[0].scenario, "cpu-cache");
        assert_eq!(l[0].samples, 10_000);
        assert_eq!(l[0].max_ns, r.stats().max_ns.map(|v| v as i64));
    }
}

#[test]
fn ids_prefixes_and_unknown() {
    for b in backends("ids") {
        let mut s = b.open();
        s.insert_run(&rec("abc123", 1)).unwrap();
        s.insert_run(&rec("abd456", 2)).unwrap();
        assert_eq!(s.resolve_id("abc").unwrap(), "abc123");
        assert!(matches!(
            s.resolve_id("ab"),
            Err(StoreError::Ambiguous { .. })
        ));
        let e = s.get_run("zzz").unwrap_err();
        assert!(matches!(e, StoreError::UnknownRun(_)), "{e}");
        assert!(e.to_string().contains("no run with id 'zzz'"));
        // Duplicate: refused, nothing changed.
        assert!(matches!(
            s.insert_run(&rec("abc123", 9)),
            Err(StoreError::Duplicate(_))
        ));
        assert_eq!(s.count_runs().unwrap(), 2);
        assert_eq!(s.get_run("abc123").unwrap(), rec("abc123", 1));
    }
}

#[test]
fn filters() {
    for b in backends("filters") {
        let mut s = b.open();
        let mut a = Spec::new("r1", 1);
        a.started_at = "2026-11-01T10:00:00Z".into();
        a.tags.insert("kernel".into(), "rt-label".into());
        a.tags.insert("campaign".into(), "c1".into());
        let mut b2 = Spec::new("r2", 2);
        b2.started_at = "2026-11-02T10:00:00Z".into();
        b2.hostname = "other-host".into();
        b2.kernel_release = "6.6.0-rt12".into();
        b2.policy = Policy::Deadline;
        b2.loads = vec!["io".into()];
        b2.tags.insert("campaign".into(), "c1".into());
        let mut c = Spec::new("r3", 3);
        c.started_at = "2026-11-03T23:59:59Z".into();
        for sp in [&a, &b2, &c] {
            s.insert_run(&fixture::record(sp)).unwrap();
        }
        let ids = |s: &mut Store, f: RunFilter| -> Vec<String> {
            s.list_runs(&f).unwrap().into_iter().map(|r| r.id).collect()
        };
        assert_eq!(ids(&mut s, RunFilter::default()), ["r1", "r2", "r3"]);
        let tag = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        assert_eq!(
            ids(
                &mut s,
                RunFilter {
                    tags: tag("campaign", "c1"),
                    ..Default::default()
                }
            ),
            ["r1", "r2"]
        );
        assert_eq!(
            ids(
                &mut s,
                RunFilter {
                    campaign: Some("c1".into()),
                    ..Default::default()
                }
            ),
            ["r1", "r2"]
        );
        assert_eq!(
            ids(
                &mut s,
                RunFilter {
                    host: Some("other-host".into()),
                    ..Default::default()
                }
            ),
            ["r2"]
        );
        assert_eq!(
            ids(
                &mut s,
                RunFilter {
                    kernel: Some("rt12".into()),
                    ..Default::default()
                }
            ),
            ["r2"]
        );
        assert_eq!(
            ids(
                &mut s,
                RunFilter {
                    kernel: Some("rt-label".into()),
                    ..Default::default()
                }
            ),
            ["r1"]
        );
        assert_eq!(
            ids(
                &mut s,
                RunFilter {
                    scenario: Some("io".into()),
                    ..Default::default()
                }
            ),
            ["r2"]
        );
        assert_eq!(
            ids(
                &mut s,
                RunFilter {
                    policy: Some("fifo".into()),
                    ..Default::default()
                }
            ),
            ["r1", "r3"]
        );
        assert_eq!(
            ids(
                &mut s,
                RunFilter {
                    since: Some("2026-11-02".into()),
                    ..Default::default()
                }
            ),
            ["r2", "r3"]
        );
        // A bare date includes the whole day (r3 at 23:59:59).
        assert_eq!(
            ids(
                &mut s,
                RunFilter {
                    until: Some("2026-11-03".into()),
                    since: Some("2026-11-02".into()),
                    ..Default::default()
                }
            ),
            ["r2", "r3"]
        );
        assert_eq!(
            ids(
                &mut s,
                RunFilter {
                    limit: Some(2),
                    ..Default::default()
                }
            ),
            ["r2", "r3"]
        );
        let l = s
            .list_runs(&RunFilter {
                tags: tag("kernel", "rt-label"),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(l[0].tags["campaign"], "c1");
    }
}

#[test]
fn migrations_from_every_earlier_version() {
    let current = rtscope_store::schema::CURRENT_VERSION;
    for from in 0..current {
        for b in backends(&format!("migrate_from_{from}")) {
            {
                let mut old = b.open_at(from).unwrap();
                assert_eq!(old.schema_version().unwrap(), from);
                let mut sp = Spec::new("old-run", 4);
                sp.loads = vec!["io".into()];
                sp.tags.insert("campaign".into(), "legacy".into());
                let r = fixture::record(&sp);
                match from {
                    0 => {}
                    1 => old.insert_raw_v1(&r).unwrap(),
                    2 => old.insert_raw_v2(&r).unwrap(),
                    3 => old.insert_raw_v3(&r).unwrap(),
                    // v5 added only the campaign queue: a v4 row is written as today.
                    4 => {
                        old.insert_run(&r).unwrap();
                    }
                    v => panic!("add a raw insert for schema version {v}"),
                }
            }
            let mut s = b.open();
            assert_eq!(
                s.schema_version().unwrap(),
                current,
                "{} from v{from}",
                b.name()
            );
            if from > 0 {
                // Back-filled tags and summary columns answer the new queries.
                let l = s
                    .list_runs(&RunFilter {
                        tags: vec![("campaign".into(), "legacy".into())],
                        scenario: Some("io".into()),
                        ..Default::default()
                    })
                    .unwrap();
                assert_eq!(l.len(), 1, "{} from v{from}", b.name());
                assert_eq!(l[0].samples, 10_000);
                assert_eq!(l[0].policy, "fifo");
                assert_eq!(l[0].state, "completed");
            }
            s.insert_run(&rec("new-run", 5)).unwrap();
            assert_eq!(s.count_runs().unwrap(), if from > 0 { 2 } else { 1 });
        }
    }
}

#[test]
fn newer_schema_is_refused() {
    for b in backends("too_new") {
        let mut s = b.open();
        s.insert_run(&rec("x1", 1)).unwrap();
        drop(s);
        bump_version(&b, 99);
        match b.open_at(rtscope_store::schema::CURRENT_VERSION) {
            Err(StoreError::TooNew { found: 99, .. }) => {}
            Err(e) => panic!("{}: wrong error {e}", b.name()),
            Ok(_) => panic!("{}: opened a newer schema", b.name()),
        }
    }
}

fn bump_version(b: &Backend, v: i64) {
    let sql = format!("UPDATE rtscope_meta SET value = '{v}' WHERE key = 'schema_version'");
    match b {
        Backend::Sqlite(d) => {
            let c = rusqlite::Connection::open(d.path().join("results.db")).unwrap();
            c.execute_batch(&sql).unwrap();
        }
        Backend::Pg { url, schema } => {
            let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
            c.batch_execute(&format!("SET search_path TO {schema}; {sql}"))
                .unwrap();
        }
    }
}

#[test]
fn foreign_database_is_refused_untouched() {
    for b in backends("foreign") {
        match &b {
            Backend::Sqlite(d) => {
                let p = d.path().join("results.db");
                let c = rusqlite::Connection::open(&p).unwrap();
                c.execute_batch(
                    "CREATE TABLE customers (name TEXT); INSERT INTO customers VALUES ('x');",
                )
                .unwrap();
                drop(c);
                let before = std::fs::read(&p).unwrap();
                let e = Store::open(Some(p.to_str().unwrap()))
                    .err()
                    .expect("must refuse");
                assert!(matches!(e, StoreError::Foreign { .. }), "{e}");
                assert!(
                    e.to_string().contains("not an rtscope results database"),
                    "{e}"
                );
                assert_eq!(std::fs::read(&p).unwrap(), before, "foreign file modified");
                assert!(
                    !d.path().join("results.db-wal").exists()
                        || std::fs::metadata(d.path().join("results.db-wal"))
                            .unwrap()
                            .len()
                            == 0
                );
            }
            Backend::Pg { url, schema } => {
                let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
                c.batch_execute(&format!(
                    "CREATE SCHEMA {schema}; CREATE TABLE {schema}.runs (x INT); INSERT INTO {schema}.runs VALUES (7);"
                ))
                .unwrap();
                let e = b
                    .open_at(rtscope_store::schema::CURRENT_VERSION)
                    .err()
                    .expect("must refuse");
                assert!(matches!(e, StoreError::Foreign { .. }), "{e}");
                let n: i64 = c
                    .query_one(&format!("SELECT COUNT(*) FROM {schema}.runs"), &[])
                    .unwrap()
                    .get(0);
                assert_eq!(n, 1);
            }
        }
    }
}

#[test]
fn corrupt_sqlite_file_is_refused_untouched() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("results.db");
    let junk: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&p, &junk).unwrap();
    let e = Store::open(Some(p.to_str().unwrap()))
        .err()
        .expect("must refuse");
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
    assert!(e.to_string().contains(p.to_str().unwrap()), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), junk);
}

/// A database cut by 2 bytes (a full disk, a bad copy): refused, with its path, and left exactly
/// as it was — by the storing open and by the read-only one.
#[test]
fn truncated_database_is_refused_untouched_with_its_path() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("results.db");
    {
        let mut s = Store::open_sqlite(&p).unwrap();
        for i in 0..20 {
            s.insert_run(&fixture::record(&Spec::new(&format!("r{i}"), i)))
                .unwrap();
        }
    }
    let mut b = std::fs::read(&p).unwrap();
    b.truncate(b.len() - 2);
    std::fs::write(&p, &b).unwrap();
    for e in [
        Store::open(Some(p.to_str().unwrap()))
            .err()
            .expect("refused"),
        Store::open_read_only(Some(p.to_str().unwrap()))
            .err()
            .expect("refused"),
    ] {
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        assert!(e.to_string().contains(p.to_str().unwrap()), "{e}");
        assert!(e.to_string().contains("cut"), "{e}");
    }
    assert_eq!(std::fs::read(&p).unwrap(), b);
    let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "no -wal or -shm beside it");
}

/// Reading never creates: no database, no directory, no WAL or -shm; reading works with the
/// file made read-only, and the bytes stay the same.
#[test]
fn read_only_open_creates_and_changes_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("typo/dir/results.db");
    let e = Store::open_read_only(Some(missing.to_str().unwrap()))
        .err()
        .expect("missing");
    assert!(matches!(e, StoreError::Missing(_)), "{e}");
    assert!(!d.path().join("typo").exists());
    // An empty file (a writer creating it this moment): "nothing stored yet", left as it is.
    let empty = d.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let e = Store::open_read_only(Some(empty.to_str().unwrap()))
        .err()
        .expect("empty");
    assert!(matches!(e, StoreError::Empty(_)), "{e}");
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
    std::fs::remove_file(&empty).unwrap();
    let p = d.path().join("results.db");
    {
        let mut s = Store::open_sqlite(&p).unwrap();
        s.insert_run(&fixture::record(&Spec::new("one", 1)))
            .unwrap();
    }
    let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode & 0o077, 0, "database created {mode:o}");
    let before = std::fs::read(&p).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
    let mut s = Store::open_read_only(Some(p.to_str().unwrap())).unwrap();
    assert_eq!(s.count_runs().unwrap(), 1);
    drop(s);
    assert_eq!(std::fs::read(&p).unwrap(), before);
    let names: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn empty_and_unknown_database_urls_are_refused() {
    for u in ["", "  ", "mysql://x/y", "sqlite://", "http://h/db"] {
        let e = Store::open(Some(u)).err().expect("refused");
        assert!(matches!(e, StoreError::BadUrl(_)), "{u}: {e}");
    }
    let e = rtscope_store::check_db_url("mysql://bob:hunter2@h/x").unwrap_err();
    assert!(!e.contains("hunter2"), "{e}");
    assert!(!std::path::Path::new("mysql:").exists());
}

#[test]
fn a_failed_run_insert_leaves_nothing() {
    // Make the tags insert fail half-way through a run: the runs row must roll back too.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("results.db");
    let mut s = Store::open_sqlite(&p).unwrap();
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute_batch(
        "CREATE TRIGGER boom BEFORE INSERT ON run_tags WHEN NEW.key = 'boom'
         BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
    )
    .unwrap();
    let mut sp = Spec::new("half", 1);
    sp.tags.insert("aaa".into(), "first".into());
    sp.tags.insert("boom".into(), "1".into());
    assert!(s.insert_run(&fixture::record(&sp)).is_err());
    assert_eq!(s.count_runs().unwrap(), 0);
    let tags: i64 = c
        .query_row("SELECT COUNT(*) FROM run_tags", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tags, 0);
}

#[test]
fn locked_database_waits_then_fails_clearly() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("results.db");
    let mut s = Store::open_sqlite(&p).unwrap();
    let holder = rusqlite::Connection::open(&p).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    Store::set_lock_wait(std::time::Duration::from_millis(300));
    let t0 = std::time::Instant::now();
    let e = s.insert_run(&rec("waits", 1)).unwrap_err();
    assert!(matches!(e, StoreError::Locked(_)), "{e}");
    assert!(t0.elapsed() >= std::time::Duration::from_millis(300));
    assert!(e.to_string().contains("locked by another process"));
    holder.execute_batch("COMMIT").unwrap();
    Store::set_lock_wait(std::time::Duration::from_secs(30));
    s.insert_run(&rec("waits", 1)).unwrap();
}

#[test]
fn unreachable_postgres_falls_back_to_a_local_file() {
    let d = tempfile::tempdir().unwrap();
    let r = rec("fallback-run", 3);
    // Port 1 on loopback: connection refused at once.
    let url = "postgres://rtscope:secret@127.0.0.1:1/results";
    match rtscope_store::save_or_fallback_in(Some(url), &r, d.path()).unwrap() {
        Saved::Fallback {
            path,
            reason,
            import_command,
        } => {
            assert_eq!(import_command.file, path);
            // As the cli names the database's field.
            let import_command = import_command.render("--db");
            assert!(reason.contains("cannot reach PostgreSQL"), "{reason}");
            assert!(!reason.contains("secret") && !import_command.contains("secret"));
            assert!(import_command.contains(path.to_str().unwrap()));
            assert!(import_command
                .starts_with("rtscope import --db 'postgres://rtscope:***@127.0.0.1:1/results'"));
            let back = rtscope_store::fallback::read_record_file(&path).unwrap();
            assert_eq!(back, r);
        }
        other => panic!("expected fallback, got {other:?}"),
    }
}

#[test]
fn sqlite_is_in_wal_mode() {
    let d = tempfile::tempdir().unwrap();
    let p: PathBuf = d.path().join("sub/dir/results.db");
    let mut s = Store::open_sqlite(&p).unwrap();
    s.insert_run(&rec("w", 1)).unwrap();
    let c = rusqlite::Connection::open(&p).unwrap();
    let mode: String = c
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let app: i32 = c
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .unwrap();
    assert_eq!(app, rtscope_store::schema::SQLITE_APPLICATION_ID);
}

#[test]
fn concurrent_writers_all_land() {
    // Two rtscope processes saving at once (a campaign cell and a user's own measure): each run
    // is one IMMEDIATE transaction; the second writer waits on the lock, nothing is lost.
    for b in backends("concurrent") {
        drop(b.open());
        let b = std::sync::Arc::new(b);
        let handles: Vec<_> = (0..2)
            .map(|w| {
                let b = b.clone();
                std::thread::spawn(move || {
                    let mut s = b.open();
                    for i in 0..40 {
                        let mut sp = Spec::new(&format!("w{w}-{i:03}"), i);
                        sp.samples_per_cpu = 50;
                        s.insert_run(&fixture::record(&sp)).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("writer thread");
        }
        assert_eq!(b.open().count_runs().unwrap(), 80, "{}", b.name());
    }
}

/// `--db sqlite:///abs/path` names the file `/abs/path` (not a directory called `sqlite:`).
#[test]
fn sqlite_url_names_the_file() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("r.db");
    let url = format!("sqlite://{}", path.display());
    let mut s = Store::open(Some(&url)).unwrap();
    s.insert_run(&fixture::record(&Spec::new("run-bbbb2222", 2)))
        .unwrap();
    drop(s);
    assert!(path.is_file());
    assert_eq!(Store::open_sqlite(&path).unwrap().count_runs().unwrap(), 1);
}

/// A database written by rtscope before warnings had codes (fixtures/records-2026-11-24.db:
/// `measure -D 1s`, `measure -D 1s --trace auto`, `import` of cyclictest `-q` status lines and
/// of a `-h 200` histogram, `rhealstone --only task_switch --iterations 2000`, `sched-scale
/// --loads 0,10 --wakeups 20 --sleep-ms 1 --no-trace` and a 1 s two-task `taskset run --policy
/// deadline`, each `--db` into one file, on the development VM): every run still reads, and
/// its plain-string warnings come back with the codes of their wording.
#[test]
fn records_of_the_previous_format_still_read() {
    use rtscope_model::WarningCode;
    let d = tempfile::tempdir().unwrap();
    // A copy: opening for write may migrate the schema, and the fixture must stay as written.
    let db = d.path().join("old.db");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/records-2026-11-24.db"
        ),
        &db,
    )
    .unwrap();
    let mut s = Store::open_sqlite(&db).expect("open the older database");
    let runs = s.list_runs(&RunFilter::default()).expect("list");
    assert_eq!(runs.len(), 7);
    let mut verbs: Vec<String> = runs.iter().map(|r| r.verb.clone()).collect();
    verbs.sort();
    assert_eq!(
        verbs,
        [
            "import-cyclictest",
            "import-cyclictest",
            "measure",
            "measure",
            "rhealstone",
            "sched-scale",
            "taskset"
        ]
    );
    let mut codes = std::collections::BTreeSet::new();
    for r in &runs {
        let rec = s.get_run(&r.id).unwrap_or_else(|e| panic!("{}: {e}", r.id));
        assert_eq!(rec.id, r.id);
        for w in &rec.warnings {
            assert!(!w.message.is_empty());
            codes.insert(w.code);
        }
        if rec.verb == "import-cyclictest" {
            assert!(rec.warnings.iter().all(|w| w.code == WarningCode::Import));
        }
        // Written back in today's form, it reads again unchanged.
        let json = serde_json::to_string(&rec).unwrap();
        let again: RunRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(again, rec);
    }
    // The VM those runs came from was detected as one: the wording maps back to its code.
    assert!(codes.contains(&WarningCode::Hypervisor), "{codes:?}");
    assert!(codes.contains(&WarningCode::Import), "{codes:?}");
}

/// A database written by the last rtscope of schema version 1 (every verb that stores a run:
/// `measure` plain, traced, with `--bound`, and killed by SIGKILL after checkpoints; `run`;
/// `import` of a cyclictest `--json`; `rhealstone`, `sched-scale`, `pdlt`, `mbwi sim`,
/// `practise test`, `taskset run`, `trace record`, `load`; each tagged `fixture=<what>`): every
/// run reads as a version-2 envelope of the right kind, nothing of it lost.
#[test]
fn schema_v1_records_of_every_verb_read_as_envelopes() {
    use rtscope_model::{EndReason, RunKind};
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("v1.db");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/schema-v1.db"),
        &db,
    )
    .unwrap();
    let mut s = Store::open_sqlite(&db).expect("open the version-1 database");
    let runs = s.list_runs(&RunFilter::default()).expect("list");
    assert_eq!(runs.len(), 14);
    let mut kinds = BTreeMap::new();
    for r in &runs {
        let rec = s.get_run(&r.id).unwrap_or_else(|e| panic!("{}: {e}", r.id));
        assert_eq!(rec.schema_version, rtscope_model::SCHEMA_VERSION);
        let what = rec
            .tags
            .get("fixture")
            .cloned()
            .expect("the config's tags carried over");
        // An import's command line is the one of the run it imports.
        assert!(
            what == "import" || rec.cmdline.iter().any(|a| a.contains("fixture=")),
            "{what}"
        );
        kinds.insert(what.clone(), rec.kind.name());
        match (what.as_str(), &rec.kind) {
            ("measure" | "run" | "import", RunKind::Measurement(m)) => {
                assert!(m.stats.samples > 1000, "{what}");
                // `run` is the traced main job: its tail explained.
                assert_eq!(m.attribution.is_some(), what == "run", "{what}");
                assert_eq!(m.histogram.count(), m.stats.samples, "{what}");
            }
            ("measure-traced", RunKind::Measurement(m)) => assert!(m.attribution.is_some()),
            ("bound", RunKind::Measurement(m)) => assert!(m.bound.is_some()),
            ("checkpoint-killed", RunKind::Measurement(m)) => {
                assert_eq!(rec.end_reason, EndReason::Checkpoint);
                assert!(rec.checkpoint.as_ref().is_some_and(|c| c.number >= 2));
                assert!(m.stats.samples > 0);
            }
            ("taskset", RunKind::Taskset(t)) => {
                assert_eq!(t.config.policy, "deadline");
                assert_eq!(rec.overruns(), t.total_misses);
            }
            ("trace-record", RunKind::TraceRecord(t)) => {
                assert_eq!(t.mechanism, "bpf");
                assert!(t.events > 0 && t.file_bytes > 0);
                assert_eq!(t.events_per_kind.values().sum::<u64>(), t.events);
            }
            ("load", RunKind::Load(l)) => {
                assert_eq!(l.policy, "other");
                assert_eq!(rec.loads.len(), 1);
                assert_eq!(rec.loads[0].kind, "cpu-cache");
            }
            ("rhealstone", RunKind::Rhealstone(_))
            | ("sched-scale", RunKind::SchedScale(_))
            | ("pdlt", RunKind::Pdlt(_))
            | ("mbwi", RunKind::Mbwi(_))
            | ("practise", RunKind::Practise(_)) => {}
            (w, k) => panic!("{w}: read as {}", k.name()),
        }
        // Written back in today's form, it reads again unchanged.
        let json = serde_json::to_string(&rec).unwrap();
        assert_eq!(rtscope_model::decode_run_record(&json).unwrap(), rec);
    }
    assert_eq!(kinds.len(), 14, "{kinds:?}");
    // The list's summary columns were written by the version-1 store and stay as they were.
    let traced = runs
        .iter()
        .find(|r| r.tags.get("fixture").map(String::as_str) == Some("measure-traced"))
        .unwrap();
    assert!(traced.samples > 1000);
}

/// Workers that start together all register the campaign at once: one registers it, the others
/// join it; none fails and every cell is queued once.
#[test]
fn campaign_registered_by_workers_starting_together() {
    for b in backends("campaign_together") {
        drop(b.open());
        let cells: Vec<String> = (1..=4).map(|i| format!("c{i}")).collect();
        let go = std::sync::Barrier::new(6);
        std::thread::scope(|sc| {
            for _ in 0..6 {
                sc.spawn(|| {
                    let mut s = b.open();
                    go.wait();
                    s.queue_campaign("q", "aaaa", &cells, &Default::default(), "t0")
                        .unwrap_or_else(|e| panic!("{}: {e}", b.name()));
                });
            }
        });
        let st = b.open().queue_status("q").unwrap();
        assert_eq!(st.todo, 4, "{}", b.name());
    }
}

/// The campaign queue on both backends: one claimant per cell, leases renewed and lost, a dead
/// worker's cell claimed again, a failing cell given up after MAX_ATTEMPTS, another file refused.
#[test]
fn campaign_queue_claims_leases_and_gives_up() {
    use rtscope_store::queue::{QueueError, MAX_ATTEMPTS};
    use std::time::Duration;
    let long = Duration::from_secs(60);
    let short = Duration::from_millis(1);
    for b in backends("campaign_queue") {
        let mut s = b.open();
        let cells = vec!["c1".to_string(), "c2".into(), "c3".into()];
        let done = std::collections::BTreeSet::from(["c3".to_string()]);
        s.queue_campaign("q", "aaaa", &cells, &done, "t0").unwrap();
        // Joining with the same file changes nothing; another file is refused.
        s.queue_campaign("q", "aaaa", &cells, &Default::default(), "t1")
            .unwrap();
        match s.queue_campaign("q", "bbbb", &cells, &Default::default(), "t2") {
            Err(QueueError::OtherFile { .. }) => {}
            other => panic!("{}: {other:?}", b.name()),
        }
        let a = s.claim_cell("q", "A", long).unwrap().unwrap();
        assert_eq!((a.cell.as_str(), a.attempt), ("c1", 1), "{}", b.name());
        // c2 goes to B with a lease that runs out at once: B "dies".
        let bc = s.claim_cell("q", "B", short).unwrap().unwrap();
        assert_eq!(bc.cell, "c2");
        std::thread::sleep(Duration::from_millis(20));
        let st = s.queue_status("q").unwrap();
        assert_eq!((st.running, st.expired, st.done), (1, 1, 1), "{}", b.name());
        assert!(s.renew_lease("q", "c1", "A", long).unwrap());
        // C takes B's cell; B's renewal and finish find it gone.
        let cc = s.claim_cell("q", "C", long).unwrap().unwrap();
        assert_eq!((cc.cell.as_str(), cc.attempt), ("c2", 2));
        assert!(!s.renew_lease("q", "c2", "B", long).unwrap());
        assert!(!s.finish_cell("q", "c2", "B", true).unwrap());
        assert!(s.claim_cell("q", "D", long).unwrap().is_none());
        assert!(s.finish_cell("q", "c1", "A", true).unwrap());
        // c2 fails on its 2nd attempt, goes back, fails a 3rd time: given up.
        assert!(s.finish_cell("q", "c2", "C", false).unwrap());
        let again = s.claim_cell("q", "D", long).unwrap().unwrap();
        assert_eq!((again.cell.as_str(), again.attempt), ("c2", MAX_ATTEMPTS));
        assert!(s.finish_cell("q", "c2", "D", false).unwrap());
        let st = s.queue_status("q").unwrap();
        assert_eq!((st.done, st.failed, st.todo), (2, 1, 0), "{}", b.name());
        assert!(st.drained());
        assert!(s.claim_cell("q", "E", long).unwrap().is_none());
    }
}
