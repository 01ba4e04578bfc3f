//! The `--db` flag of the result verbs (runs, show, export, compare, report, campaign) and of every verb that stores; what they
//! do with the store is `rtscope_verbs::stored`.

mod flags;
pub use flags::*;
