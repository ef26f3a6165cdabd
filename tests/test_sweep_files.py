"""Sweeps over the user's own instances: ``instances`` entries (files, folders, globs, PSPLIB ``.sm``) in a sweep
grid, refused at load when bad, run by ``fairpack bench run`` and by ``fairpack.sweep`` to the same rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

import fairpack
from fairpack.solver.bench.report import write_report
from fairpack.solver.bench.sweep import SweepError, load_sweep, parse_sweep
from fairpack.solver.bench.table import csv_path, read_results
from fairpack.solver.cli import main

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances"
#: One instance of each kind: flat, hierarchy, DAG jobs.
CASES = {"drfh_fig1.yaml": "flat", "hdrf_fig10.yaml": "hierarchy", "dag_two_jobs.yaml": "jobs"}
#: Columns that must agree between two runs of the same sweep (times and memory may not).
DETERMINISTIC = ["key", "instance_key", "reference_key", "grid", "family", "kind", "instance", "size", "size_label",
                 "seed", "params", "method", "backend", "exact", "status", "verified", "objective", "bound",
                 "reference", "reference_objective", "gap", "min_dominant_share", "min_share_guarantee", "avg_jct",
                 "makespan"]  # fmt: skip
#: A PSPLIB file of four activities (1 and 4 the dummies): 1 -> {2, 3} -> 4 on two renewable resources.
TINY_SM = """\
************************************************************************
file with basedata            : tiny.bas
************************************************************************
projects                      :  1
jobs (incl. supersource/sink ):  4
horizon                       :  9
RESOURCES
  - renewable                 :  2   R
  - nonrenewable              :  0   N
  - doubly constrained        :  0   D
************************************************************************
PRECEDENCE RELATIONS:
jobnr.    #modes  #successors   successors
   1        1          2           2   3
   2        1          1           4
   3        1          1           4
   4        1          0
************************************************************************
REQUESTS/DURATIONS:
jobnr. mode duration  R 1  R 2
------------------------------------------------------------------------
  1      1     0       0    0
  2      1     3       2    1
  3      1     5       1    3
  4      1     0       0    0
************************************************************************
RESOURCEAVAILABILITIES:
  R 1  R 2
    2    3
************************************************************************
"""

SWEEP = """
name = "mine"
time_limit = 10
task_timeout = 120

[[grid]]
name = "files"
instances = ["cases/"]
methods = ["drfh", "best-fit", "first-fit", "hdrf", "collapsed", {method = "spacetime-cp", fair_cap = false},
           "carbyne"]
"""


def cases(folder: Path, names: tuple[str, ...] = tuple(CASES)) -> Path:
    """``folder/cases`` with copies of the bundled instances ``names``."""
    target = folder / "cases"
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(INSTANCES / name, target / name)
    return target


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- expansion -----------------------------------------------------------------------------------------


def test_folder_glob_and_file_entries_expand_to_one_row_per_file_method_and_backend(tmp_path: Path) -> None:
    cases(tmp_path)
    shutil.copy(INSTANCES / "weighted_caps.yaml", tmp_path / "weighted_caps.yaml")
    (tmp_path / "cases" / "notes.txt").write_text("not an instance")  # passed over by folders and globs
    sweep = load_sweep(write(tmp_path / "sweep.toml", """
