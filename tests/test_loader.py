"""The instance loader: every bad input names the file, the field and the reason; good inputs agree."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from work import growth, lines_run

import fairpack.models.io as io_module
from fairpack.models.io import (
    DEFAULT_LIMITS,
    Limits,
    instance_from_dict,
    instance_to_dict,
    instance_to_yaml,
    load_instance,
    parse_instance,
)
from fairpack.models.types import (
    Hierarchy,
    HierarchyNode,
    Instance,
    InstanceError,
    ServerClass,
    Tenant,
    frozen_vector,
)

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
        "must be a number",
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
        "must be a whole number",
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
        "must be a mapping",
    ),
    (
        "unknown-key",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1}, colour: red}\n"),
        "tenants[0].colour",
        "unknown key",
    ),
    ("unknown-top-level-key", doc(extra="colour: red\n"), "colour", "unknown key"),
    (
        "missing-capacity",
        doc(servers="servers:\n  - {name: s1, count: 2}\n"),
        "servers[0].capacity",
        "required field missing",
    ),
    ("missing-servers", doc(servers=""), "servers", "required field missing"),
    ("missing-resources", doc(head=""), "resources", "required field missing"),
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
        "required field missing",
    ),
    ("job-without-stages", doc(extra="jobs:\n  - {name: q1, stages: []}\n"), "jobs[0].stages", "at least one stage"),
    *[
        (
            f"job-{field}-{label}",
            doc(
                extra=f"jobs:\n  - name: q1\n    {field}: {value}\n    stages:\n"
                "      - {name: map, duration: 1, demand: {cpu: 1}}\n"
            ),
            f"jobs[0].{field}",
            reason,
        )
        for field, label, value, reason in [
            ("tenant", "number", "7", "name must be a string, got the number 7 (quote it: '7')"),
            ("tenant", "list", "[a]", "name must be a string, got a list"),
            ("tenant", "blank", "' '", "non-empty"),
            ("tenant", "unprintable", '"a\\x07"', "cannot be printed"),
            ("deadline", "zero", "0", "deadline must be positive"),
            ("deadline", "negative", "-3", "deadline must be positive"),
            ("deadline", "nan", ".nan", "deadline must be finite"),
            ("deadline", "minus-inf", "-.inf", "deadline must be finite"),
            ("deadline", "huge", "1.0e+300", "deadline 1e+300 is above the limit of 1e+15"),
            ("deadline", "string", "soon", "must be a number, got the string 'soon'"),
        ]
    ],
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


# ------------------------------------------------------------------------------------ hardened loader
# Each case below was misread, crashed or hung before the loader read YAML 1.2 event by event with limits.

FLAT_TENANT = "tenants:\n  - {name: u1, demand: {cpu: 1}}\n"
CPU_ONLY = "resources: [cpu]\n"


def one_server(capacity: str, count: str = "1") -> str:
    return f"servers:\n  - {{name: s1, capacity: {{cpu: {capacity}}}, count: {count}}}\n"


BOMB = "".join(
    f"l{k}: &l{k} [{', '.join([f'*l{k - 1}'] * 9)}]\n" if k else 'l0: &l0 ["lol", "lol", "lol"]\n' for k in range(10)
)

# (id, YAML text, expected field, fragment of the reason): YAML-only (JSON has no aliases, tags or YAML 1.1).
HARDENED_YAML: list[tuple[str, str, str, str]] = [
    ("duplicate-top-level-key", doc() + TENANTS, "tenants", "duplicate key 'tenants' (line 8, column 1)"),
    (
        "duplicate-resource-key",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1, mem: 2, cpu: 3}}\n"),
        "tenants[0].demand.cpu",
        "duplicate key 'cpu'",
    ),
    (
        "duplicate-key-in-block-style",
        doc(tenants="tenants:\n  - name: u1\n    demand: {cpu: 1}\n    name: u2\n"),
        "tenants[0].name",
        "duplicate key 'name' (line 8, column 5)",
    ),
    (
        "sexagesimal-demand",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1:30}}\n"),
        "tenants[0].demand.cpu",
        "must be a number, got the string '1:30' (numbers are written unquoted, in decimal; YAML 1.1 would read",
    ),
    (
        "sexagesimal-deadline",
        doc(extra="jobs:\n  - {name: q1, deadline: 1:30, stages: [{name: map, duration: 1, demand: {cpu: 1}}]}\n"),
        "jobs[0].deadline",
        "must be a number, got the string '1:30' (numbers are written unquoted, in decimal; YAML 1.1 would read",
    ),
    (
        "yes-as-weight",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1}, weight: yes}\n"),
        "tenants[0].weight",
        "must be a number, got the string 'yes'",
    ),
    (
        "on-as-task-cap",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1}, tasks: on}\n"),
        "tenants[0].tasks",
        "must be a number, got the string 'on'",
    ),
    ("octal-count", doc(servers=one_server("4", "010")), "servers[0].count", "whole number, got the string '010'"),
    ("hex-count", doc(servers=one_server("4", "0x10")), "servers[0].count", "whole number, got the string '0x10'"),
    (
        "underscored-number",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1_000}}\n"),
        "tenants[0].demand.cpu",
        "must be a number, got the string '1_000'",
    ),
    (
        "boolean-as-number",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: true}}\n"),
        "tenants[0].demand.cpu",
        "must be a number, got the boolean true",
    ),
    (
        "number-as-name",
        doc(tenants="tenants:\n  - {name: 12, demand: {cpu: 1}}\n"),
        "tenants[0].name",
        "name must be a string, got the number 12 (quote it: '12')",
    ),
    (
        "merge-key",
        doc(tenants="tenants:\n  - {name: u1, demand: &d {cpu: 1}}\n  - {name: u2, demand: {<<: *d}}\n"),
        "tenants[1].demand.<<",
        "unknown resource '<<'",
    ),
    (
        "python-tag",
        doc(tenants="tenants: !!python/object/apply:os.system ['true']\n"),
        "tenants",
        "the YAML tag 'tag:yaml.org,2002:python/object/apply:os.system' is not supported",
    ),
    ("recursive-alias", doc(extra="time: &t {slot: *t}\n"), "time.slot", "alias *t refers to no complete node"),
    (
        "tasks-on-internal-node",
        hierarchy_doc(
            "hierarchy:\n  name: root\n  children:\n"
            "    - {name: a, tasks: 5, children: [{name: x, demand: {cpu: 1}}]}\n"
        ),
        "hierarchy.children[0].tasks",
        "only leaves carry a task cap",
    ),
    (
        "tasks-on-internal-node-flat",
        hierarchy_doc("hierarchy:\n  - {name: root, tasks: 3}\n  - {name: x, parent: root, demand: {cpu: 1}}\n"),
        "hierarchy[0].tasks",
        "only leaves carry a task cap",
    ),
    ("empty-hierarchy", hierarchy_doc("hierarchy: []\n"), "hierarchy", "a hierarchy needs exactly one root, found 0"),
    ("one-node-hierarchy-without-demand", hierarchy_doc("hierarchy: {name: root}\n"), "hierarchy", "needs a demand"),
    (
        "control-character-in-name",
        doc(tenants='tenants:\n  - {name: "u\\x01", demand: {cpu: 1}}\n'),
        "tenants[0].name",
        "name 'u\\\\x01' has characters that cannot be printed",
    ),
    (
        "tab-in-resource-name",
        doc(head='resources: ["c\\tpu", mem]\n', servers="servers:\n  - {name: s1, capacity: {mem: 1}}\n"),
        "resources[0]",
        "cannot be printed",
    ),
    (
        "capacity-overflows-the-total",
        CPU_ONLY + one_server("1e308", "2") + FLAT_TENANT,
        "servers[0].capacity.cpu",
        "capacity 1e+308 is above the limit of 1e+15",
    ),
    (
        "cluster-total-over-the-limit",
        CPU_ONLY + one_server("1e15", "2") + FLAT_TENANT,
        "servers",
        "the cluster's total cpu (capacity x count over all servers) is 2e+15, above the limit of 1e+15",
    ),
    (
        "count-2-to-the-63",
        CPU_ONLY + one_server("1", str(2**63)) + FLAT_TENANT,
        "servers[0].count",
        "count 9,223,372,036,854,775,808 is above the limit of 10,000,000",
    ),
    (
        "count-1e308",
        CPU_ONLY + one_server("1", "1e308") + FLAT_TENANT,
        "servers[0].count",
        "count ~1e308 is above the limit of 10,000,000",
    ),
    (
        "machines-over-the-limit",
        CPU_ONLY + "servers:\n  - {name: a, capacity: {cpu: 1}, count: 6000000}\n"
        "  - {name: b, capacity: {cpu: 1}, count: 6000000}\n" + FLAT_TENANT,
        "servers",
        "12,000,000 machines in all, above the limit of 10,000,000",
    ),
    (
        "huge-weight",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1}, weight: 1e300}\n"),
        "tenants[0].weight",
        "in the accepted range [1e-06, 1e+06]",
    ),
    (
        "tiny-weight",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1}, weight: 1e-300}\n"),
        "tenants[0].weight",
        "in the accepted range [1e-06, 1e+06]",
    ),
    (
        "tiny-node-weight",
        hierarchy_doc("hierarchy:\n  name: root\n  children:\n    - {name: x, weight: 1e-300, demand: {cpu: 1}}\n"),
        "hierarchy.children[0].weight",
        "in the accepted range",
    ),
    (
        "tiny-demand",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1e-300}}\n"),
        "tenants[0].demand.cpu",
        "below the smallest amount of 1e-12",
    ),
    (
        "small-demand-many-tasks",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: 1e-11}}\n"),
        "tenants[0].demand",
        "above the limit of 1e+09 tasks per tenant",
    ),
    (
        "huge-stage-task-count",
        jobs_doc("      - {name: map, tasks: 2000000000, duration: 1, demand: {cpu: 1}}\n"),
        "jobs[0].stages[0].tasks",
        "tasks 2,000,000,000 is above the limit of 1,000,000,000",
    ),
    (
        "huge-duration",
        jobs_doc("      - {name: map, duration: 1e300, demand: {cpu: 1}}\n"),
        "jobs[0].stages[0].duration",
        "above the limit of 1e+15",
    ),
    (
        "integer-beyond-float",
        doc(tenants="tenants:\n  - {name: u1, demand: {cpu: " + "9" * 400 + "}}\n"),
        "tenants[0].demand.cpu",
        "number too large",
    ),
    (
        "deep-nesting",
        doc(extra="time: " + "[" * 5000 + "]" * 5000 + "\n"),
        "time" + "[0]" * 99,
        "nesting deeper than the limit of 100 levels",
    ),
    ("alias-bomb", doc(extra=BOMB), "l7[1]", "more than the limit of 5000000 values (aliases counted expanded)"),
    (
        "deep-flat-hierarchy",
        hierarchy_doc(
            "hierarchy:\n  - {name: n0}\n"
            + "".join(f"  - {{name: n{k}, parent: n{k - 1}}}\n" for k in range(1, 150))
            + "  - {name: leaf, parent: n149, demand: {cpu: 1}}\n"
        ),
        "hierarchy[101]",
        "the hierarchy is deeper than the limit of 100 levels",
    ),
    ("second-document", doc() + "---\nresources: [cpu]\n", "", "a second YAML document starts at line 8"),
]


@pytest.mark.parametrize(
    ("text", "field", "reason"), [case[1:] for case in HARDENED_YAML], ids=[c[0] for c in HARDENED_YAML]
)
def test_hardened_yaml_names_file_field_and_reason(tmp_path: Path, text: str, field: str, reason: str) -> None:
    path = write(tmp_path, "instance.yaml", text)
    error = load_error(path)
    assert (error.source, error.field) == (str(path), field)
    assert reason in error.reason, error.reason
    assert "\n" not in str(error) and str(error).isprintable()


@pytest.mark.parametrize("libyaml", [True, False], ids=["c-parser", "python-parser"])
@pytest.mark.parametrize(
    ("text", "field", "reason"), [case[1:] for case in HARDENED_YAML[:12]], ids=[c[0] for c in HARDENED_YAML[:12]]
)
def test_both_yaml_parsers_refuse_the_same(
    monkeypatch: pytest.MonkeyPatch, libyaml: bool, text: str, field: str, reason: str
) -> None:
    if libyaml and not yaml.__with_libyaml__:
        pytest.skip("PyYAML without libyaml")
    monkeypatch.setattr(yaml, "__with_libyaml__", libyaml)
    with pytest.raises(InstanceError) as caught:
        parse_instance(text, "x.yaml")
    assert (caught.value.field, reason in caught.value.reason) == (field, True)


@pytest.mark.parametrize("path", INSTANCE_FILES, ids=[p.name for p in INSTANCE_FILES])
def test_both_yaml_parsers_read_the_same(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    fast = load_instance(path)
    monkeypatch.setattr(yaml, "__with_libyaml__", False)
    assert load_instance(path) == fast


def test_yaml_11_words_and_numbers_are_names_where_a_name_is_expected(tmp_path: Path) -> None:
    names = ["yes", "no", "on", "off", "y", "NO", "0x1f", "0o17", "010", "1:30", "1_000", "2024-01-01", "~x"]
    tenants = "tenants:\n" + "".join(f"  - {{name: {name}, demand: {{cpu: 1}}}}\n" for name in names)
    instance = load_instance(write(tmp_path, "names.yaml", doc(tenants=tenants)))
    assert [t.name for t in instance.tenants] == names


def test_yaml_12_numbers_are_read(tmp_path: Path) -> None:
    tenants = "tenants:\n  - {name: u1, demand: {cpu: 1e-3, mem: .5}, weight: 2., tasks: .inf}\n"
    tenant = load_instance(write(tmp_path, "x.yaml", doc(tenants=tenants))).tenants[0]
    np.testing.assert_array_equal(tenant.demand, [1e-3, 0.5])  # 1e-3 was a string in YAML 1.1
    assert (tenant.weight, tenant.tasks) == (2.0, math.inf)


def test_an_alias_to_a_complete_node_is_read(tmp_path: Path) -> None:
    tenants = "tenants:\n  - {name: u1, demand: &d {cpu: 1, mem: 2}}\n  - {name: u2, demand: *d}\n"
    instance = load_instance(write(tmp_path, "x.yaml", doc(tenants=tenants)))
    np.testing.assert_array_equal(instance.demand, [[1, 2], [1, 2]])


# (id, JSON text, expected field, fragment of the reason)
HARDENED_JSON: list[tuple[str, str, str, str]] = [
    (
        "duplicate-top-level-key",
        '{"resources": ["cpu"], "resources": ["mem"], "servers": []}',
        "resources",
        "duplicate key 'resources'",
    ),
    (
        "duplicate-nested-key",
        '{"resources": ["cpu"], "servers": [{"name": "s", "capacity": {"cpu": 1, "cpu": 2}}]}',
        "servers[0].capacity.cpu",
        "duplicate key 'cpu'",
    ),
    (
        "lone-surrogate-name",
        '{"resources": ["cpu"], "servers": [{"name": "s\\ud800", "capacity": {"cpu": 1}}]}',
        "servers[0].name",
        "name 's\\\\ud800' has characters that cannot be printed",
    ),
    ("deep-nesting", '{"a": ' + "[" * 100000 + "]" * 100000 + "}", "", "nesting deeper than the limit of 100 levels"),
    (
        "too-many-digits",
        '{"resources": ["cpu"], "servers": [{"name": "s", "capacity": {"cpu": ' + "9" * 5000 + "}}]}",
        "",
        "a number has more digits than Python reads",
    ),
    (
        "string-as-number",
        '{"resources": ["cpu"], "servers": [{"name": "s", "capacity": {"cpu": "4"}}]}',
        "servers[0].capacity.cpu",
        "must be a number, got the string '4'",
    ),
]


@pytest.mark.parametrize(
    ("text", "field", "reason"), [case[1:] for case in HARDENED_JSON], ids=[c[0] for c in HARDENED_JSON]
)
def test_hardened_json_names_file_field_and_reason(tmp_path: Path, text: str, field: str, reason: str) -> None:
    path = write(tmp_path, "instance.json", text)
    error = load_error(path)
    assert (error.source, error.field) == (str(path), field)
    assert reason in error.reason, error.reason
    assert str(error).isprintable()
    str(error).encode("utf-8")


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("binary.yaml", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff", "not UTF-8 text: byte 0x89 at offset 0"),
        ("binary.json", b"\x00\xff\xfe{", "not UTF-8 text"),
        ("nul.yaml", b"resources: [cpu\x00]\n", "not valid YAML"),
        ("utf16.yaml", "resources: [cpu]\n".encode("utf-16"), "not UTF-8 text"),
    ],
)
def test_binary_garbage_is_a_clean_error(tmp_path: Path, name: str, data: bytes, reason: str) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    error = load_error(path)
    assert (error.source, error.field) == (str(path), "")
    assert reason in error.reason
    assert str(error).isprintable()


@pytest.mark.parametrize("path", INSTANCE_FILES, ids=[p.name for p in INSTANCE_FILES])
def test_every_truncation_of_a_bundled_instance_loads_or_fails_cleanly(tmp_path: Path, path: Path) -> None:
    text = path.read_bytes()
    for end in range(0, len(text), max(1, len(text) // 60)):
        cut = tmp_path / f"cut{path.suffix}"
        cut.write_bytes(text[:end])
        try:
            load_instance(cut)
        except InstanceError as error:
            assert error.source == str(cut) and str(error).isprintable()


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:  # sparse: no disk, no memory
        handle.truncate(DEFAULT_LIMITS.max_bytes + 1)
    error = load_error(path)
    assert error.source == str(path)
    assert (
        f"{DEFAULT_LIMITS.max_bytes + 1:,} bytes, larger than the limit of {DEFAULT_LIMITS.max_bytes:,}" in error.reason
    )


@pytest.mark.parametrize(
    ("limits", "reason"),
    [
        (Limits(max_bytes=100), "larger than the limit of 100 bytes"),
        (Limits(max_depth=2), "nesting deeper than the limit of 2 levels"),
        (Limits(max_nodes=20), "more than the limit of 20 values"),
        (Limits(max_quantity=5), "capacity 8 is above the limit of 5"),
        (Limits(max_machines=2), "3 machines in all, above the limit of 2"),
        (Limits(weight_range=(0.1, 1.5)), "accepted range [0.1, 1.5]"),
    ],
)
def test_limits_are_named_and_can_be_set(tmp_path: Path, limits: Limits, reason: str) -> None:
    path = write(tmp_path, "x.yaml", doc())
    load_instance(path)  # fine under the default limits
    with pytest.raises(InstanceError) as caught:
        load_instance(path, limits)
    assert reason in caught.value.reason and caught.value.source == str(path)


def pipe(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    """Standard input holding ``data``."""
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_stdin_is_read_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe(monkeypatch, doc().encode())
    instance = load_instance("-")
    assert [t.name for t in instance.tenants] == ["u1", "u2"] and instance.name == "stdin"
    pipe(monkeypatch, json.dumps(JOBS).encode())  # JSON is read as YAML
    assert_same_instance(load_instance("-"), instance_from_dict(JOBS))


@pytest.mark.parametrize(
    ("data", "field", "reason"),
    [
        (doc(tenants="tenants:\n  - {name: u, demand: {cpu: 1}, tasks: yes}\n").encode(), "tenants[0].tasks",
         "YAML 1.1 would read yes as a boolean"),
        (b"a: &a [*a]\n", "a[0]", "refers to no complete node"),
        (b"[" * 200, "[0]" * 100, "nesting deeper than the limit of 100 levels"),
        (b"\xff\xfe garbage", "", "not UTF-8"),
        (b"resources: [cpu]\nresources: [cpu]\n", "resources", "duplicate key"),
        (b"*" * 72 + b"\nPRECEDENCE RELATIONS:\n1 1 1\n", "PRECEDENCE RELATIONS", "expected a"),
    ],
    ids=["yaml-1.1", "recursive-alias", "deep", "binary", "duplicate-key", "psplib-truncated"],
)  # fmt: skip
def test_stdin_is_hardened_like_a_file(monkeypatch: pytest.MonkeyPatch, data: bytes, field: str, reason: str) -> None:
    pipe(monkeypatch, data)
    with pytest.raises(InstanceError) as caught:
        load_instance("-")
    error = caught.value
    assert (error.source, error.field) == ("<stdin>", field) and reason in error.reason, str(error)


def test_stdin_reads_psplib_by_its_header(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pipe(monkeypatch, SMALL_SM.encode())
    instance = load_instance("-")
    assert_same_instance(instance, load_instance(write(tmp_path, "stdin.sm", SMALL_SM)))
    assert instance.jobs[0].name == "stdin"


def test_stdin_size_is_limited(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe(monkeypatch, doc().encode())
    with pytest.raises(InstanceError, match="larger than the limit of 100 bytes") as caught:
        load_instance("-", Limits(max_bytes=100))
    assert caught.value.source == "<stdin>"


def test_error_messages_escape_what_cannot_be_printed() -> None:
    error = InstanceError("bad \ud800 name\x07", "tenants[0].na\nme", "a\x1bfile.yaml")
    assert str(error) == "a\\x1bfile.yaml: tenants[0].na\\nme: bad \\ud800 name\\x07"
    str(error).encode("utf-8")


def test_bulk_construction_checks_what_one_by_one_checks() -> None:
    demand = np.array([[1.0, 0.0], [0.0, 2.0]])
    tenants = Tenant.many(["a", "b"], demand, np.array([1.0, 2.0]), np.array([math.inf, 3.0]))
    assert tenants == (Tenant("a", demand[0], 1.0), Tenant("b", demand[1], 2.0, 3.0))
    assert not demand.flags.writeable or tenants[0].demand.base is not demand  # the caller's array is not frozen
    bad = [
        (["a", "b"], [[1, 0], [0, 0]], [1, 1], [1, 1], "[1].demand", "demand vector is zero"),
        (["a", "b"], [[1, 0], [0, -1]], [1, 1], [1, 1], "[1].demand[1]", "negative"),
        (["a", "b"], [[1, 0], [0, np.nan]], [1, 1], [1, 1], "[1].demand[1]", "not finite"),
        (["a", "b"], [[1, 0], [0, 1]], [1, 0], [1, 1], "[1].weight", "positive"),
        (["a", "b"], [[1, 0], [0, 1]], [1, 1], [-1, 1], "[0].tasks", "non-negative"),
        (["a", "\x00"], [[1, 0], [0, 1]], [1, 1], [1, 1], "[1].name", "cannot be printed"),
    ]
    for names, matrix, weights, caps, field, reason in bad:
        with pytest.raises(InstanceError) as caught:
            Tenant.many(
                names, np.array(matrix, dtype=float), np.array(weights, dtype=float), np.array(caps, dtype=float)
            )
        assert (caught.value.field, reason in caught.value.reason) == (field, True), caught.value
    servers = ServerClass.many(["s", "t"], np.array([[1.0, 2.0], [3.0, 0.0]]), [1, 4])
    assert servers == (ServerClass("s", np.array([1.0, 2.0])), ServerClass("t", np.array([3.0, 0.0]), 4))
    with pytest.raises(InstanceError, match=r"\[1\]\.count"):
        ServerClass.many(["s", "t"], np.ones((2, 2)), [1, 0])
    nodes = HierarchyNode.many(["root", "a"], [-1, 0], np.array([1.0, 2.5]), [-1, 0])
    assert nodes == (HierarchyNode("root", -1), HierarchyNode("a", 0, 2.5, 0))
    assert all(type(node.weight) is float for node in nodes)
    for names, weights, field, reason in [(["root", " "], [1, 1], "[1].name", "non-empty"),
                                          (["root", "a"], [1, np.inf], "[1].weight", "positive finite")]:  # fmt: skip
        with pytest.raises(InstanceError) as caught:
            HierarchyNode.many(names, [-1, 0], np.array(weights, dtype=float), [-1, 0])
        assert (caught.value.field, reason in caught.value.reason) == (field, True), caught.value


def test_frozen_vector_locates_the_first_bad_entry() -> None:
    with pytest.raises(InstanceError) as caught:
        frozen_vector([1.0, -2.0, math.nan], "demand", 3)
    assert (caught.value.field, caught.value.reason) == ("demand[1]", "value -2.0 is negative")
    with pytest.raises(InstanceError) as caught:
        frozen_vector([1.0, math.inf, -1.0], "demand", 3)
    assert (caught.value.field, caught.value.reason) == ("demand[1]", "value inf is not finite")


def test_a_long_parent_chain_is_checked_in_linear_time() -> None:
    # The cycle check used to walk from every node to the root (quadratic: ~2e9 steps for 60,000 nodes).
    nodes = [HierarchyNode("n0", -1)] + [HierarchyNode(f"n{k}", k - 1) for k in range(1, 60000)]
    assert len(Hierarchy(tuple(nodes)).nodes) == 60000

    def backwards(size: int) -> tuple[HierarchyNode, ...]:
        """A chain listed from its deep end (node k's parent is k + 1), so the check has to walk it."""
        return (HierarchyNode("n0", -1), *(HierarchyNode(f"n{k}", k + 1 if k < size - 1 else 0)
                                           for k in range(1, size)))  # fmt: skip

    def lines(size: int) -> int:
        chain = backwards(size)
        hierarchy, count = lines_run(Hierarchy, chain)
        assert len(hierarchy.nodes) == size
        return count

    # Counted in Python lines: each node is walked once (about 15 lines), not once per node below it.
    assert growth(lines, 2000) < 2.5
    assert lines(60000) < 30 * 60000
    looped = [*nodes[:3], HierarchyNode("n3", 4), HierarchyNode("n4", 3)]
    with pytest.raises(InstanceError, match="cycle through node"):
        Hierarchy(tuple(looped))


# PSPLIB: numbers beyond what the reader can hold, unreadable headers, a release that is not a date.
SMALL_SM = (Path(__file__).resolve().parent / "fuzzing.py").read_text().split('SMALL_SM = """\\\n')[1].split('"""')[0]


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (
            "  3      1     5       1    3",
            "  3      1     " + "9" * 400 + "       1    3",
            "REQUESTS/DURATIONS line 30: a number is above the limit",
        ),
        (
            "  3      1     5       1    3",
            "  3      1     " + "9" * 5000 + "       1    3",
            "REQUESTS/DURATIONS line 30: expected whole numbers",
        ),
        ("    4    3\n", "    4    " + "9" * 30 + "\n", "RESOURCEAVAILABILITIES line 36: a number is above the limit"),
        ("  R 1  R 2\n    4", "  R 1  R " + "9" * 5000 + "\n    4", "resource number too large"),
        (
            "    1      3      0       12",
            "    1      3      nan       12",
            "PROJECT INFORMATION line 15: bad release date 'nan'",
        ),
        ("    1      3      0       12", "    1      3      1e400       12", "bad release date '1e400'"),
        (
            "jobs (incl. supersource/sink ):  5",
            "jobs (incl. supersource/sink ):  " + "9" * 5000,
            "cannot read the job count",
        ),
    ],
)
def test_psplib_numbers_beyond_the_limits_are_clean_errors(tmp_path: Path, old: str, new: str, reason: str) -> None:
    assert SMALL_SM.count(old) == 1
    path = tmp_path / "bad.sm"
    path.write_text(SMALL_SM.replace(old, new))
    with pytest.raises(InstanceError) as caught:
        load_instance(path)
    assert reason in str(caught.value) and caught.value.source == str(path)


