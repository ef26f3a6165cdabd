"""What every backend adapter provides: translate a ``LinearProgram`` in, statuses and arrays out.

Incremental solves go through one :class:`Session` protocol, obtained from :meth:`Backend.session`: add
columns, change column and row bounds or a coefficient, give a start, solve again. HiGHS keeps its basis
between solves; the other LP backends get :class:`RebuildSession`, which applies the same changes to a
copy of the model and solves it from scratch, so drivers are written once for every backend.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

import numpy as np

from fairpack.models.result import Status
from fairpack.models.types import FloatArray
from fairpack.solver import interrupt
from fairpack.solver.backends.capabilities import backend_capabilities
from fairpack.solver.backends.settings import SolverSettings

if TYPE_CHECKING:  # scipy.sparse takes 0.2-0.4 s to import: it comes in with the first LP a method builds
    import scipy.sparse as sp

    from fairpack.solver.lp import LinearProgram


@dataclass(frozen=True)
class SolveOutcome:
    """A solver's answer in solver-neutral terms.

    ``x`` is the best primal point found (also for time limits when the solver has an incumbent);
    ``objective`` and ``bound`` are the solver's own numbers, to be reported beside recomputed ones;
    ``row_duals`` are only magnitudes-to-trust: their sign convention differs between solvers.
    """

    status: Status
    x: FloatArray | None = None
    objective: float | None = None
    bound: float | None = None
    row_duals: FloatArray | None = None
    solve_s: float = 0.0
    message: str = ""


class BackendUnavailable(RuntimeError):
    """The solver library behind a backend is not installed or cannot run this model."""


class Session(Protocol):
    """A live model that can be changed and re-solved (column generation, filling rounds, level searches)."""

    num_columns: int

    def add_columns(self, cost: FloatArray, lower: FloatArray, upper: FloatArray, matrix: sp.csc_matrix) -> None:
        """Append columns given as a CSC matrix over the existing rows."""

    def set_column_bounds(self, indices: np.ndarray, lower: FloatArray, upper: FloatArray) -> None: ...

    def set_row_bounds(self, indices: np.ndarray, lower: FloatArray, upper: FloatArray) -> None: ...

    def set_coefficient(self, row: int, column: int, value: float) -> None: ...

    def set_start(self, x: FloatArray) -> None:
        """A primal start for the next MILP solve."""

    def prefer_primal(self) -> None:
        """Re-solve with the primal simplex from now on, where the backend can choose (HiGHS keeps its basis)."""

    def use_algorithm(self, algorithm: str | None) -> None:
        """Solve with ``algorithm`` from the next solve on (None: the backend's default for the model)."""

    def solve(self) -> SolveOutcome: ...


class Backend(ABC):
    """Adapter base class. Subclasses import their solver library lazily, inside methods."""

    name: str = ""

    def __init__(self, algorithm: str | None = None, settings: SolverSettings | None = None) -> None:
        #: The algorithm every solve uses unless told otherwise (None: the backend's default per model class).
        self.algorithm = algorithm
        #: Threads, seed and log of every solve (backends without threads or seeds are refused them up front).
        self.settings = settings or SolverSettings()

    def capabilities(self, algorithm: str | None = None) -> frozenset[str]:
        """What this backend offers with ``algorithm`` (see ``solver.backends.CAPABILITIES``)."""
        return backend_capabilities(self.name, algorithm or self.algorithm)

    @abstractmethod
    def solve(
        self,
        lp: LinearProgram,
        time_limit: float | None = None,
        warm_start: FloatArray | None = None,
        algorithm: str | None = None,
    ) -> SolveOutcome:
        """Solve ``lp``; ``algorithm`` picks a variant where the backend has several (e.g. 'pdlp')."""

    def session(self, lp: LinearProgram, time_limit: float | None = None, algorithm: str | None = None, *,
                deadline: float | None = None, presolve: bool = True) -> Session:  # fmt: skip
        """A session on ``lp``.

        ``time_limit`` bounds all its solves together, counted from the first solve (so that moving the model
        into the solver does not eat a tiny limit); ``deadline`` (a ``time.perf_counter()`` value) is an
        absolute end instead. ``presolve=False`` skips the solver's presolve (it does not watch the clock,
        and re-solves from a basis gain little from it).
        """
        return RebuildSession(self, lp, time_limit, algorithm or self.algorithm, deadline)


class RebuildSession:
    """The :class:`Session` protocol for backends without incremental solves: every solve starts afresh."""

    def __init__(self, backend: Backend, lp: LinearProgram, time_limit: float | None, algorithm: str | None,
                 deadline: float | None = None) -> None:  # fmt: skip
        self.backend = backend
        self.algorithm = algorithm
        self.lp = lp
        self.num_columns = lp.num_columns
        self._time_limit = time_limit
        self._deadline: float | None = deadline
        self._start: FloatArray | None = None
        self._matrix = lp.matrix.tolil(copy=True)
        self._matrix_changed = False

    def add_columns(self, cost: FloatArray, lower: FloatArray, upper: FloatArray, matrix: sp.csc_matrix) -> None:
        import scipy.sparse as sp

        lp = self._current()
        added = sp.csc_matrix(matrix)
        self._matrix = sp.hstack([lp.matrix, added], format="lil")
        self.lp = replace(
            lp,
            matrix=self._matrix.tocsr(),
            objective=np.concatenate([lp.objective, cost]),
            col_lower=np.concatenate([lp.col_lower, lower]),
            col_upper=np.concatenate([lp.col_upper, upper]),
            integrality=np.concatenate([lp.integrality, np.zeros(added.shape[1], dtype=bool)]),
        )
        self._matrix_changed = False
        self.num_columns = self.lp.num_columns

    def set_column_bounds(self, indices: np.ndarray, lower: FloatArray, upper: FloatArray) -> None:
        col_lower, col_upper = self.lp.col_lower.copy(), self.lp.col_upper.copy()
        col_lower[indices], col_upper[indices] = lower, upper
        self.lp = replace(self.lp, col_lower=col_lower, col_upper=col_upper)

    def set_row_bounds(self, indices: np.ndarray, lower: FloatArray, upper: FloatArray) -> None:
        row_lower, row_upper = self.lp.row_lower.copy(), self.lp.row_upper.copy()
        row_lower[indices], row_upper[indices] = lower, upper
        self.lp = replace(self.lp, row_lower=row_lower, row_upper=row_upper)

    def set_coefficient(self, row: int, column: int, value: float) -> None:
        self._matrix[row, column] = value
        self._matrix_changed = True

    def set_start(self, x: FloatArray) -> None:
        self._start = np.asarray(x, dtype=np.float64)

    def prefer_primal(self) -> None:
        """Every solve starts afresh here, so there is no re-solve to steer."""

    def use_algorithm(self, algorithm: str | None) -> None:
        self.algorithm = algorithm or self.backend.algorithm

    def _current(self) -> LinearProgram:
        if self._matrix_changed:
            self.lp = replace(self.lp, matrix=self._matrix.tocsr())
            self._matrix_changed = False
        return self.lp

    def solve(self) -> SolveOutcome:
        if interrupt.requested():
            return SolveOutcome("time_limit", message="interrupted before the solve")
        if self._time_limit is not None and self._deadline is None:
            self._deadline = time.perf_counter() + self._time_limit
        remaining = None
        if self._deadline is not None:
            remaining = self._deadline - time.perf_counter()
            if remaining <= 0:
                return SolveOutcome("time_limit", message="time limit reached before the solve")
        start, self._start = self._start, None
        return self.backend.solve(self._current(), time_limit=remaining, warm_start=start, algorithm=self.algorithm)
