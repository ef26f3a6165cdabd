"""Comparing what a saved result says with what the checker recomputed: one message per field that differs.

Numbers agree within ``SAVED_RTOL`` relative to ``max(1, |value|)``; ``null`` is a claim that there is no such
number (a job with no completion); a field the file leaves out is no claim, unless it is required.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fairpack.models.check.report import truncate
from fairpack.models.tolerance import CHECK_RTOL

#: Relative slack when comparing a saved number with its recomputation.
SAVED_RTOL = CHECK_RTOL


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def close(saved: float, value: float) -> bool:
    if math.isnan(value) or math.isnan(saved):
        return math.isnan(value) and math.isnan(saved)
    if not math.isfinite(value) or not math.isfinite(saved):
        return saved == value
    return abs(saved - value) <= SAVED_RTOL * max(1.0, abs(value))


def shown(value: Any) -> str:
    return f"{value:.9g}" if isinstance(value, float) else repr(value) if isinstance(value, str) else str(value)


class Compare:
    """Compares what a file says with what the checker recomputed, collecting one message per field."""

    def __init__(self) -> None:
        self.found: dict[str, list[str]] = {}

    def add(self, category: str, message: str) -> None:
        self.found.setdefault(category, []).append(message)

    def value(self, path: str, saved: Any, expected: Any, category: str = "", required: bool = False) -> None:
        """``saved`` (a JSON value, ``...`` when absent) against ``expected`` (None: there is no such number)."""
        category = category or path.split(".")[0].split("[")[0]
        if saved is ...:
            if required:
                self.add(category, f"{path} is missing; it is {shown(expected)}")
            return
        if isinstance(expected, Mapping):
            if not isinstance(saved, Mapping):
                self.add(category, f"saved {path} {shown(saved)}, but it is an object")
                return
            for key, item in expected.items():
                self.value(f"{path}.{key}", saved.get(key, ...), item, category, required)
            return
        if isinstance(expected, list | tuple):
            if not isinstance(saved, list) or len(saved) != len(expected):
                count = f"{len(saved)} entries" if isinstance(saved, list) else shown(saved)
                self.add(category, f"saved {path} with {count}, but it has {len(expected)}")
                return
            for position, (mine, item) in enumerate(zip(saved, expected, strict=True)):
                self.value(f"{path}[{position}]", mine, item, category, required)
            return
        if isinstance(expected, bool | str) or expected is None:
            if expected is None and saved is None:
                return
            if saved != expected or type(saved) is not type(expected):
                what = "there is no such number" if expected is None else f"recomputed {shown(expected)}"
                self.add(category, f"saved {path} {shown(saved)} but {what}")
            return
        value = number(saved)
        if value is None or not close(value, float(expected)):
            self.add(category, f"saved {path} {shown(saved)} but recomputed {shown(float(expected))}")

    def messages(self) -> list[str]:
        out: list[str] = []
        for category, found in self.found.items():
            out += truncate(category, found)
        return out
