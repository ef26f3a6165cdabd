"""Typed, validated, immutable instance data.

Every entity is a small frozen dataclass that validates itself on construction and refers to other
entities by index, never by object. Vectors over resources are read-only numpy arrays ordered like
``Instance.resources``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class InstanceError(ValueError):
    """Bad instance data, naming the file, the field at fault and the reason."""

    def __init__(self, reason: str, field: str = "", source: str = "") -> None:
        # Parts can quote the input (a key, a name, a parser's excerpt): escape what cannot be printed, so
        # the message itself can always be printed and encoded (a lone surrogate would break stderr).
        self.reason = printable(reason)
        self.field = printable(field)
        self.source = printable(source)
        super().__init__(self._message())

    def _message(self) -> str:
        where = ": ".join(part for part in (self.source, self.field) if part)
        return f"{where}: {self.reason}" if where else self.reason

    def located(self, source: str, prefix: str = "") -> InstanceError:
        """Return a copy of this error attributed to ``source``, with ``prefix`` prepended to the field."""
        joined = ".".join(p for p in (prefix, self.field) if p).replace(".[", "[")
        return InstanceError(self.reason, joined, source or self.source)


def printable(text: str) -> str:
    """``text`` with every character that cannot be printed (controls, lone surrogates) escaped."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def frozen_vector(values: Sequence[float] | FloatArray, field_name: str, size: int) -> FloatArray:
    """Validate a resource vector (finite, non-negative, right length) and return it read-only.

    Checked in bulk; only on failure is the first offending entry located for the message. An array that
    is already a read-only float64 vector (a row of a matrix the loader validated) is returned as is.
    """
    trusted = isinstance(values, np.ndarray) and values.dtype == np.float64 and values.ndim == 1
    if trusted and not values.flags.writeable:  # type: ignore[union-attr]
        array: FloatArray = values  # type: ignore[assignment]
    else:
        array = np.array(values, dtype=np.float64).reshape(-1)
    if array.shape != (size,):
        raise InstanceError(f"expected {size} resource values, got {array.size}", field_name)
    finite = np.isfinite(array)
    if not finite.all() or (array < 0).any():
        position = int(np.argmin(finite & (array >= 0)))
        value = array[position]
        reason = f"value {value} is not finite" if not finite[position] else f"value {value} is negative"
        raise InstanceError(reason, f"{field_name}[{position}]")
    if array.flags.writeable:
        array.setflags(write=False)
    return array


def _check_name(name: str, field_name: str) -> None:
    if not isinstance(name, str) or not name.strip():
        raise InstanceError("name must be a non-empty string", field_name)
    if not name.isprintable():  # control characters, lone surrogates: cannot be printed, some not encoded
        raise InstanceError(f"name {printable(name)!r} has characters that cannot be printed", field_name)


def _check_positive(value: float, field_name: str) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise InstanceError(f"must be a positive finite number, got {value!r}", field_name)


def _check_task_cap(tasks: float, field_name: str) -> None:
    if not (tasks == math.inf or (math.isfinite(tasks) and tasks >= 0)):
        raise InstanceError(f"task count must be non-negative, got {tasks!r}", field_name)


def _check_names(names: Sequence[str], where: Callable[[int], str]) -> None:
    """``_check_name`` on every name: in bulk when all pass, one by one to word the first fault."""
    if {str}.issuperset(map(type, names)) and all(map(str.strip, names)) and "".join(names).isprintable():
        return
    for position, name in enumerate(names):
        _check_name(name, f"{where(position)}.name")


def _entry_field(position: int) -> str:
    return f"[{position}]"


def _frozen_matrix(values: FloatArray, rows: int, field_name: str, where: Callable[[int], str]) -> FloatArray:
    """Validate a (rows x resources) matrix of resource vectors in bulk; return it read-only."""
    matrix = np.array(values, dtype=np.float64, copy=values.flags.writeable if isinstance(values, np.ndarray) else None)
    if matrix.ndim != 2 or matrix.shape[0] != rows:
        raise InstanceError(f"expected {rows} rows of resource values, got shape {matrix.shape}", field_name)
    good = np.isfinite(matrix) & (matrix >= 0)
    if not good.all():
        row, column = np.unravel_index(int(np.argmin(good)), matrix.shape)
        value = matrix[row, column]
        reason = f"value {value} is not finite" if not math.isfinite(value) else f"value {value} is negative"
        raise InstanceError(reason, f"{where(int(row))}.{field_name}[{column}]")
    matrix.setflags(write=False)
    return matrix


def _first_bad(good: npt.NDArray[np.bool_]) -> int | None:
    return None if good.all() else int(np.argmin(good))


def _new(cls: type, **values: object) -> object:
    """An instance of a frozen dataclass with ``values`` set, skipping ``__post_init__`` (validated in bulk)."""
    instance: object = object.__new__(cls)
    vars(instance).update(values)  # these dataclasses have no slots; one update, not a frozen setattr per field
    return instance


