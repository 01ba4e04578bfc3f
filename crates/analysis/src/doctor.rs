//! The `rtscope doctor` checks: pure functions over a recorded [`SystemInfo`] (with its
//! [`Tuning`]) and, when a traced run is joined, over its attribution. No file is read here: the
//! reader is `rtscope_probe::tuning`, so every check is tested on recorded machines.
//!
//! Each check has a stable code (`RT001-irq-on-measured-cpu`) that is never reused; [`CHECKS`]
//! lists them all with their reference, and `docs/doctor.md` is its table.

use rtscope_model::attribution::AttributionSummary;
use rtscope_model::doctor::{Finding, Fix, RunEvidence, Severity};
use rtscope_model::record::Hygiene;
use rtscope_model::system::{SystemInfo, Tuning};
use std::collections::BTreeMap;

/// Every check: (code, what it looks at, reference).
pub const CHECKS: &[(&str, &str, &str)] = &[
    ("RT001-irq-on-measured-cpu", "a device IRQ may be (or was) handled on a measured CPU", "Documentation/core-api/irq/irq-affinity.rst"),
    ("RT002-no-isolation", "measured CPUs not isolated (isolcpus= or an isolated cpuset partition)", "Documentation/admin-guide/kernel-parameters.txt (isolcpus); Documentation/admin-guide/cgroup-v2.rst (cpuset.cpus.partition)"),
    ("RT003-no-nohz-full", "measured CPUs keep the scheduler tick (not in nohz_full)", "Documentation/timers/no_hz.rst"),
    ("RT004-rcu-on-measured-cpu", "RCU callbacks not offloaded from measured CPUs, or RCU kthreads allowed on them", "Documentation/admin-guide/kernel-per-CPU-kthreads.rst"),
    ("RT005-default-irq-affinity", "new IRQs land on measured CPUs (default_smp_affinity, irqaffinity=)", "Documentation/core-api/irq/irq-affinity.rst; Documentation/admin-guide/kernel-parameters.txt (irqaffinity)"),
    ("RT006-irqbalance-running", "irqbalance runs and may move IRQs back onto measured CPUs", "Documentation/core-api/irq/irq-affinity.rst"),
    ("RT007-kthread-on-measured-cpu", "unbound kernel threads may run on measured CPUs", "Documentation/admin-guide/kernel-per-CPU-kthreads.rst"),
    ("RT008-workqueue-on-measured-cpu", "unbound workqueues may run on measured CPUs", "Documentation/core-api/workqueue.rst"),
    ("RT009-timer-migration", "timer migration is on", "Documentation/admin-guide/sysctl/kernel.rst (timer_migration)"),
    ("RT010-deep-idle-state", "an enabled idle state's exit latency exceeds the target", "Documentation/admin-guide/pm/cpuidle.rst"),
    ("RT011-cpu-dma-latency-not-held", "no PM QoS request holds /dev/cpu_dma_latency below the target", "Documentation/power/pm_qos_interface.rst"),
    ("RT012-governor", "frequency governor of a measured CPU is not performance", "Documentation/admin-guide/pm/cpufreq.rst"),
    ("RT013-turbo-boost", "turbo/boost is on (frequency varies with load and temperature)", "Documentation/admin-guide/pm/cpufreq.rst (boost)"),
    ("RT014-smt-sibling", "a measured CPU shares its core with an online SMT sibling", "Documentation/admin-guide/kernel-parameters.txt (nosmt); Cerqueira & Brandenburg 2013 §3"),
    ("RT015-thp-always", "transparent huge pages always on (faults compact memory)", "Documentation/admin-guide/mm/transhuge.rst"),
    ("RT016-khugepaged-defrag", "khugepaged defragments (compaction in the background)", "Documentation/admin-guide/mm/transhuge.rst"),
    ("RT017-ksm-running", "KSM merges pages (copy-on-write faults, ksmd work)", "Documentation/admin-guide/mm/ksm.rst"),
    ("RT018-swap-active", "swap is active", "Documentation/admin-guide/sysctl/vm.rst (swappiness)"),
    ("RT019-numa-balancing", "automatic NUMA balancing is on (hinting faults)", "Documentation/admin-guide/sysctl/kernel.rst (numa_balancing)"),
    ("RT020-rt-throttling", "RT throttling is on (sched_rt_runtime_us is not -1)", "Documentation/scheduler/sched-rt-group.rst"),
    ("RT021-fair-server", "the fair server reserves CPU time for CFS on measured CPUs (6.12+)", "Documentation/scheduler/sched-deadline.rst (dl_server); /sys/kernel/debug/sched/fair_server"),
    ("RT022-no-stalld", "starvation protection is off and stalld does not run", "Documentation/scheduler/sched-rt-group.rst"),
    ("RT023-preempt-model", "the preemption model is not full or PREEMPT_RT", "Documentation/admin-guide/kernel-parameters.txt (preempt=)"),
    ("RT024-clocksource", "the clocksource is not the TSC", "Documentation/admin-guide/kernel-parameters.txt (clocksource=, tsc=)"),
    ("RT025-watchdog", "the lockup watchdogs run on measured CPUs", "Documentation/admin-guide/lockup-watchdogs.rst"),
    ("RT026-mce-polling", "machine-check polling timers run", "Documentation/arch/x86/x86_64/machinecheck.rst"),
    ("RT027-hypervisor", "a hypervisor runs the CPUs (vCPUs are host threads)", "Documentation/virt/kvm/x86/cpuid.rst"),
    ("RT028-steal-time", "the hypervisor took time from measured CPUs (steal)", "Documentation/filesystems/proc.rst (/proc/stat steal)"),
    ("RT029-lockdown", "kernel lockdown restricts tracing", "Documentation/admin-guide/kernel-parameters.txt (lockdown=)"),
    ("RT030-no-btf", "no kernel BTF (eBPF tracing cannot load)", "Documentation/bpf/btf.rst"),
    ("RT031-no-preemptirq", "no preemptirq tracepoints (preemption/IRQ-off windows cannot be measured)", "Documentation/trace/ftrace.rst (preemptirqsoff)"),
    ("RT040-timer-slack", "the measuring threads ran with timer slack (nanosleep coalescing)", "Cerqueira & Brandenburg 2013 §2.4"),
    ("RT041-memory-not-locked", "the measuring process did not lock its memory", "Cerqueira & Brandenburg 2013 §2.4 (cyclictest -m, §3)"),
];

