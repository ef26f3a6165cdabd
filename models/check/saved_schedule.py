"""The schedule part of ``fairpack check`` (:mod:`fairpack.models.check.saved`): a saved schedule re-verified under
the rules of its method and options, every number beside it recomputed, its fair completion times simulated
again, and every job it leaves unfinished shown to be one that could not run."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fairpack.models.check.claims import RULE_DEFAULTS, Applied, objective_of, placement_of
from fairpack.models.check.compare import SAVED_RTOL, Compare, number
from fairpack.models.check.fairshare import fair_times, rounded_up, whole_multiples
from fairpack.models.check.report import truncate
from fairpack.models.check.rules import SavedRules
from fairpack.models.check.schedule import verify_schedule
from fairpack.models.locality import LEVEL_NAMES, NO_INPUT
from fairpack.models.metrics import late_jobs
from fairpack.models.result import MAXIMISED_OBJECTIVES, Schedule, schedule_objectives
from fairpack.models.saved_tables import (
    ABSENT,
    FLOAT,
    JOB_FIELDS,
    NULL,
    Names,
    SavedJobs,
    SavedTasks,
    fair_nulls,
    job_and_stage_names,
    job_entries,
)
from fairpack.models.stages import stage_table
from fairpack.models.timeline import timeline_summary, utilisation_series
from fairpack.models.tolerance import FIT_EPS, time_tol
from fairpack.models.types import FloatArray, Instance, InstanceError, IntArray
from fairpack.models.view import job_columns, schedule_from_json, schedule_json, task_levels

#: Statuses of a run cut short (a time limit, an interruption): its answer is what it had done.
STOPPED = ("time_limit", "interrupted")
#: Time bins of a simulation's shares (``solver.sim.run``), which the checker recomputes.
TIMELINE_BINS = 100


def check_schedule(instance: Instance, data: dict[str, Any], rules: SavedRules, applied: Applied,
                   problems: list[str]) -> tuple[bool, dict[str, Any], bool, Schedule]:  # fmt: skip
    """Re-verify a saved schedule; returns whether its answer verifies, the recomputed numbers, whether its
    objective is maximised, and the schedule read from the file. Violations go to ``problems``."""
    resolved = Names.of(instance)
    schedule = schedule_from_json(instance, data, resolved)
    placement = placement_of(rules, applied, instance)
    objective_name = objective_of(rules, applied, instance)
    compare = Compare()
    declared = data.get("unfinished_jobs") or []
    if not isinstance(declared, list) or any(not isinstance(name, str) or name not in resolved.jobs
                                             for name in declared):  # fmt: skip
        raise InstanceError(f"unknown jobs in {declared!r}", "unfinished_jobs")
    if rules.exact and declared:
        problems.append(f"unfinished_jobs {declared}: {rules.method} is exact, and its schedule runs every task")
    record = _fair_completion(instance, data, rules, applied, placement, resolved)
    fair = record.times
    capped = rules.fair_caps and fair is not None and (applied["fair_cap"] or isinstance(
        applied["extra.fair_completion"], Mapping))  # fmt: skip
    deadlines = fair if capped else np.full(len(instance.jobs), np.inf)
    excused = [] if rules.exact else [resolved.jobs[name] for name in declared]
    report = verify_schedule(instance, schedule, fair_completion=deadlines, require_placement=placement == "servers",
                             unfinished=excused)  # fmt: skip
    problems.extend(report.violations)
    problems.extend(record.notes)
    if excused:
        problems.extend(_unfinished(instance, data, schedule, rules, applied, placement, excused))
    # Every number the view writes, recomputed: completions, JCTs, delays, utilities, SLO attainment, T_k.
    reported = replace(schedule, fair_completion=record.reported)
    columns = job_columns(instance, reported)
    view = schedule_json(instance, reported, tables=False, columns=columns)  # the tables: column by column below
    for key in ("makespan", "avg_jct", "utility", "slo_attainment"):
        compare.value(key, data.get(key, ...), view.get(key))
    jobs = data.get("jobs", ...)
    if jobs is not ...:
        _jobs(instance, jobs, columns, resolved, compare)
    _locality(instance, data, schedule, compare)
    numbers = schedule_objectives(instance, report.completion)
    value = report.objective(objective_name, float(applied["alpha"]))
    objective = None if math.isnan(value) else value
    compare.value("objective", data.get("objective", ...), objective, required=True)
    compare.value("objective_name", data.get("objective_name", ...), objective_name)
    if "alpha" in data and (rules.exact or applied["objective"] is not None):
        compare.value("alpha", data.get("alpha", ...), float(applied["alpha"]))
    compare.value("placement", data.get("placement", ...), placement_of(rules, applied.claimed, instance))
    if rules.fair_caps:
        compare.value("fair_cap", data.get("fair_cap", ...), bool(applied.claimed["fair_cap"]))
    elif "fair_cap" in data and data["fair_cap"] is not False:  # a method without caps may say so, and only so
        compare.add("fair_cap", f"saved fair_cap {data['fair_cap']}, but {rules.method} has no fair caps")
    if rules.policy:
        compare.value("policy", data.get("policy", ...), rules.method)
    done = ~np.isnan(report.completion)
    if objective is None:
        compare.value("finished_jobs", data.get("finished_jobs", ...), int(done.sum()))
        finished = numbers["avg_jct_finished"]
        compare.value("avg_jct_finished", data.get("avg_jct_finished", ...), None if math.isnan(finished) else finished)
    compare.value("tasks_total", data.get("tasks_total", ...), int(stage_table(instance).tasks.sum()))
    _heuristic_claims(instance, data, schedule, rules, applied, record, compare)
    _timeline(instance, data, schedule, rules, done, compare)
    problems.extend(compare.messages())
    result = {"objective": objective, "makespan": numbers["makespan"], "avg_jct": numbers["avg_jct"],
              "utility": report.utility}  # fmt: skip
    numbers_out = {key: None if value is None or math.isnan(value) else value for key, value in result.items()}
    return report.ok, numbers_out, objective_name in MAXIMISED_OBJECTIVES, schedule


@dataclass(frozen=True)
class _Fair:
    """``T_k`` as the rules decide them: ``times`` (enforced or reported; None: the run has none),
    ``reported`` (what ``jobs.*.fair_completion`` must say: ``nan`` where it may also be left out, as a run whose
    fair-share schedule ran out of its share of the time limit does), ``share`` (``A_k`` at arrival) and notes."""

    times: FloatArray | None = None
    reported: FloatArray | None = None
    share: FloatArray | None = None
    notes: tuple[str, ...] = ()


def _fair_completion(instance: Instance, data: dict[str, Any], rules: SavedRules, applied: Applied,
                     placement: str, names: Names) -> _Fair:  # fmt: skip
    """The fair completion times of a saved schedule (:class:`_Fair`), recomputed or as given to the run."""
    given = applied["extra.fair_completion"]
    jobs = instance.jobs
    if not (rules.fair_caps or rules.fair_report) or given is False:
        return _Fair()
    if isinstance(given, Mapping):
        times = np.array([math.inf if number(given.get(job.name)) is None else float(given[job.name])
                          for job in jobs])  # fmt: skip
        return _Fair(times, times if rules.fair_caps or bool(applied["extra.attach_fair"]) else None)
    notes: list[str] = []
    seen = instance
    if rules.time_unit:
        unit = _time_unit(instance, data, rules, notes)
        if unit is not None and not whole_multiples(instance, unit):
            seen = rounded_up(instance, unit)
    computed = fair_times(seen, "servers" if rules.fair_report == "servers" else placement,
                          shares=rules.fair_report == "reported")  # fmt: skip
    if computed is None:
        if rules.fair_caps and applied["fair_cap"]:
            notes.append("fair caps need the fair-share schedule, and it does not exist here (a stage fits no "
                         "machine, or runs only as a gang): a capped result cannot exist")  # fmt: skip
        return _Fair(notes=tuple(notes))
    times = computed.completion
    capped = rules.fair_caps and bool(applied["fair_cap"])
    if rules.fair_report == "reported" and not bool(applied["extra.attach_fair"]):
        return _Fair(times, None, computed.share, tuple(notes))
    # A capped run always has its T_k; otherwise the fair-share run may have stopped at its part of the time
    # limit, and T_k is then not reported (null): allowed, never a different number.
    saved_jobs = data["jobs"] if isinstance(data.get("jobs"), Mapping | SavedJobs) else {}
    reported = times.copy()
    if not capped:
        reported[fair_nulls(saved_jobs, names, len(jobs))] = np.nan
    return _Fair(times, reported, computed.share, tuple(notes))


def _time_unit(instance: Instance, data: dict[str, Any], rules: SavedRules, notes: list[str]) -> float | None:
    """The time unit an exact method rounded durations and releases up to before computing ``T_k``: the
    instance's ``time.slot`` (``spacetime``), or the recorded ``tick`` (``spacetime-cp``) when it is the unit the
    instance's times give (the finest, 1e-6 slot, when they are not whole in it, or coarser for a horizon
    beyond 1e12 ticks)."""
    slot = float(instance.time_slot)
    if rules.time_unit == "slot":
        saved = number(data.get("slot"))
        if saved is not None and not math.isclose(saved, slot, rel_tol=1e-12):
            notes.append(f"slot {saved:g}: {rules.method}'s time unit is the instance's time.slot {slot:g}")
        return slot
    tick = number(data.get("tick"))
    if tick is None or tick <= 0:
        return None
    if whole_multiples(instance, tick):
        return tick
    finest = slot * 1e-6
    longest = max((job.release for job in instance.jobs), default=0.0) + sum(
        stage.tasks * max([stage.duration, *(o.duration for o in stage.options)])
        * (max(instance.data.factors) if instance.data is not None else 1.0)
        for job in instance.jobs for stage in job.stages)  # fmt: skip
    if tick <= finest * (1 + 1e-9) or longest / (tick / 10) > 1e12:
        return tick
    notes.append(f"tick {tick:g} is not a time unit of this instance: its times are not whole in it, and a tick "
                 f"rounds them only when finer ones ({finest:g}) cannot hold them either")  # fmt: skip
    return None


def _locality(instance: Instance, data: dict[str, Any], schedule: Schedule, compare: Compare) -> None:
    """Every task's ``local`` level, and a simulation's counts of them, recomputed from the blocks."""
    tasks = data.get("tasks")
    if not isinstance(tasks, list | SavedTasks) or len(tasks) != len(schedule):
        return
    placed = schedule.server is not None and schedule.machine is not None and instance.data is not None
    expected = task_levels(instance, schedule) if placed else np.full(len(schedule), NO_INPUT, dtype=np.int64)
    saved = tasks.local if isinstance(tasks, SavedTasks) else _saved_levels(tasks)
    if saved is None:  # some row says something else than a level: row by row, as it says it
        assert isinstance(tasks, list)
        for position in range(len(tasks)):
            _local_message(compare, position, tasks[position], expected[position])
    else:
        differ = np.flatnonzero(saved != expected).tolist()
        names = job_and_stage_names(instance) if differ and isinstance(tasks, SavedTasks) else None
        for position in differ:
            row = tasks[position] if isinstance(tasks, list) else _task_row(tasks, position, names)
            _local_message(compare, position, row, expected[position])
    if isinstance(data.get("locality"), Mapping):
        counts = np.bincount(expected[expected != NO_INPUT], minlength=len(LEVEL_NAMES)).tolist()
        compare.value("locality", data["locality"], dict(zip(LEVEL_NAMES, counts, strict=True)))


def _jobs(instance: Instance, jobs: Any, expected: dict[str, FloatArray], names: Names, compare: Compare) -> None:
    """``compare.value("jobs", jobs, view["jobs"], "jobs")``, column by column: the entries whose every field
    agrees (a float within ``SAVED_RTOL``, null where there is no number, or left out) are passed over at once,
    and each other entry, in the instance's job order, is compared as before, which words its messages."""
    table = jobs if isinstance(jobs, SavedJobs) else job_entries(jobs, names) if isinstance(jobs, dict) else None
    if table is None:  # not an object (compare says so), or a mapping the columns do not take
        job_names, _ = job_and_stage_names(instance)
        values = [[v if math.isfinite(v) else None for v in expected[f].tolist()] for f in JOB_FIELDS]
        view = {name: dict(zip(JOB_FIELDS, row, strict=True))
                for name, row in zip(job_names, zip(*values, strict=True), strict=True)}  # fmt: skip
        compare.value("jobs", jobs, view, "jobs")
        return
    wanted = np.stack([expected[f] for f in JOB_FIELDS], axis=1)
    if not np.array_equal(table.job, np.arange(len(expected[JOB_FIELDS[0]]))):
        wanted = wanted[table.job]  # the file's entries' rows (-o writes them in the instance's order)
    none = ~np.isfinite(wanted)
    numbers = (table.kind == FLOAT) & ~none
    # Compared where both are numbers only, others set to 0 first: arithmetic on nan and inf is slow on x86.
    saved, mine = np.where(numbers, table.value, 0.0), np.where(numbers, wanted, 0.0)
    near = np.abs(saved - mine) <= SAVED_RTOL * np.maximum(1.0, np.abs(mine))
    agree = (table.kind == ABSENT) | ((table.kind == NULL) & none) | (numbers & near)
    differ = ~agree.all(axis=1)
    differ[list(table.entries)] = True
    if not differ.any():
        return
    job_names, _ = job_and_stage_names(instance)
    for position in sorted(np.flatnonzero(differ).tolist(), key=lambda p: int(table.job[p])):
        k = int(table.job[position])
        entry = jobs[job_names[k]] if isinstance(jobs, dict) else table.entry(position)
        row = {f: (v if math.isfinite(v) else None) for f, v in zip(JOB_FIELDS, wanted[position].tolist(),
                                                                     strict=True)}  # fmt: skip
        compare.value(f"jobs.{job_names[k]}", entry, row, "jobs")


