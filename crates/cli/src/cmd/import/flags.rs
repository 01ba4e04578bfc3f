//! The flags of `rtscope import` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

#[derive(clap::Args)]
pub struct Args {
    /// [cyclictest|run] FILE… — the kind may be omitted: it is detected from the content
    /// (cyclictest -h/-H text, cyclictest --json, or an rtscope RunRecord JSON such as a
    /// fallback file written when the database was unreachable).
    #[arg(required = true, value_name = "[KIND] FILE")]
    pub(super) args: Vec<String>,
    #[command(flatten)]
    pub(super) out: crate::cmd::common::OutArgs,
}
