//! Hand-worked examples, one per characterization, with the arithmetic written out.

use super::*;

fn src(name: &str, kind: SourceKind, v: &[(u64, u64)]) -> InterruptSource {
    super::window::tests::source(name, kind, v, "test")
}

/// Example A. Thread: POID 100, DST 80, PAIE 5, PSD 20 → IFL = max(80, 100) + 5 + 20 = 125.
/// NMI: one arrival at 1000, 7 ns → oWCET 7, no oMIAT.
/// IRQ 33: arrivals 0, 50, 100, 400 lasting 10, 12, 8, 9 → oWCET 12, oMIAT 50.
/// IRQ 236: arrivals 10, 30 lasting 3, 4 → oWCET 4, oMIAT 20.
fn example_a() -> (ThreadVars, Vec<InterruptSource>) {
    let t = ThreadVars {
        poid_ns: 100,
        paie_ns: 5,
        psd_ns: 20,
        dst_ns: 80,
    };
    let s = vec![
        src("nmi", SourceKind::Nmi, &[(1000, 7)]),
        src(
            "33",
            SourceKind::Irq,
            &[(0, 10), (50, 12), (100, 8), (400, 9)],
        ),
        src("236", SourceKind::Irq, &[(10, 3), (30, 4)]),
    ];
    (t, s)
}

#[test]
fn ifl_is_lemma_7() {
    let (t, _) = example_a();
    assert_eq!(ifl_ns(&t), 125);
    // DST dominating: max(300, 100) + 5 + 20 = 325.
    assert_eq!(ifl_ns(&ThreadVars { dst_ns: 300, ..t }), 325);
}

#[test]
fn a_no_interrupts() {
    let (t, _) = example_a();
    let b = no_interrupts(&t, &Options::default());
    assert_eq!(b.latency_ns, Some(125));
    assert!(b.converged);
    assert_eq!(b.dominant.as_deref(), Some("poid"));
}

#[test]
fn a_worst_single() {
    let (t, s) = example_a();
    // 125 + 12 (IRQ 33, the largest IRQ oWCET) + 7 (NMI) = 144.
    let b = worst_single(&t, &s, &Options::default());
    assert_eq!(b.latency_ns, Some(144));
}

#[test]
fn a_single_of_each() {
    let (t, s) = example_a();
    // 125 + 7 + 12 + 4 = 148.
    assert_eq!(
        single_of_each(&t, &s, &Options::default()).latency_ns,
        Some(148)
    );
}

#[test]
fn a_sliding_window() {
    let (t, s) = example_a();
    // L0 = 125. B_nmi = 7; B_33(125): [0,125) holds 0,50,100 → 10+12+8 = 30; B_236(125) = 3+4 = 7.
    // L1 = 125 + 7 + 30 + 7 = 169. At 169 nothing new (IRQ 33 needs Δ > 300 for a 4th arrival):
    // L2 = 169 → converged.
    let b = sliding_window(&t, &s, &Options::default());
    assert_eq!(b.latency_ns, Some(169));
    assert!(b.converged);
    assert_eq!(b.iteration_count, 2);
    assert_eq!(b.iterations[0].window_ns, 125);
    assert_eq!(b.iterations[0].contributions.len(), 3);
    assert_eq!(b.iterations[1].window_ns, 169);
    assert!(
        b.iterations[1].contributions.is_empty(),
        "nothing changed: 'Converged!'"
    );
    // Terms at 169: poid 100 > 33's 30 → the thread term dominates.
    assert_eq!(b.dominant.as_deref(), Some("poid"));
}

#[test]
fn a_sliding_window_owcet() {
    let (t, s) = example_a();
    // L0 = 125: NMI 1×7 = 7; 33: 3 arrivals ×12 = 36; 236: 2×4 = 8 → L1 = 125+7+36+8 = 176.
    // At 176 still 3 arrivals of 33 → L2 = 176, converged.
    let b = sliding_window_owcet(&t, &s, &Options::default());
    assert_eq!(b.latency_ns, Some(176));
}

#[test]
fn a_sporadic() {
    let (t, s) = example_a();
    // L0 = 125: 7 + ⌈125/50⌉·12 = 36 + ⌈125/20⌉·4 = 28 → L1 = 196
    // L1 = 196: 7 + ⌈196/50⌉=4·12 = 48 + ⌈196/20⌉=10·4 = 40 → L2 = 220
    // L2 = 220: 7 + 5·12 = 60 + 11·4 = 44 → L3 = 236
    // L3 = 236: 7 + 5·12 = 60 + 12·4 = 48 → L4 = 240
    // L4 = 240: 7 + 5·12 = 60 + 12·4 = 48 → 240, converged.
    let b = sporadic(&t, &s, &Options::default());
    assert_eq!(b.latency_ns, Some(240));
    assert_eq!(b.iteration_count, 5);
    let windows: Vec<u64> = b.iterations.iter().map(|i| i.window_ns).collect();
    assert_eq!(windows, vec![125, 196, 220, 236, 240]);
}

