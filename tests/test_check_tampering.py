"""Tampering with a saved result: ``fairpack check`` catches every edit, naming what is wrong.

Each family is a real result (``fairpack solve`` or ``simulate -o``) of one kind of method: exact and heuristic
allocations, hierarchies (pooled and per server class), a simulation over backlogs, exact schedules (pooled, per
machine, without fair caps, the utility objective, locality), a DAG heuristic and simulations (with locality,
placement options, deadlines, a job left unfinished). Each tampering edits one claim of the file -- its status
and bound, what decides the checks (placement, objective, fair caps, the method), or a derived number -- and
then, like a careful forger, makes every other number agree with the edited answer (``forge``), so that the lie
itself is what check must find. Check is given the options the run was given, as its user would; every edit
must end with exit 1 and a violation matching the edit's pattern.

The edits of the tampering campaign that found the checker trusting the file are all here (status/bound,
infeasible, error with no answer, every job unfinished, placement relabelled pooled, the objective switched, a
late job made legal three ways, utility, SLO attainment, a locality level, a hierarchy node's share, a task
dropped from a simulation), with more.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fairpack.models.check.saved import check_saved
from fairpack.models.io import load_instance
from fairpack.models.metrics import guarantee_ratio, guarantee_shortfall, min_weighted_share
from fairpack.models.result import Allocation, job_completion, objective_value, schedule_objectives, unit_names
from fairpack.models.timeline import timeline_summary, utilisation_series
from fairpack.models.types import Instance
from fairpack.models.view import allocation_from_json, allocation_json, result_json, schedule_from_json, schedule_json
from fairpack.solver.api import solve
from fairpack.solver.registry import get_method
from tests.check_cases import cli, instance_files

# ------------------------------------------------------------------------------------------ the families


@dataclass(frozen=True)
class Family:
    instance: str
    run: tuple[Any, ...]
    flags: tuple[Any, ...] = ()  # the options check is given: the run's, as a user gives them

    @property
    def simulated(self) -> bool:
        return self.run[0] == "simulate"


FAMILIES = {
    "drfh": Family("fig1", ("solve", "--method", "drfh")),
    "drfh-int": Family("weighted", ("solve", "--method", "drfh-int")),
    "first-fit": Family("weighted", ("solve", "--method", "first-fit")),
    "hdrf": Family("tree", ("solve", "--method", "hdrf")),  # unlike servers: per server class
    "hdrf-pooled": Family("fig4", ("solve", "--method", "hdrf")),  # alike servers: the pool
    "collapsed": Family("tree", ("solve", "--method", "collapsed")),
    "naive-hdrf": Family("fig4", ("solve", "--method", "naive-hdrf", "--horizon", 20)),
    "backlog": Family("fig1", ("simulate", "--policy", "best-fit", "--horizon", 20)),
    "spacetime-cp": Family("two_jobs", ("solve", "--method", "spacetime-cp")),
    "spacetime": Family("split", ("solve", "--method", "spacetime", "--placement", "servers"),
                        ("--placement", "servers")),
    "no-fair-cap": Family("two_jobs", ("solve", "--method", "spacetime", "--no-fair-cap"), ("--no-fair-cap",)),
    "utility": Family("tetris", ("solve", "--method", "spacetime-cp", "--placement", "servers", "--objective",
                                 "utility", "--no-fair-cap"),
                      ("--placement", "servers", "--objective", "utility", "--no-fair-cap")),
    "locality-cp": Family("blocks", ("solve", "--method", "locality-cp")),
    "carbyne": Family("two_jobs", ("solve", "--method", "carbyne")),
    "fifo": Family("arrivals", ("simulate", "--policy", "fifo")),
    "delay": Family("blocks", ("simulate", "--policy", "delay")),
    "tetrisched": Family("tetris", ("simulate", "--policy", "tetrisched")),
    "slo": Family("slo", ("simulate", "--policy", "fifo")),
    "slots": Family("unplaceable", ("simulate", "--policy", "slots")),
}
ALLOCATIONS = ("drfh", "drfh-int", "first-fit", "hdrf", "hdrf-pooled", "collapsed", "naive-hdrf", "backlog")
EXACT_ALLOCATIONS = ("drfh", "drfh-int", "hdrf", "hdrf-pooled")
HIERARCHIES = ("hdrf", "hdrf-pooled", "collapsed", "naive-hdrf")
SCHEDULES = ("spacetime-cp", "spacetime", "no-fair-cap", "utility", "locality-cp", "carbyne", "fifo", "delay",
             "tetrisched", "slo", "slots")  # fmt: skip
EXACT_SCHEDULES = ("spacetime-cp", "spacetime", "no-fair-cap", "utility", "locality-cp")
CAPPED = ("spacetime-cp", "spacetime")
SIMULATIONS = ("fifo", "delay", "tetrisched", "slo", "slots")
HEURISTICS = ("first-fit", "collapsed", "naive-hdrf", "backlog", "carbyne", *SIMULATIONS)
PLACED = ("spacetime", "utility", "locality-cp", "fifo", "delay", "tetrisched", "slo")
EVERY = tuple(FAMILIES)


@dataclass
class Saved:
    """One family's untampered result: its instance (file and object), the JSON, and check's options."""

    name: str
    path: Path
    instance: Instance
    data: dict[str, Any]
    flags: tuple[Any, ...]
    result: Path

    @property
    def schedule(self) -> bool:
        return "tasks" in self.data


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Saved]:
    folder = tmp_path_factory.mktemp("tampering")
    files = instance_files(folder)
    found = {}
    for name, family in FAMILIES.items():
        out = folder / f"{name}.json"
        code, stdout, stderr = cli(family.run[0], files[family.instance], *family.run[1:], "-o", out, "--quiet")
        assert code == 0, stdout + stderr
        data = json.loads(out.read_text())
        assert data["verified"] is True, (name, data.get("violations"))
        found[name] = Saved(name, files[family.instance], load_instance(files[family.instance]), data, family.flags,
                            out)  # fmt: skip
    return found


# ------------------------------------------------------------------------------------------ a careful forger


def forge(case: Saved, data: dict[str, Any]) -> None:
    """Every number beside the (edited) answer made to agree with it, as the file's own view would say it."""
    if "tasks" in data:
        _forge_schedule(case, data)
    elif "tenants" in data:
        _forge_allocation(case, data)


