"""``fairpack solve --plot``: the resource-time profile of a DAG-job schedule is written as a PNG."""

from __future__ import annotations

import builtins
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from fairpack.models.generators import random_dag_jobs
from fairpack.models.io import instance_from_dict, load_instance
from fairpack.solver.cli import main

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
    from fairpack.solver.api import solve
    from fairpack.solver.plot import usage_profile

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
    assert 'pip install "fairpack[plot]"' in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("command", ["solve", "simulate"])
def test_plot_without_the_plot_extra_is_refused_before_solving(command: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    import fairpack.solver.api
    import fairpack.solver.extras

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("solved although --plot cannot be honoured")

    monkeypatch.setattr(fairpack.solver.extras, "missing", lambda extra: ["matplotlib"] if extra == "plot" else [])
    monkeypatch.setattr(fairpack.solver.api, "solve", never)
    monkeypatch.setattr(fairpack.solver.api, "simulate", never)
    method = ["--method", "sjf"] if command == "solve" else ["--policy", "sjf"]
    assert main([command, str(TWO_JOBS), *method, "--plot", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "--plot needs matplotlib" in err and 'pip install "fairpack[plot]"' in err


# --- what each picture draws (inspected on the figure, not only on the PNG) -----------------------------

THREE_MACHINES = """
name: three-machines
resources: [cpu, mem]
servers:
  - {name: big, capacity: {cpu: 4, mem: 8}, count: 2}
  - {name: small, capacity: {cpu: 2, mem: 2}}
jobs:
  - name: a
    stages:
      - {name: s0, tasks: 4, duration: 2, demand: {cpu: 2, mem: 1}}
      - {name: s1, tasks: 1, duration: 1, demand: {cpu: 4, mem: 4}, after: [s0]}
  - name: b
    release: 1
    stages:
      - {name: s0, tasks: 3, duration: 1, demand: {cpu: 1, mem: 1}}
"""


def _legend_labels(axis: Any) -> list[str]:
    legend = axis.get_legend()
    return [] if legend is None else [text.get_text() for text in legend.get_texts()]


def test_gantt_has_one_lane_per_machine_and_each_task_in_its_lane() -> None:
    pytest.importorskip("matplotlib")
    from fairpack.solver.api import solve
    from fairpack.solver.plot import schedule_figure

    instance = instance_from_dict(yaml.safe_load(THREE_MACHINES))
    result = solve(instance, "sjf", placement="servers")
    schedule = result.schedule
    assert schedule is not None and schedule.machine is not None and schedule.server is not None
    figure = schedule_figure(instance, result)
    gantt = figure.axes[-1]
    assert gantt.get_ylabel() == "machine"
    names = instance.machine_names()
    assert [label.get_text() for label in gantt.get_yticklabels()] == names == ["big[0]", "big[1]", "small"]
    assert len(gantt.collections) == len(schedule)  # one bar per task
    first = np.concatenate([[0], np.cumsum(instance.counts)[:-1]])
    lanes = Counter((first[schedule.server] + schedule.machine).tolist())
    assert len(lanes) > 1  # the tasks use more than one machine
    spans = [bar.get_paths()[0].vertices[:, 1] for bar in gantt.collections]
    # Every bar lies inside one lane (its machine's row, +-0.4), and each machine has as many bars as tasks.
    assert all(round(y.min()) == round(y.max()) for y in spans)
    assert Counter(round(float(y.mean())) for y in spans) == lanes


def test_schedule_legend_names_only_what_is_drawn() -> None:
    pytest.importorskip("matplotlib")
    import dataclasses

    from fairpack.solver.api import solve
    from fairpack.solver.plot import schedule_figure

    instance = load_instance(TWO_JOBS)
    result = solve(instance, "carbyne")
    assert result.schedule is not None
    labels = _legend_labels(schedule_figure(instance, result).axes[0])
    assert labels == ["long", "short", "capacity (pooled)", "fair completion T_k"]
    # Without fair completion times there are no T_k marks, so the legend does not name them.
    bare = dataclasses.replace(result, schedule=dataclasses.replace(result.schedule, fair_completion=None))
    assert _legend_labels(schedule_figure(instance, bare).axes[0]) == ["long", "short", "capacity (pooled)"]


def test_allocation_bars_per_server_and_legend_only_tenants_with_tasks() -> None:
    pytest.importorskip("matplotlib")
    from fairpack.models.types import Instance, ServerClass, Tenant
    from fairpack.solver.api import solve
    from fairpack.solver.plot import allocation_figure

    servers = (ServerClass("s1", np.array([4.0, 8.0, 0.0]), 1), ServerClass("s2", np.array([8.0, 4.0, 0.0]), 1))
    tenants = (Tenant("cpu-heavy", np.array([2.0, 1.0, 0.0])), Tenant("mem-heavy", np.array([1.0, 2.0, 0.0])),
               Tenant("wants-gpu", np.array([1.0, 1.0, 1.0])))  # fmt: skip
    instance = Instance(("cpu", "mem", "gpu"), servers, tenants)
    result = solve(instance, "drfh")
    figure = allocation_figure(instance, result)
    panels = [axis for axis in figure.axes if axis.get_title() in instance.resources]
    assert [axis.get_title() for axis in panels] == ["cpu", "mem", "gpu"]
    assert sorted(label.get_text() for label in panels[0].get_xticklabels()) == ["s1", "s2"]  # one bar per server
    # Two tenants run; the one that needs a GPU (no server has one) holds nothing and is not in the legend.
    assert _legend_labels(figure.axes[-1]) == ["cpu-heavy", "mem-heavy"]
    # Stacked shares of one server never exceed its capacity.
    heights: dict[float, float] = {}
    for patch in panels[0].patches:
        heights[patch.get_x()] = heights.get(patch.get_x(), 0.0) + patch.get_height()
    assert max(heights.values()) <= 1 + 1e-9


@pytest.mark.parametrize(("method", "expected"), [("hdrf", ["share >= guarantee"]),
                                                  ("collapsed", ["share >= guarantee", "share below guarantee"])])
def test_hierarchy_tree_shows_guarantees_and_shares(method: str, expected: list[str]) -> None:
    pytest.importorskip("matplotlib")
    from fairpack.solver.api import solve
    from fairpack.solver.plot import hierarchy_figure

    instance = load_instance(ROOT / "instances" / "hdrf_fig4.yaml")
    result = solve(instance, method)
    axis = hierarchy_figure(instance, result).axes[0]
    boxes = [text.get_text() for text in axis.texts]
    assert len(boxes) == len(instance.hierarchy.nodes)  # type: ignore[union-attr]
    assert any(box.startswith("n2\n") and "guar. 0.500" in box and "share 0.333" in box for box in boxes) == (
        method == "collapsed")
    assert all("guar." in box and "share" in box for box in boxes)
    assert _legend_labels(axis) == expected


@pytest.mark.parametrize(("target", "reason"), [("missing/folder/x.png", "does not exist"), ("x.txt", "ending in")])
def test_plot_that_cannot_be_written_is_refused_before_solving(target: str, reason: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    pytest.importorskip("matplotlib")
    import fairpack.solver.api

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("solved although --plot cannot be written")

    monkeypatch.setattr(fairpack.solver.api, "solve", never)
    assert main(["solve", str(TWO_JOBS), "--method", "sjf", "--plot", str(tmp_path / target)]) == 2
    err = capsys.readouterr().err
    assert "--plot" in err and reason in err
