"""The JSON view of allocations (``models.view``) and the CLI's tables: built from whole arrays, they must say
exactly what the contract says entry by entry (same keys, order, numbers and int/float types)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairpack.models.generators import random_tree_instance
from fairpack.models.hierarchy import tree_of
from fairpack.models.io import load_instance
from fairpack.models.result import Allocation, Result, UnitKind
from fairpack.models.types import Instance
from fairpack.models.view import allocation_json, nodes_json, result_json, result_json_text
from fairpack.solver.api import solve
from fairpack.solver.cli.render import format_table

from library import make

ROOT = Path(__file__).resolve().parents[1]

# Task counts that exercise the int/float rule: zero, whole numbers, whole numbers off by round-off (which
# print as ints), near-misses (which stay floats), halves (round half to even) and tiny negatives.
COUNTS = st.sampled_from([0.0, 1.0, 3.0, 2.5, 3.5, 7.0 + 1e-12, 7.0 - 1e-12, 4.0 + 1e-6, 0.1, 1e-300, -1e-15, 12345.0])


def count(value: float) -> float | int:
    """The contract for a task count: a whole number (within 1e-9) is an int, anything else a float."""
    rounded = round(value)
    return int(rounded) if abs(value - rounded) < 1e-9 else float(value)


def expected_tenants(instance: Instance, allocation: Allocation) -> dict[str, Any]:
    """``tenants`` of the JSON view, stated one tenant and one unit at a time."""
    names = allocation.unit_names(instance)
    tenants = {}
    for i, tenant in enumerate(instance.tenants):
        row = [float(v) for v in allocation.tasks[i]]
        total = float(np.sum(allocation.tasks[i]))
        demand = [float(v) for v in instance.demand[i]]
        share = total * float(instance.dominant_demand[i])
        tenants[tenant.name] = {
            "tasks": count(total),
            "dominant_share": share,
            "weighted_share": share / tenant.weight,
            "allocation": {r: total * d for r, d in zip(instance.resources, demand, strict=True)},
            "per_server": {names[u]: count(v) for u, v in enumerate(row) if v > 0},
        }
    return tenants


@st.composite
def allocations(draw: st.DrawFn) -> tuple[Instance, Allocation]:
    n_tenants, n_classes = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    positive = st.floats(0.25, 8.0, allow_nan=False)
    servers = [(f"s{c}", [draw(positive), draw(positive)], draw(st.integers(1, 3))) for c in range(n_classes)]
    tenants = [(f"t{i}", [draw(positive), draw(st.sampled_from([0.0, 0.5]))], draw(positive), math.inf)
               for i in range(n_tenants)]  # fmt: skip
    instance = make(servers, tenants)
    kind: UnitKind = draw(st.sampled_from(["class", "machine", "pool"]))
    units = {"class": n_classes, "machine": sum(s[2] for s in servers), "pool": 1}[kind]
    tasks = np.array([[draw(COUNTS) for _ in range(units)] for _ in range(n_tenants)])
    return instance, Allocation(tasks, kind)


@settings(derandomize=True, max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=allocations())
def test_allocation_json_says_what_the_contract_says_tenant_by_tenant(case: tuple[Instance, Allocation]) -> None:
    instance, allocation = case
    data = allocation_json(instance, allocation)
    # Compared as JSON text: key order and int-versus-float are part of what `fairpack solve --json` prints.
    assert json.dumps(data["tenants"]) == json.dumps(expected_tenants(instance, allocation))
    assert list(data["utilisation"]) == list(instance.resources)


def test_non_finite_task_counts_render_instead_of_crashing() -> None:
    # A failed method can leave nan or inf in its task matrix; the view shows it (the checker rejects it)
    # instead of failing on round(nan).
    instance = make([("s", [4.0, 4.0], 1)], [("a", [1.0, 1.0], 1.0, math.inf), ("b", [1.0, 1.0], 1.0, math.inf)])
    data = allocation_json(instance, Allocation(np.array([[math.nan], [math.inf]]), "class"))
    assert math.isnan(data["tenants"]["a"]["tasks"]) and data["tenants"]["a"]["per_server"] == {}
    assert data["tenants"]["b"]["tasks"] == math.inf and data["tenants"]["b"]["per_server"] == {"s": math.inf}


def test_nodes_json_says_what_the_contract_says_node_by_node() -> None:
    instance = random_tree_instance(3, leaves=40, depth=4)
    allocation = solve(instance, "hdrf").allocation
    assert allocation is not None
    tree = tree_of(instance)
    data = nodes_json(instance, allocation)
    assert list(data) == [tree.names[index] for index in tree.preorder()]
    for index, name in enumerate(tree.names):
        entry = data[name]
        parent = int(tree.parent[index])
        assert entry["parent"] == (tree.names[parent] if parent >= 0 else None)
        assert type(entry["depth"]) is int and entry["depth"] == int(tree.depth[index])
        assert type(entry["leaf"]) is bool and entry["leaf"] == bool(tree.is_leaf[index])
        assert entry["weight"] == float(tree.weight[index])
        assert list(entry["allocation"]) == list(instance.resources)
    # A leaf's amounts are its tenant's: the same numbers reach the JSON by both routes.
    tenants = allocation_json(instance, allocation)["tenants"]
    for tenant in instance.tenants:
        assert data[tenant.name]["allocation"] == tenants[tenant.name]["allocation"]


def test_a_hierarchy_table_shows_the_first_rows_of_the_whole_tree() -> None:
    # Only the rows shown are drawn; they must be the first rows of the whole drawing, branches included.
    instance = load_instance(ROOT / "instances" / "hdrf_fig10.yaml")
    result = solve(instance, "hdrf")
    data = result_json(instance, result)
    whole = format_table(instance, result, top=len(data["nodes"]), data=data).splitlines()
    short = format_table(instance, result, top=3, data=data).splitlines()
    # Title, numbers, times, header and the first three rows, cell by cell (column widths follow the rows shown).
    assert [line.split() for line in short[:7]] == [line.split() for line in whole[:7]]
    assert short[7].startswith("  ... and ") and not whole[7].startswith("  ... and ")


# ------------------------------------------------------------------ the JSON text written from columns


# Every bundled instance with methods of its family: allocation views (class, machine and pool units,
# hierarchies) and schedule views.
TEXT_CASES = [("drf_paper", "drfh"), ("drf_paper", "first-fit"), ("drfh_fig1", "drfh"), ("drfh_fig1", "best-fit"),
              ("drfh_fig1", "drfh-int"), ("weighted_caps", "drfh"), ("weighted_caps", "slots"), ("hdrf_fig4", "hdrf"),
              ("hdrf_fig10", "hdrf"), ("hdrf_fig10", "collapsed"), ("dag_two_jobs", "sjf"),
              ("dag_two_jobs", "carbyne"), ("tetrisched_gpu", "tetris")]  # fmt: skip


@pytest.mark.parametrize(("name", "method"), TEXT_CASES)
def test_result_json_text_is_json_dumps_of_the_view(name: str, method: str) -> None:
    instance = load_instance(ROOT / "instances" / f"{name}.yaml")
    result = solve(instance, method)
    assert result_json_text(instance, result) == json.dumps(result_json(instance, result))


def test_result_json_text_of_a_generated_tree_and_placements() -> None:
    instance = random_tree_instance(5, leaves=300, depth=4, resources=4)
    for placement in ("pooled", "servers"):
        result = solve(instance, "hdrf", placement=placement)
        assert result_json_text(instance, result) == json.dumps(result_json(instance, result))
    # A method's extra entry named like a table replaces it in the view, and so in the text.
    for extra in ({"tenants": [1.5, "x"]}, {"nodes": {"a": None}}, {"tenants": 0, "nodes": 1}):
        result = replace(solve(instance, "hdrf"), extra=extra)
        assert result_json_text(instance, result) == json.dumps(result_json(instance, result))


# nan and inf task counts times zero demands are nan in the view's products, on purpose: both writers must
# spell them the same.
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@settings(derandomize=True, max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=allocations(), special=st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf, 1e-300, 1e300]))
def test_result_json_text_writes_every_number_as_json_dumps(case: tuple[Instance, Allocation], special: float) -> None:
    # Odd numbers in the task matrix (nan, inf, -0.0, whole and near-whole counts) and tenants named with
    # characters JSON escapes or % formats.
    instance, allocation = case
    tasks = allocation.tasks.copy()
    tasks[0, 0] = special
    renamed = replace(instance, tenants=tuple(replace(t, name=f'{t.name} %s "é"\\') for t in instance.tenants))
    for view in (instance, renamed):
        result = Result(status="optimal", method="m", backend="none", allocation=Allocation(tasks, allocation.kind))
        assert result_json_text(view, result) == json.dumps(result_json(view, result))


@settings(derandomize=True, max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=allocations())
def test_an_allocation_given_as_cells_renders_as_its_table_does(case: tuple[Instance, Allocation]) -> None:
    instance, allocation = case
    tenants, units, counts = allocation.cells()
    cells = Allocation.from_cells(allocation.shape, tenants, units, counts, kind=allocation.kind,  # type: ignore[arg-type]
                                  integral=allocation.integral)  # fmt: skip
    for shown in (None, 1):
        assert allocation_json(instance, cells, units_shown=shown) == allocation_json(instance, allocation,
                                                                                    units_shown=shown)  # fmt: skip
    as_cells, as_table = (Result("feasible", "m", "", allocation=a) for a in (cells, allocation))
    assert result_json_text(instance, as_cells) == result_json_text(instance, as_table)
    assert cells.sparse  # rendered from its cells alone


@pytest.mark.parametrize("scattered", [False, True], ids=["runs", "scattered"])
def test_result_json_text_of_whole_tasks_in_runs_or_scattered(scattered: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two tenants filling 300 identical machines alike (runs of cells, each written as one join), and Best-Fit's
    # tasks scattered over the Google table (each cell written on its own, the machines it uses named once): the
    # text is json.dumps's either way.
    from fairpack.models import view
    from fairpack.models.generators import google_instance

    if scattered:
        instance, method = google_instance(None, tenants=60, seed=1, machines=1500), "best-fit"
    else:
        instance = make([("s", [4.0, 4.0], 300), ("t", [8.0, 8.0], 1)], [("a", [1.0, 1.0], 1.0, math.inf),
                                                                         ("b", [2.0, 2.0], 1.0, math.inf)])
        method = "first-fit"
    result = solve(instance, method)
    written: list[str] = []
    per_cell = view._per_cell_texts
    monkeypatch.setattr(view, "_per_cell_texts", lambda *args: written.append(method) or per_cell(*args))
    assert result_json_text(instance, result) == json.dumps(result_json(instance, result))
    assert written == ([method] if scattered else [])


def test_result_json_text_of_machine_names_that_collide_or_end_in_a_bracket() -> None:
    """Machine names are made per class (``name[k]``) without a uniqueness check unless a server name ends in
    ``]``: a class ``s`` of two machines beside a server named ``s[1]`` collides, ``t]`` does not."""
    for servers in ([("s", [4.0, 4.0], 2), ("s[1]", [2.0, 2.0], 1)], [("t]", [4.0, 4.0], 2), ("u", [2.0, 2.0], 3)]):
        instance = make(servers, [("a", [1.0, 1.0], 1.0, math.inf), ("b", [0.5, 1.0], 2.0, math.inf)])
        machines = sum(count for _, _, count in servers)
        tasks = np.arange(2 * machines, dtype=np.float64).reshape(2, machines) % 3 + np.array([0.5, 0.0])[:, None]
        result = Result("feasible", "first-fit", "", allocation=Allocation(tasks, "machine", integral=False))
        assert result_json_text(instance, result) == json.dumps(result_json(instance, result))


def test_a_bulk_traces_schedule_view_names_its_jobs_without_making_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from fairpack.models.traces import TraceJobs, read_trace
    from fairpack.models.types import ServerClass
    from fairpack.solver.api import simulate

    path = tmp_path / "t.csv"
    path.write_text("arrival,duration,tenant,cpu,tasks\n0,1,a,1,2\n0.5,2,b,1,1\n1,1,,1,1\n")
    cluster = Instance(("cpu",), (ServerClass("m", np.array([1.0]), 2),))
    instance = read_trace(path, ("cpu",)).on(cluster)
    assert isinstance(instance.jobs, TraceJobs)
    result = simulate(instance, "fifo")
    expected = [(job.name, job.stages[0].name, job.deadline) for job in instance.jobs]

    def made(self: TraceJobs, k: Any) -> Any:
        raise AssertionError("a job of the trace was made")

    monkeypatch.setattr(TraceJobs, "__getitem__", made)
    view = result_json(instance, result)
    assert [(name, "s0", entry["deadline"]) for name, entry in view["jobs"].items()] == [
        (name, stage, None) for name, stage, _ in expected]  # no deadlines in this trace
    assert [(task["job"], task["stage"]) for task in view["tasks"]] == [
        (expected[k][0], "s0") for k in result.schedule.job.tolist()]  # fmt: skip
