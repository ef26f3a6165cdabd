"""The CLI's fixed costs against its solver: ``fairpack solve`` wall time vs in-process build + solve.

Instances (written to ``benchmarks/out/`` first, by the generators):

* a random org tree with 10,000 leaves (depth 4, 4 resources), static ``hdrf``;
* 1,500 distinct machines from the Google 2011 table x 60 tenants, ``drfh``;
* the Google 2011 table (12,583 machines, identical ones merged) x 1,000 tenants, ``drfh``;

plus ``fairpack --help``. Each CLI call is a fresh process (``--json``, output to a file); build + solve are
the times the CLI's own JSON reports. Target (issue 12): CLI wall <= 1.3 x (build + solve) + 0.5 s, and
``--help`` < 0.3 s. The best of ``--repeat`` runs is kept (the machine is shared).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import data_dir_or_none, load_line, parser, save

OUT = Path(__file__).resolve().parent / "out"
FAIRPACK = [sys.executable, "-m", "solver.cli"]


def _generate(name: str, arguments: list[str]) -> Path:
    path = OUT / f"{name}.yaml"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        text = subprocess.run([*FAIRPACK, "generate", *arguments], check=True, capture_output=True, text=True).stdout
        path.write_text(text)
    return path


def _timed_run(arguments: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([*FAIRPACK, *arguments], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(f"fairpack {' '.join(arguments)} failed: {done.stderr[-500:]}")
    return wall, done.stdout


def measure(label: str, path: Path, method: str, repeat: int) -> dict[str, Any]:
    best: dict[str, Any] | None = None
    for _ in range(repeat):
        wall, out = _timed_run(["solve", str(path), "--method", method, "--json"])
        data = json.loads(out)
        core = float(data["build_s"]) + float(data["solve_s"])
        row = {"instance": label, "method": method, "cli_wall_s": wall, "build_solve_s": core,
               "solver_wall_s": float(data["wall_s"]), "overhead_s": wall - core,
               "target_s": 1.3 * core + 0.5, "verified": data["verified"]}  # fmt: skip
        if best is None or wall < best["cli_wall_s"]:
            best = row
    assert best is not None
    best["meets_target"] = best["cli_wall_s"] <= best["target_s"]
    return best


def main() -> None:
    args = _arguments()
    data_dir = data_dir_or_none(args.data_dir)
    rows = []
    help_times = [_timed_run(["--help"])[0] for _ in range(args.repeat)]
    tree = _generate("tree_10000", ["tree", "--tenants", "10000", "--depth", "4", "--resources", "4", "--seed", "1"])
    rows.append(measure("tree, 10,000 leaves", tree, "hdrf", args.repeat))
    if data_dir is not None:
        google = ["google", "--data-dir", str(data_dir), "--seed", "1"]
        sizes = ["--tenants", "60", "--machines", "1500", "--distinct"]
        distinct = _generate("google_distinct_1500x60", [*google, *sizes])
        rows.append(measure("Google table, 1,500 distinct machines x 60 tenants", distinct, "drfh", args.repeat))
        table = _generate("google_1000", [*google, "--tenants", "1000"])
        rows.append(measure("Google table (12,583 machines) x 1,000 tenants", table, "drfh", args.repeat))
    lines = [
        "# CLI wall time against the solver's own build + solve",
        "",
        f"`fairpack --help`: {min(help_times):.3f} s (best of {args.repeat}; target < 0.3 s).",
        "",
        "| instance | method | CLI wall s | build + solve s | solve() wall s | overhead s | target s | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(f"| {row['instance']} | {row['method']} | {row['cli_wall_s']:.2f} | {row['build_solve_s']:.2f} | "
                     f"{row['solver_wall_s']:.2f} | {row['overhead_s']:.2f} | {row['target_s']:.2f} | "
                     f"{'yes' if row['meets_target'] else 'NO'} |")  # fmt: skip
    lines += ["", "Target: CLI wall <= 1.3 x (build + solve) + 0.5 s. solve() wall adds verification to build + solve; "
              "the rest of the overhead is interpreter start, imports, reading the file and writing the JSON.",
              "", load_line()]  # fmt: skip
    save("cli_overhead", {"help_s": min(help_times), "rows": rows}, "\n".join(lines), args.out)


def _arguments() -> Any:
    parse = parser("CLI wall time against in-process build + solve")
    parse.add_argument("--repeat", type=int, default=3)
    return parse.parse_args()


if __name__ == "__main__":
    main()
