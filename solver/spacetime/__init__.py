"""Space-time packing of DAG jobs: exact formulations, the fair-share baseline and the DAG heuristics.

* :mod:`solver.spacetime.model` -- tick scaling, slot data and the time-indexed MILP formulation.
* :mod:`solver.spacetime.milp` -- the ``spacetime`` driver (time-indexed MILP on an LP/MILP backend).
* :mod:`solver.spacetime.cp` -- the ``spacetime-cp`` driver (CP-SAT; pooled or per machine).
* :mod:`solver.spacetime.engine` -- the job/stage arrays (:class:`DagJobs`), the event-driven simulator
  the heuristics run in, and :func:`pack`, the list scheduler used for fair-share estimates and Carbyne's
  reverse packing.
* :mod:`solver.spacetime.fairshare` -- weighted DRF shares over aggregate resource-time vectors and the
  fair completion times ``T_k``.
* :mod:`solver.spacetime.policies` -- ``carbyne``, ``drf-dag``, ``tetris``, ``sjf``.
* :mod:`solver.spacetime.warmstart` -- list schedules and heuristic schedules as warm starts.
"""
