"""DRF and DRFH for flat tenants on heterogeneous servers: exact methods and the heuristics they are measured against.

* :mod:`fairpack.solver.drfh.model` -- the DRFH LP (global dominant shares per tenant and placement unit).
* :mod:`fairpack.solver.drfh.filling` -- exact progressive filling over LP rounds (leximin), and ``solve_drfh``.
* :mod:`fairpack.solver.drfh.colgen` -- many distinct servers: pooled relaxation certified by column generation.
* :mod:`.int_model`, :mod:`.int_search` -- ``drfh-int``: whole tasks on machines,
  max-min by a search over f's discrete levels, then leximin.
* :mod:`.patterns_model`, :mod:`.patterns`, :mod:`.lns` -- the pattern
  search and the large-neighbourhood search that lift drfh-int's f.
* :mod:`.greedy`, :mod:`.heuristics` -- First-Fit, Best-Fit, slots, per-server DRF.
"""
