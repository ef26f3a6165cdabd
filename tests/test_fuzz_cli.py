"""The command line on mutated inputs: ``solve`` and ``simulate`` under a time limit, on files and on traces.

Every call ends with exit 0 (an answer), 1 (a solver failure, said so) or 2 (bad input or an option the method
cannot honour, naming the file), never with a traceback or an "internal error". A hang guard (``signal.alarm``,
far above the time limit) turns a call that does not stop into a failure naming it instead of a stuck suite;
how long a call takes is not asserted (``benchmarks/fuzz_campaign.py`` counts the calls over their limit).
"""

from __future__ import annotations

import contextlib
import io
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fuzzing import mutate, seeds
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairpack.models.io import load_instance
from fairpack.models.types import InstanceError
from fairpack.solver.cli.main import main

#: Seconds a call may run before the hang guard fails the test (the calls ask for 2).
HANG_GUARD_S = 120
YAML_SEEDS = [seed for seed in seeds() if seed.suffix == ".yaml"]
#: A method and a policy for each kind of instance.
SOLVE = {"jobs": ["sjf", "carbyne", "spacetime-cp"], "hierarchy": ["hdrf", "naive-hdrf"], "flat": ["drfh", "best-fit"]}
SIMULATE = {"jobs": ["fifo", "carbyne", "tetris"], "hierarchy": ["dynamic-hdrf"], "flat": ["first-fit", "slots"]}

FUZZ = settings(derandomize=True, deadline=None, database=None, max_examples=60,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz_cli")


@contextlib.contextmanager
def hang_guard(call: list[str]) -> Iterator[None]:
    def stuck(signum: int, frame: Any) -> None:
        raise AssertionError(f"still running after {HANG_GUARD_S} s: fairpack {' '.join(call)}")

    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(HANG_GUARD_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_clean(call: list[str]) -> int:
    """Run ``fairpack call`` in this process; the contract on its exit code and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with hang_guard(call), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(call)
    text = err.getvalue()
    assert code in (0, 1, 2), (call, code, text)
    assert "Traceback" not in text and "internal error" not in text, (call, text)
    if code == 2:  # the file at fault (the instance or the trace) or the option is named
        options = [arg.lstrip("-") + ":" for arg in call if arg.startswith("--")]
        named = [arg for arg in call if "/" in arg] + ["<stdin>", *options, "--"]
        assert any(name in text for name in named), (call, text)
    return code


def _kind(path: Path) -> str | None:
    try:
        instance = load_instance(path)
    except InstanceError:
        return None
    return "jobs" if instance.jobs else "hierarchy" if instance.hierarchy is not None else "flat"


@FUZZ
@given(st.sampled_from(YAML_SEEDS), st.data())
def test_solve_and_simulate_on_mutated_instances_end_cleanly(folder: Path, seed: Any, data: st.DataObject) -> None:
    mutated, suffix = mutate(seed, lambda n: data.draw(st.integers(0, n - 1)))
    path = folder / f"fuzzed{suffix}"
    path.write_bytes(mutated)
    kind = _kind(path)
    if kind is None:  # the loader refused it: the CLI must say so, exit 2
        assert run_clean(["validate", str(path)]) == 2
        return
    method = data.draw(st.sampled_from(SOLVE[kind]))
    policy = data.draw(st.sampled_from(SIMULATE[kind]))
    run_clean(["solve", str(path), "--method", method, "--time-limit", "2"])
    run_clean(["simulate", str(path), "--policy", policy, "--time-limit", "2"])


TRACE_CLUSTER = "resources: [cpu, mem]\nservers: [{name: m, capacity: {cpu: 4, mem: 8}, count: 3}]\n"
TRACE_HEADER = "arrival,duration,tenant,job,tasks,cpu,mem\n"


@st.composite
def traces(draw: st.DrawFn) -> str:
    """A trace table with rows that may hold anything a column can: huge, negative, missing, not numbers."""
    cell = st.one_of(st.integers(-5, 10), st.sampled_from(["1e300", "-1", "nan", "inf", "abc", "", "1e18", "0.5"]))
    rows = draw(st.lists(st.tuples(cell, cell, st.sampled_from(["a", "b", ""]), st.sampled_from(["j1", "j2", ""]),
                                   cell, cell, cell), min_size=0, max_size=6))  # fmt: skip
    return TRACE_HEADER + "".join(",".join(str(v) for v in row) + "\n" for row in rows)


@FUZZ
@given(traces(), st.sampled_from(["fifo", "carbyne", "first-fit"]))
def test_simulate_on_mutated_traces_ends_cleanly(folder: Path, trace: str, policy: str) -> None:
    cluster = folder / "cluster.yaml"
    cluster.write_text(TRACE_CLUSTER)
    table = folder / "trace.csv"
    table.write_text(trace)
    run_clean(["simulate", str(cluster), "--trace", str(table), "--policy", policy, "--time-limit", "2"])