def _forge_schedule(case: Saved, data: dict[str, Any]) -> None:
    instance = case.instance
    schedule = schedule_from_json(instance, data)
    view = schedule_json(instance, schedule)
    for key in ("makespan", "avg_jct", "utility", "slo_attainment"):
        if key in view:
            data[key] = view[key]
    for name, entry in view["jobs"].items():
        data["jobs"][name].update(entry)
    for row, mine in zip(data["tasks"], view["tasks"], strict=True):
        if "local" in mine:
            row["local"] = mine["local"]
    completion = job_completion(instance, schedule)
    numbers = schedule_objectives(instance, completion)
    name = data.get("objective_name", "makespan")
    objective = objective_value(numbers["makespan"], numbers["avg_jct"], name, data.get("alpha", 0.5),
                                float(view["utility"] or 0.0))  # fmt: skip
    done = ~np.isnan(completion)
    if done.all():
        data["objective"] = objective
        if data.get("bound") is not None:
            data["bound"], data["gap"] = objective, 0.0
    else:
        data.update(objective=None, bound=None, gap=None, finished_jobs=int(done.sum()),
                    avg_jct_finished=numbers["avg_jct_finished"] if done.any() else None)  # fmt: skip
    if "summary" in data:
        unfinished = np.flatnonzero(~done)
        summary = timeline_summary(instance, schedule, 100, unfinished)
        data["shares"] = summary.pop("bins")
        data["summary"] = summary
        data["utilisation_series"] = utilisation_series(instance, schedule)
    if isinstance(data.get("locality"), dict):
        data["locality"] = {level: sum(row.get("local") == level for row in data["tasks"])
                            for level in ("node", "rack", "remote")}  # fmt: skip


def _forge_allocation(case: Saved, data: dict[str, Any]) -> None:
    instance = case.instance
    kind = data["unit_kind"]
    names = unit_names(instance, kind)
    tasks = np.zeros((len(instance.tenants), len(names)))
    for t, tenant in enumerate(instance.tenants):
        for unit, count in data["tenants"][tenant.name]["per_server"].items():
            tasks[t, names.index(unit)] = count
    allocation = Allocation(tasks, kind, data["integral"])
    view = allocation_json(instance, allocation)
    data.update(tenants=view["tenants"], utilisation=view["utilisation"])
    if instance.hierarchy is not None:
        data["nodes"] = view["nodes"]
        data["objective"] = guarantee_shortfall(instance, allocation)
        ratio = guarantee_ratio(instance, allocation)
        data["min_share_guarantee"] = ratio if np.isfinite(ratio) else None
    else:
        data["objective"] = min_weighted_share(instance, allocation)
    if data.get("bound") is not None:
        data["bound"], data["gap"] = data["objective"], 0.0


# ------------------------------------------------------------------------------------------ the edits

#: An edit changes ``data`` (a copy of the saved result) and may return extra options to give check.
Edit = Callable[[Saved, dict[str, Any]], "tuple[Any, ...] | None"]


def _maximised(case: Saved, data: dict[str, Any]) -> bool:
    if case.schedule:
        return data.get("objective_name") == "utility"
    return case.instance.hierarchy is None


