"""``spacetime-cp`` when tasks choose where and how long to run: placement options, gangs, utility, locality.

The CP-SAT model of a :class:`fairpack.solver.spacetime.choice_model.ChoiceProblem`, built by named steps
(:meth:`ChoiceCp.build`):

* ``variables`` -- per task a start and an end; per alternative ``(unit, option, duration)`` a presence
  literal and an optional fixed-size interval on the task's start (a task with one alternative uses a
  plain interval). ``end = start + duration`` of the chosen alternative. A variable-size interval per task
  ``[start, end)`` feeds the pooled resource limit (redundant when units are machines).
* ``placement`` -- exactly one alternative per task (or none, for a job an online plan leaves out: then
  all its tasks are absent). A stage with gang options chooses one ``(gang option, group)`` literal or
  "task by task": every alternative implies its stage's choice, and a gang makes every task start at the
  first one's start. The identical tasks of a stage are ordered by start.
* ``precedence`` -- a stage end at or after each of its tasks' ends (and running tasks' ends), children
  start after it; a job completes at or after its sink stages (and its running tasks), by ``T_k`` under fair
  caps.
* ``resources`` -- one cumulative per unit and resource over the alternatives that may land there, plus the
  work already running there (fixed intervals from 0); the pooled cumulative over every task.
* ``objective`` -- ``makespan``, ``avg-jct``, ``mix`` as in :mod:`fairpack.solver.spacetime.cp`, or ``utility``: for a
  job with points one literal per linear piece of ``U_k`` (before the first point, between two points,
  after the last), exactly one true, the completion within the piece, ``U_k = value at the piece's start +
  slope x (C_k - start)``; without points ``U_k = -w_k (C_k - r_k)``. A piecewise-linear ``U_k`` that is
  neither concave nor convex (flat, then falling, then flat) is so modelled exactly. Coefficients are
  scaled to integers like the others (exact when the values and per-tick slopes are decimal with up to
  six places; rounded and then not called proven otherwise). Online plans may add a tie-break towards
  earlier completions, below the resolution of the utility.
* ``hint`` -- a warm start (start tick and alternative per task, jobs present).

:func:`solve_choice_cp` is ``spacetime-cp``'s driver for these instances: the list schedule of
:mod:`fairpack.solver.spacetime.choice_model` (and the fair-share witness, when computed) as hints, then one CP-SAT
solve within the time left.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fairpack.models.result import Result, Schedule, Status
from fairpack.models.types import FloatArray, Instance, InstanceError, IntArray
from fairpack.solver import interrupt
from fairpack.solver.registry import OptionError
from fairpack.solver.spacetime import sat
from fairpack.solver.spacetime.choice_model import (
    ChoiceProblem,
    build_problem,
    list_schedule,
    translate,
)
from fairpack.solver.spacetime.choices import Units
from fairpack.solver.spacetime.cp import Deadline, add_resource_limits
from fairpack.solver.spacetime.fair import FairMode, fair_share, no_fair_share, share_deadline
from fairpack.solver.spacetime.units import bounded_unit, integer_scale


@dataclass(frozen=True)
class Plan:
    """A tick schedule of a choice problem: start tick and alternative per task; ``present`` per job."""

    start: IntArray
    alt: IntArray
    present: IntArray


class ModelOutOfTime(Exception):
    """The deadline passed while the CP-SAT model was being built (one Python call per variable and constraint:
    about 10 us an alternative, so a million alternatives take longer than a short time limit)."""


#: Loop iterations between two reads of the clock while the model is built.
WATCH_EVERY = 2048


class ChoiceCp:
    """The CP-SAT model of a :class:`ChoiceProblem` (module docstring), built by :meth:`build`; with ``until``
    (a ``perf_counter`` time) the build raises :class:`ModelOutOfTime` once that has passed."""

    def __init__(self, problem: ChoiceProblem, until: float | None = None) -> None:
        from ortools.sat.python import cp_model

        self.problem = problem
        self.until = until
        self.model = cp_model.CpModel()
        self.start: list[Any] = []
        self.end: list[Any] = []
        self.literal: list[Any] = []  # per alternative (None: the task's only one)
        self.interval: list[Any] = []  # per alternative
        self.task_interval: list[Any] = []
        self.size: list[Any] = []
        self.present: list[Any] = []  # per job: 1, or a literal when the plan may leave the job out
        self.gang_choice: dict[tuple[int, int, int], Any] = {}  # (stage, option, group) -> literal
        self.stage_end: list[Any] = []
        self.completion: list[Any] = []
        self.utility: list[Any] = []
        self.pieces: dict[int, list[tuple[Any, int, int, Any]]] = {}  # job -> (literal, low, high, offset)
        self.makespan: Any = None
        self.scale = 1.0  # real objective = scale x integer primary objective + offset
        self.offset = 0.0
        self.big = 1  # primary objective multiplier when a tie-break term is added
        self.coef_exact = True

    def build(self) -> ChoiceCp:
        for step in (self.variables, self.placement, self.precedence, self.resources, self.objective):
            self._watch(0)
            step()
        return self

    def _watch(self, iteration: int) -> None:
        """Raise :class:`ModelOutOfTime` when ``until`` has passed (read every ``WATCH_EVERY`` iterations)."""
        if (self.until is not None and iteration % WATCH_EVERY == 0
                and (time.perf_counter() > self.until or interrupt.requested())):  # fmt: skip
            raise ModelOutOfTime

    # --- steps -----------------------------------------------------------------------------------------

    def variables(self) -> None:
        p, model = self.problem, self.model
        lo, hi = p.earliest_starts(), p.latest_starts()
        hi = np.maximum(hi, lo)  # an empty window is caught by the solve (infeasible), not by a domain error
        choices = p.choices
        shortest = np.minimum.reduceat(p.alt_ticks, choices.first[:-1])
        longest = np.maximum.reduceat(p.alt_ticks, choices.first[:-1])
        jobs = len(p.instance.jobs)
        self.present = [1] * jobs if p.planning is None else [model.new_bool_var(f"p{k}") for k in range(jobs)]
        job = p.job_of_task
        planned = p.planning is not None  # a left-out job's tasks take no time (their alternatives are all off)
        for t in range(p.num_tasks):
            self._watch(t)
            start = model.new_int_var(int(lo[t]), int(hi[t]), f"s{t}")
            least = 0 if planned else int(shortest[t])
            end = model.new_int_var(int(lo[t] + least), int(hi[t] + longest[t]), f"e{t}")
            size = model.new_int_var(least, int(longest[t]), f"d{t}")
            self.start.append(start)
            self.end.append(end)
            self.size.append(size)
            present = self.present[int(job[t])]
            # A task of a job an online plan leaves out holds nothing (its interval is absent).
            self.task_interval.append(model.new_interval_var(start, size, end, f"i{t}") if isinstance(present, int)
                                      else model.new_optional_interval_var(start, size, end, present, f"i{t}"))
        for a in range(choices.size):
            self._watch(a)
            t = int(choices.task[a])
            d = int(p.alt_ticks[a])
            if choices.first[t + 1] - choices.first[t] == 1 and p.planning is None:
                self.literal.append(None)
                self.interval.append(model.new_fixed_size_interval_var(self.start[t], d, f"o{a}"))
                model.add(self.size[t] == d)
                continue
            literal = model.new_bool_var(f"x{a}")
            self.literal.append(literal)
            self.interval.append(model.new_optional_fixed_size_interval_var(self.start[t], d, literal, f"o{a}"))
        # A task's length is its chosen alternative's (the interval [start, end) has it as size).
        for t in range(p.num_tasks):
            self._watch(t)
            own = range(int(choices.first[t]), int(choices.first[t + 1]))
            if self.literal[own[0]] is not None:
                model.add(self.size[t] == sum(int(p.alt_ticks[a]) * self.literal[a] for a in own))

    def placement(self) -> None:
        """One alternative per present task; gang or task-by-task per stage; identical tasks in start order."""
        p, model, choices = self.problem, self.model, self.problem.choices
        job = p.job_of_task
        for t in range(p.num_tasks):
            self._watch(t)
            own = [self.literal[a] for a in range(int(choices.first[t]), int(choices.first[t + 1]))]
            if own[0] is None:
                continue
            model.add(sum(own) == self.present[int(job[t])])
        first_task = np.concatenate([[0], np.cumsum(p.flat.stage_tasks)])
        for g in range(p.flat.num_stages):
            tasks = range(int(first_task[g]), int(first_task[g + 1]))
            self._gang(g, tasks)
            if p.identical_tasks():
                for earlier, later in itertools.pairwise(tasks):
                    model.add(self.start[earlier] <= self.start[later])

    def _gang(self, g: int, tasks: range) -> None:
        """A stage with gang options: one (option, group) or task by task; a gang starts together."""
        choices, model = self.problem.choices, self.model
        alts = np.arange(int(choices.first[tasks[0]]), int(choices.first[tasks[-1] + 1]))
        gang = choices.group[alts] >= 0
        if not gang.any():
            return
        keys = sorted({(int(choices.option[a]), int(choices.group[a])) for a in alts[gang].tolist()})
        for option, group in keys:
            self.gang_choice[(g, option, group)] = model.new_bool_var(f"gang{g}_{option}_{group}")
        plain = model.new_bool_var(f"plain{g}") if (~gang).any() else None
        chosen = [*self.gang_choice_of(g, keys), *([plain] if plain is not None else [])]
        model.add(sum(chosen) == self.present[int(self.problem.flat.stage_job[g])])
        for a in alts.tolist():
            literal = self.literal[a]
            if literal is None:
                continue
            group = int(choices.group[a])
            implied = self.gang_choice[(g, int(choices.option[a]), group)] if group >= 0 else plain
            assert implied is not None
            model.add_implication(literal, implied)
        for t in tasks[1:]:
            same = model.add(self.start[t] == self.start[tasks[0]])
            if plain is not None:
                same.only_enforce_if(plain.Not())

    def gang_choice_of(self, g: int, keys: list[tuple[int, int]]) -> list[Any]:
        return [self.gang_choice[(g, option, group)] for option, group in keys]

    def precedence(self) -> None:
        p, model = self.problem, self.model
        flat = p.flat
        first_task = np.concatenate([[0], np.cumsum(flat.stage_tasks)])
        floor = self._stage_floor()
        for g in range(flat.num_stages):
            tasks = range(int(first_task[g]), int(first_task[g + 1]))
            end = model.new_int_var(int(floor[g]), p.horizon + int(p.running_end.max(initial=0)), f"F{g}")
            for t in tasks:
                model.add(end >= self.end[t])
            self.stage_end.append(end)
        for parent, child in flat.edges.tolist():
            for t in range(int(first_task[child]), int(first_task[child + 1])):
                model.add(self.start[t] >= self.stage_end[parent])
        has_child = np.zeros(flat.num_stages, dtype=bool)
        has_child[flat.edges[:, 0]] = True
        top = p.horizon + int(p.running_end.max(initial=0))
        if p.planning is not None:
            top = max(top, int(p.planning.absent.max(initial=0)))
        for k in range(len(p.instance.jobs)):
            low = int(p.release[k]) if p.planning is None else int(max(p.release[k], p.planning.floor[k]))
            high = top if p.deadline is None else min(top, int(p.deadline[k]))
            completion = model.new_int_var(low, max(low, high), f"C{k}")
            for g in np.flatnonzero((flat.stage_job == k) & ~has_child).tolist():
                model.add(completion >= self.stage_end[g])
            if p.planning is not None:
                absent = int(max(p.planning.absent[k], low))
                model.add(completion == absent).only_enforce_if(self.present[k].Not())
            self.completion.append(completion)
        self.makespan = model.new_int_var(0, top, "M")
        for completion in self.completion:
            model.add(self.makespan >= completion)

    def _stage_floor(self) -> IntArray:
        """Per stage, the tick before which it cannot end (its tasks already running)."""
        p = self.problem
        return p.planning.stage_floor if p.planning is not None else np.zeros(p.flat.num_stages, dtype=np.int64)

    def resources(self) -> None:
        p, model, choices = self.problem, self.model, self.problem.choices
        demand = p.demand[p.flat.task_stage]
        per_unit: list[list[int]] = [[] for _ in range(p.units.count)]
        for a in range(choices.size):
            per_unit[int(choices.unit[a])].append(a)
        fixed: list[list[tuple[Any, IntArray]]] = [[] for _ in range(p.units.count)]
        for i, (u, end) in enumerate(zip(p.planning.running.unit.tolist() if p.planning else [],
                                         p.running_end.tolist(), strict=True)):  # fmt: skip
            if end > 0:
                fixed[u].append((model.new_fixed_size_interval_var(0, int(end), f"run{i}"), p.running_demand[i]))
        for u in range(p.units.count):
            self._watch(0)
            alts = per_unit[u]
            if not alts and not fixed[u]:
                continue
            intervals = [self.interval[a] for a in alts] + [iv for iv, _ in fixed[u]]
            heights = np.array([p.alt_demand[a] for a in alts] + [d for _, d in fixed[u]],
                               dtype=np.int64).reshape(len(intervals), -1)  # fmt: skip
            add_resource_limits(model, intervals, heights, p.capacity[u])
        if p.units.count > 1 and np.any(p.alt_demand != demand[choices.task]):
            # Options with their own demands: the pooled bound over every alternative's optional interval.
            heights = np.vstack([p.alt_demand, *[d[None, :] for unit in fixed for _, d in unit]])
            add_resource_limits(model, [self.interval[a] for a in range(choices.size)] + [iv for unit in fixed
                                for iv, _ in unit], heights.astype(np.int64), p.capacity.sum(axis=0))  # fmt: skip
        elif p.units.count > 1:
            pooled = p.capacity.sum(axis=0)
            rows = [self.task_interval[t] for t in range(p.num_tasks)]
            extra = [iv for unit in fixed for iv, _ in unit]
            heights = np.vstack([demand, *[d[None, :] for unit in fixed for _, d in unit]]) if extra else demand
            add_resource_limits(model, rows + extra, heights.astype(np.int64), pooled)

    def objective(self) -> None:
        if self.problem.objective == "utility":
            self._utility_objective()
        else:
            self._time_objective()

    def _time_objective(self) -> None:
        p = self.problem
        weight = p.flat.weight
        total = float(weight.sum())
        job_coef = {"makespan": np.zeros_like(weight), "avg-jct": weight}.get(p.objective, p.alpha * weight)
        makespan_coef = total if p.objective == "makespan" else 0.0 if p.objective == "avg-jct" else (
            (1 - p.alpha) * total)  # fmt: skip
        unit, self.coef_exact = integer_scale(np.concatenate([job_coef, [makespan_coef]]))
        ints = np.round(job_coef / unit).astype(np.int64)
        primary = sum(int(c) * v for c, v in zip(ints.tolist(), self.completion, strict=True) if c)
        primary += round(makespan_coef / unit) * self.makespan
        self.scale = unit * p.tick / total
        self.offset = -float(job_coef @ p.flat.release) / total
        self._minimise(primary)

    def _utility_objective(self) -> None:
        """Maximise the total utility: piecewise-linear per job (module docstring).

        A piece's slope is a value difference over a tick span, a rational number (a drop of 7 over 3 ticks
        is -7/3 a tick): every coefficient is multiplied by the least common multiple of the spans (when it
        stays small) so that the integer objective is exact, and the real objective is recovered by dividing.
        """
        p = self.problem
        pieces = [_pieces(job.utility, p.tick) if job.utility else None for job in p.instance.jobs]
        spans = [int(span) for piece in pieces if piece is not None for span in piece[3][piece[3] > 0].tolist()]
        common = _common_multiple(spans)
        numbers = [x * common for piece in pieces if piece is not None for x in piece[1]]
        numbers += [dv * (common / dt) for piece in pieces if piece is not None
                    for dv, dt in zip(piece[2].tolist(), piece[3].tolist(), strict=True) if dt > 0]  # fmt: skip
        numbers += [job.weight * p.tick * common for job, piece in zip(p.instance.jobs, pieces, strict=True)
                    if piece is None]  # fmt: skip
        # Coefficients times the completions they weigh (and the tie-break factor) must fit CP-SAT's integers:
        # at durations of 1e13 a job without points is worth weight x 1e13 per tick.
        unit, self.coef_exact = bounded_unit(np.array([*numbers, 1.0]), float(self._top() + 1) * self._tiebreak())
        terms = []
        for k, piece in enumerate(pieces):
            if piece is None:
                terms.append(-round(p.instance.jobs[k].weight * p.tick * common / unit) * self.completion[k])
            else:
                terms.append(self._piecewise(k, piece, unit, common))
        self.scale = -unit / common
        self.offset = sum(job.weight * job.release for job in p.instance.jobs if not job.utility)
        self._minimise(-sum(terms))

    def _piecewise(self, k: int, piece: tuple[IntArray, FloatArray, FloatArray, IntArray], unit: float,
                   common: int) -> Any:  # fmt: skip
        """``U_k`` in integer units (``common`` x the values, over ``unit``): one literal per piece, the
        completion within it."""
        model, completion = self.model, self.completion[k]
        times, values, drops, spans = piece
        literals, value = [], 0
        bounds = [(-(2**40), int(times[0]))] + [(int(a), int(b)) for a, b in itertools.pairwise(times.tolist())]
        bounds.append((int(times[-1]), 2**40))
        for j, (low, high) in enumerate(bounds):
            literal = model.new_bool_var(f"u{k}_{j}")
            model.add(completion >= low).only_enforce_if(literal)
            model.add(completion <= high).only_enforce_if(literal)
            literals.append(literal)
            value += round(values[j] * common / unit) * literal
            offset = None
            if drops[j] != 0 and spans[j] > 0:
                offset = model.new_int_var(0, high - low, f"x{k}_{j}")
                model.add(offset == completion - low).only_enforce_if(literal)
                model.add(offset == 0).only_enforce_if(literal.Not())
                value += round(drops[j] * (common // int(spans[j])) / unit) * offset
            self.pieces.setdefault(k, []).append((literal, low, high, offset))
        model.add_exactly_one(literals)
        self.utility.append(value)
        return value

    def _top(self) -> int:
        """The latest tick a completion can take."""
        p = self.problem
        absent = int(p.planning.absent.max(initial=0)) if p.planning is not None else 0
        return max(p.horizon, absent) + int(p.running_end.max(initial=0))

    def _tiebreak(self) -> int:
        """The factor on the primary objective when earlier completions break its ties (1: no tie-break)."""
        p = self.problem
        if p.planning is None or not p.planning.tiebreak:
            return 1
        return int(len(self.completion) * (self._top() + 1) + 1)

    def _minimise(self, primary: Any) -> None:
        self.big = self._tiebreak()
        if self.big > 1:
            # Earlier completions break ties (a job whose value is spent, or a plan that meets a deadline either
            # way, still finishes as early as it can): their whole sum stays below one unit of the primary.
            self.model.minimize(self.big * primary + sum(self.completion))
        else:
            self.model.minimize(primary)

    def hint(self, plan: Plan) -> None:
        p, model, choices = self.problem, self.model, self.problem.choices
        model.clear_hints()
        for t, value in enumerate(plan.start.tolist()):
            model.add_hint(self.start[t], int(value))
        chosen = np.zeros(choices.size, dtype=bool)
        chosen[plan.alt] = True
        chosen &= plan.present[p.job_of_task[choices.task]] > 0
        for a, (literal, value) in enumerate(zip(self.literal, chosen.tolist(), strict=True)):
            self._watch(a)
            if literal is not None:
                model.add_hint(literal, value)
        for (g, option, group), literal in self.gang_choice.items():
            t = int(np.searchsorted(p.flat.task_stage, g))
            a = int(plan.alt[t])
            model.add_hint(literal, bool(choices.option[a] == option and choices.group[a] == group))
        if p.planning is not None:
            for k, literal in enumerate(self.present):
                model.add_hint(literal, bool(plan.present[k]))
        self._hint_derived(plan)

    def _hint_derived(self, plan: Plan) -> None:
        """Hint what follows from the plan too (ends, stage ends, completions, makespan, utility pieces): a hint
        that names only the choices leaves CP-SAT to complete the rest, and it may complete them badly."""
        p, model = self.problem, self.model
        end = plan.start + p.alt_ticks[plan.alt]
        if p.planning is not None:
            end = np.where(plan.present[p.job_of_task] > 0, end, plan.start)
        for t, value in enumerate(end.tolist()):
            model.add_hint(self.end[t], int(value))
            present = p.planning is None or plan.present[int(p.job_of_task[t])] > 0
            model.add_hint(self.size[t], int(p.alt_ticks[plan.alt[t]]) if present else 0)
        stage_end = self._stage_floor().copy()
        np.maximum.at(stage_end, p.flat.task_stage, end)
        for g, value in enumerate(stage_end.tolist()):
            model.add_hint(self.stage_end[g], int(value))
        completion = p.completions(plan.start, plan.alt)
        if p.planning is not None:
            completion = np.where(plan.present > 0, completion, np.maximum(p.planning.absent, completion))
        for k, value in enumerate(completion.tolist()):
            model.add_hint(self.completion[k], int(value))
            chosen = False
            for literal, low, high, offset in self.pieces.get(k, []):
                inside = not chosen and low <= value <= high
                chosen |= inside
                model.add_hint(literal, inside)
                if offset is not None:
                    model.add_hint(offset, int(value - low) if inside else 0)
        model.add_hint(self.makespan, int(completion.max(initial=0)))

    def read(self, solver: Any) -> Plan:
        """The plan in the solver's solution."""
        choices = self.problem.choices
        start = np.array([solver.value(v) for v in self.start], dtype=np.int64)
        alt = np.array(choices.first[:-1], dtype=np.int64)  # an absent job's tasks keep their first alternative
        for a, literal in enumerate(self.literal):
            if literal is None or solver.boolean_value(literal):
                alt[int(choices.task[a])] = a
        present = np.array([1 if isinstance(x, int) else int(solver.boolean_value(x)) for x in self.present],
                           dtype=np.int64)  # fmt: skip
        return Plan(start, alt, present)

    def real_bound(self, bound: float) -> float:
        """A proven bound of the real objective from CP-SAT's bound of the integer one."""
        primary = bound / self.big if self.big > 1 else bound
        return float(primary * self.scale + self.offset)


