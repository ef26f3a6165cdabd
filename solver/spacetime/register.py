"""The DAG-job family's methods: exact space-time packing and the heuristics measured against it."""

from __future__ import annotations

from fairpack.solver.backends import LP_BACKENDS
from fairpack.solver.registry import Method, register

_DRIVERS = "fairpack.solver.spacetime.methods"
_OBJECTIVE = frozenset({"objective", "alpha", "placement"})
# Settings of every DAG heuristic (T_k computed or not, the lateness margin, T_k on the schedule), and
# Carbyne's own: the others would ignore altruism and reverse_order silently.
_HEURISTIC_EXTRA = frozenset({"fair_completion", "fair_margin", "attach_fair"})
_CARBYNE_EXTRA = _HEURISTIC_EXTRA | {"altruism", "reverse_order"}

register(
    Method("spacetime-cp", "jobs", True, "DAG jobs packed in space and time with CP-SAT, pooled or per machine, "
           "C_k <= T_k unless --no-fair-cap",
           f"{_DRIVERS}:run_spacetime_cp", ("cpsat",), frozenset({"cp"}),
           _OBJECTIVE | {"workers", "seed", "fair_cap"}, frozenset({"fair_completion", "decompose"}), kind="schedule"),
    Method("spacetime", "jobs", True, "DAG jobs as a time-indexed MILP (start counts per stage and slot), "
           "C_k <= T_k unless --no-fair-cap", f"{_DRIVERS}:run_spacetime", LP_BACKENDS,
           frozenset({"lp", "milp"}), _OBJECTIVE | {"fair_cap", "workers", "seed"},
           frozenset({"fair_completion", "servers_model"}),
           kind="schedule"),
    Method("locality-cp", "jobs", True, "the data-locality yardstick: CP-SAT, every task on a machine, running "
           "its duration times the locality factor there (node, rack, remote); no fair caps",
           f"{_DRIVERS}:run_locality_cp", ("cpsat",), frozenset({"cp"}), frozenset({"objective", "workers", "seed"}),
           kind="schedule"),
    Method("carbyne", "jobs", False, "Carbyne: DRF shares, reverse packing, leftovers given away",
           f"{_DRIVERS}:run_carbyne", options=_OBJECTIVE | {"seed"}, extra_keys=_CARBYNE_EXTRA, kind="schedule"),
    Method("drf-dag", "jobs", False, "DRF between jobs, breadth-first inside each job",
           f"{_DRIVERS}:run_drf_dag", options=_OBJECTIVE, extra_keys=_HEURISTIC_EXTRA, kind="schedule"),
    Method("drf-strict", "jobs", False, "every job held to its DRF share, not work-conserving: the fair-share "
           "schedule whose completions are the fair completion times T_k",
           f"{_DRIVERS}:run_drf_strict", options=_OBJECTIVE, extra_keys=_HEURISTIC_EXTRA, kind="schedule"),
    Method("tetris", "jobs", False, "Tetris: packing by alignment score",
           f"{_DRIVERS}:run_tetris", options=_OBJECTIVE, extra_keys=_HEURISTIC_EXTRA, kind="schedule"),
    Method("sjf", "jobs", False, "shortest remaining critical path first",
           f"{_DRIVERS}:run_sjf", options=_OBJECTIVE, extra_keys=_HEURISTIC_EXTRA, kind="schedule"),
)  # fmt: skip
