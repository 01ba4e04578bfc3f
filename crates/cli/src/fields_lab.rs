//! The lab's typed fields named as the user typed them (`rtscope lab run`, `lab kernel build`).

use rtscope_lab::field::Field;

fn flag(f: Field) -> &'static str {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_a_flag_of_lab() {
        for f in Field::ALL {
            assert!(crate::fields_check::takes(&["lab"], flag(*f)), "{f:?}");
        }
    }

    #[test]
    fn a_refusal_reads_with_the_flag() {
        let e = rtscope_lab::nic::NicLoad::parse("0")
            .err()
            .map(|e| e.to_string());
        let e = e.unwrap_or_default();
        assert!(render(&e).starts_with("--nic-load: must be 1..="), "{e}");
    }
}
