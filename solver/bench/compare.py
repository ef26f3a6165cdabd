"""``fairpack.compare``: several methods on one instance, one row each, with the gap to a reference.

Every row is one verified :class:`~fairpack.models.result.Result` laid flat: what ran, its status, the
objective recomputed by the checker, its proven bound, the times, the fairness and quality columns of a
sweep's table (:mod:`fairpack.solver.bench.metrics`) and the **gap to the reference, positive = worse**,
whatever the objective's sense (the convention of :mod:`fairpack.solver.bench.table`):

* maximised objectives (flat: min weighted dominant share; utility):
  ``gap = (reference - objective) / |reference|``;
* the hierarchy objective, the guarantee shortfall (``max(0, 1 - min share/guarantee)``, minimised; static
  H-DRF's is 0, the smallest there is): ``gap = objective - reference``, the difference itself;
* minimised objectives (DAG jobs: avg JCT, makespan, the mix): ``gap = (objective - reference) / |reference|``.

A gap is only a gap where the reference is an optimiser of the compared metric over a set that holds the
compared answer. Where it is not, ``gap`` is empty and ``gap_note`` says why, with the signed difference
(the same formula) in ``difference``:

* an exact DAG method under fair caps (every job done by its fair completion time ``T_k``, the default)
  optimises over the schedules that meet the caps: a heuristic that lets a job finish later than its
  ``T_k`` is outside that set and may be shorter;
* an allocation on the cluster pooled into one server (``drf``, or ``placement="pooled"``) is not placeable
  on the servers the reference allocates on;
* a reference that is not exact, or stopped before proving its answer optimal (its ``status``), bounds
  nothing; its ``bound`` still does (``bound_gap``, against the reference's proven bound).

Methods are names of ``fairpack.methods()``; ``online:<policy>`` simulates an online policy of
``fairpack.methods(policies=True)`` on the instance's arrivals (``fairpack.simulate``), as sweeps do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairpack.models.io import load_instance
from fairpack.models.result import MAXIMISED_OBJECTIVES, Result, job_completion
from fairpack.models.types import Instance, InstanceError
from fairpack.solver import interrupt
from fairpack.solver.api import simulate, solve
from fairpack.solver.bench.metrics import row_metrics
from fairpack.solver.bench.sweep import method_record
from fairpack.solver.bench.table import ABSOLUTE_OBJECTIVE, GAP_NOISE
from fairpack.solver.registry import COMMON_OPTIONS, ONLINE_PREFIX, Method, OptionError, methods

#: The reference of each family when none is given: its exact method of the fairness objective.
DEFAULT_REFERENCE = {"flat": "drfh", "hierarchy": "hdrf", "jobs": "spacetime-cp"}
#: Methods left out of the default list: each needs what most instances lack (``locality-cp``: blocks).
_NEEDS_BLOCKS = frozenset({"locality-cp"})
#: Maximised allocation objectives (every allocation objective is).
_ALLOCATION_OBJECTIVES = {False: "min weighted share", True: ABSOLUTE_OBJECTIVE}
_MAXIMISED = frozenset({*MAXIMISED_OBJECTIVES, "min weighted share"})
#: Columns in this order first; the metric columns follow.
COLUMNS = ("method", "kind", "status", "verified", "objective", "objective_name", "sense", "bound", "solver_gap",
           "reference", "gap", "difference", "bound_gap", "gap_note", "build_s", "solve_s", "wall_s")  # fmt: skip


def family_of(instance: Instance) -> str:
    """``jobs`` (DAG jobs), ``hierarchy`` (a tree) or ``flat`` (tenants): the methods that fit it."""
    if instance.jobs:
        return "jobs"
    return "hierarchy" if instance.hierarchy is not None else "flat"


def default_methods(instance: Instance) -> list[str]:
    """Every registered method of the instance's family (``locality-cp`` only with input blocks)."""
    family = family_of(instance)
    return [name for name, spec in methods().items()
            if spec.family == family and (name not in _NEEDS_BLOCKS or instance.data is not None)]  # fmt: skip