def _pieces(points: tuple[tuple[float, float], ...], tick: float) -> tuple[IntArray, FloatArray, FloatArray,
                                                                            IntArray]:  # fmt: skip
    """Breakpoint ticks, the value at each piece's start, and each piece's value change over its tick span
    (the slope per tick is ``drop / span``: kept as the two numbers, since it is rarely a decimal)."""
    times = np.array([t for t, _ in points]) / tick
    ticks = np.rint(times).astype(np.int64)
    values = np.array([v for _, v in points], dtype=np.float64)
    starts = np.concatenate([[values[0]], values])  # before the first point: its value, flat
    drops = np.zeros(len(points) + 1)
    spans = np.zeros(len(points) + 1, dtype=np.int64)
    if len(points) > 1:
        drops[1:-1] = np.diff(values)
        spans[1:-1] = np.diff(ticks)
    return ticks, starts, drops, spans


#: The heuristics tried for that answer, the fastest first (sjf took 0.55 s on 25,256 tasks x 40 machines where
#: carbyne took 3.3 s and drf-strict 5.3 s).
FALLBACK_HEURISTICS = ("sjf", "tetris", "drf-dag", "carbyne")

#: The largest common multiple of utility tick spans the objective is scaled by (larger: no scaling, rounded).
MAX_COMMON_SPAN = 10**6


