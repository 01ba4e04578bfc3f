//! `rtscope trace thread-vars`: ECRTS'20 Table 1's thread variables per CPU as text and JSON
//! (`docs/schema/thread-vars.schema.json`).

use rtscope_model::thread_vars::ThreadVarsRun;

/// ns as µs with ns precision: 12345 → "12.345".
pub fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// Lemma 7's interference-free latency from the four variables:
/// max(D_ST, D_POID) + D_PAIE + D_PSD.
pub fn ifl_ns(t: &rtscope_model::bound::ThreadVars) -> u64 {
    t.dst_ns.max(t.poid_ns) + t.paie_ns + t.psd_ns
}

pub fn text(r: &ThreadVarsRun) -> String {
    let secs = r.duration_ns as f64 / 1e9;
    let mut out = format!(
        "thread variables (ECRTS'20 Table 1) reduced in the kernel from preemptirq tracepoints\n\
         kernel {}, {:.2} s, {} CPU(s); µs with ns precision, interrupt time discounted\n\n",
        if r.kernel_release.is_empty() {
            "?"
        } else {
            &r.kernel_release
        },
        secs,
        r.cpus.len()
    );
    let rows: Vec<Vec<String>> = r
        .cpus
        .iter()
        .map(|c| {
            vec![
                c.cpu.to_string(),
                us(c.thread.poid_ns),
                us(c.thread.paie_ns),
                us(c.thread.psd_ns),
                us(c.thread.dst_ns),
                us(ifl_ns(&c.thread)),
                c.preemptirq_events.to_string(),
                format!("{:.0}", c.preemptirq_events as f64 / secs.max(1e-9)),
                c.sched_sections.to_string(),
                c.lost_events.to_string(),
            ]
        })
        .collect();
    out += &crate::table::render(
        &[
            "cpu",
            "D_POID",
            "D_PAIE",
            "D_PSD",
            "D_ST",
            "IFL",
            "preemptirq events",
            "events/s",
            "sched sections",
            "lost events",
        ],
        &rows,
    );
    out += "IFL = max(D_ST, D_POID) + D_PAIE + D_PSD (Lemma 7)\n";
    if r.lost_events == 0 {
        out += "lost events: 0 (every event reached the state machine)\n";
    } else {
        out += &format!(
            "lost events: {} — NOT A SOUND MEASUREMENT (the maxima may be low)\n",
            r.lost_events
        );
    }
    for w in &r.warnings {
        out += &format!("warning: {}\n", w.message);
    }
    for n in &r.notes {
        out += &format!("note: {n}\n");
    }
    out
}

pub fn json(r: &ThreadVarsRun) -> String {
    serde_json::to_string_pretty(r).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::bound::ThreadVars;
    use rtscope_model::thread_vars::CpuThreadMeasure;
    use rtscope_model::warning::{Warning, WarningCode};

    fn run(lost: u64) -> ThreadVarsRun {
        ThreadVarsRun {
            schema_version: 1,
            kernel_release: "6.12.57".into(),
            duration_ns: 2_000_000_000,
            cpus: vec![CpuThreadMeasure {
                cpu: 1,
                thread: ThreadVars {
                    poid_ns: 12_345,
                    paie_ns: 7,
                    psd_ns: 3_000,
                    dst_ns: 1_500,
                },
                preemptirq_events: 4_000_000,
                sched_sections: 900,
                lost_events: lost,
                ..Default::default()
            }],
            lost_events: lost,
            warnings: if lost > 0 {
                vec![Warning::new(
                    WarningCode::LostEvents,
                    "2 events were not seen",
                )]
            } else {
                vec![]
            },
            ..Default::default()
        }
    }

    #[test]
    fn microseconds_with_ns_precision() {
        assert_eq!(us(0), "0.000");
        assert_eq!(us(7), "0.007");
        assert_eq!(us(12_345), "12.345");
        assert_eq!(us(1_000_000), "1000.000");
    }

    #[test]
    fn text_has_every_variable_and_the_loss() {
        let t = text(&run(0));
        let row = t.lines().find(|l| l.starts_with("1 ")).expect("cpu row");
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "1", "12.345", "0.007", "3.000", "1.500", "15.352", "4000000", "2000000", "900",
                "0"
            ]
        );
        assert!(t.contains("lost events: 0"));
        let bad = text(&run(2));
        assert!(bad.contains("NOT A SOUND MEASUREMENT"), "{bad}");
        assert!(bad.contains("warning: 2 events were not seen"));
    }

    #[test]
    fn json_round_trips() {
        let r = run(2);
        let back: ThreadVarsRun = serde_json::from_str(&json(&r)).unwrap();
        assert_eq!(back, r);
        let v: serde_json::Value = serde_json::from_str(&json(&r)).unwrap();
        assert_eq!(v["cpus"][0]["thread"]["poid_ns"], 12_345);
        assert_eq!(v["lost_events"], 2);
        assert_eq!(v["schema_version"], 1);
    }
}