def compare(
    instance: Instance | str | Path,
    methods: Sequence[str] | None = None,
    reference: str | None = None,
    *,
    time_limit: float | None = 60.0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    **shared: Any,
) -> pd.DataFrame:
    """Run ``methods`` on ``instance`` and tabulate them against ``reference``, one row per method.

    Parameters
    ----------
    instance
        An :class:`~fairpack.models.types.Instance` (``fairpack.Instance.build``) or an instance file.
    methods
        Method names (``fairpack.methods()``), ``online:<policy>`` for an online policy on the instance's
        arrivals; None: every method of the instance's family (flat, hierarchy or DAG jobs).
    reference
        The method gaps are measured against; None: ``drfh`` (flat), ``hdrf`` (hierarchy) or
        ``spacetime-cp`` (DAG jobs). Run once even when it is also in ``methods``.
    time_limit
        Seconds for each method's whole call (exact methods return their best answer with status
        ``time_limit``); None: no limit.
    options
        Per-method options by method name (``{"slots": {"slots": 5}}``), on top of ``shared``.
    **shared
        ``SolveOptions`` fields for every method (``objective="avg-jct"``, ``placement="servers"``,
        ``seed=0``, ``fair_cap=False``, ...). Each method gets those it honours; an option that no
        method honours is refused (``OptionError``), as ``solve`` refuses one a method would ignore.

    Returns
    -------
    pandas.DataFrame
        Indexed by method: ``kind`` (exact, heuristic, simulated, online), ``status``, ``verified``,
        ``objective`` (recomputed by the checker), ``objective_name``, ``sense`` (max or min), ``bound``
        and ``solver_gap`` (the method's own), ``reference``, ``gap`` (positive = worse, empty where the
        reference does not bound the method; see the module docstring), ``difference`` (the same formula,
        always), ``bound_gap`` (against the reference's proven bound), ``gap_note``, the times, then the
        metric columns of a sweep's table (``avg_jct``, ``makespan``, ``late``, ``jain``,
        ``min_dominant_share``, ``util_<resource>``, ...). ``frame.attrs["results"]`` holds every
        :class:`~fairpack.models.result.Result` by method (``.to_frame()`` lays out each).

    Raises
    ------
    OptionError
        An unknown method or policy, or an option no method honours (before anything runs). A method that
        refuses this instance or its options (a DAG method on an instance without jobs, a policy that does
        not understand placement options) is a row with status ``refused`` and the reason in ``message``.

    Ctrl-C (SIGINT, Jupyter's "interrupt kernel") stops the method running, and the methods after it return at
    once: their rows have status ``interrupted`` and the best answer each had (see ``fairpack.solve``).
    """
    if not isinstance(instance, Instance):
        instance = load_instance(instance)
    names = list(default_methods(instance) if methods is None else methods)
    if isinstance(methods, str):
        raise OptionError(f"methods must be a list of method names, got the string {methods!r}", "methods")
    if not names:
        raise OptionError("no methods to compare", "methods")
    reference = DEFAULT_REFERENCE[family_of(instance)] if reference is None else reference
    records = {name: _record(name) for name in dict.fromkeys([*names, reference])}
    per_method = {name: dict(options.get(name, {})) if options else {} for name in records}
    if options:
        unknown = sorted(set(options) - set(records))
        if unknown:
            raise OptionError(f"options for {unknown}, which are not compared", "options")
    _check_shared(shared, records)
    with interrupt.handling():  # Ctrl-C stops the method running; those after it start stopped (status interrupted)
        results = {name: _attempt(instance, name, records[name], time_limit, shared, per_method[name])
                   for name in records}  # fmt: skip
    rows = [_row(instance, name, records[name], results[name], reference, records[reference], results[reference])
            for name in records]  # fmt: skip
    frame = pd.DataFrame(rows)
    leading = [c for c in COLUMNS if c in frame.columns]
    frame = frame[leading + [c for c in frame.columns if c not in leading]].set_index("method")
    frame.attrs["results"] = results
    frame.attrs["reference"] = reference
    return frame


