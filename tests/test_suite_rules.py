"""Rules of the test suite, kept by machine: no test bounds an elapsed time, and no hang goes unguarded.

A bound on wall (or CPU) time fails on a loaded machine -- ``make test`` under load 4-5 took 29 minutes and
failed on ``11.4 s < 10 s`` for a step that passed alone a minute later -- and a bound loose enough never to
fail catches nothing. So a test checks counted work instead (Python lines, bytes, iterations, decoded
schedules, clock reads; tests/work.py), or a time limit through what the code records and a clock that ticks
by reads (the ``tick_clock`` fixture); how long things take is measured and saved by ``benchmarks/``.

What the scan below flags, in every ``tests/*.py``:

* an ordering comparison (``<``, ``<=``, ``>``, ``>=``, either way round) with an elapsed time on one side and
  anything but zero on the other: a number (``time.perf_counter() - started < 5``, ``elapsed < 10.0``,
  ``wall <= LIMIT + SLACK``, ``data["wall_s"] <= 2``), a limit (``elapsed < budget``), a deadline
  (``time.perf_counter() <= deadline``) or another elapsed time (``fast.wall_s < slow.wall_s``). Elapsed
  times are clock calls (``time.perf_counter()``, ``time.time()``, ``time.monotonic()``,
  ``time.process_time()`` ...), names assigned from them in the same scope (not through the arguments of a
  call: a deadline handed to a solver makes its answer no time), and names, attributes and keys that name a
  duration (``elapsed``, ``wall``, ``*_s`` ...). A sanity check against zero (``solve_s >= 0``) is no speed
  bound and passes; so does elapsed time in a message;
* hypothesis's ``deadline=`` set to anything but ``None`` (a per-example wall-time assertion);
* a hang guard -- ``timeout=`` of a subprocess or a wait, ``signal.alarm`` -- under 60 seconds: such a
  guard is there to turn a hang into a clear failure, never to bound how fast something runs;
* a ``subprocess.run`` (``call``, ``check_call``, ``check_output``) without a ``timeout=``: a child that hangs
  would stall the suite until CI kills it, instead of failing the test with ``TimeoutExpired``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

CLOCKS = {"perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns", "process_time",
          "process_time_ns", "thread_time", "thread_time_ns"}  # fmt: skip
#: Names, attributes and string keys that name a duration in seconds (``wall_s``, ``elapsed``, ``took``).
DURATION = re.compile(r"(^|_)(elapsed|wall|walltime|runtime|duration_s|seconds|secs|took|spent)($|_)|_s$")
#: The least a hang guard may allow, in seconds.
HANG_GUARD_S = 60
#: The subprocess calls that must carry a hang guard.
BLOCKING = {"run", "call", "check_call", "check_output"}


def _is_clock_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr in CLOCKS and isinstance(func.value, ast.Name) and func.value.id in ("time", "timeit")
    return isinstance(func, ast.Name) and func.id in CLOCKS - {"time"}


def _names_duration(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return bool(DURATION.search(node.id))
    if isinstance(node, ast.Attribute):
        return bool(DURATION.search(node.attr))
    if isinstance(node, ast.Subscript):
        keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return any(isinstance(key, ast.Constant) and isinstance(key.value, str) and DURATION.search(key.value)
                   for key in keys)  # fmt: skip
    return False


#: Calls whose value is a time when their argument is one (``max(walls)``, ``round(wall, 1)``, ``x.wall_s.max()``).
PRESERVING = {"max", "min", "round", "float", "int", "abs", "sum", "mean", "median", "item", "total_seconds"}


def _parts(node: ast.AST) -> list[ast.AST]:
    """The sub-expressions whose time-ness ``node`` takes on: not the arguments of an arbitrary call (a deadline
    handed to a solver makes its answer no time), nor the parts of a message."""
    if isinstance(node, ast.JoinedStr):
        return []
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in PRESERVING:
            return []
        return [*node.args, *([func.value] if isinstance(func, ast.Attribute) else [])]
    return list(ast.iter_child_nodes(node))


class _Scope:
    """The clock-derived names of one function (or the module)."""

    def __init__(self, body: list[ast.stmt]) -> None:
        self.timed: set[str] = set()
        assignments = [node for statement in body for node in ast.walk(statement)
                       if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None]
        changed = True
        while changed:  # names assigned from clock readings, and from those names, to a fixed point
            changed = False
            for node in assignments:
                if node.value is not None and self.elapsed(node.value):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        for name in ast.walk(target):
                            if isinstance(name, ast.Name) and name.id not in self.timed:
                                self.timed.add(name.id)
                                changed = True

    def elapsed(self, node: ast.AST) -> bool:
        """Whether ``node`` reads a clock, uses a clock-derived name, or names a duration."""
        if _is_clock_call(node) or _names_duration(node) or (isinstance(node, ast.Name) and node.id in self.timed):
            return True
        return any(self.elapsed(part) for part in _parts(node))


def _constants(tree: ast.Module) -> dict[str, float]:
    """Module-level ``NAME = number`` (or an arithmetic of those)."""
    known: dict[str, float] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            value = _number(statement.value, known)
            if isinstance(target, ast.Name) and value is not None:
                known[target.id] = value
    return known


def _number(node: ast.AST, known: dict[str, float]) -> float | None:
    """The value of a constant arithmetic expression (over module constants), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _number(node.operand, known)
        return None if value is None else (-value if isinstance(node.op, ast.USub) else value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        left, right = _number(node.left, known), _number(node.right, known)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        return left / right if right else None
    return None


def violations(source: str, filename: str = "<test>") -> list[str]:
    """Every place in ``source`` that breaks the rules above, as ``file:line: what``."""
    tree = ast.parse(source, filename)
    known = _constants(tree)
    found: dict[tuple[int, int], str] = {}
    scopes = [tree, *(node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))]
    for holder in scopes:
        scope = _Scope(holder.body)
        for node in ast.walk(holder):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, sides[:-1], sides[1:], strict=True):
                if not isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) or 0 in (_number(left, known),
                                                                                    _number(right, known)):
                    continue  # an equality, or a sanity check against zero
                if scope.elapsed(left) or scope.elapsed(right):
                    found[(node.lineno, node.col_offset)] = (f"{filename}:{node.lineno}: elapsed time in an ordering "
                                                             f"comparison: {ast.unparse(node)}")  # fmt: skip
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    return [*found.values(), *_guards(calls, known, filename)]


