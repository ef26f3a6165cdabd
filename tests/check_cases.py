"""Small instances and runs shared by the tests of ``fairpack check`` (test_check_walk, test_check_tampering).

Every instance is tiny (the exact methods prove their optimum in a fraction of a second) and together they
exercise every rule the checker applies: heterogeneous servers (per-class placement, pooled vs servers),
a hierarchy, DAG jobs with releases and barriers, input blocks on racks (locality levels), placement options
with a gang and deadlines (utility, SLO attainment), and a task no slot holds (a job left unfinished).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from fairpack.solver.cli import main

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "instances"

#: name -> YAML text (``bundled:<file>`` for a file of ``instances/``).
INSTANCES = {
    "fig1": "bundled:drfh_fig1.yaml",
    "weighted": "bundled:weighted_caps.yaml",
    "fig4": "bundled:hdrf_fig4.yaml",
    "two_jobs": "bundled:dag_two_jobs.yaml",
    "tetris": "bundled:tetrisched_gpu.yaml",
    # A hierarchy on two kinds of server: per-class placement differs from the pool.
    "tree": """
name: tree
resources: [cpu, gpu]
servers:
  - {name: cpu-box, capacity: {cpu: 8, gpu: 1}, count: 2}
  - {name: gpu-box, capacity: {cpu: 2, gpu: 6}}
hierarchy:
  name: root
  children:
    - name: ml
      weight: 2
      children:
        - {name: train, demand: {cpu: 1, gpu: 1}}
        - {name: serve, demand: {cpu: 2}}
    - name: web
      weight: 1
      children:
        - {name: api, demand: {cpu: 1}, tasks: 4}
""",
    # Two machines of 4 CPUs; 3-CPU tasks never share one: per machine is slower than the pool, and the
    # fair completion times differ with the placement.
    "split": """
name: split
resources: [cpu]
servers: [{name: node, capacity: {cpu: 4}, count: 2}]
jobs:
  - {name: big, stages: [{name: s, tasks: 2, duration: 2, demand: {cpu: 3}}]}
  - {name: small, stages: [{name: s, tasks: 1, duration: 1, demand: {cpu: 2}}]}
""",
    # Arrivals of three jobs of two tenants on two kinds of machine, one job with a barrier.
    "arrivals": """
name: arrivals
resources: [cpu, mem]
servers:
  - {name: a, capacity: {cpu: 4, mem: 8}, count: 2}
  - {name: b, capacity: {cpu: 8, mem: 4}}
jobs:
  - name: j1
    tenant: u1
    stages:
      - {name: map, tasks: 3, duration: 2, demand: {cpu: 2, mem: 1}}
      - {name: red, tasks: 1, duration: 1, demand: {cpu: 1, mem: 2}, after: [map]}
  - name: j2
    tenant: u2
    release: 0.5
    stages: [{name: run, tasks: 4, duration: 1.5, demand: {cpu: 1, mem: 2}}]
  - name: j3
    tenant: u1
    release: 1
    weight: 2
    stages: [{name: run, tasks: 2, duration: 1, demand: {cpu: 3, mem: 1}}]
""",
    # Input blocks on two racks: a task runs 1.5 times as long off its block's rack.
    "blocks": """
name: blocks
resources: [slot]
servers:
  - {name: a, capacity: {slot: 2}, count: 2, labels: {rack: r1}}
  - {name: b, capacity: {slot: 2}, labels: {rack: r2}}
jobs:
  - name: j
    stages:
      - {name: map, tasks: 3, duration: 2, demand: {slot: 1}, input: [b1, b2, b3]}
      - {name: reduce, tasks: 1, duration: 1, demand: {slot: 2}, after: [map]}
  - name: k
    release: 1
    weight: 2
    stages:
      - {name: map, tasks: 2, duration: 2, demand: {slot: 1}, input: [b2, b3]}
blocks:
  b1: [a/0, b]
  b2: [a/1]
  b3: [b]
locality: {rack: 1.5}
""",
    # Deadlines: a cannot meet its deadline (it runs 3 from 0), b can: SLO attainment 0.5.
    "slo": """
name: slo
resources: [cpu]
servers: [{name: m, capacity: {cpu: 1}, count: 2}]
jobs:
  - {name: a, deadline: 2, stages: [{name: s, tasks: 1, duration: 3, demand: {cpu: 1}}]}
  - {name: b, deadline: 5, utility: [[5, 10], [8, 0]], stages: [{name: s, tasks: 2, duration: 2, demand: {cpu: 1}}]}
""",
    # Under slots (ten 1-CPU slots), big's 5-CPU task fits no slot: big never runs, and is unfinished.
    "unplaceable": """
name: unplaceable
resources: [cpu]
servers: [{name: m, capacity: {cpu: 10}}]
jobs:
  - {name: small, stages: [{name: a, tasks: 2, duration: 1, demand: {cpu: 1}}]}
  - {name: big, release: 1, stages: [{name: a, tasks: 1, duration: 3, demand: {cpu: 5}},
                                     {name: b, tasks: 1, duration: 1, demand: {cpu: 1}, after: [a]}]}
""",
}


def instance_files(folder: Path) -> dict[str, Path]:
    """Every instance of :data:`INSTANCES` as a file in ``folder`` (bundled ones where they are)."""
    files = {}
    for name, text in INSTANCES.items():
        if text.startswith("bundled:"):
            files[name] = BUNDLED / text.removeprefix("bundled:")
        else:
            files[name] = folder / f"{name}.yaml"
            files[name].write_text(text)
    return files


def cli(*argv: object) -> tuple[int, str, str]:
    """``fairpack ARGV`` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()
