"""Every advertised option works, or is refused before solving.

The matrix is read from ``fairpack methods --json``: every method x backend x algorithm it advertises must
return a verified answer equal to the default backend's on the tiny-case library (``tests/library.py``),
and every combination it does not advertise, every unknown algorithm and every option a method does not
use must be refused at argument time (``OptionError``; exit 2 from the CLI) with a sentence saying why and
what to use instead. A result with no answer is never verified.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fairpack.models.result import Allocation, Result
from fairpack.models.types import Instance
from fairpack.solver.api import solve
from fairpack.solver.backends import ALGORITHMS, BACKEND_NAMES, installed
from fairpack.solver.cli import main
from fairpack.solver.registry import COMMON_OPTIONS, OptionError, SolveOptions, methods

from library import HIERARCHY_CASES, JOB_CASES, LIBRARY

ROOT = Path(__file__).resolve().parents[1]
FIG1 = ROOT / "instances" / "drfh_fig1.yaml"
TWO_JOBS = ROOT / "instances" / "dag_two_jobs.yaml"

#: A value other than the default for every option a method may or may not honour.
OPTION_VALUES: dict[str, Any] = {"strategy": "plain", "slots": 5, "gap": 0.1, "placement": "pooled",
                                 "objective": "makespan", "alpha": 0.3, "fair_cap": False, "workers": 1,
                                 "seed": 1}  # fmt: skip
#: The library each family is walked on: (name, instance, placement).
CASES: dict[str, list[tuple[str, Instance, str]]] = {
    "flat": [(case.name, case.instance, "auto") for case in LIBRARY],
    "hierarchy": HIERARCHY_CASES,
    "jobs": JOB_CASES,
}
REL = 1e-6


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairpack", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, check=False)  # fmt: skip


@pytest.fixture(scope="module")
def matrix() -> list[dict[str, Any]]:
    """``fairpack methods --json``, from the command line itself."""
    done = run_cli("methods", "--json")
    assert done.returncode == 0, done.stderr
    entries: list[dict[str, Any]] = json.loads(done.stdout)
    return [entry for entry in entries if entry["command"] == "solve"]


def test_option_values_cover_every_option() -> None:
    """A new ``SolveOptions`` field must join the walk below (refused where a method does not use it)."""
    options = {f.name for f in fields(SolveOptions)} - {"backend", "algorithm", "extra"} - COMMON_OPTIONS
    assert options == set(OPTION_VALUES)


def _outcome(result: Result, instance: Instance) -> np.ndarray:
    """What two answers of one method must share: the sorted weighted shares (leximin: unique), or the
    objective of a schedule."""
    if result.allocation is None:
        return np.array([result.objective])
    allocation: Allocation = result.allocation
    return np.sort(allocation.tenant_tasks * instance.dominant_demand / instance.weights)


def _solve(name: str, instance: Instance, placement: str, **options: Any) -> Result:
    spec = methods()[name]
    if "placement" in spec.options:
        options["placement"] = placement
    return solve(instance, name, time_limit=60, **options)


def test_every_advertised_combination_gives_the_default_backends_answer(matrix: list[dict[str, Any]]) -> None:
    walked = 0
    for entry in matrix:
        name, exact = entry["name"], entry["exact"]
        combos = [(b, a) for b, algorithms in entry["backends"].items() if b in installed() for a in algorithms]
        for case, instance, placement in CASES[entry["family"]]:
            reference = _solve(name, instance, placement)
            assert reference.verified, (name, case, reference.violations, reference.message)
            assert reference.status == ("optimal" if exact else "feasible"), (name, case, reference.message)
            for backend, algorithm in combos:
                result = _solve(name, instance, placement, backend=backend, algorithm=algorithm)
                where = (name, backend, algorithm, case)
                assert result.verified and result.status == reference.status, (*where, result.status, result.message)
                assert result.objective == pytest.approx(reference.objective, rel=REL, abs=REL), where
                assert _outcome(result, instance) == pytest.approx(_outcome(reference, instance), rel=1e-5,
                                                                   abs=1e-5), where  # fmt: skip
                walked += 1
    assert walked >= 200  # the library times every combination, not a sample


def test_the_exact_dag_methods_agree(matrix: list[dict[str, Any]]) -> None:
    """Both exact DAG methods solve the same problem (caps on, then off): the same optimum. The locality
    yardstick, per machine and without caps, meets them there on instances without input blocks."""
    exact = [entry["name"] for entry in matrix if entry["family"] == "jobs" and entry["exact"]]
    assert sorted(exact) == ["locality-cp", "spacetime", "spacetime-cp"]
    for _, instance, placement in JOB_CASES:
        for options in ({}, {"fair_cap": False}):
            values = [_solve(name, instance, placement, **options) for name in ("spacetime", "spacetime-cp")]
            assert all(r.status == "optimal" and r.verified for r in values)
            assert values[0].objective == pytest.approx(values[1].objective, rel=REL)
        uncapped = solve(instance, "spacetime-cp", placement="servers", fair_cap=False)
        yardstick = solve(instance, "locality-cp")
        assert yardstick.status == "optimal" and yardstick.verified
        assert yardstick.objective == pytest.approx(uncapped.objective, rel=REL)


def _refused(name: str, instance: Instance, **options: Any) -> OptionError:
    with pytest.raises(OptionError) as caught:
        solve(instance, name, **options)
    return caught.value


def test_every_other_combination_is_refused_with_what_to_use(matrix: list[dict[str, Any]]) -> None:
    for entry in matrix:
        name = entry["name"]
        instance = CASES[entry["family"]][0][1]
        for backend in BACKEND_NAMES:
            advertised = entry["backends"].get(backend)
            for algorithm in (None, *ALGORITHMS[backend], "bogus"):
                if advertised is not None and (algorithm is None or algorithm in advertised):
                    continue
                error = _refused(name, instance, backend=backend, algorithm=algorithm)
                message = str(error)
                assert error.option in ("backend", "algorithm"), (name, backend, algorithm, message)
                if algorithm == "bogus" and backend in entry["backends"]:
                    assert "choose from" in message, message
                else:
                    assert " use " in f" {message}" or "leave --backend out" in message, message
        if not entry["backends"]:
            assert "does not apply" in str(_refused(name, instance, algorithm="simplex"))


def test_every_option_a_method_does_not_use_is_refused(matrix: list[dict[str, Any]]) -> None:
    for entry in matrix:
        instance = CASES[entry["family"]][0][1]
        for option, value in OPTION_VALUES.items():
            if option in entry["options"]:
                continue
            error = _refused(entry["name"], instance, **{option: value})
            assert error.option == option.replace("_", "-"), (entry["name"], option, str(error))
            assert "it applies to" in str(error)
        assert "does not use" in str(_refused(entry["name"], instance, extra={"no-such-setting": 1}))


def test_every_option_a_method_advertises_is_honoured(matrix: list[dict[str, Any]]) -> None:
    """Each advertised option, given alone, still gives a verified answer (none is refused or breaks it)."""
    for entry in matrix:
        _, instance, placement = CASES[entry["family"]][0]
        for option in sorted(set(entry["options"]) & set(OPTION_VALUES)):
            options: dict[str, Any] = {option: OPTION_VALUES[option]}
            if option == "alpha":
                options["objective"] = "mix"
            if option != "placement" and "placement" in entry["options"]:
                options["placement"] = placement
            result = solve(instance, entry["name"], time_limit=60, **options)
            assert result.verified, (entry["name"], option, result.message, result.violations)


def test_alpha_without_the_mix_objective_is_refused() -> None:
    instance = JOB_CASES[0][1]
    error = _refused("spacetime-cp", instance, alpha=0.3)
    assert error.option == "alpha" and "--objective mix" in str(error)
    assert _refused("carbyne", instance, alpha=0.3, objective="avg-jct").option == "alpha"
    assert solve(instance, "carbyne", alpha=0.3, objective="mix").verified


def test_servers_model_without_servers_placement_is_refused() -> None:
    instance = JOB_CASES[0][1]
    error = _refused("spacetime", instance, extra={"servers_model": "machine"})
    assert "placement" in str(error)


@pytest.mark.parametrize("status", ["optimal", "feasible", "time_limit", "infeasible", "error"])
def test_a_result_without_an_answer_is_never_verified(status: str, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    import fairpack.solver.drfh.methods as drivers

    def nothing(instance: Instance, options: SolveOptions, budget: Any) -> Result:
        return Result(status, "drfh", "highs", verified=True)  # type: ignore[arg-type]

    monkeypatch.setattr(drivers, "run_drfh", nothing)
    assert main(["solve", str(FIG1), "--method", "drfh", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["verified"] is False and "tenants" not in data
    assert main(["solve", str(FIG1), "--method", "drfh"]) == 1
    assert "verified yes" not in capsys.readouterr().out


def test_a_failed_method_is_never_verified_even_with_a_feasible_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    """What an LP grew before it failed (here nothing: all zero) passes every capacity check, yet is no answer."""
    import fairpack.solver.drfh.methods as drivers

    def failed(instance: Instance, options: SolveOptions, budget: Any) -> Result:
        zero = Allocation(np.zeros((len(instance.tenants), len(instance.servers))), "class")
        return Result("error", "drfh", "highs", allocation=zero, message="solver failed")

    monkeypatch.setattr(drivers, "run_drfh", failed)
    from fairpack.models.io import load_instance

    result = solve(load_instance(FIG1), "drfh")
    assert result.status == "error" and not result.verified and result.violations == ()


# --- from the command line: refusals exit 2 with the reason and what to use, no traceback -------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--method", "drfh", "--backend", "ortools", "--algorithm", "scip"], "use --algorithm glop or pdlp"),
        (["--method", "drfh", "--backend", "highs", "--algorithm", "bogus"], "choose from simplex, ipm, pdlp"),
        (["--method", "drfh", "--backend", "ortools", "--algorithm", "bogus"], "choose from glop, pdlp, scip"),
        (["--method", "first-fit", "--backend", "highs"], "leave --backend out"),
        (["--method", "first-fit", "--workers", "2"], "it applies to"),
    ],
)
def test_cli_refusals(args: list[str], says: str) -> None:
    done = run_cli("solve", str(FIG1), *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert says in done.stderr and "Traceback" not in done.stderr


def test_cli_pdlp_and_scip_answer_as_the_default_does() -> None:
    reference = json.loads(run_cli("solve", str(FIG1), "--method", "drfh", "--json").stdout)
    for args in (["--method", "drfh", "--backend", "highs", "--algorithm", "pdlp"],
                 ["--method", "drfh-int", "--backend", "ortools", "--algorithm", "scip"]):  # fmt: skip
        done = run_cli("solve", str(FIG1), *args, "--json")
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert data["status"] == "optimal" and data["verified"] is True
        assert data["objective"] == pytest.approx(reference["objective"], rel=REL)


# --- the methods' own settings (``--option k=v``) ----------------------------------------------------------

#: Instances a method's settings are tried on: the first one its default run solves (exit 0) is used.
SETTING_INSTANCES = [TWO_JOBS, FIG1, ROOT / "instances" / "hdrf_fig4.yaml", ROOT / "instances" / "tetrisched_gpu.yaml"]
#: Values of the wrong kind or out of range for every setting (as ``--option`` parses them: text, numbers).
BAD_SETTING_VALUES = ["abc", "-1", "1e400", "2"]


def _cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    code = main([str(arg) for arg in args])
    return code, capsys.readouterr().err


def _run_with(capsys: pytest.CaptureFixture[str], command: str, name: str, path: Path, *option: str) -> tuple[int, str]:
    """``fairpack solve|simulate path --method|--policy name --quiet`` (a short horizon for the simulations)."""
    how = ("--method",) if command == "solve" else ("--horizon", "20", "--policy")
    return _cli(capsys, command, path, *how, name, "--quiet", *option)


@pytest.fixture(scope="module")
def settings() -> list[tuple[str, str, str]]:
    """(command, method or policy, setting) for every setting ``fairpack methods --json`` advertises."""
    done = run_cli("methods", "--json")
    assert done.returncode == 0, done.stderr
    return [(entry["command"], entry["name"], key) for entry in json.loads(done.stdout) for key in entry["extra"]]


def test_every_setting_of_the_wrong_kind_is_refused_with_its_name(
    capsys: pytest.CaptureFixture[str], settings: list[tuple[str, str, str]]
) -> None:
    """``--option key=value`` with a value of the wrong kind: the answer (exit 0) if the value is a valid one
    after all, else exit 2 naming the setting -- never an internal error (exit 1), which carbyne's altruism,
    the heuristics' fair_margin and spacetime's fair_completion were."""
    assert settings, "no method advertises a setting"
    names = {name for _, name, _ in settings}
    usable: dict[str, Path] = {}
    for command, name, _ in settings:
        if name in usable:
            continue
        for path in SETTING_INSTANCES:
            if _run_with(capsys, command, name, path)[0] == 0:
                usable[name] = path
                break
    assert usable.keys() == names, f"no instance runs {sorted(names - usable.keys())}"
    failures = []
    for command, name, key in settings:
        for value in BAD_SETTING_VALUES:
            code, err = _run_with(capsys, command, name, usable[name], "--option", f"{key}={value}")
            if code not in (0, 2) or "internal error" in err or (code == 2 and key not in err):
                failures.append((command, name, key, value, code, err.strip()[-160:]))
    assert not failures, "\n".join(map(str, failures))


def test_solve_takes_a_methods_setting_and_refuses_one_it_does_not_use(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _cli(capsys, "solve", TWO_JOBS, "--method", "spacetime-cp", "--option", "decompose=false", "--quiet")
    assert code == 0
    code, err = _cli(capsys, "solve", TWO_JOBS, "--method", "carbyne", "--option", "altruism=0.5,reverse_order=true",
                     "--quiet")  # fmt: skip
    assert code == 0, err
    # sjf has no altruism: it used to be accepted and ignored
    code, err = _cli(capsys, "solve", TWO_JOBS, "--method", "sjf", "--option", "altruism=0.5")
    assert code == 2 and "altruism" in err and "carbyne" not in err.split("accepts")[-1]
    code, err = _cli(capsys, "solve", TWO_JOBS, "--method", "spacetime", "--option", "fair_completion=3")
    assert code == 2 and "fair_completion" in err and "library option" in err
