"""Where a task ran relative to its input block's replicas, computed from the instance alone.

A task of a stage with ``input`` reads block ``input[index]``. On a machine holding a replica it is
``node``-local (level 0); on another machine of a rack holding one (the servers' ``rack`` label) it is
``rack``-local (1); anywhere else ``remote`` (2). Its duration is the stage's times the level's factor
(``Instance.data.factors``). Tasks of stages without input, and unplaced tasks, have level ``-1`` and
factor 1. The checker and the JSON view use this; the simulator keeps its own index (``solver.sim.locality``).
"""

from __future__ import annotations

import numpy as np

from fairpack.models.types import LOCALITY_LEVELS, FloatArray, Instance, IntArray

#: Level names, indexed by level.
LEVEL_NAMES = LOCALITY_LEVELS

#: Level of a task without input data (or not placed on a machine): it runs its duration anywhere.
NO_INPUT = -1


def task_blocks(instance: Instance) -> tuple[IntArray, IntArray]:
    """Flat block index of every task (``-1``: none) and every flat stage's first task position."""
    stages = [stage for job in instance.jobs for stage in job.stages]
    counts = np.array([stage.tasks for stage in stages], dtype=np.int64)
    offset = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    blocks = np.full(int(offset[-1]), NO_INPUT, dtype=np.int64)
    if instance.data is not None:
        index = instance.data.index()
        for g, stage in enumerate(stages):
            if stage.input:
                blocks[offset[g]:offset[g + 1]] = [index[name] for name in stage.input]
    return blocks, offset


def levels(instance: Instance, block: IntArray, machine: IntArray) -> IntArray:
    """Locality level of tasks reading ``block`` (``-1``: none) run on global machine ``machine`` (``-1``: unplaced)."""
    block = np.asarray(block, dtype=np.int64)
    machine = np.asarray(machine, dtype=np.int64)
    result = np.full(block.shape, NO_INPUT, dtype=np.int64)
    data = instance.data
    known = (block >= 0) & (machine >= 0)
    if data is None or not known.any():
        return result
    machines = int(instance.counts.sum())
    racks = instance.machine_racks()
    n_racks = int(racks.max(initial=-1)) + 1
    owner = np.repeat(np.arange(len(data.replicas), dtype=np.int64), [len(r) for r in data.replicas])
    holders = np.fromiter((m for r in data.replicas for m in r), dtype=np.int64, count=owner.size)
    node_codes = owner * machines + holders
    holder_rack = racks[holders]
    rack_codes = owner[holder_rack >= 0] * max(n_racks, 1) + holder_rack[holder_rack >= 0]
    b, m = block[known], machine[known]
    level = np.full(b.shape, 2, dtype=np.int64)
    task_rack = racks[m]
    on_rack = (task_rack >= 0) & np.isin(b * max(n_racks, 1) + task_rack, rack_codes)
    level[on_rack] = 1
    level[np.isin(b * machines + m, node_codes)] = 0
    result[known] = level
    return result


def factors(instance: Instance, level: IntArray) -> FloatArray:
    """Duration multiplier of every task of level ``level`` (1 for ``-1``)."""
    level = np.asarray(level, dtype=np.int64)
    if instance.data is None:
        return np.ones(level.shape)
    table = np.array([*instance.data.factors, 1.0])  # index -1 picks the last entry: no input, factor 1
    return np.asarray(table[level])


def global_machines(instance: Instance, server: IntArray, machine: IntArray) -> IntArray:
    """Global machine index of (server class, number) pairs; ``-1`` where the pair names no machine."""
    server = np.asarray(server, dtype=np.int64)
    machine = np.asarray(machine, dtype=np.int64)
    counts = instance.counts
    first = np.concatenate([[0], np.cumsum(counts)])[:-1]
    safe = np.clip(server, 0, counts.size - 1)
    valid = (server >= 0) & (server < counts.size) & (machine >= 0) & (machine < counts[safe])
    return np.where(valid, first[safe] + machine, NO_INPUT)
