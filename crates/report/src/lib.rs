//! Every output format rtscope writes lives here, one module per format.
//! `probe` never formats; `cli` only picks which of these to call.

pub mod analyze;
pub mod bench;
pub mod compare;
pub mod cyclictest;
pub mod cyclictest_args;
pub mod doctor;
pub mod export;
pub mod figures;
pub mod html;
pub mod import;
pub mod json;
pub mod live;
pub mod mbwi;
pub mod notes;
pub mod osnoise;
pub mod practise;
pub mod prometheus;
pub mod raw_csv;
pub mod soundness;
pub mod stored;
pub mod svg;
pub mod table;
pub mod tail;
pub mod taskset;
pub mod text;
pub mod thread_vars;
pub mod watch;
