"""Read instance files (YAML or JSON, one schema) into validated ``Instance`` objects.

The schema is checked by pydantic (shapes and types), then every entity validates its semantics on
construction. Either way a failure raises ``InstanceError`` naming the file, the field and the reason.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from models.types import (
    Hierarchy,
    HierarchyNode,
    Instance,
    InstanceError,
    Job,
    ServerClass,
    Stage,
    Tenant,
)


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class ServerSpec(_Spec):
    name: str
    capacity: dict[str, float]
    count: int = 1


class TenantSpec(_Spec):
    name: str
    demand: dict[str, float]
    weight: float = 1.0
    tasks: float | None = None


class NodeSpec(_Spec):
    name: str
    weight: float = 1.0
    demand: dict[str, float] | None = None
    tasks: float | None = None
    parent: str | None = None  # only in the flat (list) form of a hierarchy
    children: list[NodeSpec] | None = None


class StageSpec(_Spec):
    name: str
    tasks: int = 1
    duration: float
    demand: dict[str, float]
    after: list[str] = []


class JobSpec(_Spec):
    name: str
    weight: float = 1.0
    release: float = 0.0
    tenant: str | None = None
    deadline: float | None = None
    stages: list[StageSpec]


class TimeSpec(_Spec):
    slot: float = 1.0


class InstanceSpec(_Spec):
    name: str | None = None
    resources: list[str]
    servers: list[ServerSpec]
    tenants: list[TenantSpec] = []
    hierarchy: NodeSpec | list[NodeSpec] | None = None
    jobs: list[JobSpec] = []
    time: TimeSpec | None = None


def _field_path(location: tuple[Any, ...]) -> str:
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _vector(mapping: dict[str, float], resources: tuple[str, ...], field_name: str) -> np.ndarray:
    index = {name: position for position, name in enumerate(resources)}
    vector = np.zeros(len(resources))
    for key, value in mapping.items():
        if key not in index:
            raise InstanceError(f"unknown resource {key!r} (resources are {list(resources)})", f"{field_name}.{key}")
        if not math.isfinite(value) or value < 0:
            raise InstanceError(f"must be finite and non-negative, got {value!r}", f"{field_name}.{key}")
        vector[index[key]] = value
    return vector


def _located(error: InstanceError, prefix: str) -> InstanceError:
    return error.located(error.source, prefix)


def _cap(tasks: float | None) -> float:
    return math.inf if tasks is None else float(tasks)


def _build_tenant(spec: TenantSpec | NodeSpec, resources: tuple[str, ...], field_name: str) -> Tenant:
    assert spec.demand is not None
    demand = _vector(spec.demand, resources, f"{field_name}.demand")
    try:
        return Tenant(spec.name, demand, spec.weight, _cap(spec.tasks))
    except InstanceError as error:
        raise _located(error, field_name) from None


def _nested_nodes(root: NodeSpec) -> list[tuple[NodeSpec, int, str]]:
    """Flatten a nested tree into (spec, parent index, field path) in depth-first order."""
    flat: list[tuple[NodeSpec, int, str]] = []
    stack: list[tuple[NodeSpec, int, str]] = [(root, -1, "hierarchy")]
    while stack:
        spec, parent, path = stack.pop()
        if spec.parent is not None:
            raise InstanceError("'parent' is only allowed in the flat list form", f"{path}.parent")
        position = len(flat)
        flat.append((spec, parent, path))
        for child_position, child in reversed(list(enumerate(spec.children or []))):
            stack.append((child, position, f"{path}.children[{child_position}]"))
    return flat


def _flat_nodes(specs: list[NodeSpec]) -> list[tuple[NodeSpec, int, str]]:
    """Order a parent-pointer list root first; cycles and dangling parents are errors."""
    by_name: dict[str, int] = {}
    for position, spec in enumerate(specs):
        if spec.name in by_name:
            raise InstanceError(f"duplicate node name {spec.name!r}", f"hierarchy[{position}].name")
        if spec.children:
            raise InstanceError("use either nested children or flat parent links", f"hierarchy[{position}].children")
        by_name[spec.name] = position
    roots = [i for i, spec in enumerate(specs) if spec.parent is None]
    if len(roots) != 1:
        raise InstanceError(f"a hierarchy needs exactly one root, found {len(roots)}", "hierarchy")
    for position, spec in enumerate(specs):
        if spec.parent is not None and spec.parent not in by_name:
            raise InstanceError(f"unknown parent {spec.parent!r}", f"hierarchy[{position}].parent")
    children: dict[int, list[int]] = {}
    for position, spec in enumerate(specs):
        if spec.parent is not None:
            children.setdefault(by_name[spec.parent], []).append(position)
    # Depth-first preorder, children in file order: the same node (and tenant) order as the nested form,
    # so a flat list written by ``instance_to_dict`` reads back unchanged.
    order: list[int] = []
    stack = [roots[0]]
    while stack:
        current = stack.pop()
        order.append(current)
        stack.extend(reversed(children.get(current, [])))
    if len(order) != len(specs):
        stuck = sorted(specs[i].name for i in set(range(len(specs))) - set(order))
        raise InstanceError(f"parent links form a cycle through {stuck}", "hierarchy")
    new_index = {old: new for new, old in enumerate(order)}
    result = []
    for old in order:
        spec = specs[old]
        parent = -1 if spec.parent is None else new_index[by_name[spec.parent]]
        result.append((spec, parent, f"hierarchy[{old}]"))
    return result


def _build_hierarchy(spec: NodeSpec | list[NodeSpec], resources: tuple[str, ...]) -> tuple[Hierarchy, list[Tenant]]:
    flat = _nested_nodes(spec) if isinstance(spec, NodeSpec) else _flat_nodes(spec)
    has_children = {parent for _, parent, _ in flat if parent >= 0}
    nodes: list[HierarchyNode] = []
    tenants: list[Tenant] = []
    seen: dict[str, str] = {}
    for position, (node, parent, path) in enumerate(flat):
        if node.name in seen:
            raise InstanceError(f"duplicate node name {node.name!r} (also at {seen[node.name]})", f"{path}.name")
        seen[node.name] = path
        is_leaf = position not in has_children
        tenant_index = -1
        if is_leaf:
            if node.demand is None:
                raise InstanceError("a leaf needs a demand vector", path)
            tenant_index = len(tenants)
            tenants.append(_build_tenant(node, resources, path))
        elif node.demand is not None:
            raise InstanceError("only leaves carry a demand", f"{path}.demand")
        try:
            nodes.append(HierarchyNode(node.name, parent, node.weight, tenant_index))
        except InstanceError as error:
            raise _located(error, path) from None
    return Hierarchy(tuple(nodes)), tenants


def _build_job(spec: JobSpec, resources: tuple[str, ...], field_name: str) -> Job:
    names = {stage.name: position for position, stage in enumerate(spec.stages)}
    stages = []
    for position, stage in enumerate(spec.stages):
        path = f"{field_name}.stages[{position}]"
        parents = []
        for after_position, parent in enumerate(stage.after):
            if parent not in names:
                raise InstanceError(f"depends on unknown stage {parent!r}", f"{path}.after[{after_position}]")
            parents.append(names[parent])
        demand = _vector(stage.demand, resources, f"{path}.demand")
        try:
            stages.append(Stage(stage.name, stage.tasks, stage.duration, demand, tuple(parents)))
        except InstanceError as error:
            raise _located(error, path) from None
    try:
        deadline = math.inf if spec.deadline is None else spec.deadline
        return Job(spec.name, tuple(stages), spec.weight, spec.release, spec.tenant or "", deadline)
    except InstanceError as error:
        raise _located(error, field_name) from None


def instance_from_dict(data: Any, name: str = "instance") -> Instance:
    """Build an ``Instance`` from parsed YAML/JSON data; raises ``InstanceError`` on bad input."""
    if not isinstance(data, dict):
        raise InstanceError(f"top level must be a mapping, got {type(data).__name__}")
    try:
        spec = InstanceSpec.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        raise InstanceError(first["msg"], _field_path(tuple(first["loc"]))) from None
    resources = tuple(spec.resources)
    servers = []
    for position, server in enumerate(spec.servers):
        path = f"servers[{position}]"
        capacity = _vector(server.capacity, resources, f"{path}.capacity")
        try:
            servers.append(ServerClass(server.name, capacity, server.count))
        except InstanceError as error:
            raise _located(error, path) from None
    tenants = [_build_tenant(t, resources, f"tenants[{i}]") for i, t in enumerate(spec.tenants)]
    hierarchy = None
    if spec.hierarchy is not None:
        if tenants:
            raise InstanceError("give either tenants or a hierarchy, not both", "hierarchy")
        hierarchy, tenants = _build_hierarchy(spec.hierarchy, resources)
    jobs = [_build_job(job, resources, f"jobs[{i}]") for i, job in enumerate(spec.jobs)]
    slot = spec.time.slot if spec.time is not None else 1.0
    return Instance(resources, tuple(servers), tuple(tenants), hierarchy, tuple(jobs), slot, spec.name or name)


STDIN = "-"


def load_instance(path: str | Path) -> Instance:
    """Load a YAML, JSON or PSPLIB ``.sm`` instance file (``-``: standard input); every error names the file
    and the field at fault."""
    if str(path) == STDIN:
        return _load_stdin()
    path = Path(path)
    source = str(path)
    if path.suffix.lower() == ".sm":  # PSPLIB single-mode RCPSP file: one DAG job, one pooled server
        from models.psplib import load_psplib

        return load_psplib(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InstanceError(f"cannot read file: {error}", source=source) from None
    return _parse_text(text, source, path.stem, json_only=path.suffix.lower() == ".json")


def _load_stdin() -> Instance:
    """An instance piped in: PSPLIB text is recognised by its header, anything else is YAML (JSON included)."""
    import sys

    source = "<stdin>"
    try:
        text = sys.stdin.read()
    except (OSError, UnicodeDecodeError) as error:
        raise InstanceError(f"cannot read standard input: {error}", source=source) from None
    if text.lstrip().startswith("*****") and "PRECEDENCE RELATIONS" in text:
        from models.psplib import parse_psplib

        return parse_psplib(text, "stdin.sm")
    return _parse_text(text, source, "stdin", json_only=False)


def _parse_text(text: str, source: str, name: str, json_only: bool) -> Instance:
    try:
        data = json.loads(text) if json_only else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as error:
        kind = "JSON" if json_only else "YAML"
        raise InstanceError(f"not valid {kind}: {error}".replace("\n", " "), source=source) from None
    try:
        return instance_from_dict(data, name=name)
    except InstanceError as error:
        raise error.located(source) from None


def instance_to_dict(instance: Instance) -> dict[str, Any]:
    """The inverse of ``instance_from_dict`` for flat instances and hierarchies (used by generators)."""

    def mapping(vector: np.ndarray) -> dict[str, float]:
        return {r: float(v) for r, v in zip(instance.resources, vector, strict=True) if v != 0}

    data: dict[str, Any] = {"name": instance.name, "resources": list(instance.resources)}
    data["servers"] = [
        {"name": s.name, "capacity": mapping(s.capacity), **({"count": s.count} if s.count != 1 else {})}
        for s in instance.servers
    ]

    def tenant_fields(t: Tenant) -> dict[str, Any]:
        fields: dict[str, Any] = {"demand": mapping(t.demand)}
        if t.weight != 1:
            fields["weight"] = t.weight
        if math.isfinite(t.tasks):
            fields["tasks"] = int(t.tasks) if float(t.tasks).is_integer() else t.tasks
        return fields

    if instance.hierarchy is None:
        data["tenants"] = [{"name": t.name, **tenant_fields(t)} for t in instance.tenants]
    else:
        nodes = instance.hierarchy.nodes
        flat = []
        for node in nodes:
            entry: dict[str, Any] = {"name": node.name, "weight": node.weight}
            if node.parent >= 0:
                entry["parent"] = nodes[node.parent].name
            if node.tenant >= 0:
                fields = tenant_fields(instance.tenants[node.tenant])
                fields.pop("weight", None)
                entry.update(fields)
            flat.append(entry)
        data["hierarchy"] = flat
    if instance.jobs:
        data["jobs"] = [
            {
                "name": job.name,
                "weight": job.weight,
                "release": job.release,
                **({"tenant": job.tenant} if job.tenant else {}),
                **({"deadline": job.deadline} if math.isfinite(job.deadline) else {}),
                "stages": [
                    {
                        "name": s.name,
                        "tasks": int(s.tasks),
                        "duration": s.duration,
                        "demand": mapping(s.demand),
                        "after": [job.stages[p].name for p in s.after],
                    }
                    for s in job.stages
                ],
            }
            for job in instance.jobs
        ]
    if instance.time_slot != 1.0:
        data["time"] = {"slot": instance.time_slot}
    return data
