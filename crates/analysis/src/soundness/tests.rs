//! Hand-checked answers of the calibrate/validate join (the numbers are worked in comments).

use super::*;

fn hist(values: &[(u64, u64)]) -> Histogram {
    let mut h = Histogram::new();
    for &(v, n) in values {
        h.record_n(v, n);
    }
    h
}

fn lat(values: &[(u64, u64)], worst: &[u64]) -> Latencies {
    Latencies {
        histogram: hist(values),
        worst_ns: worst.to_vec(),
    }
}

fn cal(
    id: &str,
    duration_s: f64,
    series: &[(f64, Option<u64>)],
    final_ns: [Option<u64>; 6],
    observed: u64,
) -> Calibration {
    Calibration {
        run_id: id.into(),
        duration_s,
        not_sound_because: Vec::new(),
        cpus: vec![CalibrationCpu {
            cpu: 0,
            final_ns,
            series: series.to_vec(),
            observed_max_ns: Some(observed),
        }],
    }
}

fn val(id: &str, l: Latencies) -> Validation {
    Validation {
        run_id: id.into(),
        duration_s: 300.0,
        cpus: [(0, vec![l])].into_iter().collect(),
    }
}

fn key() -> CellKey {
    CellKey {
        kernel: "trace".into(),
        preempt: "full".into(),
        load: "io".into(),
        smp: "1".into(),
    }
}

/// Three calibration boots (A, B, C — C stopped at 200 s) and three validation boots:
/// V1 1000 × 20 µs; V2 999 × 25 µs and one 33 µs (its worst-3 list reaches below every bound
/// checked: exact counts); V3 998 × 10 µs and two 52 µs with a worst-2 list of both (counts
/// above 10 µs come from the histogram).
fn fixture() -> (Vec<Calibration>, Vec<Validation>) {
    let s = Some;
    let cal = vec![
        cal(
            "A",
            300.0,
            &[
                (10.0, s(50_000)),
                (30.0, s(60_000)),
                (60.0, s(70_000)),
                (120.0, s(70_000)),
                (300.0, s(80_000)),
            ],
            [s(40_000), s(55_000), s(60_000), None, s(80_000), s(90_000)],
            30_000,
        ),
        cal(
            "B",
            300.0,
            &[(10.0, s(45_000)), (60.0, s(65_000)), (300.0, s(65_000))],
            [s(30_000), s(50_000), s(52_000), None, s(65_000), s(70_000)],
            32_000,
        ),
        cal(
            "C",
            200.0,
            &[(10.0, None), (59.5, s(75_000)), (200.0, s(75_000))],
            [s(35_000), s(58_000), s(61_000), None, s(75_000), s(76_000)],
            31_000,
        ),
    ];
    let val = vec![
        val("V1", lat(&[(20_000, 1000)], &[20_000; 5])),
        val(
            "V2",
            lat(&[(25_000, 999), (33_000, 1)], &[33_000, 25_000, 25_000]),
        ),
        val("V3", lat(&[(10_000, 998), (52_000, 2)], &[52_000, 52_000])),
    ];
    (cal, val)
}

