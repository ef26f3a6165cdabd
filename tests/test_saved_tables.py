"""A saved schedule read as columns (``models.saved_tables``) is judged exactly as when read row by row.

Each case tampers with a saved simulation (a number, a type, a name, a key, a locality level), writes it as
``-o`` does (``json.dumps(..., indent=1)``) and checks it three ways: read by ``read_result`` (the tables parsed
in blocks into columns), read by ``json.loads`` (the rows turned into columns), and row by row (the columns
refused, as for a row they do not take). The three give the same verdict, findings and numbers, or raise the
same error naming the same field.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fairpack.models import saved_tables
from fairpack.models.check import saved_schedule
from fairpack.models.check.saved import check_saved
from fairpack.models.io import parse_instance
from fairpack.models.saved_tables import SavedJobs, SavedTasks, read_result
from fairpack.models.traces import read_trace
from fairpack.models.types import Instance, ServerClass
from fairpack.models.view import result_json, schedule_from_json
from fairpack.models.view_text import result_json_dumps
from fairpack.solver.api import simulate
from fairpack.solver.registry import get_policy

LOCAL = """
resources: [slot]
servers:
  - {name: a, capacity: {slot: 2}, count: 2, labels: {rack: r1}}
  - {name: b, capacity: {slot: 2}, labels: {rack: r2}}
jobs:
  - name: j
    stages:
      - {name: map, tasks: 2, duration: 3, demand: {slot: 1}, input: [b1, b2]}
      - {name: "0", tasks: 1, duration: 1, demand: {slot: 1}, after: [map]}
  - name: k
    release: 0.5
    stages:
      - {name: s, tasks: 3, duration: 0.1, demand: {slot: 1}}
blocks:
  b1: [a/0, b]
  b2: [a/1]
locality: {rack: 1.5}
"""

Edit = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Edit:
    """Set ``value`` at a dotted path (``tasks.0.start``; a list index by number)."""

    def edit(data: dict[str, Any]) -> None:
        *head, last = path.split(".")
        node: Any = data
        for part in head:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return edit


def _drop(path: str) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        *head, last = path.split(".")
        node: Any = data
        for part in head:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[last]

    return edit


def _rename_job(data: dict[str, Any]) -> None:
    data["jobs"] = {("nobody" if name == "k" else name): entry for name, entry in data["jobs"].items()}


def _first_job(data: dict[str, Any]) -> str:
    return next(iter(data["jobs"]))


EDITS: dict[str, Edit] = {
    "as saved": lambda data: None,
    "a completion off": lambda data: _set(f"jobs.{_first_job(data)}.completion", 99.5)(data),
    "a completion within tolerance": lambda data: data["jobs"][_first_job(data)].update(
        completion=data["jobs"][_first_job(data)]["completion"] * (1 + 1e-12)),
    "an arrival as a whole number": lambda data: _set(f"jobs.{_first_job(data)}.arrival", 0)(data),
    "an arrival as another whole number": lambda data: _set(f"jobs.{_first_job(data)}.arrival", 7)(data),
    "a jct null": lambda data: _set(f"jobs.{_first_job(data)}.jct", None)(data),
    "a deadline given": lambda data: _set(f"jobs.{_first_job(data)}.deadline", 4.0)(data),
    "a slowdown as text": lambda data: _set(f"jobs.{_first_job(data)}.slowdown", "2")(data),
    "a start as true": lambda data: _set(f"jobs.{_first_job(data)}.start", True)(data),
    "a field left out": lambda data: _drop(f"jobs.{_first_job(data)}.utility")(data),
    "a fair completion": lambda data: _set(f"jobs.{_first_job(data)}.fair_completion", 30.0)(data),
    "a fair completion as text": lambda data: _set(f"jobs.{_first_job(data)}.fair_completion", "x")(data),
    "an entry a list": lambda data: _set(f"jobs.{_first_job(data)}", [1, 2])(data),
    "an extra field": lambda data: _set(f"jobs.{_first_job(data)}.colour", "blue")(data),
    "an unknown job entry": _rename_job,
    "jobs a list": lambda data: _set("jobs", [1])(data),
    "a task of an unknown job": lambda data: _set("tasks.1.job", "nobody")(data),
    "a task of an unknown stage": lambda data: _set("tasks.1.stage", "nothing")(data),
    "a stage as a number": lambda data: _set("tasks.0.stage", 0)(data) if data["tasks"][0]["job"] == "j" else
    _set("tasks.0.stage", 1)(data),
    "a task without its end": lambda data: _drop("tasks.2.end")(data),
    "an index as a float": lambda data: _set("tasks.0.index", 0.0)(data),
    "an index as text": lambda data: _set("tasks.0.index", "0")(data),
    "a start as text": lambda data: _set("tasks.0.start", "zero")(data),
    "a start off": lambda data: _set("tasks.3.start", 0.25)(data),
    "an unknown server": lambda data: _set("tasks.0.server", "zz")(data),
    "a machine as true": lambda data: _set("tasks.0.machine", True)(data),
    "a machine out of range": lambda data: _set("tasks.0.machine", 9)(data),
    "a task unplaced": lambda data: _set("tasks.0.server", None)(data),
    "an option as text": lambda data: _set("tasks.0.option", "1")(data),
    "a level changed": lambda data: _set("tasks.0.local", "remote")(data),
    "a level unknown": lambda data: _set("tasks.0.local", "galaxy")(data),
    "a level where none is": lambda data: _set("tasks.5.local", "node")(data),
    "a level left out": lambda data: [row.pop("local", None) for row in data["tasks"]] and None,
    "a row not an object": lambda data: _set("tasks.1", 5)(data),
    "a task twice": lambda data: data["tasks"].append(dict(data["tasks"][0])),
    "a huge index": lambda data: _set("tasks.0.index", 2**64)(data),
    "a huge arrival": lambda data: _set(f"jobs.{_first_job(data)}.arrival", 2**70)(data),
}


def _outcome(instance: Instance, data: dict[str, Any], rules: Any) -> tuple[Any, ...]:
    try:
        checked = check_saved(instance, data, rules)
    except Exception as error:  # the same error, the same field, whichever way the file was read
        return ("raised", type(error).__name__, str(error), getattr(error, "field", None))
    return ("checked", checked.verified, tuple(checked.violations), json.dumps(checked.numbers, sort_keys=True))


def _row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every column reading refused: the rows are read, and the jobs and levels compared, one by one."""
    import fairpack.models.view as view

    monkeypatch.setattr(view, "task_columns", lambda rows, names: None)
    monkeypatch.setattr(view, "job_entries", lambda jobs, names: None)
    monkeypatch.setattr(saved_schedule, "job_entries", lambda jobs, names: None)
    monkeypatch.setattr(saved_schedule, "_saved_levels", lambda rows: None)


