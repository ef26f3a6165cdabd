"""fairpack's simulator against a plain SimPy model of the same workload, in one run (ratios measured interleaved).

The workload: single-task jobs with Poisson arrivals and exponential durations (mean 1) on 100 one-slot
machines at load 0.95 (arrival rate 95), in ten tenants' names, served FIFO. It is written once as a CSV trace
and as a Parquet trace; every measurement is a fresh child process (imports, reading the trace and everything
after it included; peak RSS is the child's):

* ``cli``: ``python -m fairpack simulate cluster.yaml --trace trace.csv --policy fifo`` (the whole command, its
  verification of the schedule included);
* ``inproc``: ``read_trace`` then ``fairpack.solver.api.simulate`` in one Python process (``inproc-parquet``: the
  same from the Parquet trace);
* ``simpy``: a SimPy model -- one ``simpy.Resource`` of capacity 100, a process per job requesting it at its
  arrival and holding it for its duration -- reading the CSV with pandas.

Both sides' mean queueing delay (start minus arrival) is printed: they must agree. Rows of a size run in turns
(simpy, inproc, cli, ...) ``--repeat`` times, so the ratios are measured under the same load (printed with every
row). ``--baseline DIR`` (a source tree of another revision, e.g. ``git archive main | tar -x -C DIR``) adds that
code's ``inproc`` and ``cli`` rows to the same turns: the before/after figures. ``--google-tasks N`` adds the
Google-like day (``fairpack generate`` of the real 2011 machine table with a synthetic task stream of N tasks in
task groups) under ``fifo``, in-process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import load_line, machine_state, parser, save

MACHINES = 100
LOAD = 0.95
CLUSTER = f"name: mm{MACHINES}\nresources: [cpu]\nservers:\n  - {{name: m, capacity: {{cpu: 1}}, count: {MACHINES}}}\n"

INPROC = r"""
import json, resource, sys, time
started, cpu = time.perf_counter(), time.process_time()
from fairpack.models.io import load_instance
from fairpack.models.traces import read_trace
from fairpack.solver.api import simulate
instance = load_instance(sys.argv[1])
imported = time.perf_counter()
trace = read_trace(sys.argv[2], instance.resources)
read = time.perf_counter()
result = simulate(instance, "fifo", trace)
done = time.perf_counter()
cpu = time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the run's, before the extra check below
# The checker alone, once more, on the same schedule (simulate ran it too): its own time.
from fairpack.models.check import verify_schedule
workload = trace.on(instance)
checked = time.perf_counter()
report = verify_schedule(workload, result.schedule, require_placement=True)
verify_s = time.perf_counter() - checked
print(json.dumps({"wall_s": done - started, "cpu_s": cpu, "import_s": imported - started, "verify_s": verify_s,
                  "verify_ok": bool(report.ok),
                  "read_s": read - imported, "simulate_s": done - read, "verified": bool(result.verified),
                  "mean_delay": result.extra["summary"]["mean_queueing_delay"],
                  "events": result.extra.get("events"),
                  "peak_rss_mb": peak}))
"""

SIMPY = r"""
import json, resource, sys, time
started, cpu = time.perf_counter(), time.process_time()
import pandas as pd
import simpy
table = pd.read_csv(sys.argv[1])
arrival, duration = table["arrival"].to_numpy().tolist(), table["duration"].to_numpy().tolist()
read = time.perf_counter()
env = simpy.Environment()
machines = simpy.Resource(env, capacity=int(sys.argv[2]))
delays = []

def job(env, arrive, length):
    yield env.timeout(arrive - env.now)
    with machines.request() as request:
        yield request
        delays.append(env.now - arrive)
        yield env.timeout(length)

for a, d in zip(arrival, duration):
    env.process(job(env, a, d))
