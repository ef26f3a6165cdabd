"""``--workers``, ``--seed`` and ``--verbose`` reach the solvers, and long solves show they are alive:
HiGHS gets ``threads``/``random_seed``/its log, CP-SAT ``num_workers``/``random_seed``/its search log,
drfh-int's level search tells its steps, and incumbent and bound go to stderr at most every few seconds."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fairpack.models.io import load_instance
from fairpack.solver import progress
from fairpack.solver.api import solve
from fairpack.solver.registry import OptionError

ROOT = Path(__file__).resolve().parents[1]
TWO_JOBS = ROOT / "instances" / "dag_two_jobs.yaml"
CAPS = ROOT / "instances" / "weighted_caps.yaml"
FIG1 = ROOT / "instances" / "drfh_fig1.yaml"


def highs_options(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    import highspy

    seen: list[tuple[str, Any]] = []
    original = highspy.Highs.setOptionValue

    def record(self: Any, name: str, value: Any) -> Any:
        seen.append((name, value))
        return original(self, name, value)

    monkeypatch.setattr(highspy.Highs, "setOptionValue", record)
    return seen


@pytest.mark.parametrize(("method", "path"), [("drfh", FIG1), ("drfh-int", CAPS), ("spacetime", TWO_JOBS)])
def test_workers_and_seed_reach_highs(method: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = highs_options(monkeypatch)
    result = solve(load_instance(path), method, workers=2, seed=5)
    assert result.verified
    assert ("threads", 2) in seen and ("random_seed", 5) in seen
    assert ("log_to_console", False) in seen  # no --verbose: HiGHS stays quiet


def test_seed_and_verbose_reach_cp_sat(monkeypatch: pytest.MonkeyPatch) -> None:
    from ortools.sat.python import cp_model

    seen: list[tuple[int, int, bool]] = []
    original = cp_model.CpSolver.solve

    def record(self: cp_model.CpSolver, model: cp_model.CpModel, *args: object) -> object:
        seen.append((self.parameters.num_workers, self.parameters.random_seed, self.parameters.log_search_progress))
        return original(self, model, *args)

    monkeypatch.setattr(cp_model.CpSolver, "solve", record)
    instance = load_instance(TWO_JOBS)
    assert solve(instance, "spacetime-cp", workers=1, seed=11, verbose=True, objective="makespan").verified
    assert seen and seen[0] == (1, 11, True)


@pytest.mark.parametrize("option", ["workers", "seed"])
def test_backends_that_take_no_threads_or_seed_refuse_them(option: str) -> None:
    instance = load_instance(FIG1)
    for backend in ("ortools", "cbc"):
        with pytest.raises(OptionError, match="use --backend highs") as caught:
            solve(instance, "drfh", backend=backend, **{option: 2})
        assert caught.value.option == option


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairpack", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, check=False)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "log"),
    [
        (["--method", "spacetime"], "Running HiGHS"),
        (["--method", "spacetime-cp"], "Starting CP-SAT solver"),
    ],
)
def test_verbose_streams_the_solvers_log_to_stderr(args: list[str], log: str) -> None:
    quiet = run_cli("solve", str(TWO_JOBS), *args, "--json")
    loud = run_cli("solve", str(TWO_JOBS), *args, "--json", "--verbose")
    assert quiet.returncode == loud.returncode == 0, loud.stderr
    assert log not in quiet.stderr and log in loud.stderr
    assert json.loads(loud.stdout)["verified"] is True  # stdout holds exactly the one JSON object


def test_verbose_tells_drfh_ints_level_search() -> None:
    done = run_cli("solve", str(CAPS), "--method", "drfh-int", "--verbose", "--json")
    assert done.returncode == 0, done.stderr
    assert "drfh-int: max-min search optimal: f = 0.375" in done.stderr
    assert json.loads(done.stdout)["objective"] == pytest.approx(0.375)


def test_progress_lines_are_rate_limited(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([100.0, 101.0, 104.5, 105.0, 108.0])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    stream = io.StringIO()
    watch = progress.Progress(stream, every=3.0)  # started at 100
    printed = [watch.report("x", 1.0, 2.0) for _ in range(4)]  # at 101, 104.5, 105, 108
    assert printed == [False, True, False, True]
    assert stream.getvalue().splitlines()[0].endswith("x: incumbent 1, bound 2")


@pytest.mark.parametrize(
    ("method", "path", "source"),
    [("spacetime-cp", TWO_JOBS, "spacetime-cp"), ("spacetime", TWO_JOBS, "highs MIP"), ("drfh-int", CAPS, "drfh-int")],
)
def test_a_solve_reports_incumbent_and_bound(method: str, path: Path, source: str) -> None:
    stream = io.StringIO()
    with progress.reporting(stream, every=0.0):
        assert solve(load_instance(path), method, workers=1).verified
    lines = [line for line in stream.getvalue().splitlines() if f"{source}: incumbent" in line]
    assert lines, stream.getvalue()
    assert "bound" in lines[-1]
    with progress.reporting(io.StringIO(), every=0.0):
        pass
    assert progress.active() is None  # off again outside the block: library calls stay silent


def test_thread_counts_may_change_between_solves() -> None:
    """HiGHS starts one task scheduler per process; another --workers later must still solve, not fail."""
    instance = load_instance(TWO_JOBS)
    for workers in (2, 1, 3, None):
        result = solve(instance, "spacetime", workers=workers)
        assert result.status == "optimal" and result.verified, (workers, result.message)
