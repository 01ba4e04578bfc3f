//! `rtscope trace thread-vars`: ECRTS'20 Table 1's thread variables per CPU as text and JSON
//! (`docs/schema/thread-vars.schema.json`).

use rtscope_model::thread_vars::{CodeSite, PoidSite, ThreadVarsRun};

/// ns as µs with ns precision: 12345 → "12.345".
pub fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// Lemma 7's interference-free latency from the four variables:
/// max(D_ST, D_POID) + D_PAIE + D_PSD.
pub fn ifl_ns(t: &rtscope_model::bound::ThreadVars) -> u64 {
    t.dst_ns.max(t.poid_ns) + t.paie_ns + t.psd_ns
}

fn name_of(sym: &Option<String>, ip: u64) -> String {
    sym.clone().unwrap_or_else(|| format!("{ip:#x}"))
}

/// "irq_disable at f+0x1 (called from g+0x2)"; raw addresses when not symbolized.
fn site(s: &CodeSite) -> String {
    let name = name_of;
    match (s.ip, s.parent_ip) {
        (0, 0) => s.event.clone(),
        // parent_ip is 0 on kernels without frame pointers (CALLER_ADDR1).
        (ip, 0) => format!("{} at {}", s.event, name(&s.symbol, ip)),
        (ip, pip) => format!(
            "{} at {} (called from {})",
            s.event,
            name(&s.symbol, ip),
            name(&s.parent_symbol, pip)
        ),
    }
}

/// Seconds from the start of the measurement to the interval's opening event.
fn began(at: &PoidSite, started_ns: u64) -> Option<String> {
    (started_ns > 0 && at.from_ts_ns >= started_ns)
        .then(|| format!("{:.3}", (at.from_ts_ns - started_ns) as f64 / 1e9))
}

/// " in comm (tid N)" when known.
fn task(at: &PoidSite) -> String {
    if at.comm.is_empty() {
        String::new()
    } else {
        format!(" in {} (tid {})", at.comm, at.tid)
    }
}

/// The caller frames of a close's stack: the tracepoint's own machinery (the BPF program,
/// bpf_trace_run*, __traceiter_*, trace_preempt_on, trace_hardirqs_on*, preempt_count_sub)
/// and unsymbolized frames left out.
pub fn callers(at: &PoidSite) -> Vec<String> {
    const MACHINERY: [&str; 6] = [
        "bpf_",
        "__traceiter_",
        "trace_preempt_on",
        "trace_hardirqs_on",
        "preempt_count_sub",
        "__bpf_trace_",
    ];
    at.stack
        .iter()
        .filter_map(|f| f.symbol.clone())
        .filter(|s| !MACHINERY.iter().any(|m| s.starts_with(m)))
        .collect()
}

/// One line: "longest D_POID, cpu 0: 587.091 µs from preempt_disable at f+0x1 to
/// preempt_enable at g+0x2, closed in g+0x2 < h+0x3 < … (7 events inside)".
pub fn poid_line(cpu: u32, poid_ns: u64, at: &PoidSite, started_ns: u64) -> String {
    let c = callers(at);
    format!(
        "longest D_POID, cpu {cpu}: {} µs{}{} from {} to {}{} ({} events inside, {} µs of \
         interrupts discounted)",
        us(poid_ns),
        began(at, started_ns)
            .map(|s| format!(" at {s} s"))
            .unwrap_or_default(),
        task(at),
        site(&at.from),
        site(&at.to),
        if c.is_empty() {
            String::new()
        } else {
            format!(
                ", closed in {}",
                c.iter().take(8).cloned().collect::<Vec<_>>().join(" < ")
            )
        },
        at.events,
        us(at.irq_ns)
    )
}

