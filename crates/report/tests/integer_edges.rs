//! The decoders of outside numbers at every integer edge (0, 1, 2^31±1, 2^32±1, 2^63±1,
//! 2^64−1, negative, 1e300, NaN): whatever the field, a decoder either refuses with the field
//! named or yields a value equal to the text's (never a wrapped, truncated or saturated one).
//! proptest with a fixed seed, so CI runs the same cases every time.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use rtscope_report::cyclictest as ct;
use rtscope_report::import;

const EDGES: &[&str] = &[
    "0",
    "1",
    "2147483647",
    "2147483648",
    "2147483649",
    "4294967295",
    "4294967296",
    "4294967297",
    "9223372036854775807",
    "9223372036854775808",
    "9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "-1",
    "-9223372036854775808",
    "1e300",
    "NaN",
    "4294967296000",
];

fn runner() -> TestRunner {
    TestRunner::new_with_rng(
        Config {
            cases: 512,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &[29; 32]),
    )
}

fn edge() -> impl Strategy<Value = &'static str> {
    prop::sample::select(EDGES)
}

fn import(text: &str) -> Result<rtscope_model::RunRecord, String> {
    import::record(
        text,
        None,
        "edge",
        "edge".into(),
        "2026-01-01T00:00:00Z".into(),
    )
}

fn m(r: &rtscope_model::RunRecord) -> &rtscope_model::Measurement {
    match &r.kind {
        rtscope_model::RunKind::Measurement(m) => m,
        _ => panic!("an import is a measurement"),
    }
}

#[test]
fn status_lines_at_the_edges() {
    runner()
        .run(
            &(edge(), edge(), edge(), edge(), edge()),
            |(p, i, c, min, max)| {
                let line =
                    format!("T: 0 ( 1000) P:{p} I:{i} C:{c} Min:{min} Act: 1 Avg: 1 Max:{max}\n");
                match import(&line) {
                    Ok(r) => {
                        let m = m(&r);
                        prop_assert_eq!(m.config.priority.to_string(), p);
                        prop_assert_eq!(m.threads[0].cycles.to_string(), c);
                        // An interval of 0 is read as 1 µs (stated in the import).
                        if i != "0" {
                            prop_assert_eq!(m.config.interval_us.to_string(), i);
                        }
                    }
                    Err(e) => prop_assert!(
                        [
                            "P:",
                            "I:",
                            "C:",
                            "Min:",
                            "Max:",
                            "min",
                            "max",
                            "avg",
                            "status line"
                        ]
                        .iter()
                        .any(|f| e.contains(f)),
                        "unnamed: {}",
                        e
                    ),
                }
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn json_threads_at_the_edges() {
    runner()
        .run(&(edge(), edge(), edge(), edge()), |(cycles, cpu, min, bucket)| {
            let text = format!(
                "{{\"file_version\":1,\"thread\":{{\"0\":{{\"histogram\":{{\"{bucket}\":1}},\"cycles\":{cycles},\"min\":{min},\"max\":{min},\"avg\":1,\"cpu\":{cpu}}}}}}}"
            );
            match import(&text) {
                Ok(r) => {
                    let t = &m(&r).threads[0];
                    prop_assert_eq!(t.cycles.to_string(), cycles);
                    if cpu != "-1" {
                        prop_assert_eq!(t.cpu.to_string(), cpu);
                    }
                }
                Err(e) => prop_assert!(
                    ["cycles", "cpu", "min", "max", "bucket", "JSON", "histogram", "counts"]
                        .iter()
                        .any(|f| e.contains(f)),
                    "unnamed: {}",
                    e
                ),
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn histogram_and_verbose_text_at_the_edges() {
    runner()
        .run(&(edge(), edge(), edge()), |(count, total, lat)| {
            let h = format!(
                "# Histogram\n000001 {count}\n# Total: {total}\n# Min Latencies: 1\n# Max Latencies: 1\n"
            );
            match ct::parse_histogram(&h) {
                Ok(r) => prop_assert_eq!(r.threads[0].counts[1].to_string(), count),
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
            let v = format!("Thread 0 using cpu {total}.\n       0:       0:{lat}\n");
            match ct::parse_verbose(&v) {
                Ok(r) => {
                    prop_assert_eq!(r.threads[0].max_us.to_string(), lat);
                    prop_assert_eq!(r.threads[0].cpu.map(|c| c.to_string()), Some(total.to_string()));
                }
                Err(e) => prop_assert!(
                    ["latency", "cpu", "thread"].iter().any(|f| e.to_string().contains(f))
                        || matches!(e, ct::CtError::NotCyclictest(_)),
                    "unnamed: {}",
                    e
                ),
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn bound_json_at_the_edges() {
    runner()
        .run(&(edge(), edge(), edge()), |(cpu, start, dur)| {
            let text = format!(
                "{{\"cpus\":[{{\"cpu\":{cpu},\"thread\":{{\"poid_ns\":1,\"paie_ns\":1,\"psd_ns\":1,\"dst_ns\":1}},\"irqs\":[{{\"source\":\"a\",\"start_ns\":{start},\"duration_ns\":{dur}}}]}}]}}"
            );
            match rtscope_analysis::bound::json::parse(&text, "edge.json") {
                Ok(b) => prop_assert_eq!(b.cpus[0].cpu.to_string(), cpu),
                Err(e) => prop_assert!(e.to_string().starts_with("edge.json"), "{}", e),
            }
            Ok(())
        })
        .unwrap();
}
