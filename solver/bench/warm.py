"""A warm interpreter per Dask worker that forks the worker's task processes.

A daemonic process (a Dask worker, by default) may not start children through ``multiprocessing``, so
without this every task would be a fresh ``python -m fairpack.solver.bench.child`` paying 1-3 s of
imports. Instead the worker starts, once, ``python -m fairpack.solver.bench.warm`` with ``subprocess``
(which has no such rule): it imports the solver stack (``runner.PRELOAD``) and then, for each line of
task arguments on its standard input, forks a child that runs ``child.run`` and answers with the
child's pid. The worker supervises that pid exactly as a local run supervises its forks: it polls the
child's memory in ``/proc`` and kills it over the task's time or memory limit, and the child itself
sets the address-space backstop. The warm process ignores SIGCHLD, so the kernel reaps its children and
nothing accumulates; when the worker goes, the warm process reads the end of its input and exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

__all__ = ["WarmChild", "available"]


def available() -> bool:
    """Whether forking from a warm process works here (POSIX with ``/proc``)."""
    return hasattr(os, "fork") and Path("/proc/self/stat").is_file()


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks (``/proc/<pid>/stat`` field 22), None when it is gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])


class _WarmProcess:
    """The worker's side of the warm process: start it once, ask it for forks."""

    def __init__(self) -> None:
        import fairpack

        # The same fairpack as this worker's, even where it is not the installed one (a source checkout).
        root = str(Path(fairpack.__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
        self.process = subprocess.Popen([sys.executable, "-m", "fairpack.solver.bench.warm"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True, bufsize=1, env=env)  # fmt: skip

    def alive(self) -> bool:
        return self.process.poll() is None

    def fork(self, args: tuple[str, str, str]) -> int:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(list(args)) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise OSError("the warm process ended")
        return int(answer)


_warm: _WarmProcess | None = None
_warm_lock = threading.Lock()


def _fork(args: tuple[str, str, str]) -> int:
    """A child running ``args`` forked by this process's warm process (started, or restarted, on demand)."""
    global _warm
    with _warm_lock:
        if _warm is None or not _warm.alive():
            _warm = _WarmProcess()
        return _warm.fork(args)


class WarmChild:
    """A task process forked by the warm process: the ``_Child`` interface of ``solver.bench.runner``."""

    def __init__(self, args: tuple[str, str, str]) -> None:
        self.pid: int | None = _fork(args)
        # The pid and its start time name the process: a pid reused after it ends is not it.
        self.started = _start_time(self.pid)

    def running(self) -> bool:
        return self.pid is not None and self.started is not None and _start_time(self.pid) == self.started

    def wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        pause = 0.001
        while self.running() and time.monotonic() < deadline:
            time.sleep(min(pause, max(deadline - time.monotonic(), 0.0)))
            pause = min(2 * pause, 0.05)

    def kill(self) -> None:
        if self.running():
            assert self.pid is not None
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
        while self.running():
            time.sleep(0.001)


def _preload() -> None:
    import importlib

    from fairpack.solver.bench.runner import PRELOAD

    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def _run_child(args: list[str]) -> None:
    """In the forked child: default signal handling, no protocol pipes, then the task."""
    from fairpack.solver.bench import child

    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a task may wait for processes of its own
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)
        child.run(*args)
        code = 0
    except BaseException:  # the row is missing: the supervisor records a crash with the log's tail
        with contextlib.suppress(Exception):
            traceback.print_exc()
            sys.stderr.flush()
    finally:
        os._exit(code)


def main() -> int:
    """``python -m fairpack.solver.bench.warm``: preload, then fork a task per input line, answer its pid."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervising worker decides when tasks stop
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the children
    _preload()
    for line in sys.stdin:
        args = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _run_child(args)
        sys.stdout.write(f"{pid}\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
