"""Shared pytest fixtures and options.

``--backends highs,cbc`` limits the backend-parametrised tests to those LP backends (default: every
installed one). A test asks for ``lp_backend`` (one LP backend per run) or ``lp_algorithm`` (one
``(backend, algorithm)`` pair per run) and is generated once per backend, so a failure names its backend
in the test id (``test_fig1_drfh_int[cbc]``), as cvxpy's and PyJobShop's test suites do.

``tick_clock`` replaces ``time.perf_counter`` with a clock that advances at every read (``tests/work.py``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from work import TickClock

from fairpack.solver.backends import ALGORITHMS, LP_BACKENDS, installed

# No test asserts how long anything takes (tests/test_suite_rules.py): hypothesis's per-example deadline
# (200 ms by default) would be such an assertion, so it is off for every property test, set or not.
settings.register_profile("fairpack", deadline=None)
settings.load_profile("fairpack")

#: The shared data folder (../shared/data next to the repository), unless FAIRPACK_DATA_DIR says otherwise.
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backends", default="all",
                     help="comma-separated LP backends to run backend tests on (default: all installed)")  # fmt: skip


def selected_backends(config: pytest.Config) -> list[str]:
    """The LP backends chosen with ``--backends`` that are installed here."""
    wanted = str(config.getoption("--backends"))
    names = list(LP_BACKENDS) if wanted == "all" else [name.strip() for name in wanted.split(",") if name.strip()]
    unknown = sorted(set(names) - set(LP_BACKENDS))
    if unknown:
        raise pytest.UsageError(f"--backends: unknown {unknown}; choose from {', '.join(LP_BACKENDS)}")
    present = installed()
    return [name for name in names if name in present]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    backends = selected_backends(metafunc.config)
    if "lp_backend" in metafunc.fixturenames:
        metafunc.parametrize("lp_backend", backends, ids=backends)
    if "lp_algorithm" in metafunc.fixturenames:
        pairs = [(name, algorithm) for name in backends for algorithm in ALGORITHMS[name]]
        metafunc.parametrize("lp_algorithm", pairs, ids=[f"{name}-{algorithm}" for name, algorithm in pairs])


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The external data folder (google/, alibaba/, psplib/, tpch/); skips the test when it is absent."""
    configured = os.environ.get("FAIRPACK_DATA_DIR")
    path = Path(configured).expanduser() if configured else DEFAULT_DATA_DIR
    if not path.is_dir():
        pytest.skip(f"shared data folder not found: {path} (set FAIRPACK_DATA_DIR)")
    return path


@pytest.fixture
def tick_clock(monkeypatch: pytest.MonkeyPatch) -> Callable[..., TickClock]:
    """``tick_clock(step=...)`` installs a :class:`work.TickClock` as ``time.perf_counter`` for the test: time
    then passes by clock reads, so a time limit runs out at the same point of a computation on every machine."""

    def install(step: float = 1e-3) -> TickClock:
        clock = TickClock(step)
        monkeypatch.setattr(time, "perf_counter", clock)
        return clock

    return install


@pytest.fixture(autouse=True)
def _sigint_left_as_found() -> Any:
    """A test that leaves SIGINT ignored (or handled by another function) in this worker process is named here, and
    the disposition put back: a child process inherits an ignored SIGINT, and then every Ctrl-C test that runs later
    in the same worker sees its command shrug off the signal."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    yield
    after = signal.getsignal(signal.SIGINT)
    if after is not before and after != before:
        signal.signal(signal.SIGINT, before if before is not None else signal.default_int_handler)
        pytest.fail(f"the test left SIGINT's handler as {after!r} (it was {before!r})")