def _common_multiple(spans: list[int]) -> int:
    """The least common multiple of ``spans`` (1 when it would exceed ``MAX_COMMON_SPAN``: then the slopes are
    rounded, and the model says it is not exact)."""
    common = 1
    for span in set(spans):
        common = math.lcm(common, span)
        if common > MAX_COMMON_SPAN:
            return 1
    return common


# --------------------------------------------------------------------------------------------- driver


def solve_plan(problem: ChoiceProblem, hints: list[Plan], time_limit: float, workers: int = 1, seed: int = 0,
               log: bool = False, work_limit: float | None = None, quick: bool = False,
               until: float | None = None, build_until: float | None = None,
               ) -> tuple[Plan | None, str, float | None, ChoiceCp]:  # fmt: skip
    """Build and solve ``problem`` with CP-SAT: the best plan (or None), CP-SAT's status name and its proven
    bound of the real objective (None when not proven exact). ``work_limit`` also stops CP-SAT after that much
    deterministic time (its own work units, about seconds): the same run then gives the same plan however
    loaded the machine is, as long as ``time_limit`` (wall clock) does not come first. ``quick`` skips CP-SAT's
    presolve, probing and symmetry detection, which on a few thousand alternatives take seconds before the
    search even starts (it reaches the warm start at once, and proves less). ``until`` (a ``perf_counter``
    time) ends the solve then instead, however long the model took to build (``time_limit`` is then the least
    CP-SAT gets). ``build_until`` (a ``perf_counter`` time) stops building the model then: the status is
    ``MODEL_NOT_BUILT`` and the plan the best feasible hint."""
    from ortools.sat.python import cp_model

    cp = ChoiceCp(problem, build_until)
    best = best_hint(problem, hints)
    try:
        cp.build()
        if best is not None:
            cp.hint(best)
    except ModelOutOfTime:
        return _best_feasible(problem, hints), "MODEL_NOT_BUILT", None, cp
    solver = cp_model.CpSolver()
    limit = float(time_limit) if until is None else max(until - time.perf_counter(), float(time_limit))
    if build_until is not None:  # the time the model and its hint took is gone
        limit = min(limit, build_until - time.perf_counter())
    solver.parameters.max_time_in_seconds = max(limit, 0.01)
    solver.parameters.num_workers = max(1, int(workers))
    solver.parameters.random_seed = int(seed)
    solver.parameters.log_search_progress = log
    if work_limit is not None:
        solver.parameters.max_deterministic_time = max(float(work_limit), 0.001)
    if quick:
        solver.parameters.cp_model_presolve = False
        solver.parameters.cp_model_probing_level = 0
        solver.parameters.symmetry_level = 0
    code = sat.run(solver, cp.model)
    status = solver.status_name(code)
    plan = cp.read(solver) if code in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
    usable = _best_feasible(problem, hints)
    if usable is not None and (plan is None or problem.better(problem.value(usable.start, usable.alt, usable.present),
                                                              problem.value(plan.start, plan.alt, plan.present))):
        plan = usable  # CP-SAT may stop before reaching a feasible hint
    bound = cp.real_bound(solver.best_objective_bound) if status in ("OPTIMAL", "FEASIBLE") else None
    return plan, status, bound, cp


