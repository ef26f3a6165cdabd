"""The schedule view written as text in bulk (``models.view_text``) is ``json.dumps`` of the view, byte for byte.

Schedules with odd values -- nan, inf and -0.0 times, names JSON escapes, per-machine placements with an unplaced
task, placement options, locality levels, fair completion times, a bulk trace -- are written both ways, with
``indent=1`` (``-o FILE``) and compact (``--json``), with orjson's number writer and with ``repr`` alone.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fairpack.models import view_text
from fairpack.models.io import instance_from_dict, parse_instance
from fairpack.models.result import Result, Schedule
from fairpack.models.types import Instance, ServerClass
from fairpack.models.view import result_json
from fairpack.models.view_text import number_texts, result_json_chunks, result_json_dumps
from fairpack.solver.api import simulate

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # job statistics of nan and inf times

ODD = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-5, 1e-4, 9.999e-5, 1e16, 1e15 + 0.5, 5e-324, 1.7976931348623157e308,
       -2.5, 0.1 + 0.2, 123456789.123]  # fmt: skip

#: Two racks, a stage reading input blocks, a stage with placement options, names JSON escapes.
LOCAL = """
resources: [slot]
servers:
  - {name: "a\\"q", capacity: {slot: 2}, count: 2, labels: {rack: r1}}
  - {name: "b\\u00e9", capacity: {slot: 2}, labels: {rack: r2}}
jobs:
  - name: "j\\\\1 \\u00fc/x"
    stages:
      - {name: "m\\"ap", tasks: 2, duration: 3, demand: {slot: 1}, input: [b1, b2]}
      - {name: red, tasks: 1, duration: 1, demand: {slot: 1}, after: ["m\\"ap"]}
  - name: plain
    stages:
      - {name: s, tasks: 3, duration: 0.1, demand: {slot: 1}}
blocks:
  b1: ["a\\"q/0", "b\\u00e9"]
  b2: ["a\\"q/1"]
locality: {rack: 1.5}
"""


def _same(instance: Instance, result: Result) -> None:
    for indent in (1, None):
        expected = json.dumps(result_json(instance, result), indent=indent)
        assert result_json_dumps(instance, result, indent) == expected
    # Written in blocks: the pieces join to the same text with blocks of one and two rows too.
    for rows in (1, 2):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(view_text, "BLOCK_ROWS", rows)
            assert "".join(result_json_chunks(instance, result, 1)) == json.dumps(result_json(instance, result),
                                                                                  indent=1)  # fmt: skip


def _odd(schedule: Schedule, jobs: int) -> Schedule:
    """The schedule with odd times and fair completion times (the view writes what it is given)."""
    start, end = schedule.start.copy(), schedule.end.copy()
    for position in range(min(len(start), len(ODD))):
        start[position], end[position] = ODD[position], ODD[-1 - position]
    fair = np.array([ODD[k % len(ODD)] for k in range(jobs)])
    return replace(schedule, start=start, end=end, fair_completion=fair)


@pytest.fixture(params=[True, False], ids=["orjson", "repr"])
def writer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    if not request.param:
        monkeypatch.setattr(view_text, "orjson", None)
    return bool(request.param)


def test_every_float_is_written_as_json_dumps_writes_it(writer: bool) -> None:
    rng = np.random.default_rng(7)
    bits = rng.integers(-(2**63), 2**63 - 1, 20000, dtype=np.int64).view(np.float64)
    values = np.concatenate([bits, rng.exponential(1.0, 5000), 10.0 ** rng.uniform(-6, 18, 5000), ODD])
    assert number_texts(values) == [json.dumps(v) for v in values.tolist()]
    assert number_texts(values, null=True) == [json.dumps(v if np.isfinite(v) else None) for v in values.tolist()]
    assert number_texts(np.array([])) == []


def test_a_placed_schedule_with_locality_options_and_odd_values(writer: bool) -> None:
    instance = parse_instance(LOCAL, "local.yaml")
    result = simulate(instance, "delay", placement="servers")
    assert result.schedule is not None and result.schedule.server is not None
    _same(instance, result)
    schedule = _odd(result.schedule, len(instance.jobs))
    server, machine = schedule.server.copy(), schedule.machine.copy()
    server[0], machine[0] = -1, -1  # unplaced: no name, no locality
    _same(instance, replace(result, schedule=replace(schedule, server=server, machine=machine)))
    view = result_json(instance, replace(result, schedule=schedule))
    assert {task.get("local") for task in view["tasks"]} > {None}  # the case writes locality levels


def test_placement_options_and_a_server_out_of_range(writer: bool) -> None:
    servers = [{"name": "g", "capacity": {"cpu": 4, "gpu": 1}, "labels": {"gpu": "true"}},
               {"name": "p", "capacity": {"cpu": 4}}]  # fmt: skip
    options = [{"on": {"gpu": "true"}, "duration": 2, "demand": {"cpu": 1, "gpu": 1}}, {"duration": 5}]
    jobs = [{"name": f"o{k}\u2603", "stages": [{"name": "s", "demand": {"cpu": 1}, "options": options}]}
            for k in range(3)]  # fmt: skip
    instance = instance_from_dict({"resources": ["cpu", "gpu"], "servers": servers, "jobs": jobs}, name="gpus")
    result = simulate(instance, "sjf", placement="servers")
    assert result.schedule is not None and result.schedule.option is not None
    _same(instance, result)
    schedule = result.schedule
    odd = replace(schedule, server=np.array([0, 5, -1]), option=np.array([1, -1, 0]))  # a class out of range
    _same(instance, replace(result, schedule=_odd(odd, len(instance.jobs))))


def test_a_pooled_dag_schedule_and_an_empty_one(writer: bool) -> None:
    instance = parse_instance(LOCAL, "local.yaml")
    result = simulate(instance, "fifo")
    assert result.schedule is not None
    pooled = replace(result.schedule, server=None, machine=None)
    _same(instance, replace(result, schedule=_odd(pooled, len(instance.jobs))))
    empty = Schedule(*(np.array([], dtype=t) for t in (np.int64, np.int64, np.int64, np.float64, np.float64)))
    _same(instance, replace(result, schedule=empty))
    nothing = instance_from_dict({"resources": ["slot"], "servers": [{"name": "m", "capacity": {"slot": 1}}],
                                  "jobs": []}, name="none")  # fmt: skip
    _same(nothing, replace(result, schedule=empty))


def test_a_bulk_trace(tmp_path: Path, writer: bool) -> None:
    from fairpack.models.traces import read_trace

    path = tmp_path / "t.csv"
    rows = ["arrival,duration,tenant,cpu,tasks,deadline"]
    rows += [f"{k * 0.37},{1 + k % 3},t{k % 4},1,{1 + k % 2},{'' if k % 3 else 10 + k}" for k in range(40)]
    path.write_text("\n".join(rows) + "\n")
    cluster = Instance(("cpu",), (ServerClass("m", np.array([1.0]), 3),))
    instance = read_trace(path, ("cpu",)).on(cluster)
    result = simulate(instance, "fifo")
    _same(instance, result)
    assert result.schedule is not None
    _same(instance, replace(result, schedule=_odd(result.schedule, len(instance.jobs))))


def test_a_view_the_tables_cannot_be_placed_in_is_json_dumps(writer: bool) -> None:
    instance = parse_instance(LOCAL, "local.yaml")
    result = simulate(instance, "fifo")
    extra: dict[str, Any] = {**result.extra, "tasks": "replaced by the method"}
    _same(instance, replace(result, extra=extra))
    _same(instance, replace(result, extra={**result.extra, "note": "\x00fairpack:jobs\x00"}))