#[test]
fn sporadic_owcet_ge_omiat_does_not_converge() {
    let t = ThreadVars {
        poid_ns: 10,
        ..Default::default()
    };
    // Arrivals 0 and 10, the first lasting 10: oWCET 10 ≥ oMIAT 10.
    let s = vec![src("35", SourceKind::Irq, &[(0, 10), (10, 5)])];
    let b = sporadic(&t, &s, &Options::default());
    assert!(!b.converged);
    assert_eq!(b.latency_ns, None);
    assert_eq!(
        b.reason,
        Some(NonConvergence::OwcetGeOmiat {
            source: "35".into(),
            owcet_ns: 10,
            omiat_ns: 10
        })
    );
    // The sliding window still converges: L0 = 10, B(10) = 10 ([0,10) holds only 0),
    // L1 = 20, B(20) = 15 → L2 = 25, B(25) = 15 → 25.
    assert_eq!(
        sliding_window(&t, &s, &Options::default()).latency_ns,
        Some(25)
    );
}

#[test]
fn cap_stops_the_iteration() {
    let (t, s) = example_a();
    let o = Options {
        cap_ns: 150,
        ..Options::default()
    };
    // Sliding window: L1 = 169 > 150.
    let b = sliding_window(&t, &s, &o);
    assert_eq!(b.latency_ns, None);
    assert_eq!(
        b.reason,
        Some(NonConvergence::ExceedsCap {
            cap_ns: 150,
            last_ns: 169
        })
    );
    // single_of_each = 148 ≤ 150 still converges.
    assert_eq!(single_of_each(&t, &s, &o).latency_ns, Some(148));
}

/// Thread terms near 2^63 with no interference: the iteration meets its own start (a fixed
/// point) far above the 1 s cap. That is no bound: not converged, the cap is the reason.
#[test]
fn a_fixed_point_above_the_cap_is_not_a_bound() {
    let t = ThreadVars {
        poid_ns: 1 << 62,
        paie_ns: 1 << 61,
        psd_ns: 1 << 61,
        dst_ns: 0,
    };
    let o = Options::default();
    let s: Vec<InterruptSource> = Vec::new();
    for b in [sliding_window(&t, &s, &o), no_interrupts(&t, &o)] {
        assert!(!b.converged, "{b:?}");
        assert_eq!(b.latency_ns, None);
        assert!(
            matches!(b.reason, Some(NonConvergence::ExceedsCap { .. })),
            "{b:?}"
        );
    }
}

#[test]
fn iteration_limit_is_a_reason() {
    let (t, s) = example_a();
    let o = Options {
        max_iterations: 2,
        ..Options::default()
    };
    // Sporadic needs 5 steps.
    let b = sporadic(&t, &s, &o);
    assert_eq!(
        b.reason,
        Some(NonConvergence::IterationLimit {
            iterations: 2,
            last_ns: 220
        })
    );
}

#[test]
fn interrupt_dominates() {
    // IFL = 10; IRQ 1 lasting 500 → worst_single = 510, dominant is the IRQ.
    let t = ThreadVars {
        poid_ns: 10,
        ..Default::default()
    };
    let s = vec![src("1", SourceKind::Irq, &[(0, 500)])];
    let b = worst_single(&t, &s, &Options::default());
    assert_eq!(b.latency_ns, Some(510));
    assert_eq!(b.dominant.as_deref(), Some("1"));
    assert_eq!(b.dominant_ns, Some(500));
}

#[test]
fn fig24_new_contribution() {
    // Shaped like seed Fig. 24: IFL = max(22510, 19312) + 0 + 19702 = 42212.
    // IRQ 236 arrives at 0 (20728 ns) and again 60000 ns later (301 ns): the window of 42212
    // sees one instance, the grown window 42212+20728 = 62940 > 60000 sees both (+301, "new!").
    let t = ThreadVars {
        poid_ns: 22510,
        paie_ns: 0,
        psd_ns: 19702,
        dst_ns: 19312,
    };
    let s = vec![src("236", SourceKind::Irq, &[(0, 20728), (60_000, 301)])];
    let b = sliding_window(&t, &s, &Options::default());
    // L1 = 42212 + 20728 = 62940; L2 = 42212 + 21029 = 63241; L3 = 63241.
    assert_eq!(b.latency_ns, Some(63241));
    assert_eq!(
        b.iterations[1].contributions,
        vec![Contribution {
            source: "236".into(),
            ns: 21029
        }]
    );
}

