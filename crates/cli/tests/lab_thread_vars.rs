//! `rtscope trace thread-vars` in the lab's trace kernel (6.12 with preemptirq tracepoints, BTF
//! and tp_btf): boot it under QEMU, measure 3 s on its 2 vCPUs, bring the JSON home and check
//! that the in-kernel reduction saw the events and lost none. Skipped only when QEMU is missing;
//! a missing trace kernel is a failure (the suite's set-up builds it).

use rtscope_testkit::bin;
use rtscope_testkit::lab::{brought_home, ready, run};
use serde_json::Value;
use std::path::Path;
use std::time::Instant;

/// Errors of `v` against docs/schema/thread-vars.schema.json.
fn schema_errors(v: &Value) -> Vec<String> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/thread-vars.schema.json");
    let s: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("schema file"))
        .expect("schema JSON");
    let schema = jsonschema::JSONSchema::options()
        .compile(&s)
        .expect("schema compiles");
    let errs: Vec<String> = match schema.validate(v) {
        Ok(()) => Vec::new(),
        Err(errs) => errs
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect(),
    };
    errs
}

#[test]
fn thread_vars_in_the_trace_kernel() {
    if !ready(bin!(), "trace") {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let t0 = Instant::now();
    let out = run(
        bin!(),
        &[
            "lab",
            "run",
            "--kernel",
            "trace",
            "--no-store",
            "--timeout",
            "110s",
            "--",
            "trace",
            "thread-vars",
            "-D",
            "3s",
            "--json",
            "thread-vars.json",
        ],
        tmp.path(),
    );
    let said = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "lab run failed ({}): {said}",
        out.status
    );
    println!("{said}\n(lab run took {:.1} s)", t0.elapsed().as_secs_f64());
    let path = brought_home(tmp.path(), "thread-vars.json")
        .unwrap_or_else(|| panic!("thread-vars.json did not come home: {said}"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read JSON"))
        .expect("thread-vars JSON");
    assert_eq!(schema_errors(&v), Vec::<String>::new(), "{v}");
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["lost_events"], 0, "events were lost: {v}");
    let cpus = v["cpus"].as_array().expect("cpus array");
    assert_eq!(cpus.len(), 2, "the guest has 2 vCPUs: {v}");
    for c in cpus {
        let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{k} in {c}"));
        let t = |k: &str| {
            c["thread"][k]
                .as_u64()
                .unwrap_or_else(|| panic!("thread.{k} in {c}"))
        };
        assert!(n("preemptirq_events") > 0, "no preemptirq events: {c}");
        assert!(n("sched_sections") > 0, "no scheduler sections: {c}");
        assert!(t("poid_ns") > 0, "D_POID is 0: {c}");
        assert!(t("psd_ns") >= t("dst_ns"), "D_ST > D_PSD: {c}");
        assert_eq!(n("lost_events"), 0, "{c}");
        // Where the longest D_POID began and ended, symbolized from the guest's kallsyms (the
        // verb runs as root there), and the stack of its close.
        let at = &c["poid_at"];
        let events = [
            "preempt_disable",
            "preempt_enable",
            "irq_disable",
            "irq_enable",
            "sched_switch",
        ];
        for end in ["from", "to"] {
            let e = at[end]["event"]
                .as_str()
                .unwrap_or_else(|| panic!("{end} in {c}"));
            assert!(events.contains(&e), "poid_at.{end}.event {e}: {c}");
            if at[end]["ip"].as_u64().is_some_and(|ip| ip != 0) {
                assert!(at[end]["symbol"].is_string(), "{end} not symbolized: {c}");
            }
        }
        let stack = at["stack"]
            .as_array()
            .unwrap_or_else(|| panic!("stack in {c}"));
        assert!(
            stack.iter().any(|f| f["symbol"].is_string()),
            "no frame of the stack symbolized: {c}"
        );
        assert!(at["comm"].as_str().is_some_and(|s| !s.is_empty()), "{c}");
        assert!(v["started_ns"].as_u64().is_some_and(|t| t > 0), "{v}");
    }
}

/// `measure --bound` notes where its in-kernel D_POID came from, symbolized in the guest.
#[test]
fn measure_bound_names_the_longest_poid() {
    if !ready(bin!(), "trace") {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = run(
        bin!(),
        &[
            "lab",
            "run",
            "--kernel",
            "trace",
            "--preempt",
            "full",
            "--icount",
            "--smp",
            "1",
            "--no-store",
            "--timeout",
            "110s",
            "--",
            "measure",
            "-D",
            "3s",
            "--trace",
            "bpf",
            "--bound",
        ],
        tmp.path(),
    );
    let said = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "lab run failed ({}): {said}",
        out.status
    );
    let note = said
        .lines()
        .find_map(|l| l.trim().strip_prefix("note: longest D_POID, cpu 0: "))
        .unwrap_or_else(|| panic!("no D_POID note: {said}"));
    // "<µs> µs at <s> s in <comm> (tid N) from <event> at <symbol>+0x… to …"
    assert!(note.contains(" s in "), "no time or task: {note}");
    assert!(note.contains(" from ") && note.contains(" to "), "{note}");
    assert!(note.contains("+0x"), "not symbolized: {note}");
}
