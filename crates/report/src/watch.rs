//! `rtscope watch`'s own section of the summary: each watched thread's activations, wake-up
//! latency, timer lateness, run time, period and jitter, and who preempted it.

use crate::text::us;
use rtscope_model::watch::WatchResult;
use rtscope_model::Histogram;
use std::fmt::Write;

fn q(h: &Histogram, p: f64) -> String {
    h.quantile_ns(p).map_or_else(|| "-".into(), us)
}

fn row(s: &mut String, what: &str, h: &Histogram) {
    if h.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "    {what:<16} n={:<8} min {:>8} p50 {:>8} p99 {:>8} p99.9 {:>8} max {:>8} us",
        h.count(),
        h.min_ns().map_or_else(|| "-".into(), us),
        q(h, 0.5),
        q(h, 0.99),
        q(h, 0.999),
        h.max_ns().map_or_else(|| "-".into(), us),
    );
}

/// The watched threads, one block each.
pub fn text(w: &WatchResult) -> String {
    let mut s = String::new();
    let tg: Vec<String> = w.tgids.iter().map(|t| t.to_string()).collect();
    let _ = writeln!(
        s,
        "watched {} (process {}): {} thread(s){}",
        w.target,
        tg.join(","),
        w.threads.len(),
        if w.target_exited {
            " — target exited"
        } else {
            ""
        }
    );
    for t in &w.threads {
        let _ = writeln!(
            s,
            "  thread {} {}: {} activations ({} woken by an hrtimer){}{}",
            t.tid,
            t.comm,
            t.activations,
            t.timer_activations,
            if t.unseen_activations > 0 {
                format!(
                    ", {} more not measured (the kernel reported no wake-up)",
                    t.unseen_activations
                )
            } else {
                String::new()
            },
            if t.exited { ", exited" } else { "" }
        );
        row(&mut s, "timer lateness", &t.timer_lateness);
        row(&mut s, "wake-up latency", &t.wakeup_latency);
        row(&mut s, "run time", &t.run_time);
        row(&mut s, "period", &t.period);
        if let (Some(n), Some(j)) = (t.nominal_period_ns, t.jitter_max_ns) {
            let _ = writeln!(
                s,
                "    period {} us nominal, jitter up to {} us",
                us(n),
                us(j)
            );
        }
        if t.preemptions > 0 {
            let by: Vec<String> = t
                .preempted_by
                .iter()
                .map(|p| {
                    format!(
                        "{} ({}) {}x {} us max {} us",
                        p.comm,
                        p.tid,
                        p.count,
                        us(p.total_ns),
                        us(p.max_ns)
                    )
                })
                .collect();
            let _ = writeln!(
                s,
                "    preempted {} times, {} us in all, by: {}",
                t.preemptions,
                us(t.preempted_ns),
                by.join("; ")
            );
        }
    }
    if w.dropped_events > 0 {
        let _ = writeln!(
            s,
            "  {} scheduling events of the watched threads were dropped (ring buffer full): counts are low",
            w.dropped_events
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::watch::{Preemptor, WatchThread};

    #[test]
    fn names_each_thread_and_its_preemptors() {
        let mut h = Histogram::new();
        h.record(2_000);
        h.record(4_000);
        let t = WatchThread {
            tid: 11,
            comm: "ctl".into(),
            activations: 2,
            unseen_activations: 0,
            timer_activations: 2,
            wakeup_latency: h.clone(),
            timer_lateness: h.clone(),
            run_time: h.clone(),
            period: Histogram::new(),
            nominal_period_ns: None,
            jitter_max_ns: None,
            preemptions: 1,
            preempted_ns: 5_000,
            preempted_by: vec![Preemptor {
                tid: 77,
                comm: "ksoftirqd/1".into(),
                count: 1,
                total_ns: 5_000,
                max_ns: 5_000,
            }],
            exited: true,
        };
        let w = WatchResult {
            tgids: vec![10],
            target: "--pid 10".into(),
            threads: vec![t],
            target_exited: true,
            dropped_events: 0,
        };
        let s = text(&w);
        assert!(s.contains("target exited"), "{s}");
        assert!(s.contains("thread 11 ctl: 2 activations"), "{s}");
        assert!(s.contains("timer lateness"), "{s}");
        assert!(s.contains("ksoftirqd/1 (77) 1x 5.0 us"), "{s}");
        assert!(!s.contains("period "), "{s}");
    }
}
