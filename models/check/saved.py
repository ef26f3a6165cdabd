"""``fairpack check``: re-verify every claim a saved result makes, recomputing from the instance what it asserts.

A saved result is only a claim. :func:`check_saved` takes from it the answer (the allocation or the schedule)
and the facts the instance cannot tell -- the method it names and the options its run was given, under the
rules of :mod:`fairpack.models.check.claims` -- and recomputes everything else:

* the rules: the allocation level, the placement, whether fair caps apply, the objective and its direction
  come from the method's registry record (:class:`SavedRules`) and the options; nothing in the file switches
  a check off;
* the fair completion times ``T_k`` an exact method is capped by (and a heuristic reports) are simulated
  again (:mod:`fairpack.models.check.fairshare`), never read;
* the answer is verified from the instance (capacities, placement, precedence, durations, locality, options),
  and every number the file reports beside it (tasks, shares, amounts, every hierarchy node's shares and
  guarantees, completions, JCTs, delays, utilities, SLO attainment, locality levels, late jobs, a simulation's
  timeline and summary) must equal its recomputation;
* the status, bound and gap must be consistent: ``optimal`` needs a proven bound equal to the objective, on
  the right side of it, and only an exact method proves one; a gap is the distance the bound and the objective
  give; an exact method's schedule runs every task;
* a job a run left unfinished must be one that could not run: a stage no machine (or slot) of the policy can
  hold, or a run cut short by its horizon, time limit or an interruption, as recorded;
* a result without an answer is confirmed only where the instance shows why: ``infeasible`` when a task fits
  no machine (or given deadlines are shorter than a job's critical path); ``error``, ``time_limit`` or
  ``unbounded`` without an answer leave nothing to verify.

What the file reports that the instance cannot decide -- timings, solver counters, the solver's own objective,
a backlog simulation's time series, messages -- is read, not checked (docs/results.md lists it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fairpack.models.check.claims import RULE_DEFAULTS, Applied, loosening, objective_of, placement_of, resolve
from fairpack.models.check.compare import SAVED_RTOL, Compare, number
from fairpack.models.check.rules import SavedRules
from fairpack.models.check.saved_schedule import STOPPED, blocked, check_schedule
from fairpack.models.check.verify import verify_allocation
from fairpack.models.dag import longest_paths
from fairpack.models.metrics import guarantee_ratio, guarantee_shortfall
from fairpack.models.result import Allocation, Schedule, UnitKind, relative_gap
from fairpack.models.tolerance import settled
from fairpack.models.types import Instance, InstanceError
from fairpack.models.view import allocation_from_tenants, allocation_json

#: Every status a result may carry; those that may come with an answer; those of a run cut short.
STATUSES = ("optimal", "feasible", *STOPPED, "infeasible", "unbounded", "error")
ANSWER_STATUSES = ("optimal", "feasible", *STOPPED)
__all__ = ["ANSWER_STATUSES", "SAVED_RTOL", "STATUSES", "SavedCheck", "SavedRules", "check_saved"]


@dataclass(frozen=True)
class SavedCheck:
    """The verdict of :func:`check_saved`: ``verified`` when every claim holds (``violations`` empty); the
    recomputed ``numbers``; ``rules``, the rules it was checked by, in words; ``notes`` (e.g. an ``infeasible``
    confirmed, and why); ``answer``, the allocation or schedule read from the file and checked."""

    verified: bool
    violations: list[str]
    numbers: dict[str, Any] = field(default_factory=dict)
    rules: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    answer: Allocation | Schedule | None = None  # the answer read from the file (for a re-run to compare with)


# ------------------------------------------------------------------------------------------ the entry point


def check_saved(instance: Instance, data: dict[str, Any], rules: SavedRules) -> SavedCheck:
    """Re-verify the saved result ``data`` of ``rules.method`` on ``instance`` (module docstring).

    Raises
    ------
    InstanceError
        When names in the file do not resolve against the instance, or a field has the wrong type (the
        caller adds the file name).
    """
    problems: list[str] = []
    status = data.get("status")
    if data.get("method") != rules.method:
        problems.append(f"the result names method {data.get('method')!r}, not {rules.method!r}")
    if status not in STATUSES:
        problems.append(f"status {status!r} is not a fairpack status")
    command = data.get("command")
    if command is not None and command != ("simulate" if rules.policy else "solve"):
        problems.append(f"the result says it came from fairpack {command}, but {rules.method} is "
                        f"{'an online policy of fairpack simulate' if rules.policy else 'a method of fairpack solve'}")
    if data.get("instance") not in (None, instance.name):
        problems.append(f"the result is for instance {data.get('instance')!r}, not {instance.name!r}")
    applied = resolve(instance, data, rules.stated, rules.takes, loosening(rules, instance), rules.method, problems)
    described = _describe(rules, applied, instance, data)
    notes: list[str] = []
    present = "tasks" in data if rules.kind == "schedule" else "tenants" in data
    if not present:
        _no_answer(instance, data, rules, applied, problems, notes)
        return SavedCheck(not problems, problems, {}, described, notes)
    if status in ("infeasible", "unbounded"):
        problems.append(f"status {status!r} says there is no answer, yet the result holds one")
    if status == "optimal" and not rules.exact:
        problems.append(f"status 'optimal', but {rules.method} is a heuristic: it proves no optimum")
    answer: Allocation | Schedule
    if rules.kind == "schedule":
        ok, numbers, maximised, answer = check_schedule(instance, data, rules, applied, problems)
    else:
        ok, numbers, maximised, answer = _allocation(instance, data, rules, applied, problems)
    _bound_and_gap(data, numbers.get("objective"), rules, instance, maximised, problems)
    expected = ok and status != "error"  # solve never calls what a failed method left verified
    strict = applied.withheld and not ok  # a failure under rules stricter than the run's: no verdict on its own
    if data.get("verified") is not None and bool(data.get("verified")) != expected and not strict:
        problems.append(f"the result says verified {data.get('verified')} but re-verification says {expected}")
    if status == "error":
        problems.append("status 'error': the run failed, and check does not verify what a failed run left")
    if problems and applied.withheld:
        problems.insert(0, f"the result records {', '.join(applied.withheld)}, which loosens the rules: check "
                        "applies it only when given it too; without it:")  # fmt: skip
    return SavedCheck(not problems, problems, numbers, described, notes, answer)


def _describe(rules: SavedRules, applied: Applied, instance: Instance, data: Mapping[str, Any]) -> list[str]:
    """The rules the result is checked by, in words (``fairpack check`` prints them)."""
    words = [f"{rules.method} ({'exact' if rules.exact else 'online policy' if rules.policy else 'heuristic'})"]
    placement = placement_of(rules, applied, instance)
    if rules.kind == "allocation":
        level = rules.unit_kind or ("pool" if placement == "pooled" else "class")
        return [*words, f"allocation per {level}", *_options_words(applied, data)]
    words += [f"placement {placement}", f"objective {objective_of(rules, applied, instance)}"]
    if applied["objective"] == "mix":
        words.append(f"alpha {applied['alpha']:g}")
    if rules.fair_caps:
        given = applied["extra.fair_completion"]
        if given is False:
            words.append("no fair caps (fair_completion false)")
        elif isinstance(given, Mapping):
            words.append("fair caps C_k <= T_k at the given times")
        elif applied["fair_cap"]:
            words.append("fair caps C_k <= T_k (T_k recomputed: drf-strict)")
        else:
            words.append("no fair caps (--no-fair-cap); T_k recomputed and compared where reported")
    elif rules.fair_report:
        words.append("T_k recomputed (drf-strict) and compared where reported, not enforced")
    if applied["extra.horizon"] is not None and rules.policy:
        words.append(f"horizon {applied['extra.horizon']:g}")
    if rules.stage_rule == "slot":
        words.append(f"{applied['slots']} slots per largest machine")
    return [*words, *_options_words(applied, data)]


def _options_words(applied: Applied, data: Mapping[str, Any]) -> list[str]:
    """What the rules line says of the recorded options: none recorded, or those not applied."""
    words = [f"not applied: {withheld} (recorded; give it to check to apply it)" for withheld in applied.withheld]
    if "options" not in data:
        words.append("the result records no options (saved by an older fairpack): checked by those given and "
                     "the defaults")  # fmt: skip
    return words


# ------------------------------------------------------------------------------------------ no answer


def _no_answer(instance: Instance, data: dict[str, Any], rules: SavedRules, applied: Applied, problems: list[str],
               notes: list[str]) -> None:  # fmt: skip
    status = data.get("status")
    what = "schedule" if rules.kind == "schedule" else "allocation"
    if status in ("optimal", "feasible"):
        problems.append(f"status {status!r} promises an answer, but the result holds no {what}")
    elif status == "infeasible":
        reason = _infeasible(instance, rules, applied) if rules.kind == "schedule" else None
        if reason is None:
            why = ("every task fits a machine, and the fair-share schedule meets every cap" if rules.kind == "schedule"
                   else "an allocation always exists (none at all is one)")  # fmt: skip
            problems.append(f"status 'infeasible' cannot be confirmed: {why}")
        else:
            notes.append(f"infeasible confirmed: {reason}")
    elif status in STATUSES:
        problems.append(f"status {status!r} with no {what}: there is nothing to verify")
    for key in ("objective", "bound", "gap"):
        if number(data.get(key)) is not None:
            problems.append(f"{key} {data.get(key)} with no {what} to have it")
    if data.get("verified") is True:
        problems.append("a result with no answer cannot be verified")


def _infeasible(instance: Instance, rules: SavedRules, applied: Applied) -> str | None:
    """Why no schedule exists, if the instance shows it: a stage none of whose tasks fits the placement, or a
    given deadline before a job's release plus its critical path."""
    placement = placement_of(rules, applied, instance)
    for job in instance.jobs:
        for stage in job.stages:
            if blocked(instance, stage, placement, "machine", gangs=rules.exact or rules.gangs,
                        slots=RULE_DEFAULTS["slots"]):  # fmt: skip
                unit = "machine" if placement == "servers" else "cluster"
                return f"a task of job {job.name} stage {stage.name} fits no {unit}"
    given = applied["extra.fair_completion"]
    if rules.fair_caps and isinstance(given, Mapping):
        for job in instance.jobs:
            deadline = number(given.get(job.name))
            if deadline is None:
                continue
            lengths = [min([stage.duration, *(o.duration for o in stage.options)]) for stage in job.stages]
            parents = [list(stage.after) for stage in job.stages]
            children: list[list[int]] = [[] for _ in job.stages]
            for child, ps in enumerate(parents):
                for p in ps:
                    children[p].append(child)
            critical = float(longest_paths(parents, children, lengths)[1].max(initial=0.0))
            if settled(job.release + critical) > deadline:
                return (f"job {job.name} needs {critical:.6g} after its release {job.release:.6g}, past its given "
                        f"time {deadline:.6g}")  # fmt: skip
    return None