def bound_wrong_side(case: Saved, data: dict[str, Any]) -> None:
    shift = -1.0 if _maximised(case, data) else 1.0
    data["bound"] = data["objective"] + shift * max(0.5, abs(data["objective"]) / 2)
    data["status"] = "optimal"


def optimal_without_bound(case: Saved, data: dict[str, Any]) -> None:
    data.update(status="optimal", bound=None, gap=None)


def gap_changed(case: Saved, data: dict[str, Any]) -> None:
    data["gap"] = 0.2


def heuristic_claims_optimal(case: Saved, data: dict[str, Any]) -> None:
    data.update(status="optimal", bound=data["objective"], gap=0.0)


def _no_answer(data: dict[str, Any], status: str) -> None:
    for key in ("tasks", "tenants", "nodes", "jobs", "utilisation", "makespan", "avg_jct", "utility", "summary",
                "shares", "utilisation_series", "unit_kind", "integral", "slo_attainment"):  # fmt: skip
        data.pop(key, None)
    data.update(status=status, objective=None, bound=None, gap=None, verified=False)


def infeasible_claimed(case: Saved, data: dict[str, Any]) -> None:
    _no_answer(data, "infeasible")


def error_with_nothing(case: Saved, data: dict[str, Any]) -> None:
    method = data["method"]
    data.clear()
    data.update(method=method, status="error")


def time_limit_with_nothing(case: Saved, data: dict[str, Any]) -> None:
    _no_answer(data, "time_limit")


def every_job_unfinished(case: Saved, data: dict[str, Any]) -> None:
    data["tasks"] = []
    data["unfinished_jobs"] = [job.name for job in case.instance.jobs]
    forge(case, data)  # an exact method's result keeps its status: optimal


def _strip_placement(data: dict[str, Any]) -> None:
    for row in data["tasks"]:
        for key in ("server", "machine", "local"):
            row.pop(key, None)
    data["placement"] = "pooled"
    data.setdefault("options", {})["placement"] = "pooled"


def relabelled_pooled(case: Saved, data: dict[str, Any]) -> None:
    _strip_placement(data)
    data.pop("locality", None)
    forge(case, data)


def objective_name_switched(case: Saved, data: dict[str, Any]) -> None:
    data["objective_name"] = "makespan" if data["objective_name"] != "makespan" else "avg-jct"


def objective_switched_consistently(case: Saved, data: dict[str, Any]) -> None:
    objective_name_switched(case, data)
    data.setdefault("options", {})["objective"] = data["objective_name"]
    bound = data.get("bound")
    forge(case, data)
    data["bound"] = bound  # the bound proved for the other objective


def _late(case: Saved, data: dict[str, Any]) -> str:
    """Move one task of the job with the earliest T_k, of a stage no other waits for, to start at the makespan
    (nothing runs then, on any machine): the job ends after its fair completion time. Returns the job's name."""
    fair = {name: entry["fair_completion"] for name, entry in data["jobs"].items()}
    job = min(fair, key=lambda name: fair[name])
    stages = next(j for j in case.instance.jobs if j.name == job).stages
    leaves = {stage.name for i, stage in enumerate(stages) if not any(i in other.after for other in stages)}
    row = next(row for row in data["tasks"] if row["job"] == job and row["stage"] in leaves)
    makespan = max(task["end"] for task in data["tasks"])
    length = row["end"] - row["start"]
    row["start"], row["end"] = makespan, makespan + length
    return job


def late_with_fair_completion_raised(case: Saved, data: dict[str, Any]) -> None:
    job = _late(case, data)
    forge(case, data)
    data["jobs"][job]["fair_completion"] = data["jobs"][job]["completion"]


def late_with_fair_cap_off(case: Saved, data: dict[str, Any]) -> None:
    _late(case, data)
    forge(case, data)
    data["fair_cap"] = False
    data.setdefault("options", {})["fair_cap"] = False


def late_with_fair_cap_off_and_no_options(case: Saved, data: dict[str, Any]) -> None:
    """As if saved before runs recorded their options: nothing says how it ran, so the caps apply."""
    late_with_fair_cap_off(case, data)
    del data["options"], data["command"]


def late_and_renamed_to_a_heuristic(case: Saved, data: dict[str, Any]) -> None:
    _late(case, data)
    forge(case, data)
    data.update(method="carbyne", status="feasible", bound=None, gap=None)