def _best_feasible(problem: ChoiceProblem, hints: list[Plan]) -> Plan | None:
    """The best of the feasible hints (None without one)."""
    return best_hint(problem, [h for h in hints if problem.feasible(h.start, h.alt, h.present)])


def best_hint(problem: ChoiceProblem, hints: list[Plan]) -> Plan | None:
    """The hint of the best objective value (feasible or not), None without hints."""
    best, value = None, 0.0
    for plan in hints:
        current = problem.value(plan.start, plan.alt, plan.present)
        if best is None or problem.better(current, value):
            best, value = plan, current
    return best


def plan_schedule(problem: ChoiceProblem, plan: Plan, origin: float = 0.0) -> Schedule:
    """The plan's tasks as a ``Schedule`` in real time (true durations; machine units name machines)."""
    flat, choices, units = problem.flat, problem.choices, problem.units
    begin = origin + plan.start.astype(np.float64) * problem.tick
    unit = choices.unit[plan.alt]
    placed: dict[str, Any] = {}
    if units.kind == "machine":
        placed = {"server": units.server[unit], "machine": units.number[unit]}
    option = choices.option[plan.alt]
    return Schedule(flat.stage_job[flat.task_stage], flat.stage_local[flat.task_stage], flat.task_index, begin,
                    begin + choices.duration[plan.alt], problem.fair_real, **placed,
                    option=option if np.any(option >= 0) else None)  # fmt: skip


