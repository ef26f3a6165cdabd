"""Standard output holds the answer and nothing else (HiGHS's C++ layer prints to file descriptor 1).

Walks every method x backend x algorithm that ``fairpack methods`` advertises, and every online policy, on the
bundled instances of its family, capturing file descriptor 1 itself (``capfd``), where native code writes:

* through the library (``solver.api.solve`` / ``simulate``), nothing at all is written to it;
* through the CLI, ``--json`` writes exactly one JSON object (the CLI also sends fd 1 to stderr while
  solving, so even ``--verbose`` logs land there).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairpack.models.io import load_instance
from fairpack.solver.api import simulate, solve
from fairpack.solver.backends import installed
from fairpack.solver.cli import main
from fairpack.solver.registry import methods, policies

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = {
    "flat": ["drfh_fig1.yaml", "weighted_caps.yaml", "drf_paper.yaml"],
    "hierarchy": ["hdrf_fig4.yaml", "hdrf_fig10.yaml"],
    "jobs": ["dag_two_jobs.yaml"],
}
#: Every (method, backend, algorithm, placement) the registry advertises; None = the method's default.
COMBOS = [
    (name, backend, algorithm, placement)
    for name, spec in sorted(methods().items())
    for backend, algorithm in [(None, None), *((b, a) for b in spec.backends for a in spec.algorithms(b))]
    for placement in (("pooled", "servers") if "placement" in spec.options else (None,))
    if backend is None or backend in installed()
]
Capture = pytest.CaptureFixture[str]
JOB_POLICIES = sorted(name for name, policy in policies().items() if "jobs" in policy.workloads)


def _args(backend: str | None, algorithm: str | None, placement: str | None) -> dict[str, str]:
    given = {"backend": backend, "algorithm": algorithm, "placement": placement}
    return {key: value for key, value in given.items() if value is not None}


@pytest.mark.parametrize(("name", "backend", "algorithm", "placement"), COMBOS)
def test_library_solve_writes_nothing_to_stdout(name: str, backend: str | None, algorithm: str | None,
                                                placement: str | None, capfd: Capture) -> None:  # fmt: skip
    for file in INSTANCES[methods()[name].family]:
        result = solve(load_instance(ROOT / "instances" / file), name, time_limit=30,
                       **_args(backend, algorithm, placement))  # fmt: skip
        assert result.verified or result.status in ("time_limit", "error"), (file, result.message)
        out = capfd.readouterr().out
        assert out == "", (file, out[:500])


@pytest.mark.parametrize(("name", "backend", "algorithm", "placement"), COMBOS)
def test_cli_json_stdout_is_one_json_object(name: str, backend: str | None, algorithm: str | None,
                                            placement: str | None, capfd: Capture) -> None:  # fmt: skip
    for file in INSTANCES[methods()[name].family]:
        flags = [item for key, value in _args(backend, algorithm, placement).items() for item in (f"--{key}", value)]
        code = main(["solve", str(ROOT / "instances" / file), "--method", name, "--json", "--time-limit", "30",
                     *flags])  # fmt: skip
        out = capfd.readouterr().out
        data = json.loads(out)  # exactly one object: json.loads refuses anything around it
        assert isinstance(data, dict) and data["method"] == name and code in (0, 1), (file, code)


@pytest.mark.parametrize("policy", JOB_POLICIES)
def test_simulate_writes_only_its_json(policy: str, capfd: pytest.CaptureFixture[str]) -> None:
    instance = ROOT / "instances" / "dag_two_jobs.yaml"
    simulate(load_instance(instance), policy)
    assert capfd.readouterr().out == ""
    assert main(["simulate", str(instance), "--policy", policy, "--json"]) == 0
    assert json.loads(capfd.readouterr().out)["method"] == policy


def test_verbose_solver_logs_go_to_stderr_from_the_cli(capfd: pytest.CaptureFixture[str]) -> None:
    """``--verbose`` asks HiGHS to log (a warm-started MILP): the log is on stderr, stdout stays JSON."""
    assert main(["solve", str(ROOT / "instances" / "dag_two_jobs.yaml"), "--method", "spacetime", "--json",
                 "--verbose"]) == 0  # fmt: skip
    captured = capfd.readouterr()
    assert json.loads(captured.out)["verified"] is True
    assert "HiGHS" in captured.err
