//! Streaming capture on the real kernel (root, ~5 s per mechanism): a session on CPU 0 polled
//! every 100 ms for 3 s beside a second session that only stops at the end, while a SCHED_OTHER
//! ping-pong pair and a sleeping thread keep CPU 0 busy with switches and wake-ups. Checks:
//! * the watermark never goes back, and no event arrives below a watermark already handed out
//!   (the contract the streaming analysis relies on), per CPU in time order across polls;
//! * polled + the rest at `finish` = what the stop-at-the-end session saw over the same stretch;
//! * the reader holds a bounded amount (the queue never exceeds its bound, also after the
//!   consumer pauses), nothing is lost, and loss counters and names are published while it runs.

use rtscope_model::event::Event;
use rtscope_trace::{check, Keep, Mechanism, TraceSession, QUEUE_BATCHES, SPILL_EVENTS};
use std::collections::BTreeMap;
use std::time::Duration;

mod common;
use common::{now, PingPong};

fn can_run(mech: Mechanism) -> bool {
    if !rtscope_sys::system::is_root() {
        rtscope_testkit::skipped("needs root");
        return false;
    }
    if let Err(e) = check(mech) {
        rtscope_testkit::skipped(format_args!("{} unavailable: {e}", mech.name()));
        return false;
    }
    true
}

/// A thread on CPU 0 sleeping 1 ms at a time (timer interrupts, wake-ups, switches).
fn sleeper(stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        // SAFETY: plain syscall on the calling thread with a valid cpu set.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(1));
        }
    })
}

/// The consumer's side: everything polled, and the checks made at each poll.
#[derive(Default)]
struct Poller {
    polled: Vec<Event>,
    prev_wm: u64,
    last_ts: BTreeMap<u32, u64>,
    /// Events below a watermark handed out before their poll.
    below: u64,
    max_queued: usize,
    max_held: usize,
    polls: u32,
}

impl Poller {
    fn poll(&mut self, s: &mut TraceSession) {
        let b = s.reader_backlog();
        self.max_queued = self.max_queued.max(b.queued_batches);
        self.max_held = self.max_held.max(b.held_events);
        let mut v = Vec::new();
        s.poll(&mut v).expect("poll");
        let wm = s.watermark_ns();
        assert!(
            wm >= self.prev_wm,
            "watermark went back: {} -> {wm}",
            self.prev_wm
        );
        assert!(wm <= now(), "watermark in the future");
        for e in &v {
            if e.ts_ns < self.prev_wm {
                self.below += 1;
            }
            let l = self.last_ts.entry(e.cpu).or_insert(0);
            assert!(
                e.ts_ns >= *l,
                "cpu {}: {} after {} (not in time order across polls)",
                e.cpu,
                e.ts_ns,
                l
            );
            *l = e.ts_ns;
        }
        self.prev_wm = wm;
        self.polls += 1;
        self.polled.extend(v);
    }
}

fn stream(mech: Mechanism, keep: Keep) {
    if !can_run(mech) {
        return;
    }
    let cpus = [0u32];
    let load = PingPong::start(1, 50).expect("ping-pong load");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sl = sleeper(stop.clone());
    let reference = TraceSession::start_with(&cpus, mech, keep).expect("reference start");
    let mut s = TraceSession::start_with(&cpus, mech, keep).expect("start");
    let t_start = now();
    let mut p = Poller::default();
    let mut comms_seen = 0usize;
    for i in 0..30 {
        std::thread::sleep(Duration::from_millis(100));
        p.poll(&mut s);
        if i >= 5 {
            comms_seen = comms_seen.max(s.comms().len());
        }
    }
    assert!(p.prev_wm > t_start, "the watermark never passed the start");
    // The consumer pauses for 1.5 s: the queue stays within its bound.
    std::thread::sleep(Duration::from_millis(1500));
    let b = s.reader_backlog();
    assert!(b.queued_batches <= QUEUE_BATCHES, "{b:?}");
    assert!(b.held_events <= SPILL_EVENTS + 100_000, "{b:?}");
    assert_eq!(b.unpolled_events, 0);
    p.max_queued = p.max_queued.max(b.queued_batches);
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(100));
        p.poll(&mut s);
    }
    let Poller {
        polled,
        prev_wm,
        mut below,
        max_queued,
        max_held,
        polls,
        ..
    } = p;
    let lost_live = s.lost_so_far();
    let rest = s.finish().expect("finish");
    let t_end = rest.end_ns;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = sl.join();
    let msgs = load.stop();
    let full = reference.stop().expect("reference stop");
    for e in &rest.events {
        if e.ts_ns < prev_wm {
            below += 1;
        }
    }
    let in_window = |e: &&Event| e.ts_ns >= t_start + 50_000_000 && e.ts_ns < t_end - 50_000_000;
    let streamed = polled
        .iter()
        .chain(rest.events.iter())
        .filter(in_window)
        .count();
    let reference_n = full.events.iter().filter(in_window).count();
    println!(
        "{} {}: {polls} polls, {} events polled + {} at finish; {streamed} in the common window vs {reference_n} stopped at the end; watermark lag {:.1} ms; max queued {max_queued} batches, max held {max_held} events; {msgs} load messages; {comms_seen} names; notes {:?}",
        mech.name(),
        keep.name(),
        polled.len(),
        rest.events.len(),
        (t_end - prev_wm) as f64 / 1e6,
        rest.notes
    );
    assert_eq!(
        below, 0,
        "events arrived below a watermark already handed out"
    );
    assert!(
        !rest.notes.iter().any(|n| n.contains("late")),
        "{:?}",
        rest.notes
    );
    assert_eq!(rest.lost_total(), 0, "lost: {:?}", rest.lost_per_cpu);
    assert_eq!(
        full.lost_total(),
        0,
        "reference lost: {:?}",
        full.lost_per_cpu
    );
    assert!(
        lost_live.contains_key(&0),
        "loss counters not published: {lost_live:?}"
    );
    assert!(comms_seen > 0, "no names published");
    assert!(polled.len() > 1000, "only {} events polled", polled.len());
    // Two captures of the same tracepoints: the same events, but each stamped by its own
    // program run or ring buffer (a few hundred ns apart), so the relevance filter's 10 µs
    // decisions (marker or not) may differ now and then; with every event kept they match.
    let diff = streamed.abs_diff(reference_n);
    let tolerance = if keep == Keep::All && mech == Mechanism::Tracefs {
        4
    } else {
        10 + reference_n / 100
    };
    assert!(
        diff <= tolerance,
        "streamed {streamed} vs stopped {reference_n}"
    );
    assert!(max_queued <= QUEUE_BATCHES);
    assert_eq!(rest.keep, keep);
    if keep == Keep::Relevant {
        assert!(rest.filtered > 0, "the load's switches should be filtered");
        // The reference ran longer on both ends.
        assert!(
            rest.filtered <= full.filtered + full.filtered / 100,
            "filtered {} vs {}",
            rest.filtered,
            full.filtered
        );
    }
}

#[test]
fn bpf_streams_with_a_watermark() {
    stream(Mechanism::Bpf, Keep::Relevant);
}

#[test]
fn tracefs_streams_with_a_watermark() {
    stream(Mechanism::Tracefs, Keep::Relevant);
}

#[test]
fn tracefs_streams_every_event() {
    stream(Mechanism::Tracefs, Keep::All);
}
