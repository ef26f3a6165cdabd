"""Pictures of an answer (``fairpack solve --plot out.png``), one per answer shape.

* DAG-job schedules: the resource-time profile, one lane per resource with the usage over time stacked by
  job (between two consecutive task start/end events every job's usage is constant, so each job
  contributes one rectangle), the pooled capacity dashed and every job's fair completion time ``T_k``
  dotted in its colour; with ``--placement servers`` a Gantt chart follows, one lane per machine.
* Flat allocations: per-server stacked bars (the DRFH paper's Fig. 1 style), one panel per resource, each
  bar the share of that server's capacity every tenant holds.
* Hierarchies: the org tree, every node with its weight, hierarchical guarantee and dominant share.

Every picture has two forms: ``*_figure`` returns the ``matplotlib.figure.Figure`` (a notebook displays it
inline: ``display(result_figure(instance, result))``), and ``plot_*`` writes it to a file. Figures are built
with ``matplotlib.figure.Figure`` directly (no pyplot state and no backend switch), so notebooks keep their
inline backend and the CLI needs no display. Legends list only what is drawn. Without matplotlib (the
``plot`` extra) :class:`PlotUnavailable` is raised.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fairpack.models.result import Allocation, Result, Schedule
from fairpack.models.types import FloatArray, Instance, Stage
from fairpack.solver.extras import ExtraMissing

#: Simulated runs with at most this many tasks also get a Gantt chart.
GANTT_TASKS = 2000
NO_MATPLOTLIB = 'plotting needs matplotlib, which fairpack\'s "plot" extra installs: pip install "fairpack[plot]"'


class PlotUnavailable(ExtraMissing):
    """matplotlib is not installed (the ``plot`` extra)."""


def _figure(rows: int, columns: int, size: tuple[float, float], **options: Any) -> tuple[Any, Any]:
    """A figure and its axes grid (always 2-D), without pyplot."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotUnavailable(NO_MATPLOTLIB) from None
    figure = Figure(figsize=size)
    axes = figure.subplots(rows, columns, squeeze=False, **options)
    return figure, axes


def _colours(count: int) -> list[Any]:
    try:
        from matplotlib import colormaps
    except ImportError:
        raise PlotUnavailable(NO_MATPLOTLIB) from None

    cmap = colormaps["tab20" if count > 10 else "tab10"]
    return [cmap(k % cmap.N) for k in range(count)]


def _save(figure: Any, path: str | Path) -> Path:
    target = Path(path)
    figure.savefig(target, dpi=120)
    return target


def result_figure(instance: Instance, result: Result, title: str | None = None) -> Any:
    """The picture that fits ``result``'s answer: a schedule's profile (and Gantt chart), per-server bars of
    a flat allocation, or the tree of a hierarchy."""
    if result.schedule is not None:
        return schedule_figure(instance, result, title)
    if result.allocation is None:
        raise PlotUnavailable(f"the result ({result.status}) holds no answer to draw")
    if instance.hierarchy is not None:
        return hierarchy_figure(instance, result, title)
    return allocation_figure(instance, result, title)


def plot_result(instance: Instance, result: Result, path: str | Path, title: str | None = None) -> Path:
    """:func:`result_figure` written to ``path`` (format from the suffix, e.g. PNG)."""
    return _save(result_figure(instance, result, title), path)


def _title(instance: Instance, result: Result, title: str | None) -> str:
    objective = "" if result.objective is None else f", objective {result.objective:.4g}"
    return title or f"{instance.name}: {result.method}{objective}"


