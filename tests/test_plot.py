"""``fairpack solve --plot``: the resource-time profile of a DAG-job schedule is written as a PNG."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from models.generators import random_dag_jobs
from solver.cli import main

ROOT = Path(__file__).resolve().parents[1]
TWO_JOBS = ROOT / "instances" / "dag_two_jobs.yaml"
FIG1 = ROOT / "instances" / "drfh_fig1.yaml"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_plot_written_as_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "profile.png"
    assert main(["solve", str(TWO_JOBS), "--method", "carbyne", "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert out.stat().st_size > 1000


def test_plot_of_exact_method(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "cp.png"
    assert main(["solve", str(TWO_JOBS), "--method", "spacetime-cp", "--time-limit", "10", "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_usage_profile_stays_within_capacity() -> None:
    from solver.api import solve
    from solver.plot import usage_profile

    instance = random_dag_jobs(3, jobs=3, stages_range=(2, 3))
    result = solve(instance, "tetris")
    assert result.schedule is not None
    times, usage = usage_profile(instance, result.schedule)
    assert usage.shape == (3, times.size - 1, len(instance.resources))
    assert np.all(usage >= -1e-9)
    assert np.all(usage.sum(axis=0) <= instance.total_capacity + 1e-9)
    # Resource-time area equals the sum over tasks of duration x demand.
    area = (usage.sum(axis=0) * np.diff(times)[:, None]).sum(axis=0)
    work = sum(s.tasks * s.duration * s.demand for job in instance.jobs for s in job.stages)
    assert np.allclose(area, work)


def test_allocation_plot_is_per_server_bars(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "fig1.png"
    assert main(["solve", str(FIG1), "--method", "drfh", "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_hierarchy_plot_draws_the_tree(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "tree.png"
    assert main(["solve", str(ROOT / "instances" / "hdrf_fig4.yaml"), "--method", "hdrf", "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_per_machine_schedule_adds_a_gantt_lane_per_machine(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.image import imread

    pooled, placed = tmp_path / "pooled.png", tmp_path / "placed.png"
    assert main(["solve", str(TWO_JOBS), "--method", "sjf", "--plot", str(pooled)]) == 0
    assert main(["solve", str(TWO_JOBS), "--method", "sjf", "--placement", "servers", "--plot", str(placed)]) == 0
    assert imread(placed).shape[0] > imread(pooled).shape[0]  # the Gantt chart adds a panel below


def test_plot_without_matplotlib(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    out = tmp_path / "none.png"
    assert main(["solve", str(TWO_JOBS), "--method", "sjf", "--plot", str(out)]) == 2
    assert "install fairpack[bench] for --plot" in capsys.readouterr().err
    assert not out.exists()
