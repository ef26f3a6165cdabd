"""DRFH in tenants: the Google table (12,583 machines in 10 classes) from 1,000 to 100,000 tenants.

Targets: 10,000 tenants <= 5 s, 100,000 tenants <= 60 s and <= 4 GiB, verified, and the cost's slope in
tenants (log CPU seconds against log tenants) <= 1.3 between 1,000 and 100,000 tenants.

Each tenant count runs ``solve(instance, "drfh")`` (progressive filling and the independent check) in a
fresh process (``multiprocessing`` spawn) with two strategies, interleaved:

- ``decompose``, today's default below 200 units: rounds on a master LP over the 20 capacity rows,
  priced over every tenant at once (``solver.drfh.decompose``);
- ``plain``, the default before it: every (tenant, unit) column in one HiGHS model. It is run only up to
  ``--plain-max`` tenants (at 10,000 one simplex solve takes about 30 s and the filling a minute).

Where both run, the largest difference of a tenant's task count between them (relative to the larger)
is shown: the leximin shares are unique, so they must agree. Wall and CPU seconds cover the solve and
the check, not building the instance; peak memory is the child's (``resource.getrusage``), with the
instance. The 1-minute load average is recorded before every run: the machine is shared.

Run: ``python -m benchmarks.drfh_tenants --data-dir ../shared/data``
"""

from __future__ import annotations

import math
import multiprocessing
import os
import resource
import time
from typing import Any

import numpy as np

from benchmarks._common import data_dir_or_none, load_line, parser, save
from fairpack.models.generators import google_instance

TENANTS = (1_000, 3_000, 10_000, 30_000, 100_000)
TARGET_10K_S, TARGET_100K_S, TARGET_100K_MIB, TARGET_SLOPE = 5.0, 60.0, 4096.0, 1.3


def _child(data_dir: str, tenants: int, seed: int, strategy: str) -> dict[str, Any]:
    """One solve in this (fresh) process: times, memory, status and the tenants' task counts."""
    from fairpack.solver.api import solve

    instance = google_instance(data_dir, tenants, seed)
    wall, cpu = time.perf_counter(), time.process_time()
    result = solve(instance, "drfh", strategy=strategy)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert result.allocation is not None, result.message
    return {
        "wall_s": wall, "cpu_s": cpu, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "status": result.status, "verified": result.verified, "objective": result.objective,
        "rounds": result.extra.get("rounds"), "lp_solves": result.extra.get("lp_solves"),
        "tasks": result.allocation.tenant_tasks.tolist(),
    }  # fmt: skip


def _run(args: tuple[Any, ...]) -> dict[str, Any]:
    return _child(*args)


def slope(rows: list[dict[str, Any]], low: int, high: int) -> float | None:
    """log(cpu(high) / cpu(low)) / log(high / low) for the decomposition's rows, if both ran."""
    cpu = {row["tenants"]: row["cpu_s"] for row in rows if row["strategy"] == "decompose"}
    if low not in cpu or high not in cpu:
        return None
    return math.log(cpu[high] / cpu[low]) / math.log(high / low)


