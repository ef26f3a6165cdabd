"""Read instance files (YAML or JSON, one schema) into validated ``Instance`` objects.

Every failure raises ``InstanceError`` naming the file, the field at fault (``tenants[3].demand.cpu``;
empty when the file as a whole is bad) and the reason. No other exception escapes, whatever the bytes.

Parsing
-------
* YAML is read event by event (libyaml's C parser when PyYAML has it, its pure-Python parser otherwise)
  straight into dicts and lists, under YAML 1.2 core-schema rules: a plain scalar is ``null``/``~``, a
  boolean ``true``/``false``, a decimal integer, a decimal float (``1e-3``, ``.5``, ``.inf``, ``.nan``)
  or a string. None of YAML 1.1's implicit conversions apply: ``1:30`` (sexagesimal 90),
  ``yes``/``no``/``on``/``off`` (booleans), ``0o17``, ``0x1f``, ``1_000``, dates and ``<<`` merge keys
  all stay strings, so a name stays the name written and a number field refuses them, saying what
  YAML 1.1 would have read. An integer with a leading zero (``010``: 8 in YAML 1.1, 10 in YAML 1.2) is
  ambiguous and stays a string too. Explicit tags other than ``!!str`` (and ``!!map``/``!!seq``) are refused.
* A key given twice in one mapping is an error naming the key, the mapping and both lines (YAML) or
  the mapping (JSON); a second YAML document in the file is an error.
* Numbers are checked where they are used: a string, a boolean or ``null`` where a number is expected
  is refused, never converted.

Limits (``Limits``; every message names the limit it hit)
---------------------------------------------------------
* file size ``max_bytes`` (64 MiB), read no further than that;
* nesting depth ``max_depth`` (100 levels of YAML/JSON collections, and 100 levels of hierarchy);
* ``max_nodes`` (5,000,000) values after alias expansion, so an alias bomb ("billion laughs") stops at
  the alias that crosses it, in bounded time and memory; an alias may not refer to an enclosing node;
* every capacity and demand that is not 0 at least ``min_quantity`` (1e-12: a share of a smaller amount
  overflows; a denormal GPU capacity crashed the hierarchical schedulers);
* every capacity, demand, duration, release and time slot at most ``max_quantity`` (1e15), and each
  resource's cluster total (capacity x count over server classes) too;
* ``count`` a whole number, at most ``max_machines`` (10,000,000) machines in all;
* weights in ``weight_range`` ([1e-6, 1e6]), so weighted shares neither underflow nor overflow;
* ``max_tasks`` (1e9): a stage's task count, all stages' tasks together, and, for a tenant, the tasks
  of it the cluster could hold on its dominant resource (total / demand): one task's dominant share must
  be at least 1 / max_tasks;
* ``max_locality`` (1000): every ``locality`` factor (a task's duration times its factor stays within
  ``max_quantity * max_locality``).

Data placement
--------------
``servers[k].labels`` is a mapping of label names to string values (``rack: r1``); ``blocks`` maps a
block name to its replica machines, each ``server/k`` (machine ``k`` of server class ``server``) or
``server`` when the class has one machine; a stage's ``input`` lists one block per task; ``locality``
gives the duration factors ``node``, ``rack`` and ``remote`` (defaults ``models.types.DEFAULT_LOCALITY``;
positive, not decreasing from node to remote). An unknown machine, block or level is named with its field.

Validation is done in bulk: resource vectors of all servers (tenants, stages) are gathered into one
matrix and checked with numpy; only on failure is the first offending entry located for the message.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from fairpack.models.types import (
    DEFAULT_LOCALITY,
    LOCALITY_LEVELS,
    DataPlacement,
    FloatArray,
    Hierarchy,
    HierarchyNode,
    Instance,
    InstanceError,
    Job,
    Option,
    ServerClass,
    Stage,
    Tenant,
    check_utility,
    printable,
)
from fairpack.models.yaml_subset import NOT_SUBSET, read_subset


@dataclass(frozen=True)
class Limits:
    """Bounds on what the loader reads; see the module docstring for what each protects."""

    max_bytes: int = 64 * 2**20
    max_depth: int = 100
    max_nodes: int = 5_000_000
    max_quantity: float = 1e15
    min_quantity: float = 1e-12
    max_machines: int = 10_000_000
    max_tasks: float = 1e9
    weight_range: tuple[float, float] = (1e-6, 1e6)
    max_locality: float = 1e3

    def __post_init__(self) -> None:
        low, high = self.weight_range
        numbers = (self.max_bytes, self.max_depth, self.max_nodes, self.max_quantity, self.min_quantity,
                   self.max_machines, self.max_tasks, self.max_locality)  # fmt: skip
        if min(numbers) <= 0 or not 0 < low <= high:
            raise ValueError(f"limits must be positive: {self}")


DEFAULT_LIMITS = Limits()


# ------------------------------------------------------------------------------------------------- YAML


def _yaml_parser(text: str, fast: bool = True) -> Any:
    """An event parser over ``text``: libyaml's (C) when available and ``fast``, else PyYAML's pure-Python one."""
    import yaml

    if fast and getattr(yaml, "__with_libyaml__", False):
        from yaml._yaml import CParser

        return CParser(text)
    return yaml.SafeLoader(text)  # only its Reader/Scanner/Parser are used (get_event)


# YAML 1.2 core schema, plain scalars only. Keywords are looked up first, then numbers by pattern.
_KEYWORDS: dict[str, Any] = {
    **dict.fromkeys(("", "~", "null", "Null", "NULL")),
    **dict.fromkeys(("true", "True", "TRUE"), True),
    **dict.fromkeys(("false", "False", "FALSE"), False),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
}
_NUMBER = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
_LEADING_ZERO = re.compile(r"[-+]?0[0-9]")
_NUMBER_START = frozenset("0123456789+-.")
_STR_TAG = "tag:yaml.org,2002:str"
_COLLECTION_TAGS = (None, "!", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")


def _plain_scalar(value: str) -> Any:
    """Resolve a plain (unquoted, untagged) scalar by YAML 1.2 core-schema rules."""
    if value[:1] not in _NUMBER_START:
        return _KEYWORDS.get(value, value)  # null, booleans, or a string
    if _NUMBER.match(value) is None:
        return _KEYWORDS.get(value, value)  # .inf, .nan, or a string such as 1:30, 0x1f, 1_000
    if "." in value or "e" in value or "E" in value:
        return float(value)  # 1e999 reads as inf and is refused where a finite number is expected
    if _LEADING_ZERO.match(value) or len(value) > 4000:  # 010 is octal in YAML 1.1; int() caps digits
        return value
    return int(value)


def _mark(event: Any) -> str:
    mark = event.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "unknown position"


class _Open:
    """A collection being read: its container, pending key (mappings), anchor and expanded size."""

    __slots__ = ("anchor", "container", "is_mapping", "key", "size")

    def __init__(self, container: dict[Any, Any] | list[Any], anchor: str | None) -> None:
        self.container = container
        self.is_mapping = isinstance(container, dict)
        self.key: Any = _NO_KEY
        self.anchor = anchor
        self.size = 1


_NO_KEY = object()


def _path(stack: Sequence[_Open]) -> str:
    """The field path of the value being read (``tenants[2].demand``): every open collection's pending
    key or next index (a mapping waiting for a key adds nothing)."""
    path = ""
    for frame in stack:
        if not frame.is_mapping:
            path += f"[{len(frame.container)}]"
        elif frame.key is not _NO_KEY:
            path += f".{frame.key}" if path else str(frame.key)
    return path


def _read_yaml(text: str, limits: Limits, fast: bool = True) -> Any:  # noqa: C901  (one loop: runs once per event)
    """Compose one YAML document into plain Python data, iteratively, under ``limits``."""
    import yaml  # imported when needed: the plain YAML fairpack writes is read without it (models.yaml_subset)

    parser = _yaml_parser(text, fast)
    get_event = parser.get_event
    scalar_event, alias_event = yaml.ScalarEvent, yaml.AliasEvent
    mapping_start, sequence_start = yaml.MappingStartEvent, yaml.SequenceStartEvent
    collection_end = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    stack: list[_Open] = []
    anchors: dict[str, tuple[Any, int]] = {}
    total = 0
    root: Any = None

    def fail(reason: str, event: Any) -> InstanceError:
        return InstanceError(f"{reason} ({_mark(event)})", _path(stack))

    get_event()  # stream start
    event = get_event()
    if isinstance(event, yaml.StreamEndEvent):
        return None  # an empty file
    while True:  # one pass over the document's events
        event = get_event()
        kind = event.__class__
        if kind is scalar_event:
            tag = event.tag
            if tag is None and event.implicit[0]:
                value = _plain_scalar(event.value)
            elif tag is None or tag == "!" or tag == _STR_TAG:
                value = event.value
            else:
                raise fail(f"the YAML tag {tag!r} is not supported (only !!str)", event)
            size = 1
            total += 1
            if event.anchor is not None:
                anchors[event.anchor] = (value, 1)
        elif kind is mapping_start or kind is sequence_start:
            if event.tag not in _COLLECTION_TAGS:
                raise fail(f"the YAML tag {event.tag!r} is not supported", event)
            if len(stack) >= limits.max_depth:
                raise fail(f"nesting deeper than the limit of {limits.max_depth} levels", event)
            stack.append(_Open({} if kind is mapping_start else [], event.anchor))
            total += 1
            continue
        elif kind in collection_end:  # counted when it opened (and its items as they came)
            frame = stack.pop()
            value, size = frame.container, frame.size
            if frame.anchor is not None:
                anchors[frame.anchor] = (value, size)
        elif kind is alias_event:
            if event.anchor not in anchors:
                raise fail(f"alias *{event.anchor} refers to no complete node (unknown, or an enclosing one)", event)
            value, size = anchors[event.anchor]
            total += size  # an alias stands for a whole copy of its node: count it expanded
        else:
            raise fail(f"unexpected YAML event {kind.__name__}", event)
        if total > limits.max_nodes:
            raise fail(f"more than the limit of {limits.max_nodes} values (aliases counted expanded)", event)
        if not stack:
            root = value
            break
        top = stack[-1]
        top.size += size
        if not top.is_mapping:
            top.container.append(value)  # type: ignore[union-attr]
        elif top.key is not _NO_KEY:
            top.container[top.key] = value
            top.key = _NO_KEY
        elif value.__class__ is not str:
            raise fail(f"a mapping key must be a name (a string), got {_describe(value)}", event)
        elif value in top.container:
            path = _path(stack)
            raise InstanceError(
                f"duplicate key {value!r} ({_mark(event)}): a key may appear once in a mapping",
                f"{path}.{value}" if path else value,
            )
        else:
            top.key = value
    get_event()  # document end
    event = get_event()
    if not isinstance(event, yaml.StreamEndEvent):
        raise InstanceError(f"a second YAML document starts at {_mark(event)}; a file holds one instance")
    return root


# ------------------------------------------------------------------------------------------------- JSON


class _Duplicated(dict[str, Any]):
    """A JSON object that repeated a key (the loader reports it with its path)."""

    duplicate = ""


def _json_object(pairs: list[tuple[str, Any]], found: list[bool]) -> dict[str, Any]:
    mapping = dict(pairs)
    if len(mapping) == len(pairs):
        return mapping
    found.append(True)
    seen: set[str] = set()
    marked = _Duplicated(mapping)
    for key, _ in pairs:
        if key in seen:
            marked.duplicate = key
            break
        seen.add(key)
    return marked


_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def _read_json(data: bytes, limits: Limits) -> Any:
    # Depth and size are measured on the bytes before parsing (strings blanked out), so a deep document
    # never reaches json's recursive decoder.
    skeleton = np.frombuffer(_JSON_STRING.sub(b'""', data), dtype=np.uint8)
    opens = (skeleton == ord("[")) | (skeleton == ord("{"))
    closes = (skeleton == ord("]")) | (skeleton == ord("}"))
    if opens.any() and int(np.cumsum(opens.astype(np.int64) - closes).max()) > limits.max_depth:
        raise InstanceError(f"nesting deeper than the limit of {limits.max_depth} levels")
    if int(opens.sum()) + int((skeleton == ord(",")).sum()) + 1 > limits.max_nodes:
        raise InstanceError(f"more than the limit of {limits.max_nodes} values")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InstanceError(f"not UTF-8 text: byte {data[error.start]:#04x} at offset {error.start}") from None
    found: list[bool] = []
    try:
        parsed = json.loads(text, object_pairs_hook=lambda pairs: _json_object(pairs, found))
    except json.JSONDecodeError as error:
        raise InstanceError("not valid JSON: " + " ".join(str(error).split())) from None
    except (ValueError, RecursionError):  # int() refuses more than 4,300 digits (the depth was checked above)
        raise InstanceError("not valid JSON: a number has more digits than Python reads (4,300)") from None
    if found:
        path, key = _find_duplicate(parsed)
        raise InstanceError(
            f"duplicate key {key!r}: a key may appear once in an object", f"{path}.{key}" if path else key
        )
    return parsed


def _find_duplicate(data: Any) -> tuple[str, Any]:
    """Path and key of the first object that repeated a key (depth-first), or ("", None)."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            if isinstance(value, _Duplicated):
                return path, value.duplicate
            stack.extend((f"{path}.{key}" if path else str(key), item) for key, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((f"{path}[{position}]", item) for position, item in reversed(list(enumerate(value))))
    return "", None


# ------------------------------------------------------------------------------------------- values


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        if len(value) <= 60:
            return f"the string {value!r}"
        return f"an integer of {len(value)} digits" if value.isdigit() else f"a string of {len(value)} characters"
    if isinstance(value, int | float):
        return f"the number {value!r}" if abs(value) < 1e30 or not isinstance(value, int) else "a huge integer"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def _yaml11_hint(value: str) -> str:
    """A note when YAML 1.1 (PyYAML's default) would have read ``value``, unquoted, as something else."""
    if len(value) > 40:
        return ""
    import yaml

    tag = yaml.resolver.Resolver().resolve(yaml.ScalarNode, value, (True, False))
    kinds = {"int": "an integer", "float": "a float", "bool": "a boolean", "timestamp": "a date"}
    kind = kinds.get(tag.rsplit(":", 1)[-1])
    if kind is None:
        return ""
    return (
        f" (numbers are written unquoted, in decimal; YAML 1.1 would read {value} as {kind}, but fairpack reads "
        "YAML 1.2 and converts nothing implicitly)"
    )


def _not_a_number(value: Any, field: str, whole: bool = False) -> InstanceError:
    expected = "a whole number" if whole else "a number"
    hint = _yaml11_hint(value) if isinstance(value, str) else ""
    return InstanceError(f"must be {expected}, got {_describe(value)}{hint}", field)


def _number(value: Any, field: str) -> float:
    """A Python or numpy number as float; anything else (str, bool, None) is refused."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise _not_a_number(value, field)
    try:
        return float(value)
    except OverflowError:
        raise InstanceError("number too large", field) from None


def _numbers(values: Sequence[Any], where: Callable[[int], str]) -> FloatArray:
    """Many numbers as one float array; the first non-number is located for the message."""
    for position, value in enumerate(values):
        if type(value) is not float and type(value) is not int:
            _number(value, where(position))
    try:
        return np.array(values, dtype=np.float64).reshape(-1)
    except OverflowError:
        for position, value in enumerate(values):
            if isinstance(value, int) and abs(value) > 1e308:
                raise InstanceError("number too large", where(position)) from None
        raise


def _check_range(
    values: FloatArray, where: Callable[[int], str], low: float, high: float, what: str, low_open: bool = False
) -> None:
    """Every value finite and in [low, high] (``(low, high]`` if ``low_open``); else locate the first."""
    with np.errstate(invalid="ignore"):
        good = (values > low if low_open else values >= low) & (values <= high)
    if good.all():
        return
    position = int(np.argmin(good))
    value = float(values[position])
    if what == "weight":
        reason = (f"weight must be a positive number in the accepted range [{low:g}, {high:g}] (so weighted "
                  f"shares neither underflow nor overflow), got {value!r}")  # fmt: skip
    elif math.isnan(value) or math.isinf(value):
        reason = f"{what} must be finite, got {value}"
    elif low == 0 and low_open and value <= 0:
        reason = f"{what} must be positive, got {value:g}"
    elif low == 0 and value < 0:
        reason = f"{what} must be non-negative, got {value:g}"
    elif value < low or (low_open and value == low):
        reason = f"{what} must be at least {low:g}, got {value:g}"
    else:
        reason = f"{what} {value:g} is above the limit of {high:g}"
    raise InstanceError(reason, where(position))


def _whole_numbers(values: Sequence[Any], where: Callable[[int], str], low: int, high: float, what: str) -> list[int]:
    """Whole numbers in [low, high] as Python ints (integral floats accepted); else locate the first bad."""
    result = []
    for position, value in enumerate(values):
        if type(value) is not int:
            integral = isinstance(value, float | np.floating) and math.isfinite(value) and float(value).is_integer()
            if integral or isinstance(value, np.integer):
                value = int(value)
            else:
                if isinstance(value, float) and not math.isnan(value):
                    raise InstanceError(f"{what} must be a whole number, got {value!r}", where(position))
                raise _not_a_number(value, where(position), whole=True)
        if not low <= value <= high:
            shown = f"{value:,}" if abs(value) < 10**30 else f"~1e{len(str(abs(value))) - 1}"
            if value < low:
                reason = f"{what} must be a positive integer (at least {low}), got {shown}"
            else:
                reason = f"{what} {shown} is above the limit of {high:,.0f}"
            raise InstanceError(reason, where(position))
        result.append(value)
    return result


def _matrix(
    mappings: Sequence[Any], where: Callable[[int], str], resources: tuple[str, ...], limits: Limits, what: str
) -> FloatArray:
    """Resource vectors (mappings name -> amount, missing = 0) of many entities as one read-only matrix.

    Keys are matched to resources one by one (they are Python dict entries); the amounts are checked in
    bulk (finite, non-negative, at most ``limits.max_quantity``). Valid input takes a bulk path; anything
    else is walked entry by entry, which locates the first bad one for the message.
    """
    fast = _matrix_fast(mappings, resources, limits)
    if fast is not None:
        return fast
    index = {name: column for column, name in enumerate(resources)}
    rows: list[int] = []
    columns: list[int] = []
    values: list[Any] = []
    for row, mapping in enumerate(mappings):
        if not isinstance(mapping, dict):
            raise InstanceError(f"must be a mapping of resource amounts, got {_describe(mapping)}", where(row))
        for key, value in mapping.items():
            column = index.get(key)
            if column is None:
                raise InstanceError(
                    f"unknown resource {key!r} (resources are {list(resources)})", f"{where(row)}.{key}"
                )
            rows.append(row)
            columns.append(column)
            values.append(value)

    def located(k: int) -> str:
        return f"{where(rows[k])}.{resources[columns[k]]}"

    amounts = _numbers(values, located)
    with np.errstate(invalid="ignore"):
        bad = ~(amounts >= 0)  # negative or NaN
    if bad.any():
        k = int(np.argmax(bad))
        reason = "must be finite and non-negative" if not math.isnan(amounts[k]) else "must be finite"
        raise InstanceError(f"{reason}, got {float(amounts[k])!r}", located(k))
    _check_range(amounts, located, 0.0, limits.max_quantity, what)
    tiny = (amounts > 0) & (amounts < limits.min_quantity)
    if tiny.any():
        k = int(np.argmax(tiny))
        raise InstanceError(f"{what} {float(amounts[k]):g} is below the smallest amount of {limits.min_quantity:g} "
                            "(shares of it would overflow): write 0, or use a smaller unit", located(k))  # fmt: skip
    matrix = np.zeros((len(mappings), len(resources)))
    matrix[rows, columns] = amounts
    matrix.setflags(write=False)
    return matrix


def _matrix_fast(mappings: Sequence[Any], resources: tuple[str, ...], limits: Limits) -> FloatArray | None:
    """``_matrix`` of valid input in bulk (every mapping a dict of known resources to finite Python numbers in
    range), or None for ``_matrix`` to walk and name the first bad entry."""
    known = frozenset(resources)
    if not all(type(mapping) is dict and known.issuperset(mapping) for mapping in mappings):
        return None
    flat = [mapping.get(name, 0.0) for mapping in mappings for name in resources]
    if not {float, int}.issuperset(map(type, flat)):
        return None
    try:
        matrix = np.array(flat, dtype=np.float64).reshape(len(mappings), len(resources))
    except OverflowError:
        return None
    with np.errstate(invalid="ignore"):
        if not (((matrix == 0) | (matrix >= limits.min_quantity)) & (matrix <= limits.max_quantity)).all():
            return None  # also for NaN, and amounts too small to divide by
    matrix.setflags(write=False)
    return matrix


def _valid_names(values: Sequence[Any]) -> bool:
    """Whether every value passes ``_name`` (checked in bulk; ``_name`` itself words the message)."""
    if not {str}.issuperset(map(type, values)):
        return False
    return all(map(str.strip, values)) and "".join(values).isprintable()


# ------------------------------------------------------------------------------------------- schema

# kind -> (required keys, allowed keys)
_SCHEMA: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "instance": (("resources", "servers"),
                 ("name", "resources", "servers", "tenants", "hierarchy", "jobs", "time", "blocks", "locality")),
    "server": (("name", "capacity"), ("name", "capacity", "count", "labels")),
    "tenant": (("name", "demand"), ("name", "demand", "weight", "tasks")),
    "node": (("name",), ("name", "weight", "demand", "tasks", "parent", "children")),
    "job": (("name", "stages"), ("name", "weight", "release", "tenant", "deadline", "utility", "stages")),
    "stage": (("name", "demand"), ("name", "tasks", "duration", "demand", "after", "input", "options")),
    "option": (("duration",), ("on", "same", "duration", "demand")),
    "time": ((), ("slot",)),
    "locality": ((), LOCALITY_LEVELS),
}
_ALLOWED = {kind: frozenset(allowed) for kind, (_, allowed) in _SCHEMA.items()}


def _entry(value: Any, field: str, kind: str) -> dict[str, Any]:
    """``value`` as a mapping of ``kind``: no unknown keys, every required one present."""
    if not isinstance(value, dict):
        raise InstanceError(f"must be a mapping ({_article(kind)} {kind}), got {_describe(value)}", field)
    if not _ALLOWED[kind].issuperset(value):
        unknown = next(key for key in value if key not in _ALLOWED[kind])
        allowed = ", ".join(_SCHEMA[kind][1])
        raise InstanceError(
            f"unknown key {unknown!r} ({_article(kind)} {kind} has {allowed})",
            f"{field}.{unknown}" if field else unknown,
        )
    for key in _SCHEMA[kind][0]:
        if key not in value:
            raise InstanceError(
                f"required field missing ({_article(kind)} {kind} needs {', '.join(_SCHEMA[kind][0])})",
                f"{field}.{key}" if field else key,
            )
    return value


def _article(noun: str) -> str:
    return "an" if noun[0] in "aeiou" else "a"


def _list(value: Any, field: str, what: str) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise InstanceError(f"must be a list of {what}, got {_describe(value)}", field)
    return list(value)


def _name(value: Any, field: str) -> str:
    if not isinstance(value, str):
        hint = f" (quote it: '{value}')" if isinstance(value, int | float) and not isinstance(value, bool) else ""
        if isinstance(value, bool):
            hint = " (quote it)"
        raise InstanceError(f"name must be a string, got {_describe(value)}{hint}", field)
    if not value.strip():
        raise InstanceError("name must be a non-empty string", field)
    if not value.isprintable():
        raise InstanceError(f"name {printable(value)!r} has characters that cannot be printed", field)
    return value


def _names_list(value: Any, field: str, what: str) -> list[str]:
    """A list of names (block names, machine names), each checked like a name."""
    values = _list(value, field, what)
    return [_name(item, f"{field}[{k}]") for k, item in enumerate(values)]


def _names(entries: Sequence[dict[str, Any]], where: Callable[[int], str]) -> list[str]:
    names = [entry["name"] for entry in entries]
    if _valid_names(names):
        return names
    return [_name(entry["name"], f"{where(position)}.name") for position, entry in enumerate(entries)]


def _optional(entries: Sequence[dict[str, Any]], key: str, default: Any) -> list[Any]:
    return [entry.get(key, default) for entry in entries]


def _weights(entries: Sequence[dict[str, Any]], where: Callable[[int], str], limits: Limits) -> FloatArray:
    values = _numbers(_optional(entries, "weight", 1.0), lambda k: f"{where(k)}.weight")
    low, high = limits.weight_range
    _check_range(values, lambda k: f"{where(k)}.weight", low, high, "weight")
    return values


def _task_caps(entries: Sequence[dict[str, Any]], where: Callable[[int], str]) -> FloatArray:
    """Optional task caps (``null`` or absent = unbounded, ``.inf`` too); non-negative."""
    raw = [math.inf if value is None else value for value in _optional(entries, "tasks", None)]
    caps = _numbers(raw, lambda k: f"{where(k)}.tasks")
    with np.errstate(invalid="ignore"):
        bad = ~(caps >= 0)
    if bad.any():
        k = int(np.argmax(bad))
        raise InstanceError(f"task count must be non-negative, got {caps[k]!r}", f"{where(k)}.tasks")
    return caps


@dataclass(frozen=True)
class _Tenants:
    """Flat tenants read in bulk (from ``tenants`` or from a hierarchy's leaves)."""

    names: list[str]
    demand: FloatArray
    weights: FloatArray
    caps: FloatArray

    def build(self, where: Callable[[int], str]) -> tuple[Tenant, ...]:
        return Tenant.many(self.names, self.demand, self.weights, self.caps, where)


def _read_tenants(
    entries: Sequence[dict[str, Any]], where: Callable[[int], str], resources: tuple[str, ...], limits: Limits
) -> _Tenants:
    names = _names(entries, where)
    demand = _matrix(
        [entry["demand"] for entry in entries], lambda k: f"{where(k)}.demand", resources, limits, "demand"
    )
    return _Tenants(names, demand, _weights(entries, where, limits), _task_caps(entries, where))


def _check_task_scale(
    tenants: _Tenants, total: FloatArray, resources: tuple[str, ...], where: Callable[[int], str], limits: Limits
) -> None:
    """One task's dominant share must be at least 1 / max_tasks: else task counts grow astronomically
    large (``demand: 1e-300``) and shares fall below what a solver's tolerances can tell from zero."""
    if not tenants.names:
        return
    present = total > 0
    shares = np.zeros_like(tenants.demand)
    with np.errstate(over="ignore"):  # a task larger than the cluster is allowed (it runs nowhere)
        shares[:, present] = tenants.demand[:, present] / total[present]
        dominant = shares.max(axis=1)
        small = (dominant > 0) & (dominant * limits.max_tasks < 1)
    if small.any():
        k = int(np.argmax(small))
        resource = resources[int(np.argmax(shares[k]))]
        raise InstanceError(
            f"one task needs only {dominant[k]:.3g} of the cluster's {resource} (its dominant share): the cluster "
            f"could hold {1 / float(dominant[k]):.3g} such tasks, above the limit of {limits.max_tasks:.3g} tasks per "
            "tenant (the ratio does not depend on the unit: raise the demand)",
            f"{where(k)}.demand",
        )


# ---------------------------------------------------------------------------------------- hierarchy


def _nested_nodes(root: Any, limits: Limits) -> list[tuple[dict[str, Any], int, str]]:
    """Flatten a nested tree into (entry, parent index, field path) in depth-first order."""
    flat: list[tuple[dict[str, Any], int, str]] = []
    stack: list[tuple[Any, int, str, int]] = [(root, -1, "hierarchy", 0)]
    while stack:
        value, parent, path, depth = stack.pop()
        spec = _entry(value, path, "node")
        if "parent" in spec:
            raise InstanceError("'parent' is only allowed in the flat list form", f"{path}.parent")
        if depth > limits.max_depth:
            raise InstanceError(f"the hierarchy is deeper than the limit of {limits.max_depth} levels", path)
        position = len(flat)
        flat.append((spec, parent, path))
        children = spec.get("children")
        if children is not None:
            children = _list(children, f"{path}.children", "nodes")
            for child_position, child in reversed(list(enumerate(children))):
                stack.append((child, position, f"{path}.children[{child_position}]", depth + 1))
    return flat


def _flat_nodes(values: list[Any], limits: Limits) -> list[tuple[dict[str, Any], int, str]]:
    """Order a parent-pointer list root first; cycles and dangling parents are errors."""
    links = _flat_links_fast(values)
    specs, parents = links if links is not None else _flat_links(values)
    root = parents.index(-1)
    children: dict[int, list[int]] = {}
    for position, parent in enumerate(parents):
        if parent >= 0:
            children.setdefault(parent, []).append(position)
    # Depth-first preorder, children in file order: the same node (and tenant) order as the nested form,
    # so a flat list written by ``instance_to_dict`` reads back unchanged.
    order: list[int] = []
    stack = [(root, 0)]
    while stack:
        current, depth = stack.pop()
        if depth > limits.max_depth:
            raise InstanceError(
                f"the hierarchy is deeper than the limit of {limits.max_depth} levels", f"hierarchy[{current}]"
            )
        order.append(current)
        stack.extend((child, depth + 1) for child in reversed(children.get(current, [])))
    if len(order) != len(specs):
        stuck = sorted(str(specs[i]["name"]) for i in set(range(len(specs))) - set(order))
        shown = stuck if len(stuck) <= 10 else [*stuck[:10], f"... {len(stuck) - 10} more"]
        raise InstanceError(f"parent links form a cycle through {shown}", "hierarchy")
    new_index = {old: new for new, old in enumerate(order)}
    new_index[-1] = -1
    return [(specs[old], new_index[parents[old]], f"hierarchy[{old}]") for old in order]


def _flat_links_fast(values: list[Any]) -> tuple[list[dict[str, Any]], list[int]] | None:
    """``_flat_links`` of a valid list, in bulk; None when anything is wrong (``_flat_links`` names it)."""
    allowed = _ALLOWED["node"]
    if not all(type(value) is dict and "name" in value and allowed.issuperset(value) and value.get("children") is None
               for value in values):  # fmt: skip
        return None
    names = [value["name"] for value in values]
    if not _valid_names(names):
        return None
    by_name: dict[Any, int] = dict(zip(names, range(len(names)), strict=True))
    if len(by_name) != len(names):
        return None
    by_name[None] = -1  # the root's
    try:
        found = [by_name.get(value.get("parent"), -2) for value in values]
    except TypeError:  # an unhashable parent
        return None
    if -2 in found or found.count(-1) != 1:
        return None
    return values, found


def _flat_links(values: list[Any]) -> tuple[list[dict[str, Any]], list[int]]:
    """The nodes checked one by one (entries, names, one root, parents that exist) and each one's parent
    position (-1 for the root); raises on the first fault."""
    specs = [_entry(value, f"hierarchy[{position}]", "node") for position, value in enumerate(values)]
    by_name: dict[str, int] = {}
    for position, spec in enumerate(specs):
        name = _name(spec["name"], f"hierarchy[{position}].name")
        if name in by_name:
            raise InstanceError(f"duplicate node name {name!r}", f"hierarchy[{position}].name")
        if spec.get("children") is not None:
            raise InstanceError("use either nested children or flat parent links", f"hierarchy[{position}].children")
        by_name[name] = position
    roots = [i for i, spec in enumerate(specs) if spec.get("parent") is None]
    if len(roots) != 1:
        raise InstanceError(f"a hierarchy needs exactly one root, found {len(roots)}", "hierarchy")
    parents = []
    for position, spec in enumerate(specs):
        parent = spec.get("parent")
        if parent is None:
            parents.append(-1)
            continue
        if not isinstance(parent, str) or parent not in by_name:
            raise InstanceError(f"unknown parent {parent!r}", f"hierarchy[{position}].parent")
        parents.append(by_name[parent])
    return specs, parents


def _read_hierarchy(value: Any, resources: tuple[str, ...], limits: Limits) -> tuple[Hierarchy, _Tenants, list[str]]:
    """The tree and its leaves as tenants (with each leaf's field path)."""
    flat = _flat_nodes(list(value), limits) if isinstance(value, list | tuple) else _nested_nodes(value, limits)
    # A root alone is a tree too: it is the one leaf (every method treats it as one tenant).
    has_children = {parent for _, parent, _ in flat if parent >= 0}
    names = [spec["name"] for spec, _, _ in flat]
    leaves = [position for position in range(len(flat)) if position not in has_children]
    is_leaf = set(leaves)
    # Valid trees are checked in bulk; otherwise the walk below finds the first fault and words it.
    valid = _valid_names(names) and len(set(names)) == len(names) and all(
        (spec.get("demand") is not None) if position in is_leaf else (spec.get("demand") is None
                                                                      and spec.get("tasks") is None)
        for position, (spec, _, _) in enumerate(flat))  # fmt: skip
    if not valid:
        _check_nodes(flat, has_children)
    weights = _weights([spec for spec, _, _ in flat], lambda k: flat[k][2], limits)
    leaf_paths = [flat[position][2] for position in leaves]
    tenants = _read_tenants([flat[position][0] for position in leaves], leaf_paths.__getitem__, resources, limits)
    tenant_of = [-1] * len(flat)
    for k, position in enumerate(leaves):
        tenant_of[position] = k
    nodes = HierarchyNode.many(names, [parent for _, parent, _ in flat], weights, tenant_of, lambda k: flat[k][2])
    return Hierarchy(nodes), tenants, leaf_paths


def _check_nodes(flat: list[tuple[dict[str, Any], int, str]], has_children: set[int]) -> None:
    """The nodes one by one, in order: raise the first fault (a bad or repeated name, a leaf without
    demand, an internal node with a demand or a task cap)."""
    names = [_name(spec["name"], f"{path}.name") for spec, _, path in flat]
    seen: dict[str, str] = {}
    for position, (spec, _, path) in enumerate(flat):
        name = names[position]
        if name in seen:
            raise InstanceError(f"duplicate node name {name!r} (also at {seen[name]})", f"{path}.name")
        seen[name] = path
        if position not in has_children:
            if spec.get("demand") is None:
                raise InstanceError("a leaf needs a demand vector", path)
        elif spec.get("demand") is not None:
            raise InstanceError("only leaves carry a demand", f"{path}.demand")
        elif spec.get("tasks") is not None:
            raise InstanceError(
                "only leaves carry a task cap ('tasks'); an internal node's share is its leaves'", f"{path}.tasks"
            )


# --------------------------------------------------------------------------------------------- jobs


def _read_jobs(value: Any, resources: tuple[str, ...], limits: Limits) -> list[Job]:
    entries = [_entry(job, f"jobs[{k}]", "job") for k, job in enumerate(_list(value, "jobs", "jobs"))]
    names = _names(entries, lambda k: f"jobs[{k}]")
    weights = _weights(entries, lambda k: f"jobs[{k}]", limits)
    release = _numbers(_optional(entries, "release", 0.0), lambda k: f"jobs[{k}].release")
    _check_range(release, lambda k: f"jobs[{k}].release", 0.0, limits.max_quantity, "release")
    # A job's tenant (queue) is a name; null or absent: the job is its own tenant.
    job_tenants = [
        "" if value is None else _name(value, f"jobs[{k}].tenant")
        for k, value in enumerate(_optional(entries, "tenant", None))
    ]
    deadline = _numbers(
        [math.inf if value is None else value for value in _optional(entries, "deadline", None)],
        lambda k: f"jobs[{k}].deadline",
    )
    # null, absent or .inf: no deadline; otherwise a positive time within the quantity limit.
    _check_range(np.where(deadline == math.inf, 1.0, deadline), lambda k: f"jobs[{k}].deadline", 0.0,
                 limits.max_quantity, "deadline", low_open=True)  # fmt: skip
    # All stages of all jobs in one block, each remembering its job and position.
    stages: list[dict[str, Any]] = []
    owner: list[tuple[int, int]] = []
    for k, job in enumerate(entries):
        listed = _list(job["stages"], f"jobs[{k}].stages", "stages")
        if not listed:
            raise InstanceError("a job needs at least one stage", f"jobs[{k}].stages")
        for s, stage in enumerate(listed):
            stages.append(_entry(stage, f"jobs[{k}].stages[{s}]", "stage"))
            owner.append((k, s))

    def where(i: int) -> str:
        return f"jobs[{owner[i][0]}].stages[{owner[i][1]}]"

    stage_names = _names(stages, where)
    tasks = _whole_numbers(_optional(stages, "tasks", 1), lambda i: f"{where(i)}.tasks", 1, limits.max_tasks, "tasks")
    if sum(tasks) > limits.max_tasks:
        raise InstanceError(
            f"the jobs hold {sum(tasks):,} tasks in all, above the limit of {limits.max_tasks:,.0f}", "jobs"
        )
    read: dict[tuple[Any, ...], _OptionPart] = {}
    parts = [_read_option_parts(stage, where(i), limits, resources, read) for i, stage in enumerate(stages)]
    options = [tuple(option for option, _ in found) for found in parts]
    durations = _numbers([_stage_duration(stage, options[i], where(i)) for i, stage in enumerate(stages)],
                         lambda i: f"{where(i)}.duration")  # fmt: skip
    _check_range(durations, lambda i: f"{where(i)}.duration", 0.0, limits.max_quantity, "duration")
    utilities = [_read_utility(job.get("utility"), f"jobs[{k}].utility", limits) for k, job in enumerate(entries)]
    demand = _matrix([stage["demand"] for stage in stages], lambda i: f"{where(i)}.demand", resources, limits, "demand")
    for i, found in enumerate(parts):
        if any(changed is not None for _, changed in found):
            options[i] = _resolve_options(found, demand[i])
    jobs = []
    first = 0
    for k, job in enumerate(entries):
        count = len(job["stages"])
        block = range(first, first + count)
        positions = {stage_names[i]: i - first for i in block}
        built = []
        for i in block:
            after = _list(stages[i].get("after", []), f"{where(i)}.after", "stage names")
            parents = []
            for a, parent in enumerate(after):
                if not isinstance(parent, str) or parent not in positions:
                    raise InstanceError(f"depends on unknown stage {parent!r}", f"{where(i)}.after[{a}]")
                parents.append(positions[parent])
            blocks = tuple(_names_list(stages[i].get("input", []), f"{where(i)}.input", "block names"))
            if blocks and len(blocks) != tasks[i]:
                raise InstanceError(f"{len(blocks)} input blocks for {tasks[i]} tasks (one block per task)",
                                    f"{where(i)}.input")  # fmt: skip
            try:
                built.append(Stage(stage_names[i], tasks[i], float(durations[i]), demand[i], tuple(parents), blocks,
                                   options[i]))  # fmt: skip
            except InstanceError as error:
                raise error.located(error.source, where(i)) from None
        try:
            jobs.append(Job(names[k], tuple(built), float(weights[k]), float(release[k]), job_tenants[k],
                            float(deadline[k]), utilities[k]))  # fmt: skip
        except InstanceError as error:
            raise error.located(error.source, f"jobs[{k}]") from None
        first += count
    return jobs


#: An option as read, and the resources its ``demand`` sets (column -> amount; None: no demand of its own).
_OptionPart = tuple[Option, dict[int, float] | None]


def _option_key(value: Any) -> tuple[Any, ...] | None:
    """A hashable key of a plainly valid-looking option entry (string labels, a number duration, a mapping of
    string resources to numbers as demand), else None."""
    if type(value) is not dict or not _ALLOWED["option"].issuperset(value):
        return None
    on, same, duration, demand = value.get("on"), value.get("same"), value.get("duration"), value.get("demand")
    if type(duration) not in (int, float) or not (on is None or type(on) is dict) or not (same is None or
                                                                                          type(same) is str):
        return None
    labels = tuple(on.items()) if on else ()
    if not all(type(k) is str and type(v) is str for k, v in labels):
        return None
    if demand is None:
        return labels, same, duration, None
    if type(demand) is not dict or not all(type(k) is str and type(v) in (int, float) for k, v in demand.items()):
        return None
    return labels, same, duration, tuple(demand.items())


def _read_options(stage: dict[str, Any], where: str, limits: Limits, resources: tuple[str, ...] = (),
                  demand: FloatArray | None = None) -> tuple[Option, ...]:  # fmt: skip
    """A stage's placement ``options`` (see ``_read_option_parts``), each option's ``demand`` resolved against
    the stage's ``demand`` vector (zeros when not given)."""
    found = _read_option_parts(stage, where, limits, resources)
    if not any(changed is not None for _, changed in found):
        return tuple(option for option, _ in found)
    return _resolve_options(found, np.zeros(len(resources)) if demand is None else demand)


def _resolve_options(found: Sequence[_OptionPart], demand: FloatArray) -> tuple[Option, ...]:
    """Options with their own demand as whole vectors: the stage's ``demand`` with the resources the option
    names replaced by the option's amounts (the rest kept)."""
    resolved = []
    for option, changed in found:
        if changed is None:
            resolved.append(option)
            continue
        vector = np.array(demand, dtype=np.float64)
        for column, amount in changed.items():
            vector[column] = amount
        vector.setflags(write=False)
        resolved.append(replace(option, demand=vector))
    return tuple(resolved)


def _read_option_parts(stage: dict[str, Any], where: str, limits: Limits, resources: tuple[str, ...],
                       cache: dict[tuple[Any, ...], _OptionPart] | None = None) -> list[_OptionPart]:  # fmt: skip
    """A stage's placement ``options`` (selector ``on``, gang key ``same``, ``duration``, ``demand``), in
    preference order, each with the resource amounts its own ``demand`` sets (checked as a stage's demand).

    ``cache`` keeps the options already read, by their entry: a file that repeats one option over many stages
    checks it once (an entry that fails is never cached, so its message names the first stage that has it).
    """
    if stage.get("options") is None:
        return []
    listed = _list(stage["options"], f"{where}.options", "options")
    if not listed:
        raise InstanceError("a stage's options list needs at least one option (or leave it out)", f"{where}.options")
    found: list[_OptionPart] = []
    for o, value in enumerate(listed):
        key = _option_key(value) if cache is not None else None
        if key is not None and cache is not None and key in cache:
            found.append(cache[key])
            continue
        field = f"{where}.options[{o}]"
        entry = _entry(value, field, "option")
        duration = _number(entry["duration"], f"{field}.duration")
        _check_one(duration, f"{field}.duration", limits.max_quantity, "duration")
        same = "" if entry.get("same") is None else _name(entry["same"], f"{field}.same")
        selector = _labels(entry.get("on"), f"{field}.on")
        changed: dict[int, float] | None = None
        if entry.get("demand") is not None:
            at = functools.partial(_fixed, f"{field}.demand")
            row = _matrix([entry["demand"]], at, resources, limits, "demand")[0]
            given = entry["demand"]
            changed = {column: float(row[column]) for column, name in enumerate(resources) if name in given}
        try:
            option = Option(duration, selector, same)
        except InstanceError as error:
            raise error.located(error.source, field) from None
        found.append((option, changed))
        if key is not None and cache is not None:
            cache[key] = (option, changed)
    return found


def _fixed(field: str, _: int) -> str:
    """The same field for every position (``_matrix`` of one entry)."""
    return field


def _check_one(value: float, field: str, high: float, what: str) -> None:
    """One value finite and in [0, high] (``_check_range`` for a single field)."""
    _check_range(np.array([value]), lambda _: field, 0.0, high, what)


def _stage_duration(stage: dict[str, Any], options: tuple[Option, ...], where: str) -> Any:
    """The stage's ``duration``; with options, the first option's (a stage duration beside them is refused)."""
    if options:
        if "duration" in stage:
            raise InstanceError("a stage with options takes its durations from them: give each option a duration, "
                                "not the stage", f"{where}.duration")  # fmt: skip
        return options[0].duration
    if "duration" not in stage:
        raise InstanceError("required field missing (a stage needs name, duration and demand, or options)",
                            f"{where}.duration")  # fmt: skip
    return stage["duration"]


def _utility_fast(listed: list[Any], limits: Limits) -> tuple[tuple[float, float], ...] | None:
    """``_read_utility`` of valid points in bulk (pairs of Python numbers, times in range and increasing,
    values in range and not increasing), or None for the point-by-point walk to name the first fault."""
    if not all(type(point) in (list, tuple) and len(point) == 2 for point in listed):
        return None
    flat = [x for point in listed for x in point]
    if not {float, int}.issuperset(map(type, flat)):
        return None
    try:
        array = np.array(flat, dtype=np.float64).reshape(-1, 2)
    except OverflowError:
        return None
    times, worth = array[:, 0], array[:, 1]
    with np.errstate(invalid="ignore"):
        in_range = (times >= 0) & (times <= limits.max_quantity) & (np.abs(worth) <= limits.max_quantity)
    if not in_range.all() or np.any(np.diff(times) <= 0) or np.any(np.diff(worth) > 0):
        return None
    return tuple(zip(times.tolist(), worth.tolist(), strict=True))


def _read_utility(value: Any, field: str, limits: Limits) -> tuple[tuple[float, float], ...]:
    """A job's ``utility``: ``[time, value]`` points (times increasing, values not increasing)."""
    if value is None:
        return ()
    listed = _list(value, field, "[time, value] points")
    if not listed:
        raise InstanceError("a utility needs at least one [time, value] point (or leave it out)", field)
    fast = _utility_fast(listed, limits)
    if fast is not None:
        return fast
    points = []
    for position, point in enumerate(listed):
        where = f"{field}[{position}]"
        pair = _list(point, where, "two numbers, [time, value]")
        if len(pair) != 2:
            raise InstanceError(f"a utility point is [time, value], got {len(pair)} numbers", where)
        time, worth = _number(pair[0], f"{where}[0]"), _number(pair[1], f"{where}[1]")
        _check_one(time, f"{where}[0]", limits.max_quantity, "utility time")
        _check_one(abs(worth), f"{where}[1]", limits.max_quantity, "utility value")
        points.append((time, worth))
    try:
        check_utility(tuple(points))
    except InstanceError as error:  # its field is utility[i]
        raise error.located(error.source, field.rpartition(".")[0]) from None
    return tuple(points)


# ------------------------------------------------------------------------------------------ instance


def instance_from_dict(data: Any, name: str = "instance", limits: Limits = DEFAULT_LIMITS) -> Instance:
    """Build an ``Instance`` from parsed YAML/JSON data (see the module docstring for the rules).

    Raises
    ------
    InstanceError
        On any bad input, naming the field and the reason (the file is added by ``load_instance``).
    """
    if not isinstance(data, dict):
        raise InstanceError(f"top level must be a mapping, got {_type_name(data)}")
    spec = _entry(data, "", "instance")
    resources = tuple(
        _name(value, f"resources[{k}]") for k, value in enumerate(_list(spec["resources"], "resources", "names"))
    )
    servers_in = [
        _entry(s, f"servers[{k}]", "server") for k, s in enumerate(_list(spec["servers"], "servers", "servers"))
    ]
    tenants_in = [
        _entry(t, f"tenants[{k}]", "tenant") for k, t in enumerate(_list(spec.get("tenants", []), "tenants", "tenants"))
    ]
    instance_name = name if spec.get("name") is None else _name(spec["name"], "name")
    if not resources:
        raise InstanceError("at least one resource is needed", "resources")
    if not servers_in:
        raise InstanceError("at least one server is needed", "servers")

    def server_at(k: int) -> str:
        return f"servers[{k}]"

    server_names = _names(servers_in, server_at)
    capacity = _matrix(
        [s["capacity"] for s in servers_in], lambda k: f"{server_at(k)}.capacity", resources, limits, "capacity"
    )
    counts = _whole_numbers(
        _optional(servers_in, "count", 1), lambda k: f"{server_at(k)}.count", 1, limits.max_machines, "count"
    )
    machines = sum(counts)
    if machines > limits.max_machines:
        raise InstanceError(f"{machines:,} machines in all, above the limit of {limits.max_machines:,}", "servers")
    total = (capacity * np.array(counts, dtype=np.float64)[:, None]).sum(axis=0)
    over = total > limits.max_quantity
    if over.any():
        r = int(np.argmax(over))
        raise InstanceError(
            f"the cluster's total {resources[r]} (capacity x count over all servers) is {total[r]:.3g}, above the "
            f"limit of {limits.max_quantity:g}: use a larger unit",
            "servers",
        )
    labels = [_labels(entry.get("labels"), f"{server_at(k)}.labels") for k, entry in enumerate(servers_in)]
    servers = ServerClass.many(server_names, capacity, counts, server_at, labels)

    hierarchy = None
    if spec.get("hierarchy") is not None:
        if tenants_in:
            raise InstanceError("give either tenants or a hierarchy, not both", "hierarchy")
        hierarchy, read, paths = _read_hierarchy(spec["hierarchy"], resources, limits)
        where: Callable[[int], str] = paths.__getitem__
    else:
        read = _read_tenants(tenants_in, lambda k: f"tenants[{k}]", resources, limits)
        where = lambda k: f"tenants[{k}]"  # noqa: E731
    tenants = read.build(where)
    _check_task_scale(read, total, resources, where, limits)
    jobs = _read_jobs(spec["jobs"], resources, limits) if spec.get("jobs") is not None else []
    slot = 1.0
    if spec.get("time") is not None:
        time = _entry(spec["time"], "time", "time")
        slot = _number(time.get("slot", 1.0), "time.slot")
        _check_range(np.array([slot]), lambda _: "time.slot", 0.0, limits.max_quantity, "time slot", low_open=True)
    data = _read_data(spec, servers, limits)
    try:
        return Instance(resources, servers, tenants, hierarchy, tuple(jobs), slot, instance_name, data)
    except InstanceError as error:  # a stage input naming a block that is not in ``blocks``
        raise error.located(error.source) from None


# ----------------------------------------------------------------------------------- data placement


def _labels(value: Any, field: str) -> tuple[tuple[str, str], ...]:
    """A server's labels (mapping name -> string value) as sorted (key, value) pairs."""
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise InstanceError(f"must be a mapping of label names to values, got {_describe(value)}", field)
    return tuple(sorted((_name(key, field), _name(item, f"{field}.{key}")) for key, item in value.items()))


def _machine_index(servers: Sequence[ServerClass]) -> tuple[dict[str, int], list[int], list[int]]:
    """Server name -> class, each class's first global machine index and its machine count."""
    counts = [s.count for s in servers]
    first = np.concatenate([[0], np.cumsum(counts)])[:-1].astype(int).tolist()
    return {s.name: c for c, s in enumerate(servers)}, first, counts


_MACHINE_NUMBER = re.compile(r"[0-9]{1,18}")  # ASCII digits only: int() also reads '١' (and '²' crashes it)


def _replica(machine: str, by_name: dict[str, int], counts: list[int], field: str) -> tuple[int, int]:
    """(server class, machine within it) of a replica named ``server`` (a one-machine class) or ``server/k``.

    A name that reads both ways (a one-machine server ``a/1`` beside machine 1 of server ``a``) is refused."""
    server, slash, number = machine.rpartition("/")
    numbered = by_name.get(server) if slash and _MACHINE_NUMBER.fullmatch(number) else None
    if numbered is not None and int(number) >= counts[numbered]:
        if machine not in by_name:
            raise InstanceError(f"unknown machine {machine!r} (server {server!r} has machines 0 to "
                                f"{counts[numbered] - 1})", field)  # fmt: skip
        numbered = None
    whole = by_name.get(machine)
    if whole is not None and numbered is not None:
        raise InstanceError(f"machine {machine!r} is ambiguous: the server {machine!r}, or machine {number} of the "
                            f"server {server!r} (rename one)", field)  # fmt: skip
    if whole is not None:
        if counts[whole] != 1:
            raise InstanceError(f"server {machine!r} has {counts[whole]} machines: name one as {machine}/k", field)
        return whole, 0
    if numbered is not None:
        return numbered, int(number)
    if slash and server in by_name:
        raise InstanceError(f"unknown machine {machine!r} (server {server!r} has machines 0 to "
                            f"{counts[by_name[server]] - 1})", field)  # fmt: skip
    raise InstanceError(f"unknown machine {machine!r} (no server named {server if slash else machine!r})", field)


def _read_data(spec: dict[str, Any], servers: Sequence[ServerClass], limits: Limits) -> DataPlacement | None:
    """``blocks`` (replica machines by name) and ``locality`` (factors) as a ``DataPlacement``."""
    blocks, locality = spec.get("blocks"), spec.get("locality")
    if blocks is None and locality is None:
        return None
    factors = DEFAULT_LOCALITY
    if locality is not None:
        given = _entry(locality, "locality", "locality")
        values = [given.get(level, default) for level, default in zip(LOCALITY_LEVELS, DEFAULT_LOCALITY, strict=True)]
        array = _numbers(values, lambda k: f"locality.{LOCALITY_LEVELS[k]}")
        _check_range(array, lambda k: f"locality.{LOCALITY_LEVELS[k]}", 0.0, limits.max_locality, "locality factor",
                     low_open=True)  # fmt: skip
        factors = (float(array[0]), float(array[1]), float(array[2]))
        if not factors[0] <= factors[1] <= factors[2]:
            level = "rack" if factors[1] < factors[0] else "remote"
            raise InstanceError(f"locality factors must not decrease from node to rack to remote, got "
                                f"{dict(zip(LOCALITY_LEVELS, factors, strict=True))}", f"locality.{level}")  # fmt: skip
    if blocks is None:
        return DataPlacement((), (), factors)
    if not isinstance(blocks, dict):
        raise InstanceError(f"must be a mapping of block names to replica machines, got {_describe(blocks)}",
                            "blocks")  # fmt: skip
    by_name, first, counts = _machine_index(servers)
    names: list[str] = []
    replicas: list[tuple[int, ...]] = []
    for key, value in blocks.items():
        block = _name(key, "blocks")
        field = f"blocks.{block}"
        machines = _names_list(value, field, "machine names")
        if not machines:
            raise InstanceError("a block needs at least one replica machine", field)
        indices = []
        for r, machine in enumerate(machines):
            c, k = _replica(machine, by_name, counts, f"{field}[{r}]")
            indices.append(first[c] + k)
        if len(set(indices)) != len(indices):
            raise InstanceError("a machine holds the same block twice", field)
        names.append(block)
        replicas.append(tuple(indices))
    return DataPlacement(tuple(names), tuple(replicas), factors)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


# ------------------------------------------------------------------------------------------- files


STDIN = "-"  # the path that names standard input


def _read_bytes(path: Path, limits: Limits) -> bytes:
    """The file's bytes, refusing (before reading them) more than ``limits.max_bytes``; ``-`` is stdin."""
    too_big = f"larger than the limit of {limits.max_bytes:,} bytes"
    if str(path) == STDIN:
        raw = getattr(sys.stdin, "buffer", None)  # a text stream without bytes (a test's StringIO) is encoded
        data = raw.read(limits.max_bytes + 1) if raw is not None else sys.stdin.read(limits.max_bytes + 1).encode()
    else:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limits.max_bytes:
                raise InstanceError(f"the file has {size:,} bytes, {too_big}")
            data = handle.read(limits.max_bytes + 1)
    if len(data) > limits.max_bytes:
        raise InstanceError(f"the input is {too_big}")
    return data


_LIBYAML_DEPTH = "exceeded maximum nesting depth"


def _parse(data: bytes, kind: str, limits: Limits) -> Any:
    if kind == "json":
        return _read_json(data, limits)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InstanceError(f"not UTF-8 text: byte {data[error.start]:#04x} at offset {error.start}") from None
    data = read_subset(text, limits.max_depth, limits.max_nodes)  # the plain YAML fairpack writes, fast
    if data is not NOT_SUBSET:
        return data
    import yaml

    try:
        try:
            return _read_yaml(text, limits)
        except yaml.YAMLError as error:
            if _LIBYAML_DEPTH not in str(error):
                raise
        # The libyaml bundled with PyYAML 6.0.4 stops at 1,000 nested flow collections while its scanner
        # looks ahead, before our own limit (with the field path) is reached. The pure-Python parser looks
        # ahead without a limit, so it reaches ours and names the field; only such deep input pays its cost.
        return _read_yaml(text, limits, fast=False)
    except yaml.YAMLError as error:
        raise InstanceError("not valid YAML: " + " ".join(str(error).split())) from None


def parse_instance(
    data: str | bytes,
    source: str = "<string>",
    kind: str = "yaml",
    limits: Limits = DEFAULT_LIMITS,
    name: str | None = None,
) -> Instance:
    """Parse the text of an instance file (``kind`` "yaml" or "json"); errors name ``source`` as the file.

    The instance is named by its ``name`` field, else ``name``, else the stem of ``source``."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    name = name or Path(source).stem or "instance"
    try:
        if len(raw) > limits.max_bytes:
            raise InstanceError(f"the input is larger than the limit of {limits.max_bytes:,} bytes")
        return instance_from_dict(_parse(raw, kind, limits), name=name, limits=limits)
    except InstanceError as error:
        raise error.located(source) from None


def load_instance(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> Instance:
    """Load a YAML, JSON or PSPLIB ``.sm`` instance file (``-``: standard input, see ``_parse_stdin``).

    Every error is an ``InstanceError`` naming the file, the field at fault and the reason; the limits
    (file size, nesting, alias expansion, numeric ranges) are listed in the module docstring.
    """
    path = Path(path)
    source = "<stdin>" if str(path) == STDIN else str(path)
    if path.suffix.lower() == ".sm":  # PSPLIB single-mode RCPSP file: one DAG job, one pooled server
        from fairpack.models.psplib import load_psplib

        return load_psplib(path, limits.max_bytes)
    try:
        data = _read_bytes(path, limits)
    except OSError as error:
        raise InstanceError(f"cannot read file: {error}", source=source) from None
    except InstanceError as error:
        raise error.located(source) from None
    if str(path) == STDIN:
        return _parse_stdin(data, limits)
    kind = "json" if path.suffix.lower() == ".json" else "yaml"
    return parse_instance(data, source, kind, limits)


def _parse_stdin(data: bytes, limits: Limits) -> Instance:
    """An instance piped in, named ``stdin``: PSPLIB text is recognised by its header (a rule of asterisks,
    then a PRECEDENCE RELATIONS section), anything else is read as YAML (JSON included); errors name
    ``<stdin>`` as the file."""
    source = "<stdin>"
    if data.lstrip().startswith(b"*****") and b"PRECEDENCE RELATIONS" in data:
        from fairpack.models.psplib import parse_psplib

        try:  # PSPLIB files are ASCII; latin-1 never fails on a stray byte (as load_psplib)
            return parse_psplib(data.decode("latin-1"), "stdin.sm")
        except InstanceError as error:
            raise error.located(source) from None
    return parse_instance(data, source, "yaml", limits, name="stdin")


@functools.cache
def _dumper() -> type:
    """PyYAML's safe dumper (libyaml's emitter when present) that also quotes strings YAML 1.2 reads as numbers.

    The safe dumper quotes strings by YAML 1.1's rules only, so a name such as ``1e5`` would be written
    plain and read back by this loader as a number. Made on first use, so reading needs no PyYAML import."""
    import yaml

    class Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
        pass

    Dumper.add_implicit_resolver("tag:yaml.org,2002:float", _NUMBER, list("-+0123456789."))
    return Dumper


def instance_to_yaml(instance: Instance) -> str:
    """The instance as YAML text that ``load_instance`` reads back unchanged (block style, flow leaves).

    The same text ``yaml.safe_dump(instance_to_dict(instance), sort_keys=False, default_flow_style=None)``
    gives, except that strings YAML 1.2 reads as numbers are quoted; several times faster with libyaml.
    """
    import yaml

    return yaml.dump(instance_to_dict(instance), Dumper=_dumper(), sort_keys=False, default_flow_style=None)


def _option_dict(option: Option, stage: Stage, resources: tuple[str, ...]) -> dict[str, Any]:
    """An option in the file's form; its own demand as the resources where it differs from the stage's
    (zeros written out: a resource left out would inherit the stage's amount)."""
    entry: dict[str, Any] = {**({"on": dict(option.on)} if option.on else {}),
                             **({"same": option.same} if option.same else {}), "duration": option.duration}
    if option.demand is not None:
        entry["demand"] = {r: float(v) for r, v, w in zip(resources, option.demand, stage.demand, strict=True)
                           if v != w}  # fmt: skip
    return entry


def instance_to_dict(instance: Instance) -> dict[str, Any]:
    """The inverse of ``instance_from_dict`` for flat instances and hierarchies (used by generators)."""

    def mapping(vector: np.ndarray) -> dict[str, float]:
        return {r: float(v) for r, v in zip(instance.resources, vector, strict=True) if v != 0}

    data: dict[str, Any] = {"name": instance.name, "resources": list(instance.resources)}
    data["servers"] = [
        {"name": s.name, "capacity": mapping(s.capacity), **({"count": s.count} if s.count != 1 else {}),
         **({"labels": dict(s.labels)} if s.labels else {})}
        for s in instance.servers
    ]  # fmt: skip

    def tenant_fields(t: Tenant) -> dict[str, Any]:
        fields: dict[str, Any] = {"demand": mapping(t.demand)}
        if t.weight != 1:
            fields["weight"] = t.weight
        if math.isfinite(t.tasks):
            fields["tasks"] = int(t.tasks) if float(t.tasks).is_integer() else t.tasks
        return fields

    if instance.hierarchy is None:
        data["tenants"] = [{"name": t.name, **tenant_fields(t)} for t in instance.tenants]
    else:
        nodes = instance.hierarchy.nodes
        flat = []
        for node in nodes:
            entry: dict[str, Any] = {"name": node.name, "weight": node.weight}
            if node.parent >= 0:
                entry["parent"] = nodes[node.parent].name
            if node.tenant >= 0:
                fields = tenant_fields(instance.tenants[node.tenant])
                fields.pop("weight", None)
                entry.update(fields)
            flat.append(entry)
        data["hierarchy"] = flat
    if instance.jobs:
        data["jobs"] = [
            {
                "name": job.name,
                "weight": job.weight,
                "release": job.release,
                **({"tenant": job.tenant} if job.tenant else {}),
                **({"deadline": job.deadline} if math.isfinite(job.deadline) else {}),
                **({"utility": [list(point) for point in job.utility]} if job.utility else {}),
                "stages": [
                    {
                        "name": s.name,
                        "tasks": int(s.tasks),
                        **({} if s.options else {"duration": s.duration}),
                        "demand": mapping(s.demand),
                        "after": [job.stages[p].name for p in s.after],
                        **({"input": list(s.input)} if s.input else {}),
                        **({"options": [_option_dict(o, s, instance.resources) for o in s.options]}
                           if s.options else {}),
                    }
                    for s in job.stages
                ],
            }
            for job in instance.jobs
        ]
    if instance.time_slot != 1.0:
        data["time"] = {"slot": instance.time_slot}
    if instance.data is not None:
        machine_names = [f"{s.name}/{k}" if s.count > 1 else s.name for s in instance.servers for k in range(s.count)]
        data["blocks"] = {
            name: [machine_names[m] for m in replicas]
            for name, replicas in zip(instance.data.names, instance.data.replicas, strict=True)
        }
        data["locality"] = dict(zip(LOCALITY_LEVELS, instance.data.factors, strict=True))
    return data
