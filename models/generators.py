"""Seeded instance generators, including clusters built from the real data in ``--data-dir``.

External data is read in place (``<data-dir>/google``, ``<data-dir>/alibaba``), never copied into the
repository. Every generator is deterministic for a given seed.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from models.types import Hierarchy, HierarchyNode, Instance, InstanceError, ServerClass, Tenant

GOOGLE_TABLE = Path("google") / "machine-dist-cpu-memory-capacity.csv"
ALIBABA_NODES = Path("alibaba") / "gpu-v2023" / "openb_node_list_all_node.csv"
ALIBABA_PODS = Path("alibaba") / "gpu-v2023" / "openb_pod_list_default.csv"


def _require(path: Path) -> Path:
    if not path.is_file():
        raise InstanceError(f"data file not found: {path} (pass --data-dir pointing at the shared data)")
    return path


def _largest_remainder(exact: np.ndarray) -> np.ndarray:
    """Round non-negative reals to integers with the same (rounded) total."""
    counts = np.floor(exact).astype(int)
    for k in np.argsort(-(exact - counts))[: round(float(exact.sum())) - int(counts.sum())]:
        counts[k] += 1
    return counts


def google_servers(data_dir: str | Path, machines: int | None = None) -> tuple[ServerClass, ...]:
    """The Google 2011 cluster's machine configurations (CPU and memory normalised to the largest machine).

    With ``machines`` given, class counts are scaled down proportionally (largest remainders), keeping
    every configuration with at least one machine when possible.
    """
    rows = list(csv.DictReader(_require(Path(data_dir) / GOOGLE_TABLE).open()))
    counts = np.array([int(r["number_of_machines"]) for r in rows])
    if machines is not None and machines < counts.sum():
        counts = _largest_remainder(counts * machines / counts.sum())
    return tuple(
        ServerClass(f"g{k}-c{r['cpu']}-m{r['memory']}", np.array([float(r["cpu"]), float(r["memory"])]), int(c))
        for k, (r, c) in enumerate(zip(rows, counts, strict=True))
        if c > 0
    )


def google_like_servers(machines: int, configurations: int, seed: int) -> tuple[ServerClass, ...]:
    """A synthetic heterogeneous 2-resource cluster shaped like Google's: a few dominant configurations."""
    rng = np.random.default_rng(seed)
    cpu = rng.choice([0.25, 0.5, 0.5, 0.5, 1.0], size=configurations)
    mem = np.clip(cpu * rng.choice([0.125, 0.25, 0.5, 1.0, 1.5, 2.0], size=configurations), 0.03, 1.0)
    popularity = rng.dirichlet(np.full(configurations, 0.7))
    counts = _largest_remainder(popularity * (machines - configurations)) + 1  # exactly `machines`
    return tuple(ServerClass(f"cfg{k}", np.array([cpu[k], mem[k]]), int(counts[k])) for k in range(configurations))


def perturbed_distinct(servers: tuple[ServerClass, ...], seed: int, relative: float = 1e-3) -> tuple[ServerClass, ...]:
    """Every machine becomes its own server with capacities jittered by up to ``relative`` (no merging)."""
    rng = np.random.default_rng(seed)
    result = []
    for server in servers:
        jitter = 1.0 + rng.uniform(-relative, relative, size=(server.count, len(server.capacity)))
        for k in range(server.count):
            result.append(ServerClass(f"{server.name}#{k}", server.capacity * jitter[k], 1))
    return tuple(result)


def random_tenants(
    resources: tuple[str, ...],
    count: int,
    seed: int,
    machine: np.ndarray,
    max_fraction: float = 0.1,
    max_tasks: int = 2000,
    weights: tuple[float, ...] = (1.0, 2.0, 3.0, 4.0),
) -> tuple[Tenant, ...]:
    """Tenants with random task shapes (up to ``max_fraction`` of a reference machine per resource).

    Each task needs every resource a little and one resource more, as in the DRFH paper's
    experiments, so tenants have distinct dominant resources. Task caps are log-uniform in
    [10, max_tasks]; weights are drawn from ``weights``.
    """
    rng = np.random.default_rng(seed)
    r = len(resources)
    demand = rng.uniform(0.05, 0.3, size=(count, r)) * max_fraction * machine[None, :]
    dominant = rng.integers(0, r, size=count)
    demand[np.arange(count), dominant] = rng.uniform(0.3, 1.0, size=count) * max_fraction * machine[dominant]
    tasks = np.floor(np.exp(rng.uniform(math.log(10), math.log(max_tasks), size=count)))
    weight = rng.choice(np.array(weights), size=count)
    return tuple(Tenant(f"t{i}", np.round(demand[i], 6), float(weight[i]), float(tasks[i])) for i in range(count))


