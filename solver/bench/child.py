"""The process a benchmark task runs in: output to a log file, an address-space backstop, one row out.

``solver.bench.runner.execute`` starts it either as a fork of a preloaded forkserver (:func:`run`) or,
where the caller may not have child processes of its own (a daemonic Dask worker), as
``python -m solver.bench.child TASK RESULT LOG`` (:func:`main`). Either way the task is read from a pickle
file and the row is written, atomically, to another one; the supervising process never trusts a partial
file.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from fairpack.solver.bench.task import run_task

#: The address-space backstop is this many times the task's memory limit above what is mapped at start:
#: virtual size runs well ahead of resident memory (thread stacks, malloc arenas), and the resident limit
#: itself is enforced by the supervisor, so this only stops allocations too fast for it to see.
ADDRESS_SPACE_FACTOR = 2


def _redirect_output(log_path: str) -> None:
    """Send this process's stdout and stderr (solver chatter, tracebacks) to ``log_path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _virtual_kib() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _limit_address_space(memory_mb: float) -> None:
    """Cap the address space at what is mapped now plus ``ADDRESS_SPACE_FACTOR * memory_mb`` (Linux only)."""
    import resource

    mapped = _virtual_kib()
    if mapped is None:
        return
    limit = mapped * 1024 + int(ADDRESS_SPACE_FACTOR * memory_mb * 1024 * 1024)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def run(task_path: str, result_path: str, log_path: str) -> None:
    """Run the pickled task at ``task_path`` and pickle its row to ``result_path``.

    SIGINT is ignored: Ctrl-C at a terminal reaches every process of its group, and whether a sweep stops is
    the supervising process's decision (it kills its tasks then, and records none of them: they run again when
    the sweep resumes). A task stopped by the signal itself would return an ``interrupted`` row instead."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _redirect_output(log_path)
    with open(task_path, "rb") as handle:
        task = pickle.load(handle)
    _limit_address_space(task.limits.memory_mb)
    row = run_task(task)
    partial = f"{result_path}.partial"
    with open(partial, "wb") as handle:
        pickle.dump(row, handle)
    os.replace(partial, result_path)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m solver.bench.child TASK RESULT LOG``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 3:
        print("usage: python -m solver.bench.child TASK.pkl RESULT.pkl LOG", file=sys.stderr)
        return 2
    run(*args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
