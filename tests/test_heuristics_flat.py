"""Flat heuristics: hand-derived examples, machine-by-machine reference implementations and properties.

The references below expand every server class into machines and place one task at a time with plain
loops: no runs, no batches, no sorted index. The heuristics must give exactly their allocations.
"""

from __future__ import annotations

import math
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from work import lines_run, peak_bytes

from fairpack.models.generators import google_instance
from fairpack.models.metrics import min_weighted_share
from fairpack.models.result import Allocation
from fairpack.models.types import Instance, InstanceError, ServerClass, Tenant
from fairpack.solver.drfh.greedy import MAX_CELLS, TIE, TOL, grant_segments, resolve_fuzzy
from fairpack.solver.drfh.heuristics import best_fit, best_fit_terms, first_fit, per_server_drf, slots
from fairpack.solver.drfh.ratio_index import CAP, KERNELS

Heuristic = Callable[[Instance], Allocation]
HEURISTICS: dict[str, Heuristic] = {
    "first_fit": first_fit,
    "best_fit": best_fit,
    "slots": slots,
    "per_server_drf": per_server_drf,
}


def make(
    servers: list[tuple[list[float], int]],
    tenants: list[tuple[list[float], float, float]],
    resources: tuple[str, ...] | None = None,
) -> Instance:
    """Servers as (capacity, count); tenants as (demand, weight, cap)."""
    names = resources or tuple(f"r{k}" for k in range(len(servers[0][0])))
    return Instance(
        names,
        tuple(ServerClass(f"s{k}", np.array(c, dtype=float), n) for k, (c, n) in enumerate(servers)),
        tuple(Tenant(f"u{k}", np.array(d, dtype=float), w, cap) for k, (d, w, cap) in enumerate(tenants)),
    )


def fig1() -> Instance:
    """DRFH paper, Fig. 1: server 1 <2 CPU, 12 GB>, server 2 <12 CPU, 2 GB>."""
    return make([([2, 12], 1), ([12, 2], 1)], [([0.2, 1], 1, math.inf), ([1, 0.2], 1, math.inf)])


def gpu_case() -> Instance:
    """The minimal case: raw units send the CPU job to the only GPU machine."""
    return make(
        [([16, 64, 4], 1), ([32, 256, 0], 1)],
        [([4, 8, 0], 1, math.inf), ([4, 16, 1], 1, math.inf)],
        ("cpu", "mem", "gpu"),
    )


def free_capacity(instance: Instance, allocation: Allocation) -> np.ndarray:
    return allocation.unit_capacity(instance) - allocation.tasks.T @ instance.demand


def fits_somewhere(instance: Instance, allocation: Allocation, i: int) -> bool:
    free = free_capacity(instance, allocation)
    cap = allocation.unit_capacity(instance)
    need = instance.demand[i]
    return bool(np.any(np.all((need <= free + TOL * cap) | (need == 0), axis=1)))


# ---- reference implementations: one machine and one task at a time ------------------------------------


def next_tenant(keys: dict[int, float]) -> int:
    """The shared tenant rule: lowest index among the keys within TIE (relative) of the smallest."""
    smallest = min(keys.values())
    return min(i for i, key in keys.items() if key <= smallest + TIE * smallest)


def fitting(room: np.ndarray, demand: np.ndarray) -> list[int]:
    return [m for m in range(len(room)) if all(room[m, r] >= d for r, d in enumerate(demand) if d > 0)]


def reference_fill(
    instance: Instance,
    choose: Callable[[int, np.ndarray, list[int]], int],
    float_order: bool = False,
    order: list[int] | None = None,
) -> np.ndarray:
    """Progressive filling over expanded machines; ``choose(i, room, fitting)`` picks the machine.

    ``float_order`` orders tenants by the raw float keys instead (the behaviour before the tie rule). ``order``,
    when given, gets the tenant of every task placed, in turn.
    """
    room = instance.capacity[instance.machine_class()] * (1 + TOL)
    caps = np.floor(instance.task_caps)
    step = instance.dominant_demand / instance.weights
    tasks = np.zeros((len(instance.tenants), len(room)))
    counts = [0] * len(instance.tenants)
    active = [i for i in range(len(instance.tenants)) if caps[i] >= 1 and instance.runnable[i]]
    while active:
        keys = {k: counts[k] * step[k] for k in active}
        i = min(active, key=lambda k: (keys[k], k)) if float_order else next_tenant(keys)
        fits = fitting(room, instance.demand[i])
        if not fits:
            active.remove(i)
            continue
        m = choose(i, room, fits)
        room[m] -= instance.demand[i]
        tasks[i, m] += 1
        counts[i] += 1
        if order is not None:
            order.append(i)
        if counts[i] + 1 > caps[i]:
            active.remove(i)
    return tasks


def reference_first_fit(instance: Instance) -> np.ndarray:
    return reference_fill(instance, lambda i, room, fits: fits[0])


def paper_fitness(instance: Instance, i: int, room_m: np.ndarray) -> float:
    """DRFH paper: H = sum over r != r* of |d_r / d_r* - f_r / f_r*|, d and f as fractions of the totals."""
    total = instance.total_capacity
    present = [r for r in range(len(total)) if total[r] > 0]
    relative = [instance.demand[i, r] / total[r] if total[r] > 0 else 0.0 for r in range(len(total))]
    top = max(relative)
    star = min(r for r in range(len(total)) if relative[r] >= top - TIE * top)
    free = room_m / np.where(total > 0, total, 1.0)
    h = 0.0
    for r in present:
        if r != star:
            h += abs(relative[r] / relative[star] - free[r] / free[star])
    return h