def _saved_levels(rows: list[Any]) -> IntArray | None:
    """Every row's ``local`` as a level number (``NO_INPUT`` where absent or null); None where one is not a level
    name, or a row not an object."""
    if not all(isinstance(row, dict) for row in rows):
        return None
    number = {name: position for position, name in enumerate(LEVEL_NAMES)}
    try:
        levels = [NO_INPUT if value is None else number.get(value, -2) for value in (row.get("local") for row in rows)]
    except TypeError:  # an unhashable value
        return None
    out = np.array(levels, dtype=np.int64)
    return None if (out == -2).any() else out


def _task_row(tasks: SavedTasks, position: int, named: Any) -> dict[str, Any]:
    """What the saved row at ``position`` names (its job, stage and task, and level), for a message."""
    names, stages = named
    job, stage, level = int(tasks.job[position]), int(tasks.stage[position]), int(tasks.local[position])
    return {"job": names[job], "stage": stages[job][stage], "index": int(tasks.index[position]),
            "local": None if level == NO_INPUT else LEVEL_NAMES[level]}  # fmt: skip


def _local_message(compare: Compare, position: int, saved: Any, expected: int) -> None:
    level = None if expected == NO_INPUT else LEVEL_NAMES[expected]
    if saved.get("local") != level:
        compare.add("local", f"tasks[{position}] (job {saved.get('job')} stage {saved.get('stage')} task "
                    f"{saved.get('index')}): saved local {saved.get('local')!r} but its block gives {level!r}")


