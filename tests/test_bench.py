"""The benchmark harness: sweep files, task expansion, local and Dask runs, limits, resumability, report."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairpack.models.generators.families import FAMILIES, SENSE
from fairpack.models.io import instance_to_dict
from fairpack.solver.bench import runner, warm
from fairpack.solver.bench.figures import BEGIN, END, carbyne_headline
from fairpack.solver.bench.figures import FILES as FIGURE_FILES
from fairpack.solver.bench.report import write_report
from fairpack.solver.bench.runner import STATUS_MEMORY, STATUS_TIMEOUT, run_sweep
from fairpack.solver.bench.sweep import NO_BACKEND, SweepError, load_sweep, parse_sweep
from fairpack.solver.bench.table import ResultTable, csv_path, read_results, with_gaps
from fairpack.solver.cli import main

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "benchmarks" / "sweeps" / "smoke.toml"
README = ROOT / "benchmarks" / "sweeps" / "readme.toml"
#: Columns that must agree between two runs of the same sweep (times and memory may not).
DETERMINISTIC = ["status", "verified", "objective", "bound", "gap", "reference_objective", "instance", "size",
                 "min_dominant_share", "min_share_guarantee", "guarantee_violations", "avg_jct", "makespan", "jain",
                 "late"]  # fmt: skip
#: Families whose exact reference optimises the reported objective, so no heuristic beats it (hierarchies: the
#: guarantee shortfall, 0 under static H-DRF).
OPTIMISED_KINDS = ("flat", "hierarchy", "jobs")


def write(folder: Path, text: str, name: str = "sweep.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


# --- sweep files ---------------------------------------------------------------------------------------

GOOD = """
name = "t"
seeds = [0, 1]
[[grid]]
name = "g"
family = "random-flat"
sizes = {tenants = [3, 4]}
methods = ["drfh", "first-fit", {method = "slots", label = "slots-3", slots = 3}]
backends = ["highs", "ortools"]
"""

BAD = [
    ("oops = 1\n" + GOOD, "oops", "unknown key"),
    (GOOD.replace('"random-flat"', '"nope"'), "grid[0].family", "unknown family"),
    (GOOD.replace('"first-fit"', '"frist-fit"'), "grid[0].methods[1]", "unknown method"),
    (GOOD.replace('"first-fit"', '"carbyne"'), "grid[0]", "solves jobs instances"),
    (GOOD.replace("tenants = [3, 4]", "tenant = [3, 4]"), "grid[0].sizes.tenant", "no size parameter"),
    (GOOD.replace("tenants = [3, 4]", 'tenants = ["3"]'), "grid[0].sizes.tenants", "expected int"),
    (GOOD.replace("slots = 3}", "slot = 3}"), "grid[0].methods[2].slot", "unknown key"),
    (GOOD.replace('"ortools"]', '"gurobi"]'), "grid[0]", "unknown backend"),
    (GOOD + 'reference = "first-fit"\n', "grid[0]", "must be an exact method"),
    (GOOD.replace('label = "slots-3", ', 'label = "drfh", '), "grid[0]", "labels repeat"),
    (GOOD + "time_limit = -1\n", "grid[0].time_limit", "positive number"),
    (GOOD + '[[grid]]\nname = "g"\nfamily = "random-flat"\nmethods = ["drfh"]\n', "grid", "grid names repeat"),
    (GOOD + 'options = {objective = "fastest"}\n', "grid[0].options", "objective must be one of"),
    ("seeds = [0]\n", "grid", "at least one [[grid]]"),
    ("[[grid]\n", "", "invalid TOML"),
]


@pytest.mark.parametrize(("text", "field", "reason"), BAD)
def test_sweep_errors_name_file_and_field(tmp_path: Path, text: str, field: str, reason: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SweepError) as caught:
        load_sweep(path)
    assert str(path) in str(caught.value)
    assert caught.value.field == field
    assert reason in caught.value.reason


def test_sweep_file_suffix_and_cli_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SweepError, match=r"ends in \.toml"):
        load_sweep(write(tmp_path, GOOD, "sweep.txt"))
    bad = write(tmp_path, GOOD.replace('"random-flat"', '"nope"'))
    assert main(["bench", "run", str(bad), "--out", str(tmp_path / "r.parquet")]) == 2
    assert "grid[0].family" in capsys.readouterr().err


def test_expansion_keys_backends_and_references(tmp_path: Path) -> None:
    sweep = load_sweep(write(tmp_path, GOOD))
    tasks, skipped = sweep.tasks()
    assert not skipped
    # 2 sizes x 2 seeds x (drfh on 2 backends + first-fit + slots-3, which use none)
    assert len(tasks) == 2 * 2 * 4
    assert len({t.key for t in tasks}) == len(tasks)
    keys = {t.key for t in tasks}
    for task in tasks:
        assert task.reference in keys
        assert task.reference.endswith("/drfh/highs")  # the first backend of the reference method
        assert task.reference.split("/seed=")[0] == task.key.split("/seed=")[0]  # same size ...
        assert task.reference.split("/")[3] == task.key.split("/")[3]  # ... and seed
        assert (task.backend == NO_BACKEND) == (task.method != "drfh")
    slots = [t for t in tasks if t.label == "slots-3"]
    assert slots and all(t.solve_kwargs()["slots"] == 3 and t.method == "slots" for t in slots)
    assert all(dict(t.params) == {"tenants": dict(t.params)["tenants"], "servers": 3, "resources": 2} for t in tasks)


def test_yaml_sweep_and_limits(tmp_path: Path) -> None:
    import tomllib
    import yaml

    data = tomllib.loads(GOOD)
    data["time_limit"] = 5
    data["grid"][0]["memory_mb"] = 512
    path = write(tmp_path, yaml.safe_dump(data), "sweep.yaml")
    grid = load_sweep(path).grids[0]
    assert grid.limits.time_limit == 5 and grid.limits.memory_mb == 512
    assert grid.limits.task_timeout == 2 * 5 + 60
    with pytest.raises(SweepError, match="grid"):
        parse_sweep({"grid": "nope"}, "inline")


def test_shipped_sweeps_are_valid() -> None:
    for path in (SMOKE, README):
        sweep = load_sweep(path)
        tasks, _ = sweep.tasks()
        assert tasks and len({t.key for t in tasks}) == len(tasks)
    families = {grid.family for grid in load_sweep(README).grids}
    assert {"google-like", "alibaba", "random-tree", "hdrf-fig10", "tpch"} <= families


def test_families_are_seeded_and_sized() -> None:
    for name in ("google-like", "random-flat", "random-tree", "hdrf-fig10", "dag-random"):
        family = FAMILIES[name]
        first, again = family.instance({}, 3), family.instance({}, 3)
        assert instance_to_dict(first) == instance_to_dict(again)  # deterministic for a seed
        assert family.size(first) > 0
        assert family.kind in SENSE


def test_data_families_skip_without_data(tmp_path: Path) -> None:
    sweep = parse_sweep({"grid": [{"name": "a", "family": "alibaba", "methods": ["drfh"]},
                                  {"name": "f", "family": "hdrf-fig10", "methods": ["hdrf"]}]}, "inline")  # fmt: skip
    tasks, skipped = sweep.tasks(tmp_path)  # an empty folder: no alibaba/
    assert [t.grid for t in tasks] == ["f"]
    assert len(skipped) == 1 and "alibaba" in skipped[0]


@pytest.mark.data
def test_data_families_build(data_dir: Path) -> None:
    for name, params in (("alibaba", {"tenants": 5}), ("google", {"tenants": 5, "machines": 50}),
                         ("tpch", {"queries": 2}), ("psplib", {"set": "j30"})):  # fmt: skip
        instance = FAMILIES[name].instance(params, 1, data_dir)
        assert FAMILIES[name].size(instance) > 0
    psplib = FAMILIES["psplib"]
    assert psplib.best_known is not None
    assert psplib.best_known(psplib.instance({"set": "j30"}, 0, data_dir), data_dir) == 43  # j301_1


# --- gaps ----------------------------------------------------------------------------------------------


def test_gap_signs() -> None:
    rows = [
        # maximised: reference 0.5; 0.4 is 20% worse; inf vs inf is equal; unverified gives no gap
        ("r", "max", 0.5, True, "r"), ("a", "max", 0.4, True, "r"), ("b", "max", 0.6, True, "r"),
        ("u", "max", 0.1, False, "r"),
        ("ri", "max", math.inf, True, "ri"), ("ai", "max", math.inf, True, "ri"), ("bi", "max", 2.0, True, "ri"),
        # minimised: reference 10; 12 is 20% worse
        ("m", "min", 10.0, True, "m"), ("c", "min", 12.0, True, "m"), ("n", "min", 3.0, True, None),
    ]  # fmt: skip
    frame = pd.DataFrame(rows, columns=["key", "sense", "objective", "verified", "reference_key"])
    frame["method"], frame["status"] = frame["key"], "optimal"
    gaps = with_gaps(frame).set_index("key")["gap"]
    expected = {"r": 0.0, "a": 0.2, "b": -0.2, "ri": 0.0, "ai": 0.0, "bi": 1.0, "m": 0.0, "c": 0.2}
    assert gaps[list(expected)].to_numpy() == pytest.approx(list(expected.values()))
    assert np.isnan(gaps["u"]) and np.isnan(gaps["n"])


# --- running -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke sweep run once through the CLI (two task processes)."""
    out = tmp_path_factory.mktemp("smoke") / "smoke.parquet"
    assert main(["bench", "run", str(SMOKE), "--out", str(out), "--workers", "2", "--no-progress"]) == 0
    return out


