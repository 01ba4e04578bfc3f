//! The lab's typed fields named as the user typed them (`rtscope lab run`, `lab kernel build`).

use rtscope_lab::field::Field;

/// The flag of each field.
pub fn flag(f: Field) -> &'static str {
    match f {
        Field::Kernel => "--kernel",
        Field::Preset => "--preset",
        Field::Force => "--force",
        Field::Preempt => "--preempt",
        Field::Icount => "--icount",
        Field::GuestBin => "--guest-bin",
        Field::Smp => "--smp",
        Field::Mem => "--mem",
        Field::Timeout => "--timeout",
        Field::NicLoad => "--nic-load",
    }
}

/// Every lab field token in `text` replaced by its flag.
pub fn render(text: &str) -> String {
    rtscope_model::field::render(text, Field::ALL, flag)
}
