"""One result type for exact and heuristic methods alike, and its JSON form (the CLI contract)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from models.types import Instance, InstanceError

FloatArray = npt.NDArray[np.float64]
Status = Literal["optimal", "feasible", "infeasible", "unbounded", "time_limit", "error"]
UnitKind = Literal["class", "machine", "pool"]


@dataclass(frozen=True)
class Allocation:
    """Tasks of every tenant on every placement unit.

    A unit is a whole server class (divisible tasks: identical machines pool exactly), a single machine
    (indivisible tasks must fit on one machine) or the whole cluster as one pool (the DRF setting).
    """

    tasks: FloatArray  # shape (tenants, units)
    kind: UnitKind
    integral: bool = False

    def __post_init__(self) -> None:
        array = np.array(self.tasks, dtype=np.float64)
        array.setflags(write=False)
        object.__setattr__(self, "tasks", array)

    def unit_names(self, instance: Instance) -> list[str]:
        return unit_names(instance, self.kind)

    def unit_capacity(self, instance: Instance) -> FloatArray:
        return unit_capacity(instance, self.kind)

    @property
    def tenant_tasks(self) -> FloatArray:
        return np.asarray(self.tasks.sum(axis=1))


def unit_names(instance: Instance, kind: UnitKind) -> list[str]:
    if kind == "pool":
        return ["pool"]
    if kind == "class":
        return [s.name for s in instance.servers]
    return instance.machine_names()


def unit_capacity(instance: Instance, kind: UnitKind) -> FloatArray:
    """Capacity of every unit, derived from the instance alone."""
    if kind == "pool":
        return instance.total_capacity[None, :]
    if kind == "class":
        return instance.capacity * instance.counts[:, None]
    return instance.capacity[instance.machine_class()]


@dataclass
class Result:
    """What every method returns; ``verified`` and the recomputed numbers come from ``models.check``."""

    status: Status
    method: str
    backend: str
    objective: float | None = None  # recomputed from the solution, never read back from a solver
    bound: float | None = None
    gap: float | None = None
    build_s: float = 0.0
    solve_s: float = 0.0
    verified: bool = False
    allocation: Allocation | None = None
    solver_objective: float | None = None
    message: str = ""
    violations: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self, instance: Instance) -> dict[str, Any]:
        """The CLI JSON contract: common keys, then the allocation view."""
        data: dict[str, Any] = {
            "status": self.status,
            "method": self.method,
            "backend": self.backend,
            "objective": _finite(self.objective),
            "bound": _finite(self.bound),
            "gap": _finite(self.gap),
            "build_s": round(self.build_s, 6),
            "solve_s": round(self.solve_s, 6),
            "verified": self.verified,
            "solver_objective": _finite(self.solver_objective),
            "instance": instance.name,
        }
        if self.message:
            data["message"] = self.message
        if self.violations:
            data["violations"] = list(self.violations)
        if self.allocation is not None:
            data.update(allocation_json(instance, self.allocation))
        data.update({key: _plain(value) for key, value in self.extra.items()})
        return data


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def allocation_json(instance: Instance, allocation: Allocation) -> dict[str, Any]:
    """``tenants`` (tasks, dominant share, allocation, per-unit tasks) and cluster utilisation."""
    from models.metrics import dominant_shares, utilisation

    names = allocation.unit_names(instance)
    shares = dominant_shares(instance, allocation)
    totals = allocation.tenant_tasks
    tenants: dict[str, Any] = {}
    for i, tenant in enumerate(instance.tenants):
        amounts = totals[i] * instance.demand[i]
        row = allocation.tasks[i]
        tenants[tenant.name] = {
            "tasks": _number(totals[i]),
            "dominant_share": float(shares[i]),
            "weighted_share": float(shares[i] / tenant.weight),
            "allocation": {r: float(a) for r, a in zip(instance.resources, amounts, strict=True)},
            "per_server": {names[u]: _number(row[u]) for u in np.flatnonzero(row > 0)},
        }
    used = utilisation(instance, allocation)
    data: dict[str, Any] = {
        "unit_kind": allocation.kind,
        "integral": allocation.integral,
        "tenants": tenants,
        "utilisation": {r: float(u) for r, u in zip(instance.resources, used, strict=True)},
    }
    if instance.hierarchy is not None:
        data["nodes"] = nodes_json(instance, allocation)
    return data


def nodes_json(instance: Instance, allocation: Allocation) -> dict[str, Any]:
    """Every tree node: parent, weight, guarantee, dominant share and resource amounts (preorder)."""
    from models.check.hierarchy import demanding_nodes, node_shares
    from models.hierarchy import tree_of

    tree = tree_of(instance)
    consumption, share = node_shares(instance, allocation, tree=tree)
    guarantee = tree.guarantees(demanding_nodes(instance, allocation.kind, allocation.integral, tree=tree))
    amounts = consumption * instance.total_capacity
    nodes: dict[str, Any] = {}
    for index in tree.preorder():
        parent = int(tree.parent[index])
        nodes[tree.names[index]] = {
            "parent": tree.names[parent] if parent >= 0 else None,
            "depth": int(tree.depth[index]),
            "leaf": bool(tree.is_leaf[index]),
            "weight": float(tree.weight[index]),
            "guarantee": float(guarantee[index]),
            "dominant_share": float(share[index]),
            "allocation": {r: float(a) for r, a in zip(instance.resources, amounts[index], strict=True)},
        }
    return nodes


def _number(value: float) -> float | int:
    rounded = round(float(value))
    return int(rounded) if abs(value - rounded) < 1e-9 else float(value)


def allocation_from_json(instance: Instance, data: dict[str, Any]) -> Allocation:
    """Rebuild an ``Allocation`` from a saved result, validating names against the instance."""
    kind = data.get("unit_kind", "class")
    if kind not in ("class", "machine", "pool"):
        raise InstanceError(f"unknown unit kind {kind!r}", "unit_kind")
    names = unit_names(instance, kind)
    index = {name: position for position, name in enumerate(names)}
    tenant_index = {t.name: position for position, t in enumerate(instance.tenants)}
    tasks = np.zeros((len(instance.tenants), len(names)))
    for tenant_name, entry in (data.get("tenants") or {}).items():
        if tenant_name not in tenant_index:
            raise InstanceError(f"unknown tenant {tenant_name!r}", f"tenants.{tenant_name}")
        for unit, count in (entry.get("per_server") or {}).items():
            if unit not in index:
                raise InstanceError(f"unknown server {unit!r}", f"tenants.{tenant_name}.per_server.{unit}")
            tasks[tenant_index[tenant_name], index[unit]] = float(count)
    return Allocation(tasks, kind, bool(data.get("integral", False)))
