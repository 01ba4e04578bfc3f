//! A generated traced run: what the capture and the probe of a `rtscope run` deliver, period by
//! period, without a kernel. It drives the streaming pipeline for hours of simulated time in
//! minutes (the replay benchmark, `bench/replay-24h.sh`) and in tests of constant memory.
//!
//! Per CPU, one SCHED_FIFO thread wakes every interval (threads staggered as the probe does). A
//! period looks like what the eBPF capture records on a VM: the thread is asleep and the CPU idle;
//! the timer interrupt arrives after a delivery delay, the handler wakes the thread
//! (`sched_waking`), the switch to it follows the handler's exit, the return to user space
//! follows the switch; after recording, the thread sleeps again (switch to idle, `cpu_idle`). On
//! top of that, at realistic rates: the 250 Hz tick with its TIMER softirq, a device interrupt
//! with its NET_RX softirq, a SCHED_OTHER task that holds the CPU when the timer fires (so a
//! lower-priority thread shows in the tail), an NMI, and host stalls (no guest event at all
//! for milliseconds, then overruns). Deterministic for a seed.

use rtscope_model::event::{Event, EventKind, Vector, IDLE_EXIT};
use rtscope_model::RawSample;

/// Kernel prio of a SCHED_FIFO 95 task (99 − rt_priority), as `sched_switch` prints it.
const FIFO95_PRIO: i32 = 4;
const OTHER_PRIO: i32 = 120;
/// The device interrupt (virtio) and its softirq.
pub const DEVICE_IRQ: u32 = 10;
const NET_RX: u32 = 3;
const TIMER_SOFTIRQ: u32 = 1;

#[derive(Clone, Debug)]
pub struct SynthConfig {
    pub cpus: u32,
    pub interval_ns: u64,
    pub seed: u64,
    /// Device interrupts per second per CPU.
    pub device_irq_hz: f64,
    /// Probability that a SCHED_OTHER task runs when the timer fires.
    pub busy_prob: f64,
    /// Probability per period of a host stall (2–19 ms without any guest event).
    pub stall_prob: f64,
    /// Probability per period of an NMI.
    pub nmi_prob: f64,
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            cpus: 2,
            interval_ns: 1_000_000,
            seed: 1,
            device_irq_hz: 50.0,
            busy_prob: 0.002,
            stall_prob: 1.0 / 20_000.0,
            nmi_prob: 1.0 / 100_000.0,
        }
    }
}

use rtscope_model::rng::Rng;

struct CpuGen {
    cpu: u32,
    tid: u32,
    next_e: u64,
    cycle: u64,
    next_tick: u64,
    /// The CPU is stalled (no guest events) until then.
    stalled_until: u64,
}

pub struct Synth {
    cfg: SynthConfig,
    rng: Rng,
    cpus: Vec<CpuGen>,
    /// Simulated CLOCK_MONOTONIC now.
    pub now_ns: u64,
    pub events_total: u64,
    pub samples_total: u64,
}

