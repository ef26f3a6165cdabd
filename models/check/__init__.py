"""Independent verification of allocations, from the instance alone.

Nothing here trusts a solver: every number is recomputed from ``Instance`` and the task counts of an
``Allocation``. The LPs used by the Pareto checks are solved with ``scipy.optimize.linprog`` (HiGHS
through SciPy), a deliberately different code path from the project's own backends in ``solver/``.

Modules:

* :mod:`fairpack.models.check.report` -- :class:`CheckReport`, :class:`PropertyCheck`, tolerances and the
  helpers every check shares.
* :mod:`fairpack.models.check.verify` -- :func:`verify_allocation` / :func:`verify_amounts` check feasibility
  (shape, signs, integrality, capacities, task caps, placement on units that have the needed
  resources, whole tasks on machines) and the reported per-resource amounts, and recompute tasks,
  dominant shares and utilisation.
* :mod:`fairpack.models.check.properties` -- :func:`envy_free`, :func:`pareto_optimal`,
  :func:`sharing_incentive` (and :func:`equal_split_tasks`), each returning a :class:`PropertyCheck`.
* :mod:`fairpack.models.check.probes` -- probes that re-solve through a ``solve`` callable: :func:`truthful`
  (with :func:`random_misreports`, :func:`runnable_tasks`) and :func:`population_monotone`.
* :mod:`fairpack.models.check.hierarchy` -- hierarchical (H-DRF) properties: :func:`share_guarantee`
  (with :func:`node_shares`, :func:`demanding_nodes`), :func:`hierarchical_pareto` and the group-strategyproofness probe
  :func:`group_strategyproof` (with :func:`random_group_misreports`).
* :mod:`fairpack.models.check.schedule` -- :func:`verify_schedule` checks a DAG-job schedule (every task once,
  durations, releases, barrier precedence, pooled capacity by an event sweep and, for placed schedules,
  every machine's, fair completion times)
  and recomputes makespan, job completions and weighted average JCT (:class:`ScheduleReport`).

Everything is vectorised over tenants and units and processed in row chunks, so allocations of
1,000 tenants x 12,583 machines check in well under a second per check (except the Pareto LP).
"""

from fairpack.models.check.hierarchy import (
    demanding_nodes,
    group_strategyproof,
    hierarchical_pareto,
    node_shares,
    random_group_misreports,
    share_guarantee,
)
from fairpack.models.check.probes import population_monotone, random_misreports, runnable_tasks, truthful
from fairpack.models.check.properties import envy_free, equal_split_tasks, pareto_optimal, sharing_incentive
from fairpack.models.check.report import ABS_TOL, FIT_EPS, MAX_MESSAGES, CheckReport, PropertyCheck, Solver
from fairpack.models.check.schedule import ScheduleReport, verify_schedule
from fairpack.models.check.verify import verify_allocation, verify_amounts

__all__ = [
    "ABS_TOL",
    "FIT_EPS",
    "MAX_MESSAGES",
    "CheckReport",
    "PropertyCheck",
    "ScheduleReport",
    "Solver",
    "demanding_nodes",
    "envy_free",
    "equal_split_tasks",
    "group_strategyproof",
    "hierarchical_pareto",
    "node_shares",
    "pareto_optimal",
    "population_monotone",
    "random_group_misreports",
    "random_misreports",
    "runnable_tasks",
    "share_guarantee",
    "sharing_incentive",
    "truthful",
    "verify_allocation",
    "verify_amounts",
    "verify_schedule",
]
