//! Every output format rtscope writes lives here, one module per format.
//! `probe` never formats; `cli` only picks which of these to call.

pub mod cyclictest;
pub mod json;
pub mod text;