pub fn text(r: &ThreadVarsRun) -> String {
    let secs = r.duration_ns as f64 / 1e9;
    let how = if r.mechanism == "tracefs" {
        "read through tracefs and streamed through the state machine in user space"
    } else {
        "reduced in the kernel (eBPF)"
    };
    let mut out = format!(
        "thread variables (ECRTS'20 Table 1) from preemptirq tracepoints, {how}\n\
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
                us(c.irq_entry_exit_ns),
                c.irq_arrivals.to_string(),
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
            "IRQ entry/exit",
            "arrivals",
            "preemptirq events",
            "events/s",
            "sched sections",
            "lost events",
        ],
        &rows,
    );
    out += "IFL = max(D_ST, D_POID) + D_PAIE + D_PSD (Lemma 7); IRQ entry/exit = an arrival's \
            hard-IRQ context outside its handler (max over the arrivals), which the bound adds to \
            every IRQ instance\n";
    for c in &r.cpus {
        if let Some(at) = &c.poid_at {
            out += &format!(
                "longest D_POID, cpu {}: {} µs ({} µs of interrupts discounted)\n  from {}\n  to   {}\n",
                c.cpu,
                us(c.thread.poid_ns),
                us(at.irq_ns),
                site(&at.from),
                site(&at.to)
            );
            out += &format!(
                "  began {} s into the measurement{}; {} events applied inside (each ran the \
                 reduction's programs inside the interval)\n",
                began(at, r.started_ns).unwrap_or_else(|| "?".into()),
                task(at),
                at.events
            );
            if !at.stack.is_empty() {
                out += "  stack at the close:\n";
                for f in &at.stack {
                    out += &format!("    {}\n", name_of(&f.symbol, f.ip));
                }
            }
        }
    }
    if let Some(rd) = &r.reader {
        out += &format!(
            "tracefs reader: {} records ({:.0}/s), {:.1} MB read, {:.3} s of CPU time ({:.1} % of \
             the run), {} restarts after ring-buffer gaps\n",
            rd.records,
            rd.records as f64 / secs.max(1e-9),
            rd.bytes as f64 / 1e6,
            rd.cpu_ns as f64 / 1e9,
            100.0 * rd.cpu_ns as f64 / (r.duration_ns.max(1) as f64),
            rd.restarts
        );
    }
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
                irq_entry_exit_ns: 2_250,
                irq_arrivals: 3_100,
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
                "1", "12.345", "0.007", "3.000", "1.500", "15.352", "2.250", "3100", "4000000",
                "2000000", "900", "0"
            ]
        );
        assert!(t.contains("lost events: 0"));
        let bad = text(&run(2));
        assert!(bad.contains("NOT A SOUND MEASUREMENT"), "{bad}");
        assert!(bad.contains("warning: 2 events were not seen"));
    }

    #[test]
    fn the_longest_poid_is_named_with_its_callers() {
        use rtscope_model::thread_vars::{CodeSite, PoidSite};
        let sym = |event: &str, ip: u64, s: &str| CodeSite {
            event: event.into(),
            ip,
            parent_ip: 0,
            symbol: Some(s.into()),
            parent_symbol: None,
        };
        let frame = |s: Option<&str>| CodeSite {
            ip: 1,
            symbol: s.map(String::from),
            ..Default::default()
        };
        let at = PoidSite {
            from: sym("preempt_disable", 0x10, "_raw_spin_lock+0x17"),
            to: sym("preempt_enable", 0x20, "_raw_spin_unlock+0x16"),
            irq_ns: 7_472,
            from_ts_ns: 1_362_000_000,
            events: 41,
            stack: vec![
                frame(None),
                frame(Some("bpf_trace_run2+0x89")),
                frame(Some("trace_preempt_on+0x4e")),
                frame(Some("preempt_count_sub+0x4b")),
                frame(Some("_raw_spin_unlock+0x16")),
                frame(Some("unmap_page_range+0x4af")),
            ],
            tid: 53,
            comm: "rtscope".into(),
        };
        assert_eq!(
            poid_line(0, 589_564, &at, 1_000_000_000),
            "longest D_POID, cpu 0: 589.564 µs at 0.362 s in rtscope (tid 53) from preempt_disable \
             at _raw_spin_lock+0x17 to preempt_enable at _raw_spin_unlock+0x16, closed in \
             _raw_spin_unlock+0x16 < unmap_page_range+0x4af (41 events inside, 7.472 µs of \
             interrupts discounted)"
        );
        // Unknown start: no time; a parent_ip is named when the kernel gave one.
        let mut r = run(0);
        r.cpus[0].poid_at = Some(PoidSite {
            from: CodeSite {
                parent_ip: 0x30,
                parent_symbol: Some("caller+0x1".into()),
                ..at.from.clone()
            },
            ..at
        });
        let t = text(&r);
        assert!(
            t.contains("longest D_POID, cpu 1: 12.345 µs (7.472 µs of interrupts discounted)"),
            "{t}"
        );
        assert!(
            t.contains("from preempt_disable at _raw_spin_lock+0x17 (called from caller+0x1)"),
            "{t}"
        );
        assert!(
            t.contains("began ? s into the measurement in rtscope (tid 53); 41 events"),
            "{t}"
        );
        assert!(t.contains("    unmap_page_range+0x4af\n"), "{t}");
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
