"""A saved simulation written and checked: ``simulate`` with and without ``-o FILE``, then ``check`` of the file.

The workload is ``benchmarks/sim_vs_simpy.py``'s (single-task jobs, Poisson arrivals, exponential durations, 100
one-slot machines, FIFO; its Parquet traces are made there if missing). Per size, three CLI commands, each a fresh
child process timed from outside (wall, CPU and peak RSS of that child alone, from ``wait4``):

* ``run``: ``python -m fairpack simulate cluster.yaml --trace trace.parquet --policy fifo --quiet``;
* ``save``: the same with ``-o out.json``;
* ``check``: ``python -m fairpack check cluster.yaml out.json --trace trace.parquet``.

``--baseline DIR`` (a source tree of another revision, e.g. ``git archive main | tar -x -C DIR``, its C extensions
built there with ``python setup.py build_ext --inplace``) runs the same three commands with that code, in turns
with this code's (run, save, check of each side in turn), so the before/after ratios are measured under the same
load; each side checks its own file, and the two files must hold the same JSON but for the run's timings. The
targets: ``save`` within 2x of ``run`` and at most 1.5 GB; ``check`` at most 10 s and 2 GB (1,000,000 jobs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import load_line, machine_state, parser, save
from benchmarks.sim_vs_simpy import CLUSTER, write_traces

#: Keys of a saved result that are the run's own timings: the only ones two runs of one code may differ in.
TIMINGS = ("build_s", "solve_s", "wall_s")


def _command(kind: str, paths: dict[str, Path], output: Path) -> list[str]:
    cluster, trace = str(paths["cluster"]), str(paths["parquet"])
    if kind == "check":
        return [sys.executable, "-m", "fairpack", "check", cluster, str(output), "--trace", trace]
    command = [sys.executable, "-m", "fairpack", "simulate", cluster, "--trace", trace, "--policy", "fifo", "--quiet"]
    return [*command, "-o", str(output)] if kind == "save" else command


def _run(command: list[str], code: str | None, timeout: float) -> dict[str, Any]:
    """Run ``command`` (in ``code``'s tree if given); its wall time, CPU seconds and peak RSS, from ``wait4``."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([code, *filter(None, [env.get("PYTHONPATH")])])
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                             cwd=code or "/")  # fmt: skip
    deadline = started + timeout
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            child.kill()
            pid, status, usage = os.wait4(child.pid, 0)
            break
        time.sleep(0.02)
    wall = time.perf_counter() - started
    out = child.stdout.read() if child.stdout else ""
    child.returncode = os.waitstatus_to_exitcode(status)
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024,
            "exit": child.returncode, "verified": "verified" in out and "NOT verified" not in out}  # fmt: skip


def _same_json(first: Path, second: Path) -> bool:
    """Whether two saved results hold the same JSON but for the run's timings."""
    a, b = (json.loads(path.read_text()) for path in (first, second))
    for data in (a, b):
        for key in TIMINGS:
            data.pop(key, None)
    return bool(a == b)


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| jobs | code | command | wall (s) | CPU (s) | peak RSS (MB) | exit | verified | file (MB) | load |",
             "|---:|---|---|---:|---:|---:|---:|---|---:|---:|"]  # fmt: skip
    for r in rows:
        size = f"{r['file_mb']:.0f}" if r.get("file_mb") else ""
        lines.append(f"| {r['jobs']:,} | {r['code']} | {r['kind']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | "
                     f"{r['peak_mb']:.0f} | {r['exit']} | {r['verified']} | {size} | {r['load']} |")
    return lines


def _ratios(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for size in sorted({r["jobs"] for r in rows}):
        for code in ("now", "before"):
            mine = {r["kind"]: r for r in rows if r["jobs"] == size and r["code"] == code}
            if {"run", "save", "check"} <= set(mine):
                save_run = mine["save"]["wall_s"] / mine["run"]["wall_s"]
                lines.append(f"- {size:,} jobs, {code}: save / run {save_run:.2f}x "
                             f"wall ({mine['save']['cpu_s'] / mine['run']['cpu_s']:.2f}x CPU), save "
                             f"{mine['save']['peak_mb']:.0f} MB; check {mine['check']['wall_s']:.1f} s "
                             f"({mine['check']['cpu_s']:.1f} s CPU), {mine['check']['peak_mb']:.0f} MB")  # fmt: skip
        now = {r["kind"]: r for r in rows if r["jobs"] == size and r["code"] == "now"}
        before = {r["kind"]: r for r in rows if r["jobs"] == size and r["code"] == "before"}
        for kind in ("save", "check"):
            if kind in now and kind in before:
                speedup = before[kind]["wall_s"] / now[kind]["wall_s"]
                lines.append(f"- {size:,} jobs, {kind}: before / now {speedup:.1f}x "
                             f"wall, {before[kind]['cpu_s'] / now[kind]['cpu_s']:.1f}x CPU, "
                             f"{before[kind]['peak_mb'] / now[kind]['peak_mb']:.1f}x memory")  # fmt: skip
    return lines


def main() -> None:
    parse = parser(__doc__.splitlines()[0])
    parse.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parse.add_argument("--baseline", help="source tree of another revision: its rows too, in turns with these")
    parse.add_argument("--work", default="/tmp/fairpack-sim-vs-simpy", help="where the traces and files are")
    parse.add_argument("--timeout", type=float, default=1800)
    parse.add_argument("--name", default="saved_roundtrip")
    args = parse.parse_args()
    folder = Path(args.work)
    folder.mkdir(parents=True, exist_ok=True)
    cluster = folder / "cluster.yaml"
    cluster.write_text(CLUSTER)
    here = str(Path(__file__).resolve().parents[1])
    codes = [("now", here)] + ([("before", str(Path(args.baseline).resolve()))] if args.baseline else [])
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    same: dict[int, bool] = {}
    for size in args.sizes:
        _, parquet = write_traces(folder, size)
        paths = {"cluster": cluster, "parquet": parquet}
        outputs = {name: folder / f"saved_{size}_{name}.json" for name, _ in codes}
        for kind in ("run", "save", "check"):
            for name, code in codes:
                load = round(os.getloadavg()[0], 2)
                row = {"jobs": size, "code": name, "kind": kind, "load": load,
                       **_run(_command(kind, paths, outputs[name]), code, args.timeout)}  # fmt: skip
                if kind == "save" and outputs[name].exists():
                    row["file_mb"] = outputs[name].stat().st_size / 1e6
                rows.append(row)
                print(_table([row])[-1], flush=True)
        if len(codes) == 2 and all(path.exists() for path in outputs.values()):
            same[size] = _same_json(*outputs.values())
            print(f"{size:,} jobs: the two files hold the same JSON but for timings: {same[size]}", flush=True)
        for path in outputs.values():
            path.unlink(missing_ok=True)
    lines = ["# A saved simulation written and checked (FIFO, single-task jobs, 100 one-slot machines)", "",
             load_line(machine_state()) + f" Total {time.perf_counter() - started:.0f} s; the load column is the "
             "1-minute load when the row started.", "", *_table(rows), "", *_ratios(rows)]  # fmt: skip
    if same:
        lines += ["", *(f"- {size:,} jobs: both codes' files hold the same JSON but for the run's timings: {ok}"
                        for size, ok in same.items())]  # fmt: skip
    save(args.name, {"rows": rows, "same_json": {str(k): v for k, v in same.items()}}, "\n".join(lines), args.out)


if __name__ == "__main__":
    main()