[[grid]]
name = "g"
instances = ["cases/", "cases/*.yaml", "weighted_caps.yaml"]
methods = ["drfh", "best-fit", "hdrf", "spacetime-cp", "carbyne", "online:fifo"]
backends = ["highs", "ortools"]
"""))
    grid = sweep.grids[0]
    # The folder in name order; the glob's files were named already and run once; then the file.
    ids = ["cases/dag_two_jobs.yaml", "cases/drfh_fig1.yaml", "cases/hdrf_fig10.yaml", "weighted_caps.yaml"]
    assert [i.id for i in grid.instances] == ids
    assert [i.kind for i in grid.instances] == ["jobs", "flat", "hierarchy", "flat"]
    assert all(Path(i.path or "").is_absolute() for i in grid.instances)
    assert grid.references == ("drfh", "hdrf", "spacetime-cp")  # the first exact method of each kind
    tasks, skipped = sweep.tasks()
    assert not skipped
    keys = [t.key for t in tasks]
    assert len(set(keys)) == len(keys)
    by_file = {i: sorted(t.key.split("/", 3)[3] for t in tasks if t.file is not None and t.file.id == i) for i in ids}
    assert by_file["cases/drfh_fig1.yaml"] == sorted(["drfh_fig1.yaml/drfh/highs", "drfh_fig1.yaml/drfh/ortools",
                                                      "drfh_fig1.yaml/best-fit/none",
                                                      "drfh_fig1.yaml/online:fifo/none"])  # fmt: skip
    assert by_file["cases/dag_two_jobs.yaml"] == sorted(["dag_two_jobs.yaml/spacetime-cp/none",
                                                         "dag_two_jobs.yaml/carbyne/none",
                                                         "dag_two_jobs.yaml/online:fifo/none"])  # fmt: skip
    assert keys[0] == "g/file/cases/dag_two_jobs.yaml/spacetime-cp/none"
    for task in tasks:
        assert task.family == "file" and task.seed is None and task.options == ()
        assert dict(task.params) == {"file": task.file.id if task.file else None}
        assert task.reference in keys
        assert task.reference.startswith(task.instance_key + "/")  # the same instance ...
        reference = {"flat": "drfh/highs", "hierarchy": "hdrf/highs", "jobs": "spacetime-cp/none"}[task.kind]
        assert task.reference.endswith("/" + reference)  # ... its kind's reference, on the first backend


def test_paths_are_relative_to_the_sweep_file_and_name_the_rows(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    cases(tmp_path, ("drfh_fig1.yaml",))
    path = write(tmp_path / "sweeps" / "mine.yaml", "grid:\n  - name: g\n    instances: [../cases/drfh_fig1.yaml]\n"
                 "    methods: [drfh]\n")  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    (task,) = load_sweep(path).tasks()[0]
    assert task.key == "g/file/../cases/drfh_fig1.yaml/drfh/highs"
    assert task.file is not None and Path(task.file.path or "") == tmp_path / "cases" / "drfh_fig1.yaml"
    # A mapping's paths are relative to the working folder, or to the base it is given.
    data = {"grid": [{"name": "g", "instances": ["cases/*.yaml"], "methods": ["drfh"]}]}
    assert [i.id for i in parse_sweep(data, base=tmp_path).grids[0].instances] == ["cases/drfh_fig1.yaml"]
    with pytest.raises(SweepError, match="no file matches"):
        parse_sweep(data)


def test_seeds_of_a_grid_of_files_are_the_methods_seeds(tmp_path: Path) -> None:
    cases(tmp_path, ("hdrf_fig10.yaml",))
    text = """
