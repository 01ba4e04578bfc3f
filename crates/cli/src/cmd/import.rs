//! `rtscope import [cyclictest|run] FILE…`: results from elsewhere into the RunRecord model and
//! the store (`rtscope_verbs::import`), so old results can be compared with new ones.

mod flags;
pub use flags::*;

pub fn run(a: Args) -> anyhow::Result<()> {
    Ok(rtscope_verbs::import::files(&a.args, &a.out.lib())?)
}
