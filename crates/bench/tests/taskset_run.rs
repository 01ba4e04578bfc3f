//! Real-kernel runs of small task sets (2 s each) under SCHED_DEADLINE (global and partitioned),
//! SCHED_FIFO and SCHED_OTHER, and cpuset clean-up after SIGINT and SIGKILL. Needs root.

use rtscope_analysis::sched::{Fit, KernelLimits, PriorityOrder};
use rtscope_bench::taskset::{
    self as ts, cpuset, work::Access, PlacementKind, PolicyKind, RunOptions, TasksetError,
};
use rtscope_model::taskset::{Task, TaskSet};
use rtscope_testkit::{is_root as root, serial};
use std::time::Duration;

fn small_set() -> TaskSet {
    // U = 1/10 + 2/20 + 3/50 + 2/40 = 0.1 + 0.1 + 0.06 + 0.05 = 0.31
    let t = |id, c_ms: u64, t_ms: u64| Task {
        id,
        wcet_ns: c_ms * 1_000_000,
        period_ns: t_ms * 1_000_000,
        deadline_ns: t_ms * 1_000_000,
        wss_bytes: None,
        name: None,
    };
    TaskSet {
        schema_version: 1,
        tasks: vec![t(0, 1, 10), t(1, 2, 20), t(2, 3, 50), t(3, 2, 40)],
        generated: None,
    }
}

fn opts(cpus: &[u32], secs: f64) -> RunOptions {
    RunOptions {
        duration_ns: (secs * 1e9) as u64,
        wss_bytes: 16 * 1024,
        access: Access::Sequential,
        seed: 1,
        inflate_ns: 0,
        probe_admission: false,
        cpus: cpus.to_vec(),
        source: "test".into(),
        dl_overrun_signal: true,
        work_by_cputime: true,
        admission: None,
    }
}

const LIM: KernelLimits = KernelLimits {
    limit_per_cpu: 0.95,
    fair_server_per_cpu: 0.05,
    other_bandwidth: 0.0,
};

fn cpus() -> Vec<u32> {
    rtscope_probe::sys::online_cpus().unwrap_or_else(|_| vec![0])
}

fn run_or_skip(
    policy: PolicyKind,
    placement: PlacementKind,
) -> Option<rtscope_model::taskset::TasksetResult> {
    let set = small_set();
    let c = cpus();
    let plan = ts::plan(&set, policy, placement, 1.2, &c, LIM).expect("plan");
    match ts::run(&plan, &opts(&c, 2.0), &set) {
        Ok(r) => Some(r),
        Err(TasksetError::Admission(m)) => {
            // The machine is shared: another tenant can hold the DEADLINE bandwidth for a while.
            rtscope_testkit::skipped(format_args!("DEADLINE admission refused right now: {m}"));
            None
        }
        Err(e) => panic!("run failed: {e}"),
    }
}

fn check_common(r: &rtscope_model::taskset::TasksetResult, policy: &str) {
    assert_eq!(r.tasks.len(), 4);
    for t in &r.tasks {
        assert_eq!(t.policy, policy, "task {} observed policy", t.id);
        // 2 s of a 10..50 ms period: 200, 100, 40, 50 jobs (±1 at the window edges).
        let expect = 2_000_000_000 / t.period_ns;
        assert!(
            t.jobs + 1 >= expect && t.jobs <= expect + 1,
            "task {}: {} jobs, expected {expect}",
            t.id,
            t.jobs
        );
        assert!(t.max_response_ns >= t.wcet_ns, "response ≥ C");
        // work by CPU time: each job used at least C of CPU time.
        assert!(t.avg_exec_ns >= t.wcet_ns as f64);
    }
    // U = 0.31 measured within 0.31 … 0.45 (per-job overhead, debug build).
    assert!(
        r.measured_utilisation > 0.30 && r.measured_utilisation < 0.45,
        "{}",
        r.measured_utilisation
    );
    assert!(!r.calibration.is_empty() && r.calibration[0].ns_per_element_end.is_some());
    assert!(cpuset::ours().is_empty(), "cpusets left behind");
}

/// Per-task misses, lateness and overruns, for a failure message.
fn per_task(r: &rtscope_model::taskset::TasksetResult) -> String {
    let mut s = String::new();
    for t in &r.tasks {
        s += &format!(
            "[task {} jobs {} misses {} ({} after overrun) max_late {} ns max_resp {} ns max_exec {} ns overruns {}] ",
            t.id,
            t.jobs,
            t.misses,
            t.misses_after_overrun,
            t.max_lateness_ns,
            t.max_response_ns,
            t.max_exec_ns,
            t.dl_overruns
        );
    }
    let w: Vec<&str> = r.warnings.iter().map(|w| w.message.as_str()).collect();
    s + &w.join("; ")
}

