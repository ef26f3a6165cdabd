"""The flat family's methods: exact DRF, DRFH and drfh-int, and the heuristics measured against them."""

from __future__ import annotations

from fairpack.solver.backends import LP_BACKENDS
from fairpack.solver.registry import Method, register

_DRIVERS = "fairpack.solver.drfh.methods"
_HEURISTICS = "fairpack.solver.drfh.heuristic_drivers"  # no LP machinery to import
_LP = frozenset({"lp", "duals"})  # progressive filling freezes tenants by their level rows' duals
_TUNING = frozenset({"workers", "seed"})  # reach the solver (HiGHS threads and random_seed)

register(
    Method("drf", "flat", True, "weighted DRF on the cluster pooled into one server (not placeable in general)",
           f"{_DRIVERS}:run_drf", LP_BACKENDS, _LP, frozenset({"strategy"}) | _TUNING, level="pool",
           exporter=f"{_DRIVERS}:export_drf"),
    Method("drfh", "flat", True, "DRFH: leximin global dominant shares on heterogeneous servers, divisible tasks",
           f"{_DRIVERS}:run_drfh", LP_BACKENDS, _LP, frozenset({"strategy"}) | _TUNING, level="class",
           exporter=f"{_DRIVERS}:export_drfh"),
    Method("drfh-int", "flat", True, "DRFH with whole tasks on individual machines: max-min f, then leximin",
           f"{_DRIVERS}:run_drfh_int", LP_BACKENDS, frozenset({"lp", "milp"}), frozenset({"gap"}) | _TUNING,
           exporter=f"{_DRIVERS}:export_drfh_int"),
    Method("first-fit", "flat", False, "First-Fit DRFH: progressive filling, each task on the first machine it fits",
           f"{_HEURISTICS}:run_first_fit"),
    Method("best-fit", "flat", False, "Best-Fit DRFH: each task on the machine of best fitness (DRFH paper)",
           f"{_HEURISTICS}:run_best_fit"),
    Method("slots", "flat", False, "slot scheduler: k equal slots per largest server, one task per slot",
           f"{_HEURISTICS}:run_slots", options=frozenset({"slots"})),
    Method("per-server-drf", "flat", False, "DRF inside every machine separately",
           f"{_HEURISTICS}:run_per_server_drf"),
)  # fmt: skip
