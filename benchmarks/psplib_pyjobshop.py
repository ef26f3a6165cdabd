"""PSPLIB: fairpack ``spacetime-cp`` against PyJobShop (the same CP-SAT engine) on one seeded sample, in one run.

PyJobShop is installed into this benchmark's own environment (a virtual environment under
``benchmarks/out/``, created on the first run with ``pip install pyjobshop==PYJOBSHOP_VERSION``; it is never
a dependency of fairpack). Every sampled instance is solved by both tools back to back, each with the same
limit and ONE CP-SAT worker: fairpack through ``solver.api.solve`` (its limit covers the whole call: warm
start, model build and search), PyJobShop with ``pyjobshop.read(path, "psplib")`` and
``Model.solve("ortools", time_limit=..., num_workers=1)`` (its limit is CP-SAT's alone; reading and
building are not counted). Both schedules are checked by fairpack's independent checker.

Reported per set and tool: instances proven optimal, instances equal to the best-known upper bound
(``psplib/optima/psplib_bounds.csv``), the mean gap to it, schedules verified, and fairpack / PyJobShop
ratios of the counts; the load average is saved beside them.

Run: ``python -m benchmarks.psplib_pyjobshop --data-dir ../shared/data [--per-set 40] [--time-limit 10]``
(``--per-set 0``: whole sets; ``--name``: the results file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: The PyJobShop release measured (its pinned OR-Tools is the one fairpack uses).
PYJOBSHOP_VERSION = "0.0.9"
ENV = Path(__file__).resolve().parent / "out" / "pyjobshop-venv"


def worker() -> None:
    """Inside PyJobShop's environment: solve each ``{"path", "time_limit"}`` line read, print one JSON line."""
    import pyjobshop

    for line in sys.stdin:
        job = json.loads(line)
        started = time.perf_counter()
        model = pyjobshop.Model.from_data(pyjobshop.read(job["path"], instance_format="psplib"))
        result = model.solve("ortools", time_limit=job["time_limit"], display=False, num_workers=1)
        found = result.objective != float("inf")
        reply = {
            "status": result.status.value,
            "objective": result.objective if found else None,
            "lower_bound": result.lower_bound,
            "starts": [task.start for task in result.best.tasks] if found else None,
            "solve_s": result.runtime,
            "wall_s": time.perf_counter() - started,
        }
        print(json.dumps(reply), flush=True)


def ensure_environment(env: Path = ENV) -> Path:
    """PyJobShop's own virtual environment (created and filled once); returns its Python."""
    python = env / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    probe = subprocess.run([str(python), "-c", "from importlib.metadata import version; print(version('pyjobshop'))"],
                           capture_output=True, text=True)  # fmt: skip
    if probe.returncode != 0 or probe.stdout.strip() != PYJOBSHOP_VERSION:
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"pyjobshop=={PYJOBSHOP_VERSION}"], check=True)
    return python


def sample(data_dir: Path, name: str, count: int, seed: int) -> list[str]:
    """``count`` instance names of a set, drawn with ``seed`` (sorted, so the draw is reproducible); every
    instance of the set when ``count <= 0``."""
    import numpy as np

    names = sorted(path.stem for path in (data_dir / "psplib" / name).glob("*.sm"))
    if count <= 0:  # the whole set
        return names
    chosen = np.random.default_rng([seed, len(name)]).choice(len(names), size=min(count, len(names)), replace=False)
    return [names[int(k)] for k in sorted(chosen)]


def fairpack_row(path: Path, time_limit: float) -> dict[str, Any]:
    from fairpack.models.psplib import load_psplib
    from fairpack.solver.api import solve

    started = time.perf_counter()
    result = solve(load_psplib(path), "spacetime-cp", time_limit=time_limit, objective="makespan", workers=1,
                   seed=0)  # fmt: skip
    return {"proven": result.status == "optimal", "makespan": result.objective, "verified": bool(result.verified),
            "wall_s": time.perf_counter() - started}  # fmt: skip


def pyjobshop_row(path: Path, reply: dict[str, Any]) -> dict[str, Any]:
    """PyJobShop's answer, its schedule re-checked by fairpack's checker (activities in file order)."""
    import numpy as np

    from fairpack.models.check import verify_schedule
    from fairpack.models.psplib import load_psplib
    from fairpack.models.result import Schedule

    verified, makespan = False, None
    if reply["starts"] is not None:
        instance = load_psplib(path)
        (job,) = instance.jobs
        start = np.asarray(reply["starts"], dtype=np.float64)
        duration = np.array([stage.duration for stage in job.stages])
        stages = np.arange(len(job.stages))
        schedule = Schedule(np.zeros_like(stages), stages, np.zeros_like(stages), start, start + duration)
        report = verify_schedule(instance, schedule)
        verified, makespan = report.ok, report.makespan
    return {"proven": reply["status"] == "Optimal", "makespan": makespan, "verified": verified,
            "wall_s": reply["wall_s"], "solver_objective": reply["objective"]}  # fmt: skip


