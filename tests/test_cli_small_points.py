"""What ``fairpack methods`` lists is what the commands accept; sizes, horizons and the table options refused or
shown sensibly.

* ``fairpack methods`` lists a method's options as the flags they are (``--time-limit``) beside its ``--option``
  settings, and a flag's option given as a setting (``--option time_limit=5``) is refused with the flag named.
* A sweep's or ``fairpack generate``'s size that is negative, not whole, or not finite is refused, naming the file
  and the field (exit 2).
* ``fairpack generate arrivals`` refuses a horizon whose arrivals would not fit a file fairpack reads back, before
  drawing any (a horizon of 3e6 grew to 16.5 GB).
* ``fairpack validate -`` names standard input ``<stdin>``; ``--top 0`` prints no table, only how many rows there
  are.
"""

from __future__ import annotations

import contextlib
import io
import json
import tracemalloc
from pathlib import Path

import pytest

from fairpack.models.generators.arrivals import MAX_ARRIVAL_GROUPS
from fairpack.models.generators.families import FAMILIES
from fairpack.solver.cli import main
from fairpack.solver.cli.main import build_parser, parsers

ROOT = Path(__file__).resolve().parents[1]
FIG1 = ROOT / "instances" / "drfh_fig1.yaml"


def cli(*argv: object, stdin: str | None = None, monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:
    """``fairpack ARGV`` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None and monkeypatch is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


# --- fairpack methods: flags and settings ------------------------------------------------------------


def _flags_of(command: str) -> set[str]:
    parser = build_parser()
    sub = next(p for p in parsers(parser) if p.prog.endswith(f" {command}"))
    return {flag for action in sub._actions for flag in action.option_strings}


def test_every_listed_flag_is_a_flag_of_its_command_and_no_setting() -> None:
    code, out, _ = cli("methods", "--json")
    assert code == 0
    entries = json.loads(out)
    flags = {command: _flags_of(command) for command in ("solve", "simulate")}
    for entry in entries:
        assert set(entry["flags"]) <= flags[entry["command"]], (entry["name"], entry["flags"])
    code, out, _ = cli("methods")
    assert "flags: --placement, --seed, --time-limit, --verbose;" in out and "; options: " not in out


@pytest.mark.parametrize(("command", "option", "flag"), [
    (["simulate", FIG1, "--policy", "fifo"], "time_limit=5", "--time-limit"),
    (["simulate", FIG1, "--policy", "first-fit"], "seed=3", "--seed"),
    (["solve", FIG1, "--method", "drfh"], "time_limit=5", "--time-limit"),
    (["solve", FIG1, "--method", "drfh"], "workers=2", "--workers"),
])  # fmt: skip
def test_an_option_given_as_a_setting_is_refused_with_its_flag(command: list[object], option: str, flag: str) -> None:
    code, _, err = cli(*command, "--option", option)
    key = option.split("=")[0]
    assert code == 2 and f"{key} is an option, not a setting: give it as {flag}" in err, err
    code, _, err = cli(*command, flag, option.split("=")[1])  # the flag itself is accepted
    assert code == 0, err


def test_a_setting_that_shares_an_options_name_stays_a_setting() -> None:
    # fair's slots (tasks per machine) is its own setting, not the slot scheduler's --slots.
    code, _, err = cli("simulate", ROOT / "instances" / "dag_two_jobs.yaml", "--policy", "fair",
                       "--placement", "servers", "--option", "slots=2")  # fmt: skip
    assert code == 0, err


# --- sizes of sweeps and generated instances --------------------------------------------------------


SWEEP = """\
name = "sizes"
[[grid]]
name = "g"
family = "{family}"
sizes = {{{sizes}}}
methods = ["{method}"]
"""


@pytest.mark.parametrize(("family", "sizes", "method", "field", "reason"), [
    ("google-like", "tenants = -3, machines = 10", "drfh", "grid[0].sizes.tenants", "at least 1, got -3"),
    ("google-like", "tenants = 0, machines = 10", "drfh", "grid[0].sizes.tenants", "at least 1, got 0"),
    ("google-like", "tenants = 2.5, machines = 10", "drfh", "grid[0].sizes.tenants", "expected int, got 2.5"),
    ("google-like", "tenants = 3, machines = [10, -1]", "drfh", "grid[0].sizes.machines", "at least 1, got -1"),
    ("arrivals", "tenants = 2, load = -0.5", "online:fifo", "grid[0].sizes.load", "at least 0, got -0.5"),
    ("arrivals", "tenants = 2, horizon = nan", "online:fifo", "grid[0].sizes.horizon", "finite number"),
    ("arrivals", "tenants = 2, horizon = inf", "online:fifo", "grid[0].sizes.horizon", "finite number"),
])  # fmt: skip
def test_a_sweep_refuses_a_negative_fractional_or_infinite_size(tmp_path: Path, family: str, sizes: str, method: str,
                                                                 field: str, reason: str) -> None:  # fmt: skip
    path = tmp_path / "sizes.toml"
    path.write_text(SWEEP.format(family=family, sizes=sizes, method=method))
    code, _, err = cli("bench", "run", path, "--out", tmp_path / "out.parquet")
    assert code == 2, err
    assert f"{path}: {field}: " in err and reason in err, err
    assert not (tmp_path / "out.parquet").exists()


def test_every_family_default_is_a_valid_size() -> None:
    for family in FAMILIES.values():
        assert family.resolve({}) == {name: param.default for name, param in family.params.items()}


def test_generate_refuses_a_negative_size_naming_it() -> None:
    code, out, err = cli("generate", "google-like", "--tenants", "-3")
    assert code == 2 and out == "" and "tenants: must be a whole number of at least 1, got -3" in err, err


def test_generate_arrivals_refuses_a_horizon_it_cannot_write_before_drawing() -> None:
    tracemalloc.start()
    try:
        code, out, err = cli("generate", "arrivals", "--param", "horizon=3e6")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 2 and out == ""
    assert "horizon: about 100,606,586 task groups" in err and f"more than the {MAX_ARRIVAL_GROUPS:,}" in err, err
    assert peak < 50 * 2**20  # nothing drawn: the default horizon's 33,000 groups take some 300 MiB here


def test_generate_arrivals_at_the_limit_still_writes(tmp_path: Path) -> None:
    code, out, err = cli("generate", "arrivals", "--tenants", "2", "--machines", "2", "--param", "horizon=2000")
    assert code == 0, err
    path = tmp_path / "arrivals.yaml"
    path.write_text(out)
    code, out, err = cli("validate", path)
    assert code == 0 and ": valid:" in out, err


# --- validate and --top ------------------------------------------------------------------------------


def test_validate_names_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = cli("validate", "-", stdin=FIG1.read_text(), monkeypatch=monkeypatch)
    assert code == 0 and out.startswith("<stdin>: valid: 2 resources")


def test_top_zero_prints_no_table_only_how_many_rows(tmp_path: Path) -> None:
    path = tmp_path / "jobs.yaml"
    path.write_text("resources: [cpu]\nservers:\n  - {name: node, capacity: {cpu: 4}}\njobs:\n"
                    + "".join(f"  - {{name: j{k}, stages: [{{name: a, tasks: 1, duration: 1, demand: {{cpu: 1}}}}]}}\n"
                              for k in range(3)))  # fmt: skip
    code, out, _ = cli("simulate", path, "--policy", "fifo", "--top", "0")
    assert code == 0
    assert "job  weight" not in out and "more jobs" not in out
    assert "  jobs: 3, none listed (--top N lists them, --format csv lists all)" in out
    code, out, _ = cli("simulate", path, "--policy", "fifo", "--top", "2")
    assert "job  weight" in out and "  ... and 1 more jobs (--top N shows more" in out