def reference_best_fit(instance: Instance, raw_units: bool = False, order: list[int] | None = None) -> np.ndarray:
    def choose(i: int, room: np.ndarray, fits: list[int]) -> int:
        if raw_units:  # the formula before the fix: units as given, normalised by the dominant resource
            total = instance.total_capacity
            star = int(np.argmax(instance.demand[i] / total))
            d = instance.demand[i]
            h = [sum(abs(d[r] / d[star] - room[m, r] / room[m, star]) for r in range(len(d)) if r != star)
                 for m in fits]  # fmt: skip
        else:
            h = [paper_fitness(instance, i, room[m]) for m in fits]
        best = min(h)
        return min(m for m, value in zip(fits, h, strict=True) if value <= best + TIE * (1.0 + best))

    return reference_fill(instance, choose, order=order)


def reference_per_server_drf(instance: Instance) -> np.ndarray:
    machine_cap = instance.capacity[instance.machine_class()]
    remaining = np.floor(instance.task_caps)
    tasks = np.zeros((len(instance.tenants), len(machine_cap)))
    for m, cap in enumerate(machine_cap):
        room = cap * (1 + TOL)
        present = cap > 0
        local = {
            i: float((instance.demand[i, present] / cap[present]).max()) / instance.weights[i]
            for i in range(len(instance.tenants))
            if present.any()
        }
        active = [
            i
            for i in range(len(instance.tenants))
            if remaining[i] >= 1 and instance.runnable[i] and fitting(room[None, :], instance.demand[i])
        ]
        while active:
            i = next_tenant({k: int(tasks[k, m]) * local[k] for k in active})
            if not fitting(room[None, :], instance.demand[i]):
                active.remove(i)
                continue
            room = room - instance.demand[i]
            tasks[i, m] += 1
            remaining[i] -= 1
            if remaining[i] < 1:
                active.remove(i)
    return tasks


def reference_slots(instance: Instance, k: int) -> np.ndarray:
    machine_cap = instance.capacity[instance.machine_class()]
    slot = instance.capacity.max(axis=0) / k
    per_machine = [
        math.floor(min(c[r] / slot[r] for r in range(len(c)) if c[r] > 0) * (1 + 1e-12)) if (c > 0).any() else 0
        for c in machine_cap
    ]
    free = list(per_machine)
    caps = np.floor(instance.task_caps)
    step = 1.0 / instance.weights  # max-min on task counts
    tasks = np.zeros((len(instance.tenants), len(machine_cap)))
    fits_one = [bool(fitting(machine_cap * (1 + TOL), instance.demand[i])) for i in range(len(instance.tenants))]
    active = [
        i
        for i in range(len(instance.tenants))
        if caps[i] >= 1 and instance.runnable[i] and fits_one[i] and np.all(instance.demand[i] <= slot * (1 + TOL))
    ]
    counts = [0] * len(instance.tenants)
    while active:
        i = next_tenant({j: counts[j] * step[j] for j in active})
        usable = [
            m
            for m in range(len(machine_cap))
            if free[m] > 0 and all(machine_cap[m, r] > 0 for r in range(len(slot)) if instance.demand[i, r] > 0)
        ]
        if not usable:
            active.remove(i)
            continue
        m = usable[0]
        free[m] -= 1
        tasks[i, m] += 1
        counts[i] += 1
        if counts[i] + 1 > caps[i]:
            active.remove(i)
    return tasks


# ---- random small instances ---------------------------------------------------------------------------

# Decimal amounts whose ratios tie in real numbers but not always in floats (0.1 * 3 != 0.3).
amount = st.sampled_from([0.0, 0.3, 0.5, 0.9, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 10.0, 12.0])
small = st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.5, 0.6, 0.9, 1.0, 1.5, 2.5, 3.0, 5.0])


@st.composite
def instances(draw: st.DrawFn, resources: int | None = None, max_count: int = 3) -> Instance:
    size = resources or draw(st.integers(1, 3))
    servers = [
        (draw(st.lists(amount, min_size=size, max_size=size)), draw(st.integers(1, max_count)))
        for _ in range(draw(st.integers(1, 3)))
    ]
    tenants = []
    for _ in range(draw(st.integers(1, 5))):
        demand = draw(st.lists(small, min_size=size, max_size=size).filter(lambda d: any(d)))
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


def assert_best_fit_matches(instance: Instance) -> None:
    """Best-Fit equals the reference, with the pure-Python search and with both compiled kernels (C and numba)."""
    expected = reference_best_fit(instance)
    for compiled in (False, *KERNELS):
        assert np.array_equal(best_fit(instance, compiled=compiled).tasks, expected), compiled


