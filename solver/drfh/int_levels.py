"""The values drfh-int's max-min objective f can take, held as ranges and never listed.

f is the weighted share of some hungry player, ``k c_j`` with ``c_j = s_j / w_j`` (one task's weighted
dominant share) and ``k`` its task count. Listing every such value between the start's f and the LP's
f costs ``(high - low) / c_j`` entries per player: harmless with weights near 1, but a player with a
weight of 1e6 beside one of 1e-6 (or an LP bound that is missing, so the top is ``1 / min w``) makes
that 1e12 and more. So :class:`CandidateLevels` keeps one range of ``k`` per player and answers the
level search's questions (how many levels lie in an interval, the next one above a value, the largest
one below, the one at a given rank) in O(players) each, with one relative tolerance for "equal".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fairpack.models.types import FloatArray

#: Two levels closer than this (relative) are the same level: products ``k c_j`` of different players
#: that agree mathematically differ in the last bits.
LEVEL_RTOL = 1e-12


@dataclass(frozen=True)
class CandidateLevels:
    """The levels ``k * step[j]`` for ``first[j] <= k <= last[j]`` (a player with ``last < first`` has none).

    Values shared by several players count once per player: ranks are over that multiset, which keeps
    bisection by rank correct (equal values answer the same way) without sorting anything.
    """

    step: FloatArray  # c_j > 0 per player
    first: FloatArray  # smallest k per player (an integer, held as float)
    last: FloatArray  # largest k per player

    def __post_init__(self) -> None:
        if not (self.step.shape == self.first.shape == self.last.shape) or self.step.ndim != 1:
            raise ValueError("step, first and last must be vectors of one length")
        if np.any(self.step <= 0) or not np.all(np.isfinite(self.step)):
            raise ValueError("every step must be positive and finite")

    @classmethod
    def between(cls, step: FloatArray, most: FloatArray, low: float, high: float) -> CandidateLevels:
        """The levels above ``low`` and at most ``high`` (up to ``LEVEL_RTOL``), ``k <= most[j]`` for player ``j``."""
        first = np.floor(low / step * (1 + LEVEL_RTOL)) + 1 if math.isfinite(low) else np.full(len(step), np.inf)
        top = np.floor(high / step * (1 + LEVEL_RTOL)) if math.isfinite(high) else np.full(len(step), np.inf)
        return cls(step, np.maximum(first, 1.0), np.minimum(top, most))

    def _after(self, value: float) -> FloatArray:
        """Per player, the first ``k`` whose level exceeds ``value``."""
        if not math.isfinite(value):
            return self.first if value < 0 else np.full(len(self.step), np.inf)
        return np.maximum(self.first, np.floor(value / self.step * (1 + LEVEL_RTOL)) + 1)

    def _upto(self, value: float) -> FloatArray:
        """Per player, the last ``k`` whose level is at most ``value``."""
        return np.minimum(self.last, np.floor(value / self.step * (1 + LEVEL_RTOL)))

    def _before(self, ceiling: float) -> FloatArray:
        """Per player, the last ``k`` whose level is below ``ceiling`` (all of them when it is infinite)."""
        if not math.isfinite(ceiling):
            return self.last
        return np.minimum(self.last, np.ceil(ceiling / self.step * (1 - LEVEL_RTOL)) - 1)

    @staticmethod
    def _sum(first: FloatArray, last: FloatArray) -> float:
        return float(np.clip(last - first + 1, 0.0, None).sum())

    def count(self, low: float, ceiling: float = math.inf) -> float:
        """How many levels lie above ``low`` and below ``ceiling`` (a float: it may exceed any list)."""
        return self._sum(self._after(low), self._before(ceiling))

    def above(self, value: float, ceiling: float = math.inf) -> float | None:
        """The smallest level above ``value`` and below ``ceiling``, or None."""
        k, limit = self._after(value), self._before(ceiling)
        open_ = k <= limit
        return float((k * self.step)[open_].min()) if open_.any() else None

    def below(self, ceiling: float, low: float = -math.inf) -> float | None:
        """The largest level below ``ceiling`` and above ``low``, or None."""
        k, start = self._before(ceiling), self._after(low)
        open_ = k >= start
        return float((k * self.step)[open_].max()) if open_.any() else None

    def at_rank(self, low: float, ceiling: float, rank: int) -> float:
        """The level of 0-based ``rank`` among those above ``low`` and below ``ceiling``, ascending.

        Bisection on values with counts, no list: each pass halves the interval ``(below, above]`` that
        holds it, and it ends when no level lies strictly inside.
        """
        total = self.count(low, ceiling)
        if not 0 <= rank < total:
            raise ValueError(f"rank {rank} outside the {total:g} levels in ({low:g}, {ceiling:g})")
        start = self._after(low)
        below, above = low, self.below(ceiling, low)  # levels up to below: <= rank; up to above: > rank
        assert above is not None
        while True:
            middle = self.above(below + (above - below) / 2, above)
            if middle is None:  # none in the upper half: take the largest in the lower one
                middle = self.below(above, below)
                if middle is None:
                    return above
            if self._sum(start, self._upto(middle)) > rank:
                above = middle
            else:
                below = middle
