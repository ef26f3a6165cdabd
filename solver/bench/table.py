"""The tidy result table: one row per (instance, method label, backend), in Parquet with a CSV copy.

Rows are keyed by ``key`` (``grid/family/size/seed=N/method/backend``, or ``grid/file/<path>[/seed=N]/method/
backend`` for instance files, see ``solver.bench.sweep``); a row
already in the file is never re-run, so a sweep resumes where it stopped. Delete rows (or the file) to
run them again.

Columns (``solver.bench.runner`` and ``solver.bench.metrics`` say how each is measured)
------------------------------------------------------------------------------------
* what: ``key``, ``instance_key``, ``reference_key``, ``sweep``, ``grid``, ``family``, ``kind``, ``params``
  (JSON), ``size_params``, ``seed``, ``instance``, ``size``/``size_label``, ``method`` (label),
  ``solver_method``, ``backend``, ``exact``, ``options`` (JSON), ``time_limit``, ``task_timeout``,
  ``memory_mb``; rows of a grid of instance files have family ``file``, ``instance`` the file's path
  relative to the sweep file's folder, ``params`` ``{"file": <that path>}``, the kind's size, and an
  empty ``seed`` unless the grid gives seeds (then handed to the methods as their ``seed`` option);
* outcome: ``status`` (the solver's ``optimal``/``feasible``/``infeasible``/``time_limit``/``error``, or
  the harness's ``task_timeout``/``task_memory``/``task_crashed``; never ``interrupted``: Ctrl-C stops the
  whole sweep, and the tasks it stopped are not recorded, so they run again when it resumes; a row read back
  with that status is run again too), ``verified`` (``Result.verified``:
  ``models.check`` accepted the solution), ``violations``, ``message``;
* numbers: ``objective`` (``Result.objective``, recomputed from the solution; ``objective_name`` and
  ``sense`` say which and whether it is maximised), ``bound`` and ``solver_gap`` (the method's own),
  ``generate_s``, ``build_s``, ``solve_s``, ``wall_s`` (the whole task), ``peak_rss_mb`` (the task
  process's peak resident memory, including about 100 MiB of interpreter and solver libraries),
  ``load_1m`` (the machine's one-minute load average when the task started);
* fairness: ``min_dominant_share``, ``util_<resource>``; hierarchies ``min_share_guarantee``,
  ``guarantee_violations``, and for simulated schedulers ``avg_min_share_guarantee``,
  ``avg_guarantee_violations``, ``starving_time``; DAG jobs ``avg_jct``, ``p95_jct``, ``makespan``,
  ``jain``, ``late``, ``jobs``; PSPLIB ``best_known``.

Derived on every save (not stored by tasks)
-------------------------------------------
The reference of a row is the grid's exact reference method on the same instance (its key is
``reference_key``): ``reference`` (its label), ``reference_status`` (keep an eye on it: a reference
that stopped at its time limit is no proven optimum), ``reference_verified``, ``reference_objective``,
and ``gap``, signed so that **a positive gap means worse than the reference**:

* maximised objectives (flat: min weighted dominant share): ``gap = (reference - objective) / reference``;
* the hierarchy objective, the guarantee shortfall (``max(0, 1 - min share/guarantee)``, minimised; static
  H-DRF's is 0): ``gap = objective - reference``, the difference itself;
* minimised objectives (DAG jobs: avg JCT, makespan or the mix): ``gap = (objective - reference) /
  reference``.

Equal values give 0 (and differences below ``GAP_NOISE``, the solvers' floating-point tolerance), an
infinite maximised reference against a finite objective gives 1, and the gap is empty when either side is
unverified, missing, or a relative gap's reference is 0. A negative gap is a heuristic doing better than
the reference: impossible against a proven optimum (``drfh`` for min weighted share, with divisible tasks,
so the whole-task heuristics' gaps include the integrality gap; ``hdrf`` for the guarantee shortfall;
``spacetime-cp`` without fair caps), possible against a reference stopped by its time limit.
``min_share_guarantee`` stays a column: ``hdrf`` does not maximise it, so a heuristic may score higher
there. ``reference_bound`` is the reference's proven
bound and ``bound_gap`` the same gap against it: never smaller than the gap to the true optimum, so it is
the honest figure where the reference stopped at its time limit (the online policies' gap to the
clairvoyant ``spacetime-cp``). ``best_known_gap = (objective - best_known) / best_known`` for PSPLIB.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: The objective whose gap is a difference, not a ratio (its optimum, static H-DRF's, is 0).
ABSOLUTE_OBJECTIVE = "guarantee shortfall"
#: Relative differences below this are rounding noise, reported as a gap of 0.
GAP_NOISE = 1e-9
#: Columns recomputed from the whole table on every save.
DERIVED = ("reference", "reference_status", "reference_verified", "reference_objective", "reference_bound", "gap",
           "bound_gap", "best_known_gap")
#: The order of the first columns; the others follow alphabetically, ``message`` last.
LEADING = ("key", "sweep", "grid", "family", "kind", "size_params", "seed", "instance", "size", "size_label",
           "method", "solver_method", "backend", "exact", "status", "verified", "objective", "objective_name",
           "sense", "bound", "solver_gap", "reference", "reference_status", "reference_verified",
           "reference_objective", "reference_bound", "gap", "bound_gap", "best_known", "best_known_gap",
           "generate_s", "build_s", "solve_s", "wall_s", "peak_rss_mb", "load_1m")  # fmt: skip


def csv_path(path: str | Path) -> Path:
    """The CSV copy written next to a Parquet table."""
    return Path(path).with_suffix(".csv")


def read_results(path: str | Path) -> pd.DataFrame:
    """The table at ``path`` (Parquet, or its CSV copy when ``path`` ends in ``.csv``)."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return pd.read_csv(path)
    return pd.read_parquet(path)


