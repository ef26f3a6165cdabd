"""OR-Tools linear solvers (GLOP, PDLP, SCIP) through the model_builder helper.

The low-level ``model_builder_helper`` takes the CSR matrix and bound vectors as numpy arrays in one
call, so no per-variable Python object is ever created (the high-level ``model_builder`` module would
also pull in pandas). Statuses come back through OR-Tools' ``MPSolverResponseStatus``, which loses
information; see ``_translate`` for how it is recovered.

OR-Tools bundles its own ``libhighs.so.1``, and so does highspy; with different HiGHS versions only the
first package imported into a process works. pyproject.toml pins highspy to the release OR-Tools
bundles, which fixes that at its source.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from fairpack.models.result import Status
from fairpack.models.types import FloatArray
from fairpack.solver import interrupt
from fairpack.solver.backends.base import Backend, BackendUnavailable, SolveOutcome
from fairpack.solver.lp import LinearProgram

ALGORITHMS = ("glop", "pdlp", "scip")
_LP_ONLY = ("glop", "pdlp")

# PDLP's default tolerances (1e-4 relative) leave objectives visibly off even on tiny LPs.
_PDLP_PARAMETERS = (
    "termination_criteria { simple_optimality_criteria { eps_optimal_relative: 1e-8 eps_optimal_absolute: 1e-8 } }"
)
_SCIP_PARAMETERS = "misc/catchctrlc = FALSE"
_INFINITE_BOUND = 1e20  # OR-Tools reports a missing MILP bound as +-1e20

# SCIP's stopping clock starts after ours, so a solve stopped by its time limit has elapsed >= limit;
# the factor only absorbs clock-resolution noise.
_TIME_LIMIT_SLACK = 0.99


def _build_model(lp: LinearProgram, objective: FloatArray | None = None) -> Any:
    from ortools.linear_solver.python import model_builder_helper as mbh

    model: Any = mbh.ModelBuilderHelper()  # its generated stubs mistype numpy arguments
    model.fill_model_from_sparse_data(
        np.ascontiguousarray(lp.col_lower, dtype=np.float64),
        np.ascontiguousarray(lp.col_upper, dtype=np.float64),
        np.ascontiguousarray(lp.objective if objective is None else objective, dtype=np.float64),
        np.ascontiguousarray(lp.row_lower, dtype=np.float64),
        np.ascontiguousarray(lp.row_upper, dtype=np.float64),
        lp.matrix.tocsr().astype(np.float64),
    )
    for j in np.flatnonzero(lp.integrality):
        model.set_var_integrality(int(j), True)
    model.set_maximize(lp.sense == "max")
    model.set_objective_offset(float(lp.offset))
    return model


def _run(model: Any, algorithm: str, time_limit: float | None, verbose: bool = False) -> tuple[Any, float]:
    """Solve ``model`` once; returns the solver helper (holding the response) and the wall time."""
    from ortools.linear_solver.python import model_builder_helper as mbh

    solver = mbh.ModelSolverHelper(algorithm)
    if not solver.solver_is_supported():
        raise BackendUnavailable(f"this OR-Tools build has no {algorithm!r} solver")
    solver.enable_output(verbose)
    if algorithm == "pdlp":
        solver.set_solver_specific_parameters(_PDLP_PARAMETERS)
    if algorithm == "scip":
        # SCIP catches SIGINT itself by default: it took Ctrl-C for itself, stopped that one solve and let the
        # caller go on, silently. fairpack stops it instead (solver.interrupt: interrupt_solve, below).
        solver.set_solver_specific_parameters(_SCIP_PARAMETERS)
    if time_limit is not None:
        solver.set_time_limit_in_seconds(max(float(time_limit), 0.0))
    started = time.perf_counter()
    with interrupt.stopping(solver.interrupt_solve):  # Ctrl-C stops the solve (solver.interrupt)
        solver.solve(model)
    return solver, time.perf_counter() - started


def _pdlp_termination(solver: Any) -> str:
    """PDLP's own termination reason, which MPSolver folds into NOT_SOLVED for most outcomes."""
    from ortools.pdlp import solve_log_pb2

    response = solver.response()
    if not response.solver_specific_info:
        return ""
    log = solve_log_pb2.SolveLog()
    log.ParseFromString(response.solver_specific_info)
    return str(solve_log_pb2.TerminationReason.Name(log.termination_reason))


