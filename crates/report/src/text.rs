//! The human summary printed at the end of `measure`/`run`.

use rtscope_model::{Measurement, RunConfig, RunKind, RunRecord, Stats, TraceCapture};
use std::fmt::Write;

pub fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

fn opt_us(ns: Option<u64>) -> String {
    ns.map(us).unwrap_or_else(|| "-".into())
}

fn pct(s: &Stats, p: f64) -> String {
    match s.percentile(p) {
        Some(x) if x.reliable => us(x.value_ns),
        // Too few samples above this percentile to mean anything: shown, but marked.
        Some(x) => format!("{}*", us(x.value_ns)),
        None => "-".into(),
    }
}

/// What `show` prints for a run of any kind, and `measure`/`run` at their end: the run, its
/// kernel, the verb's own result, then hygiene, loads, the tail's causes and the warnings.
pub fn summary(rec: &RunRecord) -> String {
    let sys = &rec.system;
    let mut s = String::new();
    let state = if rec.interrupted {
        " — INTERRUPTED (partial results)".to_string()
    } else if rec.end_reason == rtscope_model::EndReason::Checkpoint {
        format!(
            " — INTERIM RECORD (checkpoint {} at {}): the run had not finished",
            rec.checkpoint.as_ref().map_or(0, |c| c.number),
            rec.checkpoint
                .as_ref()
                .map_or("?", |c| c.written_at.as_str())
        )
    } else {
        String::new()
    };
    match rec.measurement() {
        Some(m) => {
            let _ = writeln!(
                s,
                "rtscope {} — run {} — {} — {:.1} s{state}",
                rec.verb,
                rec.id,
                measurement_setup(&m.config),
                rec.wall_duration_s
            );
        }
        None => {
            let _ = writeln!(
                s,
                "rtscope {} — run {} — {} — {:.1} s{state}",
                rec.verb,
                rec.id,
                rec.kind.name(),
                rec.wall_duration_s
            );
        }
    }
    let loads = rec.load_names();
    let _ = writeln!(
        s,
        "kernel {} (preempt {}: {}), clocksource {}, {}{}",
        sys.kernel_release,
        sys.preempt_model,
        sys.preempt_model_source,
        sys.clocksource,
        sys.hypervisor
            .as_deref()
            .map(|h| format!("hypervisor {h}"))
            .unwrap_or_else(|| "no hypervisor detected".into()),
        if loads.is_empty() {
            String::new()
        } else {
            format!(", load {}", loads.join("+"))
        }
    );
    match &rec.kind {
        RunKind::Measurement(m) => {
            measurement(&mut s, m);
            // The kernel probe's IRQ side (`measure --probe timerlat`).
            if let Some(t) = &m.timerlat {
                s.push_str(&crate::osnoise::timerlat(t));
            }
            if let Some(w) = &m.watch {
                s.push_str(&crate::watch::text(w));
            }
        }
        RunKind::Taskset(r) => s.push_str(&crate::taskset::result(r)),
        RunKind::TasksetSweep(r) => s.push_str(&crate::taskset::sweep(r)),
        RunKind::Rhealstone(r) => s.push_str(&crate::bench::rhealstone(r)),
        RunKind::SchedScale(r) => s.push_str(&crate::bench::sched_scale(r)),
        RunKind::Pdlt(r) => s.push_str(&crate::bench::pdlt(r)),
        RunKind::Practise(r) => s.push_str(&crate::practise::text(r)),
        RunKind::PractiseKernel(r) => s.push_str(&crate::practise::kernel_text(r)),
        RunKind::Mbwi(r) => s.push_str(&crate::mbwi::text(r)),
        RunKind::TraceRecord(t) => s.push_str(&capture(t)),
        RunKind::Load(l) => {
            let _ = writeln!(s, "loads alone, policy {}", l.policy);
        }
        RunKind::Noise(n) => s.push_str(&crate::osnoise::noise(n, 8)),
    }
    if !s.ends_with('\n') {
        s.push('\n');
    }
    let h = &rec.hygiene;
    let mut hy = Vec::new();
    if h.mlockall {
        hy.push(format!(
            "mlockall, {} KiB stack + {} KiB buffers prefaulted",
            h.prefaulted_stack_bytes / 1024,
            h.prefaulted_heap_bytes / 1024
        ));
    } else {
        hy.push("memory NOT locked".into());
    }
    match h.cpu_dma_latency_us {
        Some(v) => hy.push(format!("/dev/cpu_dma_latency held at {v} us")),
        None => hy.push("/dev/cpu_dma_latency not held".into()),
    }
    if let Some(rss) = h.peak_rss_kib {
        hy.push(format!("peak RSS {:.1} MiB", rss as f64 / 1024.0));
    }
    if let Some(sl) = h.timer_slack_ns {
        hy.push(format!("timer slack {sl} ns"));
    }
    let _ = writeln!(s, "hygiene: {}", hy.join("; "));
    for n in &h.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    for l in &rec.loads {
        let figs: Vec<String> = l
            .figures
            .iter()
            .map(|(k, v)| format!("{k}={v:.1}"))
            .collect();
        let _ = writeln!(s, "load {}: {}", l.kind, figs.join(" "));
    }
    if let Some(m) = rec.measurement() {
        if let Some(a) = &m.attribution {
            for (cpu, line) in &a.per_cpu_tail {
                let _ = writeln!(s, "tail CPU {cpu}: {line}");
            }
        }
        if let Some(b) = &m.bound {
            bound_lines(&mut s, b);
        }
        if let Some(t) = &m.tail {
            crate::tail::summary_lines(&mut s, t);
        }
    }
    for w in &rec.warnings {
        let _ = writeln!(s, "warning [{}]: {}", w.code.as_str(), w.message);
    }
    s
}

