//! `taskset sweep` end to end in a 4-CPU guest (emulated: QEMU TCG, one host thread for every
//! vCPU, guest clock from the instruction count): the thesis' heaviest global point, U = 3.9 on
//! 4 CPUs (0.975 per CPU), above what 6.12 admits by default (4 × (0.95 − 0.05) = 3.6), run with
//! the sweep's kernel setting (sched_rt_runtime_us = -1: SCHED_DEADLINE admission off; the
//! `trace` kernel has no SCHED_DEBUG, so its fair server cannot be lowered instead), both
//! policies run, the setting written back, one record brought home with the per-point table.
//! Misses are not checked: with 4 vCPUs taking turns on one host thread they are mostly the
//! emulation's (docs/tasksets.md, "The thesis' parameters in the lab").

use rtscope_testkit::lab::{icount_record_smp, ready};
use rtscope_testkit::{bin, need_root};

#[test]
fn a_global_sweep_at_the_thesis_load_runs_in_a_four_cpu_guest() {
    need_root!("QEMU guest with SCHED_DEADLINE inside");
    if !ready(bin!(), "trace") {
        return;
    }
    let verb = [
        "taskset",
        "sweep",
        "--placement",
        "global",
        "--loads",
        "3.9",
        "--sets",
        "2",
        "--policies",
        "deadline,other",
        "-D",
        "1s",
        "--rt-runtime",
        "-1",
    ];
    let rec = icount_record_smp(bin!(), "trace", None, "4", &verb, "sweep.json");
    let r = &rec["kind"]["taskset_sweep"];
    assert_eq!(r["config"]["cpus"], serde_json::json!([0, 1, 2, 3]), "{r}");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "2 sets × 2 policies: {r}");
    for run in runs {
        // Admitted (admission off), run to the end.
        assert_eq!(run["status"], "ok", "{run}");
        assert!(
            (run["utilisation"].as_f64().unwrap() - 3.9).abs() < 1e-6,
            "{run}"
        );
        assert!(
            run["jobs"].as_u64().unwrap() >= 12 * 10,
            "≥ 10 jobs per task: {run}"
        );
        let m = run["misses"].as_u64().unwrap();
        assert!(m <= run["jobs"].as_u64().unwrap(), "{run}");
        if run["policy"] == "other" {
            assert_eq!(run["dl_overruns"], 0, "{run}");
        }
    }
    let points = r["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{r}");
    for p in points {
        assert_eq!(p["sets"], 2, "{p}");
        assert!(p["ci95_half_pct"].is_number(), "{p}");
    }
    // sched_rt_runtime_us set for the sweep and written back; the admission facts read after.
    let ks = r["kernel_settings"].as_array().unwrap();
    assert_eq!(ks.len(), 1, "{r}");
    assert_eq!(ks[0]["path"], "/proc/sys/kernel/sched_rt_runtime_us");
    assert_eq!(
        (&ks[0]["before"], &ks[0]["during"]),
        (&"950000".into(), &"-1".into())
    );
    assert_eq!(ks[0]["restored"], true, "{r}");
    assert_eq!(r["admission"]["limit_per_cpu"], 1.0, "{r}");
}