def warm_plans(problem: ChoiceProblem, witness: Schedule | None, warm: Sequence[Schedule] = ()) -> list[Plan]:
    """Warm starts: the list schedule (on unfiltered alternatives, translated), the fair-share witness and any
    ``warm`` schedules (e.g. an online policy's on the same instance), where their starts are whole ticks."""
    everyone = np.ones(len(problem.instance.jobs), dtype=np.int64)
    found = []
    loose = problem if problem.units.kind != "machine" else build_problem(
        problem.instance, problem.units, problem.objective, problem.alpha, tick=problem.tick, symmetry=False)
    listed = list_schedule(loose)
    if listed is not None:
        moved = translate(loose, *listed, problem)
        if moved is not None:
            found.append(Plan(moved[0], moved[1], everyone))
    for schedule in [*([witness] if witness is not None else []), *warm]:
        converted = _from_schedule(problem, loose, schedule)
        if converted is not None:
            found.append(Plan(converted[0], converted[1], everyone))
    return found


def _from_schedule(problem: ChoiceProblem, loose: ChoiceProblem, schedule: Schedule) -> tuple[IntArray,
                                                                                                IntArray] | None:
    """A simulated schedule as a plan: start ticks (when whole) and alternatives (when they exist)."""
    flat = problem.flat
    if schedule.server is None or schedule.machine is None or len(schedule) != problem.num_tasks:
        return None
    first_stage = np.concatenate([[0], np.cumsum([len(job.stages) for job in problem.instance.jobs])])
    first_task = np.concatenate([[0], np.cumsum(flat.stage_tasks)])
    task = first_task[first_stage[schedule.job] + schedule.stage] + schedule.index
    order = np.argsort(task)
    ticks = schedule.start[order] / problem.tick
    start = np.rint(ticks).astype(np.int64)
    if not np.allclose(ticks, start, atol=1e-6):
        return None
    machine = (np.searchsorted(problem.units.server, schedule.server) + schedule.machine)[order]
    option = (schedule.option if schedule.option is not None else np.full(len(schedule), -1))[order]
    size, options = loose.units.count, int(loose.choices.option.max(initial=-1)) + 2
    keys = (loose.choices.task * size + loose.choices.unit) * options + loose.choices.option + 1
    lookup = {int(key): a for a, key in enumerate(keys.tolist())}
    alts = [lookup.get(int((t * size + m) * options + o + 1), -1) for t, m, o in
            zip(range(problem.num_tasks), machine.tolist(), option.tolist(), strict=True)]  # fmt: skip
    if min(alts, default=0) < 0:
        return None
    return translate(loose, start, np.array(alts, dtype=np.int64), problem)