#[test]
fn no_sources_all_equal_ifl() {
    let t = ThreadVars {
        poid_ns: 3,
        paie_ns: 1,
        psd_ns: 2,
        dst_ns: 0,
    };
    let c = CpuInput {
        cpu: 0,
        thread: t,
        thread_estimated: false,
        irq_entry_exit_ns: 0,
        observed_max_latency_ns: None,
        sources: vec![],
    };
    let r = analyze_cpu(&c, &Options::default());
    for (_, b) in r.bounds.named() {
        assert_eq!(b.latency_ns, Some(6));
    }
}

#[test]
fn build_sorts_and_rejects_overlap() {
    let raw = vec![
        RawInstance {
            start_ns: 50,
            duration_ns: 1,
            row: 1,
        },
        RawInstance {
            start_ns: 0,
            duration_ns: 1,
            row: 2,
        },
    ];
    let (s, n) = InterruptSource::build("9", SourceKind::Irq, raw, "f").unwrap();
    assert_eq!(n.out_of_order, 1);
    assert_eq!(s.starts(), &[0, 50]);
    let raw = vec![
        RawInstance {
            start_ns: 0,
            duration_ns: 10,
            row: 7,
        },
        RawInstance {
            start_ns: 5,
            duration_ns: 1,
            row: 8,
        },
    ];
    let e = InterruptSource::build("9", SourceKind::Irq, raw, "f.db table irq").unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("f.db table irq") && m.contains("row 7") && m.contains("row 8"),
        "{m}"
    );
    let raw = vec![
        RawInstance {
            start_ns: 5,
            duration_ns: 0,
            row: 1,
        },
        RawInstance {
            start_ns: 5,
            duration_ns: 0,
            row: 2,
        },
    ];
    assert!(InterruptSource::build("9", SourceKind::Irq, raw, "f").is_err());
}

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/bound")
        .join(name);
    std::fs::read_to_string(&p).unwrap()
}

#[test]
fn fixture_example_a_end_to_end_and_schema() {
    let i = json::parse(&fixture("example-a.json"), "example-a.json").unwrap();
    let r = analyze(&i, &Options::default(), "json");
    let got: Vec<Option<u64>> = r.cpus[0]
        .bounds
        .named()
        .iter()
        .map(|(_, b)| b.latency_ns)
        .collect();
    // Order: no_interrupts, worst_single, single_of_each, sporadic, sliding_window, sliding_window_owcet.
    assert_eq!(
        got,
        vec![
            Some(125),
            Some(144),
            Some(148),
            Some(240),
            Some(169),
            Some(176)
        ]
    );
    assert_eq!(r.cpus[0].observed_max_latency_ns, Some(130));
    assert!(
        i.warnings.is_empty(),
        "arrivals per source were already in order: {:?}",
        i.warnings
    );

    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../../docs/schema/bound.schema.json")).unwrap();
    let compiled = jsonschema::JSONSchema::options().compile(&schema).unwrap();
    let mut docs = vec![serde_json::to_value(&r).unwrap()];
    // A non-converging report too (sporadic with oWCET ≥ oMIAT, and a cap hit).
    let mut cpu = i.cpus[0].clone();
    cpu.sources.push(
        InterruptSource::build(
            "35",
            SourceKind::Irq,
            vec![
                RawInstance {
                    start_ns: 0,
                    duration_ns: 10,
                    row: 0,
                },
                RawInstance {
                    start_ns: 10,
                    duration_ns: 1,
                    row: 1,
                },
            ],
            "t",
        )
        .unwrap()
        .0,
    );
    let r2 = analyze(
        &BoundInput {
            cpus: vec![cpu],
            warnings: vec![],
            lost_events: Default::default(),
        },
        &Options {
            cap_ns: 150,
            ..Options::default()
        },
        "json",
    );
    assert!(!r2.cpus[0].bounds.sporadic.converged);
    docs.push(serde_json::to_value(&r2).unwrap());
    for d in docs {
        if let Err(errs) = compiled.validate(&d) {
            let v: Vec<String> = errs
                .map(|e| format!("{e} at {}", e.instance_path))
                .collect();
            panic!("schema violations: {v:?}");
        }
    }
}

