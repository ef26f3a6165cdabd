"""``spacetime-cp`` by parts on TPC-H mixes against the DAG heuristics.

Target: on mixes of 50 and 200 queries (the ``tpch`` family: Spark TPC-H DAGs of size 2g on a pool of 50
executors, seed ``--seed``), ``spacetime-cp`` (one CP-SAT worker, ``--limit`` seconds, which it searches by
parts: :mod:`fairpack.solver.spacetime.decompose`) reaches an average JCT at least 5% below the best of the DAG
heuristics (``sjf``, ``carbyne``, ``tetris``, ``drf-dag``), with a peak resident memory of at most 4 GB.

The heuristics schedule without fair caps, so the like-for-like comparison is ``spacetime-cp --no-fair-cap``.
It also runs with the caps ``C_k <= T_k`` on (the default; ``T_k`` from the strict fair-share schedule,
``drf-strict``): then only schedules meeting every cap count, so the ratio is taken against the best
heuristic schedule that meets every cap (``drf-strict``'s always does), and the table also shows how many
jobs the best heuristic's schedule overall finishes after their ``T_k``. Every result is verified by
``models.check`` (with the caps when they are on).

Each ``spacetime-cp`` run is a fresh child process (``multiprocessing`` spawn) that builds the instance and
reports its own peak memory (``resource.getrusage``, the interpreter and the instance included); the
heuristics run in the parent, each under ``--heuristic-limit`` seconds. The 1-minute load average is
recorded before every run (the machine is shared: wall time above the limit means waiting for a core).

``--heuristics`` picks the heuristics (Carbyne alone takes 10 minutes on 200 queries); ``--fair-cap on`` runs
only the capped case and saves ``tpch_decompose_caps`` (``--name`` overrides the file name).

``--executors-per-query 5`` instead sizes the pool as the sweep ``benchmarks/sweeps/tpch_triangle.toml`` does
(250 executors for 50 queries, 1,000 for 200), saved as ``tpch_decompose_5_per_query``.

Run: ``python -m benchmarks.tpch_decompose --data-dir ../shared/data`` (about 30 minutes on 2 cores, most of it
the heuristics on 200 queries), then ``... --executors-per-query 5 --fair-cap off``.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import resource
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import data_dir_or_none, load_line, parser, save
from fairpack.models.metrics import schedule_metrics
from fairpack.models.types import Instance

HEURISTICS = ("sjf", "carbyne", "tetris", "drf-dag", "drf-strict")
TARGET_RATIO, TARGET_MIB = 0.95, 4096.0


def _instance(data_dir: str, queries: int, seed: int, per_query: int = 0) -> Instance:
    """The ``tpch`` family's mix: 50 executors, or ``per_query`` executors per query (the sweep
    ``benchmarks/sweeps/tpch_triangle.toml`` uses 5)."""
    from fairpack.models.generators.families import FAMILIES

    sizes = {"queries": queries} | ({"executors": per_query * queries} if per_query else {})
    return FAMILIES["tpch"].instance(sizes, seed, Path(data_dir))


def _child(data_dir: str, queries: int, seed: int, limit: float, fair_cap: bool, per_query: int = 0
           ) -> dict[str, Any]:  # fmt: skip
    """One ``spacetime-cp`` run in this (fresh) process: its numbers and this process's peak memory."""
    from fairpack.solver.api import solve

    instance = _instance(data_dir, queries, seed, per_query)
    wall, cpu = time.perf_counter(), time.process_time()
    result = solve(instance, "spacetime-cp", objective="avg-jct", time_limit=limit, workers=1, seed=seed,
                   fair_cap=fair_cap)  # fmt: skip
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    # T_k per job name, as the schedule carries them (None when they were not computed).
    caps = None if result.schedule is None else result.schedule.fair_completion
    fair = None if caps is None else {job.name: float(t) for job, t in zip(instance.jobs, caps, strict=True)}
    return {
        "wall_s": wall, "cpu_s": cpu, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "status": result.status, "verified": result.verified, "avg_jct": result.objective, "bound": result.bound,
        "message": result.message, "violations": list(result.violations[:3]),
        "found_by": result.extra.get("found_by"), "decomposition": result.extra.get("decomposition"),
        "fair_completion": fair,
    }  # fmt: skip


def _run(args: tuple[Any, ...]) -> dict[str, Any]:
    return _child(*args)


