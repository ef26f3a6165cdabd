"""Real numbers as whole units: the one rule every integer model of the DAG family scales its data by.

CP-SAT works in integers and the time-indexed MILP in whole slots, so durations, releases, deadlines,
demands and capacities are turned into whole multiples of a unit (a tick, a slot, a demand unit). A value
counts as whole when it is within the time rule of :mod:`fairpack.models.tolerance` of a multiple -- relative
``TIME_RTOL`` of the value, floor ``TIME_ATOL`` -- the rule the checker judges the schedule by. An allowance
relative to the *unit* (``1e-9 max(1, |x / unit|)``), as the models had before, read a release of 1e-9 as 0
at a unit of 1, and ``spacetime``, ``spacetime-cp`` and ``locality-cp`` then started a task before its
release (the checker refused the schedule). Values that are not whole are rounded the safe way: durations
and releases up, capacities and deadlines down, and the model says it is exact only for the rounded data.
"""

from __future__ import annotations

import math

import numpy as np

from fairpack.models.tolerance import time_tol, time_tols
from fairpack.models.types import BoolArray, FloatArray, IntArray

__all__ = ["MAX_DECIMALS", "MAX_HORIZON_TICKS", "bounded_unit", "integer_scale", "time_unit", "to_unit", "to_units",
           "whole"]

#: Largest power of ten tried when turning fractional data into integers.
MAX_DECIMALS = 6
#: Most ticks the longest possible schedule may span (coarser ticks, inexact, beyond it).
MAX_HORIZON_TICKS = 10**12


def whole(values: FloatArray, unit: float) -> tuple[FloatArray, BoolArray]:
    """``values / unit`` rounded to the nearest whole numbers, and which of ``values`` are whole multiples of
    ``unit`` under the time rule (within ``max(TIME_RTOL |v|, TIME_ATOL)`` of the multiple)."""
    real = np.asarray(values, dtype=np.float64)
    near = np.round(real / unit)
    return near, np.abs(real - near * unit) <= time_tols(real)


def to_units(values: FloatArray, unit: float, up: bool = True) -> tuple[IntArray, bool]:
    """``values`` in whole ``unit``s: the nearest whole number where ``whole``, else rounded up (``up``) or
    down. Returns the integers and whether every value was whole."""
    scaled = np.asarray(values, dtype=np.float64) / unit
    near, exact = whole(values, unit)
    rounded = np.where(exact, near, np.ceil(scaled) if up else np.floor(scaled))
    return rounded.astype(np.int64), bool(np.all(exact))


def to_unit(value: float, unit: float, up: bool = True) -> int:
    """One number in whole ``unit``s by the rule of :func:`to_units` (for scalar code paths)."""
    near = round(value / unit)
    if abs(value - near * unit) <= time_tol(value):
        return int(near)
    return math.ceil(value / unit) if up else math.floor(value / unit)


def integer_scale(values: FloatArray, base: float = 1.0, decimals: int = MAX_DECIMALS) -> tuple[float, bool]:
    """The coarsest ``base / 10**p`` (``p <= decimals``) of which every finite value is a whole multiple.
    Returns the unit and whether it is exact (if no power works, the finest unit, inexact).

    Judged in floats, never cast: a value of 1e15 in units of 5e-10 is 2e24, beyond int64 (the cast warned
    'invalid value encountered in cast'); the callers coarsen such units before converting."""
    finite = np.asarray(values, dtype=np.float64)[np.isfinite(values)]
    for power in range(decimals + 1):
        if np.all(whole(finite, base / 10**power)[1]):
            return base / 10**power, True
    return base / 10**decimals, False


def bounded_unit(numbers: FloatArray, reach: float, limit: float = 2.0**53) -> tuple[float, bool]:
    """The unit of objective coefficients ``numbers`` (``integer_scale``), coarsened by tens while the integer
    objective could exceed ``limit`` (``sum |numbers| / unit * reach``, ``reach`` the largest value the
    coefficients multiply): CP-SAT refuses a model whose objective may overflow (MODEL_INVALID). Coarsening is
    exact only if every number is still a whole multiple."""
    unit, exact = integer_scale(numbers)
    total = float(np.abs(numbers).sum())
    if total / unit * reach <= limit:
        return unit, exact
    while total / unit * reach > limit:
        unit *= 10
    return unit, bool(np.all(whole(numbers, unit)[1]))


def time_unit(times: FloatArray, total: float, slot: float) -> tuple[float, bool]:
    """The tick of ``times`` (durations, releases) in the instance's ``slot``: exact if possible, coarsened
    while ``total`` (the longest possible schedule) would span more than ``MAX_HORIZON_TICKS`` ticks."""
    tick, exact = integer_scale(times, slot)
    if total / tick <= MAX_HORIZON_TICKS:
        return tick, exact
    while total / tick > MAX_HORIZON_TICKS:
        tick *= 10
    return tick, to_units(times[np.isfinite(times)], tick)[1]