class OrToolsBackend(Backend):
    """OR-Tools: GLOP (simplex, default for LPs), PDLP (first-order LP) or SCIP (default for MILPs).

    Notes
    -----
    OR-Tools reports a presolve verdict of "infeasible or unbounded" as INFEASIBLE (GLOP, SCIP) and
    PDLP's dual-infeasibility certificate as NOT_SOLVED. In those cases the adapter re-solves the
    same model with a zero objective, which cannot be unbounded: if that is feasible the original was
    unbounded. The re-check shares the caller's time limit.
    """

    name = "ortools"

    def solve(
        self,
        lp: LinearProgram,
        time_limit: float | None = None,
        warm_start: FloatArray | None = None,
        algorithm: str | None = None,
    ) -> SolveOutcome:
        """Solve ``lp`` with one of OR-Tools' linear solvers.

        Parameters
        ----------
        lp
            The model.
        time_limit
            Wall-clock seconds for the whole call, including any infeasible/unbounded re-check.
        warm_start
            A full primal vector passed to SCIP as a solution hint; ignored by the LP solvers.
        algorithm
            ``"glop"`` (default for LPs), ``"pdlp"`` (LPs only) or ``"scip"`` (default for MILPs).

        Returns
        -------
        SolveOutcome
            Status, primal point (also for a time limit when SCIP has an incumbent), the solver's
            objective (including ``lp.offset``), the MILP best bound (the objective for optimal LPs),
            row duals for optimal LPs solved by GLOP or PDLP, and the solve wall time.

        Raises
        ------
        ValueError
            For an unknown ``algorithm``.
        BackendUnavailable
            When an LP-only algorithm is asked to solve a MILP, or the solver is not compiled in.
        """
        chosen = (algorithm or self.algorithm or ("scip" if lp.is_mip else "glop")).lower()
        if chosen not in ALGORITHMS:
            raise ValueError(f"unknown OR-Tools algorithm {algorithm!r}; choose from {', '.join(ALGORITHMS)}")
        if lp.is_mip and chosen in _LP_ONLY:
            raise BackendUnavailable(f"OR-Tools {chosen} solves LPs only; use 'scip' for a MILP")
        if interrupt.requested():
            return SolveOutcome("time_limit", message="interrupted before the solve")
        deadline = None if time_limit is None else time.perf_counter() + time_limit

        model = _build_model(lp)
        if warm_start is not None and chosen == "scip":
            for j, value in enumerate(np.asarray(warm_start, dtype=np.float64)):
                model.add_hint(j, float(value))
        solver, elapsed = _run(model, chosen, time_limit, self.settings.verbose)
        status, message = self._translate(lp, chosen, solver, elapsed, time_limit, deadline)

        x: FloatArray | None = None
        if status in ("optimal", "feasible") or (status == "time_limit" and solver.has_solution()):
            x = np.array(solver.variable_values(), dtype=np.float64)
        objective = float(solver.objective_value()) if x is not None else None
        bound: float | None = None
        if lp.is_mip:
            raw = float(solver.best_objective_bound())
            if x is not None and math.isfinite(raw) and abs(raw) < _INFINITE_BOUND:
                bound = raw
        elif status == "optimal":
            bound = objective
        duals: FloatArray | None = None
        if status == "optimal" and chosen in _LP_ONLY:
            values = np.array(solver.dual_values(), dtype=np.float64)
            duals = values if values.shape == (lp.num_rows,) else None
        return SolveOutcome(status, x, objective, bound, duals, elapsed, message)

    def _translate(
        self,
        lp: LinearProgram,
        algorithm: str,
        solver: Any,
        elapsed: float,
        time_limit: float | None,
        deadline: float | None,
    ) -> tuple[Status, str]:
        from ortools.linear_solver.python import model_builder_helper as mbh

        codes = mbh.SolveStatus
        code = solver.status()
        detail = str(solver.status_string())
        name = getattr(code, "name", str(code))
        message = f"{algorithm}: {name}" + (f" ({detail})" if detail else "")
        # Stopped by Ctrl-C (solver.interrupt) counts as stopped by the limit: the best answer so far.
        out_of_time = (time_limit is not None and elapsed >= _TIME_LIMIT_SLACK * time_limit) or interrupt.requested()

        if code == codes.OPTIMAL:
            return "optimal", message
        if code == codes.FEASIBLE:
            # MPSolver has no time-limit status: SCIP/GLOP stopped early with an incumbent say FEASIBLE.
            return ("time_limit" if out_of_time else "feasible"), message
        if code == codes.UNBOUNDED:
            return "unbounded", message
        if code == codes.INFEASIBLE:
            # GLOP's presolve and SCIP's INFORUNBD both surface as INFEASIBLE; PDLP's needs a certificate.
            ambiguous = algorithm == "glop" or "unbounded" in detail.lower()
            if not ambiguous:
                return "infeasible", message
            verdict = self._feasible(lp, algorithm, deadline)
            if verdict is None:
                return "infeasible", message + "; infeasible or unbounded, re-check inconclusive"
            if verdict:
                return "unbounded", message + "; zero-objective re-check is feasible"
            return "infeasible", message
        if code == codes.NOT_SOLVED and algorithm == "pdlp":
            reason = _pdlp_termination(solver)
            message += f"; PDLP {reason}" if reason else ""
            if reason == "TERMINATION_REASON_DUAL_INFEASIBLE":
                verdict = self._feasible(lp, algorithm, deadline)
                # A dual-infeasibility certificate is a primal improving ray, so unbounded unless infeasible.
                return ("infeasible", message) if verdict is False else ("unbounded", message)
            if reason == "TERMINATION_REASON_PRIMAL_INFEASIBLE":
                return "infeasible", message
            if reason in (
                "TERMINATION_REASON_TIME_LIMIT",
                "TERMINATION_REASON_ITERATION_LIMIT",
                "TERMINATION_REASON_KKT_MATRIX_PASS_LIMIT",
                "TERMINATION_REASON_INTERRUPTED_BY_USER",
            ):
                return "time_limit", message
            return "error", message
        if code == codes.CANCELLED_BY_USER or (code == codes.NOT_SOLVED and out_of_time):
            return "time_limit", message
        return "error", message

    @staticmethod
    def _feasible(lp: LinearProgram, algorithm: str, deadline: float | None) -> bool | None:
        """Whether ``lp``'s constraints are satisfiable (None when the re-check cannot tell in time)."""
        from ortools.linear_solver.python import model_builder_helper as mbh

        remaining = None if deadline is None else deadline - time.perf_counter()
        if (remaining is not None and remaining <= 0) or interrupt.requested():
            return None
        model = _build_model(lp, objective=np.zeros(lp.num_columns))
        solver, _ = _run(model, algorithm, remaining)
        code = solver.status()
        if code in (mbh.SolveStatus.OPTIMAL, mbh.SolveStatus.FEASIBLE):
            return True
        if code == mbh.SolveStatus.INFEASIBLE:
            return False
        if algorithm == "pdlp" and _pdlp_termination(solver) == "TERMINATION_REASON_PRIMAL_INFEASIBLE":
            return False
        return None
