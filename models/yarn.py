"""Hadoop YARN scheduler configurations as hierarchies: ``fair-scheduler.xml`` and ``capacity-scheduler.xml``.

A YARN queue tree becomes a weighted tree of :class:`~fairpack.models.build.Node` (H-DRF's org tree): every
queue a node named by its full path (``root.ads.prod``), the root ``root``.

* **Fair Scheduler** (root element ``<allocations>``): nested ``<queue name=...>`` (or the old ``<pool>``)
  elements, under an explicit ``<queue name="root">`` or not; a queue's ``<weight>`` (default 1) is its node
  weight. ``<maxResources>`` of a leaf (or ``<queueMaxResourcesDefault>`` where a leaf has none) becomes its
  task cap; ``<minResources>``, an inner queue's ``<maxResources>`` and ``<schedulingPolicy>`` are recorded
  (:class:`YarnQueue`), not modelled. Other elements (ACLs, ``maxRunningApps``, placement rules, users) are
  not read.
* **Capacity Scheduler** (root element ``<configuration>``): ``yarn.scheduler.capacity.<path>.queues``
  lists a queue's children, ``yarn.scheduler.capacity.<path>.capacity`` (a percentage of its parent; the
  siblings' sum 100) is its node weight; weights written ``2w`` (Hadoop's weight mode) are weights as they
  stand. ``maximum-capacity`` (a percentage of the parent's, or ``[memory=...,vcores=...]``) caps a leaf's
  tasks where the cluster is known; other properties are not read.

Leaf demands are not in YARN files: they are given as ``demand`` (one resource mapping for every leaf, or a
mapping from queue to demand, or a YAML/JSON file of that mapping, see :func:`hierarchy_from_yarn`).

YARN resource names map to the instance's resources by one rule (:func:`hierarchy_from_yarn`, ``resources``):
an explicit mapping first, else the name itself when the instance has a resource of that name, else the
alias in :data:`YARN_ALIASES` (``memory-mb`` -> ``mem``, ``vcores`` -> ``cpu``, ``yarn.io/gpu`` -> ``gpu``);
a name that resolves to none of the instance's resources is refused, naming the element. Amounts are taken
as written: YARN gives memory in MB, so a cluster whose ``mem`` is in GB makes ``10000 mb`` mean 10000 GB.

XML is read by ``defusedxml`` with DTDs forbidden: no document type declaration, no entity expansion (an
entity bomb stops at its ``<!DOCTYPE``), no external entity or XInclude is ever fetched. Every fault raises
:class:`~fairpack.models.types.InstanceError` naming the file and the element
(``queue[root.ads].weight: must be a positive number, got 'abc'``,
``property[yarn.scheduler.capacity.root.queues]: ...``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from fairpack.models import io
from fairpack.models.build import Node, named_field
from fairpack.models.types import Instance, InstanceError, printable

__all__ = [
    "YARN_ALIASES",
    "YarnConfig",
    "YarnQueue",
    "YarnResources",
    "hierarchy_from_yarn",
    "instance_from_yarn",
    "read_leaf_demand",
    "read_yarn",
]

#: YARN's resource names and the fairpack resource each maps to when the instance has no resource of the
#: YARN name itself. ``mb`` and ``memory`` (old-style and percentage forms) are ``memory-mb``, ``cpu`` is
#: ``vcores``.
YARN_ALIASES: dict[str, str] = {"memory-mb": "mem", "vcores": "cpu", "yarn.io/gpu": "gpu"}
_CANONICAL = {"mb": "memory-mb", "memory": "memory-mb", "memory-mb": "memory-mb", "cpu": "vcores",
              "vcores": "vcores"}  # fmt: skip

Source = str | os.PathLike[str] | bytes
PathLike = str | os.PathLike[str]
DemandSpec = Mapping[str, Any] | PathLike

_ROOT = "root"
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_CS = "yarn.scheduler.capacity."
#: Hadoop's tolerance on the sum of sibling capacities (CapacityScheduler: 0.0005 of 1, in percent).
_SUM_TOLERANCE = 0.05
#: Words that follow a queue path in capacity-scheduler properties that are not queues' own settings.
_NOT_QUEUES = frozenset({"accessible-node-labels", "leaf-queue-template", "auto-queue-creation-v2"})
_ENTRY_KEYS = frozenset({"demand", "tasks"})


# ------------------------------------------------------------------------------------------ records


@dataclass(frozen=True)
class YarnResources:
    """A resource amount as a YARN file gives it (``minResources``, ``maxResources``, ``maximum-capacity``).

    ``amounts`` are absolute, by YARN resource name (``memory-mb``, ``vcores``, ``yarn.io/gpu``);
    ``shares`` are fractions of the cluster by name; ``share_of_all`` a fraction of the cluster of every
    resource (``50%``, or a capacity-scheduler queue's absolute maximum capacity). A resource named in
    neither is unbounded (for a maximum) or 0 (for a minimum).
    """

    text: str
    where: str
    amounts: Mapping[str, float] = field(default_factory=dict)
    shares: Mapping[str, float] = field(default_factory=dict)
    share_of_all: float | None = None

    def scaled(self, factor: float, text: str, where: str) -> YarnResources:
        """These bounds times ``factor`` (a capacity-scheduler queue's share of its parent's maximum)."""
        return YarnResources(text, where, {k: v * factor for k, v in self.amounts.items()},
                             {k: v * factor for k, v in self.shares.items()},
                             None if self.share_of_all is None else self.share_of_all * factor)  # fmt: skip

    @property
    def names(self) -> tuple[str, ...]:
        """The YARN resource names it mentions."""
        return tuple(dict.fromkeys([*self.amounts, *self.shares]))


@dataclass(frozen=True)
class YarnQueue:
    """One queue of a YARN file: its ``path`` (``root.ads.prod``), node ``weight`` and what else was read.

    ``min_resources`` and ``policy`` are recorded only (fairpack's guarantees come from the weights, and
    every level shares by DRF). ``max_resources`` is the queue's limit as YARN applies it: the Fair
    Scheduler's ``maxResources`` as written (``queueMaxResourcesDefault`` for a leaf without one), the
    Capacity Scheduler's absolute maximum capacity (``maximum-capacity`` multiplied down the path); a leaf's
    becomes its task cap, an inner queue's is recorded only. ``capacity`` and ``maximum_capacity`` are the
    capacity scheduler's percentages as written. ``where`` names the element in messages.
    """

    path: str
    parent: str | None
    children: tuple[str, ...]
    weight: float
    where: str
    min_resources: YarnResources | None = None
    max_resources: YarnResources | None = None
    policy: str | None = None
    capacity: float | None = None
    maximum_capacity: float | None = None

    @property
    def name(self) -> str:
        """The queue's own name (the last part of its path)."""
        return self.path.rpartition(".")[2]

    @property
    def is_leaf(self) -> bool:
        return not self.children


@dataclass(frozen=True)
class YarnConfig:
    """A YARN scheduler file read: its ``kind`` and ``queues`` (root first, parents before children)."""

    kind: Literal["fair", "capacity"]
    source: str
    queues: tuple[YarnQueue, ...]

    def queue(self, path: str) -> YarnQueue:
        """The queue at ``path`` (``root.ads``)."""
        for queue in self.queues:
            if queue.path == path:
                return queue
        raise KeyError(path)

    @property
    def leaves(self) -> tuple[YarnQueue, ...]:
        return tuple(queue for queue in self.queues if queue.is_leaf)


# ------------------------------------------------------------------------------------------ reading


def _read_source(source: Source, limits: io.Limits) -> tuple[str | bytes, str]:
    """The XML text and the name errors give it: a path's bytes, or the text itself (a ``str`` whose
    first non-blank character is ``<``, or ``bytes``)."""
    if isinstance(source, bytes | bytearray):
        return bytes(source), "<string>"
    if isinstance(source, str) and source.lstrip("\ufeff \t\r\n").startswith("<"):
        return source, "<string>"
    path = Path(source)
    name = str(path)
    try:
        return io._read_bytes(path, limits), name
    except OSError as error:
        raise InstanceError(f"cannot read file: {error}", source=name) from None
    except InstanceError as error:
        raise error.located(name) from None


def _parse_xml(text: str | bytes, source: str) -> Any:
    """The document's root element, read by defusedxml with DTDs (so entities) forbidden."""
    from defusedxml import DefusedXmlException, DTDForbidden
    from defusedxml.ElementTree import fromstring

    try:
        return fromstring(text, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DTDForbidden as error:
        raise InstanceError(f"has a document type declaration (<!DOCTYPE {printable(str(error.name))}>), which is "
                            "refused: a scheduler file needs no DTD, and its entities are never expanded or "
                            "fetched", "<!DOCTYPE>", source) from None  # fmt: skip
    except DefusedXmlException as error:
        raise InstanceError(f"refused: {error} (entities are never expanded or fetched)", "", source) from None
    except Exception as error:  # expat's ParseError, and whatever else arbitrary bytes make it raise
        raise InstanceError(f"not well-formed XML: {' '.join(str(error).split())}", "", source) from None


def read_yarn(source: Source, limits: io.Limits = io.DEFAULT_LIMITS) -> YarnConfig:
    """Read a YARN ``fair-scheduler.xml`` or ``capacity-scheduler.xml`` into its queues.

    Parameters
    ----------
    source
        A path, or the XML itself (``bytes``, or a ``str`` starting with ``<``). The format is told by
        the root element: ``<allocations>`` (Fair Scheduler) or ``<configuration>`` (Capacity Scheduler).
    limits
        Bounds on the file's size (``max_bytes``) and the queue tree's depth (``max_depth``).

    Returns
    -------
    YarnConfig
        The queues, root first, each with its node weight and what else the file gives it.

    Raises
    ------
    InstanceError
        On anything malformed, naming the file and the element at fault.
    """
    text, name = _read_source(source, limits)
    root = _parse_xml(text, name)
    tag = root.tag if isinstance(root.tag, str) else repr(root.tag)
    try:
        if tag == "allocations":
            return YarnConfig("fair", name, _fair_queues(root, limits))
        if tag == "configuration":
            return YarnConfig("capacity", name, _capacity_queues(root, limits))
    except InstanceError as error:
        raise error.located(name) from None
    raise InstanceError(f"the root element is <{printable(tag)}>: a YARN scheduler file has <allocations> "
                        "(fair-scheduler.xml) or <configuration> (capacity-scheduler.xml)", printable(tag),
                        name)  # fmt: skip


def _text(element: Any) -> str:
    return "".join(element.itertext()).strip()


def _number_text(text: str, where: str, what: str = "a positive number") -> float:
    """A decimal number as written (``1``, ``2.5``, ``1e3``); anything else is refused naming ``where``."""
    if not _NUMBER.fullmatch(text):
        raise InstanceError(f"must be {what}, got {printable(text)!r}", where)
    return float(text)


def _weight(text: str, where: str, limits: io.Limits) -> float:
    value = _number_text(text, where)
    low, high = limits.weight_range
    if not value > 0:
        raise InstanceError(f"must be a positive number, got {printable(text)!r}", where)
    if not low <= value <= high:
        raise InstanceError(f"must be in the accepted range [{low:g}, {high:g}], got {printable(text)!r}", where)
    return value


def _queue_name(value: str | None, where: str, parent: str | None) -> str:
    """A queue's name: non-empty, printable, without YARN's path separator."""
    name = (value or "").strip()
    if not name:
        raise InstanceError("a queue needs a name" + ("" if "property" in where else
                            " attribute (<queue name=\"...\">)"), where)  # fmt: skip
    if not name.isprintable():
        raise InstanceError(f"queue name {printable(name)!r} has characters that cannot be printed", where)
    if "." in name:
        raise InstanceError(f"queue name {name!r} has a '.', which YARN keeps for queue paths", where)
    if name == _ROOT and parent is not None:
        raise InstanceError(f"a queue below the root cannot be named 'root' (under {parent})", where)
    return name


# ----------------------------------------------------------------------------------- resource values


def _parse_resources(text: str, where: str) -> YarnResources:
    """A Fair Scheduler resource value in any of its forms, by YARN resource name.

    * ``"10000 mb, 10 vcores"`` (old style: both needed, in any order);
    * ``"memory-mb=10000, vcores=10, yarn.io/gpu=2"`` (new style: names not given are unbounded in a
      maximum, 0 in a minimum);
    * ``"50%"`` (of every resource), ``"50% memory, 60% cpu"``, ``"memory-mb=50%, vcores=60%"`` (shares of
      the cluster; new-style names not given are 100%).
    """
    value = " ".join(text.split())
    if not value:
        raise InstanceError("an empty resource value", where)
    try:
        if "=" in value:
            return _new_style(value, where)
        if "%" in value:
            return _old_style_shares(value, where)
        return _old_style(value, where)
    except InstanceError as error:
        shown = repr(printable(value))
        reason = error.reason if shown in error.reason else f"{error.reason} in {shown}"
        raise InstanceError(reason, where) from None


def _amount(text: str, where: str, percent: bool) -> float:
    number = text[:-1].strip() if percent else text
    if not _NUMBER.fullmatch(number) or float(number) < 0 or not math.isfinite(float(number)):
        raise InstanceError(f"{'a percentage' if percent else 'an amount'} must be a non-negative number, got "
                            f"{printable(text)!r}", where)  # fmt: skip
    return float(number) / 100 if percent else float(number)


def _new_style(value: str, where: str) -> YarnResources:
    parts = [part.strip() for part in value.split(",")]
    percent = "%" in value
    amounts: dict[str, float] = {}
    for part in parts:
        name, sep, number = (piece.strip() for piece in part.partition("="))
        if not sep or not name or "=" in number:
            raise InstanceError(f"every resource must be written name=value, got {printable(part)!r}", where)
        if percent != number.endswith("%"):
            raise InstanceError("give every resource as a percentage or none", where)
        key = _CANONICAL.get(name.lower(), name)
        if key in amounts:
            raise InstanceError(f"resource {name!r} is given twice", where)
        amounts[key] = _amount(number, where, percent)
    if percent:
        return YarnResources(value, where, shares=amounts)
    return YarnResources(value, where, amounts=amounts)


_OLD_PART = re.compile(r"\s*(\S+?)\s*(mb|vcores)\s*(?:,|\s|$)", re.IGNORECASE)
_OLD_SHARE = re.compile(r"\s*(\S+?)\s*%\s*(memory|cpu)\s*(?:,|\s|$)", re.IGNORECASE)


def _units(value: str, pattern: re.Pattern[str], units: tuple[str, str], where: str, percent: bool) -> dict[str, float]:
    found: dict[str, float] = {}
    position = 0
    while position < len(value):
        match = pattern.match(value, position)
        if match is None or match.end() == position:
            raise InstanceError(f"cannot read {printable(value[position:].strip())!r} (expected an amount and one "
                                f"of {', '.join(units)})", where)  # fmt: skip
        unit = match.group(2).lower()
        key = _CANONICAL[unit]
        if key in found:
            raise InstanceError(f"{unit} is given twice", where)
        found[key] = _amount(match.group(1) + ("%" if percent else ""), where, percent)
        position = match.end()
    missing = [unit for unit in units if _CANONICAL[unit] not in found]
    if missing:
        raise InstanceError(f"no {missing[0]} amount (the old style gives both {' and '.join(units)})", where)
    return found


def _old_style(value: str, where: str) -> YarnResources:
    return YarnResources(value, where, amounts=_units(value, _OLD_PART, ("mb", "vcores"), where, False))


def _old_style_shares(value: str, where: str) -> YarnResources:
    if "," not in value and value.rstrip().endswith("%"):
        return YarnResources(value, where, share_of_all=_amount(value.strip(), where, True))
    return YarnResources(value, where, shares=_units(value, _OLD_SHARE, ("memory", "cpu"), where, True))


# ------------------------------------------------------------------------------------- fair scheduler


_QUEUE_TAGS = ("queue", "pool")
_FAIR_FIELDS = ("weight", "minResources", "maxResources", "schedulingPolicy")


@dataclass
class _Draft:
    path: str
    parent: str | None
    where: str
    children: list[str] = field(default_factory=list)
    weight: float = 1.0
    min_resources: YarnResources | None = None
    max_resources: YarnResources | None = None
    policy: str | None = None
    capacity: float | None = None
    maximum_capacity: float | None = None

    def done(self) -> YarnQueue:
        return YarnQueue(self.path, self.parent, tuple(self.children), self.weight, self.where, self.min_resources,
                         self.max_resources, self.policy, self.capacity, self.maximum_capacity)  # fmt: skip


def _single(element: Any, tag: str, where: str) -> Any:
    """The one child element ``tag`` (None if absent); a second one is refused."""
    found = element.findall(tag)
    if len(found) > 1:
        raise InstanceError(f"<{tag}> is given {len(found)} times", where)
    return found[0] if found else None


def _fair_fields(draft: _Draft, element: Any, limits: io.Limits) -> None:
    """A queue element's weight, min/max resources and policy into ``draft``."""
    for tag in _FAIR_FIELDS:
        child = _single(element, tag, f"{draft.where}.{tag}")
        if child is None:
            continue
        where = f"{draft.where}.{tag}"
        text = _text(child)
        if tag == "weight":
            draft.weight = _weight(text, where, limits)
        elif tag == "schedulingPolicy":
            if not text:
                raise InstanceError("an empty scheduling policy", where)
            draft.policy = text
        else:
            parsed = _parse_resources(text, where)
            if tag == "minResources":
                draft.min_resources = parsed
            else:
                draft.max_resources = parsed


def _fair_queues(allocations: Any, limits: io.Limits) -> tuple[YarnQueue, ...]:
    root = _Draft(_ROOT, None, f"queue[{_ROOT}]")
    drafts: dict[str, _Draft] = {_ROOT: root}
    # (element, parent path, where the element is if it has no name, depth)
    first: list[tuple[Any, str, str, int]] = []  # the root's queues in file order
    explicit_root = False
    for position, element in enumerate(child for child in allocations if child.tag in _QUEUE_TAGS):
        if (element.get("name") or "").strip() != _ROOT:
            first.append((element, _ROOT, f"allocations.{element.tag}[{position}]", 1))
            continue
        if explicit_root:
            raise InstanceError("the root queue is defined twice", f"queue[{_ROOT}]")
        explicit_root = True
        _fair_fields(root, element, limits)
        nested = [child for child in element if child.tag in _QUEUE_TAGS]
        first.extend((child, _ROOT, f"queue[{_ROOT}].{child.tag}[{k}]", 1) for k, child in enumerate(nested))
    stack = first[::-1]
    while stack:
        element, parent, unnamed, depth = stack.pop()
        name = _queue_name(element.get("name"), f"{unnamed}.name" if element.get("name") is not None else unnamed,
                           parent)  # fmt: skip
        path = f"{parent}.{name}"
        where = f"queue[{path}]"
        if path in drafts:
            raise InstanceError(f"queue {path} is defined twice", where)
        if depth > limits.max_depth:
            raise InstanceError(f"the queues nest deeper than the limit of {limits.max_depth} levels", where)
        draft = _Draft(path, parent, where)
        drafts[path] = draft
        drafts[parent].children.append(path)
        _fair_fields(draft, element, limits)
        nested = [child for child in element if child.tag in _QUEUE_TAGS]
        stack.extend((child, path, f"{where}.{child.tag}[{k}]", depth + 1)
                     for k, child in reversed(list(enumerate(nested))))  # fmt: skip
    if not root.children:
        raise InstanceError("the file defines no queue (a <queue name=\"...\"> element under <allocations> or "
                            "under the root queue)", "allocations")  # fmt: skip
    _fair_defaults(allocations, drafts)
    return tuple(draft.done() for draft in drafts.values())


def _fair_defaults(allocations: Any, drafts: dict[str, _Draft]) -> None:
    """``queueMaxResourcesDefault`` (leaves without their own maxResources) and
    ``defaultQueueSchedulingPolicy`` (queues without their own policy)."""
    default_max = _single(allocations, "queueMaxResourcesDefault", "allocations.queueMaxResourcesDefault")
    default_policy = _single(allocations, "defaultQueueSchedulingPolicy", "allocations.defaultQueueSchedulingPolicy")
    if default_max is not None:
        parsed = _parse_resources(_text(default_max), "allocations.queueMaxResourcesDefault")
        for draft in drafts.values():
            if not draft.children and draft.max_resources is None:
                draft.max_resources = parsed
    if default_policy is not None:
        policy = _text(default_policy)
        if not policy:
            raise InstanceError("an empty scheduling policy", "allocations.defaultQueueSchedulingPolicy")
        for draft in drafts.values():
            draft.policy = draft.policy or policy


# --------------------------------------------------------------------------------- capacity scheduler


def _properties(configuration: Any) -> dict[str, tuple[str, str]]:
    """Hadoop configuration properties: name -> (value, where)."""
    found: dict[str, tuple[str, str]] = {}
    for position, element in enumerate(configuration):
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag.endswith("}include") or tag == "include":
            raise InstanceError("XInclude is not followed: put the properties in this file",
                                f"configuration.include[{position}]")  # fmt: skip
        if tag != "property":
            continue
        unnamed = f"configuration.property[{position}]"
        name_element = _single(element, "name", unnamed)
        name = _text(name_element) if name_element is not None else ""
        if not name:
            raise InstanceError("a property needs a <name>", unnamed)
        where = f"property[{printable(name)}]"
        value_element = _single(element, "value", where)
        value = _text(value_element) if value_element is not None else ""
        if name in found and found[name][0] != value:
            raise InstanceError(f"given twice, with values {found[name][0]!r} and {value!r}", where)
        found[name] = (value, where)
    return found


def _capacity_queues(configuration: Any, limits: io.Limits) -> tuple[YarnQueue, ...]:
    properties = _properties(configuration)
    key = f"{_CS}{_ROOT}.queues"
    if key not in properties:
        if not any(name.startswith(_CS) for name in properties):
            raise InstanceError("no yarn.scheduler.capacity.* property: not a capacity-scheduler.xml",
                                "configuration")  # fmt: skip
        raise InstanceError("required property missing (it lists the root's queues)", f"property[{key}]")
    drafts: dict[str, _Draft] = {_ROOT: _Draft(_ROOT, None, f"queue[{_ROOT}]")}
    stack = [(_ROOT, 0)]
    while stack:
        parent, depth = stack.pop()
        listed = properties.get(f"{_CS}{parent}.queues")
        if listed is None:
            continue
        value, where = listed
        names = [part.strip() for part in value.split(",") if part.strip()]
        if not names:
            raise InstanceError("lists no queue (a parent queue needs at least one; leave the property out for a "
                                "leaf)", where)  # fmt: skip
        if depth + 1 > limits.max_depth:
            raise InstanceError(f"the queues nest deeper than the limit of {limits.max_depth} levels", where)
        for name in names:
            name = _queue_name(name, where, parent)
            path = f"{parent}.{name}"
            if path in drafts:
                raise InstanceError(f"queue {name!r} is listed twice", where)
            drafts[path] = _Draft(path, parent, f"queue[{path}]")
            drafts[parent].children.append(path)
        stack.extend((child, depth + 1) for child in reversed(drafts[parent].children))
    _unknown_queues(properties, drafts)
    for draft in list(drafts.values()):
        if draft.children:
            _capacities(draft, [drafts[child] for child in draft.children], properties, limits)
    _maximum_capacities(drafts, properties)
    for draft in drafts.values():
        found = properties.get(f"{_CS}{draft.path}.ordering-policy")
        if found is not None and found[0]:
            draft.policy = found[0]
    # Parents before children, each level in file order: the order a depth-first walk from the root gives.
    ordered: list[YarnQueue] = []
    walk = [_ROOT]
    while walk:
        draft = drafts[walk.pop()]
        ordered.append(draft.done())
        walk.extend(reversed(draft.children))
    return tuple(ordered)


def _unknown_queues(properties: dict[str, tuple[str, str]], drafts: dict[str, _Draft]) -> None:
    """A ``.queues`` property for a queue no list reaches, or a capacity of an unlisted child of a known
    queue, is a queue the file does not define (a typo, or a queue left out of its parent's list)."""
    for name, (_, where) in properties.items():
        if not name.startswith(_CS):
            continue
        path, _, setting = name[len(_CS):].rpartition(".")
        if setting == "queues" and path and path not in drafts:
            raise InstanceError(f"unknown queue {path}: no .queues list names it (the root is "
                                f"{_CS}{_ROOT}.queues)", where)  # fmt: skip
        if setting in ("capacity", "maximum-capacity") and path not in drafts:
            parent, _, last = path.rpartition(".")
            if parent in drafts and last not in _NOT_QUEUES:
                raise InstanceError(f"unknown queue {path}: {_CS}{parent}.queues does not list {last!r}", where)


def _capacity_value(text: str, where: str) -> tuple[float, bool]:
    """A capacity as (value, is a weight): ``70`` / ``12.5`` (a percentage) or ``2w`` (a weight)."""
    if text.startswith("["):
        raise InstanceError(f"absolute capacities ({printable(text)!r}) are not read: give percentages of the "
                            "parent, or weights written like 2w", where)  # fmt: skip
    weighted = text.lower().endswith("w")
    number = text[:-1].strip() if weighted else text
    return _number_text(number, where, "a positive percentage (or a weight like 2w)"), weighted


def _capacities(parent: _Draft, children: list[_Draft], properties: dict[str, tuple[str, str]],
                limits: io.Limits) -> None:  # fmt: skip
    """The children's capacities (percentages summing to 100, or weights) as their node weights."""
    modes: dict[bool, str] = {}
    for child in children:
        key = f"{_CS}{child.path}.capacity"
        if key not in properties:
            raise InstanceError(f"required property missing (queue {child.path} needs a capacity)",
                                f"property[{key}]")  # fmt: skip
        text, where = properties[key]
        value, weighted = _capacity_value(text, where)
        if not value > 0:
            raise InstanceError(f"must be a positive percentage, got {printable(text)!r} (a queue with no capacity "
                                "has no place in a weighted tree)", where)  # fmt: skip
        if not weighted and value > 100:
            raise InstanceError(f"a capacity is a percentage of the parent, at most 100, got {printable(text)!r}",
                                where)  # fmt: skip
        low, high = limits.weight_range
        if not low <= value <= high:
            raise InstanceError(f"must be in the accepted range [{low:g}, {high:g}], got {printable(text)!r}", where)
        modes.setdefault(weighted, child.path)
        child.weight = value
        child.capacity = value
    if len(modes) > 1:
        raise InstanceError(f"the children of {parent.path} mix percentages ({modes[False]}) and weights "
                            f"({modes[True]})", f"property[{_CS}{parent.path}.queues]")  # fmt: skip
    if False in modes:
        total = math.fsum(child.weight for child in children)
        if abs(total - 100) > _SUM_TOLERANCE:
            shown = " + ".join(f"{child.path.rpartition('.')[2]} {child.weight:g}" for child in children)
            raise InstanceError(f"the capacities of the children of {parent.path} sum to {total:g} ({shown}), not 100",
                                f"property[{_CS}{parent.path}.queues]")  # fmt: skip


def _maximum_capacities(drafts: dict[str, _Draft], properties: dict[str, tuple[str, str]]) -> None:
    """Each queue's ``maximum-capacity`` and its absolute maximum (multiplied down the path)."""
    walk = [_ROOT]
    while walk:
        draft = drafts[walk.pop()]
        walk.extend(draft.children)
        if draft.parent is None:
            continue
        inherited = drafts[draft.parent].max_resources
        key = f"{_CS}{draft.path}.maximum-capacity"
        if key not in properties:
            draft.max_resources = inherited
            continue
        text, where = properties[key]
        if text.startswith("[") and text.endswith("]"):
            draft.max_resources = replace(_new_style(text[1:-1].strip(), where), text=text)
            continue
        percent = _number_text(text, where, "a percentage (0 to 100; -1 for 100)")
        if percent == -1:
            percent = 100.0
        if not 0 < percent <= 100:
            raise InstanceError(f"must be a percentage in (0, 100] (or -1 for 100), got {printable(text)!r}", where)
        if draft.capacity is not None and draft.capacity > percent and not _weighted(draft, properties):
            raise InstanceError(f"maximum capacity {percent:g} is below the queue's capacity {draft.capacity:g}",
                                where)  # fmt: skip
        draft.maximum_capacity = percent
        fraction = percent / 100
        if inherited is None:
            draft.max_resources = None if fraction >= 1 else YarnResources(text, where, share_of_all=fraction)
        else:
            draft.max_resources = inherited.scaled(fraction, text, where)


def _weighted(draft: _Draft, properties: dict[str, tuple[str, str]]) -> bool:
    found = properties.get(f"{_CS}{draft.path}.capacity")
    return found is not None and found[0].lower().endswith("w")


# ---------------------------------------------------------------------------------------- leaf demand


@dataclass(frozen=True)
class _Entry:
    """One leaf demand as given: its ``key`` (a queue path or name, ``*`` for every other leaf)."""

    key: str
    demand: Mapping[str, float]
    tasks: float | None
    source: str  # the file it came from ('' for a mapping given in code)
    where: str  # the entry's field
    amounts_at: str  # the field its resource amounts are under


def read_leaf_demand(path: PathLike, limits: io.Limits = io.DEFAULT_LIMITS) -> Any:
    """A leaf-demand file (YAML, or JSON by its ``.json`` suffix) as plain data, for :func:`hierarchy_from_yarn`.

    The file maps queues to demands::

        "*": {cpu: 1, mem: 2048}                  # every leaf not named below
        root.ads.prod: {demand: {cpu: 2, mem: 8192}, tasks: 40}
        dev: {cpu: 1, mem: 1024}                  # a leaf's own name, where no other queue has it

    or is one resource mapping for every leaf (``{cpu: 1, mem: 2048}``).
    """
    name = str(path)
    try:
        data = io._read_bytes(Path(path), limits)
        return io._parse(data, "json" if name.lower().endswith(".json") else "yaml", limits)
    except OSError as error:
        raise InstanceError(f"cannot read file: {error}", source=name) from None
    except InstanceError as error:
        raise error.located(name) from None


def _is_amount(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _entries(spec: Any, limits: io.Limits) -> dict[str, _Entry]:
    """The leaf demands of one spec or several (later ones override earlier ones, key by key)."""
    specs = [spec] if isinstance(spec, str | os.PathLike | Mapping) else spec
    if not isinstance(specs, Sequence) or not specs:
        raise InstanceError(f"must be a mapping of leaf demands, a file of them or a list of those, got "
                            f"{io._describe(spec)}", "demand")  # fmt: skip
    found: dict[str, _Entry] = {}
    for one in specs:
        if isinstance(one, Mapping):
            found.update(_entries_of(one, "", "demand", limits))
        elif isinstance(one, str | os.PathLike):
            found.update(_entries_of(read_leaf_demand(one, limits), str(one), "queue", limits))
        else:
            raise InstanceError(f"must be a mapping of leaf demands or a file of them, got {io._describe(one)}",
                                "demand")  # fmt: skip
    return found


def _entries_of(data: Any, source: str, label: str, limits: io.Limits) -> dict[str, _Entry]:
    top = "demand" if label == "demand" else ""
    if not isinstance(data, Mapping) or not data:
        raise InstanceError(f"must be a non-empty mapping of queues to demands (or one demand for every leaf), got "
                            f"{io._describe(data)}", top, source)  # fmt: skip
    if all(_is_amount(value) for value in data.values()):  # one demand for every leaf
        return {"*": _entry("*", dict(data), None, source, top, top, limits)}
    found = {}
    for key, value in data.items():
        if not isinstance(key, str) or not key.strip():
            raise InstanceError(f"a key names a queue (a string), got {io._describe(key)}", top, source)
        key = key.strip()
        where = f"{label}[{printable(key)}]"
        if not isinstance(value, Mapping):
            raise InstanceError(f"must be a resource mapping or {{demand: ..., tasks: N}}, got {io._describe(value)}",
                                where, source)  # fmt: skip
        if "demand" in value or "tasks" in value:
            unknown = [k for k in value if k not in _ENTRY_KEYS]
            if unknown:
                raise InstanceError(f"unknown key {unknown[0]!r} (an entry has demand and tasks)",
                                    f"{where}.{unknown[0]}", source)  # fmt: skip
            if "demand" not in value:
                raise InstanceError("required field missing (an entry with tasks needs a demand)", f"{where}.demand",
                                    source)  # fmt: skip
            demand = value["demand"]
            if not isinstance(demand, Mapping):
                raise InstanceError(f"must be a resource mapping, got {io._describe(demand)}", f"{where}.demand",
                                    source)  # fmt: skip
            found[key] = _entry(key, demand, value.get("tasks"), source, where, f"{where}.demand", limits)
        else:
            found[key] = _entry(key, value, None, source, where, where, limits)
    return found


def _entry(key: str, demand: Mapping[Any, Any], tasks: Any, source: str, where: str, amounts_at: str,
           limits: io.Limits) -> _Entry:  # fmt: skip
    """An entry with its amounts and task cap checked (numbers, finite, non-negative, within the limits)."""
    amounts: dict[str, float] = {}
    for resource, amount in demand.items():
        at = f"{amounts_at}.{resource}" if amounts_at else str(resource)
        if not isinstance(resource, str) or not resource.strip():
            raise InstanceError(f"a resource name must be a string, got {io._describe(resource)}", amounts_at, source)
        if not _is_amount(amount):
            raise InstanceError(f"must be a number, got {io._describe(amount)}", at, source)
        value = float(amount)
        if not (math.isfinite(value) and 0 <= value <= limits.max_quantity):
            raise InstanceError(f"must be finite, non-negative and at most {limits.max_quantity:g}, got {amount!r}",
                                at, source)  # fmt: skip
        amounts[resource.strip()] = value
    cap = None
    if tasks is not None:
        at = f"{where}.tasks"
        if not _is_amount(tasks):
            raise InstanceError(f"must be a number of tasks, got {io._describe(tasks)}", at, source)
        cap = float(tasks)
        if not cap >= 0:
            raise InstanceError(f"task count must be non-negative, got {tasks!r}", at, source)
    return _Entry(key, amounts, cap, source, where, amounts_at)


def _assign(config: YarnConfig, entries: dict[str, _Entry]) -> dict[str, _Entry]:
    """Each leaf's entry: by its path (``root.a.b`` or ``a.b``) first, else its own name, else ``*``."""
    by_path = {queue.path: queue for queue in config.queues}
    by_name: dict[str, list[str]] = {}
    for queue in config.queues:
        by_name.setdefault(queue.name, []).append(queue.path)
    chosen: dict[str, tuple[int, _Entry]] = {}
    for key, entry in entries.items():
        if key == "*":
            continue
        if key in by_path or f"{_ROOT}.{key}" in by_path:
            path, rank = (key if key in by_path else f"{_ROOT}.{key}"), 2
        elif key in by_name:
            if len(by_name[key]) > 1:
                raise InstanceError(f"{key!r} names {len(by_name[key])} queues ({', '.join(by_name[key])}): give the "
                                    "path", entry.where, entry.source)  # fmt: skip
            path, rank = by_name[key][0], 1
        else:
            raise InstanceError(f"no queue {key!r} in {config.source} (its leaves: {_listed(config.leaves)})",
                                entry.where, entry.source)  # fmt: skip
        if not by_path[path].is_leaf:
            raise InstanceError(f"queue {path} is not a leaf: only leaves carry a demand (its leaves: "
                                f"{_listed(_leaves_below(config, path))})", entry.where, entry.source)  # fmt: skip
        prior = chosen.get(path)
        if prior is not None and prior[0] == rank:
            raise InstanceError(f"queue {path} is given a demand twice ({prior[1].key!r} and {key!r})", entry.where,
                                entry.source)  # fmt: skip
        if prior is None or rank > prior[0]:
            chosen[path] = (rank, entry)
    default = entries.get("*")
    assigned = {}
    for leaf in config.leaves:
        if leaf.path in chosen:
            assigned[leaf.path] = chosen[leaf.path][1]
        elif default is not None:
            assigned[leaf.path] = default
        else:
            raise InstanceError(f"no demand for leaf queue {leaf.path}: give one by its path or name, or one for "
                                "every other leaf under '*'", leaf.where, config.source)  # fmt: skip
    return assigned


def _leaves_below(config: YarnConfig, path: str) -> list[YarnQueue]:
    return [leaf for leaf in config.leaves if leaf.path.startswith(f"{path}.")]


def _listed(queues: Sequence[YarnQueue], most: int = 8) -> str:
    paths = [queue.path for queue in queues]
    return ", ".join(paths[:most]) + (f" and {len(paths) - most} more" if len(paths) > most else "")


# --------------------------------------------------------------------------------------- resource names


class _Names:
    """How resource names in demands and YARN files map to the instance's (see the module docstring)."""

    def __init__(self, mapping: Mapping[str, str] | None, known: Sequence[str] | None) -> None:
        self.known = None if known is None else tuple(known)
        self.mapping: dict[str, str] = {}
        for yarn, name in (mapping or {}).items():
            where = f"resources[{printable(str(yarn))}]"
            if not isinstance(yarn, str) or not isinstance(name, str) or not yarn.strip() or not name.strip():
                raise InstanceError(f"maps a YARN resource name to an instance resource name (strings), got "
                                    f"{io._describe(yarn)} -> {io._describe(name)}", where)  # fmt: skip
            if self.known is not None and name not in self.known:
                raise InstanceError(f"maps {yarn!r} to {name!r}, which is not a resource of the instance "
                                    f"({', '.join(self.known)})", where)  # fmt: skip
            self.mapping[_CANONICAL.get(yarn.strip().lower(), yarn.strip())] = name

    def __call__(self, name: str, where: str, source: str) -> str:
        """The instance's resource for ``name`` (a YARN name or a demand's key)."""
        canonical = _CANONICAL.get(name.lower(), name)
        if canonical in self.mapping:
            return self.mapping[canonical]
        if self.known is None or name in self.known:
            return name
        if canonical in self.known:
            return canonical
        alias = YARN_ALIASES.get(canonical)
        if alias is not None and alias in self.known:
            return alias
        via = f" or {alias!r}" if alias is not None else ""
        raise InstanceError(f"unknown resource {name!r}: the instance has no resource {canonical!r}{via} (it has "
                            f"{', '.join(self.known)}); map it with resources={{{canonical!r}: NAME}} (the command "
                            f"line's --yarn-resource {canonical}=NAME)", where, source)  # fmt: skip


# -------------------------------------------------------------------------------------------- the tree


def _totals(cluster: Mapping[str, float] | Instance | None) -> dict[str, float] | None:
    if cluster is None:
        return None
    if isinstance(cluster, Instance):
        return dict(zip(cluster.resources, cluster.total_capacity.tolist(), strict=True))
    if not isinstance(cluster, Mapping):
        raise InstanceError(f"must be the cluster's total capacity by resource (or an Instance), got "
                            f"{io._describe(cluster)}", "cluster")  # fmt: skip
    totals = {}
    for name, amount in cluster.items():
        value = float(amount) if _is_amount(amount) else math.nan
        if not (isinstance(name, str) and math.isfinite(value) and value >= 0):
            raise InstanceError(f"must be a finite, non-negative amount, got {amount!r}", f"cluster.{name}")
        totals[name] = value
    return totals


def _bounds(limit: YarnResources, names: _Names, totals: dict[str, float] | None, source: str) -> dict[str, float]:
    """``limit`` as absolute amounts by instance resource (shares of the cluster need ``totals``)."""
    bounds: dict[str, float] = {}

    def bound(resource: str, amount: float) -> None:
        bounds[resource] = min(bounds.get(resource, math.inf), amount)

    for yarn, amount in limit.amounts.items():
        bound(names(yarn, limit.where, source), amount)
    for yarn, share in limit.shares.items():
        resource = names(yarn, limit.where, source)
        if totals is not None:
            bound(resource, share * totals.get(resource, 0.0))
    if limit.share_of_all is not None and totals is not None:
        for resource, total in totals.items():
            bound(resource, limit.share_of_all * total)
    return bounds


def _task_cap(bounds: dict[str, float], demand: Mapping[str, float]) -> float | None:
    """The most whole tasks of ``demand`` within ``bounds`` (None: nothing bounds them)."""
    ratios = [amount / demand[resource] for resource, amount in bounds.items() if demand.get(resource, 0) > 0]
    if not ratios or math.isinf(min(ratios)):
        return None
    return float(math.floor(min(ratios) * (1 + 1e-9)))


def _relative(limit: YarnResources | None) -> bool:
    return limit is not None and (bool(limit.shares) or limit.share_of_all is not None)


def hierarchy_from_yarn(
    source: Source,
    demand: DemandSpec | Sequence[DemandSpec],
    *,
    resources: Mapping[str, str] | None = None,
    cluster: Mapping[str, float] | Instance | None = None,
    notes: list[str] | None = None,
    limits: io.Limits = io.DEFAULT_LIMITS,
) -> Node:
    """The queue tree of a YARN ``fair-scheduler.xml`` or ``capacity-scheduler.xml`` as a weighted hierarchy.

    Every queue becomes a node named by its full path (``root``, ``root.ads``, ``root.ads.prod``) whose
    weight is the queue's ``<weight>`` (Fair Scheduler, default 1) or its ``capacity`` (Capacity Scheduler:
    the percentage of its parent, or the weight of ``2w``). Leaves get the ``demand`` given for them; a
    leaf's maximum (``maxResources``, ``maximum-capacity``) becomes its task cap: the most whole tasks of
    its demand within it (a share of the cluster needs ``cluster``).

    Parameters
    ----------
    source
        The YARN file: a path, or the XML text itself (``bytes``, or a ``str`` starting with ``<``). Which
        scheduler it configures is told by its root element.
    demand
        What one task of each leaf needs, by resource: one mapping for every leaf (``{"cpu": 1, "mem":
        2048}``); or a mapping from queue to demand, each a resource mapping or ``{"demand": {...},
        "tasks": N}`` (``tasks`` caps the leaf's tasks), keyed by the queue's full path, its path below the
        root or its own name (where no other queue has it), with ``"*"`` for every leaf not named; or the
        path of a YAML/JSON file holding such a mapping (:func:`read_leaf_demand`); or a list of these,
        later ones overriding earlier ones queue by queue.
    resources
        YARN resource name -> the instance's resource name, for names the default rule does not map: a name
        maps to itself when the instance has that resource, else ``memory-mb`` (old-style ``mb``) to
        ``mem``, ``vcores`` to ``cpu``, ``yarn.io/gpu`` to ``gpu``. Demand keys are mapped the same way.
    cluster
        The cluster's total capacity by resource (or the :class:`~fairpack.models.types.Instance` that is
        the cluster): the instance's resource names (anything else is refused), and what a share of the
        cluster (``maxResources`` ``50%``, ``maximum-capacity``) amounts to. Without it, the resources are
        those the demands name and maxima given as shares cap nothing.
    notes
        If given, sentences saying what the file holds that is recorded but not modelled (minResources,
        maxima of inner queues, scheduling policies) and which task caps were derived are appended to it.
    limits
        Bounds on the file (size, queue depth, weights, amounts).

    Returns
    -------
    Node
        The root ``root`` of the tree, validated as an instance file's hierarchy is.

    Raises
    ------
    InstanceError
        For a file that is not well-formed XML or has a DTD (so no entity bomb or external entity is ever
        expanded), a root element other than ``<allocations>``/``<configuration>``, a queue without a
        name, a weight or capacity that is not a positive number, sibling capacities not summing to 100, a
        property for a queue no ``.queues`` list defines, a leaf without a demand, a demand naming no leaf,
        an unknown resource name: each naming the file and the element (``queue[root.ads].weight``,
        ``property[yarn.scheduler.capacity.root.ads.capacity]``) or the demand entry at fault.

    Examples
    --------
    >>> xml = '''<allocations>
    ...   <queue name="ads"><weight>3</weight></queue>
    ...   <queue name="etl"/>
    ... </allocations>'''
    >>> tree = hierarchy_from_yarn(xml, {"cpu": 1, "mem": 2048})
    >>> [(child.name, child.weight) for child in tree.children]
    [('root.ads', 3.0), ('root.etl', 1.0)]
    """
    config = read_yarn(source, limits)
    node, found = _tree(config, demand, resources, _totals(cluster), limits)
    if notes is not None:
        notes.extend(found)
    return node


def _tree(config: YarnConfig, demand: Any, resources: Mapping[str, str] | None, totals: dict[str, float] | None,
          limits: io.Limits) -> tuple[Node, list[str]]:  # fmt: skip
    assigned = _assign(config, _entries(demand, limits))
    names = _Names(resources, None if totals is None else list(totals))
    demands: dict[str, dict[str, float]] = {}
    for path, entry in assigned.items():
        mapped: dict[str, float] = {}
        for resource, amount in entry.demand.items():
            at = f"{entry.amounts_at}.{resource}" if entry.amounts_at else resource
            target = names(resource, at, entry.source)
            if target in mapped:
                raise InstanceError(f"two of its resources map to {target!r}", entry.amounts_at, entry.source)
            mapped[target] = amount
        demands[path] = mapped
    if totals is None:  # the resources are those the demands name
        names = _Names(resources, list(dict.fromkeys(r for mapped in demands.values() for r in mapped)))
    caps: dict[str, float] = {}
    for queue in config.queues:  # every named resource is checked, used or only recorded
        for given in (queue.min_resources, queue.max_resources):
            if given is not None:
                _bounds(given, names, None, config.source)
        if queue.is_leaf and queue.max_resources is not None:
            cap = _task_cap(_bounds(queue.max_resources, names, totals, config.source), demands[queue.path])
            if cap is not None:
                caps[queue.path] = cap
    tree = _nested(config, demands, assigned, caps)
    try:
        node = Node.from_dict(tree)
    except InstanceError as error:
        located = named_field(error.field.lstrip("."), {"hierarchy": tree})
        raise InstanceError(error.reason, located, error.source or config.source) from None
    return node, _notes(config, caps, totals)


def _nested(config: YarnConfig, demands: dict[str, dict[str, float]], assigned: dict[str, _Entry],
            caps: dict[str, float]) -> dict[str, Any]:  # fmt: skip
    """The tree in the file's nested form (``name``, ``weight``, ``children`` or ``demand``/``tasks``)."""
    entries: dict[str, dict[str, Any]] = {}
    for queue in config.queues:  # parents come before their children
        entry: dict[str, Any] = {"name": queue.path}
        if queue.parent is not None and queue.weight != 1:
            entry["weight"] = queue.weight
        if queue.is_leaf:
            entry["demand"] = demands[queue.path]
            given = [cap for cap in (assigned[queue.path].tasks, caps.get(queue.path)) if cap is not None]
            if given:
                entry["tasks"] = min(given)
        entries[queue.path] = entry
        if queue.parent is not None:
            entries[queue.parent].setdefault("children", []).append(entry)
    return entries[_ROOT]


def _notes(config: YarnConfig, caps: dict[str, float], totals: dict[str, float] | None) -> list[str]:
    """What the file holds that the tree does not model, and the caps derived, one sentence each."""
    where = Path(config.source).name
    notes = []
    if config.kind == "fair":
        other = [q for q in config.queues if q.parent is not None and (q.policy or "fair").lower() != "drf"]
        if other:
            notes.append(f"{where}: every level is shared by DRF (H-DRF, as YARN's drf schedulingPolicy); YARN's "
                         f"fair policy (its default) compares memory alone and fifo runs applications in order: "
                         f"not drf here: {_listed(other)}")  # fmt: skip
    minimum = [q for q in config.queues if q.min_resources is not None]
    if minimum:
        notes.append(f"{where}: minResources recorded, not modelled (guarantees come from the weights alone): "
                     f"{_listed(minimum)}")  # fmt: skip
    inner = [q for q in config.queues if not q.is_leaf and q.max_resources is not None and q.parent is not None]
    if inner:
        what = "maxResources" if config.kind == "fair" else "maximum-capacity"
        notes.append(f"{where}: {what} of inner queues recorded, not modelled (a hierarchy caps leaves only): "
                     f"{_listed(inner)}")  # fmt: skip
    if totals is None:
        relative = [q for q in config.leaves if _relative(q.max_resources)]
        if relative:
            notes.append(f"{where}: maxima given as shares of the cluster cap nothing without the cluster: "
                         f"{_listed(relative)}")  # fmt: skip
    if caps:
        shown = ", ".join(f"{path} {cap:g}" for path, cap in list(caps.items())[:8])
        notes.append(f"{where}: task caps from the leaves' maxima: {shown}" + (
            f" and {len(caps) - 8} more" if len(caps) > 8 else ""))  # fmt: skip
    return notes


def instance_from_yarn(
    cluster: Instance | PathLike,
    source: Source,
    demand: DemandSpec | Sequence[DemandSpec],
    *,
    resources: Mapping[str, str] | None = None,
    name: str | None = None,
    notes: list[str] | None = None,
    limits: io.Limits = io.DEFAULT_LIMITS,
) -> Instance:
    """An instance whose cluster is ``cluster`` and whose hierarchy is the queue tree of a YARN file.

    ``cluster`` is an :class:`~fairpack.models.types.Instance` or an instance file: its resources and
    servers (jobs and data placement too) are kept, its tenants or hierarchy replaced by the tree
    :func:`hierarchy_from_yarn` reads from ``source`` with ``demand`` and ``resources`` (its resource
    names and totals are the cluster's). The instance is named ``name``, else by the YARN file's stem.
    """
    if not isinstance(cluster, Instance):
        cluster = io.load_instance(os.fspath(cluster), limits)
    config = read_yarn(source, limits)
    node, found = _tree(config, demand, resources, _totals(cluster), limits)
    data = io.instance_to_dict(cluster)
    replaced = [key for key in ("tenants", "hierarchy") if data.pop(key, None)]
    if replaced:
        found.append(f"the cluster's {' and '.join(replaced)} replaced by the queues of {Path(config.source).name}")
    tree = node.to_dict()
    data["hierarchy"] = tree
    stem = Path(config.source).stem if config.source != "<string>" else "yarn"
    data["name"] = name or stem
    try:
        instance = io.instance_from_dict(data, data["name"], limits)
    except InstanceError as error:
        located = named_field(error.field.lstrip("."), data)
        raise InstanceError(error.reason, located, config.source) from None
    if notes is not None:
        notes.extend(found)
    return instance
