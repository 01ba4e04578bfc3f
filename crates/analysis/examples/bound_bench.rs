//! Throughput of the bound analysis (target: 10 M interrupt records in < 10 s, one core).
//!
//! `cargo run --release -p rtscope-analysis --example bound_bench [-- RECORDS]`
//!
//! Synthesises RECORDS (default 10 000 000) instances over five sources on one CPU, shaped like
//! an I/O-loaded x86 box (timer every 1 ms, a NIC line, a bursty disk line, IRQ work, rare NMI),
//! then times (1) validation into sources (the unsorted-input path: records arrive interleaved
//! by time and are grouped, sorted and checked) and (2) all six characterizations. Single
//! thread; data generation is not timed.

use rtscope_analysis::bound::{self, Options};
use rtscope_model::bound::{RawCpu, RawInstance, RawSource, ThreadVars};
use std::time::Instant;

/// CPU time of this thread: on a shared, loaded machine wall time measures the neighbours.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec; CLOCK_THREAD_CPUTIME_ID is always supported on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let mut rng = Rng(42);
    // Shares of the records: timer 40 %, NIC 35 %, disk 20 %, irq_work 5 %, NMI a handful.
    let shares = [
        ("236", 0.40, 1_000_000u64, 0u64),
        ("33", 0.35, 20_000, 400_000),
        ("35", 0.20, 1_900, 4_000_000),
        ("246", 0.05, 50_000, 5_000_000),
    ];
    let mut sources = Vec::new();
    let mut total = 0usize;
    for (name, share, min_gap, jitter) in shares {
        let k = (n as f64 * share) as usize;
        let mut t = 1_000_000_000u64;
        let mut v = Vec::with_capacity(k);
        for i in 0..k {
            let gap = min_gap + if jitter > 0 { rng.range(0, jitter) } else { 0 };
            let dur = rng.range(500, min_gap.clamp(501, 21_000));
            v.push(RawInstance {
                start_ns: t,
                duration_ns: dur.min(gap),
                row: i as u64,
            });
            t += gap;
        }
        // Mildly unsorted input, as a reader may deliver it: swap a few neighbours.
        for _ in 0..k / 1000 {
            let i = (rng.next() % (k as u64 - 1)) as usize;
            v.swap(i, i + 1);
        }
        total += k;
        sources.push(RawSource {
            name: name.into(),
            nmi: false,
            origin: "bench".into(),
            instances: v,
        });
    }
    let nmis: Vec<RawInstance> = (0..(n - total).max(1))
        .map(|i| RawInstance {
            start_ns: 1_000_000_000 + i as u64 * 10_000_000_000,
            duration_ns: 9_000,
            row: i as u64,
        })
        .collect();
    total += nmis.len();
    sources.push(RawSource {
        name: "nmi".into(),
        nmi: true,
        origin: "bench".into(),
        instances: nmis,
    });
    let cpu = RawCpu {
        cpu: 0,
        thread: ThreadVars {
            poid_ns: 22_510,
            paie_ns: 310,
            psd_ns: 19_702,
            dst_ns: 19_312,
        },
        thread_estimated: false,
        irq_entry_exit_ns: 0,
        observed_max_latency_ns: Some(27_000),
        sources,
    };

    let c0 = thread_cpu_s();
    let t0 = Instant::now();
    let input = match bound::from_raw(vec![cpu], Vec::new()) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("bench input rejected: {e}");
            std::process::exit(1);
        }
    };
    let t_build = t0.elapsed();
    let c1 = thread_cpu_s();
    let t1 = Instant::now();
    let r = bound::analyze(&input, &Options::default(), "bench");
    let t_an = t1.elapsed();
    let c2 = thread_cpu_s();
    println!("records: {total}");
    println!(
        "validate+sort: {:.3} s CPU ({:.3} s wall)",
        c1 - c0,
        t_build.as_secs_f64()
    );
    println!(
        "six characterizations: {:.3} s CPU ({:.3} s wall)",
        c2 - c1,
        t_an.as_secs_f64()
    );
    println!(
        "total: {:.3} s CPU ({:.3} s wall)",
        c2 - c0,
        (t_build + t_an).as_secs_f64()
    );
    for (name, b) in r.cpus[0].bounds.named() {
        let l = b
            .latency_ns
            .map_or("did not converge".to_string(), |l| format!("{l} ns"));
        println!("  {name:<22} {l:<20} iterations {}", b.iteration_count);
    }
}
