"""Every online policy is built here, from its registry record, and every refusal comes from that record.

A policy's record (``solver/sim/register.py``) names its factory and declares what the policy can run:
``workloads`` (DAG jobs, tenants' backlogs or both), ``placement_options`` (``none``, ``task`` or ``all``)
and ``needs_instance``. :func:`build` checks a workload against those facts and calls the factory; no policy
name is tested anywhere else, so a new policy is one record (and its factory).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fairpack.models.types import Instance
from fairpack.solver.registry import PLACEMENT_OPTIONS, Method, OptionError, SolveOptions, policies
from fairpack.solver.sim.engine import BasePolicy
from fairpack.solver.sim.workload import Workload

#: How a refusal names an instance that holds only the other workload.
_INSTEAD = {"jobs": "this instance has jobs",
            "backlogs": "this instance has tenants only (give --trace or jobs)"}  # fmt: skip
#: How a refusal describes what the policy does run on (its only workload).
_RUNS_ON = {"jobs": "schedules DAG jobs",
            "backlogs": "simulates tenants' endless backlogs (a hierarchy or tenants, no jobs)"}  # fmt: skip


def refuse_workload(policy: Method, workload: str) -> None:
    """Refuse ``workload`` (a key of ``WORKLOADS``) unless ``policy`` declares it runs on it."""
    if workload not in policy.workloads:
        runs_on = " and ".join(_RUNS_ON[w] for w in sorted(policy.workloads))
        raise OptionError(f"{policy.name} {runs_on}; {_INSTEAD[workload]}", "policy")


def _names(records: Iterable[Method]) -> str:
    names = [record.name for record in records]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def refuse_placement_options(policy: Method) -> None:
    """Refuse a workload with placement options for a policy that declares it does not understand them."""
    if policy.placement_options == "none":
        able = {kind: _names(p for p in policies().values() if p.placement_options == kind)
                for kind in PLACEMENT_OPTIONS if kind != "none"}  # fmt: skip
        raise OptionError(f"{policy.name} does not understand placement options; {able['task']} place where a "
                          f"task-by-task option allows, and {able['all']} choose among them", "policy")  # fmt: skip


def policy_settings(policy: Method, options: SolveOptions) -> dict[str, Any]:
    """The settings a policy's factory takes: ``options.extra``, ``seed`` when one is given, and ``slots`` when
    the policy honours ``--slots``."""
    extra = dict(options.extra)
    if options.seed is not None:
        extra["seed"] = options.seed
    if "slots" in policy.options:
        extra["slots"] = options.slots
    return extra


def build(policy: Method, workload: Workload, instance: Instance | None, values: dict[str, Any]) -> BasePolicy:
    """The policy object, made by the record's factory once the record's facts admit ``workload``.

    Raises
    ------
    OptionError
        The workload is not one the policy runs on, it has placement options the policy does not understand,
        or the policy reads the instance and none is given.
    InstanceError
        A stage runs only as a gang and the policy places task by task.
    """
    refuse_workload(policy, workload.kind)
    if policy.needs_instance and instance is None:
        raise OptionError(f"{policy.name} reads {policy.needs_instance}: build it with the instance", "policy")
    if workload.has_options:
        refuse_placement_options(policy)
    if policy.placement_options == "task" and instance is not None:
        workload.refuse_gangs(instance, policy.name)
    made: BasePolicy = policy.builder()(policy.name, workload, instance, values)
    return made

