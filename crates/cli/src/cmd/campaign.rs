//! `rtscope campaign` — being built under issue 6; until it lands the verb says so and exits 1.

#[derive(clap::Args)]
pub struct Args {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<String>,
}

pub fn run(_a: Args) -> anyhow::Result<()> {
    anyhow::bail!("'campaign' is not available in this build yet (issue 6)")
}