/// The idle-state exit latency above which a state is a finding, µs: a wake-up from it alone
/// costs more than a well-tuned machine's whole scheduling latency.
pub const DEFAULT_TARGET_US: u32 = 10;

/// Whether `code` is one of [`CHECKS`] (the full code or its `RTnnn` prefix).
pub fn check_code(code: &str) -> Option<&'static str> {
    CHECKS
        .iter()
        .map(|c| c.0)
        .find(|c| *c == code || c.split('-').next() == Some(code))
}

fn reference(code: &str) -> String {
    CHECKS
        .iter()
        .find(|c| c.0 == code)
        .map(|c| c.2.to_string())
        .unwrap_or_default()
}

/// A CPU list in the kernel's form (`0-3,5`).
pub fn cpu_list(cpus: &[u32]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// A CPU list as the hex mask sysfs cpumask files take (`3`, `1,00000000`).
pub fn cpu_mask(cpus: &[u32]) -> String {
    let words = cpus.iter().max().map_or(1, |m| *m as usize / 32 + 1);
    let mut w = vec![0u32; words];
    for &c in cpus {
        w[c as usize / 32] |= 1 << (c % 32);
    }
    let mut parts: Vec<String> = w.iter().rev().map(|x| format!("{x:08x}")).collect();
    if let Some(first) = parts.first_mut() {
        *first = format!("{:x}", u32::from_str_radix(first, 16).unwrap_or(0));
    }
    parts.join(",")
}

fn meets(a: &[u32], b: &[u32]) -> Vec<u32> {
    a.iter().copied().filter(|x| b.contains(x)).collect()
}

/// The CPUs judged when none are named: the isolated ones if any, else every online CPU but
/// the first (the housekeeping CPU a real-time setup keeps), else the one CPU there is.
pub fn default_cpus(sys: &SystemInfo) -> Vec<u32> {
    let iso = isolated(sys);
    if !iso.is_empty() {
        return iso;
    }
    match sys.online_cpus.split_first() {
        Some((first, [])) => vec![*first],
        Some((_, rest)) => rest.to_vec(),
        None => Vec::new(),
    }
}

fn isolated(sys: &SystemInfo) -> Vec<u32> {
    let mut v: Vec<u32> = sys
        .isolcpus
        .as_deref()
        .and_then(|s| rtscope_model::cpus::parse_cpu_list(s).ok())
        .unwrap_or_default();
    v.sort_unstable();
    v
}

fn cmdline_param<'a>(sys: &'a SystemInfo, key: &str) -> Option<&'a str> {
    sys.kernel_cmdline
        .split_whitespace()
        .take_while(|w| *w != "--")
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

/// The CPU list of a boot parameter such as `rcu_nocbs=1-3` or `isolcpus=domain,managed_irq,1`
/// (flags dropped).
fn cmdline_cpus(sys: &SystemInfo, key: &str) -> Option<Vec<u32>> {
    let v = cmdline_param(sys, key)?;
    let list: Vec<&str> = v
        .split(',')
        .filter(|p| p.starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    rtscope_model::cpus::parse_cpu_list(&list.join(",")).ok()
}

struct Ctx<'a> {
    sys: &'a SystemInfo,
    t: &'a Tuning,
    cpus: &'a [u32],
    housekeeping: Vec<u32>,
    target_us: u32,
}

fn finding(code: &str, severity: Severity, title: String) -> Finding {
    Finding {
        code: code.into(),
        severity,
        title,
        evidence: Vec::new(),
        fix: Fix::default(),
        reference: reference(code),
        irqs: Vec::new(),
        cpus: Vec::new(),
        pids: Vec::new(),
        run: None,
    }
}

/// Run every machine check on `sys` (its `tuning` must be read) for the measured `cpus`.
/// Returns the findings (unranked) and the codes of the checks that ran.
pub fn check_machine(sys: &SystemInfo, cpus: &[u32], target_us: u32) -> Vec<Finding> {
    let empty = Tuning::default();
    let t = sys.tuning.as_ref().unwrap_or(&empty);
    let housekeeping: Vec<u32> = sys
        .online_cpus
        .iter()
        .copied()
        .filter(|c| !cpus.contains(c))
        .collect();
    let c = Ctx {
        sys,
        t,
        cpus,
        housekeeping,
        target_us,
    };
    let mut out = Vec::new();
    for f in [
        irqs,
        isolation,
        nohz,
        rcu,
        default_affinity,
        irqbalance,
        kthreads,
        workqueues,
        timers,
        idle,
        dma_latency,
        governor,
        boost,
        smt,
        thp,
        khugepaged,
        ksm,
        swap,
        numa,
        rt_throttling,
        fair_server,
        stalld,
        preemption,
        clocksource,
        watchdog,
        mce,
        hypervisor,
        steal,
        lockdown,
        btf,
        preemptirq,
    ] {
        out.extend(f(&c));
    }
    out
}

type Check = fn(&Ctx) -> Vec<Finding>;
const _: Check = irqs;

fn irqs(c: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut may: Vec<u32> = Vec::new();
    for i in &c.t.irqs {
        let allowed = i.affinity.clone().unwrap_or_default();
        let on = meets(&allowed, c.cpus);
        if on.is_empty() {
            continue;
        }
        let handled: Vec<(u32, u64)> = i
            .counts
            .iter()
            .copied()
            .filter(|(cpu, n)| *n > 0 && c.cpus.contains(cpu))
            .collect();
        let effective = i.effective_affinity.as_deref().map(|e| meets(e, c.cpus));
        if handled.is_empty() && effective.as_ref().is_none_or(|e| e.is_empty()) {
            may.push(i.irq);
            continue;
        }
        let sev = if handled.is_empty() {
            Severity::Warning
        } else {
            Severity::High
        };
        let mut f = finding(
            "RT001-irq-on-measured-cpu",
            sev,
            format!(
                "IRQ {} ({}) is routed to measured CPU {}",
                i.irq,
                i.name,
                cpu_list(&on)
            ),
        );
        f.evidence.push(format!(
            "/proc/irq/{}/smp_affinity_list = {}; effective_affinity_list = {}",
            i.irq,
            cpu_list(&allowed),
            i.effective_affinity.as_deref().map_or("?".into(), cpu_list)
        ));
        for (cpu, n) in &handled {
            f.evidence.push(format!(
                "/proc/interrupts: {n} interrupts handled on CPU {cpu} since boot"
            ));
        }
        irq_fix(c, &mut f, i.irq);
        f.cpus = on;
        out.push(f);
    }
    if !may.is_empty() {
        let mut f = finding(
            "RT001-irq-on-measured-cpu",
            Severity::Info,
            format!(
                "{} IRQs may be routed to measured CPUs (none handled there yet)",
                may.len()
            ),
        );
        f.evidence.push(format!(
            "smp_affinity_list of IRQ {} includes {}",
            may.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            cpu_list(c.cpus)
        ));
        for irq in &may {
            irq_fix(c, &mut f, *irq);
        }
        out.push(f);
    }
    out
}

