"""Metrics of a simulated schedule: exact integrals of a piecewise-constant share vector.

``ShareMeter`` is fed the leaves' dominant shares each time they change (``state``) and the interval
they held (``hold``); it accumulates time averages after the warm-up, the L1 distance to a static
reference, equal-width time bins and starvation episodes. Used by ``solver.sim.backlog``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairpack.models.types import FloatArray


@dataclass(frozen=True)
class Starvation:
    """A demanding leaf below half its hierarchical guarantee from ``start`` to ``end``.

    ``open`` is True when the episode was still running at the horizon (``end`` is the horizon).
    """

    tenant: int
    leaf: str
    start: float
    end: float
    open: bool

    @property
    def duration(self) -> float:
        return self.end - self.start

    def to_json(self) -> dict[str, Any]:
        return {"leaf": self.leaf, "start": self.start, "end": self.end, "duration": self.duration, "open": self.open}


class ShareMeter:
    """Exact integrals of the piecewise-constant share vector: averages, distance, bins, starvation."""

    def __init__(
        self,
        names: Sequence[str],
        warmup: float,
        horizon: float,
        samples: int,
        reference: FloatArray | None,
        floor: FloatArray,
        threshold: float,
    ) -> None:
        self.names = names
        self.warmup, self.horizon = warmup, horizon
        self.reference = reference
        self.floor = floor  # half the guarantee; -inf for leaves that demand nothing
        self.threshold = threshold
        n = len(names)
        self.area = np.zeros(n)
        self.distance_area = 0.0
        self.edges = np.linspace(0.0, self.horizon, samples + 1)
        self.width = self.horizon / samples
        self.bins = np.zeros((samples, n))
        self.below_since = np.full(n, np.nan)
        self.episodes: list[Starvation] = []

    def hold(self, shares: FloatArray, start: float, end: float) -> None:
        """The leaves held ``shares`` over ``[start, end)``."""
        if end <= start:
            return
        counted = min(end, self.horizon) - max(start, self.warmup)
        if counted > 0:
            self.area += shares * counted
            if self.reference is not None:
                self.distance_area += float(np.abs(shares - self.reference).sum()) * counted
        first = int(start // self.width)
        last = min(math.ceil(end / self.width), len(self.bins))
        for b in range(first, last):
            overlap = min(end, self.edges[b + 1]) - max(start, self.edges[b])
            if overlap > 0:
                self.bins[b] += shares * overlap

    def state(self, shares: FloatArray, now: float) -> None:
        """The share vector changed to ``shares`` at ``now``: open and close starvation episodes."""
        below = shares < self.floor - 1e-12
        starting = below & np.isnan(self.below_since)
        self.below_since[starting] = now
        ending = ~below & ~np.isnan(self.below_since)
        for i in np.flatnonzero(ending).tolist():
            self._close(i, now, open_=False)
        self.below_since[ending] = np.nan

    def _close(self, tenant: int, end: float, open_: bool) -> None:
        start = max(float(self.below_since[tenant]), self.warmup)
        if end - start > self.threshold:
            self.episodes.append(Starvation(tenant, self.names[tenant], start, end, open_))

    def close(self) -> None:
        for i in np.flatnonzero(~np.isnan(self.below_since)).tolist():
            self._close(i, self.horizon, open_=True)
        self.episodes.sort(key=lambda e: (e.start, e.tenant))
