"""One wall-clock budget for a whole call: model building, the solver's phases, verification and output.

``solver.api.solve`` starts a :class:`Budget` from ``--time-limit`` and hands it to the method's driver;
every phase asks :meth:`Budget.remaining` for what is left instead of keeping its own clock, and a phase
that should leave time to the ones after it takes :meth:`Budget.part` of it.

Once Ctrl-C has asked the call to stop (:func:`fairpack.solver.interrupt.requested`), every budget looks expired:
what already honours a time limit stops the same way (``solve`` then reports the status ``interrupted``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from fairpack.solver import interrupt


@dataclass(frozen=True)
class Budget:
    """A deadline on ``time.perf_counter()``; ``deadline=None`` means no limit.

    Attributes
    ----------
    deadline
        The perf-counter time by which the phase must return.
    floor
        The least :meth:`remaining` ever returns while time is left over (solvers reject a zero limit).
    """

    deadline: float | None = None
    floor: float = 1e-3

    @staticmethod
    def of(seconds: float | None) -> Budget:
        """A budget of ``seconds`` from now (``None``: unlimited)."""
        return Budget(None if seconds is None else time.perf_counter() + seconds)

    @property
    def limited(self) -> bool:
        return self.deadline is not None

    def remaining(self) -> float | None:
        """Seconds left (at least ``floor``), or ``None`` when unlimited; ``floor`` once interrupted."""
        if interrupt.requested():
            return self.floor
        if self.deadline is None:
            return None
        return max(self.deadline - time.perf_counter(), self.floor)

    def left(self) -> float:
        """Seconds left, ``inf`` when unlimited, possibly zero or negative once expired (zero once interrupted)."""
        if interrupt.requested():
            return 0.0
        return math.inf if self.deadline is None else self.deadline - time.perf_counter()

    def expired(self) -> bool:
        """Whether the deadline has passed, or the call was interrupted."""
        return interrupt.requested() or (self.deadline is not None and time.perf_counter() >= self.deadline)

    def part(self, fraction: float) -> Budget:
        """A budget ending after ``fraction`` of the time now left (unlimited stays unlimited)."""
        if self.deadline is None:
            return self
        now = time.perf_counter()
        return Budget(now + fraction * max(self.deadline - now, 0.0), self.floor)

    def at_most(self, seconds: float | None) -> Budget:
        """This budget, cut to end no later than ``seconds`` from now."""
        if seconds is None:
            return self
        deadline = time.perf_counter() + seconds
        return Budget(deadline if self.deadline is None else min(deadline, self.deadline), self.floor)


def _proc_kib(path: str, key: str) -> int | None:
    """A ``key: N kB`` line of a /proc file, in bytes (None where it cannot be read)."""
    try:
        with open(path, encoding="ascii") as handle:
            for line in handle:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def available_memory() -> int | None:
    """Bytes a new allocation may take: Linux's ``MemAvailable``, and under an address-space limit
    (``RLIMIT_AS``, as a batch system or ``ulimit -v`` sets) no more than what the limit leaves; None where
    neither can be read."""
    import resource

    room = _proc_kib("/proc/meminfo", "MemAvailable:")
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    used = _proc_kib("/proc/self/status", "VmSize:")
    if soft != resource.RLIM_INFINITY and used is not None:
        left = max(int(soft) - used, 0)
        room = left if room is None else min(room, left)
    return room
