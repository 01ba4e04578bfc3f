//! The threads: one per emulated CPU running the cycle of §2.3.6 / Fig. 2.21, and in testing
//! mode the checker thread of §2.3.7. Thin: the scheduling logic is in `machine`.

use crate::clock::{mono_ns, OpClock};
use crate::machine::{global_invariant, Global, Machine};
use crate::stats::{OpHist, Rec};
use crate::structures::StructureKind;
use crate::task::{Task, MAX_KEY};
use crate::{Config, Mode, Policy, PractiseError};
use rand::{Rng, SeedableRng};
use rtscope_model::practise::{PractiseChecks, PractiseRun, PractiseViolation};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Sleep until CLOCK_MONOTONIC reaches `t_ns`.
pub fn sleep_until(t_ns: u64) {
    // EINTR is retried with the same deadline.
    let _ = rtscope_sys::clock::sleep_until(rtscope_sys::clock::Clock::MONOTONIC, t_ns);
}

/// Pin the calling thread to one CPU.
pub fn pin_to(cpu: u32) -> std::io::Result<()> {
    rtscope_sys::affinity::set_affinity(0, &[cpu])
}

/// A deterministic per-(run, CPU) seed: the same CPU sees the same random draws under every
/// structure, so structures are compared on the same event sequence per CPU.
fn cpu_seed(seed: u64, m: usize, cpu: usize) -> u64 {
    // splitmix64 finaliser of the three.
    let mut z = seed ^ ((m as u64) << 32) ^ (cpu as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

struct Shared<'a> {
    machine: Machine,
    stop: AtomicBool,
    violation: Mutex<Option<PractiseViolation>>,
    cfg: &'a Config,
    policy: Policy,
    /// CLOCK_MONOTONIC at the run's start; task times are relative to it.
    start_ns: u64,
}

impl Shared<'_> {
    fn violate(&self, invariant: String, state: String) {
        let mut v = self.violation.lock().unwrap_or_else(|e| e.into_inner());
        if v.is_none() {
            *v = Some(PractiseViolation {
                structure: self.machine.kind.name().into(),
                emulated_cpus: self.machine.m as u32,
                invariant,
                state,
            });
        }
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One emulated CPU: every cycle an activation, an early finish or nothing (probabilities
/// `p_arrival`, `p_finish`, the rest), then the running task blocks if its deadline/run time
/// has passed (§2.3.6).
fn cpu_thread(sh: &Shared, cpu: usize, clock: OpClock) -> Result<Rec, PractiseError> {
    let cfg = sh.cfg;
    if cfg.mode == Mode::Perf {
        let host = cfg.pin_cpus[cpu];
        pin_to(host).map_err(|e| PractiseError::Pin { cpu: host, err: e })?;
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(cpu_seed(cfg.seed, sh.machine.m, cpu));
    let mut rec = Rec::new(clock);
    let mut made = 0u64;
    // A random phase: CPUs do not all wake at the same instant.
    let mut wake = sh.start_ns + rng.gen_range(0..cfg.cycle_ns);
    sleep_until(wake);
    while !sh.stop.load(Ordering::Relaxed) {
        let now = mono_ns().saturating_sub(sh.start_ns);
        rec.counts.cycles += 1;
        let r: f64 = rng.gen();
        if r < cfg.p_arrival {
            // Relative deadline (EDF) or run time (FP): log-uniform over 1..10 cycles, so the
            // default 10 ms cycle gives 10–100 ms, the periods of the thesis' task sets (§2.3.9).
            let rel = (cfg.cycle_ns as f64 * 10f64.powf(rng.gen::<f64>())) as u64;
            let key = match sh.policy {
                Policy::Edf => (now + rel).min(MAX_KEY),
                // rt_priority 1..=99 → prio 98..=0 → key prio + 1.
                Policy::Fp => 100 - rng.gen_range(1..=99u64),
            };
            let task = Task {
                id: ((cpu as u64) << 48) | made,
                key,
                end_ns: now + rel,
            };
            made += 1;
            rec.counts.activations += 1;
            sh.machine.on_activation(cpu, task, &mut rec);
        } else if r < cfg.p_arrival + cfg.p_finish {
            if sh.machine.on_block(cpu, None, &mut rec) {
                rec.counts.early_finishes += 1;
            } else {
                rec.counts.finish_on_idle += 1;
            }
        }
        if sh.machine.on_block(cpu, Some(now), &mut rec) {
            rec.counts.expiries += 1;
        }
        wake += cfg.cycle_ns;
        let late = mono_ns();
        if late > wake {
            // Woken after the next cycle's start: skip the missed cycles, do not bunch them.
            let missed = (late - wake) / cfg.cycle_ns + 1;
            rec.counts.missed_cycles += missed;
            wake += missed * cfg.cycle_ns;
        }
        sleep_until(wake);
    }
    Ok(rec)
}

struct CheckStats {
    checks: u64,
    global_false: u64,
    idle_while_waiting: u64,
    waiting_beats_running: u64,
    streak: u64,
    max_streak: u64,
    hold: OpHist,
}

/// §2.3.7's checker: every `check_every_ns`, lock every queue and run every `data_check`; then,
/// on what the queues showed, the global EDF/FP invariant (counted, not fatal: see the crate
/// documentation for why it is transiently false).
fn checker_thread(sh: &Shared) -> CheckStats {
    let mut st = CheckStats {
        checks: 0,
        global_false: 0,
        idle_while_waiting: 0,
        waiting_beats_running: 0,
        streak: 0,
        max_streak: 0,
        hold: OpHist::new(),
    };
    let mut next = mono_ns();
    loop {
        next += sh.cfg.check_every_ns;
        sleep_until(next);
        if sh.stop.load(Ordering::Relaxed) {
            break;
        }
        if !check_once(sh, &mut st) {
            break;
        }
    }
    st
}

fn check_once(sh: &Shared, st: &mut CheckStats) -> bool {
    let t0 = mono_ns();
    let guards = sh.machine.lock_all();
    let r = sh.machine.check_locked(&guards);
    drop(guards);
    st.hold.record(mono_ns() - t0);
    st.checks += 1;
    match r {
        Err(v) => {
            sh.violate(v.invariant, v.state);
            false
        }
        Ok(s) => {
            match global_invariant(&s.tops, &s.nexts) {
                Global::Holds => st.streak = 0,
                g => {
                    st.global_false += 1;
                    st.streak += 1;
                    st.max_streak = st.max_streak.max(st.streak);
                    if g == Global::IdleWhileWaiting {
                        st.idle_while_waiting += 1;
                    } else {
                        st.waiting_beats_running += 1;
                    }
                }
            }
            true
        }
    }
}

/// One configuration at M emulated CPUs for `cfg.duration_ns`.
pub fn run_one(
    cfg: &Config,
    kind: StructureKind,
    m: usize,
    policy: Policy,
    clock: OpClock,
    should_stop: &(dyn Fn() -> bool + Sync),
) -> Result<(PractiseRun, Option<PractiseViolation>), PractiseError> {
    let sh = Shared {
        machine: Machine::new(m, kind, cfg.queue, cfg.fault),
        stop: AtomicBool::new(false),
        violation: Mutex::new(None),
        cfg,
        policy,
        start_ns: mono_ns(),
    };
    let t0 = mono_ns();
    let (recs, checks) = std::thread::scope(|s| -> Result<_, PractiseError> {
        let mut hs = Vec::with_capacity(m);
        for cpu in 0..m {
            let sh = &sh;
            let h = std::thread::Builder::new()
                .name(format!("practise-cpu{cpu}"))
                .spawn_scoped(s, move || {
                    let r = cpu_thread(sh, cpu, clock);
                    if r.is_err() {
                        sh.stop.store(true, Ordering::Relaxed);
                    }
                    r
                });
            match h {
                Ok(h) => hs.push(h),
                Err(e) => {
                    sh.stop.store(true, Ordering::Relaxed);
                    return Err(PractiseError::Thread(e));
                }
            }
        }
        let checker = if cfg.mode == Mode::Test {
            let sh = &sh;
            let h = std::thread::Builder::new()
                .name("practise-check".into())
                .spawn_scoped(s, move || checker_thread(sh));
            match h {
                Ok(h) => Some(h),
                Err(e) => {
                    sh.stop.store(true, Ordering::Relaxed);
                    return Err(PractiseError::Thread(e));
                }
            }
        } else {
            None
        };
        // The run's clock: poll for the end, an interrupt, or a thread that stopped the run.
        let end = t0 + cfg.duration_ns;
        while !sh.stop.load(Ordering::Relaxed) && !should_stop() {
            let now = mono_ns();
            if now >= end {
                break;
            }
            sleep_until(now + (end - now).min(10_000_000));
        }
        sh.stop.store(true, Ordering::Relaxed);
        let mut recs = Vec::with_capacity(m);
        let mut first_err = None;
        for h in hs {
            match h.join() {
                Ok(Ok(r)) => recs.push(r),
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert(PractiseError::Panicked);
                }
            }
        }
        let checks = checker.map(|h| h.join().map_err(|_| PractiseError::Panicked));
        if let Some(e) = first_err {
            return Err(e);
        }
        Ok((recs, checks.transpose()?))
    })?;
    let wall_ns = mono_ns() - t0;
    // One last check with every thread stopped (a short run may have had few).
    let mut checks = checks;
    if let Some(st) = checks.as_mut() {
        if sh.violation.lock().map(|v| v.is_none()).unwrap_or(false) {
            check_once(&sh, st);
        }
    }
    let mut all = Rec::new(clock);
    for r in &recs {
        all.merge(r);
    }
    let run = PractiseRun {
        structure: kind.name().into(),
        push_structure: kind.push_name().into(),
        pull_structure: kind.pull_name().into(),
        policy: policy.name().into(),
        emulated_cpus: m as u32,
        wall_ns,
        counts: all.counts.clone(),
        ops: all.ops(),
        checks: checks.map(|st| PractiseChecks {
            checks: st.checks,
            global_false: st.global_false,
            global_false_rate: if st.checks > 0 {
                st.global_false as f64 / st.checks as f64
            } else {
                0.0
            },
            idle_while_waiting: st.idle_while_waiting,
            waiting_beats_running: st.waiting_beats_running,
            max_consecutive_false: st.max_streak,
            hold: st.hold.summary("check_hold"),
        }),
        replay: None,
        final_queues: Vec::new(),
    };
    let violation = sh.violation.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok((run, violation))
}
