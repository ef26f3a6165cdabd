"""Every CP-SAT solve of fairpack goes through :func:`run`, so that Ctrl-C has one meaning for all of them.

CP-SAT catches SIGINT itself by default (``catch_sigint_signal``): it stopped the one solve running, let the
caller go on as if its limit had come (a simulation re-planning at every event then carried on with a cut plan,
silently), and ended the process at the third signal. Here that is off; :mod:`fairpack.solver.interrupt` stops
the search instead (``CpSolver.stop_search`` from its watcher thread), and a solve asked for after the interrupt
returns at once (``UNKNOWN``), so every caller reads it as a solve stopped by its limit.
"""

from __future__ import annotations

import threading
from typing import Any

from fairpack.solver import interrupt

#: Seconds past its own wall-clock limit after which a CP-SAT solve is stopped from outside (``stop_search``):
#: loading and presolving a model of a million alternatives ran tens of seconds past ``max_time_in_seconds``.
OVERRUN_S = 1.0


def run(solver: Any, model: Any, callback: Any | None = None) -> Any:
    """``solver.solve(model[, callback])`` stoppable by Ctrl-C, and stopped ``OVERRUN_S`` past its time limit
    whatever phase it is in; returns CP-SAT's status code."""
    solver.parameters.catch_sigint_signal = False
    if interrupt.requested():
        solver.parameters.max_time_in_seconds = 0.0
    limit = float(solver.parameters.max_time_in_seconds)
    timer = threading.Timer(limit + OVERRUN_S, solver.stop_search) if limit < 1e8 else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        with interrupt.stopping(solver.stop_search):
            return solver.solve(model) if callback is None else solver.solve(model, callback)
    finally:
        if timer is not None:
            timer.cancel()