def _record(name: str) -> Method:
    if not isinstance(name, str):
        raise OptionError(f"method names are strings, got {name!r}", "methods")
    try:
        return method_record(name)
    except KeyError:
        raise OptionError(f"unknown method {name!r}; fairpack.methods() lists them (online:<policy> for an "
                          "online policy)", "methods") from None  # fmt: skip


def _check_shared(shared: Mapping[str, Any], records: Mapping[str, Method]) -> None:
    """Every shared option must be honoured by some compared method (else it would be silently ignored)."""
    for key in shared:
        if key in ("backend", "time_limit"):
            raise OptionError(f"give {key} per method (options={{name: {{{key!r}: ...}}}}) or as compare's own "
                              "argument", key)  # fmt: skip
        takers = [name for name, spec in records.items() if _honours(spec, key)]
        if not takers:
            raise OptionError(f"no compared method honours {key}", key)


def _honours(spec: Method, key: str) -> bool:
    return key in spec.options or key in COMMON_OPTIONS or key == "extra"


def _run(instance: Instance, name: str, spec: Method, time_limit: float | None, shared: Mapping[str, Any],
         own: Mapping[str, Any]) -> Result:  # fmt: skip
    kwargs: dict[str, Any] = {key: value for key, value in shared.items() if _honours(spec, key)}
    if "extra" in kwargs:
        kwargs["extra"] = {k: v for k, v in dict(kwargs["extra"]).items() if k in spec.extra_keys}
        if not kwargs["extra"]:
            del kwargs["extra"]
    kwargs.update(own)  # a method's own options are checked by solve itself
    limit = kwargs.pop("time_limit", time_limit)
    if name.startswith(ONLINE_PREFIX):
        return simulate(instance, name[len(ONLINE_PREFIX):], time_limit=limit, **kwargs)
    backend = kwargs.pop("backend", None)
    return solve(instance, name, backend=backend, time_limit=limit, **kwargs)


def _attempt(instance: Instance, name: str, spec: Method, time_limit: float | None, shared: Mapping[str, Any],
             own: Mapping[str, Any]) -> Result:  # fmt: skip
    """``_run``, with what the method refuses on this instance as a row of its own (status ``refused``)."""
    try:
        return _run(instance, name, spec, time_limit, shared, own)
    except (OptionError, InstanceError) as error:
        return Result("error", name, "none", message=f"refused: {error}")


def _kind(name: str, spec: Method) -> str:
    if name.startswith(ONLINE_PREFIX):
        return "online"
    if spec.exact:
        return "exact"
    return "simulated" if spec.name in ("naive-hdrf", "dynamic-hdrf", "hslots") else "heuristic"


def objective_name(instance: Instance, result: Result) -> str | None:
    """The name of the objective ``result.objective`` holds (None without one)."""
    if result.objective is None:
        return None
    if result.schedule is not None:
        return str(result.extra.get("objective_name", "makespan"))
    return _ALLOCATION_OBJECTIVES[instance.hierarchy is not None]


def signed_gap(objective: float, reference: float, maximised: bool, absolute: bool = False) -> float:
    """Relative distance from ``reference``, positive when ``objective`` is worse (see the module docstring);
    ``absolute``: the difference itself (the guarantee shortfall); nan when a relative gap's reference is 0."""
    if objective == reference:
        return 0.0
    if absolute:
        gap = (reference - objective) if maximised else (objective - reference)
        return 0.0 if abs(gap) < GAP_NOISE else gap
    if maximised and math.isinf(reference) and math.isfinite(objective):
        return 1.0
    if reference == 0 or not math.isfinite(reference):
        return math.nan
    gap = ((reference - objective) if maximised else (objective - reference)) / abs(reference)
    return 0.0 if abs(gap) < GAP_NOISE else gap


