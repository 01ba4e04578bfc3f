//! The benchmark crate's typed fields named as the user typed them: a refusal from
//! `rtscope_bench` names a field by its token (`⟨pdlt.step_us⟩`); here each becomes its flag.

use rtscope_bench::{common, mbwi, pdlt, rhealstone, sched_scale, taskset};
use rtscope_model::field::render as tokens;

fn bench(f: common::Field) -> &'static str {
    match f {
        common::Field::Cpu => "--cpu",
    }
}

fn pdlt(f: pdlt::Field) -> &'static str {
    use pdlt::Field as F;
    match f {
        F::Priority => "--priority",
        F::ConsumerPriority => "--consumer-priority",
        F::Syscall => "--syscall",
        F::Size => "--size",
        F::StepUs => "--step-us",
        F::OffsetsUs => "--offsets-us",
        F::Repeats => "--repeats",
        F::ScratchDir => "--scratch-dir",
        F::Timeout => "--timeout",
        F::Points => "--points",
        F::ComparePreempt => "--compare-preempt",
    }
}

fn rhealstone(f: rhealstone::Field) -> &'static str {
    use rhealstone::Field as F;
    match f {
        F::Priority => "--priority",
        F::Iterations => "--iterations",
        F::IrqIterations => "--irq-iterations",
        F::TimerIntervalUs => "--timer-interval-us",
        F::MediumBurstUs => "--medium-burst-us",
        F::Timeout => "--timeout",
        F::Only => "--only",
        F::Variants => "--variants",
        F::NoVariants => "--no-variants",
    }
}

fn sched_scale(f: sched_scale::Field) -> &'static str {
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

fn mbwi(f: mbwi::Field) -> &'static str {
    use mbwi::Field as F;
    match f {
        F::Cpus => "--cpus",
        F::Duration => "--duration",
        F::Mutex => "--mutex",
        F::Scenario => "--scenario",
        F::TickUs => "--tick-us",
        F::Iterations => "--iterations",
        F::ContendedIterations => "--contended-iterations",
        F::Example => "--example",
    }
}

fn taskset(f: taskset::field::Field) -> &'static str {
    use taskset::field::Field as F;
    match f {
        F::Access => "--access",
        F::BinTest => "--bin-test",
        F::ClusterBy => "--cluster-by",
        F::ClusterSize => "--cluster-size",
        F::CminUs => "--cmin-us",
        F::Count => "--count",
        F::CpuCount => "--cpu-count",
        F::Cpus => "--cpus",
        F::Deadlines => "--deadlines",
        F::DminFrac => "--dmin-frac",
        F::Duration => "--duration",
        F::Engine => "--engine",
        F::FairServerUs => "--fair-server-us",
        F::Fit => "--fit",
        F::Format => "--format",
        F::InflateUs => "--inflate-us",
        F::Loads => "--loads",
        F::MarginUs => "--margin-us",
        F::Margin => "--margin",
        F::Method => "--method",
        F::NoProbe => "--no-probe",
        F::Output => "-o",
        F::PeriodGranUs => "--period-gran-us",
        F::PeriodsMs => "--periods-ms",
        F::Placement => "--placement",
        F::Policies => "--policies",
        F::Policy => "--policy",
        F::Priorities => "--priorities",
        F::RtApp => "--rt-app",
        F::RtRuntimeUs => "--rt-runtime-us",
        F::Sets => "--sets",
        F::TasksPerCpu => "--tasks-per-cpu",
        F::TmaxMs => "--tmax-ms",
        F::TminMs => "--tmin-ms",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields_check::takes;

    #[test]
    fn every_field_is_a_flag_of_its_verb() {
        for f in common::Field::ALL {
            for verb in ["pdlt", "rhealstone", "sched-scale"] {
                assert!(takes(&[verb], bench(*f)), "{verb} {}", bench(*f));
            }
        }
        for f in pdlt::Field::ALL {
            assert!(takes(&["pdlt"], pdlt(*f)), "{f:?}");
        }
        for f in rhealstone::Field::ALL {
            assert!(takes(&["rhealstone"], rhealstone(*f)), "{f:?}");
        }
        for f in sched_scale::Field::ALL {
            assert!(takes(&["sched-scale"], sched_scale(*f)), "{f:?}");
        }
        for f in mbwi::Field::ALL {
            assert!(takes(&["mbwi"], mbwi(*f)), "{f:?}");
        }
        for f in taskset::field::Field::ALL {
            assert!(takes(&["taskset"], taskset(*f)), "{f:?}");
        }
    }

    #[test]
    fn a_refusal_reads_with_the_flag() {
        let e = pdlt::parse_offsets("5").unwrap_err().to_string();
        assert_eq!(
            render(&e),
            "--offsets-us: '5' must be START:END in µs, e.g. -5:800"
        );
        let hint = render(taskset::rtapp::ENGINE_HINT);
        assert!(hint.ends_with("(--engine rt-app)"), "{hint}");
    }
}
