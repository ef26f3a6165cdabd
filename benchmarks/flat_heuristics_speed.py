"""Speed of the flat heuristics on the real Google 2011 machine table, against the 1 s target.

For 500 and 1,000 tenants and three seeds (``models.generators.google_instance``, 12,583 machines in
10 classes): ``first-fit``, ``best-fit``, ``slots`` and ``per-server-drf`` as shipped, and, in the
same run, a straightforward machine-by-machine implementation of the same First-Fit and Best-Fit
rules (every machine expanded, numpy over all machines for every task, the way the heuristics were
written before classes were kept as runs). The two must give identical allocations, machine by
machine; the ratio of their times is the speed-up. ``drfh`` (the exact LP, through
``solver.api.solve``) is timed beside them for reference.

``best-fit`` on the Google table runs its compiled search (``solver.drfh.ratio_index``) in the C extension
(``_ratio_search.pyx``); ``best-fit (numba)`` is the same search in numba's kernel (the fallback where the
extension was not built) and ``best-fit (Python)`` the pure-Python search (``compiled=False``), in the same
run, the same allocation required. The compiled search's one-off costs are measured in fresh processes: the C
kernel's (loading the extension: the first call, on a tiny instance, then the Google call; numba must not be
imported), and numba's, with a cache folder of their own (``NUMBA_CACHE_DIR``): importing numba, the first call
(compiling into the empty cache, then loading from it in a second process) and the Google call after it.

Times are wall seconds (``perf_counter``) and the process's CPU seconds; the 1-minute load average is
recorded before every instance, since the machine is shared.

Run: ``python -m benchmarks.flat_heuristics_speed --data-dir ../shared/data``
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import data_dir_or_none, parser, save
from fairpack.models.generators import google_instance
from fairpack.models.result import Allocation
from fairpack.models.types import Instance
from fairpack.solver.api import solve
from fairpack.solver.drfh.greedy import TIE, Alive, FlatSetup, prepare, progressive_fill
from fairpack.solver.drfh.heuristics import best_fit, best_fit_terms, first_fit, per_server_drf, slots

TARGET_S = 1.0  # target: best-fit and first-fit with 1,000 tenants in <= 1 s each


def _expanded(setup: FlatSetup) -> np.ndarray:
    """Every machine's room, (machines, resources): the per-machine state the old code kept."""
    return np.repeat(setup.room, setup.counts, axis=0)


def machine_by_machine_first_fit(instance: Instance) -> Allocation:
    """First-Fit over expanded machines: per task, a numpy scan from the tenant's cursor in growing blocks."""
    setup = prepare(instance, "first-fit")
    room = _expanded(setup)
    tasks = np.zeros((setup.tenants, setup.machines))
    cursor = np.zeros(setup.tenants, dtype=np.int64)

    def place(i: int, k: int) -> int:
        for placed in range(k):
            start, block, machine = int(cursor[i]), 32, -1
            while start < setup.machines:
                fits = np.all(room[start : start + block] >= setup.need[i], axis=1)
                first = int(fits.argmax())
                if fits[first]:
                    machine = start + first
                    break
                start, block = start + block, min(2 * block, 4096)
            if machine < 0:
                return placed
            cursor[i] = machine
            room[machine] -= setup.demand[i]
            tasks[i, machine] += 1
        return k

    progressive_fill(setup, place, Alive(setup.eligible))
    return Allocation(tasks, kind="machine", integral=True)


def machine_by_machine_best_fit(instance: Instance) -> Allocation:
    """Best-Fit over expanded machines: per task, the paper's fitness of every machine with numpy.

    Untouched machines of a class are identical and tie, and the first of them has the lowest index,
    so only touched machines and the first untouched machine of every class are scored (as before).
    """
    setup = prepare(instance, "best-fit")
    total, star, delta = best_fit_terms(instance)
    present = total > 0
    room = _expanded(setup)
    tasks = np.zeros((setup.tenants, setup.machines))
    scored = np.zeros(setup.machines, dtype=bool)
    scored[setup.class_start[setup.counts > 0]] = True
    class_end = setup.class_start + setup.counts
    machine_class = np.repeat(np.arange(len(setup.counts)), setup.counts)
    scale = np.where(present, total, 1.0)

    def place(i: int, k: int) -> int:
        others = present.copy()
        others[star[i]] = False
        for placed in range(k):
            ids = np.flatnonzero(scored)
            fits = ids[np.all(room[ids] >= setup.need[i], axis=1)]
            if not fits.size:
                return placed
            free = room[fits] / scale
            ratio = free[:, others] / free[:, star[i] : star[i] + 1]
            fitness = np.zeros(fits.size)
            for column, r in enumerate(np.flatnonzero(others).tolist()):  # resource order, as defined
                fitness += np.abs(delta[i, r] - ratio[:, column])
            best = float(fitness.min())
            machine = int(fits[np.flatnonzero(fitness <= best + TIE * (1.0 + best))[0]])
            room[machine] -= setup.demand[i]
            tasks[i, machine] += 1
            after = machine + 1  # the next untouched machine of the class becomes the class's representative
            if after < class_end[machine_class[machine]] and not scored[after]:
                scored[after] = True
        return k

    progressive_fill(setup, place, Alive(setup.eligible))
    return Allocation(tasks, kind="machine", integral=True)


