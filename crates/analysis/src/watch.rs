//! `rtscope watch`: a watched thread's scheduling events (`rtscope_model::watch::WatchEvent`)
//! cut into activations, and the activations summed per thread.
//!
//! An activation starts at a wake-up (sched_waking) and the switch that puts the thread on a
//! CPU after it; it ends at the switch that takes the thread off its CPU into a sleep. Switches
//! away that leave it runnable (the kernel's `preempt`, or a still-running state) are
//! preemptions suffered inside the activation: by whom, for how long. A thread's first run
//! after it was created (wake_up_new_task fires no sched_waking) and whatever ran before the
//! watch began are no activation: only what follows a wake-up the watch saw is counted, so
//! nothing is counted twice or half.
//!
//! An activation whose wake-up or switch-in the kernel never reported is *unseen*: it is
//! counted (per thread, [`Engine::take_unseen`]) but not measured. The watch infers it when a
//! thread it saw go to sleep is next seen on a CPU (switched in, switched out, exiting) with
//! no wake-up in between: a sleeping task runs again only after a wake-up. Some kernels fire no
//! probe for events that happen while certain tasks are current (docs/watch.md shows one).

use rtscope_model::watch::{Activation, Preemption, Preemptor, WatchEvent, WatchKind, WatchThread};
use rtscope_model::Histogram;
use std::collections::BTreeMap;

/// Preemptors remembered per thread; later ones add to the entry of tid 0 ("others").
const PREEMPTORS_CAP: usize = 64;
/// Preemptors reported per thread.
const PREEMPTORS_SHOWN: usize = 10;

#[derive(Default)]
struct ThreadState {
    /// A wake-up not yet followed by a switch onto a CPU: (time, hrtimer soft expiry or 0,
    /// waker).
    wake: Option<(u64, u64, u32)>,
    act: Option<Activation>,
    /// On a CPU since, inside the current activation.
    on_cpu_since: Option<u64>,
    /// Preempted (time, by, its prio), inside the current activation.
    preempted: Option<(u64, u32, i32)>,
    next_index: u64,
    /// The CPU it was last seen on.
    cpu: u32,
    /// Seen going to sleep (a switch away that leaves it blocked), and no wake-up since.
    asleep: bool,
    /// The pending `wake` came after a sleep the watch saw begin.
    woke_from_seen_sleep: bool,
    /// The current activation was started by a wake-up from another CPU while the thread was
    /// still on its CPU, and nothing else of it has been seen since (see `Waking`).
    started_by_remote_wake: bool,
    /// That activation ended at once in a sleep: the wake-up raced the switch away, and the
    /// next switch-in is that wake-up's, not an unseen one.
    raced_switch_out: bool,
}

/// Events in, finished activations out. Bounded per thread.
#[derive(Default)]
pub struct Engine {
    threads: BTreeMap<u32, ThreadState>,
    exited: Vec<u32>,
    started: u64,
    /// One entry per unseen activation (its thread), until taken.
    unseen: Vec<u32>,
}

impl Engine {
    pub fn new() -> Engine {
        Engine::default()
    }

