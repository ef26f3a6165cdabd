"""``fairpack.sweep``: a benchmark sweep from Python, the same tasks and table as ``fairpack bench run``.

A sweep file, a mapping in the sweep file's form, or simply instances (files, folders, globs or
``Instance`` objects) with the methods to run on them::

    import fairpack

    table = fairpack.sweep(["cases/"], methods=["drfh", "best-fit"], reference="drfh")
    table = fairpack.sweep("benchmarks/sweeps/smoke.toml", out="smoke.parquet", processes=2)

Every task runs in its own process under its time and memory limits (``solver.bench.runner``), and the
answer is the tidy result table with the reference and gap columns (``solver.bench.table``).
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairpack.models.types import Instance
from fairpack.solver.bench.sweep import Sweep, load_sweep, parse_sweep
from fairpack.solver.registry import OptionError

if TYPE_CHECKING:
    import pandas as pd

#: Where errors in a sweep given as a mapping or as instances say they come from.
SOURCE = "fairpack.sweep"

PathLike = str | os.PathLike[str]
Spec = PathLike | Mapping[str, Any] | Instance | Sequence[PathLike | Instance]


def sweep(
    spec: Spec,
    out: PathLike | None = None,
    *,
    methods: Sequence[str | Mapping[str, Any]] | None = None,
    reference: str | Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
    backends: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    time_limit: float | None = None,
    task_timeout: float | None = None,
    memory_mb: float | None = None,
    name: str | None = None,
    data_dir: PathLike | None = None,
    processes: int = 1,
    scheduler: str | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Run a benchmark sweep and return its tidy result table.

    The tasks are those of ``fairpack bench run`` (the same runner: every task in its own process under
    its time and memory limits), so ``fairpack bench run FILE --out X`` and ``sweep(FILE, out=Y)`` give
    the same rows.

    Parameters
    ----------
    spec
        What to run:

        * a sweep file (``.toml``, ``.yaml``/``.yml``; see ``fairpack.solver.bench.sweep`` or
          ``docs/sweeps.md``), its ``instances`` paths relative to its folder;
        * a mapping in the sweep file's form (``{"grid": [{"name": ..., "instances": [...],
          "methods": [...]}]}``), paths relative to the working folder; its ``instances`` lists may
          hold ``Instance`` objects too;
        * instances, with ``methods``: a list of instance files, folders and globs (relative to the
          working folder) and ``Instance`` objects, or one of them. They make one grid named ``name``;
          each method runs on the instances of its kind (flat, hierarchy or DAG jobs). A file's rows are
          named by its path relative to the working folder, an ``Instance`` object's by its name.
    out
        The results table (``.parquet``; a ``.csv`` copy goes next to it). Rows already there are kept and
        their tasks skipped, so an interrupted sweep resumes. ``None``: a temporary table, deleted after.
    methods
        The methods (names, ``online:<policy>``, or tables ``{"method": ..., "label": ..., <option>: ...}``)
        of a sweep given as instances; needed then, refused otherwise (as are the keywords down to
        ``memory_mb``: a sweep file or mapping says these itself).
    reference
        The exact method (label) gaps are measured against, or one per kind; default: the first exact
        method of each kind.
    seeds
        Seeds handed to the methods as their ``seed`` option, one row per seed; default: none (one row per
        instance, method and backend, with the methods' default seeds).
    backends
        LP/MILP backends for the methods that take one (default: ``highs``).
    options
        ``SolveOptions`` fields shared by the methods (each gets those it honours).
    time_limit, task_timeout, memory_mb
        Per-task limits: seconds handed to the solver (default 60), seconds before the task's process is
        killed (default ``2 * time_limit + 60``), resident MiB above which it is killed (default 4096).
    name
        The name of a sweep given as instances and of its one grid (the first part of every row key);
        default ``sweep``.
    data_dir
        The shared data folder for the families that need one (default: ``$FAIRPACK_DATA_DIR``); grids
        needing absent data are skipped with a warning.
    processes
        Task processes at a time.
    scheduler
        A Dask scheduler address (``tcp://host:8786``): run the tasks on that cluster instead (its workers
        need fairpack, and instance files and the data folder at the same paths).
    progress
        Show a progress bar on stderr.

    Returns
    -------
    pandas.DataFrame
        The sweep's rows of the table, one per (instance, method label, backend), with the derived
        ``reference``/``gap`` columns (``fairpack.solver.bench.table``); rows of other sweeps in ``out``
        are left out.

    Raises
    ------
    SweepError
        A bad sweep, naming the field at fault (``grid[0].instances[1]: no file matches 'cases/*.yaml'``),
        before any task runs.
    TypeError
        ``methods`` missing for instances, or instance keywords given with a sweep file or mapping.
    OptionError
        ``processes`` below 1, or ``data_dir`` not a folder.

    Examples
    --------
    >>> table = fairpack.sweep(["cases/"], methods=["drfh", "best-fit"], reference="drfh")  # doctest: +SKIP
    >>> table.groupby("method")["gap"].mean()  # doctest: +SKIP
    """
    from fairpack.solver.bench.runner import run_sweep
    from fairpack.solver.bench.table import ResultTable

    grid_keys = {"methods": methods, "reference": reference, "seeds": seeds, "backends": backends,
                 "options": options, "time_limit": time_limit, "task_timeout": task_timeout,
                 "memory_mb": memory_mb}  # fmt: skip
    given = {key: value for key, value in grid_keys.items() if value is not None}
    parsed = _parse(spec, given, name)
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise OptionError(f"must be a whole number, at least 1, got {processes!r}", "processes")
    given_dir = data_dir if data_dir is not None else os.environ.get("FAIRPACK_DATA_DIR") or None
    folder = Path(given_dir) if given_dir is not None else None
    if folder is not None and not folder.is_dir():
        raise OptionError(f"{folder}: no such folder", "data_dir")
    tasks, skipped = parsed.tasks(folder)
    for message in skipped:
        warnings.warn(message, stacklevel=2)
    with tempfile.TemporaryDirectory(prefix="fairpack-sweep-") as scratch:
        table = Path(out) if out is not None else Path(scratch) / "results.parquet"
        run_sweep(parsed, table, processes, scheduler, folder, progress=progress)
        frame = ResultTable(table).frame()
    if frame.empty:
        return frame
    keys = {task.key for task in tasks}
    return frame[frame["key"].isin(keys)].reset_index(drop=True)