def _heuristic_claims(instance: Instance, data: dict[str, Any], schedule: Schedule, rules: SavedRules,
                      applied: Applied, record: _Fair, compare: Compare) -> None:  # fmt: skip
    """A DAG heuristic's ``T_k`` record: ``fair_completion`` (job -> T_k), ``fair_method``, ``fair_share`` and the
    ``late_jobs`` past ``T_k`` by more than ``fair_margin``."""
    if rules.fair_report != "reported":
        return
    names = [job.name for job in instance.jobs]
    if record.times is None:
        for key in ("fair_completion", "late_jobs"):
            if key in data:
                compare.add(key, f"{key} beside a run that computed no T_k")
        return
    # A job whose fair-share run the time limit cut has no T_k (null): allowed, never a different number.
    saved = data["fair_completion"] if isinstance(data.get("fair_completion"), Mapping) else {}
    times = {n: None if not math.isfinite(v) or saved.get(n, 0) is None else float(v)
             for n, v in zip(names, record.times.tolist(), strict=True)}  # fmt: skip
    compare.value("fair_completion", data.get("fair_completion", ...), times, required=True)
    given = isinstance(applied["extra.fair_completion"], Mapping)
    compare.value("fair_method", data.get("fair_method", ...), dict.fromkeys(names, "given" if given else "drf-strict"))
    if record.share is not None and "fair_share" in data:
        compare.value("fair_share", data["fair_share"], {n: row for n, row in zip(names, record.share.tolist(),
                                                                                    strict=True)})  # fmt: skip
    margin = float(applied["extra.fair_margin"])
    compare.value("fair_margin", data.get("fair_margin", ...), margin)
    late = [names[k] for k in late_jobs(instance, schedule, record.times, margin)]
    compare.value("late_jobs", data.get("late_jobs", ...), late, required=True)


