"""Sparrow's sampling and Omega's shared state on the simulator, against their yardsticks.

Sparrow (``sparrow`` family: Poisson jobs of ``tasks`` parallel tasks on ``machines`` workers of 4 slots):

1. Response time against offered load for ``random``, per-task sampling, batch sampling, batch sampling with
   late binding (2 probes per task, round trip ``--rtt``) and the ideal centralised scheduler
   (``monolithic`` with zero decision times), for fixed, exponential and log-normal task durations. Each
   job's response time is divided by a proven lower bound on it (its longest task, or its work over the
   cluster's slots: ``solver.sim.policies.sparrow.response_lower_bound``); mean and p99 over the jobs that
   arrive between 10% and 90% of the stream (warm-up and drain left out).
2. The price of late binding: at load 0.9, fixed and exponential durations, batch sampling with and
   without late binding as the round trip grows (each late-bound task holds its slot idle one round trip).

Omega (``omega`` family: a cell of 8-cpu, 32-GB machines, batch and service job streams at offered load 0.6):

3. The monolithic scheduler as its per-job decision time grows (every decision serialised), against Omega
   with 4 schedulers on the same decision times; and the Omega paper's set-up where only service jobs decide
   slowly (``t_job_service``): monolithic against Omega with 2 schedulers (one service, one batch).
4. The number of Omega schedulers k, for batch decision times giving about 0.3, 2, 20 and 200 busy
   schedulers' worth of decisions (``t_job`` 0.1, 1, 10, 100 s; service decisions 1 s); fine-grained conflict
   detection, and coarse-grained at t_job = 1 s.
5. Ten small cells where waiting is unavoidable: the clairvoyant optimum of the mean wait against the
   zero-decision greedy, monolithic and Omega (k = 2, 4, 8) with 1 s decisions.

Omega's yardsticks: a job's wait (arrival to its last task started) is at least its own decision time,
``t_job + t_task * tasks`` (its tasks launch only when a decision that placed them commits); the
zero-decision-time monolithic scheduler packs the same arrivals with no decision cost (greedy; on the
load-0.6 cell every job starts at its arrival, which no packing beats); and on small overloaded cells
(5.) the clairvoyant packing itself, ``spacetime-cp`` per machine, proven optimal by CP-SAT.

Every run is verified by ``models.check`` (``Result.verified``). Run: ``python -m benchmarks.sparrow_omega``
(17 minutes in one process at load 5-6 on 2 cores); ``--quick`` for a small smoke run; ``--from-json`` rewrites
the report and the figures from the saved JSON.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import machine_state, parser, save, timed
from fairpack.models.generators.families import FAMILIES
from fairpack.models.result import Result
from fairpack.models.timeline import job_table, task_demand
from fairpack.models.types import Instance
from fairpack.solver.api import simulate, solve
from fairpack.solver.sim.policies.omega import DEFAULT_T_JOB, DEFAULT_T_TASK
from fairpack.solver.sim.policies.sparrow import response_lower_bound
from fairpack.solver.sim.workload import Workload

#: Sparrow variants: policy and settings (the sampling ones also get ``rtt``).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "random": ("random", {}),
    "per-task": ("sparrow", {"batch": False}),
    "batch": ("sparrow", {"late_binding": False}),
    "batch+late": ("sparrow", {}),
    "ideal": ("monolithic", {"t_job": 0.0, "t_task": 0.0}),
}
COLOURS = {"random": "tab:gray", "per-task": "tab:orange", "batch": "tab:blue", "batch+late": "tab:green",
           "ideal": "black"}  # fmt: skip
SERVICE_T_JOB = 1.0  # service decisions in the k sweep (s)


def _steady(releases: np.ndarray, low: float = 0.1, high: float = 0.9) -> np.ndarray:
    """Jobs arriving between ``low`` and ``high`` of the stream's span (warm-up and drain left out)."""
    span = float(releases.max())
    return (releases >= low * span) & (releases <= high * span)


def _checked(result: Result, label: str) -> Result:
    if not result.verified:
        raise RuntimeError(f"{label}: the schedule did not verify: {result.violations[:3]}")
    return result


# --- Sparrow ---------------------------------------------------------------------------------------------


