//! `rtscope taskset gen|check|run`: generate random task sets, predict their schedulability,
//! run them under SCHED_DEADLINE / SCHED_FIFO / CFS and compare (`rtscope_bench::taskset::job`:
//! every flag resolved and checked before a thread is started or a cpuset created).

use rtscope_bench::taskset::job::{self, Generated};
use rtscope_bench::taskset::sweep;
use rtscope_report::taskset as text;
use rtscope_verbs::bench::Rules;
use std::path::PathBuf;
use std::time::Duration;

/// `taskset sweep`'s `-D` when none is given: each run's length.
pub const SWEEP_RUN: Duration = Duration::from_secs(10);

mod flags;
pub use flags::*;

/// The library's name of a choice (clap's name of the value).
fn name(v: impl clap::ValueEnum) -> String {
    v.to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

pub fn run(a: Args) -> anyhow::Result<()> {
    match a.cmd {
        Sub::Gen(g) => match job::generate(&g.lib(), &Rules)? {
            Generated::Text(t) => println!("{t}"),
            Generated::Written(note) => note.iter().for_each(|n| eprintln!("{n}")),
        },
        Sub::Check(c) => {
            c.json.check()?;
            let k = job::check(&c.set, &c.plan.lib(), &Rules)?;
            c.json.write(&serde_json::to_string_pretty(&k.json())?)?;
            if !c.json.to_stdout() {
                let source = c.set.display().to_string();
                let method = &k.admission.method;
                let (place, groups) = (&k.plan.placement, k.groups());
                print!(
                    "{}",
                    text::check(&source, &k.set, place, &groups, method, &k.predictions)
                );
            }
        }
        Sub::Run(r) => {
            let tags = r.out.validate()?;
            let job = job::prepare(&r.lib(), &Rules)?;
            rtscope_verbs::taskset::run(&job, &r.out.lib(), tags)?;
        }
        Sub::Sweep(w) => {
            let tags = w.out.validate()?;
            let job = rtscope_bench::taskset::sweep::prepare(&w.lib(), &Rules)?;
            rtscope_verbs::taskset::sweep(&job, &w.out.lib(), tags)?;
        }
    }
    Ok(())
}

impl GenArgs {
    fn lib(&self) -> job::GenFlags {
        job::GenFlags {
            n: self.n,
            utilisation: self.utilisation,
            method: name(self.method),
            tmin: self.periods.tmin,
            tmax: self.periods.tmax,
            periods: self.periods_list.clone(),
            period_gran: self.period_gran,
            cmin: self.cmin,
            umax: self.umax,
            deadlines: name(self.deadlines),
            dmin_frac: self.dmin_frac,
            seed: self.seed,
            count: self.count,
            cpu_count: self.cpus,
            output: self.output.clone(),
            format: name(self.format),
        }
    }
}

impl PlanArgs {
    fn lib(&self) -> job::PlanFlags {
        job::PlanFlags {
            policy: name(self.policy),
            priorities: name(self.priorities),
            placement: name(self.placement),
            fit: name(self.fit),
            bin_test: name(self.bin_test),
            cluster_size: self.cluster_size,
            cluster_by: self.cluster_by.map(name),
            margin: self.reserve.margin,
            margin_add: self.reserve.margin_add,
            inflate: self.inflate,
            cpus: self.cpus.spec(),
            no_probe: self.no_probe,
        }
    }
}

impl RunArgs {
    fn lib(&self) -> job::RunFlags {
        job::RunFlags {
            set: self.set.clone(),
            rt_app: self.rt_app.clone(),
            plan: self.plan.lib(),
            duration: self.duration.duration,
            wss_kb: self.wss.wss_kb,
            access: name(self.access),
            seed: self.seed,
            work: name(self.work),
            no_overrun_signal: self.no_overrun_signal,
            engine: self.engine.map(name),
        }
    }
}

impl SweepArgs {
    fn lib(&self) -> sweep::SweepFlags {
        sweep::SweepFlags {
            placement: name(self.placement),
            loads: self.loads.clone(),
            sets: self.sets,
            tasks_per_cpu: self.tasks_per_cpu,
            policies: self.policies.iter().copied().map(name).collect(),
            duration: self.duration.duration.unwrap_or(SWEEP_RUN),
            seed: self.seed,
            margin: self.reserve.margin,
            margin_add: self.reserve.margin_add,
            work: name(self.work),
            cmin: self.cmin,
            tmin: self.periods.tmin,
            tmax: self.periods.tmax,
            wss_kb: self.wss.wss_kb,
            cpus: self.cpus.spec(),
            rt_runtime: self.rt_runtime.map(|r| match r {
                RtRuntimeArg::Unlimited => sweep::RtRuntime::Unlimited,
                RtRuntimeArg::Limit(d) => sweep::RtRuntime::Limit(d),
            }),
            fair_server: self.fair_server,
        }
    }
}
