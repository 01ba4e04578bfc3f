//! The load crate's one error type. Bad input (checked before anything starts) is kept apart from
//! failures of the machine so the cli can map the former to exit code 2.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum LoadError {
    #[error(
        "--load: unknown kind '{0}' (accepted: idle, cpu-cache, hackbench, disk, net, io, exec)"
    )]
    UnknownKind(String),
    /// A flag's value is out of range or does not fit this machine. `flag` names the option.
    #[error("{flag}: {msg}")]
    Invalid { flag: &'static str, msg: String },
    #[error("--net-port: 127.0.0.1:{port} is already in use")]
    PortInUse { port: u16 },
    /// The kernel refused something while starting (fork, mmap, bind, …): not the user's fault.
    #[error("load: {what}: {source}")]
    Os {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl LoadError {
    /// True for errors raised by validation: nothing was started, exit code 2.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, LoadError::Os { .. })
    }

    pub(crate) fn invalid(flag: &'static str, msg: impl Into<String>) -> Self {
        LoadError::Invalid {
            flag,
            msg: msg.into(),
        }
    }

    pub(crate) fn os(what: impl Into<String>, source: std::io::Error) -> Self {
        LoadError::Os {
            what: what.into(),
            source,
        }
    }

    pub(crate) fn last_os(what: impl Into<String>) -> Self {
        Self::os(what, std::io::Error::last_os_error())
    }
}