def _same(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and bool(np.array_equal(a, b))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class _ValueEquality:
    """Field-by-field equality that compares numpy arrays by value.

    The ``__eq__`` dataclasses generate compares fields as tuples, which raises on array fields ("truth
    value of an array is ambiguous"); so the domain classes are declared with ``eq=False`` and use this.
    They stay unhashable, as they were (an array field cannot be hashed).
    """

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(_same(getattr(self, f.name), getattr(other, f.name)) for f in fields(self) if f.compare)  # type: ignore[arg-type]


@dataclass(frozen=True, eq=False)
class ServerClass(_ValueEquality):
    """``count`` identical machines, each with ``capacity`` of every resource."""

    name: str
    capacity: FloatArray
    count: int = 1
    labels: tuple[tuple[str, str], ...] = ()  # (key, value) pairs, e.g. (("rack", "r1"),), sorted by key

    def __post_init__(self) -> None:
        _check_name(self.name, "name")
        object.__setattr__(self, "capacity", frozen_vector(self.capacity, "capacity", len(self.capacity)))
        if not isinstance(self.count, int | np.integer) or self.count < 1:
            raise InstanceError(f"count must be a positive integer, got {self.count!r}", "count")
        _check_labels(self.labels, "labels")

    def label(self, key: str) -> str | None:
        """The value of label ``key`` (None when the server has no such label)."""
        return dict(self.labels).get(key)

    @classmethod
    def many(
        cls,
        names: Sequence[str],
        capacity: FloatArray,
        counts: Sequence[int],
        where: Callable[[int], str] = _entry_field,
        labels: Sequence[tuple[tuple[str, str], ...]] | None = None,
    ) -> tuple[ServerClass, ...]:
        """Server classes from one capacity matrix, validated in bulk by the rules of one-by-one
        construction; ``where(k)`` names entry ``k`` in error messages (``[k]`` by default)."""
        capacity = _frozen_matrix(capacity, len(names), "capacity", where)
        for position, (name, count) in enumerate(zip(names, counts, strict=True)):
            _check_name(name, f"{where(position)}.name")
            if not isinstance(count, int | np.integer) or isinstance(count, bool) or count < 1:
                raise InstanceError(f"count must be a positive integer, got {count!r}", f"{where(position)}.count")
        labelled = list(labels) if labels is not None else [()] * len(names)
        for position, pairs in enumerate(labelled):
            _check_labels(pairs, f"{where(position)}.labels")
        return tuple(
            _new(cls, name=name, capacity=capacity[k], count=int(counts[k]), labels=labelled[k])  # type: ignore[misc]
            for k, name in enumerate(names)
        )


def _check_labels(labels: tuple[tuple[str, str], ...], field_name: str) -> None:
    if not isinstance(labels, tuple):
        raise InstanceError(f"labels must be a tuple of (key, value) pairs, got {type(labels).__name__}", field_name)
    for pair in labels:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise InstanceError(f"a label must be a (key, value) pair, got {pair!r}", field_name)
        _check_name(pair[0], f"{field_name}.{pair[0]}" if isinstance(pair[0], str) else field_name)
        _check_name(pair[1], f"{field_name}.{pair[0]}")
    keys = [key for key, _ in labels]
    if keys != sorted(set(keys)):
        raise InstanceError("label keys must be unique and sorted", field_name)


@dataclass(frozen=True, eq=False)
class Tenant(_ValueEquality):
    """A user (or job) whose tasks all have the same ``demand`` vector; ``tasks`` caps their number."""

    name: str
    demand: FloatArray
    weight: float = 1.0
    tasks: float = math.inf

    def __post_init__(self) -> None:
        _check_name(self.name, "name")
        object.__setattr__(self, "demand", frozen_vector(self.demand, "demand", len(self.demand)))
        if not np.any(self.demand > 0):
            raise InstanceError("demand vector is zero: a task must need some resource", "demand")
        _check_positive(self.weight, "weight")
        _check_task_cap(self.tasks, "tasks")

    @classmethod
    def many(
        cls,
        names: Sequence[str],
        demand: FloatArray,
        weights: FloatArray,
        tasks: FloatArray,
        where: Callable[[int], str] = _entry_field,
    ) -> tuple[Tenant, ...]:
        """Tenants from one demand matrix and weight and cap arrays, validated in bulk by the rules of
        one-by-one construction; ``where(k)`` names entry ``k`` in error messages (``[k]`` by default)."""
        demand = _frozen_matrix(demand, len(names), "demand", where)
        weights = np.asarray(weights, dtype=np.float64).reshape(-1)
        tasks = np.asarray(tasks, dtype=np.float64).reshape(-1)
        if not len(names) == len(weights) == len(tasks):
            raise InstanceError(f"{len(names)} names, {len(weights)} weights and {len(tasks)} task caps", "tenants")
        zero = _first_bad(np.asarray((demand > 0).any(axis=1)))
        if zero is not None:
            raise InstanceError("demand vector is zero: a task must need some resource", f"{where(zero)}.demand")
        with np.errstate(invalid="ignore"):
            weight = _first_bad(np.isfinite(weights) & (weights > 0))
            cap = _first_bad((tasks == math.inf) | (np.isfinite(tasks) & (tasks >= 0)))
        if weight is not None:
            _check_positive(float(weights[weight]), f"{where(weight)}.weight")
        if cap is not None:
            _check_task_cap(float(tasks[cap]), f"{where(cap)}.tasks")
        _check_names(names, where)
        return tuple(
            _new(cls, name=name, demand=row, weight=weight, tasks=cap)  # type: ignore[misc]
            for name, row, weight, cap in zip(names, demand, weights.tolist(), tasks.tolist(), strict=True)
        )


@dataclass(frozen=True, eq=False)
class HierarchyNode(_ValueEquality):
    """A node of the weighted organisation tree; leaves carry a demand and map to a tenant."""

    name: str
    parent: int  # index into Hierarchy.nodes, -1 for the root
    weight: float = 1.0
    tenant: int = -1  # index into Instance.tenants for leaves, -1 for internal nodes

    def __post_init__(self) -> None:
        _check_name(self.name, "name")
        _check_positive(self.weight, "weight")

    @classmethod
    def many(
        cls,
        names: Sequence[str],
        parents: Sequence[int],
        weights: FloatArray,
        tenants: Sequence[int],
        where: Callable[[int], str] = _entry_field,
    ) -> tuple[HierarchyNode, ...]:
        """Nodes from parallel lists, validated by the rules of one-by-one construction (weights in bulk);
        ``where(k)`` names node ``k`` in error messages (``[k]`` by default)."""
        weights = np.asarray(weights, dtype=np.float64).reshape(-1)
        if not len(names) == len(parents) == len(weights) == len(tenants):
            raise InstanceError(f"{len(names)} names, {len(parents)} parents, {len(weights)} weights and "
                                f"{len(tenants)} tenants", "hierarchy")  # fmt: skip
        with np.errstate(invalid="ignore"):
            weight = _first_bad(np.isfinite(weights) & (weights > 0))
        if weight is not None:
            _check_positive(float(weights[weight]), f"{where(weight)}.weight")
        _check_names(names, where)
        return tuple(
            _new(cls, name=name, parent=parent, weight=weight, tenant=tenant)  # type: ignore[misc]
            for name, parent, weight, tenant in zip(names, parents, weights.tolist(), tenants, strict=True)
        )


@dataclass(frozen=True, eq=False)
class Hierarchy(_ValueEquality):
    """A rooted tree stored as parent indices; node 0 is the root."""

    nodes: tuple[HierarchyNode, ...]

    def __post_init__(self) -> None:
        if not self.nodes or self.nodes[0].parent != -1:
            raise InstanceError("the first node must be the root (no parent)", "hierarchy")
        for index, node in enumerate(self.nodes[1:], start=1):
            if not 0 <= node.parent < len(self.nodes) or node.parent == index:
                raise InstanceError(f"node {node.name!r} has invalid parent {node.parent}", "hierarchy")
        # Walking up from every node must reach the root: otherwise parent links form a cycle. Each node is
        # walked once (a walk stops at a node already known to reach the root), so a long chain is linear.
        # Parents listed before their children (as the loader orders them) reach the root by construction.
        if all(node.parent < index for index, node in enumerate(self.nodes[1:], start=1)):
            return
        reaches_root = [False] * len(self.nodes)
        reaches_root[0] = True
        for index in range(len(self.nodes)):
            path: list[int] = []
            on_path: set[int] = set()
            current = index
            while not reaches_root[current]:
                if current in on_path:
                    raise InstanceError(f"cycle through node {self.nodes[current].name!r}", "hierarchy")
                path.append(current)
                on_path.add(current)
                current = self.nodes[current].parent
            for walked in path:
                reaches_root[walked] = True

    def children(self, index: int) -> list[int]:
        return [i for i, node in enumerate(self.nodes) if node.parent == index]


@dataclass(frozen=True, eq=False)
class Option(_ValueEquality):
    """One way to run a stage's tasks (a subset of Tetrisched's STRL): on which machines, for how long, and
    whether as a gang.

    Attributes
    ----------
    duration : a task's duration under this option
    on : label selector, ``(key, value)`` pairs sorted by key that a machine's labels must all hold (empty:
        any machine)
    same : a label key, or ``""``. A gang: all the stage's tasks run on machines sharing one value of this
        label (each machine must have it) and start together. A stage runs either as one gang (under one
        gang option, in one group) or task by task, each task under any of the stage's other options.
    demand : a task's whole demand vector under this option (Tetrisched's execution strategies with their
        own resources), or None: the stage's demand. The file's ``demand`` on an option lists only the
        resources it changes; the loader resolves it against the stage's demand (see ``docs/format.md``).
    """

    duration: float
    on: tuple[tuple[str, str], ...] = ()
    same: str = ""
    demand: FloatArray | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.duration, int | float) and math.isfinite(self.duration) and self.duration >= 0):
            raise InstanceError(f"duration must be finite and non-negative, got {self.duration!r}", "duration")
        _check_labels(self.on, "on")
        if self.same:
            _check_name(self.same, "same")
        if self.demand is not None:
            object.__setattr__(self, "demand", frozen_vector(self.demand, "demand", len(self.demand)))

    @property
    def gang(self) -> bool:
        return bool(self.same)

    def matches(self, labels: tuple[tuple[str, str], ...]) -> bool:
        """Whether a machine with ``labels`` may run this option (its selector, and the gang's label key)."""
        held = dict(labels)
        return all(held.get(key) == value for key, value in self.on) and (not self.same or self.same in held)


