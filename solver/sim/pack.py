"""A continuous-time list scheduler for one job's DAG on a capacity vector (no releases, no machines).

Used for Carbyne's plans (forward: the job's due date on its share; reverse: the DAG reversed, so that
"start at 0 in reverse" means "end at the due date") and for list-schedule upper bounds.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

from models.dag import topological_order
from models.tolerance import FIT_EPS, settled
from models.types import FloatArray, IntArray

EPS = FIT_EPS


@dataclass(frozen=True)
class Packed:
    """Outcome of :func:`pack`: its makespan and, per stage, the (start, tasks) launches."""

    makespan: float
    launches: tuple[tuple[tuple[float, int], ...], ...]


def pack(  # noqa: C901  (one tight loop kept whole: it runs hundreds of thousands of times)
    duration: FloatArray,
    demand: FloatArray,
    count: IntArray | FloatArray,
    parents: Sequence[Sequence[int]],
    capacity: FloatArray,
    priority: FloatArray,
    running: Sequence[tuple[int, float, int]] = (),
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

    Returns
    -------
    Packed
        ``makespan = inf`` if some task can never fit ``capacity``.
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
    while True:
        progressed = True
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
                    most = min((free[r] + tol[r]) / d for r, d in positive[g])
                    n = min(n, max(0, math.floor(most + EPS)))
                if n <= 0:
                    continue
                unlaunched[g] -= n
                if unlaunched[g] == 0:
                    del ready[i]
                launches[g].append((t, n))
                end = t + dur[g]
                makespan = max(makespan, end)
                if dur[g] > 0:
                    active[g] += n
                    free = [f - n * d for f, d in zip(free, need[g], strict=True)]
                    heapq.heappush(heap, (end, g, n))
                elif unlaunched[g] == 0 and active[g] == 0:
                    complete(g)
                    progressed = True
        if not heap:
            break
        t = heap[0][0]
        while heap and settled(heap[0][0]) <= t:  # the simulator's time rule (models.tolerance)
            _, g, n = heapq.heappop(heap)
            active[g] -= n
            free = [f + n * d for f, d in zip(free, need[g], strict=True)]
            if active[g] == 0 and unlaunched[g] == 0:
                complete(g)
        makespan = max(makespan, t)
    if any(left > 0 for left in unlaunched):
        return Packed(math.inf, tuple(tuple(x) for x in launches))
    return Packed(makespan, tuple(tuple(x) for x in launches))
