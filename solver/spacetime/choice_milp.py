"""``spacetime`` when tasks choose where and how long to run: the time-indexed MILP over alternatives.

The problem is :class:`fairpack.solver.spacetime.choice_model.ChoiceProblem` (per-task alternatives ``(unit,
option, duration)``, ticks as for ``spacetime-cp``): placement options and gangs, the utility objective, on
machines or the pooled cluster. (Input blocks read on machines would be alternatives too, durations times each
machine's locality factor, stated exactly; ``spacetime`` refuses them before building anything,
:func:`fairpack.solver.spacetime.milp.refuse_locality`, as too slow to solve.) Built vectorised in named steps
(:func:`build_choice_milp`):

* ``starts`` -- a binary ``x[a, tau]`` for every alternative ``a`` of task ``t`` and every start tick ``tau``
  in the task's window (release and head; horizon, fair deadline or objective bound, less the tail) at which
  the alternative still ends in time; ``sum x = 1`` per task.
* ``capacity`` -- per unit, tick and resource: the demand of every alternative on that unit running at the
  tick, at most the capacity. An alternative of at most ``PULSE_MAX_TICKS`` ticks adds its ``x[a, tau]`` to
  every tick its run ``[tau, tau + d_a)`` covers; a longer one is written with its cumulative starts
  ``y[a, tau] = sum_{tau' <= tau} x[a, tau']`` (running at ``t``: ``y[a, t] - y[a, t - d_a]``), two terms per
  tick instead of ``d_a`` per start -- the same LP relaxation, far fewer nonzeros.
* ``gangs`` -- per stage with gang options, a binary per ``(gang option, group)`` and one for "task by task",
  summing to 1; every task's alternatives under a choice add up to that choice's binary; a gang's tasks
  start at the same tick (``sum_a x[a, tau]`` equal across the stage's tasks, for every ``tau``).
* ``precedence`` -- with ``S_t = sum tau x[a, tau]`` (task ``t``'s start): a stage end
  ``E_g >= S_t + d`` of each of its tasks; every task of a child stage starts at or after it
  (``S_t >= E_parent``); identical tasks of a stage in start order.
* ``completion`` -- ``C_k >=`` its sink stages' ends, at most its bound; for ``utility`` a binary ``z[k, tau]``
  per completion tick with ``C_k = sum tau z`` and the objective ``sum_k sum_tau U_k(tau) z[k, tau]`` (exact
  for any piecewise-linear ``U_k``; a job without points contributes ``-w_k (C_k - r_k)``); for the time
  objectives the weighted completions and a makespan variable.

Exactness. Some optimal schedule is left-justified: every start is a release or another task's end, so a
whole tick, and every job ends by the horizon (the last release plus every task's longest alternative). The
tick is the coarsest one of which every duration and release is a multiple (:func:`coarsest_tick`). The
warm start -- the best of the list schedule and the fair-share schedule that keeps every constraint -- bounds
the objective, so every job's completion (:func:`objective_caps`): an optimum is no worse, so within them.

Sizes grow with alternatives x window ticks: beyond ``MAX_NONZEROS`` the method refuses and names
``spacetime-cp``, the tool for larger instances. Under a time limit a model too large to load in the time
left is not started, and a large one is solved without presolve (as the slot model, :mod:`.milp`); without
a solver schedule the warm start is returned (``time_limit``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from fairpack.models.result import Result, Schedule, Status
from fairpack.models.types import FloatArray, Instance, InstanceError, IntArray
from fairpack.solver.backends import Backend, SolveOutcome, SolverSettings, get_backend
from fairpack.solver.lp import Block, LinearProgram, LPBuilder
from fairpack.solver.spacetime.choice_cp import Plan, fair_caps, plan_schedule, warm_plans
from fairpack.solver.spacetime.choice_model import ChoiceProblem, build_problem, searched_list_schedule, translate
from fairpack.solver.spacetime.choices import Units
from fairpack.solver.spacetime.cp import Deadline
from fairpack.solver.spacetime.fair import fair_mode

#: Most nonzeros the time-indexed MILP over alternatives may have.
MAX_NONZEROS = 5_000_000
#: Alternatives of at most this many ticks put their starts in the capacity rows directly; longer ones through
#: cumulative starts.
PULSE_MAX_TICKS = 2
#: Seconds per nonzero to build the MILP and load it into the solver (``milp.LOAD_S_PER_NONZERO``).
LOAD_S_PER_NONZERO = 4e-6
#: Under a time limit, MILPs with more nonzeros than this are solved without presolve (``milp``'s rule).
PRESOLVE_MAX_NONZEROS = 500_000
#: Under a time limit, a MILP above this many nonzeros is not started (its warm start is the answer): the root LP
#: of one with a million rows and 3,000,011 nonzeros (a deadline of 1e-9 in slots) ran past 100 s under a 30 s
#: limit, presolve on or off, without asking the interrupt callbacks that watch the clock; 1,026,235 nonzeros
#: stopped on time.
LIMITED_MAX_NONZEROS = 2_000_000
#: Under a time limit, the share of the time left after building that the solver is given.
SOLVER_SHARE = 0.85
#: Under a time limit, the share of the time left that the search over list schedules' job orders may take.
SEARCH_SHARE = 0.1


@dataclass(frozen=True)
class ChoiceMilp:
    """The MILP and where its variables are: ``x`` pairs (alternative, tick), the cumulative starts ``y`` of
    long alternatives (``y_pairs``: the pair of each), every job's completion bound ``upper`` (ticks)."""

    lp: LinearProgram
    pair_alt: IntArray
    pair_tick: IntArray
    x: Block
    y: Block | None
    y_pairs: IntArray
    upper: IntArray

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
        if self.pair_alt.size == 0:  # no task can start in time: the model is infeasible
            return None
        keys = self.pair_alt * (problem.horizon + 2) + self.pair_tick
        wanted = plan.alt * (problem.horizon + 2) + plan.start
        order = np.argsort(keys)
        position = np.minimum(np.searchsorted(keys[order], wanted), keys.size - 1)
        if not np.all(keys[order][position] == wanted):
            return None
        x[self.x.start + order[position]] = 1.0
        return _complete_point(self, x, plan, problem)