fn irq_fix(c: &Ctx, f: &mut Finding, irq: u32) {
    f.irqs.push(irq);
    if c.housekeeping.is_empty() {
        f.fix.text = "no housekeeping CPU is left to move it to: measure fewer CPUs".into();
        return;
    }
    f.fix.text = format!(
        "move it to the housekeeping CPUs {} (irqbalance must not move it back); managed IRQs refuse and need isolcpus=managed_irq",
        cpu_list(&c.housekeeping)
    );
    f.fix.writes.push((
        format!("/proc/irq/{irq}/smp_affinity_list"),
        cpu_list(&c.housekeeping),
    ));
    let p = format!("irqaffinity={}", cpu_list(&c.housekeeping));
    if !f.fix.boot_params.contains(&p) {
        f.fix.boot_params.push(p);
    }
}

fn not_covered(c: &Ctx, set: &[u32]) -> Vec<u32> {
    c.cpus
        .iter()
        .copied()
        .filter(|x| !set.contains(x))
        .collect()
}

fn isolation(c: &Ctx) -> Vec<Finding> {
    let iso = isolated(c.sys);
    let missing = not_covered(c, &iso);
    if missing.is_empty() {
        return vec![];
    }
    let mut f = finding(
        "RT002-no-isolation",
        Severity::High,
        format!(
            "measured CPU {} is not isolated: the scheduler balances other tasks onto it",
            cpu_list(&missing)
        ),
    );
    f.evidence.push(format!(
        "/sys/devices/system/cpu/isolated = {:?}; isolcpus= on the command line: {}",
        c.sys.isolcpus.clone().unwrap_or_default(),
        cmdline_param(c.sys, "isolcpus").unwrap_or("none")
    ));
    f.fix.text = "isolate them at boot, or make them an isolated cpuset partition (cpuset.cpus.partition = isolated) at run time".into();
    f.fix.boot_params.push(format!(
        "isolcpus=domain,managed_irq,{}",
        cpu_list(&missing)
    ));
    f.cpus = missing;
    vec![f]
}

fn nohz(c: &Ctx) -> Vec<Finding> {
    let set = c
        .sys
        .nohz_full
        .as_deref()
        .and_then(|s| rtscope_model::cpus::parse_cpu_list(s).ok())
        .unwrap_or_default();
    let missing = not_covered(c, &set);
    if missing.is_empty() {
        return vec![];
    }
    let mut f = finding(
        "RT003-no-nohz-full",
        Severity::Warning,
        format!(
            "measured CPU {} keeps the periodic scheduler tick",
            cpu_list(&missing)
        ),
    );
    f.evidence.push(format!(
        "/sys/devices/system/cpu/nohz_full = {:?}",
        c.sys.nohz_full.clone().unwrap_or_default()
    ));
    f.fix.text =
        "boot with nohz_full (needs CONFIG_NO_HZ_FULL); the tick stops only while one task runs"
            .into();
    f.fix
        .boot_params
        .push(format!("nohz_full={}", cpu_list(&missing)));
    f.cpus = missing;
    vec![f]
}