@dataclass(frozen=True, eq=False)
class Stage(_ValueEquality):
    """A set of ``tasks`` identical tasks of one DAG job; ``after`` indexes the job's parent stages.

    With ``options`` the tasks run only under one of them (first preferred; see :class:`Option`), each for
    its option's duration; ``duration`` is then the first option's.
    """

    name: str
    tasks: int
    duration: float
    demand: FloatArray
    after: tuple[int, ...] = ()
    input: tuple[str, ...] = ()  # task i reads block input[i] (``Instance.data``); empty: no input data
    options: tuple[Option, ...] = ()

    def __post_init__(self) -> None:
        _check_name(self.name, "name")
        if not isinstance(self.tasks, int | np.integer) or self.tasks < 1:
            raise InstanceError(f"tasks must be a positive integer, got {self.tasks!r}", "tasks")
        if self.input and len(self.input) != self.tasks:
            raise InstanceError(f"{len(self.input)} input blocks for {self.tasks} tasks (one per task)", "input")
        if not (math.isfinite(self.duration) and self.duration >= 0):
            raise InstanceError(f"duration must be finite and non-negative, got {self.duration!r}", "duration")
        object.__setattr__(self, "demand", frozen_vector(self.demand, "demand", len(self.demand)))
        for position, option in enumerate(self.options):
            if not isinstance(option, Option):
                raise InstanceError(f"must be an Option, got {type(option).__name__}", f"options[{position}]")
            if option.demand is not None and option.demand.shape != self.demand.shape:
                raise InstanceError(f"expected {len(self.demand)} resource values, got {option.demand.size}",
                                    f"options[{position}].demand")  # fmt: skip

    def demand_under(self, option: Option | int | None) -> FloatArray:
        """One task's demand vector under ``option`` (an Option or an index into ``options``; None: no
        option): the option's own demand where it has one, else the stage's."""
        if option is None:
            return self.demand
        chosen = self.options[option] if isinstance(option, int | np.integer) else option
        return self.demand if chosen.demand is None else chosen.demand

    @property
    def option_demands(self) -> bool:
        """Whether some option of the stage carries its own demand."""
        return any(option.demand is not None for option in self.options)


