//! The scheduler lab's typed fields named as the user typed them (`rtscope practise`).

use rtscope_practise::modes::Field;

/// The flag of each field.
pub fn flag(f: Field) -> &'static str {
    match f {
        Field::Structure => "--structure",
        Field::Svg => "--svg",
        Field::EmulatedCpus => "--emulated-cpus",
        Field::PArrival => "--p-arrival",
        Field::PFinish => "--p-finish",
        Field::Cycle => "--cycle",
        Field::Duration => "-D/--duration",
        Field::CheckEvery => "--check-every",
        Field::Policy => "--policy",
        Field::Cpus => "--cpus",
        Field::TraceKeep => "--trace-keep",
    }
}

/// Every scheduler-lab field token in `text` replaced by its flag.
pub fn render(text: &str) -> String {
    rtscope_model::field::render(text, Field::ALL, flag)
}
