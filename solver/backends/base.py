"""What every backend adapter provides: translate a ``LinearProgram`` in, statuses and arrays out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.result import Status
from solver.lp import LinearProgram

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do; drivers consult these instead of catching failures."""

    lp: bool = True
    milp: bool = True
    duals: bool = True  # row duals of an LP, used to freeze tenants in progressive filling
    incremental: bool = False  # add columns / change bounds and re-solve from the last basis
    warm_start: bool = False  # accepts a starting primal solution for a MILP


@dataclass
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

    @property
    def has_solution(self) -> bool:
        return self.x is not None


class BackendUnavailable(RuntimeError):
    """The solver library behind a backend is not installed or cannot run this model."""


class Backend(ABC):
    """Adapter base class. Subclasses import their solver library lazily, inside methods."""

    name: str = ""
    capabilities: Capabilities = Capabilities()

    @classmethod
    @abstractmethod
    def available(cls) -> bool:
        """Whether the solver library can be imported here."""

    @abstractmethod
    def solve(
        self,
        lp: LinearProgram,
        time_limit: float | None = None,
        warm_start: FloatArray | None = None,
        algorithm: str | None = None,
    ) -> SolveOutcome:
        """Solve ``lp``; ``algorithm`` picks a variant where the backend has several (e.g. 'pdlp')."""
