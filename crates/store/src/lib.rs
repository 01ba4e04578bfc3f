//! See Cargo.toml description.
