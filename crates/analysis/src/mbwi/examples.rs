//! The thesis' examples as task sets, and the task sets of the real-kernel experiment.
//!
//! Figs. 4.2–4.4 are drawings without their parameters; the sets below are ours, chosen so that
//! the events the thesis' text describes happen at the instants it names (1 thesis time unit =
//! 1 ms here). The derivations are in the tests (`mbwi/tests.rs`).

use rtscope_model::mbwi::{MbwiTask, MbwiTaskSet, Segment};

const MS: u64 = 1000;

fn c(ms: u64) -> Segment {
    Segment::ComputeUs(ms * MS)
}
fn l(m: &str) -> Segment {
    Segment::Lock(m.into())
}
fn u(m: &str) -> Segment {
    Segment::Unlock(m.into())
}

#[allow(clippy::too_many_arguments)]
fn task(
    name: &str,
    q_ms: u64,
    p_ms: u64,
    d_ms: Option<u64>,
    aff: &[u32],
    off_ms: u64,
    jobs: Option<u32>,
    script: Vec<Segment>,
) -> MbwiTask {
    MbwiTask {
        name: name.into(),
        runtime_us: q_ms * MS,
        period_us: p_ms * MS,
        deadline_us: d_ms.map(|d| d * MS),
        affinity: aff.to_vec(),
        offset_us: off_ms * MS,
        jobs,
        script,
        job_scripts: Vec::new(),
    }
}

/// The names `--example` accepts.
pub const EXAMPLES: [&str; 6] = [
    "fig4.2",
    "fig4.3",
    "fig4.4",
    "one-cpu",
    "one-cpu-overrun",
    "two-cpus",
];

pub fn example(name: &str) -> Option<MbwiTaskSet> {
    Some(match name {
        "fig4.2" => fig4_2(),
        "fig4.3" => fig4_3(),
        "fig4.4" => fig4_4(),
        "one-cpu" => one_cpu(4000, 2_000_000),
        "one-cpu-overrun" => one_cpu_overrun(4000, 2_000_000),
        "two-cpus" => two_cpus(4000, 2_000_000),
        _ => return None,
    })
}

/// Fig. 4.2: τA, τB, τC on 2 CPUs with migration, all on M1. τC locks M1 at 1 and is preempted
/// at 3; τB blocks at 6 and τC runs in τB's server; τA blocks at 9 and spins; τC unlocks at 14
/// (FIFO: τB next); τB unlocks at 18 and τA enters its critical section.
pub fn fig4_2() -> MbwiTaskSet {
    MbwiTaskSet {
        cpus: 2,
        horizon_us: 30 * MS,
        tick_us: 0,
        tasks: vec![
            task(
                "tauA",
                20,
                34,
                None,
                &[],
                2,
                Some(1),
                vec![c(7), l("M1"), c(2), u("M1")],
            ),
            task(
                "tauB",
                16,
                30,
                None,
                &[],
                3,
                Some(1),
                vec![c(3), l("M1"), c(4), u("M1")],
            ),
            task(
                "tauC",
                12,
                60,
                None,
                &[],
                0,
                Some(1),
                vec![c(1), l("M1"), c(10), u("M1"), c(1)],
            ),
        ],
    }
}

/// Fig. 4.3: τ1, τ3 on CPU0, τ2 on CPU1. τ2 blocks at 2 on τ1's mutex; with d2 < d3 < d1, a
/// holder that inherits τ2's deadline but not its affinity keeps τ3 off CPU0 and τ3 misses at 11.
pub fn fig4_3() -> MbwiTaskSet {
    MbwiTaskSet {
        cpus: 2,
        horizon_us: 24 * MS,
        tick_us: 0,
        tasks: vec![
            task(
                "tau1",
                6,
                24,
                None,
                &[0],
                0,
                Some(1),
                vec![l("M"), c(6), u("M")],
            ),
            task(
                "tau2",
                9,
                10,
                None,
                &[1],
                0,
                Some(1),
                vec![c(2), l("M"), c(1), u("M")],
            ),
            task("tau3", 6, 8, None, &[0], 3, Some(1), vec![c(6)]),
        ],
    }
}

/// Fig. 4.4: τ1 on CPU0, τ2 and τ3 on CPU1. At 2 the holder τ1 inherits τ2's server and
/// affinity and moves to CPU1; τ3 (d3 < d2) preempts it from 3 to 7 while CPU0 idles; τ2 misses.
pub fn fig4_4() -> MbwiTaskSet {
    MbwiTaskSet {
        cpus: 2,
        horizon_us: 24 * MS,
        tick_us: 0,
        tasks: vec![
            task(
                "tau1",
                6,
                24,
                None,
                &[0],
                0,
                Some(1),
                vec![l("M"), c(6), u("M")],
            ),
            task(
                "tau2",
                6,
                10,
                None,
                &[1],
                0,
                Some(1),
                vec![c(2), l("M"), c(1), u("M")],
            ),
            task("tau3", 4, 10, Some(6), &[1], 3, Some(1), vec![c(4)]),
        ],
    }
}

/// §4.4.2, Figs. 4.5/4.6 scaled to fit the kernel's 95 % admission limit: τ1 (24 ms, all in
/// the critical section) and τ3 (72 ms, most of it in the critical section) share A; τ2 is
/// independent. τ3 locks first, τ1 blocks at 2 ms, τ2 arrives at 4 ms with a deadline between
/// τ1's and τ3's.
pub fn one_cpu(tick_us: u64, horizon_us: u64) -> MbwiTaskSet {
    MbwiTaskSet {
        cpus: 1,
        horizon_us,
        tick_us,
        tasks: vec![
            task(
                "tau1",
                6,
                24,
                None,
                &[],
                2,
                None,
                vec![l("A"), c(5), u("A")],
            ),
            task("tau2", 6, 24, None, &[], 4, None, vec![c(5)]),
            task(
                "tau3",
                18,
                72,
                None,
                &[],
                0,
                None,
                vec![c(1), l("A"), c(12), u("A"), c(2)],
            ),
        ],
    }
}

/// The same set with τ3's budget cut to 8 ms: every τ3 job overruns its reservation inside the
/// critical section (Fig. 4.1's situation; the isolation test of §4.2.4).
pub fn one_cpu_overrun(tick_us: u64, horizon_us: u64) -> MbwiTaskSet {
    let mut s = one_cpu(tick_us, horizon_us);
    s.tasks[2].runtime_us = 8 * MS;
    s
}

/// §4.4.2, Fig. 4.7 on two CPUs: τ1 and τ3 share A; τ2 and τ4 are independent. The thesis pins
/// τ2 and τ4 to one CPU each; mainline refuses a SCHED_DEADLINE affinity narrower than the root
/// domain, so here all four are global over both CPUs (in the kernel and in the simulation).
pub fn two_cpus(tick_us: u64, horizon_us: u64) -> MbwiTaskSet {
    MbwiTaskSet {
        cpus: 2,
        horizon_us,
        tick_us,
        tasks: vec![
            task(
                "tau1",
                6,
                24,
                None,
                &[],
                2,
                None,
                vec![l("A"), c(5), u("A")],
            ),
            task("tau2", 10, 24, None, &[], 3, None, vec![c(9)]),
            task(
                "tau3",
                18,
                72,
                None,
                &[],
                0,
                None,
                vec![c(1), l("A"), c(12), u("A"), c(2)],
            ),
            task("tau4", 6, 24, None, &[], 4, None, vec![c(5)]),
        ],
    }
}
