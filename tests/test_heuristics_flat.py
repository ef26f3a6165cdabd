"""Flat heuristics: hand-derived examples, reference implementations and capacity/cap/Pareto properties."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.result import Allocation
from models.types import Instance, ServerClass, Tenant
from solver.drfh.greedy import TOL, weighted_units
from solver.drfh.heuristics import best_fit, first_fit, per_server_drf, slots

Heuristic = Callable[[Instance], Allocation]
HEURISTICS: dict[str, Heuristic] = {
    "first_fit": first_fit,
    "best_fit": best_fit,
    "slots": slots,
    "per_server_drf": per_server_drf,
}


def make(servers: list[tuple[list[float], int]], tenants: list[tuple[list[float], float, float]]) -> Instance:
    """Servers as (capacity, count); tenants as (demand, weight, cap)."""
    resources = tuple(f"r{k}" for k in range(len(servers[0][0])))
    return Instance(
        resources,
        tuple(ServerClass(f"s{k}", np.array(c, dtype=float), n) for k, (c, n) in enumerate(servers)),
        tuple(Tenant(f"u{k}", np.array(d, dtype=float), w, cap) for k, (d, w, cap) in enumerate(tenants)),
    )


def fig1() -> Instance:
    """DRFH paper, Fig. 1: server 1 <2 CPU, 12 GB>, server 2 <12 CPU, 2 GB>."""
    return make([([2, 12], 1), ([12, 2], 1)], [([0.2, 1], 1, math.inf), ([1, 0.2], 1, math.inf)])


def free_capacity(instance: Instance, allocation: Allocation) -> np.ndarray:
    return allocation.unit_capacity(instance) - allocation.tasks.T @ instance.demand


def fits_somewhere(instance: Instance, allocation: Allocation, i: int) -> bool:
    free = free_capacity(instance, allocation)
    cap = allocation.unit_capacity(instance)
    need = instance.demand[i]
    return bool(np.any(np.all((need <= free + TOL * cap) | (need == 0), axis=1)))


# ---- reference implementations: plain loops over machines, no cursors, no class tricks ----------------


def _reference_fill(instance: Instance, choose: Callable[[int, np.ndarray], int]) -> np.ndarray:
    machine_cap = instance.capacity[instance.machine_class()]
    room = machine_cap * (1 + TOL)
    caps = np.floor(instance.task_caps)
    step = instance.dominant_demand / instance.weights
    tasks = np.zeros((len(instance.tenants), len(machine_cap)))
    counts = [0] * len(instance.tenants)
    active = [i for i in range(len(instance.tenants)) if caps[i] >= 1 and instance.runnable[i]]
    while active:
        i = min(active, key=lambda k: (counts[k] * step[k], k))
        fits = [m for m in range(len(room)) if all(room[m, r] >= d for r, d in enumerate(instance.demand[i]) if d > 0)]
        if not fits:
            active.remove(i)
            continue
        m = choose(i, room) if len(fits) > 1 else fits[0]
        m = m if m in fits else fits[0]
        room[m] -= instance.demand[i]
        tasks[i, m] += 1
        counts[i] += 1
        if counts[i] + 1 > caps[i]:
            active.remove(i)
    return tasks


def reference_first_fit(instance: Instance) -> np.ndarray:
    return _reference_fill(instance, lambda i, room: -1)


def reference_best_fit(instance: Instance) -> np.ndarray:
    total = instance.total_capacity
    relative = np.where(total > 0, instance.demand / np.where(total > 0, total, 1), 0)

    def choose(i: int, room: np.ndarray) -> int:
        star = int(relative[i].argmax())
        demand = instance.demand[i]
        best, best_h = -1, math.inf
        for m in range(len(room)):
            if not all(room[m, r] >= d for r, d in enumerate(demand) if d > 0) or room[m, star] <= 0:
                continue
            h = 0.0
            for r in range(len(demand)):
                if r != star:
                    h += abs(demand[r] / demand[star] - room[m, r] / room[m, star])
            if h < best_h:
                best, best_h = m, h
        return best

    return _reference_fill(instance, choose)


def reference_per_server_drf(instance: Instance) -> np.ndarray:
    machine_cap = instance.capacity[instance.machine_class()]
    remaining = np.floor(instance.task_caps)
    tasks = np.zeros((len(instance.tenants), len(machine_cap)))
    for m, cap in enumerate(machine_cap):
        room = cap * (1 + TOL)
        present = cap > 0
        ok = [
            i
            for i in range(len(instance.tenants))
            if remaining[i] >= 1 and np.all((instance.demand[i] <= room) | (instance.demand[i] == 0))
        ]
        local = {i: float((instance.demand[i, present] / cap[present]).max()) / instance.weights[i] for i in ok}
        heap = [(0.0, i) for i in ok]
        while heap:
            _, i = heapq.heappop(heap)
            d = instance.demand[i]
            if np.any((d > 0) & (room < d)):
                continue
            room = room - d
            tasks[i, m] += 1
            remaining[i] -= 1
            if remaining[i] >= 1:
                heapq.heappush(heap, (int(tasks[i, m]) * local[i], i))
    return tasks


# ---- random small instances ---------------------------------------------------------------------------

amount = st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 10.0, 12.0])


@st.composite
def instances(draw: st.DrawFn) -> Instance:
    resources = draw(st.integers(1, 3))
    servers = [
        (draw(st.lists(amount, min_size=resources, max_size=resources)), draw(st.integers(1, 3)))
        for _ in range(draw(st.integers(1, 3)))
    ]
    small = st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.5, 1.0, 1.5, 2.5, 5.0, 13.0])
    tenants = []
    for _ in range(draw(st.integers(1, 4))):
        demand = draw(st.lists(small, min_size=resources, max_size=resources).filter(lambda d: any(d)))
        weight = draw(st.sampled_from([1.0, 2.0, 3.0, 0.5]))
        cap = draw(st.sampled_from([math.inf, math.inf, 0.0, 1.0, 3.0, 7.5, 20.0]))
        tenants.append((demand, weight, cap))
    return make(servers, tenants)


def check_valid(instance: Instance, allocation: Allocation) -> None:
    tasks = allocation.tasks
    assert allocation.kind == "machine" and allocation.integral
    assert tasks.shape == (len(instance.tenants), len(instance.machine_names()))
    assert np.all(tasks >= 0) and np.array_equal(tasks, np.round(tasks))
    cap = allocation.unit_capacity(instance)
    assert np.all(tasks.T @ instance.demand <= cap * (1 + 1e-9) + 1e-12), "a machine is over capacity"
    assert np.all(allocation.tenant_tasks <= instance.task_caps), "a task cap is exceeded"
    for i in range(len(instance.tenants)):
        if not instance.fits()[i].any():
            assert allocation.tenant_tasks[i] == 0


def check_pareto(instance: Instance, allocation: Allocation) -> None:
    """No tenant below its cap can fit one more task anywhere."""
    for i in range(len(instance.tenants)):
        if allocation.tenant_tasks[i] + 1 <= instance.task_caps[i]:
            assert not fits_somewhere(instance, allocation, i), f"tenant {i} could still run a task"


@settings(derandomize=True, max_examples=300, deadline=None)
@given(instances())
def test_properties_and_references(instance: Instance) -> None:
    for name, heuristic in HEURISTICS.items():
        allocation = heuristic(instance)
        check_valid(instance, allocation)
        if name != "slots":
            check_pareto(instance, allocation)
    assert np.array_equal(first_fit(instance).tasks, reference_first_fit(instance))
    assert np.array_equal(best_fit(instance).tasks, reference_best_fit(instance))
    assert np.array_equal(per_server_drf(instance).tasks, reference_per_server_drf(instance))


@settings(derandomize=True, max_examples=200, deadline=None)
@given(instances(), st.integers(1, 12))
def test_slots_fill_every_slot_or_every_admitted_cap(instance: Instance, k: int) -> None:
    allocation = slots(instance, k)
    check_valid(instance, allocation)
    slot = instance.capacity.max(axis=0) / k
    admitted = np.all(instance.demand <= slot * (1 + TOL), axis=1)
    assert np.all(allocation.tenant_tasks[~admitted] == 0)
    used = slot > 0
    per_class = np.zeros(len(instance.servers))
    if used.any():
        per_class = np.floor((instance.capacity[:, used] / slot[used]).min(axis=1) * (1 + 1e-12))
    total = float(np.sum(per_class * instance.counts))
    per_machine = allocation.tasks.sum(axis=0)
    assert np.all(per_machine <= np.repeat(per_class, instance.counts))
    open_tenants = admitted & (allocation.tenant_tasks + 1 <= instance.task_caps)
    if open_tenants.any():
        assert allocation.tasks.sum() == total


# ---- hand-derived examples ----------------------------------------------------------------------------


def test_fig1_per_server_drf_gives_six_tasks_each() -> None:
    tasks = per_server_drf(fig1()).tasks
    # Server 1: user 1 reaches dominant share 5 x 0.1 = 0.5 with 5 tasks, user 2 has 1 task (1/2 CPU);
    # the CPU is then exhausted. Server 2 mirrors it.
    assert tasks.tolist() == [[5, 1], [1, 5]]
    assert tasks.sum(axis=1).tolist() == [6, 6]


def test_fig1_first_fit() -> None:
    # Both users have global dominant share 1/14 per task, so they alternate (user 1 first). User 2's
    # first task fits on server 1, its next ones go to server 2; user 1 fills server 1's CPU with 5
    # tasks and then takes server 2's last but 0.2 GB, which user 2 takes last.
    assert first_fit(fig1()).tasks.tolist() == [[5, 1], [1, 5]]


def test_fig1_best_fit_matches_drfh() -> None:
    # Fitness of user 1 (normalised <0.2, 1>) is |0.2 - cpu/mem| of the free capacity: about 0.03 on
    # server 1 and above 5.8 on server 2, so it always picks server 1; user 2 symmetrically server 2.
    # Each fills its server: 10 tasks each, the DRFH optimum.
    assert best_fit(fig1()).tasks.tolist() == [[10, 0], [0, 10]]


def test_fig1_slots() -> None:
    # Componentwise-largest machine <12, 12>; k = 10 gives slots <1.2, 1.2>: one slot per server.
    assert slots(fig1(), 10).tasks.tolist() == [[1, 0], [0, 1]]
    # k = 60 gives <0.2, 0.2>: neither user's task fits in a slot.
    assert slots(fig1(), 60).tasks.sum() == 0


def test_slots_hand_example() -> None:
    # Largest machine <8, 16>, k = 4: slot <2, 4>; machine 1 offers 4 slots, machine 2 <4, 8> offers 2.
    # A <1, 2> (weight 1) and B <2, 4> (weight 2) are admitted, C <3, 1> is not (3 > 2 CPU).
    # Grants by (tasks / weight, index): A0, B0, B0.5, A1, B1, B1.5 -> A 2 tasks, B 4 tasks.
    instance = make(
        [([8, 16], 1), ([4, 8], 1)],
        [([1, 2], 1, math.inf), ([2, 4], 2, math.inf), ([3, 1], 1, math.inf)],
    )
    assert slots(instance, 4).tasks.tolist() == [[2, 0], [2, 2], [0, 0]]
    capped = make(
        [([8, 16], 1), ([4, 8], 1)],
        [([1, 2], 1, math.inf), ([2, 4], 2, 3), ([3, 1], 1, math.inf)],
    )
    # With B capped at 3, A takes the slot B cannot use.
    assert slots(capped, 4).tenant_tasks.tolist() == [3, 3, 0]


def test_single_resource_weights_give_proportional_shares() -> None:
    instance = make([([1000.0], 1)], [([1.0], 1.0, math.inf), ([1.0], 2.0, math.inf), ([1.0], 3.0, math.inf)])
    runs = {**HEURISTICS, "slots": lambda inst: slots(inst, 1000)}  # one slot per task
    for name, heuristic in runs.items():
        counts = heuristic(instance).tenant_tasks
        target = np.array([1, 2, 3]) * 1000 / 6
        assert counts.sum() == 1000, name
        assert np.all(np.abs(counts - target) <= 1), (name, counts)


def test_caps_respected_and_capacity_passed_on() -> None:
    instance = make([([10.0, 10.0], 2)], [([1.0, 1.0], 1.0, 3), ([1.0, 0.5], 1.0, math.inf)])
    for name, heuristic in (("first_fit", first_fit), ("best_fit", best_fit), ("per_server_drf", per_server_drf)):
        counts = heuristic(instance).tenant_tasks
        assert counts.tolist() == [3, 17], name  # 20 CPUs: 3 for the capped tenant, the rest for the other


def test_tenant_fitting_nowhere_gets_nothing() -> None:
    # u1's task needs 5 CPUs but no machine has more than 4; u2 needs a resource (gpu) nobody has.
    instance = make(
        [([4.0, 8.0, 0.0], 2)],
        [([5.0, 1.0, 0.0], 1.0, math.inf), ([1.0, 1.0, 1.0], 1.0, math.inf), ([1.0, 1.0, 0.0], 1.0, math.inf)],
    )
    for name, heuristic in HEURISTICS.items():
        counts = heuristic(instance).tenant_tasks
        assert counts[0] == 0 and counts[1] == 0, name
    assert first_fit(instance).tenant_tasks[2] == 8


def test_zero_cap_and_fractional_cap() -> None:
    instance = make([([10.0], 1)], [([1.0], 1.0, 0.0), ([1.0], 1.0, 2.5), ([1.0], 1.0, math.inf)])
    for name, heuristic in HEURISTICS.items():
        assert heuristic(instance).tenant_tasks.tolist() == [0, 2, 8], name


def test_per_server_drf_replicates_over_a_class_until_caps_bind() -> None:
    # 100 identical machines fit 4 tasks each; u0 (cap 10) gets 2 per machine on the first 5 machines.
    instance = make([([4.0], 100)], [([1.0], 1.0, 10), ([1.0], 1.0, math.inf)])
    tasks = per_server_drf(instance).tasks
    assert np.array_equal(tasks, reference_per_server_drf(instance))
    assert tasks[0, :5].tolist() == [2] * 5 and tasks[0, 5:].sum() == 0
    assert tasks[1].sum() == 400 - 10


def test_best_fit_prefers_matching_shape_and_first_machine_on_ties() -> None:
    # A CPU-heavy task <2, 1> goes to the CPU-heavy machine (<8, 4> matches its shape exactly).
    instance = make([([4.0, 8.0], 2), ([8.0, 4.0], 2)], [([2.0, 1.0], 1.0, 1)])
    assert best_fit(instance).tasks.tolist() == [[0, 0, 1, 0]]
    assert first_fit(instance).tasks.tolist() == [[1, 0, 0, 0]]


def test_weighted_units_matches_one_at_a_time() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(1, 8))
        step = 1.0 / rng.choice([1.0, 2.0, 3.0, 0.7], size=n)
        caps = np.where(rng.random(n) < 0.5, np.inf, rng.integers(0, 30, size=n)).astype(float)
        units = int(rng.integers(0, 120))
        counts = [0] * n
        for _ in range(units):
            open_ = [i for i in range(n) if counts[i] < caps[i]]
            if not open_:
                break
            i = min(open_, key=lambda k: (counts[k] * step[k], k))
            counts[i] += 1
        assert weighted_units(step, caps, units).tolist() == counts


def test_slots_rejects_bad_k() -> None:
    with pytest.raises(ValueError):
        slots(fig1(), 0)
    with pytest.raises(TypeError):
        slots(fig1(), 2.5)  # type: ignore[arg-type]


def test_no_tenants() -> None:
    instance = Instance(("cpu",), (ServerClass("s", np.array([1.0]), 3),), ())
    for heuristic in HEURISTICS.values():
        assert heuristic(instance).tasks.shape == (0, 3)