@settings(derandomize=True, max_examples=300, deadline=None)
@given(instances())
def test_properties_and_references(instance: Instance) -> None:
    for name, heuristic in HEURISTICS.items():
        allocation = heuristic(instance)
        check_valid(instance, allocation)
        if name != "slots":
            check_pareto(instance, allocation)
    assert np.array_equal(first_fit(instance).tasks, reference_first_fit(instance))
    assert_best_fit_matches(instance)
    assert np.array_equal(per_server_drf(instance).tasks, reference_per_server_drf(instance))
    assert np.array_equal(slots(instance, 4).tasks, reference_slots(instance, 4))


@settings(derandomize=True, max_examples=150, deadline=None)
@given(instances(resources=2, max_count=12))
def test_two_resources_with_many_identical_machines(instance: Instance) -> None:
    # Two resources take Best-Fit's sorted-ratio search; counts up to 12 exercise runs and batches.
    assert_best_fit_matches(instance)
    assert np.array_equal(first_fit(instance).tasks, reference_first_fit(instance))


@settings(derandomize=True, max_examples=80, deadline=None)
@given(st.sampled_from([3, 4]).flatmap(lambda size: instances(resources=size, max_count=6)))
def test_three_and_four_resources(instance: Instance) -> None:
    assert np.array_equal(best_fit(instance).tasks, reference_best_fit(instance))
    assert np.array_equal(first_fit(instance).tasks, reference_first_fit(instance))


@settings(derandomize=True, max_examples=100, deadline=None)
@given(instances(), st.integers(1, 12))
def test_slots_against_reference(instance: Instance, k: int) -> None:
    allocation = slots(instance, k)
    check_valid(instance, allocation)
    assert np.array_equal(allocation.tasks, reference_slots(instance, k))


def test_single_tenant_batches_match_one_at_a_time() -> None:
    # One tenant alone is placed in batches (k tasks on each of n machines at once).
    rng = np.random.default_rng(5)
    for _ in range(20):
        servers = [(list(rng.choice([1.0, 2.5, 4.0, 7.0], size=2)), int(rng.integers(1, 40))) for _ in range(3)]
        demand = list(rng.choice([0.3, 0.5, 1.0, 1.5], size=2))
        cap = float(rng.choice([math.inf, 17.0, 250.0]))
        instance = make(servers, [(demand, 1.0, cap)])
        assert np.array_equal(first_fit(instance).tasks, reference_first_fit(instance))
        assert_best_fit_matches(instance)
        assert np.array_equal(per_server_drf(instance).tasks, reference_per_server_drf(instance))


def test_compiled_best_fit_on_hundreds_of_machines() -> None:
    # Hundreds of entries in the compiled search's sorted order: blocks split and empty, entries no tenant
    # fits any more are dropped, the frontier of needs changes as tenants stop.
    from benchmarks.flat_heuristics_speed import machine_by_machine_best_fit

    distinct = google_instance(None, tenants=40, seed=3, machines=800, distinct=True)
    expected = machine_by_machine_best_fit(distinct).tasks
    merged = [google_instance(None, tenants=60, seed=seed, machines=1500) for seed in range(3)]
    python = [best_fit(instance, compiled=False).tasks for instance in merged]
    for name in KERNELS:
        assert np.array_equal(best_fit(distinct, compiled=name).tasks, expected), name
        for instance, tasks in zip(merged, python, strict=True):
            assert np.array_equal(best_fit(instance, compiled=name).tasks, tasks), name


@pytest.mark.parametrize("method", ["best-fit", "first-fit", "slots", "per-server-drf"])
def test_a_whole_task_heuristic_answers_with_cells_and_the_check_reads_them_alone(method: str) -> None:
    # 60 tenants on 1,500 machines: a tenants x machines table of 90,000 cells, of which the tasks fill a few
    # percent; solving, checking and rendering never build it.
    from fairpack.models.view import result_json
    from fairpack.solver.api import solve

    instance = google_instance(None, tenants=60, seed=1, machines=1500)
    result = solve(instance, method)
    assert result.verified and result.allocation is not None
    result_json(instance, result)
    assert result.allocation.sparse and 0 < result.allocation.cells()[0].size < 0.25 * 60 * 1500
    assert result.objective == min_weighted_share(instance, Allocation(result.allocation.tasks, "machine", True))


@st.composite
def crowded_two_resource_instances(draw: st.DrawFn) -> Instance:
    """Two resources, classes of tens to hundreds of identical machines, a few tenants of several shapes."""
    servers = [([draw(st.sampled_from([4.0, 6.0, 8.0, 12.0])), draw(st.sampled_from([4.0, 8.0, 16.0, 32.0]))],
                draw(st.integers(20, 160))) for _ in range(draw(st.integers(1, 4)))]  # fmt: skip
    tenants = []
    for _ in range(draw(st.integers(2, 8))):
        demand = [draw(st.sampled_from([0.3, 0.5, 1.0, 1.5, 2.0])), draw(st.sampled_from([0.0, 0.5, 1.0, 3.0, 6.0]))]
        cap = draw(st.sampled_from([math.inf, math.inf, 40.0, 300.0]))
        tenants.append((demand, draw(st.sampled_from([1.0, 2.0, 0.5])), cap))
    return make(servers, tenants)


