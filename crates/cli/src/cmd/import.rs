//! `rtscope import [cyclictest|run] FILE…`: results from elsewhere into the RunRecord model and
//! the store (`rtscope_verbs::import`), so old results can be compared with new ones.

#[derive(clap::Args)]
pub struct Args {
    /// [cyclictest|run] FILE… — the kind may be omitted: it is detected from the content
    /// (cyclictest -h/-H text, cyclictest --json, or an rtscope RunRecord JSON such as a
    /// fallback file written when the database was unreachable).
    #[arg(required = true, value_name = "[KIND] FILE")]
    args: Vec<String>,
    #[command(flatten)]
    out: super::common::OutArgs,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    Ok(rtscope_verbs::import::files(&a.args, &a.out.lib())?)
}
