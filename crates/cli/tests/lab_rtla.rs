//! rtla's ground in the lab: `measure --probe timerlat` and `noise` run in the `trace` kernel
//! (6.12, timerlat and osnoise tracers) with the real `rtla` (Debian's package, put into the
//! guest with `lab run --guest-bin rtla`) running beside them on the same tracer
//! (`--alongside`). rtla starts 2 s before the verb and ends after it, so every sample rtscope
//! reads was also read by rtla (the kernel writes each tracer entry into every instance running
//! the tracer): rtscope's figures must lie inside rtla's — counts no larger, maxima no larger,
//! minima no smaller, and for the thread latency every 1 µs bucket no fuller. A decoding error
//! (a wrong field, unit or context) breaks these at once. And the tracers' settings are back at
//! their values after a run and after SIGINT.
//!
//! A missing kernel, QEMU or rtla fails these tests: `scripts/setup.sh` installs all three.

use rtscope_testkit::lab::{ready, run, text};
use rtscope_testkit::{bin, need_root, tmp};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// QEMU, rtla and the trace kernel must all be here (the suite's set-up installs and builds them).
fn lab_ready() {
    assert!(
        Path::new("/usr/bin/rtla").is_file(),
        "rtla is missing: apt-get install rtla (scripts/setup.sh installs it)"
    );
    assert!(
        ready(bin!(), "trace"),
        "qemu-system-x86_64 is missing (scripts/setup.sh installs it)"
    );
}

