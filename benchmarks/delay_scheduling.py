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
   on 2 racks): every policy's average JCT over the proven optimum of ``spacetime-cp --placement servers
   --no-fair-cap`` (per-task alternatives: each task picks its machine and its duration follows), with the
   independent model ``locality-cp`` (``solver.spacetime.locality_cp``) required to prove the same optimum.

Yardsticks: on the large workloads, the proven lower bound of ``solver.spacetime.bounds`` (one pool per
resource, preemptive, every task node-local -- a relaxation, as no factor is below the node factor 1): a
floor under the mean response time and the makespan (so a ceiling over throughput); on small instances the
exact optimum.

6. **The same gap as a ``fairpack bench`` sweep** (``benchmarks/sweeps/delay.toml``: 20 small HDFS instances
   on 6 machines in 3 racks, remote factor 2 and 3, fifo, fair and delay D = 1, 2, 5 against ``spacetime-cp``
   per machine without fair caps, ``locality-cp`` beside it as a cross-check), run task by task in this process
   (one CP-SAT worker) and resumable: its table is ``delay_sweep.parquet``.

Every run is verified by ``models.check`` (durations per machine from locality included). The machine is
shared: the load is saved beside the figures. ``--quick`` runs smaller sizes. The figure
(``figures/delay_scheduling.png``: locality and response time against D, throughput on the IO-heavy
batches, each beside its yardstick) and, with ``--readme``, the benchmarks README's locality block are drawn from the
numbers; ``--cached`` (what ``make figures`` runs) reuses the saved numbers when their set-up is unchanged.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import load_line, machine_state, parser, save
from benchmarks.online_reproductions import run_online_sweep, splice
from fairpack.models.generators.families import FAMILIES
from fairpack.models.generators.locality import locality_probe
from fairpack.models.timeline import job_table
from fairpack.models.types import Instance
from fairpack.solver.api import simulate
from fairpack.solver.sim.policies.locality import local_probability

#: Small jobs: at most this many map tasks (the Facebook workload's bins 1 and 2).
SMALL = 2
NAME = "delay_scheduling"
DELAYS = (0, 1, 2, 5, 10, 20)
SWEEP = Path(__file__).resolve().parent / "sweeps" / "delay.toml"
BEGIN, END = "<!-- locality:begin -->", "<!-- locality:end -->"
FIGURE = "delay_scheduling.png"
#: What each batch of the throughput table is, as README names it.
BATCHES = (("HDFS mix", 2.0, "batch"), ("HDFS mix", 3.0, "io_heavy"), ("small jobs", 2.0, "small_batch"),
           ("small jobs", 3.0, "small_batch"))  # fmt: skip


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
    from fairpack.models.locality import levels, task_blocks

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
    from fairpack.solver.sim.workload import Workload
    from fairpack.solver.spacetime.bounds import objective_lower_bound

    assert instance.data is None or instance.data.factors[0] <= 1.0  # base durations must be a relaxation
    jobs = Workload.of_jobs(instance)
    n = jobs.num_jobs
    total = objective_lower_bound(jobs.release, jobs.critical_path(), jobs.work(), np.ones(n), 0.0)
    makespan = objective_lower_bound(jobs.release, jobs.critical_path(), jobs.work(), np.zeros(n), 1.0)
    return {"mean_response": (total - float(jobs.release.sum())) / n, "makespan": makespan}