def late_and_renamed_pinned(case: Saved, data: dict[str, Any]) -> tuple[Any, ...]:
    """The whole record forged as carbyne's (its keys, its late jobs): caught by the method its user names."""
    late_and_renamed_to_a_heuristic(case, data)
    for key in ("fair_cap", "alpha", "tick", "horizon", "tasks_total", "slot"):
        data.pop(key, None)
    names = list(data["jobs"])
    data.update(fair_completion={n: data["jobs"][n]["fair_completion"] for n in names},
                fair_method=dict.fromkeys(names, "drf-strict"), fair_margin=0.0,
                late_jobs=[n for n in names if data["jobs"][n]["completion"] > data["jobs"][n]["fair_completion"]])
    return ("--method", case.data["method"])


def job_utility_raised(case: Saved, data: dict[str, Any]) -> None:
    entry = next(entry for entry in data["jobs"].values() if entry["utility"] is not None)
    entry["utility"] += 5


def total_utility_raised(case: Saved, data: dict[str, Any]) -> None:
    data["utility"] = (data["utility"] or 0.0) + 5  # a run with a job unfinished has none: claiming one is a lie too


def slo_attainment_raised(case: Saved, data: dict[str, Any]) -> None:
    assert data["slo_attainment"] < 1
    data["slo_attainment"] = 1.0


def local_flag_changed(case: Saved, data: dict[str, Any]) -> None:
    row = next(row for row in data["tasks"] if "local" in row)
    row["local"] = "remote" if row["local"] != "remote" else "node"


def node_share_changed(case: Saved, data: dict[str, Any]) -> None:
    node = next(entry for entry in data["nodes"].values() if entry["parent"] is not None and not entry["leaf"])
    node["dominant_share"] += 0.1


def node_guarantee_changed(case: Saved, data: dict[str, Any]) -> None:
    node = next(entry for entry in data["nodes"].values() if entry["parent"] is not None)
    node["guarantee"] *= 1.5


def _droppable(case: Saved, data: dict[str, Any]) -> int:
    """A task of a stage no other stage waits for, of a job the run finished."""
    for position, row in enumerate(data["tasks"]):
        job = next(j for j in case.instance.jobs if j.name == row["job"])
        index = [s.name for s in job.stages].index(row["stage"])
        if not any(index in s.after for s in job.stages) and row["job"] not in data.get("unfinished_jobs", []):
            return position
    raise AssertionError("no task to drop")


def task_dropped_job_unfinished(case: Saved, data: dict[str, Any]) -> None:
    row = data["tasks"].pop(_droppable(case, data))
    data["unfinished_jobs"] = [*data.get("unfinished_jobs", []), row["job"]]
    forge(case, data)


def parent_task_dropped(case: Saved, data: dict[str, Any]) -> None:
    position = next(p for p, row in enumerate(data["tasks"]) if (row["job"], row["stage"]) == ("j1", "map"))
    data["tasks"].pop(position)
    data["unfinished_jobs"] = ["j1"]
    forge(case, data)


def horizon_recorded_to_excuse(case: Saved, data: dict[str, Any]) -> None:
    task_dropped_job_unfinished(case, data)
    data.setdefault("options", {}).setdefault("extra", {})["horizon"] = max(row["start"] for row in data["tasks"])


def slots_raised_to_excuse(case: Saved, data: dict[str, Any]) -> None:
    data["tasks"] = [row for row in data["tasks"] if row["job"] != "small"]
    data["unfinished_jobs"] = ["small", "big"]
    data.setdefault("options", {})["slots"] = 100
    forge(case, data)


def stopped_exact_run_partial(case: Saved, data: dict[str, Any]) -> None:
    task_dropped_job_unfinished(case, data)
    data["status"] = "time_limit"


def tenant_tasks_changed(case: Saved, data: dict[str, Any]) -> None:
    entry = next(entry for entry in data["tenants"].values() if entry["tasks"])
    entry["tasks"] += 1


def tenant_share_changed(case: Saved, data: dict[str, Any]) -> None:
    entry = next(entry for entry in data["tenants"].values() if entry["tasks"])
    entry["dominant_share"] *= 1.5


def utilisation_changed(case: Saved, data: dict[str, Any]) -> None:
    resource = next(iter(data["utilisation"]))
    used = data["utilisation"][resource]
    data["utilisation"][resource] = used - 0.1 if used >= 0.1 else used + 0.1


def over_capacity(case: Saved, data: dict[str, Any]) -> None:
    entry = next(entry for entry in data["tenants"].values() if entry["per_server"])
    unit = next(iter(entry["per_server"]))
    entry["per_server"][unit] += 1000
    forge(case, data)


def unit_kind_changed(case: Saved, data: dict[str, Any]) -> None:
    data["unit_kind"] = "machine" if data["unit_kind"] != "machine" else "class"


def hierarchy_objective_renamed(case: Saved, data: dict[str, Any]) -> None:
    data["objective_name"] = "min share/guarantee"


