"""Static H-DRF at scale, and how far the hierarchical heuristics are from it.

1. Exact ``hdrf`` on random org trees (``models.generators.random_tree_instance``) of 10 to 100,000
   leaves, depths 2-6, 3-5 resources, half the leaves with task caps: time, phases (events), and the
   growth exponent of time against leaves fitted on log-log axes. Pooled (the paper's setting), and
   placeable on 5 heterogeneous server classes for the smaller trees. Targets: 10,000
   leaves pooled in at most 1 s and 100,000 in at most 20 s, depths 4-6 with 4-5 resources. Up to
   ``--reference-max-leaves`` the reference engine (every node recomputed in every phase, the
   algorithm before the node clocks) runs on the same tree in the same run: its time, and the
   largest difference between the two engines' shares.
2. Time limits: ``solve(..., time_limit=S)`` (the whole call, verification included) on a 2,000-leaf
   tree on 500 server classes and on the largest pooled tree: wall time against S, status, and
   whether the partial allocation verifies.
3. Heuristics against ``hdrf`` on random trees and on the paper's Fig. 10 tree: ``collapsed`` (its
   static allocation) and the simulated ``naive-hdrf``, ``dynamic-hdrf`` and ``hslots`` (their
   time-averaged shares after warm-up, which is a feasible pooled allocation; ``hslots`` with the most
   slots per machine that still fit every task). For each: nodes below
   their share guarantee and the worst shortfall, the smallest share/guarantee ratio, the smallest
   ratio of a leaf's share to its ``hdrf`` share, mean utilisation as a ratio to ``hdrf``'s, and
   the time leaves spent starving (simulated methods).

The machine is shared: every row records the 1-minute load average when it finished, and the CPU time
of the process beside the wall time (with more runnable jobs than cores, wall time stretches).

Run: ``python -m benchmarks.hdrf_scale`` (``--max-leaves 30000 --huge 100000`` adds the largest trees).
"""

from __future__ import annotations

import math
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import parser, peak_rss_mib, save, timed
from fairpack.models.check import share_guarantee
from fairpack.models.check.hierarchy import demanding_nodes, guaranteed_nodes, node_shares
from fairpack.models.generators import random_tree_instance
from fairpack.models.io import load_instance
from fairpack.models.metrics import guarantee_ratio
from fairpack.models.result import Allocation
from fairpack.models.types import Instance
from fairpack.solver.api import solve
from fairpack.solver.hdrf.water_filling import solve_hdrf

FIG10 = Path(__file__).resolve().parents[1] / "instances" / "hdrf_fig10.yaml"
SHAPES = ((2, 3), (4, 4), (6, 5))  # (depth, resources)


def _scaling(max_leaves: int, servers_max_leaves: int, huge: int, reference_max_leaves: int) -> list[dict[str, Any]]:
    rows = []
    sizes = [n for n in (10, 100, 1000, 3000, 10000, 30000, 100000) if n <= max_leaves]
    plan = [(leaves, shape) for leaves in sizes for shape in SHAPES]
    if huge > max_leaves:
        plan += [(huge, shape) for shape in SHAPES[1:]]  # the target's shapes: depth 4-6, 4-5 resources
    for leaves, (depth, resources) in plan:
        for servers in (None, 5):
            if servers is not None and leaves > servers_max_leaves:
                continue
            pooled = servers is None
            instance, build_s = timed(
                lambda n=leaves, d=depth, r=resources, s=servers: random_tree_instance(1, n, d, r, servers=s)
            )
            cpu = time.process_time()
            filled, seconds = timed(lambda instance=instance, p=pooled: solve_hdrf(instance, pooled=p))
            cpu = time.process_time() - cpu
            allocation = Allocation(filled.tasks, filled.kind)
            row = {
                "leaves": leaves,
                "nodes": len(instance.hierarchy.nodes) if instance.hierarchy else 0,
                "depth": depth,
                "resources": resources,
                "placement": "pooled" if servers is None else f"{servers} server classes",
                "status": filled.status,
                "seconds": seconds,
                "cpu_s": cpu,
                "generate_s": build_s,
                "phases": filled.phases,
                "lp_solves": filled.lp_solves,
                "guarantee_ratio": guarantee_ratio(instance, allocation),
                "peak_rss_mib": peak_rss_mib(),
                "reference_s": None,
                "reference_phases": None,
                "max_share_difference": None,
            }
            if leaves <= reference_max_leaves:
                reference, row["reference_s"] = timed(
                    lambda instance=instance, p=pooled: solve_hdrf(instance, pooled=p, incremental=False)
                )
                row["reference_phases"] = reference.phases
                row["max_share_difference"] = float(np.abs(reference.shares - filled.shares).max())
            row["load"] = os.getloadavg()[0]
            rows.append(row)
            print(row, flush=True)
    return rows


