//! `rtscope cyclictest` — being built under issue 2.

#[derive(clap::Args)]
pub struct Args {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<String>,
}

pub fn run(_a: Args) -> anyhow::Result<()> {
    anyhow::bail!("'cyclictest' is not available in this build yet (issue 2)")
}
