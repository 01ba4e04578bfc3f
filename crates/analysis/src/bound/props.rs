//! Property tests (proptest) for the maths, and the randomized fuzz of the JSON reader.

use super::*;
use proptest::prelude::*;

/// A source: sorted arrivals (gaps ≥ 1) with durations clamped so instances never overlap.
fn arb_instances() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec((1u64..3_000, 0u64..800), 1..25).prop_map(|v| {
        let mut t = 0u64;
        let mut starts = Vec::new();
        for (g, _) in &v {
            t += g;
            starts.push(t);
        }
        let mut out = Vec::new();
        for i in 0..v.len() {
            let room = if i + 1 < v.len() {
                starts[i + 1] - starts[i]
            } else {
                u64::MAX
            };
            out.push((starts[i], v[i].1.min(room)));
        }
        out
    })
}

fn build(v: &[(u64, u64)], name: &str, kind: SourceKind) -> InterruptSource {
    super::window::tests::source(name, kind, v, "prop")
}

fn arb_input() -> impl Strategy<Value = (ThreadVars, Vec<Vec<(u64, u64)>>, bool)> {
    (
        (0u64..5_000, 0u64..500, 0u64..3_000, 0u64..5_000),
        prop::collection::vec(arb_instances(), 0..5),
        any::<bool>(),
    )
        .prop_map(|((p, a, s, d), srcs, nmi)| {
            (
                ThreadVars {
                    poid_ns: p,
                    paie_ns: a,
                    psd_ns: s,
                    dst_ns: d,
                },
                srcs,
                nmi,
            )
        })
}

fn sources(srcs: &[Vec<(u64, u64)>], nmi: bool) -> Vec<InterruptSource> {
    srcs.iter()
        .enumerate()
        .map(|(i, v)| {
            if i == 0 && nmi {
                build(v, "nmi", SourceKind::Nmi)
            } else {
                build(v, &format!("{}", 30 + i), SourceKind::Irq)
            }
        })
        .collect()
}

