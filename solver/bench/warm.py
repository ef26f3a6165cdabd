"""A warm interpreter per Dask worker that forks the worker's task processes.

A daemonic process (a Dask worker, by default) may not start children through ``multiprocessing``, so
without this every task would be a fresh ``python -m fairpack.solver.bench.child`` paying 1-3 s of
imports. Instead the worker starts, once, ``python -m fairpack.solver.bench.warm`` with ``subprocess``
(which has no such rule): it imports the solver stack (``PRELOAD``) and then, for each line of
task arguments on its standard input, forks a child that runs ``child.run`` and answers with the
child's pid. The worker supervises that pid exactly as a local run supervises its forks: it polls the
child's memory in ``/proc`` and kills it over the task's time or memory limit, and the child itself
sets the address-space backstop. The warm process collects its ended children before each fork (so
their CPU time adds up in its own, as a forkserver's does); when the worker goes, the warm process reads
the end of its input and exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

__all__ = ["PRELOAD", "WarmChild", "available"]

#: Modules a warm interpreter (the local forkserver, or this module's process on a Dask worker) imports once,
#: so that forked tasks start with them loaded.
PRELOAD = (
    "fairpack.solver.bench.child",
    "fairpack.solver.bench.task",
    "fairpack.models.generators",
    "fairpack.models.io",
    "fairpack.models.psplib",
    "fairpack.solver.drfh.filling",
    "fairpack.solver.drfh.int_search",
    "fairpack.solver.hdrf.water_filling",
    "fairpack.solver.drfh.heuristics",
    "fairpack.solver.sim.backlog",
    "fairpack.solver.sim.runs",
    "fairpack.solver.spacetime.milp",
    "fairpack.solver.spacetime.cp",
    "fairpack.solver.backends.highs",
    "fairpack.solver.backends.ortools",
    "highspy",
    "ortools.sat.python.cp_model",
)


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
        # The same fairpack as this worker's, even where it is not the installed one (a source checkout); the
        # package is imported already (this module is part of it).
        root = str(Path(str(sys.modules["fairpack"].__file__)).resolve().parents[1])
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
    """A task process forked by the warm process: the ``_Child`` interface of ``solver.bench.runner``.

    Its end is seen at once through a pidfd (Linux 5.3 on), which also names this very process whatever
    pid is reused later; elsewhere ``/proc`` is polled, the pid and its start time naming the process.
    """

    def __init__(self, args: tuple[str, str, str]) -> None:
        self.pid: int | None = _fork(args)
        self.started = _start_time(self.pid)
        self.fd: int | None = None
        if hasattr(os, "pidfd_open") and self.started is not None:
            with contextlib.suppress(OSError):
                self.fd = os.pidfd_open(self.pid)
        self.ended = self.started is None

    def running(self) -> bool:
        if not self.ended:
            if self.fd is not None:
                self.ended = bool(select.select([self.fd], [], [], 0)[0])
            else:
                assert self.pid is not None
                self.ended = _start_time(self.pid) != self.started
            if self.ended and self.fd is not None:
                os.close(self.fd)
                self.fd = None
        return not self.ended

    def wait(self, seconds: float) -> None:
        if self.fd is not None and not self.ended:
            select.select([self.fd], [], [], seconds)
            return
        deadline = time.monotonic() + seconds
        while self.running() and time.monotonic() < deadline:
            time.sleep(min(0.002, max(deadline - time.monotonic(), 0.0)))

    def kill(self) -> None:
        if self.running():
            assert self.pid is not None
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
        while self.running():
            self.wait(0.01)


def _preload() -> None:
    import importlib

    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def _run_child(args: list[str]) -> None:
    """In the forked child: default signal handling, no protocol pipes, then the task."""
    from fairpack.solver.bench import child

    code = 1
    try:
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
    _preload()
    for line in sys.stdin:
        _reap()
        args = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _run_child(args)
        sys.stdout.write(f"{pid}\n")
        sys.stdout.flush()
    _reap()
    return 0


def _reap() -> None:
    """Collect the children that have ended (until then they are zombies, which the worker reads as ended)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


if __name__ == "__main__":
    raise SystemExit(main())