def _machines(instance: Instance, schedule: Any) -> Any:
    from fairpack.models.locality import global_machines

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
    """Policies over the yardstick (``spacetime-cp`` per machine, no fair caps) on small HDFS instances; the
    independent ``locality-cp`` model must prove the same optimum."""
    from fairpack.solver.api import solve

    rows = []
    for seed in seeds:
        params = {"jobs": 4, "machines": 4, "racks": 2, "slots": 1, "max_tasks": 3, "interarrival": 3.0}
        instance = FAMILIES["hdfs"].instance(params, seed)
        timed = {}
        for method, options in (("spacetime-cp", {"placement": "servers", "fair_cap": False}), ("locality-cp", {})):
            started = time.perf_counter()
            result = solve(instance, method, objective="avg-jct", time_limit=120.0, workers=1, **options)
            if not result.verified or result.objective is None:
                raise RuntimeError(f"{method} on seed {seed}: {result.status}, {result.message}")
            timed[method] = (result, round(time.perf_counter() - started, 2))
        (optimum, cp_s), (reference, reference_s) = timed["spacetime-cp"], timed["locality-cp"]
        assert optimum.objective is not None and reference.objective is not None
        if optimum.status == reference.status == "optimal" and not math.isclose(
                optimum.objective, reference.objective, rel_tol=1e-6):  # fmt: skip
            raise RuntimeError(f"seed {seed}: spacetime-cp {optimum.objective} but locality-cp {reference.objective}")
        row: dict[str, Any] = {"seed": seed, "tasks": int(_maps(instance)), "optimum": optimum.objective,
                               "bound": optimum.bound, "optimal": optimum.status == "optimal", "cp_s": cp_s,
                               "locality_cp": reference.objective, "locality_cp_s": reference_s}  # fmt: skip
        for policy, extra in (("fifo", {}), ("fair", {}), ("delay", {"d1": 2, "d2": 2})):
            result = simulate(instance, policy, seed=seed, extra=dict(extra))
            assert result.verified and result.objective is not None
            row[policy] = float(result.objective) / optimum.objective
        rows.append(row)
        print(f"exact seed {seed}: optimum {optimum.objective:.3f} (proven {row['optimal']}, {cp_s} s; locality-cp "
              f"{reference.objective:.3f} in {reference_s} s); fifo {row['fifo']:.3f}x, fair {row['fair']:.3f}x, "
              f"delay {row['delay']:.3f}x")
    return rows


def compute(seeds: list[int], quick: bool) -> dict[str, Any]:
    """Every simulated number of sections 1-5 (minutes on 2 loaded cores)."""
    started = time.perf_counter()
    payload: dict[str, Any] = {"analysis": analysis(quick), "arrivals": sweep(seeds, quick, False, DELAYS),
                               "batch": sweep(seeds, quick, True, (5, 20)),
                               "io_heavy": sweep(seeds, quick, True, (5, 20), remote=3.0),
                               "small_batch": [*sweep(seeds, quick, True, (5, 20), small=True),
                                               *sweep(seeds, quick, True, (5, 20), remote=3.0, small=True)],
                               "exact": exact_gaps(list(range(1, 6)))}  # fmt: skip
    payload["wall_s"] = round(time.perf_counter() - started, 1)
    return payload


def _batch_rows(payload: dict[str, Any], key: str, remote: float) -> list[dict[str, Any]]:
    return [r for r in payload[key] if r["remote_factor"] == remote]


def headline(payload: dict[str, Any]) -> dict[str, Any]:
    """The numbers README quotes: small jobs' response fair / delay at the best D, throughput ratios."""
    arrivals = payload["arrivals"]
    fair_small = _mean(arrivals, "small_mean_response", policy="fair")
    best = min(DELAYS[1:], key=lambda d: _mean(arrivals, "small_mean_response", policy="delay", d1=d))
    delay_small = _mean(arrivals, "small_mean_response", policy="delay", d1=best)
    throughput = {}
    for name, remote, key in BATCHES:
        rows = _batch_rows(payload, key, remote)
        values = {p: _mean(rows, "throughput", policy=p) for p in ("fifo", "fair", "lower-bound")}
        values.update({f"delay{d}": _mean(rows, "throughput", policy="delay", d1=d) for d in (5, 20)})
        values.update(fair_local=_mean(rows, "node_local", policy="fair"),
                      delay_local=_mean(rows, "node_local", policy="delay", d1=20))
        throughput[f"{name} x{remote:g}"] = values
    return {"fair_small": fair_small, "best_delay": best, "delay_small": delay_small,
            "small_response_ratio": fair_small / delay_small, "throughput": throughput}  # fmt: skip


