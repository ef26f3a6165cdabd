"""Human-readable views of a result: the tables ``fairpack solve`` prints, and CSV rows.

``--format table`` (the default) prints a header, the numbers and a per-tenant, per-node or per-job table
(at most ``--top`` rows); ``--format csv`` writes one row per tenant (allocations), node (hierarchies) or
task (schedules) with the result's status and objective on every row.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

from fairpack.models.result import Result
from fairpack.models.stages import stage_table
from fairpack.models.types import Instance
from fairpack.models.view import result_json


def _aligned(header: list[str], rows: list[list[str]]) -> list[str]:
    """Rows padded into columns; the last column is left ragged (it can be long)."""
    widths = [max(len(str(row[k])) for row in [header, *rows]) for k in range(len(header) - 1)]
    padded = [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row[:-1], widths, strict=True))
        for row in [header, *rows]
    ]
    return [f"  {cells}  {row[-1]}" for cells, row in zip(padded, [header, *rows], strict=True)]


def _rows_table(header: list[str], rows: list[list[str]], total: int, what: str, kind: str) -> list[str]:
    """A table of the first ``len(rows)`` of ``total`` rows (``what``: ``rows`` or ``jobs``), then how many are
    left. With no rows (``--top 0``) no header either: one line saying how many ``kind`` there are."""
    if not rows:
        return [f"  {kind}: {total}, none listed (--top N lists them, --format csv lists all)"] if total else []
    lines = _aligned(header, rows)
    if total > len(rows):
        lines.append(f"  ... and {total - len(rows)} more {what} (--top N shows more, --format csv lists all)")
    return lines


def _footer(result: Result) -> list[str]:
    lines = [f"  VIOLATION: {violation}" for violation in result.violations[:10]]
    return lines + ([f"  note: {result.message}"] if result.message else [])


def _simulation_summary(result: Result) -> list[str]:
    """A simulated run's timeline summary (and the trace's real delays), in a few lines."""
    summary = result.extra.get("summary")
    if not summary:
        return []

    def number(value: float | None) -> str:
        return "-" if value is None else f"{value:.4g}"

    lines = [f"  JCT mean {number(summary['mean_jct'])} p95 {number(summary['p95_jct'])}   queueing delay mean "
             f"{number(summary['mean_queueing_delay'])} p95 {number(summary['p95_queueing_delay'])}   slowdown mean "
             f"{number(summary['mean_slowdown'])}   Jain {number(summary['jain'])}",
             "  utilisation " + "   ".join(f"{r} {u:.1%}" for r, u in summary["utilisation"].items())
             + ("   while busy " + "   ".join(f"{r} {u:.1%}" for r, u in summary["utilisation_busy"].items())
                if "utilisation_busy" in summary else "")
             + (f"   unfinished jobs {summary['unfinished']}" if summary.get("unfinished") else "")]  # fmt: skip
    trace = result.extra.get("trace")
    if trace:
        lines.append(f"  trace {trace['source']}: {trace['jobs']} jobs replayed, {trace['skipped']} skipped, "
                     f"{trace['censored']} censored; mean queueing delay observed "
                     f"{number(trace['observed_mean_delay'])}, simulated {number(trace['simulated_mean_delay'])}")
    return lines


def _format_schedule(instance: Instance, result: Result, data: dict[str, Any], top: int) -> str:
    """Schedule results: makespan, avg JCT, bound, gap and a short per-job completion table."""
    lines = [
        f"{instance.name}: method {result.method} (backend {result.backend}) -> {result.status}, "
        f"verified {'yes' if result.verified else 'NO'}",
    ]
    numbers = [
        (f"objective ({result.extra.get('objective_name', 'makespan')})", result.objective),
        ("makespan", data["makespan"]),
        ("avg JCT", data["avg_jct"]),
        ("bound", result.bound),
        ("gap", result.gap),
    ]
    table = stage_table(instance)
    valued = bool(table.utility.any() or (table.deadline != float("inf")).any())
    if valued:  # deadlines and utilities: what the soft-constraint methods and policies are judged by
        numbers += [("utility", data["utility"]), ("SLO attainment", data.get("slo_attainment"))]
    if result.extra.get("finished_jobs") is not None and result.objective is None:
        numbers += [("finished jobs", result.extra["finished_jobs"]),
                    ("avg JCT of the finished", result.extra.get("avg_jct_finished"))]  # fmt: skip
    lines.append("  " + "   ".join(f"{name} {value:.6g}" for name, value in numbers if value is not None))
    tasks = len(data["tasks"]) if "tasks" in data else data["task_rows"]  # a table's view has no task rows
    lines.append(f"  build {result.build_s:.3f} s, solve {result.solve_s:.3f} s, {tasks} tasks")
    lines += _simulation_summary(result)
    counters = [(key, result.extra[key]) for key in result.extra.get("policy_counters", ())]
    if counters:  # the policy's own statistics (probes, conflicts, ...)
        lines.append("  " + ", ".join(f"{key} {_counter(value)}" for key, value in counters))
    header = ["job", "weight", "release", "completion", "JCT", "fair completion"]
    header += ["deadline", "utility"] if valued else []
    rows = []
    for job in instance.jobs[:top]:
        entry = data["jobs"][job.name]
        fair = entry["fair_completion"]
        done = entry["completion"]
        rows.append([job.name, f"{job.weight:g}", _short(job.release), _short(done),
                     _short(None if done is None else done - job.release), _short(fair)])  # fmt: skip
        if valued:
            rows[-1] += [_short(entry["deadline"]), _short(entry["utility"])]
    lines += _rows_table(header, rows, len(instance.jobs), "jobs", "jobs")
    return "\n".join(lines + _footer(result))


def format_table(instance: Instance, result: Result, top: int = 20, data: dict[str, Any] | None = None) -> str:
    """The human-readable view of ``result``: header, numbers and at most ``top`` rows per table."""
    data = result_json(instance, result) if data is None else data
    if result.schedule is not None:
        return _format_schedule(instance, result, data, top)
    lines = [
        f"{instance.name}: method {result.method} (backend {result.backend}) -> {result.status}, "
        f"verified {'yes' if result.verified else 'NO'}",
    ]
    hierarchical = instance.hierarchy is not None
    numbers = [
        ("guarantee shortfall" if hierarchical else "min weighted share", result.objective),
        ("bound", result.bound),
        ("gap", result.gap),
        # Hierarchies: the smallest share/guarantee ratio beside the shortfall (a metric H-DRF does not maximise).
        ("min share/guarantee", result.extra.get("min_share_guarantee") if hierarchical else None),
        # drfh-int: the divisible LP's f beside the proven bound (a looser bound, not the proof).
        ("LP bound", result.extra.get("lp_bound")),
    ]
    lines.append("  " + "   ".join(f"{name} {value:.6g}" for name, value in numbers if value is not None))
    lines.append(f"  build {result.build_s:.3f} s, solve {result.solve_s:.3f} s")
    if result.allocation is not None:
        resources = list(instance.resources)
        header = ["tenant", "weight", "tasks", "dom.share", *resources, "servers"]
        rows = []
        for tenant in [] if hierarchical else instance.tenants[:top]:
            entry = data["tenants"][tenant.name]
            servers = ", ".join(f"{unit}:{_short(count)}" for unit, count in list(entry["per_server"].items())[:4])
            listed = len(entry["per_server"]) + int(entry.get("per_server_more", 0))
            if listed > 4:
                servers += f", ... ({listed:,} servers)"
            rows.append(
                [
                    tenant.name,
                    f"{tenant.weight:g}",
                    _short(entry["tasks"]),
                    f"{entry['dominant_share']:.4f}",
                    *(_short(entry["allocation"][r]) for r in resources),
                    servers,
                ]
            )
        if hierarchical:
            header, rows = _tree_rows(instance, data, top)
        shown = len(instance.tenants) if not hierarchical else len(data["nodes"])
        lines += _rows_table(header, rows, shown, "rows", "nodes" if hierarchical else "tenants")
        used = ", ".join(f"{r} {100 * u:.1f}%" for r, u in data["utilisation"].items())
        lines.append(f"  utilisation: {used}")
    if "time_averaged_shares" in result.extra:  # simulated schedulers: the table above is the end state
        averaged = ", ".join(f"{name} {v:.4f}" for name, v in result.extra["time_averaged_shares"].items())
        lines.append(f"  time-averaged shares after warm-up: {averaged}")
        if result.extra.get("distance_to_hdrf") is not None:
            lines.append(f"  time-averaged L1 distance to static H-DRF: {result.extra['distance_to_hdrf']:.4f}")
        for episode in result.extra.get("starvation", [])[:10]:
            lines.append(f"  STARVED: {episode['leaf']} from {episode['start']:.1f} to {episode['end']:.1f}")
    return "\n".join(lines + _footer(result))


def _tree_rows(instance: Instance, data: dict[str, Any], top: int) -> tuple[list[str], list[list[str]]]:
    """The hierarchy drawn as a tree: weight, guarantee, achieved share and amounts of its first ``top``
    nodes in preorder (only the rows shown are drawn: a 10,000-leaf tree shows 20 by default)."""
    resources = list(instance.resources)
    header = ["node", "weight", "guarantee", "share", "share/guar.", "tasks", *resources, "servers"]
    nodes = data["nodes"]
    names = list(nodes)
    last_child = {}
    for name in names:
        last_child[nodes[name]["parent"]] = name
    rows = []
    for name in names[:top]:
        entry = nodes[name]
        # Draw the branch: for every ancestor, a bar if more siblings follow it, then this node's elbow.
        prefix, ancestor = "", entry["parent"]
        while ancestor is not None and nodes[ancestor]["parent"] is not None:
            prefix = ("   " if last_child[nodes[ancestor]["parent"]] == ancestor else "|  ") + prefix
            ancestor = nodes[ancestor]["parent"]
        if entry["parent"] is not None:
            prefix += "`- " if last_child[entry["parent"]] == name else "|- "
        tenant = data["tenants"].get(name) if entry["leaf"] else None
        ratio = entry["dominant_share"] / entry["guarantee"] if entry["guarantee"] > 0 else None
        servers = ""
        if tenant is not None and data["unit_kind"] != "pool":
            servers = ", ".join(f"{unit}:{_short(count)}" for unit, count in list(tenant["per_server"].items())[:4])
        rows.append(
            [
                prefix + name,
                f"{entry['weight']:g}",
                f"{entry['guarantee']:.4f}",
                f"{entry['dominant_share']:.4f}",
                "-" if ratio is None else f"{ratio:.3f}",
                _short(tenant["tasks"]) if tenant is not None else "",
                *(_short(entry["allocation"][r]) for r in resources),
                servers,
            ]
        )
    return header, rows


def _counter(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(_counter(v) for v in value) + "]"
    return str(value)


def _short(value: float | None) -> str:
    """A number in a table cell; ``-`` for none (an unfinished job's completion, JCT and utility)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.4g}" if isinstance(value, float) and not float(value).is_integer() else f"{value:g}"


def format_csv(instance: Instance, result: Result, data: dict[str, Any] | None = None, rows: str = "auto") -> str:
    """One row per tenant (allocations), node (hierarchies), job or task (schedules), result columns first.

    ``rows``: ``auto`` lists tenants, hierarchy nodes or tasks (what the answer holds); ``jobs`` lists every
    job of a schedule (arrival, start, completion, queueing delay, JCT, slowdown, fair completion, deadline,
    utility); a table the answer does not hold is refused (``OptionError``).
    """
    data = result_json(instance, result) if data is None else data
    common = {key: data.get(key) for key in ("method", "backend", "status", "objective", "bound", "verified")}
    chosen = rows
    if rows == "auto":
        chosen = "tasks" if result.schedule is not None else "nodes" if "nodes" in data else "tenants"
    table = data.get(chosen)
    if (chosen != "tasks" and not isinstance(table, dict)) or (chosen == "tasks" and not isinstance(table, list)):
        held = [name for name in ("tenants", "nodes", "jobs", "tasks") if isinstance(data.get(name), dict | list)]
        if rows != "auto":
            from fairpack.solver.registry import OptionError

            raise OptionError(f"this answer has no {rows} (it has {', '.join(held) or 'none'})", "--rows")
        table = None
    listed: list[dict[str, Any]]
    if table is None:
        listed = [{}]
    elif chosen == "tasks":
        listed = [dict(task) for task in table]
    elif chosen == "jobs":
        listed = [{"job": name, **entry} for name, entry in table.items()]
    elif chosen == "nodes":
        listed = [{"node": name, "parent": entry["parent"], "weight": entry["weight"], "guarantee": entry["guarantee"],
                   "dominant_share": entry["dominant_share"], **entry["allocation"]}
                  for name, entry in table.items()]  # fmt: skip
    else:
        listed = [{"tenant": name, "tasks": entry["tasks"], "dominant_share": entry["dominant_share"],
                   **entry["allocation"], "per_server": " ".join(f"{u}:{n}" for u, n in entry["per_server"].items())}
                  for name, entry in table.items()]  # fmt: skip
    rows_out = listed
    buffer = io.StringIO()
    fields = [*common, *dict.fromkeys(key for row in rows_out for key in row)]
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows_out:
        writer.writerow({**common, **row})
    return buffer.getvalue()