@dataclass(frozen=True, eq=False)
class Job(_ValueEquality):
    """A DAG of stages released at ``release``.

    ``tenant`` names the queue (user) the job belongs to; empty means the job is its own tenant.
    ``deadline`` is when the job should finish (``inf``: none). ``utility`` is a piecewise-linear value of
    the job's completion time (Jockey, Tetrisched): ``(time, value)`` points, times increasing, values not
    increasing, constant before the first and after the last point. Without points the job's utility is
    ``-weight * (completion - release)`` ("minimise completion"); see :meth:`utility_at`.
    """

    name: str
    stages: tuple[Stage, ...]
    weight: float = 1.0
    release: float = 0.0
    tenant: str = ""
    deadline: float = math.inf
    utility: tuple[tuple[float, float], ...] = ()

    def __post_init__(self) -> None:
        _check_name(self.name, "name")
        _check_positive(self.weight, "weight")
        if not (math.isfinite(self.release) and self.release >= 0):
            raise InstanceError(f"release must be finite and non-negative, got {self.release!r}", "release")
        if not (self.deadline == math.inf or (math.isfinite(self.deadline) and self.deadline > 0)):
            raise InstanceError(f"deadline must be a positive time, got {self.deadline!r}", "deadline")
        if not self.stages:
            raise InstanceError("a job needs at least one stage", "stages")
        _check_unique([s.name for s in self.stages], "stages")
        for position, stage in enumerate(self.stages):
            for parent in stage.after:
                if not 0 <= parent < len(self.stages) or parent == position:
                    raise InstanceError(f"invalid parent stage index {parent}", f"stages[{position}].after")
        if len(self.stages) > 1:  # one stage: no edge (a stage naming itself is refused above)
            _check_acyclic(self)
        check_utility(self.utility)

    def utility_at(self, completion: float | FloatArray) -> FloatArray:
        """The job's utility when it completes at ``completion`` (see the class docstring)."""
        time = np.asarray(completion, dtype=np.float64)
        if not self.utility:
            return np.asarray(-self.weight * (time - self.release))
        points = np.array(self.utility, dtype=np.float64)
        return np.asarray(np.interp(time, points[:, 0], points[:, 1]))


def _utility_valid(points: tuple[tuple[float, float], ...]) -> bool:
    """Whether ``points`` pass :func:`check_utility`, checked in bulk (the walk below words any fault)."""
    if not points or not all(type(p) is tuple and len(p) == 2 for p in points):
        return not points
    flat = [x for point in points for x in point]
    if not {float, int}.issuperset(map(type, flat)):
        return False
    array = np.array(flat, dtype=np.float64).reshape(-1, 2)
    times, values = array[:, 0], array[:, 1]
    return bool(np.isfinite(array).all() and (times >= 0).all() and (np.diff(times) > 0).all()
                and (np.diff(values) <= 0).all())  # fmt: skip


def check_utility(points: tuple[tuple[float, float], ...]) -> None:
    """Utility points: finite ``(time, value)`` pairs, times non-negative and increasing, values not increasing."""
    if _utility_valid(points):
        return
    for position, point in enumerate(points):
        where = f"utility[{position}]"
        if not (isinstance(point, tuple) and len(point) == 2):
            raise InstanceError(f"a utility point is a (time, value) pair, got {point!r}", where)
        time, value = point
        if not all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in point):
            raise InstanceError(f"time and value must be finite numbers, got {point!r}", where)
        if time < 0:
            raise InstanceError(f"time must be non-negative, got {time!r}", where)
        if position:
            before, previous = points[position - 1]
            if time <= before:
                raise InstanceError(f"points out of order: time {time:g} does not come after {before:g}", where)
            if value > previous:
                raise InstanceError(f"utility must not increase with completion time: {value:g} at {time:g} is "
                                    f"above {previous:g} at {before:g}", where)  # fmt: skip


