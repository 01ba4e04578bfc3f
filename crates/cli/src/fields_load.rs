//! The load crate's typed fields named as the user typed them (`rtscope load` and the load
//! flags `measure` flattens).

use rtscope_load::Field;

fn flag(f: Field) -> &'static str {
    match f {
        Field::Load => "--load",
        Field::Cpus => "--cpus",
        Field::LoadPolicy => "--load-policy",
        Field::Force => "--force",
        Field::HackbenchGroups => "--hackbench-groups",
        Field::HackbenchFds => "--hackbench-fds",
        Field::Wss => "--wss",
        Field::NetVeth => "--net-veth",
        Field::NetPort => "--net-port",
        Field::DiskTool => "--disk-tool",
        Field::DiskSize => "--disk-size",
        Field::ScratchDir => "--scratch-dir",
        // The load kind, not a flag: `rtscope load exec -- CMD`.
        Field::Exec => "exec",
    }
}

/// Every load field token in `text` replaced by its flag.
pub fn render(text: &str) -> String {
    rtscope_model::field::render(text, Field::ALL, flag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields_check::takes;

    #[test]
    fn every_field_is_a_flag_of_load_or_measure() {
        // `exec` is a load kind; the fds of a hackbench group are set only by the load crate's
        // test host (`rtscope-load-testhost --fds`), the cli keeps the crate's default.
        let flagless = [Field::Exec, Field::HackbenchFds];
        for f in Field::ALL.iter().filter(|f| !flagless.contains(f)) {
            assert!(
                takes(&["load"], flag(*f)) || takes(&["measure"], flag(*f)),
                "{f:?}"
            );
        }
    }

    #[test]
    fn a_refusal_reads_with_the_flag() {
        let e = rtscope_load::parse_kinds("io,disk")
            .unwrap_err()
            .to_string();
        assert_eq!(
            render(&e),
            "--load: 'disk' overlaps 'io' in 'io,disk' (io = hackbench+disk+net)"
        );
    }
}
