//! Every `rtscope doctor` check on recorded machines (tests/fixtures/doctor: `vm` recorded by
//! record.sh on a Firecracker guest, `tuned` and `untuned` derived from it by derive.sh; each
//! fixture's HOW file says so): the reader (rtscope_probe::tuning) and the pure checks
//! (rtscope_analysis::doctor) together, each check both firing and not firing.

use rtscope_analysis::doctor::{self, CHECKS};
use rtscope_model::attribution::{AttributionSummary, CauseSummary, ThreadRan, WorstSample};
use rtscope_model::doctor::{Finding, Severity};
use rtscope_model::record::Hygiene;
use rtscope_probe::tuning::system_at;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/doctor")
        .join(name)
}

fn findings(name: &str) -> Vec<Finding> {
    let root = fixture(name);
    assert!(
        std::fs::read_to_string(root.join("HOW")).is_ok_and(|s| !s.trim().is_empty()),
        "fixture {name} says how it was produced"
    );
    let sys = system_at(&root);
    let cpus = doctor::default_cpus(&sys);
    assert_eq!(cpus, vec![1], "{name}: CPU 1 is the measured one");
    doctor::check_machine(&sys, &cpus, doctor::DEFAULT_TARGET_US)
}

fn fired(f: &[Finding], code: &str) -> bool {
    f.iter().any(|x| x.code == code)
}

#[test]
fn every_check_fires_on_one_fixture_and_not_on_another() {
    let vm = findings("vm");
    let tuned = findings("tuned");
    let untuned = findings("untuned");
    let by = |n: &str| match n {
        "vm" => &vm,
        "tuned" => &tuned,
        _ => &untuned,
    };
    // (code prefix, fixture where it fires, fixture where it does not)
    let table = [
        ("RT001", "vm", "tuned"),
        ("RT002", "vm", "tuned"),
        ("RT003", "vm", "tuned"),
        ("RT004", "vm", "tuned"),
        ("RT005", "vm", "tuned"),
        ("RT006", "untuned", "vm"),
        ("RT007", "vm", "tuned"),
        ("RT008", "vm", "tuned"),
        ("RT009", "vm", "tuned"),
        ("RT010", "untuned", "vm"),
        ("RT011", "untuned", "vm"),
        ("RT012", "untuned", "tuned"),
        ("RT013", "untuned", "tuned"),
        ("RT014", "untuned", "vm"),
        ("RT015", "untuned", "vm"),
        ("RT016", "vm", "tuned"),
        ("RT017", "untuned", "vm"),
        ("RT018", "untuned", "vm"),
        ("RT019", "untuned", "vm"),
        ("RT020", "vm", "untuned"),
        ("RT021", "untuned", "tuned"),
        ("RT022", "untuned", "tuned"),
        ("RT023", "vm", "tuned"),
        ("RT024", "untuned", "vm"),
        ("RT025", "vm", "tuned"),
        ("RT026", "untuned", "vm"),
        ("RT027", "vm", "tuned"),
        ("RT028", "vm", "tuned"),
        ("RT029", "untuned", "tuned"),
        ("RT030", "untuned", "vm"),
        ("RT031", "vm", "tuned"),
    ];
    for (code, yes, no) in table {
        let full = doctor::check_code(code).unwrap();
        assert!(
            fired(by(yes), full),
            "{full} fires on {yes}: {:#?}",
            by(yes)
        );
        assert!(!fired(by(no), full), "{full} is silent on {no}");
    }
    // Every machine check of the catalogue is in the table (RT04x need a run's hygiene).
    let machine: Vec<&str> = CHECKS
        .iter()
        .map(|c| c.0)
        .filter(|c| !c.starts_with("RT04"))
        .collect();
    assert_eq!(machine.len(), table.len());
    // Every finding carries its evidence, fix and reference.
    for f in vm.iter().chain(&untuned).chain(&tuned) {
        assert!(
            !f.evidence.is_empty() && !f.fix.text.is_empty() && !f.reference.is_empty(),
            "{f:?}"
        );
    }
}

