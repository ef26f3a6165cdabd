"""Delay scheduling (Zaharia et al., EuroSys'10) reproduced on the simulator: locality, response time, throughput.

1. **The analysis.** Single-task probe jobs whose block is on ``p = 0.1`` of 20 one-slot machines, in a
   cluster a background job keeps full (``models.generators.locality.locality_probe``): the simulated node
   locality of ``delay`` with ``d1 = D - 1`` skips (``D`` offers) against ``1 - (1 - p)^D``, with the
   binomial error bar (2 sigma).
2. **Locality against D** on the multi-user HDFS workload (``fairpack generate hdfs``: Facebook-shaped
   job sizes, Poisson arrivals, 4 users, 3 replicas per block on 4 racks): node-local fraction of all
   tasks and of small jobs' tasks for ``fifo``, ``fair`` and ``delay`` with ``d1 = d2 = D``.
3. **Small jobs' response time**, ``fair`` / ``delay``: the mean response time (completion - arrival) of
   jobs with at most ``SMALL`` map tasks, on the same workload (paper: up to 5x on its workload).
4. **Throughput on an IO-heavy workload**: every job arrives at 0 (a batch), remote tasks run
   ``remote_factor`` times longer; throughput = tasks / makespan, ``delay`` / ``fair`` (paper: about 2x).
   Two batches: the HDFS mix (up to 200 maps) and one of small jobs only (at most 10 maps each, 300 jobs),
   where a job's data is on few machines and locality is hardest.

5. **Gap to the exact yardstick** on small HDFS instances (4 jobs of at most 3 maps, 4 one-slot machines
   on 2 racks): every policy's average JCT over CP-SAT's proven optimum with per-machine durations
   (``solver.spacetime.locality_cp``).

Yardsticks: on the large workloads, the proven lower bound of ``solver.spacetime.bounds`` (one pool per
resource, preemptive, every task node-local -- a relaxation, as no factor is below the node factor 1): a
floor under the mean response time and the makespan (so a ceiling over throughput); on small instances the
exact optimum.

Every run is verified by ``models.check`` (durations per machine from locality included). The machine is
shared: the load is saved beside the figures. ``--quick`` runs smaller sizes.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from benchmarks._common import load_line, parser, save
from models.generators.families import FAMILIES
from models.generators.locality import locality_probe
from models.timeline import job_table
from models.types import Instance
from solver.api import simulate
from solver.sim.policies.locality import local_probability

#: Small jobs: at most this many map tasks (the Facebook workload's bins 1 and 2).
SMALL = 2


def _run(instance: Instance, policy: str, seed: int, **extra: Any) -> dict[str, Any]:
    started = time.perf_counter()
    result = simulate(instance, policy, seed=seed, extra=dict(extra))
    wall = time.perf_counter() - started
    if not result.verified:
        raise RuntimeError(f"{policy} {extra}: not verified: {result.violations[:3]}")
    assert result.schedule is not None
    table = job_table(instance, result.schedule)
    response = np.asarray(table["completion"]) - np.array([job.release for job in instance.jobs])
    counts = result.extra["locality"]
    total = sum(counts.values())
    maps = np.array([job.stages[0].tasks for job in instance.jobs])
    small = maps <= SMALL
    job = result.schedule.job
    rows = np.flatnonzero(small[job])
    machine = _machines(instance, result.schedule)
    from models.locality import levels, task_blocks

    blocks, offset = task_blocks(instance)
    first = np.concatenate([[0], np.cumsum([len(j.stages) for j in instance.jobs])])[:-1]
    flat = offset[first[job] + result.schedule.stage] + result.schedule.index
    level = levels(instance, blocks[flat], machine)
    return {
        "policy": policy, **extra, "seed": seed, "wall_s": round(wall, 2), "skips": result.extra.get("skips", 0),
        "node_local": counts["node"] / total, "rack_local": counts["rack"] / total,
        "small_node_local": float(np.mean(level[rows] == 0)) if rows.size else None,
        "makespan": float(result.schedule.end.max()),
        "throughput": float(maps.sum() / result.schedule.end.max()),
        "mean_response": float(response.mean()),
        "small_mean_response": float(response[small].mean()) if small.any() else None,
    }  # fmt: skip


def _maps(instance: Instance) -> float:
    return float(sum(job.stages[0].tasks for job in instance.jobs))


def lower_bounds(instance: Instance) -> dict[str, float]:
    """Proven floors: mean response time and makespan (every task node-local, pooled, preemptive)."""
    from solver.sim.workload import Workload
    from solver.spacetime.bounds import objective_lower_bound

    assert instance.data is None or instance.data.factors[0] <= 1.0  # base durations must be a relaxation
    jobs = Workload.of_jobs(instance)
    n = jobs.num_jobs
    total = objective_lower_bound(jobs.release, jobs.critical_path(), jobs.work(), np.ones(n), 0.0)
    makespan = objective_lower_bound(jobs.release, jobs.critical_path(), jobs.work(), np.zeros(n), 1.0)
    return {"mean_response": (total - float(jobs.release.sum())) / n, "makespan": makespan}


def _machines(instance: Instance, schedule: Any) -> Any:
    from models.locality import global_machines

    return global_machines(instance, schedule.server, schedule.machine)


def analysis(quick: bool) -> list[dict[str, Any]]:
    rows = []
    probes = 200 if quick else 400
    for offers in (1, 5, 10, 20, 40):
        gap = 1.0 + offers / 10  # ~20 offers per time unit: room for D offers before the next probe
        instance = locality_probe(seed=11, probes=probes, machines=20, holders=2, gap=gap)
        run = _run(instance, "delay", 11, d1=offers - 1, d2=0)
        q = local_probability(0.1, offers)
        sigma = math.sqrt(q * (1 - q) / probes)
        rows.append({"D": offers, "formula": q, "simulated": run["node_local"], "sigma": sigma, "probes": probes,
                     "within_2_sigma": abs(run["node_local"] - q) <= 2 * sigma, "wall_s": run["wall_s"]})  # fmt: skip
        print(f"analysis D={offers}: formula {q:.3f}, simulated {run['node_local']:.3f} +- {2 * sigma:.3f}")
    return rows


def workload(seed: int, quick: bool, batch: bool = False, remote: float = 2.0, small: bool = False) -> Instance:
    jobs = (100 if quick else 300) if small else (60 if quick else 150)
    params = {"jobs": jobs, "machines": 40, "racks": 4, "slots": 2, "users": 4,
              "interarrival": 0.0001 if batch else 4.0, "map_duration": 10.0, "max_tasks": 10 if small else 200,
              "remote_factor": remote}  # fmt: skip
    return FAMILIES["hdfs"].instance(params, seed)


def sweep(seeds: list[int], quick: bool, batch: bool, delays: tuple[int, ...], remote: float = 2.0,
          small: bool = False) -> list[dict[str, Any]]:  # fmt: skip
    rows = []
    for seed in seeds:
        instance = workload(seed, quick, batch, remote, small)
        floor = lower_bounds(instance)
        rows.append({"policy": "lower-bound", "seed": seed, "remote_factor": remote, "node_local": None,
                     "small_node_local": None, "small_mean_response": None,
                     "mean_response": floor["mean_response"], "makespan": floor["makespan"],
                     "throughput": _maps(instance) / floor["makespan"]})  # fmt: skip
        for policy, extra in [("fifo", {}), ("fair", {}), *[("delay", {"d1": d, "d2": d}) for d in delays]]:
            run = _run(instance, policy, seed, **extra)
            run["workload"] = ("small-batch" if small else "batch") if batch else "arrivals"
            run["remote_factor"] = remote
            rows.append(run)
            print(f"{run['workload']} seed {seed} {policy} {extra}: node-local {run['node_local']:.3f}, small jobs' "
                  f"response {run['small_mean_response']:.2f}, throughput {run['throughput']:.2f} ({run['wall_s']} s)")
    return rows


def _mean(rows: list[dict[str, Any]], key: str, **match: Any) -> float:
    values = [r[key] for r in rows if all(r.get(k) == v for k, v in match.items()) and r[key] is not None]
    return float(np.mean(values))


def exact_gaps(seeds: list[int]) -> list[dict[str, Any]]:
    from models.check import verify_schedule
    from solver.spacetime.locality_cp import locality_optimum

    rows = []
    for seed in seeds:
        params = {"jobs": 4, "machines": 4, "racks": 2, "slots": 1, "max_tasks": 3, "interarrival": 3.0}
        instance = FAMILIES["hdfs"].instance(params, seed)
        optimum = locality_optimum(instance, "avg-jct", time_limit=120.0)
        report = verify_schedule(instance, optimum.schedule, require_placement=True)
        if not report.ok:
            raise RuntimeError(f"the CP schedule is not verified: {report.violations[:3]}")
        row: dict[str, Any] = {"seed": seed, "tasks": int(_maps(instance)), "optimum": report.avg_jct,
                               "bound": optimum.bound, "optimal": optimum.optimal, "cp_s": round(optimum.solve_s, 2)}
        for policy, extra in (("fifo", {}), ("fair", {}), ("delay", {"d1": 2, "d2": 2})):
            result = simulate(instance, policy, seed=seed, extra=dict(extra))
            assert result.verified and result.objective is not None
            row[policy] = float(result.objective) / report.avg_jct
        rows.append(row)
        print(f"exact seed {seed}: optimum {report.avg_jct:.3f} (proven {optimum.optimal}, {optimum.solve_s:.1f} s); "
              f"fifo {row['fifo']:.3f}x, fair {row['fair']:.3f}x, delay {row['delay']:.3f}x")
    return rows


def main() -> None:
    parse = parser(__doc__.splitlines()[0])
    parse.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parse.add_argument("--seeds", type=int, default=3, help="workloads (seeds) per setting")
    args = parse.parse_args()
    started = time.perf_counter()
    seeds = list(range(1, args.seeds + 1))
    delays = (0, 1, 2, 5, 10, 20)
    formula = analysis(args.quick)
    arrivals = sweep(seeds, args.quick, False, delays)
    batch = sweep(seeds, args.quick, True, (5, 20))
    io_heavy = sweep(seeds, args.quick, True, (5, 20), remote=3.0)
    small_batch = [*sweep(seeds, args.quick, True, (5, 20), small=True),
                   *sweep(seeds, args.quick, True, (5, 20), remote=3.0, small=True)]  # fmt: skip
    lines = ["# Delay scheduling (Zaharia et al., EuroSys'10) on the simulator", "", load_line(), "",
             "## 1. The analysis: one job's locality against D (p = 0.1)", "",
             "Single-task probes, block on 2 of 20 one-slot machines, cluster kept full by a background of "
             "exponential tasks (every freed slot on a uniformly random machine); `delay` with `d1 = D - 1` "
             "(D offers). Error bar: 2 sigma of the binomial.", "",
             "| D (offers) | 1 - (1 - p)^D | simulated | +- 2 sigma | within |", "|---|---|---|---|---|"]  # fmt: skip
    for row in formula:
        lines.append(f"| {row['D']} | {row['formula']:.3f} | {row['simulated']:.3f} | {2 * row['sigma']:.3f} | "
                     f"{'yes' if row['within_2_sigma'] else 'no'} |")
    floor = _mean(arrivals, "mean_response", policy="lower-bound")
    lines += ["", f"## 2. Locality against D (HDFS workload, {len(seeds)} seeds, mean)", "",
              "`fairpack generate hdfs`: 40 machines x 2 slots on 4 racks, 3 replicas per block (one rack, two on "
              "another), Facebook-shaped job sizes (1 to 200 maps), Poisson arrivals (mean gap 4), 4 users, maps 10 "
              "long, locality factors node 1, rack 1.3, remote 2. `delay` with d1 = d2 = D.", "",
              "| policy | node-local (all tasks) | node-local (small jobs' tasks) | small jobs' mean response | "
              "all jobs' mean response |", "|---|---|---|---|---|"]  # fmt: skip
    settings = [("fifo", {}), ("fair", {}), *[("delay", {"d1": d}) for d in delays]]
    for policy, match in settings:
        label = policy if not match else f"delay D={match['d1']}"
        lines.append(f"| {label} | {_mean(arrivals, 'node_local', policy=policy, **match):.3f} | "
                     f"{_mean(arrivals, 'small_node_local', policy=policy, **match):.3f} | "
                     f"{_mean(arrivals, 'small_mean_response', policy=policy, **match):.2f} | "
                     f"{_mean(arrivals, 'mean_response', policy=policy, **match):.2f} |")
    lines.append(f"| proven floor (pooled, preemptive, all node-local) | - | - | - | {floor:.2f} |")
    fair_small = _mean(arrivals, "small_mean_response", policy="fair")
    best = min(delays, key=lambda d: _mean(arrivals, "small_mean_response", policy="delay", d1=d))
    ratio = fair_small / _mean(arrivals, "small_mean_response", policy="delay", d1=best)
    lines += ["", f"## 3. Small jobs' response time: fair / delay = {ratio:.2f}x (best D = {best}; paper: up to 5x)",
              "", "## 4. Throughput on a batch (every job at 0), tasks per time unit", "",
              "| batch | remote factor | fifo | fair | delay D=5 | delay D=20 | delay D=20 / fair | node-local fair / "
              "delay D=20 | ceiling (proven) |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    ratios = {}
    cases = (("HDFS mix", 2.0, batch), ("HDFS mix", 3.0, io_heavy),
             ("small jobs", 2.0, [r for r in small_batch if r["remote_factor"] == 2.0]),
             ("small jobs", 3.0, [r for r in small_batch if r["remote_factor"] == 3.0]))  # fmt: skip
    for name, remote, rows in cases:
        values = {p: _mean(rows, "throughput", policy=p) for p in ("fifo", "fair")}
        for d in (5, 20):
            values[f"delay{d}"] = _mean(rows, "throughput", policy="delay", d1=d)
        ratios[f"{name} x{remote:g}"] = values["delay20"] / values["fair"]
        lines.append(f"| {name} | {remote:g} | {values['fifo']:.2f} | {values['fair']:.2f} | {values['delay5']:.2f} | "
                     f"{values['delay20']:.2f} | {values['delay20'] / values['fair']:.2f}x | "
                     f"{_mean(rows, 'node_local', policy='fair'):.2f} / "
                     f"{_mean(rows, 'node_local', policy='delay', d1=20):.2f} | "
                     f"{_mean(rows, 'throughput', policy='lower-bound'):.2f} |")
    exact = exact_gaps(list(range(1, 6)))
    lines += ["", "## 5. Gap to the exact yardstick (CP-SAT, per-machine durations), small instances", "",
              "4 jobs of 1 to 3 maps (HDFS family, `max_tasks=3`, arrivals 3 apart on average), 4 one-slot machines "
              "on 2 racks; average JCT over the proven optimum (1.000 = optimal).", "",
              "| seed | tasks | optimum avg JCT | proven | fifo | fair | delay D=2 | CP-SAT s |",
              "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in exact:
        lines.append(f"| {row['seed']} | {row['tasks']} | {row['optimum']:.3f} | {'yes' if row['optimal'] else 'no'} | "
                     f"{row['fifo']:.3f} | {row['fair']:.3f} | {row['delay']:.3f} | {row['cp_s']} |")
    payload_exact = {"exact": exact}
    lines += ["", f"Total wall time {time.perf_counter() - started:.0f} s."]
    payload = {"analysis": formula, "arrivals": arrivals, "batch": batch, "io_heavy": io_heavy,
               "small_batch": small_batch, "small_response_ratio": ratio, "best_delay": best,
               "throughput_ratio": ratios, "quick": args.quick, "seeds": seeds, **payload_exact}  # fmt: skip
    save("delay_scheduling", payload, "\n".join(lines), args.out)


if __name__ == "__main__":
    main()
