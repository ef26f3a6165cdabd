"""Best-Fit against the exact LP it approximates: the Google 2011 table x 1,000 tenants, same run.

Target: ``best-fit`` no slower than ``drfh`` (CPU seconds, verification included). Each repeat runs
``solve(instance, "drfh")`` and ``solve(instance, "best-fit")`` alternately, each in a fresh process
(``multiprocessing`` spawn), as a CLI call would meet them: Best-Fit's compiled search loads its kernel (the
C extension, or numba where it was not built) in that call. Times cover ``solve`` (method, independent check,
report), not building the instance; the check of Best-Fit's answer (a 1,000 x 12,583 allocation per machine, given
as its non-zero cells) is timed apart as well.

The scheduler, this process and the children run the fairpack this process imports, so the same script
measures another checkout, run as a file from outside this one: ``cd /tmp && PYTHONPATH=OTHER python
CHECKOUT/benchmarks/best_fit_vs_lp.py --label before --out CHECKOUT/benchmarks/results``.

Where a fresh Best-Fit's time goes is measured in one more fresh process per repeat, step by step: loading the
C kernel (the first compiled call, on a 10-machine instance), then ``best_fit`` on the Google table with it
(split into the search and the allocation's cells made from its log of placements), the independent check; then, for
comparison, numba's kernel: importing numba, its set-up for compiled code (the first call on the 10-machine
instance: numba's lowering registries, scipy.linalg for its BLAS check, the cached machine code) and
``best_fit`` with it; and the same search in pure Python. All three must give the same allocation.

Run: ``python -m benchmarks.best_fit_vs_lp --data-dir ../shared/data``
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._common import data_dir_or_none, load_line, parser, save
from fairpack.models.generators import google_instance


def _child(data_dir: str, tenants: int, seed: int, method: str) -> dict[str, Any]:
    from fairpack.models.check import verify_allocation
    from fairpack.solver.api import solve

    instance = google_instance(data_dir, tenants, seed)
    wall, cpu = time.perf_counter(), time.process_time()
    result = solve(instance, method)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert result.allocation is not None
    check = time.process_time()
    verify_allocation(instance, result.allocation)
    check = time.process_time() - check
    return {"wall_s": wall, "cpu_s": cpu, "check_cpu_s": check, "status": result.status,
            "verified": result.verified, "objective": result.objective}  # fmt: skip


def _parts(data_dir: str, tenants: int, seed: int) -> dict[str, Any]:
    """CPU seconds of each step of a fresh Best-Fit (see the module's docstring)."""
    import sys

    from fairpack.models.check import verify_allocation
    from fairpack.solver.drfh import heuristics

    instance = google_instance(data_dir, tenants, seed)
    tiny = google_instance(None, tenants=3, seed=0, machines=10)
    steps: dict[str, Any] = {}

    def step(name: str, call: Callable[[], Any]) -> Any:
        """Run ``call``, its CPU seconds as ``steps[name]``; returns what it returns."""
        started = time.process_time()
        answer = call()
        steps[name] = time.process_time() - started
        return answer

    cells = heuristics._CompiledRatioIndex.allocation
    # The allocation's cells, made once at the end of the search from its log of placements, timed apart.
    heuristics._CompiledRatioIndex.allocation = lambda index: step("cells_s", lambda: cells(index))  # type: ignore[method-assign]

    step("c_load_s", lambda: heuristics.best_fit(tiny, compiled="c"))
    allocation = step("search_and_cells_s", lambda: heuristics.best_fit(instance, compiled="c"))
    heuristics._CompiledRatioIndex.allocation = cells  # type: ignore[method-assign]  # the C run's cells alone
    steps["search_s"] = steps["search_and_cells_s"] - steps["cells_s"]
    steps["numba_imported"] = "numba" in sys.modules
    step("check_s", lambda: verify_allocation(instance, allocation))
    step("numba_import_s", lambda: importlib.import_module("numba"))  # the import is what is timed
    step("numba_setup_s", lambda: heuristics.best_fit(tiny, compiled="numba"))
    numba_kernel = step("numba_search_and_cells_s", lambda: heuristics.best_fit(instance, compiled="numba"))
    python = step("python_search_s", lambda: heuristics.best_fit(instance, compiled=False))
    same = (python.tasks == allocation.tasks).all() and (numba_kernel.tasks == allocation.tasks).all()
    steps["identical"] = bool(same)
    return steps


def _run(args: tuple[Any, ...]) -> dict[str, Any]:
    if args[-1] == "parts":
        return _parts(*args[:-1])
    return _child(*args)


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--tenants", type=int, default=1000)
    arguments.add_argument("--seed", type=int, default=1)
    arguments.add_argument("--repeats", type=int, default=3)
    arguments.add_argument("--label", default="", help="appended to the results' name (e.g. before)")
    args = arguments.parse_args()
    data = data_dir_or_none(args.data_dir)
    if data is None:
        raise SystemExit(f"no data folder at {args.data_dir}: the Google table is needed")
    import fairpack

    source = Path(fairpack.__file__).resolve().parents[1].name
    context = multiprocessing.get_context("spawn")
    rows: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for repeat in range(args.repeats):
        for method in ("drfh", "best-fit", "parts"):
            load = os.getloadavg()[0]
            with context.Pool(1) as pool:
                measured = pool.apply(_run, ((str(data), args.tenants, args.seed, method),))
            row = {"repeat": repeat, "method": method, "load_1min": load, **measured}
            (parts if method == "parts" else rows).append(row)
            print(row, flush=True)
    median = {m: statistics.median(r["cpu_s"] for r in rows if r["method"] == m) for m in ("drfh", "best-fit")}
    ratio = median["best-fit"] / median["drfh"]
    lines = [
        f"# Best-Fit against the exact LP: Google 2011 table x {args.tenants:,} tenants, seed {args.seed}",
        "",
        load_line(),
        f"fairpack from the checkout `{source}`{' (' + args.label + ')' if args.label else ''}. Each row is one "
        "fresh process; `solve` includes the independent check; `check` is that check alone, timed again.",
        "",
        "| repeat | method | wall s | cpu s | check cpu s | status | verified | f | load |",
        "|---:|---|---:|---:|---:|---|---|---:|---:|",
    ]
    lines += [
        f"| {r['repeat']} | {r['method']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['check_cpu_s']:.2f} | "
        f"{r['status']} | {r['verified']} | {r['objective']:.6g} | {r['load_1min']:.2f} |"
        for r in rows
    ]
    lines += ["", f"Median CPU: drfh {median['drfh']:.2f} s, best-fit {median['best-fit']:.2f} s; best-fit / drfh "
              f"{ratio:.2f} (target <= 1: {'met' if ratio <= 1 else 'missed'})."]  # fmt: skip
    lines += _parts_table(parts)
    name = f"best_fit_vs_lp{'_' + args.label if args.label else ''}"
    save(name, {"rows": rows, "parts": parts, "ratio": ratio}, "\n".join(lines), args.out)


def _parts_table(parts: list[dict[str, Any]]) -> list[str]:
    """Where a fresh Best-Fit's CPU time goes, one row per repeat (empty for a checkout without ``parts``)."""
    if not parts:
        return []
    lines = [
        "",
        "Where a fresh Best-Fit's time goes (one more fresh process per repeat, CPU seconds, step by step): loading "
        "the C kernel (the first compiled call, on a 10-machine instance), `best_fit` on the table with it (the "
        "search, then the allocation's cells made from its log of placements; `numba`: whether numba had been "
        "imported by then), the check; then numba's kernel in the same process: importing numba, its set-up (the "
        "first call on the 10-machine instance), `best_fit` with it (search and cells); the same search in pure Python "
        "(`compiled=False`); `same`: the three allocations are equal.",
        "",
        "| repeat | C load | C search | cells | numba | check | import numba | numba set-up | numba search + cells "
        "| pure-Python search | same | load |",
        "|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    lines += [
        f"| {p['repeat']} | {p['c_load_s']:.3f} | {p['search_s']:.3f} | {p['cells_s']:.3f} | "
        f"{'yes' if p['numba_imported'] else 'no'} | {p['check_s']:.3f} | {p['numba_import_s']:.3f} | "
        f"{p['numba_setup_s']:.3f} | {p['numba_search_and_cells_s']:.3f} | {p['python_search_s']:.3f} | "
        f"{'yes' if p['identical'] else 'no'} | {p['load_1min']:.2f} |"
        for p in parts
    ]
    return lines


if __name__ == "__main__":
    main()