def _sparrow_row(instance: Instance, bound: np.ndarray, variant: str, rtt: float, seed: int) -> dict[str, Any]:
    policy, extra = VARIANTS[variant]
    settings = dict(extra) if policy == "monolithic" else {**extra, "rtt": rtt}
    result, seconds = timed(lambda: simulate(instance, policy, placement="servers", seed=seed, extra=settings))
    _checked(result, f"{instance.name} {variant}")
    table = job_table(instance, result.schedule)
    keep = _steady(table["arrival"])
    jct, ratio = table["jct"][keep], table["jct"][keep] / bound[keep]
    tasks = int(result.schedule.job.size)
    return {"variant": variant, "rtt": rtt if policy != "monolithic" else 0.0, "verified": result.verified,
            "jobs": int(keep.sum()), "mean_jct": float(jct.mean()), "p99_jct": float(np.percentile(jct, 99)),
            "mean_ratio": float(ratio.mean()), "p99_ratio": float(np.percentile(ratio, 99)),
            "mean_bound": float(bound[keep].mean()),
            "idle_per_task": float(result.extra.get("idle_slot_time", 0.0)) / tasks,
            "probes_per_task": float(result.extra.get("probes", 0)) / tasks, "seconds": seconds}  # fmt: skip


def sparrow_sweep(loads: list[float], durations: list[str], params: dict[str, Any], rtt: float,
                  seed: int) -> list[dict[str, Any]]:  # fmt: skip
    rows = []
    for kind in durations:
        for load in loads:
            instance = FAMILIES["sparrow"].instance({**params, "load": load, "durations": kind}, seed)
            bound = response_lower_bound(Workload.of_jobs(instance, "servers"))
            for variant in VARIANTS:
                row = {"durations": kind, "load": load, **_sparrow_row(instance, bound, variant, rtt, seed)}
                rows.append(row)
                print(f"sparrow {kind} load {load:g} {variant}: mean {row['mean_ratio']:.3f} p99 {row['p99_ratio']:.3f}"
                      f" ({row['seconds']:.1f} s)", flush=True)  # fmt: skip
    return rows


def rtt_sweep(rtts: list[float], params: dict[str, Any], load: float, seed: int,
              kinds: list[str]) -> list[dict[str, Any]]:  # fmt: skip
    rows = []
    for kind in kinds:
        instance = FAMILIES["sparrow"].instance({**params, "load": load, "durations": kind}, seed)
        bound = response_lower_bound(Workload.of_jobs(instance, "servers"))
        for rtt in rtts:
            for variant in ("batch", "batch+late"):
                row = {"durations": kind, "load": load, **_sparrow_row(instance, bound, variant, rtt, seed)}
                rows.append(row)
                print(f"rtt {rtt:g} {kind} {variant}: mean {row['mean_ratio']:.3f} p99 {row['p99_ratio']:.3f}",
                      flush=True)  # fmt: skip
    return rows