/// `lab run --kernel trace --smp 2 --single-thread [--guest-bin rtla] --alongside CMD -- VERB…`; the guest's
/// /out on the host. One retry when the guest died before reaching the verb (the rare boot
/// panic of docs/lab.md): that is the emulator's, not the verb's.
fn lab(d: &Path, alongside: &str, rtla: bool, verb: &[&str]) -> PathBuf {
    let out = d.join("res");
    let mut args = vec![
        "lab",
        "run",
        "--kernel",
        "trace",
        "--smp",
        "2",
        // One TCG thread: the tracers switch tracepoints on and off (text_poke_bp), which under
        // one host thread per vCPU can oops the guest on a stale int3 (docs/lab.md).
        "--single-thread",
        "--no-store",
        "-q",
        "--out",
        out.to_str().unwrap(),
        "--alongside",
        alongside,
    ];
    if rtla {
        args.extend(["--guest-bin", "rtla"]);
    }
    args.push("--");
    args.extend(verb);
    for attempt in 0..2 {
        let o = run(bin!(), &args, d);
        let (so, se) = (text(&o.stdout), text(&o.stderr));
        let dirs: Vec<PathBuf> = std::fs::read_dir(&out)
            .map(|r| {
                r.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default();
        if o.status.success() {
            assert_eq!(dirs.len(), 1, "{dirs:?}");
            let dir = dirs[0].clone();
            let console = std::fs::read_to_string(dir.join("console.log")).unwrap();
            assert!(
                console.contains("RTSCOPE-LAB-ALONGSIDE-EXIT=0"),
                "the reference command failed:\n{}",
                std::fs::read_to_string(dir.join("alongside.log")).unwrap_or_default()
            );
            return dir;
        }
        // The console of a failed guest: a retry only when it never reached /init's verb.
        let console: String = std::fs::read_dir(&out)
            .map(|r| {
                r.flatten()
                    .filter(|e| {
                        e.file_name()
                            .to_string_lossy()
                            .ends_with("failed-console.log")
                    })
                    .filter_map(|e| std::fs::read_to_string(e.path()).ok())
                    .collect()
            })
            .unwrap_or_default();
        let booted = se.contains("reached the verb") || console.contains("RTSCOPE-LAB-START");
        assert!(
            attempt == 0 && !booted,
            "lab run failed:\n{so}\n{se}\n{console}"
        );
        eprintln!("guest died before the verb (boot panic); retrying once:\n{se}");
        let _ = std::fs::remove_dir_all(&out);
    }
    unreachable!()
}

/// `rtla timerlat hist` output: per column (`IRQ-000`, `Thr-000`, …) the bucket counts and the
/// summary rows (`over:`, `count:`, `min:`, `avg:`, `max:`).
#[derive(Debug, Default)]
struct RtlaHist {
    buckets: BTreeMap<String, BTreeMap<u64, u64>>,
    summary: BTreeMap<String, BTreeMap<String, u64>>,
}

fn parse_rtla_hist(s: &str) -> RtlaHist {
    let mut h = RtlaHist::default();
    let mut cols: Vec<String> = Vec::new();
    for line in s.lines() {
        let p: Vec<&str> = line.split_whitespace().collect();
        let Some(first) = p.first() else { continue };
        if *first == "Index" {
            cols = p[1..].iter().map(|c| c.to_string()).collect();
        } else if !cols.is_empty() {
            if let Ok(b) = first.parse::<u64>() {
                for (c, v) in cols.iter().zip(&p[1..]) {
                    let v: u64 = v.parse().unwrap();
                    h.buckets.entry(c.clone()).or_default().insert(b, v);
                }
            } else if let Some(k) = first.strip_suffix(':') {
                for (c, v) in cols.iter().zip(&p[1..]) {
                    if let Ok(v) = v.parse::<u64>() {
                        h.summary
                            .entry(c.clone())
                            .or_default()
                            .insert(k.to_string(), v);
                    }
                }
            }
        }
    }
    h
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn timerlat_lies_inside_rtla_timerlat_hist_on_the_same_samples() {
    need_root!("QEMU guest, tracers inside");
    lab_ready();
    let d = tmp();
    // rtla: 7 s from 2 s before rtscope's 3 s; 1 µs buckets up to 10 ms, as --linear-max.
    let dir = lab(
        d.path(),
        "rtla timerlat hist -d 7 -c 0-1 -p 1000 -E 10000",
        true,
        &[
            "measure",
            "--probe",
            "timerlat",
            "-D",
            "3s",
            "-i",
            "1000",
            "--cpus",
            "0-1",
            "--no-store",
            "-q",
            "--json",
            "/out/tl.json",
        ],
    );
    let rec: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tl.json")).unwrap()).unwrap();
    let rt = parse_rtla_hist(&std::fs::read_to_string(dir.join("alongside.log")).unwrap());
    let tl = &rec["kind"]["measurement"]["timerlat"];
    assert!(tl.is_object(), "{rec}");
    assert_eq!(u(&tl["period_us"]), 1000);
    assert_eq!(u(&tl["lost_events"]), 0);
    let mut report = Vec::new();
    for t in rec["kind"]["measurement"]["threads"].as_array().unwrap() {
        let cpu = u(&t["cpu"]);
        let c = &tl["cpus"][cpu as usize];
        assert_eq!(u(&c["cpu"]), cpu);
        assert_eq!(u(&c["seq_gaps"]), 0, "{c}");
        for (side, col, ours) in [
            ("irq", format!("IRQ-{cpu:03}"), &c["irq_stats"]),
            ("thread", format!("Thr-{cpu:03}"), &c["thread_stats"]),
        ] {
            let r = &rt.summary[&col];
            let n = u(&ours["samples"]);
            // 3 s at 1 ms; TCG slows the guest's timers, never below a third.
            assert!(n >= 1000, "{side} CPU {cpu}: {n} samples");
            assert!(
                n <= r["count"],
                "{side} CPU {cpu}: {n} > rtla's {}",
                r["count"]
            );
            let (max_us, min_us) = (u(&ours["max_ns"]) / 1000, u(&ours["min_ns"]) / 1000);
            assert!(
                max_us <= r["max"],
                "{side} CPU {cpu}: max {max_us} > rtla's {}",
                r["max"]
            );
            assert!(
                min_us >= r["min"],
                "{side} CPU {cpu}: min {min_us} < rtla's {}",
                r["min"]
            );
            report.push(format!(
                "CPU {cpu} {side}: rtscope {n} samples max {max_us} us, rtla {} samples max {} us",
                r["count"], r["max"]
            ));
        }
        // The thread side: every 1 µs bucket of ours within rtla's, the overflow too.
        assert_eq!(u(&t["cycles"]), u(&c["thread_stats"]["samples"]));
        let col = format!("Thr-{cpu:03}");
        let theirs = rt.buckets.get(&col).cloned().unwrap_or_default();
        let mut inside = 0;
        for b in t["linear"]["buckets"].as_array().unwrap() {
            let (bucket, n) = (u(&b[0]), u(&b[1]));
            let r = theirs.get(&bucket).copied().unwrap_or(0);
            assert!(n <= r, "CPU {cpu} bucket {bucket} us: {n} > rtla's {r}");
            inside += n;
        }
        assert!(u(&t["linear"]["overflow"]) <= rt.summary[&col]["over"]);
        assert_eq!(inside + u(&t["linear"]["overflow"]), u(&t["cycles"]));
        assert_eq!(t["observed_policy"], "fifo");
        assert_eq!(t["observed_priority"], 95);
    }
    println!("{}", report.join("\n"));
}

/// `rtla osnoise top -q` output: per CPU the columns Period (#N), Runtime, Noise, % CPU Aval,
/// Max Noise, Max Single, HW, NMI, IRQ, Softirq, Thread.
fn parse_rtla_top(s: &str) -> BTreeMap<u64, Vec<f64>> {
    let mut out = BTreeMap::new();
    for line in s.lines() {
        let p: Vec<&str> = line.split_whitespace().collect();
        if p.len() == 12 && p[1].starts_with('#') {
            if let Ok(cpu) = p[0].parse::<u64>() {
                let mut v = vec![p[1][1..].parse::<f64>().unwrap()];
                v.extend(p[2..].iter().map(|x| x.parse::<f64>().unwrap()));
                out.insert(cpu, v);
            }
        }
    }
    out
}

#[test]
fn noise_lies_inside_rtla_osnoise_top_on_the_same_periods() {
    need_root!("QEMU guest, tracers inside");
    lab_ready();
    let d = tmp();
    let dir = lab(
        d.path(),
        "rtla osnoise top -q -d 7 -c 0-1 -p 500000 -r 400000 -T 10",
        true,
        &[
            "noise",
            "-D",
            "3s",
            "--cpus",
            "0-1",
            "--period",
            "500000",
            "--runtime",
            "400000",
            "--threshold",
            "10",
            "--no-store",
            "-q",
            "--json",
            "/out/noise.json",
        ],
    );
    let rec: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("noise.json")).unwrap()).unwrap();
    let rt = parse_rtla_top(&std::fs::read_to_string(dir.join("alongside.log")).unwrap());
    let n = &rec["kind"]["noise"];
    assert!(n.is_object(), "{rec}");
    assert_eq!(u(&n["lost_events"]), 0);
    let mut report = Vec::new();
    for c in n["cpus"].as_array().unwrap() {
        let cpu = u(&c["cpu"]);
        let r = &rt[&cpu];
        let periods = u(&c["periods"]);
        // 3 s of 0.5 s periods: 4 to 6 whole ones (TCG stretches them a little).
        assert!((3..=7).contains(&periods), "CPU {cpu}: {periods} periods");
        let pairs = [
            ("periods", periods, r[0]),
            ("runtime_us", u(&c["runtime_us"]), r[1]),
            ("noise_us", u(&c["noise_us"]), r[2]),
            ("max_period_noise_us", u(&c["max_period_noise_us"]), r[4]),
            ("max_single_noise_us", u(&c["max_single_noise_us"]), r[5]),
            ("hw_count", u(&c["hw_count"]), r[6]),
            ("nmi_count", u(&c["nmi_count"]), r[7]),
            ("irq_count", u(&c["irq_count"]), r[8]),
            ("softirq_count", u(&c["softirq_count"]), r[9]),
            ("thread_count", u(&c["thread_count"]), r[10]),
        ];
        for (what, ours, theirs) in pairs {
            assert!(
                ours as f64 <= theirs,
                "CPU {cpu} {what}: {ours} > rtla's {theirs}"
            );
        }
        // Each period's entry is the same entry in both: the runtime per period agrees
        // (the tracer runs 400 000 µs per period, a little more when a noise overlaps the end).
        let (ours_pp, theirs_pp) = (u(&c["runtime_us"]) as f64 / periods as f64, r[1] / r[0]);
        assert!(
            (ours_pp - theirs_pp).abs() / theirs_pp < 0.05,
            "CPU {cpu}: runtime per period {ours_pp} vs rtla's {theirs_pp}"
        );
        assert!(
            (c["cpu_available_pct"].as_f64().unwrap()
                - 100.0 * (1.0 - u(&c["noise_us"]) as f64 / u(&c["runtime_us"]) as f64))
                .abs()
                < 1e-6
        );
        // The sources (events) against the tracer's counters (its entries): the IRQ events
        // of the periods read cannot be many more than the counted IRQs, nor many fewer (the
        // first period read began before rtscope's instance existed).
        let irq_events: u64 = n["sources"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| u(&s["cpu"]) == cpu && s["kind"] == "irq")
            .map(|s| u(&s["count"]))
            .sum();
        let counted = u(&c["irq_count"]);
        assert!(
            irq_events as f64 >= 0.5 * counted as f64 && irq_events as f64 <= 1.5 * counted as f64,
            "CPU {cpu}: {irq_events} irq_noise events vs {counted} counted IRQs"
        );
        report.push(format!(
            "CPU {cpu}: rtscope {periods} periods, runtime {} us, noise {} us, max single {} us, irq {} ({irq_events} events); rtla {} periods, runtime {}, noise {}, max single {}, irq {}",
            u(&c["runtime_us"]), u(&c["noise_us"]), u(&c["max_single_noise_us"]), counted,
            r[0], r[1], r[2], r[5], r[8]
        ));
    }
    println!("{}", report.join("\n"));
}

/// The guest sets every osnoise file and tracing_thresh to odd values, runs the verb (a `noise`
/// run its `--stop` ends, then `measure --probe timerlat` stopped by SIGINT; then a `noise` SIGKILLed
/// and the next verb repairing what it left), and reads them back.
#[test]
fn tracer_settings_are_restored_after_a_run_and_after_sigint() {
    need_root!("QEMU guest, tracers inside");
    lab_ready();
    let d = tmp();
    let t = "/sys/kernel/tracing";
    let set = format!(
        "echo 1 > {t}/osnoise/cpus; echo 700 > {t}/osnoise/timerlat_period_us; \
         echo 1500000 > {t}/osnoise/period_us; echo 1200000 > {t}/osnoise/runtime_us; \
         echo 3 > {t}/tracing_thresh; echo 0 > {t}/osnoise/stop_tracing_us; \
         echo NO_OSNOISE_WORKLOAD > {t}/osnoise/options"
    );
    let dump = format!(
        "for f in osnoise/cpus osnoise/timerlat_period_us osnoise/period_us osnoise/runtime_us \
         osnoise/stop_tracing_us osnoise/stop_tracing_total_us osnoise/print_stack tracing_thresh \
         current_tracer; do echo \"$f=$(cat {t}/$f)\"; done; echo \"instances=$(ls {t}/instances)\"; \
         echo \"workload=$(grep -o '[A-Z_]*OSNOISE_WORKLOAD' {t}/osnoise/options)\""
    );
    let expected = "osnoise/cpus=1\nosnoise/timerlat_period_us=700\nosnoise/period_us=1500000\nosnoise/runtime_us=1200000\nosnoise/stop_tracing_us=0\nosnoise/stop_tracing_total_us=0\nosnoise/print_stack=0\ntracing_thresh=3\ncurrent_tracer=nop\ninstances=\nworkload=NO_OSNOISE_WORKLOAD\n";
    // A run the tracer ends itself (--stop: the first single noise of 20 µs; under TCG the
    // local timer alone takes longer), the dump 5 s after the verb started.
    let dir = lab(
        d.path(),
        &format!("{set}; sleep 7; {dump}"),
        false,
        &[
            "noise",
            "-D",
            "60s",
            "--cpus",
            "0-1",
            "--period",
            "100000",
            "--runtime",
            "50000",
            "--threshold",
            "5",
            "--stop",
            "20",
            "--no-store",
            "-q",
            "--json",
            "/out/noise.json",
        ],
    );
    let got = std::fs::read_to_string(dir.join("alongside.log")).unwrap();
    assert_eq!(got, expected);
    let rec: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("noise.json")).unwrap()).unwrap();
    assert_eq!(
        rec["kind"]["noise"]["stopped_by_tracer"], true,
        "{}",
        rec["kind"]["noise"]
    );
    assert!(
        rec["wall_duration_s"].as_f64().unwrap() < 5.0,
        "{}",
        rec["wall_duration_s"]
    );
    assert!(rec["warnings"]
        .to_string()
        .contains("the tracer stopped itself"));
    // A typed warning, its threshold named by the flag.
    assert!(
        rec["warnings"]
            .as_array()
            .is_some_and(|ws| ws.iter().any(|w| w["code"] == "tracer_stopped"
                && w["message"]
                    .as_str()
                    .is_some_and(|m| m.ends_with("--stop 20 us")))),
        "{}",
        rec["warnings"]
    );
    // SIGINT 1.5 s into a 60 s timerlat run.
    let d = tmp();
    let dir = lab(
        d.path(),
        &format!("{set}; sleep 3.5; kill -INT $(pidof rtscope); sleep 2; {dump}"),
        false,
        &[
            "measure",
            "--probe",
            "timerlat",
            "-D",
            "60s",
            "-i",
            "200",
            "--priority",
            "90",
            "--no-store",
            "-q",
            "--json",
            "/out/tl.json",
        ],
    );
    let got = std::fs::read_to_string(dir.join("alongside.log")).unwrap();
    assert_eq!(got, expected);
    let rec: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tl.json")).unwrap()).unwrap();
    assert_eq!(rec["end_reason"], "interrupted");
    let m = &rec["kind"]["measurement"];
    assert_eq!(u(&m["timerlat"]["period_us"]), 200);
    assert_eq!(m["timerlat"]["thread_priority"], 90);
    assert!(u(&m["stats"]["samples"]) > 100, "{}", m["stats"]);
    // SIGKILL skips every clean-up: the next verb that runs work puts the settings back.
    let d = tmp();
    let dir = lab(
        d.path(),
        &format!(
            "{set}; /bin/rtscope noise -D 60s --period 100000 --runtime 50000 -T 5 --no-store -q >/dev/null 2>&1 & \
             sleep 1; kill -KILL $!; sleep 0.3; echo \"killed: $(cat {t}/osnoise/period_us) $(ls {t}/instances)\"; \
             sleep 4; {dump}"
        ),
        false,
        &[
            "measure", "--probe", "timerlat", "-D", "1s", "--no-store", "-q", "--json",
            "/out/tl.json",
        ],
    );
    let got = std::fs::read_to_string(dir.join("alongside.log")).unwrap();
    let (killed, after) = got.split_once('\n').unwrap();
    assert!(killed.starts_with("killed: 100000 rtscope-"), "{got}");
    assert_eq!(after, expected, "{got}");
    let rec: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tl.json")).unwrap()).unwrap();
    let w = rec["warnings"].to_string();
    assert!(
        w.contains("removed stale tracefs instance rtscope-")
            // `w` is JSON text: the quotes around the value are escaped.
            && w.contains(r#"osnoise/period_us written back to \"1500000\""#)
            && w.contains("left by a killed run"),
        "{w}"
    );
}

