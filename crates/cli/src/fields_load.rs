//! The load crate's typed fields named as the user typed them (`rtscope load` and the load
//! flags `measure` flattens).

use rtscope_load::Field;

/// The flag of each field.
pub fn flag(f: Field) -> &'static str {
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
