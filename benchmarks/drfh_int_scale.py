"""drfh-int on 100 servers x 20 tenants: time to a proven optimum, or the gap left to the LP bound.

Google cluster configurations scaled to 100 machines (or Google-like synthetic ones without the data),
20 weighted tenants with random demands and task caps. Two task sizes: demands up to 10% and up to 2%
of a typical machine per resource (larger tasks mean a larger integrality gap); caps scale inversely
with the task size so that demand exceeds the cluster in both. For each run: the
status of the max-min search (``optimal`` = f proven), its time, the leximin steps done, f, the proven
upper bound on f, the LP's f and the gap between f and the LP; and a second run with ``gap=0.01``
(stop once f is within 1% of its proven bound): its status (``feasible`` = reached), time and gap to the LP.

Run: ``python -m benchmarks.drfh_int_scale --data-dir ../shared/data``
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks._common import data_dir_or_none, parser, save, timed
from fairpack.models.generators import google_like_servers, google_servers, random_tenants
from fairpack.models.result import Result
from fairpack.models.types import Instance
from fairpack.solver.api import solve


def _instance(data: Any, seed: int, fraction: float) -> Instance:
    servers = google_servers(data, 100) if data is not None else google_like_servers(100, 10, seed)
    resources = ("cpu", "mem")
    # Smaller tasks get proportionally larger caps, so that demand still exceeds the cluster.
    max_tasks = round(2000 * 0.1 / fraction)
    tenants = random_tenants(resources, 20, seed, np.array([0.5, 0.5]), max_fraction=fraction, max_tasks=max_tasks)
    return Instance(resources, servers, tenants, name=f"google-100x20-f{fraction}-s{seed}")


def gap_to_lp(result: Result) -> float | None:
    """How far drfh-int's f is below the divisible LP's f (``bound`` is the proven bound, a tighter one)."""
    lp = result.extra.get("lp_bound")
    if lp is None or result.objective is None or lp <= 0:
        return None
    return max(0.0, (lp - result.objective) / lp)


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--seeds", default="1,2,3")
    arguments.add_argument("--fractions", default="0.1,0.02")
    arguments.add_argument("--time-limit", type=float, default=300.0)
    args = arguments.parse_args()
    data = data_dir_or_none(args.data_dir)
    rows = []
    for fraction in [float(f) for f in args.fractions.split(",")]:
        for seed in [int(s) for s in args.seeds.split(",")]:
            instance = _instance(data, seed, fraction)
            result, seconds = timed(lambda instance=instance: solve(instance, "drfh-int", time_limit=args.time_limit))
            within, within_s = timed(
                lambda instance=instance: solve(instance, "drfh-int", time_limit=args.time_limit, gap=0.01)
            )
            best = max(
                (solve(instance, m).objective or 0.0 for m in ("first-fit", "best-fit")),
            )
            row = {
                "fraction": fraction,
                "seed": seed,
                "status": result.status,
                "max_min_status": result.extra.get("max_min_status"),
                "max_min_s": result.extra.get("max_min_s"),
                "leximin_steps": result.extra.get("leximin_steps"),
                "f": result.objective,
                "lp_f": result.extra.get("lp_bound"),
                "proven_bound": result.extra.get("proven_bound"),
                "gap_to_lp": gap_to_lp(result),
                "best_heuristic_f": best,
                "seconds": seconds,
                "verified": result.verified,
                "within_1pct_status": within.status,
                "within_1pct_seconds": within_s,
                "within_1pct_f": within.objective,
                "within_1pct_gap_to_lp": gap_to_lp(within),
            }
            rows.append(row)
            print(row, flush=True)
    lines = [
        "# drfh-int on 100 machines x 20 tenants",
        "",
        "| task size | seed | max-min search | its time s | leximin steps | f | proven bound on f | LP f "
        "| gap to LP | best heuristic f | total s | 1% of proven bound: status, s, gap to LP |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        bound = row["proven_bound"] if row["proven_bound"] is not None else float("nan")
        lines.append(
            f"| {row['fraction']} | {row['seed']} | {row['max_min_status']} | {row['max_min_s']:.1f} | "
            f"{row['leximin_steps']} | {row['f']:.5g} | {bound:.5g} | {row['lp_f']:.5g} | "
            f"{100 * (row['gap_to_lp'] or 0):.2f}% | "
            f"{row['best_heuristic_f']:.5g} | {row['seconds']:.1f} | "
            f"{row['within_1pct_status']}, {row['within_1pct_seconds']:.1f}, "
            f"{100 * (row['within_1pct_gap_to_lp'] or 0):.2f}% |"
        )
    save("drfh_int_scale", {"rows": rows, "time_limit": args.time_limit}, "\n".join(lines), args.out)


if __name__ == "__main__":
    main()
