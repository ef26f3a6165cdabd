"""The registry: every method and every online policy, what it accepts, and how to run it.

Each family folder registers its methods in its ``register`` module (``solver/drfh/register.py`` and so
on), and the online policies register in ``solver/sim/register.py``, each once, by name, with a
:class:`Method` record: its family, whether it is exact, the backends and algorithms it accepts, the
backend capabilities it needs, the options it honours, and the dotted path of the driver that runs it. A
policy's record (``command="simulate"``) also names its factory and declares what it can run: the workloads
(DAG jobs, tenants' backlogs), whether it understands stages' placement options, and whether it reads the
instance itself; the simulator builds every policy through that factory and derives every refusal from
those facts. Registering imports nothing heavy: a driver or factory module is imported the first time it
runs, so listing methods (``fairpack methods``, ``fairpack --help``) stays fast.

:func:`methods` lists the methods of ``fairpack solve`` by name (``include_policies=True`` adds the policies of
``fairpack simulate`` under ``online:<name>``, the sweeps' spelling); :func:`policies` lists the policies by
name.

:func:`check_request` is where a request is refused before any solving starts: an unknown method, a
backend or algorithm the method cannot use, a backend lacking a capability the method needs, an option
the method would silently ignore. Every refusal says why and what to use instead.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from fairpack.solver.backends import ALGORITHMS, DEFAULT_ALGORITHM, SolverSettings, backend_capabilities, installed

if TYPE_CHECKING:
    from fairpack.models.check.rules import SavedRules
    from fairpack.models.result import Result

#: Families whose ``register`` modules are imported on first use, in listing order.
FAMILY_PACKAGES = ("fairpack.solver.drfh", "fairpack.solver.hdrf", "fairpack.solver.spacetime", "fairpack.solver.sim")

#: ``Method.family`` values and the instance part each needs (a flat instance is a one-level tree).
FAMILY_NEEDS = {"flat": "tenants", "hierarchy": "tenants", "jobs": "jobs"}

#: ``Method.command``: the entry point that runs a record (``fairpack solve`` or ``fairpack simulate``).
COMMANDS = ("solve", "simulate")
#: A policy's key in the combined listing (``methods(include_policies=True)``) and in sweeps: ``online:<name>``.
ONLINE_PREFIX = "online:"
#: ``Method.workloads``: what an online policy can run on, as the refusals name it.
WORKLOADS = {"jobs": "DAG jobs", "backlogs": "tenants' endless backlogs"}
#: ``Method.placement_options``: how an online policy treats stages' placement options (``Stage.options``).
PLACEMENT_OPTIONS = {
    "none": "does not understand them (an instance with options is refused)",
    "task": "places where a task-by-task option allows (a stage whose every option is a gang is refused)",
    "all": "chooses among them, gangs included",
}


class OptionError(ValueError):
    """A request a method cannot honour, refused before solving (the CLI exits with 2)."""

    def __init__(self, reason: str, option: str = "") -> None:
        self.reason = reason
        self.option = option
        super().__init__(f"{option}: {reason}" if option else reason)


@dataclass(frozen=True)
class SolveOptions:
    """Everything a method may be asked to honour; ``Method.options`` says which ones it does.

    ``backend=None`` and ``algorithm=None`` mean the method's defaults. ``extra`` holds settings of one
    method only (simulation horizons, Carbyne's altruism, ...), checked against ``Method.extra_keys``.
    """

    backend: str | None = None
    time_limit: float | None = None
    algorithm: str | None = None
    strategy: str = "auto"  # drfh: plain | decompose | colgen | aggregate | auto
    slots: int = 10  # slots per largest server, for the slot scheduler
    gap: float = 0.0  # drfh-int: stop once f is within this fraction of its proven upper bound
    placement: str = "auto"  # hdrf, collapsed: pooled | servers | auto; DAG jobs: pooled (auto) | servers
    objective: str | None = None  # DAG jobs: makespan | avg-jct | mix (None: makespan for one job, else avg-jct)
    alpha: float = 0.5  # objective 'mix': alpha * avg JCT + (1 - alpha) * makespan
    fair_cap: bool = True  # exact DAG methods: every job completes by its fair-share time T_k
    workers: int | None = None  # solver threads (CP-SAT workers, HiGHS threads)
    seed: int | None = None  # solver or simulation seed
    verbose: bool = False  # stream the solver's own log to stderr
    extra: dict[str, Any] = field(default_factory=dict)

    def solver_settings(self) -> SolverSettings:
        """What the backend itself is asked for: threads (``workers``), ``seed`` and its log (``verbose``)."""
        return SolverSettings(self.workers, self.seed, self.verbose)

    def given(self) -> dict[str, Any]:
        """The options that differ from their defaults (what a user asked for explicitly)."""
        defaults = SolveOptions()
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("backend", "algorithm", "extra") and getattr(self, f.name) != getattr(defaults, f.name)
        }


#: Options every method honours.
COMMON_OPTIONS = frozenset({"time_limit", "verbose"})


def option_flag(name: str) -> str:
    """The command-line flag of ``SolveOptions`` field ``name`` (``time_limit``: ``--time-limit``): what
    ``fairpack methods`` lists, since such an option is no ``--option key=value`` setting."""
    return "--no-fair-cap" if name == "fair_cap" else "--" + name.replace("_", "-")


#: ``SolveOptions`` fields given on the command line by flags of their own (never as ``--option`` settings).
_FIELDS = frozenset(f.name for f in fields(SolveOptions)) - {"extra"}
#: Exact DAG methods whose ``T_k`` come from the instance rounded up to their time unit (``fairpack check``
#: recomputes them so): the instance's ``time.slot`` (the time-indexed MILP) or the recorded CP-SAT ``tick``.
_TIME_UNITS = {"spacetime": "slot", "spacetime-cp": "tick"}
#: Policies that can never run a stage a machine holds: ``slots`` (a task larger than a slot) and ``hard-only``
#: (a stage runs only under its first placement option); ``fairpack check`` accepts such jobs unfinished.
_STAGE_RULES = {"slots": "slot", "hard-only": "first-option"}
#: Exact methods that solve placement options on machines whatever the placement.
_ON_MACHINES = frozenset({"spacetime"})


@dataclass(frozen=True)
class Method:
    """One registered method (``fairpack solve``) or online policy (``fairpack simulate``).

    Attributes
    ----------
    name, family, summary
        Methods: ``family`` is ``flat``, ``hierarchy`` or ``jobs`` (what the instance must hold); policies:
        ``online``, ``locality`` or ``soft``.
    exact
        Whether the method proves its answer optimal (when it finishes).
    driver
        ``"module:function"``; the function takes ``(instance, options, budget)`` and returns a ``Result``.
    backends
        Backends it runs on, default first; ``("none",)`` for methods that use no solver library.
    needs
        Capabilities the backend must offer (``lp``, ``milp``, ``duals``, ``incremental``, ``cp``).
    options, extra_keys
        ``SolveOptions`` fields and ``extra`` keys it honours beyond :data:`COMMON_OPTIONS`.
    kind
        ``allocation`` or ``schedule``: the shape of its answer.
    level
        Allocations: the unit they are counted on, ``pool``, ``class`` or ``machine``, or ``placement``
        (``pool`` when solved pooled, else ``class``). ``fairpack check`` re-derives it from here.
    exporter
        ``"module:function"`` building the LP/MILP the method solves first, for ``fairpack export``.
    command
        ``solve`` (a method) or ``simulate`` (an online policy); a policy may share a method's name
        (first-fit: the static heuristic is a method, the online scheduler a policy).

    The facts below are a policy's only (a method leaves them at their defaults):

    factory
        ``"module:function"`` building the policy object, imported on first use; every factory takes
        ``(name, workload, instance, settings)`` -- the policy's name, the ``Workload`` it runs on, the
        ``Instance`` (``None`` when the caller has none) and its settings (``options.extra``, plus ``seed``
        when given and ``slots`` when it honours ``--slots``) -- and returns the policy (a ``BasePolicy``).
    workloads
        What it runs on, keys of :data:`WORKLOADS`: ``jobs`` (the instance's DAG jobs and a trace's),
        ``backlogs`` (tenants' endless backlogs), or both.
    placement_options
        A key of :data:`PLACEMENT_OPTIONS`: ``none``, ``task`` or ``all``.
    needs_instance
        What the factory reads from the instance beyond the workload (e.g. "the jobs' deadlines and
        utilities"); empty when the workload is enough.
    """

    name: str
    family: str
    exact: bool
    summary: str
    driver: str
    backends: tuple[str, ...] = ("none",)
    needs: frozenset[str] = frozenset()
    options: frozenset[str] = frozenset()
    extra_keys: frozenset[str] = frozenset()
    kind: str = "allocation"
    level: str = "machine"
    exporter: str | None = None
    command: str = "solve"
    factory: str | None = None
    workloads: frozenset[str] = frozenset()
    placement_options: str = "none"
    needs_instance: str = ""

    @property
    def is_policy(self) -> bool:
        return self.command == "simulate"

    @property
    def key(self) -> str:
        """Its name in the combined listing: the name of a method, ``online:<name>`` of a policy."""
        return ONLINE_PREFIX + self.name if self.is_policy else self.name

    @property
    def uses_backend(self) -> bool:
        return self.backends != ("none",)

    @property
    def default_backend(self) -> str:
        return self.backends[0]

    def algorithms(self, backend: str) -> tuple[str, ...]:
        """The algorithms of ``backend`` that offer everything this method needs."""
        if backend not in self.backends or backend == "none":
            return ()
        return tuple(a for a in ALGORITHMS.get(backend, ()) if self.needs <= backend_capabilities(backend, a))

    def saved_rules(self, stated: Mapping[str, Any] | None = None, jobs: bool = True) -> SavedRules:
        """The rules ``fairpack check`` verifies this method's saved answer by: facts of this record, never of the
        result file (``models.check.saved.SavedRules``).

        ``stated``: the options the caller of ``check`` gives, as flat keys (``placement``, ``fair_cap``,
        ``extra.horizon``, ...); the file must agree with them, and an option that loosens a rule applies only
        when stated. ``jobs``: whether the instance has DAG jobs (an online policy simulates them, else its
        tenants' backlogs, whose answer is an allocation).

        Raises
        ------
        OptionError
            For a stated option this method does not take.
        """
        from fairpack.models.check.rules import SavedRules

        takes = frozenset(self.options) | {f"extra.{key}" for key in self.extra_keys}
        stated = dict(stated or {})
        for key in stated:
            if key not in takes:
                name = key.removeprefix("extra.")
                raise OptionError(f"{self.name} does not take this option, so its results are not checked by it",
                                  name.replace("_", "-") if "." not in key else "option")  # fmt: skip
        if self.is_policy and not jobs:  # tenants' endless backlogs: the placement at the horizon, on machines
            return SavedRules(self.name, "allocation", unit_kind="machine", policy=True, takes=takes, stated=stated)
        if self.kind == "schedule":
            capped = self.exact and "fair_cap" in self.options
            report = "" if self.is_policy or capped else "servers" if self.exact else "reported"
            return SavedRules(self.name, "schedule", exact=self.exact, policy=self.is_policy, takes=takes,
                              placement="auto" if "placement" in self.options and not self.is_policy else "servers",
                              fair_caps=capped, fair_report=report, time_unit=_TIME_UNITS.get(self.name, ""),
                              stage_rule=_STAGE_RULES.get(self.name, "machine") if self.is_policy else "machine",
                              gangs=self.placement_options == "all", choices_on_machines=self.name in _ON_MACHINES,
                              stated=stated)  # fmt: skip
        level = None if self.level == "placement" else self.level
        return SavedRules(self.name, "allocation", unit_kind=level, exact=self.exact, takes=takes,  # type: ignore[arg-type]
                          placement="auto" if self.level == "placement" else "", stated=stated)  # fmt: skip

    def runner(self) -> Callable[..., Result]:
        run: Callable[..., Result] = _imported(self.driver)
        return run

    def builder(self) -> Callable[..., Any]:
        """A policy's factory (``factory``), imported now; called ``(name, workload, instance, settings)``."""
        if self.factory is None:
            raise ValueError(f"{self.name} is a method of fairpack solve, not an online policy: it has no factory")
        return _imported(self.factory)

    def describe(self) -> dict[str, Any]:
        """The ``fairpack methods --json`` entry; ``command`` says whether it is a method (``solve``) or an online
        policy (``simulate``), and a policy's entry adds its declared facts."""
        entry = {
            "name": self.name,
            "command": self.command,
            "family": self.family,
            "exact": self.exact,
            "kind": self.kind,
            "backends": {b: list(self.algorithms(b)) for b in self.backends} if self.uses_backend else {},
            "default_backend": self.default_backend,
            "options": sorted(self.options | COMMON_OPTIONS),
            "flags": [option_flag(name) for name in sorted(self.options | COMMON_OPTIONS)],
            "extra": sorted(self.extra_keys),
            "summary": self.summary,
        }
        if self.is_policy:
            entry.update(workloads=sorted(self.workloads), placement_options=self.placement_options,
                         needs_instance=bool(self.needs_instance))  # fmt: skip
        return entry


def _imported(path: str) -> Any:
    """The object a ``"module:function"`` path names, its module imported now."""
    module, _, function = path.partition(":")
    return getattr(importlib.import_module(module), function)


#: The one table: every method and policy by ``Method.key``, in registration order (family order).
_REGISTRY: dict[str, Method] = {}
#: The same records by name, one index per command (``methods()`` and ``policies()``).
_BY_COMMAND: dict[str, dict[str, Method]] = {command: {} for command in COMMANDS}
_LOADED = False


def _validate(entry: Method) -> None:
    """A record's facts are consistent: a policy declares how it is built and what it runs on; a method none."""
    if entry.command not in COMMANDS:
        raise ValueError(f"{entry.name}: command must be one of {', '.join(COMMANDS)}, got {entry.command!r}")
    if not entry.is_policy:
        if entry.factory or entry.workloads or entry.placement_options != "none" or entry.needs_instance:
            raise ValueError(f"{entry.name}: factory, workloads, placement_options and needs_instance are facts "
                             "of an online policy (command='simulate')")  # fmt: skip
        return
    if entry.factory is None or ":" not in entry.factory:
        raise ValueError(f"policy {entry.name}: factory must be a 'module:function' path")
    if not entry.workloads or not entry.workloads <= WORKLOADS.keys():
        raise ValueError(f"policy {entry.name}: workloads must be some of {', '.join(WORKLOADS)}")
    if entry.placement_options not in PLACEMENT_OPTIONS:
        raise ValueError(f"policy {entry.name}: placement_options must be one of {', '.join(PLACEMENT_OPTIONS)}")


def register(*entries: Method) -> None:
    """Add methods (``command="solve"``, for ``fairpack solve``) and online policies (``command="simulate"``, for
    ``fairpack simulate``) to the registry, each once, by name (called by each family's ``register`` module)."""
    for entry in entries:
        _validate(entry)
        if entry.key in _REGISTRY and _REGISTRY[entry.key] != entry:
            raise ValueError(f"{'policy' if entry.is_policy else 'method'} {entry.name!r} is registered twice")
        _REGISTRY[entry.key] = entry
        _BY_COMMAND[entry.command][entry.name] = entry


def register_policy(*entries: Method) -> None:
    """Add online policies: :func:`register` with ``command="simulate"`` set on every record."""
    register(*(replace(entry, command="simulate") for entry in entries))


def _load() -> None:
    global _LOADED
    if not _LOADED:
        for package in FAMILY_PACKAGES:
            importlib.import_module(f"{package}.register")
        _LOADED = True


def methods(include_policies: bool = False) -> Mapping[str, Method]:
    """Every registered method (``fairpack solve``), by name, in family order.

    With ``include_policies``, the whole registry: the methods by name, then every online policy
    (``fairpack simulate``) under ``online:<name>`` (its ``Method.key``; a policy may share a method's name),
    each record's ``command`` saying which it is.
    """
    _load()
    return _REGISTRY if include_policies else _BY_COMMAND["solve"]


def policies() -> Mapping[str, Method]:
    """Every registered online policy (``fairpack simulate``), by name."""
    _load()
    return _BY_COMMAND["simulate"]


def get_policy(name: str) -> Method:
    registry = policies()
    if name not in registry:
        raise OptionError(f"unknown policy {name!r}; choose from {', '.join(registry)}", "policy")
    return registry[name]


def get_method(name: str) -> Method:
    """The method ``name``, or the policy ``online:<name>`` (a key of ``methods(include_policies=True)``)."""
    if name.startswith(ONLINE_PREFIX):
        return get_policy(name[len(ONLINE_PREFIX):])
    registry = methods()
    if name not in registry:
        raise OptionError(f"unknown method {name!r}; choose from {', '.join(registry)}", "method")
    return registry[name]


def _positive_or_none(value: float | None, option: str) -> None:
    if value is not None and not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise OptionError(f"must be a positive number of seconds, got {value!r}", option)


def check_request(method: Method, options: SolveOptions) -> tuple[str, str | None]:
    """Refuse what ``method`` cannot honour; return the backend and algorithm it will use.

    Raises
    ------
    OptionError
        Naming the option, why it is refused and what to use instead.
    """
    _positive_or_none(options.time_limit, "time_limit")
    backend = options.backend or method.default_backend
    if backend not in method.backends:
        if method.uses_backend:
            hint = f"use --backend {' or '.join(method.backends)}"
        else:
            hint = "it uses no solver library; leave --backend out"
        raise OptionError(f"{method.name} does not run on backend {backend!r}: {hint}", "backend")
    algorithm = options.algorithm
    if algorithm is not None and not method.uses_backend:
        raise OptionError(f"{method.name} uses no solver library, so --algorithm does not apply", "algorithm")
    if method.uses_backend:
        algorithm = _check_algorithm(method, backend, algorithm)
    _check_options(method, options)
    if method.uses_backend:
        _check_tuning(method, options, backend, algorithm)
    return backend, algorithm


#: Options that reach the solver itself, and the backend capability each needs.
_TUNING = {"workers": "threads", "seed": "seed"}


def _check_tuning(method: Method, options: SolveOptions, backend: str, algorithm: str | None) -> None:
    """``--workers`` and ``--seed`` on a backend that takes no thread count or seed are refused, not dropped."""
    given = options.given()
    for option, capability in _TUNING.items():
        if option in given and capability not in backend_capabilities(backend, algorithm):
            able = [b for b in method.backends if capability in backend_capabilities(b)]
            hint = f"use --backend {' or '.join(able)}" if able else "leave it out"
            raise OptionError(f"backend {backend} takes no {capability} setting from fairpack; {hint}", option)


def _check_algorithm(method: Method, backend: str, algorithm: str | None) -> str | None:
    known = ALGORITHMS.get(backend, ())
    if algorithm is not None and algorithm not in known:
        raise OptionError(f"backend {backend} has no algorithm {algorithm!r}; choose from {', '.join(known)}",
                          "algorithm")  # fmt: skip
    chosen = algorithm or DEFAULT_ALGORITHM.get((backend, "milp" if "milp" in method.needs else "lp"))
    missing = method.needs - backend_capabilities(backend, chosen)
    if missing:
        usable = method.algorithms(backend)
        instead = f"use --algorithm {' or '.join(usable)}" if usable else f"use --backend {method.backends[0]}"
        what = f"{backend} {chosen}" if chosen else backend
        raise OptionError(f"{method.name} needs {', '.join(sorted(missing))}, which {what} does not provide; "
                          f"{instead}", "algorithm" if algorithm else "backend")  # fmt: skip
    if backend not in installed():
        raise OptionError(f"backend {backend!r} is not installed here", "backend")
    return algorithm


def _check_options(method: Method, options: SolveOptions) -> None:
    allowed = method.options | COMMON_OPTIONS
    for name in options.given():
        if name not in allowed:
            users = sorted(m.name for m in _BY_COMMAND[method.command].values() if name in m.options)
            raise OptionError(f"{method.name} does not use this option (it applies to {', '.join(users) or 'none'})",
                              name.replace("_", "-"))  # fmt: skip
    unknown = sorted(set(options.extra) - method.extra_keys)
    fields_given = [key for key in unknown if key in _FIELDS]
    if fields_given:  # an option given as a setting (--option time_limit=5): say where it goes
        key = fields_given[0]
        raise OptionError(f"{key} is an option, not a setting: give it as {option_flag(key)} (in Python, "
                          f"{key}=...)", "extra")  # fmt: skip
    if unknown:
        accepted = ", ".join(sorted(method.extra_keys)) or "none"
        raise OptionError(f"{method.name} does not use {', '.join(unknown)} (it accepts: {accepted})", "extra")
    # Options that only mean something beside another one: silently dropped otherwise.
    if "alpha" in options.given() and options.objective != "mix":
        raise OptionError("weighs avg JCT against makespan only in the mix objective; add --objective mix or "
                          "leave --alpha out", "alpha")  # fmt: skip
    if "servers_model" in options.extra and options.placement != "servers":
        raise OptionError("servers_model chooses the per-machine model, so it needs placement 'servers'", "extra")


def method_names(family: str | None = None) -> list[str]:
    return [name for name, method in methods().items() if family is None or method.family == family]


def describe_all() -> list[dict[str, Any]]:
    """``fairpack methods --json``: every method (``solve``), then every policy (``simulate``), each entry's
    ``command`` saying which."""
    entries = sorted(methods(include_policies=True).values(), key=lambda m: COMMANDS.index(m.command))
    return [entry.describe() for entry in entries]
