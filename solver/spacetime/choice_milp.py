"""``spacetime`` when tasks choose where and how long to run: the time-indexed MILP over alternatives.

The problem is :class:`fairpack.solver.spacetime.choice_model.ChoiceProblem` (per-task alternatives ``(machine,
option, duration)``, ticks as for ``spacetime-cp``). Built vectorised in named steps (:func:`build_choice_milp`):

* ``starts`` -- a binary ``x[a, tau]`` for every alternative ``a`` of task ``t`` and every start tick ``tau``
  in the task's window (release and head, horizon and tail, fair deadline); ``sum x = 1`` per task.
* ``capacity`` -- per machine, tick and resource: the demand of every ``x[a, tau]`` on that machine whose
  run ``[tau, tau + d_a)`` covers the tick, at most the capacity.
* ``gangs`` -- per stage with gang options, a binary per ``(gang option, group)`` and one for "task by task",
  summing to 1; every task's alternatives under a choice add up to that choice's binary; a gang's tasks
  start at the same tick (``sum_a x[a, tau]`` equal across the stage's tasks, for every ``tau``).
* ``precedence`` -- a stage end ``E_g >= sum (tau + d_a) x[a, tau]`` of each task; children start
  (``sum tau x``) at or after it; identical tasks of a stage in start order.
* ``completion`` -- ``C_k >=`` its sink stages' ends; for ``utility`` a binary ``z[k, tau]`` per completion
  tick with ``C_k = sum tau z`` and the objective ``sum_k sum_tau U_k(tau) z[k, tau]`` (exact for any
  piecewise-linear ``U_k``; a job without points contributes ``-w_k (C_k - r_k)``); for the time
  objectives the weighted completions and a makespan variable.

Sizes grow with alternatives x window ticks x duration: beyond ``MAX_NONZEROS`` the method refuses and names
``spacetime-cp``, the tool for larger instances. Warm start: the list schedule, when the backend takes one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from fairpack.models.result import Result, Status
from fairpack.models.types import FloatArray, Instance, InstanceError, IntArray
from fairpack.solver.backends import SolverSettings, get_backend
from fairpack.solver.lp import Block, LinearProgram, LPBuilder
from fairpack.solver.spacetime.choice_cp import Plan, fair_caps, plan_schedule
from fairpack.solver.spacetime.choice_model import ChoiceProblem, build_problem, list_schedule, translate
from fairpack.solver.spacetime.choices import Units
from fairpack.solver.spacetime.cp import Deadline
from fairpack.solver.spacetime.fair import fair_mode

#: Most nonzeros the time-indexed MILP over alternatives may have.
MAX_NONZEROS = 5_000_000


@dataclass(frozen=True)
class ChoiceMilp:
    """The MILP and where its variables are: ``x`` pairs (alternative, tick) and the blocks."""

    lp: LinearProgram
    pair_alt: IntArray
    pair_tick: IntArray
    x: Block

    def plan(self, values: FloatArray, problem: ChoiceProblem) -> Plan:
        chosen = self.x.values(values) > 0.5
        start = np.zeros(problem.num_tasks, dtype=np.int64)
        alt = np.array(problem.choices.first[:-1], dtype=np.int64)
        task = problem.choices.task[self.pair_alt[chosen]]
        start[task], alt[task] = self.pair_tick[chosen], self.pair_alt[chosen]
        return Plan(start, alt, np.ones(len(problem.instance.jobs), dtype=np.int64))

    def start_vector(self, plan: Plan, problem: ChoiceProblem) -> FloatArray | None:
        """The MILP point of a plan (None if some start is outside the model's windows)."""
        x = np.zeros(self.lp.num_columns)
        keys = self.pair_alt * (problem.horizon + 2) + self.pair_tick
        wanted = plan.alt * (problem.horizon + 2) + plan.start
        order = np.argsort(keys)
        position = np.minimum(np.searchsorted(keys[order], wanted), keys.size - 1)
        if not np.all(keys[order][position] == wanted):
            return None
        x[self.x.start + order[position]] = 1.0
        return _complete_point(self, x, plan, problem)


def _pairs(problem: ChoiceProblem) -> tuple[IntArray, IntArray]:
    """Step ``starts``: every (alternative, start tick) in its task's window."""
    lo, hi = problem.earliest_starts(), problem.latest_starts()
    task = problem.choices.task
    width = np.maximum(hi[task] - lo[task] + 1, 0)
    alt = np.repeat(np.arange(task.size), width)
    tick = lo[task][alt] + np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)
    return alt.astype(np.int64), tick.astype(np.int64)


