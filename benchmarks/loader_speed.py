"""Load time of large instance files, the loader before and after, in one run.

Four files, written exactly as the CLI writes them:

* ``fairpack generate tree --tenants 10000 --depth 4 --resources 4 --seed 1`` (10,000-leaf tree);
* ``fairpack generate google --data-dir DATA --tenants 60 --machines 1500 --distinct --seed 1``;
* ``fairpack generate google --data-dir DATA --tenants 1000 --seed 1`` (the Google table, 1,000 tenants);
* ``fairpack generate dag --jobs 5000 --seed 1`` (5,000 DAG jobs).

"Before" is ``models/`` at ``--baseline`` (a git revision, extracted with ``git archive``); "after" is
this checkout's ``models/``. Each is timed in its own fresh Python process (``load_instance`` only, the
imports excluded), alternating before/after, ``--repeats`` times; the table gives the median. The after
loader's parse (YAML -> plain data) and build (validation -> ``Instance``) are timed separately too.

    python -m benchmarks.loader_speed --data-dir ../shared/data
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._common import parser, save

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BASELINE = "85d0f80"  # main before the loader rewrite

CHILD = r"""
import json, sys, time
started = time.perf_counter()
from fairpack.models.io import load_instance
imported = time.perf_counter() - started
path = sys.argv[1]
if sys.argv[2:] == ["pure"]:  # the new loader without libyaml: PyYAML's pure-Python event parser
    import yaml
    yaml.__with_libyaml__ = False
started = time.perf_counter()
instance = load_instance(path)
total = time.perf_counter() - started
result = {"load_s": total, "import_s": imported, "tenants": len(instance.tenants),
          "classes": len(instance.servers), "machines": int(instance.counts.sum()), "jobs": len(instance.jobs),
          "stages": sum(len(job.stages) for job in instance.jobs)}
try:  # the split exists only in the new loader
    from fairpack.models.io import DEFAULT_LIMITS, _parse, instance_from_dict
    data = open(path, "rb").read()
    started = time.perf_counter()
    parsed = _parse(data, "yaml", DEFAULT_LIMITS)
    result["parse_s"] = time.perf_counter() - started
    started = time.perf_counter()
    instance_from_dict(parsed)
    result["build_s"] = time.perf_counter() - started
except ImportError:
    pass
print(json.dumps(result))
"""

CASES = [
    ("tree 10,000 leaves", ["tree", "--tenants", "10000", "--depth", "4", "--resources", "4", "--seed", "1"]),
    ("google 1,500 distinct x 60", ["google", "--tenants", "60", "--machines", "1500", "--distinct", "--seed", "1"]),
    ("google table x 1,000", ["google", "--tenants", "1000", "--seed", "1"]),
    ("dag 5,000 jobs", ["dag", "--jobs", "5000", "--seed", "1"]),
]


def generate(arguments: list[str], data_dir: str, path: Path) -> None:
    """Write the instance exactly as ``fairpack generate`` prints it."""
    from fairpack.solver.cli import main

    if arguments[0] == "google":
        arguments = [*arguments, "--data-dir", data_dir]
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        code = main(["generate", *arguments])
    if code != 0:
        raise SystemExit(f"fairpack generate {' '.join(arguments)} exited {code}")
    path.write_text(text.getvalue())


def extract(revision: str, folder: Path) -> None:
    """``models/`` at ``revision`` into ``folder``."""
    archive = subprocess.run(["git", "archive", revision, "models"], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")


def measure(models_parent: Path, path: Path, pure: bool = False) -> dict[str, Any]:
    environment = {**os.environ, "PYTHONPATH": str(models_parent)}
    command = [sys.executable, "-c", CHILD, str(path), *(["pure"] if pure else [])]
    completed = subprocess.run(command, cwd=models_parent, env=environment, capture_output=True, text=True)
    if completed.returncode != 0:
        raise RuntimeError(completed.stderr[-2000:])
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision of the 'before' loader")
    arguments.add_argument("--repeats", type=int, default=3)
    args = arguments.parse_args()
    load = os.getloadavg()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        before, after = folder / "before", folder / "after"
        extract(args.baseline, before)
        shutil.copytree(ROOT / "models", after / "models")
        for label, command in CASES:
            path = folder / f"{label.split()[0]}-{len(rows)}.yaml"
            generate(command, args.data_dir, path)
            runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": [], "after_pure": []}
            for _ in range(args.repeats):
                runs["before"].append(measure(before, path))
                runs["after"].append(measure(after, path))
                runs["after_pure"].append(measure(after, path, pure=True))
            first = runs["after"][0]
            row = {
                "instance": label,
                "command": "fairpack generate "
                + " ".join(command)
                + (" --data-dir DATA" if command[0] == "google" else ""),
                "bytes": path.stat().st_size,
                "tenants": first["tenants"],
                "server_classes": first["classes"],
                "machines": first["machines"],
                "jobs": first["jobs"],
                "stages": first["stages"],
                "before_s": statistics.median(r["load_s"] for r in runs["before"]),
                "after_s": statistics.median(r["load_s"] for r in runs["after"]),
                "after_parse_s": statistics.median(r["parse_s"] for r in runs["after"]),
                "after_build_s": statistics.median(r["build_s"] for r in runs["after"]),
                "after_pure_s": statistics.median(r["load_s"] for r in runs["after_pure"]),
                "runs": runs,
            }
            row["speedup"] = row["before_s"] / row["after_s"]
            rows.append(row)
            print(f"{label}: before {row['before_s']:.3f} s, after {row['after_s']:.3f} s", flush=True)
    load_after = os.getloadavg()
    import yaml

    lines = [
        "# Loader speed: `load_instance` before and after the loader rewrite",
        "",
        f"Before: `models/` at `{args.baseline}` (PyYAML's pure-Python `safe_load`, pydantic, per-entity checks). "
        "After: this checkout (YAML 1.2 events from libyaml's C parser"
        f"{'' if yaml.__with_libyaml__ else ' -- NOT available here, pure-Python parser used'}, bulk numpy checks). "
        f"Median of {args.repeats} runs, each in a fresh process, before and after alternating; imports excluded. "
        "'After, pure Python' is the same loader with libyaml switched off (PyYAML installed without it).",
        f"Machine: {os.cpu_count()} cores, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} at the start, "
        f"{load_after[0]:.2f} at the end (shared machine).",
        "",
        "| instance | file | tenants | classes (machines) | jobs (stages) | before s | after s | speed-up "
        "| after: parse s | build s | after, pure Python s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['instance']} | {row['bytes'] / 1e6:.2f} MB | {row['tenants']:,} | "
            f"{row['server_classes']:,} ({row['machines']:,}) | {row['jobs']:,} ({row['stages']:,}) | "
            f"{row['before_s']:.3f} | {row['after_s']:.3f} | "
            f"{row['speedup']:.1f}x | {row['after_parse_s']:.3f} | {row['after_build_s']:.3f} | "
            f"{row['after_pure_s']:.3f} |"
        )
    lines += ["", "Commands: " + "; ".join(f"`{row['command']}`" for row in rows) + "."]
    payload = {"baseline": args.baseline, "repeats": args.repeats, "load_average": [load, load_after], "rows": rows}
    save("loader_speed", payload, "\n".join(lines), args.out)


if __name__ == "__main__":
    main()
