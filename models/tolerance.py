"""The one tolerance policy of fairpack, shared in meaning by the solvers and the checker.

Every comparison with a capacity is relative to that capacity:

* The checker (``models.check``) accepts an answer when every unit's use of a resource is at most
  ``C + max(CHECK_RTOL * C, CHECK_ATOL)`` and every count is within ``CHECK_RTOL * max(1, |x|)`` of what it
  should be (whole, non-negative, under its cap).
* Methods aim inside that: a heuristic or simulator counts a task as fitting when its demand is at most
  ``free + FIT_RTOL * C`` (``FIT_RTOL`` only absorbs the round-off of repeated subtraction), and an exact
  LP answer whose solver tolerances left a unit over ``C * (1 + SOLVER_RTOL)`` is repaired (its shares scaled
  down) before it is returned. Both margins are at least a hundred times inside the checker's, so an
  answer a method calls feasible is one the checker accepts.
* Times (schedules, simulations): one rule, applied by the simulator when it decides which events happen
  now and by the checker when it judges a schedule. A time ``a`` counts as no later than ``b`` when
  ``settled(a) <= b``, where ``settled(a) = a - time_tol(a)`` and ``time_tol(a) = max(TIME_RTOL * |a|,
  TIME_ATOL)``: relative, because float times carry round-off relative to their size (a time of 1e15 is
  only known to 0.125), with an absolute floor near zero. The simulator ends a task, releases a job and
  fires a timer at event time ``t`` when ``settled(time) <= t``; the checker lets a task start at ``b``
  when ``settled`` of its release and of its parents' ends is at most ``b``, counts a task ending at ``e``
  as gone from ``settled(e)`` on, and accepts a task's length ``e - b`` within ``time_tol(e)`` of its
  duration. Both compute ``settled`` with this module's functions, so the simulator's schedules pass the
  checker bit for bit at every scale (durations of 1e15 beside durations of 2, or of 1e-9), and the rule
  is scale-free down to ``TIME_ATOL / TIME_RTOL``: durations far below ``TIME_ATOL`` are not resolved.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Relative slack the checker allows on capacities and counts.
CHECK_RTOL = 1e-6
#: Absolute slack where a capacity is zero (amounts below it are no use of the resource).
CHECK_ATOL = 1e-9
#: Slack when deciding whether a whole task fits or how many whole tasks a bundle holds (guards
#: ``floor(2.9999999999)`` against rounding noise).
FIT_EPS = 1e-9
#: Fit slack of heuristics and simulators, relative to a machine's capacity.
FIT_RTOL = 1e-10
#: Violation (relative to capacity) above which an exact LP answer is repaired before it is returned.
SOLVER_RTOL = 1e-8
#: Relative resolution of event times (also the relative snap of durations to CP-SAT ticks).
TIME_RTOL = 1e-9
#: Absolute floor of the time resolution, for times near zero (1e6 times below a nanosecond-long task).
TIME_ATOL = 1e-15


def time_tol(t: float) -> float:
    """How far apart two times around ``t`` may be and still be the same instant."""
    return max(TIME_RTOL * abs(t), TIME_ATOL)


def settled(t: float) -> float:
    """The earliest event time at which something due at ``t`` counts as now (``t - time_tol(t)``)."""
    return t - max(TIME_RTOL * abs(t), TIME_ATOL)


def time_tols(t: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """:func:`time_tol` of every entry (the same floats)."""
    return np.maximum(TIME_RTOL * np.abs(np.asarray(t, dtype=np.float64)), TIME_ATOL)


def settled_all(t: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """:func:`settled` of every entry (the same floats, so the checker and the simulator agree bit for bit)."""
    values = np.asarray(t, dtype=np.float64)
    return values - time_tols(values)
