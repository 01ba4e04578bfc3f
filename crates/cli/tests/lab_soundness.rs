//! The soundness experiment in miniature (docs/bound.md, "Calibrate, then validate"): one boot of
//! the lab's `trace` kernel computes the bound (`measure --trace bpf --bound`, the time-to-bound
//! series), a second, independent boot of the same kernel only measures the same way, and the
//! calibrated bound must cover every latency of the second boot. Skipped only when QEMU is
//! missing; a missing `trace` kernel is a failure (the suite's set-up builds it).

use rtscope_analysis::soundness::{analyze, Role};
use rtscope_testkit::bin;
use rtscope_testkit::lab::{icount_record, ready};

/// One boot: `trace` booted full, `--icount --smp 1`, 20 s of emulated time, idle.
fn boot(name: &str) -> rtscope_model::RunRecord {
    let v = icount_record(
        bin!(),
        "trace",
        Some("full"),
        &[
            "measure",
            "--trace",
            "bpf",
            "--bound",
            "--bound-points",
            "40",
            "-D",
            "20s",
            "-q",
        ],
        name,
    );
    rtscope_model::record::decode_run_record(&v.to_string()).expect("a run record")
}

#[test]
fn a_calibrated_bound_covers_a_second_boot() {
    if !ready(bin!(), "trace") {
        return;
    }
    let t0 = std::time::Instant::now();
    let mut runs = vec![boot("calibration.json"), boot("validation.json")];
    // The tags the lab stores with a run (and a campaign file's `[tags]`), which `--no-store`
    // leaves out of the JSON the verb wrote.
    for (r, role) in runs.iter_mut().zip([Role::Calibration, Role::Validation]) {
        for (k, v) in [
            ("experiment", "calibrate-validate"),
            ("kernel_preset", "trace"),
            ("preempt", "full"),
            ("lab_smp", "1"),
            (
                "role",
                match role {
                    Role::Calibration => "calibration",
                    Role::Validation => "validation",
                },
            ),
        ] {
            r.tags.insert(k.into(), v.into());
        }
    }
    let bound = runs[0]
        .measurement()
        .and_then(|m| m.bound.clone())
        .expect("the calibration boot has a bound");
    assert!(bound.sound, "{:?}", bound.not_sound_because);
    assert!(!bound.estimate);
    let results = analyze(&runs, &[10.0, 20.0]);
    let table = rtscope_report::soundness::markdown(&results);
    println!(
        "{table}\n{:?}\n(two boots took {:.1} s)",
        rtscope_report::soundness::findings(&results),
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(results.len(), 1, "{results:?}");
    let r = &results[0];
    assert_eq!(
        (r.key.kernel.as_str(), r.key.load.as_str()),
        ("trace", "idle")
    );
    assert_eq!(r.calibration_runs, [runs[0].id.clone()]);
    assert_eq!(r.validation_runs, [runs[1].id.clone()]);
    // 20 s at the default 1 ms period.
    assert!(r.validation_samples >= 19_000, "{r:?}");
    // The calibrated sliding-window bound converged at 10 s and at the run's end, and no
    // latency of the other boot lies above any converged bound.
    for p in &r.prefixes {
        assert_eq!(p.bounds_ns.len(), 1);
        assert!(
            p.bounds_ns[0].is_some(),
            "not converged at {:?}: {r:?}",
            p.prefix_s
        );
    }
    assert!(r.finals[4].bounds_ns[0].is_some(), "{r:?}");
    assert_eq!(r.violations(), 0, "{table}");
    assert!(r.time_to_cover_s.max.is_some(), "{r:?}");
}
