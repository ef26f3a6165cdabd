"""The one simulator (``solver.sim``): static equivalence, traces, timelines, unfinished jobs, the CLI.

Hand cases derive every number by hand; the static-equivalence test replays the flat heuristics' one-shot
allocation as arrivals at time zero, where an online policy must place exactly what the heuristic places.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from work import TickClock

from fairpack.models.generators import random_small
from fairpack.models.io import load_instance
from fairpack.models.timeline import busy_time, job_table
from fairpack.models.traces import read_trace
from fairpack.models.types import Instance, InstanceError, Job, ServerClass, Stage
from fairpack.solver.api import simulate, solve

ROOT = Path(__file__).resolve().parents[1]


def _one_machine(*jobs: Job, cpu: float = 1.0) -> Instance:
    return Instance(("cpu",), (ServerClass("m", np.array([cpu]), 1),), jobs=tuple(jobs), name="hand")


def _job(name: str, release: float, duration: float, cpu: float, tasks: int = 1, tenant: str = "") -> Job:
    return Job(name, (Stage("s0", tasks, duration, np.array([cpu])),), 1.0, release, tenant or name)


# --- static equivalence ------------------------------------------------------------------------------


def _as_arrivals(instance: Instance) -> Instance:
    """Every tenant's tasks as one job released at 0 (an infinite cap: as many as could ever fit); the
    tenants stay declared, so their weights and caps apply to their queues."""
    total = instance.total_capacity
    jobs = []
    for tenant in instance.tenants:
        need = tenant.demand > 0
        most = math.ceil(float(np.min(total[need] / tenant.demand[need]))) + 1
        tasks = most if math.isinf(tenant.tasks) else int(tenant.tasks)
        jobs.append(Job(tenant.name, (Stage("s0", tasks, 1.0, tenant.demand),), tenant.weight, 0.0, tenant.name))
    return Instance(instance.resources, instance.servers, instance.tenants, jobs=tuple(jobs), name=instance.name)


@pytest.mark.parametrize("policy", ["first-fit", "best-fit", "slots", "per-server-drf"])
@pytest.mark.parametrize("seed", range(12))
def test_online_flat_policies_place_what_the_static_heuristics_place(policy: str, seed: int) -> None:
    instance = random_small(seed, servers=4, tenants=5, resources=3)
    static = solve(instance, policy)
    assert static.allocation is not None and static.allocation.kind == "machine"
    online = simulate(_as_arrivals(instance), policy)
    assert online.verified and online.schedule is not None
    schedule = online.schedule
    first = np.searchsorted(instance.machine_class(), np.arange(len(instance.servers)))
    at_zero = schedule.start == 0
    placed = np.zeros_like(static.allocation.tasks)
    np.add.at(placed, (schedule.job[at_zero], first[schedule.server[at_zero]] + schedule.machine[at_zero]), 1)
    np.testing.assert_array_equal(placed, static.allocation.tasks)


# --- timelines, by hand -------------------------------------------------------------------------------


def test_fifo_queueing_delay_slowdown_and_utilisation_by_hand() -> None:
    # A holds the only cpu over [0, 2]; B arrives at 1 and waits until 2: delay 1, JCT 2, slowdown 2.
    instance = _one_machine(_job("a", 0.0, 2.0, 1.0), _job("b", 1.0, 1.0, 1.0))
    result = simulate(instance, "fifo")
    assert result.verified and result.status == "feasible"
    summary = result.extra["summary"]
    assert summary["makespan"] == pytest.approx(3.0)
    assert summary["mean_jct"] == pytest.approx(2.0)  # (2 + 2) / 2
    assert summary["mean_queueing_delay"] == pytest.approx(0.5)  # (0 + 1) / 2
    assert summary["mean_slowdown"] == pytest.approx(1.5)  # (1 + 2) / 2
    assert summary["utilisation"]["cpu"] == pytest.approx(1.0)  # busy from 0 to the makespan
    assert result.schedule is not None
    table = job_table(instance, result.schedule)
    np.testing.assert_allclose(table["start"], [0.0, 2.0])
    np.testing.assert_allclose(table["queueing_delay"], [0.0, 1.0])
    np.testing.assert_allclose(table["slowdown"], [1.0, 2.0])


def test_busy_utilisation_leaves_out_the_idle_gaps_of_a_sparse_trace() -> None:
    # a runs [0, 2] on the whole cpu, b arrives at 98 and runs [98, 99] on half of it: the cluster is idle for
    # 96 of the 99 time units, so utilisation over [0, 99] is 2.5/99, but while work was there it was 2.5/3.
    instance = _one_machine(_job("a", 0.0, 2.0, 1.0), _job("b", 98.0, 1.0, 0.5))
    summary = simulate(instance, "fifo").extra["summary"]
    assert summary["utilisation"]["cpu"] == pytest.approx(2.5 / 99)
    assert summary["utilisation_busy"]["cpu"] == pytest.approx(2.5 / 3)


def test_busy_time_is_the_length_of_the_union() -> None:
    begin = np.array([5.0, 0.0, 1.0, 10.0, 10.0, 3.0])
    end = np.array([6.0, 2.0, 1.5, 12.0, 11.0, 3.0])  # [0,2] and [1,1.5] overlap; [3,3] is empty
    assert busy_time(begin, end) == pytest.approx(2.0 + 1.0 + 2.0)
    assert busy_time(np.zeros(0), np.zeros(0)) == 0.0


def test_fifo_passes_over_what_does_not_fit_and_runs_it_when_room_frees() -> None:
    # a (0.6) runs; b (0.6) does not fit beside it, c (0.4) does: c starts at 0, b when a ends at 2.
    instance = _one_machine(_job("a", 0.0, 2.0, 0.6), _job("b", 0.0, 1.0, 0.6), _job("c", 0.0, 5.0, 0.4))
    result = simulate(instance, "fifo")
    assert result.schedule is not None and result.verified
    start = dict(zip(result.schedule.job.tolist(), result.schedule.start.tolist(), strict=True))
    assert start == {0: 0.0, 1: 2.0, 2: 0.0}


def test_a_task_that_fits_no_machine_is_refused_up_front_naming_the_stage() -> None:
    instance = _one_machine(_job("small", 0.0, 1.0, 0.5), _job("huge", 0.0, 1.0, 2.0))
    with pytest.raises(InstanceError, match="huge"):
        simulate(instance, "first-fit")


def test_a_job_the_policy_never_admits_is_reported_unfinished_and_the_rest_still_runs() -> None:
    # Ten slots of 0.1 cpu: "big" (0.5) fits the machine but no slot, so slots never runs it.
    instance = _one_machine(_job("small", 0.0, 1.0, 0.05), _job("big", 0.0, 1.0, 0.5))
    result = simulate(instance, "slots")
    assert result.verified and result.schedule is not None
    assert result.extra["unfinished_jobs"] == ["big"]
    assert result.extra["summary"]["unfinished"] == 1 and result.extra["summary"]["jobs"] == 2
    assert "never finished" in result.message
    assert result.schedule.job.tolist() == [0]


# --- traces ---------------------------------------------------------------------------------------------


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_csv_trace_becomes_jobs_with_stages_and_precedence(tmp_path: Path) -> None:
    trace = _write(tmp_path / "t.csv", "arrival,duration,tenant,cpu,job,stage,after,tasks\n"
                   "0,2,alice,0.5,j1,map,,2\n0,1,alice,0.5,j1,reduce,map,1\n1.5,1,bob,0.25,,,,\n")  # fmt: skip
    data = read_trace(trace, ("cpu",))
    assert [job.name for job in data.jobs] == ["j1", "row3"]
    j1 = data.jobs[0]
    assert [s.name for s in j1.stages] == ["map", "reduce"] and j1.stages[1].after == (0,)
    assert j1.stages[0].tasks == 2 and j1.tenant == "alice" and data.jobs[1].release == 1.5
    result = simulate(_one_machine(), "fifo", data)
    assert result.verified
    # map's two tasks fill the machine over [0, 2]; bob's 0.25 (arriving at 1.5) waits until 2 and runs
    # beside reduce (0.5), which runs [2, 3].
    assert result.schedule is not None
    table = job_table(_one_machine(*data.jobs), result.schedule)
    np.testing.assert_allclose(table["completion"], [3.0, 3.0])
    np.testing.assert_allclose(table["queueing_delay"], [0.0, 0.5])


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("arrival,duration,cpu\n0,1,1\n", "header"),  # no tenant column
        ("arrival,duration,tenant,gpu\n0,1,a,1\n", "header"),  # a resource the instance lacks
        ("arrival,duration,tenant,cpu\n0,-1,a,1\n", "duration"),
        ("arrival,duration,tenant,cpu\nsoon,1,a,1\n", "arrival"),
        ("arrival,duration,tenant,cpu,job\n0,1,a,1,j\n1,1,a,1,j\n", "arrival"),  # one job, two releases
        # The instance loader's checks and limits, named by the trace's row and column:
        ("arrival,duration,tenant,cpu,tasks\n0,1,a,1,1000000000000\n", "row 1.tasks"),
        ("arrival,duration,tenant,cpu,tasks\n0,1,a,1,1e18\n", "row 1.tasks"),
        ("arrival,duration,tenant,cpu\n0,1e300,a,1\n", "row 1.duration"),
        ("arrival,duration,tenant,cpu\n0,1,a,1e300\n", "row 1.cpu"),
        ("arrival,duration,tenant,cpu\n0,1,a,1e-320\n", "row 1.cpu"),
        ("arrival,duration,tenant,cpu\n1e300,1,a,1\n", "row 1.arrival"),
        ("arrival,duration,tenant,cpu,job,tasks\n0,1,a,1,j,600000000\n0,1,a,1,j,600000000\n", "jobs"),
        # A job's fields are read from every row of it, not the first alone:
        ("arrival,duration,tenant,cpu,job,deadline\n0,1,a,1,j,5\n0,1,a,1,j,abc\n", "row 2.deadline"),
        ("arrival,duration,tenant,cpu,job\n0,1,a,1,j\n0,1,b,1,j\n", "row 2.tenant"),
        ("arrival,duration,tenant,cpu,job,stage,after\n0,1,a,1,j,x,\n0,1,a,1,j,y,z\n", "row 2.after"),
        ("arrival,duration,tenant,cpu,cpu\n0,1,a,1,2\n", "header"),  # which cpu?
    ],
)
def test_bad_traces_name_the_file_and_the_column(tmp_path: Path, text: str, where: str) -> None:
    path = _write(tmp_path / "bad.csv", text)
    with pytest.raises(InstanceError) as error:
        read_trace(path, ("cpu",))
    message = str(error.value)
    assert "bad.csv" in message and where in message


def test_an_unplaceable_trace_row_is_named_by_the_trace_not_the_instance(tmp_path: Path) -> None:
    from fairpack.solver.api import simulate

    cluster = _write(tmp_path / "cluster.yaml", "resources: [cpu]\nservers: [{name: m, capacity: {cpu: 4}}]\n"
                     "jobs: [{name: own, stages: [{name: a, duration: 1, demand: {cpu: 1}}]}]\n")  # fmt: skip
    trace = _write(tmp_path / "t.csv", "arrival,duration,tenant,cpu\n0,1,a,1\n0,1,a,64\n")
    instance = load_instance(cluster)
    with pytest.raises(InstanceError) as error:
        simulate(instance, "fifo", read_trace(trace, instance.resources))
    assert error.value.source == str(trace) and error.value.field.startswith("row 2")


@pytest.mark.parametrize(("rows", "reason"), [("", "no pods"), ("p1,1000,1024,0,0,,LS,Pending,0,100,\n", "pending")])
def test_a_pod_list_with_nothing_to_replay_says_so(tmp_path: Path, rows: str, reason: str) -> None:
    header = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
              "scheduled_time\n")
    path = _write(tmp_path / "pods.csv", header + rows)
    with pytest.raises(InstanceError, match=reason) as error:
        read_trace(path, ("cpu", "mem", "gpu"))
    assert error.value.source == str(path)


def test_a_parquet_trace_reads_like_its_csv(tmp_path: Path) -> None:
    pandas = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    csv_path = _write(tmp_path / "t.csv", "arrival,duration,tenant,cpu\n0,2,a,0.5\n1,1,b,0.5\n")
    parquet = tmp_path / "t.parquet"
    pandas.read_csv(csv_path).to_parquet(parquet)
    assert read_trace(parquet, ("cpu",)).jobs == read_trace(csv_path, ("cpu",)).jobs


@pytest.mark.data
def test_the_alibaba_trace_replays_with_its_pods_accounted_for(data_dir: Path) -> None:
    from fairpack.models.generators.clusters import alibaba_servers

    pods = data_dir / "alibaba" / "gpu-v2023" / "openb_pod_list_default.csv"
    servers = alibaba_servers(data_dir)
    cluster = Instance(("cpu", "mem", "gpu"), servers, name="alibaba-nodes")
    assert sum(s.count for s in servers) == 1523
    data = read_trace(pods, cluster.resources)
    assert len(data.jobs) == 7255 and data.skipped == 897 and int(data.censored.sum()) == 34
    assert len(data.jobs) + data.skipped == 8152
    observed = data.observed_delay[~np.isnan(data.observed_delay)]
    assert observed.mean() == pytest.approx(61.3, abs=0.05)
    result = simulate(cluster, "first-fit", data)
    assert result.verified and result.schedule is not None
    assert result.extra["trace"]["observed_mean_delay"] == pytest.approx(observed.mean())
    assert result.extra["trace"]["skipped"] == 897


# --- the CLI --------------------------------------------------------------------------------------------


def _fairpack(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairpack", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": ""})  # fmt: skip


def test_simulate_then_check_round_trips_a_trace_and_catches_tampering(tmp_path: Path) -> None:
    instance = tmp_path / "one.yaml"
    instance.write_text("resources: [cpu]\nservers:\n- {name: m, capacity: {cpu: 1}, count: 2}\n")
    trace = _write(tmp_path / "t.csv", "arrival,duration,tenant,cpu\n0,2,a,1\n0,2,a,1\n0.5,1,b,1\n")
    out = tmp_path / "r.json"
    run = _fairpack("simulate", str(instance), "--trace", str(trace), "--policy", "fifo", "-o", str(out),
                    "--plot", str(tmp_path / "p.png"), cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "queueing delay mean 0.5 " in run.stdout  # row3 (arrival 0.5) waits until 2: (0 + 0 + 1.5) / 3
    assert "utilisation cpu" in run.stdout and "3 jobs replayed, 0 skipped, 0 censored" in run.stdout
    assert (tmp_path / "p.png").stat().st_size > 0
    assert _fairpack("check", str(instance), str(out), "--trace", str(trace), cwd=tmp_path).returncode == 0
    untraced = _fairpack("check", str(instance), str(out), cwd=tmp_path)  # the trace forgotten: say so
    assert untraced.returncode == 2 and "--trace" in untraced.stderr and "t.csv" in untraced.stderr
    saved = json.loads(out.read_text())
    early = next(task for task in saved["tasks"] if task["job"] == "row3")
    early["start"] -= 0.4  # before its arrival at 0.5
    early["end"] -= 0.4
    out.write_text(json.dumps(saved))
    tampered = _fairpack("check", str(instance), str(out), "--trace", str(trace), cwd=tmp_path)
    assert tampered.returncode == 1 and "row3" in tampered.stdout + tampered.stderr


def test_simulate_refuses_an_unknown_policy_with_exit_2(tmp_path: Path) -> None:
    run = _fairpack("simulate", str(ROOT / "instances" / "dag_two_jobs.yaml"), "--policy", "bogus", cwd=tmp_path)
    assert run.returncode == 2 and "Traceback" not in run.stderr


def test_generated_arrivals_simulate_under_every_flat_policy() -> None:
    from fairpack.models.generators.families import FAMILIES

    instance = FAMILIES["arrivals"].instance({"tenants": 4, "machines": 8, "horizon": 60.0}, 1)
    assert instance.jobs and all(job.tenant for job in instance.jobs)
    for policy in ("fifo", "first-fit", "best-fit", "slots", "per-server-drf"):
        result = simulate(instance, policy)
        assert result.verified, policy
        assert result.extra["summary"]["jobs"] == len(instance.jobs)


def test_bundled_dag_instance_simulates_under_every_dag_policy() -> None:
    instance = load_instance(ROOT / "instances" / "dag_two_jobs.yaml")
    for policy in ("carbyne", "drf-dag", "drf-strict", "tetris", "sjf", "fifo", "first-fit"):
        result = simulate(instance, policy)
        assert result.verified and result.schedule is not None, policy


def test_a_task_no_slot_can_hold_does_not_block_the_rest_of_its_tenants_queue() -> None:
    # Both jobs are tenant t's; "big" (0.5 cpu) exceeds every slot (0.1), "small" arrives after it.
    instance = _one_machine(_job("big", 0.0, 1.0, 0.5, tenant="t"), _job("small", 1.0, 1.0, 0.05, tenant="t"))
    result = simulate(instance, "slots")
    assert result.verified and result.schedule is not None
    assert result.extra["unfinished_jobs"] == ["big"]
    assert result.schedule.job.tolist() == [1] and result.schedule.start.tolist() == [1.0]


def test_a_simulation_stops_at_the_time_limit_with_what_it_placed(tick_clock: Callable[..., TickClock]) -> None:
    # Found by the fuzz campaign: 4 x 123,456 cpu lets naive H-DRF launch ~500,000 tasks in its first event,
    # which ran past 30 s whatever --time-limit said (the clock was read every 1,024th launch). On a clock that
    # ticks 1 ms a read, the 1 s limit is 1,000 reads: the run stops at its first read past the deadline, having
    # launched at most one task per read, the same tasks on every machine and under any load.
    from fairpack.models.io import parse_instance

    text = ("{name: big, resources: [cpu, gpu], servers: [{name: node, capacity: {cpu: 123456.789, gpu: 5}, "
            "count: 4}], hierarchy: {name: root, children: [{name: n1, weight: 1, children: [{name: a, demand: "
            "{cpu: 1}}, {name: b, demand: {gpu: 1}}]}, {name: n2, weight: 1, children: [{name: c, demand: "
            "{cpu: 1}}]}]}}")  # fmt: skip
    instance = parse_instance(text)
    for method in ("naive-hdrf", "dynamic-hdrf"):
        clock = tick_clock(1e-3)
        result = solve(instance, method, time_limit=1.0)
        assert result.status == "time_limit" and result.verified, method
        assert "time limit reached at simulated time" in result.message
        launched = result.allocation.tenant_tasks.sum() if result.allocation is not None else 0
        assert 0 < launched <= clock.reads, (method, launched, clock.reads)
        assert clock.reads_past(1.0) <= 10, method  # stopped there, then packed and verified the answer
    # A job simulation stops too (the loop checks the clock; building the workload and verifying the
    # schedule are not bounded by it): the tasks launched so far, verified, the rest unfinished.
    clock = tick_clock(1e-3)
    result = simulate(_many_arrivals(), "best-fit", time_limit=0.01)
    assert result.status == "time_limit" and result.verified
    assert result.extra["summary"]["unfinished"] > 0
    assert result.schedule is not None and 0 < result.schedule.start.size <= clock.reads
    assert clock.reads_past(0.01) <= 10


def _many_arrivals() -> Instance:
    """A few thousand one-task jobs: more than best fit simulates in 0.01 s."""
    from fairpack.models.generators.families import FAMILIES

    return FAMILIES["arrivals"].instance({"tenants": 5, "machines": 20, "horizon": 300.0}, 3)


def test_simulate_json_has_every_jobs_arrival_start_delay_and_slowdown(tmp_path: Path) -> None:
    # dag_two_jobs under Carbyne, by hand: long's load runs 0-2 on one CPU; short (released at 0.5) scans on
    # the other CPU 0.5-1.5 and 1.5-2.5; long's two-CPU join waits for both CPUs, 2.5-4.5. Critical paths:
    # long 2 + 2 = 4, short 1.
    run = _fairpack("simulate", str(ROOT / "instances" / "dag_two_jobs.yaml"), "--policy", "carbyne", "--json",
                    cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    jobs = json.loads(run.stdout)["jobs"]
    expected = {"long": {"arrival": 0.0, "start": 0.0, "completion": 4.5, "queueing_delay": 0.0, "jct": 4.5,
                         "slowdown": 4.5 / 4},
                "short": {"arrival": 0.5, "start": 0.5, "completion": 2.5, "queueing_delay": 0.0, "jct": 2.0,
                          "slowdown": 2.0}}  # fmt: skip
    for name, fields in expected.items():
        for key, value in fields.items():
            assert jobs[name][key] == pytest.approx(value), (name, key)


UNPLACEABLE = """
resources: [cpu]
servers: [{name: m, capacity: {cpu: 10}}]
jobs:
  - {name: small, stages: [{name: a, tasks: 2, duration: 1, demand: {cpu: 1}}]}
  - {name: big, release: 1, stages: [{name: a, tasks: 1, duration: 3, demand: {cpu: 5}},
                                     {name: b, tasks: 1, duration: 1, demand: {cpu: 1}, after: [a]}]}