def min_share_guarantee_changed(case: Saved, data: dict[str, Any]) -> None:
    data["min_share_guarantee"] = (data["min_share_guarantee"] or 1.0) + 0.25


def hdrf_bound_raised(case: Saved, data: dict[str, Any]) -> None:
    data.update(bound=0.25, gap=None, status="feasible")


def job_completion_changed(case: Saved, data: dict[str, Any]) -> None:
    entry = next(entry for entry in data["jobs"].values() if entry["completion"] is not None)
    entry["completion"] -= 0.5


def job_delay_changed(case: Saved, data: dict[str, Any]) -> None:
    entry = next(entry for entry in data["jobs"].values() if entry["queueing_delay"] is not None)
    entry["queueing_delay"] += 1.0


def makespan_changed(case: Saved, data: dict[str, Any]) -> None:
    data["makespan"] = (data["makespan"] or 0.0) + 1.0


def reported_fair_completion_changed(case: Saved, data: dict[str, Any]) -> None:
    entry = next(entry for entry in data["jobs"].values() if entry["fair_completion"] is not None)
    entry["fair_completion"] += 1.0


def late_jobs_changed(case: Saved, data: dict[str, Any]) -> None:
    data["late_jobs"] = list(data["jobs"])


def heuristic_fair_completion_changed(case: Saved, data: dict[str, Any]) -> None:
    name = next(iter(data["fair_completion"]))
    data["fair_completion"][name] += 1.0


def summary_changed(case: Saved, data: dict[str, Any]) -> None:
    data["summary"]["mean_jct"] = (data["summary"]["mean_jct"] or 1.0) / 2


def utilisation_series_changed(case: Saved, data: dict[str, Any]) -> None:
    resource = case.instance.resources[0]
    data["utilisation_series"][resource][0] += 0.25


def locality_counts_changed(case: Saved, data: dict[str, Any]) -> None:
    data["locality"]["node"] += 1


def finished_jobs_changed(case: Saved, data: dict[str, Any]) -> None:
    data["finished_jobs"] += 1


def instance_renamed(case: Saved, data: dict[str, Any]) -> None:
    data["instance"] = "another-instance"


def method_renamed(case: Saved, data: dict[str, Any]) -> tuple[Any, ...]:
    original = data["method"]
    if data.get("command") == "simulate":
        data["method"] = "best-fit" if original != "best-fit" else "first-fit"
        if "policy" in data:
            data["policy"] = data["method"]
        return ("--method", f"online:{original}")
    kind = get_method(original).kind
    data["method"] = {"allocation": "first-fit" if original != "first-fit" else "best-fit",
                      "schedule": "sjf"}[kind]  # fmt: skip
    return ("--method", original)


def verified_denied(case: Saved, data: dict[str, Any]) -> None:
    data["verified"] = False


def foreign_option_recorded(case: Saved, data: dict[str, Any]) -> None:
    taken = get_method(data["method"]).options if data.get("command") == "solve" else set()
    data.setdefault("options", {})["fair_cap" if "fair_cap" not in taken else "slots"] = False


def command_switched(case: Saved, data: dict[str, Any]) -> None:
    data["command"] = "solve" if data["command"] == "simulate" else "simulate"


def tick_coarsened(case: Saved, data: dict[str, Any]) -> None:
    data["tick"] = 2.0


def alpha_changed(case: Saved, data: dict[str, Any]) -> None:
    data["alpha"] = 0.9


def option_changed(case: Saved, data: dict[str, Any]) -> None:
    row = next(row for row in data["tasks"] if row["job"] == "train")
    row["option"] = 1 - row["option"]


def task_before_release(case: Saved, data: dict[str, Any]) -> None:
    released = {job.name: job.release for job in case.instance.jobs if job.release > 0}
    row = next(row for row in data["tasks"] if row["job"] in released)
    length = row["end"] - row["start"]
    row["start"] = released[row["job"]] - 0.5
    row["end"] = row["start"] + length
    forge(case, data)


@dataclass(frozen=True)
class Tamper:
    name: str
    families: tuple[str, ...]
    edit: Edit
    pattern: str  # a violation (or the verdict line) must match it


