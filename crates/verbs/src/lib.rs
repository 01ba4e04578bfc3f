//! Every rtscope verb's work, one module per verb or verb family, from its resolved flags:
//! [`cyclictest`], [`monitor`], [`import`], [`load_only`], [`capture`], [`analyze`] (with
//! [`flight`], the view of a flight-recorder trace), [`bound`], [`bench`](mod@bench),
//! [`taskset`], [`mbwi`], [`osnoise`], [`thread_vars`], [`campaign`], [`doctor`], [`lab`] (the
//! kernels' list), and [`stored`] for the verbs that read the results store.
//!
//! What it owns: what each verb does between its resolved configuration and its record — which
//! library it drives and what it puts in its result.
//!
//! What it must not do: run a lifecycle of its own (privilege, leftovers of killed runs, signals,
//! the measurement threads, checkpoints, storing and writing the record are the session's, run by
//! `rtscope_session::tool::run_tool`); parse argv or name a flag the user did not write (the cli
//! resolves argv into typed configurations); format text that belongs to `rtscope_report`.

pub mod analyze;
pub mod bench;
pub mod bound;
pub mod campaign;
pub mod capture;
pub mod cyclictest;
pub mod doctor;
pub mod flight;
pub mod import;
pub mod input;
pub mod lab;
pub mod load_only;
pub mod mbwi;
pub mod monitor;
pub mod osnoise;
pub mod schedule;
pub mod stored;
pub mod taskset;
pub mod thread_vars;
pub mod watch;

// The lifecycle's modules under the names the verbs use for them.
#[cfg(test)]
use rtscope_session::stream;
use rtscope_session::{live, measure, outputs, privilege, record, resolve, signals, tool};
use rtscope_session::{LiveSnapshot, View};