def _size(problem: ChoiceProblem, pair_alt: IntArray) -> int:
    return int((problem.alt_ticks[pair_alt] * problem.demand.shape[1] + 4).sum())


def build_choice_milp(problem: ChoiceProblem) -> ChoiceMilp:
    """The MILP of ``problem`` (module docstring), built by its named steps."""
    pair_alt, pair_tick = _pairs(problem)
    if _size(problem, pair_alt) > MAX_NONZEROS:
        raise InstanceError(f"the time-indexed MILP would have about {_size(problem, pair_alt):,} nonzeros, above "
                            f"{MAX_NONZEROS:,}: use spacetime-cp", "jobs")  # fmt: skip
    builder = LPBuilder("max" if problem.objective == "utility" else "min", "spacetime-choices")
    x = builder.add_variables("x", (pair_alt.size,), 0.0, 1.0, integer=True)
    task = problem.choices.task[pair_alt]
    builder.add_rows("one_alternative", problem.num_tasks, task, x.start + np.arange(pair_alt.size), 1.0, 1.0, 1.0)
    _capacity(builder, problem, x, pair_alt, pair_tick)
    _gangs(builder, problem, x, pair_alt, pair_tick)
    stage_end = _precedence(builder, problem, x, pair_alt, pair_tick)
    _completion(builder, problem, stage_end)
    return ChoiceMilp(builder.build(), pair_alt, pair_tick, x)


