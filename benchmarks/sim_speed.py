"""The simulator's speed targets (issue: one simulator for every policy), each in a fresh child process.

* the full Alibaba trace (7,255 replayed pods on 1,523 nodes) under each flat policy: target <= 5 s;
* TPC-H mixes under ``carbyne`` (and ``drf-dag``, ``sjf``): target 175,000 tasks <= 30 s. Sizes are run
  smallest first, and a size is skipped once the previous one's per-task time projects it past
  ``--cap`` seconds (the projection is printed instead);
* a Google-like day on 2,000 machines of the real Google 2011 table with a SYNTHETIC task stream (the real
  task events are not available): target 1e6 tasks <= 60 s under ``first-fit``.

Every figure is the whole ``solver.api.simulate`` call (simulation, schedule, timeline, independent
verification) measured in its own process, so imports and earlier runs do not count; generation is timed
apart. The machine is shared: the load is saved beside every figure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from benchmarks._common import load_line, machine_state, parser, save


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
kind, size, policy, data = sys.argv[1], int(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
started = time.perf_counter()
trace = None
if kind == "alibaba":
    from models.generators.clusters import alibaba_servers
    from models.traces import read_trace
    from models.types import Instance
    instance = Instance(("cpu", "mem", "gpu"), alibaba_servers(data), name="alibaba-nodes")
    trace = read_trace(data / "alibaba" / "gpu-v2023" / "openb_pod_list_default.csv", instance.resources)
elif kind == "tpch":
    from models.generators.families import FAMILIES
    instance = FAMILIES["tpch"].instance({"queries": size, "executors": 100}, 1, data)
else:
    from models.generators.arrivals import google_day
    instance = google_day(data, 1, tasks=size)
generate_s = time.perf_counter() - started
from solver.api import simulate
started = time.perf_counter()
result = simulate(instance, policy, trace)
wall = time.perf_counter() - started
jobs = instance.jobs if trace is None else trace.jobs
tasks = sum(s.tasks for j in jobs for s in j.stages)
print(json.dumps({"tasks": tasks, "generate_s": generate_s, "simulate_s": wall, "verified": bool(result.verified),
                  "status": result.status, "events": result.extra.get("events"),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(kind: str, size: int, policy: str, data_dir: str, timeout: float) -> dict[str, Any]:
    load = _load()
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, kind, str(size), policy, data_dir], capture_output=True,
                              text=True, timeout=timeout, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"kind": kind, "size": size, "policy": policy, "status": f"killed after {timeout:.0f} s", "load": load}
    if done.returncode != 0:
        return {"kind": kind, "size": size, "policy": policy, "status": "error", "load": load,
                "message": done.stderr.strip().splitlines()[-1:] }  # fmt: skip
    row = {"kind": kind, "size": size, "policy": policy, **json.loads(done.stdout.strip().splitlines()[-1])}
    row["load"] = load
    row["us_per_task"] = 1e6 * row["simulate_s"] / max(row["tasks"], 1)
    print(f"{kind} {size} {policy}: {row['tasks']:,} tasks, {row['simulate_s']:.2f} s "
          f"({row['us_per_task']:.0f} us/task), verified {row['verified']}, load {load}", flush=True)
    return row


def _ladder(kind: str, sizes: list[int], policy: str, data_dir: str, cap: float) -> list[dict[str, Any]]:
    """Sizes smallest first; stop once the per-task time projects the next size past ``cap`` seconds."""
    rows: list[dict[str, Any]] = []
    for size in sizes:
        if rows and "us_per_task" in rows[-1]:
            projected = rows[-1]["us_per_task"] * 1e-6 * rows[-1]["tasks"] * size / rows[-1]["size"]
            if projected > cap:
                rows.append({"kind": kind, "size": size, "policy": policy, "status": "skipped",
                             "projected_s": projected, "load": _load()})  # fmt: skip
                print(f"{kind} {size} {policy}: skipped, projected {projected:.0f} s (linear in tasks)", flush=True)
                continue
        rows.append(_child(kind, size, policy, data_dir, timeout=3 * cap))
    return rows


def main() -> None:
    parse = parser(__doc__.splitlines()[0])
    parse.add_argument("--cap", type=float, default=300.0, help="longest run attempted (seconds, projected)")
    parse.add_argument("--tpch-queries", type=int, nargs="+", default=[10, 40, 200],
                       help="TPC-H mix sizes (queries; 200 queries of 2g is about 175,000 tasks)")
    parse.add_argument("--google-tasks", type=int, nargs="+", default=[100_000, 1_000_000])
    parse.add_argument("--only", choices=["alibaba", "tpch", "google"], nargs="+",
                       default=["alibaba", "tpch", "google"])  # fmt: skip
    args = parse.parse_args()
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    if "alibaba" in args.only:
        for policy in ("fifo", "first-fit", "best-fit", "slots", "per-server-drf"):
            rows.append(_child("alibaba", 0, policy, args.data_dir, timeout=3 * args.cap))
    if "tpch" in args.only:
        for policy in ("sjf", "drf-dag", "carbyne"):
            rows += _ladder("tpch", args.tpch_queries, policy, args.data_dir, args.cap)
    if "google" in args.only:
        for policy in ("first-fit", "best-fit"):
            rows += _ladder("google", args.google_tasks, policy, args.data_dir, args.cap)
    lines = ["# Simulator speed", "", f"{load_line()} Total {time.perf_counter() - started:.0f} s; the last column is "
             "the 1-minute load when the row started.",
             "Each row is one `solver.api.simulate` call (simulation, schedule, timeline, verification) in a "
             "fresh process; the Google day's task stream is synthetic on the real Google 2011 machines.", "",
             "| workload | policy | tasks | simulate (s) | us/task | verified | peak MB | load |",
             "|---|---|---:|---:|---:|---|---:|---|"]  # fmt: skip
    for row in rows:
        if "simulate_s" in row:
            lines.append(f"| {row['kind']} {row['size'] or ''} | {row['policy']} | {row['tasks']:,} | "
                         f"{row['simulate_s']:.2f} | {row['us_per_task']:.0f} | {row['verified']} | "
                         f"{row['peak_rss_mb']:.0f} | {row['load']} |")  # fmt: skip
        else:
            note = f"projected {row['projected_s']:.0f} s" if "projected_s" in row else row["status"]
            lines.append(f"| {row['kind']} {row['size']} | {row['policy']} | - | {note} | | | | {row['load']} |")
    save("sim_speed", {"machine": machine_state(), "rows": rows}, "\n".join(lines), args.out)


if __name__ == "__main__":
    main()
