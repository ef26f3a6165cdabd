"""Load time of large instance files of every shape the format allows, per megabyte: the bound on the loader.

One file per shape, each written as YAML and as JSON at about ``--megabytes`` MB: many server classes with
labels, many flat tenants, a wide hierarchy (flat parent links), many two-stage DAG jobs, one job with a long
chain of stages, jobs with 100,000-point utility curves, a stage reading one input block per task, and many
jobs whose stages choose among placement options. Each file is loaded (``load_instance``: parse, validate,
build) in a fresh Python process, ``--repeats`` times; the table gives the median wall and CPU seconds and
seconds per MB. Every shape is linear in the file's size, so the per-MB figure bounds a file of any size up to
the loader's 64 MiB limit.

    python -m benchmarks.loader_shapes --megabytes 8
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._common import load_line, machine_state, parser, save

CHILD = r"""
import json, resource, sys, time
from fairpack.models.io import load_instance
wall, cpu = time.perf_counter(), time.process_time()
load_instance(sys.argv[1])
print(json.dumps({"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

SERVER = [{"name": "s", "capacity": {"cpu": 100, "mem": 100}}]


def _servers(n: int) -> dict[str, Any]:
    return {"resources": ["cpu", "mem"], "tenants": [{"name": "t", "demand": {"cpu": 1}}],
            "servers": [{"name": f"s{i}", "capacity": {"cpu": 4, "mem": 8}, "labels": {"rack": f"r{i % 50}"}}
                        for i in range(n)]}  # fmt: skip


def _tenants(n: int) -> dict[str, Any]:
    return {"resources": ["cpu", "mem"], "servers": SERVER,
            "tenants": [{"name": f"t{i}", "demand": {"cpu": 0.01, "mem": 0.02}, "weight": 1 + i % 3, "tasks": 10}
                        for i in range(n)]}  # fmt: skip


def _hierarchy(n: int) -> dict[str, Any]:
    inner = 300
    nodes: list[dict[str, Any]] = [{"name": "root"}]
    nodes += [{"name": f"n{i}", "parent": "root"} for i in range(inner)]
    nodes += [{"name": f"n{i}", "parent": f"n{i % inner}", "demand": {"cpu": 0.01}} for i in range(inner, n)]
    return {"resources": ["cpu", "mem"], "servers": SERVER, "hierarchy": nodes}


def _jobs(n: int) -> dict[str, Any]:
    return {"resources": ["cpu", "mem"], "servers": SERVER,
            "jobs": [{"name": f"j{i}", "release": i, "stages": [
                {"name": "a", "tasks": 2, "duration": 1, "demand": {"cpu": 1}},
                {"name": "b", "tasks": 1, "duration": 2, "demand": {"cpu": 1}, "after": ["a"]}]} for i in range(n)]}


def _chain(n: int) -> dict[str, Any]:
    return {"resources": ["cpu", "mem"], "servers": SERVER,
            "jobs": [{"name": "j", "stages": [{"name": f"s{i}", "tasks": 1, "duration": 1, "demand": {"cpu": 1},
                                                "after": [f"s{i - 1}"] if i else []} for i in range(n)]}]}


def _utility(n: int) -> dict[str, Any]:
    # A list of its own per job: YAML would otherwise write one list and aliases to it.
    return {"resources": ["cpu", "mem"], "servers": SERVER,
            "jobs": [{"name": f"j{k}", "utility": [[i, 100_000 - i] for i in range(100_000)],
                      "stages": [{"name": "a", "tasks": 1, "duration": 1, "demand": {"cpu": 1}}]}
                     for k in range(max(1, n // 50_000))]}  # fmt: skip


def _blocks(n: int) -> dict[str, Any]:
    machines = 5000
    return {"resources": ["cpu", "mem"],
            "servers": [{"name": "s", "capacity": {"cpu": 4}, "count": machines, "labels": {"rack": "r"}}],
            "blocks": {f"b{i}": [f"s/{i % machines}", f"s/{(i + 1) % machines}"] for i in range(n)},
            "jobs": [{"name": "j", "stages": [{"name": "a", "tasks": n, "duration": 1, "demand": {"cpu": 1},
                                               "input": [f"b{i}" for i in range(n)]}]}]}  # fmt: skip


def _options(n: int) -> dict[str, Any]:
    return {"resources": ["cpu", "mem"],
            "servers": [{"name": "s", "capacity": {"cpu": 4}, "count": 10, "labels": {"gpu": "true"}}],
            "jobs": [{"name": f"j{k}", "stages": [{"name": "a", "tasks": 1, "demand": {"cpu": 1}, "options": [
                {"on": {"gpu": "true"}, "duration": 1}, {"duration": 3}]}]} for k in range(n)]}  # fmt: skip


#: Shape -> (builder of ``n`` entities, entities per MB of YAML, roughly).
SHAPES: dict[str, tuple[Callable[[int], dict[str, Any]], int]] = {
    "server classes": (_servers, 15_500), "tenants": (_tenants, 14_000), "hierarchy nodes": (_hierarchy, 19_500),
    "two-stage jobs": (_jobs, 5_700), "chained stages": (_chain, 11_800), "utility points": (_utility, 55_000),
    "input blocks": (_blocks, 29_000), "jobs with options": (_options, 7_000),
}  # fmt: skip


def _write(data: dict[str, Any], path: Path) -> None:
    if path.suffix == ".json":
        path.write_text(json.dumps(data))
    else:
        import yaml

        path.write_text(yaml.safe_dump(data, default_flow_style=None, width=200))


def _load(path: Path) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    args = parser(__doc__.splitlines()[0])
    args.add_argument("--megabytes", type=float, default=8.0, help="about how large each file is")
    args.add_argument("--repeats", type=int, default=3)
    options = args.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for shape, (build, per_mb) in SHAPES.items():
            data = build(int(per_mb * options.megabytes))
            for suffix in (".yaml", ".json"):
                path = Path(folder) / f"{shape.replace(' ', '_')}{suffix}"
                _write(data, path)
                size = path.stat().st_size / 2**20
                runs = [_load(path) for _ in range(options.repeats)]
                wall = statistics.median(r["wall_s"] for r in runs)
                cpu = statistics.median(r["cpu_s"] for r in runs)
                rows.append({"shape": shape, "format": suffix[1:], "mb": size, "wall_s": wall, "cpu_s": cpu,
                             "s_per_mb": wall / size, "peak_mib": max(r["peak_mib"] for r in runs)})  # fmt: skip
                print(f"{shape:18} {suffix[1:]:4} {size:6.1f} MB  {wall:6.2f} s wall  {cpu:6.2f} s CPU", flush=True)
    state = machine_state()
    worst = max(rows, key=lambda r: r["s_per_mb"])
    lines = [
        "# Loader: seconds per MB for every shape of instance file",
        "",
        f"`python -m benchmarks.loader_shapes --megabytes {options.megabytes:g} --repeats {options.repeats}`: one "
        "fresh process per load (`load_instance`: parse, validate, build), median of the repeats.",
        load_line(state),
        "",
        "| shape | format | MB | wall s | CPU s | s / MB | peak MiB |",
        "|---|---|---|---|---|---|---|",
        *(f"| {r['shape']} | {r['format']} | {r['mb']:.1f} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | "
          f"{r['s_per_mb']:.3f} | {r['peak_mib']:.0f} |" for r in rows),
        "",
        f"The slowest shape per MB is {worst['shape']} ({worst['format']}, {worst['s_per_mb']:.3f} s per MB): at that "
        f"rate a file at the 64 MiB limit loads in about {worst['s_per_mb'] * 64:.0f} s.",
    ]  # fmt: skip
    save("loader_shapes", {"rows": rows, "megabytes": options.megabytes, "repeats": options.repeats},
         "\n".join(lines), options.out, state)


if __name__ == "__main__":
    main()