TAMPERS = [
    # status and bound
    Tamper("optimal, bound on the wrong side", EXACT_ALLOCATIONS + EXACT_SCHEDULES, bound_wrong_side,
           r"bound .* is (below|above) the objective"),
    Tamper("optimal, bound and gap removed", EXACT_ALLOCATIONS + EXACT_SCHEDULES, optimal_without_bound,
           r"status 'optimal' needs the bound"),
    Tamper("gap changed", EXACT_ALLOCATIONS + EXACT_SCHEDULES, gap_changed, r"saved gap 0.2"),
    Tamper("a heuristic claims optimal", HEURISTICS, heuristic_claims_optimal, r"is a heuristic"),
    Tamper("infeasible, the answer removed", EVERY, infeasible_claimed, r"'infeasible' cannot be confirmed"),
    Tamper("error with no answer at all", EVERY, error_with_nothing, r"status 'error' with no .*nothing to verify"),
    Tamper("time limit with no answer", EVERY, time_limit_with_nothing, r"'time_limit' with no .*nothing to verify"),
    Tamper("every job unfinished, every task dropped", SCHEDULES, every_job_unfinished,
           r"runs every task|is called unfinished, but stage .* could run"),
    # what decides the checks
    Tamper("placement relabelled pooled, servers stripped", PLACED, relabelled_pooled,
           r"records --placement pooled|given --placement servers|no per-server placement|need a machine"),
    Tamper("objective_name switched", SCHEDULES, objective_name_switched, r"saved objective_name"),
    Tamper("objective switched, numbers made to agree", EXACT_SCHEDULES, objective_switched_consistently,
           r"needs the bound to equal the objective|bound .* is (below|above) the objective|given --objective"),
    Tamper("late job, fair_completion loosened", CAPPED, late_with_fair_completion_raised,
           r"after its fair completion time"),
    Tamper("late job, fair_cap false", CAPPED, late_with_fair_cap_off, r"records --no-fair-cap"),
    Tamper("late job, fair_cap false, options removed", CAPPED, late_with_fair_cap_off_and_no_options,
           r"after its fair completion time"),
    Tamper("late job, renamed to a heuristic", CAPPED, late_and_renamed_to_a_heuristic,
           r"late_jobs is missing|has no fair caps"),
    Tamper("late job, forged as a heuristic's, method pinned", CAPPED, late_and_renamed_pinned,
           r"names method 'carbyne'"),
    Tamper("tick coarsened to loosen T_k", ("spacetime-cp",), tick_coarsened, r"tick 2 is not a time unit"),
    Tamper("recorded option the method does not take", EVERY, foreign_option_recorded, r"which .* does not take"),
    Tamper("command switched", ("carbyne", "fifo"), command_switched,
           r"came from fairpack solve|saved jobs\.\w+\.fair_completion|saved placement"),
    Tamper("method renamed, method pinned", EVERY, method_renamed, r"names method"),
    Tamper("alpha changed", ("spacetime-cp", "spacetime"), alpha_changed, r"saved alpha"),
    # derived numbers
    Tamper("a job's utility raised", SCHEDULES, job_utility_raised, r"saved jobs\.\w+\.utility"),
    Tamper("total utility raised", SCHEDULES, total_utility_raised, r"saved utility"),
    Tamper("SLO attainment raised", ("slo",), slo_attainment_raised, r"saved slo_attainment"),
    Tamper("a task's local flag changed", ("locality-cp", "delay"), local_flag_changed,
           r"saved local '(node|remote)' but its block gives"),
    Tamper("a hierarchy node's dominant share changed", HIERARCHIES, node_share_changed,
           r"saved nodes\.\w+\.dominant_share"),
    Tamper("a hierarchy node's guarantee changed", HIERARCHIES, node_guarantee_changed, r"saved nodes\.\S+\.guarantee"),
    Tamper("the objective renamed on a hierarchy", HIERARCHIES, hierarchy_objective_renamed, r"saved objective_name"),
    Tamper("min share/guarantee changed", HIERARCHIES, min_share_guarantee_changed, r"saved min_share_guarantee"),
    Tamper("hdrf's bound above 0", ("hdrf", "hdrf-pooled"), hdrf_bound_raised,
           r"bound of the guarantee shortfall is 0|above the objective"),
    Tamper("a tenant's task count changed", ALLOCATIONS, tenant_tasks_changed, r"tenants\.\S+\.tasks"),
    Tamper("a tenant's dominant share changed", ALLOCATIONS, tenant_share_changed, r"tenants\.\S+\.dominant_share"),
    Tamper("utilisation changed", ALLOCATIONS, utilisation_changed, r"saved utilisation"),
    Tamper("over capacity, numbers made to agree", ALLOCATIONS, over_capacity, r"exceeds|capacity|cap of"),
    Tamper("unit_kind changed", ALLOCATIONS, unit_kind_changed, r"unit_kind says"),
    Tamper("a job's completion changed", SCHEDULES, job_completion_changed, r"saved jobs\.\w+\.completion"),
    Tamper("a job's queueing delay changed", SCHEDULES, job_delay_changed, r"saved jobs\.\w+\.queueing_delay"),
    Tamper("makespan changed", SCHEDULES, makespan_changed, r"saved makespan"),
    Tamper("a reported T_k changed", ("spacetime-cp", "spacetime", "no-fair-cap", "locality-cp", "carbyne"),
           reported_fair_completion_changed, r"saved jobs\.\w+\.fair_completion"),
    Tamper("late_jobs changed", ("carbyne",), late_jobs_changed, r"saved late_jobs"),
    Tamper("a heuristic's T_k record changed", ("carbyne",), heuristic_fair_completion_changed,
           r"saved fair_completion\.\w+"),
    Tamper("a task before its job's release", ("fifo", "carbyne", "spacetime-cp"), task_before_release,
           r"before its job's release"),
    Tamper("a task's placement option changed", ("tetrisched", "utility"), option_changed, r"option|duration"),
    # jobs left unfinished
    Tamper("a task dropped, its job called unfinished", ("fifo", "delay", "tetrisched", "slo", "slots", "carbyne"),
           task_dropped_job_unfinished, r"is called unfinished, but stage .* could run"),
    Tamper("a parent task dropped, its child kept", ("fifo",), parent_task_dropped, r"ran only 2 of its 3 tasks"),
    Tamper("a horizon recorded to excuse a dropped task", ("fifo",), horizon_recorded_to_excuse,
           r"records --horizon"),
    Tamper("more slots recorded to excuse a dropped job", ("slots",), slots_raised_to_excuse, r"records --slots 100"),
    Tamper("an exact run stopped with a task missing", EXACT_SCHEDULES, stopped_exact_run_partial,
           r"runs every task|is missing"),
    # simulations' own numbers
    Tamper("summary changed", SIMULATIONS, summary_changed, r"saved summary\.mean_jct"),
    Tamper("utilisation series changed", SIMULATIONS, utilisation_series_changed, r"saved utilisation_series"),
    Tamper("locality counts changed", ("delay",), locality_counts_changed, r"saved locality\.node"),
    Tamper("finished_jobs changed", ("slots",), finished_jobs_changed, r"saved finished_jobs"),
    # the rest of the record
    Tamper("instance renamed", EVERY, instance_renamed, r"is for instance 'another-instance'"),
    Tamper("verified denied", EVERY, verified_denied, r"says verified False"),
]

