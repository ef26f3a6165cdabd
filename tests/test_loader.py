"""The instance loader: every bad input names the file, the field and the reason; good inputs agree."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from models.io import instance_from_dict, instance_to_dict, load_instance
from models.types import Instance, InstanceError

ROOT = Path(__file__).resolve().parents[1]
INSTANCE_FILES = sorted((ROOT / "instances").glob("*.yaml")) + sorted((ROOT / "instances").glob("*.json"))

SERVERS = """\
servers:
  - {name: s1, capacity: {cpu: 4, mem: 8}}
  - {name: s2, capacity: {cpu: 8, mem: 4}, count: 2}
"""
TENANTS = """\
tenants:
  - {name: u1, demand: {cpu: 1, mem: 1}}
  - {name: u2, demand: {cpu: 0.5, mem: 2}, weight: 2, tasks: 10}
"""
HEAD = "resources: [cpu, mem]\n"


def doc(*, servers: str = SERVERS, tenants: str = TENANTS, extra: str = "", head: str = HEAD) -> str:
    """A valid flat instance with one section swapped for a (possibly bad) replacement."""
    return head + servers + tenants + extra


def hierarchy_doc(hierarchy: str) -> str:
    return doc(tenants="", extra=hierarchy)


def jobs_doc(stages: str) -> str:
    return doc(extra=f"jobs:\n  - name: q1\n    stages:\n{stages}")


# (id, file text, expected field, fragment of the reason)
BAD_YAML: list[tuple[str, str, str, str]] = [
    (
        "unknown-resource",
        doc(servers="servers:\n  - {name: s1, capacity: {cpu: 4, gpu: 1}}\n"),
        "servers[0].capacity.gpu",
        "unknown resource 'gpu'",
    ),
    (
        "unknown-resource-in-demand",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1}}\n  - {name: u2, demand: {disk: 1}}\n"),
        "tenants[1].demand.disk",
        "unknown resource 'disk'",
    ),
    (
        "negative-capacity",
        doc(servers="servers:\n  - {name: s1, capacity: {cpu: 4}}\n  - {name: s2, capacity: {cpu: -8, mem: 4}}\n"),
        "servers[1].capacity.cpu",
        "non-negative",
    ),
    (
        "nan-capacity",
        doc(servers="servers:\n  - {name: s1, capacity: {cpu: 4, mem: .nan}}\n"),
        "servers[0].capacity.mem",
        "finite",
    ),
    (
        "infinite-capacity",
        doc(servers="servers:\n  - {name: s1, capacity: {cpu: .inf, mem: 1}}\n"),
        "servers[0].capacity.cpu",
        "finite",
    ),
    (
        "negative-demand",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1, mem: -1}}\n"),
        "tenants[0].demand.mem",
        "non-negative",
    ),
    (
        "zero-demand",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1}}\n  - {name: u2, demand: {cpu: 0, mem: 0}}\n"),
        "tenants[1].demand",
        "demand vector is zero",
    ),
    (
        "empty-demand",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1}}\n  - {name: u2, demand: {}}\n"),
        "tenants[1].demand",
        "demand vector is zero",
    ),
    (
        "duplicate-server",
        doc(servers="servers:\n  - {name: s1, capacity: {cpu: 4}}\n  - {name: s1, capacity: {mem: 4}}\n"),
        "servers[1].name",
        "duplicate name 's1'",
    ),
    (
        "duplicate-tenant",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1}}\n  - {name: u1, demand: {mem: 1}}\n"),
        "tenants[1].name",
        "duplicate name 'u1'",
    ),
    ("duplicate-resource", doc(head="resources: [cpu, mem, cpu]\n"), "resources[2]", "duplicate name 'cpu'"),
    (
        "non-positive-weight",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1}}\n  - {name: u2, demand: {cpu: 1}, weight: 0}\n"),
        "tenants[1].weight",
        "positive",
    ),
    (
        "negative-weight",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1}, weight: -2}\n"),
        "tenants[0].weight",
        "positive",
    ),
    (
        "nan-weight",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1}, weight: .nan}\n"),
        "tenants[0].weight",
        "positive",
    ),
    (
        "non-numeric-weight",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1}, weight: heavy}\n"),
        "tenants[0].weight",
        "valid number",
    ),
    (
        "negative-task-count",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1}}\n  - {name: u2, demand: {cpu: 1}, tasks: -1}\n"),
        "tenants[1].tasks",
        "non-negative",
    ),
    (
        "zero-server-count",
        doc(servers="servers:\n  - {name: s1, capacity: {cpu: 4}, count: 0}\n"),
        "servers[0].count",
        "positive integer",
    ),
    (
        "fractional-server-count",
        doc(servers="servers:\n  - {name: s1, capacity: {cpu: 4}, count: 1.5}\n"),
        "servers[0].count",
        "valid integer",
    ),
    ("no-servers", doc(servers="servers: []\n"), "servers", "at least one server"),
    (
        "empty-name",
        doc(tenants="tenants:\n  - {name: '', demand: {cpu: 1}}\n"),
        "tenants[0].name",
        "non-empty",
    ),
    (
        "demand-not-a-mapping",
        doc(tenants="tenants:\n  - {name: u1, demand: [1, 2]}\n"),
        "tenants[0].demand",
        "valid dictionary",
    ),
    (
        "unknown-key",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1}, colour: red}\n"),
        "tenants[0].colour",
        "Extra inputs are not permitted",
    ),
    ("unknown-top-level-key", doc(extra="colour: red\n"), "colour", "Extra inputs are not permitted"),
    (
        "missing-capacity",
        doc(servers="servers:\n  - {name: s1, count: 2}\n"),
        "servers[0].capacity",
        "Field required",
    ),
    ("missing-servers", doc(servers=""), "servers", "Field required"),
    ("missing-resources", doc(head=""), "resources", "Field required"),
    ("zero-time-slot", doc(extra="time: {slot: 0}\n"), "time.slot", "positive"),
    (
        "hierarchy-cycle",
        hierarchy_doc(
            "hierarchy:\n"
            "  - {name: root}\n"
            "  - {name: a, parent: b}\n"
            "  - {name: b, parent: a}\n"
            "  - {name: leaf, parent: root, demand: {cpu: 1}}\n"
        ),
        "hierarchy",
        "cycle",
    ),
    (
        "hierarchy-unknown-parent",
        hierarchy_doc(
            "hierarchy:\n  - {name: root}\n  - {name: a, parent: root, demand: {cpu: 1}}\n"
            "  - {name: b, parent: nobody, demand: {cpu: 1}}\n"
        ),
        "hierarchy[2].parent",
        "unknown parent 'nobody'",
    ),
    (
        "hierarchy-two-roots",
        hierarchy_doc("hierarchy:\n  - {name: r1, demand: {cpu: 1}}\n  - {name: r2, demand: {cpu: 1}}\n"),
        "hierarchy",
        "exactly one root",
    ),
    (
        "hierarchy-duplicate-node",
        hierarchy_doc(
            "hierarchy:\n  name: root\n  children:\n"
            "    - {name: x, demand: {cpu: 1}}\n    - {name: x, demand: {mem: 1}}\n"
        ),
        "hierarchy.children[1].name",
        "duplicate node name 'x'",
    ),
    (
        "hierarchy-leaf-without-demand",
        hierarchy_doc("hierarchy:\n  name: root\n  children:\n    - {name: x, demand: {cpu: 1}}\n    - {name: y}\n"),
        "hierarchy.children[1]",
        "a leaf needs a demand",
    ),
    (
        "hierarchy-flat-leaf-without-demand",
        hierarchy_doc(
            "hierarchy:\n  - {name: root}\n  - {name: x, parent: root, demand: {cpu: 1}}\n  - {name: y, parent: root}\n"
        ),
        "hierarchy[2]",
        "a leaf needs a demand",
    ),
    (
        "hierarchy-internal-demand",
        hierarchy_doc("hierarchy:\n  name: root\n  demand: {cpu: 1}\n  children:\n    - {name: x, demand: {cpu: 1}}\n"),
        "hierarchy.demand",
        "only leaves",
    ),
    (
        "hierarchy-parent-in-nested-form",
        hierarchy_doc("hierarchy:\n  name: root\n  children:\n    - {name: x, parent: root, demand: {cpu: 1}}\n"),
        "hierarchy.children[0].parent",
        "flat list form",
    ),
    (
        "hierarchy-zero-weight",
        hierarchy_doc("hierarchy:\n  name: root\n  children:\n    - {name: x, weight: 0, demand: {cpu: 1}}\n"),
        "hierarchy.children[0].weight",
        "positive",
    ),
    (
        "tenants-and-hierarchy",
        doc(extra="hierarchy:\n  name: root\n  children:\n    - {name: x, demand: {cpu: 1}}\n"),
        "hierarchy",
        "not both",
    ),
    (
        "unknown-stage",
        jobs_doc(
            "      - {name: map, duration: 1, demand: {cpu: 1}}\n"
            "      - {name: reduce, duration: 1, demand: {cpu: 1}, after: [shuffle]}\n"
        ),
        "jobs[0].stages[1].after[0]",
        "unknown stage 'shuffle'",
    ),
    (
        "stage-cycle",
        jobs_doc(
            "      - {name: map, duration: 1, demand: {cpu: 1}, after: [reduce]}\n"
            "      - {name: reduce, duration: 1, demand: {cpu: 1}, after: [map]}\n"
        ),
        "jobs[0].stages",
        "cycle",
    ),
    (
        "stage-depends-on-itself",
        jobs_doc("      - {name: map, duration: 1, demand: {cpu: 1}, after: [map]}\n"),
        "jobs[0].stages[0].after",
        "invalid parent stage",
    ),
    (
        "duplicate-stage",
        jobs_doc(
            "      - {name: map, duration: 1, demand: {cpu: 1}}\n      - {name: map, duration: 2, demand: {cpu: 1}}\n"
        ),
        "jobs[0].stages[1].name",
        "duplicate name 'map'",
    ),
    (
        "stage-zero-tasks",
        jobs_doc("      - {name: map, tasks: 0, duration: 1, demand: {cpu: 1}}\n"),
        "jobs[0].stages[0].tasks",
        "positive integer",
    ),
    (
        "stage-negative-duration",
        jobs_doc("      - {name: map, duration: -1, demand: {cpu: 1}}\n"),
        "jobs[0].stages[0].duration",
        "non-negative",
    ),
    (
        "stage-missing-duration",
        jobs_doc("      - {name: map, demand: {cpu: 1}}\n"),
        "jobs[0].stages[0].duration",
        "Field required",
    ),
    ("job-without-stages", doc(extra="jobs:\n  - {name: q1, stages: []}\n"), "jobs[0].stages", "at least one stage"),
]

# (id, file name, file text, fragment of the reason): the file as a whole is bad, so there is no field.
BAD_FILES: list[tuple[str, str, str, str]] = [
    ("not-yaml", "bad.yaml", "resources: [cpu, mem\nservers: {name: s1\n", "not valid YAML"),
    ("not-json", "bad.json", '{"resources": ["cpu"], "servers": [', "not valid JSON"),
    ("yaml-top-level-list", "list.yaml", "- {name: s1}\n- {name: s2}\n", "top level must be a mapping, got list"),
    ("json-top-level-list", "list.json", '[{"name": "s1"}]', "top level must be a mapping, got list"),
    ("empty-file", "empty.yaml", "", "top level must be a mapping"),
    ("scalar", "scalar.yaml", "just a string\n", "top level must be a mapping, got str"),
]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_error(path: Path) -> InstanceError:
    with pytest.raises(InstanceError) as caught:
        load_instance(path)
    return caught.value


@pytest.mark.parametrize(("text", "field", "reason"), [case[1:] for case in BAD_YAML], ids=[c[0] for c in BAD_YAML])
def test_bad_input_names_file_field_and_reason(tmp_path: Path, text: str, field: str, reason: str) -> None:
    path = write(tmp_path, "instance.yaml", text)
    error = load_error(path)
    assert error.source == str(path)
    assert error.field == field
    assert reason in error.reason
    assert str(error) == f"{path}: {field}: {error.reason}"


@pytest.mark.parametrize(("text", "field", "reason"), [case[1:] for case in BAD_YAML], ids=[c[0] for c in BAD_YAML])
def test_bad_input_is_rejected_from_json_too(tmp_path: Path, text: str, field: str, reason: str) -> None:
    data = yaml.safe_load(text)
    path = write(tmp_path, "instance.json", json.dumps(data))  # NaN/inf become JSON's NaN/Infinity tokens
    error = load_error(path)
    assert (error.source, error.field) == (str(path), field)
    assert reason in error.reason


@pytest.mark.parametrize(("name", "text", "reason"), [case[1:] for case in BAD_FILES], ids=[c[0] for c in BAD_FILES])
def test_bad_file_names_file_and_reason(tmp_path: Path, name: str, text: str, reason: str) -> None:
    path = write(tmp_path, name, text)
    error = load_error(path)
    assert error.source == str(path)
    assert error.field == ""
    assert reason in error.reason
    assert str(error).startswith(f"{path}: ")
    assert "\n" not in str(error)


def test_missing_file_is_an_instance_error(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.yaml"
    error = load_error(path)
    assert error.source == str(path)
    assert "cannot read file" in error.reason


def test_instance_from_dict_errors_carry_the_field_without_a_file() -> None:
    with pytest.raises(InstanceError) as caught:
        instance_from_dict(yaml.safe_load(doc(servers="servers:\n  - {name: s1, capacity: {cpu: -1}}\n")))
    assert (caught.value.source, caught.value.field) == ("", "servers[0].capacity.cpu")
    assert str(caught.value).startswith("servers[0].capacity.cpu: ")


# ---------------------------------------------------------------------------------------------- good inputs


def assert_same_instance(a: Instance, b: Instance) -> None:
    """Equal resources, servers, tenants (arrays), hierarchy, jobs and time slot."""
    assert a.resources == b.resources
    assert [s.name for s in a.servers] == [s.name for s in b.servers]
    assert [t.name for t in a.tenants] == [t.name for t in b.tenants]
    np.testing.assert_array_equal(a.capacity, b.capacity)
    np.testing.assert_array_equal(a.counts, b.counts)
    np.testing.assert_array_equal(a.demand, b.demand)
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a.task_caps, b.task_caps)
    assert (a.hierarchy is None) == (b.hierarchy is None)
    if a.hierarchy is not None and b.hierarchy is not None:
        assert a.hierarchy.nodes == b.hierarchy.nodes
    assert len(a.jobs) == len(b.jobs)
    for job_a, job_b in zip(a.jobs, b.jobs, strict=True):
        assert (job_a.name, job_a.weight, job_a.release) == (job_b.name, job_b.weight, job_b.release)
        assert len(job_a.stages) == len(job_b.stages)
        for stage_a, stage_b in zip(job_a.stages, job_b.stages, strict=True):
            assert (stage_a.name, stage_a.tasks, stage_a.duration, stage_a.after) == (
                stage_b.name,
                stage_b.tasks,
                stage_b.duration,
                stage_b.after,
            )
            np.testing.assert_array_equal(stage_a.demand, stage_b.demand)
    assert a.time_slot == b.time_slot


FLAT: dict[str, Any] = {
    "name": "flat",
    "resources": ["cpu", "mem", "gpu"],
    "servers": [
        {"name": "big", "capacity": {"cpu": 12, "mem": 2}},
        {"name": "small", "capacity": {"cpu": 2, "mem": 12}, "count": 3},
        {"name": "gpu", "capacity": {"cpu": 8, "mem": 8, "gpu": 4}},
    ],
    "tenants": [
        {"name": "u1", "demand": {"cpu": 0.2, "mem": 1}, "weight": 1, "tasks": 50},
        {"name": "u2", "demand": {"cpu": 1, "mem": 0.2}, "weight": 2.5},
        {"name": "u3", "demand": {"gpu": 1}, "tasks": 0},
    ],
}

NESTED = {
    "name": "tree",
    "resources": ["cpu", "gpu"],
    "servers": [{"name": "s", "capacity": {"cpu": 10, "gpu": 2}}],
    "hierarchy": {
        "name": "root",
        "children": [
            {
                "name": "ads",
                "weight": 3,
                "children": [
                    {"name": "ads-prod", "demand": {"cpu": 1}, "tasks": 4},
                    {"name": "ads-test", "weight": 2, "demand": {"gpu": 1}},
                ],
            },
            {"name": "web", "demand": {"cpu": 2, "gpu": 0.5}},
            {"name": "ml", "children": [{"name": "ml-train", "children": [{"name": "ml-a", "demand": {"gpu": 1}}]}]},
        ],
    },
}

# The same tree as parent links, deliberately listed with children before their parents.
FLAT_TREE = {
    **{key: value for key, value in NESTED.items() if key != "hierarchy"},
    "hierarchy": [
        {"name": "ml-a", "parent": "ml-train", "demand": {"gpu": 1}},
        {"name": "ads-prod", "parent": "ads", "demand": {"cpu": 1}, "tasks": 4},
        {"name": "ml-train", "parent": "ml"},
        {"name": "root"},
        {"name": "ads", "parent": "root", "weight": 3},
        {"name": "ads-test", "parent": "ads", "weight": 2, "demand": {"gpu": 1}},
        {"name": "web", "parent": "root", "demand": {"cpu": 2, "gpu": 0.5}},
        {"name": "ml", "parent": "root"},
    ],
}

JOBS = {
    "name": "dag",
    "resources": ["cpu", "mem"],
    "servers": [{"name": "s", "capacity": {"cpu": 8, "mem": 16}, "count": 2}],
    "jobs": [
        {
            "name": "q1",
            "weight": 2,
            "release": 1.5,
            "stages": [
                {"name": "map", "tasks": 10, "duration": 3, "demand": {"cpu": 1, "mem": 2}},
                {"name": "shuffle", "tasks": 4, "duration": 1, "demand": {"mem": 1}, "after": ["map"]},
                {
                    "name": "reduce",
                    "tasks": 2,
                    "duration": 5,
                    "demand": {"cpu": 2, "mem": 4},
                    "after": ["map", "shuffle"],
                },
            ],
        },
        {"name": "q2", "stages": [{"name": "only", "duration": 0, "demand": {"cpu": 1}}]},
    ],
    "time": {"slot": 0.5},
}


def test_yaml_and_json_give_the_same_instance(tmp_path: Path) -> None:
    from_yaml = load_instance(write(tmp_path, "x.yaml", yaml.safe_dump(FLAT)))
    from_json = load_instance(write(tmp_path, "x.json", json.dumps(FLAT)))
    assert_same_instance(from_yaml, from_json)
    assert from_yaml.name == from_json.name == "flat"
    np.testing.assert_array_equal(from_yaml.demand, [[0.2, 1, 0], [1, 0.2, 0], [0, 0, 1]])
    np.testing.assert_array_equal(from_yaml.task_caps, [50, math.inf, 0])


def test_json_suffix_is_case_insensitive_and_yml_is_yaml(tmp_path: Path) -> None:
    reference = load_instance(write(tmp_path, "x.json", json.dumps(FLAT)))
    assert_same_instance(reference, load_instance(write(tmp_path, "y.JSON", json.dumps(FLAT))))
    assert_same_instance(reference, load_instance(write(tmp_path, "z.yml", yaml.safe_dump(FLAT))))


def test_name_defaults_to_the_file_stem(tmp_path: Path) -> None:
    data = {key: value for key, value in FLAT.items() if key != "name"}
    assert load_instance(write(tmp_path, "my-cluster.yaml", yaml.safe_dump(data))).name == "my-cluster"


def test_nested_and_flat_hierarchy_give_the_same_tree(tmp_path: Path) -> None:
    nested = load_instance(write(tmp_path, "nested.yaml", yaml.safe_dump(NESTED)))
    flat = load_instance(write(tmp_path, "flat.yaml", yaml.safe_dump(FLAT_TREE)))
    assert_same_instance(nested, flat)
    assert nested.hierarchy is not None
    nodes = nested.hierarchy.nodes
    names = [node.name for node in nodes]
    assert names == ["root", "ads", "ads-prod", "ads-test", "web", "ml", "ml-train", "ml-a"]  # depth-first, in order
    assert [t.name for t in nested.tenants] == ["ads-prod", "ads-test", "web", "ml-a"]
    parents = {node.name: (nodes[node.parent].name if node.parent >= 0 else None) for node in nodes}
    assert parents == {
        "root": None,
        "ads": "root",
        "ads-prod": "ads",
        "ads-test": "ads",
        "web": "root",
        "ml": "root",
        "ml-train": "ml",
        "ml-a": "ml-train",
    }
    # Leaves map onto tenants; their weights are the leaf weights, internal weights stay on the nodes.
    for node in nodes:
        if node.tenant >= 0:
            assert nested.tenants[node.tenant].name == node.name
            assert nested.tenants[node.tenant].weight == node.weight
    assert nodes[names.index("ads")].weight == 3
    np.testing.assert_array_equal(nested.weights, [1, 2, 1, 1])
    np.testing.assert_array_equal(nested.task_caps, [4, math.inf, math.inf, math.inf])


def test_count_merges_identical_machines(tmp_path: Path) -> None:
    merged = load_instance(
        write(tmp_path, "merged.yaml", doc(servers="servers:\n  - {name: s, capacity: {cpu: 4, mem: 8}, count: 3}\n"))
    )
    separate = load_instance(
        write(
            tmp_path,
            "separate.yaml",
            doc(
                servers="servers:\n" + "".join(f"  - {{name: s{k}, capacity: {{cpu: 4, mem: 8}}}}\n" for k in range(3))
            ),
        )
    )
    assert len(merged.servers) == 1
    np.testing.assert_array_equal(merged.counts, [3])
    np.testing.assert_array_equal(merged.capacity, [[4, 8]])
    np.testing.assert_array_equal(merged.total_capacity, [12, 24])
    np.testing.assert_array_equal(merged.total_capacity, separate.total_capacity)
    assert merged.machine_names() == ["s[0]", "s[1]", "s[2]"]
    np.testing.assert_array_equal(merged.machine_class(), [0, 0, 0])


def test_missing_resources_default_to_zero(tmp_path: Path) -> None:
    instance = load_instance(write(tmp_path, "x.yaml", yaml.safe_dump(FLAT)))
    np.testing.assert_array_equal(instance.capacity, [[12, 2, 0], [2, 12, 0], [8, 8, 4]])
    np.testing.assert_array_equal(instance.demand[2], [0, 0, 1])
    np.testing.assert_array_equal(instance.total_capacity, [26, 46, 4])


def test_defaults(tmp_path: Path) -> None:
    instance = load_instance(write(tmp_path, "x.yaml", doc(tenants="tenants:\n  - {name: u, demand: {cpu: 1}}\n")))
    tenant = instance.tenants[0]
    assert (tenant.weight, tenant.tasks) == (1.0, math.inf)
    assert instance.hierarchy is None and instance.jobs == ()
    assert instance.time_slot == 1.0
    jobs = load_instance(write(tmp_path, "j.yaml", yaml.safe_dump(JOBS)))
    only = jobs.jobs[1]
    assert (only.weight, only.release, only.stages[0].tasks, only.stages[0].after) == (1.0, 0.0, 1, ())


def test_jobs_are_read_with_stage_indices(tmp_path: Path) -> None:
    instance = load_instance(write(tmp_path, "j.yaml", yaml.safe_dump(JOBS)))
    job = instance.jobs[0]
    assert [s.name for s in job.stages] == ["map", "shuffle", "reduce"]
    assert [s.after for s in job.stages] == [(), (0,), (0, 1)]
    assert (job.weight, job.release) == (2.0, 1.5)
    np.testing.assert_array_equal(job.stages[1].demand, [0, 1])
    assert instance.time_slot == 0.5


@pytest.mark.parametrize("data", [FLAT, NESTED, FLAT_TREE, JOBS], ids=["flat", "nested-tree", "flat-tree", "jobs"])
def test_instance_to_dict_round_trips(tmp_path: Path, data: dict[str, Any]) -> None:
    original = load_instance(write(tmp_path, "x.yaml", yaml.safe_dump(data)))
    again = instance_from_dict(instance_to_dict(original))
    assert_same_instance(original, again)
    assert again.name == original.name
    # Through a real YAML file, as `fairpack generate` writes it.
    text = yaml.safe_dump(instance_to_dict(original), sort_keys=False, default_flow_style=None)
    assert_same_instance(original, load_instance(write(tmp_path, "again.yaml", text)))


def test_instance_files_exist() -> None:
    assert INSTANCE_FILES, "instances/ holds no instance files"


@pytest.mark.parametrize("path", INSTANCE_FILES, ids=[p.name for p in INSTANCE_FILES])
def test_bundled_instances_load(path: Path) -> None:
    instance = load_instance(path)
    assert instance.tenants or instance.jobs
    assert np.all(instance.total_capacity >= 0)
    assert_same_instance(instance, instance_from_dict(instance_to_dict(instance)))


def test_domain_objects_compare_by_value() -> None:
    """Array fields are compared by value; the generated dataclass __eq__ raised on them."""
    import dataclasses

    path = Path(__file__).resolve().parents[1] / "instances" / "weighted_caps.yaml"
    instance = load_instance(path)
    tenant = instance.tenants[0]
    assert dataclasses.replace(tenant) == tenant
    assert dataclasses.replace(tenant, weight=tenant.weight + 1) != tenant
    assert dataclasses.replace(tenant, demand=tenant.demand * 2) != tenant
    assert load_instance(path) == instance
    assert dataclasses.replace(instance, tenants=instance.tenants[:-1]) != instance
