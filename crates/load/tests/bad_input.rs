//! Bad input is refused by `validate` (and by `start`, which validates first) with a typed error
//! naming the option, before anything is created or forked.

mod common;

use rtscope_load::{parse_kinds, start, validate, LoadError, LoadKind, LoadOptions, LoadPolicy};
use std::path::PathBuf;

fn entries(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

#[test]
fn parse_table() {
    let rows: &[(&str, &str)] = &[
        ("cpu", "unknown kind 'cpu'"),
        ("cpu-cache,", "unknown kind ''"),
        ("io,net", "overlaps"),
        ("disk,disk", "overlaps"),
        ("idle,cpu-cache", "'idle' cannot be combined"),
    ];
    for (spec, want) in rows {
        let e = parse_kinds(spec).expect_err(spec);
        assert!(e.is_bad_input(), "{spec}");
        assert!(e.to_string().contains(want), "{spec}: {e}");
    }
    for p in ["rr", "fifo:0", "fifo:100", "fifo:x"] {
        let e = p.parse::<LoadPolicy>().expect_err(p);
        assert!(e.to_string().starts_with("⟨load.load_policy⟩:"), "{e}");
    }
}

#[test]
fn validate_table() {
    let _g = common::serial();
    let scratch = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    let file = scratch.path().join("plain-file");
    std::fs::write(&file, b"x").expect("file");
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let busy_port = busy.local_addr().expect("addr").port();
    let base = LoadOptions {
        scratch_dir: scratch.path().to_path_buf(),
        disk_bytes: 16 << 20,
        ..LoadOptions::default()
    };
    type Row = (&'static str, Vec<LoadKind>, LoadOptions, &'static str);
    let k = |s: &str| parse_kinds(s).expect("kinds");
    let with = |f: &dyn Fn(&mut LoadOptions)| {
        let mut o = base.clone();
        f(&mut o);
        o
    };
    let rows: Vec<Row> = vec![
        (
            "wss too small",
            k("cpu-cache"),
            with(&|o| o.wss_bytes = Some(100)),
            "⟨load.wss⟩: must be 4K..=64G",
        ),
        (
            "wss too large",
            k("cpu-cache"),
            with(&|o| o.wss_bytes = Some(65 << 30)),
            "⟨load.wss⟩: must be 4K..=64G",
        ),
        (
            "wss beyond memory",
            k("cpu-cache"),
            with(&|o| o.wss_bytes = Some(63 << 30)),
            "exceeds half of MemAvailable",
        ),
        (
            "scratch missing",
            k("disk"),
            with(&|o| o.scratch_dir = PathBuf::from("/nonexistent/rtscope")),
            "⟨load.scratch_dir⟩: /nonexistent/rtscope",
        ),
        (
            "scratch is a file",
            k("io"),
            with(&|o| o.scratch_dir = file.clone()),
            "is not a directory",
        ),
        (
            "scratch too small",
            k("disk"),
            with(&|o| o.disk_bytes = 1 << 40),
            "free; ⟨load.disk_size⟩",
        ),
        (
            "disk size zero",
            k("disk"),
            with(&|o| o.disk_bytes = 0),
            "⟨load.disk_size⟩: must be 1M..=1T",
        ),
        (
            "port in use",
            k("net"),
            with(&|o| o.net_port = busy_port),
            "already in use",
        ),
        (
            "cpu offline",
            k("cpu-cache"),
            with(&|o| o.cpus = vec![4095]),
            "⟨load.cpus⟩: CPU 4095 is not online",
        ),
        (
            "cpu twice",
            k("hackbench"),
            with(&|o| o.cpus = vec![0, 0]),
            "⟨load.cpus⟩: CPU 0 listed twice",
        ),
        (
            "fifo without force",
            k("cpu-cache"),
            with(&|o| o.policy = LoadPolicy::Fifo(1)),
            "add ⟨load.force⟩",
        ),
        (
            "no hackbench groups",
            k("hackbench"),
            with(&|o| o.hackbench_groups = 0),
            "⟨load.hackbench_groups⟩: must be 1..=100",
        ),
        (
            "exec without command",
            k("exec"),
            base.clone(),
            "needs a command",
        ),
        (
            "exec unknown command",
            k("exec"),
            with(&|o| o.exec_argv = vec!["no-such-rtscope-cmd".into()]),
            "not found",
        ),
        (
            "argv without exec",
            k("cpu-cache"),
            with(&|o| o.exec_argv = vec!["true".into()]),
            "no 'exec' load",
        ),
        ("no kinds", vec![], base.clone(), "no load kind"),
    ];
    let before = entries(scratch.path());
    for (what, kinds, opts, want) in &rows {
        let e = validate(kinds, opts).expect_err(what);
        assert!(e.is_bad_input(), "{what}: {e:?}");
        assert!(
            e.to_string().contains(want),
            "{what}: got '{e}', want '{want}'"
        );
        if *what == "port in use" {
            assert!(matches!(e, LoadError::PortInUse { port } if port == busy_port));
        }
        // start() validates first: same error, nothing started.
        let e2 = start(kinds, opts).map(|_| ()).expect_err(what);
        assert_eq!(e.to_string(), e2.to_string(), "{what}");
    }
    assert_eq!(entries(scratch.path()), before, "validation created files");
    // A good configuration passes without creating anything either.
    validate(&k("io"), &base).expect("valid io");
    assert_eq!(entries(scratch.path()), before);
    drop(busy);
}

/// Root may write anywhere, so "unwritable" is checked from a child that drops to `nobody`.
#[test]
fn unwritable_scratch_dir_is_refused() {
    let _g = common::serial();
    if !common::is_root() {
        rtscope_testkit::skipped("needs root to switch to uid nobody");
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    let opts = LoadOptions {
        scratch_dir: dir.path().to_path_buf(),
        disk_bytes: 16 << 20,
        ..LoadOptions::default()
    };
    let kinds = [LoadKind::Disk];
    use rtscope_sys::process::{self, Fork};
    // SAFETY: the child only calls setuid, validate and _exit.
    let pid = match unsafe { process::fork() }.expect("fork") {
        Fork::Parent(pid) => pid,
        Fork::Child => 0,
    };
    if pid == 0 {
        let code = {
            if process::become_user(65534, 65534).is_err() {
                3
            } else {
                match validate(&kinds, &opts) {
                    Err(e) if e.to_string().contains("is not writable") => 0,
                    Err(_) => 1,
                    Ok(()) => 2,
                }
            }
        };
        process::exit_now(code);
    }
    let (_, st) = process::wait(pid).expect("waitpid");
    assert!(process::exit_code(st).is_some(), "child died: {st}");
    assert_eq!(
        process::exit_code(st),
        Some(0),
        "1 = other error, 2 = accepted, 3 = setuid failed"
    );
}