def _cases() -> list[tuple[str, Instance, dict[str, Any], Any]]:
    local = parse_instance(LOCAL, "local.yaml")
    delay = simulate(local, "delay", placement="servers")
    return [("locality", local, result_json(local, delay), get_policy("delay").saved_rules({}, jobs=True))]


@pytest.mark.parametrize("name", list(EDITS))
def test_columns_and_rows_judge_a_tampered_file_alike(name: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    for _, instance, view, rules in _cases():
        data = copy.deepcopy(view)
        EDITS[name](data)
        path = tmp_path / "saved.json"
        path.write_text(json.dumps(data, indent=1))
        read = read_result(path, instance)
        loaded = json.loads(path.read_text())
        columns = _outcome(instance, read, rules)
        rows = _outcome(instance, loaded, rules)
        with monkeypatch.context() as patch:
            _row_by_row(patch)
            one_by_one = _outcome(instance, json.loads(path.read_text()), rules)
        assert columns == rows == one_by_one
        if name == "as saved":
            assert columns[:2] == ("checked", True)
            assert isinstance(read["tasks"], SavedTasks) and isinstance(read["jobs"], SavedJobs)
        if name in ("a completion off", "a level changed", "an unknown job entry", "a task of an unknown job"):
            assert columns != _outcome(instance, copy.deepcopy(view), rules)  # the edit is seen


def test_a_file_read_as_columns_holds_what_json_loads_reads(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    rows = ["arrival,duration,tenant,cpu,tasks"] + [f"{k * 0.3},{1 + k % 4},t{k % 3},1,{1 + k % 3}" for k in range(300)]
    path.write_text("\n".join(rows) + "\n")
    instance = read_trace(path, ("cpu",)).on(Instance(("cpu",), (ServerClass("m", np.array([1.0]), 4),)))
    result = simulate(instance, "fifo")
    saved = tmp_path / "saved.json"
    saved.write_text(result_json_dumps(instance, result, indent=1))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(saved_tables, "BLOCK_BYTES", 300)  # many blocks
        read = read_result(saved, instance)
    loaded = json.loads(saved.read_text())
    assert isinstance(read["tasks"], SavedTasks) and len(read["tasks"]) == len(loaded["tasks"])
    assert {key: value for key, value in read.items() if key not in ("jobs", "tasks")} == \
        {key: value for key, value in loaded.items() if key not in ("jobs", "tasks")}  # fmt: skip
    mine, theirs = schedule_from_json(instance, read), schedule_from_json(instance, loaded)
    for field in ("job", "stage", "index", "start", "end", "server", "machine"):
        np.testing.assert_array_equal(getattr(mine, field), getattr(theirs, field))
    jobs = read["jobs"]
    assert isinstance(jobs, SavedJobs)
    assert [jobs.entry(p) for p in range(len(jobs))] == list(loaded["jobs"].values())
    rules = get_policy("fifo").saved_rules({}, jobs=True)
    assert _outcome(instance, read, rules) == _outcome(instance, loaded, rules)
    # Read and checked without making a job of the trace (a million of them cost seconds and a gigabyte).
    from fairpack.models.traces import TraceJobs

    def made(self: TraceJobs, k: Any) -> Any:
        raise AssertionError("a job of the trace was made")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TraceJobs, "__getitem__", made)
        patch.setattr(saved_tables, "_NAMES", {})
        for data in (read_result(saved, instance), json.loads(saved.read_text())):
            schedule_from_json(instance, data)
            assert _outcome(instance, data, rules)[:2] == ("checked", True)
    # Not as -o writes it (compact, or the tables' rows not whole): read whole, as json.loads reads it.
    saved.write_text(json.dumps(loaded))
    assert read_result(saved, instance) == loaded
    assert read_result(saved) == loaded


def _read(read: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        return ("read", read())
    except RecursionError:
        return ("too deep",)


def test_what_orjson_reads_otherwise_is_read_by_the_stdlib(tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    for text in ('{"a": 18446744073709551616, "b": [1e400, -0.0]}', '{"a": NaN}', '{"a": -9223372036854775809}',
                 '{"a": 1, "a": 2}'):  # fmt: skip
        path.write_text(text)
        read = read_result(path)
        assert json.dumps(read) == json.dumps(json.loads(text)) and type(read["a"]) is type(json.loads(text)["a"])
    for depth in (500, 1000):  # 1000: deeper than the stdlib reads, within orjson's limit; the same either way
        deep = '{"a": ' + "[" * depth + "2.5e19" + "]" * depth + "}"
        path.write_text(deep)
        assert _read(lambda: read_result(path)) == _read(lambda text=deep: json.loads(text))
    path.write_bytes(b"\xef\xbb\xbf{}")
    with pytest.raises(json.JSONDecodeError, match="BOM"):
        read_result(path)


@pytest.mark.parametrize("policy", ["fifo", "delay", "sjf"])
def test_the_rerun_gives_the_policys_answer_without_verifying_or_its_timeline(policy: str) -> None:
    from fairpack.solver.api import simulate_answer

    instance = parse_instance(LOCAL, "local.yaml")
    full = simulate(instance, policy, placement="servers", seed=3)
    answer = simulate_answer(instance, policy, placement="servers", seed=3, answer_only=True)
    assert full.schedule is not None and answer.schedule is not None
    for field in ("job", "stage", "index", "start", "end", "server", "machine"):
        np.testing.assert_array_equal(getattr(answer.schedule, field), getattr(full.schedule, field))
    assert answer.status == full.status == "feasible" and full.verified and not answer.verified
    assert "summary" in full.extra and "summary" not in answer.extra


def test_a_task_left_unplaced_is_saved_as_null_and_check_reports_it() -> None:
    # The schedule marks an unplaced task with server -1; the file says null (it had said -1, which the reader then
    # refused as an unknown server instead of check reporting the task).
    from dataclasses import replace

    from fairpack.models.result import Result

    ((_, instance, _, rules),) = _cases()
    result = simulate(instance, "delay", placement="servers")
    assert result.schedule is not None and result.schedule.server is not None and result.schedule.machine is not None
    server, machine = result.schedule.server.copy(), result.schedule.machine.copy()
    server[0], machine[0] = -1, -1
    unplaced = Result(result.status, result.method, result.backend,
                      schedule=replace(result.schedule, server=server, machine=machine), extra=result.extra)
    view = result_json(instance, unplaced)
    assert view["tasks"][0]["server"] is None
    assert result_json_dumps(instance, unplaced, indent=1) == json.dumps(view, indent=1)
    checked = check_saved(instance, view, rules)
    assert not checked.verified and any("is not placed on a machine" in v for v in checked.violations)
