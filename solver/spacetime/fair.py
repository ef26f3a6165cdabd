"""The fair completion times ``T_k`` of the exact DAG methods, computed within the call's time budget.

``spacetime`` and ``spacetime-cp`` cap every job's completion at its fair completion time, ``C_k <= T_k``,
unless ``--no-fair-cap``. ``T_k`` is the job's completion in the ``drf-strict`` schedule on the same
placement (:func:`fairpack.solver.sim.fairshare.fair_completion_times`), run on the instance as the model sees it:
with durations and releases rounded up to the model's time unit when they are not whole units. That
schedule is then feasible in the model's units too, so it is a witness that every cap can be met at once,
and a warm start. Under ``--no-fair-cap`` ``T_k`` is still computed and reported beside each job, not
enforced.

The ``drf-strict`` simulation is the one part of these methods that does not watch a solver's clock; on
tens of thousands of tasks it takes seconds. :func:`fair_share` stops it at the deadline and says so, so
that ``--time-limit`` bounds the whole call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Literal

from fairpack.models.types import Instance
from fairpack.solver import interrupt
from fairpack.solver.sim.fairshare import FairShare, fair_completion_times
from fairpack.solver.spacetime.units import to_unit

#: ``cap``: compute ``T_k`` and enforce ``C_k <= T_k``; ``report``: compute and report it only; ``off``: neither.
FairMode = Literal["cap", "report", "off"]
#: Under ``report`` (nothing depends on ``T_k``), the share of the time left that computing it may take.
REPORT_SHARE = 0.25
#: Why a capped method stopped before solving.
NO_FAIR_SHARE = ("the fair-share (drf-strict) schedule that sets the caps C_k <= T_k did not finish within the "
                 "time limit; raise --time-limit or pass --no-fair-cap")  # fmt: skip


def unfinished() -> str:
    """Why the fair-share schedule is missing when it was only to be reported."""
    return "was interrupted" if interrupt.requested() else "did not finish in its part of the time limit"


def no_fair_share() -> str:
    """Why a capped method stopped before solving: :data:`NO_FAIR_SHARE`, or Ctrl-C came first."""
    if interrupt.requested():
        return "interrupted while the fair-share (drf-strict) schedule that sets the caps C_k <= T_k was computed"
    return NO_FAIR_SHARE


class OutOfTime(Exception):
    """The deadline passed while a schedule was being simulated."""


@dataclass(frozen=True)
class Watch:
    """A simulation observer that stops the run (raising :class:`OutOfTime`) once ``deadline`` (a
    ``perf_counter`` time) has passed; the simulations of :mod:`fairpack.solver.sim` do not watch a clock themselves."""

    deadline: float

    def state(self, sim: Any) -> None:
        if interrupt.requested() or time.perf_counter() > self.deadline:
            raise OutOfTime

    def hold(self, sim: Any, start: float, end: float) -> None:
        pass

    def close(self, sim: Any) -> None:
        pass


def fair_mode(fair_cap: bool) -> FairMode:
    """The mode an exact method runs in from the CLI: ``--no-fair-cap`` reports ``T_k`` without enforcing it."""
    return "cap" if fair_cap else "report"


def slotted(instance: Instance, slot: float) -> Instance:
    """The instance with every duration and release rounded up to a whole number of slots."""

    def up(value: float) -> float:  # whole slots by the rule every integer model uses (solver.spacetime.units)
        return to_unit(value, slot) * slot

    jobs = tuple(replace(job, release=up(job.release),
                         stages=tuple(replace(stage, duration=up(stage.duration)) for stage in job.stages))
                 for job in instance.jobs)  # fmt: skip
    return replace(instance, jobs=jobs)


def fair_share(instance: Instance, placement: str, unit: float | None = None,
               deadline: float | None = None) -> FairShare | None:  # fmt: skip
    """The ``drf-strict`` schedule and its completions ``T_k``, or None if ``deadline`` came first.

    Parameters
    ----------
    instance, placement
        The jobs and the placement model (``pooled`` or ``servers``) of the exact method.
    unit
        The model's time unit when durations or releases are not whole units of it (they are rounded up
        first); None when they are.
    deadline
        A ``time.perf_counter()`` time to stop at; None: no limit.
    """
    seen = instance if unit is None else slotted(instance, unit)
    try:
        share = fair_completion_times(seen, placement, observers=watched(deadline))
    except OutOfTime:
        return None
    return None if interrupt.requested() else share  # interrupted, the run stopped part way (solver.interrupt)


def watched(deadline: float | None) -> tuple[Watch, ...]:
    """The observers that stop a simulation at ``deadline`` (none without one)."""
    return () if deadline is None else (Watch(deadline),)


def share_deadline(mode: FairMode, deadline: float | None) -> float | None:
    """The deadline for computing ``T_k``: all the time left under ``cap``, a part of it under ``report``."""
    if deadline is None or mode == "cap":
        return deadline
    now = time.perf_counter()
    return now + REPORT_SHARE * max(deadline - now, 0.0)
