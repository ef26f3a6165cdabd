"""Event-driven heuristics for DAG jobs (pooled, or every task on one machine), and the Carbyne fair-share baseline.

* :mod:`solver.dag.engine` -- the job/stage arrays (:class:`DagJobs`), the event-driven simulator
  (:func:`simulate`) every heuristic runs in (``placement='servers'``: best-fit placement on machines),
  and :func:`pack`, the continuous-time list scheduler used for fair-share estimates (forward) and
  Carbyne's reverse packing.
* :mod:`solver.dag.fairshare` -- weighted DRF shares over aggregate resource-time vectors
  (:func:`drf_shares`) and the fair completion times ``T_k`` (:func:`fair_completion_times`).
* :mod:`solver.dag.policies` -- ``carbyne``, ``drf-dag``, ``tetris``, ``sjf`` (:func:`run_heuristic`).
* :mod:`solver.dag.warmstart` -- per-machine list schedules and heuristic schedules as warm starts for
  the exact methods (``spacetime``, ``spacetime-cp``).
"""

from solver.dag.engine import DagJobs, pack, simulate
from solver.dag.fairshare import FairShare, drf_shares, fair_completion_times
from solver.dag.policies import HEURISTICS, run_heuristic

__all__ = ["HEURISTICS", "DagJobs", "FairShare", "drf_shares", "fair_completion_times", "pack", "run_heuristic",
           "simulate"]  # fmt: skip
