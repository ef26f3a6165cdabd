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
    # The reliability audit's (sim_and_traces/): traces through the loader's checks, named by file, row and column
    *((f"sim_and_traces/{cluster}", ["simulate", "--policy", "fifo", "--trace", f"{{repro}}/sim_and_traces/{trace}"],
       2, named) for cluster, trace, named in (
        ("trace_cluster.yaml", "trace_tasks_1e12.csv", "row 3.tasks"),
        ("trace_cluster.yaml", "trace_tasks_1e18.csv", "row 3.tasks"),
        ("trace_cluster.yaml", "trace_deadline_abc_second_row.csv", "row 4.deadline"),
        ("trace_cluster.yaml", "trace_duplicate_column.csv", "header"),
        ("trace_cluster.yaml", "trace_cpu_64.csv", "row 17.demand"),
        ("pods_cluster.yaml", "pods_no_rows.csv", "rows"))),
    ("sim_and_traces/trace_cluster.yaml", ["simulate", "--policy", "fifo", "--json", "--trace",
                                           "{repro}/sim_and_traces/trace_base.csv"], 0, ""),
    # ... accepted input that ended in internal errors, and the methods that could not hold it
    ("sim_and_traces/blocks_and_options.yaml", ["solve", "--method", "spacetime", "--objective", "utility",
                                                "--no-fair-cap", "--time-limit", "5"], 2, "input"),
    ("sim_and_traces/deadline_1e-9.yaml", ["simulate", "--policy", "tetrisched", "--json", "--time-limit", "5"], 0, ""),
    ("sim_and_traces/deadline_1e-9.yaml", ["solve", "--method", "spacetime", "--objective", "utility", "--no-fair-cap",
                                           "--json", "--time-limit", "5"], 0, ""),
    *((f"sim_and_traces/{name}", args, 2, field) for name, field in (
        ("gpu_capacity_1e-320.json", "servers[0].capacity.gpu"),
        ("demand_1e-320_duration_1e12.yaml", "demand.R1")) for args in (
        ["solve", "--method", "naive-hdrf"] if name.startswith("gpu") else ["solve", "--method", "tetris"],
        ["simulate", "--policy", "naive-hdrf"] if name.startswith("gpu") else ["simulate", "--policy", "monolithic"],
        ["solve", "--method", "hdrf"] if name.startswith("gpu") else ["solve", "--method", "spacetime-cp"])),
    *(("sim_and_traces/stage_tasks_1e9.yaml", ["solve", "--method", method, "--time-limit", "5"], 2, "tasks")
      for method in ("carbyne", "sjf", "drf-strict")),
    # ... and time limits that were not bounds
    ("sim_and_traces/locality_cp_1e6_machines.yaml", ["solve", "--method", "locality-cp", "--time-limit", "5"], 2,
     "servers"),
    ("sim_and_traces/features_all.yaml", ["solve", "--method", "spacetime", "--time-limit", "5"], 2, "input"),
    ("sim_and_traces/features_all.yaml", ["solve", "--method", "spacetime-cp", "--json", "--time-limit", "5"], 0, ""),
]


@pytest.mark.parametrize(("name", "command", "code", "field"), CASES,
                         ids=[f"{name}-{' '.join(command[:3])}" for name, command, _, _ in CASES])  # fmt: skip
def test_each_reproduction_answers_or_refuses_cleanly(repro: Path, tmp_path: Path, name: str, command: list[str],
                                                      code: int, field: str) -> None:  # fmt: skip
    path = repro / name
    if not path.is_file():
        pytest.skip(f"{name} is not among the reproductions")
    done = _fairpack(command[0], str(path), *(arg.replace("{repro}", str(repro)) for arg in command[1:]),
                     cwd=tmp_path)  # fmt: skip
    _clean(done)
    assert done.returncode == code, (done.returncode, done.stderr)
    if code == 2:
        trace = next((arg for arg in command if arg.startswith("{repro}")), None)
        named = Path(trace).name if trace is not None else Path(name).name
        assert named in done.stderr and field in done.stderr, done.stderr
    if "--json" in command:
        data = json.loads(done.stdout)
        assert data["verified"] is True and data["status"] in ("time_limit", "feasible", "optimal"), data["status"]
