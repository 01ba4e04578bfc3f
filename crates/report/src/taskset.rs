//! Text of `taskset check` and `taskset run`: placement, predictions and the per-task table.

use rtscope_model::taskset::{Placement, TaskSet, TasksetResult, TestResult, Verdict};
use std::fmt::Write as _;

/// One line per CPU group of a partitioned or clustered placement: its CPUs, Σ U and task ids.
/// `groups` holds (CPUs, task id, task utilisation); a global placement prints nothing.
pub fn placement(kind: &str, heuristic: &str, groups: &[(Vec<u32>, u32, f64)]) -> String {
    let mut o = String::new();
    if kind != "global" {
        let mut by: std::collections::BTreeMap<String, (f64, Vec<u32>)> = Default::default();
        for (cpus, id, u) in groups {
            let e = by.entry(format!("{cpus:?}")).or_default();
            e.0 += u;
            e.1.push(*id);
        }
        for (cpus, (u, ids)) in by {
            let _ = writeln!(o, "  {heuristic} {cpus}: U = {u:.4}, tasks {ids:?}");
        }
    }
    o
}

/// `taskset check`: the set read from `source`, its placement (`groups` as for [`placement`]),
/// the admission method and the predictions.
pub fn check(
    source: &str,
    set: &TaskSet,
    placement_of: &Placement,
    groups: &[(Vec<u32>, u32, f64)],
    admission_method: &str,
    preds: &[TestResult],
) -> String {
    let mut o = format!(
        "task set {source}: {} tasks, U = {:.4}\n",
        set.tasks.len(),
        set.utilisation()
    );
    o += &placement(&placement_of.kind, &placement_of.heuristic, groups);
    let _ = writeln!(o, "admission: {admission_method}");
    o + &predictions(preds)
}

pub fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Schedulable => "schedulable",
        Verdict::NotSchedulable => "NOT schedulable",
        Verdict::Inconclusive => "inconclusive",
    }
}

pub fn predictions(p: &[TestResult]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "predictions:");
    for r in p {
        let _ = writeln!(
            o,
            "  {:<22} {:<8} {:<16} {}{}",
            r.test,
            r.scope,
            verdict(r.verdict),
            if r.exact { "" } else { "(sufficient) " },
            r.detail
        );
    }
    o
}

pub fn summary_line(r: &TasksetResult) -> String {
    let pred = overall(&r.predictions);
    let rate = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}"));
    format!(
        "policy={} placement={} U={:.3} jobs={} misses={} ({:.3} %) overruns={} measuredU={:.3} migrations/s={} ctxsw/s={} predicted={}",
        r.config.policy,
        r.config.placement.kind,
        r.set.utilisation(),
        r.total_jobs,
        r.total_misses,
        r.miss_pct,
        r.total_dl_overruns,
        r.measured_utilisation,
        rate(r.migrations_per_s),
        rate(r.context_switches_per_s),
        pred
    )
}

/// One word for the whole set: schedulable if an exact or sufficient timing test says so for
/// every scope; not schedulable if any exact test fails; inconclusive otherwise.
pub fn overall(p: &[TestResult]) -> &'static str {
    let timing: Vec<&TestResult> = p.iter().filter(|r| r.test != "kernel-admission").collect();
    let mut scopes: Vec<&str> = timing.iter().map(|r| r.scope.as_str()).collect();
    scopes.sort_unstable();
    scopes.dedup();
    if timing.iter().any(|r| r.verdict == Verdict::NotSchedulable) {
        return "not-schedulable";
    }
    let all_ok = scopes.iter().all(|s| {
        timing
            .iter()
            .any(|r| r.scope == *s && r.verdict == Verdict::Schedulable)
    });
    if all_ok && !scopes.is_empty() {
        "schedulable"
    } else {
        "inconclusive"
    }
}

