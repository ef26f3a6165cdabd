"""Carbyne's claim on DAG jobs, and how far the list heuristics are from the exact space-time schedules.

1. Generated barrier-rich mixes (``models.generators.random_dag_jobs``, a few seeds, all jobs released
   at 0, small enough for the exact methods): ``carbyne``, ``drf-dag``, ``tetris``, ``sjf`` against
   ``spacetime`` (time-indexed MILP, avg JCT, ``C_k <= T_k`` caps on) and ``spacetime-cp`` (CP-SAT, avg
   JCT, the same fair completion times ``T_k`` passed in), each exact method under ``--exact-limit``
   seconds. Per method: avg JCT, p95 JCT, makespan, windowed Jain index (one window per instance:
   ``drf-dag``'s makespan / 20), jobs later than ``T_k``, and each heuristic's avg-JCT gap to the best
   exact objective and to the best proven lower bound. Both exact methods solve the *fair-capped*
   problem, so its bound need not bound a heuristic that breaks some ``T_k``; a negative gap means that.
2. TPC-H mixes (``models.generators.tpch_jobs`` on ``<data-dir>/tpch``; skipped when absent): the
   heuristics plus ``spacetime-cp`` under ``--tpch-limit`` seconds.

3. Speed (target: the fair-share baseline ``T_k`` of a 36,000-task mix in <= 1 s, ``carbyne``
   <= 100 us per task), saved apart as ``dag_speed``: on the TPC-H mix of 50 queries on 250 executors
   (``tpch`` family, seed 0, 36,008 tasks), ``T_k`` (``fair_completion_times``) and each DAG heuristic's
   simulation, timed as shipped and, in the same run, with the code before picks became incremental (the
   tests' reference, ``tests/dag_reference.py``, for ``drf-strict`` -- the ``T_k`` schedule -- and
   ``carbyne``); both must give the same schedule, task by task.

The summary compares ``drf-dag``/``carbyne`` avg JCT and the Jain difference with the Carbyne paper's
headline (OSDI'16: 1.59x lower average JCT than DRF, Jain's index within 0.05 of DRF's).

Run: ``python -m benchmarks.dag_carbyne`` (about 2.5 minutes on 2 cores, plus about 3 for part 3);
``--speed-only`` runs part 3 alone.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from benchmarks._common import data_dir_or_none, load_line, parser, save, timed
from fairpack.models.generators import random_dag_jobs, tpch_jobs
from fairpack.models.metrics import schedule_metrics
from fairpack.models.result import Result, Schedule
from fairpack.models.types import Instance
from fairpack.solver.api import solve

T = TypeVar("T")
HEURISTICS = ("carbyne", "drf-dag", "tetris", "sjf")
EXACT = ("spacetime", "spacetime-cp")
PAPER_RATIO, PAPER_JAIN = 1.59, 0.05
TPCH_MIXES = (("2g-q1", "2g-q3", "2g-q6", "2g-q14", "2g-q17", "2g-q19"),
              ("2g-q4", "2g-q10", "2g-q12", "2g-q15", "2g-q18", "2g-q22"))  # fmt: skip


def _fair(result: Result) -> dict[str, float] | None:
    fair = result.extra.get("fair_completion")
    if not isinstance(fair, dict):
        return None
    return {name: float(value) for name, value in fair.items() if value is not None and math.isfinite(value)}


def _row(instance: Instance, label: str, method: str, result: Result, seconds: float,
         window: float, fair: np.ndarray | None) -> dict[str, Any]:  # fmt: skip
    row: dict[str, Any] = {"instance": label, "method": method, "status": result.status,
                           "verified": result.verified, "seconds": seconds, "objective": result.objective,
                           "bound": result.bound, "gap": result.gap}  # fmt: skip
    if result.schedule is None:
        return row
    metrics = schedule_metrics(instance, result.schedule, window=window, fair=fair)
    row.update({key: metrics[key] for key in ("avg_jct", "p95_jct", "makespan", "jain")})
    row["late"] = metrics.get("late")
    return row


def _mix(instance: Instance, label: str, exact: dict[str, float]) -> list[dict[str, Any]]:
    """Run every method on one instance; ``exact`` maps exact method -> time limit."""
    results: dict[str, tuple[Result, float]] = {}
    for method in HEURISTICS:
        results[method] = timed(lambda m=method: solve(instance, m, objective="avg-jct"))
    fair_map = _fair(results["carbyne"][0])
    fair = None
    if fair_map is not None:
        fair = np.array([fair_map.get(job.name, math.inf) for job in instance.jobs])
    for method, limit in exact.items():
        extra: dict[str, Any] = {}
        if method == "spacetime-cp" and fair_map:
            extra["fair_completion"] = fair_map
        results[method] = timed(
            lambda m=method, limit=limit, extra=extra: solve(
                instance, m, objective="avg-jct", time_limit=limit, extra=extra
            )
        )
    drf = results["drf-dag"][0].schedule
    window = max(float(drf.end.max()) / 20, 1e-9) if drf is not None and len(drf) else 1.0
    rows = [_row(instance, label, m, r, s, window, fair) for m, (r, s) in results.items()]
    exact_rows = [r for r in rows if r["method"] in EXACT and r.get("avg_jct") is not None and r["verified"]]
    best = min((r["avg_jct"] for r in exact_rows), default=None)
    bounds = [r["bound"] for r in rows if r["method"] in EXACT and r["bound"] is not None]
    bound = max(bounds) if bounds else None
    for row in rows:
        row["tasks"] = sum(stage.tasks for job in instance.jobs for stage in job.stages)
        row["jobs"] = len(instance.jobs)
        row["best_exact"], row["best_bound"] = best, bound
        value = row.get("avg_jct")
        row["gap_to_best"] = (value - best) / best if value is not None and best else None
        row["gap_to_bound"] = (value - bound) / bound if value is not None and bound else None
        print({k: row[k] for k in ("instance", "method", "status", "seconds", "avg_jct", "late", "gap_to_bound")
               if k in row}, flush=True)  # fmt: skip
    return rows


def _number(value: Any, digits: str = ".2f") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return format(value, digits)


def _percent(value: Any) -> str:
    return "-" if value is None else f"{100 * value:+.1f}%"


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| instance | tasks | method | status | avg JCT | p95 JCT | makespan | Jain | late / jobs "
             "| gap to best exact | gap to bound | time s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        late = "-" if r.get("late") is None else f"{r['late']} / {r['jobs']}"
        exact = r["method"] in EXACT
        status = r["status"] + ("" if r["verified"] else " (NOT verified)")
        lines.append(
            f"| {r['instance']} | {r['tasks']} | {r['method']} | {status} "
            f"| {_number(r.get('avg_jct'))} | {_number(r.get('p95_jct'))} | {_number(r.get('makespan'))} "
            f"| {_number(r.get('jain'), '.3f')} | {late} | {_percent(r.get('gap_to_best'))} "
            f"| {_percent(r.get('gap_to_bound'))}{' (own gap ' + _percent(r['gap']) + ')' if exact else ''} "
            f"| {r['seconds']:.1f} |"
        )
    return lines


def _claims(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for label in dict.fromkeys(r["instance"] for r in rows):
        by = {r["method"]: r for r in rows if r["instance"] == label}
        carbyne, drf = by.get("carbyne"), by.get("drf-dag")
        if not carbyne or not drf or not carbyne.get("avg_jct"):
            continue
        out.append({"instance": label, "ratio": drf["avg_jct"] / carbyne["avg_jct"],
                    "jain_carbyne": carbyne["jain"], "jain_drf": drf["jain"],
                    "jain_diff": carbyne["jain"] - drf["jain"], "late_carbyne": carbyne["late"],
                    "late_drf": drf["late"]})  # fmt: skip
    return out


def _summary(claims: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| instance | drf-dag / carbyne avg JCT | Jain carbyne | Jain drf-dag | difference "
             "| late carbyne / drf-dag |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for c in claims:
        lines.append(f"| {c['instance']} | {c['ratio']:.3f}x | {c['jain_carbyne']:.3f} | {c['jain_drf']:.3f} "
                     f"| {c['jain_diff']:+.3f} | {c['late_carbyne']} / {c['late_drf']} |")  # fmt: skip
    if not claims:
        return lines
    ratios = np.array([c["ratio"] for c in claims])
    diffs = np.array([c["jain_diff"] for c in claims])
    geo = float(np.exp(np.mean(np.log(ratios))))
    within = int(np.sum(np.abs(diffs) <= PAPER_JAIN))
    lines += ["", f"Carbyne vs DRF (drf-dag): avg JCT {geo:.2f}x lower (geometric mean over {len(claims)} mixes, "
              f"range {ratios.min():.2f}-{ratios.max():.2f}x) against the paper's {PAPER_RATIO}x; Jain within "
              f"{PAPER_JAIN} of DRF's on {within} of {len(claims)} mixes (differences {diffs.min():+.3f} to "
              f"{diffs.max():+.3f})."]  # fmt: skip
    lines.append("Heuristics' avg-JCT gaps on the generated mixes (TPC-H exact runs are time-limited):")
    for method in HEURISTICS:
        gaps = [r["gap_to_best"] for r in rows if r["method"] == method and r.get("gap_to_best") is not None]
        bound_gaps = [r["gap_to_bound"] for r in rows if r["method"] == method and r.get("gap_to_bound") is not None]
        if gaps:
            lines.append(f"- {method}: avg-JCT gap to the best exact schedule mean {_percent(float(np.mean(gaps)))}, "
                         f"max {_percent(max(gaps))}" + (f"; to the proven bound mean "
                         f"{_percent(float(np.mean(bound_gaps)))}" if bound_gaps else ""))  # fmt: skip
    return lines


SPEED_MIX = {"queries": 50, "executors": 250}  # the 36,008-task speed mix (tpch family, seed 0)
TARGET_FAIR_S, TARGET_CARBYNE_US = 1.0, 100.0


def _clock(function: Callable[[], T]) -> tuple[T, float, float]:
    """``function()``, its wall seconds and this process's CPU seconds (the machine is shared: CPU is steadier)."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = function()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def _same_schedule(a: Schedule, b: Schedule) -> bool:
    return all(np.array_equal(getattr(a, c), getattr(b, c)) for c in ("job", "stage", "index", "start", "end"))


