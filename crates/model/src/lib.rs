//! rtscope's plain data model. No I/O lives here: every other crate exchanges these types.
//!
//! Every JSON document rtscope writes carries `schema_version`; the schema is described in
//! `docs/schema/`. Field names carry their unit (`latency_ns`, `interval_us`).

pub mod attribution;
pub mod bench;
pub mod bound;
pub mod config;
pub mod cpus;
pub mod doctor;
pub mod duration;
pub mod event;
pub mod field;
pub mod histogram;
pub mod json_keys;
pub mod limits;
pub mod live;
pub mod load;
pub mod mbwi;
pub mod noise;
pub mod practise;
pub mod record;
mod record_v1;
pub mod rng;
pub mod secrets;
pub mod size;
pub mod slack;
pub mod stats;
pub mod system;
pub mod tail;
pub mod taskset;
pub mod thread_vars;
pub mod timerlat;
pub mod warning;
pub mod watch;
pub mod worst;

pub use config::*;
pub use histogram::Histogram;
pub use load::LoadReport;
pub use record::*;
pub use stats::{Percentile, Stats};
pub use system::SystemInfo;
pub use warning::{Warning, WarningCode, Warnings};

/// Version of the RunRecord JSON schema (`docs/schema/run-record.schema.json`).
pub const SCHEMA_VERSION: u32 = 2;