def _parse(spec: Spec, given: dict[str, Any], name: str | None) -> Sweep:
    """The validated sweep of ``spec``; ``given`` holds the grid keywords passed (not None)."""
    if isinstance(spec, Mapping):
        _refuse(given, name, "a sweep given as a mapping")
        return parse_sweep(dict(spec), SOURCE, base=Path.cwd())
    if isinstance(spec, str | os.PathLike) and "methods" not in given:
        _refuse(given, name, "a sweep file")
        return load_sweep(Path(spec))
    if "methods" not in given:
        raise TypeError("sweep() of instances needs methods=[...], the methods to run on them")
    entries = [spec] if isinstance(spec, str | os.PathLike | Instance) else list(spec)
    name = name if name is not None else "sweep"
    grid = {"name": name, "instances": entries, **{key: _plain(value) for key, value in given.items()}}
    return parse_sweep({"name": name, "grid": [grid]}, SOURCE, base=Path.cwd())


def _refuse(given: dict[str, Any], name: str | None, what: str) -> None:
    keywords = sorted([*given, *(["name"] if name is not None else [])])
    if keywords:
        raise TypeError(f"{', '.join(keywords)}: only for a sweep given as instances; {what} sets its own")


def _plain(value: Any) -> Any:
    """Sequences as lists and mappings as dicts, as the sweep reader expects them from TOML or YAML."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_plain(item) for item in value]
    return value
