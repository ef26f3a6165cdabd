"""``tetrisched`` and ``alsched`` on the simulator: the exact space-time model, solved at every cycle.

Tetrisched (Tumanov et al., EuroSys'16) at every scheduling event solves one model over all pending jobs
(global rescheduling), with plan-ahead window ``W``: a task that could start now may be planned to start
anywhere in ``[now, now + W]``, on any of its alternatives (option, machines, believed duration), and a job
may be left out of the plan. The plan maximises the total utility (:mod:`fairpack.solver.spacetime.choice_cp`): a job's
piecewise-linear points (shifted to now), ``-w x completion`` for best-effort jobs, and a left-out job counts
as completing after the window: at ``now + W +`` its slowest remaining path ``+ 1`` tick (so a plan that
places it in the window is preferred when that helps it at all). Ties go to earlier completions (so a job
that meets its deadline either way still runs where it is fastest, and one whose value is spent still runs
as soon as it can). Only the
placements that start *now* are committed; everything else is planned again at the next event, so a wait
for a busy preferred machine is a decision that is revisited, not a reservation.

* Work already running holds its machines until its *believed* end (launch + believed duration; one that has
  overrun is believed to end one tick from now); its stage ends no earlier, and children start after it.
* ``units=class`` (default): the plan places tasks on server classes, each holding ``count x capacity``
  (machines with the same labels aggregated, as Tetrisched's partitions); committed tasks then go to the
  class's machines by best fit, and a task the fragmented machines cannot take waits for the next cycle.
  ``units=machine`` plans every machine exactly (slower on large clusters).
* Per-cycle time limit ``cycle_limit`` (default 1 s, wall clock, for the whole cycle: model, warm start and
  CP-SAT with one worker): the best plan found by then is used. With ``deterministic=true`` the limit is
  CP-SAT's deterministic time instead (work units of about a second each), so that a run repeats exactly
  however loaded the machine is (a wall clock of ten times as much guards against stalls); the benchmarks
  use it. Beyond ``QUICK_ALTERNATIVES`` alternatives CP-SAT skips presolve, probing and symmetry detection.
  Warm start: the previous cycle's plan for the tasks still pending (their planned starts moved to the new
  origin), the list schedule for the rest.
* ``cycle=C`` (default 0): plan at every event (arrivals, task ends); with ``C > 0``, only every ``C`` time
  units (events in between wait for the cycle), as a periodic scheduler does.
* Time is planned in ticks of the instance's own unit (durations and releases are whole ticks); believed
  durations are rounded up to ticks.
* ``alsched`` (Tumanov et al., SoCC'12) is the same model with ``W = 0``: it places only on what is free now,
  choosing the options that maximise utility, and never waits for a busy preferred machine.

Counters: ``cycles``, ``cycles_optimal`` (plans CP-SAT proved optimal within the limit), ``cycle_s_mean`` and
``cycle_s_max`` (model build and solve), ``committed`` (tasks launched), ``deferred`` (committed tasks the
machines could not take), ``idle_starts`` (cycles whose plan started nothing on an idle cluster, so the list
schedule's tasks that start now were committed: a job whose tasks cannot all start within the window is left out
of every plan, and with nothing running no later event would plan again).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

import numpy as np

from fairpack.models.types import FloatArray, Instance, IntArray, Job, Stage
from fairpack.solver import interrupt
from fairpack.solver.registry import OptionError
from fairpack.solver.sim.cluster import fit_count
from fairpack.solver.sim.engine import Simulation
from fairpack.solver.sim.policies.options import choice, duration, flag
from fairpack.solver.sim.policies.soft import SoftPolicy
from fairpack.solver.sim.workload import Workload
from fairpack.solver.spacetime.choice_cp import Plan, best_hint, solve_plan
from fairpack.solver.spacetime.choice_model import (
    ChoiceProblem,
    Planning,
    Running,
    build_problem,
    in_start_order,
    list_schedule,
)
from fairpack.solver.spacetime.choices import Units
from fairpack.solver.spacetime.units import time_unit, to_unit

#: Plan-ahead window by default, in mean (believed) task durations.
DEFAULT_WINDOW = 3.0
#: Seconds of CP-SAT per cycle by default.
DEFAULT_CYCLE_LIMIT = 1.0
#: The wall-clock limit of a cycle's CP-SAT solve, in cycle limits: the cycle limit itself is CP-SAT's
#: deterministic time (so runs repeat exactly on a loaded machine); the wall clock only guards against a stall.
WALL_FACTOR = 10.0
#: Beyond this many alternatives a cycle skips CP-SAT's presolve, probing and symmetry detection (seconds on
#: a few thousand alternatives before the search starts; measured on 50 jobs x 100 machines).
QUICK_ALTERNATIVES = 1000
#: Under a wall-clock cycle limit, the least share of it CP-SAT gets however long the model took to build.
MIN_SOLVE_SHARE = 0.1
#: A start tick that stands for "no window".
NO_WINDOW = 2**40


def shifted_utility(job: Job, now: float) -> tuple[tuple[float, float], ...]:
    """The job's utility points as seen from ``now`` (time 0): ``U'(x) = U(now + x)``."""
    if not job.utility:
        return ()
    later = [(t - now, v) for t, v in job.utility if t > now]
    return ((0.0, float(job.utility_at(now))), *later)


class Tetrisched(SoftPolicy):
    """The planner (module docstring)."""

    name = "tetrisched"

    def __init__(self, jobs: Workload, instance: Instance, extra: dict[str, Any], window: float | None) -> None:
        super().__init__(jobs, instance, extra)
        self.instance = instance
        mean = float(np.average([self.beliefs.duration(g, 0 if jobs.options and jobs.options[g] else -1)
                                 for g in range(jobs.num_stages)], weights=jobs.count))  # fmt: skip
        self.window = DEFAULT_WINDOW * mean if window is None else window
        self.cycle = duration(extra, "cycle", 0.0) or 0.0
        self.limit = duration(extra, "cycle_limit", DEFAULT_CYCLE_LIMIT) or DEFAULT_CYCLE_LIMIT
        self.kind = choice(extra, "units", "class", ("class", "machine"))
        self.deterministic = flag(extra, "deterministic", False)
        self.seed = int(extra.get("seed", 0))
        times = np.concatenate([jobs.duration, jobs.release, *[e.duration for e in jobs.options if e is not None]])
        self.tick, _ = time_unit(times, max(float(times.max(initial=1.0)), 1.0) * 10, instance.time_slot)
        # [believed end, machine, n, option]
        self.records: list[list[list[float]]] = [[] for _ in range(jobs.num_stages)]
        self.previous: dict[int, list[tuple[float, int, int]]] = {}  # group -> [(start, unit, option)] not launched
        self.kept: dict[int, list[int]] = {}  # group -> the original options its planned stage keeps, in order
        self.armed = -math.inf
        self.due_cycle = self.cycle == 0
        self.stats: dict[str, Any] = {"cycles": 0, "cycles_optimal": 0, "cycles_without_plan": 0, "committed": 0,
                                      "deferred": 0, "idle_starts": 0, "cycle_s": []}  # fmt: skip

    # --- events ----------------------------------------------------------------------------------------

    def on_timer(self, sim: Simulation) -> None:
        self.due_cycle = True

    def on_finish(self, sim: Simulation, group: int, tasks: int, machine: int) -> None:
        left = tasks
        for record in sorted(self.records[group], key=lambda r: r[0]):
            if left and int(record[1]) == machine:
                taken = min(left, int(record[2]))
                record[2] -= taken
                left -= taken
        self.records[group] = [r for r in self.records[group] if r[2] > 0]

    def on_event(self, sim: Simulation) -> None:
        pending = bool(np.any(sim.runnable()) or np.any((sim.unlaunched > 0) & sim.released[sim.jobs.stage_job]))
        if self.cycle > 0:
            on_cycle = abs(sim.t / self.cycle - round(sim.t / self.cycle)) <= 1e-9
            if pending and self.armed <= sim.t:
                self.armed = (math.floor(sim.t / self.cycle + 1e-9) + 1) * self.cycle
                sim.wake_at(self.armed)
            if not (self.due_cycle or on_cycle):
                return
            self.due_cycle = False
        if pending and np.any(sim.runnable()):
            self.plan(sim)

    # --- one cycle -------------------------------------------------------------------------------------

    def plan(self, sim: Simulation) -> None:
        started = time.perf_counter()
        built = self.problem(sim)
        if built is None:
            return
        problem, groups = built
        hints = self.hints(problem, groups, sim)
        quick = problem.choices.size > QUICK_ALTERNATIVES
        if self.deterministic:
            plan, status, _, _ = solve_plan(problem, hints, WALL_FACTOR * self.limit, 1, self.seed,
                                            work_limit=self.limit, quick=quick)  # fmt: skip
        else:  # the cycle limit bounds the whole cycle: CP-SAT gets what the model and warm start left
            plan, status, _, _ = solve_plan(problem, hints, MIN_SOLVE_SHARE * self.limit, 1, self.seed, quick=quick,
                                            until=started + self.limit)  # fmt: skip
        self.stats["cycles"] += 1
        if interrupt.requested():
            # Ctrl-C cut this cycle's search short: commit nothing from it (the run stops before its next launch),
            # so the schedule returned is what the uninterrupted run had launched by then.
            return
        if plan is None:
            # CP-SAT found nothing within the cycle limit and no hint keeps the plan's rules (the list schedule
            # may start a ready task beyond the window). Commit the best hint's tasks that start now anyway (they
            # fit now: the list schedule keeps capacity): with nothing running and no event ahead, committing
            # nothing stalled the run for good, pending work never finished (seen on the first cycle of a run,
            # whose CP-SAT start-up ate the limit on a loaded machine).
            self.stats["cycles_without_plan"] += 1
            plan = best_hint(problem, hints)
        self.stats["cycles_optimal"] += status == "OPTIMAL"
        if plan is not None:
            committed = self.stats["committed"]
            self.commit(sim, problem, plan, groups)
            if self.stats["committed"] == committed and not np.any(sim.running > 0):
                self.start_listed(sim, problem, groups)
        self.stats["cycle_s"].append(time.perf_counter() - started)

    def start_listed(self, sim: Simulation, problem: ChoiceProblem, groups: IntArray) -> None:
        """The cluster is idle and the plan starts nothing: commit what the list schedule starts now.

        A job whose tasks cannot all start inside the window (alsched: two ready stages that cannot both start
        now; tetrisched: more serial work than the window holds) is left out of every plan. With nothing running
        no event comes to plan again, so the run stalled with runnable work for good. The list schedule places
        every job, ignoring the window, and what it starts now fits now; the rest is planned again at the next
        event, as usual.
        """
        listed = list_schedule(problem)
        if listed is None:
            return
        self.stats["idle_starts"] += 1
        everyone = np.ones(len(problem.instance.jobs), dtype=np.int64)
        self.commit(sim, problem, Plan(*in_start_order(problem, *listed), everyone), groups)

    def problem(self, sim: Simulation) -> tuple[ChoiceProblem, IntArray] | None:
        """The planning problem of the pending work, and the group of each of its tasks."""
        jobs, now, tick = sim.jobs, sim.t, self.tick
        pending = np.flatnonzero((sim.unlaunched > 0) & sim.released[jobs.stage_job])
        if pending.size == 0:
            return None
        job_ids = np.unique(jobs.stage_job[pending])
        believed_end = self.running_ends(sim)
        sub_jobs, earliest, stage_floor, floor, window, absent = [], [], [], [], [], []
        w_ticks = math.floor(self.window / tick + 1e-9)
        # Queues' running-task caps: the model has none, so the tasks of a queue beyond the room its cap leaves now
        # are planned from the next tick on (as tasks waiting for their parents), and the room of other queues'
        # work is filled now; commits are cut to the cap in any case (``start_tasks``).
        cap_left = (sim.jobs.tenant_cap - sim.tenant_running).tolist() if sim.capped else None
        for k in job_ids.tolist():
            stages = [int(g) for g in pending if jobs.stage_job[g] == k]
            local = {g: i for i, g in enumerate(stages)}
            built = []
            for g in stages:
                parents = [p for p in jobs.parents[g] if p in local]
                waits = max([0.0] + [believed_end[p] for p in jobs.parents[g] if p not in local])
                ready = all(sim.stage_done[p] for p in jobs.parents[g])
                built.append(self.stage(sim, g, tuple(local[p] for p in parents)))
                earliest.append(np.full(int(sim.unlaunched[g]), _ticks(waits, tick)))
                bound = np.full(int(sim.unlaunched[g]), w_ticks if ready else NO_WINDOW)
                if w_ticks == 0:
                    # alsched: a stage starts now or not at all, but a stage wider than the free room starts
                    # what fits now (its first task in start order); the rest are planned later and placed at a
                    # later cycle. Binding every task to now left such a job out of every plan: it never ran.
                    bound[1:] = NO_WINDOW
                if cap_left is not None and ready:
                    queue = int(sim.group_tenant[g])
                    now = int(max(min(cap_left[queue], bound.size), 0))
                    earliest[-1][now:] = np.maximum(earliest[-1][now:], 1)
                    bound[now:] = NO_WINDOW
                    cap_left[queue] -= now
                window.append(bound)
                stage_floor.append(_ticks(believed_end[g], tick))
            original = self.instance.jobs[k]
            sub_jobs.append(Job(original.name, tuple(built), original.weight, 0.0,
                                utility=shifted_utility(original, now)))  # fmt: skip
            job_floor = max([0.0] + [believed_end[g] for g in jobs.job_stages[k].tolist()])
            floor.append(_ticks(job_floor, tick))
            slowest = sum(max(self.believed_options(sim, g)) for g in stages)
            if w_ticks == 0:
                # alsched plans a wide stage's later tasks past now: left out, the job must count as finishing
                # after its tasks run one after another, or a plan leaving it out always looks better.
                slowest = sum(float(sim.unlaunched[g]) * max(self.believed_options(sim, g)) for g in stages)
            absent.append(int(max(floor[-1], earliest[-1].max(initial=0))) + w_ticks + _ticks(slowest, tick) + 1)
        # A pooled run plans on the pool: one unit holding the whole cluster (its one "machine").
        cluster = self.instance.pooled() if sim.cluster.machine_class is None else self.instance
        sub = Instance(self.instance.resources, cluster.servers, jobs=tuple(sub_jobs), time_slot=tick,
                       name="cycle")  # fmt: skip
        units = Units.of(cluster, self.kind)
        running = self.running(sim, units)
        planning = Planning(running, np.concatenate(earliest), np.array(stage_floor, dtype=np.int64),
                            np.array(floor, dtype=np.int64), np.concatenate(window),
                            np.array(absent, dtype=np.int64))  # fmt: skip
        problem = build_problem(sub, units, "utility", planning_ticks=planning, tick=tick)
        groups = np.concatenate([np.repeat([g for g in pending if jobs.stage_job[g] == k],
                                           [int(sim.unlaunched[g]) for g in pending if jobs.stage_job[g] == k])
                                 for k in job_ids.tolist()]).astype(np.int64)  # fmt: skip
        return problem, groups

    def believed_options(self, sim: Simulation, g: int) -> list[float]:
        entry = self.entry(sim, g)
        options = range(entry.count) if entry is not None else [-1]
        return [self.beliefs.duration(g, o) for o in options]

    def stage(self, sim: Simulation, g: int, after: tuple[int, ...]) -> Stage:
        """Group ``g``'s pending tasks as a stage with believed durations (rounded up to ticks)."""
        original = self.instance.jobs[int(sim.jobs.stage_job[g])].stages[int(sim.jobs.stage_local[g])]
        up = [to_unit(d, self.tick) * self.tick for d in self.believed_options(sim, g)]
        options = tuple(replace(o, duration=d) for o, d in zip(original.options, up, strict=True)) if (
            original.options) else ()  # fmt: skip
        kept = list(range(len(options)))
        if sim.unlaunched[g] < sim.jobs.count[g] and options:
            # Some tasks already run task by task: the rest may not form a gang any more.
            kept = [i for i, o in enumerate(options) if not o.same]
            options, up = tuple(options[i] for i in kept), [up[i] for i in kept]
        self.kept[g] = kept
        return Stage(original.name, int(sim.unlaunched[g]), up[0], original.demand, after, options=options)

    def running_ends(self, sim: Simulation) -> FloatArray:
        """Per group, the believed end of its running tasks, from now (0: none; one tick when overrun)."""
        ends = np.zeros(sim.jobs.num_stages)
        for g, records in enumerate(self.records):
            for end, _, _, _ in records:
                ends[g] = max(ends[g], max(end - sim.t, self.tick))
        for g in np.flatnonzero((sim.running > 0) & (ends == 0)).tolist():  # launched before this policy saw it
            ends[g] = max(max(end for end, _ in sim.running_ends[g]) - sim.t, self.tick)
        return ends

    def running(self, sim: Simulation, units: Units) -> Running:
        unit, end, demand = [], [], []
        pooled = sim.cluster.machine_class is None  # one machine, the pool: unit 0 in either kind of units
        classes = np.zeros(1, dtype=np.int64) if pooled else sim.cluster.machine_class
        assert classes is not None
        for g, records in enumerate(self.records):
            for believed, machine, n, option in records:
                unit.append(int(machine) if units.kind == "machine" else int(classes[int(machine)]))
                end.append(_ticks(max(believed - sim.t, self.tick), self.tick))
                demand.append(sim.task_demand(g, int(option)) * n)  # what the tasks hold: their option's demand
        resources = sim.jobs.demand.shape[1]
        return Running(np.array(unit, dtype=np.int64), np.array(end, dtype=np.int64),
                       np.array(demand, dtype=np.float64).reshape(-1, resources))  # fmt: skip

    def hints(self, problem: ChoiceProblem, groups: IntArray, sim: Simulation) -> list[Plan]:
        """The previous plan where it covers the pending tasks, the list schedule for the rest."""
        everyone = np.ones(len(problem.instance.jobs), dtype=np.int64)
        listed = list_schedule(problem)
        start, alt = listed if listed is not None else (problem.earliest_starts(), problem.choices.first[:-1].copy())
        seen: dict[int, int] = {}
        keys = problem.choices.task * (problem.units.count * 1000) + problem.choices.unit * 1000 + (
            problem.choices.option + 1)  # fmt: skip
        lookup = {int(key): a for a, key in enumerate(keys.tolist())}
        reused = False
        for t, g in enumerate(groups.tolist()):
            i = seen.get(g, 0)
            seen[g] = i + 1
            previous = self.previous.get(g, [])
            if i < len(previous):
                begin, unit, option = previous[i]
                kept = self.kept.get(g, [])
                option = kept.index(option) if option in kept else -1 if option < 0 else -2
                a = lookup.get(t * problem.units.count * 1000 + unit * 1000 + option + 1)
                if a is not None:
                    start[t], alt[t] = max(_ticks(begin - sim.t, problem.tick), 0), a
                    reused = True
        plans = [Plan(*in_start_order(problem, start, alt), everyone)]
        if reused and listed is not None:
            plans.append(Plan(*in_start_order(problem, *listed), everyone))
        return plans

    def commit(self, sim: Simulation, problem: ChoiceProblem, plan: Plan, groups: IntArray) -> None:
        """Launch what the plan starts now; remember the rest as the next cycle's warm start."""
        choices, units = problem.choices, problem.units
        job_of = problem.job_of_task
        now_tasks: dict[tuple[int, int, int], int] = {}  # (group, unit, option) -> tasks
        self.previous = {}
        for t, g in enumerate(groups.tolist()):
            a = int(plan.alt[t])
            option = int(choices.option[a])
            option = self.kept[g][option] if option >= 0 else -1  # the group's own numbering
            if plan.present[int(job_of[t])] and plan.start[t] == 0:
                key = (g, int(choices.unit[a]), option)
                now_tasks[key] = now_tasks.get(key, 0) + 1
            elif plan.present[int(job_of[t])]:
                self.previous.setdefault(g, []).append((sim.t + float(plan.start[t]) * problem.tick,
                                                        int(choices.unit[a]), option))
        gangs: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for (g, unit, option), n in sorted(now_tasks.items()):
            entry = self.entry(sim, g)
            if entry is not None and option >= 0 and entry.gang[option]:
                gangs.setdefault((g, option), []).append((unit, n))
                continue
            machines = self.unit_machines(sim, units, unit)
            mask = machines if entry is None or option < 0 else machines & entry.machines[option]
            demand = sim.task_demand(g, option if entry is not None else -1)  # sized by the planned option
            chunks = sim.cluster.best_fit(demand, min(n, int(sim.unlaunched[g])), mask)
            placed = self.start_tasks(sim, g, chunks, option if entry is not None else None)
            self.stats["committed"] += placed
            self.stats["deferred"] += n - placed
        for (g, option), parts in gangs.items():
            self.start_gang(sim, units, g, option, parts)

    def unit_machines(self, sim: Simulation, units: Units, unit: int) -> np.ndarray:
        mask = np.zeros(sim.cluster.machines, dtype=bool)
        if units.kind == "machine" or sim.cluster.machine_class is None:  # a machine, or the pool (one unit)
            mask[unit] = True
        else:
            mask[sim.cluster.machine_class == unit] = True
        return mask

    def start_tasks(self, sim: Simulation, g: int, chunks: list[tuple[int, int]], option: int | None) -> int:
        chunks = self.within_cap(sim, g, chunks, option)  # the plan does not model queues' caps
        placed = self.launch(sim, g, chunks, option)
        believed = self.beliefs.duration(g, option if option is not None else -1)
        named = float(-1 if option is None else option)
        for machine, n in chunks:
            self.records[g].append([sim.t + believed, float(machine), float(n), named])
        return placed

    def start_gang(self, sim: Simulation, units: Units, g: int, option: int, parts: list[tuple[int, int]]) -> None:
        """A gang planned to start now: all of its tasks on the planned units' machines, or none."""
        need = int(sim.unlaunched[g])
        if sum(n for _, n in parts) != need:
            self.stats["deferred"] += sum(n for _, n in parts)
            return
        entry = self.entry(sim, g)
        assert entry is not None
        demand = sim.task_demand(g, option)
        chunks: list[tuple[int, int]] = []
        for unit, n in parts:
            left = n
            for m in np.flatnonzero(self.unit_machines(sim, units, unit) & entry.machines[option]
                                    & sim.cluster.fits(demand)).tolist():  # fmt: skip
                if left == 0:
                    break
                take = int(min(fit_count(sim.cluster.room[m] - demand * sum(c for mm, c in chunks if mm == m),
                                         demand), left))  # fmt: skip
                if take > 0:
                    chunks.append((m, take))
                    left -= take
            if left:
                self.stats["deferred"] += need
                return
        self.stats["committed"] += self.start_tasks(sim, g, chunks, option)

    def counters(self) -> dict[str, Any]:
        seconds = self.stats["cycle_s"]
        return {**super().counters(), "plan_ahead": self.window, "cycle": self.cycle, "cycle_limit": self.limit,
                "units": self.kind, "cycles": self.stats["cycles"], "cycles_optimal": self.stats["cycles_optimal"],
                "cycle_s_mean": float(np.mean(seconds)) if seconds else 0.0,
                "cycle_s_max": float(np.max(seconds)) if seconds else 0.0,
                "cycles_without_plan": self.stats["cycles_without_plan"], "committed": self.stats["committed"],
                "deferred": self.stats["deferred"], "idle_starts": self.stats["idle_starts"]}  # fmt: skip


def _ticks(value: float, tick: float) -> int:
    """``value`` in whole ticks, rounded up (float noise aside, by the rule of ``solver.spacetime.units``)."""
    return to_unit(value, tick)


def make_planner(name: str, jobs: Workload, instance: Instance, extra: dict[str, Any]) -> Tetrisched:
    """``tetrisched`` (``plan_ahead`` default a few mean durations) or ``alsched`` (no plan-ahead)."""
    if name == "alsched":
        if "plan_ahead" in extra:
            raise OptionError("alsched plans no time ahead (W = 0); use tetrisched for a window", "plan_ahead")
        policy = Tetrisched(jobs, instance, extra, 0.0)
        policy.name = "alsched"
        return policy
    return Tetrisched(jobs, instance, extra, duration(extra, "plan_ahead", None))
