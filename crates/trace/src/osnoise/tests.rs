//! Fixtures captured in the lab's `trace` kernel (6.12.117, 2 vCPUs, TCG): the format files,
//! one `trace_pipe_raw` page of CPU 0 under timerlat (1 ms period, 30 activations) and two
//! consecutive pages of CPU 0 under osnoise (100 ms period, 50 ms runtime, `tracing_thresh` 0),
//! read after `tracing_on` was cleared, with the same instance's text `trace` beside them
//! (timerlat-trace.txt). Every expected figure below was read off that text output.

use super::*;

const FORMATS: &str = include_str!("../../tests/fixtures/osnoise/formats.txt");
const HEADER_PAGE: &str = include_str!("../../tests/fixtures/osnoise/header_page.txt");

fn decoders() -> OsnDecoders {
    let mut d = OsnDecoders::default();
    for part in FORMATS.split("== ").filter(|p| !p.trim().is_empty()) {
        let (sysname, text) = part.split_once('\n').unwrap();
        let name = sysname.rsplit('/').next().unwrap();
        let f = parse_format(text).unwrap();
        d.add(name, &f).unwrap();
    }
    d
}

fn hp() -> HeaderPage {
    crate::tracefs::parse_header_page(HEADER_PAGE).unwrap()
}

fn fixture(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/osnoise")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn a_timerlat_page_agrees_with_the_tracers_text() {
    let d = decoders();
    let raw = fixture("timerlat-cpu0.raw");
    let mut agg = TimerlatAgg::new(&[0], 2000);
    let mut first = None;
    let st = read_page(&raw, &hp(), &d, |ts, ev| {
        first.get_or_insert((ts, ev.clone()));
        agg.push(0, ts, &ev)
    })
    .unwrap();
    assert_eq!(st.events, 60);
    assert_eq!(st.undecoded, 0);
    // "[000] dNh1.  1.650737: #1  context irq timer_latency 104691 ns"
    let (ts, ev) = first.unwrap();
    // The text rounds to the nearest µs (ns2usecs).
    assert_eq!((ts + 500) / 1000, 1_650_737);
    assert_eq!(
        ev,
        OsnEvent::Timerlat {
            seqnum: 1,
            context: 0,
            latency_ns: 104_691
        }
    );
    // The 30 irq and 30 thread lines of CPU 0 in the text: min, max and sum of each.
    let h = agg.histograms();
    let (cpu, irq, thread, worst) = (h[0].cpu, &h[0].irq, &h[0].thread, &h[0].worst);
    assert_eq!(cpu, 0);
    assert_eq!(h[0].thread_linear.total(), 30);
    // 34.609 µs, the smallest thread sample, in the 34 µs bin.
    assert_eq!(h[0].thread_linear.counts()[34], 1);
    assert_eq!(
        (irq.count(), irq.min_ns(), irq.max_ns(), irq.sum_ns()),
        (30, Some(15_841), Some(776_213), 3_451_040)
    );
    assert_eq!(
        (
            thread.count(),
            thread.min_ns(),
            thread.max_ns(),
            thread.sum_ns()
        ),
        (30, Some(34_609), Some(1_241_278), 6_842_146)
    );
    // "#2 context thread timer_latency 1241278 ns" at 1.653627, "#29 … 980888 ns".
    assert_eq!((worst[0].cycle, worst[0].latency_ns), (2, 1_241_278));
    assert_eq!((worst[1].cycle, worst[1].latency_ns), (29, 980_888));
    assert_eq!(
        (worst[0].expected_ns + worst[0].latency_ns + 500) / 1000,
        1_653_627
    );
    let r = agg.result(1000, Some(95), &BTreeMap::from([(0, 0)]));
    assert_eq!(r.cpus[0].seq_gaps, 0);
    assert_eq!(r.cpus[0].irq_without_thread, 0);
    assert_eq!(r.cpus[0].thread_stats.max_ns, Some(1_241_278));
    assert_eq!(r.cpus[0].irq_stats.samples, 30);
}