CASES = [(tamper, family) for tamper in TAMPERS for family in tamper.families]


@pytest.mark.parametrize(("tamper", "family"), CASES, ids=[f"{family}: {tamper.name}" for tamper, family in CASES])
def test_every_tampering_is_caught_and_named(tamper: Tamper, family: str, saved: dict[str, Saved],
                                             tmp_path: Path) -> None:  # fmt: skip
    case = saved[family]
    data = json.loads(json.dumps(case.data))
    stated = tamper.edit(case, data) or ()
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(data))
    code, out, err = cli("check", case.path, path, *case.flags, *stated)
    assert code == 1, f"accepted ({code}):\n{out}{err}"
    violations = [line for line in out.splitlines() if line.strip().startswith("VIOLATION")]
    assert any(re.search(tamper.pattern, line) for line in violations), out + err


def test_every_family_is_verified_untampered(saved: dict[str, Saved]) -> None:
    for case in saved.values():
        code, out, err = cli("check", case.path, case.result, *case.flags)
        assert code == 0, out + err


def test_every_edit_of_the_campaign_is_covered_for_every_family_it_applies_to() -> None:
    covered = {family for _, family in CASES}
    assert covered == set(FAMILIES)
    assert len(CASES) >= 200


def test_a_result_saved_before_options_were_recorded_is_checked_by_those_given(saved: dict[str, Saved],
                                                                             tmp_path: Path) -> None:  # fmt: skip
    case = saved["no-fair-cap"]
    data = {key: value for key, value in case.data.items() if key not in ("options", "command")}
    path = tmp_path / "older.json"
    path.write_text(json.dumps(data))
    code, out, _ = cli("check", case.path, path, "--no-fair-cap")
    assert code == 0 and "records no options" in out, out
    code, out, _ = cli("check", case.path, path)  # the caps apply, and the file's fair_cap false contradicts them
    assert code == 1 and "after its fair completion time" in out and "saved fair_cap False" in out, out


# ------------------------------------------------------------------------------------------ infeasible, confirmed


def test_infeasible_is_confirmed_only_where_the_instance_shows_it(saved: dict[str, Saved]) -> None:
    """Given deadlines before a job's critical path: the exact method says infeasible, and check confirms it (the
    given times stated, as the library passes them); without the times, it cannot."""
    case = saved["spacetime-cp"]
    given = {"fair_completion": {"long": 3.5}}
    result = solve(case.instance, "spacetime-cp", extra=given)
    assert result.status == "infeasible"
    data = result_json(case.instance, result)
    rules = get_method("spacetime-cp").saved_rules({"extra.fair_completion": given["fair_completion"]})
    checked = check_saved(case.instance, data, rules)
    assert checked.verified and checked.notes and "past its given time" in checked.notes[0]
    unstated = check_saved(case.instance, data, get_method("spacetime-cp").saved_rules())
    assert not unstated.verified and any("cannot be confirmed" in v for v in unstated.violations)