def _heuristics(instance: Instance, limit: float, methods: tuple[str, ...] = HEURISTICS) -> dict[str, dict[str, Any]]:
    from fairpack.solver.api import solve

    rows = {}
    for method in methods:
        load = os.getloadavg()[0]
        started = time.perf_counter()
        result = solve(instance, method, objective="avg-jct", time_limit=limit)
        rows[method] = {"status": result.status, "verified": result.verified, "avg_jct": result.objective,
                        "seconds": time.perf_counter() - started, "load_1min": load,
                        "schedule": result.schedule}  # fmt: skip
        print(method, {k: v for k, v in rows[method].items() if k != "schedule"}, flush=True)
    return rows


def _late(instance: Instance, heuristic: dict[str, Any], fair: dict[str, float] | None) -> int | None:
    """Jobs the heuristic's schedule finishes after their T_k (None without T_k)."""
    if fair is None or heuristic["schedule"] is None:
        return None
    caps = np.array([fair.get(job.name, math.inf) for job in instance.jobs], dtype=np.float64)
    late = schedule_metrics(instance, heuristic["schedule"], fair=caps).get("late")
    return None if late is None else int(late)


def _mix(data_dir: str, queries: int, seed: int, limit: float, heuristic_limit: float, per_query: int,
         caps: tuple[bool, ...], methods: tuple[str, ...] = HEURISTICS) -> list[dict[str, Any]]:  # fmt: skip
    instance = _instance(data_dir, queries, seed, per_query)
    tasks = sum(stage.tasks for job in instance.jobs for stage in job.stages)
    executors = int(instance.servers[0].capacity[0])
    print(f"TPC-H {queries} queries, seed {seed}: {tasks:,} tasks, {executors} executors", flush=True)
    heuristics = _heuristics(instance, heuristic_limit, methods)
    finished = {m: h for m, h in heuristics.items() if h["status"] == "feasible" and h["verified"]}
    best = min(finished, key=lambda m: finished[m]["avg_jct"]) if finished else None
    context = multiprocessing.get_context("spawn")
    rows = []
    for fair_cap in caps:
        load = os.getloadavg()[0]
        with context.Pool(1) as pool:
            measured = pool.apply(_run, ((data_dir, queries, seed, limit, fair_cap, per_query),))
        row: dict[str, Any] = {"queries": queries, "seed": seed, "tasks": tasks, "executors": executors,
                               "fair_cap": fair_cap, "limit_s": limit,
                               "load_1min": load, **measured, "best_heuristic": best,
                               "heuristics": {m: {k: v for k, v in h.items() if k != "schedule"}
                                              for m, h in heuristics.items()}}  # fmt: skip
        row["best_heuristic_jct"] = None if best is None else finished[best]["avg_jct"]
        row["best_heuristic_late"] = None if best is None else _late(instance, finished[best], row["fair_completion"])
        late = {m: _late(instance, h, row["fair_completion"]) for m, h in finished.items()}
        for m, h in row["heuristics"].items():
            h["late_jobs"] = late.get(m)
        # Under caps the like-for-like reference is the best heuristic schedule that meets every cap.
        compared = {m: h for m, h in finished.items() if not fair_cap or late[m] == 0}
        row["compared_with"] = min(compared, key=lambda m: compared[m]["avg_jct"]) if compared else None
        best_jct = None if row["compared_with"] is None else compared[row["compared_with"]]["avg_jct"]
        row["compared_jct"] = best_jct
        ok = row["verified"] and row["avg_jct"] is not None and best_jct is not None
        row["ratio"] = row["avg_jct"] / best_jct if ok else None
        row["target_met"] = bool(ok and row["ratio"] <= TARGET_RATIO and row["peak_mib"] <= TARGET_MIB)
        rows.append(row)
        print({k: v for k, v in row.items() if k not in ("heuristics", "fair_completion", "decomposition")}, flush=True)
    return rows