def test_psplib_file_over_the_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "huge.sm"
    path.write_text(SMALL_SM)
    with pytest.raises(InstanceError, match="larger than the limit of 100 bytes"):
        load_instance(path, Limits(max_bytes=100))


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
        assert (job_a.tenant, job_a.deadline) == (job_b.tenant, job_b.deadline)
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
            "tenant": "analytics",
            "deadline": 40,
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
    assert (only.tenant, only.deadline) == ("", math.inf)  # its own tenant, no deadline


@pytest.mark.parametrize(
    "text",
    [
        "hierarchy: {name: root, demand: {cpu: 1}, tasks: 3}\n",
        "hierarchy: [{name: root, demand: {cpu: 1}, tasks: 3}]\n",
    ],
    ids=["nested", "flat"],
)
def test_a_root_alone_is_a_one_leaf_hierarchy(tmp_path: Path, text: str) -> None:
    instance = load_instance(write(tmp_path, "one.yaml", hierarchy_doc(text)))
    assert instance.hierarchy is not None and [n.tenant for n in instance.hierarchy.nodes] == [0]
    assert [(t.name, t.tasks) for t in instance.tenants] == [("root", 3.0)]


def test_jobs_are_read_with_stage_indices(tmp_path: Path) -> None:
    instance = load_instance(write(tmp_path, "j.yaml", yaml.safe_dump(JOBS)))
    job = instance.jobs[0]
    assert [s.name for s in job.stages] == ["map", "shuffle", "reduce"]
    assert [s.after for s in job.stages] == [(), (0,), (0, 1)]
    assert (job.weight, job.release, job.tenant, job.deadline) == (2.0, 1.5, "analytics", 40.0)
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