@settings(derandomize=True, max_examples=25, deadline=None)
@given(crowded_two_resource_instances())
def test_compiled_best_fit_against_the_machine_by_machine_reference(instance: Instance) -> None:
    # Hundreds of machines in a few classes: the compiled search's blocks fill, split and empty, a class's
    # untouched machines stay one entry, the log of placed tasks grows past its first size, tenants stop
    # (caps, or nothing fits) and take the entries only they fitted with them. Every task must land where
    # the machine-by-machine reference puts it.
    from benchmarks.flat_heuristics_speed import machine_by_machine_best_fit

    expected = machine_by_machine_best_fit(instance).tasks
    for compiled in (False, *KERNELS):
        assert np.array_equal(best_fit(instance, compiled=compiled).tasks, expected), compiled


def test_the_c_kernel_is_built_and_preferred() -> None:
    # The dev install builds the extension (setup.py); were it missing, every run above would have tested numba's
    # kernel twice and Best-Fit would pay numba's start-up cost.
    from fairpack.solver.drfh import _ratio_search, ratio_index, ratio_numba  # type: ignore[attr-defined]

    assert ratio_index.kernel("auto") is ratio_index.kernel("c") is _ratio_search.serve_chunk
    assert ratio_index.kernel("numba") is ratio_numba.serve_chunk
    # The C code keeps its own copies of the tie tolerance and of the block size: they must be these.
    assert _ratio_search.CONSTANTS == (TIE, CAP)
    with pytest.raises(ValueError, match="kernel must be one of"):
        ratio_index.kernel("fortran")


def test_the_c_kernels_bound_search_and_its_function_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    # Best-Fit calls the C kernel through a Search that binds the state's arrays once; serve_chunk, the function
    # with numba's arguments, binds them at every call. Both must place every task as the reference does.
    from benchmarks.flat_heuristics_speed import machine_by_machine_best_fit
    from fairpack.solver.drfh import _ratio_search, ratio_index  # type: ignore[attr-defined]

    instance = google_instance(None, tenants=30, seed=4, machines=600, distinct=True)
    expected = machine_by_machine_best_fit(instance).tasks
    assert ratio_index.binder("c")(ratio_index.RatioState(
        np.ones((1, 2)), np.array([2]), np.array([0]), (2.0, 2.0), np.zeros((6, 1)), np.ones(1, dtype=bool)
    ).arguments()).__self__.__class__ is _ratio_search.Search  # fmt: skip
    assert np.array_equal(best_fit(instance, compiled="c").tasks, expected)
    serve = _ratio_search.serve_chunk
    monkeypatch.setattr(ratio_index, "binder", lambda name: lambda arguments: lambda *head: serve(*head, *arguments))
    assert np.array_equal(best_fit(instance, compiled="c").tasks, expected)


def test_a_fresh_process_runs_large_best_fit_without_importing_numba() -> None:
    # numba's import and set-up cost a fresh process about 0.45 s of CPU, more than the search on the Google
    # table: with the extension built, Best-Fit's default (compiled on a cluster this large, where numba's kernel
    # used to run) never imports it.
    code = (
        "import sys\n"
        "from fairpack.models.generators import google_instance\n"
        "from fairpack.solver.drfh import heuristics\n"
        "instance = google_instance(None, tenants=50, seed=2, machines=heuristics.NUMBA_FROM_MACHINES + 1000)\n"
        "assert heuristics.best_fit(instance).tasks.sum() > 0\n"
        "assert 'fairpack.solver.drfh._ratio_search' in sys.modules\n"
        "print('numba' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300,
                          cwd=Path(__file__).resolve().parents[1])  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_which_search_best_fit_runs_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    # With the C extension the compiled search runs from COMPILED_FROM_MACHINES machines on (it loads in a
    # millisecond); below, the pure-Python search. Without the extension, numba's set-up would cost more than it
    # saves below NUMBA_FROM_MACHINES, unless numba's kernel has already been loaded in the process.
    from fairpack.solver.drfh import heuristics, ratio_index

    small = make([([4.0, 8.0], 3), ([8.0, 4.0], 2)], [([1.0, 1.0], 1.0, math.inf), ([0.5, 2.0], 2.0, 9.0)])
    larger = make([([4.0, 8.0], 30), ([8.0, 4.0], 20)], [([1.0, 1.0], 1.0, math.inf), ([0.5, 2.0], 2.0, 90.0)])
    assert len(small.machine_names()) < heuristics.COMPILED_FROM_MACHINES <= len(larger.machine_names())
    assert len(larger.machine_names()) < heuristics.NUMBA_FROM_MACHINES
    best_fit(small, compiled="numba")  # numba's kernel loaded in this process
    built: list[int] = []
    original = heuristics._CompiledRatioIndex
    monkeypatch.setattr(heuristics, "_CompiledRatioIndex", lambda *args: built.append(1) or original(*args))

    def runs_compiled(instance: Instance) -> bool:
        built.clear()
        assert np.array_equal(best_fit(instance).tasks, best_fit(instance, compiled=False).tasks)
        return built == [1]

    assert ratio_index.c_built()
    assert not runs_compiled(small) and runs_compiled(larger)
    monkeypatch.setattr(ratio_index, "c_built", lambda: False)  # only numba's kernel, already loaded
    assert runs_compiled(small) and runs_compiled(larger)
    monkeypatch.delitem(sys.modules, "fairpack.solver.drfh.ratio_numba")  # numba's kernel not loaded yet
    assert not runs_compiled(small) and not runs_compiled(larger)