fn rcu(c: &Ctx) -> Vec<Finding> {
    let nocbs = cmdline_cpus(c.sys, "rcu_nocbs").unwrap_or_default();
    let missing = not_covered(c, &nocbs);
    // rcuop/N, rcuos/N: callback offload threads of CPU N; rcu_preempt, rcu_sched, rcuog: the
    // grace-period threads. All belong on housekeeping CPUs.
    let on: Vec<&rtscope_model::system::TaskInfo> =
        c.t.kthreads
            .iter()
            .filter(|k| k.comm.starts_with("rcu"))
            .filter(|k| k.cpus_allowed.len() > 1 && !meets(&k.cpus_allowed, c.cpus).is_empty())
            .collect();
    if missing.is_empty() && on.is_empty() {
        return vec![];
    }
    let mut f = finding(
        "RT004-rcu-on-measured-cpu",
        Severity::Warning,
        format!(
            "RCU work can run on measured CPU {}",
            cpu_list(if missing.is_empty() { c.cpus } else { &missing })
        ),
    );
    if !missing.is_empty() {
        f.evidence.push(format!(
            "rcu_nocbs= on the command line: {} (callbacks of {} run in softirq on that CPU)",
            cmdline_param(c.sys, "rcu_nocbs").unwrap_or("none"),
            cpu_list(&missing)
        ));
        f.fix
            .boot_params
            .push(format!("rcu_nocbs={}", cpu_list(&missing)));
    }
    if !on.is_empty() {
        f.evidence.push(format!(
            "RCU kthreads allowed on measured CPUs: {}",
            on.iter()
                .map(|k| format!(
                    "{} (pid {}, CPUs {})",
                    k.comm,
                    k.pid,
                    cpu_list(&k.cpus_allowed)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        f.pids = on.iter().map(|k| k.pid).collect();
    }
    f.fix.text = format!(
        "offload callbacks at boot and keep the RCU threads on the housekeeping CPUs ({}): taskset -pc LIST PID",
        cpu_list(&c.housekeeping)
    );
    f.cpus = c.cpus.to_vec();
    vec![f]
}

fn default_affinity(c: &Ctx) -> Vec<Finding> {
    let Some(d) = &c.t.default_irq_affinity else {
        return vec![];
    };
    let on = meets(d, c.cpus);
    if on.is_empty() {
        return vec![];
    }
    let mut f = finding(
        "RT005-default-irq-affinity",
        Severity::Warning,
        format!(
            "IRQs registered from now on may land on measured CPU {}",
            cpu_list(&on)
        ),
    );
    f.evidence.push(format!(
        "/proc/irq/default_smp_affinity = {} (CPUs {}); irqaffinity= on the command line: {}",
        cpu_mask(d),
        cpu_list(d),
        cmdline_param(c.sys, "irqaffinity").unwrap_or("none")
    ));
    if !c.housekeeping.is_empty() {
        f.fix.text = "keep new IRQs on the housekeeping CPUs".into();
        f.fix.writes.push((
            "/proc/irq/default_smp_affinity".into(),
            cpu_mask(&c.housekeeping),
        ));
        f.fix
            .boot_params
            .push(format!("irqaffinity={}", cpu_list(&c.housekeeping)));
    }
    f.cpus = on;
    vec![f]
}

fn irqbalance(c: &Ctx) -> Vec<Finding> {
    let Some(d) = c.t.daemons.iter().find(|d| d.comm == "irqbalance") else {
        return vec![];
    };
    let mut f = finding(
        "RT006-irqbalance-running",
        Severity::Warning,
        "irqbalance runs: it rewrites IRQ affinities and may undo a fix".into(),
    );
    f.evidence
        .push(format!("process irqbalance, pid {}", d.pid));
    f.fix.text = format!(
        "stop it, or set IRQBALANCE_BANNED_CPULIST={} in its configuration",
        cpu_list(c.cpus)
    );
    f.pids.push(d.pid);
    vec![f]
}

fn kthreads(c: &Ctx) -> Vec<Finding> {
    // Per-CPU kthreads (one CPU allowed: kworker/1:0, ksoftirqd/1, migration/1) are the kernel's
    // own and cannot move (kernel-per-CPU-kthreads.rst); unbound ones can, and are the finding.
    // Both are kept as pids so a traced run's preemptions by either are joined.
    let all: Vec<&rtscope_model::system::TaskInfo> =
        c.t.kthreads
            .iter()
            .filter(|k| !meets(&k.cpus_allowed, c.cpus).is_empty())
            .collect();
    let unbound: Vec<_> = all
        .iter()
        .filter(|k| k.cpus_allowed.len() > 1 && !k.comm.starts_with("rcu"))
        .collect();
    if unbound.is_empty() {
        return vec![];
    }
    let mut f = finding(
        "RT007-kthread-on-measured-cpu",
        Severity::Warning,
        format!(
            "{} unbound kernel threads may run on measured CPUs",
            unbound.len()
        ),
    );
    let names: Vec<String> = unbound
        .iter()
        .take(8)
        .map(|k| {
            format!(
                "{} (pid {}, CPUs {})",
                k.comm,
                k.pid,
                cpu_list(&k.cpus_allowed)
            )
        })
        .collect();
    f.evidence.push(format!(
        "/proc/PID/status Cpus_allowed_list: {}{}",
        names.join(", "),
        if unbound.len() > 8 { ", …" } else { "" }
    ));
    f.fix.text = format!(
        "isolcpus=domain keeps unbound kthreads off at boot; at run time: taskset -pc {} PID (some refuse)",
        cpu_list(&c.housekeeping)
    );
    f.pids = all.iter().map(|k| k.pid).collect();
    f.cpus = c.cpus.to_vec();
    vec![f]
}

fn workqueues(c: &Ctx) -> Vec<Finding> {
    let mut on: Vec<(String, Vec<u32>)> = Vec::new();
    if let Some(m) = &c.t.workqueue_cpumask {
        if !meets(m, c.cpus).is_empty() {
            on.push(("cpumask".into(), m.clone()));
        }
    }
    for (name, m) in &c.t.workqueues {
        if !meets(m, c.cpus).is_empty() {
            on.push((format!("{name}/cpumask"), m.clone()));
        }
    }
    if on.is_empty() {
        return vec![];
    }
    let mut f = finding(
        "RT008-workqueue-on-measured-cpu",
        Severity::Warning,
        format!(
            "unbound workqueues may run on measured CPU {}",
            cpu_list(c.cpus)
        ),
    );
    for (file, m) in &on {
        f.evidence.push(format!(
            "/sys/devices/virtual/workqueue/{file} = {} (CPUs {})",
            cpu_mask(m),
            cpu_list(m)
        ));
        if !c.housekeeping.is_empty() {
            f.fix.writes.push((
                format!("/sys/devices/virtual/workqueue/{file}"),
                cpu_mask(&c.housekeeping),
            ));
        }
    }
    f.fix.text = "restrict the unbound workqueues to the housekeeping CPUs".into();
    if !c.housekeeping.is_empty() {
        f.fix.boot_params.push(format!(
            "workqueue.unbound_cpus={}",
            cpu_list(&c.housekeeping)
        ));
    }
    f.cpus = c.cpus.to_vec();
    vec![f]
}

fn timers(c: &Ctx) -> Vec<Finding> {
    if c.t.timer_migration != Some(1) {
        return vec![];
    }
    let mut f = finding(
        "RT009-timer-migration",
        Severity::Info,
        "timer migration is on: timers of idle CPUs may be handled by busy ones".into(),
    );
    f.evidence
        .push("/proc/sys/kernel/timer_migration = 1".into());
    f.fix.text = "turn it off (tuned's realtime profile does)".into();
    f.fix
        .writes
        .push(("/proc/sys/kernel/timer_migration".into(), "0".into()));
    vec![f]
}

fn idle(c: &Ctx) -> Vec<Finding> {
    let deep: Vec<_> =
        c.t.idle_states
            .iter()
            .filter(|s| c.cpus.contains(&s.cpu) && !s.disabled && s.exit_latency_us > c.target_us)
            .collect();
    if deep.is_empty() {
        return vec![];
    }
    let worst = deep.iter().map(|s| s.exit_latency_us).max().unwrap_or(0);
    let mut f = finding(
        "RT010-deep-idle-state",
        Severity::High,
        format!("measured CPUs may sleep in idle states with exit latency up to {worst} µs (target {} µs)", c.target_us),
    );
    for s in &deep {
        f.evidence.push(format!(
            "/sys/devices/system/cpu/cpu{}/cpuidle/state{} ({}) latency = {} µs, enabled",
            s.cpu, s.state, s.name, s.exit_latency_us
        ));
        f.fix.writes.push((
            format!(
                "/sys/devices/system/cpu/cpu{}/cpuidle/state{}/disable",
                s.cpu, s.state
            ),
            "1".into(),
        ));
    }
    f.fix.text = "disable the deep states (or hold /dev/cpu_dma_latency, see RT011)".into();
    f.fix
        .boot_params
        .push("processor.max_cstate=1 intel_idle.max_cstate=0".into());
    f.cpus = deep.iter().map(|s| s.cpu).collect();
    f.cpus.dedup();
    vec![f]
}

fn dma_latency(c: &Ctx) -> Vec<Finding> {
    let deep =
        c.t.idle_states
            .iter()
            .any(|s| !s.disabled && s.exit_latency_us > c.target_us);
    match c.t.cpu_dma_latency_us {
        Some(v) if deep && v > c.target_us => {
            let mut f = finding(
                "RT011-cpu-dma-latency-not-held",
                Severity::Info,
                format!(
                    "no process holds /dev/cpu_dma_latency at ≤ {} µs",
                    c.target_us
                ),
            );
            f.evidence.push(format!("/dev/cpu_dma_latency = {v} µs"));
            f.fix.text = "a limit lasts only while a process holds the file open: use tuned's latency-performance profile, a systemd unit that holds it, or the boot parameters of RT010 (rtscope measure holds it during its own runs)".into();
            vec![f]
        }
        _ => vec![],
    }
}

fn governor(c: &Ctx) -> Vec<Finding> {
    let off: Vec<&(u32, String)> =
        c.t.governors
            .iter()
            .filter(|(cpu, g)| c.cpus.contains(cpu) && g != "performance")
            .collect();
    if off.is_empty() {
        return vec![];
    }
    let mut f = finding(
        "RT012-governor",
        Severity::Warning,
        format!(
            "measured CPUs run the {} governor: frequency changes with load",
            off[0].1
        ),
    );
    for (cpu, g) in &off {
        f.evidence.push(format!(
            "/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor = {g}"
        ));
        f.fix.writes.push((
            format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"),
            "performance".into(),
        ));
    }
    f.fix.text = "use the performance governor".into();
    f.cpus = off.iter().map(|x| x.0).collect();
    vec![f]
}

fn boost(c: &Ctx) -> Vec<Finding> {
    if c.t.boost != Some(true) {
        return vec![];
    }
    let mut f = finding(
        "RT013-turbo-boost",
        Severity::Info,
        "turbo/boost is on: the clock rate depends on load and temperature".into(),
    );
    f.evidence
        .push("/sys/devices/system/cpu/cpufreq/boost = 1 (or intel_pstate/no_turbo = 0)".into());
    f.fix.text = "echo 0 > /sys/devices/system/cpu/cpufreq/boost (or 1 > intel_pstate/no_turbo) for steady figures".into();
    vec![f]
}

fn smt(c: &Ctx) -> Vec<Finding> {
    let shared: Vec<(u32, Vec<u32>)> =
        c.t.smt_siblings
            .iter()
            .filter(|(cpu, _)| c.cpus.contains(cpu))
            .map(|(cpu, s)| {
                (
                    *cpu,
                    s.iter().copied().filter(|x| x != cpu).collect::<Vec<_>>(),
                )
            })
            .filter(|(_, s)| !s.is_empty())
            .collect();
    if shared.is_empty() {
        return vec![];
    }
    let mut f = finding(
        "RT014-smt-sibling",
        Severity::Warning,
        "measured CPUs share a core with SMT siblings that can run other work".into(),
    );
    for (cpu, s) in &shared {
        f.evidence.push(format!(
            "/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list: siblings {}",
            cpu_list(s)
        ));
    }
    f.fix.text = "keep the siblings idle (isolate them too) or turn SMT off: echo off > /sys/devices/system/cpu/smt/control".into();
    f.fix.boot_params.push("nosmt".into());
    f.cpus = shared.iter().map(|x| x.0).collect();
    vec![f]
}

fn thp(c: &Ctx) -> Vec<Finding> {
    let e = c.t.thp_enabled.as_deref();
    let d = c.t.thp_defrag.as_deref();
    if e != Some("always") && d != Some("always") {
        return vec![];
    }
    let mut f = finding(
        "RT015-thp-always",
        Severity::Warning,
        "transparent huge pages are always on: a page fault may compact memory".into(),
    );
    f.evidence.push(format!(
        "/sys/kernel/mm/transparent_hugepage/enabled = {}, defrag = {}",
        e.unwrap_or("?"),
        d.unwrap_or("?")
    ));
    if e == Some("always") {
        f.fix.writes.push((
            "/sys/kernel/mm/transparent_hugepage/enabled".into(),
            "madvise".into(),
        ));
    }
    if d == Some("always") {
        f.fix.writes.push((
            "/sys/kernel/mm/transparent_hugepage/defrag".into(),
            "madvise".into(),
        ));
    }
    f.fix.text = "only for regions that ask for it (madvise)".into();
    f.fix
        .boot_params
        .push("transparent_hugepage=madvise".into());
    vec![f]
}

fn khugepaged(c: &Ctx) -> Vec<Finding> {
    if c.t.khugepaged_defrag != Some(1) || c.t.thp_enabled.as_deref() == Some("never") {
        return vec![];
    }
    let mut f = finding(
        "RT016-khugepaged-defrag",
        Severity::Info,
        "khugepaged compacts memory to collapse huge pages".into(),
    );
    f.evidence.push(format!(
        "/sys/kernel/mm/transparent_hugepage/khugepaged/defrag = 1 (enabled = {})",
        c.t.thp_enabled.as_deref().unwrap_or("?")
    ));
    f.fix.text = "stop khugepaged's defragmentation".into();
    f.fix.writes.push((
        "/sys/kernel/mm/transparent_hugepage/khugepaged/defrag".into(),
        "0".into(),
    ));
    vec![f]
}

fn ksm(c: &Ctx) -> Vec<Finding> {
    if c.t.ksm_run != Some(1) {
        return vec![];
    }
    let mut f = finding(
        "RT017-ksm-running",
        Severity::Warning,
        "KSM merges identical pages: ksmd scans and writes fault".into(),
    );
    f.evidence.push("/sys/kernel/mm/ksm/run = 1".into());
    f.fix.text = "stop KSM".into();
    f.fix
        .writes
        .push(("/sys/kernel/mm/ksm/run".into(), "0".into()));
    vec![f]
}

fn swap(c: &Ctx) -> Vec<Finding> {
    if c.t.swaps.is_empty() {
        return vec![];
    }
    let mut f = finding(
        "RT018-swap-active",
        Severity::Info,
        "swap is active: real-time processes that do not lock their memory may fault to disk"
            .into(),
    );
    f.evidence
        .push(format!("/proc/swaps: {}", c.t.swaps.join(", ")));
    f.fix.text =
        "lock real-time memory (mlockall), or swapoff -a and remove swap from /etc/fstab".into();
    vec![f]
}

fn numa(c: &Ctx) -> Vec<Finding> {
    if c.t.numa_balancing.unwrap_or(0) == 0 {
        return vec![];
    }
    let mut f = finding(
        "RT019-numa-balancing",
        Severity::Warning,
        "automatic NUMA balancing unmaps pages to sample accesses (hinting faults)".into(),
    );
    f.evidence.push(format!(
        "/proc/sys/kernel/numa_balancing = {}",
        c.t.numa_balancing.unwrap_or(0)
    ));
    f.fix.text = "turn it off".into();
    f.fix
        .writes
        .push(("/proc/sys/kernel/numa_balancing".into(), "0".into()));
    f.fix.boot_params.push("numa_balancing=disable".into());
    vec![f]
}

fn rt_throttling(c: &Ctx) -> Vec<Finding> {
    match c.sys.sched_rt_runtime_us {
        Some(r) if r >= 0 => {
            let period = c.sys.sched_rt_period_us.unwrap_or(1_000_000);
            let mut f = finding(
                "RT020-rt-throttling",
                Severity::Info,
                format!("RT tasks are throttled after {r} µs of every {period} µs"),
            );
            f.evidence.push(format!(
                "/proc/sys/kernel/sched_rt_runtime_us = {r}, sched_rt_period_us = {period}"
            ));
            f.fix.text = "a busy RT task is stopped for the rest of each period; -1 turns throttling off (then run stalld, RT022)".into();
            f.fix
                .writes
                .push(("/proc/sys/kernel/sched_rt_runtime_us".into(), "-1".into()));
            vec![f]
        }
        _ => vec![],
    }
}

fn fair_server(c: &Ctx) -> Vec<Finding> {
    let on: Vec<(u32, u64)> =
        c.t.fair_server_runtime_ns
            .iter()
            .copied()
            .filter(|(cpu, r)| c.cpus.contains(cpu) && *r > 0)
            .collect();
    if on.is_empty() {
        return vec![];
    }
    let mut f = finding(
        "RT021-fair-server",
        Severity::Info,
        "the fair server runs CFS tasks ahead of RT tasks when they starve".into(),
    );
    for (cpu, r) in &on {
        f.evidence.push(format!(
            "/sys/kernel/debug/sched/fair_server/cpu{cpu}/runtime = {r} ns"
        ));
        f.fix.writes.push((
            format!("/sys/kernel/debug/sched/fair_server/cpu{cpu}/runtime"),
            "0".into(),
        ));
    }
    f.fix.text = "runtime 0 stops it on the measured CPUs (then run stalld, RT022)".into();
    f.cpus = on.iter().map(|x| x.0).collect();
    vec![f]
}

fn stalld(c: &Ctx) -> Vec<Finding> {
    let throttling_off = c.sys.sched_rt_runtime_us == Some(-1);
    let server_off = !c.t.fair_server_runtime_ns.is_empty()
        && c.t.fair_server_runtime_ns.iter().all(|(_, r)| *r == 0);
    let running = c.t.daemons.iter().any(|d| d.comm == "stalld");
    if running || !(throttling_off || server_off) {
        return vec![];
    }
    let mut f = finding(
        "RT022-no-stalld",
        Severity::Warning,
        "nothing keeps a busy RT task from starving the kernel threads of its CPU".into(),
    );
    f.evidence.push(format!(
        "sched_rt_runtime_us = {:?}; fair server runtimes all 0: {server_off}; no stalld process",
        c.sys.sched_rt_runtime_us
    ));
    f.fix.text = "run stalld (it boosts starved threads briefly)".into();
    vec![f]
}

fn preemption(c: &Ctx) -> Vec<Finding> {
    let m = c.sys.preempt_model.as_str();
    if m == "rt" || m == "full" {
        return vec![];
    }
    let dynamic = c.sys.kernel_version.contains("PREEMPT_DYNAMIC");
    let sev = if m == "unknown" {
        Severity::Info
    } else {
        Severity::High
    };
    let mut f = finding(
        "RT023-preempt-model",
        sev,
        format!("preemption model is {m}: kernel code runs unpreempted for long stretches"),
    );
    f.evidence
        .push(format!("{} (read from {})", m, c.sys.preempt_model_source));
    if dynamic {
        f.fix.text =
            "PREEMPT_DYNAMIC: switch to full at boot (or at run time through debugfs)".into();
        f.fix.boot_params.push("preempt=full".into());
        f.fix
            .writes
            .push(("/sys/kernel/debug/sched/preempt".into(), "full".into()));
    } else {
        f.fix.text = "boot a kernel built with CONFIG_PREEMPT or CONFIG_PREEMPT_RT".into();
    }
    vec![f]
}

fn clocksource(c: &Ctx) -> Vec<Finding> {
    let cur = c.sys.clocksource.as_str();
    if cur.is_empty() || cur == "tsc" || !c.t.available_clocksources.iter().any(|s| s == "tsc") {
        return vec![];
    }
    let sev = if c.sys.hypervisor.is_some() {
        Severity::Info
    } else {
        Severity::Warning
    };
    let mut f = finding(
        "RT024-clocksource",
        sev,
        format!("the clocksource is {cur}, not the TSC: every clock read costs more"),
    );
    f.evidence.push(format!(
        "/sys/devices/system/clocksource/clocksource0/current_clocksource = {cur}; available: {}",
        c.t.available_clocksources.join(" ")
    ));
    f.fix.text = "use the TSC if the kernel trusts it (check dmesg for 'tsc unstable')".into();
    f.fix.writes.push((
        "/sys/devices/system/clocksource/clocksource0/current_clocksource".into(),
        "tsc".into(),
    ));
    f.fix
        .boot_params
        .push("clocksource=tsc tsc=reliable".into());
    vec![f]
}

fn watchdog(c: &Ctx) -> Vec<Finding> {
    if c.t.watchdog != Some(1) {
        return vec![];
    }
    let mask =
        c.t.watchdog_cpumask
            .clone()
            .unwrap_or_else(|| c.sys.online_cpus.clone());
    let on = meets(&mask, c.cpus);
    if on.is_empty() {
        return vec![];
    }
    let mut f = finding(
        "RT025-watchdog",
        Severity::Info,
        format!("the lockup watchdogs run on measured CPU {} (a timer and, with nmi_watchdog, a perf NMI)", cpu_list(&on)),
    );
    f.evidence.push(format!(
        "/proc/sys/kernel/watchdog = 1, nmi_watchdog = {}, watchdog_cpumask = {}",
        c.t.nmi_watchdog.map_or("?".into(), |v| v.to_string()),
        cpu_list(&mask)
    ));
    if !c.housekeeping.is_empty() {
        f.fix.writes.push((
            "/proc/sys/kernel/watchdog_cpumask".into(),
            cpu_list(&c.housekeeping),
        ));
    }
    f.fix.text = "keep the watchdogs on the housekeeping CPUs".into();
    f.fix.boot_params.push("nowatchdog".into());
    f.cpus = on;
    vec![f]
}

fn mce(c: &Ctx) -> Vec<Finding> {
    match c.t.mce_check_interval_s {
        Some(s) if s > 0 => {
            let mut f = finding(
                "RT026-mce-polling",
                Severity::Info,
                format!("machine-check banks are polled every {s} s on every CPU"),
            );
            f.evidence.push(format!(
                "/sys/devices/system/machinecheck/machinecheck0/check_interval = {s}"
            ));
            for cpu in c.cpus {
                f.fix.writes.push((
                    format!("/sys/devices/system/machinecheck/machinecheck{cpu}/check_interval"),
                    "0".into(),
                ));
            }
            f.fix.text = "stop polling on the measured CPUs (corrected errors are then found by interrupt only)".into();
            f.fix.boot_params.push("mce=ignore_ce".into());
            vec![f]
        }
        _ => vec![],
    }
}

fn hypervisor(c: &Ctx) -> Vec<Finding> {
    let Some(h) = &c.sys.hypervisor else {
        return vec![];
    };
    let mut f = finding(
        "RT027-hypervisor",
        Severity::Warning,
        format!("the CPUs are virtual ({h}): the host may preempt a vCPU at any time, unseen by this kernel"),
    );
    f.evidence.push(format!(
        "{h} (read from {})",
        c.sys.hypervisor_source.as_deref().unwrap_or("?")
    ));
    f.fix.text = "pin the vCPUs to isolated host CPUs and run them at a real-time priority on the host; vCPU placement is not visible from inside".into();
    vec![f]
}

fn steal(c: &Ctx) -> Vec<Finding> {
    let on: Vec<(u32, u64, u64)> =
        c.t.cpu_ticks
            .iter()
            .copied()
            .filter(|(cpu, total, steal)| c.cpus.contains(cpu) && *total > 0 && *steal > 0)
            .collect();
    let worst = on
        .iter()
        .map(|(_, t, s)| *s as f64 / *t as f64)
        .fold(0.0f64, f64::max);
    // Below 0.1 % steal since boot is noise of the accounting.
    if worst < 0.001 {
        return vec![];
    }
    let sev = if worst >= 0.01 {
        Severity::High
    } else {
        Severity::Warning
    };
    let mut f = finding(
        "RT028-steal-time",
        sev,
        format!(
            "the hypervisor took up to {:.2} % of a measured CPU's time since boot",
            worst * 100.0
        ),
    );
    for (cpu, total, s) in &on {
        f.evidence.push(format!(
            "/proc/stat cpu{cpu}: steal {s} of {total} ticks ({:.2} %)",
            *s as f64 / *total as f64 * 100.0
        ));
    }
    f.fix.text = "give the guest dedicated host CPUs (no overcommit)".into();
    f.cpus = on.iter().map(|x| x.0).collect();
    vec![f]
}

fn lockdown(c: &Ctx) -> Vec<Finding> {
    match c.t.lockdown.as_deref() {
        Some(l) if l != "none" => {
            let mut f = finding(
                "RT029-lockdown",
                Severity::Warning,
                format!(
                    "kernel lockdown is {l}: tracing and eBPF that read kernel memory are refused"
                ),
            );
            f.evidence
                .push(format!("/sys/kernel/security/lockdown = [{l}]"));
            f.fix.text = "lockdown cannot be lowered at run time: boot without it (lockdown=none, or Secure Boot off) to trace".into();
            vec![f]
        }
        _ => vec![],
    }
}

fn btf(c: &Ctx) -> Vec<Finding> {
    if c.t.btf || c.sys.tuning.is_none() {
        return vec![];
    }
    let mut f = finding(
        "RT030-no-btf",
        Severity::Warning,
        "the kernel has no BTF: eBPF tracing cannot load (tracefs still works)".into(),
    );
    f.evidence.push("/sys/kernel/btf/vmlinux is missing".into());
    f.fix.text = "boot a kernel built with CONFIG_DEBUG_INFO_BTF=y".into();
    vec![f]
}

fn preemptirq(c: &Ctx) -> Vec<Finding> {
    if c.t.preemptirq_events != Some(false) {
        return vec![];
    }
    let mut f = finding(
        "RT031-no-preemptirq",
        Severity::Info,
        "no preemptirq tracepoints: preemption- and IRQ-disabled windows (the bound's D_POID, D_PAIE) cannot be measured".into(),
    );
    f.evidence
        .push("tracefs events/preemptirq is missing".into());
    f.fix.text =
        "boot a kernel with CONFIG_PREEMPTIRQ_TRACEPOINTS=y (the lab's trace kernel has it)".into();
    vec![f]
}

/// The two hygiene checks of the measuring process (Cerqueira & Brandenburg 2013 §2.4: Linux
/// coalesces nanosleep wake-ups by the timer slack, except for real-time policies; cyclictest -m
/// locks memory so no page fault enters a sample).
pub fn check_hygiene(h: &Hygiene, policy_is_rt: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(s) = h.timer_slack_ns {
        if s > 1 && !policy_is_rt {
            let mut f = finding(
                "RT040-timer-slack",
                Severity::High,
                format!("the measuring threads slept with {s} ns of timer slack"),
            );
            f.evidence.push(format!(
                "run hygiene: timer_slack_ns = {s}, policy SCHED_OTHER"
            ));
            f.fix.text = "measure under SCHED_FIFO (the slack is ignored for RT policies) or set PR_SET_TIMERSLACK to 1".into();
            out.push(f);
        }
    }
    if !h.mlockall {
        let mut f = finding(
            "RT041-memory-not-locked",
            Severity::Warning,
            "the measuring process did not lock its memory: page faults may enter samples".into(),
        );
        f.evidence.push("run hygiene: mlockall = false".into());
        f.fix.text =
            "run with the privilege to mlockall (CAP_IPC_LOCK or a raised RLIMIT_MEMLOCK)".into();
        out.push(f);
    }
    out
}

/// Join a traced run's attribution to the findings: by IRQ number (causes `irq:N:name`), by
/// thread id (the threads that ran in the worst samples' timelines) and by CPU. Returns the
/// share of the p99 tail no finding explains.
pub fn join_run(findings: &mut [Finding], a: &AttributionSummary) -> f64 {
    let irq_causes: BTreeMap<u32, &rtscope_model::attribution::CauseSummary> = a
        .causes
        .iter()
        .filter_map(|c| {
            let mut p = c.cause.strip_prefix("irq:")?.splitn(2, ':');
            Some((p.next()?.parse().ok()?, c))
        })
        .collect();
    // Per thread id: (times seen preempting or blocking, max ns, comm, share of the worst samples'
    // summed latency).
    let mut per_pid: BTreeMap<u32, (u64, u64, String, u64)> = BTreeMap::new();
    let worst_total: u64 = a.worst.iter().map(|w| w.latency_ns).sum();
    for w in &a.worst {
        for t in &w.threads {
            let e = per_pid.entry(t.pid).or_insert((0, 0, t.comm.clone(), 0));
            e.0 += 1;
            e.1 = e.1.max(t.ran_ns);
            e.3 += t.ran_ns;
        }
    }
    // Per IRQ and CPU: worst samples on that CPU where the IRQ took time.
    let mut irq_cpu: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    for w in &a.worst {
        for (cause, ns) in &w.parts {
            if let Some(n) = cause
                .strip_prefix("irq:")
                .and_then(|r| r.split(':').next())
                .and_then(|n| n.parse::<u32>().ok())
            {
                if *ns > 0 {
                    *irq_cpu.entry((n, w.cpu)).or_default() += 1;
                }
            }
        }
    }
    let mut explained = 0.0;
    for f in findings.iter_mut() {
        let mut ev: Option<RunEvidence> = None;
        for irq in &f.irqs {
            let Some(c) = irq_causes.get(irq) else {
                continue;
            };
            let name = c.cause.splitn(3, ':').nth(2).unwrap_or("");
            let cpus: Vec<String> = irq_cpu
                .iter()
                .filter(|((n, _), _)| n == irq)
                .map(|((_, cpu), k)| {
                    format!("CPU {cpu} in {k} of the {} worst samples", a.worst.len())
                })
                .collect();
            let e = ev.get_or_insert_with(RunEvidence::default);
            if !e.text.is_empty() {
                e.text.push_str("; ");
            }
            e.text.push_str(&format!(
                "IRQ {irq} ({name}) delayed the probe in {} samples, max {:.1} µs, and caused {:.1} % of the p99 tail{}",
                c.samples_affected,
                c.max_ns as f64 / 1e3,
                c.tail_p99_share * 100.0,
                if cpus.is_empty() { String::new() } else { format!(" (ran on measured {})", cpus.join(", ")) }
            ));
            e.tail_p99_share += c.tail_p99_share;
            e.samples_affected += c.samples_affected;
            e.max_ns = e.max_ns.max(c.max_ns);
        }
        for pid in &f.pids {
            let Some((n, max, comm, sum)) = per_pid.get(pid) else {
                continue;
            };
            let e = ev.get_or_insert_with(RunEvidence::default);
            if !e.text.is_empty() {
                e.text.push_str("; ");
            }
            e.text.push_str(&format!(
                "{comm} (pid {pid}) ran ahead of the probe in {n} of the {} worst samples, max {:.1} µs",
                a.worst.len(),
                *max as f64 / 1e3
            ));
            // Threads have no per-pid p99 share in the summary: their share of the worst
            // samples' latency stands in for it.
            if worst_total > 0 {
                e.tail_p99_share += *sum as f64 / worst_total as f64;
            }
            e.samples_affected += n;
            e.max_ns = e.max_ns.max(*max);
        }
        if let Some(e) = ev {
            explained += e.tail_p99_share;
            f.run = Some(e);
        }
    }
    (1.0 - explained).max(0.0)
}

/// Rank: by the tail share a run tied to the finding, then severity, then code.
pub fn rank(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        let sa = a.run.as_ref().map_or(0.0, |r| r.tail_p99_share);
        let sb = b.run.as_ref().map_or(0.0, |r| r.tail_p99_share);
        sb.total_cmp(&sa)
            .then(b.severity.cmp(&a.severity))
            .then(a.code.cmp(&b.code))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_masks_and_codes() {
        assert_eq!(cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(cpu_mask(&[0, 1]), "3");
        assert_eq!(cpu_mask(&[0, 32]), "1,00000001");
        assert_eq!(check_code("RT001"), Some("RT001-irq-on-measured-cpu"));
        assert_eq!(
            check_code("RT001-irq-on-measured-cpu"),
            Some("RT001-irq-on-measured-cpu")
        );
        assert_eq!(check_code("RT999"), None);
        let mut codes: Vec<&str> = CHECKS.iter().map(|c| c.0).collect();
        codes.dedup();
        assert_eq!(codes.len(), CHECKS.len());
    }
}