@pytest.mark.parametrize("data", [FLAT, NESTED, JOBS], ids=["flat", "nested-tree", "jobs"])
def test_instance_to_yaml_is_what_safe_dump_writes(tmp_path: Path, data: dict[str, Any]) -> None:
    original = load_instance(write(tmp_path, "x.yaml", yaml.safe_dump(data)))
    expected = yaml.safe_dump(instance_to_dict(original), sort_keys=False, default_flow_style=None)
    assert instance_to_yaml(original) == expected


def test_instance_to_yaml_quotes_names_yaml_12_reads_as_numbers(tmp_path: Path) -> None:
    original = load_instance(write(tmp_path, "x.yaml", yaml.safe_dump(FLAT)))
    names = ["1e5", ".5", "yes"]  # safe_dump leaves 1e5 plain: a string in YAML 1.1, a number in YAML 1.2
    renamed = original.with_tenants(
        [dataclasses.replace(t, name=n) for t, n in zip(original.tenants, names, strict=True)]
    )
    assert_same_instance(renamed, load_instance(write(tmp_path, "again.yaml", instance_to_yaml(renamed))))


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


def test_a_parser_that_stops_at_its_own_depth_limit_still_gets_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    # PyYAML 6.0.4's libyaml refuses 1,000 nested flow collections while scanning ahead, before the loader's
    # limit of 100 (with the field path) is reached; whatever the installed version, the loader must name the field.
    real_parser = io_module._yaml_parser

    class DepthLimitedParser:
        def __init__(self, text: str) -> None:
            self.events = real_parser(text, fast=False)

        def get_event(self) -> object:
            raise yaml.YAMLError("while increasing flow level exceeded maximum nesting depth")

    monkeypatch.setattr(io_module, "_yaml_parser", lambda text, fast=True: (
        DepthLimitedParser(text) if fast else real_parser(text, fast=False)))
    with pytest.raises(InstanceError) as caught:
        parse_instance(doc(extra="time: " + "[" * 5000 + "]" * 5000 + "\n"), "x.yaml")
    assert (caught.value.field, caught.value.reason.startswith("nesting deeper than the limit of 100")) == (
        "time" + "[0]" * 99, True)