def _late_jobs(instance: Instance, result: Result, reference: Result) -> int:
    """Jobs of ``result`` finishing after the fair completion time ``T_k`` the reference was held to."""
    caps = reference.schedule.fair_completion if reference.schedule is not None else None
    if result.schedule is None or caps is None or caps.size != len(instance.jobs):
        return 0
    completion = job_completion(instance, result.schedule)
    return int(np.sum(completion > caps + 1e-9 * np.maximum(1.0, np.abs(caps))))


def _bounds_it(instance: Instance, result: Result, ref_spec: Method, ref: Result) -> str:
    """Why the reference's optimum is no bound on ``result`` ('' when it is)."""
    if not ref_spec.exact:
        return f"{ref_spec.name} is not an exact method: its answer bounds nothing"
    if result.allocation is not None and ref.allocation is not None and result.allocation.kind == "pool" \
            and ref.allocation.kind != "pool":  # fmt: skip
        return (f"this allocation pools the cluster into one server; {ref_spec.name}'s places tasks on the servers, "
                "so it bounds only placeable allocations")  # fmt: skip
    if ref.schedule is not None and ref.extra.get("fair_cap", True) is not False and ref.schedule.fair_completion \
            is not None:  # fmt: skip
        late = _late_jobs(instance, result, ref)
        if late:
            return (f"{ref_spec.name} kept every job within its fair completion time T_k; this schedule lets {late} "
                    "finish later, outside the set it optimised over (fair_cap=False compares without caps)")
    if ref.status != "optimal":
        return f"{ref_spec.name} stopped with status {ref.status}, not a proven optimum: bound_gap is against its bound"
    return ""


def _row(instance: Instance, name: str, spec: Method, result: Result, reference: str, ref_spec: Method,
         ref: Result) -> dict[str, Any]:  # fmt: skip
    objective = objective_name(instance, result)
    maximised = objective in _MAXIMISED
    refused = result.status == "error" and result.message.startswith("refused: ")
    row: dict[str, Any] = {
        "method": name, "kind": _kind(name, spec), "status": "refused" if refused else result.status,
        "verified": bool(result.verified),
        "objective": result.objective, "objective_name": objective,
        "sense": None if objective is None else "max" if maximised else "min",
        "bound": result.bound, "solver_gap": result.gap, "reference": reference,
        "gap": math.nan, "difference": math.nan, "bound_gap": math.nan, "gap_note": "",
        "build_s": result.build_s, "solve_s": result.solve_s, "wall_s": result.wall_s,
    }  # fmt: skip
    if result.message:
        row["message"] = result.message
    comparable = _comparable(instance, result, ref, objective)
    if comparable:
        row["gap_note"] = comparable
    else:
        assert result.objective is not None and ref.objective is not None
        absolute = objective == ABSOLUTE_OBJECTIVE
        row["difference"] = signed_gap(result.objective, ref.objective, maximised, absolute)
        if ref.bound is not None and ref_spec.exact:
            row["bound_gap"] = signed_gap(result.objective, ref.bound, maximised, absolute)
        why = "" if name == reference else _bounds_it(instance, result, ref_spec, ref)
        if why:
            row["gap_note"] = why
        else:
            row["gap"] = row["difference"]
    row.update(row_metrics(instance, result))
    return row


def _comparable(instance: Instance, result: Result, ref: Result, objective: str | None) -> str:
    """Why no difference can be computed at all ('' when it can)."""
    if not result.verified or result.objective is None:
        return "no verified answer" + (f": {result.message}" if result.message else "")
    if not ref.verified or ref.objective is None:
        return "the reference has no verified answer"
    if objective != objective_name(instance, ref):
        return f"the reference measured {objective_name(instance, ref)}, this row {objective}"
    return ""


__all__ = ["COLUMNS", "DEFAULT_REFERENCE", "compare", "default_methods", "family_of", "objective_name", "signed_gap"]
