//! The typed flags of `trace`, `mbwi`, `practise`, `analyze`, `bound` and `monitor`: clap parses
//! every duration, CPU list, address and choice, so a bad value is refused in one line that names
//! the flag and what it accepts (the range, or the possible values), exit 2, before anything
//! starts; a good value reaches the run unchanged; the old spellings (`--cpus-emulated`, the
//! durations whose unit was in their name) still work with one notice.

use rtscope_testkit::{bin, run_measured, Measured};

/// A verb, its old spelling and value, the new one, and the exit both give.
type Renamed<'a> = (&'a [&'a str], [&'a str; 2], [&'a str; 2], i32);
use std::process::Command;
use std::time::Duration;

fn run(args: &[&str]) -> Measured {
    let mut c = Command::new(bin!());
    c.args(args);
    run_measured(c, Duration::from_secs(30))
}

/// Exit 2 within a second or two, one stderr line holding every `want`, nothing on stdout.
fn refused(args: &[&str], want: &[&str]) -> Result<(), String> {
    let o = run(args);
    let lines: Vec<&str> = o.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let line = lines.first().copied().unwrap_or("");
    let mut bad = Vec::new();
    if o.code != 2 {
        bad.push(format!("exit {}", o.code));
    }
    if lines.len() != 1 || !line.starts_with("rtscope: ") {
        bad.push(format!("{} lines", lines.len()));
    }
    bad.extend(
        want.iter()
            .filter(|w| !line.contains(*w))
            .map(|w| format!("lacks {w:?}")),
    );
    if !o.stdout.is_empty() {
        bad.push(format!("printed {:?}", o.stdout));
    }
    if o.elapsed > Duration::from_secs(3) {
        bad.push(format!("took {:?}: something started", o.elapsed));
    }
    if bad.is_empty() {
        println!("{args:?}: {line}");
        Ok(())
    } else {
        Err(format!("{args:?}: {}: {}", bad.join(", "), o.stderr.trim()))
    }
}

/// Every row: the command line, then what its one line must hold.
fn refused_all(rows: &[(&[&str], &[&str])]) {
    let bad: Vec<String> = rows
        .iter()
        .filter_map(|(args, want)| refused(args, want).err())
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn trace_refuses_bad_values_naming_the_flag() {
    let d = tempfile::tempdir().expect("tmp");
    let out = d.path().join("t.rtt");
    let o = out.to_str().expect("utf-8");
    refused_all(&[
        (
            &["trace", "record", "-o", o, "--no-store", "-D", "x"],
            &[
                "invalid value 'x' for '--duration <TIME>'",
                "'x' is not a duration",
            ],
        ),
        (
            &["trace", "record", "-o", o, "--no-store", "-D", "25h"],
            &["'--duration <TIME>': 25h is out of range (1ms ..= 1d)"],
        ),
        (
            &["trace", "record", "-o", o, "--no-store", "--cpus", "x"],
            &[
                "invalid value 'x' for '--cpus <LIST>'",
                "expected a list like 0,2-3",
            ],
        ),
        (
            &["trace", "record", "-o", o, "--no-store", "--cpus", "3-1"],
            &[
                "invalid value '3-1' for '--cpus <LIST>'",
                "bad CPU range '3-1'",
            ],
        ),
        (
            &[
                "trace",
                "record",
                "-o",
                o,
                "--no-store",
                "--mechanism",
                "off",
            ],
            &[
                "invalid value 'off' for '--mechanism <MECHANISM>'",
                "[possible values: auto, bpf, tracefs]",
            ],
        ),
        (
            &["trace", "thread-vars", "-D", "31d"],
            &["'--duration <TIME>': 31d is out of range (1ms ..= 30d)"],
        ),
        (
            &["trace", "thread-vars", "--cpus", ""],
            &["invalid value '' for '--cpus <LIST>'", "empty CPU list"],
        ),
        (
            &["trace", "thread-vars", "--mechanism", "ebpf"],
            &[
                "invalid value 'ebpf' for '--mechanism <MECHANISM>'",
                "[possible values: auto, bpf, tracefs]",
            ],
        ),
    ]);
    assert!(!out.exists(), "a refused capture wrote its file");
}

#[test]
fn mbwi_refuses_bad_values_naming_the_flag() {
    refused_all(&[
        (
            &["mbwi", "sim", "--example", "fig4.2", "--protocol", "pip"],
            &[
                "invalid value 'pip' for '--protocol <PROTOCOL>'",
                "[possible values: none, mainline, mbwi, mbwi-impl, mbwi-impl-affinity, all]",
            ],
        ),
        (
            &["mbwi", "run", "--no-store", "-D", "0.1s"],
            &["'--duration <TIME>': 0.1s is out of range (200ms ..= 10m)"],
        ),
        (
            &["mbwi", "run", "--no-store", "--cpus", "0,x"],
            &[
                "invalid value '0,x' for '--cpus <LIST>'",
                "bad CPU number 'x'",
            ],
        ),
        (
            &["mbwi", "run", "--no-store", "--mutex", "rt"],
            &[
                "invalid value 'rt' for '--mutex <MUTEX>'",
                "[possible values: pi, plain, both]",
            ],
        ),
        (
            &["mbwi", "run", "--no-store", "--scenario", "one"],
            &[
                "invalid value 'one' for '--scenario <SCENARIO>'",
                "[possible values: one-cpu, one-cpu-overrun, two-cpus, all]",
            ],
        ),
        (
            &["mbwi", "run", "--no-store", "--mechanism", "perf"],
            &[
                "invalid value 'perf' for '--mechanism <MECHANISM>'",
                "[possible values: auto, bpf, tracefs, off]",
            ],
        ),
        (
            &["mbwi", "overhead", "--no-store", "--cpus", "5000"],
            &[
                "invalid value '5000' for '--cpus <LIST>'",
                "bad CPU range '5000'",
            ],
        ),
    ]);
}

#[test]
fn practise_refuses_bad_values_naming_the_flag() {
    let t = ["practise", "test", "--no-store"];
    let row = |extra: &'static [&'static str]| -> Vec<&'static str> { [&t[..], extra].concat() };
    let rows: Vec<(Vec<&str>, &[&str])> = vec![
        (
            row(&["--check-every", "20s"]),
            &["'--check-every <TIME>': 20s is out of range (100us ..= 10s)"],
        ),
        (
            row(&["--cycle", "1us"]),
            &["'--cycle <TIME>': 1us is out of range (10us ..= 10s)"],
        ),
        (
            row(&["-D", "2d"]),
            &["'--duration <TIME>': 2d is out of range (10ms ..= 1d)"],
        ),
        (
            row(&["--emulated-cpus", ""]),
            &["invalid value '' for '--emulated-cpus <LIST>': empty (a count or a list: 2, 1-2, 2,4,8)"],
        ),
        (
            row(&["--emulated-cpus", "4-2"]),
            &["invalid value '4-2' for '--emulated-cpus <LIST>'", "(a count or a list: 2, 1-2, 2,4,8)"],
        ),
        (
            row(&["--policy", "rm"]),
            &["invalid value 'rm' for '--policy <POLICY>'", "[possible values: auto, edf, fp]"],
        ),
        (
            row(&["--structure", "heap"]),
            &[
                "invalid value 'heap' for '--structure <STRUCTURE>'",
                "[possible values: cpudl, pullheap, cpupri, flat, all]",
            ],
        ),
        (
            row(&["--queue", "list"]),
            &["invalid value 'list' for '--queue <QUEUE>'", "[possible values: heap, btree]"],
        ),
        (
            row(&["--inject-fault", "all"]),
            &["invalid value 'all' for '--inject-fault <INJECT_FAULT>'", "cpudl-left-only"],
        ),
        (
            vec!["practise", "perf", "--no-store", "--cycle", "11s"],
            &["'--cycle <TIME>': 11s is out of range (10us ..= 10s)"],
        ),
        (
            vec!["practise", "replay", "x.rtt", "--no-store", "--queue", "rbtree"],
            &["invalid value 'rbtree' for '--queue <QUEUE>'"],
        ),
        (
            vec!["practise", "kernel", "--no-store", "-D", "5ms"],
            &["'--duration <TIME>': 5ms is out of range (10ms ..= 1d)"],
        ),
        (
            vec!["practise", "kernel", "--no-store", "--load", "io"],
            &["invalid value 'io' for '--load <LOAD>'", "[possible values: deadline, fifo, none]"],
        ),
    ];
    let bad: Vec<String> = rows
        .iter()
        .filter_map(|(args, want)| refused(args, want).err())
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The typed values reach the lab as given: durations with their units, the M list, the
/// choices (a short testing run: no privileges needed).
#[test]
fn practise_values_reach_the_run() {
    let o = run(&[
        "practise",
        "test",
        "--emulated-cpus",
        "1-2",
        "-D",
        "150ms",
        "--cycle",
        "1.5ms",
        "--check-every",
        "250us",
        "--structure",
        "flat",
        "--queue",
        "btree",
        "--policy",
        "edf",
        "--seed",
        "3",
        "--no-store",
        "--json",
        "-",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let rec: serde_json::Value = serde_json::from_str(&o.stdout).expect("stdout is JSON");
    let p = &rec["kind"]["practise"];
    assert_eq!(p["duration_per_run_ns"], 150_000_000u64, "{p}");
    assert_eq!(p["cycle_ns"], 1_500_000u64, "{p}");
    assert_eq!(p["check_every_ns"], 250_000u64, "{p}");
    assert_eq!(p["queue"], "btree", "{p}");
    assert_eq!(p["policy"], "edf", "{p}");
    assert_eq!(p["seed"], 3, "{p}");
    let runs = p["runs"].as_array().expect("runs");
    let mut got: Vec<(&str, u64)> = runs
        .iter()
        .map(|r| {
            let s = r["structure"].as_str().unwrap_or("");
            (s, r["emulated_cpus"].as_u64().unwrap_or(0))
        })
        .collect();
    got.sort_unstable();
    assert_eq!(got, vec![("flat", 1), ("flat", 2)], "{p}");
}

/// `--cpus-emulated` is the old spelling of `--emulated-cpus`: one notice, then the same end.
#[test]
fn cpus_emulated_still_works_with_a_notice() {
    for mode in ["test", "perf"] {
        let old = run(&["practise", mode, "--no-store", "--cpus-emulated", "x"]);
        let new = run(&["practise", mode, "--no-store", "--emulated-cpus", "x"]);
        let mut lines = old.stderr.lines().filter(|l| !l.trim().is_empty());
        assert_eq!(
            lines.next(),
            Some(
                format!(
                    "rtscope: warning: practise {mode} --cpus-emulated is deprecated, use \
                     --emulated-cpus (the old spelling goes in a later release)"
                )
                .as_str()
            ),
            "{}",
            old.stderr
        );
        let rest: Vec<&str> = lines.collect();
        assert_eq!(
            (old.code, new.code),
            (2, 2),
            "{}\n{}",
            old.stderr,
            new.stderr
        );
        assert_eq!(rest.join("\n"), new.stderr.trim_end(), "{mode}");
        assert!(
            new.stderr.contains("'--emulated-cpus <LIST>'"),
            "{}",
            new.stderr
        );
    }
}

/// The libraries still read a duration as text: what the cli hands over reads back as the same
/// nanoseconds, at the ranges' ends too.
#[test]
fn durations_reach_the_libraries_unchanged() {
    use rtscope_cli::cmd::common::duration_text;
    use rtscope_model::duration::parse_secs;
    for s in [
        "10us", "100us", "250us", "1ms", "1.5ms", "10ms", "150ms", "200ms", "0.3s", "5s", "10s",
        "10m", "24h", "1d", "30d", "1.25h", "0.1",
    ] {
        let d = Duration::from_secs_f64(parse_secs(s).expect(s));
        let text = duration_text(d);
        let back = Duration::from_secs_f64(parse_secs(&text).expect(&text));
        assert_eq!(back, d, "{s} → {text}");
    }
}

/// The benchmarks' durations are typed and suffixed: a bad value is refused by clap naming the
/// flag and its range; a value the library refuses names the flag too.
#[test]
fn bench_durations_refuse_bad_values_naming_the_flag() {
    refused_all(&[
        (
            &["pdlt", "--no-store", "--step", "0"],
            &["'--step <TIME>': 0 is out of range (10ns ..= 1s)"],
        ),
        (
            &["pdlt", "--no-store", "--step", "5"],
            &["'--step <TIME>': 5 is out of range (10ns ..= 1s)"],
        ),
        (
            &["pdlt", "--no-store", "--offsets", "5"],
            &[
                "invalid value '5' for '--offsets <START:END>'",
                "is not START:END",
            ],
        ),
        (
            &["pdlt", "--no-store", "--offsets", "-2us:11s"],
            &["'--offsets <START:END>': 11s is out of range (-10s ..= 10s)"],
        ),
        (
            &["pdlt", "--no-store", "--offsets", "-2us:x"],
            &["'--offsets <START:END>': 'x' is not a duration"],
        ),
        (
            &["rhealstone", "--no-store", "--timer-interval", "5us"],
            &["'--timer-interval <TIME>': 5us is out of range (10us ..= 10ms)"],
        ),
        (
            &["rhealstone", "--no-store", "--medium-burst", "20ms"],
            &["'--medium-burst <TIME>': 20ms is out of range (1us ..= 10ms)"],
        ),
        (
            &["doctor", "--no-store", "--target", "0"],
            &["'--target <TIME>': 0 is out of range (1us ..= 10ms)"],
        ),
        (
            &["doctor", "--no-store", "--target", "50"],
            &["'--target <TIME>': 50 is out of range (1us ..= 10ms)"],
        ),
        (
            &["mbwi", "run", "--no-store", "--tick", "2s"],
            &["'--tick <TIME>': 2s is out of range (0ns ..= 1s)"],
        ),
        (
            &["mbwi", "run", "--no-store", "--tick", "1.5us"],
            &["--tick: must be whole µs in 0 ..= 1s, got 1.5us"],
        ),
        (
            &["sched-scale", "--no-store", "--sleep", "20s"],
            &["'--sleep <TIME>': 20s is out of range (100us ..= 10s)"],
        ),
    ]);
}

/// Every unit-named duration flag's old spelling: one notice naming the old and the new flag,
/// then exactly what the new spelling with the old unit gives (the same set generated, the
/// same refusal).
#[test]
fn unit_named_durations_still_work_with_one_notice() {
    let d = tempfile::tempdir().expect("tmp");
    let set = d.path().join("set.json");
    std::fs::write(
        &set,
        br#"{"schema_version":1,"tasks":[{"id":0,"wcet_ns":1000000,"period_ns":10000000,"deadline_ns":10000000}]}"#,
    )
    .expect("write the set");
    let set = set.to_str().expect("utf-8");
    let gen_: &[&str] = &["taskset", "gen", "-u", "0.5", "-n", "3", "--cpu-count", "1"];
    let check: &[&str] = &["taskset", "check", set, "--no-probe", "--json", "-"];
    let sweep: &[&str] = &[
        "taskset",
        "sweep",
        "--placement",
        "partitioned",
        "--loads",
        "0.2",
        "--no-store",
    ];
    let run_: &[&str] = &["taskset", "run", set, "--no-store"];
    let mbwi: &[&str] = &["mbwi", "run", "--no-store"];
    let pdlt: &[&str] = &["pdlt", "--no-store"];
    let rh: &[&str] = &["rhealstone", "--no-store"];
    let doctor: &[&str] = &["doctor", "--no-store"];
    // (verb, old flag and value, new flag and value): the exit code each gives.
    let rows: &[Renamed] = &[
        (gen_, ["--tmin-ms", "5"], ["--tmin", "5ms"], 0),
        (gen_, ["--tmax-ms", "50"], ["--tmax", "50ms"], 0),
        (
            gen_,
            ["--periods-ms", "10,20"],
            ["--periods", "10ms,20ms"],
            0,
        ),
        (
            gen_,
            ["--period-gran-us", "1000"],
            ["--period-gran", "1000us"],
            0,
        ),
        (gen_, ["--cmin-us", "50"], ["--cmin", "50us"], 0),
        (check, ["--margin-us", "100"], ["--margin-add", "100us"], 0),
        (check, ["--inflate-us", "12.5"], ["--inflate", "12.5us"], 0),
        (
            run_,
            ["--margin-us", "200000"],
            ["--margin-add", "200000us"],
            2,
        ),
        (
            run_,
            ["--inflate-us", "100001"],
            ["--inflate", "100001us"],
            2,
        ),
        (sweep, ["--tmin-ms", "0"], ["--tmin", "0ms"], 2),
        (sweep, ["--tmax-ms", "7200000"], ["--tmax", "7200000ms"], 2),
        (sweep, ["--cmin-us", "20000"], ["--cmin", "20000us"], 2),
        (
            sweep,
            ["--margin-us", "100001"],
            ["--margin-add", "100001us"],
            2,
        ),
        (
            sweep,
            ["--rt-runtime-us", "2000000"],
            ["--rt-runtime", "2000000us"],
            2,
        ),
        (
            sweep,
            ["--rt-runtime-us", "-2"],
            ["--rt-runtime", "-2us"],
            2,
        ),
        (
            sweep,
            ["--fair-server-us", "4000000000"],
            ["--fair-server", "4000000000us"],
            2,
        ),
        (mbwi, ["--tick-us", "2000000"], ["--tick", "2000000us"], 2),
        (pdlt, ["--step-us", "2000000"], ["--step", "2000000us"], 2),
        (
            pdlt,
            ["--offsets-us", "-2:20000000"],
            ["--offsets", "-2us:20000000us"],
            2,
        ),
        (
            rh,
            ["--timer-interval-us", "5"],
            ["--timer-interval", "5us"],
            2,
        ),
        (
            rh,
            ["--medium-burst-us", "20000"],
            ["--medium-burst", "20000us"],
            2,
        ),
        (doctor, ["--target-us", "0"], ["--target", "0us"], 2),
    ];
    let mut bad = Vec::new();
    for (verb, old, new, code) in rows {
        let o = run(&[verb, &old[..]].concat());
        let n = run(&[verb, &new[..]].concat());
        let path = match verb[0] {
            "taskset" | "mbwi" => format!("{} {}", verb[0], verb[1]),
            v => v.to_string(),
        };
        let notice = format!(
            "rtscope: warning: {path} {} is deprecated, use {} (the old spelling goes in a later release)",
            old[0], new[0]
        );
        let lines: Vec<&str> = o.stderr.lines().collect();
        let notices = lines.iter().filter(|l| l.contains("deprecated")).count();
        let rest = lines.get(1..).unwrap_or_default().join("\n");
        if lines.first() != Some(&notice.as_str())
            || notices != 1
            || (o.code, n.code) != (*code, *code)
            || rest != n.stderr.trim_end()
            || o.stdout != n.stdout
            || (*code == 0 && o.stdout.is_empty())
        {
            bad.push(format!(
                "{old:?} vs {new:?}: exit {} / {}\n{}\n--- new:\n{}",
                o.code, n.code, o.stderr, n.stderr
            ));
        } else {
            println!("{old:?}: {}", lines.get(1).unwrap_or(&"(ok)"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

/// The first non-empty stderr line is the one notice for `old`, and no other line repeats it.
fn one_notice(o: &Measured, verb: &str, old: &str, new: &str) {
    let want = format!(
        "rtscope: warning: {verb} {old} is deprecated, use {new} (the old spelling goes in a \
         later release)"
    );
    let lines: Vec<&str> = o.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.first().copied(), Some(want.as_str()), "{}", o.stderr);
    assert_eq!(
        lines.iter().filter(|l| l.contains("deprecated")).count(),
        1,
        "{}",
        o.stderr
    );
}

/// The offline verbs' and the monitor's durations and address: typed, suffixed, each refused in
/// one line naming the flag and the range; no output file is written.
#[test]
fn offline_and_monitor_refuse_bad_values_naming_the_flag() {
    let d = tempfile::tempdir().expect("tmp");
    let json = d.path().join("out.json");
    let j = json.to_str().expect("utf-8");
    let rtt = d.path().join("t.rtt");
    let t = rtt.to_str().expect("utf-8");
    std::fs::write(&rtt, b"").expect("an empty trace");
    let analyze = |extra: &'static [&'static str]| -> Vec<&str> {
        [&["analyze", t, "--json", j][..], extra].concat()
    };
    let bound = |extra: &'static [&'static str]| -> Vec<&str> {
        [&["bound", "--trace", t, "--json", j][..], extra].concat()
    };
    let monitor = |extra: &'static [&'static str]| -> Vec<&str> {
        [
            &["monitor", "--no-store", "-D", "5s", "--json", j][..],
            extra,
        ]
        .concat()
    };
    let rows: Vec<(Vec<&str>, &[&str])> = vec![
        (
            analyze(&["--gap-threshold", "0us"]),
            &["'--gap-threshold <TIME>': 0us is out of range (1us ..= 1s)"],
        ),
        (
            analyze(&["--gap-threshold", "100"]),
            &["'--gap-threshold <TIME>': 100 is out of range (1us ..= 1s)"],
        ),
        (
            analyze(&["--busy-gap-threshold", "2s"]),
            &["'--busy-gap-threshold <TIME>': 2s is out of range (1us ..= 1s)"],
        ),
        (
            analyze(&["--tail-threshold", "2h"]),
            &["'--tail-threshold <TIME>': 2h is out of range (0ns ..= 1h)"],
        ),
        (
            analyze(&["--tail-threshold", "x"]),
            &[
                "invalid value 'x' for '--tail-threshold <TIME>'",
                "'x' is not a duration",
            ],
        ),
        (
            bound(&["--assume-thread", "2s"]),
            &["'--assume-thread <TIME>': 2s is out of range (1ns ..= 1s)"],
        ),
        (
            bound(&["--cap", "5000"]),
            &["'--cap <TIME>': '5000' has no unit", "write 5000ns"],
        ),
        (
            bound(&["--cap", "2h"]),
            &["'--cap <TIME>': 2h is out of range (1us ..= 1h)"],
        ),
        (
            monitor(&["--window", "500ms"]),
            &["'--window <TIME>': 500ms is out of range (1s ..= 1d)"],
        ),
        (
            monitor(&["--window", "2d"]),
            &["'--window <TIME>': 2d is out of range (1s ..= 1d)"],
        ),
        (
            monitor(&["--listen", "localhost:9464"]),
            &["'--listen <ADDRESS:PORT>': 'localhost:9464' is not ADDRESS:PORT"],
        ),
        (
            monitor(&["--trace-burst", "10s"]),
            &["'--trace-burst <LENGTH/EVERY>': expected LENGTH/EVERY"],
        ),
        (
            monitor(&["--trace-burst", "2h/3h"]),
            &["'--trace-burst <LENGTH/EVERY>': LENGTH 2h is out of range (1s ..= 1h)"],
        ),
    ];
    let bad: Vec<String> = rows
        .iter()
        .filter_map(|(args, want)| refused(args, want).err())
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(!json.exists(), "a refused verb wrote its output");
}

/// `analyze`'s µs flags and `bound --assume-thread-ns` still work: the bare number keeps its old
/// unit (the run is the new spelling's, figure for figure), with one notice each.
#[test]
fn unit_named_durations_still_work_with_a_notice() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../session/tests/corpus/rtt/record-1s.rtt"
    );
    let json = |o: &Measured| -> serde_json::Value {
        assert_eq!(o.code, 0, "{}", o.stderr);
        serde_json::from_str(&o.stdout).expect("stdout is JSON")
    };
    for (old, value, new, typed, field) in [
        (
            "--gap-threshold-us",
            "50",
            "--gap-threshold",
            "50us",
            "/attribution/gap_threshold_ns",
        ),
        (
            "--busy-gap-threshold-us",
            "3000",
            "--busy-gap-threshold",
            "3ms",
            "/attribution/busy_gap_threshold_ns",
        ),
        (
            "--threshold-us",
            "20",
            "--tail-threshold",
            "20us",
            "/attribution/summary/tail_threshold_ns",
        ),
    ] {
        let o = run(&["analyze", file, old, value, "--json", "-"]);
        one_notice(&o, "analyze", old, new);
        let n = run(&["analyze", file, new, typed, "--json", "-"]);
        assert!(!n.stderr.contains("deprecated"), "{}", n.stderr);
        let (o, n) = (json(&o), json(&n));
        let ns = rtscope_model::duration::parse_secs(typed).expect(typed) * 1e9;
        assert_eq!(
            o.pointer(field),
            Some(&serde_json::json!(ns.round() as u64)),
            "{old}"
        );
        assert_eq!(o.pointer(field), n.pointer(field), "{old}");
        assert_eq!(
            o["attribution"]["summary"], n["attribution"]["summary"],
            "{old}"
        );
    }
    // The glued form (`--flag=VALUE`) too.
    let o = run(&["analyze", file, "--gap-threshold-us=5"]);
    one_notice(&o, "analyze", "--gap-threshold-us", "--gap-threshold");
    assert!(
        o.stdout
            .contains("warning: --gap-threshold 5us: below the relevance filter's 10 us split"),
        "{}",
        o.stdout
    );

    let o = run(&[
        "bound",
        "--trace",
        file,
        "--assume-thread-ns",
        "20000",
        "--json",
        "-",
    ]);
    one_notice(&o, "bound", "--assume-thread-ns", "--assume-thread");
    let n = run(&[
        "bound",
        "--trace",
        file,
        "--assume-thread",
        "20us",
        "--json",
        "-",
    ]);
    let (o, n) = (json(&o), json(&n));
    assert_eq!(o, n);
    assert!(o.to_string().contains("20000"), "{o}");
    // A bad old value is refused as the new flag's, after the notice.
    let o = run(&["bound", "--trace", file, "--assume-thread-ns", "0"]);
    one_notice(&o, "bound", "--assume-thread-ns", "--assume-thread");
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("'--assume-thread <TIME>': 0ns is out of range (1ns ..= 1s)"),
        "{}",
        o.stderr
    );
}
