"""Benchmark harness: sweeps of instance families x sizes x seeds (or the user's own instance files) x methods x
backends into one tidy table.

* :mod:`fairpack.models.generators.families` -- the registry of seeded instance generators and their size parameters;
* :mod:`fairpack.solver.bench.sweep` -- the TOML/YAML sweep file, validated, expanded into tasks;
* :mod:`fairpack.solver.bench.files` -- a grid's ``instances`` entries (files, folders, globs) resolved and checked;
* :mod:`fairpack.solver.bench.api` -- ``fairpack.sweep``, the same sweeps from Python, returning the table;
* :mod:`fairpack.solver.bench.runner` -- one task in a child process (time and memory limits) -> one row; the
  local pool and the Dask scheduler;
* :mod:`fairpack.solver.bench.table` -- the Parquet/CSV table, resumability, gaps to the exact reference;
* :mod:`fairpack.solver.bench.report` -- the Markdown summary and PNG plots.

Nothing here is imported by ``solver.api`` or ``fairpack solve``; pandas, pyarrow, tqdm and dask are
needed only by this package (the ``bench`` extra).
"""
