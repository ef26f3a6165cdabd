"""A continuous-time list scheduler for one job's DAG on a capacity vector (no releases, no machines).

Used for Carbyne's plans (forward: the job's due date on its share; reverse: the DAG reversed, so that
"start at 0 in reverse" means "end at the due date") and for list-schedule upper bounds.

:func:`pack` is the reference; ``solver.sim.pack_compiled`` is the same loop compiled with numba (the same
schedule to the last bit), which Carbyne runs on large workloads.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fairpack.models.dag import topological_order
from fairpack.models.tolerance import FIT_EPS, settled
from fairpack.models.types import FloatArray, IntArray

EPS = FIT_EPS


@dataclass(frozen=True)
class Packed:
    """Outcome of :func:`pack`: its makespan and, per stage, the (start, tasks) launches."""

    makespan: float
    launches: tuple[tuple[tuple[float, int], ...], ...]


@dataclass(frozen=True)
class Dag:
    """A DAG of stages as the compiled :func:`pack` (``solver.sim.pack_compiled.run``) takes it: parents and
    children in CSR form, and the stages in priority order.

    ``children`` is built from ``parents`` as :func:`pack` builds it (one entry per parent entry, so repeated
    parents count as often in both directions); ``order`` is :func:`pack`'s ``order``, by the same sort.
    """

    parent_ptr: IntArray
    parent_idx: IntArray
    child_ptr: IntArray
    child_idx: IntArray
    order: IntArray  # stages by priority, highest first (ties: lower index), as the reference's `order`

    def __post_init__(self) -> None:
        stages = self.order.size
        if self.parent_ptr.size != stages + 1 or self.child_ptr.size != stages + 1:
            raise ValueError("parent_ptr and child_ptr need one entry per stage plus one")
        if self.parent_idx.size != self.child_idx.size:
            raise ValueError("parents and children must have as many entries")

    @classmethod
    def of(cls, parents: Sequence[Sequence[int]], priority: FloatArray) -> Dag:
        """From per-stage parent lists (local numbering) and the priority of every stage."""
        stages = len(parents)
        sizes = np.array([len(p) for p in parents], dtype=np.int64)
        parent_ptr = np.zeros(stages + 1, dtype=np.int64)
        np.cumsum(sizes, out=parent_ptr[1:])
        parent_idx = np.array([p for ps in parents for p in ps], dtype=np.int64)
        child = np.repeat(np.arange(stages, dtype=np.int64), sizes)  # entry e: a child of parent_idx[e]
        by_parent = np.argsort(parent_idx, kind="stable")  # children of a parent in ascending order, as pack's
        child_ptr = np.zeros(stages + 1, dtype=np.int64)
        np.cumsum(np.bincount(parent_idx, minlength=stages), out=child_ptr[1:])
        order = sorted(range(stages), key=lambda g: (-priority[g], g))  # the reference's own sort
        return cls(parent_ptr, parent_idx, child_ptr, child[by_parent], np.array(order, dtype=np.int64))


def pack(  # noqa: C901  (one tight loop kept whole: it runs hundreds of thousands of times)
    duration: FloatArray,
    demand: FloatArray,
    count: IntArray | FloatArray,
    parents: Sequence[Sequence[int]],
    capacity: FloatArray,
    priority: FloatArray,
    running: Sequence[tuple[int, float, int]] = (),
    record: bool = True,
) -> Packed:
    """List-schedule a DAG of stages on ``capacity`` from time 0 (no releases), highest ``priority`` first.

    Parameters
    ----------
    duration, demand, count
        Per stage (local numbering): task duration, per-task demand (stages, resources), tasks to place.
    parents
        Per stage, the local indices of its parent stages (barriers).
    capacity
        Capacity vector the DAG runs on.
    priority
        Per stage; among runnable stages the highest goes first (ties: lower index).
    running
        Tasks already running at time 0 as ``(stage, remaining time, tasks)``: they hold capacity until
        then, and their stage completes only when they end.
    record
        Keep every launch (``Packed.launches``); without it only the makespan is computed (launches empty).

    Returns
    -------
    Packed
        ``makespan = inf`` if some task can never fit ``capacity``.

    Notes
    -----
    Most of a pack is one stage launching wave after wave on its own: its one batch of running tasks ends,
    and the same stage launches again into the room they leave. That stretch runs in a loop of its own
    (``_waves``), doing the very float operations of the general loop in the same order, without the heap,
    the walk over the runnable stages or the list comprehensions; the makespan and launches are the same to
    the last bit. Batches that replace themselves at their ends (several at once, see ``steady`` and
    ``_rounds``) are replayed the same way. The makespan is raised by comparisons, not ``max`` calls (the
    same value: ``max(a, b)`` is ``b if b > a else a``).
    """
    # Plain Python numbers: a job has a handful of resources and the loop below runs hundreds of
    # thousands of fit tests per Carbyne simulation; numpy's per-call overhead on 2-element arrays made
    # them 85% of Carbyne's time on TPC-H (the arithmetic is the same float64, so results are identical).
    n_stages = count.size
    children: list[list[int]] = [[] for _ in range(n_stages)]
    for c, ps in enumerate(parents):
        for p in ps:
            children[p].append(c)
    need = demand.tolist()
    positive = [[(r, d) for r, d in enumerate(row) if d > 0] for row in need]
    dur = [float(d) for d in duration]
    unlaunched = [int(c) for c in count]
    active = [0] * n_stages
    missing = [len(p) for p in parents]
    free = [float(c) for c in capacity]
    heap: list[tuple[float, int, int]] = []
    for g, remaining, n in running:
        active[g] += n
        free = [f - n * d for f, d in zip(free, need[g], strict=True)]
        heap.append((float(remaining), g, n))
    heapq.heapify(heap)
    launches: list[list[tuple[float, int]]] = [[] for _ in range(n_stages)]
    order = sorted(range(n_stages), key=lambda g: (-priority[g], g))
    rank = [0] * n_stages
    for position, g in enumerate(order):
        rank[g] = position
    done = [False] * n_stages
    # Ranks (positions in `order`) of the stages that can launch: nothing missing, tasks left. Walking it
    # in rank order visits exactly the stages a scan of `order` would act on, without the finished ones.
    ready: list[int] = []

    def complete(g: int) -> None:
        done[g] = True
        for c in children[g]:
            missing[c] -= 1
            if missing[c] == 0 and unlaunched[c] > 0:
                bisect.insort(ready, rank[c])

    for g in topological_order(parents, children):  # stages with nothing left are complete from the start
        if unlaunched[g] == 0 and active[g] == 0 and missing[g] == 0 and not done[g]:
            complete(g)
    ready[:] = sorted({rank[g] for g in range(n_stages) if unlaunched[g] > 0 and missing[g] == 0})
    t = 0.0
    makespan = 0.0
    tol = [EPS * max(1.0, float(c)) for c in capacity]
    waved = False  # the last step was a run of waves, which ends as a launch pass does
    # Steady state: `steady` holds the batches (stage, tasks) whose end is known to replace itself -- the
    # batch ends alone, the launch pass that follows launches exactly that stage and count, nothing else, and
    # leaves the free room as it was before the end, bit for bit. Each such event was seen once, through the
    # general loop, with the free room and the runnable stages of now; while both stay as they are (every
    # event is then one of these), an end of such a batch does the same float operations on the same values,
    # so it is replayed without its fit tests. Anything else empties the set.
    steady: set[tuple[int, int]] = set()
    watch: tuple[int, int, list[float]] | None = None  # the last event's lone batch and the free room before it
    while True:
        progressed = not waved
        waved = False
        launched = 0  # launches in this launch pass, the last of them `launch`
        launch = (-1, 0)
        while progressed:  # launch in priority order until nothing fits (zero-duration stages cascade)
            progressed = False
            last = -1
            while True:
                i = bisect.bisect_right(ready, last)
                if i >= len(ready):
                    break
                last = ready[i]
                g = order[last]
                n = unlaunched[g]
                if positive[g]:  # as fit_count(free + tol, demand[g])
                    n = min(n, _fitting(positive[g], free, tol))
                if n <= 0:
                    continue
                unlaunched[g] -= n
                if unlaunched[g] == 0:
                    del ready[i]
                if record:
                    launches[g].append((t, n))
                launched += 1
                launch = (g, n)
                end = t + dur[g]
                if end > makespan:
                    makespan = end
                if dur[g] > 0:
                    active[g] += n
                    free = [f - n * d for f, d in zip(free, need[g], strict=True)]
                    heapq.heappush(heap, (end, g, n))
                elif unlaunched[g] == 0 and active[g] == 0:
                    complete(g)
                    progressed = True
        if watch is not None:
            # Tasks left (so the stage stayed runnable and its count was what fitted, not what was left), and
            # the room as before: the lone batch replaced itself.
            if launched == 1 and launch == watch[:2] and unlaunched[launch[0]] > 0 and free == watch[2]:
                steady.add(launch)
            else:
                steady.clear()
            watch = None
        if not heap:
            break
        if len(heap) == 1 and len(ready) == 1 and order[ready[0]] == heap[0][1] and dur[heap[0][1]] > 0:
            # One stage alone, all its running tasks in one batch: the waves of `_waves`.
            end, g, n = heap.pop()
            t, n, left, free, makespan = _waves(end, n, unlaunched[g], free, need[g], positive[g], tol, dur[g],
                                                launches[g] if record else None, makespan)  # fmt: skip
            active[g] = n
            if n:
                heap.append((t + dur[g], g, n))
            if left == 0:
                ready.clear()
            unlaunched[g] = left
            waved = True
            steady.clear()
            continue
        t = heap[0][0]
        _, g, n = heapq.heappop(heap)  # settled(t) <= t: the first end is always now
        alone = not heap or settled(heap[0][0]) > t
        if alone and (g, n) in steady and unlaunched[g] > n:
            # The batch replaces itself (`steady`): the end, then the launch pass's one launch, as they were.
            if t > makespan:
                makespan = t
            unlaunched[g] -= n
            if record:
                launches[g].append((t, n))
            end = t + dur[g]
            if end > makespan:
                makespan = end
            heapq.heappush(heap, (end, g, n))
            waved = True  # the launch pass is done
            if all(h[1] == g and (g, h[2]) in steady for h in heap):  # every running batch replaces itself
                heap, unlaunched[g], makespan = _rounds(sorted(heap), unlaunched[g], dur[g],
                                                        launches[g] if record else None, makespan)  # fmt: skip
                heapq.heapify(heap)
            continue
        watch = (g, n, free) if alone else None
        if not alone:
            steady.clear()
        while True:
            active[g] -= n
            free = [f + n * d for f, d in zip(free, need[g], strict=True)]
            if active[g] == 0 and unlaunched[g] == 0:
                complete(g)
            if not heap or settled(heap[0][0]) > t:  # the simulator's time rule (models.tolerance)
                break
            _, g, n = heapq.heappop(heap)
        if t > makespan:
            makespan = t
    if any(left > 0 for left in unlaunched):
        return Packed(math.inf, tuple(tuple(x) for x in launches))
    return Packed(makespan, tuple(tuple(x) for x in launches))


def _waves(end: float, n: int, left: int, free: list[float], need: list[float], fit: list[tuple[int, float]],
           tol: list[float], duration: float, launches: list[tuple[float, int]] | None,
           makespan: float) -> tuple[float, int, int, list[float], float]:  # fmt: skip
    """One stage alone in :func:`pack`, its ``n`` running tasks ending together at ``end``: wave after wave.

    Each wave is a step of the general loop with one heap entry and one runnable stage: the batch ends
    (its room freed, the makespan raised to the time), then the stage launches as many tasks as fit (at most
    ``left``), as one batch ending ``duration`` later. The same float operations in the same order; it stops
    after the wave that launches the stage's last tasks, or when nothing fits (``n`` then 0: nothing runs).

    Once a wave leaves the free room and the batch size exactly as the wave before left them, every further
    wave that launches as many does the same float operations on the same values, so those waves only
    advance the clock (``t = end``, ``end = t + duration``, the same additions in the same order) until
    fewer tasks are left than a wave launches.

    Returns ``(time of the last wave, tasks it launched, tasks left, free room, makespan)``.
    """
    previous: tuple[list[float], int] | None = None
    while True:
        t = end
        free = [f + n * d for f, d in zip(free, need, strict=True)]
        if t > makespan:
            makespan = t
        n = min(left, _fitting(fit, free, tol)) if fit else left
        if n <= 0:
            return t, 0, left, free, makespan
        left -= n
        if launches is not None:
            launches.append((t, n))
        end = t + duration
        if end > makespan:
            makespan = end
        free = [f - n * d for f, d in zip(free, need, strict=True)]
        if left == 0:
            return t, n, left, free, makespan
        if previous is not None and previous[1] == n and previous[0] == free:
            # A fixed point: n < the tasks left before this wave, so n is what fits, and it fits again, for
            # every whole wave left. Only the clock moves; a positive duration never moves it back (rounding
            # is monotonic), so the makespan's maxima are the last end's.
            waves = left // n
            if waves:
                if launches is None:
                    for _ in range(waves):
                        t = end
                        end = t + duration
                else:
                    for _ in range(waves):
                        t = end
                        launches.append((t, n))
                        end = t + duration
                left -= waves * n
                if end > makespan:
                    makespan = end
                if left == 0:
                    return t, n, left, free, makespan
        previous = (free, n)


def _rounds(batches: list[tuple[float, int, int]], left: int, duration: float,
            launches: list[tuple[float, int]] | None,
            makespan: float) -> tuple[list[tuple[float, int, int]], int, float]:  # fmt: skip
    """Steady batches of one stage in :func:`pack`, each replacing itself at its end, round after round.

    ``batches`` (sorted ``(end, stage, tasks)``, every one in the pack's steady set) are all that runs; the
    general loop would pop the earliest, find it alone at its time, relaunch it ``duration`` later and pop the
    next. With distinct ends each relaunched batch ends after all the others (float addition is monotonic),
    so the batches end in turn, round after round, and only each one's clock (``end + duration``, the same
    addition) moves. Stops before an end that is not alone, or that would launch the stage's last tasks
    (``left`` at most its batch), or after a relaunch that does not end strictly last; the general loop
    takes it from there.

    Returns ``(batches, tasks left, makespan)``.
    """
    ends = [end for end, _, _ in batches]
    counts = [n for _, _, n in batches]
    m = len(ends)
    j = 0
    while True:
        t, n = ends[j], counts[j]
        if left <= n or (m > 1 and settled(ends[j + 1 if j + 1 < m else 0]) <= t):
            break
        left -= n
        if launches is not None:
            launches.append((t, n))
        end = t + duration
        if t > makespan:  # max(makespan, t), max(makespan, end): as the general loop
            makespan = t
        if end > makespan:
            makespan = end
        ordered = m == 1 or end > ends[j - 1]  # ends[-1] when j == 0: the last of the round before
        ends[j] = end
        if not ordered:
            break
        j = j + 1 if j + 1 < m else 0
    g = batches[0][1]
    return [(end, g, n) for end, n in zip(ends, counts, strict=True)], left, makespan


def _fitting(fit: list[tuple[int, float]], free: list[float], tol: list[float]) -> int:
    """How many tasks fit ``free`` (plus ``tol``), ``fit`` the resources they need as ``(r, demand)``: at least 0."""
    if len(fit) == 1:  # most stages need one or two resources: no list to build
        r, d = fit[0]
        return max(0, math.floor((free[r] + tol[r]) / d + EPS))
    if len(fit) == 2:
        (r, d), (s, e) = fit
        first, second = (free[r] + tol[r]) / d, (free[s] + tol[s]) / e
        return max(0, math.floor((first if first <= second else second) + EPS))  # min() of the two
    return max(0, math.floor(min([(free[r] + tol[r]) / d for r, d in fit]) + EPS))
