"""CP-SAT as a backend name: the engine of the constraint-programming models (``spacetime-cp``).

CP-SAT models are built in their family folders with ``ortools.sat`` (interval variables and cumulative
constraints have no ``LinearProgram`` form), so this adapter only answers for the name ``cpsat`` in the
registry: availability, capabilities, and a clear refusal when asked to solve a linear program.
"""

from __future__ import annotations

from fairpack.models.types import FloatArray
from fairpack.solver.backends.base import Backend, BackendUnavailable, SolveOutcome
from fairpack.solver.lp import LinearProgram


class CpSatBackend(Backend):
    name = "cpsat"

    def solve(
        self,
        lp: LinearProgram,
        time_limit: float | None = None,
        warm_start: FloatArray | None = None,
        algorithm: str | None = None,
    ) -> SolveOutcome:
        raise BackendUnavailable("the cpsat backend runs CP-SAT models (spacetime-cp); LPs and MILPs need "
                                 "highs, ortools or cbc")  # fmt: skip
