//! Task sets (issue 8; Lelli 2014 thesis §2.3 Tables 2.1–2.2 and Ch. 3): generation, placement,
//! a runner with one thread per periodic task doing calibrated work over its own working set,
//! predictions from `rtscope_analysis::sched` beside the observed outcome, and rt-app JSON input.

pub mod cpuset;
pub mod gen;
pub mod kernel;
pub mod plan;
pub mod rtapp;
pub mod runner;
pub mod work;

pub use plan::{
    plan, predict, PlacementKind, PolicyKind, RunPlan, Segment, TaskSpec, ThreadPolicy,
};
pub use runner::{run, RunOptions};

#[derive(Debug, thiserror::Error)]
pub enum TasksetError {
    /// Bad input found before anything started (the CLI maps this to exit code 2).
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Admission(String),
    #[error(transparent)]
    Cpuset(#[from] cpuset::CpusetError),
    #[error("{what}: {source}")]
    Sys {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Probe(#[from] rtscope_probe::ProbeError),
}

/// Read a task-set file: TOML when the name ends in `.toml`, JSON otherwise.
pub fn read_set(path: &std::path::Path) -> Result<rtscope_model::taskset::TaskSet, TasksetError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| TasksetError::Invalid(format!("{}: {e}", path.display())))?;
    let set: rtscope_model::taskset::TaskSet = if path.extension().is_some_and(|e| e == "toml") {
        toml::from_str(&text)
            .map_err(|e| TasksetError::Invalid(format!("{}: {e}", path.display())))?
    } else {
        serde_json::from_str(&text)
            .map_err(|e| TasksetError::Invalid(format!("{}: {e}", path.display())))?
    };
    gen::check_set(&set).map_err(|e| TasksetError::Invalid(format!("{}: {e}", path.display())))?;
    Ok(set)
}

/// Serialise a task set as pretty JSON or TOML.
pub fn write_set(
    set: &rtscope_model::taskset::TaskSet,
    toml_format: bool,
) -> Result<String, TasksetError> {
    if toml_format {
        toml::to_string_pretty(set).map_err(|e| TasksetError::Invalid(format!("TOML: {e}")))
    } else {
        serde_json::to_string_pretty(set).map_err(|e| TasksetError::Invalid(format!("JSON: {e}")))
    }
}
