"""``fairpack check`` gives every untampered result the verdict ``solve`` and ``simulate`` gave it.

The walk runs every method of ``fairpack solve`` (every backend it takes, every placement and fair-cap setting
that applies, every objective on one instance) and every policy of ``fairpack simulate`` (on DAG jobs, on
tenants' backlogs, per machine and pooled) on the small instances of ``check_cases``, saves each result with
``-o`` and checks it, giving check the options the run was given (as ``fairpack check --help`` asks): check
says verified exactly when the run said ``verified yes``. Given no options at all, check still verifies every
result, except those run with an option that loosens its rules (``--no-fair-cap``, ``--placement pooled`` where
the method places on machines, ...): those it refuses with the recorded option named first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fairpack.solver.registry import methods, policies
from tests.check_cases import cli, instance_files

#: (command, instance, the run's options, the options check is given)
Case = tuple[str, str, tuple[Any, ...], tuple[Any, ...]]


def _add(cases: list[Case], command: str, instance: str, *run: Any, check: tuple[Any, ...] = ()) -> None:
    cases.append((command, instance, tuple(run), check))


def _allocation_cases(cases: list[Case]) -> None:
    """Flat and hierarchy methods: every backend; hdrf and collapsed on every placement."""
    for name, method in methods().items():
        if method.family == "flat":
            for backend in method.backends:
                _add(cases, "solve", "fig1", "--method", name, *(("--backend", backend) if method.uses_backend else ()))
            _add(cases, "solve", "weighted", "--method", name)
        elif method.family == "hierarchy" and "placement" in method.options:
            for backend in method.backends:
                for placement in ("auto", "pooled", "servers"):
                    flags = ("--placement", placement)
                    _add(cases, "solve", "tree", "--method", name, "--backend", backend, *flags, check=flags)
            _add(cases, "solve", "fig4", "--method", name)
        elif method.family == "hierarchy":
            for instance in ("fig4", "tree"):
                _add(cases, "solve", instance, "--method", name, "--horizon", 20)


def _schedule_cases(cases: list[Case]) -> None:
    """The exact DAG methods on every backend, placement, fair-cap setting and objective; the heuristics."""
    for name in ("spacetime", "spacetime-cp"):
        for backend in methods()[name].backends:
            for placement in ("pooled", "servers"):
                for cap in ((), ("--no-fair-cap",)):
                    flags = ("--placement", placement, *cap)
                    _add(cases, "solve", "two_jobs", "--method", name, "--backend", backend, *flags, check=flags)
        for objective in ("makespan", "mix", "utility"):
            for cap in ((), ("--no-fair-cap",)):
                flags = ("--objective", objective, *cap)
                _add(cases, "solve", "two_jobs", "--method", name, *flags, check=flags)
        flags = ("--placement", "servers")
        _add(cases, "solve", "split", "--method", name, *flags, check=flags)
        if name != "spacetime":  # the MILP refuses data locality on machines (exit 2), so there is nothing to check
            _add(cases, "solve", "blocks", "--method", name, *flags, check=flags)
    flags = ("--placement", "servers", "--no-fair-cap")
    _add(cases, "solve", "tetris", "--method", "spacetime-cp", *flags, check=flags)
    _add(cases, "solve", "blocks", "--method", "locality-cp")
    for name in ("carbyne", "drf-dag", "drf-strict", "tetris", "sjf"):
        for instance in ("two_jobs", "blocks", "arrivals"):
            for placement in ("pooled", "servers"):
                flags = ("--placement", placement)
                _add(cases, "solve", instance, "--method", name, *flags, check=flags)
        _add(cases, "solve", "two_jobs", "--method", name, "--objective", "makespan", check=("--objective", "makespan"))


def _simulation_cases(cases: list[Case]) -> None:
    """Every policy on DAG jobs (per machine and pooled) and on tenants' backlogs; unfinished jobs; a horizon."""
    for name, policy in policies().items():
        if "jobs" in policy.workloads:
            instances = {"locality": ("blocks",), "soft": ("tetris",)}.get(policy.family, ("arrivals", "blocks"))
            for instance in instances:
                # Placement options select machines by label: the soft policies' instance is refused pooled.
                for placement in ("servers",) if instance == "tetris" else ("servers", "pooled"):
                    flags = ("--placement", placement)
                    _add(cases, "simulate", instance, "--policy", name, *flags, check=flags)
        if "backlogs" in policy.workloads:
            for instance in ("fig4",) if policy.family == "hierarchy" else ("fig1", "fig4"):
                _add(cases, "simulate", instance, "--policy", name, "--horizon", 20)
    _add(cases, "simulate", "unplaceable", "--policy", "slots")
    _add(cases, "simulate", "arrivals", "--policy", "fifo", "--horizon", 1.2, check=("--horizon", 1.2))
    _add(cases, "simulate", "arrivals", "--policy", "slots", "--slots", 2, check=("--slots", 2))


def _cases() -> list[Case]:
    cases: list[Case] = []
    _allocation_cases(cases)
    _schedule_cases(cases)
    _simulation_cases(cases)
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return instance_files(tmp_path_factory.mktemp("instances"))


def _loosened(out: str) -> bool:
    first = next((line for line in out.splitlines() if "VIOLATION" in line), "")
    return "which loosens the rules" in first


@pytest.mark.parametrize("case", CASES, ids=[" ".join(map(str, (c[0], c[1], *c[2]))) for c in CASES])
def test_check_gives_the_runs_verdict(case: Case, files: dict[str, Path], tmp_path: Path) -> None:
    command, instance, run, check = case
    saved = tmp_path / "result.json"
    _, out, err = cli(command, files[instance], *run, "-o", saved, "--quiet")
    assert saved.exists(), out + err
    data = json.loads(saved.read_text())
    assert data["command"] == command
    checked, out, err = cli("check", files[instance], saved, *check)
    assert (checked == 0) == bool(data["verified"]), out + err
    bare, out, err = cli("check", files[instance], saved)
    assert bare == 0 or _loosened(out) or not data["verified"], out + err


def test_the_walk_covers_every_method_policy_backend_and_placement() -> None:
    runs = [(c[0], c[2]) for c in CASES]
    names = {args[args.index("--method" if cmd == "solve" else "--policy") + 1] for cmd, args in runs}
    assert set(methods()) <= names and set(policies()) <= names
    for name, method in methods().items():
        used = {args[args.index("--backend") + 1] if "--backend" in args else method.default_backend
                for cmd, args in runs if cmd == "solve" and args[1] == name}  # fmt: skip
        assert used == set(method.backends), name
    placed = {(args[1], args[args.index("--placement") + 1]) for _, args in runs if "--placement" in args}
    for method in methods(include_policies=True).values():
        runs_jobs = method.family in ("jobs", "hierarchy") if not method.is_policy else "jobs" in method.workloads
        if "placement" in method.options and runs_jobs and method.family != "soft":  # soft: options need machines
            assert {(method.name, "pooled"), (method.name, "servers")} <= placed, method.key