def summarise(rows: list[dict[str, Any]], sets: list[str], time_limit: float,
              whole: bool = False) -> tuple[dict[str, Any], str]:  # fmt: skip
    import numpy as np

    table = [
        f"PSPLIB {'whole sets' if whole else 'seeded sample'}, {time_limit:g} s and one CP-SAT worker per instance "
        "for each tool, in one run "
        f"(PyJobShop {PYJOBSHOP_VERSION}, same OR-Tools).",
        "",
        "| set | instances | tool | proven optimal | = best known | mean gap to best UB | verified | mean wall (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    summary: dict[str, Any] = {}
    for name in sets:
        chosen = [row for row in rows if row["set"] == name]
        if not chosen:
            continue
        summary[name] = {}
        for tool in ("fairpack", "pyjobshop"):
            best = np.array([row["best_ub"] for row in chosen], dtype=np.float64)
            span = np.array([np.inf if row[tool]["makespan"] is None else row[tool]["makespan"] for row in chosen])
            gap = (span - best) / best
            figures = {
                "proven_optimal": sum(row[tool]["proven"] for row in chosen),
                "equal_best_known": int(np.sum(gap <= 1e-9)),
                "mean_gap_pct": float(100 * gap.mean()),
                "verified": sum(row[tool]["verified"] for row in chosen),
                "mean_wall_s": float(np.mean([row[tool]["wall_s"] for row in chosen])),
            }
            summary[name][tool] = figures
            table.append(f"| {name} | {len(chosen)} | {tool} | {figures['proven_optimal']} | "
                         f"{figures['equal_best_known']} | {figures['mean_gap_pct']:.2f}% | {figures['verified']} | "
                         f"{figures['mean_wall_s']:.1f} |")  # fmt: skip
        ours, theirs = summary[name]["fairpack"], summary[name]["pyjobshop"]
        summary[name]["ratio"] = {key: ours[key] / theirs[key] if theirs[key] else None
                                  for key in ("proven_optimal", "equal_best_known")}  # fmt: skip
        table.append(f"| {name} | | fairpack / PyJobShop | {_ratio(ours, theirs, 'proven_optimal')} | "
                     f"{_ratio(ours, theirs, 'equal_best_known')} | | | |")  # fmt: skip
    return summary, "\n".join(table)


def _brief(row: dict[str, Any]) -> str:
    return f"{row['makespan']} ({'proven' if row['proven'] else 'open'})"


def _ratio(ours: dict[str, Any], theirs: dict[str, Any], key: str) -> str:
    return f"{ours[key] / theirs[key]:.2f}" if theirs[key] else "-"


def main() -> None:
    from benchmarks._common import parser, save
    from benchmarks.psplib_sets import load_note, psplib_folder, read_bounds

    parse = parser(__doc__.splitlines()[0])
    parse.add_argument("--sets", nargs="+", default=["j30", "j60", "j120"])
    parse.add_argument("--per-set", type=int, default=40)
    parse.add_argument("--seed", type=int, default=0)
    parse.add_argument("--time-limit", type=float, default=10.0)
    parse.add_argument("--name", default="psplib_pyjobshop", help="results file name")
    args = parse.parse_args()
    data_dir = psplib_folder(args.data_dir)
    if data_dir is None:
        return
    bounds = read_bounds(data_dir)
    python = ensure_environment()
    load_start = os.getloadavg()
    rows: list[dict[str, Any]] = []
    with subprocess.Popen([str(python), str(Path(__file__).resolve()), "--worker"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as peer:  # fmt: skip
        assert peer.stdin is not None and peer.stdout is not None
        for name in args.sets:
            for stem in sample(data_dir, name, args.per_set, args.seed):
                path = data_dir / "psplib" / name / f"{stem}.sm"
                ours = fairpack_row(path, args.time_limit)
                peer.stdin.write(json.dumps({"path": str(path), "time_limit": args.time_limit}) + "\n")
                peer.stdin.flush()
                theirs = pyjobshop_row(path, json.loads(peer.stdout.readline()))
                rows.append({"instance": stem, "set": name, "best_ub": float(bounds[stem]["best_ub"]),
                             "fairpack": ours, "pyjobshop": theirs})  # fmt: skip
                print(f"{stem}: best {bounds[stem]['best_ub']}, fairpack {_brief(ours)}, PyJobShop {_brief(theirs)}",
                      flush=True)
        peer.stdin.close()
    load = {"start": list(load_start), "end": list(os.getloadavg())}
    summary, markdown = summarise(rows, args.sets, args.time_limit, whole=args.per_set <= 0)
    markdown += "\n\n" + load_note(load) + "."
    save(args.name, {"time_limit_s": args.time_limit, "workers": 1, "per_set": args.per_set,
                              "seed": args.seed, "pyjobshop_version": PYJOBSHOP_VERSION, "load_average": load,
                              "sets": summary, "rows": rows}, markdown, args.out)  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    else:
        main()
