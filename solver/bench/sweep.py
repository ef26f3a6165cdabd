"""Sweep files (TOML or YAML): families x sizes x seeds (or instance files) x methods x backends, validated
and expanded to tasks.

Format (TOML; the YAML form has the same keys)::

    name = "smoke"              # optional, default: the file name without suffix
    seeds = [0, 1]              # default seeds of every grid
    backends = ["highs"]        # default backends of every grid
    time_limit = 20             # seconds handed to solve() (exact methods stop and report their incumbent)
    task_timeout = 120          # seconds before the task's process is killed (default 2 * time_limit + 60)
    memory_mb = 4096            # resident memory above which the task's process is killed

    [[grid]]                    # one grid = one cartesian product; a sweep is a list of them
    name = "drfh-google-like"   # unique; part of every row key
    family = "google-like"      # models.generators.families.FAMILIES
    sizes = {tenants = [10, 20], machines = 100}   # a table of lists (their product) or a list of tables
    seeds = [0, 1, 2]           # optional, overrides the default
    methods = ["drfh", "best-fit", {method = "slots", label = "slots-5", slots = 5}]
                                # "online:<policy>" simulates an online policy on the instance's arrivals
    backends = ["highs", "ortools"]  # for methods that use a backend; the others run once, backend "none"
    reference = "drfh"          # the exact method gaps are measured against (default: the first exact one)
    options = {objective = "avg-jct"}   # SolveOptions fields shared by every method of the grid
    time_limit = 60             # task_timeout, memory_mb too: per-grid overrides (a grid that sets
                                # time_limit alone gets the kill timeout 2 * time_limit + 60)

A grid runs on a generator family's instances (``family`` and ``sizes``) or on instance files
(``instances``; not both)::

    [[grid]]
    name = "mine"
    instances = ["cases/", "more/*.yaml", "j301_1.sm"]   # files, folders and globs
    methods = ["drfh", "best-fit", "hdrf", "spacetime-cp", "carbyne"]
    reference = ["drfh", "spacetime-cp"]   # optional: at most one exact method per kind
    seeds = [0, 1]              # optional: passed to the methods as their ``seed`` option

Entries are relative to the sweep file's folder (or absolute): a ``.yaml``/``.yml``/``.json`` instance
file or a PSPLIB ``.sm`` file; a folder means every such file directly in it, sorted by name; a glob
(``*``, ``?``, ``[...]``, ``**``) means the instance files it matches, sorted, and those of the folders it
matches (matched files of other suffixes are passed over). A file named by two entries runs once. Every
file is loaded when the sweep is read: an entry that matches nothing or a file that
does not load stops the sweep before any task runs, naming the entry (``grid[0].instances[1]``) and the
loader's own error (the file and its field). Each method runs on the instances of its kind (``flat``,
``hierarchy`` or ``jobs``, from what the instance holds: jobs, else a hierarchy, else tenants; an
``online:`` policy runs on all), so one grid may mix kinds; every instance needs a method that runs on it,
and every method an instance. ``reference`` is a label or a list of labels, at most one exact method per
kind; a kind without one gets its first exact method. Without ``seeds`` every (instance, method, backend)
runs once with the methods' own default seed (the sweep-wide ``seeds`` are generator seeds and do not
apply); with ``seeds``, once per seed, handing the seed to the methods that take one (``options.seed``
and a method's ``seed`` are refused beside them). A file's rows have family ``file``, ``instance`` = its
path relative to the sweep file's folder (``/`` separators), ``params`` = ``{"file": <that path>}`` and the
kind's size (``models.generators.families.KIND_SIZES``); PSPLIB files named as in the library get their
``best_known`` makespan from the data folder when there is one. A row is known by its file's path, not
its content: delete the rows of an edited file to run them again. Tasks load the files by absolute path
(Dask workers need them at the same place). (From Python, ``fairpack.sweep`` also takes ``Instance``
objects as entries; their rows are named by the instance's name.)

Method tables take ``method``, an optional ``label`` (default: the method name; labels must be unique
in a grid) and any ``SolveOptions`` field except ``backend`` and ``time_limit`` (``algorithm``,
``strategy``, ``slots``, ``gap``, ``placement``, ``objective``, ``extra``); a method's option replaces the
grid's option of the same name (``extra`` as a whole). Unknown keys are errors, so typos do not pass
silently; every error names the file and the field (``grid[1].methods[2].slots``).

Every task is one (grid, size, seed, method label, backend), or (grid, file, [seed,] method label, backend);
its ``key`` is the row key of the result table (``grid/family/size parameters/seed=N/label/backend``, or
``grid/file/<file's relative path>[/seed=N]/label/backend``), so a re-run skips what is there.
``reference`` is the key of the reference method's row on the same instance (with the grid's first
backend when the reference method uses one).
"""