@pytest.mark.data
def test_best_fit_on_the_google_table(data_dir: Path) -> None:
    # The real machine table: scaled to 1,200 machines against the machine-by-machine reference, and whole
    # (12,583 machines, 1,000 tenants: the speed case) the compiled search against the pure-Python one.
    from benchmarks.flat_heuristics_speed import machine_by_machine_best_fit

    scaled = google_instance(data_dir, tenants=100, seed=5, machines=1200)
    expected = machine_by_machine_best_fit(scaled).tasks
    for name in KERNELS:
        assert np.array_equal(best_fit(scaled, compiled=name).tasks, expected), name
    whole = google_instance(data_dir, tenants=1000, seed=1)
    compiled = best_fit(whole)  # compiled by default at this size
    assert compiled.tasks.sum() == 296_049
    assert np.array_equal(compiled.tasks, best_fit(whole, compiled=False).tasks)
    assert np.array_equal(compiled.tasks, best_fit(whole, compiled="numba").tasks)


# ---- the cases --------------------------------------------------------------------------------


def test_best_fit_uses_fractions_of_the_cluster_totals() -> None:
    instance = gpu_case()
    allocation = best_fit(instance)
    # The gpu-job's best machine is the GPU node, the cpu-job's the CPU node: H in fractions of the
    # totals (cpu 48, mem 320, gpu 4). The GPU node takes 3 gpu-jobs (its CPU runs out at 4 tasks),
    # leaving one CPU-job slot; the CPU node takes 8 cpu-jobs.
    assert allocation.tasks.tolist() == [[1, 8], [3, 0]]
    assert min_weighted_share(instance, allocation) == pytest.approx(0.75)
    # In raw units the cpu-job's first tasks go to the GPU node, and f is 0.25.
    raw = Allocation(reference_best_fit(instance, raw_units=True), kind="machine", integral=True)
    assert raw.tasks.tolist() == [[3, 8], [1, 0]]
    assert min_weighted_share(instance, raw) == pytest.approx(0.25)


def test_best_fit_gpu_case_equals_drfh_int() -> None:
    from fairpack.solver.api import solve

    exact = solve(gpu_case(), "drfh-int")
    assert exact.objective == pytest.approx(0.75)
    assert min_weighted_share(gpu_case(), best_fit(gpu_case())) == pytest.approx(exact.objective)


def test_tenant_ties_break_by_index_not_by_float_noise() -> None:
    # u0 <0.1> weight 1 and u1 <0.6> weight 6 have the same step in real numbers, but in floats
    # (0.6 / 1.3) / 6 < 0.1 / 1.3. With room 1.3, whoever goes first at the second level takes the
    # 0.6 that is left after 0.1 + 0.6: under the tie rule u0 (the lower index) goes first, u1 no
    # longer fits and u0 fills the machine.
    instance = make([([1.3], 1)], [([0.1], 1.0, math.inf), ([0.6], 6.0, math.inf)])
    step = instance.dominant_demand / instance.weights
    assert step[1] < step[0]  # the float noise the rule must ignore
    floats = reference_fill(instance, lambda i, room, fits: fits[0], float_order=True)
    assert floats.sum(axis=1).tolist() == [1, 2]
    for name in ("first_fit", "best_fit", "per_server_drf"):
        assert HEURISTICS[name](instance).tenant_tasks.tolist() == [7, 1], name
    assert np.array_equal(first_fit(instance).tasks, reference_first_fit(instance))


def test_machine_ties_break_by_index_not_by_float_noise() -> None:
    # Machines <0.2, 1> and <0.6, 3> have the same free ratio in real numbers; in floats machine 1's
    # fitness for the task <0.1, 1> is the smaller one (0.4999999999999999 against 0.5), by rounding
    # only. The first machine wins.
    instance = make([([0.2, 1.0], 1), ([0.6, 3.0], 1)], [([0.1, 1.0], 1.0, 1)])
    room = instance.capacity * (1 + TOL)
    h = [paper_fitness(instance, 0, room[m]) for m in range(2)]
    assert h[1] < h[0] and h[0] - h[1] < 1e-15  # a difference of rounding alone
    assert best_fit(instance).tasks.tolist() == [[1, 0]]
    for name in KERNELS:
        assert best_fit(instance, compiled=name).tasks.tolist() == [[1, 0]], name


def test_grant_order_matches_one_at_a_time_with_ties() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(1, 8))
        weight = rng.choice([1.0, 3.0, 0.5], size=n)
        step = rng.choice([0.1, 0.3, 0.6, 0.25], size=n) / weight
        caps = np.where(rng.random(n) < 0.5, np.inf, rng.integers(0, 30, size=n)).astype(float)
        units = int(rng.integers(0, 120))
        counts = [0] * n
        expected: list[int] = []
        for _ in range(units):
            open_ = {i: counts[i] * step[i] for i in range(n) if counts[i] < caps[i]}
            if not open_:
                break
            i = next_tenant(open_)
            counts[i] += 1
            expected.append(i)
        got: list[int] = []
        state = np.zeros(n, dtype=np.int64)
        alive = np.ones(n, dtype=bool)

        def take(i: int, got: list[int] = got, state: np.ndarray = state, units: int = units) -> bool:
            if len(got) >= units:
                return False
            got.append(i)
            state[i] += 1
            return True

        for segment in grant_segments(step, caps, lambda state=state, alive=alive: (state, alive), chunk=16):
            if len(got) >= units:
                break
            if segment.fuzzy:
                resolve_fuzzy(segment, take)
            else:
                for i in segment.tenants.tolist():
                    if not take(i):
                        break
        assert got == expected


