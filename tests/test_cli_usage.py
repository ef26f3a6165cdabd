"""What a user of the command line expects.

``--version``; ``-`` reads standard input; ``--format csv`` with one row per tenant, node or task;
``--top N`` and ``--quiet``; piping into ``head`` ends cleanly; ``export -o x.lp`` writes LP;
``generate dag|tpch|psplib``; ``--help`` shows defaults; no command writes a default file where it runs.
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fairpack.models.io import instance_from_dict, load_instance
from fairpack.solver.cli import main
from fairpack.solver.cli.main import build_parser, parsers

ROOT = Path(__file__).resolve().parents[1]
FIG1 = ROOT / "instances" / "drfh_fig1.yaml"
WEIGHTED = ROOT / "instances" / "weighted_caps.yaml"
FIG4 = ROOT / "instances" / "hdrf_fig4.yaml"
TWO_JOBS = ROOT / "instances" / "dag_two_jobs.yaml"
SCRIPT = Path(sys.executable).parent / "fairpack"


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def usage_error(capsys: pytest.CaptureFixture[str], *args: str | Path) -> str:
    """argparse's refusal of the arguments: exit 2 and the message on stderr."""
    with pytest.raises(SystemExit) as stop:
        main([str(arg) for arg in args])
    assert stop.value.code == 2
    return capsys.readouterr().err


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


# --- --version and standard input ----------------------------------------------------------------------


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"fairpack {importlib.metadata.version('fairpack')}"


@pytest.mark.parametrize("command", [["solve", "-", "--json"], ["validate", "-"], ["export", "-"]])
def test_dash_reads_the_instance_from_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                            command: list[str]) -> None:  # fmt: skip
    monkeypatch.setattr(sys, "stdin", io.StringIO(FIG1.read_text()))
    code, out, err = run(capsys, *command)
    assert code == 0, err
    if command[0] == "solve":
        assert {name: t["tasks"] for name, t in json.loads(out)["tenants"].items()} == {"user1": 10, "user2": 10}
    elif command[0] == "validate":
        assert out.startswith("<stdin>: valid: 2 resources, 2 server classes")
    else:
        assert "ROWS" in out