# --- bulk paths: the same answers and the same messages as the entry-by-entry walk -----------------------


def _soft_jobs(option: dict[str, Any], jobs: int = 3) -> dict[str, Any]:
    return {"resources": ["cpu"], "servers": [{"name": "m", "capacity": {"cpu": 2}, "labels": {"gpu": "true"}}],
            "jobs": [{"name": f"j{k}", "stages": [{"name": "a", "demand": {"cpu": 1},
                                                  "options": [option, {"duration": 3}]}]} for k in range(jobs)]}


def test_repeated_options_are_read_once_and_equal() -> None:
    instance = instance_from_dict(_soft_jobs({"on": {"gpu": "true"}, "duration": 1}))
    first = instance.jobs[0].stages[0].options
    assert all(job.stages[0].options == first for job in instance.jobs)
    assert first[0].on == (("gpu", "true"),) and first[0].duration == 1


@pytest.mark.parametrize(("option", "field", "reason"), [
    ({"on": {"gpu": "false"}, "duration": 1}, "jobs[0].stages[0].options[0].on", "no machine has the labels"),
    ({"on": {"gpu": "true"}, "duration": -1}, "jobs[0].stages[0].options[0].duration", ""),
    ({"same": "rack", "duration": 1}, "jobs[0].stages[0].options[0].same", "rack"),
])  # fmt: skip
def test_a_bad_repeated_option_is_named_where_it_first_appears(option: dict[str, Any], field: str,
                                                               reason: str) -> None:  # fmt: skip
    with pytest.raises(InstanceError) as raised:
        instance_from_dict(_soft_jobs(option))
    assert raised.value.field == field and reason in str(raised.value)


