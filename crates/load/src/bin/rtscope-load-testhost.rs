//! Test helper for the load crate's integration tests (cleanup after SIGINT, SIGKILL and normal
//! end must be checked on a *separate* parent process). Not installed with rtscope.
//!
//! `rtscope-load-testhost KIND[,KIND…] [--duration-ms N] [--wss BYTES] [--scratch DIR]
//!  [--disk-size BYTES] [--groups N] [--fds N] [--port N] [--veth] [-- CMD ARGS…]`
//!
//! Prints `READY sup=PID workers=P,P,… scratch=DIR|- port=N`, then runs until the duration ends or
//! SIGINT/SIGTERM arrives, stops the loads and prints `FIGURE kind name value` lines and `DONE`.

use rtscope_load::{parse_kinds, parse_size, start, LoadOptions};
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: i32) {
    STOP.store(true, Ordering::SeqCst);
}

fn main() {
    if let Err(e) = run() {
        eprintln!("testhost: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let spec = args.next().ok_or("usage: KIND[,KIND…] [options]")?;
    let kinds = parse_kinds(&spec).map_err(|e| e.to_string())?;
    let mut opts = LoadOptions::default();
    let mut duration_ms: Option<u64> = None;
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or(format!("{a}: missing value"));
        match a.as_str() {
            "--duration-ms" => duration_ms = Some(val()?.parse().map_err(|_| "--duration-ms")?),
            "--wss" => opts.wss_bytes = Some(parse_size(&val()?)?),
            "--scratch" => opts.scratch_dir = val()?.into(),
            "--disk-size" => opts.disk_bytes = parse_size(&val()?)?,
            "--groups" => opts.hackbench_groups = val()?.parse().map_err(|_| "--groups")?,
            "--fds" => opts.hackbench_fds = val()?.parse().map_err(|_| "--fds")?,
            "--port" => opts.net_port = val()?.parse().map_err(|_| "--port")?,
            "--veth" => opts.net_veth = true,
            "--" => {
                opts.exec_argv = args.by_ref().collect();
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    // The handler only stores to an atomic.
    rtscope_sys::signals::install(rtscope_sys::Signal::SIGINT, on_signal);
    rtscope_sys::signals::install(rtscope_sys::Signal::SIGTERM, on_signal);
    let loads = start(&kinds, &opts).map_err(|e| e.to_string())?;
    let workers: Vec<String> = loads.worker_pids().iter().map(|p| p.to_string()).collect();
    println!(
        "READY sup={} workers={} scratch={} port={}",
        loads.supervisor_pid(),
        workers.join(","),
        loads
            .scratch_path()
            .map_or("-".to_string(), |p| p.display().to_string()),
        loads.net_port().unwrap_or(0)
    );
    let t0 = std::time::Instant::now();
    while !STOP.load(Ordering::SeqCst)
        && duration_ms.is_none_or(|d| t0.elapsed().as_millis() < d as u128)
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    for r in loads.stop() {
        for (k, v) in &r.figures {
            println!("FIGURE {} {k} {v}", r.kind);
        }
        for w in &r.warnings {
            println!("WARNING {} {w}", r.kind);
        }
    }
    println!("DONE");
    Ok(())
}
