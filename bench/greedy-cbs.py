#!/usr/bin/env python3
"""Lelli 2014 thesis §2.2.3, Fig. 2.5 ("Greedy tasks"): one periodic task (1 ms every 4 ms) and two
greedy tasks (never block, try to take all the CPU) on one CPU, the greedy ones in CBS
reservations of (1 ms, 6 ms) and (1 ms, 10 ms). With SCHED_DEADLINE the periodic task runs at
every activation and never misses, and each greedy task is throttled once it has used its
budget: the reservations isolate the tasks from each other. Run here under each policy:

  deadline  the thesis' set-up: periodic (1.2 ms, 4 ms) — a budget slightly above its 1 ms, so
            it sleeps before exhausting it — greedy 1 (1 ms, 6 ms), greedy 2 (1 ms, 10 ms)
  other     the same three tasks without SCHED_DEADLINE: CFS, nice 0 (the GPOS default)
  fifo      fixed priorities instead of reservations: periodic 90, greedy 1 80, greedy 2 70

A behaviour figure, not a timing one: per task its share of the CPU, the periodic task's
deadline misses and response times, and how often and how long each task was off the CPU, plus
a segment of the schedule as text (one character per 0.5 ms, as the thesis draws it). Each task
is a process (no shared interpreter lock) that records the stretches it ran by reading the
clock in a tight loop: a gap of more than 50 µs between two reads is time off the CPU.

The CPU is made a root domain of its own (SCHED_DEADLINE needs a task's affinity to span its
root domain, sched-deadline.rst §5): cgroup v1, an exclusive cpuset with the root cpuset's load
balancing off for the run (the directory named as `rtscope taskset run` names its own, so that
its clean-up repairs a killed run); cgroup v2, a partition root. Other work on the machine keeps
running on the CPU under v1 (below SCHED_DEADLINE and SCHED_FIFO; beside CFS).

usage: sudo bench/greedy-cbs.py [--cpu N] [--seconds 5] [--policies deadline,other,fifo]
"""
import argparse
import ctypes
import json
import os
import signal
import sys
import time

import provenance

MS = 1_000_000
SCHED_DEADLINE = 6
SYS_SCHED_SETATTR = 314  # x86_64
GAP_NS = 50_000
V1 = "/sys/fs/cgroup/cpuset"
V2 = "/sys/fs/cgroup"

# (name, period ns, job ns or None for greedy, deadline-policy runtime ns, FIFO priority)
TASKS = [
    ("periodic", 4 * MS, 1 * MS, 1_200_000, 90),
    ("greedy1", 6 * MS, None, 1 * MS, 80),
    ("greedy2", 10 * MS, None, 1 * MS, 70),
]


class SchedAttr(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("sched_policy", ctypes.c_uint32),
                ("sched_flags", ctypes.c_uint64), ("sched_nice", ctypes.c_int32),
                ("sched_priority", ctypes.c_uint32), ("sched_runtime", ctypes.c_uint64),
                ("sched_deadline", ctypes.c_uint64), ("sched_period", ctypes.c_uint64)]


def set_deadline(runtime, period):
    libc = ctypes.CDLL(None, use_errno=True)
    a = SchedAttr(ctypes.sizeof(SchedAttr), SCHED_DEADLINE, 0, 0, 0, runtime, period, period)
    if libc.syscall(SYS_SCHED_SETATTR, 0, ctypes.byref(a), 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"sched_setattr(SCHED_DEADLINE {runtime}/{period} ns): {os.strerror(e)}")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read().strip()


