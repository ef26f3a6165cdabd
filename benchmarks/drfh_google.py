"""DRFH on the Google 2011 cluster: merged configurations, and every machine made distinct.

1. The 12,583 machines in their 10 configurations x 1,000 weighted tenants with random demands and
   finite task caps: exact ``drfh`` (classes merge, so the LP is tiny).
2. The same machines each jittered by up to 0.1% per resource into a distinct server (no merging):
   ``drfh`` with its default strategy (certified aggregation + column generation) against the plain LP
   (every tenant x server column) solved by HiGHS in the same run, with the same progressive filling.
   Both must reach the same leximin shares to 1e-6 relative.

The plain LP on the full cluster has 12.6 million columns; ``--plain-limit`` bounds its time. A
ladder of smaller distinct clusters shows how the two grow where the plain LP does finish.

Run: ``python -m benchmarks.drfh_google --data-dir ../shared/data``
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np

from benchmarks._common import data_dir_or_none, parser, peak_rss_mib, save, timed
from fairpack.models.check import verify_allocation
from fairpack.models.generators import google_instance
from fairpack.models.result import Allocation
from fairpack.models.types import Instance
from fairpack.solver.backends import get_backend
from fairpack.solver.budget import Budget
from fairpack.solver.drfh.filling import SessionRounds, progressive_filling, unit_tasks
from fairpack.solver.drfh.methods import solve_drfh
from fairpack.solver.drfh.model import DrfhModel, UnitGrouping


def _fast(instance: Instance) -> dict[str, Any]:
    (model, filled, build_s), seconds = timed(lambda: solve_drfh(instance))
    allocation = Allocation(model.units.split_to_classes(instance, unit_tasks(model, filled)), "class")
    report = verify_allocation(instance, allocation)
    return {
        "status": filled.status,
        "seconds": seconds,
        "build_s": build_s,
        "units": model.units.num_units,
        "lp_solves": filled.lp_solves,
        "note": filled.message,
        "verified": report.ok,
        "shares": filled.shares,
        "first_level": filled.first_level,
        "min_weighted_share": report.min_weighted_share,
    }


def _plain(instance: Instance, limit: float) -> dict[str, Any]:
    def run() -> tuple[DrfhModel, Any]:
        model = DrfhModel(instance, UnitGrouping.merge_identical(instance))
        return model, progressive_filling(model, SessionRounds.all_columns(model, get_backend(), Budget.of(limit)))

    (model, filled), seconds = timed(run)
    return {
        "status": filled.status,
        "seconds": seconds,
        "columns": int(model.usable.sum()),
        "lp_solves": filled.lp_solves,
        "shares": filled.shares,
        "first_level": filled.first_level,
    }


def _agreement(fast: dict[str, Any], plain: dict[str, Any]) -> float:
    reference = np.maximum(np.abs(plain["shares"]), 1e-12)
    return float(np.max(np.abs(fast["shares"] - plain["shares"]) / reference))


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--tenants", type=int, default=1000)
    arguments.add_argument("--seed", type=int, default=1)
    arguments.add_argument("--plain-limit", type=float, default=1800.0, help="seconds for the plain LP")
    arguments.add_argument("--ladder", default="500,1000,2000", help="machines in the smaller distinct clusters")
    arguments.add_argument("--skip-full-plain", action="store_true", help="do not run the plain LP at full size")
    args = arguments.parse_args()
    data = data_dir_or_none(args.data_dir)
    source = "Google 2011 table" if data else "Google-like synthetic (no --data-dir)"
    rows: list[dict[str, Any]] = []

    merged = google_instance(data, args.tenants, args.seed)
    result = _fast(merged)
    rows.append({"case": "merged", "machines": int(merged.counts.sum()), **result})
    print(f"merged: {result['seconds']:.2f} s, {result['units']} units, verified {result['verified']}", flush=True)

    sizes = [int(s) for s in args.ladder.split(",") if s] + [0]
    for machines in sizes:
        instance = google_instance(data, args.tenants, args.seed, machines=machines or None, distinct=True)
        count = int(instance.counts.sum())
        fast = _fast(instance)
        gc.collect()
        row: dict[str, Any] = {"case": "distinct", "machines": count, **fast}
        if machines or not args.skip_full_plain:
            plain = _plain(instance, args.plain_limit)
            row.update(
                plain_status=plain["status"],
                plain_seconds=plain["seconds"],
                plain_columns=plain["columns"],
                plain_lp_solves=plain["lp_solves"],
                speedup=plain["seconds"] / fast["seconds"],
                max_relative_share_difference=_agreement(fast, plain) if plain["status"] == "optimal" else None,
            )
        rows.append(row)
        print(
            f"distinct {count}: fast {fast['seconds']:.2f} s"
            + (f", plain {row['plain_seconds']:.1f} s ({row['plain_status']})" if "plain_seconds" in row else ""),
            flush=True,
        )
        del instance
        gc.collect()

    lines = [
        f"# DRFH on the Google cluster ({source}), {args.tenants} tenants, seed {args.seed}",
        "",
        "| case | machines | units | drfh s | verified | plain LP s | plain status | speed-up | max rel. share diff |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        plain_s = f"{row['plain_seconds']:.1f}" if "plain_seconds" in row else "-"
        speedup = f"{row['speedup']:.1f}x" if "speedup" in row else "-"
        if "plain_status" in row and row["plain_status"] != "optimal":
            speedup = f">= {row['speedup']:.1f}x"
        difference = row.get("max_relative_share_difference")
        lines.append(
            f"| {row['case']} | {row['machines']} | {row['units']} | {row['seconds']:.2f} | {row['verified']} | "
            f"{plain_s} | {row.get('plain_status', '-')} | {speedup} | "
            f"{'-' if difference is None else f'{difference:.1e}'} |"
        )
    lines.append("")
    lines.append(f"peak memory {peak_rss_mib():.0f} MiB")
    clean = [{k: v for k, v in row.items() if k != "shares"} for row in rows]
    save(
        "drfh_google",
        {"tenants": args.tenants, "seed": args.seed, "source": source, "rows": clean},
        "\n".join(lines),
        args.out,
    )


if __name__ == "__main__":
    main()