#[test]
fn deadline_global_run() {
    if !root() {
        rtscope_testkit::skipped("needs root");
        return;
    }
    let _g = serial();
    // U = 0.31 on ≥ 1 CPU with runtime margin 1.2: EDF meets every deadline of a reservation
    // that is never overdrawn. A vCPU stall while a reservation runs is charged to its runtime
    // (SIGXCPU, delivered up to a tick later) and CBS throttles it for several periods, so one
    // stall costs a 10 ms task a dozen jobs; the stall also delays every other task by its
    // length. What EDF is answerable for is the misses that no overrun explains: those must stay
    // rare. Overruns themselves must stay a minority of jobs: a runtime set below the job length
    // (a planning bug) would overrun nearly every job. A run outside either bound is repeated at
    // most three times, since one long stall can delay every task at once.
    let mut last = String::new();
    for attempt in 1..=3 {
        let Some(r) = run_or_skip(PolicyKind::Deadline, PlacementKind::Global) else {
            return;
        };
        check_common(&r, "deadline");
        assert!(r.predictions.iter().any(|p| p.test == "kernel-admission"));
        for t in &r.tasks {
            assert!(t.misses_after_overrun <= t.misses);
            assert!(t.misses_after_overrun == 0 || t.dl_overruns > 0);
        }
        if r.miss_pct < 2.0 {
            return;
        }
        let jobs: u64 = r.tasks.iter().map(|t| t.jobs).sum();
        let unexplained: u64 = r
            .tasks
            .iter()
            .map(|t| t.misses - t.misses_after_overrun)
            .sum();
        let explained = r.tasks.iter().any(|t| t.misses_after_overrun > 0);
        assert!(
            !explained
                || r.warnings
                    .iter()
                    .any(|w| w.code == rtscope_model::WarningCode::DeadlineOverrun
                        && w.message.contains("after a runtime overrun")),
            "overrun misses not explained: {:?}",
            r.warnings
        );
        let unexplained_pct = 100.0 * unexplained as f64 / jobs.max(1) as f64;
        let overrun_pct = 100.0 * r.total_dl_overruns as f64 / jobs.max(1) as f64;
        println!(
            "attempt {attempt}: {:.1} % misses, {unexplained_pct:.1} % with no overrun, \
             {overrun_pct:.1} % of jobs overran: {}",
            r.miss_pct,
            per_task(&r)
        );
        if unexplained_pct < 2.0 && overrun_pct < 25.0 {
            return;
        }
        last = per_task(&r);
    }
    panic!("three runs in a row with misses EDF should not have: {last}");
}

#[test]
fn deadline_partitioned_run_uses_and_removes_cpusets() {
    if !root() {
        rtscope_testkit::skipped("needs root");
        return;
    }
    if !matches!(cpuset::detect(), Some(cpuset::Hierarchy::V1(_))) {
        rtscope_testkit::skipped("no cgroup v1 cpuset hierarchy mounted");
        return;
    }
    let _g = serial();
    let lb_before = std::fs::read_to_string("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance")
        .unwrap_or_default();
    let Some(r) = run_or_skip(
        PolicyKind::Deadline,
        PlacementKind::Partitioned(Fit::WorstFit),
    ) else {
        return;
    };
    check_common(&r, "deadline");
    for t in &r.tasks {
        assert_eq!(t.cpus.len(), 1);
        assert_eq!(t.migrations, Some(0), "partitioned task {} migrated", t.id);
    }
    let lb_after = std::fs::read_to_string("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance")
        .unwrap_or_default();
    assert_eq!(lb_before, lb_after, "root sched_load_balance restored");
}

#[test]
fn fifo_partitioned_rm_run() {
    if !root() {
        rtscope_testkit::skipped("needs root");
        return;
    }
    let _g = serial();
    let Some(r) = run_or_skip(
        PolicyKind::Fifo(PriorityOrder::RateMonotonic),
        PlacementKind::Partitioned(Fit::FirstFit),
    ) else {
        return;
    };
    check_common(&r, "fifo");
    // RM: the 10 ms task gets the top priority (90), then 20 ms (89), 40 ms (88), 50 ms (87).
    let prio: Vec<i32> = r.tasks.iter().map(|t| t.priority).collect();
    assert_eq!(prio, vec![90, 89, 87, 88]);
    // First fit on U = 0.31: everything on the first CPU.
    assert!(r.tasks.iter().all(|t| t.cpus == r.tasks[0].cpus));
    assert!(r.tasks.iter().all(|t| t.migrations == Some(0)));
    assert!(r.predictions.iter().any(|p| p.test == "rta-rm"));
}

