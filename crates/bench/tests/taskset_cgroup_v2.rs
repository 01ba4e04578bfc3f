//! Partitioned SCHED_DEADLINE on cgroup v2 cpuset partitions, on a real kernel under QEMU (TCG):
//! where the host binds the cpuset controller to cgroup v1, the v2 path can only be exercised in
//! a guest that mounts cgroup2 alone (scripts/qemu-run.sh: Debian's stock kernel, busybox
//! initramfs, 4 CPUs). One boot runs four scenarios with the real `rtscope` binary:
//!
//! * A: `--cpus 0-3`, 2 s: the groups cover every CPU, so CPUs 1–3 get threaded partition roots
//!   and CPU 0's group stays in the top cgroup (its own root domain). Admission succeeds, every
//!   task thread runs as SCHED_DEADLINE on its planned CPU, in its partition (sampled from /proc
//!   while it runs); misses are not checked (TCG is slow and overruns).
//! * B: `--cpus 1-3`, SIGTERM after ~1.5 s of a 30 s run: stops quickly, partial results, clean.
//! * C: a foreign cgroup holds CPU 2 non-exclusively: the partition for CPU 2 reads back
//!   `root invalid (<reason>)` and the run fails naming it, leaving nothing behind.
//! * D: SIGKILL mid-run leaves the directories; the next run removes them (dead pid), restores
//!   `cgroup.subtree_control` and is admitted again.
//!
//! After each scenario the guest prints the top cgroup's state (our directories, subtree_control,
//! effective CPUs, partition states, the shell's cgroup) and the test compares it with before.
//! `RTSCOPE_QEMU_KERNEL=6.12` runs the same on Debian's 6.12 kernel; `RTSCOPE_BIN` skips building
//! the binary. Prints `SKIPPED:` only when qemu, busybox or a cached kernel is missing
//! (scripts/setup.sh installs them).

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The rtscope binary for the guest: $RTSCOPE_BIN, else `cargo build -p rtscope-cli` (debug; a
/// no-op when up to date) and the executable cargo reports.
fn rtscope_bin() -> PathBuf {
    if let Ok(p) = std::env::var("RTSCOPE_BIN") {
        return PathBuf::from(p);
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(workspace())
        .args([
            "build",
            "-p",
            "rtscope-cli",
            "--bin",
            "rtscope",
            "--message-format=json",
        ])
        .output()
        .expect("run cargo build -p rtscope-cli");
    assert!(
        out.status.success(),
        "cargo build -p rtscope-cli failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["target"]["name"] == "rtscope")
        .find_map(|v| v["executable"].as_str().map(PathBuf::from))
        .expect("cargo reported no rtscope executable")
}

// Four tasks, U = 0.1 + 0.05 + 0.1 + 0.05 = 0.3, periods 50–100 ms (the TCG guest runs a debug
// build some 10–50× slower than the host). Worst-fit on 4 CPUs: one task per CPU; on CPUs 1–3 the
// fourth task goes to the emptiest bin.
const GUEST: &str = r#"
R=/sys/fs/cgroup
cat > /tmp/set.json <<'J'
{"schema_version":1,"tasks":[
{"id":0,"wcet_ns":5000000,"period_ns":50000000,"deadline_ns":50000000},
{"id":1,"wcet_ns":5000000,"period_ns":100000000,"deadline_ns":100000000},
{"id":2,"wcet_ns":10000000,"period_ns":100000000,"deadline_ns":100000000},
{"id":3,"wcet_ns":4000000,"period_ns":80000000,"deadline_ns":80000000}]}
J
RUN="rtscope taskset run /tmp/set.json --policy deadline --placement partitioned --fit worst --work cputime --no-store"
state() {
  parts=""
  for d in $R/*/; do
    [ -f "$d/cpuset.cpus.partition" ] && parts="$parts$(basename $d)=$(cat $d/cpuset.cpus.partition);"
  done
  echo "STATE $1 dirs=[$(ls $R | grep rtscope-taskset | tr '\n' ' ')] sc=[$(cat $R/cgroup.subtree_control)] topeff=[$(cat $R/cpuset.cpus.effective)] parts=[$parts] self=[$(cat /proc/self/cgroup)]"
}
sample() {
  while kill -0 $1 2>/dev/null; do
    for t in /proc/$1/task/*; do
      c=$(cat $t/comm 2>/dev/null)
      case "$c" in rtscope-task*)
        echo "SAMPLE $c cpu=$(cut -d' ' -f39 $t/stat 2>/dev/null) allowed=$(awk '/^Cpus_allowed_list/{print $2}' $t/status 2>/dev/null) cg=$(cat $t/cgroup 2>/dev/null) $(grep '^policy' $t/sched 2>/dev/null | tr -d ' ')";;
      esac
    done
    sleep 0.2
  done
}
wait_dirs() {
  i=0
  while [ $i -lt 150 ] && ! ls $R | grep -q rtscope-taskset; do sleep 0.1; i=$((i+1)); done
}

state A-before
$RUN --cpus 0-3 --duration 2 --json /tmp/a.json > /tmp/a.out 2>&1 &
p=$!
sample $p
wait $p
echo "A-EXIT=$?"
cat /tmp/a.out
echo JSON-A-BEGIN
cat /tmp/a.json
echo
echo JSON-A-END
state A-after

state B-before
$RUN --cpus 1-3 --duration 30 --json /tmp/b.json > /tmp/b.out 2>&1 &
p=$!
wait_dirs
sleep 1.5
state B-during
t0=$(cut -d' ' -f1 /proc/uptime)
kill -TERM $p
wait $p
rc=$?
t1=$(cut -d' ' -f1 /proc/uptime)
echo "B-EXIT=$rc B-STOP-S=$(awk "BEGIN{print $t1 - $t0}")"
grep -e observed -e warning /tmp/b.out
state B-after

echo +cpuset > $R/cgroup.subtree_control
mkdir $R/blocker
echo 2 > $R/blocker/cpuset.cpus
state C-before
$RUN --cpus 1-3 --duration 1 > /tmp/c.out 2>&1
echo "C-EXIT=$?"
cat /tmp/c.out
state C-after
rmdir $R/blocker
echo -cpuset > $R/cgroup.subtree_control

state D-before
$RUN --cpus 1-3 --duration 30 > /tmp/d.out 2>&1 &
p=$!
wait_dirs
sleep 1
kill -KILL $p
wait $p
echo "D-EXIT=$?"
state D-killed
$RUN --cpus 1-3 --duration 1 > /tmp/d2.out 2>&1
echo "D2-EXIT=$?"
grep -e stale -e subtree_control -e observed -e rror /tmp/d2.out
state D-after
exit 0
"#;

fn line<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("guest printed no line starting with {prefix:?}"))
}

/// `key=[value]` from a STATE line.
fn field(state: &str, key: &str) -> String {
    let k = format!("{key}=[");
    let i = state.find(&k).unwrap_or_else(|| panic!("{key} in {state}")) + k.len();
    let j = state[i..].find(']').map(|j| i + j).unwrap_or(state.len());
    state[i..j].trim().to_string()
}

fn exit_of(out: &str, key: &str) -> i32 {
    let l = line(out, &format!("{key}-EXIT="));
    l[key.len() + 6..]
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(-1)
}

/// The first array under a key "tasks" whose items have "cpus" (the task outcomes).
fn find_tasks(v: &serde_json::Value) -> Option<&Vec<serde_json::Value>> {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(serde_json::Value::Array(a)) = m.get("tasks") {
                if a.first().is_some_and(|t| t.get("cpus").is_some()) {
                    return Some(a);
                }
            }
            m.values().find_map(find_tasks)
        }
        serde_json::Value::Array(a) => a.iter().find_map(find_tasks),
        _ => None,
    }
}

/// The state after a scenario equals the state before it: no directory of ours, the same
/// subtree_control, effective CPUs and partitions, the shell still in the top cgroup.
fn assert_restored(out: &str, before: &str, after: &str) {
    let b = line(out, &format!("STATE {before} "));
    let a = line(out, &format!("STATE {after} "));
    assert_eq!(field(a, "dirs"), "", "{after}: directories left: {a}");
    for k in ["sc", "topeff", "parts", "self"] {
        assert_eq!(
            field(a, k),
            field(b, k),
            "{after}: {k} not restored\n{b}\n{a}"
        );
    }
    assert_eq!(field(a, "topeff"), "0-3", "{a}");
}

#[test]
fn partitioned_deadline_on_cgroup_v2_in_qemu() {
    let script = workspace().join("scripts/qemu-run.sh");
    let check = Command::new(&script)
        .arg("--check")
        .output()
        .expect("run scripts/qemu-run.sh --check");
    let says = String::from_utf8_lossy(&check.stdout).trim().to_string();
    if check.status.code() == Some(3) {
        rtscope_testkit::skipped(format_args!("{says} (scripts/setup.sh installs qemu-system-x86 and busybox-static and fetches the kernel)"));
        return;
    }
    assert!(check.status.success(), "qemu-run.sh --check: {says}");
    println!("{says}");
    let bin = rtscope_bin();
    let t0 = std::time::Instant::now();
    let boot = || {
        let run = Command::new(&script)
            .arg("-f")
            .arg(&bin)
            .args(["-s", "4", "-m", "1G", "-t", "180", "--", GUEST])
            .output()
            .expect("run scripts/qemu-run.sh");
        let out = String::from_utf8_lossy(&run.stdout).to_string();
        println!("{out}");
        eprintln!("{}", String::from_utf8_lossy(&run.stderr));
        (run, out)
    };
    let (mut run, mut out) = boot();
    if !out.contains("RTSCOPE-QEMU-START") {
        // The guest kernel never reached our command: a boot failure, not the code under test.
        println!("guest did not boot (see above); retrying once");
        (run, out) = boot();
    }
    println!("guest wall time {:.1} s", t0.elapsed().as_secs_f64());
    assert_eq!(run.status.code(), Some(0), "guest script failed");
    let start = line(&out, "RTSCOPE-QEMU-START");
    assert!(start.contains("cpus=4"), "{start}");

    // A: admitted, every task on its CPU in its partition (or the top cgroup for CPU 0).
    assert_eq!(exit_of(&out, "A"), 0, "scenario A run failed");
    let a = line(&out, "warning: cgroup v2: threaded partition roots");
    assert!(
        a.contains("[1], [2], [3]") && a.contains("CPUs [0] stay in the top cgroup"),
        "{a}"
    );
    let js = out
        .split("JSON-A-BEGIN")
        .nth(1)
        .and_then(|s| s.split("JSON-A-END").next())
        .expect("JSON of scenario A");
    let v: serde_json::Value = serde_json::from_str(js.trim()).expect("scenario A JSON");
    let tasks = find_tasks(&v).expect("task outcomes in the record");
    assert_eq!(tasks.len(), 4);
    let mut seen = 0;
    for t in tasks {
        let id = t["id"].as_u64().expect("id");
        let cpus: Vec<u64> = t["cpus"]
            .as_array()
            .expect("cpus")
            .iter()
            .filter_map(|c| c.as_u64())
            .collect();
        assert_eq!(cpus.len(), 1, "task {id}: {cpus:?}");
        let cpu = cpus[0];
        assert_eq!(t["policy"], "deadline", "task {id}");
        // 2 s at T = 50..100 ms is 20..40 jobs; TCG may lose some at the window edges.
        let expect = 2_000_000_000 / t["period_ns"].as_u64().expect("period");
        let jobs = t["jobs"].as_u64().expect("jobs");
        assert!(jobs * 2 >= expect, "task {id}: {jobs} jobs of {expect}");
        if let Some(m) = t["migrations"].as_u64() {
            assert_eq!(m, 0, "task {id} migrated");
        }
        let name = format!("SAMPLE rtscope-task{id} ");
        for s in out
            .lines()
            .filter(|l| l.starts_with(&name) && l.ends_with("policy:6"))
        {
            seen += 1;
            assert!(
                s.contains(&format!(" cpu={cpu} ")),
                "task {id} off CPU {cpu}: {s}"
            );
            assert!(
                s.contains(&format!(" allowed={cpu} ")),
                "task {id} affinity: {s}"
            );
            if cpu == 0 {
                assert!(
                    s.contains(" cg=0::/ "),
                    "task {id} should stay in the top cgroup: {s}"
                );
            } else {
                assert!(
                    s.contains(" cg=0::/rtscope-taskset-"),
                    "task {id} cgroup: {s}"
                );
            }
        }
    }
    assert!(
        seen >= 4,
        "only {seen} SCHED_DEADLINE samples of the task threads"
    );
    assert_restored(&out, "A-before", "A-after");

    // B: SIGTERM mid-run: valid partitions while it ran, prompt stop, partial results, clean.
    let during = line(&out, "STATE B-during ");
    let parts = field(during, "parts");
    assert_eq!(
        parts.matches("=root;").count(),
        3,
        "three valid partitions: {during}"
    );
    let b = line(&out, "B-EXIT=");
    assert_eq!(
        exit_of(&out, "B"),
        0,
        "an interrupted run exits 0 like every verb (partial results written): {b}"
    );
    let stop: f64 = b
        .split("B-STOP-S=")
        .nth(1)
        .and_then(|s| s.trim().parse().ok())
        .expect("stop time");
    assert!(stop < 10.0, "took {stop} s to stop after SIGTERM");
    assert_restored(&out, "B-before", "B-after");

    // C: the kernel's reason for an invalid partition is in the error.
    assert_ne!(exit_of(&out, "C"), 0, "scenario C should fail");
    let c = line(&out, "rtscope: ");
    assert!(
        out.contains("cpuset.cpus.partition reads 'root invalid ("),
        "no partition reason in the error: {c}"
    );
    assert_restored(&out, "C-before", "C-after");
    assert_eq!(
        field(line(&out, "STATE C-after "), "sc"),
        "cpuset",
        "pre-existing +cpuset kept"
    );

    // D: SIGKILL leaves the directories; the next run removes them and is admitted.
    let killed = line(&out, "STATE D-killed ");
    assert!(
        !field(killed, "dirs").is_empty(),
        "SIGKILL should leave directories: {killed}"
    );
    assert_eq!(exit_of(&out, "D2"), 0, "run after SIGKILL failed");
    assert!(
        out.contains("removed stale cgroup v2 partition"),
        "no stale clean-up note"
    );
    assert_restored(&out, "D-before", "D-after");
}