pub fn result(r: &TasksetResult) -> String {
    let mut o = String::new();
    let _ =
        writeln!(o,
        "task set {}: {} tasks, U = {:.4}, policy {}{}, placement {} ({}), {:.1} s, WSS {} KiB {}",
        r.config.source,
        r.tasks.len(),
        r.set.utilisation(),
        r.config.policy,
        r.config
            .priorities
            .as_deref()
            .map(|p| format!("/{p}"))
            .unwrap_or_default(),
        r.config.placement.kind,
        r.config.placement.heuristic,
        r.config.duration_s,
        r.config.wss_bytes / 1024,
        r.config.access
    );
    let groups: Vec<(Vec<u32>, u32, f64)> = r
        .tasks
        .iter()
        .map(|t| {
            (
                t.cpus.clone(),
                t.id,
                t.wcet_ns as f64 / t.period_ns.max(1) as f64,
            )
        })
        .collect();
    o.push_str(&placement(
        &r.config.placement.kind,
        &r.config.placement.heuristic,
        &groups,
    ));
    for c in &r.calibration {
        let _ = writeln!(
            o,
            "calibration: {:.3} ns/element at start, {} at end (drift {})",
            c.ns_per_element_start,
            c.ns_per_element_end
                .map(|v| format!("{v:.3}"))
                .unwrap_or("-".into()),
            c.drift_pct
                .map(|v| format!("{v:+.1} %"))
                .unwrap_or("-".into())
        );
    }
    let _ = writeln!(
        o,
        "admission: limit {:.3}/CPU; {}",
        r.admission.limit_per_cpu, r.admission.method
    );
    let _ = writeln!(o,
        "{:>4} {:>8} {:>8} {:>8} {:>9} {:>5} {:>6} {:>7} {:>9} {:>9} {:>8} {:>8} {:>7} {:>5} {:>6} {:>5}",
        "id", "C_us", "T_ms", "D_ms", "policy", "prio", "jobs", "miss%", "maxR_ms", "avgR_ms", "minLax", "avgLax", "exec/C", "migr", "csw", "ovr"
    );
    for t in &r.tasks {
        let _ = writeln!(o,
            "{:>4} {:>8.0} {:>8.1} {:>8.1} {:>9} {:>5} {:>6} {:>7.2} {:>9.3} {:>9.3} {:>8.3} {:>8.3} {:>7.2} {:>5} {:>6} {:>5}",
            t.id,
            t.wcet_ns as f64 / 1e3,
            t.period_ns as f64 / 1e6,
            t.deadline_ns as f64 / 1e6,
            t.policy,
            t.priority,
            t.jobs,
            t.miss_pct,
            t.max_response_ns as f64 / 1e6,
            t.avg_response_ns / 1e6,
            t.min_norm_laxity,
            t.avg_norm_laxity,
            t.avg_exec_ns / t.wcet_ns.max(1) as f64,
            t.migrations.map(|m| m.to_string()).unwrap_or("-".into()),
            t.voluntary_switches
                .zip(t.involuntary_switches)
                .map(|(a, b)| (a + b).to_string())
                .unwrap_or("-".into()),
            t.dl_overruns
        );
    }
    if let Some(v) = &r.rt_app {
        o.push_str(&rt_app_view(v));
    }
    o.push_str(&predictions(&r.predictions));
    let _ = writeln!(o, "observed: {}", summary_line(r));
    for w in &r.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    o
}

/// rt-app's own view of its run (`--engine rt-app`), from its logs' columns, in µs.
fn rt_app_view(v: &rtscope_model::taskset::RtAppView) -> String {
    let mut o = String::new();
    let logs = match v.logs.as_str() {
        "streamed" => ", logs streamed",
        "files" => ", logs read from files at the end",
        _ => "",
    };
    let _ = writeln!(
        o,
        "rt-app ({}, pid {}, {}{logs}):",
        v.binary, v.pid, v.ended
    );
    let _ = writeln!(
        o,
        "  {:<20} {:>6} {:>10} {:>10} {:>11} {:>10} {:>9} {:>9} {:>9}",
        "thread",
        "jobs",
        "run_us",
        "period_us",
        "c_period_us",
        "minSlack",
        "slack<0",
        "wuLat_us",
        "maxWuLat"
    );
    for t in &v.threads {
        let _ = writeln!(
            o,
            "  {:<20} {:>6} {:>10.0} {:>10.0} {:>11} {:>10} {:>9} {:>9.0} {:>9}",
            t.name,
            t.jobs,
            t.mean_run_us,
            t.mean_period_us,
            t.c_period_us,
            t.min_slack_us,
            t.negative_slack_jobs,
            t.mean_wu_lat_us,
            t.max_wu_lat_us
        );
    }
    if let Some(k) = &v.kernel {
        let _ = writeln!(
            o,
            "the kernel's view (every wake-up of rt-app's threads, from the scheduler's tracepoints):"
        );
        let _ = writeln!(
            o,
            "  {:<20} {:>7} {:>6} {:>11} {:>8} {:>8} {:>6}",
            "thread", "tid", "jobs", "activations", "unseen", "wake_max", "agree"
        );
        for a in &v.agreement {
            let wake_max = a
                .tid
                .and_then(|tid| k.threads.iter().find(|t| t.tid == tid))
                .and_then(|t| t.wakeup_latency.max_ns())
                .map_or("-".into(), |n| format!("{}us", n / 1000));
            let _ = writeln!(
                o,
                "  {:<20} {:>7} {:>6} {:>11} {:>8} {:>8} {:>6}",
                a.name,
                a.tid.map_or("-".into(), |t| t.to_string()),
                a.jobs,
                a.activations,
                a.unseen_activations,
                wake_max,
                if a.agree { "yes" } else { "no" }
            );
            if let Some(why) = &a.why {
                let _ = writeln!(o, "    {why}");
            }
        }
    }
    o
}