from __future__ import annotations

import importlib.resources
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from fairpack.models.generators.families import FAMILIES, KINDS, ParamError
from fairpack.models.result import SCHEDULE_OBJECTIVES
from fairpack.solver.api import SolveOptions
from fairpack.solver.backends import BACKEND_NAMES, DEFAULT_BACKEND
from fairpack.solver.bench.files import FILE_FAMILY, EntryError, FileInstance, read_entry
from fairpack.solver.registry import COMMON_OPTIONS, WORKLOADS, Method, methods

# A sweep's method name is a key of the registry's combined listing (``methods(include_policies=True)``): a
# method's name, or ``online:<policy>`` for an online policy, simulated on the instance's arrivals
# (``fairpack simulate``); the same grid's exact method is its clairvoyant yardstick.


def method_record(name: str) -> Method:
    """The registry record of a sweep's method name (``online:<policy>`` for a simulated policy)."""
    return methods(include_policies=True)[name]


def runs_on(name: str, kind: str) -> bool:
    """Whether a sweep's method runs on instances of ``kind``: a method on those of its family, a policy on the
    workloads its record declares (a jobs instance's jobs, a flat or hierarchy one's tenants' backlogs)."""
    record = method_record(name)
    if record.is_policy:
        return ("jobs" if kind == "jobs" else "backlogs") in record.workloads
    return record.family == kind


def known_method(name: str) -> bool:
    return name in methods(include_policies=True)


def _method_choices() -> str:
    return ", ".join(methods(include_policies=True))

#: SolveOptions fields a sweep may set per grid or per method (backend and time limit come from the grid).
OPTION_KEYS = tuple(f.name for f in fields(SolveOptions) if f.name not in ("backend", "time_limit"))
_LIMIT_KEYS = ("time_limit", "task_timeout", "memory_mb")
_TOP_KEYS = ("name", "seeds", "backends", "grid", *_LIMIT_KEYS)
_GRID_KEYS = ("name", "family", "sizes", "instances", "seeds", "methods", "backends", "reference", "options",
              *_LIMIT_KEYS)
DEFAULT_TIME_LIMIT = 60.0
DEFAULT_MEMORY_MB = 4096.0
#: Backend label of tasks whose method uses no LP/MILP backend.
NO_BACKEND = "none"

Pairs = tuple[tuple[str, Any], ...]
#: A grid's instance files, each with the position of the ``instances`` entry that named it first.
Entries = list[tuple[int, FileInstance]]


class SweepError(ValueError):
    """A bad sweep file: the file, the field at fault and the reason."""

    def __init__(self, reason: str, field: str = "", source: str = "") -> None:
        self.reason, self.field, self.source = reason, field, source
        where = ": ".join(part for part in (source, field) if part)
        super().__init__(f"{where}: {reason}" if where else reason)


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


@dataclass(frozen=True)
class Limits:
    """Per-task limits.

    Attributes
    ----------
    time_limit : float or None
        Seconds handed to ``solve()`` (None: none).
    task_timeout : float
        Seconds after which the task's process is killed and the row says ``task_timeout``; covers
        generation, the solve and the metrics, so it should exceed ``time_limit``.
    memory_mb : float
        Resident memory (MiB) above which the task's process is killed (row status ``task_memory``).
    """

    time_limit: float | None = DEFAULT_TIME_LIMIT
    task_timeout: float = 2 * DEFAULT_TIME_LIMIT + 60
    memory_mb: float = DEFAULT_MEMORY_MB

    def __post_init__(self) -> None:
        if self.time_limit is not None and not _positive(self.time_limit):
            raise ValueError(f"time_limit must be a positive number of seconds, got {self.time_limit!r}")
        if not _positive(self.task_timeout):
            raise ValueError(f"task_timeout must be a positive number of seconds, got {self.task_timeout!r}")
        if not _positive(self.memory_mb):
            raise ValueError(f"memory_mb must be a positive number, got {self.memory_mb!r}")

    @staticmethod
    def of(time_limit: float | None, task_timeout: float | None, memory_mb: float | None) -> Limits:
        """Limits with defaults: the kill timeout leaves room for generation and metrics around the solve."""
        if task_timeout is None:
            task_timeout = 2 * time_limit + 60 if time_limit is not None else 3600.0
        return Limits(time_limit, float(task_timeout), float(memory_mb if memory_mb is not None else DEFAULT_MEMORY_MB))


