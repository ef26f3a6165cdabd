"""The reproductions of the fuzz campaign and the reliability audit (the shared folder's ``repro/``, beside the
repository; skipped when it is absent), each run as a user runs it: every call ends with a verified answer
(exit 0) or a clean refusal naming the file and the field (exit 2), never an internal error, and a call with a
time limit returns. A hang guard (the subprocess timeout, far above the limit) fails a call that does not
stop; how long a call takes is not asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Seconds before a call counts as hung (its own limit is 5).
HANG_GUARD_S = 300


@pytest.fixture(scope="module")
def repro() -> Path:
    configured = os.environ.get("FAIRPACK_REPRO_DIR")
    folder = Path(configured) if configured else ROOT.parent / "shared" / "repro"
    if not folder.is_dir():
        pytest.skip(f"reproductions not found: {folder}")
    return folder


def _fairpack(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairpack", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=HANG_GUARD_S, check=False)  # fmt: skip


def _clean(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr


#: (file, command and options, exit code, what stderr names on exit 2)
CASES = [
    ("hdrf_indexerror.json", ["solve", "--method", "naive-hdrf"], 2, "servers[0].capacity.gpu"),
    ("hdrf_indexerror.json", ["simulate", "--policy", "naive-hdrf"], 2, "servers[0].capacity.gpu"),
    ("inf_overflow.yaml", ["solve", "--method", "tetris"], 2, "demand.R1"),
    ("inf_overflow.yaml", ["solve", "--method", "spacetime-cp", "--time-limit", "5"], 2, "demand.R1"),
    ("inf_overflow.yaml", ["simulate", "--policy", "monolithic"], 2, "demand.R1"),
    ("huge_stage_memoryerror.yaml", ["solve", "--method", "sjf", "--time-limit", "5"], 2, "stages[a].tasks"),
    ("huge_stage_memoryerror.yaml", ["solve", "--method", "drf-strict", "--time-limit", "5"], 2, "stages[a].tasks"),
    ("huge_stage_memoryerror.yaml", ["simulate", "--policy", "drf-strict", "--time-limit", "5"], 2, "tasks"),
    ("backlog_no_time_limit.yaml", ["simulate", "--policy", "first-fit", "--time-limit", "5", "--json"], 0, ""),
    ("locality_cp_over_limit.yaml", ["solve", "--method", "locality-cp", "--time-limit", "5"], 2, "servers"),
]


@pytest.mark.parametrize(("name", "command", "code", "field"), CASES,
                         ids=[f"{name}-{' '.join(command[:3])}" for name, command, _, _ in CASES])  # fmt: skip
def test_each_reproduction_answers_or_refuses_cleanly(repro: Path, tmp_path: Path, name: str, command: list[str],
                                                      code: int, field: str) -> None:  # fmt: skip
    path = repro / name
    if not path.is_file():
        pytest.skip(f"{name} is not among the reproductions")
    done = _fairpack(command[0], str(path), *command[1:], cwd=tmp_path)
    _clean(done)
    assert done.returncode == code, (done.returncode, done.stderr)
    if code == 2:
        assert name in done.stderr and field in done.stderr, done.stderr
    if "--json" in command:
        data = json.loads(done.stdout)
        assert data["verified"] is True and data["status"] in ("time_limit", "feasible"), data["status"]
