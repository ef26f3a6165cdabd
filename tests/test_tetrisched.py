"""Soft placement constraints, gangs, deadlines and utility (Tetrisched, alsched, Jockey): the loader, the
checker, the exact methods on hand-derived optima, and the online policies."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from models.io import instance_from_dict, instance_to_dict, load_instance
from models.types import Instance, InstanceError

#: A GPU machine and a plain machine in rack r1, two plain machines in rack r2: every machine holds one task.
CLUSTER = [
    {"name": "gpu", "capacity": {"cpu": 1}, "labels": {"rack": "r1", "gpu": "true"}},
    {"name": "a", "capacity": {"cpu": 1}, "labels": {"rack": "r1"}},
    {"name": "b", "capacity": {"cpu": 1}, "count": 2, "labels": {"rack": "r2"}},
]
GPU_OPTIONS = [{"on": {"gpu": "true"}, "duration": 2}, {"duration": 5}]


def instance(jobs: list[dict[str, Any]], servers: list[dict[str, Any]] | None = None) -> Instance:
    return instance_from_dict({"resources": ["cpu"], "servers": servers or CLUSTER, "jobs": jobs}, name="tiny")


def job(name: str, tasks: int = 1, options: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    stage: dict[str, Any] = {"name": "s", "tasks": tasks, "demand": {"cpu": 1}}
    if options is None:
        stage["duration"] = fields.pop("duration", 1)
    else:
        stage["options"] = options
    return {"name": name, "stages": [stage], **fields}


# ------------------------------------------------------------------------------------------ loader


def test_options_and_utility_load_and_round_trip(tmp_path: Path) -> None:
    loaded = instance([job("g", options=GPU_OPTIONS, deadline=4, utility=[[4, 10], [8, 0]]),
                       job("m", tasks=2, options=[{"same": "rack", "duration": 2}, {"duration": 3}])])  # fmt: skip
    stage = loaded.jobs[0].stages[0]
    assert [(o.on, o.duration, o.same) for o in stage.options] == [((("gpu", "true"),), 2.0, ""), ((), 5.0, "")]
    assert stage.duration == 2.0  # the preferred option's
    assert loaded.jobs[1].stages[0].options[0].same == "rack" and loaded.has_options
    assert loaded.jobs[0].utility == ((4.0, 10.0), (8.0, 0.0))
    # Constant before the first point and after the last, linear between; no points: minus the weighted JCT.
    np.testing.assert_allclose(loaded.jobs[0].utility_at([0, 4, 6, 9]), [10, 10, 5, 0])
    assert float(loaded.jobs[1].utility_at(3.0)) == -3.0
    again = instance_from_dict(instance_to_dict(loaded), name="tiny")
    assert again == loaded
    path = tmp_path / "again.yaml"
    path.write_text(yaml.safe_dump(instance_to_dict(loaded), sort_keys=False))
    assert load_instance(path) == loaded


REFUSALS = [
    ("a selector no machine matches", job("g", options=[{"on": {"gpu": "yes"}, "duration": 2}]),
     "jobs[0].stages[0].options[0].on", "no machine has the labels {'gpu': 'yes'}"),
    ("a gang larger than any rack", job("m", tasks=3, options=[{"same": "rack", "duration": 2}]),
     "jobs[0].stages[0].options[0].same", "a gang of 3 tasks fits in no group of machines sharing a 'rack' value"),
    ("a gang label no machine has", job("m", tasks=2, options=[{"same": "zone", "duration": 2}]),
     "jobs[0].stages[0].options[0].same", "no machine has the label 'zone'"),
    ("utility points out of order", job("g", utility=[[8, 0], [4, 10]]), "jobs[0].utility[1]",
     "points out of order: time 4 does not come after 8"),
    ("increasing utility", job("g", utility=[[4, 1], [8, 2]]), "jobs[0].utility[1]",
     "utility must not increase with completion time"),
    ("a utility point of three numbers", job("g", utility=[[4, 1, 2]]), "jobs[0].utility[0]",
     "a utility point is [time, value], got 3 numbers"),
    ("a stage duration beside options", {**job("g", options=GPU_OPTIONS),
                                         "stages": [{"name": "s", "duration": 1, "demand": {"cpu": 1},
                                                     "options": GPU_OPTIONS}]},
     "jobs[0].stages[0].duration", "takes its durations from them"),
    ("an option without a duration", job("g", options=[{"on": {"gpu": "true"}}]),
     "jobs[0].stages[0].options[0].duration", "required field missing"),
    ("an option demand (not supported)", job("g", options=[{"duration": 2, "demand": {"cpu": 1}}]),
     "jobs[0].stages[0].options[0].demand", "unknown key 'demand'"),
    ("a boolean label value", job("g", options=[{"on": {"gpu": True}, "duration": 2}]),
     "jobs[0].stages[0].options[0].on.gpu", "name must be a string"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "spec", "field", "reason"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_loader_refuses_naming_file_field_and_reason(tmp_path: Path, case: str, spec: dict[str, Any], field: str,
                                                     reason: str) -> None:  # fmt: skip
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"resources": ["cpu"], "servers": CLUSTER, "jobs": [spec]}))
    with pytest.raises(InstanceError) as caught:
        load_instance(path)
    assert caught.value.source == str(path) and caught.value.field == field, case
    assert reason in caught.value.reason


def test_a_selector_whose_machines_are_too_small_is_refused() -> None:
    big = copy.deepcopy(job("g", options=GPU_OPTIONS))
    big["stages"][0]["demand"] = {"cpu": 1}
    servers = [dict(CLUSTER[0], capacity={"cpu": 0.5}), *CLUSTER[1:]]
    with pytest.raises(InstanceError, match="fits one task"):
        instance([big], servers)
