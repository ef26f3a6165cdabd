"""The flat family's heuristics as drivers: each runs a placement heuristic under the time limit and returns a
``Result``.

Apart from ``solver.drfh.methods`` (the LP methods' drivers) so that running a heuristic imports neither the LP
machinery nor what it imports (scipy.sparse and its array-API layer: about 0.12-0.19 s of CPU in a fresh process,
as much as Best-Fit's compiled search on the Google table with 1,000 tenants).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from fairpack.models.result import Allocation, Result
from fairpack.models.types import Instance
from fairpack.solver import interrupt
from fairpack.solver.budget import Budget
from fairpack.solver.registry import SolveOptions


class _Stop:
    """Asked by a filling heuristic before each batch of grants: whether the time limit (or Ctrl-C) ends it now;
    remembers that it did."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.stopped = False

    def __call__(self) -> bool:
        self.stopped = self.stopped or self.budget.expired()
        return self.stopped


def _heuristic(name: str, place: Callable[[Instance, SolveOptions, _Stop], Allocation]
               ) -> Callable[[Instance, SolveOptions, Budget], Result]:  # fmt: skip
    def run(instance: Instance, options: SolveOptions, budget: Budget) -> Result:
        started = time.perf_counter()
        stop = _Stop(budget)
        allocation = place(instance, options, stop)
        if stop.stopped:  # a feasible allocation, the tasks granted until the limit: not the heuristic's answer
            return Result("time_limit", name, "none", solve_s=time.perf_counter() - started, allocation=allocation,
                          message=f"{interrupt.stop_reason()}: the tasks placed until then")  # fmt: skip
        return Result("feasible", name, "none", solve_s=time.perf_counter() - started, allocation=allocation)

    return run


def _first_fit(instance: Instance, options: SolveOptions, stop: _Stop) -> Allocation:
    from fairpack.solver.drfh.heuristics import first_fit

    return first_fit(instance, stop)


def _best_fit(instance: Instance, options: SolveOptions, stop: _Stop) -> Allocation:
    from fairpack.solver.drfh.heuristics import best_fit

    return best_fit(instance, stop=stop)


def _slots(instance: Instance, options: SolveOptions, stop: _Stop) -> Allocation:
    from fairpack.solver.drfh.heuristics import slots

    return slots(instance, options.slots, stop)


def _per_server_drf(instance: Instance, options: SolveOptions, stop: _Stop) -> Allocation:
    from fairpack.solver.drfh.heuristics import per_server_drf

    return per_server_drf(instance, stop)


run_first_fit = _heuristic("first-fit", _first_fit)
run_best_fit = _heuristic("best-fit", _best_fit)
run_slots = _heuristic("slots", _slots)
run_per_server_drf = _heuristic("per-server-drf", _per_server_drf)
