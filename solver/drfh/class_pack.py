"""drfh-int's by-class construction: a strong allocation at a target level, built class by class.

Near the LP's top the tasks a level needs fill the cluster's binding resource to within a fraction of a
percent (on the Google table with 1,000 tenants, 99% of the LP's f needs 99.64% of its memory), so the
heuristics' progressive filling, which places tasks in fairness order and not in packing order, stops
percents short. Here the level ``L`` is fixed first and its tasks are then packed:

1. every player needs ``required(L)`` tasks (``DrfhIntModel.required``); an LP over (player, machine
   class) decides how many go to each class, within the class's total capacity less a margin per
   machine, and maximises that margin. The margin is the same amount per machine in every class (a
   machine's packing waste is about one task, whatever the machine's size) and, per resource, in
   proportion to the cluster's free share of it at this level (a resource with 11% to spare gets a
   wider margin than one with 0.4%). Rounded to whole tasks by largest remainders.
2. each class's tasks are packed onto its identical machines (:func:`pack_class`, compiled): one machine
   at a time, greedily towards the class's average remaining load per machine (the dot-product rule of
   vector bin packing, by the resources the machine still lacks of that average, then by its free
   room), and the machine's pattern is repeated on further machines while the tasks last.
3. tasks no machine of their class took are placed best-fit on any machine with room (:func:`place_left`).

A level is reached when nothing is left over; the search bisects the level between the start's f and
the proven top. It proves nothing: like the pattern and neighbourhood searches it hands the level search
a better allocation, which the checker verifies with the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from fairpack.models.tolerance import FIT_RTOL
from fairpack.models.types import FloatArray, IntArray
from fairpack.solver.backends import Backend
from fairpack.solver.budget import Budget
from fairpack.solver.drfh.int_model import DrfhIntModel
from fairpack.solver.lp import LPBuilder

#: The first level tried is this far below the top (relative) when no gap is asked for.
FIRST_GAP = 0.01
#: Bisection stops once the interval between a reached level and a missed one is this narrow (relative).
RESOLUTION = 1e-3
MAX_TRIES = 10
#: Above this many (player, class) pairs the construction is not tried (a cluster of nearly all distinct
#: machines: its split LP would be as large as the per-machine model, and one class per machine packs nothing).
CLASS_PAIRS = 1_000_000


@dataclass(frozen=True)
class ClassConstruction:
    """The best allocation the construction found (``tasks``, the start if nothing beat it) and how."""

    tasks: FloatArray  # (tenants, machines)
    value: float  # its f
    level: float | None  # the highest level packed with nothing left over
    tries: int  # levels tried
    solves: int  # split LPs solved
    solve_s: float
    left: int  # tasks left over at the last level tried


def split_by_class(model: DrfhIntModel, required: FloatArray, backend: Backend,
                   time_limit: float | None = None) -> tuple[FloatArray | None, float]:  # fmt: skip
    """Whole tasks per (player, class) that give every player ``required`` tasks within class capacities.

    Returns the counts (players x classes; None when the LP finds no split even with a zero margin) and
    the LP's solve time. See the module docstring for the margin.
    """
    instance = model.instance
    players = model.players
    demand = instance.demand[players]
    machines = instance.counts.astype(np.float64)
    total = instance.capacity * machines[:, None]  # (classes, resources)
    supply = total.sum(axis=0)
    use = required @ demand
    free = np.divide(supply - use, supply, out=np.zeros_like(supply), where=supply > 0)
    if np.any(free < 0):
        return None, 0.0  # more of a resource than the cluster holds
    # Margin per machine and resource: the cluster's free share of it times an average machine's capacity.
    per_machine = np.maximum(free, 1e-9) * supply / machines.sum()
    upper = model.class_upper[players]
    pair_player, pair_class = np.nonzero(upper >= 1)
    classes, resources = total.shape
    builder = LPBuilder(sense="max", name="drfh_int_class_split")
    x = builder.add_variables("x", (len(pair_player),), upper=upper[pair_player, pair_class] * machines[pair_class])
    margin = builder.add_variables("margin", (1,), lower=0.0, upper=1.0, cost=1.0)
    pair_demand = demand[pair_player]
    pair_idx, resource_idx = np.nonzero(pair_demand)
    builder.add_rows(  # sum_j d_jr x_jc + margin * machines_c * per_machine_r <= total_cr
        "capacity",
        classes * resources,
        np.concatenate([pair_class[pair_idx] * resources + resource_idx, np.arange(classes * resources)]),
        np.concatenate([x.indices()[pair_idx], np.full(classes * resources, margin.start)]),
        np.concatenate([pair_demand[pair_idx, resource_idx], np.outer(machines, per_machine).reshape(-1)]),
        upper=total.reshape(-1),
    )
    builder.add_rows("required", len(players), pair_player, x.indices(), 1.0, lower=required, upper=required)
    outcome = backend.solve(builder.build(), time_limit)
    if outcome.x is None or outcome.status != "optimal":
        return None, outcome.solve_s
    split = np.zeros(upper.shape)
    split[pair_player, pair_class] = np.clip(outcome.x[: len(pair_player)], 0.0, None)
    return _round_rows(split, required), outcome.solve_s


def _round_rows(split: FloatArray, totals: FloatArray) -> FloatArray:
    """Whole counts with the given row totals: floors, and the rest to the largest fractional parts.

    Every column that gains one had a positive fractional part, so it stays within its (whole) upper bound.
    """
    whole = np.floor(split + 1e-9)
    rest = np.clip(np.round(totals - whole.sum(axis=1)), 0.0, split.shape[1]).astype(np.int64)
    order = np.argsort(-(split - whole), axis=1, kind="stable")
    gains = np.arange(split.shape[1])[None, :] < rest[:, None]  # the first ``rest`` columns of each row's order
    np.put_along_axis(whole, order, np.take_along_axis(whole, order, axis=1) + gains, axis=1)
    return whole


@njit(cache=True)
def _aim(target: FloatArray, load: FloatArray, weight: FloatArray) -> None:
    """Per resource, how much a task's use of it is worth: what the machine lacks of ``target`` while it
    lacks some, then its free room."""
    lacking = False
    for r in range(len(load)):
        weight[r] = target[r] - load[r]
        lacking = lacking or weight[r] > 1e-12
    for r in range(len(load)):
        weight[r] = max(weight[r], 0.0) if lacking else 1.0 - load[r]


@njit(cache=True)
def _best_type(relative: FloatArray, left: IntArray, pattern: IntArray, load: FloatArray, weight: FloatArray,
               tolerance: float) -> int:  # fmt: skip
    """The type with tasks still to place that fits beside ``load`` and scores highest (-1: none fits)."""
    best, best_score = -1, -1.0
    for k in range(relative.shape[0]):
        if pattern[k] >= left[k]:
            continue
        score = 0.0
        for r in range(relative.shape[1]):
            if load[r] + relative[k, r] > 1.0 + tolerance:
                score = -2.0
                break
            score += relative[k, r] * weight[r]
        if score > best_score:
            best, best_score = k, score
    return best


@njit(cache=True)
def pack_class(relative: FloatArray, count: IntArray, machines: int, tolerance: float
               ) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray]:  # fmt: skip
    """Pack ``count[k]`` tasks of type ``k`` (demand ``relative[k]`` as fractions of one machine) onto
    ``machines`` identical machines.

    Returns ``(entry_type, entry_count, pattern_end, pattern_machines, left)``: pattern ``p`` holds
    ``entry_count[e]`` tasks of ``entry_type[e]`` for ``e`` in ``pattern_end[p-1]:pattern_end[p]`` and is
    used on ``pattern_machines[p]`` machines; ``left`` counts the tasks of each type not placed.
    """
    types, resources = relative.shape
    left = count.copy()
    remaining = left.astype(np.float64) @ relative  # load still to place, in machines
    capacity = int(left.sum())
    entry_type = np.zeros(capacity, np.int64)
    entry_count = np.zeros(capacity, np.int64)
    pattern_end = np.zeros(machines, np.int64)
    pattern_machines = np.zeros(machines, np.int64)
    pattern = np.zeros(types, np.int64)
    load = np.zeros(resources)
    weight = np.zeros(resources)
    entries, patterns, used = 0, 0, 0
    while used < machines and left.sum() > 0:
        target = remaining / (machines - used)  # the average load a machine left should take
        load[:] = 0.0
        touched = 0
        while True:
            _aim(target, load, weight)
            best = _best_type(relative, left, pattern, load, weight, tolerance)
            if best < 0:
                break
            if pattern[best] == 0:
                entry_type[entries + touched] = best
                touched += 1
            pattern[best] += 1
            load += relative[best]
        if touched == 0:
            break
        repeat = machines - used  # the pattern again on further machines, while every one of its tasks lasts
        for e in range(entries, entries + touched):
            repeat = min(repeat, left[entry_type[e]] // pattern[entry_type[e]])
        for e in range(entries, entries + touched):
            k = entry_type[e]
            entry_count[e] = pattern[k]
            left[k] -= pattern[k] * repeat
            remaining -= (pattern[k] * repeat) * relative[k]
            pattern[k] = 0
        entries += touched
        pattern_end[patterns] = entries
        pattern_machines[patterns] = repeat
        patterns += 1
        used += repeat
    return entry_type[:entries], entry_count[:entries], pattern_end[:patterns], pattern_machines[:patterns], left


@njit(cache=True)
def place_left(room: FloatArray, capacity: FloatArray, demand: FloatArray, left: IntArray) -> IntArray:
    """Best-fit the ``left[k]`` tasks of demand ``demand[k]`` onto machines with free ``room`` (updated).

    Largest tasks first (by their largest share of an average machine); each goes to the fitting machine
    with the least free room left after it, summed over resources as fractions of that machine. Returns
    how many of each type were placed on each machine as ``(type, machine, count)`` rows.
    """
    types, resources = demand.shape
    machines = room.shape[0]
    average = np.zeros(resources)
    for r in range(resources):
        average[r] = capacity[:, r].mean()
    size = np.zeros(types)
    for k in range(types):
        for r in range(resources):
            if average[r] > 0:
                size[k] = max(size[k], demand[k, r] / average[r])
    placed = np.zeros((int(left.sum()), 3), np.int64)
    rows = 0
    for k in np.argsort(-size):
        while left[k] > 0:
            best, best_room = -1, math.inf
            for m in range(machines):
                fits = True
                after = 0.0
                for r in range(resources):
                    rest = room[m, r] - demand[k, r]
                    if demand[k, r] > 0 and rest < 0:
                        fits = False
                        break
                    if capacity[m, r] > 0:
                        after += rest / capacity[m, r]
                if fits and after < best_room:
                    best, best_room = m, after
            if best < 0:
                break
            room[best] -= demand[k]
            left[k] -= 1
            placed[rows, 0], placed[rows, 1], placed[rows, 2] = k, best, 1
            rows += 1
    return placed[:rows]


def construct_level(model: DrfhIntModel, backend: Backend, level: float,
                    time_limit: float | None = None) -> tuple[FloatArray | None, int, float]:  # fmt: skip
    """An allocation aiming at f >= ``level``: (tasks, how many required tasks it left out, LP seconds).

    ``tasks`` is None when the split LP finds no split (the level needs more than the classes hold).
    """
    instance = model.instance
    players = model.players
    required = model.required(level)
    split, solve_s = split_by_class(model, required, backend, time_limit)
    if split is None:
        return None, int(required.sum()), solve_s
    demand = instance.demand[players]
    starts = np.concatenate([[0], np.cumsum(instance.counts)[:-1]])
    tasks = np.zeros((len(instance.tenants), model.num_machines))
    left = np.zeros(len(players), np.int64)
    for c, server in enumerate(instance.servers):
        types = np.flatnonzero(split[:, c] > 0)
        capacity = instance.capacity[c]
        relative = np.divide(demand[types], capacity, out=np.zeros((len(types), capacity.size)),
                             where=capacity > 0)  # fmt: skip
        entry_type, entry_count, pattern_end, pattern_machines, unplaced = pack_class(
            relative, split[types, c].astype(np.int64), int(server.count), FIT_RTOL
        )
        left[types] += unplaced
        machine = int(starts[c])
        for p, used in enumerate(pattern_machines):
            entries = slice(int(pattern_end[p - 1]) if p else 0, int(pattern_end[p]))
            tasks[players[types[entry_type[entries]]], machine : machine + used] = entry_count[entries, None]
            machine += int(used)
    if left.any():
        machine_capacity = instance.capacity[instance.machine_class()]
        room = machine_capacity * (1 + FIT_RTOL) - tasks.T @ instance.demand
        placed = place_left(room, machine_capacity, demand, left)
        np.add.at(tasks, (players[placed[:, 0]], placed[:, 1]), placed[:, 2])
    return tasks, int(left.sum()), solve_s


def search_by_class(model: DrfhIntModel, backend: Backend, start: FloatArray, top: float, budget: Budget,
                    relative_gap: float = 0.0) -> ClassConstruction:  # fmt: skip
    """Bisect the level between the start's f and ``top`` (a proven bound on f), constructing at each.

    The first level tried is ``(1 - gap) * top`` (``gap`` the requested one, or ``FIRST_GAP``); the bisection
    goes on from there, up or down, until a reached and a missed level are ``RESOLUTION`` apart or
    ``MAX_TRIES`` levels were tried (a try costs well under a second on the Google table: the extra tries
    lift f past the requested gap, which is measured against the proven top, not the LP's f).
    """
    value = model.max_min_value
    best, best_value = start, value(start)
    low, high = best_value, top  # reached (or the start's f), and not yet missed
    gap = relative_gap if relative_gap > 0 else FIRST_GAP
    level = max(top * (1 - gap), low)
    reached: float | None = None
    tries = solves = left = 0
    solve_s = 0.0
    while tries < MAX_TRIES and not budget.expired() and level > low * (1 + RESOLUTION):
        tasks, left, seconds = construct_level(model, backend, level, budget.remaining())
        tries += 1
        solves += 1
        solve_s += seconds
        if tasks is not None and value(tasks) > best_value * (1 + 1e-12):
            best, best_value = tasks, value(tasks)
        if tasks is not None and left == 0:
            low, reached = max(low, level), level
        else:
            high = level
        if high - low <= RESOLUTION * high:
            break
        level = (low + high) / 2
    return ClassConstruction(best, best_value, reached, tries, solves, solve_s, left)