# Run in a fresh process with kernel argv[4] ('c' or 'numba'): numba's import (numba's kernel only), the first
# compiled Best-Fit call (on a tiny instance) and then the Google call with that kernel, each timed in wall and
# CPU seconds; prints them as JSON, with whether numba was imported.
_FRESH = """
import json, sys, time
def clock():
    return time.perf_counter(), time.process_time()
def since(start):
    wall, cpu = clock()
    return [wall - start[0], cpu - start[1]]
out = {}
kernel = sys.argv[4]
if kernel == "numba":
    start = clock()
    import numba
    out["import_numba"] = since(start)
from fairpack.models.generators import google_instance
from fairpack.solver.drfh.heuristics import best_fit
tiny = google_instance(None, tenants=3, seed=0, machines=10)
start = clock()
best_fit(tiny, compiled=kernel)
out["first_call"] = since(start)
instance = google_instance(sys.argv[1], tenants=int(sys.argv[2]), seed=int(sys.argv[3]))
start = clock()
out["tasks"] = int(best_fit(instance, compiled=kernel).tasks.sum())
out["google_call"] = since(start)
out["numba_imported"] = "numba" in sys.modules
print(json.dumps(out))
"""


def fresh_processes(data: Path, tenants: int, seed: int) -> list[dict[str, Any]]:
    """A fresh process with the C kernel, then two with numba's sharing an empty numba cache: the first compiles,
    the second loads the cache."""
    root = Path(__file__).resolve().parents[1]
    runs = []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(root)}
        for label, kernel in (("C extension", "c"), ("numba, compile (empty cache)", "numba"),
                              ("numba, load (cache filled)", "numba")):  # fmt: skip
            load = os.getloadavg()[0]
            done = subprocess.run([sys.executable, "-c", _FRESH, str(data), str(tenants), str(seed), kernel], env=env,
                                  cwd=root, capture_output=True, text=True, check=True)  # fmt: skip
            runs.append({"process": label, "load_1min": load, **json.loads(done.stdout)})
            print(runs[-1])
    return runs