@dataclass(frozen=True)
class MethodSpec:
    """A method of a grid: its label (row name), the ``solver.api`` method and its own options."""

    label: str
    method: str
    options: Pairs = ()

    def __post_init__(self) -> None:
        if not known_method(self.method):
            raise ValueError(f"unknown method {self.method!r}; choose from {_method_choices()}")
        if not isinstance(self.label, str) or not self.label or "/" in self.label:
            raise ValueError(f"label must be a non-empty string without '/', got {self.label!r}")
        _check_options(dict(self.options))


def _check_options(options: Mapping[str, Any]) -> None:
    for key, value in options.items():
        if key not in OPTION_KEYS:
            raise ValueError(f"unknown option {key!r}; options are {', '.join(OPTION_KEYS)}")
        if key == "extra" and not isinstance(value, Mapping):
            raise ValueError(f"extra must be a table, got {value!r}")
        if key == "objective" and value not in SCHEDULE_OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(SCHEDULE_OBJECTIVES)}, got {value!r}")


def instance_key(grid: str, family: str, instance: str, seed: int | None) -> str:
    """Identifies an instance within a sweep: grid/family/size parameters (or file)/seed (none: no seed)."""
    return "/".join((grid, family, instance, *(() if seed is None else (f"seed={seed}",))))


def row_key(grid: str, family: str, params: Pairs, seed: int | None, label: str, backend: str) -> str:
    """The unique key of a result row: grid/family/params/seed/method label/backend."""
    return "/".join((instance_key(grid, family, params_text(params), seed), label, backend))


def params_text(params: Pairs) -> str:
    """Size parameters as ``name=value,...`` in the family's order (``-`` when there are none)."""
    return ",".join(f"{name}={value}" for name, value in params) or "-"


