"""Counted work and a clock that ticks by reads: how the tests check speed and time limits without a stopwatch.

No unit test compares an elapsed wall or CPU time with a number (tests/test_suite_rules.py keeps that rule):
on a loaded machine any such bound flakes, and a bound loose enough never to flake catches nothing. What the
tests measure instead does not depend on the machine or its load:

- :func:`lines_run` counts the Python lines executed while a call runs (``sys.settrace``, every frame). A
  complexity test compares the counts at two sizes (:func:`growth`): a walk from every node to the root, a
  loop over every machine, a scan per launch shows up as a ratio near 4 (quadratic) instead of 2 (linear)
  when the size doubles, or as thousands of lines where a vectorised step runs a handful.
- :func:`peak_bytes` is the largest memory allocated during a call (``tracemalloc``, numpy arrays included),
  for the work Python lines cannot see: an n x n array where an n-vector was meant.
- :class:`TickClock` replaces ``time.perf_counter`` (every module here reads the clock as
  ``time.perf_counter()``) with one that advances a fixed step at every read, so "time" is the number of
  clock reads: a time limit then runs out at the same point of the computation on every machine, and a test
  can see how many reads (checks of the deadline) a computation makes and that it stopped at the limit.

How long things take on real clocks is measured in ``benchmarks/`` (their figures printed and saved under
``benchmarks/results/``), never asserted.
"""

from __future__ import annotations

import gc
import itertools
import sys
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


class CountingLines:
    """``with CountingLines() as counted:`` counts the Python lines executed inside (every module, this thread)
    in ``counted.lines``, also when the block raises.

    Garbage collection is held off inside: a collection during the block would run the
    finalizers of whatever earlier tests left behind in this process and count their lines as the block's
    (13.5 million lines once, for a 2.4 kB input, depending on which tests ran before in the worker)."""

    def __init__(self) -> None:
        self.lines = 0
        self._counter = itertools.count()
        self._previous: Any = None
        self._collecting = True

    def __enter__(self) -> CountingLines:
        tick = self._counter.__next__

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                tick()
            return local

        def start(frame: Any, event: str, arg: Any) -> Any:
            return local

        self._collecting = gc.isenabled()
        gc.disable()
        self._previous = sys.gettrace()
        sys.settrace(start)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self._previous)
        self.lines = next(self._counter)
        if self._collecting:
            gc.enable()


def lines_run(call: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, int]:
    """``call(*args, **kwargs)`` and the number of Python lines it executed (in every module, this thread).

    Deterministic up to set and dict orders of strings (hash randomisation) and first-use imports, so warm
    a call up at a small size and compare counts with a margin, never for equality."""
    with CountingLines() as counted:
        value = call(*args, **kwargs)
    return value, counted.lines


def peak_bytes(call: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, int]:
    """``call(*args, **kwargs)`` and the peak of the memory it allocated (tracemalloc sees numpy's arrays)."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        value = call(*args, **kwargs)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return value, peak


def growth(measure: Callable[[int], int], size: int) -> float:
    """``measure(2 * size) / measure(size)``: about 2 for linear work, 4 for quadratic, 1 for constant."""
    small = measure(size)
    return measure(2 * size) / max(small, 1)


@dataclass
class TickClock:
    """A stand-in for ``time.perf_counter`` that advances ``step`` seconds at every read.

    ``reads`` counts the reads; ``at_reads`` lists the reading at each, so a test can find where a deadline
    was passed and how much was read after it. :meth:`jump` moves the clock on by ``seconds`` at once (a
    phase that "took" that long)."""

    step: float = 1e-3
    now: float = 1000.0
    reads: int = 0
    readings: list[float] = field(default_factory=list, repr=False)

    def __call__(self) -> float:
        self.now += self.step
        self.reads += 1
        self.readings.append(self.now)
        return self.now

    def jump(self, seconds: float) -> None:
        self.now += seconds

    def reads_after(self, moment: float) -> int:
        """How many reads came after ``moment`` (a deadline): a stopped computation reads it few times more."""
        return sum(1 for reading in self.readings if reading > moment)

    def reads_past(self, limit: float) -> int:
        """Reads more than ``limit`` seconds after the first: past the deadline of a call that started its
        ``limit`` at or after its first read (an upper bound on the reads past its own deadline)."""
        return self.reads_after(self.readings[0] + limit) if self.readings else 0

