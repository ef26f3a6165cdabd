"""HiGHS through highspy: the default backend, and the only one with incremental re-solves."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from fairpack.models.result import Status
from fairpack.models.types import FloatArray
from fairpack.solver import interrupt, progress
from fairpack.solver.backends.base import Backend, SolveOutcome
from fairpack.solver.backends.capabilities import ALGORITHMS
from fairpack.solver.backends.settings import SolverSettings

if TYPE_CHECKING:  # scipy.sparse (0.2-0.4 s to import) comes in with the first LP a method builds
    import scipy.sparse as sp

    from fairpack.solver.lp import LinearProgram

_INF = 1e30  # HiGHS treats |value| >= 1e20 as infinite; numpy inf must be translated


def _clip(values: np.ndarray) -> np.ndarray:
    return np.clip(np.asarray(values, dtype=np.float64), -_INF, _INF)


def _status(model_status: Any, has_solution: bool) -> Status:
    """HiGHS's model status in fairpack's terms, through one table."""
    import highspy

    status = highspy.HighsModelStatus
    table: dict[Any, Status] = {
        status.kOptimal: "optimal",
        status.kInfeasible: "infeasible",
        status.kUnbounded: "unbounded",
        status.kUnboundedOrInfeasible: "infeasible",
        status.kTimeLimit: "time_limit",
        status.kIterationLimit: "time_limit",
        status.kSolutionLimit: "time_limit",
        status.kInterrupt: "time_limit",  # stopped by Ctrl-C (solver.interrupt): like a limit, the best so far
    }
    return table.get(model_status, "feasible" if has_solution else "error")


#: Threads HiGHS's task scheduler was last started with by fairpack (None: not by fairpack).
_scheduler_threads: int | None = None


def _use_threads(threads: int) -> None:
    """Restart HiGHS's process-wide task scheduler when another thread count is asked for.

    The scheduler starts once per process; a later ``threads`` option that differs from it makes ``run()``
    fail (model status "Not Set"). fairpack solves one model at a time, so restarting it between solves is
    safe.
    """
    global _scheduler_threads
    if _scheduler_threads != threads:
        import highspy

        highspy.Highs.resetGlobalScheduler(True)
        _scheduler_threads = threads


#: Seconds past the deadline after which the interrupt callbacks stop a solve HiGHS's own limit did not stop.
OVERRUN_S = 0.25


class HighsSession:
    """A live HiGHS model that keeps its basis between solves (column generation, filling rounds)."""

    def __init__(self, lp: LinearProgram, time_limit: float | None = None, algorithm: str | None = None,
                 deadline: float | None = None, presolve: bool = True,
                 settings: SolverSettings | None = None) -> None:  # fmt: skip
        import highspy

        self._highs = highspy.Highs()
        self._time_limit = time_limit
        self._deadline: float | None = deadline
        self._overrun = False  # the watch below stopped a solve HiGHS's own time limit had not stopped
        # When the watch stops a solve, on the monotonic clock: the callbacks run thousands of times a solve, and
        # the deadline's clock (perf_counter) is the one time limits are measured and tested by.
        self._watch_until: float | None = None
        settings = settings or SolverSettings()
        self._apply(settings, lp.is_mip)
        if algorithm is not None:
            if algorithm not in ALGORITHMS["highs"]:
                raise ValueError(f"HiGHS has no algorithm {algorithm!r}; choose from {', '.join(ALGORITHMS['highs'])}")
            self._highs.setOptionValue("solver", algorithm)
        self.sense = lp.sense
        # HiGHS 1.12's PDLP postsolve mislabels an optimal maximisation LP as "Unknown" (dual
        # infeasibilities after presolve); the same LP posed as a minimisation comes back optimal. So a
        # maximisation on PDLP is passed in negated and its objective and bound are negated back.
        self._flip = -1.0 if algorithm == "pdlp" and lp.sense == "max" else 1.0
        model = highspy.HighsLp()
        csr = lp.matrix.tocsr()
        model.num_col_ = lp.num_columns
        model.num_row_ = lp.num_rows
        model.col_cost_ = self._flip * lp.objective
        model.col_lower_ = _clip(lp.col_lower)
        model.col_upper_ = _clip(lp.col_upper)
        model.row_lower_ = _clip(lp.row_lower)
        model.row_upper_ = _clip(lp.row_upper)
        model.offset_ = self._flip * lp.offset
        maximise = lp.sense == "max" and self._flip > 0
        model.sense_ = highspy.ObjSense.kMaximize if maximise else highspy.ObjSense.kMinimize
        model.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        model.a_matrix_.start_ = csr.indptr.astype(np.int32)
        model.a_matrix_.index_ = csr.indices.astype(np.int32)
        model.a_matrix_.value_ = csr.data
        if lp.is_mip:
            model.integrality_ = [
                highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous for flag in lp.integrality
            ]
        self._highs.passModel(model)
        if lp.is_mip:
            # HiGHS stops at a 1e-4 relative gap by default; leximin steps need the true optimum.
            self._highs.setOptionValue("mip_rel_gap", 1e-7)
        if not presolve:
            self._highs.setOptionValue("presolve", "off")
        self._presolve = "choose" if presolve else "off"
        self._row_lower = _clip(lp.row_lower).copy()
        self._row_upper = _clip(lp.row_upper).copy()
        self.num_columns = lp.num_columns
        self.is_mip = lp.is_mip

    def _apply(self, settings: SolverSettings, mip: bool) -> None:
        """Threads, seed and log (``--workers``, ``--seed``, ``--verbose``), and MIP progress lines.

        HiGHS logs to the C-level stdout (the CLI sends it to stderr). For progress it must log at all, but
        only to its callbacks: the MIP log callback fires at every node-log line (time-based) and the
        improving-solution callback at every new incumbent; :mod:`fairpack.solver.progress` rate-limits both.
        """
        highs = self._highs
        watch = mip and progress.active() is not None
        highs.setOptionValue("output_flag", settings.verbose or watch)
        highs.setOptionValue("log_to_console", settings.verbose)
        if settings.threads is not None:
            _use_threads(int(settings.threads))
            highs.setOptionValue("threads", int(settings.threads))
        if settings.seed is not None:
            highs.setOptionValue("random_seed", int(settings.seed))
        if interrupt.active() or self._time_limit is not None or self._deadline is not None:
            self._interrupts()
        if watch:

            def report(event: Any) -> None:  # a MIP is never negated (only PDLP maximisations are)
                out = event.data_out
                progress.report("highs MIP", float(out.mip_primal_bound), float(out.mip_dual_bound))

            highs.cbMipLogging.subscribe(report)
            highs.cbMipImprovingSolution.subscribe(report)

    def _interrupts(self) -> None:
        """Stop the solve at Ctrl-C, or past the deadline: HiGHS asks its interrupt callbacks (simplex iterations,
        IPM iterations, MIP nodes) whether to stop, and they answer from :func:`fairpack.solver.interrupt.requested`
        and the clock. (They run in the solving thread, the caller's: a second Ctrl-C in a library call raises
        ``KeyboardInterrupt`` there, and HiGHS lets it out of ``run``.) HiGHS's own time limit is not read
        everywhere: the root of a MIP of a million rows ran 300 s past a 30 s limit, asking these callbacks all
        along."""

        def check(event: Any) -> None:
            if self.should_stop():
                event.interrupt()

        highs = self._highs
        highs.cbSimplexInterrupt.subscribe(check)
        highs.cbIpmInterrupt.subscribe(check)
        highs.cbMipInterrupt.subscribe(check)

    def should_stop(self) -> bool:
        """Whether HiGHS's interrupt callbacks stop the solve: Ctrl-C came, or the deadline passed ``OVERRUN_S`` ago."""
        if interrupt.requested():
            return True
        if self._watch_until is not None and time.monotonic() > self._watch_until:
            self._overrun = True
            return True
        return False

    def add_columns(self, cost: FloatArray, lower: FloatArray, upper: FloatArray, matrix: sp.csc_matrix) -> None:
        """Append columns given as a CSC matrix over the existing rows."""
        import scipy.sparse as sp

        csc = sp.csc_matrix(matrix)
        self._highs.addCols(
            int(csc.shape[1]),
            self._flip * np.asarray(cost, dtype=np.float64),
            _clip(lower),
            _clip(upper),
            int(csc.nnz),
            csc.indptr[:-1].astype(np.int32),
            csc.indices.astype(np.int32),
            csc.data.astype(np.float64),
        )
        self.num_columns += int(csc.shape[1])

    def set_column_bounds(self, indices: np.ndarray, lower: FloatArray, upper: FloatArray) -> None:
        indices = np.asarray(indices, dtype=np.int32)
        self._highs.changeColsBounds(len(indices), indices, _clip(lower), _clip(upper))

    def set_row_bounds(self, indices: np.ndarray, lower: FloatArray, upper: FloatArray) -> None:
        # highspy 1.12 has no vectorised changeRowsBounds; change only the rows that differ.
        indices = np.asarray(indices, dtype=np.int64)
        lower, upper = _clip(lower), _clip(upper)
        differs = (self._row_lower[indices] != lower) | (self._row_upper[indices] != upper)
        for position in np.flatnonzero(differs):
            row = int(indices[position])
            self._highs.changeRowBounds(row, float(lower[position]), float(upper[position]))
        self._row_lower[indices] = lower
        self._row_upper[indices] = upper

    def set_coefficient(self, row: int, column: int, value: float) -> None:
        self._highs.changeCoeff(row, column, value)

    def set_start(self, x: FloatArray) -> None:
        import highspy

        solution = highspy.HighsSolution()
        solution.col_value = list(np.asarray(x, dtype=np.float64))
        solution.value_valid = True
        self._highs.setSolution(solution)

    def prefer_primal(self) -> None:
        """Re-solve with the primal simplex. After bounds change on a degenerate max-min LP, HiGHS's dual
        simplex can take thousands of iterations where the primal simplex from the same basis takes
        hundreds (progressive filling on 24 groups x 1,000 tenants: 22,571 against 1,013)."""
        if not self.is_mip:
            self._highs.setOptionValue("simplex_strategy", 4)

    def use_algorithm(self, algorithm: str | None) -> None:
        """Solve with ``algorithm`` from the next solve on (None: HiGHS chooses). The basis stays: an interior
        point solve with crossover leaves one, and a simplex re-solve starts from it. Not to or from PDLP, whose
        maximisations are passed in negated."""
        if (algorithm == "pdlp") != (self._flip < 0):
            raise ValueError("a session cannot switch to or from PDLP")
        if algorithm is not None and algorithm not in ALGORITHMS["highs"]:
            raise ValueError(f"HiGHS has no algorithm {algorithm!r}; choose from {', '.join(ALGORITHMS['highs'])}")
        self._highs.setOptionValue("solver", algorithm or "choose")

    def solve(self) -> SolveOutcome:
        if interrupt.requested():
            return SolveOutcome("time_limit", message="interrupted before the solve")
        # The clock starts at the first solve, so model transfer does not eat a tiny limit.
        if self._time_limit is not None and self._deadline is None:
            self._deadline = time.perf_counter() + self._time_limit
        if self._deadline is not None:
            remaining = self._deadline - time.perf_counter()
            if remaining <= 0:
                return SolveOutcome("time_limit", message="time limit reached before the solve")
            # HiGHS compares its time_limit with its run time summed over every solve of this model, not
            # with this solve's: the limit is the run time so far plus what is left.
            self._highs.setOptionValue("time_limit", float(self._highs.getRunTime()) + float(remaining))
            self._watch_until = time.monotonic() + remaining + OVERRUN_S
        started = time.perf_counter()
        try:
            self._highs.run()
        except Exception as error:  # HiGHS presolve has thrown C++ errors (vector::reserve) on tiny MILPs
            self._highs.setOptionValue("presolve", "off")
            try:
                self._highs.run()
            except Exception:
                return SolveOutcome("error", message=f"HiGHS failed: {error}")
            finally:
                self._highs.setOptionValue("presolve", self._presolve)
        elapsed = time.perf_counter() - started
        info = self._highs.getInfo()
        solution = self._highs.getSolution()
        # primal_solution_status 2 is a feasible point; 1 is an infeasible one, which is no solution.
        has_solution = bool(solution.value_valid) and info.primal_solution_status == 2
        status = _status(self._highs.getModelStatus(), has_solution)
        # An LP stopped early (PDLP especially) holds a point within the solver's own tolerances only:
        # no incumbent, unlike a MILP's.
        has_solution = has_solution and (self.is_mip or status == "optimal")
        x = np.array(solution.col_value) if has_solution else None
        duals = np.array(solution.row_dual) if solution.dual_valid else None
        objective = self._flip * float(info.objective_function_value) if has_solution else None
        bound: float | None
        if self.is_mip:
            dual_bound = float(info.mip_dual_bound)
            bound = dual_bound if math.isfinite(dual_bound) and abs(dual_bound) < _INF else None
        else:
            bound = objective if status == "optimal" else None
        message = self._highs.modelStatusToString(self._highs.getModelStatus())
        if self._overrun and not interrupt.requested():
            message = "Time limit reached"  # the watch stopped it (HiGHS calls it an interrupt)
        return SolveOutcome(status, x, objective, bound, duals, elapsed, message)


class HighsBackend(Backend):
    name = "highs"

    def session(self, lp: LinearProgram, time_limit: float | None = None, algorithm: str | None = None, *,
                deadline: float | None = None, presolve: bool = True) -> HighsSession:  # fmt: skip
        return HighsSession(lp, time_limit, algorithm or self.algorithm, deadline, presolve, self.settings)

    def solve(
        self,
        lp: LinearProgram,
        time_limit: float | None = None,
        warm_start: FloatArray | None = None,
        algorithm: str | None = None,
    ) -> SolveOutcome:
        session = HighsSession(lp, time_limit, algorithm or self.algorithm, settings=self.settings)
        if warm_start is not None and lp.is_mip:
            session.set_start(warm_start)
        return session.solve()
