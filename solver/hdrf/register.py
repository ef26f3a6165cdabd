"""The hierarchy family's methods: static H-DRF and the schedulers measured against it."""

from __future__ import annotations

from fairpack.solver.backends import LP_BACKENDS
from fairpack.solver.registry import Method, register

_DRIVERS = "fairpack.solver.hdrf.methods"
_SIMULATION = frozenset({"horizon", "duration", "mean", "warmup", "starvation_after", "samples", "reference"})

register(
    Method("hdrf", "hierarchy", True, "static H-DRF: exact event-driven water-filling over the org tree; pooled, "
           "or placeable on heterogeneous servers (--placement)", f"{_DRIVERS}:run_hdrf",
           LP_BACKENDS, frozenset({"lp"}), frozenset({"placement", "workers", "seed"}), level="placement"),
    Method("collapsed", "hierarchy", False, "the tree flattened into leaf weights (each leaf's guarantee), then "
           "weighted DRF", f"{_DRIVERS}:run_collapsed", LP_BACKENDS, frozenset({"lp", "duals"}),
           frozenset({"placement", "strategy", "workers", "seed"}), level="placement"),
    Method("naive-hdrf", "hierarchy", False, "naive H-DRF over time (raw subtree sums), simulated",
           f"{_DRIVERS}:run_naive_hdrf", options=frozenset({"seed"}), extra_keys=_SIMULATION),
    Method("dynamic-hdrf", "hierarchy", False, "dynamic H-DRF over time (blocked children ignored), simulated",
           f"{_DRIVERS}:run_dynamic_hdrf", options=frozenset({"seed"}), extra_keys=_SIMULATION),
    Method("hslots", "hierarchy", False, "hierarchical slot scheduler over time, simulated",
           f"{_DRIVERS}:run_hslots", options=frozenset({"seed", "slots"}), extra_keys=_SIMULATION),
)  # fmt: skip