    /// One event (in time order per thread); an activation it ends is appended to `out`.
    pub fn push(&mut self, e: &WatchEvent, out: &mut Vec<Activation>) {
        let st = self.threads.entry(e.tid).or_default();
        match e.kind {
            WatchKind::Waking {
                waker,
                timer_soft_ns,
            } => {
                // The kernel fires sched_waking only for a task whose state is a sleep
                // (ttwu_state_match). Inside an activation that means the thread began a sleep
                // but had not left its CPU yet, or was preempted on the way (the wake-up then
                // only sets it running again): its activation ends here and the next begins.
                // A wake-up from another CPU may also race the thread's own switch away (it
                // passes the state check before that switch is traced): the activation it
                // starts here then ends at once in a sleep, and the switch-in that follows is
                // this wake-up's (`raced_switch_out`).
                let was_asleep = std::mem::take(&mut st.asleep);
                st.raced_switch_out = false;
                if let Some(mut a) = st.act.take() {
                    if let Some(t) = st.on_cpu_since.take() {
                        a.run_ns += e.ts_ns.saturating_sub(t);
                    }
                    a.end_ns = Some(e.ts_ns);
                    let on_cpu = st.preempted.take().is_none();
                    out.push(a);
                    st.wake = Some((e.ts_ns, timer_soft_ns, waker));
                    st.woke_from_seen_sleep = false;
                    if on_cpu {
                        // Still on its CPU: running again at once.
                        let cpu = st.cpu;
                        self.start(e.tid, cpu, e.ts_ns);
                        if let Some(st) = self.threads.get_mut(&e.tid) {
                            st.started_by_remote_wake = e.cpu != cpu;
                        }
                    }
                } else if st.wake.is_none() {
                    // Keep the first wake-up of a sleep.
                    st.wake = Some((e.ts_ns, timer_soft_ns, waker));
                    st.woke_from_seen_sleep = was_asleep;
                }
            }
            WatchKind::SwitchIn { .. } => {
                st.cpu = e.cpu;
                if let Some(act) = st.act.as_mut() {
                    if let Some((t0, by, prio)) = st.preempted.take() {
                        act.preemptions.push(Preemption {
                            by_tid: by,
                            by_prio: prio,
                            start_ns: t0,
                            duration_ns: e.ts_ns.saturating_sub(t0),
                        });
                    }
                    st.on_cpu_since = Some(e.ts_ns);
                    st.started_by_remote_wake = false;
                } else if st.wake.is_some() {
                    self.start(e.tid, e.cpu, e.ts_ns);
                } else if std::mem::take(&mut st.raced_switch_out) {
                    // The switch-in of the wake-up that raced the switch away: counted.
                } else if std::mem::take(&mut st.asleep) {
                    // Seen asleep, now on a CPU, no wake-up seen: it was not reported.
                    self.unseen.push(e.tid);
                }
            }
            WatchKind::SwitchOut {
                next,
                next_prio,
                preempted,
            } => {
                st.cpu = e.cpu;
                let Some(act) = st.act.as_mut() else {
                    // Off a CPU it was not seen to get on. Asleep before (no wake-up seen), or
                    // woken from a sleep seen and not seen switched in: an activation ran that
                    // the kernel did not report whole.
                    let woken = st.wake.take().is_some() && st.woke_from_seen_sleep;
                    let raced = std::mem::take(&mut st.raced_switch_out);
                    if (st.asleep || woken) && !raced {
                        self.unseen.push(e.tid);
                    }
                    st.asleep = !preempted;
                    return;
                };
                if let Some(t) = st.on_cpu_since.take() {
                    act.run_ns += e.ts_ns.saturating_sub(t);
                }
                if preempted {
                    st.preempted = Some((e.ts_ns, next, next_prio));
                } else {
                    act.end_ns = Some(e.ts_ns);
                    st.preempted = None;
                    if let Some(a) = st.act.take() {
                        out.push(a);
                    }
                    st.raced_switch_out = std::mem::take(&mut st.started_by_remote_wake);
                    st.asleep = !st.raced_switch_out;
                }
                st.started_by_remote_wake = false;
            }
            WatchKind::NewTask { .. } => {}
            WatchKind::Exit => {
                // The last run ends in the exit: the activation ends there.
                if let Some(mut a) = st.act.take() {
                    if let Some(t) = st.on_cpu_since.take() {
                        a.run_ns += e.ts_ns.saturating_sub(t);
                    }
                    a.end_ns = Some(e.ts_ns);
                    out.push(a);
                } else if st.asleep || (st.wake.is_some() && st.woke_from_seen_sleep) {
                    // Exiting runs on its CPU: an unreported wake-up preceded it.
                    self.unseen.push(e.tid);
                }
                self.threads.remove(&e.tid);
                self.exited.push(e.tid);
            }
        }
    }

    /// `tid`'s pending wake-up becomes an activation running on `cpu` from `ts_ns`.
    fn start(&mut self, tid: u32, cpu: u32, ts_ns: u64) {
        let Some(st) = self.threads.get_mut(&tid) else {
            return;
        };
        let Some((w, soft, waker)) = st.wake.take() else {
            return;
        };
        let index = st.next_index;
        st.next_index += 1;
        self.started += 1;
        st.act = Some(Activation {
            tid,
            index,
            cpu,
            waking_ns: w,
            // A soft expiry after the switch cannot be the timer that woke it.
            timer_soft_ns: (soft > 0 && soft <= ts_ns).then_some(soft),
            running_ns: ts_ns,
            end_ns: None,
            run_ns: 0,
            preemptions: Vec::new(),
            waker,
        });
        st.on_cpu_since = Some(ts_ns);
        st.cpu = cpu;
    }

