//! What the field-to-flag maps are checked against: the flags the clap tree gives a verb.

/// Whether a verb (`["taskset"]`: any of its subcommands) takes `flag` (`--long` or `-s`).
pub fn takes(verb: &[&str], flag: &str) -> bool {
    fn any(c: &clap::Command, flag: &str) -> bool {
        c.get_arguments().any(|a| {
            a.get_long().is_some_and(|l| flag == format!("--{l}"))
                || a.get_short().is_some_and(|s| flag == format!("-{s}"))
        }) || c.get_subcommands().any(|s| any(s, flag))
    }
    let mut c = <crate::Cli as clap::CommandFactory>::command();
    for v in verb {
        match c.find_subcommand(v) {
            Some(s) => c = s.clone(),
            None => return false,
        }
    }
    any(&c, flag)
}