def google_instance(
    data_dir: str | Path | None,
    tenants: int,
    seed: int,
    machines: int | None = None,
    distinct: bool = False,
) -> Instance:
    """Google cluster (or a Google-like synthetic one when ``data_dir`` is None) with random tenants."""
    if data_dir is not None:
        servers = google_servers(data_dir, machines)
    else:
        servers = google_like_servers(machines or 1000, 10, seed)
    if distinct:
        servers = perturbed_distinct(servers, seed)
    resources = ("cpu", "mem")
    reference = np.array([0.5, 0.5])  # the typical Google machine
    name = f"google-{'distinct' if distinct else 'merged'}-{tenants}t-s{seed}"
    return Instance(resources, servers, random_tenants(resources, tenants, seed + 1, reference), name=name)


def _read_csv(path: Path) -> list[dict[str, str]]:
    with _require(path).open() as handle:
        return list(csv.DictReader(handle))


def alibaba_servers(data_dir: str | Path) -> tuple[ServerClass, ...]:
    """The 1,523 real Alibaba GPU-cluster nodes, identical ones merged: CPU (cores), memory (GiB), GPUs."""
    rows = _read_csv(Path(data_dir) / ALIBABA_NODES)
    shapes: dict[tuple[float, float, float, str], int] = {}
    for row in rows:
        key = (int(row["cpu_milli"]) / 1000, int(row["memory_mib"]) / 1024, float(row["gpu"]), row["model"] or "cpu")
        shapes[key] = shapes.get(key, 0) + 1
    return tuple(
        ServerClass(f"{model}-{cpu:g}c-{mem:g}g-{gpu:g}gpu", np.array([cpu, mem, gpu]), count)
        for (cpu, mem, gpu, model), count in sorted(shapes.items())
    )


def alibaba_instance(data_dir: str | Path, tenants: int, seed: int, task_scale: float = 1.0) -> Instance:
    """Real Alibaba nodes with tenants built from real pod requests.

    Pods are grouped by their request shape <CPU cores, memory GiB, GPUs> (a fractional GPU counts as
    its fraction); ``tenants`` shapes are drawn at random, weighted by how many pods share the shape,
    and each tenant's task cap is its shape's pod count times ``task_scale``.
    """
    rows = _read_csv(Path(data_dir) / ALIBABA_PODS)
    shapes: dict[tuple[float, float, float], int] = {}
    for row in rows:
        gpus = int(row["num_gpu"]) * (int(row["gpu_milli"]) / 1000 if int(row["num_gpu"]) == 1 else 1.0)
        key = (int(row["cpu_milli"]) / 1000, int(row["memory_mib"]) / 1024, round(gpus, 3))
        if key[0] <= 0 and key[1] <= 0 and key[2] <= 0:
            continue
        shapes[key] = shapes.get(key, 0) + 1
    keys = sorted(shapes)
    counts = np.array([shapes[k] for k in keys], dtype=float)
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(keys), size=min(tenants, len(keys)), replace=False, p=counts / counts.sum())
    tenant_list = tuple(
        Tenant(f"pods-{i}", np.array(keys[k]), 1.0, float(max(1, math.ceil(counts[k] * task_scale))))
        for i, k in enumerate(sorted(picked))
    )
    return Instance(("cpu", "mem", "gpu"), alibaba_servers(data_dir), tenant_list, name=f"alibaba-{tenants}t-s{seed}")


