"""Large neighbourhood search for ``spacetime-cp``: re-optimise a part of the incumbent with short CP-SAT solves.

One CP-SAT worker searching the whole model improves a list schedule slowly once the first solutions are
found; re-solving a small part of the schedule while the rest keeps its shape finds the same improvements
in a few milliseconds each (J60: 102 -> 85 in 40 sub-solves of 15-50 ms).

Neighbourhood (the "precedence" relaxation of Godard, Laborie and Nuijten, ICAPS 2005)
-------------------------------------------------------------------------------------
* A *resource flow* of the incumbent: per resource, every task receives its demand from tasks that ended
  by its start (the most recently ended first) or from the initial capacity. Every flow arc ``a -> b``
  (``a`` ends before ``b`` starts and hands it some capacity) is an ordering the incumbent follows, and any
  schedule that keeps all of them is resource-feasible.
* Each step frees a set of tasks (the ``size`` tasks starting nearest a random time, or ``size`` random
  tasks) and keeps every flow arc between two tasks that are not freed as a precedence. The kept tasks
  can still move (earlier, when freed tasks leave room), the freed ones are placed anew; the cumulative
  constraints stay, so every sub-solution is feasible.
* The sub-model is a clone of the full model with those arcs and ``objective <= incumbent`` added, hinted
  with the incumbent. An equal solution is accepted too (it moves the search on a plateau).
* ``size`` adapts: it grows when a sub-solve proves there is nothing better, and shrinks when it times out.

Only pooled placement is relaxed this way (one machine; per machine a flow would also have to fix each
kept task's machine), and only models small enough to clone every step (``LNS_MAX_TASKS``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairpack.models.types import BoolArray, IntArray
from fairpack.solver import interrupt
from fairpack.solver.spacetime import sat

#: Above this many tasks the model is too large to clone and re-solve many times in a few seconds.
LNS_MAX_TASKS = 2_000
#: Seconds one sub-solve may take (most prove their neighbourhood optimal in 10-50 ms on J60).
SUB_SOLVE_S = 0.25
#: Tasks freed by the first step, as a share of all tasks (then adapted); never fewer than MIN_FREE.
INITIAL_FREE_SHARE = 0.3
MIN_FREE = 4
#: Steps in a row without a strictly better schedule after which the search gives its time back (to the
#: proof that follows it): on J30 the optimum is usually found within a few steps, and the proof is what
#: is left to do. At 10 s and one worker on the 13 J30 instances open at 10 s (groups 13, 29, 45), 30 stalled
#: steps gave 4 proven and 10 optima found, 8 gave 7 and 12 in the same run; J60/J120 makespans unchanged
#: on 8 instances (benchmarks/results/psplib_search.md).
STALL_STEPS = 8


def resource_flow_arcs(start: IntArray, duration: IntArray, demand: IntArray, capacity: IntArray) -> IntArray:
    """Arcs ``(a, b)`` of a resource flow of a feasible pooled schedule (see the module docstring).

    Parameters
    ----------
    start, duration : int arrays (tasks,)
    demand : int array (tasks, resources)
    capacity : int array (resources,)

    Returns
    -------
    int array (arcs, 2), unique ``(giver, receiver)`` pairs.
    """
    end = start + duration
    order = np.lexsort((end, start))
    arcs: set[tuple[int, int]] = set()
    for r in range(capacity.size):
        users = [int(t) for t in order if demand[t, r] > 0 and duration[t] > 0]
        free_initial = int(capacity[r])
        given: list[list[int]] = []  # [end, task, amount still to hand on], in order of start
        for task in users:
            need = int(demand[task, r])
            ready = sorted((g for g in given if g[0] <= start[task] and g[2] > 0), key=lambda g: -g[0])
            for giver in ready:
                take = min(need, giver[2])
                giver[2] -= take
                need -= take
                arcs.add((giver[1], task))
                if need == 0:
                    break
            free_initial -= need  # the rest comes from the initial capacity (feasible schedules never overdraw)
            given.append([int(end[task]), task, int(demand[task, r])])
    return np.array(sorted(arcs), dtype=np.int64).reshape(-1, 2)


@dataclass
class LnsStats:
    steps: int = 0
    improved: int = 0
    free: int = 0  # tasks freed in the last step
    proven: bool = False  # a step freed every task and proved that nothing is better


def _neighbourhood(rng: np.random.Generator, start: IntArray, size: int) -> BoolArray:
    """Tasks to free: the ``size`` starting nearest a random time, or ``size`` random ones."""
    n = start.size
    freed = np.zeros(n, dtype=bool)
    if rng.random() < 0.5:
        moment = rng.integers(0, int(start.max(initial=0)) + 1)
        distance = np.abs(start - moment) + rng.random(n)  # random tie-break
        freed[np.argsort(distance)[:size]] = True
    else:
        freed[rng.choice(n, size=min(size, n), replace=False)] = True
    return freed


def improve(
    model: Any,
    start_index: list[int],
    duration: IntArray,
    demand: IntArray,
    capacity: IntArray,
    incumbent: IntArray,
    value: int,
    until: float,
    seed: int,
    workers: int = 1,
    linearization: int | None = None,
    on_step: Callable[[int], None] | None = None,
) -> tuple[IntArray, int, LnsStats]:
    """Improve ``incumbent`` (task starts, objective ``value`` in the model's integer units) until ``until``.

    ``model`` is the full CP model (``ortools.sat.python.cp_model.CpModel``, not changed), ``start_index``
    the proto index of every task's start variable; ``linearization`` CP-SAT's ``linearization_level`` for
    the sub-solves (None: its default); ``on_step`` is told the incumbent's value after every step (progress
    lines). Returns the best starts, their value and statistics.
    """
    from ortools.sat.python import cp_model

    rng = np.random.default_rng(seed)
    stats = LnsStats()
    n = incumbent.size
    size = max(MIN_FREE, min(n, round(INITIAL_FREE_SHARE * n)))
    index = np.asarray(start_index, dtype=np.int64)
    top = np.iinfo(np.int64).max // 4
    stalled = 0
    while time.perf_counter() < until - 0.01 and n > 0 and stalled < STALL_STEPS and not interrupt.requested():
        stats.steps += 1
        arcs = resource_flow_arcs(incumbent, duration, demand, capacity)
        freed = _neighbourhood(rng, incumbent, size)
        kept = arcs[~freed[arcs[:, 0]] & ~freed[arcs[:, 1]]]
        sub = model.clone()
        proto = sub.proto
        for giver, receiver in kept.tolist():
            row = proto.constraints.add().linear
            row.vars.extend([int(index[receiver]), int(index[giver])])
            row.coeffs.extend([1, -1])
            row.domain.extend([int(duration[giver]), top])
        proto.objective.domain.extend([-top, int(value)])  # the full model has no objective domain of its own
        sub.clear_hints()
        proto.solution_hint.vars.extend(index.tolist())
        proto.solution_hint.values.extend(incumbent.tolist())
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = max(0.01, min(SUB_SOLVE_S, until - time.perf_counter()))
        solver.parameters.num_workers = workers
        solver.parameters.random_seed = seed + stats.steps
        if linearization is not None:
            solver.parameters.linearization_level = linearization
        code = sat.run(solver, sub)
        stats.free = int(freed.sum())
        stalled += 1
        if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            found = round(solver.objective_value)
            if found < value:
                stats.improved += 1
                stalled = 0
            if found <= value:
                incumbent = np.asarray(solver.response_proto.solution, dtype=np.int64)[index]
                value = found
        if on_step is not None:
            on_step(value)
        if code == cp_model.OPTIMAL and freed.all():
            stats.proven = True  # every task was free: the whole model, solved to optimality
            break
        if code == cp_model.OPTIMAL or code == cp_model.INFEASIBLE:
            size = min(n, size + max(1, n // 50))  # nothing better here: look wider
        else:
            size = max(MIN_FREE, size - max(1, n // 50))  # too hard to finish: look narrower
    return incumbent, value, stats