def heuristic_schedules(instance: Instance, until: float) -> list[Schedule]:
    """The first complete schedule on machines an event-driven heuristic (``FALLBACK_HEURISTICS``, fastest
    first) gives before ``until`` (a ``perf_counter`` time); none when every one is stopped by it."""
    from fairpack.solver.sim.runs import run_policy
    from fairpack.solver.spacetime.fair import OutOfTime, watched

    for name in FALLBACK_HEURISTICS:
        try:
            schedule, _ = run_policy(instance, name, placement="servers", observers=watched(until))
        except (OutOfTime, InstanceError, OptionError):
            continue
        if interrupt.requested():
            break
        return [schedule]
    return []


def fair_caps(problem: ChoiceProblem, placement: str, fair_completion: dict[str, float] | None, fair: FairMode,
              deadline: Deadline) -> tuple[ChoiceProblem, Schedule | None, list[str]] | Result:  # fmt: skip
    """The fair completion times ``T_k`` (caps under ``cap``, reported under ``report``): the problem with
    them, the fair-share schedule (a warm start) and notes; or a ``time_limit`` result when it did not finish."""
    notes: list[str] = []
    if fair_completion is not None or fair == "off":
        return problem, None, notes
    share = None
    try:
        share = fair_share(problem.instance, placement, None if problem.time_exact else problem.tick,
                           share_deadline(fair, deadline.end))  # fmt: skip
    except InstanceError as error:  # a stage the fair-share simulation cannot run (a gang-only stage)
        if fair == "cap":
            raise OptionError(f"the fair caps C_k <= T_k need the fair-share schedule, and {error.reason}; pass "
                              "--no-fair-cap (or give fair_completion times)", "fair_cap") from None
        notes.append(f"T_k not reported: {error.reason}")
    if share is None and fair == "cap":
        return Result("time_limit", "", "", message=no_fair_share(), extra={"placement": placement, "fair_cap": True})
    if share is None:
        return problem, None, notes
    return problem.with_fair(share.completion, enforce=fair == "cap"), share.schedule, notes


