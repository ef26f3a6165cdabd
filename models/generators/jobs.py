"""DAG jobs: random barrier-rich mixes and Spark TPC-H query DAGs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from fairpack.models.generators.common import require
from fairpack.models.types import Instance, InstanceError, ServerClass

_DAG_RESOURCES = ("cpu", "mem", "gpu", "disk", "net")


def random_dag_jobs(
    seed: int,
    jobs: int = 8,
    stages_range: tuple[int, int] = (2, 6),
    resources: int = 2,
    barrier_rich: bool = True,
    capacity: float = 100.0,
    release_spread: float = 0.0,
) -> Instance:
    """Random DAG jobs on one pooled server of ``capacity`` per resource (all numbers integers).

    Per job: ``stages`` uniform in ``stages_range`` (inclusive), a job-level favourite resource; per
    stage: duration 1..10; demand 4..12 of its dominant resource (the job's favourite with probability
    0.8) and 1..4 of each other one; weight 1; release uniform integer in ``[0, release_spread]``.

    ``barrier_rich`` makes deep DAGs of alternating wide (10..30 tasks) and narrow (1..3 tasks) stages
    where every stage after the first depends on the one before and, with probability 0.5, on one more
    earlier stage: the job's progress is gated by many barriers. Otherwise stages have 1..20 tasks and
    each earlier stage is a parent with probability 0.3 (shallow, often parallel DAGs).
    """
    from fairpack.models.types import Job, Stage

    rng = np.random.default_rng(seed)
    names = tuple(_DAG_RESOURCES[r] if r < len(_DAG_RESOURCES) else f"r{r}" for r in range(resources))
    low, high = stages_range
    if not 1 <= low <= high:
        raise InstanceError(f"stages_range must satisfy 1 <= low <= high, got {stages_range}", "stages_range")
    job_list = []
    for k in range(jobs):
        favourite = int(rng.integers(resources))
        n_stages = int(rng.integers(low, high + 1))
        stages = []
        for s in range(n_stages):
            if barrier_rich:
                tasks = int(rng.integers(10, 31)) if s % 2 == 0 else int(rng.integers(1, 4))
                after: tuple[int, ...] = ()
                if s > 0:
                    extra_parent = int(rng.integers(s)) if s > 1 and rng.random() < 0.5 else s - 1
                    after = tuple(sorted({s - 1, extra_parent}))
            else:
                tasks = int(rng.integers(1, 21))
                after = tuple(int(p) for p in np.flatnonzero(rng.random(s) < 0.3))
            dominant = favourite if rng.random() < 0.8 else int(rng.integers(resources))
            demand = rng.integers(1, 5, size=resources).astype(np.float64)
            demand[dominant] = float(rng.integers(4, 13))
            stages.append(Stage(f"s{s}", tasks, float(rng.integers(1, 11)), demand, after))
        release = float(rng.integers(0, int(release_spread) + 1)) if release_spread > 0 else 0.0
        job_list.append(Job(f"j{k}", tuple(stages), 1.0, release))
    pool = ServerClass("pool", np.full(resources, float(capacity)), 1)
    kind = "barrier" if barrier_rich else "shallow"
    return Instance(names, (pool,), jobs=tuple(job_list), name=f"dag-{kind}-{jobs}j-s{seed}")


TPCH_DIR = Path("tpch")
#: Memory per task (GB) is drawn once per query, uniformly from these values.
TPCH_MEMORY_CHOICES = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0)


def tpch_jobs(
    data_dir: str | Path,
    queries: tuple[str | int, ...] | list[str | int],
    seed: int = 0,
    size: str = "2g",
    executors: int = 50,
    memory_per_executor: float = 2.0,
    release_spread: float = 0.0,
) -> Instance:
    """Spark TPC-H query DAGs (Decima's profiles in ``<data_dir>/tpch``) as DAG jobs on a pooled cluster.

    ``queries`` are keys like ``'2g-q9'`` or query numbers (with ``size``). Per stage: the task count and
    the mean task duration come from ``tpch_dag_summary.json`` (mean over Decima's duration lists), the
    duration converted to seconds and rounded *up* to 0.1 s (at least 0.1 s); the edges come from the
    adjacency matrix ``<size>/adj_mat_<q>.npy`` (``A[i, j] = 1``: stage ``i`` before ``j``), checked
    against the summary's parents. The data has no resource demands (each task holds one executor
    slot), so by the rule documented here every task needs **1 cpu**, and **memory** drawn once per query
    from ``TPCH_MEMORY_CHOICES`` GB with ``numpy.random.default_rng(seed)`` in query order (Decima assigns
    memory synthetically too). The cluster is one pool of ``executors`` cpus and
    ``executors * memory_per_executor`` GB. Releases: 0, or uniform integers in ``[0, release_spread]``
    seconds drawn after the memory values.
    """
    import json

    from fairpack.models.types import Job, Stage

    root = Path(data_dir) / TPCH_DIR
    summary = json.loads(require(root / "tpch_dag_summary.json").read_text())
    rng = np.random.default_rng(seed)
    keys = [q if isinstance(q, str) else f"{size}-q{int(q)}" for q in queries]
    memory = rng.choice(np.array(TPCH_MEMORY_CHOICES), size=len(keys))
    releases = (rng.integers(0, int(release_spread) + 1, size=len(keys)).astype(np.float64) if release_spread > 0
                else np.zeros(len(keys)))  # fmt: skip
    job_list = []
    seen: dict[str, int] = {}
    for position, key in enumerate(keys):
        # A mix may repeat a query (large mixes draw with replacement); later copies are named key#2, key#3...
        seen[key] = seen.get(key, 0) + 1
        name = key if seen[key] == 1 else f"{key}#{seen[key]}"
        if key not in summary:
            raise InstanceError(f"unknown TPC-H query {key!r}", f"queries[{position}]")
        entry = summary[key]
        adjacency = np.load(require(root / str(entry["size"]) / f"adj_mat_{entry['query']}.npy"))
        stages = []
        for s, stage in enumerate(entry["stages"]):
            parents = tuple(int(p) for p in np.flatnonzero(adjacency[:, s] > 0))
            if sorted(parents) != sorted(int(p) for p in stage["parents"]):
                raise InstanceError(f"adjacency matrix and summary disagree on the parents of stage {s}", key)
            seconds = max(0.1, math.ceil(float(stage["mean_task_ms"]) / 100.0 - 1e-9) / 10.0)
            demand = np.array([1.0, float(memory[position])])
            stages.append(Stage(f"stage{s}", int(stage["num_tasks"]), seconds, demand, parents))
        job_list.append(Job(name, tuple(stages), 1.0, float(releases[position])))
    pool = ServerClass("pool", np.array([float(executors), float(executors) * memory_per_executor]), 1)
    return Instance(("cpu", "mem"), (pool,), jobs=tuple(job_list), name=f"tpch-{len(keys)}q-s{seed}")