#[test]
fn other_cfs_run() {
    if !root() {
        rtscope_testkit::skipped("needs root");
        return;
    }
    let _g = serial();
    let Some(r) = run_or_skip(PolicyKind::Other, PlacementKind::Global) else {
        return;
    };
    // CFS shares the CPUs with whatever else runs: only the bookkeeping is checked strictly.
    assert_eq!(r.tasks.len(), 4);
    assert!(r.tasks.iter().all(|t| t.policy == "other" && t.jobs >= 39));
    assert!(cpuset::ours().is_empty());
}

/// Child half of the signal tests: a 20 s partitioned DEADLINE run, stopped by the parent.
#[test]
fn child_long_partitioned_run() {
    if std::env::var("RTSCOPE_TASKSET_CHILD").is_err() {
        return; // only meaningful when spawned by the tests below
    }
    // Die (through the SIGTERM handler, so cpusets are removed) if the test harness dies.
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) };
    let set = small_set();
    let c = cpus();
    let plan = ts::plan(
        &set,
        PolicyKind::Deadline,
        PlacementKind::Partitioned(Fit::WorstFit),
        1.2,
        &c,
        LIM,
    )
    .expect("plan");
    let r = ts::run(&plan, &opts(&c, 20.0), &set).expect("run");
    assert!(r.interrupted);
    println!("CHILD-INTERRUPTED jobs={}", r.total_jobs);
}

