"""Does ``--time-limit S`` bound the whole call? Every exact method on the largest generated instances.

For each case the instance is generated once (``fairpack generate``, not timed), then
``fairpack solve FILE --method M --time-limit S --json`` runs in a fresh process for each S. Measured: the
wall time of that process against S (the CLI's start-up, loading, model build, solve, verification and
output), its peak resident memory (``wait4``), its status, whether it verified, and its exit code. Every
process runs under an address-space cap (``--memory-gb``), so that a run that would exhaust the shared
machine fails with ``MemoryError`` instead; that must surface as a clean refusal or an error status, never
as a verified result.

    .venv/bin/python -m benchmarks.time_limits --data-dir ../shared/data

Results: ``benchmarks/results/time_limits.{md,json}``, with the load average before and after every run.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks._common import data_dir_or_none, load_line, parser, save

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Case:
    method: str
    label: str
    generate: tuple[str, ...]  # fairpack generate arguments (empty: ``repro`` names the file)
    options: tuple[str, ...] = ()  # extra fairpack solve arguments
    repro: str = ""  # a file of the shared reproductions folder (--repro-dir) instead of a generated instance


#: The largest generated instances of each exact method's family, one per exact method.
CASES = (
    Case("drfh-int", "Google table, 1,000 tenants", ("google", "--tenants", "1000")),
    Case("spacetime-cp", "TPC-H mix of 48 queries (35,780 tasks)", ("tpch", "--queries", "48")),
    Case("hdrf", "2,000-leaf tree on 500 servers", ("tree", "--tenants", "2000", "--machines", "500")),
    Case("spacetime", "60-job random DAG mix (2,202 tasks)", ("dag", "--jobs", "60")),
    Case("spacetime", "TPC-H mix of 60 queries (45k tasks), --no-fair-cap", ("tpch", "--queries", "60"),
         ("--no-fair-cap",)),
    Case("drfh", "Google table, 12,583 distinct machines x 1,000 tenants",
         ("google", "--tenants", "1000", "--distinct")),
    # The overruns found by the reliability audit (each had run 3x to 25x its limit, or without end).
    Case("drfh-int", "Google table, 12,583 distinct machines x 1,000 tenants",
         ("google", "--tenants", "1000", "--distinct")),
    Case("locality-cp", "HDFS-like mix of 300 jobs (25,256 tasks reading blocks, 40 machines)",
         ("hdfs", "--jobs", "300")),
    Case("spacetime-cp", "HDFS-like mix of 300 jobs, --placement servers --no-fair-cap", ("hdfs", "--jobs", "300"),
         ("--placement", "servers", "--no-fair-cap")),
    *(Case(method, "10^7 machines (server_count_1e7.yaml)", (), (), "sim_and_traces/server_count_1e7.yaml")
      for method in ("drfh-int", "first-fit", "best-fit", "per-server-drf")),
    Case("locality-cp", "10^6 machines (locality_cp_1e6_machines.yaml)", (), (),
         "sim_and_traces/locality_cp_1e6_machines.yaml"),
    Case("spacetime", "deadline_1e-9.yaml, --objective utility --no-fair-cap", (),
         ("--objective", "utility", "--no-fair-cap"), "sim_and_traces/deadline_1e-9.yaml"),
    Case("spacetime", "features_all.yaml", (), (), "sim_and_traces/features_all.yaml"),
)  # fmt: skip
LIMITS = (5.0, 30.0)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "fairpack", *args]


def _generate(case: Case, folder: Path, data_dir: Path | None, repro_dir: Path | None = None) -> Path | None:
    """The case's instance file (None: a reproduction whose folder is not there)."""
    if case.repro:
        return None if repro_dir is None or not (repro_dir / case.repro).exists() else repro_dir / case.repro
    path = folder / f"{'-'.join(case.generate)}.yaml"
    if not path.exists():
        command = _cli("generate", *case.generate, "--seed", "0")
        if data_dir is not None:
            command += ["--data-dir", str(data_dir)]
        path.write_text(subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout)
    return path


def parse_times(path: Path) -> dict[str, float]:
    """Seconds to parse the instance file with PyYAML's pure-Python loader (what the CLI uses) and libyaml's."""
    import yaml

    text = path.read_text()
    times = {}
    for name, loader in (("yaml_s", yaml.SafeLoader), ("libyaml_s", getattr(yaml, "CSafeLoader", None))):
        if loader is not None:
            started = time.perf_counter()
            yaml.load(text, Loader=loader)  # SafeLoader and CSafeLoader only
            times[name] = round(time.perf_counter() - started, 2)
    return times


