//! `rtscope load KIND[,KIND…] [-- CMD ARGS…]`: run a background workload on its own, print its
//! intensity figures at the end (and write them as JSON). The same [`LoadFlags`] are flattened
//! into `rtscope measure` so both verbs spell the load options identically.

use rtscope_load::{LoadError, LoadOptions, LoadPolicy};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Load options shared by `load` and `measure` (`#[command(flatten)]`).
#[derive(clap::Args, Debug, Clone)]
pub struct LoadFlags {
    /// cpu-cache working set per worker (e.g. 20M) [default: 2 x the largest cache in sysfs,
    /// 20M if none]
    #[arg(long, value_name = "SIZE")]
    pub wss: Option<String>,
    /// Directory for the disk load's scratch files (a private subdirectory, removed at the end)
    #[arg(long, value_name = "DIR", default_value = "/var/tmp")]
    pub scratch_dir: PathBuf,
    /// Size of the disk load's sequential file; checked against free space before start
    #[arg(long, value_name = "SIZE", default_value = "1G")]
    pub disk_size: String,
    /// net: stream over a veth pair into a private network namespace instead of loopback
    #[arg(long)]
    pub net_veth: bool,
    /// net: server port on 127.0.0.1 (0 = any free port)
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    pub net_port: u16,
    /// Scheduling policy of the load processes: other, fifo or fifo:PRIO (fifo needs --force)
    #[arg(long, value_name = "POLICY", default_value = "other")]
    pub load_policy: String,
    /// hackbench: number of groups of 20 senders and 20 receivers
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub hackbench_groups: u32,
}

impl LoadFlags {
    /// Resolves the flags into library options; bad values are usage errors (exit 2).
    pub fn options(
        &self,
        cpus: Vec<u32>,
        force: bool,
        exec_argv: Vec<String>,
    ) -> anyhow::Result<LoadOptions> {
        let wss_bytes = match &self.wss {
            Some(w) => Some(rtscope_load::parse_size(w).map_err(|e| crate::usage!("--wss: {e}"))?),
            None => None,
        };
        let disk_bytes = rtscope_load::parse_size(&self.disk_size)
            .map_err(|e| crate::usage!("--disk-size: {e}"))?;
        let policy: LoadPolicy = self.load_policy.parse().map_err(load_error)?;
        Ok(LoadOptions {
            cpus,
            wss_bytes,
            scratch_dir: self.scratch_dir.clone(),
            disk_bytes,
            net_veth: self.net_veth,
            net_port: self.net_port,
            policy,
            force,
            exec_argv,
            hackbench_groups: self.hackbench_groups,
            ..LoadOptions::default()
        })
    }
}

/// A library error as the cli reports it: validation errors exit 2, the rest exit 1.
pub fn load_error(e: LoadError) -> anyhow::Error {
    if e.is_bad_input() {
        crate::usage!("{e}")
    } else {
        anyhow::Error::new(e)
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// idle, cpu-cache, hackbench, disk, net, io (= hackbench+disk+net) or exec, comma-separated
    #[arg(value_name = "KIND[,KIND…]")]
    kinds: String,
    /// How long to run (e.g. 30s, 5m, 1h; plain number = seconds) [default: until Ctrl-C]
    #[arg(short = 'D', long, value_name = "TIME")]
    duration: Option<String>,
    /// CPUs the loads may use (e.g. 0-1,3) [default: all online]
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// Confirm a real-time load policy (--load-policy fifo)
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    out: super::common::OutArgs,
    #[command(flatten)]
    flags: LoadFlags,
    /// exec: the command and its arguments, after `--` (run without a shell)
    #[arg(last = true, value_name = "CMD ARGS")]
    exec: Vec<String>,
}

/// Parses `-D`: `90`, `90s`, `500ms`, `5m`, `2h`.
/// `-D` in the one grammar (`rtscope_model::duration`), 1 ms ..= 30 days.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    rtscope_model::duration::parse_secs_in(s, 0.001, 30.0 * 86400.0).map(Duration::from_secs_f64)
}

pub fn run(a: Args) -> anyhow::Result<()> {
    // Everything is resolved and checked before the first process is forked.
    let kinds = rtscope_load::parse_kinds(&a.kinds).map_err(load_error)?;
    let duration = match &a.duration {
        Some(d) => Some(parse_duration(d).map_err(|e| crate::usage!("--duration: {e}"))?),
        None => None,
    };
    let cpus = match &a.cpus {
        Some(l) => super::common::resolve_cpus("--cpus", Some(l))?,
        None => Vec::new(),
    };
    let tags = a.out.validate()?;
    let opts = a.flags.options(cpus, a.force, a.exec.clone())?;
    rtscope_load::validate(&kinds, &opts).map_err(load_error)?;

    // The session's one set of handlers: SIGINT, SIGTERM and SIGHUP stop the loads cleanly.
    super::common::install_signal_handlers();
    let mut warnings = super::common::recover_leftovers();
    let started = std::time::SystemTime::now();
    let loads = rtscope_load::start(&kinds, &opts).map_err(load_error)?;
    let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    match duration {
        _ if a.out.quiet => {}
        Some(d) => eprintln!(
            "rtscope: load {} running for {d:?} (Ctrl-C stops)",
            names.join(",")
        ),
        None => eprintln!("rtscope: load {} running until Ctrl-C", names.join(",")),
    }
    let t0 = Instant::now();
    while !super::common::stop_requested() && duration.is_none_or(|d| t0.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let interrupted = super::common::stop_requested();
    let reports = loads.stop();
    if a.out.text() {
        print!("{}", rtscope_report::bench::loads(&reports, interrupted));
    }
    for r in &reports {
        for w in &r.warnings {
            warnings.push(rtscope_model::Warning::new(
                rtscope_model::WarningCode::Load,
                format!("load {}: {w}", r.kind),
            ));
        }
    }
    // Stored like every verb's result: the loads' figures in `loads`, no latency samples.
    let (policy, priority) = match opts.policy {
        rtscope_load::LoadPolicy::Other => (rtscope_model::Policy::Other, 0),
        rtscope_load::LoadPolicy::Fifo(p) => (rtscope_model::Policy::Fifo, u32::from(p)),
    };
    let rec = rtscope_session::record::work_record(rtscope_session::record::WorkInfo {
        verb: "load".into(),
        cmdline: super::common::cmdline(),
        cpus: if opts.cpus.is_empty() {
            rtscope_probe::sys::online_cpus().unwrap_or_default()
        } else {
            opts.cpus.clone()
        },
        policy,
        priority,
        duration_s: duration.map(|d| d.as_secs_f64()),
        started,
        wall_s: t0.elapsed().as_secs_f64(),
        interrupted,
        hygiene: rtscope_model::Hygiene::default(),
        overruns: 0,
        warnings,
        tags,
        loads: reports,
        bench: None,
    });
    super::common::emit(&a.out, &rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("0s").is_err());
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("5x").is_err());
    }
}