def _timeline(instance: Instance, data: dict[str, Any], schedule: Schedule, rules: SavedRules, done: np.ndarray,
              compare: Compare) -> None:  # fmt: skip
    """A simulation's timeline: ``utilisation_series``, ``shares`` (time-binned dominant shares) and ``summary``."""
    if not rules.policy:
        return
    unfinished = np.flatnonzero(~done)
    if "utilisation_series" in data:
        compare.value("utilisation_series", data["utilisation_series"], utilisation_series(instance, schedule))
    if "summary" in data or "shares" in data:
        summary = timeline_summary(instance, schedule, TIMELINE_BINS, unfinished)
        bins = summary.pop("bins")
        if "shares" in data:
            compare.value("shares", data["shares"], bins)
        if "summary" in data:
            compare.value("summary", data["summary"], summary)


# ------------------------------------------------------------------------------------------ unfinished jobs


def blocked(instance: Instance, stage: Any, placement: str, rule: str, gangs: bool, slots: int) -> bool:
    """Whether a stage can never run: no unit of the placement holds one task (under ``rule``: a slot, or its first
    placement option), no placement option has a machine for it, or a gang finds no group holding it whole."""
    demand = np.asarray(stage.demand, dtype=np.float64)
    pooled = placement != "servers"
    capacity = instance.total_capacity[None, :] if pooled else instance.capacity
    fits = np.all(demand[None, :] <= capacity * (1 + FIT_EPS), axis=1)
    if rule == "slot":  # slots cut from the componentwise-largest server, on every unit of the placement
        slot = instance.capacity.max(axis=0) / slots
        if not bool(np.all(demand <= slot * (1 + 1e-10))):
            return True
        has = capacity > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(has, capacity / np.where(slot > 0, slot, 1.0), np.inf)
        per_machine = np.where(has.any(axis=1), np.floor(ratio.min(axis=1) * (1 + 1e-12)), 0)
        usable = np.all(has | ~(demand > 0)[None, :], axis=1)
        fits = usable & (per_machine > 0)
    if pooled:
        return not bool(fits.any())
    options = list(stage.options)
    if not options:
        return not bool(fits.any())
    if rule == "first-option":
        options = options[:1]
    counts = instance.counts
    for option in options:
        usable = fits & np.array([option.matches(s.labels) for s in instance.servers])
        if not option.same:
            if usable.any():
                return False
            continue
        if not gangs:
            continue
        per_machine = np.array([math.floor(min((c / d for c, d in zip(cap, demand, strict=True) if d > 0),
                                               default=math.inf) + FIT_EPS) for cap in capacity])  # fmt: skip
        groups: dict[str | None, float] = {}
        for c, server in enumerate(instance.servers):
            if usable[c]:
                key = server.label(option.same)
                groups[key] = groups.get(key, 0.0) + per_machine[c] * counts[c]
        if any(room >= stage.tasks for room in groups.values()):
            return False
    return True