class RootDomain:
    """CPU `cpu` as a root domain of its own for the run; undone by close()."""

    def __init__(self, cpu):
        self.restore_lb = None
        self.added_cpuset = False
        if os.path.isfile(f"{V1}/cpuset.cpus"):
            lb = read(f"{V1}/cpuset.sched_load_balance")
            self.dir = f"{V1}/rtscope-taskset-{os.getpid()}-lb{lb}-0"
            self.tasks = f"{self.dir}/tasks"
            os.mkdir(self.dir)
            write(f"{self.dir}/cpuset.cpus", str(cpu))
            write(f"{self.dir}/cpuset.mems", read(f"{V1}/cpuset.mems"))
            write(f"{self.dir}/cpuset.cpu_exclusive", "1")
            if lb != "0":
                write(f"{V1}/cpuset.sched_load_balance", "0")
                self.restore_lb = lb
        elif os.path.isfile(f"{V2}/cgroup.subtree_control"):
            if "cpuset" not in read(f"{V2}/cgroup.subtree_control").split():
                write(f"{V2}/cgroup.subtree_control", "+cpuset")
                self.added_cpuset = True
            self.dir = f"{V2}/rtscope-greedy-{os.getpid()}"
            self.tasks = f"{self.dir}/cgroup.procs"
            os.mkdir(self.dir)
            write(f"{self.dir}/cpuset.cpus", str(cpu))
            write(f"{self.dir}/cpuset.cpus.partition", "root")
            state = read(f"{self.dir}/cpuset.cpus.partition")
            if state != "root":
                self.close()
                sys.exit(f"greedy-cbs: cpuset.cpus.partition of CPU {cpu} reads '{state}'")
        else:
            sys.exit("greedy-cbs: no cpuset cgroup hierarchy (v1 at /sys/fs/cgroup/cpuset or v2)")

    def close(self):
        for _ in range(50):
            try:
                os.rmdir(self.dir)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)
        if self.restore_lb is not None:
            write(f"{V1}/cpuset.sched_load_balance", self.restore_lb)
        if self.added_cpuset:
            try:
                write(f"{V2}/cgroup.subtree_control", "-cpuset")
            except OSError:
                pass


def task(spec, policy, tasks_file, t0, t_end, out):
    name, period, job, runtime, prio = spec
    write(tasks_file, str(os.getpid()))
    if policy == "deadline":
        set_deadline(runtime, period)
    elif policy == "fifo":
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))
    now = time.monotonic_ns
    time.sleep(max(0, t0 - now()) / 1e9)
    runs, jobs = [], []  # [start, end] on the CPU; (release, start, finish)
    start = last = now()

    def spin_until(stop):
        nonlocal start, last
        while True:
            t = now()
            if t - last > GAP_NS:
                runs.append((start, last))
                start = t
            last = t
            if stop(t):
                return t

    cpu0 = time.thread_time_ns()
    if job is None:
        spin_until(lambda t: t >= t_end)
    else:
        k = 0
        while t0 + k * period < t_end:
            release = t0 + k * period
            if now() < release:
                runs.append((start, last))
                time.sleep((release - now()) / 1e9)
                start = last = now()
            s = now()
            c0 = time.thread_time_ns()
            f = spin_until(lambda t: time.thread_time_ns() - c0 >= job)
            jobs.append((release, s, f))
            k += 1  # a release already past starts at once: the job is late, not skipped
    runs.append((start, last))
    cpu = time.thread_time_ns() - cpu0
    with open(out, "w") as fh:
        json.dump({"name": name, "runs": runs, "jobs": jobs, "cpu_ns": cpu}, fh)