# ------------------------------------------------------------------------------------------ status, bound, gap


def _bound_and_gap(data: dict[str, Any], objective: float | None, rules: SavedRules, instance: Instance,
                   maximised: bool, problems: list[str]) -> None:  # fmt: skip
    """``optimal`` has a bound equal to the objective; a bound is on the right side; the gap is theirs."""
    status, bound, gap = data.get("status"), data.get("bound"), data.get("gap")
    value = number(bound)
    if bound is not None and value is None:
        problems.append(f"bound {bound!r} is not a number")
        return
    if gap is not None and number(gap) is None:
        problems.append(f"gap {gap!r} is not a number")
        return
    if objective is None:
        if status == "optimal":
            problems.append("status 'optimal', but the answer has no objective (a job is unfinished)")
        for key, saved in (("bound", bound), ("gap", gap)):
            if saved is not None:
                problems.append(f"{key} {saved} beside an answer with no objective")
        return
    if status == "optimal" and value is None:
        problems.append("status 'optimal' needs the bound that proves it, and the result has none")
    hierarchy = rules.kind == "allocation" and instance.hierarchy is not None
    if value is not None and not rules.exact:
        problems.append(f"bound {value:.9g}: {rules.method} is a heuristic, and proves no bound")
        return
    if value is None:
        if gap is not None:
            problems.append(f"gap {gap} with no bound to measure it from")
        return
    slack = SAVED_RTOL * max(1.0, abs(objective))
    if maximised and value < objective - slack:
        problems.append(f"bound {value:.9g} is below the objective {objective:.9g} of a maximisation")
    if not maximised and value > objective + slack:
        problems.append(f"bound {value:.9g} is above the objective {objective:.9g} of a minimisation")
    if status == "optimal" and abs(value - objective) > slack:
        problems.append(f"status 'optimal' needs the bound to equal the objective: bound {value:.9g}, objective "
                        f"{objective:.9g}")  # fmt: skip
    if hierarchy and rules.exact and value != 0:
        problems.append(f"bound {value:.9g}: {rules.method}'s proven bound of the guarantee shortfall is 0 (H-DRF "
                        "meets every guarantee)")  # fmt: skip
    _gap(gap, _expected_gap(objective, value, rules, hierarchy, maximised), value, objective, problems)


