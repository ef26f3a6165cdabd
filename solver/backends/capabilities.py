"""What every backend offers, as a table: algorithms per backend and capabilities per (backend, algorithm).

Kept apart from the adapters so that checking a request against a backend imports no solver library.
"""

from __future__ import annotations

#: Algorithms per backend, default first.
ALGORITHMS: dict[str, tuple[str, ...]] = {
    "highs": ("simplex", "ipm", "pdlp"),
    "ortools": ("glop", "pdlp", "scip"),
    "cbc": ("cbc",),
    "cpsat": ("cpsat",),
}
#: The algorithm a backend uses when none is given, for an LP or a MILP.
DEFAULT_ALGORITHM: dict[tuple[str, str], str] = {
    ("highs", "lp"): "simplex", ("highs", "milp"): "simplex",
    ("ortools", "lp"): "glop", ("ortools", "milp"): "scip",
    ("cbc", "lp"): "cbc", ("cbc", "milp"): "cbc",
    ("cpsat", "lp"): "cpsat", ("cpsat", "milp"): "cpsat",
}  # fmt: skip

_LP = frozenset({"lp", "duals", "time_limit"})
_TUNED = frozenset({"threads", "seed"})
#: What each (backend, algorithm) offers: ``lp``/``milp`` (model classes), ``duals`` (row duals of an
#: optimal LP), ``incremental`` (a session that keeps its basis between solves), ``warm_start`` (a MILP
#: start), ``time_limit``, ``cp`` (CP-SAT models), ``threads`` and ``seed`` (``--workers``, ``--seed``).
CAPABILITIES: dict[tuple[str, str], frozenset[str]] = {
    ("highs", "simplex"): _LP | _TUNED | {"milp", "incremental", "warm_start"},
    ("highs", "ipm"): _LP | _TUNED | {"incremental"},
    ("highs", "pdlp"): _LP | _TUNED | {"incremental"},
    ("ortools", "glop"): _LP,
    ("ortools", "pdlp"): _LP,
    ("ortools", "scip"): frozenset({"lp", "milp", "warm_start", "time_limit"}),
    ("cbc", "cbc"): _LP | {"milp", "warm_start"},
    ("cpsat", "cpsat"): _TUNED | {"cp", "time_limit", "warm_start"},
}


def backend_capabilities(backend: str, algorithm: str | None = None) -> frozenset[str]:
    """What ``backend`` offers with ``algorithm`` (its default algorithm when None; the union for MILPs)."""
    if backend not in ALGORITHMS:
        return frozenset()
    if algorithm is None:
        lp = CAPABILITIES[(backend, DEFAULT_ALGORITHM[(backend, "lp")])]
        return lp | CAPABILITIES[(backend, DEFAULT_ALGORITHM[(backend, "milp")])]
    return CAPABILITIES.get((backend, algorithm), frozenset())
