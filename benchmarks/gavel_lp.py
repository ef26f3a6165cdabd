"""Gavel's max-min LP (cvxpy + HiGHS) against fairpack's exact ``drfh`` on the same instances, in one run.

Gavel (Narayanan et al., OSDI'20; ``scheduler/policies/max_min_fairness.py``, ``MaxMinFairnessPolicyWithPerf``)
allocates time fractions ``X[j, a] >= 0`` of job ``j`` on accelerator type ``a`` by one cvxpy LP::

    maximise   min_j  sum_a  c[j, a] X[j, a]          c[j, a] = T[j, a] * sf_j / (w_j * p_j)
    subject to sum_a  X[j, a] <= 1                    (each job's time)
               sum_j  sf_j X[j, a] <= W_a             (the workers of each type)

with throughputs ``T``, scale factors (workers per job) ``sf``, priority weights ``w``, ``W_a`` workers of type
``a`` and ``p_j`` the job's throughput under Gavel's proportional policy (``proportional.py``: time 1 spread over
the types in proportion to their workers, ``p_j = sum_a T[j, a] W_a / sum_b W_b``). The worker process below
writes that LP as Gavel writes it (a dense ``cp.Variable`` of shape jobs x types, ``cp.min`` of the row sums,
the three constraint blocks) and solves it with cvxpy's HIGHS solver; cvxpy and highspy are pinned and installed
into this benchmark's own virtual environment under ``benchmarks/out/`` (never a fairpack dependency).

**The same instance in fairpack.** DRFH has no per-(tenant, server) throughput: a tenant's tasks have one
demand vector wherever they run. The instance is therefore generated in a form both can state exactly. Types
fall into ``families`` (round robin; each family one resource), and a job's throughput on type ``a`` is its
affinity to the type's family times the type's own speed, ``T[j, a] = phi[j, family(a)] * beta[a]`` (with as
many families as types, ``T`` is arbitrary). Then each type is a server class of ``W_a`` machines, each with
``beta[a]`` of its family's resource; each job is a tenant whose task needs ``1 / phi[j, k]`` of every family
resource ``k``. ``n`` tasks of job ``j`` on type ``a`` are the time ``X[j, a] = n / (T[j, a] sf_j)``, so the
type's worker row is exactly the class's own-family capacity row and the job's Gavel objective is its task
count over ``w_j p_j``: tenant weights ``w_j p_j s_j`` (``s_j`` the dominant share of one task) make DRFH's
max-min level Gavel's. A machine also has the other families' resources (a tenant must find every resource it
needs), sized at twice what the own-family row allows, so they never bind.

DRFH has no time row ``sum_a X[j, a] <= 1``, so its LP is a relaxation of Gavel's: its level is at least
Gavel's. Conversely, scaling every job's part of fairpack's allocation down to the common level keeps every row
and, where ``level * sum_a X[j, a] / objective_j <= 1`` for every job (the *time certificate*, printed), is
feasible for Gavel at that level: the two optima are then equal. The run asserts the certificate and that
cvxpy's optimum agrees with fairpack's level to 1e-6 relative.

**Generator** (``gavel_instance``, seeded): scale factors from Gavel's Philly distribution
(``utils._generate_scale_factor``: 1 with probability 0.7, 2 with 0.1, 4 with 0.15, 8 with 0.05); priority
weights 1, or 2 for a fifth of the jobs; the workers, ``sum_j sf_j / 10`` in all (ten times oversubscribed,
Gavel's regime under load, and what keeps every job's time row slack), split over the types in proportions
uniform in [0.5, 1.5] (at least 1 each); type speed ``beta[a]`` uniform in [0.8, 1.25]; family ``k`` of ``K``
is ``4 ** (k / (K - 1))`` times faster than family 0 (about K80 to V100); ``phi[j, k]`` is the family's speed
times a log-normal job affinity (sigma 0.5). ``families`` defaults to ``min(types, 10)``, so the 100 x 10
sanity size has arbitrary throughputs.

**Timing.** Each side runs in its own process, both alive for the whole run, and they take turns (fairpack,
Gavel, fairpack, Gavel, ...; ``--repeats`` each). Timed: for fairpack the whole ``fairpack.solve(instance,
"drfh")`` call (model build, progressive filling to the leximin allocation, the independent check); for Gavel
the coefficients, the cvxpy model and ``Problem.solve(solver="HIGHS")`` (canonicalisation and HiGHS); Gavel's
own dict-of-dicts flattening and unflattening around it (Python loops over every job and type) is left out, in
Gavel's favour. Building the instance is not timed on either side. ``--algorithm ipm`` runs fairpack's LPs
with HiGHS's interior point instead of its default. CPU seconds are each process's own (``time.process_time``); the
load average is recorded before and after.

Run: ``python -m benchmarks.gavel_lp [--sizes 1000x100 100x10] [--repeats 3]``
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

#: The cvxpy release measured and the highspy it solves with (cvxpy's HIGHS interface).
CVXPY_VERSION, HIGHSPY_VERSION = "1.9.3", "1.16.0"
ENV = Path(__file__).resolve().parent / "out" / "gavel-venv"
#: fairpack's lead the speed issue asks to keep (Gavel CPU over fairpack CPU at 1,000 x 100).
TARGET_RATIO = 15.0
#: Relative agreement of the two optima asserted.
AGREEMENT = 1e-6
#: Off-family capacity over what the own-family row allows: > 1, so those rows never bind.
SLACK = 2.0
#: Fastest family over slowest (K80 to V100 is about this).
FAMILY_SPREAD = 4.0
#: Workers the jobs would use all at once over the cluster's: Gavel's regime under load, where no job's time
#: row binds (see the time certificate).
OVERSUBSCRIPTION = 10.0


@dataclass(frozen=True)
class GavelInstance:
    """One Gavel max-min problem in product form, ``T[j, a] = phi[j, family[a]] * beta[a]``.

    Attributes
    ----------
    phi : (jobs, families) job affinity to each family
    beta : (types,) each type's own speed
    family : (types,) each type's family
    workers : (types,) workers of each type
    scale : (jobs,) workers a job uses at once (Gavel's scale factor)
    weight : (jobs,) priority weights
    """

    phi: FloatArray
    beta: FloatArray
    family: npt.NDArray[np.int64]
    workers: npt.NDArray[np.int64]
    scale: FloatArray
    weight: FloatArray

    def __post_init__(self) -> None:
        jobs, families = self.phi.shape
        types = len(self.beta)
        if not (len(self.family) == len(self.workers) == types and len(self.scale) == len(self.weight) == jobs):
            raise ValueError("inconsistent shapes")
        if not (np.all(self.phi > 0) and np.all(self.beta > 0) and np.all(self.workers >= 1)
                and np.all(self.scale >= 1) and np.all(self.weight > 0)):  # fmt: skip
            raise ValueError("throughputs, speeds, workers, scale factors and weights must be positive")
        if not (np.all(self.family >= 0) and np.all(self.family < families)):
            raise ValueError("a type's family is out of range")

    @property
    def throughput(self) -> FloatArray:
        """Gavel's throughput matrix ``T`` (jobs x types)."""
        return np.asarray(self.phi[:, self.family] * self.beta[None, :])

    @property
    def proportional(self) -> FloatArray:
        """Gavel's normalising throughput ``p_j``: time 1 spread over types in proportion to their workers."""
        share = self.workers / self.workers.sum()
        return np.asarray(self.throughput @ share)

    @property
    def coefficients(self) -> FloatArray:
        """The objective's ``c[j, a] = T[j, a] * sf_j / (w_j * p_j)``."""
        factor = self.scale / (self.weight * self.proportional)
        return np.asarray(self.throughput * factor[:, None])


def gavel_instance(jobs: int, types: int, families: int | None = None, seed: int = 0,
                   oversubscription: float = OVERSUBSCRIPTION) -> GavelInstance:  # fmt: skip
    """A seeded instance (see the module docstring); ``families`` defaults to ``min(types, 10)``."""
    families = min(types, 10) if families is None else families
    if not 1 <= families <= types:
        raise ValueError(f"families must be in 1..{types}, got {families}")
    rng = np.random.default_rng([seed, jobs, types, families])
    # Gavel's Philly scale-factor distribution (utils._generate_scale_factor).
    scale = rng.choice([1.0, 2.0, 4.0, 8.0], size=jobs, p=[0.7, 0.1, 0.15, 0.05])
    weight = rng.choice([1.0, 2.0], size=jobs, p=[0.8, 0.2])
    share = rng.uniform(0.5, 1.5, size=types)
    workers = np.maximum(1, np.round(share / share.sum() * scale.sum() / oversubscription)).astype(np.int64)
    beta = rng.uniform(0.8, 1.25, size=types)
    speed = FAMILY_SPREAD ** (np.arange(families) / max(families - 1, 1))
    phi = speed[None, :] * rng.lognormal(0.0, 0.5, size=(jobs, families))
    family = np.arange(types, dtype=np.int64) % families
    return GavelInstance(phi, beta, family, workers, scale, weight)


def fairpack_instance(gavel: GavelInstance) -> Any:
    """The same problem as a DRFH instance: types are server classes, jobs tenants, families resources."""
    from fairpack.models.types import Instance, ServerClass, Tenant

    jobs, families = gavel.phi.shape
    demand = 1.0 / gavel.phi
    # What the own-family row allows of family r on a machine of family k: at most max_j phi[j, k] / phi[j, r]
    # per unit of own-family capacity.
    ratio = np.max(gavel.phi[:, :, None] / gavel.phi[:, None, :], axis=0)  # (k, r)
    capacity = SLACK * gavel.beta[:, None] * ratio[gavel.family]
    capacity[np.arange(len(gavel.beta)), gavel.family] = gavel.beta
    resources = tuple(f"family{k}" for k in range(families))
    servers = ServerClass.many([f"type{a}" for a in range(len(gavel.beta))], capacity, gavel.workers.tolist())
    provisional = Instance(resources, servers)
    total = provisional.total_capacity
    share_per_task = np.max(demand / total[None, :], axis=1)
    weight = gavel.weight * gavel.proportional * share_per_task
    tenants = Tenant.many([f"job{j}" for j in range(jobs)], demand, weight / weight.max(), np.full(jobs, np.inf))
    return Instance(resources, servers, tenants, name=f"gavel_{jobs}x{len(gavel.beta)}")


def gavel_time(gavel: GavelInstance, tasks: FloatArray) -> FloatArray:
    """Gavel's time fractions ``X`` of a fairpack allocation's tasks per (tenant, server class)."""
    return np.asarray(tasks / (gavel.throughput * gavel.scale[:, None]))


def gavel_level(gavel: GavelInstance, tasks: FloatArray) -> dict[str, float]:
    """Gavel's objective at fairpack's allocation, the time certificate, and how far rows are exceeded."""
    time_used = gavel_time(gavel, tasks)
    objective = np.sum(gavel.coefficients * time_used, axis=1)
    level = float(objective.min())
    load = (gavel.scale[:, None] * time_used).sum(axis=0) / gavel.workers
    return {
        "level": level,
        # Each job scaled down to the level: its time must fit in 1 for Gavel to accept the point.
        "time_certificate": float(np.max(level * time_used.sum(axis=1) / objective)),
        "worker_rows_max": float(load.max()),
    }


def fairpack_side(gavel: GavelInstance, algorithm: str | None = None) -> dict[str, Any]:
    """fairpack's exact ``drfh`` on the mapped instance (HiGHS ``algorithm``, None: fairpack's default); timed
    over the whole ``solve`` call."""
    from fairpack.solver.api import solve

    instance = fairpack_instance(gavel)
    wall, cpu = time.perf_counter(), time.process_time()
    result = solve(instance, "drfh", algorithm=algorithm)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if result.allocation is None or not result.verified:
        raise RuntimeError(f"fairpack's drfh did not return a verified allocation: {result.status} {result.message}")
    return {"wall_s": wall, "cpu_s": cpu, "status": result.status, "verified": bool(result.verified),
            "rounds": result.extra.get("rounds"), "lp_solves": result.extra.get("lp_solves"),
            **gavel_level(gavel, result.allocation.tasks)}  # fmt: skip


def gavel_lp(coefficients: FloatArray, scale: FloatArray, workers: FloatArray) -> tuple[float, FloatArray, str]:
    """Gavel's max-min LP in cvxpy, as ``MaxMinFairnessPolicyWithPerf.get_allocation`` states it, with HiGHS."""
    import cvxpy as cp

    jobs, types = coefficients.shape
    scale_array = np.repeat(scale[:, None], types, axis=1)  # Gavel's scale_factors_array
    x = cp.Variable((jobs, types))
    objective = cp.Maximize(cp.min(cp.sum(cp.multiply(coefficients, x), axis=1)))
    constraints = [x >= 0, cp.sum(cp.multiply(scale_array, x), axis=0) <= workers, cp.sum(x, axis=1) <= 1]
    problem = cp.Problem(objective, constraints)
    problem.solve(solver="HIGHS")
    return float(problem.value), np.asarray(x.value), str(problem.status)


def _reply_channel() -> Any:
    """The process's standard output for replies, with file descriptor 1 sent to standard error from now on:
    HiGHS prints its banner there whatever cvxpy's ``verbose`` says, which would break the one-line protocol."""
    channel = os.fdopen(os.dup(1), "w")
    sys.stdout.flush()
    os.dup2(2, 1)
    return channel


def worker() -> None:
    """Inside the cvxpy environment: for each JSON instance line, build and solve Gavel's LP, reply one line."""
    import cvxpy as cp

    replies = _reply_channel()
    for line in sys.stdin:
        job = json.loads(line)
        throughput = np.asarray(job["throughput"])
        scale, weight, workers = (np.asarray(job[key], dtype=np.float64) for key in ("scale", "weight", "workers"))
        wall, cpu = time.perf_counter(), time.process_time()
        proportional = throughput @ (workers / workers.sum())
        coefficients = throughput * (scale / (weight * proportional))[:, None]
        value, x, status = gavel_lp(coefficients, scale, workers)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        # Gavel's own rows at its answer, to show it is feasible.
        rows = {"time_rows_max": float(x.sum(axis=1).max()),
                "worker_rows_max": float(((scale[:, None] * x).sum(axis=0) / workers).max())}  # fmt: skip
        print(json.dumps({"wall_s": wall, "cpu_s": cpu, "value": value, "status": status, **rows,
                          "cvxpy": cp.__version__}), file=replies, flush=True)  # fmt: skip


def ensure_environment(env: Path = ENV) -> Path:
    """The cvxpy environment (created and filled once, versions pinned); returns its Python."""
    python = env / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    probe = subprocess.run([str(python), "-c", "from importlib.metadata import version as v; "
                            "print(v('cvxpy'), v('highspy'))"], capture_output=True, text=True)  # fmt: skip
    if probe.returncode != 0 or probe.stdout.split() != [CVXPY_VERSION, HIGHSPY_VERSION]:
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"cvxpy=={CVXPY_VERSION}",
                        f"highspy=={HIGHSPY_VERSION}"], check=True)  # fmt: skip
    return python