env.run()
done = time.perf_counter()
print(json.dumps({"wall_s": done - started, "cpu_s": time.process_time() - cpu, "read_s": read - started,
                  "simulate_s": done - read, "mean_delay": sum(delays) / len(delays),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

GOOGLE = r"""
import json, resource, sys, time
from pathlib import Path
from fairpack.models.generators.arrivals import google_day
started = time.perf_counter()
instance = google_day(Path(sys.argv[2]), 1, tasks=int(sys.argv[1]))
generate_s = time.perf_counter() - started
from fairpack.solver.api import simulate
started, cpu = time.perf_counter(), time.process_time()
result = simulate(instance, "fifo")
wall = time.perf_counter() - started
print(json.dumps({"wall_s": wall, "cpu_s": time.process_time() - cpu, "generate_s": generate_s,
                  "tasks": int(sum(s.tasks for j in instance.jobs for s in j.stages)), "groups":
                  sum(len(j.stages) for j in instance.jobs), "machines": int(instance.counts.sum()),
                  "verified": bool(result.verified), "events": result.extra.get("events"),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def write_traces(folder: Path, jobs: int, seed: int = 1) -> tuple[Path, Path]:
    """The Poisson/exponential workload of ``jobs`` single-task jobs as a CSV and a Parquet trace."""
    import pandas as pd

    csv, parquet = folder / f"trace_{jobs}.csv", folder / f"trace_{jobs}.parquet"
    if csv.exists() and parquet.exists():
        return csv, parquet
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1 / (LOAD * MACHINES), jobs))
    table = pd.DataFrame({"arrival": arrival, "duration": rng.exponential(1.0, jobs),
                          "tenant": np.char.add("u", rng.integers(0, 10, jobs).astype(str)), "cpu": 1.0})  # fmt: skip
    table.to_csv(csv, index=False, float_format="%.9g")
    pd.read_csv(csv).to_parquet(parquet, index=False)  # the same (rounded) numbers in both
    return csv, parquet


def _env(code: str | None) -> tuple[dict[str, str], str | None]:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([code, *filter(None, [env.get("PYTHONPATH")])])
    return env, code


def _python(script: str, args: list[str], code: str | None, timeout: float) -> dict[str, Any]:
    env, cwd = _env(code)
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=timeout,
                          check=False, env=env, cwd=cwd)  # fmt: skip
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


CLI = r"""
import json, re, resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run([sys.executable, "-m", "fairpack", "simulate", sys.argv[1], "--trace", sys.argv[2], "--policy",
                       "fifo", "--top", "1"], capture_output=True, text=True, check=False)
wall = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the command alone: this wrapper's only child
found = re.search(r"queueing delay mean ([0-9.eE+-]+)", done.stdout)
if done.returncode != 0 or found is None:
    raise SystemExit((done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1])
print(json.dumps({"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "mean_delay": float(found.group(1)),
                  "verified": "verified yes" in done.stdout, "peak_rss_mb": usage.ru_maxrss / 1024}))
"""


def _measure(kind: str, size: int, paths: dict[str, Path], code: str | None, timeout: float) -> dict[str, Any]:
    load = os.getloadavg()[0]
    if kind == "simpy":
        row = _python(SIMPY, [str(paths["csv"]), str(MACHINES)], None, timeout)
    elif kind == "cli":  # the table prints the mean delay to 4 digits
        row = _python(CLI, [str(paths["cluster"]), str(paths["csv"])], code, timeout)
    else:
        trace = paths["parquet"] if kind == "inproc-parquet" else paths["csv"]
        row = _python(INPROC, [str(paths["cluster"]), str(trace)], code, timeout)
    return {"kind": kind, "jobs": size, "code": "before" if code else "now", "load": round(load, 2), **row}


def _fmt(value: Any, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if isinstance(value, float) else ("" if value is None else str(value))


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| jobs | side | code | wall (s) | CPU (s) | read (s) | check (s) | peak RSS (MB) | mean queueing delay "
             "| verified | load |", "|---:|---|---|---:|---:|---:|---:|---:|---:|---|---:|"]  # fmt: skip
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['jobs']:,} | {row['kind']} | {row['code']} | {row['error']} |  |  |  |  |  |  | "
                         f"{row['load']} |")  # fmt: skip
            continue
        lines.append(f"| {row['jobs']:,} | {row['kind']} | {row['code']} | {_fmt(row['wall_s'])} | "
                     f"{_fmt(row.get('cpu_s'))} | {_fmt(row.get('read_s'))} | {_fmt(row.get('verify_s'))} | "
                     f"{_fmt(row.get('peak_rss_mb'), 0)} | "
                     f"{row['mean_delay']:.6g} | {_fmt(row.get('verified'))} | {row['load']} |")  # fmt: skip
    return lines


def _ratios(rows: list[dict[str, Any]]) -> list[str]:
    """Per size: SimPy's median wall time over each fairpack side's (above 1: fairpack faster)."""
    lines = ["| jobs | side | code | median wall (s) | SimPy median (s) | SimPy / fairpack (wall) | "
             "SimPy / fairpack (CPU) | delays agree |", "|---:|---|---|---:|---:|---:|---:|---|"]  # fmt: skip
    for size in sorted({row["jobs"] for row in rows}):
        good = [r for r in rows if r["jobs"] == size and "error" not in r]
        simpy = [r for r in good if r["kind"] == "simpy"]
        if not simpy:
            continue
        base = float(np.median([r["wall_s"] for r in simpy]))
        delay = float(np.median([r["mean_delay"] for r in simpy]))
        for kind, code in sorted({(r["kind"], r["code"]) for r in good if r["kind"] != "simpy"}):
            mine = [r for r in good if r["kind"] == kind and r["code"] == code]
            wall = float(np.median([r["wall_s"] for r in mine]))
            cpu = float(np.median([r["cpu_s"] for r in mine])) / float(np.median([r["cpu_s"] for r in simpy]))
            agree = all(abs(r["mean_delay"] - delay) <= 1e-3 * max(abs(delay), 1e-9) for r in mine)
            lines.append(f"| {size:,} | {kind} | {code} | {wall:.2f} | {base:.2f} | {base / wall:.2f}x | "
                         f"{1 / cpu:.2f}x | {'yes' if agree else 'NO'} |")  # fmt: skip
    return lines


def _targets(rows: list[dict[str, Any]], google: list[dict[str, Any]]) -> list[str]:
    """The speed targets, each with what was measured now (worst row) and whether it is met."""
    good = [r for r in rows if "error" not in r and r["code"] == "now"]
    lines = ["| target | measured (worst row) | met |", "|---|---|---|"]

    def add(target: str, values: list[float], limit: float, unit: str, above: bool = False) -> None:
        if not values:
            return
        worst = min(values) if above else max(values)
        met = worst >= limit if above else worst <= limit
        lines.append(f"| {target} | {worst:.2f}{unit} | {'yes' if met else 'no'} |")

    for size in sorted({r["jobs"] for r in good}):
        simpy = [r for r in good if r["jobs"] == size and r["kind"] == "simpy"]
        if not simpy:
            continue
        base_wall = float(np.median([r["wall_s"] for r in simpy]))
        base_cpu = float(np.median([r["cpu_s"] for r in simpy]))
        for kind in ("inproc", "inproc-parquet", "cli"):
            mine = [r for r in good if r["jobs"] == size and r["kind"] == kind]
            add(f"{size:,} jobs, {kind}: at least 2x faster than SimPy (wall, medians)",
                [base_wall / float(np.median([r["wall_s"] for r in mine]))] if mine else [], 2.0, "x", above=True)
            add(f"{size:,} jobs, {kind}: at least 2x faster than SimPy (CPU, medians)",
                [base_cpu / float(np.median([r["cpu_s"] for r in mine]))] if mine else [], 2.0, "x", above=True)
    million = [r for r in good if r["jobs"] >= 1_000_000 and r["kind"] != "simpy"]
    add("1,000,000 jobs end to end <= 15 s (wall)", [r["wall_s"] for r in million], 15.0, " s")
    add("1,000,000 jobs end to end <= 15 s (CPU)", [r["cpu_s"] for r in million], 15.0, " s")
    add("1,000,000 jobs end to end <= 1 GB (peak RSS, GiB)", [r["peak_rss_mb"] / 1024 for r in million], 1.0,
        " GiB")  # fmt: skip
    add("1,000,000-row CSV trace read <= 2 s", [r["read_s"] for r in million if r["kind"] == "inproc"], 2.0, " s")
    add("1,000,000-row Parquet trace read <= 2 s", [r["read_s"] for r in million if r["kind"] == "inproc-parquet"],
        2.0, " s")  # fmt: skip
    add("checking a 1,000,000-task schedule <= 5 s", [r["verify_s"] for r in million if "verify_s" in r], 5.0, " s")
    add("10,000,000 tasks in task groups (Google-like day x 10) <= 300 s (wall)",
        [g["wall_s"] for g in google if "error" not in g and g["tasks_asked"] >= 10_000_000], 300.0, " s")
    return lines


def main() -> None:
    parse = parser(__doc__.splitlines()[0])
    parse.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parse.add_argument("--repeat", type=int, default=2)
    parse.add_argument("--sides", nargs="+", default=["simpy", "inproc", "inproc-parquet", "cli"])
    parse.add_argument("--baseline", help="source tree of another revision: its inproc and cli rows too")
    parse.add_argument("--baseline-sizes", type=int, nargs="*", help="sizes the baseline runs (default: all)")
    parse.add_argument("--work", default="/tmp/fairpack-sim-vs-simpy", help="where the traces are written")
    parse.add_argument("--google-tasks", type=int, nargs="*", default=[], help="Google-like day sizes (tasks)")
    parse.add_argument("--timeout", type=float, default=1800)
    parse.add_argument("--name", default="sim_vs_simpy")
    args = parse.parse_args()
    folder = Path(args.work)
    folder.mkdir(parents=True, exist_ok=True)
    cluster = folder / "cluster.yaml"
    cluster.write_text(CLUSTER)
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for size in args.sizes:
        csv, parquet = write_traces(folder, size)
        paths = {"cluster": cluster, "csv": csv, "parquet": parquet}
        baseline = args.baseline and (args.baseline_sizes is None or size in args.baseline_sizes)
        for _ in range(args.repeat):
            for kind in args.sides:
                rows.append(_measure(kind, size, paths, None, args.timeout))
                print(_table([rows[-1]])[-1], flush=True)
                if baseline and kind in ("inproc", "cli"):
                    rows.append(_measure(kind, size, paths, str(Path(args.baseline).resolve()), args.timeout))
                    print(_table([rows[-1]])[-1], flush=True)
    google = []
    for tasks in args.google_tasks:
        row = _python(GOOGLE, [str(tasks), str(Path(args.data_dir).resolve())], None, args.timeout)
        google.append({"tasks_asked": tasks, "load": round(os.getloadavg()[0], 2), **row})
        print(google[-1], flush=True)
    lines = [f"# fairpack against SimPy: FIFO, single-task jobs, {MACHINES} one-slot machines, load {LOAD}", "",
             load_line(machine_state()) + f" Total {time.perf_counter() - started:.0f} s; the load column is the "
             "1-minute load when the row started.", "", *_table(rows), "", "Ratios (medians over the repeats):", "",
             *_ratios(rows), "", "Targets (rows of this code):", "", *_targets(rows, google)]  # fmt: skip
    if google:
        lines += ["", "Google-like day (synthetic task stream on the real 2011 machines), fifo, in-process:", "",
                  "| tasks | groups | machines | wall (s) | CPU (s) | peak RSS (MB) | verified | load |",
                  "|---:|---:|---:|---:|---:|---:|---|---:|"]  # fmt: skip
        for g in google:
            if "error" in g:
                lines.append(f"| {g['tasks_asked']:,} | {g['error']} |  |  |  |  |  | {g['load']} |")
            else:
                lines.append(f"| {g['tasks']:,} | {g['groups']:,} | {g['machines']:,} | {g['wall_s']:.1f} | "
                             f"{g['cpu_s']:.1f} | {g['peak_rss_mb']:.0f} | {g['verified']} | {g['load']} |")
    save(args.name, {"rows": rows, "google": google, "machines": MACHINES, "load": LOAD}, "\n".join(lines),
         args.out)  # fmt: skip


if __name__ == "__main__":
    main()
