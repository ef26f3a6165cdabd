"""Typed ``--option k=v`` settings of the online policies: a value of the wrong kind or out of range is an
``OptionError`` naming the option (the CLI exits with 2, no traceback), never a stray ``ValueError``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fairpack.solver.registry import OptionError


def yes_no(value: Any) -> bool | None:
    """``value`` as a yes/no answer -- a bool, or the strings ``true``/``false`` (any case) -- else None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def flag(extra: Mapping[str, Any], key: str, default: bool) -> bool:
    """A yes/no setting: a bool, or the strings ``true``/``false`` (any case)."""
    value = yes_no(extra.get(key, default))
    if value is None:
        raise OptionError(f"must be true or false, got {extra.get(key)!r}", key)
    return value


def integer(extra: Mapping[str, Any], key: str, default: int, least: int = 0) -> int:
    """A whole number at least ``least`` (a float with no fraction is accepted)."""
    value = extra.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise OptionError(f"must be a whole number, got {value!r}", key)
    try:
        number = float(value)
    except ValueError:
        raise OptionError(f"must be a whole number, got {value!r}", key) from None
    if not number.is_integer() or number < least:
        raise OptionError(f"must be a whole number of at least {least}, got {value!r}", key)
    return int(number)


def duration(extra: Mapping[str, Any], key: str, default: float | None) -> float | None:
    """A finite non-negative time (``default`` when absent or null)."""
    value = extra.get(key)
    if value is None:
        return default
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not (number >= 0 and math.isfinite(number)):
        raise OptionError(f"must be a finite non-negative time, got {value!r}", key)
    return number


def fraction(extra: Mapping[str, Any], key: str, default: float) -> float:
    """A number in [0, 1] (a probability such as Carbyne's altruism)."""
    value = extra.get(key, default)
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not 0 <= number <= 1:
        raise OptionError(f"must be a number in [0, 1], got {value!r}", key)
    return number


def times_by_name(extra: Mapping[str, Any], key: str) -> dict[str, float] | None:
    """A mapping of names (jobs) to finite non-negative times, or ``None`` when absent; a name mapped to
    ``None`` has no time (as in a result's JSON, where an infinite ``T_k`` is null). Only the library can give a
    mapping (``--option`` values are scalars), so a scalar is refused with that said."""
    value = extra.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise OptionError(f"must map job names to times (a library option: extra={{{key!r}: {{job: time}}}}), "
                          f"got {value!r}", key)  # fmt: skip
    times: dict[str, float] = {}
    for name, time in value.items():
        if not isinstance(name, str):
            raise OptionError(f"must map job names to times, got the name {name!r}", key)
        number = duration({f"{key}.{name}": time}, f"{key}.{name}", None)
        if number is not None:
            times[name] = number
    return times


def fair_times(extra: Mapping[str, Any], key: str = "fair_completion") -> bool | dict[str, float]:
    """The fair completion times ``T_k``, one setting for every DAG method: ``true`` (the default) computes them
    from the strict fair-share schedule, ``false`` leaves them out (no ``T_k``, no caps, no lateness), and a
    mapping of job names to times (library only, see :func:`times_by_name`) gives them."""
    value = extra.get(key, True)
    if isinstance(value, Mapping):
        return times_by_name(extra, key) or {}
    answer = yes_no(value)
    if answer is not None:
        return answer
    raise OptionError(f"must be true or false, or map job names to times (a library option: extra={{{key!r}: "
                      f"{{job: time}}}}), got {value!r}", key)  # fmt: skip


def choice(extra: Mapping[str, Any], key: str, default: str, allowed: tuple[str, ...]) -> str:
    value = extra.get(key, default)
    if value not in allowed:
        raise OptionError(f"must be one of {', '.join(allowed)}, got {value!r}", key)
    return str(value)
