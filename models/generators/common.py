"""What the generators share: data-file lookups and rounding that keeps totals."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fairpack.models.types import InstanceError


def require(path: Path) -> Path:
    if not path.is_file():
        raise InstanceError(f"data file not found: {path} (pass --data-dir pointing at the shared data)")
    return path


def largest_remainder(exact: np.ndarray) -> np.ndarray:
    """Round non-negative reals to integers with the same (rounded) total."""
    counts = np.floor(exact).astype(int)
    for k in np.argsort(-(exact - counts))[: round(float(exact.sum())) - int(counts.sum())]:
        counts[k] += 1
    return counts