def _shown(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _late_note(heuristic: dict[str, Any]) -> str:
    late = heuristic.get("late_jobs")
    return "" if late is None else f", {late} late"


def _markdown(rows: list[dict[str, Any]], seed: int) -> str:
    lines = [
        f"# spacetime-cp by parts on TPC-H mixes vs the DAG heuristics (seed {seed}, one CP-SAT worker)",
        "",
        load_line(),
        f"Target: avg JCT <= {TARGET_RATIO:g} x the best heuristic's (with fair caps on: the best heuristic "
        f"schedule that meets every cap, `compared with`), peak <= {TARGET_MIB:g} MiB, verified. "
        "`load` is the 1-minute load average before the spacetime-cp run; `late` counts the jobs the best "
        "heuristic's schedule finishes after their fair completion time T_k (the caps spacetime-cp meets "
        "when they are on).",
        "",
        "| queries | tasks | executors | fair cap | best heuristic | its avg JCT | late | compared with | its avg JCT "
        "| spacetime-cp avg JCT | ratio | status | verified | wall s | cpu s | peak MiB | found by | target | load |",
        "|---:|---:|---:|---|---|---:|---:|---|---:|---:|---:|---|---|---:|---:|---:|---|---|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['queries']} | {r['tasks']:,} | {r['executors']} | {'on' if r['fair_cap'] else 'off'} | "
            f"{r['best_heuristic']} | "
            f"{_shown(r['best_heuristic_jct'], '.4f')} | {_shown(r['best_heuristic_late'], 'd')} | "
            f"{r.get('compared_with', r['best_heuristic'])} | "
            f"{_shown(r.get('compared_jct', r['best_heuristic_jct']), '.4f')} | "
            f"{_shown(r['avg_jct'], '.4f')} | {_shown(r['ratio'], '.4f')} | {r['status']} | {r['verified']} | "
            f"{r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['peak_mib']:.0f} | {r['found_by']} | "
            f"{'met' if r['target_met'] else 'missed'} | {r['load_1min']:.2f} |"
        )
    lines += ["", "Heuristics (avg JCT, status, seconds, load before; jobs late against T_k where known):", ""]
    seen = set()
    for r in rows:
        if r["queries"] in seen:
            continue
        seen.add(r["queries"])
        shown = ", ".join(f"{m} {_shown(h['avg_jct'], '.4f')} ({h['status']}, {h['seconds']:.1f} s, load "
                          f"{h['load_1min']:.2f}{_late_note(h)})" for m, h in r["heuristics"].items())  # fmt: skip
        lines.append(f"- {r['queries']} queries: {shown}")
    lines += ["", "What each phase of the decomposition did (warm starts, job-order moves, CP-SAT parts):", ""]
    for r in rows:
        d = r["decomposition"] or {}
        warm = ", ".join(f"{k} {v:.4f}" for k, v in sorted((d.get("warm_starts") or {}).items(), key=lambda x: x[1]))
        lines.append(
            f"- {r['queries']} queries, fair cap {'on' if r['fair_cap'] else 'off'}: warm starts {warm or '-'}; "
            f"order moves {d.get('order_moves')} ({d.get('order_improvements')} improving) -> "
            f"{_shown(d.get('order_objective'), '.4f')}; CP-SAT parts {d.get('cp_steps')} steps "
            f"({d.get('cp_improvements')} improving, {d.get('cp_timeouts')} timed out); seconds {d.get('seconds')}"
        )
    messages = sorted({(r["queries"], r["fair_cap"], r["message"]) for r in rows if r["message"]})
    lines += [""] + [f"- {q} queries, fair cap {'on' if f else 'off'}: {m}" for q, f, m in messages]
    return "\n".join(lines)


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--queries", type=int, nargs="+", default=[50, 200])
    arguments.add_argument("--seed", type=int, default=0)
    arguments.add_argument("--limit", type=float, default=120.0, help="seconds for spacetime-cp")
    arguments.add_argument("--heuristic-limit", type=float, default=1800.0, help="seconds for each heuristic")
    arguments.add_argument("--executors-per-query", type=int, default=0,
                           help="0: the family's 50 executors; 5: the cluster of the tpch_triangle sweep")
    arguments.add_argument("--fair-cap", choices=("both", "off", "on"), default="both")
    arguments.add_argument("--heuristics", nargs="+", choices=HEURISTICS, default=list(HEURISTICS))
    arguments.add_argument("--name", default=None, help="results file name (default from the options)")
    args = arguments.parse_args()
    data = data_dir_or_none(args.data_dir)
    if data is None or not (data / "tpch").is_dir():
        raise SystemExit(f"no TPC-H data under {args.data_dir}")
    rows = []
    for queries in args.queries:
        caps = {"both": (False, True), "off": (False,), "on": (True,)}[args.fair_cap]
        rows += _mix(str(data), queries, args.seed, args.limit, args.heuristic_limit, args.executors_per_query,
                     caps, tuple(args.heuristics))  # fmt: skip
    name = args.name or ("tpch_decompose" + (f"_{args.executors_per_query}_per_query" if args.executors_per_query
                                             else "") + ("_caps" if args.fair_cap == "on" else ""))  # fmt: skip
    save(name, {"rows": rows, "seed": args.seed, "executors_per_query": args.executors_per_query},
         _markdown(rows, args.seed), args.out)  # fmt: skip


if __name__ == "__main__":
    main()