def _unfinished(instance: Instance, data: dict[str, Any], schedule: Schedule, rules: SavedRules, applied: Applied,
                placement: str, excused: list[int]) -> list[str]:  # fmt: skip
    """The jobs a run left unfinished could not have run: each missing task's stage (or an ancestor of it) can
    never run under the policy, or the run was cut short -- at its horizon (an option given), by its time limit
    or an interruption (its status) -- and then no listed task starts after the cut."""
    found: list[str] = []
    status = data.get("status")
    horizon = applied["extra.horizon"] if rules.policy else None
    stopped = number(data.get("stopped_at"))
    cut: float | None = None
    if horizon is not None:
        cut = float(horizon)
    if status in STOPPED:
        cut = math.inf if stopped is None else stopped if cut is None else min(cut, stopped)
    if cut is not None and math.isfinite(cut):
        late = np.flatnonzero(schedule.start > cut + time_tol(cut)).tolist()
        jobs = [instance.jobs[schedule.job[r]] for r in late]
        found += truncate("after-the-cut", [
            f"job {job.name} stage {job.stages[schedule.stage[r]].name} task {schedule.index[r]} starts at "
            f"{schedule.start[r]:.6g}, after the run stopped at {cut:.6g}" for job, r in zip(jobs, late, strict=True)])
    if cut is not None:
        return found
    slots = int(applied["slots"]) if number(applied["slots"]) else RULE_DEFAULTS["slots"]
    return found + runnable_unfinished(instance, schedule, excused, placement, rules, slots)