def usage_profile(instance: Instance, schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """Event times ``(E,)`` and per-job usage ``(jobs, E - 1, resources)`` on each ``[t_i, t_{i+1})``."""
    stages = {(k, s): stage for k, job in enumerate(instance.jobs) for s, stage in enumerate(job.stages)}
    chosen = schedule.option.tolist() if schedule.option is not None else [-1] * schedule.job.size

    def used(stage: Stage, option: int) -> FloatArray:  # a task under an option with its own demand uses it
        return stage.demand_under(option if 0 <= option < len(stage.options) else None)

    rows = [used(stages[(int(k), int(s))], int(o))
            for k, s, o in zip(schedule.job.tolist(), schedule.stage.tolist(), chosen, strict=True)]  # fmt: skip
    task_demand = np.array(rows, dtype=np.float64).reshape(-1, len(instance.resources))
    times = np.unique(np.concatenate([schedule.start, schedule.end]))
    usage = np.zeros((len(instance.jobs), max(times.size - 1, 0), len(instance.resources)))
    if times.size < 2:
        return times, usage
    first = np.searchsorted(times, schedule.start)
    last = np.searchsorted(times, schedule.end)  # the task runs on intervals first .. last - 1
    delta = np.zeros((len(instance.jobs), times.size, len(instance.resources)))
    np.add.at(delta, (schedule.job, first), task_demand)
    np.add.at(delta, (schedule.job, last), -task_demand)
    usage = np.cumsum(delta, axis=1)[:, :-1, :]
    return times, np.where(np.abs(usage) < 1e-12, 0.0, usage)


def plot_schedule(instance: Instance, result: Result, path: str | Path, title: str | None = None) -> Path:
    """:func:`schedule_figure` written to ``path`` (format from the suffix, e.g. PNG)."""
    return _save(schedule_figure(instance, result, title), path)


def schedule_figure(instance: Instance, result: Result, title: str | None = None) -> Any:
    """The resource-time profile of ``result.schedule``; a Gantt chart below when tasks name machines."""
    if result.schedule is None:
        raise PlotUnavailable("this picture needs a schedule result (a DAG-job method)")
    schedule = result.schedule
    times, usage = usage_profile(instance, schedule)
    n_jobs, n_resources = len(instance.jobs), len(instance.resources)
    gantt = schedule.machine is not None and schedule.server is not None
    machines = int(instance.counts.sum())
    rows = n_resources + (1 if gantt else 0)
    tall = 1.2 + 2.2 * n_resources + (min(0.25 * machines, 8.0) + 1.0 if gantt else 0.0)
    figure, axes = _figure(rows, 1, (10, tall), sharex=True)
    from matplotlib.collections import PolyCollection
    from matplotlib.lines import Line2D

    colours = _colours(n_jobs)
    capacity = instance.total_capacity
    fair = schedule.fair_completion
    span = float(schedule.end.max()) if len(schedule) else 1.0
    if fair is not None and np.isfinite(fair).any():
        span = max(span, float(np.max(fair[np.isfinite(fair)])))
    left, right = times[:-1], times[1:]
    drew_fair = False
    for r, axis in enumerate(axes[:n_resources, 0]):
        bottom = np.zeros(left.size)
        for k in range(n_jobs):
            height = usage[k, :, r]
            keep = height > 0
            if keep.any():
                x0, x1, y0, y1 = left[keep], right[keep], bottom[keep], bottom[keep] + height[keep]
                boxes = np.stack([np.stack([x0, y0], 1), np.stack([x1, y0], 1),
                                  np.stack([x1, y1], 1), np.stack([x0, y1], 1)], axis=1)  # fmt: skip
                axis.add_collection(PolyCollection(list(boxes), facecolors=colours[k], edgecolors="none"))
            bottom = bottom + height
        axis.axhline(capacity[r], color="black", linestyle="--", linewidth=1.0)
        if fair is not None:
            for k in range(min(n_jobs, fair.size)):
                if np.isfinite(fair[k]):
                    axis.axvline(fair[k], color=colours[k], linestyle=":", linewidth=1.5)
                    drew_fair = True
        axis.set_xlim(0, span * 1.02)
        axis.set_ylim(0, max(capacity[r], float(bottom.max()) if bottom.size else 0.0) * 1.08 or 1.0)
        axis.set_ylabel(instance.resources[r])
    if gantt:
        _gantt(instance, schedule, axes[-1, 0], colours)
    axes[-1, 0].set_xlabel("time")
    drawn = sorted(set(schedule.job.tolist()))[:20]
    handles = [Line2D([], [], color=colours[k], linewidth=6) for k in drawn]
    labels = [instance.jobs[k].name for k in drawn]
    handles.append(Line2D([], [], color="black", linestyle="--"))
    labels.append("capacity (pooled)")
    if drew_fair:
        handles.append(Line2D([], [], color="grey", linestyle=":"))
        labels.append("fair completion T_k")
    axes[0, 0].legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    axes[0, 0].set_title(_title(instance, result, title))
    figure.tight_layout()
    return figure


def _gantt(instance: Instance, schedule: Schedule, axis: Any, colours: list[Any]) -> None:
    """One lane per machine; tasks running at once on a machine stack in sub-rows of its lane."""
    assert schedule.server is not None and schedule.machine is not None
    first = np.concatenate([[0], np.cumsum(instance.counts)[:-1]])
    lane = first[np.maximum(schedule.server, 0)] + schedule.machine
    for machine in np.unique(lane).tolist():
        tasks = np.flatnonzero(lane == machine)
        tasks = tasks[np.lexsort((schedule.end[tasks], schedule.start[tasks]))]
        row_end: list[float] = []  # greedy interval colouring: the first sub-row free at the task's start
        rows = []
        for task in tasks.tolist():
            start = float(schedule.start[task])
            row = next((r for r, end in enumerate(row_end) if end <= start + 1e-12), len(row_end))
            if row == len(row_end):
                row_end.append(0.0)
            row_end[row] = float(schedule.end[task])
            rows.append(row)
        height = 0.8 / max(len(row_end), 1)
        for task, row in zip(tasks.tolist(), rows, strict=True):
            bottom = machine - 0.4 + row * height
            axis.broken_barh([(float(schedule.start[task]), float(schedule.end[task] - schedule.start[task]))],
                             (bottom, height), facecolors=colours[int(schedule.job[task])], edgecolor="white",
                             linewidth=0.3)  # fmt: skip
    names = instance.machine_names()
    axis.set_ylim(-0.6, len(names) - 0.4)
    if len(names) <= 40:
        axis.set_yticks(range(len(names)), names, fontsize="small")
    axis.invert_yaxis()
    axis.set_ylabel("machine")


def plot_allocation(instance: Instance, result: Result, path: str | Path, title: str | None = None) -> Path:
    """:func:`allocation_figure` written to ``path`` (format from the suffix, e.g. PNG)."""
    return _save(allocation_figure(instance, result, title), path)


def allocation_figure(instance: Instance, result: Result, title: str | None = None) -> Any:
    """Per-server stacked bars: for every resource, each server's capacity split among the tenants."""
    if result.allocation is None:
        raise PlotUnavailable(f"the result ({result.status}) holds no allocation to draw")
    allocation: Allocation = result.allocation
    names = allocation.unit_names(instance)
    capacity = allocation.unit_capacity(instance)  # (units, resources)
    # The 30 largest units; equal ones keep their order (machine 0, 1, 2, ...).
    shown = np.argsort(-capacity.sum(axis=1) / np.maximum(instance.total_capacity.sum(), 1e-300), kind="stable")[:30]
    tenants = len(instance.tenants)
    colours = _colours(tenants)
    resources = len(instance.resources)
    figure, axes = _figure(1, resources, (max(4.0, 0.5 * shown.size + 2.0) * resources, 4.2), sharey=True)
    from matplotlib.patches import Patch  # after _figure, which says when matplotlib is missing

    used = np.zeros(tenants, dtype=bool)
    for r, axis in enumerate(axes[0]):
        bottom = np.zeros(shown.size)
        for i in range(tenants):
            amount = allocation.tasks[i, shown] * instance.demand[i, r]
            fraction = np.divide(amount, capacity[shown, r], out=np.zeros(shown.size), where=capacity[shown, r] > 0)
            if np.any(fraction > 0):
                axis.bar(range(shown.size), fraction, bottom=bottom, color=colours[i], width=0.8)
                used[i] = True
            bottom += fraction
        axis.set_xticks(range(shown.size), [names[u] for u in shown], rotation=60, ha="right", fontsize="small")
        axis.set_title(instance.resources[r])
        axis.set_ylim(0, 1.05)
    axes[0, 0].set_ylabel("share of the server's capacity")
    handles = [Patch(color=colours[i]) for i in np.flatnonzero(used)[:20]]
    axes[0, -1].legend(handles, [instance.tenants[i].name for i in np.flatnonzero(used)[:20]], loc="upper left",
                       bbox_to_anchor=(1.01, 1.0), fontsize="small")  # fmt: skip
    figure.suptitle(_title(instance, result, title) + ("" if shown.size == len(names) else
                                                       f" ({shown.size} largest of {len(names)} units)"))  # fmt: skip
    figure.tight_layout()
    return figure


def plot_hierarchy(instance: Instance, result: Result, path: str | Path, title: str | None = None) -> Path:
    """:func:`hierarchy_figure` written to ``path`` (format from the suffix, e.g. PNG)."""
    return _save(hierarchy_figure(instance, result, title), path)


#: Box colours of a tree node: (face, edge) when its dominant share meets its guarantee, and when it is below.
NODE_MET, NODE_BELOW = ("honeydew", "seagreen"), ("mistyrose", "firebrick")


def hierarchy_figure(instance: Instance, result: Result, title: str | None = None) -> Any:
    """The org tree: every node with its weight, guarantee and achieved dominant share (red when below)."""
    from fairpack.models.view import nodes_json

    if result.allocation is None or instance.hierarchy is None:
        raise PlotUnavailable("this picture needs a hierarchy and an allocation")
    nodes = nodes_json(instance, result.allocation)
    names = list(nodes)
    depth = {name: entry["depth"] for name, entry in nodes.items()}
    leaves = [name for name in names if nodes[name]["leaf"]]
    x: dict[str, float] = {name: float(position) for position, name in enumerate(leaves)}
    for name in sorted(names, key=lambda n: -depth[n]):  # parents sit above the middle of their children
        kids = [child for child in names if nodes[child]["parent"] == name]
        if kids:
            x[name] = float(np.mean([x[child] for child in kids]))
    height = max(depth.values()) + 1
    figure, axes = _figure(1, 1, (max(6.0, 1.6 * len(leaves)), 1.6 * height + 1.0))
    from matplotlib.patches import Patch  # after _figure, which says when matplotlib is missing

    axis = axes[0, 0]
    for name, entry in nodes.items():
        if entry["parent"] is not None:
            parent = entry["parent"]
            axis.plot([x[parent], x[name]], [-depth[parent], -depth[name]], color="grey", linewidth=1, zorder=1)
    drawn = set()
    for name, entry in nodes.items():
        below = entry["dominant_share"] < entry["guarantee"] * (1 - 1e-6)
        face, edge = NODE_BELOW if below else NODE_MET
        drawn.add(below)
        label = f"{name}\nw {entry['weight']:g}\nguar. {entry['guarantee']:.3f}\nshare {entry['dominant_share']:.3f}"
        axis.text(x[name], -depth[name], label, ha="center", va="center", fontsize="small", zorder=2,
                  bbox={"boxstyle": "round", "facecolor": face, "edgecolor": edge})  # fmt: skip
    axis.set_xlim(-0.8, len(leaves) - 0.2)
    axis.set_ylim(-height + 0.4, 0.6)
    axis.axis("off")
    legend = [(False, NODE_MET, "share >= guarantee"), (True, NODE_BELOW, "share below guarantee")]
    axis.legend([Patch(facecolor=face, edgecolor=edge) for below, (face, edge), _ in legend if below in drawn],
                [text for below, _, text in legend if below in drawn], loc="upper left", fontsize="small")  # fmt: skip
    axis.set_title(_title(instance, result, title))
    figure.tight_layout()
    return figure


def plot_simulation(instance: Instance, result: Result, path: str | Path, title: str | None = None) -> Path:
    """:func:`simulation_figure` written to ``path`` (format from the suffix, e.g. PNG)."""
    return _save(simulation_figure(instance, result, title), path)


def simulation_figure(instance: Instance, result: Result, title: str | None = None) -> Any:
    """A simulated run: utilisation per resource and every tenant's dominant share over time (time bins),
    and for runs of at most ``GANTT_TASKS`` tasks on machines a Gantt chart below."""
    series = result.extra.get("utilisation_series")
    shares = result.extra.get("shares")
    if not isinstance(series, dict) or not isinstance(shares, dict):
        return result_figure(instance, result, title)  # a backlog run: its placement at the horizon
    schedule = result.schedule
    gantt = schedule is not None and schedule.machine is not None and len(schedule) <= GANTT_TASKS
    figure, axes = _figure(3 if gantt else 2, 1, (10, 9.0 if gantt else 6.0), sharex=True)
    times = np.asarray(series["time"], dtype=np.float64)
    for resource in instance.resources:
        axes[0, 0].step(times, series[resource], where="post", label=resource)
    axes[0, 0].set_ylabel("utilisation")
    axes[0, 0].set_ylim(0, 1.05)
    axes[0, 0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    edges = np.asarray(shares["edges"], dtype=np.float64)
    values = {name: np.asarray(v, dtype=np.float64) for name, v in shares["shares"].items()}
    shown = sorted(values, key=lambda name: -float(values[name].mean()))[:12]
    colours = _colours(len(shown))
    for colour, name in zip(colours, shown, strict=True):
        axes[1, 0].stairs(values[name], edges, color=colour, label=name)
    axes[1, 0].set_ylabel("dominant share")
    if shown:
        axes[1, 0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small",
                          title=None if len(shown) == len(values) else f"top {len(shown)} of {len(values)}")
    if gantt and schedule is not None:
        _gantt(instance, schedule, axes[2, 0], _colours(len(instance.jobs)))
    axes[-1, 0].set_xlabel("time")
    axes[0, 0].set_title(title or f"{instance.name}: {result.method} (simulated)")
    figure.tight_layout()
    return figure