#[test]
fn fixture_bad_inputs_are_named() {
    let e = json::parse(&fixture("bad-overlap.json"), "bad-overlap.json")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("bad-overlap.json cpus[0].irqs[]"), "{e}");
    assert!(e.contains("row 0") && e.contains("overlaps row 1"), "{e}");
    let e = json::parse(&fixture("bad-negative.json"), "bad-negative.json")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "bad-negative.json: cpus[0].nmis[0].duration_ns: must be >= 0 ns, got -2"
    );
}

/// Each IRQ arrival's entry and exit code (e = 2 ns) goes to every IRQ instance, not to NMIs.
#[test]
fn irq_entry_exit_is_added_to_every_irq_instance() {
    let t = ThreadVars {
        poid_ns: 10,
        ..Default::default()
    };
    let mut c = CpuInput {
        cpu: 0,
        thread: t,
        thread_estimated: false,
        irq_entry_exit_ns: 2,
        observed_max_latency_ns: None,
        sources: vec![
            src("35", SourceKind::Irq, &[(0, 10), (10, 5)]),
            src("nmi", SourceKind::Nmi, &[(100, 3)]),
        ],
    };
    c.sort_sources();
    let r = analyze_cpu(&c, &Options::default());
    assert_eq!(r.irq_entry_exit_ns, 2);
    // The summaries keep the handlers' own times.
    let owcet: Vec<u64> = r.sources.iter().map(|s| s.owcet_ns).collect();
    assert_eq!(owcet, [3, 10]);
    // 10 + (10 + 2) + 3.
    assert_eq!(r.bounds.single_of_each.latency_ns, Some(25));
    assert_eq!(r.bounds.worst_single.latency_ns, Some(25));
    // oWCET 12 ≥ oMIAT 10: the sporadic curve does not converge (it did not at 10 either).
    assert!(!r.bounds.sporadic.converged);
    // L0 = 10: IRQ B(10) = 10 + 2·1, NMI 3 → 25; IRQ B(25) = 15 + 2·2 = 19, NMI 3 → 32;
    // B(32) the same → 32.
    assert_eq!(r.bounds.sliding_window.latency_ns, Some(32));
    // oWCET form: 12 per arrival: L0 = 10 → 12 + 3 = 25 → 2·12 + 3 = 37 → 37.
    assert_eq!(r.bounds.sliding_window_owcet.latency_ns, Some(37));
    // e = 0 leaves every characterization as it was.
    let r0 = analyze_cpu(
        &CpuInput {
            irq_entry_exit_ns: 0,
            ..c
        },
        &Options::default(),
    );
    assert_eq!(r0.bounds.single_of_each.latency_ns, Some(23));
    assert_eq!(r0.bounds.sliding_window.latency_ns, Some(28));
}

/// A loss injected into a measured input: the same numbers, labelled not sound in the data,
/// the JSON and the text; without it, sound.
#[test]
fn any_lost_event_makes_the_bound_not_sound() {
    let cpu = CpuInput {
        cpu: 0,
        thread: ThreadVars {
            poid_ns: 40,
            paie_ns: 10,
            psd_ns: 20,
            dst_ns: 30,
        },
        thread_estimated: false,
        irq_entry_exit_ns: 0,
        observed_max_latency_ns: Some(50),
        sources: Vec::new(),
    };
    let clean = BoundInput {
        cpus: vec![cpu.clone()],
        warnings: vec![],
        lost_events: Default::default(),
    };
    let r = analyze(&clean, &Options::default(), "json");
    assert!(r.sound && r.not_sound_because.is_empty());
    assert!(!crate::bound::render::text(&r).contains("NOT A SOUND"));

    let lossy = BoundInput {
        lost_events: [(0, 1)].into(),
        ..clean
    };
    let l = analyze(&lossy, &Options::default(), "json");
    assert_eq!(l.cpus, r.cpus, "a loss changes the label, not the numbers");
    assert!(!l.sound);
    assert_eq!(
        l.not_sound_because,
        vec!["CPU 0: the capture lost 1 events"]
    );
    let json = serde_json::to_value(&l).unwrap_or_default();
    assert_eq!(json["sound"], serde_json::json!(false));
    assert_eq!(
        json["not_sound_because"][0],
        serde_json::json!("CPU 0: the capture lost 1 events")
    );
    let text = crate::bound::render::text(&l);
    assert!(
        text.starts_with("*** NOT A SOUND BOUND: CPU 0: the capture lost 1 events ***"),
        "{text}"
    );
}
