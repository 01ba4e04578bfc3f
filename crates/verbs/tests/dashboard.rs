//! The Grafana dashboard in deploy/ queries only metrics the monitor exports: every `rtscope_*`
//! name in every panel's PromQL is a metric family of the monitor's registry (with the suffixes
//! the OpenMetrics encoder adds to counters and histograms).

use std::collections::BTreeSet;
use std::path::Path;

mod common;

/// The metric families the monitor's registry encodes (`# TYPE name kind`), with a series in
/// each ([`common::metrics_of_every_kind`]).
fn exported() -> BTreeSet<String> {
    let m = common::metrics_of_every_kind();
    let text = m.encode();
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect()
}

/// `rtscope_*` names in a PromQL expression.
fn names(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = expr.as_bytes();
    let mut i = 0;
    while let Some(p) = expr[i..].find("rtscope_") {
        let start = i + p;
        let mut end = start;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
            end += 1;
        }
        out.push(expr[start..end].to_string());
        i = end;
    }
    out
}

fn family_of(name: &str, families: &BTreeSet<String>) -> Option<String> {
    if families.contains(name) {
        return Some(name.into());
    }
    ["_bucket", "_count", "_sum", "_total", "_created"]
        .iter()
        .find_map(|s| name.strip_suffix(s).filter(|f| families.contains(*f)))
        .map(String::from)
}

#[test]
fn every_panel_queries_an_exported_metric() {
    let families = exported();
    // The registry holds what docs/fleet.md lists.
    for m in rtscope_verbs::monitor::METRICS {
        // The tail model's family has a series once a fit exists (40 block maxima of 1 s),
        // which this one-window synthetic record does not have.
        if *m == "rtscope_tail_latency_seconds" {
            continue;
        }
        assert!(
            families.contains(*m),
            "{m} not in the registry: {families:?}"
        );
    }
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/grafana/rtscope-latency.json");
    let dash: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("dashboard")).expect("JSON");
    let mut exprs: Vec<(String, String)> = Vec::new();
    for p in dash["panels"].as_array().expect("panels") {
        let title = p["title"].as_str().unwrap_or("?").to_string();
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{title}: no query");
        for t in targets {
            let e = t["expr"].as_str().unwrap_or("");
            assert!(!e.is_empty(), "{title}: empty query");
            exprs.push((title.clone(), e.to_string()));
        }
    }
    for v in dash["templating"]["list"].as_array().expect("templating") {
        if let Some(q) = v["query"].as_str().filter(|q| q.contains("rtscope_")) {
            exprs.push((format!("variable {}", v["name"]), q.to_string()));
        }
    }
    let mut used = BTreeSet::new();
    for (title, e) in &exprs {
        let ns = names(e);
        assert!(!ns.is_empty(), "{title}: `{e}` queries no rtscope metric");
        for n in ns {
            let f = family_of(&n, &families)
                .unwrap_or_else(|| panic!("{title}: `{n}` is not exported ({families:?})"));
            used.insert(f);
        }
    }
    // The panels the issue asks for: the heatmap, max/p99.9, tail causes, bound vs observed.
    for f in [
        "rtscope_latency_seconds",
        "rtscope_window_latency_max_seconds",
        "rtscope_window_latency_p999_seconds",
        "rtscope_tail_cause_seconds",
        "rtscope_bound_seconds",
        "rtscope_observed_max_seconds",
    ] {
        assert!(used.contains(f), "no panel shows {f}");
    }
    assert!(dash["panels"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["type"] == "heatmap"));
}
