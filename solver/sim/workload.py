"""What a simulation runs: task groups (a job's stages, or a tenant's backlog) as flat arrays.

A *group* is a set of identical tasks that become runnable together: a stage of a DAG job (a trace row is a
one-stage job), or a tenant's endless backlog (the hierarchical and static-tenant simulations). Groups are
numbered globally, jobs in instance order; every group belongs to one job and one tenant (queue).

* Jobs come from ``Instance.jobs`` (with releases; traces are read into jobs by ``models.traces``); a job's
  ``tenant`` names its queue (empty: the job is its own tenant).
* Backlogs come from ``Instance.tenants``: one group per tenant, ``count = inf``, at most ``tasks`` (the
  tenant's cap) running at once, durations fixed or drawn from an exponential distribution when launched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, overload

import numpy as np

from fairpack.models.dag import longest_paths
from fairpack.models.diagnose import placement_fits
from fairpack.models.stages import stage_table
from fairpack.models.types import BoolArray, FloatArray, Instance, InstanceError, IntArray
from fairpack.solver.registry import policies


@dataclass(frozen=True)
class GroupOptions:
    """A group's placement options on the tracked machines (``Stage.options``; ``placement='servers'``).

    Attributes
    ----------
    duration : (options,) task duration under each option
    machines : (options, machines) the machines each option may use (its selector matches, one task fits)
    group : (options, machines) a gang option's label group of every machine (``-1``: no gang, or unusable)
    gang : (options,) whether the option is a gang
    demand : (options, resources) one task's demand under each option (its own ``demand``, else the stage's)
    own_demand : whether some option's demand differs from the stage's (then the engine sizes every launch,
        fit test and placement of the group by the option a task runs under)
    """

    duration: FloatArray
    machines: BoolArray
    group: IntArray
    gang: BoolArray
    demand: FloatArray
    own_demand: bool = False

    @property
    def count(self) -> int:
        return int(self.duration.size)

    def landing(self) -> BoolArray:
        """Machines some task-by-task (non-gang) option may use: where an option-unaware policy may place."""
        plain = self.machines[~self.gang]
        return np.asarray(plain.any(axis=0), dtype=bool) if plain.size else np.zeros(self.machines.shape[1], bool)

    def landed(self, machine: int, room: FloatArray | None = None) -> int:
        """The option a task placed on ``machine`` by an option-unaware policy runs under: the first non-gang
        option whose machines include it (``-1``: none). With options of their own demand, ``room`` (the
        machine's free room plus the fit slack) is given and the option is the first such one whose demand
        fits it now: a task lands under what fits where it lands."""
        for option in range(self.count):
            usable = not self.gang[option] and self.machines[option, machine]
            if usable and (room is None or not self.own_demand or _fits_room(self.demand[option], room)):
                return option
        return -1

    def landing_now(self, room: FloatArray) -> IntArray:
        """Per machine, the option a task landing there now runs under (``room``: every machine's free room plus
        the fit slack, ``(machines, resources)``): the first non-gang option that may use the machine and whose
        own demand fits its room (``-1``: none)."""
        chosen = np.full(self.machines.shape[1], -1, dtype=np.int64)
        for option in range(self.count):
            if self.gang[option]:
                continue
            need = self.demand[option]
            fits = np.all((need <= 0)[None, :] | (need[None, :] <= room), axis=1)
            chosen[(chosen < 0) & self.machines[option] & fits] = option
        return chosen

    @staticmethod
    def of(instance: Instance, stage: Any) -> GroupOptions:
        classes = instance.machine_class()
        demand = np.array([stage.demand_under(o) for o in range(len(stage.options))], dtype=np.float64)
        demand = demand.reshape(len(stage.options), -1)
        # Each option's machines hold one task under its own demand (the stage's, unless the option has one).
        fits = np.all(demand[:, None, :] <= instance.capacity[None, :, :] * (1 + 1e-12), axis=2)
        machines = np.array([[option.matches(s.labels) for s in instance.servers] for option in stage.options])
        machines = (machines & fits)[:, classes]
        group = np.full(machines.shape, -1, dtype=np.int64)
        for o, option in enumerate(stage.options):
            if option.same:
                values = [s.label(option.same) for s in instance.servers]
                names = sorted({v for v in values if v is not None})
                per_class = np.array([names.index(v) if v is not None else -1 for v in values], dtype=np.int64)
                group[o] = np.where(machines[o], per_class[classes], -1)
        return GroupOptions(np.array([o.duration for o in stage.options], dtype=np.float64), machines, group,
                            np.array([bool(o.same) for o in stage.options], dtype=bool), demand,
                            bool(np.any(demand != np.asarray(stage.demand, dtype=np.float64)[None, :])))  # fmt: skip


def _fits_room(demand: FloatArray, room: FloatArray) -> bool:
    """One task of ``demand`` fits ``room`` (free room plus slack), checked on the resources it needs."""
    return all(d <= r for d, r in zip(demand.tolist(), room.tolist(), strict=True) if d > 0)


class JobStages(Sequence[IntArray]):
    """Every job's groups (``arange`` of its range), made when asked: no million small arrays up front."""

    def __init__(self, offset: IntArray) -> None:
        self.offset = offset

    def __len__(self) -> int:
        return int(self.offset.size) - 1

    @overload
    def __getitem__(self, k: int) -> IntArray: ...

    @overload
    def __getitem__(self, k: slice) -> Sequence[IntArray]: ...

    def __getitem__(self, k: int | slice) -> IntArray | Sequence[IntArray]:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        if not -len(self) <= k < len(self):
            raise IndexError(k)
        k %= len(self)
        return np.arange(self.offset[k], self.offset[k + 1])


@dataclass(frozen=True)
class Workload:
    """Every group of a simulation as arrays (global group numbering, jobs in instance order).

    Attributes
    ----------
    stage_job, stage_local : (groups,)
        The job of every group and its stage index within the job.
    count : (groups,) float
        Tasks of the group (``inf`` for a backlog).
    duration : (groups,)
        Task duration (the mean when ``exponential``).
    demand : (groups, resources)
    parents, children : per group, global group indices (barriers)
    job_stages : per job, its groups
    release, weight : (jobs,)
    job_tenant : (jobs,) index into ``tenants``
    tenants : tenant names; ``tenant_weight`` (tenants,); ``tenant_cap`` (tenants,) running-task cap
    capacity : (resources,) the cluster total
    tail : (groups,) longest path from the group's start to its job's end, including the group
    depth : (groups,) longest number of edges from a source group
    exponential : durations are drawn (mean ``duration``) when a task launches
    options : per group, its placement options on the machines (None: none, or a pooled run)
    kind : ``jobs`` (the instance's DAG jobs) or ``backlogs`` (its tenants' endless backlogs), the registry's
        ``WORKLOADS``: what a policy's record must declare it runs on
    """

    stage_job: IntArray
    stage_local: IntArray
    count: FloatArray
    duration: FloatArray
    demand: FloatArray
    parents: tuple[tuple[int, ...], ...]
    children: tuple[tuple[int, ...], ...]
    job_stages: Sequence[IntArray]
    release: FloatArray
    weight: FloatArray
    job_tenant: IntArray
    tenants: tuple[str, ...]
    tenant_weight: FloatArray
    tenant_cap: FloatArray
    capacity: FloatArray
    tail: FloatArray
    depth: IntArray
    exponential: bool = False
    options: tuple[GroupOptions | None, ...] = ()
    kind: str = "jobs"

    @staticmethod
    def of_jobs(instance: Instance, placement: str = "pooled") -> Workload:
        """The instance's DAG jobs; tenants are the jobs' ``tenant`` names (a job alone when empty).

        Raises ``InstanceError`` naming the first stage whose task fits no unit of ``placement``.
        """
        if not instance.jobs:
            raise InstanceError("a job simulation needs jobs", "jobs")
        placement_fits(instance, placement)
        # The stages as arrays (``models.stages``: one walk over the jobs, or none for a trace read in bulk), shared
        # read-only with the instance.
        table = stage_table(instance)
        groups = table.stages
        if table.edges.size:
            parents_of: list[list[int]] = [[] for _ in range(groups)]
            children: list[list[int]] = [[] for _ in range(groups)]
            for parent, child in table.edges.tolist():
                parents_of[child].append(parent)
                children[parent].append(child)
            parents = tuple(tuple(p) for p in parents_of)
            _, tail = longest_paths(parents, children, table.duration)
            depth = longest_paths(parents, children, np.ones(groups))[0].astype(np.int64)
            child_tuples = tuple(tuple(c) for c in children)
        else:  # no edge at all (a trace of one-stage jobs): every path is its own stage
            parents = child_tuples = ((),) * groups
            tail, depth = table.duration.copy(), np.zeros(groups, dtype=np.int64)
        # Queues the instance also declares as tenants take their weight and running-task cap from there
        # (a trace replayed on a flat instance); any other queue has weight 1 and no cap.
        queues = instance.queues()
        tenant_cap = np.array([math.floor(c) if math.isfinite(c) else np.inf for c in queues.cap.tolist()])
        never = np.flatnonzero(tenant_cap < 1)
        if never.size:  # its jobs could never start a task: refused, not left unfinished
            q = int(never[0])
            raise InstanceError(f"queue {queues.names[q]!r} has jobs but a cap of {queues.cap[q]:g} running tasks, "
                                "below one whole task: they could never run", queues.cap_field(q, instance.tenants))
        if instance.has_options and placement == "servers":
            stages = [stage for job in instance.jobs for stage in job.stages]
            options = tuple(GroupOptions.of(instance, stage) if stage.options else None for stage in stages)
        else:
            options = (None,) * groups
        return Workload(
            stage_job=table.job,
            stage_local=table.local,
            count=table.tasks.astype(np.float64),
            duration=table.duration,
            demand=table.demand,
            parents=parents,
            children=child_tuples,
            job_stages=JobStages(table.offset),
            release=table.release,
            weight=table.weight,
            job_tenant=queues.of_job,
            tenants=queues.names,
            tenant_weight=queues.weight,
            tenant_cap=tenant_cap,
            capacity=np.asarray(instance.total_capacity, dtype=np.float64),
            tail=tail,
            depth=depth,
            options=options,
        )

    @staticmethod
    def of_backlogs(instance: Instance, means: FloatArray, exponential: bool) -> Workload:
        """One endless group per tenant: at most ``floor(tasks)`` running at once, task length ``means[i]``."""
        n = len(instance.tenants)
        if n == 0:
            raise InstanceError("a tenant simulation needs tenants", "tenants")
        arange = np.arange(n, dtype=np.int64)
        return Workload(
            stage_job=arange,
            stage_local=np.zeros(n, dtype=np.int64),
            count=np.full(n, np.inf),
            duration=np.asarray(means, dtype=np.float64),
            demand=np.asarray(instance.demand, dtype=np.float64),
            parents=tuple(() for _ in range(n)),
            children=tuple(() for _ in range(n)),
            job_stages=tuple(np.array([i], dtype=np.int64) for i in range(n)),
            release=np.zeros(n),
            weight=np.asarray(instance.weights, dtype=np.float64),
            job_tenant=arange,
            tenants=tuple(t.name for t in instance.tenants),
            tenant_weight=np.asarray(instance.weights, dtype=np.float64),
            tenant_cap=np.floor(instance.task_caps),
            capacity=np.asarray(instance.total_capacity, dtype=np.float64),
            tail=np.asarray(means, dtype=np.float64),
            depth=np.zeros(n, dtype=np.int64),
            exponential=exponential,
            kind="backlogs",
        )

    @cached_property
    def capped(self) -> bool:
        """Whether some queue's running-task cap can hold it back: a cap below the queue's tasks (every finite
        cap of a backlog). The simulator's cap rule runs only then; a path that does not model caps (a compiled
        simulator) must leave such workloads to the engine."""
        totals = np.zeros(self.num_tenants)
        np.add.at(totals, self.job_tenant[self.stage_job], self.count)
        return bool(np.any(self.tenant_cap < totals))

    @cached_property
    def has_options(self) -> bool:
        # Cached: the engine asks at every launch, and the scan is over every group (a million on a Google day).
        return any(entry is not None for entry in self.options)

    @cached_property
    def has_option_demands(self) -> bool:
        """Whether some group's options carry demands of their own (the engine then sizes by option)."""
        return any(entry is not None and entry.own_demand for entry in self.options)

    def demand_of(self, g: int, option: int) -> FloatArray:
        """One task's demand of group ``g`` under ``option`` (``-1``: none; the group's demand)."""
        entry = self.options[g] if option >= 0 and self.has_options else None
        return self.demand[g] if entry is None else entry.demand[option]

    def gang_only(self) -> list[int]:
        """Groups whose every option is a gang: an option-unaware policy cannot run them."""
        return [g for g, entry in enumerate(self.options) if entry is not None and bool(entry.gang.all())]

    def refuse_gangs(self, instance: Instance, policy: str) -> None:
        """Raise ``InstanceError`` naming the first stage an option-unaware ``policy`` cannot run (gangs only), and
        the policies that can (those whose registry record chooses among placement options, gangs included)."""
        found = self.gang_only()
        if found:
            g = found[0]
            k, s = int(self.stage_job[g]), int(self.stage_local[g])
            able = ", ".join(name for name, record in policies().items() if record.placement_options == "all")
            raise InstanceError(f"stage {instance.jobs[k].stages[s].name!r} runs only as a gang, which {policy} "
                                f"cannot place (it places task by task); the soft-constraint policies can ({able})",
                                f"jobs[{k}].stages[{s}].options")  # fmt: skip

    @property
    def num_jobs(self) -> int:
        return int(self.release.size)

    @property
    def num_stages(self) -> int:
        return int(self.count.size)

    @property
    def num_tenants(self) -> int:
        return len(self.tenants)

    @property
    def finite(self) -> bool:
        return bool(np.all(np.isfinite(self.count)))

    def normalised_demand(self) -> FloatArray:
        """Demand per task as a fraction of the cluster (0 for resources the cluster lacks)."""
        cap = self.capacity
        return np.divide(self.demand, cap, out=np.zeros_like(self.demand), where=cap > 0)

    def work(self) -> FloatArray:
        """Aggregate resource-time of every job, normalised by capacity: sum of tasks*duration*demand/C."""
        per_stage = (self.count * self.duration)[:, None] * self.normalised_demand()
        total = np.zeros((self.num_jobs, self.capacity.size))
        np.add.at(total, self.stage_job, per_stage)
        return total

    def critical_path(self) -> FloatArray:
        """Per job, its length alone on an infinite cluster (the longest path through its DAG)."""
        longest = np.zeros(self.num_jobs)
        np.maximum.at(longest, self.stage_job, self.tail)
        return longest

    def sources(self) -> BoolArray:
        return np.array([not p for p in self.parents], dtype=bool)