def test_local_run_rows(smoke_run: Path) -> None:
    frame = read_results(smoke_run)
    tasks, _ = load_sweep(SMOKE).tasks()
    assert sorted(frame["key"]) == sorted(t.key for t in tasks)
    assert frame["status"].isin(["optimal", "feasible"]).all(), frame.loc[~frame["verified"], ["key", "message"]]
    assert frame["verified"].all()
    assert (frame.loc[frame["exact"], "status"] == "optimal").all()
    heuristics = frame[~frame["exact"] & frame["kind"].isin(OPTIMISED_KINDS)]
    assert heuristics["gap"].notna().all()
    assert (heuristics["gap"] >= -1e-9).all(), heuristics.loc[heuristics["gap"] < -1e-9, ["key", "gap"]]
    assert (frame.loc[frame["exact"], "gap"].abs() <= 1e-9).all()  # the reference, and drfh on ortools
    flat, tree, jobs = (frame[frame["kind"] == kind] for kind in ("flat", "hierarchy", "jobs"))
    assert flat[["util_cpu", "util_mem", "min_dominant_share", "below_cap"]].notna().all().all()
    assert tree[["min_share_guarantee", "guarantee_violations"]].notna().all().all()
    # The hierarchy objective is the guarantee shortfall, max(0, 1 - min share/guarantee); static H-DRF's is 0.
    shortfall = (1 - tree["min_share_guarantee"]).clip(lower=0).where(lambda s: s > 1e-6, 0.0)
    assert np.allclose(tree["objective"], shortfall)
    assert (tree.loc[tree["exact"], "objective"] == 0).all()
    assert jobs[["avg_jct", "p95_jct", "makespan", "jain", "late"]].notna().all().all()
    assert (jobs["objective"] == jobs["avg_jct"]).all()  # the sweep asks for avg JCT
    assert (frame["peak_rss_mb"] > 0).all() and (frame["wall_s"] > 0).all()
    assert (frame["load_1m"] >= 0).all()  # the machine's load beside every timing
    assert len(pd.read_csv(csv_path(smoke_run))) == len(frame)


