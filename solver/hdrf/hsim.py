"""Hierarchical schedulers over time: a discrete-event simulation of ``naive-hdrf``, ``dynamic-hdrf``
and ``hslots`` (Bhattacharya et al., SoCC'13).

Static H-DRF (``solver.hdrf.water_filling``) says what every leaf of an organisation tree should hold; a real
scheduler only ever decides which waiting task to launch when resources free up. This module runs
such schedulers on an instance and measures what each leaf actually gets:

- Every leaf has an infinite backlog of identical tasks (its demand vector); at most ``tasks`` (its
  cap) run at once. Task durations are drawn per leaf: exponential (default, mean 1) or fixed.
- Tasks run on machines (server classes expanded, ``Instance.machine_names`` order; a pooled
  instance is one machine) and need a machine with room for every resource they use; the first
  such machine takes them. ``hslots`` instead cuts every machine into equal slots and places a task
  in the first free slot.
- Events are task completions, kept in a heap; there is no time step. At time 0 and whenever tasks
  finish, the policy (``solver.hdrf.policies``) launches tasks one at a time until no leaf
  can launch.

Metrics, integrated exactly over the piecewise-constant state: every leaf's time-averaged global
dominant share after the warm-up, the time-averaged L1 distance of the share vector to a static
H-DRF reference, binned share series, and starvation episodes (a demanding leaf staying below half
its hierarchical guarantee for longer than a threshold).

The ``Result`` allocation is the tasks running at the end of the horizon, per machine (kind
``"machine"``, integral): a real snapshot of the simulated cluster, so ``models.check`` verifies it
against machine capacities and caps. Time averages are in ``Result.extra``.

What the runs show (tests/test_hsim.py): filling an empty cluster, dynamic H-DRF lands on static
H-DRF within a few task sizes (the paper's Theorem 1), and naive H-DRF from empty is the paper's
Algorithm 1 with task-sized steps. Under task churn, though, dynamic H-DRF drifts from static H-DRF
whenever blocking is asymmetric: a child that cannot launch now (its resource is full, or its tasks
are larger than the free fragment) is ignored, so its parent looks as small as its non-blocked
children and they are over-served. With identical tasks it stays at the static shares.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from models.hierarchy import tree_of
from models.result import Allocation, Result
from models.types import BoolArray, FloatArray, Instance
from solver.hdrf.policies import POLICIES, HierarchicalPolicy
from solver.hdrf.sim_metrics import ShareMeter, Starvation

__all__ = ["POLICIES", "SimOptions", "Starvation", "Trace", "hsim_result", "simulate"]

#: Fit tolerance relative to a machine's capacity: absorbs the rounding of repeated add/subtract.
TOL = 1e-10  # as the flat heuristics: well inside the 1e-9 models.check allows
#: Standard exponential draws taken from the generator at once (one numpy call per batch, not per task).
_BATCH = 4096


@dataclass(frozen=True)
class SimOptions:
    """Settings of one simulation run.

    Attributes
    ----------
    horizon : float
        Simulated time; events after it are not processed.
    seed : int
        Seed of the ``numpy.random.Generator`` drawing task durations.
    duration : {"exponential", "fixed"}
        Distribution of task durations, per leaf with mean ``mean``.
    mean : float, sequence or mapping
        Mean task duration: one number for every leaf, one per tenant (instance order), or a mapping
        from tenant name to mean (missing names default to 1).
    warmup : float
        Time excluded from every average and from starvation detection (the initial transient).
    starvation_after : float or None
        An episode is reported when it lasts longer than this; default 5 mean task durations.
    slots : int
        ``hslots`` only: slots per largest machine.
    samples : int
        Number of equal time bins of the share series reported in ``Result.extra``.
    record : bool
        Keep the full step function (state after every event): for tests and small studies only.
    """

    horizon: float = 200.0
    seed: int = 0
    duration: str = "exponential"
    mean: float | Sequence[float] | Mapping[str, float] = 1.0
    warmup: float = 20.0
    starvation_after: float | None = None
    slots: int = 10
    samples: int = 100
    record: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.horizon) and self.horizon > 0):
            raise ValueError(f"horizon must be a positive number, got {self.horizon!r}")
        if not 0 <= self.warmup < self.horizon:
            raise ValueError(f"warmup must be in [0, horizon), got {self.warmup!r} (horizon {self.horizon})")
        if self.duration not in ("exponential", "fixed"):
            raise ValueError(f"duration must be 'exponential' or 'fixed', got {self.duration!r}")
        if isinstance(self.slots, bool) or not isinstance(self.slots, int | np.integer) or self.slots < 1:
            raise ValueError(f"slots must be a positive integer, got {self.slots!r}")
        if self.samples < 1:
            raise ValueError(f"samples must be positive, got {self.samples!r}")

    @classmethod
    def from_extra(cls, extra: Mapping[str, Any], slots: int = 10) -> SimOptions:
        """Options from ``SolveOptions.extra`` (keys named like the attributes; unknown keys ignored).

        ``duration`` may also be a number: a fixed duration of that length for every leaf.
        """
        values = {key: extra[key] for key in cls.__dataclass_fields__ if key in extra}
        if isinstance(values.get("duration"), int | float):
            values["mean"] = float(values.pop("duration"))
            values["duration"] = "fixed"
        values.setdefault("slots", slots)
        for key in ("horizon", "warmup"):
            if key in values:
                values[key] = float(values[key])
        if "seed" in values:
            values["seed"] = int(values["seed"])
        return cls(**values)

    def means(self, instance: Instance) -> FloatArray:
        """Mean task duration of every tenant."""
        n = len(instance.tenants)
        if isinstance(self.mean, Mapping):
            unknown = set(self.mean) - {t.name for t in instance.tenants}
            if unknown:
                raise ValueError(f"mean duration given for unknown tenants {sorted(unknown)}")
            values = np.array([float(self.mean.get(t.name, 1.0)) for t in instance.tenants])
        elif isinstance(self.mean, int | float):
            values = np.full(n, float(self.mean))
        else:
            values = np.asarray(self.mean, dtype=np.float64).reshape(-1)
            if values.shape != (n,):
                raise ValueError(f"expected {n} mean durations (one per tenant), got {values.size}")
        if not np.all(np.isfinite(values) & (values > 0)):
            raise ValueError("mean task durations must be positive and finite")
        return values


@dataclass
class Trace:
    """What one simulation run measured.

    Attributes
    ----------
    policy : str
        Policy name.
    tasks : ndarray, shape (tenants, machines)
        Tasks running at the horizon on every machine.
    time_averaged : ndarray, shape (tenants,)
        Time-averaged global dominant share of every leaf over ``[warmup, horizon]``.
    distance : float or None
        Time-averaged L1 distance of the leaves' share vector to ``reference`` (None without one).
    reference : ndarray or None
        The static share vector compared with.
    guarantees : ndarray, shape (tenants,)
        Hierarchical share guarantee of every leaf (``Tree.guarantees`` over the demanding leaves).
    starvation : list of Starvation
        Episodes longer than ``threshold``, after the warm-up.
    threshold : float
        Starvation threshold used.
    bin_edges : ndarray, shape (samples + 1,)
        Time bins of ``series`` over ``[0, horizon]``.
    series : ndarray, shape (samples, tenants)
        Time-averaged share of every leaf within each bin.
    events, launches : int
        Completion events processed and tasks launched.
    peak_usage : ndarray, shape (machines, resources)
        Largest amount of every resource in use on every machine at any time.
    peak_running : ndarray, shape (tenants,)
        Largest number of tasks of every leaf running at once.
    times, running : list
        With ``SimOptions.record``: the time of every state change and the (tenants, machines) task
        counts from then on; empty otherwise.
    """

    policy: str
    tasks: FloatArray
    time_averaged: FloatArray
    distance: float | None
    reference: FloatArray | None
    guarantees: FloatArray
    starvation: list[Starvation]
    threshold: float
    bin_edges: FloatArray
    series: FloatArray
    events: int
    launches: int
    peak_usage: FloatArray
    peak_running: FloatArray
    times: list[float] = field(default_factory=list)
    running: list[FloatArray] = field(default_factory=list)


class _Cluster:
    """Machines, what runs on them, and which leaves could launch a task now."""

    def __init__(self, instance: Instance, caps: FloatArray, slots: int | None) -> None:
        self.capacity = instance.capacity[instance.machine_class()]  # (machines, resources)
        self.free = self.capacity.copy()
        self.slack = TOL * self.capacity
        self.demand = np.asarray(instance.demand, dtype=np.float64)
        # Zero demands never block a fit, whatever the machine lacks.
        self.need = np.where(self.demand > 0, self.demand, -np.inf)
        self.caps = caps
        n, m = self.demand.shape[0], self.capacity.shape[0]
        self.running = np.zeros(n)
        self.tasks = np.zeros((n, m))
        self.peak_usage = np.zeros_like(self.capacity)
        self.peak_running = np.zeros(n)
        self.slots = slots
        if slots is None:
            # fit[i, l]: one more task of i fits on machine l; kept per machine as machines change.
            self.fit = np.all(self.need[:, None, :] <= (self.free + self.slack)[None, :, :], axis=2)
            self.fit_count = self.fit.sum(axis=1)
            self.admitted = np.ones(n, dtype=bool)
        else:
            # Componentwise largest machine / slots, as in the flat slot scheduler.
            slot = instance.capacity.max(axis=0) / slots
            used = slot > 0
            per_machine = np.floor((self.capacity[:, used] / slot[used]).min(axis=1) * (1 + 1e-12))
            self.free_slots = per_machine.astype(np.int64)
            self.slot = slot
            self.admitted = np.all(self.demand <= slot * (1 + TOL), axis=1) & instance.runnable

    def launchable(self) -> BoolArray:
        below_cap = self.running < self.caps
        if self.slots is None:
            return below_cap & (self.fit_count > 0)
        return below_cap & self.admitted & bool((self.free_slots > 0).any())

    def machine_for(self, tenant: int) -> int:
        if self.slots is None:
            return int(np.argmax(self.fit[tenant]))
        return int(np.argmax(self.free_slots > 0))

    def _refit(self, machine: int) -> None:
        if self.slots is None:
            fits = np.all(self.need <= self.free[machine] + self.slack[machine], axis=1)
            self.fit_count += fits.astype(np.int64) - self.fit[:, machine]
            self.fit[:, machine] = fits

    def launch(self, tenant: int, machine: int) -> None:
        self.free[machine] -= self.demand[tenant]
        if self.slots is not None:
            self.free_slots[machine] -= 1
        self.running[tenant] += 1
        self.tasks[tenant, machine] += 1
        np.maximum(self.peak_usage[machine], self.capacity[machine] - self.free[machine], out=self.peak_usage[machine])
        self.peak_running[tenant] = max(self.peak_running[tenant], self.running[tenant])
        self._refit(machine)

    def finish(self, tenant: int, machine: int) -> None:
        self.free[machine] += self.demand[tenant]
        if self.slots is not None:
            self.free_slots[machine] += 1
        self.running[tenant] -= 1
        self.tasks[tenant, machine] -= 1
        if self.tasks[:, machine].sum() == 0:
            self.free[machine] = self.capacity[machine]  # drop accumulated rounding on an empty machine
        self._refit(machine)


def simulate(
    instance: Instance,
    policy: str,
    options: SimOptions | None = None,
    reference: FloatArray | None = None,
) -> Trace:
    """Run one hierarchical scheduler on ``instance`` over ``options.horizon``.

    Parameters
    ----------
    instance : Instance
        Servers (expanded into machines; pool it first for the single-server setting) and a
        hierarchy whose leaves are the tenants; without a hierarchy the tenants form a flat tree.
    policy : {"naive-hdrf", "dynamic-hdrf", "hslots"}
        The scheduler (see ``solver.hdrf.policies``).
    options : SimOptions, optional
        Horizon, seed, durations, warm-up, starvation threshold, slots.
    reference : ndarray, shape (tenants,), optional
        Static share of every leaf (e.g. ``solver.hdrf.hdrf_shares``) for the distance metric.

    Returns
    -------
    Trace
        The final placement, time averages, distance, share series, starvation episodes, counters.
    """
    options = options or SimOptions()
    tree = tree_of(instance)
    n = len(instance.tenants)
    caps = np.floor(instance.task_caps)
    cluster = _Cluster(instance, caps, options.slots if policy == "hslots" else None)
    chooser = HierarchicalPolicy(tree, policy, cluster.demand, instance.total_capacity)
    dominant = np.asarray(instance.dominant_demand, dtype=np.float64)
    means = options.means(instance)

    # Demanding: could hold a task on an empty cluster (cap >= 1, fits some machine, resources exist).
    demanding = (caps >= 1) & instance.runnable & instance.fits().any(axis=1)
    node_demanding = np.zeros(tree.num_nodes, dtype=bool)
    node_demanding[tree.leaf_nodes] = demanding
    guarantees = tree.guarantees(tree.subtree_any(node_demanding))[tree.leaf_nodes]
    # A cap can keep a leaf below its guarantee by choice; that is not starvation.
    cap_share = np.multiply(caps, dominant, out=np.full(n, np.inf), where=np.isfinite(caps))
    floor = np.where(demanding, 0.5 * np.minimum(guarantees, cap_share), -np.inf)
    threshold = float(options.starvation_after) if options.starvation_after is not None else 5.0 * float(means.mean())
    if reference is not None:
        reference = np.asarray(reference, dtype=np.float64).reshape(-1)
        if reference.shape != (n,):
            raise ValueError(f"reference needs one share per tenant ({n}), got {reference.size}")
    names = [t.name for t in instance.tenants]
    meter = ShareMeter(names, options.warmup, options.horizon, options.samples, reference, floor, threshold)

    rng = np.random.default_rng(options.seed)
    draws = rng.standard_exponential(_BATCH)
    drawn = 0
    heap: list[tuple[float, int, int, int]] = []
    sequence = events = launches = 0
    times: list[float] = []
    snapshots: list[FloatArray] = []

    def schedule(now: float) -> None:
        nonlocal draws, drawn, sequence, launches
        while True:
            tenant = chooser.pick(cluster.running, cluster.launchable())
            if tenant < 0:
                return
            machine = cluster.machine_for(tenant)
            cluster.launch(tenant, machine)
            if options.duration == "fixed":
                length = float(means[tenant])
            else:
                if drawn == _BATCH:
                    draws, drawn = rng.standard_exponential(_BATCH), 0
                length = float(draws[drawn]) * float(means[tenant])
                drawn += 1
            heapq.heappush(heap, (now + length, sequence, tenant, machine))
            sequence += 1
            launches += 1

    now = 0.0
    schedule(now)
    while True:
        shares = cluster.running * dominant
        meter.state(shares, now)
        if options.record:
            times.append(now)
            snapshots.append(cluster.tasks.copy())
        upcoming = heap[0][0] if heap else math.inf
        if upcoming > options.horizon:
            meter.hold(shares, now, options.horizon)
            break
        meter.hold(shares, now, upcoming)
        now = upcoming
        # Every task finishing at this instant frees its room before the policy decides.
        while heap and heap[0][0] == now:
            _, _, tenant, machine = heapq.heappop(heap)
            cluster.finish(tenant, machine)
            events += 1
        schedule(now)
    meter.close()

    span = options.horizon - options.warmup
    return Trace(
        policy=policy,
        tasks=cluster.tasks.copy(),
        time_averaged=meter.area / span,
        distance=meter.distance_area / span if reference is not None else None,
        reference=reference,
        guarantees=guarantees,
        starvation=meter.episodes,
        threshold=threshold,
        bin_edges=meter.edges,
        series=meter.bins / meter.width,
        events=events,
        launches=launches,
        peak_usage=cluster.peak_usage,
        peak_running=cluster.peak_running,
        times=times,
        running=snapshots,
    )


def _reference(instance: Instance) -> tuple[FloatArray | None, str]:
    """Static H-DRF shares from ``solver.hdrf.water_filling`` when it is available, else None and why not."""
    try:
        from solver.hdrf.water_filling import hdrf_shares
    except ImportError as error:  # the exact static method is optional for the simulation
        return None, f"no static H-DRF reference: {error}"
    return np.asarray(hdrf_shares(instance), dtype=np.float64), ""


def hsim_result(
    instance: Instance,
    policy: str,
    options: SimOptions | None = None,
    reference: FloatArray | None = None,
    use_reference: bool = True,
) -> Result:
    """Simulate ``policy`` and wrap the run into the standard ``Result``.

    Parameters
    ----------
    instance, policy, options
        As for ``simulate``.
    reference : ndarray, optional
        Static share per tenant for the distance; by default ``solver.hdrf.hdrf_shares(instance)``
        (pooled static H-DRF) when that module exists and ``use_reference`` is True.
    use_reference : bool
        Compute the default reference when none is given.

    Returns
    -------
    Result
        ``status="feasible"``, ``backend="none"``; the allocation is the placement at the horizon
        (kind ``"machine"``, integral). ``extra`` holds ``simulation`` (settings and counters),
        ``time_averaged_shares``, ``guarantees``, ``distance_to_hdrf``, ``reference_shares``,
        ``starvation`` (episodes) and ``series`` (binned shares per leaf), all JSON-serialisable.
    """
    options = options or SimOptions()
    started = time.perf_counter()
    note = ""
    if reference is None and use_reference:
        reference, note = _reference(instance)
    trace = simulate(instance, policy, options, reference)
    elapsed = time.perf_counter() - started
    names = [t.name for t in instance.tenants]

    def per_leaf(values: FloatArray) -> dict[str, float]:
        return {name: float(v) for name, v in zip(names, values, strict=True)}

    extra: dict[str, Any] = {
        "simulation": {
            "policy": policy,
            "horizon": options.horizon,
            "warmup": options.warmup,
            "seed": options.seed,
            "duration": options.duration,
            "mean_duration": float(options.means(instance).mean()),
            "slots": options.slots if policy == "hslots" else None,
            "events": trace.events,
            "launches": trace.launches,
            "starvation_threshold": trace.threshold,
        },
        "time_averaged_shares": per_leaf(trace.time_averaged),
        "guarantees": per_leaf(trace.guarantees),
        "distance_to_hdrf": trace.distance,
        "reference_shares": per_leaf(trace.reference) if trace.reference is not None else None,
        "starvation": [episode.to_json() for episode in trace.starvation],
        "series": {
            "bin_edges": [float(t) for t in trace.bin_edges],
            "shares": {name: [float(v) for v in trace.series[:, i]] for i, name in enumerate(names)},
        },
    }
    return Result(
        status="feasible",
        method=policy,
        backend="none",
        solve_s=elapsed,
        allocation=Allocation(trace.tasks, kind="machine", integral=True),
        message=note,
        extra=extra,
    )
