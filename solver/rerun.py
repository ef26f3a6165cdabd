"""``fairpack check`` re-runs a heuristic or an online policy and compares: a saved answer must be its own.

A heuristic's answer is not only feasible: it is *the* answer that heuristic gives on the instance with the
options its run records (a seeded policy gives one answer per seed). So a file forged as another method's result
-- an exact schedule past its fair completion times renamed ``carbyne``, a per-machine schedule stripped of its
machines and relabelled pooled -- passes every feasibility check, but not this one: the method is run again
with the recorded options and its allocation or schedule must be the file's, task for task.

Not re-run (a note says so): exact methods (any optimum is theirs, and their bound is checked for consistency),
runs that stopped early (``time_limit``, ``interrupted``: where the clock stopped them is a fact about that
run), and policies whose answer depends on the wall clock (``tetrisched``/``alsched`` plan each cycle under a
wall-clock limit unless run with ``deterministic=true``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from fairpack.models.result import Allocation, Result, Schedule
from fairpack.models.saved_tables import SavedTasks
from fairpack.models.types import Instance, InstanceError
from fairpack.models.view import allocation_from_json, schedule_from_json
from fairpack.solver.registry import Method, OptionError, SolveOptions

#: Policies that plan each cycle under a wall-clock limit: their answer repeats only with ``deterministic=true``.
WALL_CLOCK_POLICIES = frozenset({"tetrisched", "alsched"})
#: Seconds the re-run may take (a heuristic's answer took about as long to make); past it, a note says so.
RERUN_LIMIT_S = 120.0
#: Times and amounts compared within this relative tolerance (the JSON round trip is exact; this forgives a
#: result saved by a build whose floating-point sums were ordered differently, or an LP heuristic's answer from
#: another release of its solver, which stops within its own tolerance of 1e-7).
RELATIVE = 1e-6


@dataclass(frozen=True)
class Rerun:
    """What re-running the method said: a violation (the file's answer is not the method's), or a note."""

    violation: str | None = None
    note: str | None = None


def why_not_rerun(method: Method, data: dict[str, Any]) -> str | None:
    """Why the saved answer is not re-run and compared (None: it is; ``""`` for an exact method, whose rules line
    already says it is exact: any optimum is its answer)."""
    if method.exact:
        return ""
    status = data.get("status")
    if status not in ("feasible", "optimal"):
        return f"status {status}: where the run stopped is a fact of that run (not re-run)"
    options = data.get("options")
    extra = options.get("extra") if isinstance(options, dict) else None
    if method.name in WALL_CLOCK_POLICIES and not (isinstance(extra, dict) and extra.get("deterministic") is True):
        return f"{method.name} plans under a wall-clock limit per cycle unless deterministic=true (not re-run)"
    return None


def rerun_and_compare(instance: Instance, data: dict[str, Any], method: Method, limit_s: float = RERUN_LIMIT_S,
                      answer: Allocation | Schedule | None = None) -> Rerun:  # fmt: skip
    """Run ``method`` again on ``instance`` with the options ``data`` records and compare its answer with the
    file's (``instance`` already holds a trace's jobs): ``answer``, as check read it, else read here."""
    from fairpack.solver.api import simulate_answer, solve

    why = why_not_rerun(method, data)
    if why is not None:
        return Rerun(note=why or None)
    recorded = data.get("options") if isinstance(data.get("options"), dict) else {}
    assert isinstance(recorded, dict)
    allowed = {f.name for f in fields(SolveOptions)} - {"time_limit", "verbose"}
    options = {key: value for key, value in recorded.items() if key in allowed}
    if set(recorded) - allowed:
        return Rerun(note=f"not re-run: options {sorted(set(recorded) - allowed)} are not this fairpack's")
    backend = data.get("backend")
    try:
        if method.command == "simulate":
            # Only compared: the saved answer it must equal is verified, and its timeline recomputed, by check.
            again = simulate_answer(instance, method.name, time_limit=limit_s, answer_only=True, **options)
        else:
            # An LP-based heuristic's answer is the vertex its backend finds: the same backend, the same answer.
            chosen = backend if method.uses_backend and isinstance(backend, str) and backend in method.backends \
                else None  # fmt: skip
            again = solve(instance, method.name, backend=chosen, time_limit=limit_s, **options)
    except (OptionError, InstanceError, TypeError, ValueError) as error:
        return Rerun(violation=f"{method.name} cannot be run again with the options the result records: {error}")
    if again.status not in ("feasible", "optimal"):
        return Rerun(note=f"not compared: the re-run of {method.name} ended {again.status} within {limit_s:g} s")
    difference = _difference(instance, data, again, answer)
    if difference is None:
        return Rerun(note=f"re-run: {method.name} with the recorded options gives this answer")
    return Rerun(violation=f"this is not the answer {method.name} gives on this instance with the options the "
                           f"result records: {difference}")  # fmt: skip


def _difference(instance: Instance, data: dict[str, Any], again: Result,
                answer: Allocation | Schedule | None) -> str | None:  # fmt: skip
    """The first way the file's answer (``answer``, if already read) differs from the re-run's (None: the same)."""
    if again.schedule is not None:
        if not isinstance(data.get("tasks"), list | SavedTasks):
            return "the result has no task list, the method gives a schedule"
        saved_schedule = answer if isinstance(answer, Schedule) else schedule_from_json(instance, data)
        return _schedule_difference(instance, saved_schedule, again.schedule)
    if again.allocation is not None:
        saved = answer if isinstance(answer, Allocation) else allocation_from_json(instance, data)
        if saved.shape != again.allocation.shape:
            return "its allocation is on other units"
        apart = _first_cell_apart(saved, again.allocation)
        if apart is not None:
            tenant, unit, mine, theirs = apart
            name = again.allocation.unit_names(instance)[unit]
            return f"tenant {instance.tenants[tenant].name} has {mine:g} tasks on {name}, the method gives {theirs:g}"
        return None
    return None


def _first_cell_apart(saved: Allocation, again: Allocation) -> tuple[int, int, float, float] | None:
    """The first cell (row-major) where two allocations of one shape differ beyond ``RELATIVE``: (tenant, unit, the
    saved count, the re-run's); None when they agree. Read from their non-zero cells (a per-machine table is
    mostly zeros)."""
    width = max(saved.shape[1], 1)
    flat = [rows * width + units for rows, units, _ in (saved.cells(), again.cells())]
    keys = np.union1d(*flat)
    values = []
    for positions, (_, _, counts) in zip(flat, (saved.cells(), again.cells()), strict=True):
        column = np.zeros(keys.size)
        column[np.searchsorted(keys, positions)] = counts
        values.append(column)
    apart = np.flatnonzero(~np.isclose(values[0], values[1], rtol=RELATIVE, atol=RELATIVE))
    if not apart.size:
        return None
    first = int(apart[0])
    tenant, unit = divmod(int(keys[first]), width)
    return tenant, unit, float(values[0][first]), float(values[1][first])


def _schedule_difference(instance: Instance, saved: Schedule, again: Schedule) -> str | None:
    if len(saved) != len(again):
        return f"{len(saved)} tasks in the file, {len(again)} when run again"
    if not len(saved):
        return None
    same_order = all(np.array_equal(a, b) for a, b in ((saved.job, again.job), (saved.stage, again.stage),
                                                         (saved.index, again.index)))  # fmt: skip
    if same_order:  # the file lists the tasks as the method does (as it was written): no sort needed
        order_saved = order_again = np.arange(len(saved))
    else:
        order_saved = np.lexsort((saved.index, saved.stage, saved.job))
        order_again = np.lexsort((again.index, again.stage, again.job))
    columns = {"job": (saved.job, again.job), "stage": (saved.stage, again.stage), "task": (saved.index, again.index)}
    for name, (a, b) in columns.items():
        if not np.array_equal(a[order_saved], b[order_again]):
            return f"the tasks differ (by {name})"
    checks: list[tuple[str, Any, Any]] = [("starts", saved.start, again.start), ("ends", saved.end, again.end)]
    if (saved.server is None) != (again.server is None):
        return "the file places tasks on machines and the method does not" if saved.server is not None else \
            "the method places every task on a machine and the file does not"
    if saved.server is not None and again.server is not None:
        checks += [("server", saved.server, again.server), ("machine", saved.machine, again.machine)]
    if saved.option is not None or again.option is not None:
        size = len(saved)
        checks.append(("option", saved.option if saved.option is not None else np.full(size, -1),
                       again.option if again.option is not None else np.full(size, -1)))  # fmt: skip
    for name, a, b in checks:
        left, right = np.asarray(a)[order_saved], np.asarray(b)[order_again]
        apart = ~np.isclose(left, right, rtol=RELATIVE, atol=RELATIVE) if left.dtype.kind == "f" else left != right
        if apart.any():
            i = int(np.flatnonzero(apart)[0])
            row = order_saved[i]
            job = instance.jobs[int(saved.job[row])]
            stage = job.stages[int(saved.stage[row])].name
            mine, theirs = _text(left[i]), _text(right[i])
            if name == "server":
                mine, theirs = (instance.servers[int(v)].name if v >= 0 else "none" for v in (left[i], right[i]))
            return (f"task {int(saved.index[row])} of job {job.name} stage {stage}: {name} {mine} in the file, "
                    f"{theirs} when run again")  # fmt: skip
    return None


def _text(value: Any) -> str:
    return f"{float(value):g}" if isinstance(value, float | np.floating) else str(value)