#[test]
fn calibrated_bounds_against_validation_boots() {
    let (c, v) = fixture();
    let r = evaluate(&key(), &c, &v, &[10.0, 60.0, 300.0]);
    assert_eq!(r.len(), 1);
    let r = &r[0];
    assert_eq!((r.cpu, r.validation_samples), (0, 3000));
    assert_eq!(r.validation_max_ns, Some(52_000));
    assert_eq!(r.calibration_observed_max_ns, Some(32_000));
    assert_eq!((r.calibration_s, r.validation_s), (800.0, 900.0));
    assert!(r.notes.is_empty() && r.not_sound.is_empty(), "{r:?}");

    // T_c = 10 s: A 50, B 45, C not converged. The lowest, 45 µs, is below V3's two 52 µs
    // samples (counted on the histogram: V3's worst-2 list is all above) and above V1, V2.
    let p10 = &r.prefixes[0];
    assert_eq!(p10.bounds_ns, [Some(50_000), Some(45_000), None]);
    assert_eq!((p10.not_converged, p10.too_short), (1, 0));
    assert_eq!(p10.samples_above, Count { n: 2, exact: false });
    assert_eq!(p10.exceeded_by, [("V3".to_string(), 52_000)]);
    assert_eq!(p10.boots_exceeded, 2);
    // T_c = 60 s: A's point at 60 (70), B's at 60 (65), C's at 59.5 (75): all above 52 µs.
    let p60 = &r.prefixes[1];
    assert_eq!(p60.bounds_ns, [Some(70_000), Some(65_000), Some(75_000)]);
    assert_eq!(
        p60.spread_ns,
        Spread {
            min: Some(65_000.0),
            median: Some(70_000.0),
            max: Some(75_000.0)
        }
    );
    assert_eq!(p60.samples_above, Count { n: 0, exact: true });
    assert_eq!(p60.boots_exceeded, 0);
    // T_c = 300 s: C (200 s) did not reach it; the median of 80 and 65 is 72.5.
    let p300 = &r.prefixes[2];
    assert_eq!(p300.bounds_ns, [Some(80_000), Some(65_000), None]);
    assert_eq!((p300.not_converged, p300.too_short), (0, 1));
    assert_eq!(p300.spread_ns.median, Some(72_500.0));

    // Finals. no_interrupts: 40, 30, 35 → lowest 30 µs: V2's 33 µs (exact: its worst list
    // reaches 25 µs) and V3's two 52 µs (histogram) = 3; every boot's bound is below 52 µs.
    let names: Vec<&str> = r.finals.iter().map(|f| f.characterization).collect();
    assert_eq!(names, CHARACTERIZATIONS);
    let ni = &r.finals[0];
    assert_eq!(ni.samples_above, Count { n: 3, exact: false });
    assert_eq!(
        ni.exceeded_by,
        [("V2".to_string(), 33_000), ("V3".to_string(), 52_000)]
    );
    assert_eq!(ni.boots_exceeded, 3);
    // worst_single: 55, 50, 58 → V3's two samples above 50 µs; only B's bound is exceeded.
    let ws = &r.finals[1];
    assert_eq!(ws.samples_above.n, 2);
    assert_eq!(ws.boots_exceeded, 1);
    // sporadic converged nowhere: nothing to check, nothing counted.
    let sp = &r.finals[3];
    assert_eq!(sp.not_converged, 3);
    assert_eq!(sp.samples_above, Count { n: 0, exact: true });
    assert_eq!(sp.spread_ns, Spread::default());
    // sliding windows: 80, 65, 75 and 90, 70, 76: above everything.
    assert_eq!(r.finals[4].samples_above.n, 0);
    assert_eq!(r.finals[5].samples_above.n, 0);
    assert_eq!(r.violations(), 3);

    // Time to cover the largest validation latency (52 µs): A at 30 s (60), B at 60 s (65),
    // C at 59.5 s (75) → median 59.5, max 60. To settle on the final value: A at 300 s (80),
    // B at 60 s (65), C at 59.5 s (75) → median 60, max 300.
    assert_eq!(
        r.time_to_cover_s,
        Spread {
            min: Some(30.0),
            median: Some(59.5),
            max: Some(60.0)
        }
    );
    assert_eq!(r.never_covered, 0);
    assert_eq!(
        r.time_to_settle_s,
        Spread {
            min: Some(59.5),
            median: Some(60.0),
            max: Some(300.0)
        }
    );
}

#[test]
fn a_bound_that_never_covers_and_missing_boots_are_said() {
    let (mut c, mut v) = fixture();
    c.truncate(2);
    // B's bound stays at 45 µs: below V3's 52 µs for the whole run.
    c[1].cpus[0].series = vec![(10.0, Some(45_000)), (300.0, Some(45_000))];
    c[1].not_sound_because = vec!["CPU 0: the capture lost 5 events".into()];
    v[0].cpus.clear();
    let r = &evaluate(&key(), &c, &v, &[300.0])[0];
    assert_eq!(r.never_covered, 1);
    assert_eq!(r.time_to_cover_s.max, Some(30.0));
    assert_eq!(r.prefixes[0].bounds_ns, [Some(80_000), Some(45_000)]);
    assert_eq!(r.prefixes[0].samples_above.n, 2);
    assert_eq!(r.prefixes[0].boots_exceeded, 1);
    assert_eq!(r.not_sound, ["B: CPU 0: the capture lost 5 events"]);
    assert_eq!(
        r.notes,
        [
            "2 calibration boots (the design asks for 3)",
            "validation run V1 has no samples on CPU 0"
        ]
    );
    assert_eq!(r.validation_samples, 2000);
}

#[test]
fn samples_above_is_exact_when_the_worst_list_says_so() {
    // The maximum at or below the bound.
    let l = lat(&[(5_000, 10)], &[5_000]);
    assert_eq!(samples_above(&l, 5_000), Count { n: 0, exact: true });
    // The worst list reaches below the bound: it holds every sample above.
    let l = lat(
        &[(1_000, 7), (9_000, 2), (9_500, 1)],
        &[9_500, 9_000, 9_000, 1_000],
    );
    assert_eq!(samples_above(&l, 8_999), Count { n: 3, exact: true });
    assert_eq!(samples_above(&l, 9_000), Count { n: 1, exact: true });
    // The worst list holds the whole run.
    let l = lat(&[(9_000, 2)], &[9_000, 9_000]);
    assert_eq!(samples_above(&l, 100), Count { n: 2, exact: true });
    // Neither: the histogram's buckets, and never fewer than the list shows.
    let l = lat(&[(1_000, 10), (9_000, 4)], &[9_000, 9_000]);
    assert_eq!(samples_above(&l, 5_000), Count { n: 4, exact: false });
    assert_eq!(
        samples_above(&lat(&[], &[]), 0),
        Count { n: 0, exact: true }
    );
}