@pytest.mark.parametrize("points", [
    [[0, 10], [5, 10], [9, 0]], [[0, 5.5], [3, -2]], [(1, 2)], [[0, 10], [1e15, -1e15]],
    [[0, 1], [0, 0]], [[0, 1], [1, 2]], [[-1, 1]], [[0, True]], [[0, 1e16]], [[0, 1, 2]],
])  # fmt: skip
def test_utility_points_read_in_bulk_as_one_by_one(points: list[Any]) -> None:
    def read(bulk: bool) -> Any:
        original = io_module._utility_fast
        if not bulk:
            io_module._utility_fast = lambda listed, limits: None  # type: ignore[assignment]
        try:
            data = {"resources": ["cpu"], "servers": [{"name": "m", "capacity": {"cpu": 1}}],
                    "jobs": [{"name": "j", "utility": points, "stages": [{"name": "a", "duration": 1,
                                                                        "demand": {"cpu": 1}}]}]}  # fmt: skip
            return instance_from_dict(data).jobs[0].utility
        except InstanceError as error:
            return (error.field, error.reason)
        finally:
            io_module._utility_fast = original

    assert read(True) == read(False)


@pytest.mark.parametrize(("amount", "ok"), [(1e-320, False), (1e-13, False), (1e-12, True), (0, True), (0.5, True)])
def test_a_resource_amount_is_zero_or_at_least_the_smallest(amount: float, ok: bool) -> None:
    # A denormal capacity made shares of it infinite (naive-hdrf: IndexError; tetris: OverflowError).
    data = {"resources": ["cpu", "gpu"], "servers": [{"name": "m", "capacity": {"cpu": 4, "gpu": amount}}],
            "tenants": [{"name": "t", "demand": {"cpu": 1, "gpu": amount}}]}  # fmt: skip
    if ok:
        assert instance_from_dict(data).servers[0].capacity[1] == amount
        return
    with pytest.raises(InstanceError, match="below the smallest amount") as raised:
        instance_from_dict(data)
    assert raised.value.field == "servers[0].capacity.gpu"