impl Synth {
    pub fn new(cfg: SynthConfig) -> Synth {
        let t0 = 1_000_000_000;
        let n = cfg.cpus.max(1) as u64;
        let cpus = (0..cfg.cpus)
            .map(|c| CpuGen {
                cpu: c,
                tid: 1000 + c,
                next_e: t0 + cfg.interval_ns + c as u64 * cfg.interval_ns / n,
                cycle: 0,
                next_tick: t0 + 1_700_000 + c as u64 * 530_000,
                stalled_until: 0,
            })
            .collect();
        Synth {
            rng: Rng::new(cfg.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
            cfg,
            cpus,
            now_ns: t0,
            events_total: 0,
            samples_total: 0,
        }
    }

    /// Advance simulated time by `dt_ns`: append every sample planned before the new `now` and
    /// every event of those periods (per CPU in time order; CPUs interleaved per period).
    pub fn step(&mut self, dt_ns: u64, samples: &mut Vec<RawSample>, events: &mut Vec<Event>) {
        let until = self.now_ns + dt_ns;
        let n0 = events.len();
        for i in 0..self.cpus.len() {
            while self.cpus[i].next_e + self.cfg.interval_ns <= until {
                self.period(i, samples, events);
            }
        }
        self.events_total += (events.len() - n0) as u64;
        self.now_ns = until;
    }

    fn period(&mut self, i: usize, samples: &mut Vec<RawSample>, out: &mut Vec<Event>) {
        let iv = self.cfg.interval_ns;
        let (cpu, tid, e) = (self.cpus[i].cpu, self.cpus[i].tid, self.cpus[i].next_e);
        let ev = |ts: u64, kind: EventKind| Event {
            ts_ns: ts,
            cpu,
            kind,
        };
        let mut v: Vec<Event> = Vec::with_capacity(16);
        // Host stall: the vCPU does not run; the planned wake-up is served when it ends.
        if self.cpus[i].stalled_until == 0 && self.rng.unit_from_zero() < self.cfg.stall_prob {
            self.cpus[i].stalled_until = e + self.rng.range(2_000_000, 19_000_000);
        }
        let stall_end = self.cpus[i].stalled_until;
        let busy = self.rng.unit_from_zero() < self.cfg.busy_prob;
        // Delivery delay of the timer interrupt (LAPIC emulation on a VM): mostly 12–30 µs.
        let mut a = self.rng.range(12_000, 30_000);
        if stall_end > e {
            a = stall_end - e + self.rng.range(2_000, 8_000);
        }
        let mut t = e + a;
        if busy {
            // A SCHED_OTHER task took the CPU a while before E; the timer preempts it.
            v.push(ev(
                e.saturating_sub(200_000),
                EventKind::CpuIdle { state: IDLE_EXIT },
            ));
            v.push(ev(
                e.saturating_sub(199_000),
                EventKind::Switch {
                    prev_pid: 0,
                    prev_prio: OTHER_PRIO,
                    prev_state: 0,
                    next_pid: 2000 + cpu,
                    next_prio: OTHER_PRIO,
                },
            ));
        }
        v.push(ev(
            t,
            EventKind::VectorEntry {
                vector: Vector::LocalTimer,
            },
        ));
        t += self.rng.range(800, 2_000);
        v.push(ev(
            t,
            EventKind::Waking {
                pid: tid,
                prio: FIFO95_PRIO,
                target_cpu: cpu,
            },
        ));
        t += self.rng.range(1_000, 3_000);
        v.push(ev(
            t,
            EventKind::VectorExit {
                vector: Vector::LocalTimer,
            },
        ));
        // A non-preemptible stretch of the SCHED_OTHER task (preempt=none): it holds the CPU.
        if busy {
            t += self.rng.range(5_000, 80_000);
        }
        t += self.rng.range(1_500, 4_000);
        v.push(ev(
            t,
            EventKind::Switch {
                prev_pid: if busy { 2000 + cpu } else { 0 },
                prev_prio: if busy { OTHER_PRIO } else { 120 },
                prev_state: 0,
                next_pid: tid,
                next_prio: FIFO95_PRIO,
            },
        ));
        if self.rng.unit_from_zero() < self.cfg.nmi_prob {
            let d = self.rng.range(2_000, 20_000);
            t += d;
            v.push(ev(t, EventKind::Nmi { delta_ns: d }));
        }
        t += self.rng.range(1_000, 3_000);
        let r = t;
        let latency = r - e;
        samples.push(RawSample {
            cpu,
            tid,
            cycle: self.cpus[i].cycle,
            expected_ns: e,
            latency_ns: latency,
        });
        self.samples_total += 1;
        self.cpus[i].cycle += 1;
        // Record, then sleep: switch to idle (or back to the preempted task).
        t += self.rng.range(2_000, 5_000);
        v.push(ev(
            t,
            EventKind::Switch {
                prev_pid: tid,
                prev_prio: FIFO95_PRIO,
                prev_state: 1,
                next_pid: if busy { 2000 + cpu } else { 0 },
                next_prio: if busy { OTHER_PRIO } else { 120 },
            },
        ));
        if busy {
            t += self.rng.range(20_000, 100_000);
            v.push(ev(
                t,
                EventKind::Switch {
                    prev_pid: 2000 + cpu,
                    prev_prio: OTHER_PRIO,
                    prev_state: 1,
                    next_pid: 0,
                    next_prio: 120,
                },
            ));
        }
        t += 500;
        v.push(ev(t, EventKind::CpuIdle { state: 1 }));
        // Next planned wake-up: whole periods already past are overruns (no sample).
        let mut next = e + iv;
        while next <= r {
            next += iv;
        }
        let idle_from = t + 5_000;
        // Ends before the next period's earliest event (a busy period starts 200 µs before E).
        let idle_to = next.saturating_sub(250_000);
        // The tick (250 Hz) and the device interrupt land in the idle stretch.
        while self.cpus[i].next_tick < idle_to {
            let tk = self.cpus[i].next_tick.max(idle_from);
            self.cpus[i].next_tick += 4_000_000;
            if tk >= idle_to {
                break;
            }
            let d = self.rng.range(1_500, 4_000);
            v.push(ev(
                tk,
                EventKind::VectorEntry {
                    vector: Vector::LocalTimer,
                },
            ));
            v.push(ev(
                tk + d,
                EventKind::VectorExit {
                    vector: Vector::LocalTimer,
                },
            ));
            v.push(ev(
                tk + d + 200,
                EventKind::SoftirqEntry { vec: TIMER_SOFTIRQ },
            ));
            v.push(ev(
                tk + d + 200 + self.rng.range(1_000, 5_000),
                EventKind::SoftirqExit { vec: TIMER_SOFTIRQ },
            ));
        }
        let p_dev = self.cfg.device_irq_hz * (next - e) as f64 / 1e9;
        if self.rng.unit_from_zero() < p_dev && idle_to > idle_from + 60_000 {
            let at = self.rng.range(idle_from, idle_to - 50_000);
            let d = self.rng.range(3_000, 8_000);
            v.push(ev(at, EventKind::IrqEntry { irq: DEVICE_IRQ }));
            v.push(ev(
                at + d,
                EventKind::IrqExit {
                    irq: DEVICE_IRQ,
                    handled: true,
                },
            ));
            let s = at + d + 300;
            v.push(ev(s, EventKind::SoftirqEntry { vec: NET_RX }));
            v.push(ev(
                s + self.rng.range(5_000, 15_000),
                EventKind::SoftirqExit { vec: NET_RX },
            ));
        }
        v.sort_by_key(|x| x.ts_ns);
        out.extend(v);
        if self.cpus[i].stalled_until != 0 && self.cpus[i].stalled_until <= next {
            self.cpus[i].stalled_until = 0;
        }
        self.cpus[i].next_e = next;
    }

    /// Thread and IRQ names of the generated run.
    pub fn names(&self) -> rtscope_model::event::NameTables {
        let mut n = rtscope_model::event::NameTables::default();
        for c in &self.cpus {
            n.comms.insert(c.tid, "rtscope-m".into());
            n.comms.insert(2000 + c.cpu, "kworker/u4:1".into());
        }
        n.irqs.insert(DEVICE_IRQ, "virtio0".into());
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_are_ordered_and_samples_match_the_interval() {
        let mut s = Synth::new(SynthConfig::default());
        let (mut smp, mut ev) = (Vec::new(), Vec::new());
        s.step(10_000_000_000, &mut smp, &mut ev);
        for c in 0..2 {
            let mine: Vec<&Event> = ev.iter().filter(|e| e.cpu == c).collect();
            assert!(mine.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns), "cpu {c}");
            let n = smp.iter().filter(|x| x.cpu == c).count();
            // 10 s at 1 kHz, less the periods lost to host stalls.
            assert!((9_800..=10_000).contains(&n), "cpu {c}: {n} samples");
        }
        let per_sample = ev.len() as f64 / smp.len() as f64;
        assert!(
            (6.0..9.0).contains(&per_sample),
            "{per_sample} events per sample"
        );
    }
}