fn opts() -> Options {
    Options {
        cap_ns: 1_000_000_000,
        max_iterations: 1_000_000,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// no_interrupts ≤ worst_single ≤ single_of_each ≤ sliding_window ≤ sliding_window_owcet
    /// ≤ sporadic (the last when it converges).
    #[test]
    fn characterizations_are_ordered((t, srcs, nmi) in arb_input()) {
        let s = sources(&srcs, nmi);
        let o = opts();
        let v = |b: CharBound| b.latency_ns;
        let ni = v(no_interrupts(&t, &o)).unwrap();
        let ws = v(worst_single(&t, &s, &o)).unwrap();
        let se = v(single_of_each(&t, &s, &o)).unwrap();
        let sw = v(sliding_window(&t, &s, &o)).unwrap();
        let swo = v(sliding_window_owcet(&t, &s, &o)).unwrap();
        prop_assert!(ni <= ws && ws <= se, "{ni} {ws} {se}");
        prop_assert!(se <= sw || ifl_ns(&t) == 0, "{se} {sw}");
        prop_assert!(sw <= swo, "{sw} {swo}");
        if let Some(sp) = v(sporadic(&t, &s, &o)) {
            prop_assert!(swo <= sp, "{swo} {sp}");
        }
    }

    /// Adding an interrupt (a later instance of a source, or a new source) never lowers a bound.
    #[test]
    fn monotone_in_added_interrupts(
        (t, srcs, nmi) in arb_input(),
        which in 0usize..6,
        gap in 1u64..5_000,
        dur in 0u64..900,
    ) {
        let before = sources(&srcs, nmi);
        let mut more = srcs.clone();
        if which < more.len() {
            let last = *more[which].last().unwrap();
            more[which].push((last.0 + last.1 + gap, dur));
        } else {
            more.push(vec![(gap, dur)]);
        }
        let after = sources(&more, nmi);
        let o = opts();
        let pairs = [
            (worst_single(&t, &before, &o), worst_single(&t, &after, &o)),
            (single_of_each(&t, &before, &o), single_of_each(&t, &after, &o)),
            (sporadic(&t, &before, &o), sporadic(&t, &after, &o)),
            (sliding_window(&t, &before, &o), sliding_window(&t, &after, &o)),
            (sliding_window_owcet(&t, &before, &o), sliding_window_owcet(&t, &after, &o)),
        ];
        for (b, a) in pairs {
            match (b.latency_ns, a.latency_ns) {
                (Some(x), Some(y)) => prop_assert!(x <= y, "{x} > {y}"),
                // Adding interference may break convergence, never restore it.
                (None, Some(_)) => prop_assert!(false, "converged only after adding an interrupt"),
                _ => {}
            }
        }
    }

    /// The converged value is a fixed point, and the least one reached from max(IFL, 1):
    /// evaluating the equation at L − 1 gives more than L − 1.
    #[test]
    fn sliding_window_is_least_fixed_point((t, srcs, nmi) in arb_input()) {
        let s = sources(&srcs, nmi);
        let f = |l: u64| s.iter().fold(ifl_ns(&t), |a, x| a + window::max_demand_ns(x, l));
        let l = sliding_window(&t, &s, &opts()).latency_ns.unwrap();
        prop_assert_eq!(f(l), l);
        if l > ifl_ns(&t).max(1) {
            prop_assert!(f(l - 1) > l - 1);
        }
    }

    /// The two-pointer window maxima equal a brute force over every window start.
    #[test]
    fn window_matches_brute_force(v in arb_instances(), delta in 0u64..10_000) {
        let s = build(&v, "x", SourceKind::Irq);
        let mut best = (0u64, 0u64);
        // Windows starting at each arrival suffice (module doc of `window`); also try arrival+1
        // and arrival−Δ+1 starts so the claim itself is tested.
        let mut ts: Vec<u64> = Vec::new();
        for &(a, _) in &v {
            ts.push(a);
            ts.push(a + 1);
            ts.push((a + 1).saturating_sub(delta));
        }
        for t0 in ts {
            let inw = v.iter().filter(|x| x.0 >= t0 && x.0 < t0.saturating_add(delta));
            let (sum, n) = inw.fold((0, 0), |(s, n), x| (s + x.1, n + 1));
            best = (best.0.max(sum), best.1.max(n));
        }
        prop_assert_eq!(window::max_demand_ns(&s, delta), best.0);
        prop_assert_eq!(window::max_arrivals(&s, delta), best.1);
    }
}

use rtscope_model::rng::Rng;

const SEED_DOC: &str = r#"{"schema_version":1,"cpus":[{"cpu":0,"thread":{"poid_ns":22510,"paie_ns":0,"psd_ns":19702,"dst_ns":19312},"irqs":[{"source":"236","start_ns":0,"duration_ns":20728},{"source":"236","start_ns":60000,"duration_ns":301},{"source":"35","start_ns":100,"duration_ns":12913},{"source":"35","start_ns":14000,"duration_ns":10}],"nmis":[{"start_ns":5,"duration_ns":9}],"observed_max_latency_ns":27000},{"cpu":1,"thread":{"poid_ns":1,"paie_ns":2,"psd_ns":3,"dst_ns":4}}]}"#;

const TOKENS: &[&str] = &[
    "-1",
    "0",
    "18446744073709551615",
    "9223372036854775807",
    "-9223372036854775808",
    "1e3",
    "null",
    "\"\"",
    "{}",
    "[]",
    "\"nmi\"",
    "true",
    ",",
    ":",
    "\"cpu\"",
    "\"bogus\"",
    "1.5",
    "\"33\"",
];

/// Mutates the seed document (byte edits and token splices) and feeds it to the reader; anything
/// accepted is analysed with a small cap. Must never panic. Cases: `RTSCOPE_FUZZ_CASES` (default
/// 20 000; `RTSCOPE_FUZZ_CASES=1000000 cargo test --release -p rtscope-analysis fuzz_json` for the
/// long run).
#[test]
fn fuzz_json_reader() {
    let cases: u64 = std::env::var("RTSCOPE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    let o = Options {
        cap_ns: 10_000_000,
        max_iterations: 1_000,
    };
    let mut accepted = 0u64;
    for _ in 0..cases {
        let mut b: Vec<u8> = SEED_DOC.as_bytes().to_vec();
        if rng.below(2) == 0 {
            // Structure-preserving: rewrite 1–4 numbers (times, durations, CPU ids, thread terms)
            // so documents stay valid JSON and reach validation and the analysis.
            for _ in 0..=rng.below(4) {
                let runs: Vec<(usize, usize)> = {
                    let mut v = Vec::new();
                    let mut i = 0;
                    while i < b.len() {
                        if b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
                            let j = (i..b.len())
                                .find(|&k| !b[k].is_ascii_digit())
                                .unwrap_or(b.len());
                            v.push((i, j));
                            i = j;
                        } else {
                            i += 1;
                        }
                    }
                    v
                };
                if runs.is_empty() {
                    break;
                }
                let (i, j) = runs[rng.below(runs.len() as u64) as usize];
                let val = match rng.below(6) {
                    0 => format!("-{}", rng.below(100)),
                    1 => format!("{}", u64::MAX - rng.below(2)),
                    2 => format!("{}", rng.below(3)),
                    _ => format!("{}", rng.below(100_000)),
                };
                b.splice(i..j, val.bytes());
            }
        } else {
            for _ in 0..=rng.below(4) {
                let pos = rng.below(b.len() as u64 + 1) as usize;
                match rng.below(5) {
                    0 if pos < b.len() => {
                        b.remove(pos);
                    }
                    1 => {
                        let alphabet = b"{}[],:\"0-9e.";
                        b.insert(pos, alphabet[rng.below(alphabet.len() as u64) as usize]);
                    }
                    2 if pos < b.len() => b[pos] = rng.next_u64() as u8,
                    _ => {
                        // Replace the number or token at pos with a splice.
                        let tok = TOKENS[rng.below(TOKENS.len() as u64) as usize].as_bytes();
                        let end = (pos + 1 + rng.below(6) as usize).min(b.len());
                        if pos <= end {
                            b.splice(pos..end, tok.iter().copied());
                        }
                    }
                }
            }
        }
        let text = String::from_utf8_lossy(&b);
        if let Ok(input) = json::parse(&text, "fuzz.json") {
            accepted += 1;
            let r = analyze(&input, &o, "json");
            let _ = render::text(&r);
            for c in &r.cpus {
                for (_, cb) in c.bounds.named() {
                    assert_eq!(cb.latency_ns.is_some(), cb.converged);
                }
            }
        }
    }
    eprintln!("fuzz_json_reader: {cases} cases, {accepted} accepted and analysed");
    // Not an assertion about counts being high, but the fuzz must reach the analysis at all.
    assert!(
        cases < 100 || accepted > 0,
        "no mutated document was ever accepted"
    );
}