/// A measurement's policy, interval, timer and clock, as the first line shows them.
fn measurement_setup(c: &RunConfig) -> String {
    let policy = match c.policy {
        rtscope_model::Policy::Fifo | rtscope_model::Policy::Rr => {
            format!("{} prio {}", c.policy.name(), c.priority)
        }
        rtscope_model::Policy::Other => format!("other nice {}", c.nice),
        rtscope_model::Policy::Deadline => {
            let d = c.deadline.as_ref();
            format!(
                "deadline runtime/deadline/period {}/{}/{} us",
                d.map_or(0, |d| d.runtime_ns / 1000),
                d.map_or(0, |d| d.deadline_ns / 1000),
                d.map_or(0, |d| d.period_ns / 1000)
            )
        }
    };
    format!(
        "{} — interval {} us{} — timer {} on {}",
        policy,
        c.interval_us,
        if c.distance_us > 0 {
            format!(" (+{} us per thread)", c.distance_us)
        } else {
            String::new()
        },
        c.timer.name(),
        match c.clock {
            rtscope_model::ClockId::Monotonic => "CLOCK_MONOTONIC",
            rtscope_model::ClockId::Realtime => "CLOCK_REALTIME",
        },
    )
}

/// A measurement's per-thread latency table, its break sample and worst samples.
fn measurement(s: &mut String, m: &Measurement) {
    let _ = writeln!(
        s,
        "\n{:>4} {:>7} {:<10} {:>9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>9} {:>9} {:>8}",
        "CPU",
        "TID",
        "policy",
        "samples",
        "min",
        "avg",
        "median",
        "p99",
        "p99.9",
        "p99.99",
        "p99.999",
        "max",
        "overruns"
    );
    let row = |s: &mut String, cpu: &str, tid: &str, pol: &str, st: &Stats, ov: u64| {
        let _ = writeln!(
            s,
            "{:>4} {:>7} {:<10} {:>9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>9} {:>9} {:>8}",
            cpu,
            tid,
            pol,
            st.samples,
            opt_us(st.min_ns),
            st.avg_ns
                .map(|a| format!("{:.1}", a / 1000.0))
                .unwrap_or("-".into()),
            opt_us(st.median_ns),
            pct(st, 99.0),
            pct(st, 99.9),
            pct(st, 99.99),
            pct(st, 99.999),
            opt_us(st.max_ns),
            ov
        );
    };
    for t in &m.threads {
        row(
            s,
            &t.cpu.to_string(),
            &t.tid.to_string(),
            &format!("{}/{}", t.observed_policy, t.observed_priority),
            &t.stats,
            t.overruns,
        );
    }
    if m.threads.len() > 1 {
        row(s, "all", "", "", &m.stats, m.overruns);
    }
    let _ = writeln!(
        s,
        "(latencies in us; * = fewer than 10 samples above that percentile: not reliable)"
    );
    if let Some(st) = m.stats.stddev_ns {
        let _ = writeln!(s, "stddev {:.1} us", st / 1000.0);
    }
    if let Some(b) = &m.break_sample {
        let _ = writeln!(
            s,
            "break: CPU {} thread {} cycle {} latency {} us > the break threshold{}",
            b.cpu,
            b.tid,
            b.cycle,
            us(b.latency_ns),
            // The threshold as the run was given it, whichever verb's flag set it
            // (`measure --break-above`, `cyclictest -b`).
            m.config
                .break_above_us
                .map_or(String::new(), |t| format!(" ({t} us)"))
        );
    }
    let worst: Vec<_> = {
        let mut w: Vec<_> = m.threads.iter().flat_map(|t| t.worst.iter()).collect();
        w.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
        w.into_iter().take(5).collect()
    };
    if !worst.is_empty() {
        let _ = write!(s, "worst: ");
        let parts: Vec<String> = worst
            .iter()
            .map(|w| format!("{} us (CPU {} cycle {})", us(w.latency_ns), w.cpu, w.cycle))
            .collect();
        let _ = writeln!(s, "{}", parts.join(", "));
    }
}

