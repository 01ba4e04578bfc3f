//! Text of `measure --probe timerlat` (the IRQ side; the thread side is the measure summary)
//! and of `rtscope noise` (the columns of `rtla osnoise top`, then the noise's sources).

use crate::text::us;
use rtscope_model::noise::NoiseResult;
use rtscope_model::timerlat::TimerlatResult;
use rtscope_model::Stats;
use std::fmt::Write;

fn o(ns: Option<u64>) -> String {
    ns.map(us).unwrap_or_else(|| "-".into())
}

fn avg(s: &Stats) -> String {
    s.avg_ns
        .map_or("-".into(), |a| format!("{:.1}", a / 1000.0))
}

/// Per CPU the IRQ and thread latency side by side, as `rtla timerlat top` (µs).
pub fn timerlat(r: &TimerlatResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "timerlat (kernel): period {} us, timerlat threads {}",
        r.period_us,
        r.thread_priority
            .map_or("at the kernel's priority".into(), |p| format!("FIFO {p}"))
    );
    let _ = writeln!(
        s,
        " CPU |  IRQ: samples      min      avg      max |  Thread: samples      min      avg      max | gaps  lost"
    );
    for c in &r.cpus {
        let (i, t) = (&c.irq_stats, &c.thread_stats);
        let _ = writeln!(
            s,
            "{:>4} | {:>13} {:>8} {:>8} {:>8} | {:>16} {:>8} {:>8} {:>8} | {:>4} {:>5}",
            c.cpu,
            i.samples,
            o(i.min_ns),
            avg(i),
            o(i.max_ns),
            t.samples,
            o(t.min_ns),
            avg(t),
            o(t.max_ns),
            c.seq_gaps,
            c.lost_events
        );
    }
    s.push_str("(latencies in us from the timer's expiry: IRQ = to its handler, Thread = to the timerlat thread running)\n");
    s
}

/// Per CPU as `rtla osnoise top`, then each CPU's largest noise sources.
pub fn noise(r: &NoiseResult, sources_per_cpu: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "osnoise: period {} us, runtime {} us, threshold {}{}",
        r.period_us,
        r.runtime_us,
        r.threshold_us
            .map_or("kernel default (1 us)".into(), |t| format!("{t} us")),
        if r.stopped_by_tracer {
            format!(
                "; STOPPED by the tracer: a single noise reached {} us",
                r.stop_us.unwrap_or(0)
            )
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        s,
        " CPU  Period  Runtime(us)   Noise(us)  % CPU Aval  Max Noise(us)  Max Single(us)      HW     NMI     IRQ  Softirq  Thread  Lost"
    );
    for c in &r.cpus {
        let _ = writeln!(
            s,
            "{:>4} {:>7} {:>12} {:>11} {:>11.5} {:>14} {:>15} {:>7} {:>7} {:>7} {:>8} {:>7} {:>5}",
            c.cpu,
            c.periods,
            c.runtime_us,
            c.noise_us,
            c.cpu_available_pct,
            c.max_period_noise_us,
            c.max_single_noise_us,
            c.hw_count,
            c.nmi_count,
            c.irq_count,
            c.softirq_count,
            c.thread_count,
            c.lost_events
        );
    }
    if sources_per_cpu > 0 && !r.sources.is_empty() {
        s.push_str("sources (from osnoise:*_noise; total, count, max):\n");
        for c in &r.cpus {
            for src in r
                .sources
                .iter()
                .filter(|x| x.cpu == c.cpu)
                .take(sources_per_cpu)
            {
                let _ = writeln!(
                    s,
                    "{:>4} {:<8} {:<24} {:>10} us {:>8}× max {:>9} us",
                    src.cpu,
                    src.kind,
                    format!("{}:{}", src.name, src.id),
                    us(src.total_ns),
                    src.count,
                    us(src.max_ns)
                );
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::noise::{NoiseCpu, NoiseSource};

    #[test]
    fn noise_table_has_rtlas_columns() {
        let r = NoiseResult {
            period_us: 1000,
            runtime_us: 900,
            threshold_us: Some(5),
            cpus: vec![NoiseCpu {
                cpu: 1,
                periods: 2,
                runtime_us: 1800,
                noise_us: 18,
                cpu_available_pct: 99.0,
                max_period_noise_us: 10,
                max_single_noise_us: 7,
                irq_count: 3,
                ..Default::default()
            }],
            sources: vec![NoiseSource {
                cpu: 1,
                kind: "irq".into(),
                name: "local_timer".into(),
                id: 236,
                count: 3,
                total_ns: 12_000,
                max_ns: 5_000,
            }],
            ..Default::default()
        };
        let t = noise(&r, 5);
        assert!(t.contains("threshold 5 us"), "{t}");
        assert!(
            t.contains("   1       2         1800          18    99.00000             10               7       0       0       3        0       0     0"),
            "{t}"
        );
        assert!(t.contains("local_timer:236"), "{t}");
        assert!(t.contains("12.0 us        3× max       5.0 us"), "{t}");
    }
}