def test_rerun_does_no_work(smoke_run: Path) -> None:
    before = read_results(smoke_run)
    summary = run_sweep(load_sweep(SMOKE), smoke_run, workers=2, progress=False)
    assert summary.executed == 0 and summary.skipped == summary.tasks == len(before)
    pd.testing.assert_frame_equal(read_results(smoke_run), before)



def test_a_table_saves_to_the_same_bytes_whatever_order_its_rows_came_in(smoke_run: Path, tmp_path: Path) -> None:
    # `make figures` must leave the committed tables byte-identical when nothing is rerun.
    rows = read_results(smoke_run).to_dict("records")
    rows += [{**rows[0], "key": f"{rows[0]['key']}/twin"}]  # the same grid, size, seed, method and backend
    saved = []
    for name, ordered in (("forward", rows), ("backward", rows[::-1])):
        table = ResultTable(tmp_path / f"{name}.parquet")
        for row in ordered:
            table.add(row)
        table.save()
        saved.append(csv_path(table.path).read_bytes())
    assert saved[0] == saved[1]


LIMITS = """
name = "limits"
seeds = [0]
[[grid]]
name = "slow"
family = "dag-random"
sizes = {jobs = 5, min_stages = 3, max_stages = 4}
methods = ["spacetime-cp"]
time_limit = 30
task_timeout = 0.5
[[grid]]
name = "greedy"
family = "random-flat"
methods = ["first-fit"]
memory_mb = 1
[[grid]]
name = "fine"
family = "random-flat"
methods = ["drfh"]
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="memory is watched through /proc (Linux)")
@pytest.mark.parametrize("start", ["forkserver", "warm"])
def test_task_limits_are_recorded_and_the_sweep_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        start: str) -> None:  # fmt: skip
    # "warm": tasks forked by a warm interpreter, as on a daemonic Dask worker, under the same limits.
    if start == "warm":
        forked: list[int] = []

        def from_warm(args: tuple[str, str, str]) -> warm.WarmChild:
            child = warm.WarmChild(args)
            forked.append(child.pid or 0)
            return child

        monkeypatch.setattr(runner, "_start", from_warm)
    out = tmp_path / "limits.parquet"
    summary = run_sweep(load_sweep(write(tmp_path, LIMITS)), out, workers=2, progress=False)
    assert summary.executed == 3 and summary.failed == 2
    rows = read_results(out).set_index("grid")
    # The supervisor's own record: it killed the task at its 0.5 s timeout (the solve had 30 s), so no result.
    slow = rows.loc["slow"]
    assert slow["status"] == STATUS_TIMEOUT and "killed after the task timeout of 0.5 s" in slow["message"]
    assert rows.loc["greedy", "status"] == STATUS_MEMORY
    assert rows.loc["fine", "status"] == "optimal" and rows.loc["fine", "verified"]
    if start == "warm":  # three tasks, three forks of one warm process, none of them left behind
        assert len(set(forked)) == 3 and all(pid > 0 for pid in forked)
        assert not any(Path(f"/proc/{pid}").exists() and warm._start_time(pid) is not None for pid in forked)
    assert not rows.loc["slow", "verified"] and np.isnan(rows.loc["slow", "gap"])


DASK = """
name = "dask"
seeds = [1]
[[grid]]
name = "flat"
family = "random-flat"
methods = ["drfh", "best-fit"]
[[grid]]
name = "tree"
family = "random-tree"
sizes = {leaves = 5, depth = 2}
methods = ["hdrf", "collapsed"]
"""


def test_dask_local_cluster_matches_local_run(tmp_path: Path) -> None:
    distributed = pytest.importorskip("dask.distributed")
    sweep = load_sweep(write(tmp_path, DASK))
    run_sweep(sweep, tmp_path / "local.parquet", workers=2, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        summary = run_sweep(sweep, tmp_path / "dask.parquet", scheduler=cluster.scheduler_address, progress=False)
    assert summary.executed == summary.tasks == 4
    local = read_results(tmp_path / "local.parquet").set_index("key").sort_index()
    remote = read_results(tmp_path / "dask.parquet").set_index("key").sort_index()
    assert list(local.index) == list(remote.index)
    columns = [c for c in DETERMINISTIC if c in local.columns]
    pd.testing.assert_frame_equal(local[columns], remote[columns])
    assert remote["verified"].all()


def test_results_table_wants_parquet(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="parquet"):
        ResultTable(tmp_path / "results.csv")


# --- report --------------------------------------------------------------------------------------------


def test_report(smoke_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    assert main(["bench", "report", str(smoke_run), "--out", str(out)]) == 0
    markdown = (out / "report.md").read_text()
    for method in read_results(smoke_run)["method"].unique():
        assert f"`{method}`" in markdown
    for name in ("gap_cdf.png", "scaling.png", "tradeoff.png"):
        assert (out / name).stat().st_size > 10_000
        assert f"({name})" in markdown
    assert "exponent" in markdown and "all rows verified" in markdown
    empty = tmp_path / "empty.parquet"
    ResultTable(empty).save()
    assert "no rows" in write_report(empty, tmp_path / "empty").read_text()


# --- README figures ------------------------------------------------------------------------------------


def test_figures_fill_the_readme_block(smoke_run: Path, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n\nbefore\n\n{BEGIN}\nstale text\n{END}\n\nafter\n")
    out = tmp_path / "figures"
    assert main(["bench", "figures", str(smoke_run), "--out", str(out), "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("# title\n\nbefore\n\n") and text.endswith(f"{END}\n\nafter\n")
    assert "stale text" not in text
    for number, name in enumerate(FIGURE_FILES.values(), 1):
        assert f"### Figure {number}." in text
        assert (out / name).stat().st_size > 10_000
        assert f"(figures/{name})" in text  # relative to the README
        assert f"({name})" in (out / "figures.md").read_text()  # relative to figures.md
    frame = read_results(smoke_run)
    assert f"{len(frame)} rows" in text
    # Figure 1's ratio for the exact method is 1 and its slot rows are named by their slot count.
    assert "| `drfh` | 1 | 1 |" in text and "`slots (k=10)`" in text
    # A second run over the same table writes the same README (idempotent splice).
    assert main(["bench", "figures", str(smoke_run), "--out", str(out), "--readme", str(readme)]) == 0
    assert readme.read_text() == text
    readme.write_text("no markers\n")
    assert main(["bench", "figures", str(smoke_run), "--out", str(out), "--readme", str(readme)]) == 2


def test_carbyne_headline_by_hand() -> None:
    # Two instances: DRF's avg JCT 12 and 9 against Carbyne's 10 and 10 -> ratios 1.2 and 0.9, geometric
    # mean sqrt(1.08); makespans 20/25 and 30/30; Jain 0.9 vs 0.85 and 0.8 vs 0.82.
    rows = [("a", "drf-dag", 12.0, 20.0, 0.90), ("a", "carbyne", 10.0, 25.0, 0.85),
            ("b", "drf-dag", 9.0, 30.0, 0.80), ("b", "carbyne", 10.0, 30.0, 0.82)]  # fmt: skip
    jobs = pd.DataFrame(rows, columns=["instance_key", "method", "avg_jct", "makespan", "jain"])
    numbers = carbyne_headline(jobs)
    assert numbers["instances"] == 2 and numbers["carbyne_better_jct"] == 1
    assert numbers["jct"] == pytest.approx(math.sqrt(1.2 * 0.9))
    assert numbers["makespan"] == pytest.approx(math.sqrt(0.8 * 1.0))
    assert numbers["jain_drop_mean"] == pytest.approx((0.05 - 0.02) / 2)
    assert numbers["jain_drop_worst"] == pytest.approx(0.05)


def test_online_policies_run_in_a_sweep_against_the_clairvoyant_yardstick() -> None:
    from fairpack.solver.bench.task import run_task

    sweep = parse_sweep({"name": "online", "time_limit": 20, "grid": [{
        "name": "g", "family": "arrivals",
        "sizes": {"tenants": 2, "machines": 2, "horizon": 3.0, "mean_duration": 3.0},
        "methods": ["spacetime-cp", "online:fifo", "online:slots"], "reference": "spacetime-cp",
        "options": {"objective": "avg-jct", "placement": "servers"}}]})  # fmt: skip
    tasks, _ = sweep.tasks()
    frame = with_gaps(pd.DataFrame([run_task(task) for task in tasks])).set_index("method")
    assert frame["verified"].all()
    assert frame.loc["spacetime-cp", "status"] == "optimal"
    for policy in ("online:fifo", "online:slots"):
        assert frame.loc[policy, "exact"] == False  # noqa: E712 (a numpy bool)
        assert frame.loc[policy, "gap"] >= 0  # nothing online beats the proven clairvoyant optimum
        assert frame.loc[policy, "bound_gap"] >= frame.loc[policy, "gap"]
    with pytest.raises(SweepError, match="online:bogus"):
        parse_sweep({"grid": [{"name": "g", "family": "arrivals", "sizes": {"tenants": 2},
                               "methods": ["online:bogus"]}]})  # fmt: skip


def test_the_delay_scheduling_sweep_runs_against_the_locality_yardstick() -> None:
    """``benchmarks/sweeps/delay.toml``, shrunk to one tiny instance: fifo, fair and delay replay its arrivals
    (the locality policies were refused by the grid check, their family being ``locality``, not ``online``)
    and each gets its gap to the proven optimum of ``spacetime-cp`` per machine without fair caps, never negative;
    the independent ``locality-cp`` model proves the same optimum (gap 0)."""
    from dataclasses import replace

    from fairpack.solver.bench.sweep import Sweep
    from fairpack.solver.bench.task import run_task

    sweep = load_sweep(ROOT / "benchmarks" / "sweeps" / "delay.toml")
    grid = sweep.grids[0]
    assert grid.reference == "spacetime-cp" and {"online:fifo", "online:fair", "online:delay-D2"} <= {
        m.label for m in grid.methods}  # fmt: skip
    tiny = tuple({**dict(grid.sizes[0]), "jobs": 3, "max_tasks": 2}.items())
    small = Sweep(sweep.name, sweep.source, (replace(grid, sizes=(tiny,), seeds=(2,)),))
    tasks, _ = small.tasks()
    frame = with_gaps(pd.DataFrame([run_task(task) for task in tasks])).set_index("method")
    assert frame["verified"].all(), frame["message"].to_dict()
    assert frame.loc["spacetime-cp", "status"] == frame.loc["locality-cp", "status"] == "optimal"
    assert frame.loc["locality-cp", "gap"] == pytest.approx(0.0, abs=1e-9)
    policies = [label for label in frame.index if label.startswith("online:")]
    assert len(policies) == len(grid.methods) - 2
    for policy in policies:
        assert frame.loc[policy, "gap"] >= 0  # nothing online beats the clairvoyant optimum
        assert frame.loc[policy, "bound_gap"] >= frame.loc[policy, "gap"]
    assert frame.loc[policies, "gap"].max() > 0  # and the yardstick tells the policies apart


def test_a_scheduler_that_does_not_answer_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    import socket

    from fairpack.solver.cli.main import main

    with socket.socket() as probe:  # a port on this machine where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = tmp_path / "never.parquet"
    code = main(["bench", "run", "smoke", "--out", str(out), "--scheduler", f"tcp://127.0.0.1:{port}",
                 "--connect-timeout", "0.5", "--no-progress"])  # fmt: skip
    assert code == 2
    assert not out.exists()
