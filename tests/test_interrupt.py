"""Ctrl-C (SIGINT) has one meaning: the first stops the search or the simulation and the call
returns its best answer so far, verified, with status ``interrupted`` (the CLI: written to stdout and ``-o``, exit
130); a second one quits at once (the CLI: exit 130, one line on stderr; a library call: ``KeyboardInterrupt``).

Real signals, real commands. A command runs in a subprocess on an instance that takes far longer than the test
waits; the signal is sent once the search has started, known from a line of the progress reporter on stderr or
from the CPU time the process has used (CPU seconds, not wall seconds: on a loaded machine they only come later).
Timeouts are hang guards, never speed requirements. In-process tests send the signal only while fairpack's handler
is installed (``interrupt.active()``), so that a stray one can never reach pytest's own.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from fairpack.models.check.saved import check_saved
from fairpack.models.generators.families import FAMILIES
from fairpack.models.io import instance_to_yaml, load_instance
from fairpack.models.result import STATUSES, Result
from fairpack.models.types import Instance
from fairpack.models.view import result_json
from fairpack.solver import interrupt
from fairpack.solver.api import simulate, solve
from fairpack.solver.budget import Budget
from fairpack.solver.cli import main
from fairpack.solver.lp import LinearProgram
from fairpack.solver.progress import reporting
from fairpack.solver.registry import get_method

ROOT = Path(__file__).resolve().parents[1]
FIG1 = ROOT / "instances" / "drfh_fig1.yaml"
#: Seconds after which a command or a call that should have ended counts as hung (never a speed requirement).
HANG_S = 240.0
#: CPU seconds a command has used before it is interrupted: past the interpreter's start, the imports and reading
#: the instance (about 2 s), well inside the run (which takes 20 s of CPU or more).
CPU_BEFORE_INTERRUPT = 5.0


def _generated(family: str, params: dict[str, Any], seed: int) -> Instance:
    return FAMILIES[family].instance(params, seed, None)


def _write(tmp_path: Path, name: str, instance: Instance) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(instance_to_yaml(instance))
    return path


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds process ``pid`` has used (every thread); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture(autouse=True)
def _sigint_not_ignored() -> Iterator[None]:
    """Each test here meets SIGINT as an interactive Python does (its default handler), and the worker's own
    disposition is put back after: a suite started as a background job runs with SIGINT ignored, which fairpack
    rightly keeps, and the signals these tests send would then never arrive."""
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if ignored:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _sigint_default() -> None:
    """In the child before it runs: SIGINT back to its default. A test suite started as a background job (``make
    test &`` from a script) runs with SIGINT ignored, every child inherits that, and fairpack rightly keeps an
    ignored SIGINT ignored: the Ctrl-C these tests send would then never arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Command:
    """``fairpack ARGS`` in a subprocess: stdout to a file, stderr read line by line as it comes."""

    def __init__(self, *args: str, new_session: bool = False) -> None:
        self.stdout = tempfile.TemporaryFile("w+")  # noqa: SIM115 (read once the process has ended)
        self.process = subprocess.Popen([sys.executable, "-m", "fairpack", *args], cwd=ROOT, stdout=self.stdout,
                                        stderr=subprocess.PIPE, text=True, start_new_session=new_session,
                                        preexec_fn=_sigint_default)  # fmt: skip
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for_line(self, wanted: Callable[[str], bool]) -> str:
        """The first stderr line ``wanted`` accepts (fails if the command ends or hangs first)."""
        ends = time.monotonic() + HANG_S
        while time.monotonic() < ends:
            try:
                line = self.lines.get(timeout=1.0)
            except queue.Empty:
                continue
            if line is None:
                break
            self.stderr.append(line)
            if wanted(line):
                return line
        self.process.kill()
        pytest.fail(f"no such line on stderr: {self.stderr[-5:]}")

    def wait_for_cpu(self, seconds: float) -> None:
        ends = time.monotonic() + HANG_S
        while _cpu_seconds(self.process.pid) < seconds:
            if self.process.poll() is not None or time.monotonic() > ends:
                self.process.kill()
                pytest.fail(f"the command ended (or hung) before using {seconds} s of CPU: {self.process.returncode}")
            time.sleep(0.05)

    def interrupt(self) -> None:
        self.process.send_signal(signal.SIGINT)

    def finish(self) -> tuple[int, str, list[str]]:
        """Exit code, stdout and the stderr lines, once the command has ended (hang guard: HANG_S)."""
        try:
            code = self.process.wait(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            pytest.fail(f"the command did not end within {HANG_S} s of the interrupt")
        while (line := self.lines.get(timeout=HANG_S)) is not None:
            self.stderr.append(line)
        self.stdout.seek(0)
        return code, self.stdout.read(), self.stderr


def _progress_line(line: str) -> bool:
    return "incumbent" in line


def _assert_interrupted_result(instance_path: Path, out: Path, stdout: str) -> dict[str, Any]:
    """stdout holds the result, ``-o`` the same, status ``interrupted``, verified, and ``fairpack check`` agrees."""
    data = json.loads(stdout)
    assert data == json.loads(out.read_text())
    assert data["status"] == "interrupted" and data["verified"] is True, (data["status"], data.get("message"))
    assert data["message"].startswith("interrupted"), data["message"]
    assert "time limit" not in data["message"], data["message"]
    assert main(["check", str(instance_path), str(out)]) == 0
    return data


# --- the command line ----------------------------------------------------------------------------------------


def test_spacetime_cp_returns_its_incumbent_at_the_first_ctrl_c(tmp_path: Path) -> None:
    # 20 random DAG jobs, 57 stages: the LNS is still improving after a minute.
    path = _write(tmp_path, "dag20", _generated("dag-random", {"jobs": 20}, 3))
    out = tmp_path / "out.json"
    command = Command("solve", str(path), "--method", "spacetime-cp", "--time-limit", "120", "--json", "-o", str(out))
    command.wait_for_line(_progress_line)
    command.interrupt()
    code, stdout, stderr = command.finish()
    assert code == 130, stderr
    assert interrupt.FIRST_NOTICE in stderr and interrupt.SECOND_NOTICE not in stderr
    data = _assert_interrupted_result(path, out, stdout)
    assert data["bound"] is not None and data["gap"] > 0  # stopped before the proof: the gap to the bound so far


def test_drfh_int_keeps_its_incumbent_at_the_first_ctrl_c(tmp_path: Path) -> None:
    # 100 tenants on 200 distinct machines: the level search takes minutes; HiGHS is stopped from its callbacks.
    path = _write(tmp_path, "google", _generated("google-like", {"tenants": 100, "machines": 200, "distinct": True}, 1))
    out = tmp_path / "out.json"
    command = Command("solve", str(path), "--method", "drfh-int", "--json", "-o", str(out))
    command.wait_for_line(lambda line: "drfh-int" in line and _progress_line(line))
    command.interrupt()
    code, stdout, stderr = command.finish()
    assert code == 130, stderr
    data = _assert_interrupted_result(path, out, stdout)
    assert data["objective"] > 0 and data["bound"] >= data["objective"]


def test_a_tetrisched_simulation_stops_where_it_got_to(tmp_path: Path) -> None:
    # 300 soft-constraint jobs, re-planned with CP-SAT at every event: 25 s of CPU. CP-SAT's own SIGINT catching
    # used to take the signal, cut one cycle's plan short and let the run go on to a different result, silently.
    path = _write(tmp_path, "soft", _generated("soft", {"jobs": 300}, 1))
    out = tmp_path / "out.json"
    command = Command("simulate", str(path), "--policy", "tetrisched", "--option", "deterministic=true", "--json",
                      "-o", str(out))  # fmt: skip
    command.wait_for_cpu(CPU_BEFORE_INTERRUPT)
    command.interrupt()
    code, stdout, stderr = command.finish()
    assert code == 130, stderr
    data = _assert_interrupted_result(path, out, stdout)
    assert data["stopped_at"] >= 0 and data["unfinished_jobs"]
    assert data["message"].startswith(f"interrupted at simulated time {data['stopped_at']:.6g}")


def test_a_dag_heuristic_on_a_large_mix_stops_at_the_first_ctrl_c(tmp_path: Path) -> None:
    # Carbyne on 1,000 random DAG jobs: the fair-share schedule, then its own, 20 s of CPU.
    path = _write(tmp_path, "dag1000", _generated("dag-random", {"jobs": 1000}, 2))
    out = tmp_path / "out.json"
    command = Command("solve", str(path), "--method", "carbyne", "--json", "-o", str(out))
    command.wait_for_cpu(CPU_BEFORE_INTERRUPT)
    command.interrupt()
    code, stdout, stderr = command.finish()
    assert code == 130, stderr
    data = _assert_interrupted_result(path, out, stdout)
    assert "stopped_at" in data and data["unfinished_jobs"]


def test_a_second_ctrl_c_quits_at_once(tmp_path: Path) -> None:
    """The handler the commands install, on a stand-in for a search that does not stop (a PDLP or SCIP solve in
    progress): the first SIGINT is announced, the second ends the process with exit 130 and one line."""
    script = (
        "import sys, time\n"
        "from fairpack.solver import interrupt\n"
        "with interrupt.handling(130, first_notice=interrupt.FIRST_NOTICE, second_notice=interrupt.SECOND_NOTICE):\n"
        "    print('ready', file=sys.stderr, flush=True)\n"
        "    ends = time.monotonic() + 600\n"
        "    while time.monotonic() < ends:\n"
        "        pass\n"
        "print('not reached', flush=True)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=_sigint_default)  # fmt: skip
    assert process.stderr is not None
    assert process.stderr.readline().strip() == "ready"
    process.send_signal(signal.SIGINT)
    assert process.stderr.readline().strip() == interrupt.FIRST_NOTICE
    process.send_signal(signal.SIGINT)
    try:
        stdout, rest = process.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("the second SIGINT did not end the process")
    assert process.returncode == 130
    assert rest.splitlines() == [interrupt.SECOND_NOTICE] and stdout == ""


def test_a_second_ctrl_c_during_a_command_ends_it_with_130(tmp_path: Path) -> None:
    path = _write(tmp_path, "dag20", _generated("dag-random", {"jobs": 20}, 3))
    command = Command("solve", str(path), "--method", "spacetime-cp", "--time-limit", "120", "--json")
    command.wait_for_line(_progress_line)
    command.interrupt()
    command.wait_for_line(lambda line: line == interrupt.FIRST_NOTICE)
    command.interrupt()
    code, stdout, stderr = command.finish()
    assert code == 130, stderr
    # The second signal ends the command at once, unless the first had already let it write its whole result.
    assert stderr[-1] == interrupt.SECOND_NOTICE or json.loads(stdout)["status"] == "interrupted", stderr


def _group_alive(group: int) -> list[int]:
    """Processes of process group ``group`` that are still running (zombies are done)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            alive.append(int(entry.name))
    return alive


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def _sweep(tmp_path: Path) -> Path:
    sweep = tmp_path / "long.toml"
    sweep.write_text('name = "long"\nseeds = [0, 1, 2]\ntime_limit = 120\ntask_timeout = 200\n\n'
                     '[[grid]]\nname = "quick"\nfamily = "google-like"\nsizes = {tenants = 5, machines = 20}\n'
                     'methods = ["drfh"]\n\n'
                     '[[grid]]\nname = "dag"\nfamily = "dag-random"\nsizes = {jobs = 20}\n'
                     'methods = ["spacetime-cp"]\n')  # fmt: skip
    return sweep


@pytest.mark.parametrize("signals", [1, 2])
def test_ctrl_c_stops_a_sweep_and_leaves_no_task_running(tmp_path: Path, signals: int) -> None:
    """Ctrl-C at a terminal reaches the whole process group: the sweep stops starting tasks, kills the running ones
    (which ignore the signal themselves), saves the table without their rows and exits 130; a second Ctrl-C quits
    at once, the task processes killed first."""
    pytest.importorskip("pyarrow")
    from fairpack.solver.bench.cli import SECOND_NOTICE as BENCH_SECOND_NOTICE
    from fairpack.solver.bench.table import read_results

    out = tmp_path / "long.parquet"
    command = Command("bench", "run", str(_sweep(tmp_path)), "--out", str(out), "--workers", "1", "--no-progress",
                      new_session=True)  # fmt: skip
    group = command.process.pid
    ends = time.monotonic() + HANG_S
    while not any(_cpu_seconds(task) > 1.0 for server in _children(group) for task in _children(server)):
        if command.process.poll() is not None or time.monotonic() > ends:
            command.process.kill()
            pytest.fail("no task process started")
        time.sleep(0.1)
    os.killpg(group, signal.SIGINT)
    if signals == 2:  # soon after (two signals at the same instant would be delivered as one)
        time.sleep(0.02)
        os.killpg(group, signal.SIGINT)
    code, _, stderr = command.finish()
    assert code == 130, stderr
    stopped = any("interrupted; the finished rows are in" in line for line in stderr)
    if signals == 1:
        assert stopped, stderr
        # Saved: the quick rows, run first (one task at a time), and none of the task it stopped.
        frame = read_results(out)
        assert sorted(frame["grid"]) == ["quick"] * 3 and set(frame["status"]) == {"optimal"}, frame
    else:  # the second signal quits at once, unless the first had already let the sweep end
        assert stderr[-1] == BENCH_SECOND_NOTICE or stopped, stderr
    ends = time.monotonic() + 30
    while _group_alive(group) and time.monotonic() < ends:
        time.sleep(0.1)
    assert _group_alive(group) == [], "task processes were left running"


# --- the library -------------------------------------------------------------------------------------------------


def _send_sigint_when(ready: Callable[[], bool], times: int = 1) -> threading.Thread:
    """A thread that sends this process SIGINT once ``ready()`` holds, only while fairpack's handler is installed
    (never to pytest's own); between two signals it waits for the first to be seen."""

    def run() -> None:
        ends = time.monotonic() + HANG_S
        while time.monotonic() < ends and not (ready() and interrupt.active()):
            time.sleep(0.01)
        for _ in range(times):
            if not interrupt.active():
                return
            os.kill(os.getpid(), signal.SIGINT)
            while time.monotonic() < ends and interrupt.active() and not interrupt.requested():
                time.sleep(0.01)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


class _Lines:
    """A stream for the progress reporter that remembers whether it was written to."""

    def __init__(self) -> None:
        self.written = threading.Event()

    def write(self, text: str) -> int:
        self.written.set()
        return len(text)

    def flush(self) -> None:
        pass


@pytest.fixture()
def restored_signals() -> Iterator[None]:
    """The test must leave SIGINT's handler and the wake-up descriptor as it found them."""
    handler = signal.getsignal(signal.SIGINT)
    wakeup = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(wakeup)
    yield
    assert signal.getsignal(signal.SIGINT) is handler
    assert signal.set_wakeup_fd(wakeup) == wakeup
    assert not interrupt.active() and not interrupt.requested()


def test_a_library_solve_returns_its_best_answer_and_restores_the_handler(restored_signals: None) -> None:
    instance = _generated("dag-random", {"jobs": 20}, 3)
    lines = _Lines()
    thread = _send_sigint_when(lines.written.is_set)
    with reporting(lines, every=0.5):  # type: ignore[arg-type]
        result = solve(instance, "spacetime-cp", time_limit=120)
    thread.join(HANG_S)
    assert result.status == "interrupted" and result.verified and result.schedule is not None, result.message
    assert result.wall_s < 100  # the interrupt ended the call, not the limit (a hang guard, not a speed)


def test_a_second_ctrl_c_raises_keyboard_interrupt_in_a_library_call(restored_signals: None) -> None:
    thread = _send_sigint_when(lambda: True, times=2)
    ends = time.monotonic() + HANG_S
    with pytest.raises(KeyboardInterrupt), interrupt.handling() as call:
        while time.monotonic() < ends:  # a search that does not stop at the first
            pass
    thread.join(HANG_S)
    assert call.interrupted and time.monotonic() < ends


def test_the_handler_is_installed_only_in_the_main_thread_and_not_over_sig_ign(restored_signals: None) -> None:
    seen: list[bool] = []

    def elsewhere() -> None:
        with interrupt.handling():
            seen.append(interrupt.active())

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert seen == [False]
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupt.handling():
            assert not interrupt.active() and signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    with interrupt.handling(), interrupt.handling() as inner:  # nested: one handler
        assert interrupt.active() and not inner.interrupted


def test_an_interrupted_budget_looks_expired(restored_signals: None) -> None:
    thread = _send_sigint_when(lambda: True)
    with interrupt.handling() as call:
        ends = time.monotonic() + HANG_S
        while not interrupt.requested() and time.monotonic() < ends:
            time.sleep(0.01)
        limited, unlimited = Budget.of(1000.0), Budget()
        assert limited.expired() and unlimited.expired() and limited.part(0.5).expired()
        assert limited.remaining() == limited.floor and unlimited.remaining() == unlimited.floor
        assert limited.left() == 0.0 and unlimited.left() == 0.0
    thread.join(HANG_S)
    assert call.interrupted and not Budget().expired() and Budget().remaining() is None


def _hard_milp() -> LinearProgram:
    """A knapsack-like MILP (300 integers, 200 rows) that neither HiGHS nor CBC closes for minutes."""
    rng = np.random.default_rng(0)
    n, m = 300, 200
    matrix = rng.integers(0, 30, (m, n)).astype(float)
    matrix[matrix < 20] = 0
    return LinearProgram(rng.integers(1, 100, n).astype(float), sp.csr_matrix(matrix), np.full(m, -np.inf),
                         matrix.sum(axis=1) * 2.3, np.zeros(n), np.full(n, 10.0), np.ones(n, dtype=bool), "max")


def test_highs_and_cbc_stop_at_ctrl_c_with_their_incumbent(restored_signals: None) -> None:
    """A knapsack-like MILP neither solver closes for minutes: HiGHS stops from its interrupt callbacks, CBC (a
    process of its own, which a terminal's Ctrl-C reaches directly) when the signal is passed on to it."""
    from fairpack.solver.backends import installed
    from fairpack.solver.backends.cbc import CbcBackend
    from fairpack.solver.backends.highs import HighsBackend

    lp = _hard_milp()
    lines = _Lines()
    thread = _send_sigint_when(lines.written.is_set)
    with reporting(lines, every=0.0), interrupt.handling() as call:  # type: ignore[arg-type]
        outcome = HighsBackend().solve(lp, time_limit=600)
    thread.join(HANG_S)
    assert call.interrupted and outcome.status == "time_limit" and outcome.x is not None, outcome.message
    assert outcome.solve_s < 300  # the limit never came: a hang guard
    if "cbc" not in installed():
        return
    thread = _send_sigint_when(_cbc_busy)
    with interrupt.handling() as call:
        outcome = CbcBackend().solve(lp, time_limit=600)
    thread.join(HANG_S)
    assert call.interrupted and outcome.status == "time_limit" and outcome.x is not None, outcome.message
    assert outcome.solve_s < 300


def _cbc_busy() -> bool:
    """Whether a ``cbc`` process of this one has been solving for a moment."""
    for child in _children(os.getpid()):
        try:
            if Path(os.readlink(f"/proc/{child}/exe")).name == "cbc" and _cpu_seconds(child) > 0.3:
                return True
        except OSError:
            continue
    return False


def test_scip_leaves_ctrl_c_to_fairpack(restored_signals: None) -> None:
    """SCIP catches SIGINT by default (like CP-SAT): it took the signal for itself and the call went on as if
    nothing had happened. Now fairpack sees it (SCIP through OR-Tools cannot be stopped from outside: this solve
    runs to its own limit, and every later step of the call is skipped)."""
    from fairpack.solver.backends import installed
    from fairpack.solver.backends.ortools import OrToolsBackend

    if "ortools" not in installed():
        pytest.skip("OR-Tools is not installed")
    lp = _hard_milp()
    began = time.monotonic()
    thread = _send_sigint_when(lambda: time.monotonic() > began + 0.5)
    with interrupt.handling() as call:
        outcome = OrToolsBackend().solve(lp, time_limit=3.0, algorithm="scip")
    thread.join(HANG_S)
    assert call.interrupted and outcome.status == "time_limit", outcome.message


# --- nothing changes without an interrupt -------------------------------------------------------------------------


def _in_a_thread(call: Callable[[], Result]) -> Result:
    """``call()`` in another thread, where no handler is installed (and HiGHS gets no interrupt callbacks)."""
    found: list[Result] = []
    thread = threading.Thread(target=lambda: found.append(call()))
    thread.start()
    thread.join()
    return found[0]


def test_an_uninterrupted_deterministic_run_is_unchanged(restored_signals: None) -> None:
    # The numbers of the run before Ctrl-C had a meaning (tetrisched, deterministic, on 30 soft-constraint jobs).
    instance = _generated("soft", {"jobs": 30}, 1)
    result = simulate(instance, "tetrisched", extra={"deterministic": True})
    data = result_json(instance, result)
    assert (result.status, data["utility"], data["makespan"], result.extra["cycles"]) == ("feasible", 2471.0, 25.0, 20)
    assert data["avg_jct"] == pytest.approx(5.166666666666667, abs=1e-12)
    again = _in_a_thread(lambda: simulate(instance, "tetrisched", extra={"deterministic": True}))
    assert result.schedule is not None and again.schedule is not None
    for name in ("start", "end", "machine"):
        assert np.array_equal(getattr(result.schedule, name), getattr(again.schedule, name)), name


def test_highs_answers_the_same_with_its_interrupt_callbacks(restored_signals: None) -> None:
    google = _generated("google-like", {"tenants": 10, "machines": 40, "distinct": True}, 0)
    for instance, method in ((load_instance(FIG1), "drfh-int"), (google, "drfh")):
        here = solve(instance, method)  # the main thread: the handler installed, HiGHS asks its callbacks
        there = _in_a_thread(functools.partial(solve, instance, method))
        assert here.status == there.status and here.allocation is not None and there.allocation is not None
        assert np.array_equal(here.allocation.tasks, there.allocation.tasks), method


# --- the status ----------------------------------------------------------------------------------------------------


def test_interrupted_is_a_status_everywhere_statuses_are_listed() -> None:
    from fairpack.models.check.saved import ANSWER_STATUSES
    from fairpack.models.check.saved import STATUSES as SAVED_STATUSES

    # A run cut short may come with its best answer so far, or with none: fairpack check takes both.
    assert "interrupted" in STATUSES and "interrupted" in SAVED_STATUSES and "interrupted" in ANSWER_STATUSES


def test_a_saved_interrupted_result_without_an_answer_has_nothing_to_verify(tmp_path: Path) -> None:
    instance = load_instance(FIG1)
    rules = get_method("drfh-int").saved_rules(None, True)
    data = result_json(instance, Result("interrupted", "drfh-int", "highs",
                                        message="interrupted (Ctrl-C) before any answer was found"))  # fmt: skip
    # A run stopped before any answer is a known status, but fairpack check has nothing to verify (exit 1).
    checked = check_saved(instance, data, rules)
    assert not checked.verified and any("nothing to verify" in v for v in checked.violations), checked.violations
    assert not check_saved(instance, {**data, "verified": True}, rules).verified
    assert not check_saved(instance, {**data, "status": "stopped"}, rules).verified


def test_a_sweep_runs_an_interrupted_row_again(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from fairpack.solver.bench.table import ResultTable

    table = ResultTable(tmp_path / "t.parquet")
    table.add({"key": "a", "status": "optimal"})
    table.add({"key": "b", "status": "interrupted"})
    assert "a" in table and "b" not in table and "c" not in table


def test_the_cli_exit_code_of_an_interrupted_result(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    import fairpack.solver.drfh.methods as drivers

    def stopped(instance: Instance, options: Any, budget: Any) -> Result:
        return Result("interrupted", "drfh", "highs", message="interrupted (Ctrl-C) before any answer was found")

    monkeypatch.setattr(drivers, "run_drfh", stopped)
    assert main(["solve", str(FIG1), "--method", "drfh", "--json"]) == 130
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "interrupted" and data["verified"] is False