def _speed(folder: Path) -> dict[str, Any]:
    """Part 3: ``T_k`` and every DAG heuristic on the speed mix, shipped and (where kept) as before."""
    from unittest import mock

    from fairpack.models.generators.families import FAMILIES
    from fairpack.solver.sim.fairshare import fair_completion_times
    from fairpack.solver.sim.policies.dag import HEURISTICS as POLICIES
    from fairpack.solver.sim.runs import run_policy
    from fairpack.solver.sim.workload import Workload
    from tests.dag_reference import ReferenceCarbyne, ReferenceDrfStrict

    def before(name: str, jobs: Workload, extra: dict[str, Any]) -> Any:
        return {"carbyne": ReferenceCarbyne, "drf-strict": ReferenceDrfStrict}[name](jobs)

    instance = FAMILIES["tpch"].instance(SPEED_MIX, 0, folder)
    tasks = sum(stage.tasks for job in instance.jobs for stage in job.stages)
    jobs = Workload.of_jobs(instance, "pooled")
    rows: list[dict[str, Any]] = []
    load = os.getloadavg()[0]
    fair, now, cpu = _clock(lambda: fair_completion_times(instance, "pooled", jobs))
    with mock.patch("fairpack.solver.sim.fairshare.DrfStrict", ReferenceDrfStrict):
        old_fair, then, before_cpu = _clock(lambda: fair_completion_times(instance, "pooled", jobs))
    rows.append({"what": "T_k (fair_completion_times)", "seconds": now, "cpu_s": cpu, "before_s": then,
                 "before_cpu_s": before_cpu,
                 "same": bool(np.array_equal(fair.completion, old_fair.completion)
                              and _same_schedule(fair.schedule, old_fair.schedule)), "load": load})
    print(rows[-1], flush=True)
    for name in POLICIES:
        load = os.getloadavg()[0]
        (schedule, _), seconds, cpu = _clock(lambda n=name: run_policy(instance, n, {}, jobs))
        row: dict[str, Any] = {"what": name, "seconds": seconds, "cpu_s": cpu, "load": load}
        if name in ("carbyne", "drf-strict"):
            with mock.patch("fairpack.solver.sim.runs.make_policy", before):
                (old, _), *times = _clock(lambda n=name: run_policy(instance, n, {}, jobs))
            row["before_s"], row["before_cpu_s"] = times
            row["same"] = _same_schedule(schedule, old)
        rows.append(row)
        print(row, flush=True)
    for row in rows:
        row["us_per_task"] = 1e6 * row["cpu_s"] / tasks
    return {"tasks": tasks, "jobs": len(instance.jobs), "mix": SPEED_MIX, "rows": rows}


