"""Carbyne's fair-share baseline: DRF shares between DAG jobs and each job's fair completion time ``T_k``.

Shares (Carbyne, Grandl et al. OSDI'16, section 4: the inter-job scheduler is DRF)
--------------------------------------------------------------------------------
A job's demand vector for DRF is its *aggregate resource-time*: ``v_k = sum over stages of tasks *
duration * demand``, normalised by the cluster capacity. Weighted DRF by progressive filling gives job
``k`` the amount ``x_k v_k / max(v_k)`` with ``x_k = w_k * level``: the common level rises until a
resource is exhausted, jobs using that resource freeze, and the others keep rising. There are no caps
(a job's share is the cluster fraction it is entitled to, whether or not its DAG can use it all at once).
``A_k`` is the resulting *vector* of fractions of every resource; job ``k``'s capacity is
``A_k * instance.total_capacity``. Jobs whose aggregate vector is zero get no share (they need none).

When shares are re-run
----------------------
Inside the ``carbyne`` simulation DRF is re-run whenever the set of active jobs changes (a job is
released or finishes), always over the jobs' *whole* aggregate vectors (their direction does not change
as they progress), so remaining jobs' shares only grow when others finish.

Fair completion time
--------------------
``T_k = r_k + M_k`` where ``M_k`` is the makespan of job ``k`` alone on capacity ``A_k * C``, ``A_k``
its DRF share among the jobs *present at its release*: jobs ``j`` with ``r_j <= r_k`` that have not
finished by then in the fair-share world itself, i.e. ``r_j == r_k`` or ``T_j > r_k`` (computed in
release order, so this does not depend on any schedule). ``T_k`` is the promise made at release.
Re-running DRF when jobs *finish* only grows the remaining jobs' shares, so it cannot make the promise
harder to keep; jobs *released later* shrink them, so with staggered releases even the fair-share world
itself can miss ``T_k`` (e.g. ``instances/dag_two_jobs.yaml``: ``long`` alone has ``T = 4``, ``short``
arrives at 0.5 and every heuristic finishes ``long`` at 4.5). With all jobs released at 0 every job is
present from the start and the promise is exactly Carbyne's.

``M_k`` is the optimum of a small RCPSP (one job, barriers, renewable capacity ``A_k * C``):

* lower bound: ``max(critical path, max_r resource-time_r / capacity_r)``;
* upper bound: the best of two list schedules (:func:`solver.spacetime.engine.pack`);
* if they meet, ``M_k`` is exact (``method = 'bound'``); otherwise, for jobs of at most ``cp_max_tasks``
  tasks, a minimal CP-SAT RCPSP model (:func:`_cp_makespan`; 2 workers, ``time_limit`` seconds, horizon
  = the list schedule's makespan) is solved: ``'cp-optimal'`` is exact, ``'cp-time_limit'`` keeps the
  better of CP's incumbent and the list schedule (a valid, possibly loose promise); bigger jobs, and
  durations not on a decimal grid of at most 6 digits, keep the list schedule (``'list'``).
  ``solver.spacetime.cp`` is not reused: its SGS warm start sizes its tick profile by the sum of
  *stage* durations, which is too short when a stage's tasks must run in several waves (IndexError).
* If a single task of the job does not fit ``A_k * C`` the job cannot run on its share at all:
  ``T_k = inf`` (no promise, ``method = 'no-fit'``).

Time: ``time_limit`` bounds each CP-SAT call and ``budget`` all of them together (``--time-limit``
hands the fair completion times ``FAIR_BUDGET_SHARE`` of its seconds): each job's call gets at most an
equal part of what is left over the jobs still to do, and once too little is left (``MIN_CP_S``) the
remaining jobs keep their list schedules (``'list'``: a valid, possibly loose promise).

CP-SAT sees the capacity rounded *down* to the grid of the job's demands (``floor(A_k C_r / u_r)`` units
of ``u_r``, the power of ten that makes the demands of resource ``r`` whole), which changes no feasible
set of tasks.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from models.types import FloatArray, Instance
from solver.spacetime.engine import EPS, DagJobs, pack

#: Share of a method's ``time_limit`` its fair completion times may take (the rest is the method's own).
FAIR_BUDGET_SHARE = 0.5
#: CP-SAT calls get at least this many seconds, or are skipped (the list schedule is kept).
MIN_CP_S = 0.05


def drf_shares(work: FloatArray, weights: FloatArray, present: np.ndarray | None = None) -> FloatArray:
    """Weighted DRF (progressive filling, no caps) over aggregate vectors.

    Parameters
    ----------
    work : array (jobs, resources)
        Each job's aggregate resource-time as a fraction of the cluster per resource.
    weights : array (jobs,)
    present : bool array (jobs,), optional
        Jobs taking part (default all).

    Returns
    -------
    array (jobs, resources): every job's share of every resource (fractions; 0 for absent jobs).
    """
    n_jobs, n_res = work.shape
    present = np.ones(n_jobs, dtype=bool) if present is None else np.asarray(present, dtype=bool)
    peak = work.max(axis=1) if n_res else np.zeros(n_jobs)
    direction = np.divide(work, peak[:, None], out=np.zeros_like(work), where=peak[:, None] > 0)
    growing = present & (peak > 0)
    level = np.zeros(n_jobs)  # weighted dominant share of every job
    used = np.zeros(n_res)
    while np.any(growing):
        rate = (weights[growing, None] * direction[growing]).sum(axis=0)  # use per unit of common level
        room = np.divide(1.0 - used, rate, out=np.full(n_res, np.inf), where=rate > 1e-15)
        step = float(max(room.min(), 0.0))
        level[growing] += step
        used += step * rate
        saturated = room <= step * (1 + 1e-12) + 1e-15
        frozen = growing & np.any(direction[:, saturated] > 0, axis=1)
        if not np.any(frozen):  # numerical safety: cannot happen when some resource saturated
            break
        growing &= ~frozen
    return (weights * level)[:, None] * direction


@dataclass(frozen=True)
class FairShare:
    """Fair completion times and how they were obtained.

    Attributes
    ----------
    completion : array (jobs,)
        ``T_k`` (``inf`` when a task does not fit the share).
    makespan_alone : array (jobs,)
        ``M_k = T_k - r_k``.
    share : array (jobs, resources)
        ``A_k`` at release (fractions of each resource).
    method : tuple of str
        Per job: ``bound``, ``cp-optimal``, ``cp-time_limit``, ``cp-feasible``, ``list``, ``no-fit``,
        ``no-work``.
    lower_bound : array (jobs,)
        The lower bound on ``M_k`` (equal to it when ``method`` is exact).
    """

    completion: FloatArray
    makespan_alone: FloatArray
    share: FloatArray
    method: tuple[str, ...]
    lower_bound: FloatArray

    @property
    def exact(self) -> np.ndarray:
        return np.array([m in ("bound", "cp-optimal", "no-fit", "no-work") for m in self.method])


def makespan_alone(
    jobs: DagJobs,
    k: int,
    capacity: FloatArray,
    time_limit: float = 5.0,
    cp_max_tasks: int = 400,
) -> tuple[float, float, str]:
    """``(M_k, lower bound, method)`` for job ``k`` alone on ``capacity`` (see the module docstring)."""
    stages = jobs.job_stages[k]
    dur, dem, cnt = jobs.duration[stages], jobs.demand[stages], jobs.count[stages]
    tol = EPS * np.maximum(1.0, jobs.capacity)
    critical = float(jobs.tail[stages].max())
    if np.any(dem > capacity[None, :] + tol[None, :]):
        return math.inf, critical, "no-fit"
    work = ((cnt * dur)[:, None] * dem).sum(axis=0)
    if not np.any(work > 0):
        return critical, critical, "no-work"
    ratio = np.divide(work, capacity, out=np.zeros_like(work), where=capacity > 0)
    lower = max(critical, float(ratio.max()))
    first = int(stages[0])
    parents = [tuple(p - first for p in jobs.parents[g]) for g in stages]
    upper = min(
        pack(dur, dem, cnt, parents, capacity, jobs.tail[stages]).makespan,
        pack(dur, dem, cnt, parents, capacity, (cnt * dur * dem.max(axis=1)).astype(np.float64)).makespan,
    )
    if upper <= lower * (1 + 1e-9) + 1e-12:
        return upper, lower, "bound"
    if int(cnt.sum()) > cp_max_tasks:
        return upper, lower, "list"
    found, proven, status = _cp_makespan(dur, dem, cnt, parents, capacity, upper, time_limit)
    if found is None:
        return upper, lower, "list"
    if status == "optimal":
        return found, found, "cp-optimal"
    return min(found, upper), max(lower, proven), f"cp-{status}"


def _grid(values: FloatArray) -> float | None:
    """The largest ``10**-p`` (p <= 6) of which all values are whole multiples, or None."""
    for power in range(7):
        unit = 10.0**-power
        scaled = values / unit
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-9 * np.maximum(1.0, np.abs(scaled))):
            return unit
    return None


def _cp_makespan(
    dur: FloatArray,
    dem: FloatArray,
    cnt: np.ndarray,
    parents: list[tuple[int, ...]],
    capacity: FloatArray,
    upper: float,
    time_limit: float,
) -> tuple[float | None, float, str]:
    """Minimum makespan of one job on ``capacity`` with CP-SAT: ``(makespan or None, proven bound, status)``.

    A minimal RCPSP model (one fixed-size interval per task, tasks of a stage ordered by start, a stage-end
    variable per stage, barriers, one cumulative per resource), used instead of
    ``solver.spacetime.cp`` so that ``T_k`` needs no more than this. ``None`` when the data is not on a
    decimal grid of at most 6 digits, or CP-SAT finds nothing in time.
    """
    from ortools.sat.python import cp_model

    tick = _grid(dur)
    if tick is None or not math.isfinite(upper):
        return None, 0.0, "none"
    ticks = np.round(dur / tick).astype(np.int64)
    horizon = math.ceil(upper / tick - 1e-9)
    model = cp_model.CpModel()
    starts: list[list[cp_model.IntVar]] = []
    intervals = []
    demands = []
    ends = []
    for s in range(cnt.size):
        row = [model.new_int_var(0, horizon - int(ticks[s]), f"s{s}_{i}") for i in range(int(cnt[s]))]
        for a, b in itertools.pairwise(row):
            model.add(a <= b)
        starts.append(row)
        end = model.new_int_var(int(ticks[s]), horizon, f"e{s}")
        model.add(end >= row[-1] + int(ticks[s]))
        ends.append(end)
        for var in row:
            intervals.append(model.new_fixed_size_interval_var(var, int(ticks[s]), ""))
            demands.append(dem[s])
    for s, ps in enumerate(parents):
        for p in ps:
            model.add(starts[s][0] >= ends[p])
    demand_matrix = np.array(demands).reshape(-1, capacity.size)
    for r in range(capacity.size):
        used = demand_matrix[:, r] > 0
        if not np.any(used) or demand_matrix[used, r].sum() <= capacity[r] * (1 + 1e-9):
            continue
        unit = _grid(demand_matrix[used, r]) or 1e-6
        need = np.ceil(demand_matrix[:, r] / unit - 1e-9).astype(np.int64)
        limit = math.floor(capacity[r] / unit + 1e-7)
        model.add_cumulative([iv for iv, u in zip(intervals, used, strict=True) if u],
                             [int(x) for x, u in zip(need, used, strict=True) if u], limit)  # fmt: skip
    makespan = model.new_int_var(0, horizon, "M")
    for end in ends:
        model.add(makespan >= end)
    model.minimize(makespan)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(float(time_limit), 0.01)
    solver.parameters.num_workers = 2
    solver.parameters.random_seed = 0
    code = solver.solve(model)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, 0.0, "none"
    status = "optimal" if code == cp_model.OPTIMAL else "time_limit"
    return solver.value(makespan) * tick, solver.best_objective_bound * tick, status


def fair_completion_times(
    instance: Instance,
    jobs: DagJobs | None = None,
    time_limit: float = 5.0,
    cp_max_tasks: int = 400,
    budget: float | None = None,
) -> FairShare:
    """``T_k`` for every job (see the module docstring).

    ``time_limit`` is per CP-SAT call, ``budget`` (seconds, optional) for all calls together.
    """
    stop = None if budget is None else time.perf_counter() + float(budget)
    jobs = jobs or DagJobs.of(instance)
    work = jobs.work()
    n_jobs = jobs.num_jobs
    completion = np.full(n_jobs, math.inf)
    alone = np.full(n_jobs, math.inf)
    lower = np.zeros(n_jobs)
    share = np.zeros_like(work)
    methods = [""] * n_jobs
    for done, k in enumerate(sorted(range(n_jobs), key=lambda j: (jobs.release[j], j))):
        r = jobs.release[k]
        present = (jobs.release <= r) & ((jobs.release == r) | (completion > r))
        share[k] = drf_shares(work, jobs.weight, present)[k]
        limit, most = time_limit, cp_max_tasks
        if stop is not None:
            limit = min(time_limit, (stop - time.perf_counter()) / (n_jobs - done))
            most = cp_max_tasks if limit >= MIN_CP_S else -1  # no time left for CP-SAT: list schedules
        alone[k], lower[k], methods[k] = makespan_alone(jobs, k, share[k] * jobs.capacity, limit, most)
        completion[k] = r + alone[k]
    return FairShare(completion, alone, share, tuple(methods), lower)
