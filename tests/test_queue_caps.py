"""Queues' running-task caps: every policy honours them, the exact models refuse them, the checker counts them.

A job's queue (its ``tenant``) also declared under ``tenants`` with ``tasks: n`` runs at most ``n`` tasks at
once, whatever the policy: the simulator's one rule (``Simulation.runnable``, ``cap_room``), and the schedule
checker sweeps every capped queue's starts and ends at every instant (an end at ``t`` and a start at ``t`` do not
overlap, by the time rule of ``models.tolerance``). ``queue_cap.yaml`` (two machines of 4 cpu, queue ``q`` capped
at one task, one job of four one-cpu tasks of length 1) took 1 time unit under every policy but two; the answer
is 4. The reproductions come from the shared folder (skipped when absent); an equivalent is built inline.
"""

from __future__ import annotations

import io
import json
import math
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairpack.models.check.fairshare import fair_times
from fairpack.models.check.schedule import verify_schedule
from fairpack.models.io import load_instance
from fairpack.models.result import Schedule
from fairpack.models.tolerance import settled_all, time_tol
from fairpack.models.types import Instance, Job, ServerClass, Stage, Tenant
from fairpack.solver.api import simulate
from fairpack.solver.cli import main
from fairpack.solver.registry import Method, policies
from fairpack.solver.sim.backlog import SimOptions
from fairpack.solver.sim.backlog import simulate as simulate_backlogs
from fairpack.solver.sim.engine import BasePolicy, Simulation
from fairpack.solver.sim.fairshare import fair_completion_times
from fairpack.solver.sim.workload import Workload
from tests.test_sim_equivalence import arrivals

ROOT = Path(__file__).resolve().parents[1]

QUEUE_CAP = """\
resources: [cpu]
servers:
  - {name: node, capacity: {cpu: 4}, count: 2}
tenants:
  - {name: q, demand: {cpu: 1}, tasks: 1}
jobs:
  - name: j
    tenant: q
    stages:
      - {name: a, tasks: 4, duration: 1, demand: {cpu: 1}}
"""

#: The flat backlogs of the fuzz campaign's ``random_s1.yaml``: fifo ran 16 tasks of u0, whose cap is 8.
RANDOM_S1 = """\
name: random-1
resources: [r0, r1]
servers:
- {name: s0, capacity: {r0: 5.61, r1: 9.55}}
- {name: s1, capacity: {r0: 9.54, r1: 3.81}}
- {name: s2, capacity: {r0: 4.81, r1: 8.45}}
tenants:
- {name: u0, demand: {r0: 1.14, r1: 0.15}, weight: 2.0, tasks: 8}
- {name: u1, demand: {r0: 0.68, r1: 0.96}, weight: 2.0, tasks: 15}
- {name: u2, demand: {r0: 1.53}}
- {name: u3, demand: {r0: 1.48, r1: 1.13}, weight: 2.0}
"""

JOB_POLICIES = [name for name, record in policies().items() if "jobs" in record.workloads]
BACKLOG_POLICIES = [name for name, record in policies().items() if "backlogs" in record.workloads]


def _repro_folder() -> Path | None:
    configured = os.environ.get("FAIRPACK_REPRO_DIR")
    folder = Path(configured) if configured else ROOT.parent / "shared" / "repro"
    return folder if folder.is_dir() else None


def _case(source: str, name: str, text: str, folder: Path) -> Path:
    """A reproduction: written inline into ``folder``, or the shared folder's own (skipped when absent)."""
    if source == "inline":
        path = folder / name
        path.write_text(text)
        return path
    shared = _repro_folder()
    if shared is None or not (shared / "sim_and_traces" / name).is_file():
        pytest.skip(f"{name} is not among the reproductions")
    return shared / "sim_and_traces" / name


