"""Tetrisched, alsched, Jockey, hard-only and oblivious on the simulator, against the clairvoyant optimum.

Workloads: ``fairpack generate tetrisched`` (:mod:`fairpack.models.generators.soft`): 16 one-slot machines on 4
racks, 4 of them GPU machines in two racks; GPU-preferring jobs (2.5x slower elsewhere), MPI jobs that run
as a gang in one rack (1.5x slower spread), unconstrained jobs; 70% SLO jobs (deadline ``1.5-3x`` the
preferred duration after arrival, worth 100 until it, 0 one unit later), the rest best-effort (utility
``-JCT``); Poisson arrivals at an offered load (work at preferred durations over the machines).

For every policy and the clairvoyant optimum (``spacetime-cp --objective utility --no-fair-cap``, CP-SAT
with full knowledge of arrivals and true durations, warm-started from the policies' schedules; its proof
status is reported): SLO attainment (deadline jobs that meet their deadline), total utility, best-effort
mean JCT, utilisation (busy machine time over machines x makespan) and the utility gap to the optimum's
incumbent (``gap``) and to its proven bound (``bound gap``, never below the true gap).

Curves: SLO attainment against the plan-ahead window ``W`` (0, 1, 2, 4, 8 mean durations) at the sweep's
main load; against offered load; against the estimate error (``estimate_error`` e: believed durations
``x (1 + e u)``, u uniform in [-1, 1]). Speed: one ``tetrisched`` cycle with 50 pending jobs on 100 machines,
against its cycle limit, and how often the plan was proven optimal.

Every simulated schedule is verified by ``models.check`` (labels, gangs, option durations, capacity); the
optimum too. Planner cycles use CP-SAT's deterministic time (``cycle_limit`` work units), so a run repeats on
a loaded machine. Results are cached by set-up in ``benchmarks/results/tetrisched.json`` (``--rerun``
recomputes); ``--readme benchmarks/README.md`` splices the tables and the figure between that README's tetrisched
markers.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import load_line, machine_state, parser, save
from fairpack.models.generators.soft import soft_workload
from fairpack.models.result import Result
from fairpack.models.types import Instance
from fairpack.models.view import result_json
from fairpack.solver.api import finish, simulate
from fairpack.solver.registry import get_method

NAME = "tetrisched"
BEGIN, END = "<!-- tetrisched:begin -->", "<!-- tetrisched:end -->"
POLICIES = ("tetrisched", "alsched", "hard-only", "oblivious", "jockey")
WINDOWS = (0.0, 1.0, 2.0, 4.0, 8.0)


def mean_duration(instance: Instance) -> float:
    """Mean preferred task duration (the unit of the plan-ahead window)."""
    tasks = np.array([s.tasks for j in instance.jobs for s in j.stages], dtype=np.float64)
    return float(np.average([s.duration for j in instance.jobs for s in j.stages], weights=tasks))


def metrics(instance: Instance, result: Result) -> dict[str, Any]:
    """SLO attainment, utility, best-effort mean JCT and utilisation of a verified result."""
    if not result.verified:
        raise RuntimeError(f"{result.method}: not verified: {result.violations[:3]}")
    data = result_json(instance, result)
    best_effort = [j for j in instance.jobs if not np.isfinite(j.deadline)]
    jct = [data["jobs"][j.name]["completion"] - j.release for j in best_effort]
    schedule = result.schedule
    assert schedule is not None
    busy = float((schedule.end - schedule.start).sum())
    machines = int(instance.counts.sum())
    return {"slo": data.get("slo_attainment"), "utility": data["utility"],
            "be_jct": float(np.mean(jct)) if jct else None,
            "utilisation": busy / (machines * float(schedule.end.max())), "wall_s": round(result.wall_s, 2),
            "cycles": result.extra.get("cycles"), "cycles_optimal": result.extra.get("cycles_optimal"),
            "unfinished": len(result.extra.get("unfinished_jobs", []))}  # fmt: skip


def run_policy(instance: Instance, policy: str, limit: float, seed: int = 0,
               **extra: Any) -> tuple[dict[str, Any], Result]:  # fmt: skip
    settings = dict(extra)
    if policy in ("tetrisched", "alsched"):
        settings["cycle_limit"] = limit
        settings["deterministic"] = True
    result = simulate(instance, policy, seed=seed, extra=settings)
    return {"policy": policy, **extra, **metrics(instance, result)}, result


def optimum(instance: Instance, warm: Sequence[Result], limit: float) -> dict[str, Any]:
    """The clairvoyant optimum of total utility (CP-SAT, warm-started from the policies' schedules)."""
    from fairpack.solver.spacetime.choice_cp import solve_choice_cp

    started = time.perf_counter()
    raw = solve_choice_cp(instance, "utility", limit, workers=1, seed=0,
                          warm=[r.schedule for r in warm if r.schedule is not None and not r.extra.get(
                              "unfinished_jobs")])  # fmt: skip
    result = finish(instance, get_method("spacetime-cp"), raw, started)
    return {"policy": "optimum", "status": result.status, "bound": result.bound, **metrics(instance, result)}


def gaps(rows: list[dict[str, Any]], best: dict[str, Any]) -> None:
    """Each row's utility gap to the optimum's incumbent and to its proven bound (relative to |value|)."""
    for row in rows:
        scale = max(abs(best["utility"]), 1e-9)
        row["gap"] = (best["utility"] - row["utility"]) / scale
        bound = best.get("bound")
        row["bound_gap"] = None if bound is None else (bound - row["utility"]) / max(abs(bound), 1e-9)


def by_load(loads: Sequence[float], seeds: Sequence[int], jobs: int, limit: float,
            optimum_limit: float) -> list[dict[str, Any]]:  # fmt: skip
    """Every policy and the optimum at every load and seed."""
    rows = []
    for load in loads:
        for seed in seeds:
            instance = soft_workload(seed, jobs, load=load)
            found, results = [], []
            for policy in POLICIES:
                row, result = run_policy(instance, policy, limit)
                found.append(row)
                results.append(result)
            best = optimum(instance, results, optimum_limit)
            gaps([*found, best], best)
            rows += [{**row, "load": load, "seed": seed} for row in [*found, best]]
            print(f"load {load} seed {seed}: " + ", ".join(f"{r['policy']} {r['slo']:.2f}" for r in [*found, best]),
                  flush=True)  # fmt: skip
    return rows


def by_window(load: float, seeds: Sequence[int], jobs: int, limit: float) -> list[dict[str, Any]]:
    rows = []
    for seed in seeds:
        instance = soft_workload(seed, jobs, load=load)
        unit = mean_duration(instance)
        for window in WINDOWS:
            row, _ = run_policy(instance, "tetrisched", limit, plan_ahead=window * unit)
            rows.append({**row, "window": window, "seed": seed, "load": load})
        print(f"window sweep seed {seed}: " + ", ".join(f"{r['window']:g} {r['slo']:.2f}" for r in rows[-5:]),
              flush=True)  # fmt: skip
    return rows


def by_error(load: float, seeds: Sequence[int], jobs: int, limit: float,
             errors: Sequence[float]) -> list[dict[str, Any]]:  # fmt: skip
    rows = []
    for seed in seeds:
        instance = soft_workload(seed, jobs, load=load)
        for error in errors:
            for policy in POLICIES:
                row, _ = run_policy(instance, policy, limit, estimate_error=error, seed=seed)
                rows.append({**row, "error": error, "seed": seed, "load": load})
        print(f"error sweep seed {seed} done", flush=True)
    return rows


def speed(seeds: Sequence[int], jobs: int, limit: float) -> list[dict[str, Any]]:
    """One tetrisched cycle: ``jobs`` pending jobs (all released at 0) on 100 machines (10 racks of 10, 10 GPUs)."""
    rows = []
    warm = soft_workload(0, jobs, racks=10, per_rack=10, gpu_racks=2, gpus_per_rack=5, load=1e9)
    simulate(warm, "tetrisched", extra={"horizon": 0.0, "cycle_limit": limit})  # imports and caches, not timed
    for seed in seeds:
        instance = soft_workload(seed, jobs, racks=10, per_rack=10, gpu_racks=2, gpus_per_rack=5, load=1e9)
        result = simulate(instance, "tetrisched", extra={"horizon": 0.0, "cycle_limit": limit})
        if not result.verified:
            raise RuntimeError(f"speed cycle not verified: {result.violations[:3]}")
        rows.append({"seed": seed, "jobs": jobs, "tasks": sum(s.tasks for j in instance.jobs for s in j.stages),
                     "machines": int(instance.counts.sum()), "cycle_s": result.extra["cycle_s_max"],
                     "optimal": bool(result.extra["cycles_optimal"]), "launched": len(result.schedule or [])})
    return rows


def _mean(rows: list[dict[str, Any]], key: str, **match: Any) -> float:
    values = [r[key] for r in rows if all(r.get(k) == v for k, v in match.items()) and r.get(key) is not None]
    return float(np.mean(values)) if values else float("nan")


def figure(data: dict[str, Any], path: Path) -> None:
    from fairpack.solver.bench.report import panels, save_png

    fig, axes = panels(3, 3, width=4.6, height=3.6)
    windows = data["windows"]
    axes[0].plot(WINDOWS, [_mean(windows, "slo", window=w) for w in WINDOWS], "o-", label="tetrisched")
    axes[0].set_xlabel("plan-ahead W (mean durations)")
    loads = data["setup"]["loads"]
    for policy in (*POLICIES, "optimum"):
        axes[1].plot(loads, [_mean(data["loads"], "slo", policy=policy, load=x) for x in loads], "o-", label=policy)
    axes[1].set_xlabel("offered load")
    errors = data["setup"]["errors"]
    for policy in POLICIES:
        axes[2].plot(errors, [_mean(data["errors"], "slo", policy=policy, error=e) for e in errors], "o-",
                     label=policy)  # fmt: skip
    axes[2].set_xlabel("estimate error e")
    for axis in axes:
        axis.set_ylabel("SLO attainment")
        axis.grid(alpha=0.3)
    axes[1].legend(fontsize=8)
    save_png(fig, path, f"SLO attainment ({len(data['setup']['seeds'])} seeds, {data['setup']['jobs']} jobs, "
                        "16 machines): plan-ahead, load, estimate error")  # fmt: skip


def markdown(data: dict[str, Any], picture: str) -> list[str]:
    setup = data["setup"]
    rows, load = data["loads"], setup["main_load"]
    lines = [f"Set-up: `fairpack generate tetrisched` ({setup['jobs']} jobs, 16 one-slot machines on 4 racks, 4 "
             f"GPUs), seeds {setup['seeds']}; planner cycles of {setup['limit']} s (CP-SAT deterministic time); "
             f"clairvoyant optimum: CP-SAT {setup['optimum_limit']} s, warm-started from the policies. "
             f"{data['load_line']} Whole run: {data['seconds']:.0f} s.", "",
             f"![Tetrisched curves]({picture})", "",
             "| load | policy | SLO attainment | total utility | best-effort mean JCT | utilisation | gap | "
             "bound gap | optimum proven |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for x in setup["loads"]:
        proven = sum(r["status"] == "optimal" for r in rows if r["policy"] == "optimum" and r["load"] == x)
        for policy in (*POLICIES, "optimum"):
            lines.append(f"| {x:g} | {policy} | {_mean(rows, 'slo', policy=policy, load=x):.3f} | "
                         f"{_mean(rows, 'utility', policy=policy, load=x):.1f} | "
                         f"{_mean(rows, 'be_jct', policy=policy, load=x):.2f} | "
                         f"{_mean(rows, 'utilisation', policy=policy, load=x):.3f} | "
                         f"{_mean(rows, 'gap', policy=policy, load=x):.3f} | "
                         f"{_mean(rows, 'bound_gap', policy=policy, load=x):.3f} | "
                         f"{proven}/{len(setup['seeds']) if policy == 'optimum' else '-'} |")
    lines += ["", f"SLO attainment against the plan-ahead window (load {load:g}):", "",
              "| W (mean durations) | " + " | ".join(f"{w:g}" for w in WINDOWS) + " |",
              "|---|" + "---|" * len(WINDOWS),
              "| tetrisched | " + " | ".join(f"{_mean(data['windows'], 'slo', window=w):.3f}" for w in WINDOWS) + " |",
              "", f"SLO attainment against the estimate error (load {load:g}):", "",
              "| policy | " + " | ".join(f"e = {e:g}" for e in setup["errors"]) + " |",
              "|---|" + "---|" * len(setup["errors"])]  # fmt: skip
    for policy in POLICIES:
        lines.append(f"| {policy} | " + " | ".join(f"{_mean(data['errors'], 'slo', policy=policy, error=e):.3f}"
                                                   for e in setup["errors"]) + " |")  # fmt: skip
    fast = data["speed"]
    lines += ["", f"One `tetrisched` cycle with {fast[0]['jobs']} pending jobs ({min(r['tasks'] for r in fast)}-"
              f"{max(r['tasks'] for r in fast)} tasks) on {fast[0]['machines']} machines, cycle limit "
              f"{setup['speed_limit']} s: wall {min(r['cycle_s'] for r in fast):.2f}-"
              f"{max(r['cycle_s'] for r in fast):.2f} s (model build, warm start and solve), plan proven optimal in "
              f"{sum(r['optimal'] for r in fast)} of {len(fast)} cycles."]  # fmt: skip
    return lines


def splice(readme: str, text: str) -> str:
    start, stop = readme.find(BEGIN), readme.find(END)
    if start < 0 or stop < start:
        raise ValueError(f"the README has no '{BEGIN}' ... '{END}' block to fill")
    return readme[: start + len(BEGIN)] + "\n" + text.rstrip() + "\n" + readme[stop:]


def compute(setup: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    seeds, jobs, limit = setup["seeds"], setup["jobs"], setup["limit"]
    data: dict[str, Any] = {"setup": setup, "load_before": machine_state()["load_average"]}
    data["speed"] = speed(seeds, setup["speed_jobs"], setup["speed_limit"])
    print(f"speed: {data['speed']}", flush=True)
    data["windows"] = by_window(setup["main_load"], seeds, jobs, limit)
    data["errors"] = by_error(setup["main_load"], seeds, jobs, limit, setup["errors"])
    data["loads"] = by_load(setup["loads"], seeds, jobs, limit, setup["optimum_limit"])
    data["seconds"] = time.perf_counter() - started
    data["load_line"] = load_line()
    return data


def main(argv: Sequence[str] | None = None) -> int:
    parse = parser(__doc__.splitlines()[0])
    parse.add_argument("--seeds", type=int, default=3)
    parse.add_argument("--jobs", type=int, default=30)
    parse.add_argument("--loads", default="0.6,0.9,1.2,1.5")
    parse.add_argument("--main-load", type=float, default=1.2, help="load of the window and error curves")
    parse.add_argument("--errors", default="0,0.25,0.5")
    parse.add_argument("--limit", type=float, default=0.5, help="planner cycle limit (CP-SAT work units)")
    parse.add_argument("--optimum-limit", type=float, default=30.0, help="seconds for each clairvoyant optimum")
    parse.add_argument("--speed-jobs", type=int, default=50)
    parse.add_argument("--speed-limit", type=float, default=1.0)
    parse.add_argument("--quick", action="store_true", help="1 seed, 10 jobs, 2 loads (a smoke run)")
    parse.add_argument("--rerun", action="store_true", help="recompute even when the saved set-up is unchanged")
    parse.add_argument("--readme", default=None, help="also fill this README's tetrisched block")
    args = parse.parse_args(argv)
    setup = {"seeds": list(range(1, (1 if args.quick else args.seeds) + 1)), "jobs": 10 if args.quick else args.jobs,
             "loads": [0.9, 1.5] if args.quick else [float(v) for v in args.loads.split(",")],
             "main_load": args.main_load, "errors": [float(v) for v in args.errors.split(",")],
             "limit": args.limit, "optimum_limit": 5.0 if args.quick else args.optimum_limit,
             "speed_jobs": 10 if args.quick else args.speed_jobs, "speed_limit": args.speed_limit}  # fmt: skip
    out = Path(args.out)
    cache = out / f"{NAME}.json"
    old = json.loads(cache.read_text()) if cache.exists() and not args.quick else {}
    reused = not args.rerun and old.get("setup") == setup
    if reused:  # redraw only: the saved results (and the machine state of the run that made them) stay as they are
        print("reusing the saved results (same set-up; --rerun to recompute)")
        data = old
    else:
        data = compute(setup)
    picture = out / "figures" / f"{NAME}.png"
    picture.parent.mkdir(parents=True, exist_ok=True)
    figure(data, picture)
    lines = markdown(data, f"figures/{NAME}.png")  # relative to the results folder, where the report lies
    if not args.quick and not reused:
        save(NAME, data, "\n".join(["# Tetrisched, alsched, Jockey against the clairvoyant optimum", "", *lines]),
             out)  # fmt: skip
    else:
        print("\n".join(lines))
    if args.readme:  # the figure linked relative to the README that shows it
        path = Path(args.readme)
        prefix = os.path.relpath(picture.resolve(), path.resolve().parent).replace(os.sep, "/")
        path.write_text(splice(path.read_text(), "\n".join(markdown(data, prefix))))
    return 0



if __name__ == "__main__":
    raise SystemExit(main())