def _guards(calls: list[ast.Call], known: dict[str, float], filename: str) -> list[str]:
    """Hypothesis deadlines, hang guards shorter than :data:`HANG_GUARD_S` and subprocesses without one."""
    found = []
    for node in calls:
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr in BLOCKING and isinstance(func.value, ast.Name)
                and func.value.id == "subprocess" and not any(k.arg == "timeout" for k in node.keywords)):
            found.append(f"{filename}:{node.lineno}: subprocess.{func.attr} without a timeout (a hang guard)")
        for keyword in node.keywords:
            unset = isinstance(keyword.value, ast.Constant) and keyword.value.value is None
            if keyword.arg == "deadline" and _is_settings(node) and not unset:
                found.append(f"{filename}:{node.lineno}: a hypothesis deadline (wall time per example): "
                             f"{ast.unparse(keyword)}")  # fmt: skip
            guard = _number(keyword.value, known) if keyword.arg == "timeout" else None
            if guard is not None and guard < HANG_GUARD_S:
                found.append(f"{filename}:{node.lineno}: timeout={guard:g} is a speed bound, not a hang guard "
                             f"(at least {HANG_GUARD_S} s)")  # fmt: skip
        if isinstance(node.func, ast.Attribute) and node.func.attr == "alarm" and node.args:
            guard = _number(node.args[0], known)
            if guard is not None and guard != 0 and guard < HANG_GUARD_S:
                found.append(f"{filename}:{node.lineno}: signal.alarm({guard:g}) is a speed bound, not a hang "
                             f"guard (at least {HANG_GUARD_S} s)")  # fmt: skip
    return found