#[test]
fn the_vm_shows_its_hypervisor_steal_and_no_isolation_and_what_it_does_not_have_stays_silent() {
    let vm = findings("vm");
    let hv = vm.iter().find(|f| f.code == "RT027-hypervisor").unwrap();
    assert!(hv.evidence[0].contains("hypervisor flag"), "{hv:?}");
    let st = vm.iter().find(|f| f.code == "RT028-steal-time").unwrap();
    assert!(
        st.evidence.iter().any(|e| e.contains("cpu1: steal 1918")),
        "{st:?}"
    );
    // IRQ 36 (virtio1-req.0) was handled 656962 times on CPU 1: a high finding with its fix.
    let irq = vm.iter().find(|f| f.irqs == vec![36]).unwrap();
    assert_eq!(irq.severity, Severity::High);
    assert!(irq.title.contains("virtio1-req.0"), "{irq:?}");
    assert_eq!(
        irq.fix.writes,
        vec![(
            "/proc/irq/36/smp_affinity_list".to_string(),
            "0".to_string()
        )]
    );
    assert!(irq.fix.boot_params.contains(&"irqaffinity=0".to_string()));
    // haltpoll's 1 µs state is below the target; no cpufreq, no swap, no KSM on this guest.
    for silent in ["RT010", "RT011", "RT012", "RT017", "RT018", "RT024"] {
        assert!(!fired(&vm, doctor::check_code(silent).unwrap()), "{silent}");
    }
}

#[test]
fn a_traced_run_is_joined_by_irq_number_and_thread_id_and_ranks_the_findings() {
    let root = fixture("vm");
    let sys = system_at(&root);
    let mut f = doctor::check_machine(&sys, &[1], doctor::DEFAULT_TARGET_US);
    // kworker/1:* is per-CPU on CPU 1: joined by its pid, whatever its name in the run.
    let kw = sys
        .tuning
        .as_ref()
        .unwrap()
        .kthreads
        .iter()
        .find(|k| k.cpus_allowed == vec![1])
        .unwrap()
        .pid;
    let a = AttributionSummary {
        causes: vec![
            CauseSummary {
                cause: "irq:36:virtio1-req.0".into(),
                samples_affected: 1840,
                max_ns: 84_000,
                tail_p99_share: 0.31,
                ..Default::default()
            },
            CauseSummary {
                cause: "irq:99:not-on-this-machine".into(),
                tail_p99_share: 0.5,
                ..Default::default()
            },
        ],
        worst: vec![WorstSample {
            cpu: 1,
            latency_ns: 100_000,
            parts: vec![("irq:36:virtio1-req.0".into(), 30_000)],
            threads: vec![ThreadRan {
                pid: kw,
                comm: "renamed-in-the-run".into(),
                ran_ns: 12_000,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let rest = doctor::join_run(&mut f, &a);
    doctor::rank(&mut f);
    assert_eq!(f[0].irqs, vec![36], "{f:#?}");
    let r = f[0].run.as_ref().unwrap();
    assert!(
        r.text
            .contains("IRQ 36 (virtio1-req.0) delayed the probe in 1840 samples"),
        "{}",
        r.text
    );
    assert!(r.text.contains("31.0 % of the p99 tail"), "{}", r.text);
    assert!(
        r.text.contains("CPU 1 in 1 of the 1 worst samples"),
        "{}",
        r.text
    );
    let k = f
        .iter()
        .find(|x| x.code == "RT007-kthread-on-measured-cpu")
        .unwrap();
    let kr = k.run.as_ref().unwrap();
    assert!(
        kr.text.contains(&format!(
            "renamed-in-the-run (pid {kw}) ran ahead of the probe in 1"
        )),
        "{}",
        kr.text
    );
    assert!((kr.tail_p99_share - 0.12).abs() < 1e-9);
    assert!((rest - (1.0 - 0.31 - 0.12)).abs() < 1e-9, "{rest}");
}

#[test]
fn hygiene_checks_of_the_paper() {
    let bad = Hygiene {
        mlockall: false,
        timer_slack_ns: Some(50_000),
        ..Default::default()
    };
    let f = doctor::check_hygiene(&bad, false);
    assert!(fired(&f, "RT040-timer-slack") && fired(&f, "RT041-memory-not-locked"));
    assert!(f
        .iter()
        .all(|x| x.reference.starts_with("Cerqueira & Brandenburg 2013 §2.4")));
    // SCHED_FIFO ignores the slack; locked memory is fine.
    let good = Hygiene {
        mlockall: true,
        ..bad
    };
    assert!(doctor::check_hygiene(&good, true).is_empty());
}