def _capacity(builder: LPBuilder, problem: ChoiceProblem, x: Block, pair_alt: IntArray, pair_tick: IntArray) -> None:
    """Per unit, tick and resource: running demand at most the capacity."""
    d = problem.alt_ticks[pair_alt]
    pair = np.repeat(np.arange(pair_alt.size), d)
    covered = pair_tick[pair] + np.arange(int(d.sum())) - np.repeat(np.cumsum(d) - d, d)
    unit = problem.choices.unit[pair_alt][pair]
    ticks = problem.horizon + 1
    demand = problem.demand[problem.flat.task_stage[problem.choices.task[pair_alt]]][pair]
    resources = problem.demand.shape[1]
    row = ((unit * ticks + covered)[:, None] * resources + np.arange(resources)[None, :]).ravel()
    value = demand.astype(np.float64).ravel()
    keep = value > 0
    used, local = np.unique(row[keep], return_inverse=True)
    cap = problem.capacity.astype(np.float64).ravel()[(used // (ticks * resources)) * resources + used % resources]
    builder.add_rows("capacity", used.size, local, x.start + np.repeat(pair, resources)[keep], value[keep],
                     upper=cap)  # fmt: skip


def _gang_kinds(problem: ChoiceProblem, g: int) -> tuple[IntArray, IntArray]:
    """A gang stage's choices (sorted keys: ``-1`` task by task, else option and group) and its alternatives."""
    choices, flat = problem.choices, problem.flat
    first_task = int(np.searchsorted(flat.task_stage, g))
    last_task = first_task + int(flat.stage_tasks[g])
    alts = np.arange(int(choices.first[first_task]), int(choices.first[last_task]))
    key = np.where(choices.group[alts] >= 0, choices.option[alts] * (choices.group.max() + 1) + choices.group[alts], -1)
    return np.unique(key), key


def _gangs(builder: LPBuilder, problem: ChoiceProblem, x: Block, pair_alt: IntArray, pair_tick: IntArray) -> None:
    """Per stage with gang options: one choice; a gang's tasks start at one tick."""
    choices, flat = problem.choices, problem.flat
    first_task = np.concatenate([[0], np.cumsum(flat.stage_tasks)])
    for g in range(flat.num_stages):
        tasks = np.arange(first_task[g], first_task[g + 1])
        kinds, key = _gang_kinds(problem, g)
        if kinds.size == 1 and kinds[0] < 0:
            continue
        base = int(choices.first[tasks[0]])
        y = builder.add_variables(f"gang{g}", (kinds.size,), 0.0, 1.0, integer=True)
        builder.add_rows(f"gang{g}_one", 1, np.zeros(kinds.size), y.start + np.arange(kinds.size), 1.0, 1.0, 1.0)
        mine = np.flatnonzero(np.isin(choices.task[pair_alt], tasks))  # the pairs of this stage's tasks
        kind = np.searchsorted(kinds, key[pair_alt[mine] - base])
        local_task = choices.task[pair_alt[mine]] - tasks[0]
        count = tasks.size * kinds.size
        builder.add_rows(f"gang{g}_choice", count, np.concatenate([local_task * kinds.size + kind, np.arange(count)]),
                         np.concatenate([x.start + mine, y.start + np.tile(np.arange(kinds.size), tasks.size)]),
                         np.concatenate([np.ones(mine.size), -np.ones(count)]), 0.0, 0.0)  # fmt: skip
        gang = mine[key[pair_alt[mine] - base] >= 0]
        _common_start(builder, problem, x, g, tasks, gang, choices.task[pair_alt[gang]], pair_tick[gang])


def _common_start(builder: LPBuilder, problem: ChoiceProblem, x: Block, g: int, tasks: IntArray, gang: IntArray,
                  owner_task: IntArray, tick: IntArray) -> None:  # fmt: skip
    """Every task of the stage starts a gang at the same tick as its first task: per later task and tick,
    ``sum x(task, tick) - sum x(first task, tick) = 0`` over gang alternatives."""
    if tasks.size < 2:
        return
    ticks = problem.horizon + 1
    owner = owner_task - tasks[0]
    later, first = owner > 0, owner == 0
    n_first, n_later = int(first.sum()), tasks.size - 1
    rows = np.concatenate([(owner[later] - 1) * ticks + tick[later],
                           np.repeat(np.arange(n_later), n_first) * ticks + np.tile(tick[first], n_later)])
    cols = x.start + np.concatenate([gang[later], np.tile(gang[first], n_later)])
    values = np.concatenate([np.ones(int(later.sum())), -np.ones(n_first * n_later)])
    builder.add_rows(f"gang{g}_start", n_later * ticks, rows, cols, values, 0.0, 0.0)


def _precedence(builder: LPBuilder, problem: ChoiceProblem, x: Block, pair_alt: IntArray,
                pair_tick: IntArray) -> Block:  # fmt: skip
    """Stage ends after their tasks; children start after their parents; identical tasks in start order."""
    flat, choices = problem.flat, problem.choices
    end_tick = pair_tick + problem.alt_ticks[pair_alt]
    task = choices.task[pair_alt]
    ends = builder.add_variables("stage_end", (flat.num_stages,), 0.0, float(problem.horizon))
    columns = x.start + np.arange(pair_alt.size)
    builder.add_rows("stage_end", problem.num_tasks, np.concatenate([task, np.arange(problem.num_tasks)]),
                     np.concatenate([columns, ends.start + flat.task_stage]),
                     np.concatenate([end_tick.astype(np.float64), -np.ones(problem.num_tasks)]), upper=0.0)
    first_task = np.concatenate([[0], np.cumsum(flat.stage_tasks)])
    rows, cols, vals = [], [], []
    count = 0
    for parent, child in flat.edges.tolist():
        for t in range(int(first_task[child]), int(first_task[child + 1])):
            mine = np.flatnonzero(task == t)
            rows += [np.full(mine.size + 1, count)]
            cols += [columns[mine], [ends.start + parent]]
            vals += [pair_tick[mine].astype(np.float64), [-1.0]]
            count += 1
    if problem.identical_tasks():
        for g in np.flatnonzero(flat.stage_tasks > 1).tolist():
            for t in range(int(first_task[g]), int(first_task[g + 1]) - 1):
                now, nxt = np.flatnonzero(task == t), np.flatnonzero(task == t + 1)
                rows += [np.full(now.size + nxt.size, count)]
                cols += [columns[now], columns[nxt]]
                vals += [pair_tick[now].astype(np.float64), -pair_tick[nxt].astype(np.float64)]
                count += 1
    if count:
        builder.add_rows("precedence", count, np.concatenate(rows), np.concatenate([np.asarray(c) for c in cols]),
                         np.concatenate([np.asarray(v) for v in vals]), upper=0.0)
    return ends


def _completion(builder: LPBuilder, problem: ChoiceProblem, stage_end: Block) -> None:
    """Completions after every stage of the job, by the fair deadline; the objective."""
    flat, jobs, tick = problem.flat, problem.instance.jobs, problem.tick
    high = np.full(len(jobs), float(problem.horizon))
    if problem.deadline is not None:
        high = np.minimum(high, problem.deadline.astype(np.float64))
    total = float(flat.weight.sum())
    if problem.objective == "utility":
        cost = np.array([0.0 if job.utility else -job.weight * tick for job in jobs])
        builder.offset = float(sum(job.weight * job.release for job in jobs if not job.utility))
        m_coef = 0.0
    else:
        coef = {"makespan": np.zeros_like(flat.weight), "avg-jct": flat.weight}.get(problem.objective,
                                                                                   problem.alpha * flat.weight)
        cost = coef * tick / total
        m_coef = total if problem.objective == "makespan" else 0.0 if problem.objective == "avg-jct" else (
            (1 - problem.alpha) * total)  # fmt: skip
        builder.offset = -float(coef @ flat.release) / total
    completion = builder.add_variables("completion", (len(jobs),), problem.release.astype(np.float64), high, cost)
    builder.add_rows("completion", flat.num_stages, np.concatenate([np.arange(flat.num_stages)] * 2),
                     np.concatenate([stage_end.start + np.arange(flat.num_stages), completion.start + flat.stage_job]),
                     np.concatenate([np.ones(flat.num_stages), -np.ones(flat.num_stages)]), upper=0.0)  # fmt: skip
    makespan = builder.add_variables("makespan", (1,), 0.0, float(problem.horizon), cost=m_coef * tick / total)
    builder.add_rows("makespan", len(jobs), np.concatenate([np.arange(len(jobs))] * 2),
                     np.concatenate([completion.start + np.arange(len(jobs)), np.full(len(jobs), makespan.start)]),
                     np.concatenate([np.ones(len(jobs)), -np.ones(len(jobs))]), upper=0.0)  # fmt: skip
    if problem.objective == "utility":
        _utility(builder, problem, completion)


def _utility(builder: LPBuilder, problem: ChoiceProblem, completion: Block) -> None:
    """Per job with points, a binary per completion tick: ``C_k = sum tau z`` and ``U_k = sum U_k(tau) z``."""
    jobs, tick = problem.instance.jobs, problem.tick
    for k, job in enumerate(jobs):
        if not job.utility:
            continue
        ticks = _completion_ticks(problem, k)
        worth = job.utility_at(ticks.astype(np.float64) * tick)
        z = builder.add_variables(f"done{k}", (ticks.size,), 0.0, 1.0, cost=worth, integer=True)
        builder.add_rows(f"done{k}_one", 1, np.zeros(ticks.size), z.start + np.arange(ticks.size), 1.0, 1.0, 1.0)
        builder.add_rows(f"done{k}_at", 1, np.zeros(ticks.size + 1),
                         np.concatenate([z.start + np.arange(ticks.size), [completion.start + k]]),
                         np.concatenate([ticks.astype(np.float64), [-1.0]]), 0.0, 0.0)  # fmt: skip


def _completion_ticks(problem: ChoiceProblem, k: int) -> IntArray:
    low = int(problem.release[k])
    high = int(problem.horizon if problem.deadline is None else min(problem.horizon, problem.deadline[k]))
    return np.arange(low, max(low, high) + 1)


def _complete_point(milp: ChoiceMilp, x: FloatArray, plan: Plan, problem: ChoiceProblem) -> FloatArray | None:
    """Fill the other variables of a start point from its plan: stage ends, completions, makespan, gang
    choices, completion ticks. None if the point breaks a row (it would not help the solver)."""
    flat, columns = problem.flat, milp.lp.columns
    end = plan.start + problem.alt_ticks[plan.alt]
    stage_end = np.zeros(flat.num_stages)
    np.maximum.at(stage_end, flat.task_stage, end)
    completion = problem.release.astype(np.float64)
    np.maximum.at(completion, flat.stage_job, stage_end)
    x[columns["stage_end"].start + np.arange(flat.num_stages)] = stage_end
    x[columns["completion"].start + np.arange(completion.size)] = completion
    x[columns["makespan"].start] = completion.max(initial=0.0)
    for g in range(flat.num_stages):
        if f"gang{g}" in columns:
            kinds, key = _gang_kinds(problem, g)
            first_task = int(np.searchsorted(flat.task_stage, g))
            chosen = key[int(plan.alt[first_task]) - int(problem.choices.first[first_task])]
            x[columns[f"gang{g}"].start + int(np.searchsorted(kinds, chosen))] = 1.0
    for k in range(completion.size):
        if f"done{k}" in columns:
            ticks = _completion_ticks(problem, k)
            x[columns[f"done{k}"].start + int(np.searchsorted(ticks, completion[k]))] = 1.0
    return x if milp.lp.max_violation(x) <= 1e-6 else None


def solve_choice_milp(instance: Instance, backend: str = "highs", objective: str | None = None,
                      time_limit: float | None = None, alpha: float = 0.5,
                      fair_completion: dict[str, float] | None = None, fair_cap: bool = True,
                      algorithm: str | None = None, settings: SolverSettings | None = None) -> Result:  # fmt: skip
    """``spacetime`` on an instance with placement options (or the utility objective); see the module docstring.

    Fair caps as ``spacetime-cp``'s (:func:`fairpack.solver.spacetime.choice_cp.fair_caps`)."""
    started = time.perf_counter()
    problem = build_problem(instance, Units.of(instance, "machine"), objective, alpha, fair_completion)
    fairness = fair_caps(problem, "servers", fair_completion, fair_mode(fair_cap), Deadline.after(time_limit))
    if isinstance(fairness, Result):
        return replace(fairness, method="spacetime", backend=backend, build_s=time.perf_counter() - started)
    problem, _, notes = fairness
    loose = replace(build_problem(instance, problem.units, problem.objective, alpha, tick=problem.tick,
                                  symmetry=False), deadline=problem.deadline)  # fmt: skip
    milp = build_choice_milp(problem)
    listed = list_schedule(loose)
    warm = None
    if listed is not None:
        moved = translate(loose, *listed, problem)
        if moved is not None:
            warm = milp.start_vector(Plan(moved[0], moved[1], np.ones(len(instance.jobs), np.int64)), problem)
    solver = get_backend(backend, algorithm, settings)
    build_s = time.perf_counter() - started
    left = None if time_limit is None else max(time_limit - build_s, 0.01)
    outcome = solver.solve(milp.lp, time_limit=left,
                           warm_start=warm if warm is not None and "warm_start" in solver.capabilities() else None,
                           algorithm=algorithm)  # fmt: skip
    plan = milp.plan(outcome.x, problem) if outcome.x is not None else None
    status: Status = outcome.status if plan is not None or outcome.status in ("infeasible", "error") else (
        "time_limit" if time_limit is not None else "error")  # fmt: skip
    if plan is not None and outcome.status == "optimal" and not problem.exact:
        status = "feasible"
    return Result(status=status, method="spacetime", backend=backend,
                  bound=outcome.bound if problem.exact else None, build_s=build_s, solve_s=outcome.solve_s,
                  solver_objective=None if plan is None else problem.value(plan.start, plan.alt),
                  message="; ".join(n for n in [*notes, outcome.message] if n),
                  schedule=None if plan is None else plan_schedule(problem, plan),
                  extra={"placement": "servers", "fair_cap": problem.deadline is not None,
                         "objective_name": problem.objective, "alpha": alpha, "tick": problem.tick,
                         "model": "choices", "columns": milp.lp.num_columns, "rows": milp.lp.num_rows,
                         "nonzeros": int(milp.lp.matrix.nnz)})  # fmt: skip