def test_a_tenant_that_left_earlier_in_the_chunk_does_not_compete_in_a_chain() -> None:
    # Steps 0.1 in real numbers; in floats u2's is the smallest, u1's 0.6e-9 above it and u0's 1.3e-9 above: every
    # level is one chain of near-ties. While u2 competes, the window of ties is u2's and holds u1 and u2 only: u1
    # goes first. At level 1 u2's task (3.5) no longer fits and u2 leaves; at level 2 the window starts at u1's key
    # and holds u0, which goes first and takes the last 1 of room that u1 (1.5) then misses. Letting u2 compete in
    # the chain after it left (a static order of the chunk) serves u1 first: u1 3 tasks and u0 2.
    tenants = [([1.0, 0.5], 1 / (1 + 1.3e-9), math.inf), ([1.5, 0.5], 1.5 / (1 + 0.6e-9), math.inf),
               ([3.5, 0.5], 3.5, math.inf)]  # fmt: skip
    instance = make([([10.0, 10.0], 1)], tenants)
    step = instance.dominant_demand / instance.weights
    assert step[2] < step[1] < step[0] and step[0] <= step[2] * (1 + 2 * TIE) and step[1] <= step[2] * (1 + TIE)
    expected = reference_best_fit(instance)
    assert expected.ravel().tolist() == [3, 2, 1]
    assert_best_fit_matches(instance)
    one = make([([10.0], 1)], [([demand[0]], weight, cap) for demand, weight, cap in tenants])
    assert first_fit(one).tenant_tasks.tolist() == [3, 2, 1]


def chain_instance(rng: np.random.Generator) -> Instance:
    """Two resources, a few small machines, and tenants in two groups whose steps (0.05 and 0.1 in real numbers)
    differ by float-sized amounts: within a group a later tenant's step is 0.4e-9 to 0.8e-9 (relative) smaller,
    so every level of a group is a chain of near-ties whose order depends on who is still in, and a later tenant
    needs more of resource a, so it stops first; some tenants have small caps, which end them inside chains."""
    servers = [([float(rng.choice([4.0, 6.0, 10.0])), float(rng.choice([4.0, 8.0, 12.0]))], int(rng.integers(1, 4)))
               for _ in range(int(rng.integers(1, 3)))]  # fmt: skip
    n = int(rng.integers(3, 8))
    big = np.sort(rng.choice([0.5, 1.0, 1.5, 2.5, 3.5], size=n))
    demands = [[float(b), float(rng.choice([0.0, 0.5, 1.0]))] for b in big]
    caps = [float(rng.choice([math.inf, math.inf, 2.0, 3.0, 5.0])) for _ in range(n)]
    share = make(servers, [(d, 1.0, c) for d, c in zip(demands, caps, strict=True)]).dominant_demand
    level = rng.choice([0.05, 0.1], size=n)
    noise = np.zeros(n)
    for value in (0.05, 0.1):
        group = np.flatnonzero(level == value)
        noise[group] = np.cumsum(rng.uniform(0.4e-9, 0.8e-9, size=group.size))
    weights = share / level * (1 + noise)
    return make(servers, [(d, float(w), c) for d, w, c in zip(demands, weights, caps, strict=True)])


def test_chains_of_near_ties_are_settled_live_by_every_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every task of every kernel, in turn, is the one-at-a-time definition's: the C and numba kernels settle the
    # chains inside the compiled call, the pure-Python search through resolve_fuzzy (as First-Fit does). The
    # instances are built so that the live rule matters: with tenants that left earlier in the chunk still
    # competing (the chunk's order fixed when it was cut), the allocations of some of them differ.
    from fairpack.solver.drfh import greedy, heuristics

    logged: list[np.ndarray] = []
    answer = heuristics._CompiledRatioIndex.allocation

    def allocation(index: heuristics._CompiledRatioIndex) -> Allocation:
        logged.append(index.state.placed[0, : index.state.box[2]].copy())
        return answer(index)

    monkeypatch.setattr(heuristics._CompiledRatioIndex, "allocation", allocation)
    original = greedy.resolve_fuzzy
    rng = np.random.default_rng(11)
    differ = 0
    for _ in range(150):
        instance = chain_instance(rng)
        order: list[int] = []
        expected = reference_best_fit(instance, order=order)
        for compiled in (False, *KERNELS):
            logged.clear()
            assert np.array_equal(best_fit(instance, compiled=compiled).tasks, expected), compiled
            assert compiled is False or logged[0].tolist() == order, compiled
        assert np.array_equal(first_fit(instance).tasks, reference_first_fit(instance))
        monkeypatch.setattr(greedy, "resolve_fuzzy", lambda segment, take, left=(): original(segment, take))
        differ += not np.array_equal(best_fit(instance, compiled=False).tasks, expected)
        monkeypatch.setattr(greedy, "resolve_fuzzy", original)
    assert differ >= 15, differ


