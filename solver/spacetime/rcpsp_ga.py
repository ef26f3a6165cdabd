"""An activity-list genetic algorithm for makespan on the pooled cluster: a warm start for ``spacetime-cp``.

At a fixed budget of a few seconds the best RCPSP heuristics are list-based genetic algorithms whose every
child is improved by forward-backward improvement (Hartmann 1998; Valls, Ballestin and Quintanilla 2005,
"Justification and RCPSP: a technique that pays", EJOR 165). This module is one of them, on the stages of
:class:`fairpack.solver.spacetime.cp._Problem` (a stage's tasks are placed one after another, as
:func:`fairpack.solver.spacetime.warmstart.serial_sgs` places them):

* an *individual* is an order of the stages; it is decoded by the serial schedule-generation scheme on an
  integer time x resource profile (the eligible stage earliest in the order goes next, so any order decodes
  to a precedence-feasible schedule);
* every decoded schedule is *justified*: a backward pass (the reversed DAG, stages by latest finish first,
  each as late as it can go) then a forward pass (stages by their backward start), repeated while the
  makespan shrinks. The order of the final forward pass becomes the individual (Lamarckian);
* children come from Hartmann's two-point crossover of the orders (positions before the first cut from the
  mother, up to the second from the father's order of the rest, the rest in the mother's order: a
  precedence-feasible order stays one), then a mutation that swaps neighbours not linked by a barrier;
* parents are drawn by binary tournament; the population is the best of parents and children (ranking),
  duplicates of a makespan and an order removed.

The search stops at the deadline (or at Ctrl-C, :mod:`fairpack.solver.interrupt`, checked between generations:
each is a few compiled calls from Python), when the best makespan meets the lower bound it is given, or after
``STALL_GENERATIONS`` generations without a better makespan (on J30 the proof needs the time).

The loops are compiled with numba (``cache=True``: the first call in a fresh environment compiles for a few
seconds and stores the machine code; later processes load it), so this module imports numba: callers import
it lazily, only where it applies. Randomness comes from one ``numpy.random.Generator`` seeded by the caller
(the draws are made in Python and passed in), so a seed gives the same schedule.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from fairpack.models.types import FloatArray, IntArray
from fairpack.solver import interrupt

__all__ = ["GaStats", "Rcpsp", "evolve", "warm_up"]

#: Individuals kept per generation (on 8 J120 instances at 3.5 s, 80 gave a mean gap of 2.9% to the best
#: known, 40 gave 3.8%).
POPULATION = 80
#: Probability that a neighbour swap is tried at each position of a child.
MUTATION = 0.05
#: Generations in a row without a better makespan after which the search stops.
STALL_GENERATIONS = 300
#: Generations without a better makespan after which every individual but the best is drawn anew: the small
#: population converges within a few hundred generations (J120: no gain after 150 of them without restarts).
RESTART_GENERATIONS = 50
#: Forward-backward rounds per child at most (most gain comes from the first one or two).
JUSTIFY_ROUNDS = 4


@dataclass(frozen=True)
class Rcpsp:
    """A pooled makespan problem as integer arrays: stages with ``tasks`` identical tasks each."""

    duration: IntArray  # (stages,) ticks
    tasks: IntArray  # (stages,)
    demand: IntArray  # (stages, resources), per task
    capacity: IntArray  # (resources,)
    release: IntArray  # (stages,) release tick of the stage's job
    edges: IntArray  # (edges, 2) parent stage, child stage

    def __post_init__(self) -> None:
        n = self.duration.size
        if self.tasks.shape != (n,) or self.release.shape != (n,) or self.demand.shape[0] != n:
            raise ValueError("duration, tasks, release and demand must have one row per stage")
        if self.demand.shape[1:] != self.capacity.shape:
            raise ValueError("demand and capacity must have the same resources")
        if np.any(self.demand > self.capacity[None, :]):
            raise ValueError("a task demands more than the capacity")

    def csr(self, reverse: bool = False) -> tuple[IntArray, IntArray]:
        """Parents of every stage (children with ``reverse``) in CSR form: pointers, indices."""
        n = self.duration.size
        child, parent = (self.edges[:, 0], self.edges[:, 1]) if reverse else (self.edges[:, 1], self.edges[:, 0])
        order = np.argsort(child, kind="stable")
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.add.at(ptr, child + 1, 1)
        return np.cumsum(ptr), parent[order].astype(np.int64)

    @property
    def span(self) -> int:
        """Ticks of a profile long enough for every task one after another after the last release."""
        return int(self.release.max(initial=0) + self.duration @ self.tasks + self.duration.max(initial=0) + 1)


@dataclass
class GaStats:
    generations: int = 0
    schedules: int = 0  # decoded (every justification pass counted)
    improved: int = 0  # generations that found a better makespan


# ---- the kernel ---------------------------------------------------------------------------------------


@njit(cache=True)
def _place(usage, need, capacity, d, t):  # fmt: skip
    """The earliest tick from ``t`` at which ``need`` fits for ``d`` ticks; the profile takes it there."""
    n_res = capacity.size
    uses = False
    for r in range(n_res):
        if need[r] > 0:
            uses = True
    if d == 0 or not uses:
        return t
    k = 0
    while k < d:  # the first tick of [t, t + d) without room moves t past it
        fits = True
        for r in range(n_res):
            if usage[t + k, r] + need[r] > capacity[r]:
                fits = False
                break
        if fits:
            k += 1
        else:
            t = t + k + 1
            k = 0
    for k in range(d):
        for r in range(n_res):
            usage[t + k, r] += need[r]
    return t


@njit(cache=True)
def _sgs(key, duration, tasks, first, demand, capacity, release, par_ptr, par_idx, ch_ptr, ch_idx, usage,
         start, stage_end, picked):  # fmt: skip
    """Serial SGS: the eligible stage of smallest ``key`` (ties: lowest index) next, each task at the earliest
    tick its demand fits for its whole duration. Fills ``start`` (per task), ``stage_end`` and ``picked``
    (the order); returns the makespan."""
    n = duration.size
    usage[:, :] = 0
    missing = np.empty(n, dtype=np.int64)
    for s in range(n):
        missing[s] = par_ptr[s + 1] - par_ptr[s]
    done = np.zeros(n, dtype=np.bool_)
    makespan = 0
    for step in range(n):
        best = -1
        for s in range(n):
            if not done[s] and missing[s] == 0 and (best < 0 or key[s] < key[best]):
                best = s
        s = best
        done[s] = True
        picked[step] = s
        earliest = release[s]
        for k in range(par_ptr[s], par_ptr[s + 1]):
            if stage_end[par_idx[k]] > earliest:
                earliest = stage_end[par_idx[k]]
        d = duration[s]
        end = earliest
        for j in range(tasks[s]):
            t = _place(usage, demand[s], capacity, d, earliest)
            earliest = t  # the profile only fills up: the stage's next identical task is no earlier
            start[first[s] + j] = t
            if t + d > end:
                end = t + d
        stage_end[s] = end
        if end > makespan:
            makespan = end
        for k in range(ch_ptr[s], ch_ptr[s + 1]):
            missing[ch_idx[k]] -= 1
    return makespan


@njit(cache=True)
def _decode(order, duration, tasks, first, demand, capacity, release, par_ptr, par_idx, ch_ptr, ch_idx, usage,
            start, picked, rounds):  # fmt: skip
    """Decode ``order`` and justify the schedule forward-backward (at most ``rounds`` rounds). ``start`` and
    ``picked`` receive the best forward schedule and its order; returns its makespan and the passes made."""
    n = duration.size
    key = np.empty(n, dtype=np.float64)
    for i in range(n):
        key[order[i]] = i
    stage_end = np.zeros(n, dtype=np.int64)
    best = _sgs(key, duration, tasks, first, demand, capacity, release, par_ptr, par_idx, ch_ptr, ch_idx, usage,
                start, stage_end, picked)  # fmt: skip
    passes = 1
    zero = np.zeros(n, dtype=np.int64)
    back_start = np.empty(start.size, dtype=np.int64)
    back_end = np.zeros(n, dtype=np.int64)
    back_picked = np.empty(n, dtype=np.int64)
    fwd_start = np.empty(start.size, dtype=np.int64)
    fwd_end = np.zeros(n, dtype=np.int64)
    fwd_picked = np.empty(n, dtype=np.int64)
    for _ in range(rounds):
        # Backward: on the reversed DAG, the stage finishing last goes first.
        for s in range(n):
            key[s] = -stage_end[s]
        _sgs(key, duration, tasks, first, demand, capacity, zero, ch_ptr, ch_idx, par_ptr, par_idx, usage,
             back_start, back_end, back_picked)  # fmt: skip
        # Forward: a stage ending late in reversed time starts early in real time.
        for s in range(n):
            key[s] = -back_end[s]
        span = _sgs(key, duration, tasks, first, demand, capacity, release, par_ptr, par_idx, ch_ptr, ch_idx,
                    usage, fwd_start, fwd_end, fwd_picked)  # fmt: skip
        passes += 2
        if span >= best:
            break
        best = span
        start[:] = fwd_start
        picked[:] = fwd_picked
        stage_end[:] = fwd_end
    return best, passes


@njit(cache=True)
def _children(population, mother, father, cut1, cut2, swap, mutation, duration, tasks, first, demand, capacity,
              release, par_ptr, par_idx, ch_ptr, ch_idx, span, rounds, out_order, out_value, out_start):  # fmt: skip
    """One child per row of ``mother``/``father`` (indices into ``population``): two-point crossover at
    ``cut1 <= cut2``, neighbour swaps where ``swap < mutation`` (unless a barrier links the two), decoded and
    justified; the justified order, makespan and starts go to ``out_*``. Returns the passes made."""
    n = population.shape[1]
    usage = np.zeros((span, capacity.size), dtype=np.int64)
    used = np.zeros(n, dtype=np.bool_)
    child = np.empty(n, dtype=np.int64)
    passes = 0
    for c in range(mother.size):
        m = population[mother[c]]
        f = population[father[c]]
        used[:] = False
        pos = 0
        for i in range(cut1[c]):
            child[pos] = m[i]
            used[m[i]] = True
            pos += 1
        for i in range(n):
            if pos >= cut2[c]:
                break
            if not used[f[i]]:
                child[pos] = f[i]
                used[f[i]] = True
                pos += 1
        for i in range(n):
            if not used[m[i]]:
                child[pos] = m[i]
                used[m[i]] = True
                pos += 1
        for i in range(n - 1):
            if swap[c, i] < mutation:
                a = child[i]
                b = child[i + 1]
                linked = False
                for k in range(ch_ptr[a], ch_ptr[a + 1]):
                    if ch_idx[k] == b:
                        linked = True
                if not linked:
                    child[i] = b
                    child[i + 1] = a
        value, made = _decode(child, duration, tasks, first, demand, capacity, release, par_ptr, par_idx, ch_ptr,
                              ch_idx, usage, out_start[c], out_order[c], rounds)  # fmt: skip
        out_value[c] = value
        passes += made
    return passes


# ---- the search ---------------------------------------------------------------------------------------


def _order_of(start: IntArray, problem: Rcpsp) -> IntArray:
    """Stages by the first start of their tasks (ties: stage number): a seed schedule as an individual."""
    stage = np.repeat(np.arange(problem.tasks.size), problem.tasks)
    first_start = np.full(problem.tasks.size, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_start, stage, start)
    return np.lexsort((np.arange(first_start.size), first_start)).astype(np.int64)


def evolve(
    problem: Rcpsp,
    seeds: list[IntArray],
    until: float,
    seed: int,
    lower: int = 0,
    population: int = POPULATION,
    stall: int = STALL_GENERATIONS,
) -> tuple[IntArray, int, GaStats]:
    """The best schedule the GA finds from ``seeds`` (task starts in flat order, at least one, feasible).

    Parameters
    ----------
    problem : Rcpsp
    seeds : list of int arrays (tasks,)
        Feasible schedules that start the population (the rest is drawn at random around the critical path).
    until : float
        A ``time.perf_counter()`` time at which the search stops (checked between generations).
    seed : int
        Seed of the search's ``numpy.random.Generator``.
    lower : int
        A lower bound on the makespan: the search stops when it meets it.
    population, stall : int
        Individuals kept, and generations without a better makespan before it stops.

    Returns
    -------
    ``(start, makespan, stats)``: never worse than the best seed (which is returned if nothing beats it).
    """
    if not seeds:
        raise ValueError("evolve needs at least one seed schedule")
    rng = np.random.default_rng(seed)
    n = problem.tasks.size
    first = np.concatenate([[0], np.cumsum(problem.tasks)])[:-1].astype(np.int64)
    duration_t = np.repeat(problem.duration, problem.tasks)
    values = [int((s + duration_t).max(initial=0)) for s in seeds]
    best_seed = int(np.argmin(values))
    best_start, best_value = seeds[best_seed].astype(np.int64).copy(), values[best_seed]
    stats = GaStats()
    if n < 2 or best_value <= lower:
        return best_start, best_value, stats
    par_ptr, par_idx = problem.csr()
    ch_ptr, ch_idx = problem.csr(reverse=True)
    args = (problem.duration.astype(np.int64), problem.tasks.astype(np.int64), first,
            np.ascontiguousarray(problem.demand, dtype=np.int64), problem.capacity.astype(np.int64),
            problem.release.astype(np.int64), par_ptr, par_idx, ch_ptr, ch_idx)  # fmt: skip
    span = problem.span
    n_tasks = int(problem.tasks.sum())
    # The first generation: the seeds and random orders biased toward the longest remaining path first.
    tail = _tails(problem, par_ptr, par_idx, ch_ptr, ch_idx)
    initial = [_order_of(s, problem) for s in seeds]

    def drawn(pool: list[IntArray]) -> tuple[IntArray, IntArray, IntArray]:
        while len(pool) < population:
            noisy = -tail * rng.uniform(0.5, 1.5, size=n) + rng.random(n)
            pool.append(np.argsort(noisy, kind="stable").astype(np.int64))
        return _decoded(np.array(pool[:population], dtype=np.int64), args, span, n_tasks, stats)

    orders, fitness, starts = drawn(initial)
    stall_left = stall
    while time.perf_counter() < until and stall_left > 0 and not interrupt.requested():
        if (stall - stall_left) and (stall - stall_left) % RESTART_GENERATIONS == 0:
            kept = orders[0].copy(), int(fitness[0]), starts[0].copy()
            orders, fitness, starts = drawn([kept[0]])
            if int(fitness[0]) > kept[1]:  # never lose the best (its re-decoding may justify differently)
                orders[0], fitness[0], starts[0] = kept
        size = orders.shape[0]
        mother = _tournament(rng, fitness, size)
        father = _tournament(rng, fitness, size)
        cut1 = rng.integers(0, n + 1, size=size)
        cut2 = rng.integers(0, n + 1, size=size)
        cut1, cut2 = np.minimum(cut1, cut2), np.maximum(cut1, cut2)
        swap = rng.random((size, n))
        child_order = np.empty((size, n), dtype=np.int64)
        child_value = np.empty(size, dtype=np.int64)
        child_start = np.empty((size, n_tasks), dtype=np.int64)
        call = (orders, mother, father, cut1, cut2, swap, MUTATION, *args, span, JUSTIFY_ROUNDS, child_order,
                child_value, child_start)  # fmt: skip
        stats.schedules += _children(*call)
        stats.generations += 1
        before = int(fitness.min())
        orders, fitness, starts = _survivors(rng, np.vstack([orders, child_order]),
                                             np.concatenate([fitness, child_value]),
                                             np.vstack([starts, child_start]), population)  # fmt: skip
        if int(fitness[0]) < before:
            stats.improved += 1
            stall_left = stall
        else:
            stall_left -= 1
        if int(fitness[0]) <= lower:
            break
    if int(fitness[0]) < best_value:
        return starts[0].copy(), int(fitness[0]), stats
    return best_start, best_value, stats


def _decoded(pool: IntArray, args: tuple[IntArray, ...], span: int, n_tasks: int,
             stats: GaStats) -> tuple[IntArray, IntArray, IntArray]:  # fmt: skip
    """Decode and justify every order of ``pool`` (the crossover of each with itself, no mutation)."""
    size, n = pool.shape
    index = np.arange(size, dtype=np.int64)
    orders = np.empty((size, n), dtype=np.int64)
    fitness = np.empty(size, dtype=np.int64)
    starts = np.empty((size, n_tasks), dtype=np.int64)
    whole = np.full(size, n, dtype=np.int64)  # both cuts at the end: each child is its mother
    call = (pool, index, index, whole, whole, np.ones((size, n)), 0.0, *args, span, JUSTIFY_ROUNDS, orders, fitness,
            starts)  # fmt: skip
    stats.schedules += _children(*call)
    rank = np.argsort(fitness, kind="stable")
    return orders[rank], fitness[rank], starts[rank]


def _tournament(rng: np.random.Generator, fitness: IntArray, size: int) -> IntArray:
    """Binary tournament: of two random individuals, the shorter makespan (ties: the first drawn)."""
    a = rng.integers(0, fitness.size, size=size)
    b = rng.integers(0, fitness.size, size=size)
    return np.where(fitness[b] < fitness[a], b, a).astype(np.int64)


def _survivors(rng: np.random.Generator, orders: IntArray, fitness: IntArray, starts: IntArray,
               keep: int) -> tuple[IntArray, IntArray, IntArray]:  # fmt: skip
    """The ``keep`` best by makespan (ties at random), each order once: duplicates would take the population
    over in a few generations."""
    _, unique = np.unique(orders, axis=0, return_index=True)
    rank = unique[np.lexsort((rng.random(unique.size), fitness[unique]))][:keep]
    return orders[rank], fitness[rank], starts[rank]


def _tails(problem: Rcpsp, par_ptr: IntArray, par_idx: IntArray, ch_ptr: IntArray, ch_idx: IntArray) -> FloatArray:
    """Longest path from every stage's start to the end (its own duration included), without resources."""
    n = problem.tasks.size
    tail = problem.duration.astype(np.float64).copy()
    missing = np.diff(ch_ptr).copy()
    ready = [s for s in range(n) if missing[s] == 0]
    while ready:
        s = ready.pop()
        for p in par_idx[par_ptr[s]:par_ptr[s + 1]].tolist():
            tail[p] = max(tail[p], problem.duration[p] + tail[s])
            missing[p] -= 1
            if missing[p] == 0:
                ready.append(p)
    return tail


def warm_up() -> None:
    """Compile (or load from the cache) the kernel on a two-stage problem, outside any time limit."""
    tiny = Rcpsp(np.array([1, 1]), np.array([1, 1]), np.array([[1], [1]]), np.array([1]), np.zeros(2, np.int64),
                 np.array([[0, 1]]))  # fmt: skip
    evolve(tiny, [np.array([0, 1])], time.perf_counter() + 1.0, 0, stall=1)