def runnable_unfinished(instance: Instance, schedule: Schedule, unfinished: Sequence[int], placement: str,
                        rules: SavedRules, slots: int) -> list[str]:  # fmt: skip
    """What is wrong with the jobs a run that was not cut short calls ``unfinished``: each must miss only tasks of
    stages that can never run under the policy (``blocked``, or after a blocked stage), and no task of a stage that
    can never run may have run. ``fairpack check`` and the in-process verification of ``simulate`` both apply it."""
    found: list[str] = []
    # Tasks listed per (job, stage) of the unfinished jobs, counted in arrays (a run lists millions of tasks).
    mine = np.isin(schedule.job, np.asarray(list(unfinished), dtype=np.int64))
    pairs, counts = np.unique(np.stack([schedule.job[mine], schedule.stage[mine]]), axis=1, return_counts=True)
    listed = {(int(k), int(s)): int(n) for (k, s), n in zip(pairs.T, counts, strict=True)}
    for k in unfinished:
        job = instance.jobs[k]
        own = [blocked(instance, stage, placement, rules.stage_rule, rules.gangs, slots) for stage in job.stages]
        stuck = list(own)
        changed = True
        while changed:  # a stage after one that can never run never runs either
            changed = False
            for s, stage in enumerate(job.stages):
                if not stuck[s] and any(stuck[p] for p in stage.after):
                    stuck[s] = changed = True
        for s, stage in enumerate(job.stages):
            ran = listed.get((k, s), 0)
            if ran < stage.tasks and not stuck[s]:
                unit = {"slot": f"a slot ({slots} per largest machine)", "first-option": "its first option's machines"}
                where = unit.get(rules.stage_rule, "a machine" if placement == "servers" else "the cluster")
                found.append(f"job {job.name} is called unfinished, but stage {stage.name} could run (its tasks fit "
                             f"{where}) and the run was not cut short: {stage.tasks - ran} of its {stage.tasks} "
                             "tasks are missing")  # fmt: skip
            elif own[s] and ran > 0:
                found.append(f"job {job.name} stage {stage.name} can never run under {rules.method} (its tasks fit no "
                             f"{'slot' if rules.stage_rule == 'slot' else 'machine'}), yet {ran} of its tasks ran")
    return found