def job_upper(problem: ChoiceProblem) -> IntArray:
    """Per job, the latest completion tick: the horizon, or the fair deadline if earlier."""
    upper = np.full(len(problem.instance.jobs), problem.horizon, dtype=np.int64)
    return upper if problem.deadline is None else np.minimum(upper, problem.deadline)


def _job_lower(problem: ChoiceProblem) -> IntArray:
    """Per job, the earliest completion tick: release plus the critical path of shortest alternatives."""
    shortest = problem.stage_min_ticks()
    head, _ = problem.flat.heads_tails(shortest)
    end = problem.release[problem.flat.stage_job] + np.rint(head).astype(np.int64) + shortest
    lower = problem.release.copy()
    np.maximum.at(lower, problem.flat.stage_job, end)
    return lower


def objective_caps(problem: ChoiceProblem, plan: Plan) -> IntArray:
    """Per job, the latest completion tick of any schedule at least as good as ``plan`` (a feasible one), within
    :func:`job_upper`; never before ``plan``'s own completions, so ``plan`` stays in the model.

    Time objectives ``sum_k a_k (C_k - r_k) + b M`` (``milp.completion_upper``'s argument): with lower bounds
    ``L_k`` the plan leaves ``slack = value - lower`` to spend, so ``C_k <= L_k + slack / a_k`` and
    ``C_k <= max L + slack / b``. Utility (maximised, every ``U_k`` non-increasing): no job may lose more than
    ``slack = sum_k U_k(L_k) - value`` below its best, so ``C_k`` is at most the last tick where
    ``U_k >= U_k(L_k) - slack``."""
    upper, lower = job_upper(problem), _job_lower(problem)
    value, tick = problem.value(plan.start, plan.alt), problem.tick
    done = problem.completions(plan.start, plan.alt)
    cap = upper.astype(np.float64)
    if problem.objective == "utility":
        jobs = problem.instance.jobs
        best = [float(job.utility_at(float(low) * tick)) for job, low in zip(jobs, lower.tolist(), strict=True)]
        slack = max(sum(best) - value, 0.0)
        for k, job in enumerate(jobs):
            ticks = np.arange(int(lower[k]), int(upper[k]) + 1)
            floor = best[k] - slack - 1e-9 * (1.0 + abs(best[k]) + slack)  # the least U_k an optimum may have
            keep = job.utility_at(ticks.astype(np.float64) * tick) >= floor
            cap[k] = ticks[keep].max(initial=int(lower[k]))
    else:
        weight = problem.flat.weight
        total = float(weight.sum())
        a = {"makespan": np.zeros_like(weight), "avg-jct": weight}.get(problem.objective, problem.alpha * weight)
        a = a / total
        b = {"makespan": 1.0, "avg-jct": 0.0}.get(problem.objective, 1.0 - problem.alpha)
        low_real = lower * tick
        least = float(a @ (low_real - problem.flat.release) + b * low_real.max(initial=0.0))
        slack = max(value - least, 0.0) / tick * (1 + 1e-9) + 1e-9
        if b > 0:
            cap = np.minimum(cap, lower.max(initial=0) + slack / b)
        positive = a > 0
        cap[positive] = np.minimum(cap[positive], lower[positive] + slack / a[positive])
    return np.minimum(upper, np.maximum(np.floor(cap + 1e-7).astype(np.int64), done))


