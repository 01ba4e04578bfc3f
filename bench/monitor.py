#!/usr/bin/env python3
"""What `rtscope monitor` costs the machine it watches (docs/fleet.md).

overhead: cyclictest (SCHED_FIFO 95, one pinned thread per CPU, 1 ms, -m, cpu_dma_latency 0)
          alone vs with a monitor running beside it (SCHED_FIFO 94 threads on the same CPUs at
          its default 1 ms, scraped every second), in interleaved pairs whose order alternates.
          Prints per pair cyclictest's average and maximum, and the median over pairs of the
          ratios with/without monitor. The monitor's own latency is not the subject: it is the
          cost to the latency a real-time task sees.
scrape:   N scrapes of a running monitor's /metrics back to back: wall time per scrape, bytes,
          and the monitor process's CPU time per scrape (/proc/PID/stat utime+stime before and
          after, minus the same interval without scrapes).
memory:   the monitor's VmRSS every minute for --minutes (flat = constant memory).

Take it on a quiet machine: the load average is printed before and after each part.

usage: bench/monitor.py overhead [--pairs 5] [--seconds 20]
       bench/monitor.py scrape [--scrapes 500]
       bench/monitor.py memory [--minutes 60]
"""
import argparse, json, os, socket, statistics, subprocess, sys, tempfile, time

import provenance

RTSCOPE = os.environ.get("RTSCOPE", os.path.join(os.path.dirname(__file__), "..", "target", "release", "rtscope"))


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def scrape(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return out


def start_monitor(tmp, extra=(), store=False):
    port = free_port()
    keep = ["--db", os.path.join(tmp, "results.db")] if store else ["--no-store"]
    p = subprocess.Popen([RTSCOPE, "monitor", "--listen", f"127.0.0.1:{port}", *keep, "-q",
                          "--priority", "94", *extra],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=dict(os.environ, XDG_DATA_HOME=tmp))
    for _ in range(100):
        try:
            if scrape(port).startswith(b"HTTP/1.1 200"):
                return p, port
        except OSError:
            pass
        time.sleep(0.1)
    p.kill()
    sys.exit("monitor did not come up")


def stop(p):
    p.terminate()
    try:
        p.wait(20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def cyclictest(secs, out):
    subprocess.run(["cyclictest", "-m", "-S", "-p95", "-i1000", "-d0", f"-D{secs}", "-q",
                    f"--json={out}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    j = json.load(open(out))
    th = list(j["thread"].values())
    n = sum(int(t["cycles"]) for t in th)
    avg = sum(float(t["avg"]) * int(t["cycles"]) for t in th) / max(n, 1)
    mx = max(int(t["max"]) for t in th)
    return avg, mx


def overhead(a):
    print(f"# load average before: {loadavg()}")
    ratios_avg, ratios_max = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.pairs):
            res = {}
            for with_monitor in ([False, True] if i % 2 == 0 else [True, False]):
                mon = None
                if with_monitor:
                    mon, port = start_monitor(tmp)
                    stop_scraper = [False]
                    import threading

                    def scraper():
                        while not stop_scraper[0]:
                            try:
                                scrape(port)
                            except OSError:
                                pass
                            time.sleep(1)
                    t = threading.Thread(target=scraper)
                    t.start()
                res[with_monitor] = cyclictest(a.seconds, os.path.join(tmp, "c.json"))
                if mon:
                    stop_scraper[0] = True
                    t.join()
                    stop(mon)
            (a0, m0), (a1, m1) = res[False], res[True]
            ratios_avg.append(a1 / a0)
            ratios_max.append(m1 / m0)
            print(f"pair {i}: cyclictest alone avg {a0:.2f} us max {m0} us | with monitor avg {a1:.2f} us max {m1} us | ratio avg {a1 / a0:.3f} max {m1 / m0:.3f}")
    print(f"median ratio (with monitor / alone): avg {statistics.median(ratios_avg):.3f}, max {statistics.median(ratios_max):.3f}")
    print(f"# load average after: {loadavg()}")


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])


def scrape_cost(a):
    print(f"# load average before: {loadavg()}")
    hz = os.sysconf("SC_CLK_TCK")
    with tempfile.TemporaryDirectory() as tmp:
        mon, port = start_monitor(tmp)
        time.sleep(3)
        c0, t0 = cpu_ticks(mon.pid), time.time()
        time.sleep(10)
        idle = (cpu_ticks(mon.pid) - c0) / hz / (time.time() - t0)
        sizes, times = [], []
        c0, t0 = cpu_ticks(mon.pid), time.time()
        for _ in range(a.scrapes):
            s = time.perf_counter()
            body = scrape(port)
            times.append(time.perf_counter() - s)
            sizes.append(len(body))
        wall = time.time() - t0
        busy = (cpu_ticks(mon.pid) - c0) / hz
        stop(mon)
    per = (busy - idle * wall) / a.scrapes
    print(f"{a.scrapes} scrapes: median {statistics.median(times) * 1e3:.2f} ms, p99 {sorted(times)[int(0.99 * len(times))] * 1e3:.2f} ms, {statistics.median(sizes)} bytes")
    print(f"monitor CPU: {idle * 100:.2f} % of a CPU without scrapes; {per * 1e3:.3f} ms CPU per scrape (tick-sampled at {hz} Hz over {busy:.2f} s)")
    print(f"# load average after: {loadavg()}")


def memory(a):
    print(f"# load average before: {loadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        # The record is checkpointed into a store every window, as a service would.
        mon, port = start_monitor(tmp, ["--window", "60s"], store=True)
        print("minute\tVmRSS_kB\tVmHWM_kB\tscrape_bytes")
        for m in range(a.minutes + 1):
            st = dict(l.split(":", 1) for l in open(f"/proc/{mon.pid}/status"))
            n = len(scrape(port))
            print(f"{m}\t{st['VmRSS'].split()[0]}\t{st['VmHWM'].split()[0]}\t{n}", flush=True)
            if m < a.minutes:
                time.sleep(60)
        stop(mon)
    print(f"# load average after: {loadavg()}")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    o = sub.add_parser("overhead")
    o.add_argument("--pairs", type=int, default=5)
    o.add_argument("--seconds", type=int, default=20)
    s = sub.add_parser("scrape")
    s.add_argument("--scrapes", type=int, default=500)
    m = sub.add_parser("memory")
    m.add_argument("--minutes", type=int, default=60)
    a = ap.parse_args()
    provenance.print_header()
    {"overhead": overhead, "scrape": scrape_cost, "memory": memory}[a.what](a)


if __name__ == "__main__":
    main()