#[test]
fn the_bound_at_a_prefix() {
    let s = [
        (1.0, None),
        (30.0, Some(5)),
        (59.0, Some(7)),
        (61.0, Some(9)),
    ];
    assert_eq!(bound_at(&s, 0.5), Err(()));
    assert_eq!(bound_at(&s, 1.0), Ok(None));
    // 61 is within 2 % of 60: the instant at 61 s is the bound at one minute.
    assert_eq!(bound_at(&s, 60.0), Ok(Some(9)));
    // 58 s + 2 % = 59.16 s takes the instant at 59 s; 57 s + 2 % = 58.14 s does not.
    assert_eq!(bound_at(&s, 58.0), Ok(Some(7)));
    assert_eq!(bound_at(&s, 57.0), Ok(Some(5)));
    // 61 s reaches 62 s less 2 %, not 63 s.
    assert_eq!(bound_at(&s, 62.0), Ok(Some(9)));
    assert_eq!(bound_at(&s, 63.0), Err(()));
    assert_eq!(bound_at(&[], 1.0), Err(()));
}

#[test]
fn median_and_max() {
    assert_eq!(spread(&[]), Spread::default());
    assert_eq!(
        spread(&[3.0, 1.0, 2.0]),
        Spread {
            min: Some(1.0),
            median: Some(2.0),
            max: Some(3.0)
        }
    );
    assert_eq!(spread(&[4.0, 1.0, 2.0, 3.0]).median, Some(2.5));
}

#[test]
fn roles_come_from_the_role_tag_else_the_repetition() {
    let tags = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let exp = ("experiment", "calibrate-validate");
    assert_eq!(role_from_tags(&tags(&[("cell", "x-r1")])), None);
    assert_eq!(
        role_from_tags(&tags(&[
            exp,
            ("cell", "smp1-trace.full-fifo-io-i1000-5m-r3")
        ])),
        Some(Role::Calibration)
    );
    assert_eq!(
        role_from_tags(&tags(&[exp, ("cell", "trace.full-fifo-io-i1000-5m-r12")])),
        Some(Role::Validation)
    );
    assert_eq!(
        role_from_tags(&tags(&[exp, ("cell", "x-r2"), ("role", "calibration")])),
        Some(Role::Calibration)
    );
    assert_eq!(role_from_tags(&tags(&[exp, ("role", "both")])), None);
    assert_eq!(role_from_tags(&tags(&[exp, ("cell", "x-rx")])), None);
}

/// A lab record (`tests/fixtures/soundness/README.md` says how it was made) as either role.
#[test]
fn a_recorded_run_as_calibration_and_validation() {
    let text = include_str!("../../tests/fixtures/soundness/trace-full-idle-30s.json");
    let mut r = rtscope_model::record::decode_run_record(text).expect("fixture decodes");
    for (k, v) in [
        ("experiment", "calibrate-validate"),
        ("cell", "smp1-trace.full-fifo-idle-i1000-30s-r1"),
        ("kernel_preset", "trace"),
        ("preempt", "full"),
        ("lab_smp", "1"),
    ] {
        r.tags.insert(k.into(), v.into());
    }
    assert_eq!(role_of(&r), Some(Role::Calibration));
    assert_eq!(
        key_of(&r),
        CellKey {
            kernel: "trace".into(),
            preempt: "full".into(),
            load: "idle".into(),
            smp: "1".into()
        }
    );
    let c = calibration_of(&r).expect("a bound");
    assert_eq!(c.duration_s, 30.0);
    assert!(c.not_sound_because.is_empty());
    assert_eq!(c.cpus.len(), 1);
    let cpu = &c.cpus[0];
    // The record's figures (read with python's json module when the fixture was taken).
    assert_eq!(cpu.series.len(), 60);
    assert_eq!(cpu.series[0], (1.921088514, Some(58_656)));
    assert_eq!(cpu.series[59], (31.501381154, Some(153_254)));
    assert_eq!(cpu.final_ns[4], Some(153_254));
    let v = validation_of(&r).expect("a measurement");
    let l = &v.cpus[&0];
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].histogram.max_ns(), Some(59_696));
    assert_eq!(l[0].histogram.count(), 30_000);

    // The same boot in both roles (which the experiment never does): its own samples are
    // below its own converged bounds.
    let res = evaluate(&key_of(&r), &[c], &[v], &[10.0, 30.0]);
    assert_eq!(res[0].violations(), 0);
    assert_eq!(res[0].validation_max_ns, Some(59_696));
}