def _speed_table(speed: dict[str, Any]) -> list[str]:
    lines = [f"# DAG heuristics' speed on a TPC-H mix ({speed['jobs']} queries, {speed['tasks']:,} tasks, "
             f"{speed['mix']['executors']} executors, seed 0)", "", load_line(), "",
             f"Targets: T_k <= {TARGET_FAIR_S:g} s, carbyne <= {TARGET_CARBYNE_US:g} us per task. "
             "`before` is the code before picks became incremental (`tests/dag_reference.py`), timed in the same "
             "run; `same`: identical schedules, task by task. Load: the 1-minute load average when the row started.",
             "Seconds are wall / CPU; us per task and the speed-up are from CPU seconds.",
             "", "| what | seconds | us per task | before s | speed-up | same | load |",
             "|---|---:|---:|---:|---:|---|---:|"]  # fmt: skip
    for r in speed["rows"]:
        old = r.get("before_s")
        before = ("| | |" if old is None else f"| {old:.2f} / {r['before_cpu_s']:.2f} "
                  f"| {r['before_cpu_s'] / r['cpu_s']:.1f}x | {'yes' if r['same'] else 'NO'}")
        lines.append(f"| {r['what']} | {r['seconds']:.2f} / {r['cpu_s']:.2f} | {r['us_per_task']:.0f} {before} "
                     f"| {r['load']:.1f} |")
    return lines


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--seeds", default="1,2,3,4")
    arguments.add_argument("--jobs", type=int, default=4)
    arguments.add_argument("--stages", default="2,4", help="stages per job, inclusive range")
    arguments.add_argument("--exact-limit", type=float, default=20.0, help="seconds per exact solve")
    arguments.add_argument("--tpch-limit", type=float, default=30.0, help="seconds for spacetime-cp on TPC-H")
    arguments.add_argument("--speed-only", action="store_true", help="run part 3 (speed) alone")
    args = arguments.parse_args()
    folder = data_dir_or_none(args.data_dir)
    if folder is not None and (folder / "tpch" / "tpch_dag_summary.json").is_file():
        speed = _speed(folder)
        save("dag_speed", speed, "\n".join(_speed_table(speed)), args.out)
    else:
        print(f"no TPC-H data under {args.data_dir}; skipping part 3", flush=True)
    if args.speed_only:
        return
    low, high = (int(v) for v in args.stages.split(","))
    generated: list[dict[str, Any]] = []
    for seed in [int(s) for s in args.seeds.split(",") if s]:
        instance = random_dag_jobs(seed, jobs=args.jobs, stages_range=(low, high), barrier_rich=True)
        label = f"barrier {args.jobs}j seed {seed}"
        generated += _mix(instance, label, {m: args.exact_limit for m in EXACT})
    tpch: list[dict[str, Any]] = []
    if folder is not None and (folder / "tpch" / "tpch_dag_summary.json").is_file():
        for position, queries in enumerate(TPCH_MIXES):
            instance = tpch_jobs(folder, list(queries), seed=position)
            label = f"TPC-H mix {position + 1} ({len(queries)} queries)"
            tpch += _mix(instance, label, {"spacetime-cp": args.tpch_limit})
    else:
        print(f"no TPC-H data under {args.data_dir}; skipping part 2", flush=True)
    claims = _claims(generated + tpch)
    lines = ["# Carbyne's claim and the DAG heuristics' optimality gaps", "",
             f"Generated barrier-rich mixes ({args.jobs} jobs, {low}-{high} stages, released at 0); exact methods "
             f"minimise avg JCT subject to C_k <= T_k, {args.exact_limit:g} s each. Gaps are (avg JCT - "
             "reference) / reference; a bound is for the fair-capped problem.", "", *_table(generated)]  # fmt: skip
    if tpch:
        lines += ["", "## TPC-H mixes", "", f"spacetime-cp limited to {args.tpch_limit:g} s.", "", *_table(tpch)]
    else:
        lines += ["", "TPC-H data absent: part 2 skipped."]
    lines += ["", "## Against the Carbyne paper (1.59x lower avg JCT than DRF, Jain within 0.05)", "",
              *_summary(claims, generated)]  # fmt: skip
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "data_dir")}  # no paths of this machine
    save("dag_carbyne", {"generated": generated, "tpch": tpch, "claims": claims, "settings": settings},
         "\n".join(lines), args.out)


if __name__ == "__main__":
    main()