def _time_limits(limits: list[float], pooled_leaves: int) -> list[dict[str, Any]]:
    """Wall time of the whole ``solve`` call against its time limit, and whether the partial result verifies."""
    cases = [(2000, 3, 3, 500, "servers"), (pooled_leaves, 6, 5, None, "pooled")]
    rows = []
    for leaves, depth, resources, servers, placement in cases:
        instance = random_tree_instance(1, leaves, depth, resources, servers=servers)
        for limit in limits:
            result, seconds = timed(
                lambda instance=instance, p=placement, s=limit: solve(instance, "hdrf", placement=p, time_limit=s)
            )
            rows.append(
                {
                    "leaves": leaves,
                    "depth": depth,
                    "resources": resources,
                    "placement": placement if servers is None else f"{servers} server classes",
                    "time_limit": limit,
                    "wall_s": seconds,
                    "over_s": seconds - limit,
                    "status": result.status,
                    "verified": result.verified,
                    "phases": result.extra.get("phases"),
                    "load": os.getloadavg()[0],
                }
            )
            print(rows[-1], flush=True)
    return rows


def _exponent(rows: list[dict[str, Any]], placement: str) -> float | None:
    points = [(r["leaves"], r["seconds"]) for r in rows if r["placement"] == placement and r["leaves"] >= 100]
    if len({leaves for leaves, _ in points}) < 2:
        return None
    x, y = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    return float(np.polyfit(x, y, 1)[0])


def _slots_that_fit(instance: Instance) -> int:
    """The most slots per machine such that every task still fits in one (the slot scheduler's best case)."""
    largest = instance.demand.max(axis=0)
    needed = largest > 0
    return max(1, int(np.floor(np.min(instance.capacity.max(axis=0)[needed] / largest[needed]))))


def _pooled_allocation(instance: Instance, shares: np.ndarray) -> Allocation:
    dominant = instance.dominant_demand
    tasks = np.divide(shares, dominant, out=np.zeros_like(shares), where=dominant > 0)
    return Allocation(tasks[:, None], "pool")


def _compare(instance: Instance, label: str, horizon: float, slots: int) -> list[dict[str, Any]]:
    exact = solve(instance, "hdrf", placement="pooled")
    exact_shares = exact.allocation.tenant_tasks * instance.dominant_demand
    exact_use = float(np.mean(exact.allocation.tenant_tasks @ instance.demand / instance.total_capacity))
    rows = []
    for method in ("hdrf", "collapsed", "naive-hdrf", "dynamic-hdrf", "hslots"):
        options: dict[str, Any] = {}
        if method in ("naive-hdrf", "dynamic-hdrf", "hslots"):
            options = {"extra": {"horizon": horizon, "warmup": horizon / 10, "seed": 1}, "slots": slots}
        elif method == "collapsed":
            options = {"placement": "pooled"}
        result, seconds = timed(lambda method=method, options=options: solve(instance, method, **options))
        starving = 0.0
        if "time_averaged_shares" in result.extra:
            averaged = result.extra["time_averaged_shares"]
            shares = np.array([averaged[t.name] for t in instance.tenants], dtype=np.float64)
            allocation = _pooled_allocation(instance, shares)
            starving = float(sum(e["duration"] for e in result.extra.get("starvation", [])))
        else:
            allocation = Allocation(result.allocation.tenant_tasks[:, None], "pool")
            shares = allocation.tenant_tasks * instance.dominant_demand
        demanding = demanding_nodes(instance, "pool")
        _, node_share = node_shares(instance, allocation)
        check = share_guarantee(instance, allocation)
        positive = exact_shares > 1e-9
        use = float(np.mean(allocation.tenant_tasks @ instance.demand / instance.total_capacity))
        rows.append(
            {
                "instance": label,
                "method": method,
                "verified": result.verified,
                "guarantee_holds": check.holds,
                "worst_shortfall": max(0.0, check.excess),
                "nodes_below_guarantee": _below(instance, allocation),
                "demanding_nodes": int(demanding[1:].sum()),
                "guarantee_ratio": guarantee_ratio(instance, allocation),
                "min_share_ratio": float(np.min(shares[positive] / exact_shares[positive])) if positive.any() else 1.0,
                "utilisation_ratio": use / exact_use if exact_use > 0 else math.nan,
                "starving_time": starving,
                "root_share": float(node_share[0]),
                "seconds": seconds,
            }
        )
        print(rows[-1], flush=True)
    return rows


def _below(instance: Instance, allocation: Allocation, tol: float = 1e-6) -> int:
    applies, share, guarantee = guaranteed_nodes(instance, allocation, tol)
    return int(np.sum(applies & (share < guarantee - tol)))