#[test]
fn osnoise_pages_agree_with_the_tracers_text() {
    let d = decoders();
    let raw = fixture("osnoise-cpu0.raw");
    let mut agg = NoiseAgg::new(&[0]);
    let mut events = 0;
    for page in raw.chunks(4096) {
        let st = read_page(page, &hp(), &d, |_, ev| agg.push(0, &ev)).unwrap();
        assert_eq!(st.undecoded, 0);
        events += st.events;
    }
    // The text has 161 CPU-0 lines from 4.193621 to 4.199472: 145 sample_threshold, 10
    // irq_noise (all local_timer:236), 5 thread_noise (rtscope-m0:75) and the period's entry
    // "50000 10483 79.03400 360 776 0 84 1 44".
    assert_eq!(events, 161);
    let r = agg.result((100_000, 50_000), (None, None), false, &BTreeMap::new());
    let c = &r.cpus[0];
    assert_eq!(
        (c.periods, c.runtime_us, c.noise_us, c.max_single_noise_us),
        (1, 50_000, 10_483, 360)
    );
    assert_eq!(
        (
            c.hw_count,
            c.nmi_count,
            c.irq_count,
            c.softirq_count,
            c.thread_count
        ),
        (776, 0, 84, 1, 44)
    );
    assert!((c.cpu_available_pct - 79.034).abs() < 1e-9);
    assert_eq!(c.threshold_samples, 145);
    let irq = r.sources.iter().find(|s| s.kind == "irq").unwrap();
    assert_eq!(
        (irq.name.as_str(), irq.id, irq.count),
        ("local_timer", 236, 10)
    );
    // The ten local_timer durations of the text, summed: 13130 + 29324 + 8113 + 23285 + 8633 +
    // 24938 + 7261 + 21583 + 33190 + 21272.
    assert_eq!(irq.total_ns, 190_729);
    assert_eq!(irq.max_ns, 33_190);
    let th = r.sources.iter().find(|s| s.kind == "thread").unwrap();
    assert_eq!((th.name.as_str(), th.id, th.count), ("rtscope-m0", 75, 5));
    // 32829 + 25237 + 24137 + 21582 + 20581
    assert_eq!((th.total_ns, th.max_ns), (124_366, 32_829));
    assert_eq!(r.sources.len(), 2);
}

#[test]
fn sequence_gaps_and_unpaired_irq_samples_are_counted() {
    let tl = |seqnum, context, latency_ns| OsnEvent::Timerlat {
        seqnum,
        context,
        latency_ns,
    };
    let mut a = TimerlatAgg::new(&[1], 100);
    for ev in [
        tl(1, 0, 10),
        tl(1, 1, 20),
        tl(2, 0, 11),
        // thread sample of #2 lost; #3 and #4 lost entirely
        tl(5, 0, 12),
        tl(5, 1, 30),
        tl(6, 2, 99), // return-to-user context: not a kernel thread sample
        tl(6, 0, 13),
    ] {
        a.push(1, 1_000_000, &ev);
    }
    let r = a.result(500, None, &BTreeMap::from([(1, 7)]));
    let c = &r.cpus[0];
    assert_eq!(c.seq_gaps, 2);
    assert_eq!(c.irq_without_thread, 1);
    assert_eq!((c.irq_stats.samples, c.thread_stats.samples), (4, 2));
    assert_eq!((c.lost_events, r.lost_events), (7, 7));
    assert_eq!(c.thread_stats.max_ns, Some(30));
}

