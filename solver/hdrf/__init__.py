"""Hierarchical DRF over a weighted org tree: the exact static H-DRF and the hierarchical schedulers.

* :mod:`solver.hdrf.water_filling` -- static H-DRF, exact event-driven water-filling (pooled or on servers).
* :mod:`solver.hdrf.reference` -- the paper's ε-progressive filling, kept naive, as a reference.
* :mod:`solver.hdrf.methods` -- the drivers; naive and dynamic H-DRF and hierarchical slots run on the one
  simulator (:mod:`solver.sim.backlog`, :mod:`solver.sim.policies.hierarchy`).
"""
