//! `rtscope cyclictest <cyclictest flags>`: the drop-in for rt-tests' cyclictest
//! (`rtscope_verbs::cyclictest`), with cyclictest's own getopt grammar.

mod flags;
pub use flags::*;

pub fn run(a: Args) -> anyhow::Result<()> {
    let base = super::measure::defaults();
    rtscope_verbs::cyclictest::run(&a.argv, base).map_err(crate::fields::usage)
}
