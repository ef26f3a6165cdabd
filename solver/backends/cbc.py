"""CBC through PuLP's command-line driver.

PuLP writes an MPS file, runs the ``cbc`` executable and parses its solution file, so a model is
rebuilt from PuLP objects (one per variable and row). That is fine for the small models this backend
exists to cross-check; large formulations should use HiGHS. PuLP's temporary files go to a private
temporary directory that is removed after every solve, never to the working directory.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import tempfile
import time
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from fairpack.models.result import Status
from fairpack.models.types import FloatArray
from fairpack.solver import interrupt
from fairpack.solver.backends.base import Backend, BackendUnavailable, SolveOutcome
from fairpack.solver.lp import LinearProgram

# A caller's deadline may already have passed; CBC is never handed a negative "-sec".
_MIN_TIME_LIMIT = 1e-3
# CBC's clock starts after ours, so a solve stopped by its time limit has elapsed >= limit.
_TIME_LIMIT_SLACK = 0.99


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence PuLP 3.x's PuLP-4.0 migration warnings; the APIs used here exist in every PuLP >= 2.7."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def _command(time_limit: float | None, mip: bool, warm: bool, verbose: bool = False) -> Any:
    """A CBC command: a ``cbc`` on PATH (PuLP 4 style) when present, else the binary bundled with PuLP."""
    import pulp

    options: dict[str, Any] = {"msg": verbose, "mip": mip, "warmStart": warm, "keepFiles": False}
    if time_limit is not None:
        options["timeLimit"] = max(float(time_limit), _MIN_TIME_LIMIT)
    command = pulp.COIN_CMD(**options)
    if command.available():
        return command
    bundled = getattr(pulp, "PULP_CBC_CMD", None)
    if bundled is not None:
        command = bundled(**options)
        if command.available():
            return command
    raise BackendUnavailable("no CBC executable: neither `cbc` on PATH nor PuLP's bundled binary")


class _PassOn:
    """Ctrl-C for the ``cbc`` process PuLP runs (it keeps no handle on it): SIGINT, once, to every child of this
    process running ``path``; CBC then stops and writes its incumbent, which PuLP reads as usual. (From a terminal
    CBC gets the signal itself, being in the same process group; this is for a signal sent to Python alone.) The
    children are found in ``/proc``; where there is none, CBC runs on to its limit."""

    def __init__(self, path: str) -> None:
        self.path = os.path.realpath(path)
        self.signalled: set[int] = set()

    def __call__(self) -> None:
        me = str(os.getpid())
        try:
            pids = [name for name in os.listdir("/proc") if name.isdigit()]
        except OSError:
            return
        for pid in pids:
            if int(pid) in self.signalled:
                continue
            try:
                with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
                    parent = handle.read().rsplit(")", 1)[1].split()[1]
                if parent != me or os.path.realpath(f"/proc/{pid}/exe") != self.path:
                    continue
                os.kill(int(pid), signal.SIGINT)
                self.signalled.add(int(pid))
            except (OSError, IndexError):
                continue


def _bound(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


class _PulpModel:
    """``lp`` rebuilt from PuLP objects, remembering which PuLP rows came from which of our rows."""

    def __init__(self, lp: LinearProgram) -> None:
        import pulp

        self.problem = pulp.LpProblem("fairpack", pulp.LpMaximize if lp.sense == "max" else pulp.LpMinimize)
        make_variable = getattr(self.problem, "add_variable", None) or pulp.LpVariable
        self.variables = [
            make_variable(
                f"x{j}",
                _bound(lp.col_lower[j]),
                _bound(lp.col_upper[j]),
                pulp.LpInteger if lp.integrality[j] else pulp.LpContinuous,
            )
            for j in range(lp.num_columns)
        ]
        # Every column enters the objective, even with a zero cost: PuLP only writes columns that
        # appear somewhere, and a column missing from the MPS file would come back without a value.
        self.problem.setObjective(
            pulp.LpAffineExpression(list(zip(self.variables, lp.objective.tolist(), strict=True)), constant=lp.offset)
        )
        csr = lp.matrix.tocsr()
        # A ranged row becomes two PuLP rows; its dual is the sum of theirs (at most one is non-zero).
        self.row_parts: list[list[Any]] = []
        for i in range(lp.num_rows):
            span = slice(csr.indptr[i], csr.indptr[i + 1])
            terms = [
                (self.variables[j], v) for j, v in zip(csr.indices[span].tolist(), csr.data[span].tolist(), strict=True)
            ]
            low, up = float(lp.row_lower[i]), float(lp.row_upper[i])
            bounds: list[tuple[int, float, str]] = []
            if low == up:
                bounds.append((pulp.LpConstraintEQ, low, f"r{i}"))
            else:
                if math.isfinite(low):
                    bounds.append((pulp.LpConstraintGE, low, f"r{i}_lo"))
                if math.isfinite(up):
                    bounds.append((pulp.LpConstraintLE, up, f"r{i}_up"))
            parts = []
            for sense, rhs, name in bounds:
                constraint = pulp.LpConstraint(pulp.LpAffineExpression(terms), sense, name=name, rhs=rhs)
                self.problem.addConstraint(constraint)
                parts.append(constraint)
            self.row_parts.append(parts)

    def primal(self) -> FloatArray | None:
        values = [v.varValue for v in self.variables]
        if any(value is None for value in values):
            return None
        return np.array(values, dtype=np.float64)

    def duals(self) -> FloatArray | None:
        duals = np.zeros(len(self.row_parts))
        for i, parts in enumerate(self.row_parts):
            for constraint in parts:
                if constraint.pi is None:
                    return None
                duals[i] += constraint.pi
        return duals


class CbcBackend(Backend):
    """COIN-OR CBC (LP and MILP) through PuLP's ``PULP_CBC_CMD`` / ``COIN_CMD``.

    Notes
    -----
    PuLP writes coefficients and bounds into its MPS file with 13 significant digits, so CBC solves a
    model rounded at about 1e-13 relative. The MILP best bound is not exposed by PuLP: ``bound`` is
    the objective when CBC proves optimality and ``None`` otherwise.
    """

    name = "cbc"

    def solve(
        self,
        lp: LinearProgram,
        time_limit: float | None = None,
        warm_start: FloatArray | None = None,
        algorithm: str | None = None,
    ) -> SolveOutcome:
        """Solve ``lp`` with CBC.

        Parameters
        ----------
        lp
            The model.
        time_limit
            Seconds handed to CBC's ``-sec``.
        warm_start
            A full primal vector passed to CBC as a MIP start; ignored for LPs.
        algorithm
            Unused (CBC has one algorithm here); anything other than ``None`` or ``"cbc"`` is an error.

        Returns
        -------
        SolveOutcome
            Status, primal point (also for a time limit when CBC has an incumbent), PuLP's objective
            (including ``lp.offset``), the bound when optimal, row duals for optimal LPs, solve time.
        """
        import pulp

        if (algorithm or self.algorithm) not in (None, "cbc"):
            raise ValueError(f"the cbc backend has no algorithm {algorithm!r}")
        crossed = np.flatnonzero(lp.col_lower > lp.col_upper)
        if crossed.size:
            # PuLP omits a zero lower bound from its MPS file and CBC then reads a negative upper bound
            # as "lower = -inf", turning bounds like [0, -1] into a feasible (even unbounded) column.
            return SolveOutcome("infeasible", message=f"cbc: column {int(crossed[0])} has lower bound > upper bound")
        if interrupt.requested():
            return SolveOutcome("time_limit", message="interrupted before the solve")
        with _quiet():
            model = _PulpModel(lp)
            warm = warm_start is not None and lp.is_mip
            if warm and warm_start is not None:
                for variable, value in zip(model.variables, np.asarray(warm_start, dtype=np.float64), strict=True):
                    variable.setInitialValue(float(value), check=False)
            command = _command(time_limit, mip=lp.is_mip, warm=warm, verbose=self.settings.verbose)
            with tempfile.TemporaryDirectory(prefix="fairpack-cbc-") as scratch:
                command.tmpDir = scratch  # PuLP falls back to the working directory when TMPDIR is unusable
                started = time.perf_counter()
                try:
                    with interrupt.stopping(_PassOn(command.path)):
                        model.problem.solve(command)
                except pulp.PulpSolverError as exc:
                    return SolveOutcome("error", solve_s=time.perf_counter() - started, message=str(exc))
                elapsed = time.perf_counter() - started

        status, message = self._translate(model.problem, elapsed, time_limit, interrupt.requested())
        # An LP stopped by the clock leaves CBC mid-simplex: its point is no incumbent and violates rows.
        keep = status == "optimal" or (lp.is_mip and status in ("feasible", "time_limit"))
        x = model.primal() if keep else None
        if x is None and status == "time_limit":
            message += "; no incumbent"
        objective = float(model.problem.objective.value()) if x is not None else None
        bound = objective if status == "optimal" else None
        duals = model.duals() if status == "optimal" and not lp.is_mip else None
        return SolveOutcome(status, x, objective, bound, duals, elapsed, message)

    @staticmethod
    def _translate(problem: Any, elapsed: float, time_limit: float | None,
                   interrupted: bool = False) -> tuple[Status, str]:  # fmt: skip
        import pulp

        code, solution = problem.status, problem.sol_status
        message = f"cbc: {pulp.LpStatus.get(code, code)} / {pulp.LpSolution.get(solution, solution)}"
        # Stopped by Ctrl-C counts as stopped by the limit: the incumbent is the best answer so far.
        out_of_time = (time_limit is not None and elapsed >= _TIME_LIMIT_SLACK * time_limit) or interrupted
        # PuLP reads CBC's "Stopped on time - objective value ..." as status Optimal with solution
        # status IntegerFeasible, so the solution status has to be checked first.
        if solution == pulp.LpSolutionIntegerFeasible:
            return ("time_limit" if out_of_time else "feasible"), message
        if code == pulp.LpStatusOptimal:
            return "optimal", message
        if code == pulp.LpStatusInfeasible:
            return "infeasible", message
        if code == pulp.LpStatusUnbounded:
            return "unbounded", message
        if code == pulp.LpStatusNotSolved and out_of_time:
            return "time_limit", message
        return "error", message
