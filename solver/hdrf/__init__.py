"""Hierarchical DRF over a weighted org tree: the exact static H-DRF and the hierarchical schedulers.

* :mod:`fairpack.solver.hdrf.water_filling` -- static H-DRF, exact event-driven water-filling (pooled or on servers).
* :mod:`fairpack.solver.hdrf.reference` -- the paper's ε-progressive filling, kept naive, as a reference.
* :mod:`fairpack.solver.hdrf.methods` -- the drivers; naive and dynamic H-DRF and hierarchical slots run on the one
  simulator (:mod:`fairpack.solver.sim.backlog`, :mod:`fairpack.solver.sim.policies.hierarchy`).
"""