def test_stdin_through_the_console_script() -> None:
    if not SCRIPT.exists():
        pytest.skip(f"console script not installed at {SCRIPT}")
    done = subprocess.run([str(SCRIPT), "solve", "-", "--method", "per-server-drf", "--format", "csv"],
                          input=FIG1.read_text(), capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [row["tasks"] for row in csv_rows(done.stdout)] == ["6", "6"]  # DRFH paper, Fig. 1: DRF per server


# --- --format csv: one row per tenant, node or task ------------------------------------------------------


def test_csv_has_one_row_per_tenant(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "solve", WEIGHTED, "--method", "drfh-int", "--format", "csv")
    assert code == 0
    rows = csv_rows(out)
    assert [row["tenant"] for row in rows] == [t.name for t in load_instance(WEIGHTED).tenants]
    assert all(row["method"] == "drfh-int" and row["verified"] == "True" for row in rows)
    assert {"tasks", "dominant_share", "cpu", "mem", "gpu", "per_server", "status", "objective"} <= set(rows[0])


def test_csv_has_one_row_per_node(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "solve", FIG4, "--method", "hdrf", "--format", "csv")
    assert code == 0
    rows = csv_rows(out)
    hierarchy = load_instance(FIG4).hierarchy
    assert hierarchy is not None
    assert [row["node"] for row in rows] == [node.name for node in hierarchy.nodes]
    assert {row["node"]: float(row["guarantee"]) for row in rows}["n2-1"] == pytest.approx(0.25)


def test_csv_has_one_row_per_task_with_its_machine(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "solve", TWO_JOBS, "--method", "sjf", "--placement", "servers", "--format", "csv")
    assert code == 0
    rows = csv_rows(out)
    instance = load_instance(TWO_JOBS)
    assert len(rows) == sum(stage.tasks for job in instance.jobs for stage in job.stages)
    assert {"job", "stage", "index", "start", "end", "server", "machine"} <= set(rows[0])
    assert all(float(row["end"]) > float(row["start"]) for row in rows)


# --- --top and --quiet ---------------------------------------------------------------------------------


def test_top_limits_the_rows_and_says_how_many_are_left(capsys: pytest.CaptureFixture[str]) -> None:
    _, full, _ = run(capsys, "solve", WEIGHTED)
    code, one, _ = run(capsys, "solve", WEIGHTED, "--top", "1")
    assert code == 0
    assert "analytics" in one and "training" not in one and "... and 3 more rows" in one
    assert all(name in full for name in ("analytics", "training", "cache", "batch"))
    _, none, _ = run(capsys, "solve", WEIGHTED, "--top", "0")  # no rows, and no header over none
    assert "analytics" not in none and "tenant  weight" not in none and "more rows" not in none
    assert "  tenants: 4, none listed (--top N lists them, --format csv lists all)" in none
    assert "must be 0 or more" in usage_error(capsys, "solve", WEIGHTED, "--top", "-1")


def test_quiet_prints_the_headline_only(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "solve", WEIGHTED, "--quiet")
    assert code == 0
    assert out == "weighted_caps: method drfh (backend highs) -> optimal, verified yes\n"


# --- piping into head -----------------------------------------------------------------------------------


def _environment(buffered: bool) -> dict[str, str]:
    """This environment with Python's stdout block-buffered on a pipe (a user's default), or unbuffered."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    return env if buffered else {**env, "PYTHONUNBUFFERED": "1"}


def _closed_early(command: list[str], read_first: bool, buffered: bool) -> subprocess.CompletedProcess[bytes]:
    """Run ``command`` with a reader that goes away: after one line, or before anything is written."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_environment(buffered))
    assert process.stdout is not None and process.stderr is not None
    if read_first:
        process.stdout.readline()
    process.stdout.close()
    err = process.stderr.read()
    process.wait(timeout=120)
    return subprocess.CompletedProcess(command, process.returncode, b"", err)


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize(("args", "read_first"), [
    (["generate", "dag", "--jobs", "300"], True),   # far more than a pipe holds: fails while writing
    (["validate", str(FIG1)], False),              # one buffered line: fails when stdout is flushed at exit
    (["solve", str(FIG1), "--format", "csv"], False),
])  # fmt: skip
def test_a_reader_that_goes_away_ends_the_command_quietly(args: list[str], read_first: bool, buffered: bool) -> None:
    if not SCRIPT.exists():
        pytest.skip(f"console script not installed at {SCRIPT}")
    done = _closed_early([str(SCRIPT), *args], read_first, buffered)
    assert done.returncode == 0, done.stderr.decode()
    assert b"BrokenPipeError" not in done.stderr and b"Traceback" not in done.stderr
    assert done.stderr == b""


def test_head_in_a_shell_pipeline() -> None:
    if not SCRIPT.exists():
        pytest.skip(f"console script not installed at {SCRIPT}")
    done = subprocess.run(f"set -o pipefail; '{SCRIPT}' generate dag --jobs 300 | head -n 2", shell=True,
                          executable="/bin/bash", capture_output=True, text=True, timeout=120,
                          env=_environment(buffered=True))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["name: dag-barrier-300j-s0", "resources: [cpu, mem]"]
    assert done.stderr == ""


# --- export ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "given", "marker"), [
    ("model.lp", None, "Subject To"), ("model.LP", None, "Subject To"), ("model.mps", None, "ROWS"),
    ("model.txt", None, "ROWS"), ("model.txt", "lp", "Subject To"), ("model.lp", "lp", "Subject To"),
])  # fmt: skip
def test_export_format_from_the_suffix_or_format(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str,
                                                 given: str | None, marker: str) -> None:  # fmt: skip
    out = tmp_path / name
    code, stdout, err = run(capsys, "export", FIG1, "-o", out, *(["--format", given] if given else []))
    assert code == 0, err
    assert stdout == "" and marker in out.read_text()


def test_export_refuses_a_format_the_file_name_contradicts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "model.lp"
    code, _, err = run(capsys, "export", FIG1, "-o", out, "--format", "mps")
    assert code == 2 and "names an LP file but --format is mps" in err
    assert not out.exists()


def test_export_lp_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "export", FIG1, "--format", "lp")
    assert code == 0 and out.startswith("Maximize") and "Subject To" in out and out.rstrip().endswith("End")


# --- generate dag | tpch | psplib -----------------------------------------------------------------------


def test_generate_dag_loads_back_and_solves(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "generate", "dag", "--seed", "3", "--jobs", "3", "--resources", "3")
    assert code == 0
    instance = instance_from_dict(yaml.safe_load(out))
    assert len(instance.jobs) == 3 and len(instance.resources) == 3
    path = tmp_path / "dag.yaml"
    path.write_text(out)
    code, out, _ = run(capsys, "solve", path, "--method", "carbyne", "--json")
    assert code == 0 and json.loads(out)["verified"] is True
    _, again, _ = run(capsys, "generate", "dag", "--seed", "3", "--jobs", "3", "--resources", "3")
    assert again == path.read_text()  # seeded