def report(payload: dict[str, Any]) -> str:
    """``delay_scheduling.md``: every section's table."""
    seeds, numbers = payload["seeds"], headline(payload)
    lines = ["# Delay scheduling (Zaharia et al., EuroSys'10) on the simulator", "", payload["load_line"], "",
             "## 1. The analysis: one job's locality against D (p = 0.1)", "",
             "Single-task probes, block on 2 of 20 one-slot machines, cluster kept full by a background of "
             "exponential tasks (every freed slot on a uniformly random machine); `delay` with `d1 = D - 1` "
             "(D offers). Error bar: 2 sigma of the binomial.", "",
             "| D (offers) | 1 - (1 - p)^D | simulated | +- 2 sigma | within |", "|---|---|---|---|---|"]  # fmt: skip
    for row in payload["analysis"]:
        lines.append(f"| {row['D']} | {row['formula']:.3f} | {row['simulated']:.3f} | {2 * row['sigma']:.3f} | "
                     f"{'yes' if row['within_2_sigma'] else 'no'} |")
    arrivals = payload["arrivals"]
    lines += ["", f"## 2. Locality against D (HDFS workload, {len(seeds)} seeds, mean)", "", WORKLOAD, "",
              "| policy | node-local (all tasks) | node-local (small jobs' tasks) | small jobs' mean response | "
              "all jobs' mean response |", "|---|---|---|---|---|"]  # fmt: skip
    for policy, match in [("fifo", {}), ("fair", {}), *[("delay", {"d1": d}) for d in DELAYS]]:
        label = policy if not match else f"delay D={match['d1']}"
        lines.append(f"| {label} | {_mean(arrivals, 'node_local', policy=policy, **match):.3f} | "
                     f"{_mean(arrivals, 'small_node_local', policy=policy, **match):.3f} | "
                     f"{_mean(arrivals, 'small_mean_response', policy=policy, **match):.2f} | "
                     f"{_mean(arrivals, 'mean_response', policy=policy, **match):.2f} |")
    floor = _mean(arrivals, "mean_response", policy="lower-bound")
    lines.append(f"| proven floor (pooled, preemptive, all node-local) | - | - | - | {floor:.2f} |")
    lines += ["", f"## 3. Small jobs' response time: fair / delay = {numbers['small_response_ratio']:.2f}x (best D = "
              f"{numbers['best_delay']}; paper: up to 5x)", "",
              "## 4. Throughput on a batch (every job at 0), tasks per time unit", "",
              "| batch | remote factor | fifo | fair | delay D=5 | delay D=20 | delay D=20 / fair | node-local fair / "
              "delay D=20 | ceiling (proven) |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for (name, remote, _), values in zip(BATCHES, numbers["throughput"].values(), strict=True):
        lines.append(f"| {name} | {remote:g} | {values['fifo']:.2f} | {values['fair']:.2f} | {values['delay5']:.2f} | "
                     f"{values['delay20']:.2f} | {values['delay20'] / values['fair']:.2f}x | "
                     f"{values['fair_local']:.2f} / {values['delay_local']:.2f} | {values['lower-bound']:.2f} |")
    lines += ["", "## 5. Gap to the exact yardstick (CP-SAT, per-machine durations), small instances", "",
              "4 jobs of 1 to 3 maps (HDFS family, `max_tasks=3`, arrivals 3 apart on average), 4 one-slot machines "
              "on 2 racks; average JCT over the proven optimum (1.000 = optimal).", "",
              "| seed | tasks | optimum avg JCT | proven | fifo | fair | delay D=2 | spacetime-cp s | locality-cp "
              "(cross-check) | locality-cp s |", "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in payload["exact"]:
        lines.append(f"| {row['seed']} | {row['tasks']} | {row['optimum']:.3f} | {'yes' if row['optimal'] else 'no'} | "
                     f"{row['fifo']:.3f} | {row['fair']:.3f} | {row['delay']:.3f} | {row['cp_s']} | "
                     f"{row['locality_cp']:.3f} | {row['locality_cp_s']} |")
    if payload.get("sweep"):
        lines += ["", "## 6. The same gap as a `fairpack bench` sweep (`benchmarks/sweeps/delay.toml`)", "",
                  *sweep_table(payload["sweep"])]
    lines += ["", f"Sections 1-5: {payload['wall_s']:.0f} s of wall time.", "",
              f"Figure: `figures/{FIGURE}`."]  # fmt: skip
    return "\n".join(lines)


#: The multi-user workload of sections 2 and 3, named as README names it.
WORKLOAD = ("`fairpack generate hdfs`: 40 machines x 2 slots on 4 racks, 3 replicas per block (one rack, two on "
            "another), Facebook-shaped job sizes (1 to 200 maps), 150 jobs arriving as a Poisson process (mean gap "
            "4), 4 users, maps 10 long, locality factors node 1, rack 1.3, remote 2. `delay` with d1 = d2 = D.")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:+.1f}%"


def sweep_table(summary: dict[str, Any]) -> list[str]:
    """Per grid and policy: mean and worst gap to the yardstick's incumbent, and to its proven bound."""
    lines = []
    for grid, block in summary["grids"].items():
        statuses = ", ".join(f"{count} {status}" for status, count in block["reference_status"].items())
        lines += [f"Grid `{grid}`: reference `{block['reference']}` ({statuses}); avg JCT over its incumbent "
                  "(gap) and over its proven bound (bound gap).", "",
                  "| remote factor | policy | instances | verified | gap mean | gap worst | bound gap mean | "
                  "bound gap worst |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for row in block.get("by_remote", []):
            lines.append(f"| {row['remote']:g} | `{row['method']}` | {row['instances']} | {row['verified']} | "
                         f"{_pct(row['gap_mean'])} | {_pct(row['gap_max'])} | {_pct(row['bound_gap_mean'])} | "
                         f"{_pct(row['bound_gap_max'])} |")
        lines.append("")
    return lines


def delay_figure(payload: dict[str, Any], path: Path) -> None:
    """Locality and response time against D (with fair, fifo and the yardsticks), throughput per batch."""
    from fairpack.solver.bench.report import panels, save_png

    arrivals, numbers = payload["arrivals"], headline(payload)
    figure, axes = panels(3, 3, width=4.6, height=3.8)
    x = np.arange(len(DELAYS))
    local = [_mean(arrivals, "node_local", policy="delay", d1=d) for d in DELAYS]
    small_local = [_mean(arrivals, "small_node_local", policy="delay", d1=d) for d in DELAYS]
    axes[0].plot(x, local, marker="o", label="delay: all tasks")
    axes[0].plot(x, small_local, marker="s", label="delay: small jobs' tasks")
    axes[0].axhline(_mean(arrivals, "node_local", policy="fifo"), color="grey", linestyle="--", label="fifo: all tasks")
    axes[0].axhline(1.0, color="black", linestyle=":", label="every task node-local")
    axes[0].set_ylabel("node-local fraction")
    axes[0].set_ylim(0, 1.05)
    response = [_mean(arrivals, "small_mean_response", policy="delay", d1=d) for d in DELAYS]
    every = [_mean(arrivals, "mean_response", policy="delay", d1=d) for d in DELAYS]
    axes[1].plot(x, response, marker="s", label="delay: small jobs")
    axes[1].plot(x, every, marker="o", label="delay: all jobs")
    axes[1].axhline(numbers["fair_small"], color="C0", linestyle="--", label="fair: small jobs")
    axes[1].axhline(_mean(arrivals, "mean_response", policy="fair"), color="C1", linestyle="--",
                    label="fair: all jobs")  # fmt: skip
    axes[1].axhline(_mean(arrivals, "mean_response", policy="lower-bound"), color="black", linestyle=":",
                    label="proven floor, all jobs")  # fmt: skip
    axes[1].set_ylabel("mean response time")
    for axis, title in zip(axes[:2], ("Locality against D", "Response time against D"), strict=True):
        axis.set_xticks(x, [str(d) for d in DELAYS])
        axis.set_xlabel("D (skips, d1 = d2 = D; 0 = fair)")
        axis.set_title(title, fontsize=10)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    cases = list(numbers["throughput"].items())
    bars = (("fifo", "fifo"), ("fair", "fair"), ("delay5", "delay D=5"), ("delay20", "delay D=20"))
    width = 0.8 / len(bars)
    position = np.arange(len(cases))
    for j, (key, label) in enumerate(bars):
        axes[2].bar(position + j * width, [values[key] for _, values in cases], width, label=label)
    for i, (_, values) in enumerate(cases):
        axes[2].plot([i - width / 2, i + width * (len(bars) - 0.5)], [values["lower-bound"]] * 2, color="black",
                     linestyle=":", label="proven ceiling" if i == 0 else None)  # fmt: skip
    axes[2].set_xticks(position + width * (len(bars) - 1) / 2, [name.replace(" x", "\nremote x") for name, _ in cases],
                       fontsize=8)  # fmt: skip
    axes[2].set_ylabel("tasks per time unit")
    axes[2].set_title("Throughput on IO-heavy batches", fontsize=10)
    axes[2].grid(alpha=0.3, axis="y")
    axes[2].legend(fontsize=7, loc="lower right")
    save_png(figure, path, "Delay scheduling on the HDFS workload (Zaharia et al., EuroSys'10)")


def readme_block(payload: dict[str, Any], figure: str) -> str:
    """README's locality block: the run, the figure, the workload and every headline number."""
    numbers, arrivals = headline(payload), payload["arrivals"]
    formula = payload["analysis"]
    within = sum(1 for row in formula if row["within_2_sigma"])
    local = {d: _mean(arrivals, "node_local", policy="delay", d1=d) for d in DELAYS}
    small = {d: _mean(arrivals, "small_node_local", policy="delay", d1=d) for d in DELAYS}
    simulated = ", ".join(f"{row['simulated']:.3f}" for row in formula)
    expected = ", ".join(f"{row['formula']:.3f}" for row in formula)
    lines = [
        f"`python -m benchmarks.delay_scheduling` (`benchmarks/results/{NAME}.md`; part of `make figures`, which "
        f"reuses the saved numbers while their set-up is unchanged), {payload['wall_s']:.0f} s for sections 1-5. "
        f"{payload['load_line']} Every run verified by `models.check`.",
        "",
        f"![Delay scheduling: locality and response time against D, throughput on IO-heavy batches]({figure})",
        "",
        f"- **The analysis**: single-task probes whose block is on p = 0.1 of 20 one-slot machines, in a cluster a "
        f"background of exponential tasks keeps full, launch locally within D offers (`d1 = D - 1`) with "
        f"1 - (1 - p)^D: simulated {simulated} against {expected} at D = "
        f"{', '.join(str(row['D']) for row in formula)} ({within} of {len(formula)} within 2 sigma, "
        f"{formula[0]['probes']} probes each).",
        f"- **Locality against D** on the multi-user HDFS workload ({WORKLOAD[:-1].split(': ', 1)[1]}; "
        f"{len(payload['seeds'])} seeds): node-local {local[0]:.2f} of all tasks under fair, "
        + ", ".join(f"{local[d]:.2f} at D = {d}" for d in DELAYS[1:]) + "; small jobs' (1-2 maps) tasks "
        f"{small[0]:.2f} under fair, " + ", ".join(f"{small[d]:.2f}" for d in DELAYS[1:]) + ".",
        f"- **Small jobs' response time**, fair / delay: **{numbers['small_response_ratio']:.2f}x** (best D = "
        f"{numbers['best_delay']}: {numbers['fair_small']:.1f} against {numbers['delay_small']:.1f}; the paper: up to "
        "5x on its workload).",
        "- **Throughput on IO-heavy batches** (every job at 0), delay (D = 20) / fair: "
        + "; ".join(f"{values['delay20'] / values['fair']:.2f}x on the {name.replace(' x', ' with remote x')} "
                    f"(node-local {values['fair_local']:.2f} vs {values['delay_local']:.2f}; "
                    f"{values['delay20']:.2f} tasks per time unit against a proven ceiling of "
                    f"{values['lower-bound']:.2f})" for name, values in numbers["throughput"].items())
        + " (the paper: about 2x).",
    ]
    if payload.get("sweep"):
        lines += ["", "**Gap to the exact yardstick** (`fairpack bench run benchmarks/sweeps/delay.toml`: "
                  "4 jobs of 1-3 maps on 6 one-slot machines on 3 racks, so some machines are remote, 10 seeds per "
                  "remote factor; "
                  "`spacetime-cp --placement servers --no-fair-cap` solves the same arrivals offline, every task "
                  "choosing its machine and so its duration, and `locality-cp` must prove the same optimum; table "
                  "`benchmarks/results/delay_sweep.parquet`):", "", *sweep_table(payload["sweep"])]
    return "\n".join(lines)


def _by_remote(summary: dict[str, Any], table: Path) -> dict[str, Any]:
    """The sweep summary with each grid's policies also split by remote factor (a size parameter)."""
    from fairpack.solver.bench.table import read_results, with_gaps

    frame = with_gaps(read_results(table))
    frame["remote"] = [json.loads(p).get("remote_factor") for p in frame["params"]]
    for grid, rows in frame.groupby("grid"):
        block = summary["grids"][str(grid)]
        split = []
        for (remote, method), group in rows[rows["method"] != rows["reference"]].groupby(["remote", "method"]):
            gap, bound = group["gap"].astype(float), group["bound_gap"].astype(float)
            split.append({
                "remote": float(remote), "method": str(method), "instances": len(group),
                "verified": int(group["verified"].sum()),
                "gap_mean": _finite(gap.mean()), "gap_max": _finite(gap.max()),
                "bound_gap_mean": _finite(bound.mean()), "bound_gap_max": _finite(bound.max())})  # fmt: skip
        block["by_remote"] = split
    return summary


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(float(value)) else None


def main() -> None:
    parse = parser(__doc__.splitlines()[0])
    parse.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parse.add_argument("--seeds", type=int, default=3, help="workloads (seeds) per setting")
    parse.add_argument("--sweep", default=str(SWEEP), help="the yardstick-gap sweep ('' to skip)")
    parse.add_argument("--cached", action="store_true",
                       help="reuse the saved numbers of sections 1-5 when their set-up is unchanged")  # fmt: skip
    parse.add_argument("--readme", default=None, help="also fill this README's locality block")
    args = parse.parse_args()
    out = Path(args.out)
    figures = out / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    seeds = list(range(1, args.seeds + 1))
    setup = {"quick": args.quick, "seeds": seeds, "delays": list(DELAYS)}
    saved_path = out / f"{NAME}.json"
    saved = json.loads(saved_path.read_text()) if saved_path.exists() else {}
    reused = args.cached and saved.get("setup") == setup
    if reused:
        print(f"{NAME}: reusing the saved numbers of sections 1-5 (same set-up)")
        payload = {key: saved[key] for key in (*PAYLOAD_KEYS, "load_line")}
    else:
        payload = {**compute(seeds, args.quick), "load_line": load_line()}
    payload.update(setup=setup, seeds=seeds, quick=args.quick)
    fresh = not reused
    if args.sweep:
        table = out / "delay_sweep.parquet"
        payload["sweep"] = _by_remote(run_online_sweep(Path(args.sweep), table, None), table)
        fresh = fresh or payload["sweep"]["run_now"] > 0
    delay_figure(payload, figures / FIGURE)
    payload.update(headline(payload))
    # The machine state saved is the one of the run that computed something: a run that only reuses the saved
    # numbers leaves the results (and README) byte-identical.
    state = machine_state() if fresh or "load_average" not in saved else {
        key: saved[key] for key in ("machine", "cpus", "python", "load_average")}
    save(NAME, payload, report(payload), out, state)
    if args.readme:
        readme = Path(args.readme)
        prefix = os.path.relpath(figures.resolve(), readme.resolve().parent).replace(os.sep, "/")
        readme.write_text(splice(readme.read_text(), readme_block(payload, f"{prefix}/{FIGURE}"), BEGIN, END))


#: What sections 1-5 compute (and ``--cached`` reuses).
PAYLOAD_KEYS = ("analysis", "arrivals", "batch", "io_heavy", "small_batch", "exact", "wall_s")


if __name__ == "__main__":
    main()
