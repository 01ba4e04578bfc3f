//! The benchmark crate's typed fields named as the user typed them: a refusal from
//! `rtscope_bench` names a field by its token (`⟨pdlt.step⟩`); here each becomes its flag.

use rtscope_bench::{common, mbwi, pdlt, rhealstone, sched_scale, taskset};
use rtscope_model::field::render as tokens;

pub fn bench(f: common::Field) -> &'static str {
    match f {
        common::Field::Cpu => "--cpu",
    }
}

pub fn pdlt(f: pdlt::Field) -> &'static str {
    use pdlt::Field as F;
    match f {
        F::Priority => "--priority",
        F::ConsumerPriority => "--consumer-priority",
        F::Syscall => "--syscall",
        F::Size => "--size",
        F::Step => "--step",
        F::Offsets => "--offsets",
        F::Repeats => "--repeats",
        F::ScratchDir => "--scratch-dir",
        F::Timeout => "--timeout",
        F::Points => "--points",
        F::ComparePreempt => "--compare-preempt",
    }
}

pub fn rhealstone(f: rhealstone::Field) -> &'static str {
    use rhealstone::Field as F;
    match f {
        F::Priority => "--priority",
        F::Iterations => "--iterations",
        F::IrqIterations => "--irq-iterations",
        F::TimerInterval => "--timer-interval",
        F::MediumBurst => "--medium-burst",
        F::Timeout => "--timeout",
        F::Only => "--only",
        F::Variants => "--variants",
        F::NoVariants => "--no-variants",
    }
}

pub fn sched_scale(f: sched_scale::Field) -> &'static str {
    use sched_scale::Field as F;
    match f {
        F::Priority => "--priority",
        F::Loads => "--loads",
        F::Wakeups => "--wakeups",
        F::Sleep => "--sleep",
        F::SchedTime => "--sched-time",
        F::Protocol => "--protocol",
    }
}

pub fn mbwi(f: mbwi::Field) -> &'static str {
    use mbwi::Field as F;
    match f {
        F::Cpus => "--cpus",
        F::Duration => "--duration",
        F::Mutex => "--mutex",
        F::Scenario => "--scenario",
        F::Tick => "--tick",
        F::Iterations => "--iterations",
        F::ContendedIterations => "--contended-iterations",
        F::Example => "--example",
    }
}

pub fn taskset(f: taskset::field::Field) -> &'static str {
    use taskset::field::Field as F;
    match f {
        F::Access => "--access",
        F::BinTest => "--bin-test",
        F::ClusterBy => "--cluster-by",
        F::ClusterSize => "--cluster-size",
        F::Cmin => "--cmin",
        F::Count => "--count",
        F::CpuCount => "--cpu-count",
        F::Cpus => "--cpus",
        F::Deadlines => "--deadlines",
        F::DminFrac => "--dmin-frac",
        F::Duration => "--duration",
        F::Engine => "--engine",
        F::FairServer => "--fair-server",
        F::Fit => "--fit",
        F::Format => "--format",
        F::Inflate => "--inflate",
        F::Loads => "--loads",
        F::MarginAdd => "--margin-add",
        F::Margin => "--margin",
        F::Method => "--method",
        F::NoProbe => "--no-probe",
        F::Output => "-o",
        F::PeriodGran => "--period-gran",
        F::Periods => "--periods",
        F::Placement => "--placement",
        F::Policies => "--policies",
        F::Policy => "--policy",
        F::Priorities => "--priorities",
        F::RtApp => "--rt-app",
        F::RtRuntime => "--rt-runtime",
        F::Sets => "--sets",
        F::TasksPerCpu => "--tasks-per-cpu",
        F::Tmax => "--tmax",
        F::Tmin => "--tmin",
        F::Umax => "--umax",
        F::Utilisation => "-u",
        F::Work => "--work",
        F::WssKb => "--wss-kb",
    }
}

/// Every benchmark field token in `text` replaced by its flag.
pub fn render(text: &str) -> String {
    let t = tokens(text, common::Field::ALL, bench);
    let t = tokens(&t, pdlt::Field::ALL, pdlt);
    let t = tokens(&t, rhealstone::Field::ALL, rhealstone);
    let t = tokens(&t, sched_scale::Field::ALL, sched_scale);
    let t = tokens(&t, mbwi::Field::ALL, mbwi);
    tokens(&t, taskset::field::Field::ALL, taskset)
}