def _check_acyclic(job: Job) -> None:
    # Kahn's algorithm: every stage must be removable once its parents are gone.
    indegree = [len(stage.after) for stage in job.stages]
    children: list[list[int]] = [[] for _ in job.stages]
    for position, stage in enumerate(job.stages):
        for parent in stage.after:
            children[parent].append(position)
    ready = [i for i, degree in enumerate(indegree) if degree == 0]
    removed = 0
    while ready:
        current = ready.pop()
        removed += 1
        for child in children[current]:
            indegree[child] -= 1
            if indegree[child] == 0:
                ready.append(child)
    if removed != len(job.stages):
        cyclic = [job.stages[i].name for i, degree in enumerate(indegree) if degree > 0]
        raise InstanceError(f"stage dependencies form a cycle through {cyclic}", "stages")


def _check_unique(names: Sequence[str], field_name: str, key: str = ".name") -> None:
    seen: set[str] = set()
    for position, name in enumerate(names):
        if name in seen:
            raise InstanceError(f"duplicate name {name!r}", f"{field_name}[{position}]{key}")
        seen.add(name)


def _tasks_per_machine(capacity: FloatArray, demand: FloatArray) -> FloatArray:
    """How many tasks of ``demand`` fit at once on one machine of each capacity row (``inf``: no demand)."""
    need = demand > 0
    if not need.any():
        return np.full(capacity.shape[0], np.inf)
    return np.floor(np.min(capacity[:, need] / demand[need], axis=1) * (1 + 1e-12) + 1e-9)


def _check_option(servers: tuple[ServerClass, ...], stage: Stage, option: Option, where: str) -> None:
    """An option some machine can run (its selector matches, one task fits), and a gang some group holds."""
    matching = [s for s in servers if option.matches(s.labels)]
    if not matching:
        wanted = dict(option.on)
        if option.same and all(s.label(option.same) is None for s in servers):
            raise InstanceError(f"no machine has the label {option.same!r} that the gang groups by", f"{where}.same")
        raise InstanceError(f"no machine has the labels {wanted}" + (f" and a {option.same!r} label" if option.same
                            else ""), f"{where}.on")  # fmt: skip
    capacity = np.array([s.capacity for s in matching]).reshape(len(matching), -1)
    per_machine = _tasks_per_machine(capacity, stage.demand_under(option))
    if not np.any(per_machine >= 1):
        if option.demand is not None:
            raise InstanceError(f"no machine the selector {dict(option.on)} matches fits one task under the "
                                "option's demand", f"{where}.demand")  # fmt: skip
        raise InstanceError(f"no machine the selector {dict(option.on)} matches fits one task of the stage",
                            f"{where}.on")  # fmt: skip
    if not option.same:
        return
    held: dict[str, float] = {}
    for server, tasks in zip(matching, per_machine.tolist(), strict=True):
        value = server.label(option.same)
        assert value is not None
        held[value] = held.get(value, 0.0) + tasks * server.count
    largest = max(held.values())
    if largest < stage.tasks:
        raise InstanceError(f"a gang of {stage.tasks} tasks fits in no group of machines sharing a {option.same!r} "
                            f"value (the largest holds {largest:g} at once)", f"{where}.same")  # fmt: skip


#: The server label that names a machine's rack (data locality's middle level).
RACK_LABEL = "rack"
#: Locality levels of a task relative to its input block's replicas, fastest first.
LOCALITY_LEVELS = ("node", "rack", "remote")
#: Default duration multipliers per level: Zaharia et al. (EuroSys'10) observe non-local tasks running up
#: to 2x longer; a rack-local read crosses one switch, a remote one the core as well.
DEFAULT_LOCALITY = (1.0, 1.3, 2.0)


@dataclass(frozen=True, eq=False)
class DataPlacement(_ValueEquality):
    """Where input blocks live and what locality costs (the instance's ``blocks`` and ``locality``).

    Attributes
    ----------
    names : block names, in file order
    replicas : per block, the global indices (``Instance.machine_names`` order) of the machines holding a copy
    factors : duration multiplier for a task on a node holding its block, on the same rack, elsewhere
    """

    names: tuple[str, ...]
    replicas: tuple[tuple[int, ...], ...]
    factors: tuple[float, float, float] = DEFAULT_LOCALITY

    def __post_init__(self) -> None:
        if len(self.names) != len(self.replicas):
            raise InstanceError(f"{len(self.names)} block names and {len(self.replicas)} replica lists", "blocks")
        _check_unique(self.names, "blocks", key="")
        for name in self.names:
            _check_name(name, f"blocks.{name}" if isinstance(name, str) else "blocks")
        for name, machines in zip(self.names, self.replicas, strict=True):
            if not machines:
                raise InstanceError("a block needs at least one replica machine", f"blocks.{name}")
            if any(not isinstance(m, int | np.integer) or m < 0 for m in machines):
                raise InstanceError(f"replica machines must be machine indices, got {machines!r}", f"blocks.{name}")
        if len(self.factors) != len(LOCALITY_LEVELS):
            raise InstanceError(f"expected factors for {LOCALITY_LEVELS}, got {self.factors!r}", "locality")
        for level, factor in zip(LOCALITY_LEVELS, self.factors, strict=True):
            _check_positive(factor, f"locality.{level}")
        if not self.factors[0] <= self.factors[1] <= self.factors[2]:
            raise InstanceError(f"factors must not decrease from node to rack to remote, got {self.factors}",
                                "locality")  # fmt: skip

    def index(self) -> dict[str, int]:
        """Block name -> position."""
        return {name: b for b, name in enumerate(self.names)}


