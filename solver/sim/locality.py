"""Pending tasks indexed by where their input lives: the most local task of a group for a machine, fast.

A task reads one block (its stage's ``input[index]``); the block has replica machines (``Instance.data``).
For every group the index keeps, Hadoop-style, the pending tasks with a replica on each machine, the
pending tasks with a replica on each rack and all pending tasks, each a stack whose launched entries are
dropped lazily. :meth:`TaskData.best` is the pending task a slot on a machine should run: node-local if
there is one, else rack-local, else any (then remote). Its duration is the stage's times the level's
factor. Groups without input keep the engine's plain path (contiguous indices, factor 1).
"""

from __future__ import annotations

from fairpack.models.types import Instance
from fairpack.solver.sim.workload import Workload

NODE, RACK, REMOTE = 0, 1, 2


class TaskData:
    """Where every pending task's input block lives (see the module docstring)."""

    def __init__(self, instance: Instance, jobs: Workload) -> None:
        data = instance.data
        assert data is not None
        self.factors = tuple(float(f) for f in data.factors)
        self.rack = instance.machine_racks().tolist()
        index = data.index()
        stages = [stage for job in instance.jobs for stage in job.stages]
        if len(stages) != jobs.num_stages:
            raise ValueError("the workload's groups are not the instance's stages")
        self.has_input = [bool(stage.input) for stage in stages]
        self.replicas: list[list[tuple[int, ...]]] = []  # per group, per task: replica machines
        self.node: list[dict[int, list[int]]] = []
        self.on_rack: list[dict[int, list[int]]] = []
        self.any: list[list[int]] = []
        self.pending: list[bytearray] = []
        for stage in stages:
            replicas = [data.replicas[index[name]] for name in stage.input]
            node: dict[int, list[int]] = {}
            on_rack: dict[int, list[int]] = {}
            for task in reversed(range(len(replicas))):  # stacks: the lowest index on top
                racks = set()
                for machine in replicas[task]:
                    node.setdefault(machine, []).append(task)
                    if self.rack[machine] >= 0:
                        racks.add(self.rack[machine])
                for rack in racks:
                    on_rack.setdefault(rack, []).append(task)
            self.replicas.append(replicas)
            self.node.append(node)
            self.on_rack.append(on_rack)
            self.any.append(list(reversed(range(len(replicas)))))
            self.pending.append(bytearray(b"\x01" * len(replicas)))

    def _top(self, stack: list[int] | None, pending: bytearray) -> int:
        if not stack:
            return -1
        while stack and not pending[stack[-1]]:
            stack.pop()
        return stack[-1] if stack else -1

    def best(self, group: int, machine: int) -> tuple[int, int]:
        """``(task index, level)`` of the most local pending task of ``group`` for ``machine`` (``-1``: none)."""
        pending = self.pending[group]
        task = self._top(self.node[group].get(machine), pending)
        if task >= 0:
            return task, NODE
        rack = self.rack[machine]
        if rack >= 0:
            task = self._top(self.on_rack[group].get(rack), pending)
            if task >= 0:
                return task, RACK
        return self._top(self.any[group], pending), REMOTE

    def level(self, group: int, machine: int) -> int:
        """The best level a pending task of ``group`` reaches on ``machine`` (``NODE`` for a group without
        input: it runs as fast anywhere; ``-1`` when nothing is pending)."""
        if not self.has_input[group]:
            return NODE
        task, level = self.best(group, machine)
        return level if task >= 0 else -1

    def take(self, group: int, machine: int, count: int) -> list[tuple[int, int]]:
        """Mark the ``count`` most local pending tasks for ``machine`` launched; their ``(index, level)``."""
        chosen = []
        for _ in range(count):
            task, level = self.best(group, machine)
            self.pending[group][task] = 0
            chosen.append((task, level))
        return chosen