    /// The watch ended at `end_ns`: activations still running are handed on unfinished
    /// (`end_ns` None, run time up to `end_ns`).
    pub fn finish(&mut self, end_ns: u64, out: &mut Vec<Activation>) {
        for st in self.threads.values_mut() {
            if let Some(mut a) = st.act.take() {
                if let Some(t) = st.on_cpu_since.take() {
                    a.run_ns += end_ns.saturating_sub(t);
                }
                out.push(a);
            }
        }
    }

    /// The threads of the unseen activations found since the last call, one entry each.
    pub fn take_unseen(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.unseen)
    }

    /// Activations started so far (every thread).
    pub fn started(&self) -> u64 {
        self.started
    }

    /// The activation `tid` is in, if any (its latency is known from its start).
    pub fn current(&self, tid: u32) -> Option<&Activation> {
        self.threads.get(&tid)?.act.as_ref()
    }

    /// Threads whose exit was seen, in order.
    pub fn exited(&self) -> &[u32] {
        &self.exited
    }
}

/// One thread's activations summed.
#[derive(Clone, Debug, Default)]
pub struct ThreadSums {
    pub activations: u64,
    pub timer_activations: u64,
    pub wakeup_latency: Histogram,
    pub timer_lateness: Histogram,
    pub run_time: Histogram,
    pub period: Histogram,
    last_expected_ns: Option<u64>,
    pub preemptions: u64,
    pub preempted_ns: u64,
    preemptors: BTreeMap<u32, (u64, u64, u64)>,
    pub exited: bool,
    /// Activations counted but not measured (their wake-up or switch-in was not reported).
    pub unseen: u64,
}

impl ThreadSums {
    pub fn add(&mut self, a: &Activation) {
        self.activations += 1;
        self.wakeup_latency.record(a.wakeup_latency_ns());
        if let Some(l) = a.timer_lateness_ns() {
            self.timer_activations += 1;
            self.timer_lateness.record(l);
        }
        if a.end_ns.is_some() {
            self.run_time.record(a.run_ns);
        }
        let x = a.expected_ns();
        if let Some(p) = self.last_expected_ns {
            if x > p {
                self.period.record(x - p);
            }
        }
        self.last_expected_ns = Some(x);
        for p in &a.preemptions {
            self.preemptions += 1;
            self.preempted_ns += p.duration_ns;
            let key = if self.preemptors.len() < PREEMPTORS_CAP
                || self.preemptors.contains_key(&p.by_tid)
            {
                p.by_tid
            } else {
                0
            };
            let s = self.preemptors.entry(key).or_default();
            s.0 += 1;
            s.1 += p.duration_ns;
            s.2 = s.2.max(p.duration_ns);
        }
    }