def _gaps(frame: pd.DataFrame, column: str = "reference_objective") -> np.ndarray:
    objective = pd.to_numeric(frame["objective"], errors="coerce").to_numpy(dtype=float)
    reference = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    usable = (frame["verified"].fillna(False).astype(bool) & frame["reference_verified"].fillna(False).astype(bool)
              ).to_numpy() & ~np.isnan(objective) & ~np.isnan(reference)  # fmt: skip
    maximise = (frame["sense"] == "max").to_numpy()
    # A hierarchy's guarantee shortfall is a fraction whose optimum is 0: its gap is the difference itself.
    absolute = (frame["objective_name"] == ABSOLUTE_OBJECTIVE).to_numpy() if "objective_name" in frame else False
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.where(maximise, (reference - objective) / reference, (objective - reference) / reference)
    gap = np.where(absolute, objective - reference, gap)
    gap = np.where(objective == reference, 0.0, gap)  # also both infinite
    gap = np.where(maximise & np.isinf(reference) & np.isfinite(objective), 1.0, gap)
    gap = np.where(~absolute & (reference == 0) & (objective != reference), np.nan, gap)
    gap = np.where(np.abs(gap) < GAP_NOISE, 0.0, gap)  # two backends' floating-point noise is no gap
    return np.where(usable, gap, np.nan)


def with_gaps(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the derived reference and gap columns recomputed, columns in the documented order."""
    frame = frame.drop(columns=[c for c in DERIVED if c in frame.columns])
    if frame.empty:
        return frame
    reference = frame.set_index("key").reindex(columns=["method", "status", "verified", "objective", "bound"])
    reference.columns = pd.Index(["reference", "reference_status", "reference_verified", "reference_objective",
                                  "reference_bound"])  # fmt: skip
    frame = frame.join(reference, on="reference_key")
    frame["gap"] = _gaps(frame)
    # Against the reference's proven bound: never below the true gap to the optimum (the reference's own
    # gap included), so it stays honest where the reference stopped at its time limit.
    frame["bound_gap"] = _gaps(frame, "reference_bound")
    if "best_known" in frame.columns:
        known = pd.to_numeric(frame["best_known"], errors="coerce")
        objective = pd.to_numeric(frame["objective"], errors="coerce")
        frame["best_known_gap"] = ((objective - known) / known).where(frame["verified"].fillna(False).astype(bool))
    leading = [c for c in LEADING if c in frame.columns]
    rest = sorted(c for c in frame.columns if c not in leading and c != "message")
    return frame[leading + rest + (["message"] if "message" in frame.columns else [])]


class ResultTable:
    """The rows of one results file, keyed by ``key``; :meth:`save` rewrites the Parquet file and its CSV copy."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.suffix.lower() != ".parquet":
            raise ValueError(f"the results table is a .parquet file (a .csv copy goes next to it), not {self.path}")
        self.rows: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            for row in read_results(self.path).drop(columns=list(DERIVED), errors="ignore").to_dict("records"):
                self.rows[str(row["key"])] = row

    def __contains__(self, key: object) -> bool:
        """Whether the task ``key`` is done: it has a row, and not an ``interrupted`` one."""
        row = self.rows.get(key) if isinstance(key, str) else None
        return row is not None and row.get("status") != "interrupted"

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows.values())

    def add(self, row: dict[str, Any]) -> None:
        self.rows[str(row["key"])] = row

    def frame(self) -> pd.DataFrame:
        """Every row, with the derived columns, ordered by grid, family, size, seed, method, backend and key
        (so a table saves to the same bytes whatever order its rows were run in)."""
        frame = with_gaps(pd.DataFrame(list(self.rows.values())))
        if frame.empty:
            return frame
        if "seed" in frame.columns and frame["seed"].isna().any():  # rows of instance files without seeds
            frame["seed"] = pd.to_numeric(frame["seed"]).astype("Int64")  # not floats: 0, not 0.0, in the CSV
        order = frame.assign(_size=pd.to_numeric(frame["size"], errors="coerce"))
        order = order.sort_values(
            ["grid", "family", "_size", "size_params", "seed", "method", "backend", "key"], kind="stable"
        )
        return frame.loc[order.index].reset_index(drop=True)

    def save(self) -> None:
        """Write the Parquet file and the CSV copy, each through a temporary file (never half-written)."""
        frame = self.frame()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for target, write in ((self.path, frame.to_parquet), (csv_path(self.path), frame.to_csv)):
            partial = target.with_name(target.name + ".partial")
            write(partial, index=False)
            os.replace(partial, target)
