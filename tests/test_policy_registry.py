"""One registry for methods and policies: every online policy is built through its record's factory, and every
refusal of ``fairpack simulate`` is derived from the facts its record declares (the workloads it runs on, how
it treats placement options, whether it reads the instance) -- no name set decides anything.

Each refusal test states the expected outcome as a function of the record alone and checks it for every
registered policy; a policy registered here, unknown to every policy module's tables, runs and is refused
by the same rules.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fairpack.models.io import instance_from_dict, load_instance
from fairpack.models.types import Instance, InstanceError
from fairpack.solver import registry
from fairpack.solver.api import simulate
from fairpack.solver.cli import main
from fairpack.solver.registry import (
    ONLINE_PREFIX,
    PLACEMENT_OPTIONS,
    WORKLOADS,
    Method,
    OptionError,
    SolveOptions,
    describe_all,
    get_method,
    methods,
    policies,
    register,
)
from fairpack.solver.sim.engine import BasePolicy
from fairpack.solver.sim.run import build_policy
from fairpack.solver.sim.workload import Workload

ROOT = Path(__file__).resolve().parents[1]
JOBS_FILE = ROOT / "instances" / "dag_two_jobs.yaml"
TENANTS_FILE = ROOT / "instances" / "drfh_fig1.yaml"
POLICY_NAMES = list(policies())

CLUSTER = [{"name": "gpu", "capacity": {"cpu": 1}, "labels": {"gpu": "true", "rack": "r1"}},
           {"name": "a", "capacity": {"cpu": 1}, "labels": {"rack": "r1"}},
           {"name": "b", "capacity": {"cpu": 1}, "labels": {"rack": "r2"}},
           {"name": "c", "capacity": {"cpu": 1}, "labels": {"rack": "r2"}}]  # fmt: skip


def _jobs(*jobs: dict[str, Any]) -> Instance:
    return instance_from_dict({"resources": ["cpu"], "servers": CLUSTER, "jobs": list(jobs)}, name="tiny")


def _stage(tasks: int = 1, **fields: Any) -> dict[str, Any]:
    return {"name": "s", "tasks": tasks, "demand": {"cpu": 1}, **fields}


#: Placement options, one task by task (on the GPU, or anywhere slower).
WITH_OPTIONS = _jobs({"name": "b", "stages": [_stage(duration=2)]},
                     {"name": "g", "release": 1, "stages": [_stage(options=[{"on": {"gpu": "true"}, "duration": 2},
                                                                            {"duration": 3}])]})  # fmt: skip
#: A stage whose only option is a gang (both tasks in one rack).
GANG_ONLY = _jobs({"name": "m", "stages": [_stage(tasks=2, options=[{"same": "rack", "duration": 2}])]})
#: The instances each workload is run on: DAG jobs, and tenants only (their endless backlogs).
INSTANCES = {"jobs": load_instance(JOBS_FILE), "backlogs": load_instance(TENANTS_FILE)}
FILES = {"jobs": JOBS_FILE, "backlogs": TENANTS_FILE}
#: A short horizon for the backlogs (they never end).
SETTINGS = {"jobs": {}, "backlogs": {"horizon": 10.0}}


def _simulate(name: str, workload: str) -> Any:
    return simulate(INSTANCES[workload], name, extra=dict(SETTINGS[workload]))


@pytest.fixture
def factory_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, BasePolicy]]:
    """Every call of a registry factory: (record name, name passed, policy made)."""
    calls: list[tuple[str, str, BasePolicy]] = []
    original = Method.builder

    def spy(self: Method) -> Callable[..., Any]:
        factory = original(self)

        def made(name: str, workload: Workload, instance: Instance | None, settings: dict[str, Any]) -> Any:
            policy = factory(name, workload, instance, settings)
            calls.append((self.name, name, policy))
            return policy

        return made

    monkeypatch.setattr(Method, "builder", spy)
    return calls


# --- the records ------------------------------------------------------------------------------------------


def test_every_policy_record_declares_its_factory_and_its_facts() -> None:
    assert POLICY_NAMES
    for name, record in policies().items():
        assert record.name == name and record.command == "simulate" and record.is_policy
        assert record.factory is not None and callable(record.builder()), name
        assert record.workloads and record.workloads <= WORKLOADS.keys(), name
        assert record.placement_options in PLACEMENT_OPTIONS, name
    for record in methods().values():
        assert record.command == "solve" and record.factory is None and not record.workloads


def test_methods_lists_both_kinds_from_the_one_registry() -> None:
    import fairpack

    combined = methods(include_policies=True)
    assert fairpack.methods is methods and fairpack.policies is policies
    assert list(combined) == [*methods(), *(ONLINE_PREFIX + name for name in policies())]
    assert all(combined[key].key == key for key in combined)
    assert combined["first-fit"].command == "solve" and combined["online:first-fit"].command == "simulate"
    assert get_method("online:fifo") is policies()["fifo"] and get_method("drfh") is methods()["drfh"]
    entries = describe_all()
    assert [(e["command"], e["name"]) for e in entries] == [(m.command, m.name) for m in combined.values()]
    for entry in entries:
        facts = {"workloads", "placement_options", "needs_instance"}
        assert facts <= entry.keys() if entry["command"] == "simulate" else not facts & entry.keys(), entry


def test_fairpack_methods_json_says_which_command_runs_each_entry(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["methods", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert {(e["command"], e["name"]) for e in entries} == {(m.command, m.name) for m in
                                                              methods(include_policies=True).values()}  # fmt: skip
    fifo = next(e for e in entries if e["command"] == "simulate" and e["name"] == "fifo")
    assert fifo["workloads"] == ["backlogs", "jobs"] and fifo["placement_options"] == "none"
    assert main(["methods"]) == 0
    assert "runs on: DAG jobs; placement options: chosen among, gangs too" in capsys.readouterr().out


def test_inconsistent_records_are_refused_at_registration() -> None:
    for bad in (
        Method("x", "flat", False, "x", "m:f", factory="m:f"),  # a method with a policy's fact
        Method("x", "online", False, "x", "m:f", command="simulate", workloads=frozenset({"jobs"})),  # no factory
        Method("x", "online", False, "x", "m:f", command="simulate", factory="m:f"),  # runs on nothing
        Method("x", "online", False, "x", "m:f", command="simulate", factory="m:f", workloads=frozenset({"dags"})),
        Method("x", "online", False, "x", "m:f", command="simulate", factory="m:f", workloads=frozenset({"jobs"}),
               placement_options="some"),
        Method("x", "online", False, "x", "m:f", command="run"),
    ):
        with pytest.raises(ValueError):
            register(bad)
    assert "x" not in policies() and "x" not in methods()


# --- built through the factory ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_every_policy_is_built_by_its_registry_factory(
    name: str, factory_calls: list[tuple[str, str, BasePolicy]]
) -> None:
    record = policies()[name]
    for workload in sorted(record.workloads):
        result = _simulate(name, workload)
        assert result.verified, (name, workload, result.violations)
    assert [(made_by, passed) for made_by, passed, _ in factory_calls] == [(name, name)] * len(record.workloads)
    assert all(isinstance(policy, BasePolicy) for _, _, policy in factory_calls)


def test_no_policy_name_or_name_set_is_tested_in_the_dispatch() -> None:
    """The simulator's entry points build policies and refuse requests from records only."""
    names = set(policies()) - {f.name for f in fields(SolveOptions)}  # "slots" is an option too
    for module in ("solver/sim/run.py", "solver/sim/build.py", "solver/sim/backlog.py", "solver/bench/task.py"):
        tree = ast.parse((ROOT / module).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fairpack.solver.sim.pol"):
                imported = {alias.name for alias in node.names}
                assert not {n for n in imported if n.endswith(("POLICIES", "HEURISTICS"))}, (module, imported)
            if isinstance(node, ast.Compare):
                constants = {c.value for c in ast.walk(node) if isinstance(c, ast.Constant)}
                assert not constants & names, (module, ast.unparse(node))


# --- refusals, derived from the facts ---------------------------------------------------------------------


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_a_workload_the_record_does_not_declare_is_refused_with_exit_2(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    record = policies()[name]
    for workload in sorted(WORKLOADS.keys() - record.workloads):
        with pytest.raises(OptionError, match=f"^policy: {name} ") as refused:
            _simulate(name, workload)
        other = "this instance has jobs" if workload == "jobs" else "this instance has tenants only"
        assert other in str(refused.value)
        assert main(["simulate", str(FILES[workload]), "--policy", name, "--horizon", "10"]) == 2
        assert name in capsys.readouterr().err


@pytest.mark.parametrize("name", [n for n in POLICY_NAMES if "jobs" in policies()[n].workloads])
def test_placement_options_are_refused_or_run_as_the_record_declares(name: str) -> None:
    record = policies()[name]
    if record.placement_options == "none":
        with pytest.raises(OptionError, match="does not understand placement options") as refused:
            simulate(WITH_OPTIONS, name)
        able = str(refused.value).split("; ", 1)[1].replace(" and ", ", ").split(", ")
        names = [word.split(" ")[0] for word in able]  # every policy that does understand them, in order
        assert names == [p.name for p in policies().values() if p.placement_options == "task"] + \
            [p.name for p in policies().values() if p.placement_options == "all"]  # fmt: skip
        return
    assert simulate(WITH_OPTIONS, name).verified
    if record.placement_options == "task":
        with pytest.raises(InstanceError, match=f"runs only as a gang, which {name} cannot place") as refused:
            simulate(GANG_ONLY, name)
        gangs = [p.name for p in policies().values() if p.placement_options == "all"]
        assert f"({', '.join(gangs)})" in str(refused.value)
    else:
        assert simulate(GANG_ONLY, name).verified


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_a_policy_that_reads_the_instance_is_refused_without_it(name: str) -> None:
    record = policies()[name]
    workload = "jobs" if "jobs" in record.workloads else "backlogs"
    instance = INSTANCES[workload]
    jobs = Workload.of_jobs(instance, "servers") if workload == "jobs" else \
        Workload.of_backlogs(instance, np.ones(len(instance.tenants)), False)  # fmt: skip
    if record.needs_instance:
        with pytest.raises(OptionError, match=f"{name} reads {record.needs_instance}: build it with the instance"):
            build_policy(name, jobs, SolveOptions())
    else:
        assert isinstance(build_policy(name, jobs, SolveOptions()), BasePolicy)
    assert isinstance(build_policy(name, jobs, SolveOptions(), instance), BasePolicy)


# --- a new policy is one record ---------------------------------------------------------------------------


def make_probe(name: str, workload: Workload, instance: Instance | None, settings: dict[str, Any]) -> BasePolicy:
    """A policy no policy module knows by name: first-come first-served (the flat ``fifo``'s object)."""
    from fairpack.solver.sim.policies.flat import Fifo

    policy = Fifo()
    policy.name = name
    return policy


@pytest.fixture
def probe() -> Iterator[Method]:
    record = Method("probe", "online", False, "a test policy: fifo on backlogs only", "fairpack.solver.sim.run:"
                    "run_simulation", options=frozenset({"seed"}), extra_keys=frozenset({"horizon"}),
                    command="simulate", factory=f"{__name__}:make_probe", workloads=frozenset({"backlogs"}))
    register(record)
    try:
        yield record
    finally:
        del registry._REGISTRY[record.key], registry._BY_COMMAND["simulate"][record.name]


def test_a_newly_registered_policy_runs_and_is_refused_by_its_record(
    probe: Method, factory_calls: list[tuple[str, str, BasePolicy]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _simulate("probe", "backlogs").verified
    assert [(made_by, passed) for made_by, passed, _ in factory_calls] == [("probe", "probe")]
    assert main(["simulate", str(JOBS_FILE), "--policy", "probe"]) == 2
    assert "probe simulates tenants' endless backlogs" in capsys.readouterr().err
    assert methods(include_policies=True)["online:probe"] is probe


def test_a_sweep_refuses_a_policy_on_a_workload_its_record_does_not_declare() -> None:
    from fairpack.solver.bench.sweep import SweepError, parse_sweep

    with pytest.raises(SweepError, match="online:naive-hdrf"):
        parse_sweep({"grid": [{"name": "g", "family": "arrivals", "sizes": {"tenants": 2},
                               "methods": ["online:naive-hdrf"]}]})  # fmt: skip