def test_per_server_drf_settles_chains_of_near_ties_as_its_definition(monkeypatch: pytest.MonkeyPatch) -> None:
    # A machine filling up blocks at once every tenant that no longer fits; in the definition each stays in the
    # order until its turn, and its key bounds the window of a chain of near-ties until then: in the rest of the
    # chunk, and in the next chunks' cuts (tiny chunks make the turns cross them). And a class's outcome is
    # copied over its machines while the caps allow, but not onto a copy where a tenant leaves at its cap with
    # its next key in a chain (see the test below). With either undone, some of these instances differ.
    from fairpack.solver.drfh import greedy, heuristics

    rng = np.random.default_rng(11)
    instances = [chain_instance(rng) for _ in range(300)]
    expected = [reference_per_server_drf(instance) for instance in instances]

    def mismatches() -> int:
        return sum(not np.array_equal(per_server_drf(instance).tasks, tasks)
                   for instance, tasks in zip(instances, expected, strict=True))  # fmt: skip

    assert mismatches() == 0
    with monkeypatch.context() as patch:
        patch.setattr(heuristics, "MACHINE_CHUNK", 2)
        assert mismatches() == 0
        patch.setattr(greedy.Alive, "waiting", lambda self: np.zeros(0, dtype=np.int64))
        assert mismatches() >= 10  # blocked tenants dropped from the next chunks before their turn
    with monkeypatch.context() as patch:
        patch.setattr(greedy.Alive, "block_where", greedy.Alive.kill_where)
        assert mismatches() >= 10  # blocked tenants leave the order at once

    def until_a_cap_binds(outcome: np.ndarray, remaining: np.ndarray, left: int, step: np.ndarray | None) -> int:
        return int(min(left, np.floor(remaining[outcome > 0] / outcome[outcome > 0]).min()))

    with monkeypatch.context() as patch:
        patch.setattr(heuristics, "_copies", until_a_cap_binds)
        assert mismatches() >= 1  # copied until a cap binds, the binding copy included


def test_per_server_drf_fills_afresh_a_copy_where_a_cap_changes_a_chain() -> None:
    # Two machines of (10, 8); local steps 0.6 in real numbers, in floats u2's < u1's < u0's, u1's within TIE of
    # both others', u0's not within TIE of u2's. Machine 0: a task each at key 0 (6.5 of 10 used); at level 1 the
    # window starts at u2's key and holds u1, not u0, so u1 goes (1.0 left), and then nobody fits: [1, 2, 1]. On
    # machine 1 u2's remaining cap is 1: it leaves right after its first task, the window at level 1 starts at
    # u1's key and holds u0, which goes first (twice), and u1 then misses: [3, 1, 1], not a copy of machine 0.
    instance = make([([10.0, 8.0], 2)], [([1.5, 0.5], 0.25 * (1 + 0.6e-9), 9.0),
                                         ([2.5, 0.5], 0.25 / 0.6 * (1 + 1.35e-9), 9.0),
                                         ([2.5, 0.5], 0.25 / 0.6 * (1 + 1.9e-9), 2.0)])  # fmt: skip
    expected = reference_per_server_drf(instance)
    assert expected.tolist() == [[1, 3], [2, 1], [1, 1]]
    assert np.array_equal(per_server_drf(instance).tasks, expected)


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.1 + 0.2, 1.0])), max_size=40))
def test_grant_entries_sort_by_key_then_index(entries: list[tuple[int, float]]) -> None:
    # The chunk's sort: an unstable sort of the keys, then runs of equal keys in index order; it must be the two-key
    # sort, equal keys included (0.1 + 0.2 is not 0.3).
    from fairpack.solver.drfh.greedy import _by_key_then_index

    tenants = np.array([t for t, _ in entries], dtype=np.int64)
    keys = np.array([k for _, k in entries], dtype=np.float64)
    order = np.lexsort((tenants, keys))
    got = _by_key_then_index(tenants.copy(), keys.copy())
    assert np.array_equal(got[0], tenants[order]) and np.array_equal(got[1], keys[order])


def test_slots_on_machines_without_gpus() -> None:
    # One GPU machine and ten without GPUs, all <8 CPU, 32 GB>; a CPU-only tenant <1, 4, 0>.
    # k = 8 cuts the largest machine <8, 32, 1> into slots <1, 4, 1/8>: a GPU-less machine offers
    # 8 slots over the resources it has. Before the fix it offered none (8 tasks in all).
    instance = make([([8, 32, 1], 1), ([8, 32, 0], 10)], [([1, 4, 0], 1.0, math.inf)], ("cpu", "mem", "gpu"))
    assert first_fit(instance).tenant_tasks.tolist() == [88]
    assert slots(instance, 8).tenant_tasks.tolist() == [88]
    # A GPU tenant can only use the GPU machine's slots.
    with_gpu = make(
        [([8, 32, 1], 1), ([8, 32, 0], 10)],
        [([1, 4, 0], 1.0, math.inf), ([1, 4, 0.125], 1.0, math.inf)],
        ("cpu", "mem", "gpu"),
    )
    tasks = slots(with_gpu, 8).tasks
    assert tasks[1, 1:].sum() == 0 and tasks[1, 0] >= 1
    assert tasks.sum() == 88
    assert np.array_equal(tasks, reference_slots(with_gpu, 8))