def run_once(path: Path, case: Case, limit: float, memory_gb: float, grace_s: float) -> dict[str, Any]:
    """One ``fairpack solve`` process: wall time, peak memory, status, verified, exit code."""
    command = _cli("solve", os.path.relpath(path, ROOT), "--method", case.method, "--time-limit", f"{limit:g}",
                   "--json", *case.options)  # fmt: skip
    cap = int(memory_gb * 2**30)

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=err, preexec_fn=limit_memory)
        killed = False
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - started > limit + grace_s:
                process.kill()
                killed = True
            time.sleep(0.05)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    row: dict[str, Any] = {
        "method": case.method, "instance": case.label, "limit_s": limit, "wall_s": round(wall, 2),
        "over_s": round(wall - limit, 2), "peak_mib": round(usage.ru_maxrss / 1024), "exit": process.returncode,
        "killed": killed, "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
    }  # fmt: skip
    try:
        data = json.loads(stdout)
        row.update(status=data.get("status"), verified=data.get("verified"), internal_wall_s=data.get("wall_s"),
                   note=(data.get("message") or "")[:160])  # fmt: skip
    except json.JSONDecodeError:
        said = [line for line in stderr.splitlines() if line.strip()]
        errors = [line for line in said if line.startswith("fairpack:") and " s  " not in line]
        row.update(status="refused" if process.returncode == 2 else "no result", verified=None,
                   note=(errors or said or [""])[-1][:160])  # fmt: skip
    return row


def markdown(rows: list[dict[str, Any]], memory_gb: float) -> str:
    lines = [
        "# Time limits: wall time of `fairpack solve --time-limit S` against S",
        "",
        "One fresh process per run (CLI start-up, loading, build, solve, verification and output all count), "
        f"under a {memory_gb:g} GiB address-space cap. Over = wall - S. Peak = the process's peak resident "
        "memory. Load = the 1-minute load average before / after the run (2 cores, shared machine).",
        "",
        "| method | instance | S | wall s | over s | solve() s | YAML s (libyaml) | peak MiB | status | verified "
        "| exit | load | note |",
        "|---|---|---:|---:|---:|---:|---|---:|---|---|---:|---|---|",
    ]
    for r in rows:
        note = str(r.get("note", "")).replace("|", "/")
        inside = r.get("internal_wall_s")
        solve_s = "-" if inside is None else f"{inside:.1f}"
        lines.append(f"| {r['method']} | {r['instance']} | {r['limit_s']:g} | {r['wall_s']:.1f} | {r['over_s']:+.1f} | "
                     f"{solve_s} | {r['yaml_s']:.1f} ({r.get('libyaml_s', 0):.1f}) | "
                     f"{r['peak_mib']} | {r['status']} | {r['verified']} | {r['exit']} | "
                     f"{r['load_before']:.1f} / {r['load_after']:.1f} | {note} |")  # fmt: skip
    lines += [
        "",
        "solve() s is the `wall_s` the result reports (model build, solve and verification); the rest of the wall "
        "time is the interpreter and imports, reading the instance and printing the result. The CLI gives solve() "
        "what is left of S after reading the file, less a reserve for the output, so a file that takes longer to "
        "parse than S leaves nothing to solve with. YAML s is the time to parse the file with PyYAML's pure-Python "
        "loader, which the loader uses, and in brackets with libyaml's, measured in the same run.",
        "",
        load_line(),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parse = parser(__doc__.splitlines()[0])
    parse.add_argument("--limits", type=float, nargs="+", default=list(LIMITS), help="time limits S to run")
    parse.add_argument("--only", nargs="*", help="run only the cases of these methods")
    parse.add_argument("--match", help="run only the cases whose instance label contains this text")
    parse.add_argument("--memory-gb", type=float, default=8.0, help="address-space cap of every run")
    parse.add_argument("--grace-s", type=float, default=300.0, help="kill a run this long after its limit")
    parse.add_argument("--repro-dir", type=Path, default=ROOT.parent / "shared" / "repro",
                       help="the shared reproductions (cases on their files are skipped without it)")
    args = parse.parse_args(argv)
    data_dir = data_dir_or_none(args.data_dir)
    if data_dir is None:
        sys.exit(f"time_limits needs the shared data (google/, tpch/): {args.data_dir} not found")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for case in CASES:
            if (args.only and case.method not in args.only) or (args.match and args.match not in case.label):
                continue
            path = _generate(case, Path(folder), data_dir, args.repro_dir)
            if path is None:
                print(f"skipped (no {case.repro} under {args.repro_dir}): {case.method} on {case.label}")
                continue
            parsing = parse_times(path)
            for limit in args.limits:
                row = {**run_once(path, case, limit, args.memory_gb, args.grace_s), **parsing}
                print(json.dumps(row), flush=True)
                rows.append(row)
    save("time_limits", {"cases": [asdict(c) for c in CASES], "memory_gb": args.memory_gb, "rows": rows},
         markdown(rows, args.memory_gb), args.out)  # fmt: skip


if __name__ == "__main__":
    main()
