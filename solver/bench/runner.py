"""Running a sweep: one task in its own process -> one row; a local pool of them, or a Dask cluster.

Every task runs in a child process so that a hang or a memory blow-up kills the task, not the sweep:

* the solver gets the task's ``time_limit``; the supervisor kills the process after ``task_timeout``
  seconds (row status ``task_timeout``);
* the supervisor polls the child's resident memory (``/proc/<pid>/status``) and kills it above
  ``memory_mb`` (``task_memory``); inside the child an ``RLIMIT_AS`` backstop turns allocations too fast
  for polling into a ``MemoryError`` (also ``task_memory``);
* a child that dies without a row is ``task_crashed`` (its log's last lines go into ``message``).

Locally the children are forks of a forkserver that has the solver stack preloaded (a task starts in
milliseconds instead of the ~1.5 s an interpreter needs to import it); ``workers`` threads each supervise
one child at a time. On a Dask cluster (``dask.distributed``) every task is the same :func:`execute`
call on a worker; daemonic worker processes (Dask's default) may not fork children of their own
through ``multiprocessing``, so there each worker starts one warm interpreter with the solver stack
preloaded (``solver.bench.warm``) that forks the worker's tasks, under the same limits; a fresh
``python -m solver.bench.child`` interpreter per task (1-3 s of imports each) remains only where there
is no ``fork``. Workers started with ``DASK_DISTRIBUTED__WORKER__DAEMON=False`` fork their tasks from a
preloaded forkserver as a local run does. Workers need fairpack installed, and the data folder at the
same path.
Peak memory (``peak_rss_mb``) is the child's ``ru_maxrss`` (or its ``VmHWM`` when it was killed).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from fairpack.solver import interrupt
from fairpack.solver.bench import child, warm
from fairpack.solver.bench.sweep import Sweep, Task
from fairpack.solver.bench.task import (
    HARNESS_STATUSES,
    MESSAGE_CHARS,
    STATUS_CRASHED,
    STATUS_MEMORY,
    STATUS_TIMEOUT,
    task_row,
)

LOG_TAIL_LINES = 5
#: Set on Ctrl-C: supervisors kill their children instead of waiting for them.
_STOP = threading.Event()
#: The task processes being supervised now (:func:`kill_children`).
_LIVE: set[_Child] = set()
_LIVE_LOCK = threading.Lock()


# --- one task, in a child process ----------------------------------------------------------------------


class _Child(Protocol):
    @property
    def pid(self) -> int | None: ...

    def running(self) -> bool: ...

    def wait(self, seconds: float) -> None: ...

    def kill(self) -> None: ...


class _Forked:
    """A child forked from the preloaded forkserver."""

    def __init__(self, context: Any, args: tuple[str, str, str]) -> None:
        self.process = context.Process(target=child.run, args=args, name="fairpack-task")
        self.process.start()
        self.pid = self.process.pid

    def running(self) -> bool:
        return bool(self.process.is_alive())

    def wait(self, seconds: float) -> None:
        self.process.join(seconds)

    def kill(self) -> None:
        self.process.kill()
        self.process.join()


class _Spawned:
    """A child that is a fresh interpreter (``python -m solver.bench.child``)."""

    def __init__(self, args: tuple[str, str, str]) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "fairpack.solver.bench.child", *args],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)  # fmt: skip
        self.pid = self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None

    def wait(self, seconds: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(seconds)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


_context: Any = None
_context_lock = threading.Lock()


def _forkserver() -> Any:
    """The forkserver context with the solver stack preloaded, or None where there is none (Windows)."""
    global _context
    with _context_lock:
        if _context is None:
            try:
                context = multiprocessing.get_context("forkserver")
            except ValueError:
                return None
            context.set_forkserver_preload(list(warm.PRELOAD))
            _context = context
        return _context


def _start(args: tuple[str, str, str]) -> _Child:
    context = _forkserver()
    # multiprocessing refuses children of daemonic processes (Dask's worker processes are daemonic): there
    # the worker's warm process forks the task (``solver.bench.warm``), else a fresh interpreter runs it.
    if context is None or multiprocessing.current_process().daemon:
        if warm.available():
            with contextlib.suppress(OSError):  # a warm process that cannot start: a fresh interpreter instead
                return warm.WarmChild(args)
        return _Spawned(args)
    return _Forked(context, args)


def kill_children() -> None:
    """Kill every task process this process supervises, at once and from any thread: before a second Ctrl-C ends
    the sweep without waiting for them (task processes ignore SIGINT, so nothing else would stop them)."""
    with _LIVE_LOCK:
        pids = [child.pid for child in _LIVE]
    for pid in pids:
        if pid is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _memory_kib(pid: int | None) -> tuple[int, int]:
    """(resident, peak resident) KiB of a process from ``/proc``; (0, 0) where that is unavailable."""
    values = {"VmRSS:": 0, "VmHWM:": 0}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            parts = line.split()
            if parts and parts[0] in values:
                values[parts[0]] = int(parts[1])
    except (OSError, ValueError, IndexError):
        pass
    return values["VmRSS:"], values["VmHWM:"]


def _supervise(child: _Child, task: Task, started: float) -> tuple[str | None, float]:
    """Wait for ``child``; kill it over the task's time or memory limit. Returns (harness status, peak KiB)."""
    limit_kib = task.limits.memory_mb * 1024
    peak, pause = 0, 0.005
    while child.running():
        resident, high = _memory_kib(child.pid)
        peak = max(peak, high)
        if resident > limit_kib:
            child.kill()
            return STATUS_MEMORY, peak
        if time.monotonic() - started > task.limits.task_timeout or _STOP.is_set():
            child.kill()
            return STATUS_TIMEOUT, peak
        child.wait(pause)
        pause = min(2 * pause, 0.2)  # short tasks return fast; long ones are polled five times a second
    return None, peak


