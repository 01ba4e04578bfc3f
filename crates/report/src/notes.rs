//! The sentences a measurement's record says about how it was traced and measured, each from
//! the record's own fields (`hygiene.traced_bursts`, `hygiene.thread_terms`,
//! `hygiene.ring_dropped_samples`): the figures are JSON first, and this is the one place they
//! become text.

use rtscope_model::thread_vars::ThreadVarsRun;
use rtscope_model::TracedBursts;

/// `hygiene.traced_bursts` as a note.
pub fn traced_bursts(b: &TracedBursts) -> String {
    format!(
        "traced in bursts: {} burst(s), {:.1} s traced; only samples inside a burst are explained",
        b.count, b.traced_s
    )
}

/// The tracefs reader's totals of `hygiene.thread_terms` as a note (None: eBPF, no reader).
pub fn tracefs_reader(run: &ThreadVarsRun) -> Option<String> {
    let rd = run.reader.as_ref()?;
    Some(format!(
        "thread terms from the preemptirq events read through tracefs (eBPF cannot attach \
         here): {} records, {:.1} MB, {:.3} s of CPU time, {} events lost{}",
        rd.records,
        rd.bytes as f64 / 1e6,
        rd.cpu_ns as f64 / 1e9,
        run.lost_events,
        if run.lost_events > 0 {
            " (the thread terms may be low)"
        } else {
            ""
        }
    ))
}

/// What the in-kernel reduction of `hygiene.thread_terms` lost, per CPU and per kind (the fix
/// differs: a longer queue, deeper nesting, or a program the kernel skipped while it ran);
/// None when it lost nothing or the terms were read through tracefs.
pub fn thread_terms_lost(run: &ThreadVarsRun) -> Option<String> {
    if run.lost_events == 0 || run.reader.is_some() {
        return None;
    }
    let per_cpu: Vec<String> = run
        .cpus
        .iter()
        .map(|c| {
            format!(
                "cpu {}: {} queue overflows, {} handler-nesting overflows",
                c.cpu, c.queue_overflows, c.nest_overflows
            )
        })
        .collect();
    Some(format!(
        "preemptirq reduction lost {} events: {}; recursion misses (all CPUs): {}",
        run.lost_events,
        per_cpu.join("; "),
        if run.missed_by.is_empty() {
            "none".to_string()
        } else {
            run.missed_by.join(", ")
        }
    ))
}

/// `hygiene.ring_dropped_samples` as a warning's message; `raw` names the raw-samples output
/// as the run's caller does.
pub fn ring_dropped(n: u64, raw: &str) -> String {
    format!(
        "{n} samples could not be streamed to the analysis in time (the sample ring was full): they are in the histograms but not explained, not in {raw} and not in the trace file"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::thread_vars::{CpuThreadMeasure, TracefsReader};

    #[test]
    fn the_figures_of_each_note() {
        let b = TracedBursts {
            count: 3,
            traced_s: 1.25,
        };
        assert_eq!(
            traced_bursts(&b),
            "traced in bursts: 3 burst(s), 1.2 s traced; only samples inside a burst are explained"
        );
        let mut run = ThreadVarsRun {
            lost_events: 7,
            cpus: vec![CpuThreadMeasure {
                cpu: 1,
                queue_overflows: 5,
                nest_overflows: 2,
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(
            thread_terms_lost(&run).as_deref(),
            Some(
                "preemptirq reduction lost 7 events: cpu 1: 5 queue overflows, 2 \
                 handler-nesting overflows; recursion misses (all CPUs): none"
            )
        );
        assert_eq!(tracefs_reader(&run), None);
        run.reader = Some(TracefsReader {
            records: 10,
            bytes: 2_000_000,
            cpu_ns: 1_500_000,
            ..Default::default()
        });
        assert_eq!(thread_terms_lost(&run), None);
        let t = tracefs_reader(&run).unwrap();
        assert!(t.contains("10 records, 2.0 MB, 0.002 s of CPU time, 7 events lost (the thread terms may be low)"), "{t}");
        let r = ring_dropped(4, "the raw CSV");
        assert!(r.starts_with("4 samples could not be streamed"), "{r}");
        assert!(
            r.contains("not in the raw CSV and not in the trace file"),
            "{r}"
        );
    }
}
