//! A campaign cell's `measure` arguments as clap reads them (the verb's own flags);
//! the parent module does the work.

use super::*;

#[derive(Parser)]
#[command(name = "measure", no_binary_name = false)]
pub(super) struct Measure {
    #[command(flatten)]
    pub(super) args: Args,
}