"""


def test_a_job_that_never_ran_is_unfinished_with_no_completion_and_no_objective(tmp_path: Path) -> None:
    # Under slots (10 one-CPU slots), big's five-CPU task fits no slot: big never runs. It has no completion,
    # no JCT and no utility, and the run has no objective (small's JCT alone, 1, would beat every schedule
    # that runs big); the finished jobs' mean is reported under its own name.
    path = tmp_path / "unplaceable.yaml"
    path.write_text(UNPLACEABLE)
    out = tmp_path / "r.json"
    run = _fairpack("simulate", str(path), "--policy", "slots", "--json", "-o", str(out), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["verified"] is True and data["unfinished_jobs"] == ["big"]
    assert data["objective"] is None and data["avg_jct"] is None and data["makespan"] is None
    assert data["utility"] is None
    assert data["finished_jobs"] == 1 and data["avg_jct_finished"] == pytest.approx(1.0)
    big = data["jobs"]["big"]
    assert big["completion"] is None and big["jct"] is None and big["utility"] is None
    assert data["jobs"]["small"]["completion"] == pytest.approx(1.0)
    checked = _fairpack("check", str(path), str(out), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_check_gives_the_same_verdict_as_the_run_when_nothing_ran(tmp_path: Path) -> None:
    path = tmp_path / "none.yaml"
    path.write_text("resources: [cpu]\nservers: [{name: m, capacity: {cpu: 10}}]\n"
                    "jobs: [{name: big, stages: [{name: a, tasks: 1, duration: 3, demand: {cpu: 5}}]}]\n")
    out = tmp_path / "r.json"
    run = _fairpack("simulate", str(path), "--policy", "slots", "-o", str(out), cwd=tmp_path)
    assert run.returncode == 0 and "verified yes" in run.stdout, run.stdout + run.stderr
    checked = _fairpack("check", str(path), str(out), cwd=tmp_path)
    assert checked.returncode == 0 and "verified" in checked.stdout, checked.stdout + checked.stderr


def test_a_trace_of_one_row_jobs_reads_in_bulk_as_row_by_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fairpack.models.traces as traces

    text = "arrival,duration,tenant,cpu,mem,tasks,deadline\n2,1.5,a,1,,2,\n0,2,b,0.5,1,,9\n1,0,,2,0,1,0\n"
    path = _write(tmp_path / "t.csv", text)
    columns = read_trace(path, ("cpu", "mem"))  # column by column (pyarrow), with its stage table
    assert columns.table is not None
    monkeypatch.setattr(traces, "_columnar", lambda *args: None)
    fast = read_trace(path, ("cpu", "mem"))  # the rows read, then checked in bulk
    monkeypatch.setattr(traces, "_single_rows_fast", lambda *args: None)
    slow = read_trace(path, ("cpu", "mem"))
    assert columns.jobs == fast.jobs == slow.jobs
    assert [tuple(r) for r in columns.rows] == list(fast.rows) == list(slow.rows)
    assert [job.name for job in fast.jobs] == ["row2", "row3", "row1"] and fast.jobs[0].deadline == 9