def random_small(seed: int, servers: int = 3, tenants: int = 4, resources: int = 2) -> Instance:
    """A tiny random instance for property tests and examples."""
    rng = np.random.default_rng(seed)
    names = tuple(f"r{k}" for k in range(resources))
    server_list = tuple(
        ServerClass(f"s{k}", np.round(rng.uniform(1, 10, resources), 2), int(rng.integers(1, 3)))
        for k in range(servers)
    )
    tenant_list = []
    for i in range(tenants):
        demand = np.round(rng.uniform(0.1, 2, resources), 2) * (rng.random(resources) < 0.8)
        if not demand.any():
            demand[rng.integers(resources)] = 1.0
        cap = float(rng.integers(1, 20)) if rng.random() < 0.4 else math.inf
        tenant_list.append(Tenant(f"u{i}", demand, float(rng.choice([1.0, 2.0, 3.0])), cap))
    return Instance(names, server_list, tuple(tenant_list), name=f"random-{seed}")


#: Resource names of generated tree instances (``r<k>`` beyond these).
_TREE_RESOURCES = ("cpu", "mem", "gpu", "net", "disk")
#: A generated tree is dense (all leaves at the bottom) when leaves**(1/depth) reaches this fraction of the
#: mean branching factor.
_DENSE_TREE = 0.9


def _spread(weights: np.ndarray, total: int) -> np.ndarray:
    """Integers >= 1, one per entry, summing to ``total`` (>= entries), roughly proportional to ``weights``.

    Every entry keeps 1; the rest of ``total`` is split in proportion to ``weights - 1`` (uniformly if
    all are 1) by largest remainders, vectorised.
    """
    base = np.ones(len(weights), dtype=np.int64)
    extra = total - len(weights)
    share = np.asarray(weights, dtype=np.float64) - 1.0
    if share.sum() <= 0:
        share = np.ones(len(weights))
    exact = share * (extra / share.sum())
    floor = np.floor(exact).astype(np.int64)
    short = extra - int(floor.sum())
    if short > 0:
        floor[np.argsort(floor - exact, kind="stable")[:short]] += 1
    return base + floor


def _level_growth(leaves: int, depth: int, mean_branching: float) -> float:
    """Growth ratio ``g`` of internal nodes per level so that the tree ends with about ``leaves`` leaves.

    With ``I_d = g**d`` internal nodes at depth ``d`` each having ``b`` children on average, the leaves
    number ``b + (b - 1) * sum_{d=1}^{depth-1} I_d``; solve that for ``g`` by bisection (``g >= 1``).
    """
    if depth <= 1:
        return 1.0
    target = max(0.0, (leaves - mean_branching) / (mean_branching - 1.0))
    if target <= depth - 1:
        return 1.0
    low, high = 1.0, max(2.0, target)
    for _ in range(100):
        middle = 0.5 * (low + high)
        if sum(middle**d for d in range(1, depth)) < target:
            low = middle
        else:
            high = middle
    return high