def _pairs(problem: ChoiceProblem, upper: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """Step ``starts``: every (alternative, start tick) in its task's window whose run ends in time, and the
    number of them per alternative (an alternative's pairs are consecutive, in tick order).

    A task starts in ``[earliest, latest]`` (release plus head; horizon or deadline minus tail, both with the
    shortest alternatives); an alternative ``a`` of stage ``g`` must also end by the job's bound ``upper`` less
    what follows the stage, ``tail_g - shortest_g``: its start is at most that less ``d_a``. Without it a long
    alternative could start late and run past the horizon (past the completion bound)."""
    lo, hi = problem.earliest_starts(), problem.latest_starts()
    choices = problem.choices
    task = choices.task
    shortest = problem.stage_min_ticks()
    _, tail = problem.flat.heads_tails(shortest)
    after = (np.rint(tail).astype(np.int64) - shortest)[problem.flat.task_stage]  # per task: ticks after its stage
    end_by = upper[problem.job_of_task]
    latest = np.minimum(hi[task], (end_by - after)[task] - problem.alt_ticks)
    width = np.maximum(latest - lo[task] + 1, 0)
    alt = np.repeat(np.arange(task.size), width)
    tick = lo[task][alt] + _ranks(width)
    return alt.astype(np.int64), tick.astype(np.int64), width.astype(np.int64)


def _ranks(width: IntArray) -> IntArray:
    """``0 .. width[i] - 1`` for every ``i``, concatenated."""
    return np.arange(int(width.sum()), dtype=np.int64) - np.repeat(np.cumsum(width) - width, width)


def _size(problem: ChoiceProblem, pair_alt: IntArray, width: IntArray) -> int:
    """Nonzeros of the MILP, about: capacity terms (per tick covered, or per cumulative tick) per resource the
    task needs, and a few more per pair (one alternative, stage end, precedence, gangs, cumulative starts)."""
    needs = (problem.alt_demand > 0).sum(axis=1)  # per alternative
    d = problem.alt_ticks
    pulse = d <= PULSE_MAX_TICKS
    capacity = np.where(pulse, width * d, np.where(width > 0, 2 * width + d, 0)) * needs
    return int(capacity.sum() + 8 * pair_alt.size)


def build_choice_milp(problem: ChoiceProblem, upper: IntArray | None = None) -> ChoiceMilp:
    """The MILP of ``problem`` (module docstring), built by its named steps; ``upper`` bounds every job's
    completion tick (:func:`job_upper` when not given)."""
    upper = job_upper(problem) if upper is None else upper
    pair_alt, pair_tick, width = _pairs(problem, upper)
    size = _size(problem, pair_alt, width)
    if size > MAX_NONZEROS:
        raise InstanceError(f"the time-indexed MILP would have about {size:,} nonzeros (ticks of {problem.tick:g}, "
                            f"{pair_alt.size:,} start variables), above MAX_NONZEROS = {MAX_NONZEROS:,}: use "
                            "spacetime-cp", "jobs")  # fmt: skip
    builder = LPBuilder("max" if problem.objective == "utility" else "min", "spacetime-choices")
    x = builder.add_variables("x", (pair_alt.size,), 0.0, 1.0, integer=True)
    task = problem.choices.task[pair_alt]
    builder.add_rows("one_alternative", problem.num_tasks, task, x.start + np.arange(pair_alt.size), 1.0, 1.0, 1.0)
    y, y_pairs = _capacity(builder, problem, x, pair_alt, pair_tick, width)
    _gangs(builder, problem, x, pair_alt, pair_tick)
    stage_end = _precedence(builder, problem, x, pair_alt, pair_tick)
    _completion(builder, problem, stage_end, upper)
    return ChoiceMilp(builder.build(), pair_alt, pair_tick, x, y, y_pairs, upper)


def _capacity(builder: LPBuilder, problem: ChoiceProblem, x: Block, pair_alt: IntArray, pair_tick: IntArray,
              width: IntArray) -> tuple[Block | None, IntArray]:  # fmt: skip
    """Per unit, tick and resource: running demand at most the capacity (module docstring). Returns the
    cumulative starts' block and the pair of each of its variables."""
    d_alt = problem.alt_ticks
    first = np.cumsum(width) - width  # per alternative, its first pair
    # Short alternatives: x[a, tau] at every tick of its run.
    short = np.flatnonzero(d_alt[pair_alt] <= PULSE_MAX_TICKS)
    d = d_alt[pair_alt[short]]
    pulse = np.repeat(short, d)
    terms = [(pair_alt[pulse], pair_tick[pulse] + _ranks(d), x.start + pulse, np.ones(pulse.size))]
    # Long alternatives: y[a, tau] - y[a, tau - 1] - x[a, tau] = 0, running(t) = y[min(t, last)] - y[t - d].
    long_alts = np.flatnonzero((d_alt > PULSE_MAX_TICKS) & (width > 0))
    y_pairs = np.repeat(first[long_alts], width[long_alts]) + _ranks(width[long_alts])
    y = None
    if y_pairs.size:
        y = builder.add_variables("started_by", (y_pairs.size,), 0.0, 1.0)
        base = np.cumsum(width[long_alts]) - width[long_alts]  # per long alternative, its first y
        later = np.ones(y_pairs.size, dtype=bool)
        later[base] = False
        rows = np.arange(y_pairs.size)
        builder.add_rows("started_by", y_pairs.size,
                         np.concatenate([rows, rows, rows[later]]),
                         np.concatenate([y.start + rows, x.start + y_pairs, y.start + rows[later] - 1]),
                         np.concatenate([np.ones(rows.size), -np.ones(rows.size), -np.ones(int(later.sum()))]),
                         0.0, 0.0)  # fmt: skip
        w, dl = width[long_alts], d_alt[long_alts]
        span = w + dl - 1  # ticks an alternative may run: its first start to its last start's end
        owner = np.repeat(np.arange(long_alts.size), span)
        rel = _ranks(span)
        tick0 = pair_tick[first[long_alts]][owner]
        plus = y.start + base[owner] + np.minimum(rel, w[owner] - 1)
        minus = rel >= dl[owner]
        terms += [(long_alts[owner], tick0 + rel, plus, np.ones(rel.size)),
                  (long_alts[owner][minus], (tick0 + rel)[minus], y.start + base[owner][minus] + rel[minus]
                   - dl[owner][minus], -np.ones(int(minus.sum())))]  # fmt: skip
    _capacity_rows(builder, problem, *(np.concatenate(part) for part in zip(*terms, strict=True)))
    return y, y_pairs


def _capacity_rows(builder: LPBuilder, problem: ChoiceProblem, alt: IntArray, tick: IntArray, column: IntArray,
                   sign: FloatArray) -> None:  # fmt: skip
    """Rows ``sum sign x demand <= capacity`` per (unit, tick, resource) from terms (alternative, tick, column,
    sign): each term counts its alternative's task demand on the alternative's unit at that tick."""
    ticks = int(tick.max(initial=0)) + 1  # rows numbered (unit, tick, resource): ticks must hold every one
    resources = problem.demand.shape[1]
    unit = problem.choices.unit[alt]
    demand = problem.alt_demand[alt]  # its option's own demand, or its stage's
    row = ((unit * ticks + tick)[:, None] * resources + np.arange(resources)[None, :]).ravel()
    value = (demand * sign[:, None]).astype(np.float64).ravel()
    keep = value != 0
    used, local = np.unique(row[keep], return_inverse=True)
    cap = problem.capacity.astype(np.float64).ravel()[(used // (ticks * resources)) * resources + used % resources]
    builder.add_rows("capacity", used.size, local, np.repeat(column, resources)[keep], value[keep], upper=cap)


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
    """Stage ends after their tasks; children start after their parents; identical tasks in start order.

    Rows (``S_t = sum tau x[a, tau]`` over task ``t``'s pairs, its start): ``S_t + d - E_g <= 0`` for every task
    of stage ``g`` (``d`` of the chosen pair), ``E_p - S_t <= 0`` for every task ``t`` of every child of ``p``,
    and ``S_t - S_{t+1} <= 0`` for consecutive identical tasks of a stage."""
    flat, choices = problem.flat, problem.choices
    end_tick = pair_tick + problem.alt_ticks[pair_alt]
    task = choices.task[pair_alt]  # nondecreasing: pairs follow alternatives, alternatives follow tasks
    ends = builder.add_variables("stage_end", (flat.num_stages,), 0.0, float(problem.horizon))
    columns = x.start + np.arange(pair_alt.size)
    builder.add_rows("stage_end", problem.num_tasks, np.concatenate([task, np.arange(problem.num_tasks)]),
                     np.concatenate([columns, ends.start + flat.task_stage]),
                     np.concatenate([end_tick.astype(np.float64), -np.ones(problem.num_tasks)]), upper=0.0)
    pair_first = np.searchsorted(task, np.arange(problem.num_tasks + 1))  # task t's pairs: first[t]:first[t + 1]
    first_task = np.concatenate([[0], np.cumsum(flat.stage_tasks)])
    # One row per (edge, task of the child stage): E_parent - S_task <= 0.
    edges = flat.edges.reshape(-1, 2)
    per_edge = flat.stage_tasks[edges[:, 1]]
    child = np.repeat(first_task[edges[:, 1]], per_edge) + _ranks(per_edge)
    parent = np.repeat(edges[:, 0], per_edge)
    r, c, v = _start_terms(child, pair_first, columns, pair_tick, -1.0)
    rows, cols, vals = [np.arange(child.size), r], [ends.start + parent, c], [np.ones(child.size), v]
    count = child.size
    if problem.identical_tasks():
        # One row per pair of consecutive tasks of a stage: S_t - S_{t+1} <= 0.
        now = np.flatnonzero(flat.task_stage[:-1] == flat.task_stage[1:])
        for sign, owner in ((1.0, now), (-1.0, now + 1)):
            r, c, v = _start_terms(owner, pair_first, columns, pair_tick, sign)
            rows.append(r + count)
            cols.append(c)
            vals.append(v)
        count += now.size
    if count:
        builder.add_rows("precedence", count, np.concatenate(rows), np.concatenate(cols), np.concatenate(vals),
                         upper=0.0)  # fmt: skip
    return ends


def _start_terms(owner: IntArray, pair_first: IntArray, columns: IntArray, pair_tick: IntArray,
                 sign: float) -> tuple[IntArray, IntArray, FloatArray]:  # fmt: skip
    """COO terms of ``sign * S_t`` for row ``i`` and task ``t = owner[i]`` (``S_t = sum tau x`` over its pairs)."""
    width = pair_first[owner + 1] - pair_first[owner]
    pair = np.repeat(pair_first[owner], width) + _ranks(width)
    return np.repeat(np.arange(owner.size), width), columns[pair], sign * pair_tick[pair].astype(np.float64)


def _completion(builder: LPBuilder, problem: ChoiceProblem, stage_end: Block, upper: IntArray) -> None:
    """Completions after every stage of the job, by its bound; the objective."""
    flat, jobs, tick = problem.flat, problem.instance.jobs, problem.tick
    high = np.maximum(upper, problem.release).astype(np.float64)
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
        _utility(builder, problem, completion, upper)


def _utility(builder: LPBuilder, problem: ChoiceProblem, completion: Block, upper: IntArray) -> None:
    """Per job with points, a binary per completion tick: ``C_k = sum tau z`` and ``U_k = sum U_k(tau) z``."""
    jobs, tick = problem.instance.jobs, problem.tick
    for k, job in enumerate(jobs):
        if not job.utility:
            continue
        ticks = _completion_ticks(problem, k, upper)
        worth = job.utility_at(ticks.astype(np.float64) * tick)
        z = builder.add_variables(f"done{k}", (ticks.size,), 0.0, 1.0, cost=worth, integer=True)
        builder.add_rows(f"done{k}_one", 1, np.zeros(ticks.size), z.start + np.arange(ticks.size), 1.0, 1.0, 1.0)
        builder.add_rows(f"done{k}_at", 1, np.zeros(ticks.size + 1),
                         np.concatenate([z.start + np.arange(ticks.size), [completion.start + k]]),
                         np.concatenate([ticks.astype(np.float64), [-1.0]]), 0.0, 0.0)  # fmt: skip


def _completion_ticks(problem: ChoiceProblem, k: int, upper: IntArray) -> IntArray:
    low = int(problem.release[k])
    return np.arange(low, max(low, int(upper[k])) + 1)


def _complete_point(milp: ChoiceMilp, x: FloatArray, plan: Plan, problem: ChoiceProblem) -> FloatArray | None:
    """Fill the other variables of a start point from its plan: cumulative starts, stage ends, completions,
    makespan, gang choices, completion ticks. None if the point breaks a row (it would not help the solver)."""
    flat, columns = problem.flat, milp.lp.columns
    if milp.y is not None:  # the running count of the alternative's starts, restarted at every alternative
        started = x[milp.x.start + milp.y_pairs]
        total = np.cumsum(started)
        fresh = np.flatnonzero(np.r_[True, milp.pair_alt[milp.y_pairs][1:] != milp.pair_alt[milp.y_pairs][:-1]])
        length = np.diff(np.r_[fresh, started.size])
        x[milp.y.start + np.arange(started.size)] = total - np.repeat(total[fresh] - started[fresh], length)
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
            ticks = _completion_ticks(problem, k, milp.upper)
            x[columns[f"done{k}"].start + int(np.searchsorted(ticks, completion[k]))] = 1.0
    return x if milp.lp.max_violation(x) <= 1e-6 else None


def coarsest_tick(problem: ChoiceProblem) -> float:
    """The longest tick of which every duration and release is a whole multiple, when ``problem``'s are whole.

    The problem's tick is a power of ten (durations of 1.5 and 3 take ticks of 0.1); their greatest common
    divisor in ticks makes it 0.5, five times fewer ticks and start variables. Some optimal schedule starts
    every task at a release or another task's end, so on such ticks; utility breakpoints need not be (the
    model values every completion tick exactly) and deadlines are rounded down to it, as any tick's are."""
    if not problem.time_exact:
        return problem.tick
    whole = np.concatenate([problem.alt_ticks, problem.release])
    step = int(np.gcd.reduce(whole[whole > 0])) if np.any(whole > 0) else 1
    return problem.tick * step


def best_plan(problem: ChoiceProblem, witness: Schedule | None, until: float | None = None) -> Plan | None:
    """The best warm plan that keeps every constraint, or None: the list schedule over job orders
    (:func:`fairpack.solver.spacetime.choice_model.searched_list_schedule`, until ``until``) and the fair-share
    schedule."""
    plans = warm_plans(problem, witness)
    loose = problem if problem.units.kind != "machine" else replace(build_problem(
        problem.instance, problem.units, problem.objective, problem.alpha, tick=problem.tick, symmetry=False),
        deadline=problem.deadline)  # fmt: skip
    found = searched_list_schedule(loose, until=until)
    moved = None if found is None else translate(loose, *found, problem)
    if moved is not None:
        plans.append(Plan(moved[0], moved[1], np.ones(len(problem.instance.jobs), dtype=np.int64)))
    best, best_value = None, 0.0
    for plan in plans:
        if not problem.feasible(plan.start, plan.alt):
            continue
        value = problem.value(plan.start, plan.alt)
        if best is None or problem.better(value, best_value):
            best, best_value = plan, value
    return best


def solve_choice_milp(instance: Instance, backend: str = "highs", objective: str | None = None,
                      time_limit: float | None = None, alpha: float = 0.5,
                      fair_completion: dict[str, float] | None = None, fair_cap: bool = True,
                      algorithm: str | None = None, settings: SolverSettings | None = None,
                      placement: str = "servers") -> Result:  # fmt: skip
    """``spacetime`` when tasks choose where and how long to run (placement options, the utility objective, input
    blocks on machines: :func:`fairpack.solver.spacetime.choice_model.uses_choices`); see the module docstring.

    Units as ``spacetime-cp``'s: machines under ``placement='servers'``, else the pooled cluster. Fair caps as
    its too (:func:`fairpack.solver.spacetime.choice_cp.fair_caps`, on the same placement). ``optimal`` only
    when the schedule's objective, recomputed with true durations, equals the proven bound."""
    started = time.perf_counter()
    deadline = Deadline.after(time_limit)
    units = Units.of(instance, "machine" if placement == "servers" else "pool")
    problem = build_problem(instance, units, objective, alpha, fair_completion)
    coarse = coarsest_tick(problem)
    if coarse > problem.tick:
        coarser = build_problem(instance, units, objective, alpha, fair_completion, tick=coarse)
        problem = coarser if coarser.time_exact else problem
    fairness = fair_caps(problem, placement, fair_completion, fair_mode(fair_cap), deadline)
    if isinstance(fairness, Result):
        return replace(fairness, method="spacetime", backend=backend, build_s=time.perf_counter() - started)
    problem, witness, notes = fairness
    warm = best_plan(problem, witness, None if time_limit is None else deadline.until(SEARCH_SHARE))
    # The caps read the warm start's objective in real time: they bound the tick model's only when ticks are exact.
    caps = objective_caps(problem, warm) if warm is not None and problem.time_exact else None
    milp = build_choice_milp(problem, caps)
    point = None if warm is None else milp.start_vector(warm, problem)
    solver = get_backend(backend, algorithm, settings)
    build_s = time.perf_counter() - started
    outcome = _solve(solver, milp.lp, point, deadline, algorithm, notes)
    status, plan = _answer(problem, milp, outcome, warm, time_limit is not None, notes)
    value = None if plan is None else problem.value(plan.start, plan.alt)
    bound = outcome.bound if problem.exact else None
    if status == "optimal":
        status, note = _honest_status(value, bound, problem.exact)
        notes.append(note)
    return Result(status=status, method="spacetime", backend=backend, bound=bound, build_s=build_s,
                  solve_s=outcome.solve_s, solver_objective=value,
                  message="; ".join(n for n in [*notes, outcome.message] if n),
                  schedule=None if plan is None else plan_schedule(problem, plan),
                  extra={"placement": placement, "fair_cap": problem.deadline is not None,
                         "objective_name": problem.objective, "alpha": alpha, "tick": problem.tick,
                         "horizon": float(milp.upper.max(initial=0)) * problem.tick, "model": "choices",
                         "columns": milp.lp.num_columns, "rows": milp.lp.num_rows,
                         "nonzeros": int(milp.lp.matrix.nnz), "warm_start": point is not None})  # fmt: skip


def _solve(solver: Backend, lp: LinearProgram, point: FloatArray | None, deadline: Deadline, algorithm: str | None,
           notes: list[str]) -> SolveOutcome:  # fmt: skip
    """The solve under the time left (``milp``'s rules: not started when loading alone would outlast it, no
    presolve on a large model, a share of the time for the solver)."""
    left = deadline.left() if deadline.end is not None else None
    warm = point if point is not None and "warm_start" in solver.capabilities() else None
    if left is None:
        return solver.solve(lp, warm_start=warm, algorithm=algorithm)
    nonzeros = int(lp.matrix.nnz)
    if left < LOAD_S_PER_NONZERO * nonzeros:
        notes.append(f"the MILP ({nonzeros:,} nonzeros) was not started in the time left")
        return SolveOutcome("time_limit", message="time limit reached before the solve")
    if nonzeros > LIMITED_MAX_NONZEROS:
        notes.append(f"the MILP ({nonzeros:,} nonzeros, {lp.num_rows:,} rows) was not started: HiGHS's root LP of a "
                     f"model above {LIMITED_MAX_NONZEROS:,} nonzeros has run minutes past its time limit without "
                     "checking it; without --time-limit it is solved")  # fmt: skip
        return SolveOutcome("time_limit", message="the MILP was not started under a time limit")
    given = max(SOLVER_SHARE * left, 0.01)
    if solver.name == "highs" and nonzeros > PRESOLVE_MAX_NONZEROS:
        session = solver.session(lp, given, algorithm, presolve=False)
        if warm is not None:
            session.set_start(warm)
        return session.solve()
    return solver.solve(lp, time_limit=given, warm_start=warm, algorithm=algorithm)


def _answer(problem: ChoiceProblem, milp: ChoiceMilp, outcome: SolveOutcome, warm: Plan | None, limited: bool,
            notes: list[str]) -> tuple[Status, Plan | None]:  # fmt: skip
    """The status and the plan to return: the solver's, or the warm start when the solver has none or a worse
    one (it may not have taken the start), or when it calls infeasible what the warm start shows feasible."""
    plan = milp.plan(outcome.x, problem) if outcome.x is not None else None
    status: Status = outcome.status if plan is not None or outcome.status in ("infeasible", "error") else (
        "time_limit" if limited else "error")  # fmt: skip
    if warm is None or status in ("optimal", "error"):
        return status, plan
    if status == "infeasible":  # a model error: never claim it
        notes.append("the MILP reported infeasible, yet the warm start keeps every constraint: returning it")
        return "feasible", warm
    if plan is None or problem.better(problem.value(warm.start, warm.alt), problem.value(plan.start, plan.alt)):
        notes.append("the solver found no better schedule in time: returning the warm start")
        return status, warm
    return status, plan


def _honest_status(value: float | None, bound: float | None, exact: bool) -> tuple[Status, str]:
    """The solver said optimal: keep it only if the problem is exact and the schedule's recomputed objective
    equals the proven bound; else ``feasible``, with the reason."""
    if not exact:
        return "feasible", "durations, demands or utility points rounded to ticks: optimality not proven"
    if value is None or bound is None or not math.isclose(value, bound, rel_tol=1e-6, abs_tol=1e-9):
        return "feasible", (f"the schedule's recomputed objective {value} is not the solver's proven bound {bound}: "
                            "not called optimal")  # fmt: skip
    return "optimal", ""