def test_generate_tpch_and_psplib(capsys: pytest.CaptureFixture[str], tmp_path: Path, data_dir: Path) -> None:
    code, out, err = run(capsys, "generate", "tpch", "--queries", "2", "--seed", "1", "--data-dir", data_dir)
    assert code == 0, err
    assert len(instance_from_dict(yaml.safe_load(out)).jobs) == 2
    code, out, err = run(capsys, "generate", "psplib", "--set", "j30", "--seed", "0", "--data-dir", data_dir)
    assert code == 0, err
    psplib = instance_from_dict(yaml.safe_load(out))
    assert psplib.name == "j301_1" and len(psplib.jobs[0].stages) == 32
    path = tmp_path / "j301_1.yaml"
    path.write_text(out)
    code, out, _ = run(capsys, "solve", path, "--method", "spacetime-cp", "--time-limit", "30", "--json")
    assert code == 0 and json.loads(out)["makespan"] == 43  # j301_1's proven optimum


def test_generate_without_the_data_says_so_once(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.delenv("FAIRPACK_DATA_DIR", raising=False)
    code, out, err = run(capsys, "generate", "tpch")
    assert code == 2 and out == ""
    assert err.count("--data-dir") == 1


# --- --help shows defaults ------------------------------------------------------------------------------


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction | argparse._VersionAction)]  # fmt: skip  # noqa: E501


def test_every_option_has_help_and_shows_its_default() -> None:
    for parser in parsers(build_parser()):
        text = parser.format_help()
        assert "(default: None)" not in text and "(default: False)" not in text, parser.prog
        for action in _options(parser):
            assert action.help, f"{parser.prog} {action.option_strings[0]} has no help text"
            if action.default not in (None, False, argparse.SUPPRESS):
                assert f"(default: {action.default})" in " ".join(text.split()), (
                    f"{parser.prog} {action.option_strings[0]}: --help does not show its default {action.default!r}")


def test_help_shows_the_defaults_a_user_asks_about(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for shown in ("--method METHOD", "(default: drfh)", "(default: table)", "(default: 20)", "(default: no limit)",
                  "default: 10)", "(default: auto)", "(default: 0.5)"):  # fmt: skip
        assert shown in text, shown


def test_help_defaults_match_the_solver() -> None:
    from fairpack.solver.cli.commands import DEFAULTS, HORIZON
    from fairpack.solver.registry import SolveOptions
    from fairpack.solver.sim.backlog import SimOptions

    assert SolveOptions() == DEFAULTS
    assert SimOptions().horizon == HORIZON


# --- no default output lands where the command runs -----------------------------------------------------


def test_bench_run_needs_an_output_table(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    err = usage_error(capsys, "bench", "run", ROOT / "benchmarks" / "sweeps" / "smoke.toml")
    assert "--out" in err
    assert list(tmp_path.iterdir()) == []


def test_csv_rows_jobs_lists_every_job_of_a_schedule(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "solve", TWO_JOBS, "--method", "carbyne", "--format", "csv", "--rows", "jobs")
    assert code == 0
    rows = {row["job"]: row for row in csv_rows(out)}
    assert set(rows) == {"long", "short"}
    assert float(rows["short"]["arrival"]) == 0.5 and float(rows["long"]["completion"]) == 4.5
    assert {"start", "queueing_delay", "jct", "slowdown", "fair_completion"} <= set(rows["long"])


@pytest.mark.parametrize(("argv", "reason"), [
    (["solve", str(FIG1), "--format", "csv", "--rows", "jobs"], "no jobs"),
    (["solve", str(TWO_JOBS), "--rows", "jobs"], "--format csv"),
])  # fmt: skip
def test_csv_rows_that_cannot_be_listed_are_refused_before_solving(argv: list[str], reason: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2 and reason in err


@pytest.mark.parametrize("command", [["solve", str(FIG1)], ["simulate", str(TWO_JOBS), "--policy", "sjf"],
                                     ["export", str(FIG1), "--method", "drfh"]])  # fmt: skip
def test_output_into_a_missing_folder_is_refused_before_solving(command: list[str], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *command, "-o", str(tmp_path / "no" / "such" / "r.json"))
    assert code == 2 and "does not exist" in err and "internal error" not in err