def _time(function: Callable[..., Any], *args: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    value = function(*args)
    return value, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parse = parser(__doc__.splitlines()[0])
    parse.add_argument("--tenants", type=int, nargs="+", default=[500, 1000])
    parse.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parse.add_argument("--no-reference", action="store_true", help="skip the machine-by-machine runs")
    parse.add_argument(
        "--best-fit-reference-seeds",
        type=int,
        nargs="*",
        default=[0],
        help="seeds on which to run the machine-by-machine Best-Fit too (3-4 minutes each on a loaded 2-core machine)",
    )
    args = parse.parse_args()
    data = data_dir_or_none(args.data_dir)
    if data is None:
        raise SystemExit(f"no data folder at {args.data_dir}: the Google table is needed")
    shipped: dict[str, Callable[[Instance], Allocation]] = {
        "first-fit": first_fit,
        "best-fit": best_fit,
        "best-fit (numba)": partial(best_fit, compiled="numba"),
        "best-fit (Python)": partial(best_fit, compiled=False),
        "slots": slots,
        "per-server-drf": per_server_drf,
    }
    for kernel in ("c", "numba"):  # the kernels' one-off costs (loading the extension; numba's set-up)
        best_fit(google_instance(None, tenants=3, seed=0, machines=10), compiled=kernel)
    reference: dict[str, Callable[[Instance], Allocation]] = {
        "first-fit": machine_by_machine_first_fit,
        "best-fit": machine_by_machine_best_fit,
    }
    rows: list[dict[str, Any]] = []
    compiled_best_fit: dict[tuple[int, int], Allocation] = {}
    for tenants in args.tenants:
        for seed in args.seeds:
            instance = google_instance(data, tenants=tenants, seed=seed)
            load = os.getloadavg()[0]
            for name, function in shipped.items():
                allocation, wall, cpu = _time(function, instance)
                row: dict[str, Any] = {
                    "tenants": tenants, "seed": seed, "method": name, "wall_s": wall, "cpu_s": cpu,
                    "tasks": int(allocation.tasks.sum()), "load_1min": load,
                }  # fmt: skip
                if name == "best-fit":
                    compiled_best_fit[tenants, seed] = allocation
                if name in ("best-fit (numba)", "best-fit (Python)"):
                    row["identical"] = bool(np.array_equal(compiled_best_fit[tenants, seed].tasks, allocation.tasks))
                slow = name == "best-fit" and seed not in args.best_fit_reference_seeds
                if name in reference and not args.no_reference and not slow:
                    expected, old_wall, old_cpu = _time(reference[name], instance)
                    row.update(
                        reference_wall_s=old_wall,
                        reference_cpu_s=old_cpu,
                        speedup=old_wall / wall,
                        identical=bool(np.array_equal(expected.tasks, allocation.tasks)),
                    )
                rows.append(row)
                print({key: round(value, 3) if isinstance(value, float) else value for key, value in row.items()})
            result, wall, cpu = _time(solve, instance, "drfh")
            rows.append({"tenants": tenants, "seed": seed, "method": "drfh", "wall_s": wall, "cpu_s": cpu,
                         "tasks": float(result.allocation.tasks.sum()) if result.allocation is not None else 0.0,
                         "load_1min": load, "status": result.status})  # fmt: skip
            print(rows[-1])
    fresh = fresh_processes(data, max(args.tenants), args.seeds[0])
    lines = [
        "# Flat heuristics on the Google 2011 table (12,583 machines, 10 classes)",
        "",
        f"Machine: {os.cpu_count()} CPUs, shared; 1-minute load average at the start of each instance in the table. "
        "`ref` is the machine-by-machine implementation of the same rule (numpy over every machine for every "
        f"task), run in the same process; `same` says whether its allocation equals the shipped one (for "
        f"`best-fit (numba)` and `best-fit (Python)`, numba's kernel and the pure-Python search: whether it equals "
        f"`best-fit`, the C kernel). Target: first-fit and best-fit with 1,000 tenants in <= {TARGET_S:g} s. "
        "The table times calls in a process that has already loaded both kernels; the one-off costs of a fresh "
        "process are below.",
        "",
        "| tenants | seed | method | wall s | cpu s | ref wall s | speed-up | same | tasks | load |",
        "|---:|---:|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for row in rows:
        ref = f"{row['reference_wall_s']:.2f}" if "reference_wall_s" in row else ""
        speedup = f"{row['speedup']:.1f}x" if "speedup" in row else ""
        same = ("yes" if row["identical"] else "NO") if "identical" in row else ""
        lines.append(
            f"| {row['tenants']} | {row['seed']} | {row['method']} | {row['wall_s']:.3f} | {row['cpu_s']:.3f} | "
            f"{ref} | {speedup} | {same} | {row['tasks']:,.0f} | {row['load_1min']:.2f} |"
        )
    lines += [
        "",
        f"Fresh processes, Best-Fit's compiled search: {max(args.tenants):,} tenants, seed {args.seeds[0]}; the C "
        "kernel, then numba's with one cache folder shared by its two processes and empty before the first; wall / "
        "CPU seconds; `numba` says whether the process imported numba.",
        "",
        "| process | import numba | first call (tiny instance) | Google call | tasks | numba | load |",
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    for run in fresh:
        keys = ("import_numba", "first_call", "google_call")
        cells = " | ".join(f"{run[key][0]:.2f} / {run[key][1]:.2f}" if key in run else "-" for key in keys)
        lines.append(f"| {run['process']} | {cells} | {run['tasks']:,} | {'yes' if run['numba_imported'] else 'no'} "
                     f"| {run['load_1min']:.2f} |")  # fmt: skip
    save("flat_heuristics_speed", {"rows": rows, "fresh_processes": fresh, "target_s": TARGET_S}, "\n".join(lines),
         args.out)  # fmt: skip


if __name__ == "__main__":
    main()
