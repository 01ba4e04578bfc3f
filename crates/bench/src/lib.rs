//! See Cargo.toml description.
pub mod common;
pub mod labdev;
pub mod mbwi;
pub mod pdlt;
pub mod rhealstone;
pub mod sched_scale;
pub mod taskset;