@pytest.mark.parametrize("capacity", [[4.0, 8.0], [4.0]], ids=["two-resources", "one-resource"])
def test_huge_counts_are_refused_before_anything_per_machine(capacity: list[float]) -> None:
    # Expanding 10^9 machines would take ~24 GB; the refusal comes before anything per machine.
    instance = make([(capacity, 1_000_000_000)], [([1.0] * len(capacity), 1.0, math.inf)] * 3)
    for name, heuristic in HEURISTICS.items():

        def refused(heuristic: Heuristic = heuristic) -> InstanceError:
            with pytest.raises(InstanceError) as caught:
                heuristic(instance)
            return caught.value

        # Counted work: a few dozen Python lines and a few kB, where a byte or a line per machine is 10^9.
        error, lines = lines_run(refused)
        assert lines < 1_000 and peak_bytes(refused)[1] < 1_000_000, name
        assert error.field == "servers"
        assert str(error).split(": ")[1].startswith(name.replace("_", "-")), name
        assert f"{MAX_CELLS:,}" in str(error) and "3,000,000,000 cells" in str(error)


def test_huge_counts_exit_2_from_the_cli(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from fairpack.solver.cli import main

    path = tmp_path / "huge.yaml"
    path.write_text(
        "resources: [cpu]\nservers: [{name: s, capacity: {cpu: 4}, count: 1000000000}]\n"
        "tenants: [{name: u, demand: {cpu: 1}}]\n"
    )
    for method in ("first-fit", "best-fit", "slots", "per-server-drf"):
        assert main(["solve", str(path), "--method", method]) == 2


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
    # Totals are <14, 14>, so fractions keep the ratios: user 1 (ratio mem/cpu 5) prefers server 1
    # (free ratio 6) to server 2 (1/6); user 2 symmetrically server 2. Each fills its server: 10 tasks
    # each, the DRFH optimum.
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


def test_best_fit_terms() -> None:
    total, star, delta = best_fit_terms(gpu_case())
    assert total.tolist() == [48, 320, 4]
    assert star.tolist() == [0, 2]  # cpu-job: 4/48 > 8/320; gpu-job: 1/4 > 4/48
    np.testing.assert_allclose(delta[1], [(4 / 48) / 0.25, (16 / 320) / 0.25, 1.0])


def test_slots_rejects_bad_k() -> None:
    with pytest.raises(ValueError):
        slots(fig1(), 0)
    with pytest.raises(TypeError):
        slots(fig1(), 2.5)  # type: ignore[arg-type]


def test_no_tenants() -> None:
    instance = Instance(("cpu",), (ServerClass("s", np.array([1.0]), 3),), ())
    for heuristic in HEURISTICS.values():
        assert heuristic(instance).tasks.shape == (0, 3)


def test_allocation_keeps_a_frozen_table_and_copies_anything_else() -> None:
    table = np.array([[0.0, 0.0, 1.0], [2.0, 0.0, 0.0]])
    table.setflags(write=False)
    assert Allocation(table, "machine").tasks is table  # 10**7 cells on the Google table: no copy
    writable = np.zeros((2, 3))
    allocation = Allocation(writable, "machine")
    writable[0, 0] = 5.0  # the caller's array may change: the allocation holds its own copy
    assert allocation.tasks[0, 0] == 0.0 and not allocation.tasks.flags.writeable
    view = table[:1]  # read-only, but a view of another array's data: copied
    assert Allocation(view, "machine").tasks.base is None


def test_allocation_from_cells_adds_repeated_pairs_and_builds_its_table_only_when_read() -> None:
    allocation = Allocation.from_cells((2, 3), [1, 0, 1, 1, 0], [0, 2, 0, 1, 1], [1.0, 1.0, 1.0, 2.0, 0.0],
                                       kind="machine", integral=True)  # fmt: skip
    assert allocation.sparse and allocation.shape == (2, 3)
    tenants, units, counts = allocation.cells()
    assert (tenants.tolist(), units.tolist(), counts.tolist()) == ([0, 1, 1], [2, 0, 1], [1.0, 2.0, 2.0])
    assert allocation.tenant_tasks.tolist() == [1.0, 4.0]
    assert allocation.sparse  # cells and totals read without the table
    assert allocation.tasks.tolist() == [[0.0, 0.0, 1.0], [2.0, 2.0, 0.0]]
    assert not allocation.tasks.flags.writeable and not allocation.sparse
    dense = Allocation(allocation.tasks, "machine", integral=True)
    assert all((a == b).all() for a, b in zip(dense.cells(), allocation.cells(), strict=True))
    assert not any(array.flags.writeable for array in Allocation(np.eye(2), "class").cells())
    for original in (dense, Allocation.from_cells((2, 3), [1], [2], kind="machine")):
        copied = pickle.loads(pickle.dumps(original))  # as a sweep's worker sends it back
        assert copied.sparse == original.sparse and copied.tasks.tolist() == original.tasks.tolist()
        assert not any(array.flags.writeable for array in (copied.tasks, *copied.cells(), copied.tenant_tasks))
    for bad in ([2], [-1]):
        with pytest.raises(InstanceError, match="tenant index"):
            Allocation.from_cells((2, 3), bad, [0], kind="machine")
    with pytest.raises(InstanceError, match="1 tenants, 2 units"):
        Allocation.from_cells((2, 3), [0], [0, 1], kind="machine")
