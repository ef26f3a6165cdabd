"""The ``fairpack`` command line: the JSON contract, exit codes, check/validate/export/generate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import highspy
import pytest
import yaml

from fairpack.models.io import load_instance
from fairpack.solver.api import METHODS
from fairpack.solver.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIG1 = ROOT / "instances" / "drfh_fig1.yaml"
WEIGHTED = ROOT / "instances" / "weighted_caps.yaml"
CONTRACT_KEYS = {"status", "method", "backend", "objective", "bound", "gap", "build_s", "solve_s", "verified"}
BAD_INSTANCE = """\
resources: [cpu, mem]
servers:
  - {name: s1, capacity: {cpu: 4, mem: 8}}
  - {name: s2, capacity: {cpu: 4, mem: -1}}
tenants:
  - {name: u1, demand: {cpu: 1}}
"""


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """Run the CLI in-process; return (exit code, stdout, stderr)."""
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def solve_json(capsys: pytest.CaptureFixture[str], *args: str | Path) -> dict[str, Any]:
    code, out, err = run(capsys, "solve", *args, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)  # the whole of stdout is one JSON object
    assert out.count("\n") == 1 and out.endswith("}\n")
    return data


# -------------------------------------------------------------------------------------------------- solve


def test_solve_json_contract_on_drfh_fig1(capsys: pytest.CaptureFixture[str]) -> None:
    data = solve_json(capsys, FIG1)
    assert data.keys() >= CONTRACT_KEYS
    assert data["status"] == "optimal"
    assert (data["method"], data["backend"]) == ("drfh", "highs")
    assert data["verified"] is True
    assert data["objective"] == pytest.approx(5 / 7)
    assert data["bound"] == pytest.approx(5 / 7)
    assert data["gap"] == pytest.approx(0.0, abs=1e-9)
    assert data["build_s"] >= 0 and data["solve_s"] >= 0
    assert set(data["tenants"]) == {"user1", "user2"}
    for name, server in (("user1", "server1"), ("user2", "server2")):
        entry = data["tenants"][name]
        assert {"tasks", "dominant_share", "allocation", "per_server"} <= entry.keys()
        assert entry["tasks"] == pytest.approx(10)
        assert entry["dominant_share"] == pytest.approx(5 / 7)
        assert set(entry["allocation"]) == {"cpu", "mem"}
        assert entry["per_server"] == {server: pytest.approx(10)}  # each user gets a whole server
    assert data["tenants"]["user1"]["allocation"] == pytest.approx({"cpu": 2.0, "mem": 10.0})
    assert data["tenants"]["user2"]["allocation"] == pytest.approx({"cpu": 10.0, "mem": 2.0})


@pytest.mark.parametrize("method", [m for m in METHODS if METHODS[m].family != "jobs"])
def test_every_method_solves_and_verifies(capsys: pytest.CaptureFixture[str], method: str) -> None:
    instance = load_instance(WEIGHTED)
    data = solve_json(capsys, WEIGHTED, "--method", method)
    assert data.keys() >= CONTRACT_KEYS
    assert data["method"] == method
    assert data["verified"] is True, data.get("violations")
    assert data["status"] in ("optimal", "feasible")
    assert set(data["tenants"]) == {t.name for t in instance.tenants}
    for tenant in instance.tenants:
        entry = data["tenants"][tenant.name]
        assert entry["tasks"] <= tenant.tasks + 1e-9
        assert set(entry["allocation"]) == set(instance.resources)
    code, out, err = run(capsys, "solve", WEIGHTED, "--method", method)
    assert code == 0, err
    assert method in out and "verified yes" in out
    for tenant in instance.tenants:
        assert tenant.name in out


def test_solve_time_limit_and_backend_options(capsys: pytest.CaptureFixture[str]) -> None:
    data = solve_json(capsys, FIG1, "--backend", "highs", "--time-limit", "10")
    assert data["verified"] is True
    assert data["objective"] == pytest.approx(5 / 7)


# ---------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "command",
    [["solve"], ["solve", "--json"], ["validate"], ["export", "--format", "lp"], ["check", "RESULT"]],
    ids=["solve", "solve-json", "validate", "export", "check"],
)
def test_bad_input_exits_2_naming_file_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: list[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD_INSTANCE)
    result = tmp_path / "result.json"
    result.write_text("{}")
    name, *options = command
    options = [str(result) if option == "RESULT" else option for option in options]
    args = [name, str(path), *options]
    code, out, err = run(capsys, *args)
    assert code == 2
    assert out == ""
    assert str(path) in err
    assert "servers[1].capacity.mem" in err
    assert "non-negative" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["solve", "validate", "export"])
def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str) -> None:
    path = tmp_path / "nowhere.yaml"
    code, out, err = run(capsys, command, path)
    assert code == 2
    assert out == ""
    assert str(path) in err


def test_not_yaml_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("resources: [cpu\nservers: {\n")
    code, out, err = run(capsys, "solve", path, "--json")
    assert (code, out) == (2, "")
    assert str(path) in err and "not valid YAML" in err


@pytest.mark.parametrize(
    ("method", "text", "field"),
    [
        ("best-fit", "resources: [cpu]\nservers: [{name: s, capacity: {cpu: 4}}]\n", "tenants"),
        ("drf-dag", "resources: [cpu, gpu]\nservers: [{name: s, capacity: {cpu: 4}}]\njobs: [{name: j, stages: "
                    "[{name: a, duration: 1, demand: {gpu: 1}}]}]\n", "jobs[0].stages[0].demand"),
    ],
    ids=["no-tenants", "stage-fits-nowhere"],
)  # fmt: skip
@pytest.mark.parametrize("piped", [False, True], ids=["file", "stdin"])
def test_a_method_refusing_the_instance_names_the_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, method: str, text: str,
    field: str, piped: bool,
) -> None:  # fmt: skip
    """The solver checks what a method needs without knowing the file; the CLI names it (exit 2)."""
    import io

    path = tmp_path / "instance.yaml"
    path.write_text(text)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    code, out, err = run(capsys, "solve", "-" if piped else path, "--method", method)
    assert (code, out) == (2, "")
    assert err.startswith(f"fairpack: {'<stdin>' if piped else path}: {field}: "), err


def test_unknown_method_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["solve", str(FIG1), "--method", "no-such-method"])
    assert caught.value.code == 2
    assert capsys.readouterr().out == ""


# -------------------------------------------------------------------------------------------------- check


@pytest.fixture
def saved_result(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    """``fairpack solve drfh_fig1.yaml --json -o result.json``."""
    path = tmp_path / "result.json"
    code, out, _ = run(capsys, "solve", FIG1, "--json", "-o", path)
    assert code == 0
    assert json.loads(path.read_text()) == json.loads(out)
    return path


def tampered(path: Path, change: Any) -> Path:
    data = json.loads(path.read_text())
    change(data)
    target = path.with_name("tampered.json")
    target.write_text(json.dumps(data))
    return target


def test_check_accepts_a_saved_result(capsys: pytest.CaptureFixture[str], saved_result: Path) -> None:
    code, out, err = run(capsys, "check", FIG1, saved_result)
    assert code == 0, out + err
    assert "verified" in out and "NOT" not in out
    code, out, _ = run(capsys, "check", FIG1, saved_result, "--json")
    assert code == 0
    summary = json.loads(out)
    assert summary["verified"] is True and summary["violations"] == []
    assert summary["objective"] == pytest.approx(5 / 7)


def _more_tasks(data: dict[str, Any]) -> None:
    data["tenants"]["user1"]["per_server"]["server1"] = 30  # server1 fits 10 of user1's tasks


def _other_amounts(data: dict[str, Any]) -> None:
    data["tenants"]["user1"]["allocation"]["mem"] = 5.0


def _other_task_count(data: dict[str, Any]) -> None:
    data["tenants"]["user1"]["tasks"] = 11


@pytest.mark.parametrize(
    "change", [_more_tasks, _other_amounts, _other_task_count], ids=["per-server", "amounts", "tasks"]
)
def test_check_rejects_a_tampered_result(capsys: pytest.CaptureFixture[str], saved_result: Path, change: Any) -> None:
    code, out, _ = run(capsys, "check", FIG1, tampered(saved_result, change))
    assert code == 1
    assert "NOT verified" in out
    assert "user1" in out
    assert "user2" not in out
    code, out, _ = run(capsys, "check", FIG1, tampered(saved_result, change), "--json")
    summary = json.loads(out)
    assert code == 1 and summary["verified"] is False
    assert any("user1" in violation for violation in summary["violations"])


def test_check_rejects_a_consistent_result_over_capacity(
    capsys: pytest.CaptureFixture[str], saved_result: Path
) -> None:
    """Tasks, amounts and shares all edited to agree: the capacity check alone must catch it."""

    def change(data: dict[str, Any]) -> None:
        entry = data["tenants"]["user1"]
        entry["per_server"]["server1"] = 30
        entry["tasks"] = 30
        entry["allocation"] = {"cpu": 6.0, "mem": 30.0}
        entry["dominant_share"] = entry["weighted_share"] = 30 / 14

    code, out, _ = run(capsys, "check", FIG1, tampered(saved_result, change))
    assert code == 1
    assert "server1" in out and "capacity" in out


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda data: data["tenants"]["user1"]["per_server"].update({"server9": 1}), "unknown server 'server9'"),
        (lambda data: data["tenants"].update({"ghost": {"per_server": {}}}), "unknown tenant 'ghost'"),
    ],
    ids=["unknown-server", "unknown-tenant"],
)
def test_check_result_with_unknown_names_exits_2(
    capsys: pytest.CaptureFixture[str], saved_result: Path, change: Any, fragment: str
) -> None:
    path = tampered(saved_result, change)
    code, out, err = run(capsys, "check", FIG1, path)
    assert (code, out) == (2, "")
    assert str(path) in err and fragment in err


@pytest.mark.parametrize("text", ["{not json", "[1, 2]"], ids=["not-json", "not-an-object"])
def test_check_unreadable_result_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str) -> None:
    path = tmp_path / "result.json"
    path.write_text(text)
    code, out, err = run(capsys, "check", FIG1, path)
    assert (code, out) == (2, "")
    assert str(path) in err


# ------------------------------------------------------------------------------------------ validate, export


def test_validate_prints_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate", WEIGHTED)
    assert (code, err) == (0, "")
    assert str(WEIGHTED) in out and "valid" in out
    assert "3 resources" in out and "3 server classes" in out and "7 machines" in out and "4 tenants" in out


def test_validate_reports_a_hierarchy(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "tree.yaml"
    path.write_text(
        "resources: [cpu]\nservers: [{name: s, capacity: {cpu: 4}}]\n"
        "hierarchy: {name: root, children: [{name: a, demand: {cpu: 1}}, {name: b, demand: {cpu: 2}}]}\n"
    )
    code, out, _ = run(capsys, "validate", path)
    assert code == 0
    assert "2 tenants" in out and "hierarchy of 3 nodes" in out


def _highs_level(path: Path) -> float:
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    assert highs.readModel(str(path)) == highspy.HighsStatus.kOk
    highs.run()
    assert highs.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return float(highs.getInfo().objective_function_value)


@pytest.mark.parametrize("fmt", ["mps", "lp"])
def test_export_is_solved_by_highs_to_the_same_level(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str
) -> None:
    path = tmp_path / f"model.{fmt}"
    code, out, err = run(capsys, "export", FIG1, "--method", "drfh", "--format", fmt, "-o", path)
    assert (code, out, err) == (0, "", "")
    level = _highs_level(path)
    reported = solve_json(capsys, FIG1, "--method", "drfh")["solver_objective"]
    assert level == pytest.approx(reported, rel=1e-7)
    assert level == pytest.approx(5 / 7, rel=1e-7)


def test_export_to_stdout(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "export", FIG1, "--format", "lp")
    assert code == 0
    path = tmp_path / "stdout.lp"
    path.write_text(out)
    assert _highs_level(path) == pytest.approx(5 / 7, rel=1e-7)


def test_export_rejects_a_heuristic(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "export", FIG1, "--method", "first-fit", "-o", tmp_path / "m.mps")
    assert (code, out) == (2, "")
    assert "first-fit" in err
    assert not (tmp_path / "m.mps").exists()


# -------------------------------------------------------------------------------------------------- generate


def generated(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> Path:
    code, out, err = run(capsys, "generate", *args)
    assert code == 0, err
    path = tmp_path / "generated.yaml"
    path.write_text(out)
    assert isinstance(yaml.safe_load(out), dict)
    return path


def test_generate_random_loads_back_and_solves(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = generated(capsys, tmp_path, "random", "--seed", "3", "--tenants", "5")
    instance = load_instance(path)
    assert len(instance.tenants) == 5
    data = solve_json(capsys, path)
    assert data["verified"] is True and data["status"] == "optimal"
    again = generated(capsys, tmp_path, "random", "--seed", "3", "--tenants", "5")
    assert again.read_text() == path.read_text()  # seeded: the same YAML twice


def test_generate_google_without_data_is_synthetic(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = generated(capsys, tmp_path, "google", "--tenants", "5", "--machines", "50")
    instance = load_instance(path)
    assert instance.resources == ("cpu", "mem")
    assert len(instance.tenants) == 5
    assert 40 <= int(instance.counts.sum()) <= 60  # about 50: the synthetic class counts are rounded
    assert solve_json(capsys, path)["verified"] is True


@pytest.mark.parametrize("machines", [1, 3, 9, 10, 11])
def test_generate_google_like_with_fewer_machines_than_configurations(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, machines: int) -> None:  # fmt: skip
    # The synthetic cluster has ten configurations: below ten machines it has as many as machines (it gave
    # configurations of no machine, refused with "count must be a positive integer").
    path = generated(capsys, tmp_path, "google-like", "--tenants", "3", "--machines", str(machines))
    instance = load_instance(path)
    assert int(instance.counts.sum()) == machines and len(instance.servers) == min(machines, 10)


def test_generate_alibaba_needs_a_data_dir(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAIRPACK_DATA_DIR", raising=False)  # else generate finds the data there
    code, out, err = run(capsys, "generate", "alibaba", "--tenants", "5")
    assert (code, out) == (2, "")
    assert "--data-dir" in err


@pytest.mark.data
def test_generate_google_from_the_real_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, data_dir: Path
) -> None:
    if not (data_dir / "google").is_dir():
        pytest.skip(f"no google/ in {data_dir}")
    instance = load_instance(generated(capsys, tmp_path, "google", "--tenants", "5", "--data-dir", str(data_dir)))
    assert int(instance.counts.sum()) == 12_583
    assert len(instance.servers) == 10
    scaled = load_instance(
        generated(capsys, tmp_path, "google", "--tenants", "5", "--machines", "500", "--data-dir", str(data_dir))
    )
    assert int(scaled.counts.sum()) == 500


@pytest.mark.data
def test_generate_alibaba_from_the_real_nodes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, data_dir: Path
) -> None:
    if not (data_dir / "alibaba").is_dir():
        pytest.skip(f"no alibaba/ in {data_dir}")
    instance = load_instance(generated(capsys, tmp_path, "alibaba", "--tenants", "5", "--data-dir", str(data_dir)))
    assert int(instance.counts.sum()) == 1_523
    assert instance.resources == ("cpu", "mem", "gpu")
    assert len(instance.tenants) == 5


def test_generate_with_a_missing_data_dir_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "generate", "google", "--data-dir", str(tmp_path / "absent"))
    assert (code, out) == (2, "")
    assert "absent" in err


# -------------------------------------------------------------------------------------- the real console script


def test_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "fairpack"
    if not script.exists():
        pytest.skip(f"console script not installed at {script}")
    done = subprocess.run(
        [str(script), "solve", str(FIG1), "--json"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["verified"] is True
    assert {name: entry["tasks"] for name, entry in data["tenants"].items()} == {"user1": 10, "user2": 10}
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_INSTANCE)
    done = subprocess.run([str(script), "solve", str(bad), "--json"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert str(bad) in done.stderr and "servers[1].capacity.mem" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("args", "code"), [(["solve", str(FIG1), "--json"], 0), (["solve", "missing.yaml"], 2)])
def test_the_program_ends_at_once_yet_delivers_everything(args: list[str], code: int) -> None:
    # `run` ends the process without Python's teardown: threads and exit handlers must still finish,
    # what they write must reach the pipe (stdout block-buffered, as for any reader), and the exit code must
    # be the command's.
    program = (
        "import atexit, importlib, sys, threading, time\n"
        "cli = importlib.import_module('fairpack.solver.cli.main')  # the module (cli.main is also the function)\n"
        "atexit.register(lambda: sys.stdout.write('|exit handler ran'))\n"
        "command = cli.main\n"
        "def main(argv):  # the command, then a thread still at work when it returns\n"
        "    code = command(argv)\n"
        "    threading.Thread(target=lambda: (time.sleep(0.3), sys.stdout.write('|thread finished'))).start()\n"
        "    return code\n"
        "cli.main = main\n"
        "cli.run(sys.argv[1:])\n"
    )
    buffered = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    done = subprocess.run([sys.executable, "-c", program, *args], capture_output=True, text=True, timeout=60,
                          env=buffered)  # fmt: skip
    assert done.returncode == code, done.stderr
    # A thread that is not a daemon is waited for, then the exit handlers run, as at Python's own exit.
    out, thread, handler = done.stdout.rsplit("|", 2)
    assert (thread, handler) == ("thread finished", "exit handler ran")
    if code == 0:
        assert json.loads(out)["verified"] is True
    else:
        assert out == "" and "missing.yaml" in done.stderr


def test_json_stdout_stays_clean_when_native_code_prints(capfd: pytest.CaptureFixture[str], monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Solver libraries can write to file descriptor 1 directly; --json output must still parse."""
    import os

    import fairpack.solver.api
    from fairpack.solver.cli import main

    real_solve = fairpack.solver.api.solve

    def noisy_solve(*args, **kwargs):  # type: ignore[no-untyped-def]
        os.write(1, b"native solver noise\n")
        return real_solve(*args, **kwargs)

    monkeypatch.setattr(fairpack.solver.api, "solve", noisy_solve)
    assert main(["solve", "instances/drfh_fig1.yaml", "--json"]) == 0
    captured = capfd.readouterr()
    assert json.loads(captured.out)["verified"] is True
    assert "native solver noise" in captured.err