    /// The thread's figures; `period_ns` the nominal period (`--period`), else the median of
    /// the periods seen; `comm` names tasks.
    pub fn result(
        &self,
        tid: u32,
        period_ns: Option<u64>,
        comm: &dyn Fn(u32) -> String,
    ) -> WatchThread {
        let nominal = period_ns.or_else(|| self.period.quantile_ns(0.5));
        let jitter = nominal.and_then(|n| {
            let lo = self.period.min_ns()?;
            let hi = self.period.max_ns()?;
            Some(n.abs_diff(lo).max(n.abs_diff(hi)))
        });
        let mut by: Vec<Preemptor> = self
            .preemptors
            .iter()
            .map(|(&t, &(count, total_ns, max_ns))| Preemptor {
                tid: t,
                comm: if t == 0 { "(others)".into() } else { comm(t) },
                count,
                total_ns,
                max_ns,
            })
            .collect();
        by.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.tid.cmp(&b.tid)));
        by.truncate(PREEMPTORS_SHOWN);
        WatchThread {
            tid,
            comm: comm(tid),
            activations: self.activations,
            unseen_activations: self.unseen,
            timer_activations: self.timer_activations,
            wakeup_latency: self.wakeup_latency.clone(),
            timer_lateness: self.timer_lateness.clone(),
            run_time: self.run_time.clone(),
            period: self.period.clone(),
            nominal_period_ns: nominal,
            jitter_max_ns: jitter,
            preemptions: self.preemptions,
            preempted_ns: self.preempted_ns,
            preempted_by: by,
            exited: self.exited,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: u64, tid: u32, kind: WatchKind) -> WatchEvent {
        WatchEvent {
            ts_ns: ts,
            cpu: 1,
            tid,
            tgid: 10,
            kind,
        }
    }
    fn waking(ts: u64, soft: u64) -> WatchEvent {
        ev(
            ts,
            11,
            WatchKind::Waking {
                waker: 0,
                timer_soft_ns: soft,
            },
        )
    }
    fn sw_in(ts: u64) -> WatchEvent {
        ev(ts, 11, WatchKind::SwitchIn { prev: 0 })
    }
    fn sw_out(ts: u64, preempted: bool) -> WatchEvent {
        ev(
            ts,
            11,
            WatchKind::SwitchOut {
                next: 77,
                next_prio: 49,
                preempted,
            },
        )
    }

    fn run(events: &[WatchEvent]) -> Vec<Activation> {
        let mut e = Engine::new();
        let mut out = Vec::new();
        for x in events {
            e.push(x, &mut out);
        }
        out
    }

    #[test]
    fn a_timer_activation_measures_lateness_wakeup_and_run_time() {
        let a = run(&[waking(1_000, 900), sw_in(1_500), sw_out(4_500, false)]);
        assert_eq!(a.len(), 1);
        let a = &a[0];
        assert_eq!(a.timer_lateness_ns(), Some(600));
        assert_eq!(a.wakeup_latency_ns(), 500);
        assert_eq!(a.latency_ns(), 600);
        assert_eq!(a.run_ns, 3_000);
        assert_eq!(a.end_ns, Some(4_500));
    }

    #[test]
    fn a_preemption_is_inside_the_activation_and_not_a_new_one() {
        let a = run(&[
            waking(1_000, 0),
            sw_in(1_200),
            sw_out(2_000, true),
            sw_in(5_000),
            sw_out(6_000, false),
        ]);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].timer_lateness_ns(), None);
        assert_eq!(a[0].run_ns, 800 + 1_000);
        assert_eq!(
            a[0].preemptions,
            vec![Preemption {
                by_tid: 77,
                by_prio: 49,
                start_ns: 2_000,
                duration_ns: 3_000
            }]
        );
    }

    #[test]
    fn a_wakeup_before_the_thread_left_its_cpu_starts_the_next_activation() {
        // Preempted while going to sleep, woken meanwhile: the wake-up only sets it running.
        let a = run(&[
            waking(1_000, 0),
            sw_in(1_100),
            sw_out(1_500, true),
            waking(2_000, 1_990),
            sw_in(2_300),
            sw_out(2_400, false),
            // Woken while still on its CPU (the timer beat the switch away).
            waking(3_000, 0),
            sw_in(3_100),
            waking(3_200, 3_150),
            sw_out(3_500, false),
        ]);
        assert_eq!(a.len(), 4, "{a:?}");
        assert_eq!((a[0].end_ns, a[0].run_ns), (Some(2_000), 400));
        assert!(a[0].preemptions.is_empty());
        assert_eq!((a[1].timer_lateness_ns(), a[1].run_ns), (Some(310), 100));
        assert_eq!((a[2].end_ns, a[2].run_ns), (Some(3_200), 100));
        assert_eq!(
            (a[3].running_ns, a[3].timer_lateness_ns()),
            (3_200, Some(50))
        );
        assert_eq!(a[3].run_ns, 300);
        assert_eq!(a.iter().map(|x| x.index).collect::<Vec<_>>(), [0, 1, 2, 3]);
    }

    #[test]
    fn runs_without_a_seen_wakeup_are_not_activations() {
        // Running when the watch began, then one real activation; a second waking before
        // the switch in adds nothing.
        let a = run(&[
            sw_in(100),
            sw_out(200, false),
            waking(1_000, 0),
            waking(1_100, 0),
            sw_in(1_300),
            sw_out(1_400, false),
        ]);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].waking_ns, 1_000);
        assert_eq!(a[0].index, 0);
    }

    #[test]
    fn an_exit_ends_the_activation_and_finish_hands_on_the_running_one() {
        let mut e = Engine::new();
        let mut out = Vec::new();
        for x in [
            waking(1_000, 0),
            sw_in(1_100),
            ev(1_600, 11, WatchKind::Exit),
        ] {
            e.push(&x, &mut out);
        }
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].end_ns, Some(1_600));
        assert_eq!(out[0].run_ns, 500);
        assert_eq!(e.exited(), &[11]);
        e.push(&waking(2_000, 0), &mut out);
        e.push(&sw_in(2_100), &mut out);
        e.finish(2_600, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!((out[1].end_ns, out[1].run_ns), (None, 500));
    }

    fn unseen(events: &[WatchEvent]) -> (usize, usize) {
        let mut e = Engine::new();
        let mut out = Vec::new();
        for x in events {
            e.push(x, &mut out);
        }
        (out.len(), e.take_unseen().len())
    }

    fn on(cpu: u32, mut e: WatchEvent) -> WatchEvent {
        e.cpu = cpu;
        e
    }

    #[test]
    fn a_thread_seen_asleep_then_on_a_cpu_without_a_wakeup_had_an_unseen_activation() {
        let act = [waking(1_000, 900), sw_in(1_100), sw_out(1_200, false)];
        // Neither the wake-up nor the switch-in reported: two sleeps in a row.
        let mut evs = act.to_vec();
        evs.push(sw_out(2_200, false));
        evs.extend([waking(3_000, 2_900), sw_in(3_100), sw_out(3_200, false)]);
        assert_eq!(unseen(&evs), (2, 1));
        // The wake-up not reported, the switch-in seen.
        let mut evs = act.to_vec();
        evs.extend([sw_in(2_100), sw_out(2_200, false)]);
        assert_eq!(unseen(&evs), (1, 1));
        // The wake-up seen, the switch-in not: the next wake-up is not glued to the old one.
        let mut evs = act.to_vec();
        evs.extend([waking(2_000, 1_900), sw_out(2_200, false)]);
        evs.extend([waking(3_000, 2_900), sw_in(3_100), sw_out(3_200, false)]);
        let (n, u) = unseen(&evs);
        assert_eq!((n, u), (2, 1));
        assert_eq!(run(&evs)[1].waking_ns, 3_000);
        // Asleep, then exiting.
        let mut evs = act.to_vec();
        evs.push(ev(2_500, 11, WatchKind::Exit));
        assert_eq!(unseen(&evs), (1, 1));
        // A preemption is not a sleep: back on the CPU without a wake-up is no activation.
        let evs = [
            waking(1_000, 0),
            sw_in(1_100),
            sw_out(1_200, true),
            sw_in(1_300),
        ];
        assert_eq!(unseen(&evs).1, 0);
        // A thread never seen asleep (running when the watch began) is not guessed at.
        assert_eq!(unseen(&[sw_in(100), sw_out(200, true), sw_in(300)]), (0, 0));
    }

    #[test]
    fn a_remote_wakeup_racing_the_switch_away_counts_once() {
        // On CPU 1; the timer on CPU 0 wakes it before its switch away is traced.
        let ev = [
            waking(1_000, 900),
            sw_in(1_100),
            on(0, waking(1_150, 1_140)),
            sw_out(1_160, false),
            sw_in(1_300),
            sw_out(1_400, false),
            waking(2_000, 1_990),
            sw_in(2_100),
            sw_out(2_200, false),
        ];
        assert_eq!(unseen(&ev), (3, 0));
    }

    #[test]
    fn sums_give_period_jitter_and_preemptors() {
        let mut s = ThreadSums::default();
        let mut evs = Vec::new();
        for (i, jit) in [0u64, 10, 0, 30].iter().enumerate() {
            let soft = 1_000_000 * (i as u64 + 1);
            evs.push(waking(soft + jit, soft));
            evs.push(sw_in(soft + jit + 100));
            if i == 1 {
                evs.push(sw_out(soft + 500, true));
                evs.push(sw_in(soft + 900));
            }
            evs.push(sw_out(soft + 1_000, false));
        }
        for a in run(&evs) {
            s.add(&a);
        }
        let r = s.result(11, None, &|t| format!("t{t}"));
        assert_eq!(r.activations, 4);
        assert_eq!(r.timer_activations, 4);
        assert_eq!(r.period.count(), 3);
        assert_eq!(r.nominal_period_ns, Some(1_000_000));
        assert_eq!(r.jitter_max_ns, Some(0));
        assert_eq!(r.preemptions, 1);
        assert_eq!(r.preempted_by.len(), 1);
        assert_eq!(r.preempted_by[0].comm, "t77");
        assert_eq!(r.preempted_by[0].total_ns, 400);
        let r = s.result(11, Some(900_000), &|t| format!("t{t}"));
        assert_eq!(r.jitter_max_ns, Some(100_000));
    }
}
