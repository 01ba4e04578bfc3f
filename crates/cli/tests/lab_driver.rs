//! The lab's test driver (`rtscope_lab.ko`, crates/lab/module): heursch-2001's device interrupt
//! and its driver call with N preemption points, in the `trace` and `rt-trace` kernels under
//! `-icount` (guest time counts instructions, so the figures do not depend on the host's load).
//!
//! The paper's findings these tests hold the driver to (§2.7, Figs. 3–8): without a preemption
//! point a non-preemptible kernel draws one triangle over the whole call, falling with slope −1;
//! N points draw N + 1 smaller ones; a preemptible kernel (preempt=full, PREEMPT_RT) draws none.

use rtscope_testkit::lab::{has_kernel, icount_record, ready, run, text};
use rtscope_testkit::{bin, need_root, tmp};
use serde_json::Value;

fn scan(rec: &Value) -> &Value {
    let r = &rec["kind"]["pdlt"];
    assert_eq!(r["syscall"], "driver", "{r}");
    &r["scans"][0]
}

/// (triangles, the largest PDLT during the call in µs, the call's median in µs).
fn shape(sc: &Value) -> (usize, f64, f64) {
    let dur = sc["syscall_calibration"]["median_ns"].as_f64().unwrap();
    let max_in = sc["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            let o = p["offset_ns"].as_f64().unwrap();
            o >= 0.0 && o < 0.95 * dur
        })
        .map(|p| p["pdlt_ns"].as_f64().unwrap())
        .fold(0.0, f64::max);
    (
        sc["triangles"].as_array().unwrap().len(),
        max_in / 1e3,
        dur / 1e3,
    )
}

#[test]
fn the_driver_draws_the_papers_triangles_and_a_preemptible_kernel_none() {
    need_root!("QEMU guests");
    if !ready(bin!(), "trace") {
        return;
    }
    let verb = |points: &'static str| -> Vec<&'static str> {
        vec![
            "pdlt",
            "--syscall",
            "driver",
            "--size",
            "20000",
            "--points",
            points,
            "--step",
            "10us",
        ]
    };
    // Fig. 3: no preemption point, preempt=none: one triangle as long as the call.
    let rec = icount_record(bin!(), "trace", Some("none"), &verb("0"), "p0.json");
    let sc = scan(&rec);
    let (tri, max_in, dur) = shape(sc);
    assert_eq!(tri, 1, "{sc}");
    assert!(max_in > 0.9 * dur, "max {max_in} µs during a {dur} µs call");
    let slope = sc["triangles"][0]["slope"].as_f64().unwrap();
    assert!((slope + 1.0).abs() < 0.05, "slope {slope}");
    // Every point has the device interrupt's response, far below the PDLT.
    for p in sc["points"].as_array().unwrap() {
        let irt = p["irt_ns"].as_u64().expect("irt_ns on every driver point");
        assert!(irt > 0 && irt < 20_000, "{p}");
    }
    // Fig. 6: two points split it into three triangles, each about a third as high.
    let rec = icount_record(bin!(), "trace", Some("none"), &verb("2"), "p2.json");
    assert_eq!(rec["kind"]["pdlt"]["preemption_points"], 2);
    let (tri, max_in, dur) = shape(scan(&rec));
    assert_eq!(tri, 3, "{}", scan(&rec));
    assert!(
        max_in < 0.5 * dur && max_in > 0.2 * dur,
        "max {max_in} µs, call {dur} µs"
    );
    // Fig. 4 and the RT kernel: no triangle, the PDLT stays near its baseline. The suite's
    // set-up builds only `trace` (RTSCOPE_LAB_KERNELS="trace rt-trace" adds the RT kernel).
    let mut kernels = vec![("trace", Some("full"))];
    if has_kernel(bin!(), "rt-trace") {
        kernels.push(("rt-trace", None));
    } else {
        rtscope_testkit::skipped(format_args!("the PREEMPT_RT part: no rt-trace kernel in the lab cache (RTSCOPE_LAB_KERNELS=\"trace rt-trace\" scripts/setup.sh builds it)"
        ));
    }
    for (kernel, preempt) in kernels {
        let rec = icount_record(bin!(), kernel, preempt, &verb("0"), "flat.json");
        let sc = scan(&rec);
        let (tri, max_in, dur) = shape(sc);
        assert_eq!(tri, 0, "{kernel} {preempt:?}: {sc}");
        assert!(
            max_in < 0.1 * dur,
            "{kernel}: max {max_in} µs during a {dur} µs call"
        );
    }
}

#[test]
fn rhealstone_measures_the_papers_interrupt_response_with_the_device() {
    need_root!("QEMU guest");
    if !ready(bin!(), "trace") {
        return;
    }
    let rec = icount_record(
        bin!(),
        "trace",
        Some("full"),
        &[
            "rhealstone",
            "--only",
            "interrupt_response",
            "--iterations",
            "500",
            "--irq-iterations",
            "500",
        ],
        "irt.json",
    );
    let metrics = rec["kind"]["rhealstone"]["metrics"].as_array().unwrap();
    let dev = metrics
        .iter()
        .find(|m| m["variant"] == "parallel_port")
        .expect("the device variant ran");
    assert_eq!(dev["primary"], true, "{dev}");
    assert_eq!(dev["quantity"], "as_defined", "{dev}");
    assert!(dev["unavailable"].is_null(), "{dev}");
    assert_eq!(dev["stats"]["samples"], 500, "{dev}");
    assert_eq!(dev["counters"]["timeouts"], 0, "{dev}");
    let mean = dev["stats"]["avg_ns"].as_f64().unwrap();
    assert!(mean > 50.0 && mean < 20_000.0, "{dev}");
    // The timer's quantity is still there, labelled, and no longer the primary.
    let timer = metrics
        .iter()
        .find(|m| m["variant"] == "hrtimer_expire")
        .expect("the timer variant ran");
    assert_eq!(timer["primary"], false);
    assert_eq!(timer["quantity"], "nearest_measurable");
}

#[test]
fn without_the_device_the_driver_scan_exits_2_naming_it() {
    if std::path::Path::new("/dev/rtscope_lab").exists() {
        rtscope_testkit::skipped("this machine has the lab's device");
        return;
    }
    let d = tmp();
    let o = run(
        bin!(),
        &["pdlt", "--syscall", "driver", "--no-store"],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("--syscall driver") && err.contains("/dev/rtscope_lab"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let o = run(
        bin!(),
        &["pdlt", "--syscall", "read", "--points", "3", "--no-store"],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--points"), "{}", text(&o.stderr));
}
