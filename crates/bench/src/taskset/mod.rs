//! Task sets (Lelli 2014 thesis §2.3 Tables 2.1–2.2 and Ch. 3): generation, placement,
//! a runner with one thread per periodic task doing calibrated work over its own working set,
//! predictions from `rtscope_analysis::sched` beside the observed outcome, and rt-app JSON input.

pub mod cpuset;
pub mod gen;
pub mod job;
pub mod kernel;
pub mod plan;
pub mod rtapp;
pub mod rtapp_engine;
pub mod runner;
pub mod sweep;
pub mod topology;
pub mod work;

/// The fields of a task-set request (`gen`, `check`, `run`, `sweep`) as its errors name them;
/// the caller renders each token ([`rtscope_model::field::render`]).
pub mod field {
    rtscope_model::request_fields! {
        pub enum Field in "taskset" {
            Access = "access" => ACCESS,
            BinTest = "bin_test" => BIN_TEST,
            ClusterBy = "cluster_by" => CLUSTER_BY,
            ClusterSize = "cluster_size" => CLUSTER_SIZE,
            Cmin = "cmin" => CMIN,
            Count = "count" => COUNT,
            CpuCount = "cpu_count" => CPU_COUNT,
            Cpus = "cpus" => CPUS,
            Deadlines = "deadlines" => DEADLINES,
            DminFrac = "dmin_frac" => DMIN_FRAC,
            Duration = "duration" => DURATION,
            Engine = "engine" => ENGINE,
            FairServer = "fair_server" => FAIR_SERVER,
            Fit = "fit" => FIT,
            Format = "format" => FORMAT,
            Inflate = "inflate" => INFLATE,
            Loads = "loads" => LOADS,
            MarginAdd = "margin_add" => MARGIN_ADD,
            Margin = "margin" => MARGIN,
            Method = "method" => METHOD,
            NoProbe = "no_probe" => NO_PROBE,
            Output = "output" => OUTPUT,
            PeriodGran = "period_gran" => PERIOD_GRAN,
            Periods = "periods" => PERIODS,
            Placement = "placement" => PLACEMENT,
            Policies = "policies" => POLICIES,
            Policy = "policy" => POLICY,
            Priorities = "priorities" => PRIORITIES,
            RtApp = "rt_app" => RT_APP,
            RtRuntime = "rt_runtime" => RT_RUNTIME,
            Sets = "sets" => SETS,
            TasksPerCpu = "tasks_per_cpu" => TASKS_PER_CPU,
            Tmax = "tmax" => TMAX,
            Tmin = "tmin" => TMIN,
            Umax = "umax" => UMAX,
            Utilisation = "utilisation" => UTILISATION,
            Work = "work" => WORK,
            WssKb = "wss_kb" => WSS_KB,
        }
    }
}

pub use plan::{
    plan, predict, PlacementKind, PolicyKind, Release, RunPlan, Segment, TaskSpec, ThreadPolicy,
};
pub use rtscope_analysis::sched::{Fit, PriorityOrder};
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
    /// rt-app itself failed (`--engine rt-app`): its own words.
    #[error(transparent)]
    Engine(#[from] rtapp_engine::EngineError),
}

/// The largest task-set file read (thousands of tasks take a few hundred KB).
pub const SET_FILE_MAX: u64 = 16 << 20;

/// A TOML error as one line: `line L, column C: message` (toml's own display draws the line
/// with a caret over several lines).
pub fn toml_one_line(e: &toml::de::Error, text: &str) -> String {
    let msg = e.message().trim().replace('\n', " ");
    match e.span() {
        Some(sp) => {
            let before = text.get(..sp.start).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {col}: {msg}")
        }
        None => msg,
    }
}

/// Read a task-set file: TOML when the name ends in `.toml`, JSON otherwise.
pub fn read_set(path: &std::path::Path) -> Result<rtscope_model::taskset::TaskSet, TasksetError> {
    let bytes = rtscope_files::read_bounded(path, SET_FILE_MAX, "a task-set file")
        .map_err(|e| TasksetError::Invalid(format!("{}: {e}", path.display())))?;
    let text = String::from_utf8(bytes)
        .map_err(|e| TasksetError::Invalid(format!("{}: not UTF-8 text: {e}", path.display())))?;
    parse_set(&text, path.extension().is_some_and(|e| e == "toml"))
        .map_err(|e| TasksetError::Invalid(format!("{}: {e}", path.display())))
}

/// A task set from its text (TOML or JSON), checked: unknown keys, a schema version this build
/// does not read and impossible tasks are errors.
pub fn parse_set(text: &str, toml_format: bool) -> Result<rtscope_model::taskset::TaskSet, String> {
    let set: rtscope_model::taskset::TaskSet = if toml_format {
        toml::from_str(text).map_err(|e| toml_one_line(&e, text))?
    } else {
        rtscope_model::json_keys::reject_duplicate_keys(text)
            .and_then(|()| serde_json::from_str(text).map_err(|e| e.to_string()))?
    };
    if !(1..=rtscope_model::SCHEMA_VERSION).contains(&set.schema_version) {
        return Err(format!(
            "schema_version {} is not one this rtscope reads (1..={})",
            set.schema_version,
            rtscope_model::SCHEMA_VERSION
        ));
    }
    gen::check_set(&set).map_err(|e| e.to_string())?;
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
