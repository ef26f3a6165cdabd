"""The method registry: every method and policy, what it accepts, and how to run it.

Each family folder registers its methods in its ``register`` module (``solver/drfh/register.py`` and so
on) with a :class:`Method` record: its family, whether it is exact, the backends and algorithms it
accepts, the backend capabilities it needs, the options it honours, and the dotted path of the driver
that runs it. Registering imports nothing heavy: the driver module is imported the first time the
method runs, so listing methods (``fairpack methods``, ``fairpack --help``) stays fast.

:func:`check_request` is where a request is refused before any solving starts: an unknown method, a
backend or algorithm the method cannot use, a backend lacking a capability the method needs, an option
the method would silently ignore. Every refusal says why and what to use instead.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from fairpack.solver.backends import ALGORITHMS, DEFAULT_ALGORITHM, SolverSettings, backend_capabilities, installed

if TYPE_CHECKING:
    from fairpack.models.check.saved import SavedRules
    from fairpack.models.result import Result

#: Families whose ``register`` modules are imported on first use, in listing order.
FAMILY_PACKAGES = ("fairpack.solver.drfh", "fairpack.solver.hdrf", "fairpack.solver.spacetime", "fairpack.solver.sim")

#: ``Method.family`` values and the instance part each needs (a flat instance is a one-level tree).
FAMILY_NEEDS = {"flat": "tenants", "hierarchy": "tenants", "jobs": "jobs"}


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
    strategy: str = "auto"  # drfh: plain | colgen | aggregate | auto
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


@dataclass(frozen=True)
class Method:
    """One registered method or policy.

    Attributes
    ----------
    name, family, summary
        ``family`` is ``flat``, ``hierarchy`` or ``jobs`` (what the instance must hold).
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
    exporter: str | None = None  # "module:function" building the LP/MILP it solves first, for `fairpack export`
    factory: str | None = None  # policies: "module:function" building the policy object (name, jobs, instance, extra)

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

    def saved_rules(self, placement: str | None, fair_cap: bool = True) -> SavedRules:
        """The rules ``solve`` applied to this method's answer (``placement``: the one it was solved with;
        ``fair_cap``: False when an exact DAG method ran with ``--no-fair-cap``)."""
        from fairpack.models.check.saved import SavedRules

        if self.kind == "schedule":
            return SavedRules(self.name, "schedule", exact=self.exact, require_placement=placement == "servers",
                              fair_cap=fair_cap)  # fmt: skip
        level = self.level
        if level == "placement":
            level = "pool" if placement == "pooled" else "class"
        return SavedRules(self.name, "allocation", unit_kind=level, exact=self.exact)  # type: ignore[arg-type]

    def runner(self) -> Callable[..., Result]:
        module, _, function = self.driver.partition(":")
        run: Callable[..., Result] = getattr(importlib.import_module(module), function)
        return run

    def describe(self) -> dict[str, Any]:
        """The ``fairpack methods --json`` entry."""
        return {
            "name": self.name,
            "family": self.family,
            "exact": self.exact,
            "kind": self.kind,
            "backends": {b: list(self.algorithms(b)) for b in self.backends} if self.uses_backend else {},
            "default_backend": self.default_backend,
            "options": sorted(self.options | COMMON_OPTIONS),
            "extra": sorted(self.extra_keys),
            "summary": self.summary,
        }


_REGISTRY: dict[str, Method] = {}
_POLICIES: dict[str, Method] = {}
_LOADED = False


def _add(table: dict[str, Method], entries: Iterable[Method], what: str) -> None:
    for entry in entries:
        if entry.name in table and table[entry.name] != entry:
            raise ValueError(f"{what} {entry.name!r} is registered twice")
        table[entry.name] = entry


def register(*entries: Method) -> None:
    """Add methods (``fairpack solve``) to the registry (called by each family's ``register`` module)."""
    _add(_REGISTRY, entries, "method")


def register_policy(*entries: Method) -> None:
    """Add online policies (``fairpack simulate``); a policy may share a method's name (first-fit: the static
    heuristic is a method, the online scheduler a policy)."""
    _add(_POLICIES, entries, "policy")


def _load() -> None:
    global _LOADED
    if not _LOADED:
        for package in FAMILY_PACKAGES:
            importlib.import_module(f"{package}.register")
        _LOADED = True


def methods() -> Mapping[str, Method]:
    """Every registered method, by name, in family order."""
    _load()
    return _REGISTRY


def policies() -> Mapping[str, Method]:
    """Every registered online policy, by name."""
    _load()
    return _POLICIES


def get_policy(name: str) -> Method:
    registry = policies()
    if name not in registry:
        raise OptionError(f"unknown policy {name!r}; choose from {', '.join(registry)}", "policy")
    return registry[name]


def get_method(name: str) -> Method:
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
            users = sorted(m.name for m in methods().values() if name in m.options)
            raise OptionError(f"{method.name} does not use this option (it applies to {', '.join(users) or 'none'})",
                              name.replace("_", "-"))  # fmt: skip
    unknown = sorted(set(options.extra) - method.extra_keys)
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
    """Every method (``solve``) and policy (``simulate``), each with ``command`` saying which."""
    return ([{**m.describe(), "command": "solve"} for m in methods().values()]
            + [{**p.describe(), "command": "simulate"} for p in policies().values()])  # fmt: skip