def _agreement(rows: list[dict[str, Any]], tenants: int) -> float | None:
    by = {row["strategy"]: np.asarray(row["tasks"]) for row in rows if row["tenants"] == tenants}
    if len(by) < 2:
        return None
    a, b = by["decompose"], by["plain"]
    return float(np.max(np.abs(a - b) / np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-9)))


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--tenants", type=int, nargs="+", default=list(TENANTS))
    arguments.add_argument("--seed", type=int, default=1)
    arguments.add_argument("--plain-max", type=int, default=10_000, help="largest tenant count for the plain LP")
    args = arguments.parse_args()
    data = data_dir_or_none(args.data_dir)
    if data is None:
        raise SystemExit(f"no data folder at {args.data_dir}: the Google table is needed")
    context = multiprocessing.get_context("spawn")
    rows: list[dict[str, Any]] = []
    for tenants in args.tenants:
        for strategy in ("plain", "decompose"):
            if strategy == "plain" and tenants > args.plain_max:
                continue
            load = os.getloadavg()[0]
            with context.Pool(1) as pool:
                measured = pool.apply(_run, ((str(data), tenants, args.seed, strategy),))
            row = {"tenants": tenants, "strategy": strategy, "load_1min": load, **measured}
            rows.append(row)
            print({k: v for k, v in row.items() if k != "tasks"}, flush=True)
    whole, upper = slope(rows, 1_000, 100_000), slope(rows, 10_000, 100_000)
    lines = [
        f"# DRFH in tenants: Google 2011 table (10 classes), seed {args.seed}",
        "",
        load_line(),
        "Each row is one fresh process (solve and check, CPU and wall seconds); `load` is the 1-minute load "
        "average before it. `plain` is the previous default (every pair column in one HiGHS model), "
        "`decompose` today's.",
        "",
        "| tenants | strategy | wall s | cpu s | peak MiB | status | verified | rounds | LP solves | "
        "largest task difference to plain | load |",
        "|---:|---|---:|---:|---:|---|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        agreement = _agreement(rows, row["tenants"]) if row["strategy"] == "decompose" else None
        lines.append(
            f"| {row['tenants']:,} | {row['strategy']} | {row['wall_s']:.2f} | {row['cpu_s']:.2f} | "
            f"{row['peak_mib']:.0f} | {row['status']} | {row['verified']} | {row['rounds']} | {row['lp_solves']} | "
            f"{'-' if agreement is None else f'{agreement:.1e}'} | {row['load_1min']:.2f} |"
        )
    ten = next((r for r in rows if r["tenants"] == 10_000 and r["strategy"] == "decompose"), None)
    hundred = next((r for r in rows if r["tenants"] == 100_000 and r["strategy"] == "decompose"), None)
    lines += ["", "Targets:", ""]
    if ten is not None:
        ok = ten["wall_s"] <= TARGET_10K_S and ten["verified"]
        lines.append(f"- 10,000 tenants: {ten['wall_s']:.2f} s wall, {ten['cpu_s']:.2f} s CPU, verified "
                     f"{ten['verified']} (target <= {TARGET_10K_S:g} s): {'met' if ok else 'missed'}")  # fmt: skip
    if hundred is not None:
        ok = hundred["wall_s"] <= TARGET_100K_S and hundred["peak_mib"] <= TARGET_100K_MIB and hundred["verified"]
        lines.append(f"- 100,000 tenants: {hundred['wall_s']:.2f} s wall, {hundred['cpu_s']:.2f} s CPU, "
                     f"{hundred['peak_mib']:.0f} MiB, verified {hundred['verified']} (target <= {TARGET_100K_S:g} s, "
                     f"<= {TARGET_100K_MIB:g} MiB): {'met' if ok else 'missed'}")  # fmt: skip
    if whole is not None:
        lines.append(f"- slope of CPU seconds in tenants, 1,000 to 100,000: {whole:.2f} (target <= {TARGET_SLOPE:g}): "
                     f"{'met' if whole <= TARGET_SLOPE else 'missed'}")  # fmt: skip
    if upper is not None:
        lines.append(f"- the same from 10,000 to 100,000 (fixed costs matter less): {upper:.2f}")
    for tenants in sorted({r["tenants"] for r in rows}):
        pair = {r["strategy"]: r for r in rows if r["tenants"] == tenants}
        if len(pair) == 2:
            lines.append(f"- {tenants:,} tenants: plain / decompose CPU = "
                         f"{pair['plain']['cpu_s'] / pair['decompose']['cpu_s']:.0f}x")  # fmt: skip
    payload = {"rows": [{k: v for k, v in r.items() if k != "tasks"} for r in rows], "slope_1k_100k": whole,
               "slope_10k_100k": upper}  # fmt: skip
    save("drfh_tenants", payload, "\n".join(lines), args.out)


if __name__ == "__main__":
    main()
