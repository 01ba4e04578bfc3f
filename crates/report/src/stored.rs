//! Text of the verbs that read the results store: `runs`' table, `show`'s page and `export`'s
//! CSV. Stored strings (hostnames, tags, command lines) are shown escaped so a hostile value
//! cannot drive the terminal.

use rtscope_model::RunRecord;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Left-aligned columns separated by two spaces, control characters escaped.
pub fn table<const N: usize>(rows: &[[String; N]]) -> String {
    let clean = |s: &str| s.escape_debug().to_string();
    let mut w = [0usize; N];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(clean(c).chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{:<width$}", clean(c), width = w[i]))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// ns → µs with one decimal, "-" when absent.
pub fn us(ns: Option<f64>) -> String {
    match ns {
        Some(v) => format!("{:.1}", v / 1000.0),
        None => "-".into(),
    }
}

/// One stored run in full: who, when, where and how, then its summary. `state` is the run's
/// state as the store tells it, `tags` every tag it carries.
pub fn show(rec: &RunRecord, state: &str, tags: &BTreeMap<String, String>) -> String {
    let esc = |s: &str| s.escape_debug().to_string();
    let mut o = String::new();
    let _ = writeln!(o, "run       {}", esc(&rec.id));
    let _ = writeln!(
        o,
        "started   {}  ({:.1} s, {})",
        esc(&rec.started_at),
        rec.wall_duration_s,
        esc(state)
    );
    let _ = writeln!(
        o,
        "host      {}  kernel {} ({})",
        esc(&rec.system.hostname),
        esc(&rec.system.kernel_release),
        esc(&rec.system.preempt_model)
    );
    let _ = writeln!(
        o,
        "command   {}",
        esc(&rtscope_model::secrets::redact_argv(&rec.config.cmdline).join(" "))
    );
    if !tags.is_empty() {
        let t: Vec<String> = tags
            .iter()
            .map(|(k, v)| format!("{}={}", esc(k), esc(v)))
            .collect();
        let _ = writeln!(o, "tags      {}", t.join(" "));
    }
    if let Some(t) = &rec.trace_file {
        let _ = writeln!(o, "trace     {}", esc(t));
    }
    if let Some(rtscope_model::bench::BenchResult::Other { name, data }) = &rec.bench {
        if name == "trace_record" {
            o.push_str(&capture(data));
        }
    }
    o.push('\n');
    let mut o = o + &crate::text::summary(rec);
    // The kernel probes' own sections (the timerlat IRQ side, osnoise's table and sources).
    match &rec.bench {
        Some(rtscope_model::bench::BenchResult::Timerlat(t)) => {
            o.push_str(&crate::osnoise::timerlat(t))
        }
        Some(rtscope_model::bench::BenchResult::Noise(n)) => {
            o.push_str(&crate::osnoise::noise(n, 8))
        }
        _ => {}
    }
    o
}

/// `trace record`'s summary (`rtscope_session::capture::summary_json`), two lines.
fn capture(d: &serde_json::Value) -> String {
    let esc = |v: &serde_json::Value| v.as_str().unwrap_or("-").escape_debug().to_string();
    let n = |k: &str| d[k].as_u64().unwrap_or(0);
    let per_kind: Vec<String> = d["events_per_kind"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{}={}", k.escape_debug(), v.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    format!(
        "capture   {} (keep {}): {} events in {:.2} s, lost {}, left out by the relevance filter {}\n\
         events    {}\n",
        esc(&d["mechanism"]),
        esc(&d["keep"]),
        n("events"),
        d["duration_s"].as_f64().unwrap_or(0.0),
        n("lost_events"),
        n("filtered_events"),
        per_kind.join(" ")
    )
}

/// One row per non-empty histogram bucket, `scope,cpu,latency_ns,count`: `scope` is `all` for
/// the run's merged histogram and `thread` for each measurement thread.
pub fn histogram_csv(rec: &RunRecord) -> String {
    let mut out = String::from("scope,cpu,latency_ns,count\n");
    for (v, c) in rec.histogram.buckets() {
        out.push_str(&format!("all,,{v},{c}\n"));
    }
    for t in &rec.threads {
        for (v, c) in t.histogram.buckets() {
            out.push_str(&format!("thread,{},{v},{c}\n", t.cpu));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_pad_and_escape() {
        let t = table(&[
            ["ID".to_string(), "HOST".into(), "TAGS".into()],
            ["1".into(), "evil\x1b[2J".into(), "".into()],
        ]);
        assert_eq!(t, "ID  HOST           TAGS\n1   evil\\u{1b}[2J\n");
        assert_eq!(
            (us(Some(1500.0)), us(None)),
            ("1.5".into(), "-".to_string())
        );
    }

    #[test]
    fn csv_has_a_row_per_bucket() {
        let mut rec = crate::import::record(
            "T: 0 ( 1) P:90 I:1000 C: 2 Min: 5 Act: 5 Avg: 5 Max: 5\n",
            None,
            "t",
            "id".into(),
            "now".into(),
        )
        .unwrap();
        assert_eq!(histogram_csv(&rec), "scope,cpu,latency_ns,count\n");
        rec.histogram.record_n(5000, 2);
        assert_eq!(
            histogram_csv(&rec),
            "scope,cpu,latency_ns,count\nall,,5000,2\n"
        );
        let page = show(
            &rec,
            "completed",
            &BTreeMap::from([("k".into(), "v".into())]),
        );
        assert!(page.starts_with("run       id\nstarted   now  (0.0 s, completed)\n"));
        assert!(page.contains("\ntags      k=v\n"));
        rec.bench = Some(rtscope_model::bench::BenchResult::Other {
            name: "trace_record".into(),
            data: serde_json::json!({"mechanism": "bpf", "keep": "all", "events": 3,
                "duration_s": 1.0, "lost_events": 2, "filtered_events": 0,
                "events_per_kind": {"sched_switch": 3}}),
        });
        let page = show(&rec, "completed", &BTreeMap::new());
        assert!(page.contains(
            "\ncapture   bpf (keep all): 3 events in 1.00 s, lost 2, left out by the relevance filter 0\nevents    sched_switch=3\n"
        ), "{page}");
    }
}
