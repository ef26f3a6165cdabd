"""Resource-time profile of a DAG-job schedule (``fairpack solve --plot out.png``).

One lane (subplot row) per resource. In each lane the usage over time is drawn as stacked rectangles
coloured by job: between two consecutive task start/end events every job's usage is constant, so each
job contributes one rectangle ``x = [t_i, t_{i+1})``, ``height = sum of its running tasks' demand``,
stacked in job order (the stack top is the lane's total usage). The pooled capacity is a dashed line,
and every job's fair completion time ``T_k`` (``Schedule.fair_completion``) is a vertical dotted line in
the job's colour.

matplotlib (the ``bench`` extra) is imported lazily, with the non-interactive Agg backend; without it
:func:`plot_schedule` raises :class:`PlotUnavailable`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from models.result import Result, Schedule
from models.types import Instance


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailable("install fairpack[bench] for --plot") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def usage_profile(instance: Instance, schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """Event times ``(E,)`` and per-job usage ``(jobs, E - 1, resources)`` on each ``[t_i, t_{i+1})``."""
    demand = {(k, s): stage.demand for k, job in enumerate(instance.jobs) for s, stage in enumerate(job.stages)}
    rows = [demand[(int(k), int(s))] for k, s in zip(schedule.job.tolist(), schedule.stage.tolist(), strict=True)]
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
    """Write the resource-time profile of ``result.schedule`` to ``path`` (format from the suffix, e.g. PNG)."""
    if result.schedule is None:
        raise ValueError("--plot needs a schedule result (a DAG-job method)")
    plt = _pyplot()
    from matplotlib.collections import PolyCollection
    from matplotlib.lines import Line2D

    schedule = result.schedule
    times, usage = usage_profile(instance, schedule)
    n_jobs, n_resources = len(instance.jobs), len(instance.resources)
    cmap = plt.get_cmap("tab20" if n_jobs > 10 else "tab10")
    colours = [cmap(k % cmap.N) for k in range(n_jobs)]
    capacity = instance.total_capacity
    fair = schedule.fair_completion
    span = float(schedule.end.max()) if len(schedule) else 1.0
    if fair is not None and np.isfinite(fair).any():
        span = max(span, float(np.max(fair[np.isfinite(fair)])))
    figure, axes = plt.subplots(n_resources, 1, sharex=True, squeeze=False,
                                figsize=(10, 1.2 + 2.2 * n_resources))  # fmt: skip
    left, right = times[:-1], times[1:]
    for r, axis in enumerate(axes[:, 0]):
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
        axis.set_xlim(0, span * 1.02)
        axis.set_ylim(0, max(capacity[r], float(bottom.max()) if bottom.size else 0.0) * 1.08 or 1.0)
        axis.set_ylabel(instance.resources[r])
    axes[-1, 0].set_xlabel("time")
    handles = [Line2D([], [], color=colours[k], linewidth=6) for k in range(min(n_jobs, 20))]
    labels = [job.name for job in instance.jobs[:20]]
    handles += [Line2D([], [], color="black", linestyle="--"), Line2D([], [], color="grey", linestyle=":")]
    labels += ["capacity", "fair completion T_k"]
    axes[0, 0].legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    objective = "" if result.objective is None else f", objective {result.objective:.4g}"
    axes[0, 0].set_title(title or f"{instance.name}: {result.method}{objective}")
    figure.tight_layout()
    target = Path(path)
    figure.savefig(target, dpi=120)
    plt.close(figure)
    return target
