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
* Times (schedules, simulations): events closer than ``TIME_RTOL * max(1, |t|)`` are simultaneous.
"""

from __future__ import annotations

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
#: Relative resolution of event times.
TIME_RTOL = 1e-9
