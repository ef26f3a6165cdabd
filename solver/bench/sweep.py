"""Sweep files (TOML or YAML): families x sizes x seeds x methods x backends, validated and expanded to tasks.

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

Method tables take ``method``, an optional ``label`` (default: the method name; labels must be unique
in a grid) and any ``SolveOptions`` field except ``backend`` and ``time_limit`` (``algorithm``,
``strategy``, ``slots``, ``gap``, ``placement``, ``objective``, ``extra``); a method's option replaces the
grid's option of the same name (``extra`` as a whole). Unknown keys are errors, so typos do not pass
silently; every error names the file and the field (``grid[1].methods[2].slots``).

Every task is one (grid, size, seed, method label, backend); its ``key`` is the row key of the result
table, so a re-run skips what is there. ``reference`` is the key of the reference method's row on the
same instance (with the grid's first backend when the reference method uses one).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from fairpack.models.generators.families import FAMILIES, ParamError
from fairpack.models.result import SCHEDULE_OBJECTIVES
from fairpack.solver.api import SolveOptions
from fairpack.solver.backends import BACKEND_NAMES, DEFAULT_BACKEND
from fairpack.solver.registry import COMMON_OPTIONS, WORKLOADS, Method, methods

# A sweep's method name is a key of the registry's combined listing (``methods(include_policies=True)``): a
# method's name, or ``online:<policy>`` for an online policy, simulated on the instance's arrivals
# (``fairpack simulate``); the same grid's exact method is its clairvoyant yardstick.


def method_record(name: str) -> Method:
    """The registry record of a sweep's method name (``online:<policy>`` for a simulated policy)."""
    return methods(include_policies=True)[name]


def known_method(name: str) -> bool:
    return name in methods(include_policies=True)


def _method_choices() -> str:
    return ", ".join(methods(include_policies=True))

#: SolveOptions fields a sweep may set per grid or per method (backend and time limit come from the grid).
OPTION_KEYS = tuple(f.name for f in fields(SolveOptions) if f.name not in ("backend", "time_limit"))
_LIMIT_KEYS = ("time_limit", "task_timeout", "memory_mb")
_TOP_KEYS = ("name", "seeds", "backends", "grid", *_LIMIT_KEYS)
_GRID_KEYS = ("name", "family", "sizes", "seeds", "methods", "backends", "reference", "options", *_LIMIT_KEYS)
DEFAULT_TIME_LIMIT = 60.0
DEFAULT_MEMORY_MB = 4096.0
#: Backend label of tasks whose method uses no LP/MILP backend.
NO_BACKEND = "none"

Pairs = tuple[tuple[str, Any], ...]


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


def row_key(grid: str, family: str, params: Pairs, seed: int, label: str, backend: str) -> str:
    """The unique key of a result row: grid/family/params/seed/method label/backend."""
    return "/".join((grid, family, params_text(params), f"seed={seed}", label, backend))


def params_text(params: Pairs) -> str:
    """Size parameters as ``name=value,...`` in the family's order (``-`` when there are none)."""
    return ",".join(f"{name}={value}" for name, value in params) or "-"


