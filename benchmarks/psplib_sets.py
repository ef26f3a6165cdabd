"""PSPLIB J30/J60/J120 with ``spacetime-cp`` at a fixed time limit, against the best-known makespans.

Every instance is solved through ``solver.api.solve`` (so every schedule is re-verified), with a per-instance
limit for the whole call (10 s by default, as the issue asks) and one CP-SAT worker, one instance at a time
(``--processes 1``) so that the figures do not depend on how many cores are free. Rows are appended to
``psplib_sets.csv`` as they finish, so an interrupted run resumes where it stopped; the summary compares, per
set, the instances proven optimal and those equal to the best-known upper bound with PyJobShop's published
CP-SAT figures (900 s per instance): J30 480/480 optimal, J60 435/480, J120 291/600. The load average at the
start and the end of the run is saved beside the figures.

Run: ``python -m benchmarks.psplib_sets --data-dir ../shared/data [--sets j30 j60 j120] [--time-limit 10]``.
"""

from __future__ import annotations

import csv
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import data_dir_or_none, parser, save

#: PyJobShop's published CP-SAT results at 900 s per instance (instances proven optimal, out of the set).
PYJOBSHOP_OPTIMAL = {"j30": (480, 480), "j60": (435, 480), "j90": (None, 480), "j120": (291, 600)}
FIELDS = ["instance", "set", "status", "makespan", "bound", "best_lb", "best_ub", "proven_optimal_known",
          "verified", "solve_s", "wall_s"]


def load_note(load: dict[str, list[float]]) -> str:
    """The load averages at the start and end of a run, as a sentence for the saved table."""
    start, end = (" / ".join(f"{value:.2f}" for value in load[key]) for key in ("start", "end"))
    return f"Load average (1 / 5 / 15 min) {start} at the start, {end} at the end, on {os.cpu_count()} cores"


def read_bounds(data_dir: Path) -> dict[str, dict[str, str]]:
    """The best-known bounds of every PSPLIB instance (``psplib/optima/psplib_bounds.csv``), by instance."""
    with (data_dir / "psplib" / "optima" / "psplib_bounds.csv").open() as handle:
        return {row["instance"]: row for row in csv.DictReader(handle)}


def psplib_folder(data_dir: str) -> Path | None:
    """The shared data folder when it holds ``psplib/``; else None, after saying the run is skipped."""
    folder = data_dir_or_none(data_dir)
    if folder is None or not (folder / "psplib").is_dir():
        print(f"skipped: no psplib/ under {data_dir}")
        return None
    return folder


def _instance_names(data_dir: Path, name: str, per_set: int | None) -> list[str]:
    # Order by (parameter, instance) numerically, so a --per-set sample spreads over every parameter set.
    def key(path: Path) -> tuple[int, int]:
        parameter, index = path.stem[len(name):].split("_")
        return int(index), int(parameter)

    files = sorted((data_dir / "psplib" / name).glob("*.sm"), key=key)
    return [path.stem for path in files[:per_set]]


def _solve_one(path: str, time_limit: float, workers: int) -> dict[str, Any]:
    from fairpack.models.psplib import load_psplib
    from fairpack.solver.api import solve

    started = time.perf_counter()
    instance = load_psplib(path)
    result = solve(instance, "spacetime-cp", time_limit=time_limit, objective="makespan",
                   workers=workers, seed=0)
    return {
        "status": result.status,
        "makespan": result.objective,
        "bound": result.bound,
        "verified": bool(result.verified),
        "solve_s": round(result.solve_s, 3),
        "wall_s": round(time.perf_counter() - started, 3),
    }


def _warm_up() -> None:
    """Compile (or load from numba's cache) the genetic algorithm's kernel in each worker process before its
    first instance, so no instance's 10 s pays for it."""
    from fairpack.solver.spacetime.rcpsp_ga import warm_up

    warm_up()


def _load_rows(path: Path) -> dict[str, dict[str, str]]:
    if not path.exists():
        return {}
    with path.open() as handle:
        return {row["instance"]: row for row in csv.DictReader(handle)}


