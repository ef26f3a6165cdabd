"""The library of tiny problems with hand-derived optima, shared by the tests of every backend and method.

Each case says in its comment how its optimum was derived by hand. Notation: a cluster's totals are
<CPU, mem, ...>; a tenant's task share s is its global dominant share per task (max over resources of
demand / cluster total); "level" is the common weighted dominant share of the tenants still growing in a
progressive-filling round.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from fairpack.models.result import Allocation
from fairpack.models.types import Instance, ServerClass, Tenant

INF = math.inf


def make(
    servers: list[tuple[str, list[float], int]],
    tenants: list[tuple[str, list[float], float, float]],
    resources: tuple[str, ...] = ("cpu", "mem"),
) -> Instance:
    """Servers as (name, capacity, count); tenants as (name, demand, weight, task cap)."""
    return Instance(
        resources,
        tuple(ServerClass(name, np.array(cap, dtype=float), count) for name, cap, count in servers),
        tuple(Tenant(name, np.array(demand, dtype=float), weight, tasks) for name, demand, weight, tasks in tenants),
    )


def drf_paper() -> Instance:
    # Ghodsi et al. (NSDI'11), Section 4: <9 CPUs, 18 GB>; A <1 CPU, 4 GB>, B <3 CPU, 1 GB>.
    return make([("cluster", [9, 18], 1)], [("A", [1, 4], 1, INF), ("B", [3, 1], 1, INF)])


def fig1() -> Instance:
    # Wang et al. (DRFH), Fig. 1: server 1 <2 CPU, 12 GB>, server 2 <12 CPU, 2 GB>.
    return make(
        [("server1", [2, 12], 1), ("server2", [12, 2], 1)],
        [("user1", [0.2, 1], 1, INF), ("user2", [1, 0.2], 1, INF)],
    )


@dataclass(frozen=True)
class Case:
    name: str
    instance: Instance
    tasks: tuple[float, ...]  # hand-derived tasks per tenant
    objective: float  # min weighted dominant share over unsatisfied runnable tenants, by hand
    per_server: dict[str, dict[str, float]] = field(default_factory=dict)  # tenant -> class -> tasks, if unique


CPU_MEM_GPU = ("cpu", "mem", "gpu")

LIBRARY = [
    # s1 <8, 4>, s2 <2, 6>; totals <10, 10>; A <2, 1>, B <1, 2>: s_A = s_B = 1/5, so equal tasks x.
    # Pooled, 3x <= 10 would give 10/3, but per server: s2's 2 CPUs hold 2 B tasks (B's memory need
    # leaves room) and A there would cost 2 B tasks per A task, while on s1 one A task costs only half
    # a B task (memory a1 + 2 b1 <= 4). So a2 = 0, b2 = 2, and on s1 a1 = x, b1 = x - 2 with
    # x + 2(x - 2) = 4 -> x = 8/3 (s1 CPU 16/3 + 2/3 = 6 <= 8). Nobody grows after: A would need s1
    # memory (full) or s2 CPU (full); B too. Certificate for "A cannot grow while B keeps 8/3":
    # a <= 4 - 2 b1 + a2 and b2 <= 2 - 2 a2 give a <= 8/3 - 3 a2.
    Case(
        "two-servers-two-tenants",
        make([("s1", [8, 4], 1), ("s2", [2, 6], 1)], [("A", [2, 1], 1, INF), ("B", [1, 2], 1, INF)]),
        (8 / 3, 8 / 3),
        8 / 15,
        {"A": {"s1": 8 / 3, "s2": 0.0}, "B": {"s1": 2 / 3, "s2": 2.0}},
    ),
    # s1 <4, 4, 0> (no GPU), s2 <4, 4, 2>; totals <8, 8, 2>. A <1, 1, 1> can only use s2; s_A = 1/2.
    # B <1, 1, 0>: s_B = 1/8. Level t: A = 2t, B = 8t tasks; CPU 10t <= 8 -> t = 0.8: A = 1.6 on s2,
    # B = 6.4 (4 on s1, 2.4 on s2: CPU 1.6 + 2.4 = 4). CPU is full and both need it.
    Case(
        "resource-only-one-server-has",
        make(
            [("s1", [4, 4, 0], 1), ("s2", [4, 4, 2], 1)],
            [("A", [1, 1, 1], 1, INF), ("B", [1, 1, 0], 1, INF)],
            CPU_MEM_GPU,
        ),
        (1.6, 6.4),
        0.8,
        {"A": {"s1": 0.0, "s2": 1.6}, "B": {"s1": 4.0, "s2": 2.4}},
    ),
    # Two <4, 4, 0> machines, no GPU anywhere. A <1, 0, 1> needs a GPU: 0 tasks. B <1, 1, 0> (s = 1/8)
    # and C <0, 2, 0> (s = 2/8): level t gives B 8t, C 4t tasks; memory 8t + 8t <= 8 -> t = 1/2:
    # B = 4, C = 2, exactly as without A (checked separately below).
    Case(
        "resource-no-server-has",
        make(
            [("s", [4, 4, 0], 2)],
            [("A", [1, 0, 1], 1, INF), ("B", [1, 1, 0], 1, INF), ("C", [0, 2, 0], 1, INF)],
            CPU_MEM_GPU,
        ),
        (0.0, 4.0, 2.0),
        0.5,  # A is not runnable and does not count
    ),
    # s1 <10, 10>, s2 <12, 12>; totals <22, 22>. A <1, 1> cap 2, B <1, 0.5> cap 4, C <1, 0.25>,
    # D <1, 0> (a zero component): all are CPU-dominant with s = 1/22, so this is water-filling of
    # 22 CPUs. A stops at its cap 2; the other three would reach (22 - 2) / 3 = 6.67 > 4, so B stops at
    # its cap 4; C and D share the remaining 22 - 2 - 4 = 16: 8 each. Memory: 2 + 2 + 2 = 6 <= 22.
    # Filling continues past both caps.
    Case(
        "caps-at-different-levels",
        make(
            [("s1", [10, 10], 1), ("s2", [12, 12], 1)],
            [("A", [1, 1], 1, 2), ("B", [1, 0.5], 1, 4), ("C", [1, 0.25], 1, INF), ("D", [1, 0], 1, INF)],
        ),
        (2.0, 4.0, 8.0, 8.0),
        8 / 22,  # C and D; A and B are satisfied
    ),
    # s1 <6, 2>, s2 <4, 8>; totals <10, 10>. A <1, 0>, B <1, 0.5>, C <0, 1>: s = 1/10 each. Pooled DRF:
    # CPU binds at A = B = 5 (memory 2.5 + 5), then C alone takes the remaining memory: 7.5. Placed:
    # B 4 on s1 (memory 2) and 1 on s2, A 2 on s1 and 3 on s2, C 7.5 on s2 (memory 0.5 + 7.5 = 8).
    # The pooled optimum is placeable, so it is the optimum.
    Case(
        "zero-demand-components",
        make(
            [("s1", [6, 2], 1), ("s2", [4, 8], 1)],
            [("A", [1, 0], 1, INF), ("B", [1, 0.5], 1, INF), ("C", [0, 1], 1, INF)],
        ),
        (5.0, 5.0, 7.5),
        0.5,
    ),
    # Weights 1 : 3, same cluster as test_weighted_dominant_shares_are_proportional_to_weights:
    # A = 12/7, B = 36/7.
    Case(
        "weights-1-3",
        make([("s1", [8, 4], 1), ("s2", [4, 8], 1)], [("A", [2, 1], 1, INF), ("B", [1, 2], 3, INF)]),
        (12 / 7, 36 / 7),
        2 / 7,
    ),
    # Three identical <4, 4> machines (count 3) plus s2 <6, 2>; totals <18, 14>. A <1, 2>: s_A = 2/14
    # = 1/7; B <2, 1>: s_B = 2/18 = 1/9. Level t: A = 7t, B = 9t; CPU 7t + 18t <= 18, memory
    # 14t + 9t <= 14 -> t = 14/23: A = 98/23, B = 126/23. Placement: B 2 on s2 (memory 2, CPU 4),
    # the rest on the <4, 4> machines: memory 196/23 + 80/23 = 12, CPU 98/23 + 160/23 = 258/23 <= 12.
    # Memory is full everywhere, so nobody grows.
    Case(
        "identical-servers-merged",
        make([("s1", [4, 4], 3), ("s2", [6, 2], 1)], [("A", [1, 2], 1, INF), ("B", [2, 1], 1, INF)]),
        (98 / 23, 126 / 23),
        14 / 23,
    ),
    # The same cluster with the three machines as separate classes: the same optimum.
    Case(
        "identical-servers-separate",
        make(
            [("s1a", [4, 4], 1), ("s1b", [4, 4], 1), ("s1c", [4, 4], 1), ("s2", [6, 2], 1)],
            [("A", [1, 2], 1, INF), ("B", [2, 1], 1, INF)],
        ),
        (98 / 23, 126 / 23),
        14 / 23,
    ),
    # s1 <4, 1>, s2 <1, 4>; totals <5, 5>. A <1, 1>, B <1, 0>: s = 1/5 each. A is bottlenecked: s1's
    # memory and s2's CPU allow one A task each, so A <= 2 whatever B does. Round 1 ends at 2 tasks
    # each (B fits: s1 CPU 4 - 1 = 3); A is frozen, B keeps growing on s1's remaining CPU to 3.
    Case(
        "bottleneck-frozen-early",
        make([("s1", [4, 1], 1), ("s2", [1, 4], 1)], [("A", [1, 1], 1, INF), ("B", [1, 0], 1, INF)]),
        (2.0, 3.0),
        0.4,
        {"A": {"s1": 1.0, "s2": 1.0}, "B": {"s1": 3.0, "s2": 0.0}},
    ),
    # A task cap of 0 runs nothing; a cap above what fits does not bind. One <6, 6> server:
    # A <1, 1> cap 0 -> 0; B <1, 2> cap 100 and C <2, 1>: s = 1/3 each, x each: 3x <= 6 -> x = 2.
    Case(
        "cap-zero-and-loose-cap",
        make([("s", [6, 6], 1)], [("A", [1, 1], 1, 0), ("B", [1, 2], 1, 100), ("C", [2, 1], 1, INF)]),
        (0.0, 2.0, 2.0),
        2 / 3,  # A (cap 0) does not count
    ),
    Case("drf-paper", drf_paper(), (3.0, 2.0), 2 / 3),
    Case("drfh-fig1", fig1(), (10.0, 10.0), 10 / 14, {"user1": {"server1": 10.0}, "user2": {"server2": 10.0}}),
]


def leximin_brute_force(instance: Instance) -> np.ndarray:
    """The leximin-optimal sorted weighted-share vector over ALL integral machine allocations."""
    machines = instance.capacity[instance.machine_class()]
    demand, caps = instance.demand, instance.task_caps
    n, m = demand.shape[0], machines.shape[0]
    ranges = []
    for i in range(n):
        for k in range(m):
            need = demand[i] > 0
            fit = int(np.floor(np.min(machines[k, need] / demand[i, need]) + 1e-9)) if instance.runnable[i] else 0
            ranges.append(range(int(min(fit, caps[i])) + 1))
    best: tuple[float, ...] | None = None
    for combo in itertools.product(*ranges):
        x = np.array(combo, dtype=float).reshape(n, m)
        if np.any(x.sum(axis=1) > caps) or np.any(x.T @ demand > machines + 1e-9):
            continue
        vector = tuple(np.round(np.sort(x.sum(axis=1) * instance.dominant_demand / instance.weights), 9))
        if best is None or vector > best:
            best = vector
    assert best is not None
    return np.array(best)


def sorted_weighted_shares(instance: Instance, allocation: Allocation) -> np.ndarray:
    return np.sort(allocation.tenant_tasks * instance.dominant_demand / instance.weights)


# Tiny instances (2 machines x 2-3 tenants, small capacities) whose leximin optimum drfh-int finds.
# Each comment gives the leximin optimum derived by hand (weighted dominant shares).
BRUTE_FORCE_CASES = [
    # Fig. 1 scaled down: machines <1, 6> and <6, 1>, user 1 <0.2, 1>, user 2 <1, 0.2>; totals <7, 7>,
    # s = 1/7. Each machine holds 5 tasks of "its" user and the other user's tasks cost 5 of them:
    # 5 and 5 (shares 5/7, 5/7).
    ("fig1-small", make([("a", [1, 6], 1), ("b", [6, 1], 1)], [("u", [0.2, 1], 1, INF), ("v", [1, 0.2], 1, INF)])),
    # Two <3, 3> machines; A <1, 2>, B <2, 1>; s = 2/6 = 1/3. One A and one B per machine (3, 3 used):
    # 2 each, shares 2/3. Two A tasks on a machine need 4 memory, so 2 + 2 is also the most.
    ("two-by-two", make([("m", [3, 3], 2)], [("A", [1, 2], 1, INF), ("B", [2, 1], 1, INF)])),
    # Machines <4, 2> and <2, 4>; A <2, 1> weight 2, B <1, 1> weight 1; totals <6, 6>, s_A = 1/3,
    # s_B = 1/6. Leximin: B gets 2 on <2, 4> and A 2 on <4, 2>: weighted shares A 2/3/2 = 1/3,
    # B 2/6 = 1/3; nothing else fits (<4, 2> is full, <2, 4> has no CPU left), so (1/3, 1/3).
    (
        "weighted",
        make([("a", [4, 2], 1), ("b", [2, 4], 1)], [("A", [2, 1], 2, INF), ("B", [1, 1], 1, INF)]),
    ),
    # Machines <2, 2> and <2, 2>; A <1, 1> cap 1, B <1, 0>, C <0, 1>; s = 1/4 each. A takes its one
    # task (level 1/4); B and C then take 3 each (CPU 1 + 3, memory 1 + 3): shares (1/4, 3/4, 3/4).
    (
        "cap-and-zero-demands",
        make([("m", [2, 2], 2)], [("A", [1, 1], 1, 1), ("B", [1, 0], 1, INF), ("C", [0, 1], 1, INF)]),
    ),
]


def _tree(servers: list[dict[str, object]], children: list[dict[str, object]],
          resources: tuple[str, ...] = ("cpu", "mem")) -> Instance:  # fmt: skip
    from fairpack.models.io import instance_from_dict

    tree = {"name": "root", "children": children}
    return instance_from_dict({"resources": list(resources), "servers": servers, "hierarchy": tree})


def _jobs(servers: list[dict[str, object]], jobs: list[dict[str, object]], slot: float = 1.0) -> Instance:
    from fairpack.models.io import instance_from_dict

    return instance_from_dict({"resources": ["cpu"], "servers": servers, "jobs": jobs, "time": {"slot": slot}})


#: Tiny hierarchies (name, instance, placement) with their optimum by hand in the comment.
HIERARCHY_CASES = [
    # H-DRF paper Fig. 4 variant, pooled <10 CPU, 10 GPU>: n1-1 <1, 1> gets half of both, n2-1 <1 CPU> half
    # the CPUs, n2-2 <1 GPU> half the GPUs: every node reaches its guarantee (ratio 1).
    ("fig4-variant", _tree([{"name": "pool", "capacity": {"cpu": 10, "gpu": 10}}], [
        {"name": "n1", "children": [{"name": "n1-1", "demand": {"cpu": 1, "gpu": 1}}]},
        {"name": "n2", "children": [{"name": "n2-1", "demand": {"cpu": 1}}, {"name": "n2-2", "demand": {"gpu": 1}}]},
    ], ("cpu", "gpu")), "auto"),
    # DRFH's Fig. 1 servers <2, 12> and <12, 2> under a two-level tree: u1 <0.2, 1> fills server 1 with 10
    # tasks (memory), u2 <1, 0.2> server 2 with 10 (CPU); on servers the LP (the backend) places them.
    ("fig1-tree", _tree([{"name": "s1", "capacity": {"cpu": 2, "mem": 12}},
                         {"name": "s2", "capacity": {"cpu": 12, "mem": 2}}], [
        {"name": "a", "children": [{"name": "u1", "demand": {"cpu": 0.2, "mem": 1}}]},
        {"name": "b", "children": [{"name": "u2", "demand": {"cpu": 1, "mem": 0.2}}]},
    ]), "servers"),
]  # fmt: skip

#: Tiny DAG-job instances (name, instance, placement); optima by hand in tests/test_fair_caps.py.
JOB_CASES = [
    # instances/dag_two_jobs.yaml: staggered releases; with the fair caps T = (4.5, 2.5) the avg-JCT
    # optimum is 17/6.
    ("two-jobs", _jobs([{"name": "node", "capacity": {"cpu": 2}}], [
        {"name": "long", "weight": 1, "release": 0, "stages": [
            {"name": "load", "tasks": 1, "duration": 2, "demand": {"cpu": 1}},
            {"name": "join", "tasks": 1, "duration": 2, "demand": {"cpu": 2}, "after": ["load"]}]},
        {"name": "short", "weight": 2, "release": 0.5, "stages": [
            {"name": "scan", "tasks": 2, "duration": 1, "demand": {"cpu": 1}}]},
    ], slot=0.5), "pooled"),
    # One job, three 1.2-CPU tasks on two 2-CPU machines: two waves per machine, makespan 2 (T = 2).
    ("one-job-two-machines", _jobs([{"name": "m", "capacity": {"cpu": 2}, "count": 2}], [
        {"name": "j", "stages": [{"name": "s", "tasks": 3, "duration": 1, "demand": {"cpu": 1.2}}]},
    ]), "servers"),
]  # fmt: skip