seeds = [7]   # generator seeds: not for files
[[grid]]
name = "g"
instances = ["cases/hdrf_fig10.yaml"]
methods = ["hdrf", {method = "hslots", slots = 5}]
options = {extra = {horizon = 30, warmup = 3}}
"""
    tasks = load_sweep(write(tmp_path / "a.toml", text)).tasks()[0]
    assert [t.seed for t in tasks] == [None, None]
    assert all("seed" not in t.solve_kwargs() for t in tasks)
    tasks = load_sweep(write(tmp_path / "b.toml", text.replace('name = "g"', 'name = "g"\nseeds = [0, 3]'))).tasks()[0]
    assert [(t.seed, t.label) for t in tasks] == [(0, "hdrf"), (0, "hslots"), (3, "hdrf"), (3, "hslots")]
    assert [t.key for t in tasks][:2] == ["g/file/cases/hdrf_fig10.yaml/seed=0/hdrf/highs",
                                          "g/file/cases/hdrf_fig10.yaml/seed=0/hslots/none"]  # fmt: skip
    assert all(t.solve_kwargs()["seed"] == t.seed for t in tasks)
    assert tasks[3].reference == "g/file/cases/hdrf_fig10.yaml/seed=3/hdrf/highs"


# --- refused at load -----------------------------------------------------------------------------------

GRID = """
[[grid]]
name = "g"
instances = ["cases/", "cases/drfh_fig1.yaml"]
methods = ["drfh", "best-fit", "hdrf", "spacetime-cp"]
"""

BAD = [
    (GRID.replace('"cases/drfh_fig1.yaml"', '"cases/*.json"'), "grid[0].instances[1]",
     "no file matches 'cases/*.json'"),
    (GRID.replace('"cases/drfh_fig1.yaml"', '"nope.yaml"'), "grid[0].instances[1]",
     "no such file or folder 'nope.yaml'"),
    (GRID.replace('"cases/drfh_fig1.yaml"', '"empty"'), "grid[0].instances[1]", "no instance file"),
    (GRID.replace('"cases/drfh_fig1.yaml"', '"notes.txt"'), "grid[0].instances[1]", "is not an instance file"),
    (GRID.replace('"cases/drfh_fig1.yaml"', '"broken/"'), "grid[0].instances[1]",
     "broken/negative.yaml: tenants[0].demand.cpu: must be finite and non-negative"),
    (GRID.replace('"cases/drfh_fig1.yaml"', "3"), "grid[0].instances[1]", "expected a file, folder or glob"),
    (GRID.replace('instances = ["cases/", "cases/drfh_fig1.yaml"]', "instances = []"), "grid[0].instances",
     "non-empty list"),
    (GRID + 'family = "random-flat"\n', "grid[0].family", "not both"),
    (GRID.replace(', "spacetime-cp"', ""), "grid[0].instances[0]",
     "cases/dag_two_jobs.yaml is a jobs instance and no method of the grid solves one"),
    (GRID.replace('"hdrf", ', '"hdrf", "carbyne", ').replace('"cases/", ', ""), "grid[0]",
     "method 'hdrf' solves hierarchy instances; none of the grid's instances is one"),
    (GRID + 'reference = "best-fit"\n', "grid[0]", "must be an exact method"),
    (GRID.replace('"drfh", ', '"drfh", "drfh-int", ') + 'reference = ["drfh", "drfh-int"]\n', "grid[0]",
     "give at most one per kind"),
    (GRID + "reference = 3\n", "grid[0].reference", "expected a method label"),
    (GRID + "seeds = [0]\noptions = {seed = 1}\n", "grid[0]", "give seeds or a seed option, not both"),
    (GRID.replace('"hdrf", "spacetime-cp"', '"hdrf", {method = "spacetime-cp", seed = 2}') + "seeds = [0]\n",
     "grid[0]", "give seeds or a seed option, not both"),
    ('[[grid]]\nname = "g"\ninstances = ["cases/drfh_fig1.yaml"]\nmethods = ["best-fit"]\nseeds = [0, 1]\n', "grid[0]",
     "no method of the grid takes a seed"),
]


@pytest.mark.parametrize(("text", "field", "reason"), BAD)
def test_bad_instance_entries_are_refused_at_load_naming_the_entry(tmp_path: Path, text: str, field: str,
                                                                   reason: str) -> None:  # fmt: skip
    cases(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("not an instance")
    bad = (INSTANCES / "drfh_fig1.yaml").read_text().replace("cpu: 0.2, mem: 1", "cpu: -1, mem: 1")
    write(tmp_path / "broken" / "negative.yaml", bad)
    path = write(tmp_path / "sweep.toml", text)
    with pytest.raises(SweepError) as caught:
        load_sweep(path)
    assert str(path) in str(caught.value)
    assert caught.value.field == field
    assert reason in caught.value.reason
    # The CLI stops before any task runs: exit 2, the error on stderr, no table.
    out = tmp_path / "r.parquet"
    assert main(["bench", "run", str(path), "--out", str(out), "--no-progress"]) == 2
    assert not out.exists()


def test_instance_objects_repeating_a_name_are_refused() -> None:
    instance = fairpack.load_instance(INSTANCES / "drfh_fig1.yaml")
    with pytest.raises(SweepError, match=r"grid\[0\]\.instances\[1\]: instance name 'drfh_fig1' repeats"):
        fairpack.sweep([instance, instance], methods=["drfh"])


def test_python_keywords_belong_to_a_sweep_of_instances(tmp_path: Path) -> None:
    path = write(tmp_path / "sweep.toml", GRID)
    with pytest.raises(TypeError, match="time_limit: only for a sweep given as instances"):
        fairpack.sweep(path, time_limit=5)
    with pytest.raises(TypeError, match="needs methods"):
        fairpack.sweep([INSTANCES / "drfh_fig1.yaml"])
    with pytest.raises(fairpack.OptionError, match="processes"):
        fairpack.sweep([INSTANCES / "drfh_fig1.yaml"], methods=["drfh"], processes=0)


# --- running -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cli_and_python(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, pd.DataFrame]:
    """The same sweep over a folder of three instances (one of each kind), through the CLI and ``fairpack.sweep``."""
    folder = tmp_path_factory.mktemp("files")
    cases(folder)
    path = write(folder / "sweep.toml", SWEEP)
    cli = folder / "cli.parquet"
    assert main(["bench", "run", str(path), "--out", str(cli), "--workers", "2", "--no-progress"]) == 0
    python = folder / "python.parquet"
    frame = fairpack.sweep(path, out=python, processes=2)
    return cli, python, frame


def test_cli_and_python_give_the_same_rows(cli_and_python: tuple[Path, Path, pd.DataFrame]) -> None:
    cli, python, frame = cli_and_python
    by_cli, by_python = read_results(cli), read_results(python)
    assert list(by_cli.columns) == list(by_python.columns)
    pd.testing.assert_frame_equal(by_cli[DETERMINISTIC], by_python[DETERMINISTIC])
    pd.testing.assert_frame_equal(frame, by_python)  # what sweep() returns is the table it wrote
    assert len(pd.read_csv(csv_path(cli))) == len(by_cli)


def test_rows_of_files_have_the_tidy_columns_and_gaps(cli_and_python: tuple[Path, Path, pd.DataFrame]) -> None:
    cli, _, frame = cli_and_python
    assert sorted(frame["key"]) == sorted(t.key for t in load_sweep(cli.with_name("sweep.toml")).tasks()[0])
    assert len(frame) == 7  # drfh, best-fit, first-fit | hdrf, collapsed | spacetime-cp, carbyne
    assert (frame["family"] == "file").all() and frame["seed"].isna().all()
    assert frame["verified"].all(), frame.loc[~frame["verified"], ["key", "message"]]
    kinds = {f"cases/{name}": kind for name, kind in CASES.items()}
    assert (frame["kind"] == frame["instance"].map(kinds)).all()
    assert (frame["params"] == frame["instance"].map(lambda i: f'{{"file": "{i}"}}')).all()
    expected = {"flat": ("drfh", "tenants x server classes", 4.0), "hierarchy": ("hdrf", "leaves", 3.0),
                "jobs": ("spacetime-cp", "tasks", 4.0)}  # fmt: skip
    for kind, (reference, size_label, size) in expected.items():
        rows = frame[frame["kind"] == kind]
        assert (rows["reference"] == reference).all() and (rows["reference_status"] == "optimal").all()
        assert (rows["size_label"] == size_label).all() and (rows["size"] == size).all()
    assert (frame.loc[frame["exact"], "gap"] == 0).all()
    # Against a proven optimum no heuristic does better (hierarchies aside: hdrf does not maximise the ratio).
    heuristics = frame[~frame["exact"] & frame["kind"].isin(["flat", "jobs"])]
    assert heuristics["gap"].notna().all() and (heuristics["gap"] >= -1e-9).all()
    assert frame.loc[frame["method"] == "first-fit", "gap"].item() == pytest.approx(0.4)  # 6 of 10 tasks


def test_a_rerun_resumes_and_the_report_has_a_section_per_kind(cli_and_python: tuple[Path, Path, pd.DataFrame],
                                                               tmp_path: Path) -> None:  # fmt: skip
    cli, python, frame = cli_and_python
    again = fairpack.sweep(cli.with_name("sweep.toml"), out=python)
    pd.testing.assert_frame_equal(again, frame)  # nothing ran again: even the times are those of the first run
    report = write_report(cli, tmp_path).read_text()
    for kind in CASES.values():
        assert f"## Grid `files`, {kind} instances" in report


def test_python_sweep_of_instances_files_and_objects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cases(tmp_path, ("drfh_fig1.yaml",))
    monkeypatch.chdir(tmp_path)
    built = fairpack.Instance.build(
        servers=[fairpack.Server("m", {"cpu": 4, "mem": 8}, count=2)],
        tenants=[fairpack.Tenant("a", {"cpu": 1, "mem": 4}), fairpack.Tenant("b", {"cpu": 2, "mem": 1})],
        name="built",
    )
    frame = fairpack.sweep(["cases/*.yaml", built], methods=["drfh", "best-fit"], reference="drfh", seeds=[0])
    assert sorted(frame["key"]) == ["sweep/file/built/seed=0/best-fit/none", "sweep/file/built/seed=0/drfh/highs",
                                    "sweep/file/cases/drfh_fig1.yaml/seed=0/best-fit/none",
                                    "sweep/file/cases/drfh_fig1.yaml/seed=0/drfh/highs"]  # fmt: skip
    assert frame["verified"].all() and (frame["reference"] == "drfh").all() and frame["gap"].notna().all()
    assert (frame["seed"] == 0).all()
    assert (frame.loc[frame["method"] == "drfh", "options"] == '{"seed": 0}').all()
    direct = fairpack.solve(built, "drfh")
    assert frame.loc[frame["key"] == "sweep/file/built/seed=0/drfh/highs", "objective"].item() == pytest.approx(
        direct.objective)


def test_a_psplib_file_runs_as_a_dag_job(tmp_path: Path) -> None:
    write(tmp_path / "psplib" / "tiny.sm", TINY_SM)
    frame = fairpack.sweep({"time_limit": 10, "grid": [{"name": "sm", "instances": [str(tmp_path / "psplib")],
                                                          "methods": ["spacetime-cp", "carbyne"]}]})  # fmt: skip
    assert list(frame["kind"]) == ["jobs", "jobs"] and frame["verified"].all()
    # 2 and 3 cannot overlap on R 1 (2 + 1 > 2): the makespan is 3 + 5.
    assert (frame["makespan"] == 8).all() and (frame["gap"] >= 0).all()
    assert frame["instance"].str.endswith("psplib/tiny.sm").all()  # relative to the working folder


@pytest.mark.data
def test_a_psplib_library_file_gets_its_best_known_makespan(data_dir: Path, tmp_path: Path) -> None:
    source = data_dir / "psplib" / "j30" / "j301_1.sm"
    if not source.is_file():
        pytest.skip(f"{source} not found")
    shutil.copy(source, tmp_path / "j301_1.sm")
    path = write(tmp_path / "sweep.toml", '[[grid]]\nname = "j30"\ninstances = ["j301_1.sm"]\n'
                 'methods = ["spacetime-cp", "sjf"]\ntime_limit = 20\n')  # fmt: skip
    frame = fairpack.sweep(path, data_dir=data_dir)
    assert (frame["instance"] == "j301_1.sm").all() and frame["verified"].all()
    assert (frame["best_known"] == 43).all()  # J30 optimum of j301_1
    assert (frame["best_known_gap"] >= 0).all()
