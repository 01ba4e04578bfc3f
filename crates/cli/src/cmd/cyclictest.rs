//! `rtscope cyclictest <cyclictest flags>`: the drop-in for rt-tests' cyclictest
//! (`rtscope_verbs::cyclictest`), with cyclictest's own getopt grammar.

#[derive(clap::Args)]
pub struct Args {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    argv: Vec<String>,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let base = super::measure::defaults();
    rtscope_verbs::cyclictest::run(&a.argv, base).map_err(crate::fields::usage)
}
