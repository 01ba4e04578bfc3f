//! The load crate's one error type. Bad input (checked before anything starts) is kept apart from
//! failures of the machine so the cli can map the former to exit code 2.

use thiserror::Error;

rtscope_model::request_fields! {
    /// The fields of a load request as its errors name them; the caller renders each token
    /// ([`rtscope_model::field::render`]).
    pub enum Field in "load" {
        Load = "load" => LOAD,
        Cpus = "cpus" => CPUS,
        LoadPolicy = "load_policy" => LOAD_POLICY,
        Force = "force" => FORCE,
        HackbenchGroups = "hackbench_groups" => HACKBENCH_GROUPS,
        HackbenchFds = "hackbench_fds" => HACKBENCH_FDS,
        Wss = "wss" => WSS,
        NetVeth = "net_veth" => NET_VETH,
        NetPort = "net_port" => NET_PORT,
        DiskTool = "disk_tool" => DISK_TOOL,
        DiskSize = "disk_size" => DISK_SIZE,
        ScratchDir = "scratch_dir" => SCRATCH_DIR,
        /// The `exec` load's command.
        Exec = "exec" => EXEC,
    }
}

#[derive(Debug, Error)]
pub enum LoadError {
    #[error(
        "{load}: unknown kind '{0}' (accepted: idle, cpu-cache, hackbench, disk, net, io, exec)",
        load = Field::Load
    )]
    UnknownKind(String),
    /// A field's value is out of range or does not fit this machine.
    #[error("{field}: {msg}")]
    Invalid { field: Field, msg: String },
    #[error("{net_port}: 127.0.0.1:{port} is already in use", net_port = Field::NetPort)]
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

    pub(crate) fn invalid(field: Field, msg: impl Into<String>) -> Self {
        LoadError::Invalid {
            field,
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
