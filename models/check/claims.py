"""The options a saved result says its run was given, and the rules ``fairpack check`` applies to it.

A result records how it was run: ``command`` (``solve`` or ``simulate``) and ``options``, the options given
(``placement``, ``objective``, ``alpha``, ``fair_cap``, ``slots``, ``gap`` and the method's own ``extra``
settings: ``horizon``, ``fair_completion``, ...). Those are facts about the run that the instance cannot tell,
so the checker takes them from the file -- as claims: the rules a result is checked by come from the method's
registry record and these options, and

* the caller of ``check`` may state the run's options (the CLI takes solve's own flags); a stated option the
  file contradicts is a violation, so a user who knows how the run was made pins its rules (a result saved
  before options were recorded contradicts none: it is checked by the stated options and the defaults);
* an option that *loosens* a rule -- ``--no-fair-cap`` or given fair completion times (an exact method's caps),
  ``pooled`` placement where the method places on machines by default (the per-machine checks), a
  ``horizon`` (jobs left unfinished when the run stopped there), a larger slot count (tasks that fit no
  slot) -- is applied only when the caller states it too; recorded but not stated, the strict rule is
  applied, and if the result then fails, the violations say which recorded option would excuse it;
* every other recorded option (objective, alpha, ...) is applied as recorded, and everything the file says
  that follows from the options (``placement``, ``fair_cap``, ``objective_name``, ``alpha``) must agree with
  them.

So nothing in the file can switch a check off: a file edited to say ``fair_cap: false`` is checked with the
caps, and one whose options were edited too is checked with them unless its user says otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fairpack.models.check.compare import number
from fairpack.models.check.rules import SavedRules
from fairpack.models.result import SCHEDULE_OBJECTIVES
from fairpack.models.types import Instance, InstanceError

#: The options that shape the rules, by their flat key (``extra.`` for a method's own settings), and their
#: defaults (``placement`` ``auto``: the method's own default, :func:`resolved_placement`).
RULE_DEFAULTS: dict[str, Any] = {
    "placement": "auto",
    "objective": None,
    "alpha": 0.5,
    "fair_cap": True,
    "slots": 10,
    "gap": 0.0,
    "extra.fair_completion": True,
    "extra.horizon": None,
    "extra.attach_fair": True,
    "extra.fair_margin": 0.0,
}
#: Options a run may be given that decide nothing the checker checks (they are recorded, never compared).
NEUTRAL = frozenset({"seed", "workers", "time_limit", "verbose", "strategy", "algorithm", "backend"})


@dataclass(frozen=True)
class Applied:
    """The options a result is checked by, and what was decided about them.

    Attributes
    ----------
    claimed
        Every rule option as the result claims it (stated by the caller, else recorded, else the default).
    applied
        The options the checks use: ``claimed``, except recorded options that loosen a rule and that the
        caller did not state, which take the strict default.
    withheld
        The flags of those loosening options (``--no-fair-cap``), for the violations' hint.
    """

    claimed: dict[str, Any]
    applied: dict[str, Any]
    withheld: list[str] = field(default_factory=list)

    def __getitem__(self, key: str) -> Any:
        return self.applied[key]


def flat_options(record: Any, where: str) -> dict[str, Any]:
    """``{"placement": ..., "extra": {"horizon": ...}}`` as flat keys (``extra.horizon``); InstanceError if it is
    not an object."""
    if record is None:
        return {}
    if not isinstance(record, Mapping):
        raise InstanceError(f"must be an object of options, got {type(record).__name__}", where)
    flat: dict[str, Any] = {}
    for key, value in record.items():
        if key == "extra":
            if not isinstance(value, Mapping):
                raise InstanceError(f"must be an object, got {type(value).__name__}", f"{where}.extra")
            flat.update({f"extra.{name}": item for name, item in value.items()})
        else:
            flat[str(key)] = value
    return flat


def flag(key: str, value: Any) -> str:
    """An option as its command-line flag (``--no-fair-cap``, ``--placement servers``, ``--option k=v``)."""
    if key == "fair_cap":
        return "--no-fair-cap" if value is False else "fair caps on (no --no-fair-cap)"
    if key.startswith("extra."):
        name = key[len("extra."):]
        if name == "horizon":
            return "--horizon " + ("none" if value is None else f"{value:g}")
        shown = "true" if value is True else "false" if value is False else value
        return f"--option {name}={shown}" if not isinstance(value, Mapping) else f"{name} (given times)"
    return f"--{key.replace('_', '-')} {value}"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=0.0)
    return bool(a == b)


def identical_servers(instance: Instance) -> bool:
    """Whether every server class has the same capacity (divisible tasks then pool exactly)."""
    return len(np.unique(instance.capacity, axis=0)) <= 1


def resolved_placement(value: Any, kind: str, default: str, instance: Instance) -> str:
    """``pooled`` or ``servers``: the placement a method given ``value`` uses on ``instance``.

    ``default`` is the method's (``auto``: schedules pooled unless the instance has placement options,
    allocations pooled when all servers are alike; ``servers``: always on machines)."""
    if default == "servers" and value == "auto":
        return "servers"
    if kind == "schedule":
        if instance.has_options or value == "servers":
            return "servers"
        return "pooled"
    if value == "auto":
        return "pooled" if identical_servers(instance) else "servers"
    return "pooled" if value == "pooled" else "servers"


def resolve(instance: Instance, data: Mapping[str, Any], stated: Mapping[str, Any], takes: frozenset[str],
            loosening: Mapping[str, tuple[Callable[[Any], bool], Any]], method: str,
            problems: list[str]) -> Applied:  # fmt: skip
    """The rule options of a saved result (module docstring).

    Parameters
    ----------
    stated
        Flat options the caller of ``check`` gives (they must agree with the file).
    takes
        Flat keys of the options the method honours (a recorded option it does not take is a violation).
    loosening
        Flat key -> ``(loosens, strict)``: whether a value loosens the rule, and the strict value applied
        instead when it does and was not stated.
    """
    recorded = flat_options(data.get("options"), "options")
    # A result saved before runs recorded their options says nothing to contradict: the stated options apply.
    contradicts = "options" in data
    for key in recorded:
        if key not in takes and key not in NEUTRAL:
            problems.append(f"the result records the option {flag(key, recorded[key])}, which {method} does not take")
    claimed: dict[str, Any] = {}
    for key, default in RULE_DEFAULTS.items():
        value = recorded.get(key, default)
        if key in stated:
            if contradicts and not _same(stated[key], value):
                default_flag = flag(key, stated[key]).split(" ")[0]
                what = flag(key, value) if key in recorded else f"no {default_flag} (the default)"
                problems.append(f"check was given {flag(key, stated[key])}, but the result records {what}")
            value = stated[key]
        claimed[key] = value
    applied = dict(claimed)
    withheld: list[str] = []
    for key, (loosens, strict) in loosening.items():
        if key in stated or key not in recorded or not loosens(claimed[key]):
            continue
        applied[key] = strict
        withheld.append(flag(key, claimed[key]))
    return Applied(claimed, applied, withheld)


def loosening(rules: SavedRules, instance: Instance) -> dict[str, tuple[Callable[[Any], bool], Any]]:
    """Flat option -> ``(loosens, strict)``: whether a recorded value loosens one of ``rules``' checks on
    ``instance``, and the strict value checked instead unless the caller states it (module docstring)."""
    found: dict[str, tuple[Callable[[Any], bool], Any]] = {}
    if rules.fair_caps:
        found["fair_cap"] = (lambda value: value is False, True)
        found["extra.fair_completion"] = (lambda value: value is not True, True)
    if rules.placement:
        kind, default = rules.kind, rules.placement
        strict = resolved_placement("auto", kind, default, instance) == "servers"
        found["placement"] = (lambda value: strict and resolved_placement(value, kind, default, instance) == "pooled",
                              "servers")  # fmt: skip
    if rules.policy and rules.kind == "schedule":
        found["extra.horizon"] = (lambda value: value is not None, None)
    if rules.stage_rule == "slot":
        most = RULE_DEFAULTS["slots"]
        found["slots"] = (lambda value: number(value) is not None and value > most, most)
    return found


def placement_of(rules: SavedRules, applied: Applied | Mapping[str, Any], instance: Instance) -> str:
    """``pooled`` or ``servers``: the placement the checks use (given the claimed options instead: the one the
    result claims)."""
    if not rules.placement:
        return "servers" if rules.unit_kind == "machine" else "pooled"
    if rules.choices_on_machines and instance.has_options:  # the utility objective follows the placement
        return "servers"
    return resolved_placement(applied["placement"], rules.kind, rules.placement, instance)


def objective_of(rules: SavedRules, applied: Applied, instance: Instance) -> str:
    chosen = applied["objective"]
    if chosen is None:
        return "makespan" if len(instance.jobs) == 1 else "avg-jct"
    if chosen not in SCHEDULE_OBJECTIVES:
        raise InstanceError(f"unknown objective {chosen!r}; fairpack knows {', '.join(SCHEDULE_OBJECTIVES)}",
                            "options.objective")  # fmt: skip
    return str(chosen)
