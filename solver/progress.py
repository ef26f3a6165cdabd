"""Signs of life from long solves: the incumbent and the bound on stderr, at most every few seconds.

The CLI turns reporting on for the length of a ``solve`` (:func:`reporting`); solvers call :func:`report`
whenever they learn something (a new incumbent, a better bound, a level settled), and :func:`log` for the
step-by-step story ``--verbose`` asks for. Without :func:`reporting` both are no-ops, so library calls stay
silent.

The reporter is a module global, not a context variable: CP-SAT and HiGHS call back from their own threads,
which would not see a context variable set in the caller's.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TextIO

#: Least seconds between two progress lines (the first comes this long after the solve starts).
PROGRESS_EVERY_S = 3.0


@dataclass
class Progress:
    """Where progress lines go, how often, and whether the step-by-step log is wanted."""

    stream: TextIO
    every: float = PROGRESS_EVERY_S
    verbose: bool = False
    started: float = field(default_factory=lambda: time.perf_counter())
    last: float = field(default=-math.inf)

    def __post_init__(self) -> None:
        self.last = self.started  # nothing for short solves

    def report(self, source: str, incumbent: float | None, bound: float | None, note: str = "") -> bool:
        """Print one line if ``every`` seconds have passed since the last; returns whether it printed."""
        now = time.perf_counter()
        if now - self.last < self.every:
            return False
        self.last = now
        self.stream.write(f"fairpack: {now - self.started:8.1f} s  {source}: incumbent {_number(incumbent)}, "
                          f"bound {_number(bound)}{f' ({note})' if note else ''}\n")  # fmt: skip
        self.stream.flush()
        return True

    def log(self, source: str, message: str) -> None:
        if self.verbose:
            self.stream.write(f"fairpack: {time.perf_counter() - self.started:8.1f} s  {source}: {message}\n")
            self.stream.flush()


def _number(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.6g}"


_ACTIVE: Progress | None = None


@contextlib.contextmanager
def reporting(stream: TextIO, every: float = PROGRESS_EVERY_S, verbose: bool = False) -> Iterator[Progress]:
    """Report progress to ``stream`` inside the ``with`` block."""
    global _ACTIVE
    saved, _ACTIVE = _ACTIVE, Progress(stream, every, verbose)
    try:
        yield _ACTIVE
    finally:
        _ACTIVE = saved


def active() -> Progress | None:
    """The reporter in force (solver callbacks capture it where they are created)."""
    return _ACTIVE


def report(source: str, incumbent: float | None, bound: float | None, note: str = "") -> None:
    if _ACTIVE is not None:
        _ACTIVE.report(source, incumbent, bound, note)


def log(source: str, message: str) -> None:
    if _ACTIVE is not None:
        _ACTIVE.log(source, message)
