"""Where Best-Fit's time goes on the Google 2011 table with 1,000 tenants (target: <= 1 s).

Times ``best_fit`` and ``first_fit`` as shipped (wall and CPU seconds, best of ``--repeats``), then runs
``best_fit`` once under ``cProfile`` and reports each function's share of the profiled time (its own
time, and with what it calls). Best-Fit places one task at a time: every task changes one run's free
room, hence its fitness for every later task, so the grant order fixes a sequence of dependent
placements (about 300,000 here). The profile shows what one placement costs in the interpreter: it
profiles the pure-Python search (``compiled=False``); the shipped Best-Fit runs the same search compiled
with numba at this size, which cProfile cannot see into (timed beside it as ``best-fit``).

Run: ``python -m benchmarks.best_fit_profile --data-dir ../shared/data``
"""

from __future__ import annotations

import cProfile
import os
import pstats
import time
from functools import partial
from typing import Any

from benchmarks._common import data_dir_or_none, load_line, parser, save
from fairpack.models.generators import google_instance
from fairpack.solver.drfh.heuristics import best_fit, first_fit

TARGET_S = 1.0
SHOWN = 10  # functions in the table


def _timed(function: Any, instance: Any, repeats: int) -> tuple[float, float, int]:
    """Best wall and CPU seconds over ``repeats`` calls, and the tasks placed."""
    walls, cpus, tasks = [], [], 0
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        allocation = function(instance)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        tasks = int(allocation.tasks.sum())
    return min(walls), min(cpus), tasks


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--tenants", type=int, default=1000)
    arguments.add_argument("--seed", type=int, default=1)
    arguments.add_argument("--repeats", type=int, default=3)
    args = arguments.parse_args()
    data = data_dir_or_none(args.data_dir)
    if data is None:
        raise SystemExit(f"no data folder at {args.data_dir}: the Google table is needed")
    instance = google_instance(data, args.tenants, args.seed)
    load = os.getloadavg()[0]
    python = partial(best_fit, compiled=False)
    methods = (("first-fit", first_fit), ("best-fit", best_fit), ("best-fit (Python)", python))
    timings = {name: _timed(function, instance, args.repeats) for name, function in methods}
    profiler = cProfile.Profile()
    profiler.runcall(python, instance)
    stats = pstats.Stats(profiler)
    total = float(stats.total_tt)  # type: ignore[attr-defined]
    entries = []
    for (filename, line, function), (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        entries.append({"function": f"{os.path.basename(filename)}:{line}({function})", "calls": calls,
                        "own_share": own / total, "cumulative_share": cumulative / total})  # fmt: skip
    entries.sort(key=lambda entry: -entry["own_share"])
    wall, cpu, tasks = timings["best-fit (Python)"]
    lines = [
        f"# Best-Fit on the Google 2011 table x {args.tenants} tenants, seed {args.seed}: where the time goes",
        "",
        load_line(),
        f"1-minute load before the timings: {load:.2f}. Best of {args.repeats} calls; target <= {TARGET_S:g} s.",
        "",
        "| method | wall s | cpu s | tasks | cpu us per task |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, (w, c, n) in timings.items():
        lines.append(f"| {name} | {w:.2f} | {c:.2f} | {n:,} | {1e6 * c / max(n, 1):.1f} |")
    lines += [
        "",
        f"Best-Fit's pure-Python search under cProfile ({total:.1f} s profiled, {tasks:,} tasks): own time and time "
        "with callees, "
        "as shares of the profiled time.",
        "",
        "| function | calls | own | with callees |",
        "|---|---:|---:|---:|",
    ]
    for entry in entries[:SHOWN]:
        lines.append(f"| `{entry['function']}` | {entry['calls']:,} | {entry['own_share']:.1%} | "
                     f"{entry['cumulative_share']:.1%} |")  # fmt: skip
    payload = {
        "tenants": args.tenants, "seed": args.seed, "load_1min": load, "target_s": TARGET_S,
        "timings": {name: {"wall_s": w, "cpu_s": c, "tasks": n} for name, (w, c, n) in timings.items()},
        "best_fit_cpu_s": cpu, "best_fit_wall_s": wall, "profiled_s": total, "profile": entries[:40],
    }  # fmt: skip
    save("best_fit_profile", payload, "\n".join(lines), args.out)


if __name__ == "__main__":
    main()