/// `trace record`'s capture, two lines (names from the kernel are escaped).
pub fn capture(t: &TraceCapture) -> String {
    let per_kind: Vec<String> = t
        .events_per_kind
        .iter()
        .map(|(k, v)| format!("{}={v}", k.escape_debug()))
        .collect();
    format!(
        "capture   {} (keep {}): {} events in {:.2} s, lost {}, left out by the relevance filter {}\n\
         events    {}\n",
        t.mechanism.escape_debug(),
        t.keep.escape_debug(),
        t.events,
        t.duration_s,
        t.lost_events,
        t.filtered_events,
        per_kind.join(" ")
    )
}

/// `measure --bound`: per CPU, each characterization's bound beside the observed maximum, and
/// when the sliding-window bound first reached the run's maximum (the full rtsl-style text is
/// `rtscope bound --trace FILE.rtt`).
fn bound_lines(s: &mut String, b: &rtscope_model::bound::BoundReport) {
    let lost = rtscope_analysis::bound::render::lost_label(b);
    let label = if b.estimate {
        " (ESTIMATE, NOT A SOUND BOUND: no preemptirq tracepoints, thread terms = observed max non-interrupt delay)".to_string()
    } else if let Some(l) = &lost {
        format!(" ({l})")
    } else {
        String::new()
    };
    let _ = writeln!(s, "latency bound (ECRTS'20 Theorem 8){label}:");
    let ttb = rtscope_analysis::bound::events::time_to_bound(&b.series);
    for c in &b.cpus {
        let obs = c.observed_max_latency_ns;
        let parts: Vec<String> = c
            .bounds
            .named()
            .iter()
            .map(|(name, cb)| match cb.latency_ns {
                Some(l) => match obs.filter(|&o| o > 0) {
                    Some(o) => format!("{name}={} ({:.2}x)", us(l), l as f64 / o as f64),
                    None => format!("{name}={}", us(l)),
                },
                None => format!("{name}=did-not-converge"),
            })
            .collect();
        let _ = writeln!(
            s,
            "bound CPU {}: observed max {} | {}",
            c.cpu,
            obs.map_or("-".to_string(), us),
            parts.join(" ")
        );
        if let Some(t) = ttb.get(&c.cpu) {
            let _ = writeln!(
                s,
                "bound CPU {}: sliding_window >= final observed max {}",
                c.cpu,
                t.map_or("never".to_string(), |t| format!("from t = {t:.1} s"))
            );
        }
    }
    for w in &b.warnings {
        let _ = writeln!(s, "bound warning: {w}");
    }
}