def _rtt_pair(rows: list[dict[str, Any]], kind: str, rtt: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """Batch sampling's and late binding's rows at one round trip."""
    mine = [r for r in rows if r["durations"] == kind and r["rtt"] == rtt]
    return next(r for r in mine if r["variant"] == "batch"), next(r for r in mine if r["variant"] == "batch+late")


def _rtt_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| durations | rtt (ms) | batch | batch+late | late-binding idle per task (ms) |", "|---|---|---|---|---|"]
    for kind in dict.fromkeys(r["durations"] for r in rows):
        for rtt in sorted({r["rtt"] for r in rows}):
            b, lb = _rtt_pair(rows, kind, rtt)
            cells = [f"{r['mean_ratio']:.3f} / {r['p99_ratio']:.3f}" for r in (b, lb)]
            lines.append(f"| {kind} | {rtt * 1000:g} | {' | '.join(cells)} | {lb['idle_per_task'] * 1000:.3g} |")
    return lines


# --- Omega -----------------------------------------------------------------------------------------------


def _floor(instance: Instance, extra: dict[str, Any]) -> np.ndarray:
    """Every job's own decision time: a lower bound on its wait under these decision times."""
    t_job, t_task = float(extra.get("t_job", DEFAULT_T_JOB)), float(extra.get("t_task", DEFAULT_T_TASK))
    service = {"t_job": float(extra.get("t_job_service", t_job)), "t_task": float(extra.get("t_task_service", t_task))}
    return np.array([(service["t_job"] + service["t_task"] * job.stages[0].tasks) if job.tenant == "service"
                     else (t_job + t_task * job.stages[0].tasks) for job in instance.jobs])  # fmt: skip


def _utilisation(instance: Instance, result: Result, span: float) -> dict[str, float]:
    """Fraction of every resource in use over ``[0, span]`` (the arrival window), from the schedule."""
    s = result.schedule
    assert s is not None
    overlap = np.clip(np.minimum(s.end, span) - np.maximum(s.start, 0.0), 0.0, None)
    used = (task_demand(instance, s) * overlap[:, None]).sum(axis=0)
    return {r: float(u) for r, u in zip(instance.resources, used / (instance.total_capacity * span), strict=True)}


def omega_row(instance: Instance, policy: str, extra: dict[str, Any], span: float, seed: int) -> dict[str, Any]:
    result, seconds = timed(lambda: simulate(instance, policy, placement="servers", seed=seed, extra=extra))
    _checked(result, f"{instance.name} {policy} {extra}")
    s = result.schedule
    assert s is not None
    release = np.array([job.release for job in instance.jobs])
    wait = job_waits(instance, result)
    last = wait + release
    floor = _floor(instance, extra)
    service = np.array([job.tenant == "service" for job in instance.jobs])
    keep = _steady(release)
    e = result.extra
    busy = np.array(e["busy_time"])
    end = float(last.max())  # the last job fully placed: the schedulers' working period
    row: dict[str, Any] = {"policy": policy, **extra, "verified": result.verified, "seconds": seconds,
                           "max_wait": float(wait.max())}  # fmt: skip
    for name, mask in (("batch", keep & ~service), ("service", keep & service)):
        row[f"{name}_wait"] = float(wait[mask].mean()) if mask.any() else math.nan
        row[f"{name}_p95_wait"] = float(np.percentile(wait[mask], 95)) if mask.any() else math.nan
        row[f"{name}_floor"] = float(floor[mask].mean()) if mask.any() else math.nan
    row.update({"conflict_fraction": e["conflict_fraction"], "transactions": e["transactions"],
                "conflicted_task_fraction": e["conflicted_tasks"] / max(1, e["attempted_tasks"]),
                "wasted_fraction": e["wasted_time"] / busy.sum() if busy.sum() > 0 else 0.0,
                "busy_schedulers": float(busy.sum() / end), "busyness_first": float(busy[0] / end),
                "busyness_batch": float(busy[1:].mean() / end) if busy.size > 1 else math.nan,
                "first_attempt_wait": e["first_attempt_wait"],
                **{f"util_{r}": u for r, u in _utilisation(instance, result, span).items()}})  # fmt: skip
    print(f"{policy} {extra}: batch wait {row['batch_wait']:.2f} (floor {row['batch_floor']:.2f}) service "
          f"{row['service_wait']:.2f} conflicts {row['conflict_fraction']:.3f} busy {row['busy_schedulers']:.2f}"
          f" ({seconds:.1f} s)", flush=True)  # fmt: skip
    return row


def monolithic_sweep(instance: Instance, t_jobs: list[float], t_services: list[float], span: float,
                     seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:  # fmt: skip
    growth = []
    for t_job in t_jobs:
        growth.append({"sweep": "t_job", **omega_row(instance, "monolithic", {"t_job": t_job}, span, seed)})
        growth.append({"sweep": "t_job", **omega_row(instance, "omega", {"schedulers": 4, "t_job": t_job}, span,
                                                     seed)})  # fmt: skip
    service = []
    for t_service in t_services:
        settings = {"t_job_service": t_service}
        service.append({"sweep": "t_job_service", **omega_row(instance, "monolithic", settings, span, seed)})
        service.append({"sweep": "t_job_service",
                        **omega_row(instance, "omega", {"schedulers": 2, **settings}, span, seed)})  # fmt: skip
    return growth, service


def scheduler_sweep(instance: Instance, ks: list[int], t_jobs: list[float], coarse_t_job: float | None, span: float,
                    seed: int) -> list[dict[str, Any]]:  # fmt: skip
    rows = []
    runs = [(t, "fine") for t in t_jobs] + ([(coarse_t_job, "coarse")] if coarse_t_job is not None else [])
    for t_job, detection in runs:
        for k in ks:
            settings = {"schedulers": k, "t_job": t_job, "t_job_service": SERVICE_T_JOB, "detection": detection}
            rows.append(omega_row(instance, "omega", settings, span, seed))
    return rows


#: Small cells where CP-SAT proves the clairvoyant packing optimal: 2 machines, about 10 jobs over a minute
#: at offered load 1.2 (so that some job has to wait even with perfect foresight).
SMALL_CELL = {"machines": 2, "load": 1.2, "span": 60.0, "batch_tasks": 3.0, "batch_duration": 20.0,
              "service_tasks": 2.0, "service_duration": 60.0}  # fmt: skip
#: Waits closer than this are equal (the generator's times are whole microseconds; CP-SAT's are ticks).
WAIT_TOLERANCE = 1e-5
SMALL_POLICIES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("zero-decision greedy", "monolithic", {"t_job": 0.0, "t_task": 0.0}),
    ("monolithic", "monolithic", {"t_job": 1.0}),
    ("omega k=2", "omega", {"schedulers": 2, "t_job": 1.0}),
    ("omega k=4", "omega", {"schedulers": 4, "t_job": 1.0}),
    ("omega k=8", "omega", {"schedulers": 8, "t_job": 1.0}),
)


def job_waits(instance: Instance, result: Result) -> np.ndarray:
    """Per job, arrival to its last task's start (decisions and queueing; the tasks' own lengths excluded)."""
    s = result.schedule
    assert s is not None
    release = np.array([job.release for job in instance.jobs])
    last = np.full(release.size, -np.inf)
    np.maximum.at(last, s.job, s.start)
    return np.asarray(last - release)


def clairvoyant_rows(seeds: list[int], time_limit: float) -> list[dict[str, Any]]:
    """The clairvoyant packing of small cells (``spacetime-cp`` per machine, minimum avg JCT, one CP-SAT
    worker) against the policies on the same arrivals.

    Every job is one stage of equal tasks, so its JCT is its wait plus its task length: minimum avg JCT is
    minimum mean wait, and the CP-SAT bound minus the mean task length bounds every schedule's mean wait.
    """
    rows = []
    for seed in seeds:
        instance = FAMILIES["omega"].instance(SMALL_CELL, seed)
        exact, seconds = timed(functools.partial(solve, instance, "spacetime-cp", placement="servers",
                                                 objective="avg-jct", time_limit=time_limit, workers=1))  # fmt: skip
        _checked(exact, f"{instance.name} spacetime-cp")
        length = float(np.mean([job.stages[0].duration for job in instance.jobs]))
        row: dict[str, Any] = {"seed": seed, "jobs": len(instance.jobs), "status": exact.status,
                               "tasks": sum(job.stages[0].tasks for job in instance.jobs), "cp_seconds": seconds,
                               "optimum_wait": float(job_waits(instance, exact).mean()),
                               "bound_wait": None if exact.bound is None else max(0.0, exact.bound - length),
                               }  # fmt: skip
        for label, policy, extra in SMALL_POLICIES:
            result = _checked(simulate(instance, policy, placement="servers", seed=seed, extra=extra), label)
            row[label] = float(job_waits(instance, result).mean())
        rows.append(row)
        print(f"small cell seed {seed}: {row['jobs']} jobs, cp {row['status']} ({seconds:.1f} s), optimum wait "
              f"{row['optimum_wait']:.3f}, " + ", ".join(f"{x[0]} {row[x[0]]:.3f}" for x in SMALL_POLICIES),
              flush=True)  # fmt: skip
    return rows


def _clairvoyant_table(rows: list[dict[str, Any]]) -> list[str]:
    labels = [x[0] for x in SMALL_POLICIES]
    lines = ["| seed | jobs | tasks | CP-SAT | clairvoyant wait | proven bound | " + " | ".join(labels) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(labels)]  # fmt: skip
    for r in rows:
        bound = "-" if r["bound_wait"] is None else f"{r['bound_wait']:.3f}"
        lines.append(f"| {r['seed']} | {r['jobs']} | {r['tasks']} | {r['status']} ({r['cp_seconds']:.1f} s) | "
                     f"{abs(r['optimum_wait']):.3f} | {bound} | " + " | ".join(f"{r[x]:.3f}" for x in labels)
                     + " |")  # fmt: skip
    means = [float(np.mean([r[x] for r in rows])) for x in ["optimum_wait", *labels]]
    cells = [f"{abs(means[0]):.3f}", "", *(f"{m:.3f}" for m in means[1:])]
    lines.append("| mean | | | | " + " | ".join(cells) + " |")
    return lines


# --- tables, claims, figures -----------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 3) -> str:
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.{digits}g}"
    return str(value)


