//! The flags of `rtscope cyclictest` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

#[derive(clap::Args)]
pub struct Args {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub(super) argv: Vec<String>,
}