def _log_tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(lines[-LOG_TAIL_LINES:])


def execute(task: Task) -> dict[str, Any]:
    """Run ``task`` in a child process under its limits and return its row (never raises for the task).

    This is what local threads and Dask workers call.
    """
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fairpack-task-") as folder:
        task_path, result_path, log_path = (Path(folder) / name for name in ("task.pkl", "row.pkl", "task.log"))
        task_path.write_bytes(pickle.dumps(task))
        child = _start((str(task_path), str(result_path), str(log_path)))
        with _LIVE_LOCK:
            _LIVE.add(child)
        try:
            outcome, peak_kib = _supervise(child, task, started)
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(child)
        row: dict[str, Any] | None = None
        if outcome is None and result_path.is_file():
            row = pickle.loads(result_path.read_bytes())
        if row is None:
            row = task_row(task)
            tail = _log_tail(log_path)
            status = outcome or STATUS_CRASHED
            if status == STATUS_CRASHED and any(word in tail for word in ("MemoryError", "bad_alloc", "allocate")):
                status = STATUS_MEMORY
            reason = {STATUS_TIMEOUT: f"killed after the task timeout of {task.limits.task_timeout:g} s",
                      STATUS_MEMORY: f"over the memory limit of {task.limits.memory_mb:g} MiB",
                      STATUS_CRASHED: "the task's process died without a result"}[status]  # fmt: skip
            row.update(status=status, message=f"{reason}{': ' + tail if tail else ''}"[:MESSAGE_CHARS])
    row["wall_s"] = time.monotonic() - started
    row["peak_rss_mb"] = max(float(row.get("peak_rss_mb") or 0.0), peak_kib / 1024)
    return row


# --- many tasks ----------------------------------------------------------------------------------------

RowSink = Callable[[dict[str, Any]], None]


def _progress(total: int, enabled: bool, description: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, disable=not enabled, desc=description, unit="task", dynamic_ncols=True)


def run_local(tasks: Iterable[Task], workers: int, sink: RowSink, progress: bool = True) -> None:
    """Run ``tasks`` with at most ``workers`` task processes at a time; ``sink`` gets every row as it ends."""
    tasks = list(tasks)
    _STOP.clear()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool, _progress(len(tasks), progress, "tasks") as bar:
        futures = [pool.submit(execute, task) for task in tasks]
        try:
            for future in as_completed(futures):
                if interrupt.requested():  # Ctrl-C (its handler raises too): no row finished after it is recorded
                    raise KeyboardInterrupt
                sink(future.result())
                bar.update(1)
        except BaseException:
            _STOP.set()  # running children are killed; queued tasks never start
            for future in futures:
                future.cancel()
            raise


#: Seconds to wait for a Dask scheduler to answer before the sweep is refused.
CONNECT_TIMEOUT = 10.0


