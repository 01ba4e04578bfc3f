//! Replay a generated traced run through the streaming analysis (attribution + online bound),
//! as fast as it goes: the 24-hour equivalent of a long `rtscope run` without waiting 24 hours.
//! Prints, per simulated hour, the wall time, peak RSS and the analysis' own heap, then the run's
//! figures. `bench/replay-24h.sh` builds and runs it.
//!
//! usage: replay [--hours H] [--cpus N] [--interval-us US] [--seed S] [--every-s S]

use rtscope_session::stream::Explain;
use rtscope_testkit::synth::{Synth, SynthConfig};
use std::time::Instant;

fn arg(args: &[String], name: &str, default: f64) -> f64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn peak_rss_kib() -> u64 {
    // SAFETY: rusage is plain data filled by the kernel.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_maxrss as u64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let hours = arg(&args, "--hours", 24.0);
    let cpus = arg(&args, "--cpus", 2.0) as u32;
    let interval_us = arg(&args, "--interval-us", 1000.0) as u64;
    let seed = arg(&args, "--seed", 1.0) as u64;
    let cfg = SynthConfig {
        cpus,
        interval_ns: interval_us * 1000,
        seed,
        ..Default::default()
    };
    let mut synth = Synth::new(cfg);
    let cpu_list: Vec<u32> = (0..cpus).collect();
    let duration_s = hours * 3600.0;
    let mut x = Explain::offline(&cpu_list, 10, None, Some(60), Some(duration_s));
    x.set_names(synth.names());
    let step_ns = 100_000_000u64; // the session's tick: 100 ms
    let steps = (duration_s * 1e9 / step_ns as f64) as u64;
    let every_s = arg(&args, "--every-s", 3600.0).max(0.1);
    let per_hour = ((every_s * 1e9 / step_ns as f64) as u64).max(1);
    let (mut samples, mut events) = (Vec::new(), Vec::new());
    let t0 = Instant::now();
    println!(
        "# replay: {hours} h x {cpus} CPUs x {} Hz, generated stream, 100 ms steps",
        1_000_000 / interval_us
    );
    println!("# sim_h  wall_s    samples      events  peak_rss_MiB  attribution_MiB  bound_MiB");
    for i in 1..=steps {
        samples.clear();
        events.clear();
        synth.step(step_ns, &mut samples, &mut events);
        // Everything before the last millisecond has been delivered (the next period's earliest
        // event lies at most 250 µs before its planned wake-up).
        let watermark = synth.now_ns - 1_000_000;
        x.step(&samples, &events, watermark).expect("analysis");
        if i % per_hour == 0 {
            println!(
                "{:>7.3} {:>7.1} {:>10} {:>11} {:>8.1} {:>8.2} {:>8.2}",
                (i * step_ns) as f64 / 3.6e12,
                t0.elapsed().as_secs_f64(),
                synth.samples_total,
                synth.events_total,
                peak_rss_kib() as f64 / 1024.0,
                x.heap_parts().0 as f64 / (1 << 20) as f64,
                x.heap_parts().1 as f64 / (1 << 20) as f64
            );
        }
    }
    let mut rec = rtscope_session::stream::empty_record();
    x.finish_offline(synth.now_ns, &mut rec);
    let wall = t0.elapsed().as_secs_f64();
    let m = rec.measurement().expect("a measurement record");
    let a = m.attribution.as_ref().expect("attribution");
    println!(
        "# done: {:.1} s wall for {hours} h simulated ({:.0}x real time); {} samples ({} explained, {} unattributed), {} events ({:.2} M events/s); peak RSS {:.1} MiB",
        wall,
        duration_s / wall,
        synth.samples_total,
        a.samples_attributed,
        a.samples_unattributed,
        synth.events_total,
        synth.events_total as f64 / wall / 1e6,
        peak_rss_kib() as f64 / 1024.0
    );
    for c in a.causes.iter().take(6) {
        println!(
            "#   cause {:<28} tail share {:>5.1} %  max {:>9.1} us",
            c.cause,
            c.tail_p99_share * 100.0,
            c.max_ns as f64 / 1e3
        );
    }
    if let Some(b) = &m.bound {
        for c in &b.cpus {
            for (name, ch) in c.bounds.named() {
                println!(
                    "#   CPU {} {:<22} bound {:>12}  (observed max {:.1} us)",
                    c.cpu,
                    name,
                    ch.latency_ns
                        .map_or("-".to_string(), |v| format!("{:.1} us", v as f64 / 1e3)),
                    c.observed_max_latency_ns.unwrap_or(0) as f64 / 1e3
                );
            }
        }
    }
}