def _is_settings(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("settings", "register_profile")


#: Files the rule cannot judge, each with why. The Ctrl-C tests send real signals to running processes and wait
#: for them to reach a state (a progress line, CPU used, a handler installed): their waits poll against deadlines
#: of a minute or more, hang guards the syntax alone cannot tell from speed bounds.
EXEMPT = {"test_interrupt.py": "waits for a signalled process, polling against deadlines of a minute or more"}


def test_no_test_compares_an_elapsed_time_with_a_number() -> None:
    found = [line for path in sorted(TESTS.glob("*.py")) if path.name not in EXEMPT
             for line in violations(path.read_text(), path.name)]  # fmt: skip
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("source", [
    "import time\ndef test():\n    started = time.perf_counter()\n    run()\n"
    "    assert time.perf_counter() - started < 5\n",
    "import time\ndef test():\n    started = time.perf_counter()\n    run()\n"
    "    elapsed = time.perf_counter() - started\n    assert elapsed < 10.0\n",
    "import time\ndef test():\n    t0 = time.time()\n    run()\n    took = time.time() - t0\n    assert 2.0 >= took\n",
    "LIMIT = 2.0\nSLACK = 5.0\ndef test(result):\n    assert result.wall <= LIMIT + SLACK\n",
    "def test(data):\n    assert data['wall_s'] <= 2\n",
    "def test(rows):\n    assert rows.loc['slow', 'wall_s'] < 10\n",
    "def test(outcome):\n    assert 0 <= outcome.solve_s < 1.5\n",
    "from time import monotonic\ndef test():\n    start = monotonic()\n    now = monotonic()\n    gap = now - start\n"
    "    assert gap < 3\n",
    "import time\ndef test(budget):\n    begun = time.process_time()\n    run()\n"
    "    assert time.process_time() - begun < budget\n",
    "import time\ndef test(deadline):\n    run()\n    assert time.perf_counter() <= deadline\n",
    "def test(fast, slow):\n    assert fast.wall_s < slow.wall_s  # a speed-up measured in wall time\n",
    "from hypothesis import settings\n@settings(deadline=500)\ndef test():\n    pass\n",
    "import subprocess\ndef test():\n    subprocess.run(['x'], timeout=5)\n",
    "import signal\ndef test():\n    signal.alarm(2)\n",
    "import subprocess\ndef test():\n    subprocess.run(['x'], check=True)\n",
])
def test_the_scan_finds_wall_time_bounds(source: str) -> None:
    assert violations(source), source


@pytest.mark.parametrize("source", [
    # Deadlines handed to the code, a fake clock, elapsed time in a message, sanity checks against zero.
    "import time\ndef test():\n    run(until=time.perf_counter() + 30)\n",
    "import time\ndef test(clock):\n    started = time.perf_counter()\n    result = run()\n"
    "    assert result.ok, f'{time.perf_counter() - started:.1f} s'\n",
    "def test(outcome, data):\n    assert outcome.solve_s >= 0.0 and data['build_s'] >= 0\n",
    "def test(clock):\n    assert clock.reads_past(1.0) <= 10 and clock.reads > 0\n",
    "def test(result):\n    assert result.allocation.tenant_tasks.sum() > 0 and len(result.jobs) < 10\n",
    # Hang guards.
    "import subprocess\ndef test():\n    subprocess.run(['x'], timeout=120, check=False)\n",
    "import signal\nHANG_S = 120\ndef test():\n    signal.alarm(HANG_S)\n    signal.alarm(0)\n",
    "from hypothesis import settings\n@settings(deadline=None, max_examples=5)\ndef test():\n    pass\n",
])
def test_the_scan_passes_what_is_not_a_speed_bound(source: str) -> None:
    assert violations(source) == [], violations(source)