fn spawn_child() -> std::process::Child {
    let exe = std::env::current_exe().expect("test exe");
    std::process::Command::new(exe)
        .args([
            "--exact",
            "child_long_partitioned_run",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RTSCOPE_TASKSET_CHILD", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn child")
}

fn wait_for_cpusets(present: bool, secs: u64) -> bool {
    let t0 = std::time::Instant::now();
    while t0.elapsed().as_secs() < secs {
        if cpuset::ours().is_empty() != present {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

#[test]
fn cpusets_removed_after_sigint() {
    if !root() || !matches!(cpuset::detect(), Some(cpuset::Hierarchy::V1(_))) {
        rtscope_testkit::skipped("needs root and a cgroup v1 cpuset hierarchy");
        return;
    }
    let _g = serial();
    let lb_before = std::fs::read_to_string("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance")
        .unwrap_or_default();
    let child = spawn_child();
    assert!(
        wait_for_cpusets(true, 10),
        "child never created its cpusets"
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = std::time::Instant::now();
    let out = child.wait_with_output().expect("wait");
    // Stop is checked before each job (periods ≤ 50 ms) plus recalibration: well under 3 s.
    assert!(
        t0.elapsed().as_secs_f64() < 3.0,
        "child took {:?} to stop",
        t0.elapsed()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("CHILD-INTERRUPTED"),
        "child output: {stdout}"
    );
    assert!(cpuset::ours().is_empty(), "cpusets left after SIGINT");
    let lb_after = std::fs::read_to_string("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance")
        .unwrap_or_default();
    assert_eq!(lb_before, lb_after);
}

#[test]
fn stale_cpusets_removed_after_sigkill() {
    if !root() || !matches!(cpuset::detect(), Some(cpuset::Hierarchy::V1(_))) {
        rtscope_testkit::skipped("needs root and a cgroup v1 cpuset hierarchy");
        return;
    }
    let _g = serial();
    let lb_before = std::fs::read_to_string("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance")
        .unwrap_or_default();
    let mut child = spawn_child();
    assert!(
        wait_for_cpusets(true, 10),
        "child never created its cpusets"
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let _ = child.kill(); // SIGKILL: no handler runs
    let _ = child.wait();
    // The dead child's directories stay until the next run cleans them.
    let notes = cpuset::remove_stale();
    assert!(
        notes.iter().any(|n| n.contains("removed stale cpuset")),
        "{notes:?}"
    );
    assert!(cpuset::ours().is_empty());
    let lb_after = std::fs::read_to_string("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance")
        .unwrap_or_default();
    assert_eq!(
        lb_before, lb_after,
        "sched_load_balance restored from the directory name"
    );
}

/// `--cluster-by` on this machine: sysfs names the caches each CPU shares, and the groups of
/// the last-level cache and of the L2 partition the online CPUs.
#[test]
fn topology_clusters_partition_the_online_cpus() {
    use rtscope_bench::taskset::topology::{clusters, read_sharing, Share};
    let cpus = cpus();
    for (share, what) in [
        (Share::Llc, "llc"),
        (Share::L2, "l2"),
        (Share::Numa, "numa"),
    ] {
        let sharing = read_sharing(share, &cpus);
        assert!(
            cpus.iter().all(|c| sharing.contains_key(c)),
            "{what}: {sharing:?}"
        );
        let (groups, size) = clusters(&cpus, &sharing, what).unwrap();
        let mut all = groups.concat();
        all.sort_unstable();
        assert_eq!(all, cpus, "{what}: {groups:?}");
        assert!(size >= 1 && groups.iter().all(|g| g.len() == size as usize));
        println!("{what}: {groups:?}");
    }
}

/// `taskset sweep` on this machine: 2 sets × 2 policies of a partitioned sweep at R = 0.3 per CPU,
/// 0.5 s each, from the flags to the summary. Every run admitted and counted, the table's
/// arithmetic consistent with the runs, the cpusets gone afterwards.
#[test]
fn sweep_runs_every_set_and_policy() {
    if !root() {
        rtscope_testkit::skipped("needs root");
        return;
    }
    let _g = serial();
    #[derive(Debug)]
    struct E(String);
    impl From<TasksetError> for E {
        fn from(e: TasksetError) -> E {
            E(e.to_string())
        }
    }
    impl From<rtscope_bench::common::BenchError> for E {
        fn from(e: rtscope_bench::common::BenchError) -> E {
            E(e.to_string())
        }
    }
    struct Host;
    impl ts::job::Values for Host {
        type Error = E;
        fn cpus(&self, _: &str, _: Option<&str>) -> Result<Vec<u32>, E> {
            Ok(cpus())
        }
        fn read(&self, _: &str, _: &std::path::Path) -> Result<String, E> {
            Ok(String::new())
        }
        fn output_dir(&self, _: &str, _: &std::path::Path) -> Result<(), E> {
            Ok(())
        }
        fn write(&self, _: &std::path::Path, _: &[u8]) -> Result<(), E> {
            Ok(())
        }
        fn require_realtime(&self, _: &str, _: &str) -> Result<(), E> {
            Ok(())
        }
    }
    let f = ts::sweep::SweepFlags {
        placement: "partitioned".into(),
        loads: vec![0.3],
        sets: 2,
        tasks_per_cpu: 2,
        policies: vec!["deadline".into(), "other".into()],
        duration: Duration::from_millis(500),
        seed: 7,
        margin: 1.0,
        margin_add: Duration::from_micros(50),
        work: "cputime".into(),
        cmin: Duration::from_micros(50),
        tmin: Duration::from_millis(10),
        tmax: Duration::from_millis(100),
        wss_kb: 16,
        cpus: None,
        rt_runtime: None,
        fair_server: None,
    };
    let job = ts::sweep::prepare(&f, &Host).unwrap_or_else(|E(e)| panic!("flags: {e}"));
    let mut seen = 0;
    let r = job.run(|_| seen += 1).expect("sweep");
    assert_eq!((seen, r.runs.len()), (4, 4));
    if let Some(x) = r.runs.iter().find(|x| x.status != "ok") {
        rtscope_testkit::skipped(format_args!("the kernel refused a run here: {:?}", x.error));
        return;
    }
    assert_eq!(r.points.len(), 2);
    for p in &r.points {
        let here: Vec<_> = r.runs.iter().filter(|x| x.policy == p.policy).collect();
        assert_eq!(p.sets, 2);
        assert_eq!(p.jobs, here.iter().map(|x| x.jobs).sum::<u64>());
        assert_eq!(p.misses, here.iter().map(|x| x.misses).sum::<u64>());
        let mean = here.iter().map(|x| x.miss_pct).sum::<f64>() / 2.0;
        assert!((p.mean_miss_pct - mean).abs() < 1e-9);
        assert!(p.ci95_half_pct.is_some());
    }
    for x in &r.runs {
        // 0.5 s with periods ≤ 100 ms: every task has ≥ 5 jobs.
        assert!(x.jobs >= 5 * 2 * cpus().len() as u64, "{x:?}");
        assert!((x.utilisation - 0.3 * cpus().len() as f64).abs() < 1e-6);
        assert!(x.max_exec_over_c >= 0.99, "cputime jobs use C: {x:?}");
    }
    assert!(r.kernel_settings.is_empty() && !r.interrupted);
    assert!(cpuset::ours().is_empty(), "cpusets left behind");
}
