//! On the real kernel: a SCHED_FIFO thread sleeps to absolute 1 ms deadlines on CPU 1 while we
//! trace; every sample must be attributable and its parts must sum to its latency exactly; the
//! trace file round-trips. A second or two per mechanism.

use rtscope_analysis::attribution::{attribute, AttributionOptions};
use rtscope_model::record::RawSample;
use rtscope_trace::{check, read_rtt, write_rtt, Mechanism, TraceSession};

fn now() -> u64 {
    rtscope_trace::sys::monotonic_ns()
}

/// A minimal cyclic measurement thread (test scaffolding; the real loop is the probe crate's).
fn measure(cpu: u32, cycles: u64, period_ns: u64) -> Vec<RawSample> {
    std::thread::spawn(move || {
        // SAFETY: plain syscalls on the calling thread with valid arguments.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            let p = libc::sched_param { sched_priority: 90 };
            libc::sched_setscheduler(0, libc::SCHED_FIFO, &p);
        }
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
        let mut out = Vec::with_capacity(cycles as usize);
        let mut next = now() + 10 * period_ns;
        for cycle in 0..cycles {
            let ts = libc::timespec {
                tv_sec: (next / 1_000_000_000) as i64,
                tv_nsec: (next % 1_000_000_000) as i64,
            };
            // SAFETY: valid timespec; remaining time not needed for TIMER_ABSTIME.
            unsafe {
                libc::clock_nanosleep(
                    libc::CLOCK_MONOTONIC,
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                )
            };
            let t = now();
            out.push(RawSample {
                cpu,
                tid,
                cycle,
                expected_ns: next,
                latency_ns: t.saturating_sub(next),
            });
            next += period_ns;
        }
        out
    })
    .join()
    .unwrap_or_default()
}

fn run(mech: Mechanism) {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED: needs root");
        return;
    }
    if let Err(e) = check(mech) {
        println!("SKIPPED: {} unavailable: {e}", mech.name());
        return;
    }
    let s = TraceSession::start(&[0, 1], mech).expect("start");
    // RTSCOPE_TEST_CYCLES: longer runs for demos (default 1000 × 1 ms).
    let cycles: u64 = std::env::var("RTSCOPE_TEST_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let samples = measure(1, cycles, 1_000_000);
    let cap = s.stop().expect("stop");
    assert_eq!(samples.len() as u64, cycles, "measurement thread failed");
    let file = cap.into_rtt(samples.clone());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.rtt");
    let bytes = write_rtt(&path, &file).expect("write");
    let back = read_rtt(&path).expect("read back");
    // Keep the file for `rtscope analyze` demos: RTSCOPE_TEST_RTT_DIR=/some/dir.
    if let Some(d) = std::env::var_os("RTSCOPE_TEST_RTT_DIR") {
        let _ = std::fs::copy(
            &path,
            std::path::Path::new(&d).join(format!("real-{}.rtt", mech.name())),
        );
    }
    assert_eq!(back, file, "trace file round trip");
    let opts = AttributionOptions {
        lost_per_cpu: file
            .meta
            .lost_per_cpu
            .iter()
            .map(|(a, b)| (*a, *b))
            .collect(),
        ..Default::default()
    };
    let r = attribute(&back.events, &back.samples, &back.names, &opts);
    let s = &r.summary;
    println!(
        "{}: {} events, file {} bytes, lost {:?}; attributed {} unattributed {}; sum check {:?}",
        mech.name(),
        back.events.len(),
        bytes,
        file.meta.lost_per_cpu,
        s.samples_attributed,
        s.samples_unattributed,
        r.sum_check
    );
    for c in s.causes.iter().take(8) {
        println!(
            "  {:<32} n={:<5} total={:>9} ns max={:>8} ns tail99={:.2}",
            c.cause, c.samples_affected, c.total_ns, c.max_ns, c.tail_p99_share
        );
    }
    assert_eq!(r.sum_check.violations, 0);
    assert_eq!(r.sum_check.max_abs_error_ns, 0);
    // Every sample should have its wake-up and switch-in in the trace (allow 0.5 % for the
    // edges of the capture).
    assert!(
        s.samples_unattributed <= 5,
        "{} unattributed: {:?}",
        s.samples_unattributed,
        r.worst
            .iter()
            .map(|w| &w.unattributed_reason)
            .collect::<Vec<_>>()
    );
    for w in &r.worst {
        if w.unattributed_reason.is_none() {
            // No switch-in is legitimate when the thread never left the CPU.
            if let Some(sw) = w.anchors.switch_in_ns {
                assert!(
                    sw <= w.expected_ns + w.latency_ns,
                    "switch-in after user-space resume"
                );
            }
            assert!(w.anchors.waking_ns.expect("waking") >= w.expected_ns);
        }
    }
    assert!(s.causes.iter().any(|c| c.cause == "timer_handler"));
}

#[test]
fn bpf_attribution_on_real_samples() {
    run(Mechanism::Bpf);
}

#[test]
fn tracefs_attribution_on_real_samples() {
    run(Mechanism::Tracefs);
}