@dataclass(frozen=True)
class Task:
    """One (grid, size, seed, method label, backend): the unit of work, and one row of the table.

    A task on an instance file has family ``file``, ``params`` ``(("file", id),)``, ``file`` its instance
    and ``seed`` the grid's seed (``None`` when the grid gives none).
    """

    sweep: str
    grid: str
    family: str
    params: Pairs
    seed: int | None
    label: str
    method: str
    backend: str
    options: Pairs
    limits: Limits
    reference: str | None  # row key of the reference method on the same instance
    data_dir: str | None = None
    file: FileInstance | None = None  # the instance of a grid of instance files

    def __post_init__(self) -> None:
        if not known_method(self.method):
            raise ValueError(f"unknown method {self.method!r}")
        if self.backend != NO_BACKEND and self.backend not in BACKEND_NAMES:
            raise ValueError(f"unknown backend {self.backend!r}")
        if (self.file is None) != (self.family != FILE_FAMILY):
            raise ValueError(f"a task of family {FILE_FAMILY!r} needs its instance, and only such a task has one")

    @property
    def kind(self) -> str:
        """The instance's kind: its family's, or the instance file's."""
        return self.file.kind if self.file is not None else FAMILIES[self.family].kind

    @property
    def key(self) -> str:
        return f"{self.instance_key}/{self.label}/{self.backend}"

    @property
    def instance_key(self) -> str:
        """Identifies the instance within the sweep: every method of a grid shares it."""
        instance = self.file.id if self.file is not None else params_text(self.params)
        return instance_key(self.grid, self.family, instance, self.seed)

    def solve_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``solver.api.solve``: the grid's options this method honours (copied).

        A grid's options are shared by its methods, so each method gets the ones it uses; the grid itself
        is checked at load time to use every option somewhere.
        """
        method = method_record(self.method)
        accepted = method.options | COMMON_OPTIONS
        options: dict[str, Any] = {}
        for key, value in self.options:
            if key == "extra":
                kept = {k: v for k, v in dict(value).items() if k in method.extra_keys}
                if kept:
                    options["extra"] = kept
            elif key in accepted or key == "algorithm":
                options[key] = dict(value) if isinstance(value, Mapping) else value
        backend = None if self.backend == NO_BACKEND else self.backend
        return {"backend": backend, "time_limit": self.limits.time_limit, **options}


@dataclass(frozen=True)
class Grid:
    """One cartesian product: a family's sizes x seeds (or instance files x seeds) x methods x backends.

    A grid of instance files has family ``file``, ``sizes`` ``((),)``, its ``instances``, and ``seeds``
    ``(None,)`` when it gives none; each method runs on the instances of its kind. ``references`` holds the
    label of the reference method of each kind the grid has one for (at most one per kind).
    """

    name: str
    family: str
    sizes: tuple[Pairs, ...]
    seeds: tuple[int | None, ...]
    methods: tuple[MethodSpec, ...]
    backends: tuple[str, ...]
    references: tuple[str, ...]
    options: Pairs
    limits: Limits
    instances: tuple[FileInstance, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or "/" in self.name:
            raise ValueError(f"name must be a non-empty string without '/', got {self.name!r}")
        self._check_source()
        if not self.sizes or not self.seeds or not self.methods or not self.backends:
            raise ValueError("sizes, seeds, methods and backends must not be empty")
        self._check_seeds()
        for backend in self.backends:
            if backend not in BACKEND_NAMES:
                raise ValueError(f"unknown backend {backend!r}; choose from {', '.join(BACKEND_NAMES)}")
        labels = [m.label for m in self.methods]
        if len(set(labels)) != len(labels):
            raise ValueError(f"method labels repeat: {labels} (give variants a 'label')")
        kinds = self.kinds
        for method in self.methods:
            # An online policy runs on the workloads its record declares (the jobs of a jobs instance, or the
            # tenants' backlogs of a flat or hierarchy one); a method on the instances of its family.
            if not any(runs_on(method.method, kind) for kind in kinds):
                record = method_record(method.method)
                made = (f"none of the grid's instances is one (they are {', '.join(kinds)})" if self.instances
                        else f"family {self.family!r} makes {kinds[0]} ones")  # fmt: skip
                if record.is_policy:
                    runs = " and ".join(WORKLOADS[w] for w in record.workloads)
                    raise ValueError(f"policy {method.method!r} runs on {runs}; {made}")
                raise ValueError(f"method {method.method!r} solves {record.family} instances; {made}")
        self._check_references()
        _check_options(dict(self.options))
        self._check_options_used()

    def _check_source(self) -> None:
        if not self.instances:
            if self.family not in FAMILIES:
                raise ValueError(f"unknown family {self.family!r}; choose from {', '.join(FAMILIES)}")
            return
        if self.family != FILE_FAMILY or self.sizes != ((),):
            raise ValueError(f"a grid of instance files has family {FILE_FAMILY!r} and no sizes")
        ids = [i.id for i in self.instances]
        if len(set(ids)) != len(ids):
            raise ValueError(f"instances repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
        for instance in self.instances:
            if instance.kind not in KINDS:
                raise ValueError(f"instance {instance.id!r}: kind must be one of {', '.join(KINDS)}")

    def _check_seeds(self) -> None:
        if self.instances and self.seeds == (None,):
            return
        if any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in self.seeds):
            raise ValueError(f"seeds must be non-negative integers, got {list(self.seeds)}")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds repeat: {list(self.seeds)}")
        if not self.instances:
            return
        # A grid of files has no generator: its seeds are the methods' seeds.
        if "seed" in dict(self.options) or any("seed" in dict(m.options) for m in self.methods):
            raise ValueError("the seeds of a grid of instance files are the methods' seed option: "
                             "give seeds or a seed option, not both")  # fmt: skip
        if not any("seed" in method_record(m.method).options for m in self.methods):
            raise ValueError("no method of the grid takes a seed, so seeds would only repeat its rows")

    def _check_references(self) -> None:
        chosen: dict[str, str] = {}
        for label in self.references:
            spec = self.method(label)
            if spec is None or not method_record(spec.method).exact:
                exact = [m.label for m in self.methods if method_record(m.method).exact]
                raise ValueError(f"reference {label!r} must be an exact method of the grid: {exact or 'none'}")
            kind = method_record(spec.method).family
            if kind in chosen:
                raise ValueError(f"references {chosen[kind]!r} and {label!r} both solve {kind} instances; "
                                 "give at most one per kind")  # fmt: skip
            chosen[kind] = label

    def _check_options_used(self) -> None:
        """Every grid-wide option must be honoured by at least one of the grid's methods."""
        specs = [method_record(m.method) for m in self.methods]
        for key, value in self.options:
            if key == "extra":
                unused = sorted(set(dict(value)) - set().union(*(s.extra_keys for s in specs)))
                if unused:
                    raise ValueError(f"no method of the grid uses extra {unused}")
            elif key != "algorithm" and not any(key in s.options | COMMON_OPTIONS for s in specs):
                raise ValueError(f"no method of the grid uses option {key!r}")

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of the grid's instances: its family's, or those of its instance files in order."""
        if self.instances:
            return tuple(dict.fromkeys(i.kind for i in self.instances))
        return (FAMILIES[self.family].kind,)

    @property
    def reference(self) -> str | None:
        """The reference label (the first one when a grid of instance files has one per kind)."""
        return self.references[0] if self.references else None

    def reference_for(self, kind: str) -> MethodSpec | None:
        """The reference method of the grid's instances of ``kind``, if it has one."""
        specs = (self.method(label) for label in self.references)
        return next((s for s in specs if s is not None and method_record(s.method).family == kind), None)

    def method(self, label: str) -> MethodSpec | None:
        return next((m for m in self.methods if m.label == label), None)

    def backends_of(self, spec: MethodSpec) -> tuple[str, ...]:
        """The grid's backends the method runs on; ``none`` for a method with one fixed engine (or none)."""
        method = method_record(spec.method)
        if len(method.backends) <= 1:
            return (NO_BACKEND,)
        return tuple(b for b in self.backends if b in method.backends) or (method.default_backend,)

    def _instances(self) -> list[tuple[Pairs, FileInstance | None, int | None]]:
        """(size parameters, instance file, seed) of every instance of the grid, in task order."""
        if self.instances:
            return [((("file", f.id),), f, seed) for f, seed in itertools.product(self.instances, self.seeds)]
        return [(params, None, seed) for params, seed in itertools.product(self.sizes, self.seeds)]

    def tasks(self, sweep: str, data_dir: str | None = None) -> list[Task]:
        """Every task of the grid: sizes (or instance files), then seeds, then methods, then backends."""
        tasks = []
        for params, file, seed in self._instances():
            kind = file.kind if file is not None else FAMILIES[self.family].kind
            where = instance_key(self.name, self.family, file.id if file is not None else params_text(params), seed)
            spec = self.reference_for(kind)
            reference = f"{where}/{spec.label}/{self.backends_of(spec)[0]}" if spec is not None else None
            seeded = {"seed": seed} if file is not None and seed is not None else {}
            for spec in self.methods:
                if not runs_on(spec.method, kind):
                    continue
                options = tuple({**dict(self.options), **dict(spec.options), **seeded}.items())
                for backend in self.backends_of(spec):
                    tasks.append(Task(sweep, self.name, self.family, params, seed, spec.label, spec.method, backend,
                                      options, self.limits, reference, data_dir, file))  # fmt: skip
        return tasks