@pytest.fixture(params=["inline", "repro"])
def queue_cap(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return _case(request.param, "queue_cap.yaml", QUEUE_CAP, tmp_path)


@pytest.fixture(params=["inline", "repro"])
def random_s1(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return _case(request.param, "random_s1.yaml", RANDOM_S1, tmp_path)


def cli(*argv: object) -> tuple[int, str, str]:
    """``fairpack ARGV`` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def no_delays(record: Method) -> list[str]:
    """Flags that take a policy's own delays out (message round trips, decision times) and give the slot
    scheduler slots of one cpu, read from its registry record, so that its makespan is the cap's alone."""
    flags = []
    if "slots" in record.options:
        flags += ["--slots", "4"]
    if "rtt" in record.extra_keys:
        flags += ["--option", "rtt=0"]
    for key in ("t_job", "t_task"):
        if key in record.extra_keys:
            flags += ["--option", f"{key}=0"]
    return flags


@pytest.mark.parametrize("placement", ["pooled", "servers"])
@pytest.mark.parametrize("policy", JOB_POLICIES)
def test_every_policy_runs_the_capped_queue_one_task_at_a_time(queue_cap: Path, policy: str, placement: str) -> None:
    if placement == "pooled" and policy in ("fair", "delay", "tetrisched", "alsched", "hard-only", "oblivious",
                                            "jockey", "random", "sparrow", "omega", "monolithic"):
        placement = "servers"  # machine-level policies: pooled is one machine of 8 cpu, the same cap rule
    code, out, err = cli("simulate", queue_cap, "--policy", policy, "--placement", placement, "--json",
                         *no_delays(policies()[policy]))  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["verified"] is True and data["makespan"] == 4.0, (policy, data["makespan"])
    starts = sorted(task["start"] for task in data["tasks"])
    assert starts == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("method", ["carbyne", "drf-dag", "drf-strict", "tetris", "sjf"])
def test_the_simulated_heuristics_honour_the_cap_and_check_agrees(queue_cap: Path, tmp_path: Path,
                                                                  method: str) -> None:  # fmt: skip
    code, out, err = cli("solve", queue_cap, "--method", method, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["verified"] is True and data["makespan"] == 4.0
    assert data["fair_completion"] == {"j": 4.0}  # T_k is the capped fair-share schedule's
    saved = tmp_path / "result.json"
    saved.write_text(out)
    code, _, err = cli("check", queue_cap, saved)  # the checker's own fair-share schedule honours the cap too
    assert code == 0, err


@pytest.mark.parametrize("method", ["spacetime-cp", "spacetime", "locality-cp"])
def test_the_exact_models_refuse_a_cap_they_would_break(queue_cap: Path, method: str) -> None:
    code, out, err = cli("solve", queue_cap, "--method", method, "--time-limit", "10")
    assert code == 2 and out == ""
    assert "tenants[0].tasks" in err and "does not model queues' running-task caps" in err, err


def test_a_cap_at_least_the_queues_tasks_changes_nothing_for_the_exact_models(tmp_path: Path) -> None:
    path = tmp_path / "loose.yaml"
    path.write_text(QUEUE_CAP.replace("tasks: 1}", "tasks: 4}"))
    code, out, err = cli("solve", path, "--method", "spacetime-cp", "--time-limit", "30", "--json")
    assert code == 0, err
    assert json.loads(out)["makespan"] == 1.0


def test_a_queue_capped_below_one_task_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "never.yaml"
    path.write_text(QUEUE_CAP.replace("tasks: 1}", "tasks: 0.5}"))
    for command in (["simulate", path, "--policy", "fifo"], ["solve", path, "--method", "tetris"]):
        code, _, err = cli(*command)
        assert code == 2 and "tenants[0].tasks" in err and "below one whole task" in err, err


# --- the checker -------------------------------------------------------------------------------------


def _four(start: list[float], end: list[float]) -> Schedule:
    return Schedule(np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int64), np.arange(4), np.array(start),
                    np.array(end))  # fmt: skip


def _queue_cap_instance(folder: Path) -> Instance:
    path = folder / "queue_cap.yaml"
    path.write_text(QUEUE_CAP)
    return load_instance(path)


def test_the_checker_rejects_the_old_all_at_once_schedule(tmp_path: Path) -> None:
    instance = _queue_cap_instance(tmp_path)
    report = verify_schedule(instance, _four([0.0] * 4, [1.0] * 4))
    assert not report.ok
    assert report.violations == ["queue 'q': 4 tasks run at time 0, over its cap of 1 running tasks (most at once: 4)"]


def test_the_checker_lets_a_task_start_when_another_ends_and_not_before(tmp_path: Path) -> None:
    instance = _queue_cap_instance(tmp_path)
    assert verify_schedule(instance, _four([0.0, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0])).ok
    # Within the time rule's resolution of the end, a start is at the end (the simulator decides it so).
    early = 2.0 - 0.5 * time_tol(2.0)
    assert verify_schedule(instance, _four([0.0, 1.0, early, 3.0], [1.0, 2.0, early + 1.0, 4.0])).ok
    early = 2.0 - 4 * time_tol(2.0)  # beyond it: two tasks overlap
    report = verify_schedule(instance, _four([0.0, 1.0, early, 3.0], [1.0, 2.0, early + 1.0, 4.0]))
    assert [v.split(",")[0] for v in report.violations] == [f"queue 'q': 2 tasks run at time {early:.6g}"]


def test_check_rejects_a_saved_run_edited_to_break_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "queue_cap.yaml"
    path.write_text(QUEUE_CAP)
    code, out, _ = cli("simulate", path, "--policy", "fifo", "--json")
    assert code == 0
    data = json.loads(out)
    for task in data["tasks"]:  # every task at time 0, as fifo ran them before the cap rule
        task["start"], task["end"] = 0.0, 1.0
    data["makespan"] = data["objective"] = data["avg_jct"] = 1.0
    saved = tmp_path / "edited.json"
    saved.write_text(json.dumps(data))
    code, out, err = cli("check", path, saved)
    assert code == 1
    assert "queue 'q': 4 tasks run at time 0, over its cap of 1 running tasks" in out + err


# --- flat backlogs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", BACKLOG_POLICIES)
def test_no_backlog_policy_runs_more_than_a_tenants_cap(random_s1: Path, policy: str) -> None:
    instance = load_instance(random_s1)
    trace = simulate_backlogs(instance, policy, SimOptions(horizon=60.0, warmup=5.0))
    caps = np.floor(instance.task_caps)
    assert np.all(trace.peak_running <= caps), (policy, trace.peak_running, caps)
    result = simulate(instance, policy, extra={"horizon": 60.0, "warmup": 5.0})
    assert result.verified, result.violations


# --- every policy, random caps ----------------------------------------------------------------------


@st.composite
def capped_jobs(draw: st.DrawFn) -> Instance:
    """A small cluster, two or three queues with random caps (some unbounded), and jobs arriving over time."""
    servers = tuple(ServerClass(f"m{c}", np.array([float(draw(st.integers(2, 6))), float(draw(st.integers(2, 8)))]),
                                draw(st.integers(1, 3))) for c in range(draw(st.integers(1, 2))))  # fmt: skip
    queues = []
    for i in range(draw(st.integers(2, 3))):
        cap = draw(st.one_of(st.integers(1, 4).map(float), st.just(math.inf)))
        queues.append(Tenant(f"q{i}", np.array([1.0, 1.0]), 1.0, cap))
    jobs = []
    for k in range(draw(st.integers(1, 5))):
        stages = []
        for s in range(draw(st.integers(1, 3))):
            demand = np.array([float(draw(st.integers(1, 2))), float(draw(st.integers(0, 2)))])
            after = (s - 1,) if s > 0 and draw(st.booleans()) else ()
            stages.append(Stage(f"s{s}", draw(st.integers(1, 6)), float(draw(st.integers(1, 3))), demand, after))
        jobs.append(Job(f"j{k}", tuple(stages), 1.0, float(draw(st.integers(0, 4))),
                        queues[draw(st.integers(0, len(queues) - 1))].name))  # fmt: skip
    return Instance(("cpu", "mem"), servers, tuple(queues), jobs=tuple(jobs), name="capped")


def most_at_once(instance: Instance, schedule: Schedule) -> np.ndarray:
    """Per queue, the most tasks running at once, counted task by task (independent of the checker's sweep):
    at every start, the tasks of its queue started by then that have not ended (by the time rule)."""
    queues = instance.queues()
    queue = queues.of_job[schedule.job]
    gone = settled_all(schedule.end)
    peak = np.zeros(len(queues.names))
    for i in range(schedule.start.size):
        mine = queue == queue[i]
        running = mine & (schedule.start <= schedule.start[i]) & (gone > schedule.start[i])
        peak[queue[i]] = max(peak[queue[i]], int(running.sum()))
    return peak


#: Per policy, settings that keep a property run short (the planners' cycles) and deterministic.
SHORT = {"tetrisched": {"cycle_limit": 0.2, "deterministic": True},
         "alsched": {"cycle_limit": 0.2, "deterministic": True}}  # fmt: skip


@pytest.mark.parametrize("policy", JOB_POLICIES)
@settings(derandomize=True, max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=capped_jobs(), servers=st.booleans())
def test_every_job_policy_keeps_random_queue_caps_at_every_instant(policy: str, instance: Instance,
                                                                   servers: bool) -> None:  # fmt: skip
    result = simulate(instance, policy, placement="servers" if servers else "auto", extra=dict(SHORT.get(policy, {})))
    assert result.verified, result.violations
    assert result.schedule is not None
    caps = np.floor(instance.queues().cap)
    assert np.all(most_at_once(instance, result.schedule) <= caps)


@st.composite
def capped_backlogs(draw: st.DrawFn) -> Instance:
    servers = tuple(ServerClass(f"m{c}", np.array([float(draw(st.integers(2, 8))), float(draw(st.integers(2, 8)))]),
                                draw(st.integers(1, 3))) for c in range(draw(st.integers(1, 2))))  # fmt: skip
    tenants = tuple(Tenant(f"t{i}", np.array([float(draw(st.integers(1, 2))), float(draw(st.integers(0, 2)))]),
                           float(draw(st.integers(1, 3))), draw(st.one_of(st.integers(0, 5).map(float),
                                                                          st.just(math.inf))))
                    for i in range(draw(st.integers(1, 4))))  # fmt: skip
    return Instance(("cpu", "mem"), servers, tenants, name="backlogs")


@pytest.mark.parametrize("policy", BACKLOG_POLICIES)
@settings(derandomize=True, max_examples=12, deadline=None)
@given(instance=capped_backlogs())
def test_every_backlog_policy_keeps_random_caps_at_every_instant(policy: str, instance: Instance) -> None:
    trace = simulate_backlogs(instance, policy, SimOptions(horizon=30.0, warmup=2.0))
    assert np.all(trace.peak_running <= np.floor(instance.task_caps))  # the most running after any event
    assert simulate(instance, policy, extra={"horizon": 30.0, "warmup": 2.0}).verified


# --- the fair-share schedule behind T_k -------------------------------------------------------------


@pytest.mark.parametrize("placement", ["pooled", "servers"])
def test_the_checkers_fair_share_schedule_honours_caps_as_the_solvers(placement: str) -> None:
    held_back = 0
    for seed in range(16):
        instance = arrivals(seed)  # tenants with running-task caps, binding on about half the seeds
        mine, theirs = fair_times(instance, placement), fair_completion_times(instance, placement)
        assert mine is not None
        np.testing.assert_allclose(mine.completion, theirs.completion, rtol=1e-12, err_msg=str(seed))
        free = Instance(instance.resources, instance.servers, tuple(Tenant(t.name, t.demand, t.weight)
                                                                     for t in instance.tenants),
                        jobs=instance.jobs)  # fmt: skip
        held_back += not np.allclose(fair_completion_times(free, placement).completion, theirs.completion)
    assert held_back >= 3  # the caps do change T_k on some seeds: the comparison covers them


# --- the engine's rule ------------------------------------------------------------------------------


class _Greedy(BasePolicy):
    """Launches the first group's tasks all at once wherever they fit, caps or not (a policy bug)."""

    name = "greedy"

    def __init__(self, direct: bool) -> None:
        self.direct = direct

    def on_event(self, sim: Simulation) -> None:
        if self.direct and sim.unlaunched[0] > 0:
            sim.launch(0, [(0, int(sim.unlaunched[0]))])

    def next(self, sim: Simulation) -> tuple[int, int] | None:
        return None if self.direct or sim.unlaunched[0] == 0 else (0, 4)


def test_the_engine_clamps_a_pick_to_the_caps_room_and_refuses_a_launch_past_it(tmp_path: Path) -> None:
    instance = _queue_cap_instance(tmp_path)
    workload = Workload.of_jobs(instance, "servers")
    assert workload.capped and not Workload.of_jobs(_loosened(instance), "servers").capped
    with pytest.raises(RuntimeError, match="launched tasks of group 0 past the cap of 1 running tasks of queue 'q'"):
        Simulation(instance, workload, _Greedy(direct=True), "servers").run()
    # A pick of four is clamped to the one task the cap leaves; picking again while the queue runs it is a bug.
    with pytest.raises(RuntimeError, match="picked group 0, whose queue 'q' runs its cap"):
        Simulation(instance, workload, _Greedy(direct=False), "servers").run()


def _loosened(instance: Instance) -> Instance:
    return Instance(instance.resources, instance.servers, tuple(Tenant(t.name, t.demand, t.weight, 4.0)
                                                                 for t in instance.tenants), jobs=instance.jobs)


TWO_QUEUES = QUEUE_CAP.replace("count: 2}", "count: 1}") + """\
  - name: k
    tenant: r
    stages:
      - {name: a, tasks: 3, duration: 2, demand: {cpu: 1}}
"""


@pytest.mark.parametrize("policy", ["tetrisched", "alsched"])
def test_the_planners_fill_now_what_a_capped_queue_cannot_use(tmp_path: Path, policy: str) -> None:
    # One machine of 4 cpu: q may run one task at a time, so r's three tasks fit beside it now. A plan without
    # the cap put all of q's tasks now, and the commit (cut to the cap) left three cpus idle until t = 1.
    path = tmp_path / "two.yaml"
    path.write_text(TWO_QUEUES)
    code, out, err = cli("simulate", path, "--policy", policy, "--option", "deterministic=true", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["verified"] is True and data["avg_jct"] == 3.0
    assert sorted(task["start"] for task in data["tasks"] if task["job"] == "k") == [0.0, 0.0, 0.0]