def solve_choice_cp(instance: Instance, objective: str | None = None, time_limit: float | None = None,
                    alpha: float = 0.5, fair_completion: dict[str, float] | None = None, workers: int = 2,
                    seed: int = 0, placement: str = "servers", fair: FairMode = "off",
                    verbose: bool = False, warm: Sequence[Schedule] = ()) -> Result:  # fmt: skip
    """``spacetime-cp`` on an instance whose tasks choose where and how long to run (module docstring);
    ``warm`` schedules of the same instance (complete, on machines) are tried as warm starts."""
    started = time.perf_counter()
    deadline = Deadline.after(time_limit)
    units = Units.of(instance, "machine" if placement == "servers" else "pool")
    problem = build_problem(instance, units, objective, alpha, fair_completion)
    fairness = fair_caps(problem, placement, fair_completion, fair, deadline)
    if isinstance(fairness, Result):
        return replace(fairness, method="spacetime-cp", backend="cpsat", build_s=time.perf_counter() - started)
    problem, witness, notes = fairness
    hints = warm_plans(problem, witness, warm)
    if _best_feasible(problem, hints) is None and placement == "servers" and time_limit is not None:
        # Nothing to return should the model not be built or solved in time: an event-driven heuristic's
        # schedule first (the list schedule may be too large to profile, and with --no-fair-cap there is no
        # fair-share witness).
        # It may take all the time left: an answer is worth more than a model that cannot start in time.
        hints = warm_plans(problem, witness, [*warm, *heuristic_schedules(instance, deadline.until(1.0))])
    build_s = time.perf_counter() - started
    plan, status, bound, cp = solve_plan(problem, hints, deadline.left() if time_limit is not None else 1e9,
                                         workers, seed, verbose, build_until=deadline.end)  # fmt: skip
    if status == "MODEL_NOT_BUILT":
        notes.append(f"the CP-SAT model ({problem.choices.size:,} alternatives) was not built in the time left"
                     + ("; returning the best warm start" if plan is not None else ""))  # fmt: skip
    exact = problem.exact and cp.coef_exact
    schedule = None if plan is None else plan_schedule(problem, plan)
    value = None if plan is None else problem.value(plan.start, plan.alt)
    if not exact:
        notes.append("durations, demands or objective coefficients rounded: optimality not proven")
    return Result(status=_status(status, plan is not None, exact, time_limit is not None), method="spacetime-cp",
                  backend="cpsat", bound=bound if exact else None, build_s=build_s,
                  solve_s=time.perf_counter() - started - build_s, solver_objective=value, message="; ".join(notes),
                  schedule=schedule,
                  extra={"placement": placement, "fair_cap": problem.deadline is not None,
                         "objective_name": problem.objective, "alpha": alpha, "tick": problem.tick,
                         "horizon": problem.horizon * problem.tick, "tasks_total": problem.num_tasks,
                         "alternatives": problem.choices.size, "cp_status": status,
                         "model": "choices"})  # fmt: skip


def _status(cp_status: str, found: bool, exact: bool, limited: bool) -> Status:
    if cp_status == "OPTIMAL":
        return "optimal" if exact else "feasible"
    if cp_status == "INFEASIBLE":
        return "infeasible"
    if found:
        return "time_limit" if limited else "feasible"
    return "time_limit" if limited else "error"