@dataclass(frozen=True)
class Sweep:
    """A validated sweep file."""

    name: str
    source: str
    grids: tuple[Grid, ...]

    def __post_init__(self) -> None:
        names = [g.name for g in self.grids]
        if not names:
            raise ValueError("a sweep needs at least one [[grid]]")
        if len(set(names)) != len(names):
            raise ValueError(f"grid names repeat: {names}")

    def tasks(self, data_dir: str | Path | None = None) -> tuple[list[Task], list[str]]:
        """All tasks, and one message per grid skipped because its family's data folder is missing."""
        # Absolute, because task processes (and Dask workers) need not share this process's directory.
        folder = Path(data_dir).resolve() if data_dir is not None else None
        tasks, skipped = [], []
        for grid in self.grids:
            try:
                if not grid.instances:
                    FAMILIES[grid.family].data_folder(folder)
            except ValueError as error:
                skipped.append(f"grid {grid.name!r} skipped: {error}")
                continue
            tasks += grid.tasks(self.name, str(folder) if folder is not None else None)
        return tasks, skipped


# --- loading -------------------------------------------------------------------------------------------


class _Reader:
    """Checks one sweep file, naming the file and the field in every error; instance paths are relative to
    ``base``."""

    def __init__(self, source: str, base: Path) -> None:
        self.source = source
        self.base = base

    def error(self, reason: str, field: str) -> SweepError:
        return SweepError(reason, field, self.source)

    def table(self, value: Any, field: str, allowed: Sequence[str]) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(f"expected a table, got {type(value).__name__}", field)
        for key in value:
            if key not in allowed:
                raise self.error(f"unknown key {key!r} (allowed: {', '.join(allowed)})", _join(field, str(key)))
        return dict(value)

    def strings(self, value: Any, field: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(f"expected a list of strings, got {value!r}", field)
        return tuple(value)

    def seeds(self, value: Any, field: str) -> tuple[int, ...]:
        if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise self.error(f"expected a list of integers, got {value!r}", field)
        return tuple(value)

    def number(self, value: Any, field: str) -> float | None:
        if value is None:
            return None
        if not _positive(value):
            raise self.error(f"expected a positive number, got {value!r}", field)
        return float(value)

    def limits(self, data: Mapping[str, Any], field: str, inherited: Limits | None = None) -> Limits:
        given = {key: self.number(data[key], _join(field, key)) for key in _LIMIT_KEYS if key in data}
        if inherited is None:
            time_limit = given.get("time_limit", DEFAULT_TIME_LIMIT)
            timeout, memory = given.get("task_timeout"), given.get("memory_mb")
        else:
            time_limit = given.get("time_limit", inherited.time_limit)
            # A grid with its own solver limit but no kill timeout gets one derived from its limit.
            timeout = given.get("task_timeout", None if "time_limit" in given else inherited.task_timeout)
            memory = given.get("memory_mb", inherited.memory_mb)
        try:
            return Limits.of(time_limit, timeout, memory)
        except ValueError as error:
            raise self.error(str(error), field or "time_limit") from None

    def sizes(self, value: Any, field: str, family: str) -> tuple[Pairs, ...]:
        if value is None:
            given: list[dict[str, Any]] = [{}]
        elif isinstance(value, Mapping):
            axes = {k: (v if isinstance(v, list) else [v]) for k, v in value.items()}
            if any(not v for v in axes.values()):
                raise self.error("every size parameter needs at least one value", field)
            given = [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*axes.values())]
        elif isinstance(value, list) and all(isinstance(v, Mapping) for v in value) and value:
            given = [dict(v) for v in value]
        else:
            raise self.error("expected a table of parameter values or a non-empty list of tables", field)
        sizes = []
        for position, entry in enumerate(given):
            where = field if isinstance(value, Mapping) else f"{field}[{position}]"
            try:
                sizes.append(tuple(FAMILIES[family].resolve(entry).items()))
            except ParamError as error:
                raise self.error(error.reason, _join(where, error.name)) from None
        if len(set(map(params_text, sizes))) != len(sizes):
            raise self.error("sizes repeat", field)
        return tuple(sizes)

    def methods(self, value: Any, field: str) -> tuple[MethodSpec, ...]:
        if not isinstance(value, list) or not value:
            raise self.error("expected a non-empty list of method names or tables", field)
        specs = []
        for position, entry in enumerate(value):
            where = f"{field}[{position}]"
            if isinstance(entry, str):
                entry = {"method": entry}
            data = self.table(entry, where, ("method", "label", *OPTION_KEYS))
            if not isinstance(data.get("method"), str):
                raise self.error("a method table needs 'method' (a method name)", _join(where, "method"))
            method = data.pop("method")
            label = data.pop("label", method)
            try:
                specs.append(MethodSpec(label, method, tuple(data.items())))
            except ValueError as error:
                raise self.error(str(error), where) from None
        return tuple(specs)

    def instances(self, value: Any, field: str) -> Entries:
        """The instances of a grid's ``instances`` entries with the position of the entry that first names
        them, each file once."""
        if not isinstance(value, list) or not value:
            raise self.error("expected a non-empty list of instance files, folders or globs", field)
        found: dict[str, tuple[int, FileInstance]] = {}
        for position, entry in enumerate(value):
            try:
                for instance in read_entry(entry, self.base):
                    previous = found.get(instance.id)
                    if previous is not None and None in (instance.path, previous[1].path):  # a file twice runs once
                        raise EntryError(f"instance name {instance.id!r} repeats (it names the instance's rows)")
                    found.setdefault(instance.id, (position, instance))
            except EntryError as error:
                raise self.error(str(error), f"{field}[{position}]") from None
        return list(found.values())

    def references(self, value: Any, field: str, methods: Sequence[MethodSpec], kinds: Sequence[str]
                   ) -> tuple[str, ...]:  # fmt: skip
        """The given reference labels, then the first exact method of every kind the grid lacks one for."""
        if value is None:
            given: list[str] = []
        elif isinstance(value, str):
            given = [value]
        elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            given = list(value)
        else:
            raise self.error(f"expected a method label or a list of them, got {value!r}", field)
        covered = {method_record(m.method).family for m in methods if m.label in given}
        for method in methods:
            kind = method_record(method.method).family
            if method_record(method.method).exact and kind in kinds and kind not in covered:
                given.append(method.label)
                covered.add(kind)
        return tuple(given)

    def source_of(self, data: Mapping[str, Any], field: str) -> tuple[str, tuple[Pairs, ...], Entries]:
        """(family, sizes, instances with their entries' positions) of a grid: a family's sizes, or instance
        files."""
        if "instances" in data:
            for key in ("family", "sizes"):
                if key in data:
                    raise self.error("a grid runs on a 'family' (with 'sizes') or on 'instances', not both",
                                     _join(field, key))  # fmt: skip
            return FILE_FAMILY, ((),), self.instances(data["instances"], _join(field, "instances"))
        family = data.get("family")
        if not isinstance(family, str):
            raise self.error("'family' (a string) or 'instances' is required", _join(field, "family"))
        if family not in FAMILIES:
            raise self.error(f"unknown family {family!r}; choose from {', '.join(FAMILIES)}", _join(field, "family"))
        return family, self.sizes(data.get("sizes"), _join(field, "sizes"), family), []

    def check_instances(self, entries: Entries, field: str, methods: Sequence[MethodSpec]) -> None:
        """Every instance needs a method of the grid that runs on it (the error names its entry)."""
        for position, instance in entries:
            if not any(runs_on(m.method, instance.kind) for m in methods):
                labels = ", ".join(m.label for m in methods)
                raise self.error(f"{instance.id} is a {instance.kind} instance and no method of the grid solves one "
                                 f"(methods: {labels})", f"{field}[{position}]")  # fmt: skip

    def grid(self, value: Any, field: str, seeds: tuple[int, ...], backends: tuple[str, ...], limits: Limits) -> Grid:
        data = self.table(value, field, _GRID_KEYS)
        if not isinstance(data.get("name"), str):
            raise self.error("'name' is required (a string)", _join(field, "name"))
        family, sizes, entries = self.source_of(data, field)
        if "methods" not in data:
            raise self.error("'methods' is required", _join(field, "methods"))
        methods = self.methods(data["methods"], _join(field, "methods"))
        self.check_instances(entries, _join(field, "instances"), methods)
        instances = tuple(instance for _, instance in entries)
        # The sweep's seeds are generator seeds: a grid of files has seeds only when it gives its own.
        default_seeds: tuple[int | None, ...] = (None,) if instances else seeds
        kinds = tuple(dict.fromkeys(i.kind for i in instances)) or (FAMILIES[family].kind,)
        options = self.table(data.get("options", {}), _join(field, "options"), OPTION_KEYS)
        try:
            _check_options(options)
        except ValueError as error:
            raise self.error(str(error), _join(field, "options")) from None
        try:
            return Grid(
                name=data["name"],
                family=family,
                sizes=sizes,
                seeds=self.seeds(data["seeds"], _join(field, "seeds")) if "seeds" in data else default_seeds,
                methods=methods,
                backends=self.strings(data["backends"], _join(field, "backends")) if "backends" in data else backends,
                references=self.references(data.get("reference"), _join(field, "reference"), methods, kinds),
                options=tuple(options.items()),
                limits=self.limits(data, field, limits),
                instances=instances,
            )
        except SweepError:
            raise
        except ValueError as error:
            raise self.error(str(error), field) from None


