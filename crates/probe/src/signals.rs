//! The run's signal handlers live in `rtscope_sys::signals`; re-exported here for the probe's
//! callers.

pub use rtscope_sys::signals::{
    clear_stop, install_handlers, request_stop, stop_requested, stop_signal, stop_signal_name,
    take_snapshot_request, Guard,
};
