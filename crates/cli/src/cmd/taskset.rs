//! `rtscope taskset gen|check|run`: generate random task sets, predict their schedulability,
//! run them under SCHED_DEADLINE / SCHED_FIFO / CFS and compare (`rtscope_bench::taskset::job`:
//! every flag resolved and checked before a thread is started or a cpuset created).

use rtscope_bench::taskset::job::{self, Generated};
use rtscope_report::taskset as text;
use rtscope_verbs::bench::Rules;
use std::path::PathBuf;

mod flags;
pub use flags::*;

impl PolicyArg {
    /// The library's name of the policy.
    fn name(self) -> &'static str {
        match self {
            PolicyArg::Deadline => "deadline",
            PolicyArg::Fifo => "fifo",
            PolicyArg::Other => "other",
        }
    }
}

/// The library's name of a placement.
fn placement_name(p: impl clap::ValueEnum) -> String {
    p.to_possible_value()
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
            method: self.method.clone(),
            tmin_ms: self.tmin_ms,
            tmax_ms: self.tmax_ms,
            periods_ms: self.periods_ms.clone(),
            period_gran_us: self.period_gran_us,
            cmin_us: self.cmin_us,
            umax: self.umax,
            deadlines: self.deadlines.clone(),
            dmin_frac: self.dmin_frac,
            seed: self.seed,
            count: self.count,
            cpu_count: self.cpus,
            output: self.output.clone(),
            format: self.format.clone(),
        }
    }
}

impl PlanArgs {
    fn lib(&self) -> job::PlanFlags {
        job::PlanFlags {
            policy: self.policy.name().into(),
            priorities: self.priorities.clone(),
            placement: placement_name(self.placement),
            fit: self.fit.clone(),
            bin_test: self.bin_test.clone(),
            cluster_size: self.cluster_size,
            cluster_by: self.cluster_by.clone(),
            margin: self.margin,
            margin_us: self.margin_us,
            inflate_us: self.inflate_us,
            cpus: self.cpus.clone(),
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
            duration: self.duration.clone(),
            wss_kb: self.wss_kb,
            access: self.access.clone(),
            seed: self.seed,
            work: self.work.clone(),
            no_overrun_signal: self.no_overrun_signal,
            engine: self.engine.clone(),
        }
    }
}

impl SweepArgs {
    fn lib(&self) -> rtscope_bench::taskset::sweep::SweepFlags {
        rtscope_bench::taskset::sweep::SweepFlags {
            placement: placement_name(self.placement),
            loads: self.loads.clone(),
            sets: self.sets,
            tasks_per_cpu: self.tasks_per_cpu,
            policies: self.policies.clone(),
            duration: self.duration.clone(),
            seed: self.seed,
            margin: self.margin,
            margin_us: self.margin_us,
            work: self.work.clone(),
            cmin_us: self.cmin_us,
            tmin_ms: self.tmin_ms,
            tmax_ms: self.tmax_ms,
            wss_kb: self.wss_kb,
            cpus: self.cpus.clone(),
            rt_runtime_us: self.rt_runtime_us,
            fair_server_us: self.fair_server_us,
        }
    }
}