@dataclass(frozen=True, eq=False)
class Queues:
    """The queues of an instance's DAG jobs (:meth:`Instance.queues`).

    Attributes
    ----------
    names : queue names, in order of first use by the jobs
    of_job : (jobs,) every job's queue
    weight : (queues,) the declared tenant's weight (1 when not declared)
    cap : (queues,) the declared tenant's running-task cap ``tasks`` (``inf``: none)
    """

    names: tuple[str, ...]
    of_job: IntArray
    weight: FloatArray
    cap: FloatArray

    def totals(self, jobs: Sequence[Job]) -> FloatArray:
        """Every queue's tasks over all its jobs' stages."""
        total = np.zeros(len(self.names))
        np.add.at(total, self.of_job, np.array([sum(s.tasks for s in job.stages) for job in jobs], dtype=np.float64))
        return total

    def cap_field(self, q: int, tenants: Sequence[Tenant]) -> str:
        """Where queue ``q``'s cap is declared, for messages: ``tenants[i].tasks``."""
        return next(f"tenants[{i}].tasks" for i, tenant in enumerate(tenants) if tenant.name == self.names[q])

    def binding(self, jobs: Sequence[Job]) -> BoolArray:
        """Queues whose cap is below their tasks: the only ones a cap can ever hold back."""
        return np.asarray(self.cap < self.totals(jobs), dtype=bool)