def _fairpack_worker() -> None:
    """In fairpack's environment: for each ``{"jobs", "types", "families", "seed", "algorithm"}`` line, solve and
    reply."""
    replies = _reply_channel()
    for line in sys.stdin:
        job = json.loads(line)
        gavel = gavel_instance(job["jobs"], job["types"], job["families"], job["seed"])
        print(json.dumps(fairpack_side(gavel, job["algorithm"])), file=replies, flush=True)


class Peer:
    """A worker process that answers one JSON line per JSON line sent."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        cwd=Path(__file__).resolve().parents[1])  # fmt: skip

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        if not reply:
            raise RuntimeError(f"worker {self.process.args} stopped")
        answer: dict[str, Any] = json.loads(reply)
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _request(gavel: GavelInstance) -> dict[str, Any]:
    """What Gavel's policy is given: throughputs, scale factors, priority weights and workers per type."""
    return {"throughput": gavel.throughput.tolist(), "scale": gavel.scale.tolist(),
            "weight": gavel.weight.tolist(), "workers": gavel.workers.tolist()}  # fmt: skip


def measure(jobs: int, types: int, families: int | None, seed: int, repeats: int, ours: Peer, theirs: Peer,
            algorithm: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Both sides ``repeats`` times each, alternating; the optima compared and the time certificate checked."""
    gavel = gavel_instance(jobs, types, families, seed)
    request = _request(gavel)
    runs: dict[str, list[dict[str, Any]]] = {"fairpack": [], "gavel": []}
    for _ in range(repeats):
        runs["fairpack"].append(ours.ask({"jobs": jobs, "types": types, "families": gavel.phi.shape[1],
                                          "seed": seed, "algorithm": algorithm}))  # fmt: skip
        runs["gavel"].append(theirs.ask(request))
    level, value = runs["fairpack"][0]["level"], runs["gavel"][0]["value"]
    difference = abs(level - value) / max(abs(value), 1e-12)
    certificate = max(run["time_certificate"] for run in runs["fairpack"])
    row: dict[str, Any] = {"jobs": jobs, "types": types, "families": int(gavel.phi.shape[1]), "seed": seed,
                           "fairpack_level": level, "gavel_value": value, "relative_difference": difference,
                           "time_certificate": certificate, "runs": runs}  # fmt: skip
    for side in runs:
        for clock in ("cpu_s", "wall_s"):
            figures = [run[clock] for run in runs[side]]
            row[f"{side}_{clock}"] = {"min": min(figures), "median": statistics.median(figures)}
    row["ratio_cpu"] = row["gavel_cpu_s"]["median"] / row["fairpack_cpu_s"]["median"]
    row["ratio_wall"] = row["gavel_wall_s"]["median"] / row["fairpack_wall_s"]["median"]
    return row


def check(row: dict[str, Any]) -> None:
    """The proof, asserted: Gavel solved to optimality, fairpack's level Gavel-feasible, the optima equal."""
    size = f"{row['jobs']} x {row['types']} ({row['families']} families)"
    assert all(run["status"] == "optimal" for run in row["runs"]["gavel"]), f"{size}: Gavel's LP not optimal"
    assert row["time_certificate"] <= 1 + 1e-9, f"{size}: time certificate {row['time_certificate']} > 1"
    assert row["relative_difference"] <= AGREEMENT, (f"{size}: optima differ, fairpack {row['fairpack_level']!r}, "
                                                     f"Gavel {row['gavel_value']!r}")  # fmt: skip


def markdown(rows: list[dict[str, Any]], load: dict[str, list[float]], highspy: str,
             algorithm: str | None = None) -> str:  # fmt: skip
    from benchmarks._common import load_line

    how = f", HiGHS algorithm {algorithm!r}" if algorithm else ""
    lines = [
        f"Gavel's max-min LP (cvxpy {CVXPY_VERSION} + HiGHS via highspy {highspy}) against fairpack `drfh` "
        f"(whole `solve`: leximin filling and the independent check{how}), same instances, alternating runs.",
        "",
        "| jobs x types | families | optimum (fairpack / Gavel) | rel. diff | time cert. | fairpack CPU s min / med "
        "| Gavel CPU s min / med | fairpack wall s | Gavel wall s | Gavel / fairpack CPU (wall) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        fp_cpu, gv_cpu = row["fairpack_cpu_s"], row["gavel_cpu_s"]
        lines.append(
            f"| {row['jobs']:,} x {row['types']} | {row['families']} | {row['fairpack_level']:.9g} / "
            f"{row['gavel_value']:.9g} | {row['relative_difference']:.1e} | {row['time_certificate']:.3f} | "
            f"{fp_cpu['min']:.2f} / {fp_cpu['median']:.2f} | {gv_cpu['min']:.2f} / {gv_cpu['median']:.2f} | "
            f"{row['fairpack_wall_s']['median']:.2f} | {row['gavel_wall_s']['median']:.2f} | "
            f"{row['ratio_cpu']:.1f}x ({row['ratio_wall']:.1f}x) |"
        )
    start, end = (" / ".join(f"{v:.2f}" for v in load[key]) for key in ("start", "end"))
    lines += ["", f"Load average (1 / 5 / 15 min): {start} before, {end} after. Target: Gavel / fairpack CPU "
              f">= {TARGET_RATIO:g}x at 1,000 x 100.", "", load_line()]  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    from benchmarks._common import parser, save

    parse = parser(__doc__.splitlines()[0])
    parse.add_argument("--sizes", nargs="+", default=["1000x100", "100x10"], help="JOBSxTYPES")
    parse.add_argument("--families", type=int, default=None, help="families (resources); default min(types, 10)")
    parse.add_argument("--repeats", type=int, default=3)
    parse.add_argument("--seed", type=int, default=0)
    parse.add_argument("--algorithm", default=None, help="fairpack's HiGHS algorithm (default: fairpack's own)")
    parse.add_argument("--name", default="gavel_lp", help="results file name")
    args = parse.parse_args()
    python = ensure_environment()
    load_start = list(os.getloadavg())
    here = str(Path(__file__).resolve())
    ours = Peer([sys.executable, "-m", "benchmarks.gavel_lp", "--fairpack-worker"])
    theirs = Peer([str(python), here, "--worker"])
    rows = []
    try:
        warm = gavel_instance(20, 2, seed=args.seed)  # imports and first-call set-up, not timed
        ours.ask({"jobs": 20, "types": 2, "families": 2, "seed": args.seed, "algorithm": args.algorithm})
        theirs.ask(_request(warm))
        for size in args.sizes:
            jobs, types = (int(part) for part in size.lower().split("x"))
            row = measure(jobs, types, args.families, args.seed, args.repeats, ours, theirs, args.algorithm)
            print(f"{jobs} x {types}: optimum {row['fairpack_level']:.9g} (Gavel {row['gavel_value']:.9g}), CPU "
                  f"fairpack {row['fairpack_cpu_s']['median']:.2f} s, Gavel {row['gavel_cpu_s']['median']:.2f} s, "
                  f"ratio {row['ratio_cpu']:.1f}x", flush=True)  # fmt: skip
            rows.append(row)
    finally:
        ours.close()
        theirs.close()
    load = {"start": load_start, "end": list(os.getloadavg())}
    versions = subprocess.run([str(python), "-c", "from importlib.metadata import version; print(version('highspy'))"],
                              capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    save(args.name, {"cvxpy_version": CVXPY_VERSION, "highspy_version": versions, "repeats": args.repeats,
                     "fairpack_algorithm": args.algorithm,
                     "target_ratio": TARGET_RATIO, "load": load, "sizes": rows},
         markdown(rows, load, versions, args.algorithm), args.out)  # fmt: skip
    for row in rows:  # after saving, so a disagreement's figures are on disk
        check(row)


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    elif sys.argv[1:] == ["--fairpack-worker"]:
        _fairpack_worker()
    else:
        main()
