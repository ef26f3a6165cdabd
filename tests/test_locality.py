"""Data locality and delay scheduling (Zaharia et al., EuroSys'10): data placement in instances, per-machine
durations in the simulator and the checker, the fifo / fair / delay policies, the paper's analysis.

Hand cases derive every number by hand. The analysis test compares the simulated locality of single-task
jobs against ``1 - (1 - p)^D`` with a binomial error bar; its seeds are fixed.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from models.check import verify_schedule
from models.io import instance_to_yaml, parse_instance
from models.result import Schedule
from models.types import DataPlacement, Instance, InstanceError, Job, ServerClass, Stage
from solver.api import simulate

#: Two racks: r1 holds a/0 and a/1, r2 holds b (one machine).
RACKED = """
resources: [slot]
servers:
  - {name: a, capacity: {slot: 2}, count: 2, labels: {rack: r1}}
  - {name: b, capacity: {slot: 2}, labels: {rack: r2}}
jobs:
  - name: j
    stages:
      - {name: map, tasks: 2, duration: 3, demand: {slot: 1}, input: [b1, b2]}
blocks:
  b1: [a/0, b]
  b2: [a/1]
locality: {rack: 1.5}
"""


def _load(text: str = RACKED) -> Instance:
    return parse_instance(text, "racked.yaml")


# --- data placement in instance files -----------------------------------------------------------------


def test_blocks_labels_and_locality_are_read_and_written_back() -> None:
    instance = _load()
    assert instance.servers[0].label("rack") == "r1" and instance.servers[1].label("rack") == "r2"
    assert instance.data == DataPlacement(("b1", "b2"), ((0, 2), (1,)), (1.0, 1.5, 2.0))
    assert instance.machine_racks().tolist() == [0, 0, 1]
    assert instance.jobs[0].stages[0].input == ("b1", "b2")
    assert parse_instance(instance_to_yaml(instance), "again.yaml") == instance


def test_default_locality_factors_are_the_papers_up_to_twice_as_long() -> None:
    instance = _load(RACKED.replace("locality: {rack: 1.5}\n", ""))
    assert instance.data is not None and instance.data.factors == (1.0, 1.3, 2.0)


@pytest.mark.parametrize(
    ("old", "new", "field", "reason"),
    [
        ("b2: [a/1]", "b2: [a/2]", "blocks.b2[0]", "unknown machine 'a/2'"),
        ("b2: [a/1]", "b2: [c/0]", "blocks.b2[0]", "no server named 'c'"),
        ("b2: [a/1]", "b2: [a]", "blocks.b2[0]", "has 2 machines"),
        ("b2: [a/1]", "b2: []", "blocks.b2", "at least one replica"),
        ("b2: [a/1]", "b2: [a/1, a/1]", "blocks.b2", "same block twice"),
        ("input: [b1, b2]", "input: [b1, b3]", "jobs[0].stages[0].input[1]", "unknown block 'b3'"),
        ("input: [b1, b2]", "input: [b1]", "jobs[0].stages[0].input", "1 input blocks for 2 tasks"),
        ("{rack: 1.5}", "{rack: 0}", "locality.rack", "must be positive"),
        ("{rack: 1.5}", "{rack: .nan}", "locality.rack", "must be finite"),
        ("{rack: 1.5}", "{remote: 1e9}", "locality.remote", "above the limit"),
        ("{rack: 1.5}", "{rack: 2.5}", "locality.remote", "must not decrease"),
        ("{rack: 1.5}", "{rack: fast}", "locality.rack", "must be a number"),
        ("{rack: 1.5}", "{disk: 2}", "locality.disk", "unknown key"),
        ("labels: {rack: r2}", "labels: {rack: 2}", "servers[1].labels.rack", "must be a string"),
        ("labels: {rack: r2}", "labels: [r2]", "servers[1].labels", "must be a mapping"),
    ],
)
def test_bad_data_placement_names_file_and_field(old: str, new: str, field: str, reason: str) -> None:
    assert old in RACKED
    with pytest.raises(InstanceError) as caught:
        _load(RACKED.replace(old, new))
    assert caught.value.source == "racked.yaml"
    assert caught.value.field == field
    assert reason in caught.value.reason


def test_an_input_block_needs_a_blocks_section() -> None:
    text = RACKED.split("blocks:")[0]
    with pytest.raises(InstanceError, match="unknown block 'b1'") as caught:
        _load(text)
    assert caught.value.field == "jobs[0].stages[0].input[0]"


# --- durations per machine: simulator and checker -----------------------------------------------------


def test_fifo_runs_each_task_its_duration_times_its_locality_factor() -> None:
    # First fit puts both tasks on a/0: task 0 reads b1 (a replica on a/0: node-local, 3 x 1.0), task 1
    # reads b2 (only on a/1, same rack r1: rack-local, 3 x 1.5 = 4.5).
    result = simulate(_load(), "fifo")
    assert result.verified, result.violations
    schedule = result.schedule
    assert schedule is not None
    assert (schedule.end - schedule.start).tolist() == [3.0, 4.5]
    assert result.extra["locality"] == {"node": 1, "rack": 1, "remote": 0}


def test_checker_rejects_a_duration_that_ignores_locality() -> None:
    instance = _load()
    server, machine = np.array([0, 0]), np.array([0, 0])
    right = Schedule(np.array([0, 0]), np.array([0, 0]), np.array([0, 1]), np.array([0.0, 0.0]),
                     np.array([3.0, 4.5]), None, server, machine)  # fmt: skip
    assert verify_schedule(instance, right).ok
    wrong = replace(right, end=np.array([3.0, 3.0]))  # task 1 as if node-local
    report = verify_schedule(instance, wrong)
    assert not report.ok
    assert any("task 1 runs 3 but its duration is 4.5" in v for v in report.violations)
    # On b (rack r2), task 1 is remote: 3 x 2 = 6; task 0 (b1 has a replica on b) node-local.
    remote = replace(right, server=np.array([1, 1]), machine=np.array([0, 0]), end=np.array([3.0, 6.0]))
    assert verify_schedule(instance, remote).ok
    assert not verify_schedule(instance, replace(remote, end=np.array([3.0, 4.5]))).ok


def test_tasks_without_input_run_their_plain_duration() -> None:
    servers = (ServerClass("m", np.array([1.0]), 2, (("rack", "r"),)),)
    job = Job("j", (Stage("s", 2, 2.0, np.array([1.0])),))
    data = DataPlacement(("x",), ((1,),), (1.0, 1.3, 2.0))
    instance = Instance(("slot",), servers, jobs=(job,), data=data)
    result = simulate(instance, "fifo")
    assert result.verified and result.schedule is not None
    assert (result.schedule.end - result.schedule.start).tolist() == [2.0, 2.0]


def test_pooled_runs_ignore_locality() -> None:
    result = simulate(_load(), "fifo", placement="pooled")
    assert result.verified and result.schedule is not None
    assert (result.schedule.end - result.schedule.start).tolist() == [3.0, 3.0]