def _sparrow_tables(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for kind in dict.fromkeys(r["durations"] for r in rows):
        mine = [r for r in rows if r["durations"] == kind]
        loads = sorted({r["load"] for r in mine})
        lines += [f"**{kind} task durations**: mean / p99 of response time over its lower bound", "",
                  "| variant | " + " | ".join(f"load {x:g}" for x in loads) + " |",
                  "|---|" + "---|" * len(loads)]  # fmt: skip
        for variant in VARIANTS:
            cells = []
            for load in loads:
                r = next(r for r in mine if r["variant"] == variant and r["load"] == load)
                cells.append(f"{r['mean_ratio']:.3f} / {r['p99_ratio']:.3f}")
            lines.append(f"| {variant} | " + " | ".join(cells) + " |")
        bounds = [next(r for r in mine if r["load"] == x)["mean_bound"] for x in loads]
        pairs = zip(bounds, loads, strict=True)
        lines += ["", "Mean lower bound (s): " + ", ".join(f"{b:.3f} at load {x:g}" for b, x in pairs), ""]
    return lines


def _ratio(rows: list[dict[str, Any]], kind: str, load: float, variant: str, key: str) -> float:
    return float(next(r[key] for r in rows if r["durations"] == kind and r["load"] == load and r["variant"] == variant))


def sparrow_claims(rows: list[dict[str, Any]], rtt_rows: list[dict[str, Any]]) -> list[str]:
    out = []
    kinds = list(dict.fromkeys(r["durations"] for r in rows))
    loads = sorted({r["load"] for r in rows})
    for key, label in (("mean_ratio", "mean"), ("p99_ratio", "p99")):
        wins = [(k, x) for k in kinds for x in loads
                if _ratio(rows, k, x, "batch", key) < _ratio(rows, k, x, "per-task", key)]  # fmt: skip
        out.append(f"- Batch beats per-task sampling ({label}): {len(wins)}/{len(kinds) * len(loads)} (durations, "
                   f"load) points; not at: {_missing(kinds, loads, wins)}.")  # fmt: skip
        late = [(k, x) for k in kinds for x in loads
                if _ratio(rows, k, x, "batch+late", key) < min(_ratio(rows, k, x, "batch", key),
                                                               _ratio(rows, k, x, "per-task", key))]  # fmt: skip
        out.append(f"- Late binding beats both ({label}): {len(late)}/{len(kinds) * len(loads)}; not at: "
                   f"{_missing(kinds, loads, late)}.")  # fmt: skip
    for kind in dict.fromkeys(r["durations"] for r in rtt_rows):
        parts = []
        for rtt in sorted({r["rtt"] for r in rtt_rows}):
            b, lb = _rtt_pair(rtt_rows, kind, rtt)
            parts.append(f"rtt {rtt * 1000:g} ms: idle {lb['idle_per_task'] * 1000:.3g} ms/task, mean "
                         f"{lb['mean_ratio']:.3f} vs batch {b['mean_ratio']:.3f}")  # fmt: skip
        out.append(f"- Late binding's idle time (load {rtt_rows[0]['load']:g}, {kind}): " + "; ".join(parts) + ".")
    return out


def omega_claims(growth: list[dict[str, Any]], k_rows: list[dict[str, Any]], small: list[dict[str, Any]]) -> list[str]:
    """The Omega paper's shapes, each stated with the numbers that support or contradict it."""
    out = []
    mono = sorted((r for r in growth if r["policy"] == "monolithic"), key=lambda r: r["t_job"])
    shared = sorted((r for r in growth if r["policy"] == "omega"), key=lambda r: r["t_job"])
    if mono:
        parts = [f"t_job {r['t_job']:g} s: {r['batch_wait']:.3g} s (busy {r['busy_schedulers']:.2f})" for r in mono]
        out.append("- Monolithic wait against its per-job decision time: " + "; ".join(parts) + ". Omega k = 4 on "
                   "the same times: " + "; ".join(f"{r['batch_wait']:.3g} s" for r in shared) + ".")  # fmt: skip
    for t_job, detection in dict.fromkeys((r["t_job"], r["detection"]) for r in k_rows):
        mine = sorted((r for r in k_rows if r["t_job"] == t_job and r["detection"] == detection),
                      key=lambda r: r["schedulers"])  # fmt: skip
        best = min(r["batch_wait"] for r in mine)
        enough = next(r["schedulers"] for r in mine if r["batch_wait"] <= 1.1 * best)
        parts = [f"k {r['schedulers']}: wait {r['batch_wait']:.3g} s, conflicts {r['conflict_fraction']:.3f}, "
                 f"wasted {r['wasted_fraction']:.3f}" for r in mine]  # fmt: skip
        out.append(f"- t_job {t_job:g} s ({detection}): wait within 10% of its best from k = {enough}; "
                   + "; ".join(parts) + ".")  # fmt: skip
    if small:
        labels = [x[0] for x in SMALL_POLICIES]
        proven = [r for r in small if r["status"] == "optimal"]
        above = sum(r[x] >= r["bound_wait"] - WAIT_TOLERANCE for r in small if r["bound_wait"] is not None
                    for x in labels)  # fmt: skip
        bounded = sum(r["bound_wait"] is not None for r in small) * len(labels)
        greedy_gap = [r[labels[0]] - r["optimum_wait"] for r in proven]
        out.append(f"- Clairvoyant packing on {len(small)} small cells ({len(proven)} proven optimal): every policy's "
                   f"mean wait at or above CP-SAT's proven bound in {above}/{bounded} runs with a bound; on the "
                   f"proven cells the zero-decision greedy waits {np.mean(greedy_gap):.3f} s more than the "
                   f"optimum on average (at most {max(greedy_gap):.3f} s), equal on "
                   f"{sum(g <= WAIT_TOLERANCE for g in greedy_gap)} of {len(proven)}.")  # fmt: skip
    return out


def _missing(kinds: list[str], loads: list[float], hits: list[tuple[str, float]]) -> str:
    missing = [f"{k} {x:g}" for k in kinds for x in loads if (k, x) not in hits]
    return ", ".join(missing) if missing else "none"


def _omega_table(rows: list[dict[str, Any]], first: list[str]) -> list[str]:
    keys = [*first, "batch_wait", "batch_p95_wait", "batch_floor", "service_wait", "conflict_fraction",
            "conflicted_task_fraction", "wasted_fraction", "busy_schedulers", "busyness_first", "busyness_batch",
            "util_cpu", "util_mem"]  # fmt: skip
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(_fmt(r.get(k)) for k in keys) + " |" for r in rows]
    return lines


