"""What a method's saved answer is checked by: :class:`SavedRules`, built from the method's registry record
(``Method.saved_rules``) and the options the caller of ``fairpack check`` states, never from the result file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fairpack.models.result import UnitKind


@dataclass(frozen=True)
class SavedRules:
    """What a method's answer is checked by: facts of its registry record (``Method.saved_rules``) and the options
    the caller of ``check`` states. Nothing here comes from the result file.

    Attributes
    ----------
    method
        The method (or online policy) the file must name.
    kind
        ``allocation`` or ``schedule``.
    unit_kind
        Allocations: the placement level (``pool``, ``class`` or ``machine``); None when it follows the
        placement (``pool`` pooled, else ``class``).
    exact
        An exact method: it may claim ``optimal``, and its schedule runs every task.
    policy
        An online policy of ``fairpack simulate`` (its result says ``command: simulate``).
    takes
        Flat keys of the options it honours (``placement``, ``extra.horizon``, ...).
    placement
        Its default placement: ``auto`` (schedules pooled unless the instance has placement options;
        allocations pooled when all servers are alike) or ``servers`` (always on machines); ``""`` when it has
        no placement choice (allocations at a fixed level).
    fair_caps
        Every job is capped at its fair completion time ``C_k <= T_k`` (unless ``--no-fair-cap`` or given times).
    fair_report
        How ``T_k`` is reported beside each job: ``""`` not at all, ``reported`` (computed on the placement, not
        enforced: the DAG heuristics), ``servers`` (computed per machine, not enforced: ``locality-cp``).
    time_unit
        Exact DAG methods: ``slot`` (the instance's ``time.slot``) or ``tick`` (the unit recorded as ``tick``):
        their ``T_k`` come from the instance with durations and releases rounded up to it.
    stage_rule
        When a stage can never run under the policy: ``machine`` (no machine holds a task), ``slot`` (a task
        larger than a slot: ``slots``), ``first-option`` (only its first placement option: ``hard-only``).
    gangs
        The policy places gang options (a stage may run as a gang).
    choices_on_machines
        Instances with placement options, and the utility objective, are solved on machines whatever the
        placement (``spacetime``'s choice model).
    stated
        Flat options the caller states (the CLI's flags); the file must agree with them, and a loosening
        option applies only when stated.
    """

    method: str
    kind: str
    unit_kind: UnitKind | None = None
    exact: bool = False
    policy: bool = False
    takes: frozenset[str] = frozenset()
    placement: str = ""
    fair_caps: bool = False
    fair_report: str = ""
    time_unit: str = ""
    stage_rule: str = "machine"
    gangs: bool = False
    choices_on_machines: bool = False
    stated: Mapping[str, Any] = field(default_factory=dict)
