//! The HTML report on synthetic records (rtscope_store::fixture): structure, escaping,
//! self-containment, figure export.

use rtscope_model::Policy;
use rtscope_report::html::{build, write_figures, ReportOptions};
use rtscope_store::fixture::{self, Spec};

fn campaign_like() -> Vec<rtscope_model::RunRecord> {
    let mut out = Vec::new();
    let mut seed = 1;
    for policy in [Policy::Fifo, Policy::Deadline] {
        for load in ["idle", "cpu-cache", "io"] {
            let mut s = Spec::new(&format!("{}-{load}-{seed:04}", policy.name()), seed);
            s.policy = policy;
            if load != "idle" {
                s.loads = vec![load.into()];
                s.spread_ns += 800;
            }
            s.tags.insert("kernel".into(), "6.18-none".into());
            s.with_analysis = seed == 1;
            out.push(fixture::record(&s));
            seed += 1;
        }
    }
    out
}

#[test]
fn report_has_every_section_and_figure() {
    let runs = campaign_like();
    let r = build(
        &runs,
        &ReportOptions {
            title: "t".into(),
            ..Default::default()
        },
    );
    // 2 matrix charts + CCDF + attribution + 6 histograms + bound + bound series (run 1).
    assert_eq!(
        r.figures.len(),
        2 + 1 + 1 + 6 + 2,
        "{:?}",
        r.figures.iter().map(|f| &f.id).collect::<Vec<_>>()
    );
    for f in &r.figures {
        assert!(
            r.html.contains(&format!("id=\"{}\"", f.id)),
            "{} not inlined",
            f.id
        );
        assert!(f.svg.starts_with("<svg") && f.svg.ends_with("</svg>"));
    }
    for needle in [
        "Comparison",
        "Verdicts against baseline",
        "Per CPU",
        "Load intensity",
        "Tail causes",
        "Bound vs observed",
        "min=",
        "stdev=",
        "samples=",
    ] {
        assert!(r.html.contains(needle), "missing {needle}");
    }
    // The matrix: 2 rows (kernel / policy) × 3 columns.
    assert!(
        r.html.contains("<th>6.18-none / fifo</th>")
            && r.html.contains("<th>6.18-none / deadline</th>")
    );
    // Paper-style caption of run 0, from its exact stats.
    let s = runs[0].stats();
    assert!(r.html.contains(&format!("samples={}", s.samples)));
    assert!(r
        .html
        .contains(&format!("max={:.1}", s.max_ns.unwrap() as f64 / 1000.0)));
}

#[test]
fn self_contained_and_scriptless() {
    let r = build(&campaign_like(), &ReportOptions::default());
    assert!(
        !r.html.to_lowercase().contains("<script"),
        "the report carries no script"
    );
    // The only URL is the SVG namespace.
    let urls = r.html.matches("http://").count() + r.html.matches("https://").count();
    let ns = r.html.matches("http://www.w3.org/2000/svg").count();
    assert_eq!(urls, ns, "a network reference crept in");
    assert!(r.html.contains("Content-Security-Policy"));
    assert!(r.html.contains("@media print"));
}

#[test]
fn system_and_trace_strings_are_escaped() {
    let runs = vec![
        fixture::hostile("evil-1"),
        fixture::record(&Spec::new("plain-2", 2)),
    ];
    let r = build(&runs, &ReportOptions::default());
    assert!(!r.html.contains("<script>alert(1)</script>"));
    assert!(!r.html.contains("<img src=x"));
    assert!(
        r.html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "thread name shown as text"
    );
    assert!(r
        .html
        .contains("thread:&lt;script&gt;alert(1)&lt;/script&gt;"));
    for f in &r.figures {
        assert!(!f.svg.contains("<script"), "figure {}", f.id);
    }
    // The worst-sample timeline of the hostile run is drawn, its segment names escaped.
    let w = r
        .figures
        .iter()
        .find(|f| f.id.starts_with("worst-"))
        .expect("worst-sample timeline figure");
    assert!(
        w.svg.contains("CPU 1 #77 10.0 µs") || w.svg.contains("CPU 1 #77"),
        "{}",
        w.svg
    );
    assert!(w
        .svg
        .contains("thread:&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(w.svg.matches("<rect x=").count() >= 4);
}

#[test]
fn figures_export_as_svg_and_png() {
    let runs = campaign_like();
    let r = build(&runs[..2], &ReportOptions::default());
    let d = tempfile::tempdir().unwrap();
    let files = write_figures(&r.figures, d.path()).unwrap();
    assert_eq!(files.len(), 2 * r.figures.len());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        if f.extension().is_some_and(|e| e == "png") {
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", f.display());
            // Width from the IHDR chunk: 2× the SVG width (640 → 1280 for the histogram).
            let w = u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
            assert!(w >= 840, "{} is {w} px wide", f.display());
        } else {
            assert!(bytes.starts_with(b"<svg"));
        }
    }
}

#[test]
fn single_run_report() {
    let r = build(
        &[fixture::record(&Spec::new("only", 3))],
        &ReportOptions::default(),
    );
    assert!(!r.html.contains("Verdicts"));
    assert_eq!(r.figures.len(), 2, "CCDF + histogram");
}

/// Every kind of run in one report (the version-1 database of every verb, read as envelopes):
/// the measurements are compared, every other run shows its verb's own text and figure.
#[test]
fn runs_of_every_kind_have_their_section() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("v1.db");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../store/tests/fixtures/schema-v1.db"
        ),
        &db,
    )
    .unwrap();
    let mut s = rtscope_store::Store::open_sqlite(&db).unwrap();
    let runs: Vec<rtscope_model::RunRecord> = s
        .list_runs(&Default::default())
        .unwrap()
        .iter()
        .map(|r| s.get_run(&r.id).unwrap())
        .collect();
    let r = build(&runs, &ReportOptions::default());
    for run in &runs {
        assert!(
            r.html.contains(&format!("id=\"run-{}\"", run.id)),
            "{}",
            run.id
        );
    }
    let measurements = runs.iter().filter(|r| r.measurement().is_some()).count();
    assert_eq!(measurements, 6);
    // One histogram per measurement; the comparison pools only measurements.
    let hist = r
        .figures
        .iter()
        .filter(|f| f.id.starts_with("hist-"))
        .count();
    assert_eq!(hist, measurements);
    for (what, figure, text) in [
        ("pdlt", "pdlt-", "non-preemptible regions"),
        ("sched-scale", "sched-scale-", "wake-up → run"),
        ("practise", "practise-", "checker:"),
    ] {
        assert!(
            r.figures
                .iter()
                .any(|f| f.id.starts_with(figure) && !f.caption.is_empty()),
            "{what}: figure"
        );
        assert!(r.html.contains(text), "{what}: text");
    }
    // The others show their text: the capture's account, the task set's table, the loads.
    for text in [
        "capture   bpf (keep relevant)",
        "policy deadline",
        "loads alone, policy other",
        "task_switch",
    ] {
        assert!(r.html.contains(text), "{text}");
    }
}