/// One line per run of a sweep as it ends (`taskset sweep` without `-q`).
pub fn sweep_run_line(r: &rtscope_model::taskset::SweepRun) -> String {
    match &r.error {
        Some(e) => format!(
            "load {:<6} set {:>3} {:<8} {}: {e}",
            r.load, r.set, r.policy, r.status
        ),
        None => format!(
            "load {:<6} set {:>3} {:<8} U={:.4} jobs={} misses={} ({:.2} %) overruns={} job CPU/C ≤ {:.3}",
            r.load,
            r.set,
            r.policy,
            r.utilisation,
            r.jobs,
            r.misses,
            r.miss_pct,
            r.dl_overruns,
            r.max_exec_over_c
        ),
    }
}

/// The sweep's table: per load and policy, the mean over sets of each set's miss % ± the 95 %
/// CI half-width, the worst set, pooled counts; then the kernel settings it changed.
pub fn sweep(r: &rtscope_model::taskset::SweepResult) -> String {
    let c = &r.config;
    let mut o = format!(
        "taskset sweep: {} on CPUs {:?}, loads {:?} ({}), {} sets per point × {:?}, {} tasks per CPU, {} s per run, work {}, DEADLINE runtime C × {} + {} µs, seed {}\n",
        c.placement,
        c.cpus,
        c.loads,
        if c.placement == "global" { "total U" } else { "per-CPU R" },
        c.sets,
        c.policies,
        c.tasks_per_cpu,
        c.duration_s,
        c.work,
        c.margin,
        c.margin_us,
        c.seed
    );
    let _ = writeln!(
        o,
        "{:<7} {:<9} {:>5} {:>8} {:>22} {:>8} {:>10} {:>9} {:>9}",
        "load",
        "policy",
        "sets",
        "refused",
        "miss % mean ± 95 % CI",
        "max %",
        "jobs",
        "misses",
        "overruns"
    );
    for p in &r.points {
        let ci = p
            .ci95_half_pct
            .map(|h| format!("{:.3} ± {h:.3}", p.mean_miss_pct))
            .unwrap_or_else(|| format!("{:.3}", p.mean_miss_pct));
        let _ = writeln!(
            o,
            "{:<7} {:<9} {:>5} {:>8} {:>22} {:>8.3} {:>10} {:>9} {:>9}",
            p.load,
            p.policy,
            p.sets,
            p.refused + p.failed,
            ci,
            p.max_miss_pct,
            p.jobs,
            p.misses,
            p.dl_overruns
        );
    }
    let _ = writeln!(o, "admission: {}", r.admission.method);
    for s in &r.kernel_settings {
        let _ = writeln!(
            o,
            "kernel setting: {} = {} during the sweep (was {}; {})",
            s.path,
            s.during,
            s.before,
            if s.restored {
                "restored"
            } else {
                "NOT restored"
            }
        );
    }
    let _ = writeln!(
        o,
        "{} runs in {:.0} s{}",
        r.runs.len(),
        r.elapsed_s,
        if r.interrupted { " (interrupted)" } else { "" }
    );
    o
}
