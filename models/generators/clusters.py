"""Clusters and flat tenants: the Google 2011 machine table, the Alibaba GPU cluster, and random ones.

External data is read in place (``<data-dir>/google``, ``<data-dir>/alibaba``), never copied into the
repository. Every generator is deterministic for a given seed.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from fairpack.models.generators.common import largest_remainder, require
from fairpack.models.types import Instance, InstanceError, ServerClass, Tenant

GOOGLE_TABLE = Path("google") / "machine-dist-cpu-memory-capacity.csv"
ALIBABA_NODES = Path("alibaba") / "gpu-v2023" / "openb_node_list_all_node.csv"
ALIBABA_PODS = Path("alibaba") / "gpu-v2023" / "openb_pod_list_default.csv"

def google_servers(data_dir: str | Path, machines: int | None = None) -> tuple[ServerClass, ...]:
    """The Google 2011 cluster's machine configurations (CPU and memory normalised to the largest machine).

    With ``machines`` given, class counts are scaled down proportionally (largest remainders), keeping
    every configuration with at least one machine when possible.
    """
    rows = list(csv.DictReader(require(Path(data_dir) / GOOGLE_TABLE).open()))
    counts = np.array([int(r["number_of_machines"]) for r in rows])
    if machines is not None and machines < counts.sum():
        counts = largest_remainder(counts * machines / counts.sum())
    return tuple(
        ServerClass(f"g{k}-c{r['cpu']}-m{r['memory']}", np.array([float(r["cpu"]), float(r["memory"])]), int(c))
        for k, (r, c) in enumerate(zip(rows, counts, strict=True))
        if c > 0
    )


def google_like_servers(machines: int, configurations: int, seed: int) -> tuple[ServerClass, ...]:
    """A synthetic heterogeneous 2-resource cluster shaped like Google's: a few dominant configurations (no more
    than there are machines: every configuration has one machine at least)."""
    if machines < 1:
        raise InstanceError(f"a cluster needs a machine at least, got {machines}", "machines")
    configurations = min(configurations, machines)
    rng = np.random.default_rng(seed)
    cpu = rng.choice([0.25, 0.5, 0.5, 0.5, 1.0], size=configurations)
    mem = np.clip(cpu * rng.choice([0.125, 0.25, 0.5, 1.0, 1.5, 2.0], size=configurations), 0.03, 1.0)
    popularity = rng.dirichlet(np.full(configurations, 0.7))
    counts = largest_remainder(popularity * (machines - configurations)) + 1  # exactly `machines`
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
    with require(path).open() as handle:
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