@dataclass(frozen=True)
class Task:
    """One (grid, size, seed, method label, backend): the unit of work, and one row of the table."""

    sweep: str
    grid: str
    family: str
    params: Pairs
    seed: int
    label: str
    method: str
    backend: str
    options: Pairs
    limits: Limits
    reference: str | None  # row key of the reference method on the same instance
    data_dir: str | None = None

    def __post_init__(self) -> None:
        if not known_method(self.method):
            raise ValueError(f"unknown method {self.method!r}")
        if self.backend != NO_BACKEND and self.backend not in BACKEND_NAMES:
            raise ValueError(f"unknown backend {self.backend!r}")

    @property
    def key(self) -> str:
        return row_key(self.grid, self.family, self.params, self.seed, self.label, self.backend)

    @property
    def instance_key(self) -> str:
        """Identifies the instance within the sweep: every method of a grid shares it."""
        return "/".join((self.grid, self.family, params_text(self.params), f"seed={self.seed}"))

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
    """One cartesian product of sizes x seeds x methods x backends over one family."""

    name: str
    family: str
    sizes: tuple[Pairs, ...]
    seeds: tuple[int, ...]
    methods: tuple[MethodSpec, ...]
    backends: tuple[str, ...]
    reference: str | None
    options: Pairs
    limits: Limits

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or "/" in self.name:
            raise ValueError(f"name must be a non-empty string without '/', got {self.name!r}")
        if self.family not in FAMILIES:
            raise ValueError(f"unknown family {self.family!r}; choose from {', '.join(FAMILIES)}")
        if not self.sizes or not self.seeds or not self.methods or not self.backends:
            raise ValueError("sizes, seeds, methods and backends must not be empty")
        if any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in self.seeds):
            raise ValueError(f"seeds must be non-negative integers, got {list(self.seeds)}")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds repeat: {list(self.seeds)}")
        for backend in self.backends:
            if backend not in BACKEND_NAMES:
                raise ValueError(f"unknown backend {backend!r}; choose from {', '.join(BACKEND_NAMES)}")
        labels = [m.label for m in self.methods]
        if len(set(labels)) != len(labels):
            raise ValueError(f"method labels repeat: {labels} (give variants a 'label')")
        kind = FAMILIES[self.family].kind
        for method in self.methods:
            record = method_record(method.method)
            # An online policy runs on the workloads its record declares: the jobs of a jobs family, or the
            # tenants' backlogs of a flat or hierarchy one.
            workload = "jobs" if kind == "jobs" else "backlogs"
            if record.is_policy and workload not in record.workloads:
                raise ValueError(f"policy {method.method!r} does not run on {WORKLOADS[workload]}; "
                                 f"family {self.family!r} makes {kind} instances")  # fmt: skip
            if not record.is_policy and record.family != kind:
                raise ValueError(f"method {method.method!r} solves {record.family} instances; "
                                 f"family {self.family!r} makes {kind} ones")  # fmt: skip
        if self.reference is not None:
            spec = self.method(self.reference)
            if spec is None or not method_record(spec.method).exact:
                exact = [m.label for m in self.methods if method_record(m.method).exact]
                raise ValueError(f"reference {self.reference!r} must be an exact method of the grid: {exact or 'none'}")
        _check_options(dict(self.options))
        self._check_options_used()

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

    def method(self, label: str) -> MethodSpec | None:
        return next((m for m in self.methods if m.label == label), None)

    def backends_of(self, spec: MethodSpec) -> tuple[str, ...]:
        """The grid's backends the method runs on; ``none`` for a method with one fixed engine (or none)."""
        method = method_record(spec.method)
        if len(method.backends) <= 1:
            return (NO_BACKEND,)
        return tuple(b for b in self.backends if b in method.backends) or (method.default_backend,)

    def tasks(self, sweep: str, data_dir: str | None = None) -> list[Task]:
        """Every task of the grid: sizes, then seeds, then methods, then backends."""
        tasks = []
        for params, seed in itertools.product(self.sizes, self.seeds):
            reference = None
            if self.reference is not None:
                spec = self.method(self.reference)
                assert spec is not None  # checked on construction
                reference = row_key(self.name, self.family, params, seed, spec.label, self.backends_of(spec)[0])
            for spec in self.methods:
                options = tuple({**dict(self.options), **dict(spec.options)}.items())
                for backend in self.backends_of(spec):
                    tasks.append(Task(sweep, self.name, self.family, params, seed, spec.label, spec.method, backend,
                                      options, self.limits, reference, data_dir))  # fmt: skip
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
            family = FAMILIES[grid.family]
            try:
                family.data_folder(folder)
            except ValueError as error:
                skipped.append(f"grid {grid.name!r} skipped: {error}")
                continue
            tasks += grid.tasks(self.name, str(folder) if folder is not None else None)
        return tasks, skipped


# --- loading -------------------------------------------------------------------------------------------


class _Reader:
    """Checks one sweep file, naming the file and the field in every error."""

    def __init__(self, source: str) -> None:
        self.source = source

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

    def grid(self, value: Any, field: str, seeds: tuple[int, ...], backends: tuple[str, ...], limits: Limits) -> Grid:
        data = self.table(value, field, _GRID_KEYS)
        for key in ("name", "family"):
            if not isinstance(data.get(key), str):
                raise self.error(f"'{key}' is required (a string)", _join(field, key))
        family = data["family"]
        if family not in FAMILIES:
            raise self.error(f"unknown family {family!r}; choose from {', '.join(FAMILIES)}", _join(field, "family"))
        if "methods" not in data:
            raise self.error("'methods' is required", _join(field, "methods"))
        methods = self.methods(data["methods"], _join(field, "methods"))
        reference = data.get("reference")
        if reference is None:
            reference = next((m.label for m in methods if method_record(m.method).exact), None)
        elif not isinstance(reference, str):
            raise self.error(f"expected a method label, got {reference!r}", _join(field, "reference"))
        options = self.table(data.get("options", {}), _join(field, "options"), OPTION_KEYS)
        try:
            _check_options(options)
        except ValueError as error:
            raise self.error(str(error), _join(field, "options")) from None
        try:
            return Grid(
                name=data["name"],
                family=family,
                sizes=self.sizes(data.get("sizes"), _join(field, "sizes"), family),
                seeds=self.seeds(data["seeds"], _join(field, "seeds")) if "seeds" in data else seeds,
                methods=methods,
                backends=self.strings(data["backends"], _join(field, "backends")) if "backends" in data else backends,
                reference=reference,
                options=tuple(options.items()),
                limits=self.limits(data, field, limits),
            )
        except SweepError:
            raise
        except ValueError as error:
            raise self.error(str(error), field) from None


def _join(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def parse_sweep(data: Any, source: str = "sweep", name: str | None = None) -> Sweep:
    """Validate already-parsed sweep data (a mapping as read from TOML or YAML).

    Parameters
    ----------
    data
        The top-level table.
    source
        Named in errors (the file path).
    name
        Default sweep name when the data has none.

    Raises
    ------
    SweepError
        Naming ``source``, the field at fault and the reason.
    """
    reader = _Reader(source)
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


def load_sweep(path: str | Path) -> Sweep:
    """Read and validate a sweep file (``.toml``, or ``.yaml``/``.yml``).

    Raises
    ------
    SweepError
        The file cannot be read or parsed, or a field is invalid (the message names file and field).
    """
    path = Path(path)
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SweepError(f"cannot read the sweep file: {error}", "", source) from None
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
    return parse_sweep(data, source, path.stem)


def options_json(options: Pairs) -> str:
    """Method options as canonical JSON, for the table."""
    return json.dumps(dict(options), sort_keys=True, default=str)
