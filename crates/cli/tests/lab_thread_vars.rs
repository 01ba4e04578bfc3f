//! `rtscope trace thread-vars` in the lab's trace kernel (6.12 with preemptirq tracepoints, BTF
//! and tp_btf): boot it under QEMU, measure 3 s on its 2 vCPUs, bring the JSON home and check
//! that the in-kernel reduction saw the events and lost none. Skipped only when QEMU is missing;
//! a missing trace kernel is a failure (the suite's set-up builds it).

use rtscope_testkit::bin;
use rtscope_testkit::lab::{brought_home, has_kernel, ready, run};
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

/// `trace thread-vars --mechanism M -D 3s --json NAME` in the trace kernel (`--preempt full
/// --icount --smp 1`): the document, schema-checked, and the verb's text output.
fn thread_vars_in_lab(mechanism: &str) -> (Value, String) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let name = format!("thread-vars-{mechanism}.json");
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
            "trace",
            "thread-vars",
            "--mechanism",
            mechanism,
            "-D",
            "3s",
            "--json",
            &name,
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
        "lab run ({mechanism}) failed ({}): {said}",
        out.status
    );
    let path = brought_home(tmp.path(), &name)
        .unwrap_or_else(|| panic!("{name} did not come home: {said}"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read JSON"))
        .expect("thread-vars JSON");
    assert_eq!(schema_errors(&v), Vec::<String>::new(), "{v}");
    (v, said)
}

/// The tracefs mechanism in the trace kernel: the events arrive through the ring buffer and the
/// state machine measures the variables from them; what it lost is reported (and said in the
/// text when non-zero); and on the same idle guest it measures the same order of magnitude as
/// the eBPF mechanism (rates and D_POID within a factor of 10: both see the same kernel, each
/// mechanism adds its own cost — the reader's system calls, the programs' run time).
#[test]
fn thread_vars_by_tracefs_in_the_trace_kernel() {
    if !has_kernel(bin!(), "trace") {
        return rtscope_testkit::skipped(format_args!(
            "no `trace` kernel in the lab cache (rtscope lab kernel build --preset trace)"
        ));
    }
    if !ready(bin!(), "trace") {
        return;
    }
    let (tf, said) = thread_vars_in_lab("tracefs");
    println!("{said}");
    assert_eq!(tf["mechanism"], "tracefs", "{tf}");
    let cpus = tf["cpus"].as_array().expect("cpus array");
    assert_eq!(cpus.len(), 1, "--smp 1: {tf}");
    let c = &cpus[0];
    let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{k} in {c}"));
    let t = |k: &str| {
        c["thread"][k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} in {c}"))
    };
    let secs = tf["duration_ns"].as_u64().expect("duration_ns") as f64 / 1e9;
    assert!(secs >= 2.9, "{tf}");
    assert!(
        n("preemptirq_events") > 1000,
        "too few preemptirq events: {c}"
    );
    assert!(n("sched_sections") > 0, "no scheduler sections: {c}");
    assert!(t("poid_ns") > 0, "D_POID is 0: {c}");
    assert!(t("psd_ns") >= t("dst_ns"), "D_ST > D_PSD: {c}");
    // The loss is reported as counted, and said when there is one.
    let lost = tf["lost_events"].as_u64().expect("lost_events");
    assert_eq!(lost, n("lost_events"), "{tf}");
    let lost_warned = tf["warnings"]
        .as_array()
        .is_some_and(|w| w.iter().any(|w| w["code"] == "lost_events"));
    assert_eq!(lost > 0, lost_warned, "{tf}");
    if lost > 0 {
        assert!(said.contains("NOT A SOUND MEASUREMENT"), "{said}");
    } else {
        assert!(said.contains("lost events: 0"), "{said}");
    }
    // The reader read every preemptirq event it counted, and more (switches, interrupts).
    let rd = &tf["reader"];
    let r = |k: &str| {
        rd[k]
            .as_u64()
            .unwrap_or_else(|| panic!("reader.{k} in {tf}"))
    };
    assert!(r("records") > n("preemptirq_events"), "{tf}");
    assert!(
        r("bytes") >= 20 * r("records"),
        "a record is ≥ 20 bytes: {tf}"
    );
    assert!(r("cpu_ns") > 0, "{tf}");
    assert_eq!(r("undecoded"), 0, "{tf}");
    assert!(said.contains("tracefs reader:"), "{said}");

    // The eBPF mechanism on the same guest and kernel.
    let (bpf, _) = thread_vars_in_lab("bpf");
    assert_eq!(bpf["mechanism"], "bpf", "{bpf}");
    let b = &bpf["cpus"][0];
    let rate = |v: &Value, c: &Value| {
        c["preemptirq_events"].as_u64().expect("events") as f64
            / (v["duration_ns"].as_u64().expect("duration") as f64 / 1e9)
    };
    let (rt, rb) = (rate(&tf, c), rate(&bpf, b));
    println!(
        "preemptirq events/s: tracefs {rt:.0}, bpf {rb:.0}; D_POID ns: tracefs {}, bpf {}",
        t("poid_ns"),
        b["thread"]["poid_ns"]
    );
    assert!(
        (0.1..=10.0).contains(&(rt / rb)),
        "rates {rt:.0} vs {rb:.0}"
    );
    let pb = b["thread"]["poid_ns"].as_u64().expect("bpf poid") as f64;
    let pt = t("poid_ns") as f64;
    assert!((0.1..=10.0).contains(&(pt / pb)), "D_POID {pt} vs {pb}");
}