# ------------------------------------------------------------------------------------------ whole forgeries


def test_an_exact_schedule_forged_whole_as_a_heuristics_is_caught_by_a_rerun(saved: dict[str, Saved],
                                                                            tmp_path: Path) -> None:  # fmt: skip
    """The uncapped optimum (a job past its T_k) put in a carbyne result, every number made to agree: a valid
    schedule, and every key carbyne's -- but not carbyne's answer, which check runs again (no --method)."""
    forged = json.loads(json.dumps(saved["carbyne"].data))
    forged["tasks"] = saved["no-fair-cap"].data["tasks"]
    forge(saved["carbyne"], forged)
    forged["late_jobs"] = sorted(name for name, job in forged["jobs"].items()
                                 if job["completion"] > job["fair_completion"])  # fmt: skip
    assert forged["late_jobs"]
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged))
    code, out, err = cli("check", saved["carbyne"].path, path)
    assert code == 1 and "not the answer carbyne gives" in out, out + err
    code, out, err = cli("check", saved["carbyne"].path, path, "--no-rerun")
    assert code == 0, out + err  # what only the re-run catches


def test_a_heuristic_allocation_forged_as_another_heuristics_is_caught(saved: dict[str, Saved],
                                                                       tmp_path: Path) -> None:  # fmt: skip
    """first-fit's allocation relabelled best-fit (both whole tasks per machine, same keys): check runs best-fit."""
    case = saved["first-fit"]
    best = solve(case.instance, "best-fit")
    assert best.allocation is not None
    if np.array_equal(best.allocation.tasks, allocation_from_json(case.instance, case.data).tasks):
        pytest.skip("best-fit and first-fit agree on this instance")
    forged = json.loads(json.dumps(case.data))
    forged["method"] = "best-fit"
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged))
    code, out, err = cli("check", case.path, path)
    assert code == 1 and "not the answer best-fit gives" in out, out + err


def test_every_heuristic_family_untampered_is_its_methods_answer_run_again(saved: dict[str, Saved]) -> None:
    for name in (family for family in HEURISTICS if family != "tetrisched"):
        case = saved[name]
        code, out, err = cli("check", case.path, case.result, *case.flags)
        assert code == 0 and "re-run:" in out, (name, out + err)
    code, out, _ = cli("check", saved["tetrisched"].path, saved["tetrisched"].result)
    assert code == 0 and "wall-clock limit" in out, out  # not re-run: its cycles ran under the wall clock


def test_the_rerun_names_the_first_cell_where_two_allocations_differ() -> None:
    # Read from the cells alone: a cell one allocation has and the other lacks, counts that differ, counts within
    # the comparison's tolerance; the first such cell in row-major order, as a whole-table comparison finds it.
    from fairpack.solver.rerun import _first_cell_apart

    def cells(*entries: tuple[int, int, float]) -> Allocation:
        return Allocation.from_cells((3, 5), *zip(*entries, strict=True), kind="machine")  # type: ignore[arg-type]

    saved = cells((0, 1, 2.0), (1, 4, 1.0), (2, 0, 3.0))
    assert _first_cell_apart(saved, cells((0, 1, 2.0 + 1e-12), (1, 4, 1.0), (2, 0, 3.0))) is None
    assert _first_cell_apart(saved, cells((0, 1, 2.0), (2, 0, 3.0))) == (1, 4, 1.0, 0.0)
    assert _first_cell_apart(saved, cells((0, 1, 2.0), (1, 2, 1.0), (1, 4, 2.0), (2, 0, 3.0))) == (1, 2, 0.0, 1.0)
    assert _first_cell_apart(Allocation(saved.tasks, "machine"), cells((0, 0, 1.0), (0, 1, 2.0))) == (0, 0, 0.0, 1.0)


def test_the_rerun_compares_with_the_answer_check_read(saved: dict[str, Saved],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    # check reads the file's answer once: the re-run compares with that one, not with the file read again.
    from fairpack.solver import rerun

    def read_again(*args: Any) -> Any:
        raise AssertionError("the re-run read the file's answer again")

    monkeypatch.setattr(rerun, "allocation_from_json", read_again)
    monkeypatch.setattr(rerun, "schedule_from_json", read_again)
    for name in ("first-fit", "carbyne"):
        case = saved[name]
        code, out, err = cli("check", case.path, case.result, *case.flags)
        assert code == 0 and "re-run:" in out, (name, out + err)