/// On the host: a kernel without the tracers (this one) refuses both verbs with exit 2 and one
/// line naming the tracer and the lab command; bad flags are refused before the tracer is looked
/// for. (A host whose kernel has the tracers runs them.)
#[test]
fn without_the_tracer_the_verbs_exit_2_naming_it_and_the_lab() {
    let d = tmp();
    let avail =
        std::fs::read_to_string("/sys/kernel/tracing/available_tracers").unwrap_or_default();
    for (args, tracer) in [
        (
            &["measure", "--probe", "timerlat", "-D", "1s", "--no-store"][..],
            "timerlat",
        ),
        (&["noise", "-D", "1s", "--no-store"][..], "osnoise"),
    ] {
        let o = run(bin!(), args, d.path());
        let err = text(&o.stderr);
        if avail.split_whitespace().any(|t| t == tracer) {
            assert!(o.status.success(), "{err}");
            continue;
        }
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("the {tracer} tracer is not available"))
                && err.contains(&format!(
                    "rtscope lab run --kernel trace -- {}",
                    args.join(" ")
                )),
            "{err}"
        );
    }
    for (args, flag) in [
        (
            &["measure", "--probe", "timerlat", "-i", "50"][..],
            "--interval",
        ),
        (
            &["measure", "--probe", "timerlat", "--trace", "bpf"][..],
            "--trace",
        ),
        (
            &["noise", "--period", "1000", "--runtime", "2000"][..],
            "--runtime",
        ),
        (&["noise", "--min-noise", "0"][..], "--min-noise"),
    ] {
        let o = run(bin!(), args, d.path());
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(flag) && err.lines().count() == 1, "{err}");
    }
}