@dataclass(frozen=True, eq=False)
class Instance(_ValueEquality):
    """A whole problem: resources, server classes, tenants and optionally a hierarchy and DAG jobs."""

    resources: tuple[str, ...]
    servers: tuple[ServerClass, ...]
    tenants: tuple[Tenant, ...] = ()
    hierarchy: Hierarchy | None = None
    jobs: tuple[Job, ...] = ()
    time_slot: float = 1.0
    name: str = "instance"
    data: DataPlacement | None = None  # input blocks and locality factors (``blocks`` and ``locality``)
    _arrays: dict[str, np.ndarray] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.resources:
            raise InstanceError("at least one resource is needed", "resources")
        for position, resource in enumerate(self.resources):
            _check_name(resource, f"resources[{position}]")
        _check_unique(self.resources, "resources", key="")  # plain strings, no .name
        if not self.servers:
            raise InstanceError("at least one server is needed", "servers")
        _check_unique([s.name for s in self.servers], "servers")
        _check_unique([t.name for t in self.tenants], "tenants")
        if not getattr(self.jobs, "unique", False):  # a trace's columns (models.traces.TraceJobs): distinct rows
            _check_unique([j.name for j in self.jobs], "jobs")
        size = len(self.resources)
        vectors = [("servers", k, s.capacity) for k, s in enumerate(self.servers)]
        vectors += [("tenants", k, t.demand) for k, t in enumerate(self.tenants)]
        for kind, position, vector in vectors:
            if vector.shape != (size,):
                raise InstanceError(f"vector has {vector.size} entries for {size} resources", f"{kind}[{position}]")
        if self.hierarchy is not None:
            leaves = [n.tenant for n in self.hierarchy.nodes if n.tenant >= 0]
            if sorted(leaves) != list(range(len(self.tenants))):
                raise InstanceError("hierarchy leaves must map one-to-one onto tenants", "hierarchy")
        _check_positive(self.time_slot, "time.slot")
        # One walk finds the few stages with inputs or options (a million-job trace has none); the checks below
        # and ``has_options`` / ``has_option_demands`` look at those alone.
        special = [] if getattr(self.jobs, "plain", False) else [
            (k, s) for k, job in enumerate(self.jobs) for s, stage in enumerate(job.stages)
            if stage.options or stage.input]  # fmt: skip
        self._cached("special", np.array(special, dtype=np.int64).reshape(-1, 2))
        self._check_data()
        # One check per distinct (option, stage shape): files repeat the same options over many jobs.
        checked: set[tuple[object, ...]] = set()
        for k, s, stage in self._special_stages():
            for o, option in enumerate(stage.options):
                key = (option.on, option.same, stage.demand_under(option).tobytes(), stage.tasks if option.same else 0)
                if key not in checked:
                    _check_option(self.servers, stage, option, f"jobs[{k}].stages[{s}].options[{o}]")
                    checked.add(key)

    def _special_stages(self) -> list[tuple[int, int, Stage]]:
        """``(job, stage, Stage)`` of every stage with input blocks or placement options, in job order."""
        return [(k, s, self.jobs[k].stages[s]) for k, s in self._arrays["special"].tolist()]

    def _check_data(self) -> None:
        """Replica machines exist; every stage input names a block of ``data``."""
        data = self.data
        if data is not None:
            machines = int(sum(s.count for s in self.servers))
            for name, replicas in zip(data.names, data.replicas, strict=True):
                if max(replicas) >= machines:
                    raise InstanceError(f"replica machine {max(replicas)} is beyond the {machines} machines",
                                        f"blocks.{name}")  # fmt: skip
        known = set(data.names) if data is not None else set()
        for k, s, stage in self._special_stages():
            unknown = [i for i, block in enumerate(stage.input) if block not in known] if stage.input else []
            if unknown:
                i = unknown[0]
                raise InstanceError(f"unknown block {stage.input[i]!r} (not in blocks)",
                                    f"jobs[{k}].stages[{s}].input[{i}]")  # fmt: skip

    @property
    def has_option_demands(self) -> bool:
        """Whether some option carries its own demand (see :class:`Option`)."""
        return any(stage.option_demands for _, _, stage in self._special_stages())

    @property
    def has_options(self) -> bool:
        """Whether some stage lists placement ``options`` (then every task needs a machine)."""
        return any(stage.options for _, _, stage in self._special_stages())

    def machine_racks(self) -> IntArray:
        """Rack number of every machine (its server's ``rack`` label; ``-1``: no rack), ``machine_names`` order."""

        def build() -> IntArray:
            values = [s.label(RACK_LABEL) for s in self.servers]
            named = sorted({v for v in values if v is not None})
            number = {v: r for r, v in enumerate(named)}
            per_class = np.array([-1 if v is None else number[v] for v in values], dtype=np.int64)
            return per_class[self.machine_class()]

        return self._cached("racks", build)

    # Cached matrix views; the dataclass is frozen, so the cache can never go stale.
    def _cached(self, key: str, build: object) -> np.ndarray:
        if key not in self._arrays:
            array = np.asarray(build() if callable(build) else build)
            array.setflags(write=False)
            self._arrays[key] = array
        return self._arrays[key]

    @property
    def capacity(self) -> FloatArray:
        """Per-machine capacity of each server class, shape (classes, resources)."""
        return self._cached(
            "capacity", lambda: np.array([s.capacity for s in self.servers]).reshape(-1, len(self.resources))
        )

    @property
    def counts(self) -> IntArray:
        """Number of machines in each server class."""
        return self._cached("counts", lambda: np.array([s.count for s in self.servers], dtype=np.int64))

    @property
    def total_capacity(self) -> FloatArray:
        """Capacity of the whole cluster per resource."""
        return self._cached("total", lambda: (self.capacity * self.counts[:, None]).sum(axis=0))

    @property
    def demand(self) -> FloatArray:
        """Per-task demand of each tenant, shape (tenants, resources)."""
        return self._cached(
            "demand", lambda: np.array([t.demand for t in self.tenants]).reshape(-1, len(self.resources))
        )

    @property
    def weights(self) -> FloatArray:
        return self._cached("weights", lambda: np.array([t.weight for t in self.tenants], dtype=np.float64))

    @property
    def task_caps(self) -> FloatArray:
        """Maximum task count per tenant; ``inf`` when unbounded."""
        return self._cached("caps", lambda: np.array([t.tasks for t in self.tenants], dtype=np.float64))

    def queues(self) -> Queues:
        """The queues of the DAG jobs (a job's ``tenant``, or the job alone when empty), in order of first use.

        A queue the instance also declares under ``tenants`` keeps that tenant's weight and running-task cap
        (``tasks``): the simulator launches no task of a queue running its cap, and the schedule checker
        counts every queue's running tasks at every instant against it. Any other queue has weight 1 and no cap.
        """
        numbered = getattr(self.jobs, "tenant_codes", None)  # a trace's columns (models.traces.TraceJobs)
        found = numbered() if callable(numbered) else None
        if found is not None:
            order, of_job = tuple(found[0]), found[1]
        else:
            names = [job.tenant or job.name for job in self.jobs]
            order = tuple(dict.fromkeys(names))
            index = {name: q for q, name in enumerate(order)}
            of_job = np.array([index[n] for n in names], dtype=np.int64)
        declared = {tenant.name: tenant for tenant in self.tenants}
        weight = np.array([declared[n].weight if n in declared else 1.0 for n in order], dtype=np.float64)
        cap = np.array([declared[n].tasks if n in declared else math.inf for n in order], dtype=np.float64)
        return Queues(order, of_job, weight, cap)

    @property
    def dominant_demand(self) -> FloatArray:
        """Global dominant share of one task of each tenant: max over resources of demand / cluster total.

        Resources the cluster does not have at all are left out; a tenant needing one can run nothing.
        """

        def build() -> FloatArray:
            total = self.total_capacity
            present = total > 0
            shares = np.zeros_like(self.demand)
            shares[:, present] = self.demand[:, present] / total[present]
            return shares.max(axis=1)

        return self._cached("dominant", build)

    @property
    def runnable(self) -> npt.NDArray[np.bool_]:
        """Tenants whose demand uses only resources the cluster has."""
        return self._cached("runnable", lambda: ~np.any((self.demand > 0) & (self.total_capacity <= 0), axis=1))

    @property
    def usable(self) -> npt.NDArray[np.bool_]:
        """Tenants some server class has every needed resource of (divisible tasks can run there)."""
        return self._cached(
            "usable", lambda: np.any(np.all((self.capacity[None] > 0) | (self.demand[:, None] <= 0), axis=2), axis=1)
        )

    @property
    def placeable(self) -> npt.NDArray[np.bool_]:
        """Tenants one of whose tasks fits whole on some machine (whole-task methods can run them at all)."""
        return self._cached("placeable", lambda: self.runnable & self.fits().any(axis=1))

    def fits(self) -> npt.NDArray[np.bool_]:
        """Whether one task of tenant i fits on one machine of class l, shape (tenants, classes)."""
        return self._cached(
            "fits", lambda: np.all(self.demand[:, None, :] <= self.capacity[None, :, :] * (1 + 1e-12), axis=2)
        )

    def machine_names(self) -> list[str]:
        """Names of individual machines, classes expanded as ``name[k]`` when they hold more than one."""
        names: list[str] = []
        for server in self.servers:
            names.extend([server.name] if server.count == 1 else [f"{server.name}[{k}]" for k in range(server.count)])
        return names

    def machine_class(self) -> IntArray:
        """Class index of every individual machine, in ``machine_names`` order."""
        return self._cached("machine_class", lambda: np.repeat(np.arange(len(self.servers)), self.counts))

    def pooled(self) -> Instance:
        """The same tenants on a single server holding the whole cluster's capacity (the DRF setting)."""
        pool = ServerClass(name="pool", capacity=self.total_capacity.copy(), count=1)
        # The pool has no machines for blocks to live on, nor labels for options to select: data placement
        # and placement options do not carry over.
        jobs = tuple(replace(job, stages=tuple(replace(stage, options=()) for stage in job.stages))
                     if any(stage.options for stage in job.stages) else job for job in self.jobs)  # fmt: skip
        return Instance(self.resources, (pool,), self.tenants, self.hierarchy, jobs, self.time_slot, self.name)

    def without_tenant(self, index: int) -> Instance:
        """The instance with one tenant removed (population monotonicity probes)."""
        if self.hierarchy is not None:
            raise InstanceError("cannot remove a tenant from a hierarchy instance", "tenants")
        tenants = self.tenants[:index] + self.tenants[index + 1 :]
        return Instance(self.resources, self.servers, tenants, None, self.jobs, self.time_slot, self.name, self.data)

    def with_tenants(self, tenants: Sequence[Tenant]) -> Instance:
        """The instance with a new tenant list (misreport probes, what-if studies).

        The hierarchy is kept when the tenant count is unchanged (its leaves map onto tenants by index).
        """
        hierarchy = self.hierarchy if len(tenants) == len(self.tenants) else None
        return Instance(self.resources, self.servers, tuple(tenants), hierarchy, self.jobs, self.time_slot, self.name,
                        self.data)  # fmt: skip

    # Building and writing. These methods import the modules that do the work when called (the readers and
    # builders import this module): the declared exceptions of tests/test_architecture.py's cycle check.

    @classmethod
    def build(
        cls,
        servers: Iterable[Any],
        *,
        tenants: Iterable[Any] = (),
        hierarchy: Any = None,
        jobs: Iterable[Any] = (),
        resources: Sequence[str] | None = None,
        blocks: Mapping[str, Sequence[str]] | None = None,
        locality: Mapping[str, float] | None = None,
        time_slot: float | None = None,
        name: str = "instance",
    ) -> Instance:
        """An instance built in code from its parts, validated as a file is.

        Parameters
        ----------
        servers
            :class:`fairpack.Server` parts (or mappings in the file's form).
        tenants
            :class:`fairpack.Tenant` parts, for flat allocation methods.
        hierarchy
            Instead of tenants: a :class:`fairpack.Node` tree, a networkx tree (edges parent -> child), a
            ``{child: parent}`` mapping (then the leaves need demands: use ``Node.from_parents``) or the
            file's nested form.
        jobs
            :class:`fairpack.Job` parts (``Job.from_networkx`` reads a networkx DAG).
        resources
            Resource names in order; None: every resource the parts mention, in first-mention order.
        blocks, locality, time_slot, name
            Input blocks (block -> replica machines ``server/k``), locality factors ``node``/``rack``/
            ``remote``, the time slot of time-indexed models, and the instance's name.

        Returns
        -------
        Instance
            Equal to what ``load_instance`` reads back from ``instance.to_yaml()``.

        Raises
        ------
        InstanceError
            Naming the part at fault by name (``jobs[q1].stages[map].demand.cpu``) and the reason.
        """
        from fairpack.models.build import build_instance

        return build_instance(servers, tenants=tenants, hierarchy=hierarchy, jobs=jobs, resources=resources,
                              blocks=blocks, locality=locality, time_slot=time_slot, name=name)  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], name: str = "instance") -> Instance:
        """An instance from the file's form as Python data (what ``yaml.safe_load`` gives)."""
        from fairpack.models.io import instance_from_dict

        return instance_from_dict(data, name)

    def to_dict(self) -> dict[str, Any]:
        """The instance in the file's form (``Instance.from_dict`` reads it back equal)."""
        from fairpack.models.io import instance_to_dict

        return instance_to_dict(self)

    def to_yaml(self, path: str | None = None) -> str:
        """The instance as YAML text (written to ``path`` too when given); ``load_instance`` reads it back equal."""
        from fairpack.models.io import instance_to_yaml

        text = instance_to_yaml(self)
        if path is not None:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        return text
