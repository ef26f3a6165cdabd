"""Space-time packing of DAG jobs: exact formulations, the fair-share baseline and the DAG heuristics.

* :mod:`fairpack.solver.spacetime.model` -- tick scaling, slot data and the time-indexed MILP formulation.
* :mod:`fairpack.solver.spacetime.milp` -- the ``spacetime`` driver (time-indexed MILP on an LP/MILP backend).
* :mod:`fairpack.solver.spacetime.cp` -- the ``spacetime-cp`` driver (CP-SAT; pooled or per machine).
* The DAG heuristics (``carbyne``, ``drf-dag``, ``drf-strict``, ``tetris``, ``sjf``) and the fair completion
  times ``T_k`` are online policies of the one simulator (:mod:`fairpack.solver.sim.policies.dag`,
  :mod:`fairpack.solver.sim.fairshare`); this family runs them as methods.
* :mod:`fairpack.solver.spacetime.warmstart` -- list schedules and heuristic schedules as warm starts.
"""