def random_tree_instance(
    seed: int,
    leaves: int,
    depth: int,
    resources: int = 3,
    servers: int | None = None,
    branching: tuple[int, int] = (2, 5),
    capped_fraction: float = 0.5,
    zero_component_prob: float = 0.3,
) -> Instance:
    """A random weighted organisation tree whose leaves are tenants (for H-DRF experiments and tests).

    The tree is grown level by level and has exactly ``leaves`` leaves, the deepest at exactly
    ``depth``. A sparse tree (fewer leaves than about ``mean(branching) ** depth``) draws every
    internal node's number of children uniformly from ``branching`` (inclusive) and keeps a random
    subset of each level internal, sized for the leaves still to place, so leaves also sit at
    shallower levels, as in real org charts. A dense tree keeps every leaf at the bottom and sizes
    the levels geometrically, each node's share of its level drawn from ``branching``: fan-outs are
    about ``leaves ** (1 / depth)``, beyond ``branching`` when the leaf count forces it. Rounding
    leaves a few fan-outs one outside the range, and a tree with fewer than about ``depth`` leaves
    needs single-child nodes.

    Nodes are stored in depth-first preorder (the order ``models.io`` reads a hierarchy back in),
    named by their path (``n2.1.3``; the root is ``root``), with weights uniform in [0.5, 4]. Leaf
    ``k`` in preorder is tenant ``k`` (same name and weight).

    Leaves get random per-task demand vectors: each component is zero with probability
    ``zero_component_prob`` (never all of them) and otherwise uniform in [0.1, 1] times a per-resource
    scale of about ``1 / leaves`` of the cluster (at most half of the smallest machine, so every task
    fits somewhere). A ``capped_fraction`` of the leaves get a task cap uniform in 1..10, the others
    are unbounded.

    Everything is drawn with vectorised numpy calls and the validated ``Hierarchy``/``Tenant``
    objects are built directly (no file round trip), so 100,000 leaves take a few seconds at most.

    Parameters
    ----------
    seed : int
        The instance is a deterministic function of all arguments.
    leaves : int
        Number of leaves (tenants), >= 1.
    depth : int
        Depth of the deepest leaf (the root has depth 0), >= 1.
    resources : int
        Number of resources (named cpu, mem, gpu, net, disk, then ``r5``, ...).
    servers : int, optional
        None: one pooled server ``pool`` with capacity 1.0 of every resource. An int: that many
        random heterogeneous server classes (shapes uniform in [0.1, 1] per resource, 1-8 machines
        each), scaled so that the cluster total of every resource is 1.0.
    branching : (int, int)
        Inclusive range of children per internal node.
    capped_fraction : float
        Fraction of leaves with a finite task cap.
    zero_component_prob : float
        Probability that a demand component is zero.

    Returns
    -------
    Instance
        With ``hierarchy`` set and ``tenants`` the leaves in preorder; named
        ``tree-<leaves>l-d<depth>-s<seed>``.
    """
    lo, hi = branching
    if leaves < 1 or depth < 1 or resources < 1:
        raise ValueError(f"need leaves >= 1, depth >= 1 and resources >= 1, got {leaves}, {depth}, {resources}")
    if not 1 <= lo <= hi:
        raise ValueError(f"branching must be a range (lo, hi) with 1 <= lo <= hi, got {branching}")
    if servers is not None and servers < 1:
        raise ValueError(f"servers must be a positive number of classes, got {servers}")
    rng = np.random.default_rng(seed)

    # Grow the tree breadth first. Node ids are in level order and, within a level, children of the
    # same parent are contiguous and follow their parents' order (np.repeat over sorted parent ids).
    mean_branching = max(1.5, 0.5 * (lo + hi))
    growth = _level_growth(leaves, depth, mean_branching)
    even = leaves ** (1.0 / depth)  # the fan-out of a tree with every leaf at the bottom
    # Dense trees (about as many leaves as full branching gives, or more) keep every leaf at the bottom
    # and size the levels geometrically, so every fan-out is about `even` (drawn fan-outs would compound
    # their randomness and leave the last level to absorb it). Sparse trees draw fan-outs from the range
    # and stop some branches early.
    dense = even >= _DENSE_TREE * mean_branching
    parents: list[np.ndarray] = [np.array([-1], dtype=np.int64)]
    internal: list[np.ndarray] = [np.array([True])]
    frontier = np.array([0], dtype=np.int64)  # internal nodes of the previous level
    next_id, remaining = 1, leaves
    for level in range(1, depth + 1):
        draws = rng.integers(lo, hi + 1, size=frontier.size)
        natural = int(draws.sum())
        if level == depth:
            size, stays = remaining, 0  # every frontier node still needs >= 1 child: remaining >= frontier
        elif dense:
            size = stays = min(remaining, max(frontier.size, round(even**level)))
        else:
            # Keep as many internal nodes as the leaves still to place need: each will carry about
            # `below` leaves (the same geometric scheme over the levels left) and can carry at most
            # hi**levels_left, so the last levels keep their fan-out in range instead of absorbing
            # the difference.
            levels_left = depth - level
            below = mean_branching + (mean_branching - 1.0) * sum(growth**k for k in range(1, levels_left))
            target = round((remaining - natural) / (below - 1.0))
            needed = math.ceil((remaining - natural) / max(hi**levels_left - 1, 1))
            stays = min(max(1, target, needed), natural, remaining)
            # Each internal node will end in at least one leaf, so keep that many leaves in reserve.
            size = stays + min(natural - stays, remaining - stays)
        counts = _spread(draws, size) if size != natural else draws.astype(np.int64)
        level_parents = np.repeat(frontier, counts)
        flags = np.zeros(size, dtype=bool)
        flags[rng.permutation(size)[:stays]] = True
        parents.append(level_parents)
        internal.append(flags)
        ids = np.arange(next_id, next_id + size)
        remaining -= size - stays
        frontier = ids[flags]
        next_id += size
    parent = np.concatenate(parents)
    is_internal = np.concatenate(internal)
    n_nodes = parent.size

    # Sibling rank (1-based) and depth-first preorder: sort by the ids of the ancestors at every
    # level (missing levels as -1, so a node precedes its descendants).
    rank = np.zeros(n_nodes, dtype=np.int64)
    ancestors = np.full((n_nodes, depth + 1), -1, dtype=np.int64)
    ancestors[0, 0] = 0
    start = 1
    for level in range(1, depth + 1):
        ids = np.arange(start, start + parents[level].size)
        start += ids.size
        level_parents = parents[level]
        rank[ids] = np.arange(ids.size) - np.searchsorted(level_parents, level_parents) + 1
        ancestors[ids] = ancestors[level_parents]
        ancestors[ids, level] = ids
    order = np.lexsort(ancestors.T[::-1])
    position = np.empty(n_nodes, dtype=np.int64)
    position[order] = np.arange(n_nodes)

    names = [""] * n_nodes  # by breadth-first id; parents are named before their children
    names[0] = "root"
    for node, (up, r) in enumerate(zip(parent[1:].tolist(), rank[1:].tolist(), strict=True), start=1):
        names[node] = f"n{r}" if up == 0 else f"{names[up]}.{r}"

    weight = np.round(rng.uniform(0.5, 4.0, size=n_nodes), 3)
    leaf_ids = order[~is_internal[order]]  # breadth-first ids of the leaves, in preorder
    tenant_of = np.full(n_nodes, -1, dtype=np.int64)
    tenant_of[leaf_ids] = np.arange(leaves)

    # Servers: one pool, or random shapes scaled to a cluster total of 1.0 per resource.
    resource_names = tuple(_TREE_RESOURCES[k] if k < len(_TREE_RESOURCES) else f"r{k}" for k in range(resources))
    if servers is None:
        server_list: tuple[ServerClass, ...] = (ServerClass("pool", np.ones(resources), 1),)
        smallest = np.ones(resources)
    else:
        shapes = rng.uniform(0.1, 1.0, size=(servers, resources))
        machine_counts = rng.integers(1, 9, size=servers)
        shapes = shapes / (shapes * machine_counts[:, None]).sum(axis=0)
        server_list = tuple(ServerClass(f"s{k}", shapes[k], int(machine_counts[k])) for k in range(servers))
        smallest = shapes.min(axis=0)

    # Demands: about 1/leaves of the cluster per task, never more than half the smallest machine.
    unit = np.minimum(1.0 / max(leaves, 2), 0.5 * smallest)
    demand = rng.uniform(0.1, 1.0, size=(leaves, resources)) * unit[None, :]
    zero = rng.random((leaves, resources)) < zero_component_prob
    all_zero = zero.all(axis=1)
    zero[np.flatnonzero(all_zero), rng.integers(resources, size=int(all_zero.sum()))] = False
    demand[zero] = 0.0
    caps = np.where(rng.random(leaves) < capped_fraction, rng.integers(1, 11, size=leaves).astype(np.float64), math.inf)

    nodes = tuple(
        HierarchyNode(
            names[b], int(position[parent[b]]) if b else -1, float(weight[b]) if b else 1.0, int(tenant_of[b])
        )
        for b in order.tolist()
    )
    tenants = tuple(
        Tenant(names[b], demand[k], float(weight[b]), float(caps[k])) for k, b in enumerate(leaf_ids.tolist())
    )
    name = f"tree-{leaves}l-d{depth}-s{seed}"
    return Instance(resource_names, server_list, tenants, Hierarchy(nodes), name=name)


# --- DAG jobs (space-time packing) -----------------------------------------------------------------------

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
    from models.types import Job, Stage

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

    from models.types import Job, Stage

    root = Path(data_dir) / TPCH_DIR
    summary = json.loads(_require(root / "tpch_dag_summary.json").read_text())
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
        adjacency = np.load(_require(root / str(entry["size"]) / f"adj_mat_{entry['query']}.npy"))
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