def _gap(gap: Any, expected: float | None, bound: float, objective: float, problems: list[str]) -> None:
    """The saved gap is the one the bound and the objective give (none where they give none)."""
    saved = number(gap)
    if expected is None and saved is not None:
        problems.append(f"saved gap {gap}, but bound and objective give none")
    elif expected is not None and saved is None:
        problems.append(f"the gap is missing: bound {bound:.9g} and objective {objective:.9g} give {expected:.9g}")
    elif expected is not None and saved is not None and abs(saved - expected) > max(SAVED_RTOL * expected, 1e-9):
        problems.append(f"saved gap {gap} but bound and objective give {expected:.9g}")


def _expected_gap(objective: float, bound: float, rules: SavedRules, hierarchy: bool, maximised: bool) -> float | None:
    """The gap ``solve`` reports for ``objective`` and ``bound`` (``solver.api``)."""
    if rules.kind == "schedule":
        raw = relative_gap(objective, bound, maximised)
        return raw if raw > 1e-12 else 0.0
    if hierarchy:
        return relative_gap(objective, bound, maximised=False)
    if bound > 0 and math.isfinite(bound):
        return max(0.0, (bound - objective) / bound)
    return None


# ------------------------------------------------------------------------------------------ allocations


def _allocation(instance: Instance, data: dict[str, Any], rules: SavedRules, applied: Applied,
                problems: list[str]) -> tuple[bool, dict[str, Any], bool, Allocation]:  # fmt: skip
    placement = placement_of(rules, applied, instance)
    claimed = placement_of(rules, applied.claimed, instance)
    kind: UnitKind = rules.unit_kind or ("pool" if claimed == "pooled" else "class")
    strict: UnitKind = rules.unit_kind or ("pool" if placement == "pooled" else "class")
    saved_kind = data.get("unit_kind")
    if saved_kind is not None and saved_kind != kind:
        problems.append(f"unit_kind says {saved_kind!r}, but {rules.method} allocates per {kind!r} here")
    if strict != kind:
        problems.append(f"the allocation is per {kind!r}, but {rules.method} allocates per {strict!r} on this "
                        "instance unless given --placement pooled")  # fmt: skip
    tenants = data.get("tenants")
    if not isinstance(tenants, Mapping):
        raise InstanceError("must be an object: tenant -> its tasks", "tenants")
    allocation = allocation_from_tenants(instance, tenants, kind, integral=kind == "machine")
    amounts = {name: entry.get("allocation", {}) for name, entry in tenants.items() if isinstance(entry, dict)}
    report = verify_allocation(instance, allocation, amounts=amounts)
    problems.extend(report.violations)
    compare = Compare()
    view = allocation_json(instance, allocation, units_shown=0)  # per_server is what the allocation was read from
    compare.value("integral", data.get("integral", ...), view["integral"])
    compare.value("utilisation", data.get("utilisation", ...), view["utilisation"])
    for name, expected in view["tenants"].items():
        saved = tenants.get(name, ...)
        if saved is ...:
            continue
        entry = {key: value for key, value in expected.items() if key not in ("per_server", "per_server_more")}
        compare.value(f"tenants.{name}", saved, entry, "tenants")
    if instance.hierarchy is not None:
        nodes = data.get("nodes", ...)
        if nodes is not ...:
            compare.value("nodes", nodes, view["nodes"], "nodes")
    maximised = instance.hierarchy is None
    if instance.hierarchy is not None:
        objective = guarantee_shortfall(instance, allocation)
        ratio = guarantee_ratio(instance, allocation)
        compare.value("objective_name", data.get("objective_name", ...), "guarantee shortfall")
        compare.value("min_share_guarantee", data.get("min_share_guarantee", ...),
                      ratio if math.isfinite(ratio) else None)  # fmt: skip
        compare.value("min_weighted_leaf_share", data.get("min_weighted_leaf_share", ...), report.min_weighted_share)
    else:
        objective = report.min_weighted_share
    compare.value("objective", data.get("objective", ...), objective, required=True)
    if rules.placement:
        compare.value("placement", data.get("placement", ...), claimed)
    simulation = data.get("simulation")
    if rules.policy and isinstance(simulation, Mapping):
        compare.value("simulation.policy", simulation.get("policy", ...), rules.method)
    problems.extend(compare.messages())
    numbers = {"objective": objective, "utilisation": view["utilisation"]}
    return report.ok, numbers, maximised, allocation


