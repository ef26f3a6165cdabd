"""DRF and DRFH for flat tenants on heterogeneous servers: exact methods and the heuristics they are measured against.

* :mod:`solver.drfh.model` -- the DRFH LP (global dominant shares per tenant and placement unit).
* :mod:`solver.drfh.filling` -- exact progressive filling over LP rounds (leximin), and ``solve_drfh``.
* :mod:`solver.drfh.colgen` -- many distinct servers: pooled relaxation certified by column generation.
* :mod:`solver.drfh.int_model`, :mod:`solver.drfh.int_search` -- ``drfh-int``: whole tasks on machines,
  max-min by a search over f's discrete levels, then leximin.
* :mod:`solver.drfh.patterns_model`, :mod:`solver.drfh.patterns`, :mod:`solver.drfh.lns` -- the pattern
  search and the large-neighbourhood search that lift drfh-int's f.
* :mod:`solver.drfh.greedy`, :mod:`solver.drfh.heuristics` -- First-Fit, Best-Fit, slots, per-server DRF.
"""