def connect(scheduler: str, timeout: float = CONNECT_TIMEOUT) -> Any:
    """A Dask client of the scheduler at ``scheduler``; an address where nothing answers within ``timeout``
    seconds is refused (``OptionError``, the CLI's exit 2) naming the address, before any task is sent."""
    from dask.distributed import Client

    from fairpack.solver.registry import OptionError

    try:
        return Client(scheduler, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as error:
        raise OptionError(f"no Dask scheduler answered at {scheduler} within {timeout:g} s "
                          f"({type(error).__name__}: {error})", "--scheduler") from None  # fmt: skip


def run_dask(tasks: Iterable[Task], scheduler: Any, sink: RowSink, progress: bool = True,
             connect_timeout: float = CONNECT_TIMEOUT) -> None:  # fmt: skip
    """Run ``tasks`` on a Dask cluster, each through :func:`execute`: ``scheduler`` is its address
    (``tcp://host:port``) or a client already connected (:func:`connect`).

    A task whose worker dies (or that fails in Dask itself) becomes a ``task_crashed`` row.
    """
    from dask.distributed import as_completed as dask_completed

    tasks = list(tasks)
    client = connect(scheduler, connect_timeout) if isinstance(scheduler, str) else scheduler
    with client, _progress(len(tasks), progress, "tasks (dask)") as bar:
        futures = client.map(execute, tasks, pure=False)
        owner = {future.key: task for future, task in zip(futures, tasks, strict=True)}
        for future in dask_completed(futures):
            try:
                row = future.result()
            except Exception as error:  # a lost worker is recorded, the sweep goes on
                row = task_row(owner[future.key])
                row.update(status=STATUS_CRASHED, message=f"{type(error).__name__}: {error}"[:MESSAGE_CHARS])
            sink(row)
            bar.update(1)


@dataclass(frozen=True)
class RunSummary:
    """What a call to :func:`run_sweep` did."""

    tasks: int  # tasks in the sweep (grids whose data is missing excluded)
    executed: int  # run now
    skipped: int  # already in the table
    failed: int  # run now and ended in error or a harness status
    skipped_grids: tuple[str, ...]  # grids left out for missing data
    out: Path

    def __post_init__(self) -> None:
        if self.executed + self.skipped != self.tasks or not 0 <= self.failed <= self.executed:
            raise ValueError(f"inconsistent counts: {self}")


def run_sweep(
    sweep: Sweep,
    out: str | Path,
    workers: int | None = None,
    scheduler: str | None = None,
    data_dir: str | Path | None = None,
    progress: bool = True,
    flush_seconds: float = 30.0,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> RunSummary:
    """Run every task of ``sweep`` not yet in the table at ``out`` and save the table (Parquet and CSV).

    Parameters
    ----------
    sweep
        A validated sweep (:func:`fairpack.solver.bench.sweep.load_sweep`).
    out
        The Parquet file; rows already in it are kept and their tasks skipped (resumable). A CSV copy is
        written next to it.
    workers
        Task processes at a time for a local run (default: the CPU count). Ignored with ``scheduler``.
    scheduler
        A Dask scheduler address; the tasks then run on that cluster.
    data_dir
        The shared data folder; grids of families that need data it lacks are skipped (listed in the
        summary), not recorded.
    progress
        Show a tqdm progress bar on stderr.
    flush_seconds
        Save the table at least this often while tasks finish, so an interrupted run loses little.
    connect_timeout
        Seconds to wait for the Dask scheduler before refusing the sweep (``OptionError``).

    Returns
    -------
    RunSummary
    """
    from fairpack.solver.bench.table import ResultTable

    tasks, skipped_grids = sweep.tasks(data_dir)
    client = connect(scheduler, connect_timeout) if scheduler else None  # before any file is written
    table = ResultTable(out)
    todo = [task for task in tasks if task.key not in table]
    counts = {"executed": 0, "failed": 0}
    last_flush = time.monotonic()

    def sink(row: dict[str, Any]) -> None:
        nonlocal last_flush
        table.add(row)
        counts["executed"] += 1
        counts["failed"] += row["status"] in ("error", *HARNESS_STATUSES)
        if time.monotonic() - last_flush > flush_seconds:
            table.save()
            last_flush = time.monotonic()

    try:
        if scheduler:
            run_dask(todo, client, sink, progress)
        else:
            run_local(todo, workers or os.cpu_count() or 1, sink, progress)
    finally:
        table.save()
    return RunSummary(len(tasks), counts["executed"], len(tasks) - len(todo), counts["failed"],
                      tuple(skipped_grids), Path(out))  # fmt: skip