def _join(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def parse_sweep(data: Any, source: str = "sweep", name: str | None = None, base: str | Path | None = None) -> Sweep:
    """Validate already-parsed sweep data (a mapping as read from TOML or YAML).

    Parameters
    ----------
    data
        The top-level table.
    source
        Named in errors (the file path).
    name
        Default sweep name when the data has none.
    base
        The folder the grids' ``instances`` paths are relative to, and their row names too (default: the
        working folder; :func:`load_sweep` passes the sweep file's folder).

    Raises
    ------
    SweepError
        Naming ``source``, the field at fault and the reason.
    """
    reader = _Reader(source, Path(base if base is not None else ".").absolute())
    top = reader.table(data, "", _TOP_KEYS)
    sweep_name = top.get("name", name or "sweep")
    if not isinstance(sweep_name, str) or not sweep_name:
        raise reader.error(f"expected a non-empty string, got {sweep_name!r}", "name")
    seeds = reader.seeds(top["seeds"], "seeds") if "seeds" in top else (0,)
    backends = reader.strings(top["backends"], "backends") if "backends" in top else (DEFAULT_BACKEND,)
    limits = reader.limits(top, "")
    grids = top.get("grid")
    if not isinstance(grids, list) or not grids:
        raise reader.error("a sweep needs at least one [[grid]] table", "grid")
    parsed = tuple(reader.grid(g, f"grid[{k}]", seeds, backends, limits) for k, g in enumerate(grids))
    try:
        return Sweep(sweep_name, source, parsed)
    except ValueError as error:
        raise reader.error(str(error), "grid") from None


#: The sweep files that come with fairpack (package data: ``fairpack/sweeps``, the repository's
#: ``benchmarks/sweeps``), found by name when no such file exists (``fairpack bench run smoke``).
BUNDLED_SWEEPS = Path(str(importlib.resources.files("fairpack") / "sweeps"))


def bundled_sweep(path: str | Path) -> Path:
    """``path`` itself when it exists, else the bundled sweep of that name (``smoke`` or ``smoke.toml``)."""
    path = Path(path)
    if path.exists() or path.parent != Path():
        return path
    for candidate in (BUNDLED_SWEEPS / path.name, BUNDLED_SWEEPS / f"{path.name}.toml"):
        if candidate.is_file():
            return candidate
    return path


def load_sweep(path: str | Path) -> Sweep:
    """Read and validate a sweep file (``.toml``, or ``.yaml``/``.yml``); its grids' instance files are
    relative to its folder, and loaded once here to check them. A bare name that is no file here names a
    bundled sweep (:func:`bundled_sweep`).

    Raises
    ------
    SweepError
        The file cannot be read or parsed, or a field is invalid (the message names file and field).
    """
    path = bundled_sweep(path)
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        bundled = ", ".join(sorted(p.stem for p in BUNDLED_SWEEPS.glob("*.toml")))
        raise SweepError(f"cannot read the sweep file: {error} (bundled sweeps: {bundled})", "", source) from None
    suffix = path.suffix.lower()
    if suffix == ".toml":
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10: the same parser as the tomli package
            import tomli as tomllib  # type: ignore[no-redef]

        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise SweepError(f"invalid TOML: {error}", "", source) from None
    elif suffix in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise SweepError(f"invalid YAML: {error}", "", source) from None
    else:
        raise SweepError(f"a sweep file ends in .toml, .yaml or .yml, not {suffix or 'nothing'!r}", "", source)
    return parse_sweep(data, source, path.stem, path.parent)


def options_json(options: Pairs) -> str:
    """Method options as canonical JSON, for the table."""
    return json.dumps(dict(options), sort_keys=True, default=str)
