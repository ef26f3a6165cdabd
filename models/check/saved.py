"""``fairpack check``: re-verify a saved result by exactly the rules ``solve`` applied to it.

A saved result is only a claim. :func:`check_saved` trusts nothing in it but the answer itself and the
method's name: the allocation level and the deadline rule come from :class:`SavedRules` (derived from the
method, never from the file), the objective is recomputed as ``solve`` computes it, and every number the
file reports beside the answer (tasks, shares, completions, makespan, objective, bound, gap, ``verified``)
must agree with the recomputation. A result without an answer passes only when its status says why there
is none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fairpack.models.check.schedule import verify_schedule
from fairpack.models.check.verify import verify_allocation
from fairpack.models.metrics import guarantee_shortfall
from fairpack.models.result import MAXIMISED_OBJECTIVES, SCHEDULE_OBJECTIVES, Allocation, UnitKind, relative_gap
from fairpack.models.tolerance import CHECK_RTOL
from fairpack.models.types import Instance, InstanceError
from fairpack.models.view import allocation_from_json, schedule_from_json

#: Statuses that promise an answer, and those that explain its absence (``time_limit`` and ``interrupted``, a run
#: stopped early, may hold the best answer found by then or none).
ANSWER_STATUSES = ("optimal", "feasible")
NO_ANSWER_STATUSES = ("infeasible", "unbounded", "error", "time_limit", "interrupted")
#: Relative slack when comparing a saved number with its recomputation.
SAVED_RTOL = CHECK_RTOL


@dataclass(frozen=True)
class SavedRules:
    """What ``solve`` applied to a method's answer, derived from the method (and its placement), not the file.

    Attributes
    ----------
    method
        The method the file must name.
    kind
        ``allocation`` or ``schedule``.
    unit_kind
        Allocations: the placement level the method allocates on (``pool``, ``class`` or ``machine``).
    exact
        Schedules of exact methods must meet their fair completion times ``C_k <= T_k``; heuristics'
        ``T_k`` are only reported.
    require_placement
        Schedules placed on machines (``--placement servers``): every task must name its machine.
    fair_cap
        False when an exact method was run with ``--no-fair-cap``: its ``T_k`` are then only reported.
    """

    method: str
    kind: str
    unit_kind: UnitKind | None = None
    exact: bool = False
    require_placement: bool = False
    fair_cap: bool = True


@dataclass(frozen=True)
class SavedCheck:
    verified: bool
    violations: list[str]
    numbers: dict[str, Any] = field(default_factory=dict)


def _differs(saved: Any, value: float) -> bool:
    if saved is None:
        return False
    try:
        number = float(saved)
    except (TypeError, ValueError):
        return True
    if not math.isfinite(value):
        return math.isfinite(number)
    return abs(number - value) > SAVED_RTOL * max(1.0, abs(value))


def check_saved(instance: Instance, data: dict[str, Any], rules: SavedRules) -> SavedCheck:
    """Re-verify the saved result ``data`` of ``rules.method`` on ``instance``.

    Raises
    ------
    InstanceError
        When names in the file do not resolve against the instance (the caller adds the file name).
    """
    problems: list[str] = []
    status = data.get("status")
    if data.get("method") != rules.method:
        problems.append(f"the result names method {data.get('method')!r}, not {rules.method!r}")
    if status not in (*ANSWER_STATUSES, *NO_ANSWER_STATUSES):
        problems.append(f"status {status!r} is not a fairpack status")
    present = "tasks" in data if rules.kind == "schedule" else "tenants" in data
    if not present:
        if status in ANSWER_STATUSES:
            problems.append(f"status {status!r} promises an answer, but the result holds no "
                            f"{'schedule' if rules.kind == 'schedule' else 'allocation'}")  # fmt: skip
        if data.get("verified") is True:
            problems.append("a result with no answer cannot be verified")
        return SavedCheck(not problems, problems)
    if status in ("infeasible", "unbounded"):
        problems.append(f"status {status!r} says there is no answer, yet the result holds one")
    if rules.kind == "schedule":
        recomputed, numbers = _schedule(instance, data, rules, problems)
    else:
        recomputed, numbers = _allocation(instance, data, rules, problems)
    objective = numbers.get("objective")
    # Allocations maximise their smallest weighted share; on a hierarchy they minimise the guarantee shortfall.
    maximised = (rules.kind == "allocation" and instance.hierarchy is None) or (
        rules.kind == "schedule" and data.get("objective_name") in MAXIMISED_OBJECTIVES)  # fmt: skip
    _bound_and_gap(data, objective, maximised=maximised, problems=problems)
    expected = recomputed and status != "error"  # solve never calls what a failed method left verified
    if data.get("verified") is not None and bool(data.get("verified")) != expected:
        problems.append(f"the result says verified {data.get('verified')} but re-verification says {expected}")
    return SavedCheck(not problems, problems, numbers)


def _allocation(instance: Instance, data: dict[str, Any], rules: SavedRules,
                problems: list[str]) -> tuple[bool, dict[str, Any]]:  # fmt: skip
    assert rules.unit_kind is not None
    saved_kind = data.get("unit_kind")
    if saved_kind is not None and saved_kind != rules.unit_kind:
        problems.append(f"unit_kind says {saved_kind!r}, but {rules.method} allocates per {rules.unit_kind!r}")
    parsed = allocation_from_json(instance, {**data, "unit_kind": rules.unit_kind})
    allocation = Allocation(parsed.tasks, rules.unit_kind, integral=rules.unit_kind == "machine")
    amounts = {name: entry.get("allocation", {}) for name, entry in (data.get("tenants") or {}).items()
               if isinstance(entry, dict)}  # fmt: skip
    report = verify_allocation(instance, allocation, amounts=amounts)
    problems.extend(report.violations)
    for position, tenant in enumerate(instance.tenants):
        entry = (data.get("tenants") or {}).get(tenant.name)
        if not isinstance(entry, dict):
            continue
        for key, value in (("tasks", report.tasks[position]), ("dominant_share", report.dominant_shares[position])):
            if _differs(entry.get(key), float(value)):
                problems.append(f"tenant {tenant.name}: saved {key} {entry.get(key)} but the allocation gives "
                                f"{value:.9g}")  # fmt: skip
    objective = (guarantee_shortfall(instance, allocation) if instance.hierarchy is not None
                 else report.min_weighted_share)  # fmt: skip
    if _differs(data.get("objective"), objective):
        problems.append(f"saved objective {data.get('objective')} but recomputed {objective:.9g}")
    numbers = {"objective": objective,
               "utilisation": dict(zip(instance.resources, report.utilisation.tolist(), strict=True))}  # fmt: skip
    return report.ok, numbers


def _schedule(instance: Instance, data: dict[str, Any], rules: SavedRules,
              problems: list[str]) -> tuple[bool, dict[str, Any]]:  # fmt: skip
    schedule = schedule_from_json(instance, data)
    deadlines = None if rules.exact and rules.fair_cap else np.full(len(instance.jobs), np.inf)
    names = {job.name: k for k, job in enumerate(instance.jobs)}
    declared = data.get("unfinished_jobs") or []
    if not isinstance(declared, list) or any(name not in names for name in declared):
        raise InstanceError(f"unknown jobs in {declared!r}", "unfinished_jobs")
    report = verify_schedule(instance, schedule, fair_completion=deadlines, require_placement=rules.require_placement,
                             unfinished=[names[name] for name in declared])  # fmt: skip
    problems.extend(report.violations)
    for key, value in (("makespan", report.makespan), ("avg_jct", report.avg_jct), ("utility", report.utility)):
        if _differs(data.get(key), value):
            problems.append(f"saved {key} {data.get(key)} but the schedule gives {value:.9g}")
    for k, job in enumerate(instance.jobs):
        entry = (data.get("jobs") or {}).get(job.name) or {}
        if isinstance(entry, dict) and _differs(entry.get("completion"), float(report.completion[k])):
            problems.append(f"job {job.name}: saved completion {entry.get('completion')} but the schedule gives "
                            f"{report.completion[k]:.9g}")  # fmt: skip
    name = data.get("objective_name", "makespan")
    if name not in SCHEDULE_OBJECTIVES:
        raise InstanceError(f"unknown objective {name!r}", "objective_name")
    alpha = data.get("alpha", 0.5)
    if not isinstance(alpha, int | float) or isinstance(alpha, bool) or not 0 <= alpha <= 1:
        raise InstanceError(f"alpha must be a number in [0, 1], got {alpha!r}", "alpha")
    objective = report.objective(name, float(alpha))
    if _differs(data.get("objective"), objective):
        problems.append(f"saved objective {data.get('objective')} but recomputed {objective:.9g}")
    numbers = {"objective": objective, "makespan": report.makespan, "avg_jct": report.avg_jct,
               "utility": report.utility}  # nan where a job is unfinished: no such number
    return report.ok, {key: None if math.isnan(value) else value for key, value in numbers.items()}


def _bound_and_gap(data: dict[str, Any], objective: float | None, maximised: bool, problems: list[str]) -> None:
    """A proven bound is on the right side of the objective, and the gap is the distance between them."""
    bound = data.get("bound")
    if bound is None or objective is None or not math.isfinite(objective):
        return
    try:
        value = float(bound)
    except (TypeError, ValueError):
        problems.append(f"bound {bound!r} is not a number")
        return
    slack = SAVED_RTOL * max(1.0, abs(objective))
    if maximised and value < objective - slack:
        problems.append(f"bound {value:.9g} is below the objective {objective:.9g} of a maximisation")
    if not maximised and value > objective + slack:
        problems.append(f"bound {value:.9g} is above the objective {objective:.9g} of a minimisation")
    gap = data.get("gap")
    if gap is not None and value != 0:
        expected = relative_gap(objective, value, maximised)
        if _differs(gap, expected) and abs(float(gap) - expected) > 1e-9:
            problems.append(f"saved gap {gap} but bound and objective give {expected:.9g}")
    if data.get("status") == "optimal" and data.get("gap") not in (None, 0, 0.0):
        problems.append(f"status 'optimal' with gap {data.get('gap')}: optimal means a zero gap to the bound")