#[test]
fn noise_sources_sum_per_cpu_and_sort_by_total() {
    let mut a = NoiseAgg::new(&[0, 1]);
    let irq = |d| OsnEvent::IrqNoise {
        desc: "local_timer".into(),
        vector: 236,
        duration_ns: d,
    };
    for (cpu, ev) in [
        (0, irq(5)),
        (0, irq(7)),
        (
            0,
            OsnEvent::SoftirqNoise {
                vector: 9,
                duration_ns: 40,
            },
        ),
        (1, OsnEvent::NmiNoise { duration_ns: 3 }),
        (
            0,
            OsnEvent::ThreadNoise {
                comm: "kworker/0:1".into(),
                pid: 12,
                duration_ns: 1,
            },
        ),
        (
            1,
            OsnEvent::Osnoise {
                runtime_us: 900,
                noise_us: 9,
                max_sample_us: 4,
                hw: 1,
                nmi: 1,
                irq: 2,
                softirq: 0,
                thread: 0,
            },
        ),
        (
            1,
            OsnEvent::Osnoise {
                runtime_us: 100,
                noise_us: 1,
                max_sample_us: 6,
                hw: 0,
                nmi: 0,
                irq: 1,
                softirq: 1,
                thread: 1,
            },
        ),
    ] {
        a.push(cpu, &ev);
    }
    let r = a.result((1000, 1000), (Some(5), None), false, &BTreeMap::new());
    let names: Vec<(u32, &str, u64, u64)> = r
        .sources
        .iter()
        .map(|s| (s.cpu, s.name.as_str(), s.count, s.total_ns))
        .collect();
    assert_eq!(
        names,
        [
            (0, "RCU", 1, 40),
            (0, "local_timer", 2, 12),
            (0, "kworker/0:1", 1, 1),
            (1, "nmi", 1, 3)
        ]
    );
    let c1 = &r.cpus[1];
    assert_eq!(
        (
            c1.periods,
            c1.runtime_us,
            c1.noise_us,
            c1.max_single_noise_us
        ),
        (2, 1000, 10, 6)
    );
    assert_eq!(
        (
            c1.hw_count,
            c1.nmi_count,
            c1.irq_count,
            c1.softirq_count,
            c1.thread_count
        ),
        (1, 1, 3, 1, 1)
    );
    assert!((c1.cpu_available_pct - 99.0).abs() < 1e-9);
    // No period on CPU 0: nothing measured, nothing taken away.
    assert_eq!(r.cpus[0].cpu_available_pct, 100.0);
    assert_eq!(softirq_name(3), "NET_RX");
    assert_eq!(softirq_name(12), "softirq12");
}

#[test]
fn truncated_entries_are_not_decoded() {
    let d = decoders();
    // An ftrace:timerlat entry (id 17) cut after its seqnum.
    let mut p = vec![0u8; 12];
    p[0..2].copy_from_slice(&17u16.to_le_bytes());
    assert_eq!(d.decode(&p), None);
    p.resize(24, 0);
    p[16..24].copy_from_slice(&5u64.to_le_bytes());
    assert_eq!(
        d.decode(&p),
        Some(OsnEvent::Timerlat {
            seqnum: 0,
            context: 0,
            latency_ns: 5
        })
    );
    // An irq_noise whose __data_loc points past the entry.
    let mut q = vec![0u8; 32];
    q[0..2].copy_from_slice(&253u16.to_le_bytes());
    q[24..28].copy_from_slice(&((8u32 << 16) | 200).to_le_bytes());
    assert_eq!(d.decode(&q), None);
}

#[test]
fn cpu_lists_compare_as_sets() {
    let set = |v: &[u32]| {
        v.iter()
            .copied()
            .collect::<std::collections::BTreeSet<u32>>()
    };
    assert_eq!(parse_cpulist("0-1\n"), Some(set(&[0, 1])));
    assert_eq!(parse_cpulist("0,2-4,7"), Some(set(&[0, 2, 3, 4, 7])));
    assert_eq!(parse_cpulist("0-x"), None);
}

#[test]
fn a_sequence_that_restarts_is_not_a_loss() {
    use super::seq_gap;
    assert_eq!(seq_gap(10, 11), 0);
    assert_eq!(seq_gap(10, 14), 3);
    // Another timerlat instance started: the per-CPU count went back to 0.
    assert_eq!(seq_gap(377, 0), 0);
    assert_eq!(seq_gap(5000, 4623), 0);
    // The u32 wrapped: the two numbers around it are consecutive.
    assert_eq!(seq_gap(u32::MAX, 0), 0);
    assert_eq!(seq_gap(u32::MAX - 1, 1), 2);
}