#: Labelled values on the log-scaled ratio axes (powers of ten alone would leave 1.0 as the only label).
RATIO_TICKS = (1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0)


def _plain_ticks(ax: Any) -> None:
    """Log axes labelled 1, 1.25, 1.5, 2, ... within the plotted range rather than powers of ten."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    low, high = ax.get_ylim()
    ax.yaxis.set_major_locator(FixedLocator([v for v in RATIO_TICKS if low <= v <= high]))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def sparrow_figure(rows: list[dict[str, Any]], path: Path) -> None:
    from matplotlib.figure import Figure

    kinds = list(dict.fromkeys(r["durations"] for r in rows))
    figure = Figure(figsize=(4.2 * len(kinds), 7.0), layout="constrained")
    axes = figure.subplots(2, len(kinds), squeeze=False, sharex=True)
    for column, kind in enumerate(kinds):
        for row_index, (key, label) in enumerate((("mean_ratio", "mean"), ("p99_ratio", "p99"))):
            ax = axes[row_index][column]
            for variant in VARIANTS:
                mine = sorted((r for r in rows if r["durations"] == kind and r["variant"] == variant),
                              key=lambda r: r["load"])  # fmt: skip
                ax.plot([r["load"] for r in mine], [r[key] for r in mine], marker="o", color=COLOURS[variant],
                        linestyle="--" if variant == "ideal" else "-", label=variant)  # fmt: skip
            ax.axhline(1.0, color="black", linewidth=0.8, linestyle=":", label="lower bound")
            ax.set_yscale("log")
            _plain_ticks(ax)
            ax.set_title(f"{kind} durations: {label}")
            ax.set_ylabel(f"{label} response / lower bound")
            ax.grid(True, which="both", alpha=0.3)
            if row_index == 1:
                ax.set_xlabel("offered load")
    axes[0][0].legend(fontsize=8)
    figure.savefig(path, dpi=120)


def omega_figure(k_rows: list[dict[str, Any]], growth: list[dict[str, Any]], ideal_wait: float, path: Path) -> None:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(15.0, 4.6), layout="constrained")
    conflicts, waits, blowup = figure.subplots(1, 3)
    series = list(dict.fromkeys((r["t_job"], r["detection"]) for r in k_rows))
    for t_job, detection in series:
        mine = sorted((r for r in k_rows if r["t_job"] == t_job and r["detection"] == detection),
                      key=lambda r: r["schedulers"])  # fmt: skip
        label = f"t_job {t_job:g} s" + (" (coarse)" if detection == "coarse" else "")
        style = "--" if detection == "coarse" else "-"
        ks = [r["schedulers"] for r in mine]
        line = conflicts.plot(ks, [r["conflict_fraction"] for r in mine], marker="o", linestyle=style, label=label)
        waits.plot(ks, [r["batch_wait"] for r in mine], marker="o", linestyle=style, color=line[0].get_color(),
                   label=label)  # fmt: skip
        waits.axhline(mine[0]["batch_floor"], color=line[0].get_color(), linewidth=0.8, linestyle=":")
    if ideal_wait > 0:
        waits.axhline(ideal_wait, color="black", linewidth=1.0, linestyle="--", label="zero-decision packing")
    for ax, ylabel in ((conflicts, "conflict fraction (transactions)"), (waits, "mean batch wait (s)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("Omega schedulers k")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    waits.set_yscale("log")
    waits.set_title(f"wait (dotted: decision-time floor; zero-decision packing {ideal_wait:.2g} s)")
    conflicts.set_title("conflicts against schedulers")
    conflicts.legend(fontsize=8)
    waits.legend(fontsize=8)
    for policy, colour in (("monolithic", "tab:red"), ("omega", "tab:blue")):
        mine = sorted((r for r in growth if r["policy"] == policy), key=lambda r: r["t_job"])
        label = "monolithic" if policy == "monolithic" else "omega, k = 4"
        blowup.plot([r["t_job"] for r in mine], [r["batch_wait"] for r in mine], marker="o", color=colour,
                    label=label)  # fmt: skip
    floors = sorted((r["t_job"], r["batch_floor"]) for r in growth if r["policy"] == "monolithic")
    blowup.plot([f[0] for f in floors], [f[1] for f in floors], color="black", linestyle=":", label="decision floor")
    blowup.set_yscale("log")
    blowup.set_xlabel("per-job decision time t_job (s)")
    blowup.set_ylabel("mean batch wait (s)")
    blowup.set_title("monolithic: wait against decision time")
    blowup.grid(True, which="both", alpha=0.3)
    blowup.legend(fontsize=8)
    figure.savefig(path, dpi=120)


def draw_figures(sparrow_rows: list[dict[str, Any]], k_rows: list[dict[str, Any]], growth: list[dict[str, Any]],
                 ideal: dict[str, Any], out: Path) -> None:  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    sparrow_figure(sparrow_rows, out / "sparrow_response.png")
    omega_figure(k_rows, growth, ideal["batch_wait"], out / "omega_schedulers.png")


def _load_of(payload: dict[str, Any]) -> str:
    """The machine line of a saved payload: its load when it was measured, not now."""
    loads = " / ".join(f"{v:.2f}" for v in payload["load_average"])
    return (f"Machine: {payload['cpus']} cores ({payload['machine']}), Python {payload['python']}; load average "
            f"{loads} (1 / 5 / 15 min) when saved.")  # fmt: skip


def report(payload: dict[str, Any]) -> str:
    """The Markdown report of a run (``payload`` as saved in ``sparrow_omega.json``, machine state included)."""
    settings = payload["settings"]
    sparrow_params, omega_params = settings["sparrow"], settings["omega"]
    sparrow_rows, rtt_rows, ideal = payload["sparrow"], payload["rtt"], payload["omega_ideal"]
    small, growth, service = payload["omega_clairvoyant"], payload["omega_growth"], payload["omega_service"]
    k_rows, span, seed = payload["omega_schedulers"], float(omega_params["span"]), int(settings["seed"])
    cell = FAMILIES["omega"].instance(omega_params, seed)
    batch_jobs = sum(job.tenant == "batch" for job in cell.jobs)
    lines = [
        "# Sparrow's sampling and Omega's shared state, against their yardsticks", "", _load_of(payload), "",
        "## Sparrow", "",
        f"{sparrow_params['machines']} workers x {sparrow_params['slots']} slots; Poisson jobs of "
        f"{sparrow_params['tasks']} parallel tasks (mean {sparrow_params['mean_duration']:g} s), "
        f"{sparrow_params['jobs']} jobs per run (the 10%-90% middle of the stream measured); 2 probes per task; "
        f"round trip {settings['rtt'] * 1000:g} ms; seed {seed} (instance and policy). The lower bound of a job "
        "is max(longest task, work / slots); `ideal` is `monolithic` with zero decision times (every task "
        "started as soon as any slot frees, no messages).", "", *_sparrow_tables(sparrow_rows),
        "**Round trip** (load 0.9): mean / p99 over the bound, idle slot time per task", "",
        *_rtt_table(rtt_rows),
        "", "Claims:", "", *sparrow_claims(sparrow_rows, rtt_rows), "",
        "## Omega", "",
        f"Cell of {omega_params['machines']} machines (8 cpu, 32 GB); {len(cell.jobs)} jobs over {span:g} s "
        f"({batch_jobs} batch: mean 10 tasks of mean 30 s; {len(cell.jobs) - batch_jobs} service: mean 5 tasks "
        "of mean 600 s), offered load 0.6 of the dominant resource, 30% of it service; seed "
        f"{seed}. Decision time t_job + t_task x tasks (t_task {DEFAULT_T_TASK:g} s unless said). Wait: "
        "arrival to the job's last task started, mean over the jobs arriving in the middle 80% of the span; "
        "floor: the mean of the jobs' own decision times (a lower bound on their wait); conflict fraction: "
        "transactions with a conflict over all; busy schedulers: total decision time over the period until the "
        "last job is placed; utilisation over the arrival window. Jobs go to the batch scheduler with the "
        "fewest jobs queued or in hand, so schedulers beyond the jobs in flight stay idle and change nothing.", "",
        f"Zero-decision packing (yardstick): batch wait {ideal['batch_wait']:.3g} s, service wait "
        f"{ideal['service_wait']:.3g} s, longest wait of any job {ideal['max_wait']:.3g} s, cpu "
        f"{ideal['util_cpu']:.3f}, mem {ideal['util_mem']:.3f}."
        + (" Every job starts at its arrival, so this packing is the clairvoyant optimum of this cell (no wait "
           "is below zero): the waits below are all decision time and its queueing." if ideal["max_wait"] <= 0
           else ""), "",
        "**The clairvoyant packing on small cells** (2 machines, offered load 1.2 over 60 s, so that waiting is "
        "unavoidable): `spacetime-cp` per machine minimising avg JCT (one CP-SAT worker, 30 s), which for "
        "one-stage jobs minimises the mean wait: its schedule's mean wait and CP-SAT's proven lower bound on "
        "it (equal when optimal); against them the policies' mean wait (s) on the same arrivals, decision "
        "time t_job = 1 s (+ 0.005 s per task) except the zero-decision greedy.", "",
        *_clairvoyant_table(small), "",
        "**Per-job decision time, monolithic against Omega (k = 4)**", "",
        *_omega_table(growth, ["policy", "t_job"]), "",
        "**Service decision time, monolithic against Omega (k = 2: one service, one batch scheduler)**", "",
        *_omega_table(service, ["policy", "t_job_service"]), "",
        f"**Number of schedulers** (service decisions {SERVICE_T_JOB:g} s)", "",
        *_omega_table(k_rows, ["schedulers", "t_job", "detection"]), "",
        "Claims:", "", *omega_claims(growth, k_rows, small), "",
        "Figures: `sparrow_response.png`, `omega_schedulers.png`.",
    ]  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--quick", action="store_true", help="a small smoke run (not the published numbers)")
    arguments.add_argument("--seed", type=int, default=1)
    arguments.add_argument("--rtt", type=float, default=0.001)
    arguments.add_argument("--from-json", action="store_true",
                           help="rewrite the report and redraw the figures from sparrow_omega.json in --out "
                                "(no simulation; the saved load is kept)")  # fmt: skip
    args = arguments.parse_args()
    out = Path(args.out)
    if args.from_json:
        saved = json.loads((out / "sparrow_omega.json").read_text())
        (out / "sparrow_omega.md").write_text(report(saved) + "\n")
        draw_figures(saved["sparrow"], saved["omega_schedulers"], saved["omega_growth"], saved["omega_ideal"], out)
        return
    quick = args.quick
    sparrow_params = {"machines": 100, "slots": 4, "tasks": 10, "mean_duration": 0.1, "jobs": 300 if quick else 2000}
    loads = [0.7, 0.9] if quick else [0.5, 0.7, 0.8, 0.9, 0.95]
    kinds = ["exponential"] if quick else ["fixed", "exponential", "lognormal"]
    rtts = [0.0, 0.005] if quick else [0.0, 0.001, 0.005, 0.01, 0.02]
    span = 300.0 if quick else 1200.0
    omega_params = {"machines": 200, "load": 0.6, "span": span, "service_share": 0.3, "batch_tasks": 10.0,
                    "batch_duration": 30.0}  # fmt: skip
    ks = [1, 4, 16] if quick else [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    k_t_jobs = [1.0, 10.0] if quick else [0.1, 1.0, 10.0, 100.0]
    mono_t_jobs = [0.1, 0.5] if quick else [0.05, 0.1, 0.2, 0.3, 0.4, 0.45, 0.5, 0.6]
    service_t_jobs = [0.1, 10.0] if quick else [0.1, 1.0, 10.0, 100.0]

    sparrow_rows = sparrow_sweep(loads, kinds, sparrow_params, args.rtt, args.seed)
    rtt_rows = rtt_sweep(rtts, sparrow_params, 0.9, args.seed, ["exponential"] if quick else ["fixed", "exponential"])
    cell = FAMILIES["omega"].instance(omega_params, args.seed)
    ideal = omega_row(cell, "monolithic", {"t_job": 0.0, "t_task": 0.0}, span, args.seed)
    small = clairvoyant_rows([1, 2] if quick else list(range(1, 11)), 30.0)
    growth, service = monolithic_sweep(cell, mono_t_jobs, service_t_jobs, span, args.seed)
    k_rows = scheduler_sweep(cell, ks, k_t_jobs, None if quick else 1.0, span, args.seed)

    draw_figures(sparrow_rows, k_rows, growth, ideal, out)
    payload = {"sparrow": sparrow_rows, "rtt": rtt_rows, "omega_ideal": ideal, "omega_clairvoyant": small,
               "omega_growth": growth, "omega_service": service, "omega_schedulers": k_rows,
               "settings": {**{k: v for k, v in vars(args).items() if k in ("quick", "seed", "rtt")},
                            "sparrow": sparrow_params, "omega": omega_params}}  # fmt: skip
    save("sparrow_omega", payload, report({**machine_state(), **payload}), out)


if __name__ == "__main__":
    main()
