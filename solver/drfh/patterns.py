"""drfh-int's pattern search: a strong allocation for the max-min objective from aggregated machines.

Column generation solves the configuration LP of ``solver.drfh.patterns_model`` (identical machines merged,
one integer per class and packing pattern): the master gives each player a price, and a small knapsack
per class finds the pattern worth most at those prices. Then the pattern MILP over the pool picks how
many machines of each class use each pattern: first over the starting allocation's own patterns (a
recombination of what the heuristic built), then over the whole pool, each warm-started from the best
allocation so far. Every answer is a real allocation (``PatternModel.expand``); the level search keeps
it only if it raises f. Nothing here proves a bound: the proof stays with the level search.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairpack.models.types import FloatArray
from fairpack.solver.backends import Backend
from fairpack.solver.budget import Budget
from fairpack.solver.drfh.int_model import DrfhIntModel
from fairpack.solver.drfh.patterns_model import PatternModel


@dataclass
class PatternSearch:
    tasks: FloatArray  # best allocation found (tenants, machines); the start if nothing beat it
    value: float  # its f
    solves: int
    solve_s: float
    columns: int  # patterns in the final pool
    rounds: int  # column generation rounds
    lp_level: float | None  # the configuration LP's level over the final pool (an estimate, not a bound)


def _fits(pattern_model: PatternModel, pattern: FloatArray, class_index: int) -> bool:
    capacity = pattern_model.base.instance.capacity[class_index]
    return bool(np.all(pattern @ pattern_model.demand <= capacity * (1 + 1e-12)))


def search_patterns(
    model: DrfhIntModel,
    backend: Backend,
    start: FloatArray,
    top: float,
    budget: Budget,
) -> PatternSearch:
    """Best allocation found within ``budget`` (a limited one) by pattern column generation and pattern MILPs.

    ``start`` is a feasible task matrix (tenants x machines) and ``top`` a proven upper bound on f.
    """
    patterns_model = PatternModel.from_model(model)
    players = patterns_model.players

    def left() -> float:
        return max(budget.left(), 0.0)

    value = model.max_min_value
    best, best_value = start, value(start)
    low = best_value
    patterns, pattern_class = patterns_model.machine_patterns(start)
    initial = len(patterns)
    n, classes = len(players), len(patterns_model.counts)
    solves, solve_s, rounds = 0, 0.0, 0
    lp_level: float | None = None
    known = {(int(c), p.tobytes()) for c, p in zip(pattern_class, patterns, strict=True)}

    # 1. Column generation on the configuration LP, within about a third of the budget.
    generation = budget.part(1 / 3)
    while "duals" in backend.capabilities() and not generation.expired():
        outcome = backend.solve(patterns_model.build_master(patterns, pattern_class, low, top, integer=False), left())
        solves += 1
        solve_s += outcome.solve_s
        if outcome.status != "optimal" or outcome.row_duals is None:
            break
        lp_level = outcome.objective
        rounds += 1
        duals = np.abs(outcome.row_duals)  # cover rows relax with more tasks, count rows with more machines
        prices, machine_price = duals[:n], duals[n : n + classes]
        scale = float(prices.max())
        if scale <= 0:
            break
        added = 0
        for class_index in range(classes):
            remaining = min(1.0, generation.left())
            if remaining <= 0:
                break
            priced = backend.solve(patterns_model.build_pricing(class_index, prices / scale), remaining)
            solves += 1
            solve_s += priced.solve_s
            if priced.x is None:
                continue
            pattern = np.round(priced.x)
            key = (class_index, pattern.tobytes())
            gain = float(prices @ pattern) - float(machine_price[class_index])
            if gain > 1e-9 * scale and key not in known and _fits(patterns_model, pattern, class_index):
                known.add(key)
                patterns = np.vstack([patterns, pattern])
                pattern_class = np.append(pattern_class, class_index)
                added += 1
        if not added:
            break

    # 2. Pattern MILPs: the start's own patterns recombined, then the whole pool; each warm-started
    #    from the best pattern counts so far (the pool only grows, so earlier counts stay valid).
    best_counts = patterns_model.pattern_counts(start, patterns[:initial], pattern_class[:initial])
    for size, share in ((initial, 0.4), (len(patterns), 1.0)):
        limit = left() * share
        if limit <= 0.05:
            break
        pool, pool_class = patterns[:size], pattern_class[:size]
        counts = np.concatenate([best_counts, np.zeros(size - len(best_counts))])
        warm = patterns_model.master_start(counts, pool, pool_class, low, top)
        outcome = backend.solve(patterns_model.build_master(pool, pool_class, low, top, integer=True), limit, warm)
        solves += 1
        solve_s += outcome.solve_s
        if outcome.x is None:
            continue
        tasks = patterns_model.expand(pool, pool_class, outcome.x[:size])
        candidate = value(tasks)
        if candidate > best_value * (1 + 1e-12):
            best, best_value, best_counts = tasks, candidate, np.round(outcome.x[:size])
    return PatternSearch(best, best_value, solves, solve_s, len(patterns), rounds, lp_level)
