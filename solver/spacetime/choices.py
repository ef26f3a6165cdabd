"""Where and for how long every task may run: the per-task choice of (machine group, duration).

One table serves everything that makes a task's duration depend on where it runs. Every task gets a list of
*alternatives* ``(unit, option, duration, group)``:

* a stage without options: every unit one task fits, at the stage's duration (option ``-1``);
* a stage with placement options (:class:`fairpack.models.types.Option`): for each option, the units whose labels hold
  its selector and that fit one task, at the option's duration; a gang option also names the *group* of the
  unit (its value of the gang's label key, numbered over the whole instance), which every task of the gang
  shares;
* tasks reading input blocks (data locality, ``Instance.data``) on machines: the duration times the locality
  factor of the machine (``models.locality``), so node-, rack- and remote placements are three alternatives
  with three durations -- the model the locality yardstick (:mod:`fairpack.solver.spacetime.locality_cp`) solves.

A *unit* is what the models put tasks on (:class:`Units`): single machines (exact), whole server classes
(their machines aggregated: a relaxation the online planner uses, whose plan is placed on machines at
commit time), or the pooled cluster. A class holds machines with one set of labels, so selectors and gang
groups are the same for a machine and for its class.

Symmetry: identical machines of a class are interchangeable for tasks without input blocks, so (as in
:mod:`fairpack.solver.spacetime.cp`) the ``q``-th task (flat order) that may use a class keeps only that class's
machines ``0 .. q``; relabelling machines by their first task maps any schedule to one that does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairpack.models.locality import factors, levels, task_blocks
from fairpack.models.types import BoolArray, FloatArray, Instance, IntArray, Option

#: Unit kinds: one machine each, one server class each (aggregated), or the whole cluster as one unit.
UNIT_KINDS = ("machine", "class", "pool")


@dataclass(frozen=True)
class Units:
    """What tasks are placed on, one row per unit.

    Attributes
    ----------
    kind : ``machine``, ``class`` or ``pool``
    capacity : (units, resources) what the unit holds at once (a class: count x machine capacity)
    machine_capacity : (units, resources) one machine of the unit (a task must fit it whole)
    size : (units,) machines in the unit
    server, number : (units,) server class and machine number within it (``-1``: not one machine)
    labels : per unit, its machines' labels
    """

    kind: str
    capacity: FloatArray
    machine_capacity: FloatArray
    size: IntArray
    server: IntArray
    number: IntArray
    labels: tuple[tuple[tuple[str, str], ...], ...]

    @staticmethod
    def of(instance: Instance, kind: str) -> Units:
        if kind == "machine":
            server = instance.machine_class().astype(np.int64)
            number = np.arange(server.size) - np.searchsorted(server, server)
            capacity = instance.capacity[server]
            return Units(kind, capacity, capacity, np.ones(server.size, dtype=np.int64), server, number,
                         tuple(instance.servers[c].labels for c in server.tolist()))  # fmt: skip
        if kind == "class":
            count = instance.counts.astype(np.int64)
            server = np.arange(count.size, dtype=np.int64)
            return Units(kind, instance.capacity * count[:, None], instance.capacity, count, server,
                         np.full(count.size, -1, dtype=np.int64),
                         tuple(s.labels for s in instance.servers))  # fmt: skip
        if kind == "pool":
            total = instance.total_capacity[None, :]
            one = np.ones(1, dtype=np.int64)
            return Units(kind, total, total, one * int(instance.counts.sum()), -one, -one, ((),))
        raise ValueError(f"unit kind must be one of {', '.join(UNIT_KINDS)}, not {kind!r}")

    @property
    def count(self) -> int:
        return int(self.size.size)


@dataclass(frozen=True)
class Choices:
    """Every task's alternatives, sorted by task (CSR: task ``t``'s are ``first[t]:first[t + 1]``).

    ``task``, ``unit``, ``option`` (index into the stage's options, ``-1`` none), ``duration`` (real time)
    and ``group`` (the gang's label group, ``-1`` when the option is no gang) are per alternative;
    ``gang_key`` names the label key of every group.
    """

    task: IntArray
    unit: IntArray
    option: IntArray
    duration: FloatArray
    group: IntArray
    first: IntArray
    gang_key: tuple[str, ...]

    @property
    def size(self) -> int:
        return int(self.task.size)

    @property
    def gang(self) -> BoolArray:
        return self.group >= 0

    def min_duration(self) -> FloatArray:
        """Per task, its shortest alternative."""
        return np.minimum.reduceat(self.duration, self.first[:-1]) if self.size else np.zeros(0)

    def max_duration(self) -> FloatArray:
        """Per task, its longest alternative."""
        return np.maximum.reduceat(self.duration, self.first[:-1]) if self.size else np.zeros(0)


@dataclass(frozen=True)
class _StageRows:
    """One stage's alternatives for one of its tasks: units, options, durations, groups."""

    unit: IntArray
    option: IntArray
    duration: FloatArray
    group: IntArray


def _merge(parts: list[_StageRows]) -> _StageRows:
    """The rows of ``parts`` one after another."""
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return _StageRows(empty, empty, np.zeros(0), empty)
    return _StageRows(np.concatenate([p.unit for p in parts]), np.concatenate([p.option for p in parts]),
                      np.concatenate([p.duration for p in parts]), np.concatenate([p.group for p in parts]))


def _fits(units: Units, demand: FloatArray) -> BoolArray:
    return np.all(demand[None, :] <= units.machine_capacity * (1 + 1e-12), axis=1)


def _option_units(units: Units, option: Option) -> BoolArray:
    return np.array([option.matches(labels) for labels in units.labels], dtype=bool)


def _stage_rows(instance: Instance, units: Units, groups: dict[tuple[str, str], int]) -> list[_StageRows]:
    """Step 1: per stage, the alternatives of one of its tasks (options in preference order)."""
    rows = []
    for job in instance.jobs:
        for stage in job.stages:
            fit = _fits(units, stage.demand)
            if not stage.options:
                where = np.flatnonzero(fit)
                rows.append(_StageRows(where, np.full(where.size, -1, dtype=np.int64),
                                       np.full(where.size, stage.duration), np.full(where.size, -1, dtype=np.int64)))
                continue
            parts = []
            for o, option in enumerate(stage.options):
                own = fit if option.demand is None else _fits(units, option.demand)  # its own demand must fit
                where = np.flatnonzero(own & _option_units(units, option))
                group = np.full(where.size, -1, dtype=np.int64)
                if option.same:
                    keys = [(option.same, dict(units.labels[u])[option.same]) for u in where.tolist()]
                    group = np.array([groups.setdefault(key, len(groups)) for key in keys], dtype=np.int64)
                parts.append(_StageRows(where, np.full(where.size, o, dtype=np.int64),
                                        np.full(where.size, option.duration), group))  # fmt: skip
            rows.append(_merge(parts))
    return rows


def _expand(rows: list[_StageRows], stage_tasks: IntArray) -> tuple[IntArray, _StageRows]:
    """Step 2: every task of every stage gets its stage's alternatives (task numbers flat, stage by stage)."""
    first_task = np.concatenate([[0], np.cumsum(stage_tasks)])[:-1]
    tasks, parts = [], []
    for g, row in enumerate(rows):
        n = int(stage_tasks[g])
        tasks.append(np.repeat(first_task[g] + np.arange(n, dtype=np.int64), row.unit.size))
        parts.append(_StageRows(np.tile(row.unit, n), np.tile(row.option, n), np.tile(row.duration, n),
                                np.tile(row.group, n)))  # fmt: skip
    merged = _merge(parts)
    return (np.concatenate(tasks) if tasks else np.zeros(0, np.int64)), merged


def _with_locality(instance: Instance, units: Units, task: IntArray, rows: _StageRows) -> FloatArray:
    """Step 3: durations times the locality factor of each machine for tasks reading an input block."""
    if instance.data is None or units.kind != "machine":
        return rows.duration
    blocks, _ = task_blocks(instance)
    return rows.duration * factors(instance, levels(instance, blocks[task], rows.unit))


def _symmetric(instance: Instance, units: Units, task: IntArray, unit: IntArray, tasks: int) -> BoolArray:
    """Step 4: the alternatives the machine-symmetry rule keeps (all of them unless units are machines and no
    task reads input blocks)."""
    if units.kind != "machine" or instance.data is not None or task.size == 0:
        return np.ones(task.size, dtype=bool)
    classes = int(units.server.max()) + 1
    uses = np.zeros((tasks, classes), dtype=bool)
    uses[task, units.server[unit]] = True
    earlier = np.cumsum(uses, axis=0) - uses  # tasks before this one that may use the class
    return np.asarray(units.number[unit] <= earlier[task, units.server[unit]])


def task_choices(instance: Instance, stage_tasks: IntArray, units: Units, symmetry: bool = True) -> Choices:
    """Every task's alternatives on ``units`` (module docstring), built in named steps.

    ``stage_tasks`` is the task count of every stage (global stage order); ``symmetry`` applies the
    machine-symmetry rule (off when machines differ for another reason, e.g. some are busy).
    """
    groups: dict[tuple[str, str], int] = {}
    rows = _stage_rows(instance, units, groups)
    task, merged = _expand(rows, stage_tasks)
    duration = _with_locality(instance, units, task, merged)
    tasks = int(stage_tasks.sum())
    keep = _symmetric(instance, units, task, merged.unit, tasks) if symmetry else np.ones(task.size, dtype=bool)
    first = np.searchsorted(task[keep], np.arange(tasks + 1)).astype(np.int64)
    keys = tuple(key for (key, _), _ in sorted(groups.items(), key=lambda item: item[1]))
    return Choices(task[keep], merged.unit[keep], merged.option[keep], duration[keep], merged.group[keep], first,
                   keys)  # fmt: skip