def one_policy(policy, cpu, seconds, tmp):
    rd = RootDomain(cpu)
    pids = []
    try:
        t0 = time.monotonic_ns() + 300 * MS
        t_end = t0 + int(seconds * 1e9)
        for i, spec in enumerate(TASKS):
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    task(spec, policy, rd.tasks, t0, t_end, f"{tmp}/{policy}-{i}.json")
                except Exception as e:  # the child's error goes to the parent's report
                    print(f"greedy-cbs: {policy}/{spec[0]}: {e}", file=sys.stderr)
                    code = 1
                os._exit(code)
            pids.append(pid)
        failed = [p for p in pids if os.waitpid(p, 0)[1] != 0]
    finally:
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
                os.waitpid(p, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        rd.close()
    if failed:
        sys.exit(f"greedy-cbs: {policy}: {len(failed)} task(s) failed")
    return t0, t_end, [json.load(open(f"{tmp}/{policy}-{i}.json")) for i in range(len(TASKS))]


def report(policy, t0, t_end, res):
    wall = t_end - t0
    print(f"\n## {policy}\n")
    print("| task | CPU share % | jobs | missed | response p50 / max ms | off-CPU gaps | longest gap ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in res:
        runs = [(a, b) for a, b in r["runs"] if b > t0]
        gaps = [b2 - a1 for (_, a1), (b2, _) in zip(runs, runs[1:])]
        jobs = r["jobs"]
        period = next(s[1] for s in TASKS if s[0] == r["name"])
        miss = sum(1 for rel, _, f in jobs if f > rel + period)
        resp = sorted(f - rel for rel, _, f in jobs)
        rtxt = f"{resp[len(resp) // 2] / MS:.2f} / {resp[-1] / MS:.2f}" if resp else "—"
        print(f"| {r['name']} | {100 * r['cpu_ns'] / wall:.1f} | {len(jobs) or '—'} | "
              f"{miss if jobs else '—'} | {rtxt} | {len(gaps)} | {max(gaps, default=0) / MS:.2f} |")
    # A 60 ms segment of the schedule 1 s into the run, 0.5 ms per character: the task that ran
    # most of the slot, '.' when none of the three did.
    seg0, slot, n = t0 + 1000 * MS, MS // 2, 120
    print(f"\nSchedule, {n // 2} ms from 1 s into the run (one character = 0.5 ms; "
          "'#' running, '.' not):\n\n```")
    for r in res:
        line = []
        for i in range(n):
            a, b = seg0 + i * slot, seg0 + (i + 1) * slot
            on = sum(max(0, min(b, y) - max(a, x)) for x, y in r["runs"] if y > a and x < b)
            line.append("#" if on * 2 >= slot else ".")
        print(f"{r['name']:<9} {''.join(line)}")
    print("```")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpu", type=int, default=os.cpu_count() - 1)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--policies", default="deadline,other,fifo")
    a = ap.parse_args()
    pols = a.policies.split(",")
    bad = [p for p in pols if p not in ("deadline", "other", "fifo")]
    if bad:
        ap.error(f"--policies: {','.join(bad)} not one of deadline, other, fifo")
    if not 1 <= a.seconds <= 600:
        ap.error(f"--seconds: {a.seconds:g} is out of range (1..=600)")
    if not 0 <= a.cpu < os.cpu_count():
        ap.error(f"--cpu: {a.cpu} is out of range (0..={os.cpu_count() - 1})")
    if os.geteuid() != 0:
        sys.exit("greedy-cbs: needs root (SCHED_DEADLINE, SCHED_FIFO, cpusets)")
    provenance.print_header()
    print(f"# CPU {a.cpu}, {a.seconds:g} s per policy; tasks (name, period, job or greedy, "
          "SCHED_DEADLINE runtime, FIFO priority):")
    for s in TASKS:
        print(f"#   {s[0]}: {s[1] / MS:g} ms, {'greedy' if s[2] is None else f'{s[2] / MS:g} ms'}, "
              f"{s[3] / MS:g} ms, {s[4]}")
    tmp = f"/tmp/rtscope-greedy-cbs.{os.getpid()}"
    os.makedirs(tmp)
    try:
        for p in pols:
            report(p, *one_policy(p, a.cpu, a.seconds, tmp))
    finally:
        for f in os.listdir(tmp):
            os.unlink(f"{tmp}/{f}")
        os.rmdir(tmp)
    print(f"\n# load average after: {' '.join(read('/proc/loadavg').split()[:3])}")


if __name__ == "__main__":
    main()