def _markdown(
    scaling: list[dict[str, Any]], limits: list[dict[str, Any]], gaps: list[dict[str, Any]], load: tuple[float, float]
) -> str:
    lines = ["# Static H-DRF at scale", ""]
    lines.append(
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, shared with other jobs; 1-minute load average "
        f"{load[0]:.2f} at the start and {load[1]:.2f} at the end (each row: at its end). Reference: every node "
        "recomputed in every phase (`incremental=False`), the algorithm before the node clocks, same tree, same run."
    )
    lines.append("")
    lines.append(
        "| leaves | nodes | depth | resources | placement | status | time s | CPU s | phases | LPs | share/guar. "
        "| reference s | ref. phases | max share diff. | load |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in scaling:
        reference = (
            f"{r['reference_s']:.3f} | {r['reference_phases']} | {r['max_share_difference']:.1e}"
            if r["reference_s"] is not None
            else "- | - | -"
        )
        lines.append(
            f"| {r['leaves']} | {r['nodes']} | {r['depth']} | {r['resources']} | {r['placement']} | {r['status']} "
            f"| {r['seconds']:.3f} | {r['cpu_s']:.3f} | {r['phases']} | {r['lp_solves']} | {r['guarantee_ratio']:.3f} "
            f"| {reference} "
            f"| {r['load']:.2f} |"
        )
    for placement in ("pooled", "5 server classes"):
        exponent = _exponent(scaling, placement)
        if exponent is not None:
            fit = "least squares on log-log from 100 leaves up"
            lines.append(f"\nTime grows as leaves^{exponent:.2f} ({placement}, {fit}).")
    for leaves, target in ((10000, 1.0), (100000, 20.0)):
        rows = [r for r in scaling if r["leaves"] == leaves and r["placement"] == "pooled" and r["depth"] >= 4]
        if rows:
            worst = max(rows, key=lambda r: r["seconds"])
            shape = f"depth {worst['depth']}, {worst['resources']} resources, load {worst['load']:.1f}"
            lines.append(
                f"\n{leaves:,} leaves pooled, depth 4-6: {worst['seconds']:.2f} s at worst, {worst['cpu_s']:.2f} s of "
                f"CPU ({shape}; target: at most {target:g} s)."
            )
    if limits:
        lines += ["", "# Time limits (the whole `solve` call)", ""]
        lines.append(
            "| leaves | depth | resources | placement | limit s | wall s | over s | status | verified | phases | load |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in limits:
            lines.append(
                f"| {r['leaves']} | {r['depth']} | {r['resources']} | {r['placement']} | {r['time_limit']:g} "
                f"| {r['wall_s']:.2f} | {r['over_s']:+.2f} | {r['status']} | {'yes' if r['verified'] else 'no'} "
                f"| {r['phases']} | {r['load']:.2f} |"
            )
    lines += ["", "# Heuristics against hdrf", ""]
    lines.append(
        "| instance | method | guarantee holds | nodes below / demanding | worst shortfall | min share/guar. "
        "| min share ratio | utilisation ratio | starving time | time s |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in gaps:
        lines.append(
            f"| {r['instance']} | {r['method']} | {'yes' if r['guarantee_holds'] else 'no'} "
            f"| {r['nodes_below_guarantee']} / {r['demanding_nodes']} | {r['worst_shortfall']:.4f} "
            f"| {r['guarantee_ratio']:.3f} | {r['min_share_ratio']:.3f} | {r['utilisation_ratio']:.3f} "
            f"| {r['starving_time']:.1f} | {r['seconds']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--max-leaves", type=int, default=10000)
    arguments.add_argument("--servers-max-leaves", type=int, default=1000)
    arguments.add_argument("--huge", type=int, default=0, help="also trees of this many leaves (depth 4 and 6)")
    arguments.add_argument(
        "--reference-max-leaves", type=int, default=10000, help="run the reference engine up to this size"
    )
    arguments.add_argument("--time-limits", default="1,5", help="time limits in seconds for section 2 ('' skips it)")
    arguments.add_argument("--compare-leaves", default="20,60")
    arguments.add_argument("--horizon", type=float, default=100.0)
    args = arguments.parse_args()
    start_load = os.getloadavg()[0]
    scaling = _scaling(args.max_leaves, args.servers_max_leaves, args.huge, args.reference_max_leaves)
    limits = [float(s) for s in args.time_limits.split(",") if s]
    limit_rows = _time_limits(limits, max(args.max_leaves, args.huge)) if limits else []
    gaps = _compare(load_instance(FIG10), "Fig. 10", args.horizon, slots=5)
    for leaves in [int(n) for n in args.compare_leaves.split(",") if n]:
        for seed in (1, 2):
            instance = random_tree_instance(seed, leaves, 3, 3)
            label = f"random {leaves} leaves, seed {seed}"
            gaps += _compare(instance, label, args.horizon, slots=_slots_that_fit(instance))
    load = (start_load, os.getloadavg()[0])
    payload = {"load": {"start": load[0], "end": load[1]}, "scaling": scaling, "time_limits": limit_rows}
    save("hdrf_scale", {**payload, "heuristics": gaps}, _markdown(scaling, limit_rows, gaps, load), args.out)


if __name__ == "__main__":
    main()
