"""Sweeps on a real Dask cluster against the same sweep run locally (target: Dask <= 1.2x local).

Starts a real ``dask scheduler`` and ``--workers`` ``dask worker`` processes (one process, one thread
each, Dask's default daemonic workers) on localhost, then runs the sweep (default: the bundled smoke
sweep) alternately locally with as many task processes (``run_sweep(workers=N)``) and on the cluster
(``run_sweep(scheduler=...)``), ``--repeats`` times each, into fresh result files. Each time is the wall
time of the whole ``run_sweep`` call; CPU seconds are those of this process's whole tree, read from
``/proc`` (the local forkserver and its tasks, the scheduler, the workers, their warm processes and
tasks: every process that ended was collected by one of them, which counts its time). The rows of both
runs must agree on every deterministic column. The cluster is started before the first run: workers
are warm processes of a long-lived cluster, which is how a sweep meets one. The first cluster run also
pays each worker's one-time warm interpreter (``solver.bench.warm``); it is shown, and the ratio uses the median.

The scheduler, the workers and this process all run the fairpack that this process imports, so the
same script measures another checkout, run as a file from outside this one: ``cd /tmp &&
PYTHONPATH=OTHER python CHECKOUT/benchmarks/dask_speed.py --label before`` (``OTHER`` a checkout from
before the warm workers, where the cluster runs a fresh interpreter per task).

Run: ``python -m benchmarks.dask_speed`` (``--sweep NAME_OR_FILE``, ``--workers N``, ``--repeats K``)
"""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks._common import load_line, parser, save

TARGET_RATIO = 1.2


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _tree_cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of these processes and their live descendants (``/proc``), children waited for
    included (``cutime``/``cstime``)."""
    ticks = os.sysconf("SC_CLK_TCK")
    seen: set[int] = set()
    total = 0.0
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            # Each thread lists the children it started (a Dask worker starts its tasks' from a pool thread).
            children = [c for t in Path(f"/proc/{pid}/task").iterdir() for c in (t / "children").read_text().split()]
        except OSError:
            continue
        total += sum(int(value) for value in fields[11:15]) / ticks  # utime stime cutime cstime
        todo += [int(child) for child in children]
    return total


@contextlib.contextmanager
def cluster(workers: int) -> Iterator[str]:
    """A ``dask scheduler`` and ``workers`` ``dask worker`` processes on localhost: the scheduler's address."""
    import fairpack

    dask = str(Path(sys.executable).with_name("dask"))
    root = str(Path(fairpack.__file__).resolve().parents[1])  # the checkout this process runs
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
    processes = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                   "--no-dashboard"], **quiet)]  # type: ignore[call-overload]  # fmt: skip
    try:
        processes += [subprocess.Popen([dask, "worker", address, "--nworkers", "1", "--nthreads", "1",
                                        "--no-dashboard", "--memory-limit", "0"], **quiet)  # type: ignore[call-overload]
                      for _ in range(workers)]  # fmt: skip
        from dask.distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
        yield address
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _run(sweep: Any, out: Path, workers: int, scheduler: str | None) -> dict[str, Any]:
    from fairpack.solver.bench.runner import run_sweep

    load = os.getloadavg()[0]
    # This process's tree holds the local forkserver and its tasks, the scheduler and the workers with theirs.
    cpu_before = _tree_cpu_s([os.getpid()])
    wall = time.perf_counter()
    summary = run_sweep(sweep, out, workers=workers, scheduler=scheduler, progress=False)
    wall = time.perf_counter() - wall
    cpu = _tree_cpu_s([os.getpid()]) - cpu_before
    return {"where": "dask" if scheduler else "local", "wall_s": wall, "cpu_s": cpu, "tasks": summary.executed,
            "failed": summary.failed, "load_1min": load}  # fmt: skip


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--sweep", default="smoke")
    arguments.add_argument("--workers", type=int, default=2)
    arguments.add_argument("--repeats", type=int, default=3)
    arguments.add_argument("--label", default="", help="appended to the results' name (e.g. before)")
    args = arguments.parse_args()
    from fairpack.solver.bench.sweep import load_sweep
    from fairpack.solver.bench.table import read_results

    sweep = load_sweep(args.sweep)
    rows: list[dict[str, Any]] = []
    agree = True
    with tempfile.TemporaryDirectory(prefix="fairpack-dask-") as folder, cluster(args.workers) as address:
        for repeat in range(args.repeats):
            for scheduler in (None, address):
                out = Path(folder) / f"{'dask' if scheduler else 'local'}-{repeat}.parquet"
                row = {"repeat": repeat, **_run(sweep, out, args.workers, scheduler)}
                rows.append(row)
                print(row, flush=True)
            local = read_results(Path(folder) / f"local-{repeat}.parquet").set_index("key").sort_index()
            remote = read_results(Path(folder) / f"dask-{repeat}.parquet").set_index("key").sort_index()
            columns = ["status", "verified", "objective"]
            agree &= bool(local[columns].fillna(-1).equals(remote[columns].fillna(-1)))
    local_s = statistics.median(r["wall_s"] for r in rows if r["where"] == "local")
    dask_s = statistics.median(r["wall_s"] for r in rows if r["where"] == "dask")
    ratio = dask_s / local_s
    lines = [
        f"# Sweeps on a Dask cluster against a local run: `{sweep.name}` sweep, {args.workers} workers",
        "",
        load_line(),
        f"A real `dask scheduler` and {args.workers} `dask worker` processes (1 thread each, daemonic) on "
        f"localhost; local runs use {args.workers} task processes. Runs alternate; `load` is the 1-minute "
        "load average before each. CPU: this process's whole tree (scheduler, workers, forkserver, tasks).",
        "",
        "| repeat | where | tasks | failed | wall s | cpu s | load |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {r['repeat']} | {r['where']} | {r['tasks']} | {r['failed']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} "
              f"| {r['load_1min']:.2f} |" for r in rows]  # fmt: skip
    lines += [
        "",
        f"Median wall: local {local_s:.1f} s, Dask {dask_s:.1f} s; ratio Dask / local {ratio:.2f} "
        f"(target <= {TARGET_RATIO:g}: {'met' if ratio <= TARGET_RATIO else 'missed'}). Rows agree on status, "
        f"verified and objective: {agree}.",
    ]
    import fairpack

    source = str(Path(fairpack.__file__).resolve().parents[1].name)
    lines.insert(4, f"fairpack from the checkout `{source}`{' (' + args.label + ')' if args.label else ''}.")
    name = f"dask_speed_{sweep.name}{'_' + args.label if args.label else ''}"
    save(name, {"rows": rows, "ratio": ratio, "rows_agree": agree}, "\n".join(lines), args.out)


if __name__ == "__main__":
    main()
