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

``--baseline DIR`` (a source tree of another revision, e.g. ``git archive main | tar -x -C DIR``) runs every
row with that code first and then with this one, back to back, so a before/after ratio is measured under the
same load. Rows not run now (workloads not in ``--only``, policies not in ``--policies``) are kept from the saved
results, with their own load and date.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import load_line, machine_state, parser, save

KINDS = ("alibaba", "tpch", "google")


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
kind, size, policy, data = sys.argv[1], int(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
started = time.perf_counter()
trace = None
if kind == "alibaba":
    from fairpack.models.generators.clusters import alibaba_servers
    from fairpack.models.traces import read_trace
    from fairpack.models.types import Instance
    instance = Instance(("cpu", "mem", "gpu"), alibaba_servers(data), name="alibaba-nodes")
    trace = read_trace(data / "alibaba" / "gpu-v2023" / "openb_pod_list_default.csv", instance.resources)
elif kind == "tpch":
    from fairpack.models.generators.families import FAMILIES
    instance = FAMILIES["tpch"].instance({"queries": size, "executors": 100}, 1, data)
else:
    from fairpack.models.generators.arrivals import google_day
    instance = google_day(data, 1, tasks=size)
generate_s = time.perf_counter() - started
from fairpack.solver.api import simulate
started, cpu = time.perf_counter(), time.process_time()
result = simulate(instance, policy, trace)
wall, cpu = time.perf_counter() - started, time.process_time() - cpu
jobs = instance.jobs if trace is None else trace.jobs
tasks = sum(s.tasks for j in jobs for s in j.stages)
print(json.dumps({"tasks": tasks, "generate_s": generate_s, "simulate_s": wall, "cpu_s": cpu,
                  "verified": bool(result.verified),
                  "status": result.status, "events": result.extra.get("events"),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(kind: str, size: int, policy: str, data_dir: str, timeout: float, code: str | None = None) -> dict[str, Any]:
    """One run in a fresh process, with this checkout's code or (``code``) the source tree of another revision."""
    load = _load()
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([code, *filter(None, [env.get("PYTHONPATH")])])
    try:
        # The child's first import path is its working directory: the baseline's tree for the baseline.
        done = subprocess.run([sys.executable, "-c", CHILD, kind, str(size), policy, str(Path(data_dir).resolve())],
                              capture_output=True, text=True, timeout=timeout, check=False, env=env,
                              cwd=code)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"kind": kind, "size": size, "policy": policy, "status": f"killed after {timeout:.0f} s", "load": load}
    if done.returncode != 0:
        return {"kind": kind, "size": size, "policy": policy, "status": "error", "load": load,
                "message": done.stderr.strip().splitlines()[-1:] }  # fmt: skip
    row = {"kind": kind, "size": size, "policy": policy, **json.loads(done.stdout.strip().splitlines()[-1])}
    row["load"] = load
    row["when"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    row["us_per_task"] = 1e6 * row["simulate_s"] / max(row["tasks"], 1)
    print(f"{kind} {size} {policy}{' (baseline)' if code else ''}: {row['tasks']:,} tasks, {row['simulate_s']:.2f} s "
          f"({row['us_per_task']:.0f} us/task; {row['cpu_s']:.2f} s CPU), verified {row['verified']}, load {load}",
          flush=True)  # fmt: skip
    return row


def _projected(previous: dict[str, Any] | None, size: int, cap: float) -> float | None:
    """The time ``size`` would take at ``previous``'s per-task time, if that is past ``cap`` seconds."""
    if previous is None or "us_per_task" not in previous:
        return None
    projected = float(previous["us_per_task"] * 1e-6 * previous["tasks"] * size / previous["size"])
    return projected if projected > cap else None


def _ladder(kind: str, sizes: list[int], policy: str, data_dir: str, cap: float,
            baseline: str | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Sizes smallest first; stop once the per-task time projects the next size past ``cap`` seconds (each
    code separately: the baseline's rows are kept under the key ``before``)."""
    rows: list[dict[str, Any]] = []
    for size in sizes:
        before = None
        if baseline is not None:
            projected = _projected(rows[-1].get("before") if rows else None, size, cap)
            before = ({"status": "skipped", "projected_s": projected, "load": _load()} if projected is not None
                      else _child(kind, size, policy, data_dir, 3 * cap, baseline))  # fmt: skip
        projected = _projected(rows[-1] if rows else None, size, cap)
        if projected is not None:
            row = {"kind": kind, "size": size, "policy": policy, "status": "skipped", "projected_s": projected,
                   "load": _load()}  # fmt: skip
            print(f"{kind} {size} {policy}: skipped, projected {projected:.0f} s (linear in tasks)", flush=True)
        else:
            row = _child(kind, size, policy, data_dir, timeout=3 * cap)
        if before is not None:
            row["before"] = before
        rows.append(row)
    return rows


def _before(row: dict[str, Any]) -> str:
    """The baseline's figure of a row and the speed-up (blank without a baseline)."""
    before = row.get("before")
    if before is None:
        return " | "
    if "simulate_s" not in before:
        note = f"projected {before['projected_s']:.0f} s" if "projected_s" in before else before.get("status", "")
        return f"{note} | "
    speedup = f"{before['simulate_s'] / row['simulate_s']:.1f}x" if "simulate_s" in row else ""
    if "cpu_s" in before and "cpu_s" in row:
        speedup += f" ({before['cpu_s'] / row['cpu_s']:.1f}x CPU)"
    return f"{_seconds(before)} (load {before['load']}) | {speedup}"


def _seconds(row: dict[str, Any]) -> str:
    """A row's wall seconds, and its CPU seconds where measured (rows saved before they were are wall only)."""
    return f"{row['simulate_s']:.2f}" + (f" / {row['cpu_s']:.2f} CPU" if "cpu_s" in row else "")


def main() -> None:
    parse = parser(__doc__.splitlines()[0])
    parse.add_argument("--cap", type=float, default=300.0, help="longest run attempted (seconds, projected)")
    parse.add_argument("--tpch-queries", type=int, nargs="+", default=[10, 40, 200],
                       help="TPC-H mix sizes (queries; 200 queries of 2g is about 175,000 tasks)")
    parse.add_argument("--google-tasks", type=int, nargs="+", default=[100_000, 1_000_000])
    parse.add_argument("--only", choices=KINDS, nargs="+", default=list(KINDS))
    parse.add_argument("--policies", nargs="+", default=None,
                       help="run only these policies' rows (the other rows of the workloads run are kept)")
    parse.add_argument("--baseline", default=None, help="source tree of another revision, run before every row")
    parse.add_argument("--baseline-label", default="baseline", help="what the baseline is (for the table)")
    args = parse.parse_args()
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    chosen = set(args.policies) if args.policies else None
    policies = {"alibaba": ("fifo", "first-fit", "best-fit", "slots", "per-server-drf"),
                "tpch": ("sjf", "drf-dag", "carbyne"), "google": ("first-fit", "best-fit")}
    sizes = {"alibaba": [0], "tpch": args.tpch_queries, "google": args.google_tasks}
    for kind in KINDS:
        if kind in args.only:
            for policy in policies[kind]:
                if chosen is None or policy in chosen:
                    rows += _ladder(kind, sizes[kind], policy, args.data_dir, args.cap, args.baseline)
    saved = Path(args.out) / "sim_speed.json"
    kept = json.loads(saved.read_text())["rows"] if saved.exists() else []
    ran = {(row["kind"], row["policy"]) for row in rows}
    order = {(kind, policy): i for i, (kind, policy) in
             enumerate((kind, policy) for kind in KINDS for policy in policies[kind])}  # fmt: skip
    rows = sorted([*rows, *(row for row in kept if (row["kind"], row["policy"]) not in ran)],
                  key=lambda row: (order.get((row["kind"], row["policy"]), len(order)), row["size"]))  # table order
    ran_now = ", ".join(args.only) + ("; " + ", ".join(args.policies) if args.policies else "")
    lines = ["# Simulator speed", "", f"{load_line()} Total {time.perf_counter() - started:.0f} s for the rows "
             f"run now ({ran_now}); the other rows are kept from earlier runs. The load column is the "
             "1-minute load when the row started.",
             "Each row is one `solver.api.simulate` call (simulation, schedule, timeline, verification) in a "
             "fresh process; the Google day's task stream is synthetic on the real Google 2011 machines.",
             *([f"Before: the same row run with {args.baseline_label} just before it (same load), for the rows run "
                "now; rows kept from earlier runs keep the baseline of their own run."]
               if args.baseline else []), "",
             "| workload | policy | tasks | simulate (s) | us/task | verified | peak MB | load | when | before (s) | "
             "speed-up |", "|---|---|---:|---:|---:|---|---:|---|---|---:|---:|"]  # fmt: skip
    for row in rows:
        when = row.get("when", "earlier")
        if "simulate_s" in row:
            lines.append(f"| {row['kind']} {row['size'] or ''} | {row['policy']} | {row['tasks']:,} | "
                         f"{_seconds(row)} | {row['us_per_task']:.0f} | {row['verified']} | "
                         f"{row['peak_rss_mb']:.0f} | {row['load']} | {when} | {_before(row)} |")  # fmt: skip
        else:
            note = f"projected {row['projected_s']:.0f} s" if "projected_s" in row else row["status"]
            lines.append(f"| {row['kind']} {row['size']} | {row['policy']} | - | {note} | | | | {row['load']} | "
                         f"{when} | {_before(row)} |")  # fmt: skip
    save("sim_speed", {"machine": machine_state(), "rows": rows}, "\n".join(lines), args.out)


if __name__ == "__main__":
    main()