def run(data_dir: Path, sets: list[str], time_limit: float, workers: int, processes: int,
        per_set: int | None, rows_path: Path) -> dict[str, dict[str, str]]:
    """Solve every instance not yet in ``rows_path`` and append its row; return all rows."""
    bounds = read_bounds(data_dir)
    done = _load_rows(rows_path)
    todo = [(name, stem) for name in sets for stem in _instance_names(data_dir, name, per_set) if stem not in done]
    print(f"{len(done)} rows already in {rows_path.name}; {len(todo)} to solve", flush=True)
    fresh = not rows_path.exists()
    with rows_path.open("a", newline="") as handle, ProcessPoolExecutor(processes, initializer=_warm_up) as pool:
        writer = csv.DictWriter(handle, FIELDS)
        if fresh:
            writer.writeheader()
        futures = {
            pool.submit(_solve_one, str(data_dir / "psplib" / name / f"{stem}.sm"), time_limit, workers): (name, stem)
            for name, stem in todo
        }
        for count, future in enumerate(as_completed(futures), 1):
            name, stem = futures[future]
            known = bounds[stem]
            row = {"instance": stem, "set": name, **future.result(), "best_lb": known["best_lb"],
                   "best_ub": known["best_ub"], "proven_optimal_known": known["proven_optimal"]}
            writer.writerow(row)
            handle.flush()
            done[stem] = {key: str(value) for key, value in row.items()}
            if count % 20 == 0 or count == len(todo):
                print(f"  {count}/{len(todo)} {stem}: {row['status']} {row['makespan']} (best {row['best_ub']})",
                      flush=True)
    return done


def summarise(rows: dict[str, dict[str, str]], sets: list[str], time_limit: float, workers: int) -> tuple[
        dict[str, Any], str]:
    """Per set: proven optimal, matching the best known, mean/max gap to the best-known UB, times."""
    table = [
        f"PSPLIB with `spacetime-cp`, {time_limit:g} s and {workers} CP-SAT worker(s) per instance "
        "(PyJobShop: CP-SAT, 900 s per instance).",
        "",
        "| set | solved | proven optimal | PyJobShop proven | = best known | mean gap to best UB | max gap "
        "| below best LB | verified | mean / max time (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    summary: dict[str, Any] = {}
    for name in sets:
        chosen = [row for row in rows.values() if row["set"] == name]
        if not chosen:
            continue
        makespan = np.array([float(row["makespan"]) for row in chosen])
        best_ub = np.array([float(row["best_ub"]) for row in chosen])
        best_lb = np.array([float(row["best_lb"]) for row in chosen])
        proven = sum(row["status"] == "optimal" for row in chosen)
        gap = (makespan - best_ub) / best_ub
        times = np.array([float(row["wall_s"]) for row in chosen])
        # A proven optimum below the best-known lower bound would mean a wrong model or a wrong bound.
        below_lb = int(np.sum(makespan < best_lb - 1e-9))
        verified = sum(row["verified"] == "True" for row in chosen)
        reference, total = PYJOBSHOP_OPTIMAL[name]
        summary[name] = {
            "instances": len(chosen), "proven_optimal": proven, "equal_best_known": int(np.sum(gap <= 1e-9)),
            "mean_gap_pct": float(100 * gap.mean()), "max_gap_pct": float(100 * gap.max()),
            "below_best_lb": below_lb, "verified": verified, "mean_s": float(times.mean()),
            "max_s": float(times.max()), "pyjobshop_proven": reference, "set_size": total,
        }
        table.append(
            f"| {name} | {len(chosen)}/{total} | {proven} ({100 * proven / len(chosen):.1f}%) | "
            f"{reference if reference is not None else '-'}/{total} | {int(np.sum(gap <= 1e-9))} | "
            f"{100 * gap.mean():.2f}% | {100 * gap.max():.1f}% | {below_lb} | {verified} | "
            f"{times.mean():.1f} / {times.max():.1f} |"
        )
    return summary, "\n".join(table)


def main() -> None:
    parse = parser(__doc__.splitlines()[0])
    parse.add_argument("--sets", nargs="+", default=["j30", "j60", "j120"], choices=sorted(PYJOBSHOP_OPTIMAL))
    parse.add_argument("--time-limit", type=float, default=10.0)
    parse.add_argument("--workers", type=int, default=1, help="CP-SAT workers per instance")
    parse.add_argument("--processes", type=int, default=1)
    parse.add_argument("--per-set", type=int, default=None, help="solve only the first N of each set")
    args = parse.parse_args()
    data_dir = psplib_folder(args.data_dir)
    if data_dir is None:
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    rows = run(data_dir, args.sets, args.time_limit, args.workers, args.processes, args.per_set,
               out / "psplib_sets.csv")
    summary, markdown = summarise(rows, args.sets, args.time_limit, args.workers)
    load = {"start": list(load_start), "end": list(os.getloadavg())}
    markdown += "\n\n" + load_note(load) + "; rows resumed from an earlier run keep that run's timings."
    save("psplib_sets", {"time_limit_s": args.time_limit, "workers": args.workers, "processes": args.processes,
                         "load_average": load, "sets": summary}, markdown, out)  # fmt: skip


if __name__ == "__main__":
    main()
