"""Schedulers over time on endless backlogs: ``naive-hdrf``, ``dynamic-hdrf`` and ``hslots`` (Bhattacharya et
al., SoCC'13) on the one simulator (:mod:`fairpack.solver.sim.engine`).

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
  finish, the policy (``solver.sim.policies.hierarchy``) launches tasks one at a time until no leaf
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

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fairpack.models.hierarchy import tree_of
from fairpack.models.result import Allocation, Result
from fairpack.models.types import FloatArray, Instance
from fairpack.solver import interrupt
from fairpack.solver.registry import OptionError, get_policy
from fairpack.solver.sim.build import build, refuse_workload
from fairpack.solver.sim.engine import Simulation
from fairpack.solver.sim.policies.options import choice, duration, flag, integer
from fairpack.solver.sim.share_meter import ShareMeter, Starvation
from fairpack.solver.sim.workload import Workload

__all__ = ["SimOptions", "Starvation", "Trace", "backlog_result", "simulate"]



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
        # OptionError (a ValueError) names the setting, so the CLI refuses it with exit 2, not a traceback.
        if not (math.isfinite(self.horizon) and self.horizon > 0):
            raise OptionError(f"must be a positive number, got {self.horizon!r}", "horizon")
        if not 0 <= self.warmup < self.horizon:
            raise OptionError(f"must be in [0, horizon), got {self.warmup!r} (horizon {self.horizon})", "warmup")
        if self.duration not in ("exponential", "fixed"):
            raise OptionError(f"must be 'exponential', 'fixed' or a number, got {self.duration!r}", "duration")
        if isinstance(self.slots, bool) or not isinstance(self.slots, int | np.integer) or self.slots < 1:
            raise OptionError(f"must be a positive integer, got {self.slots!r}", "slots")
        if self.samples < 1:
            raise OptionError(f"must be positive, got {self.samples!r}", "samples")

    @classmethod
    def from_extra(cls, extra: Mapping[str, Any], slots: int = 10) -> SimOptions:
        """Options from ``SolveOptions.extra`` (keys named like the attributes; unknown keys ignored), each
        typed here so that a value of the wrong kind is an ``OptionError`` naming it.

        ``duration`` may also be a number: a fixed duration of that length for every leaf. Without
        ``warmup``, the warm-up is 20 time units, or a tenth of a horizon of 20 or less (where 20 would leave
        nothing to measure).
        """
        values: dict[str, Any] = {"slots": slots}
        if "horizon" in extra:
            values["horizon"] = duration(extra, "horizon", None)
        horizon = values.get("horizon", cls.horizon)
        values["warmup"] = duration(extra, "warmup", cls.warmup if horizon > cls.warmup else horizon / 10)
        fixed = extra.get("duration")
        if isinstance(fixed, int | float) and not isinstance(fixed, bool):
            values["mean"], values["duration"] = float(fixed), "fixed"
        elif fixed is not None:
            values["duration"] = choice(extra, "duration", "exponential", ("exponential", "fixed"))
        if "mean" in extra and "mean" not in values:
            mean = extra["mean"]
            values["mean"] = mean if isinstance(mean, Mapping | Sequence) and not isinstance(mean, str) else \
                duration(extra, "mean", None)
        if "starvation_after" in extra:
            values["starvation_after"] = duration(extra, "starvation_after", None)
        if "samples" in extra:
            values["samples"] = integer(extra, "samples", cls.samples, least=1)
        if "seed" in extra:
            values["seed"] = integer(extra, "seed", 0, least=-(2**63))
        if "record" in extra:
            values["record"] = flag(extra, "record", False)
        return cls(**values)

    def means(self, instance: Instance) -> FloatArray:
        """Mean task duration of every tenant."""
        n = len(instance.tenants)
        try:
            values = self._mean_values(instance)
        except (TypeError, ValueError) as error:  # a mapping or list holding something other than numbers
            raise OptionError(f"must be a number, one per tenant or a mapping of tenants to numbers ({error})",
                              "mean") from None  # fmt: skip
        if isinstance(self.mean, Mapping):
            unknown = set(self.mean) - {t.name for t in instance.tenants}
            if unknown:
                raise OptionError(f"given for unknown tenants {sorted(unknown)}", "mean")
        elif not isinstance(self.mean, int | float) and values.shape != (n,):
            raise OptionError(f"expected {n} mean durations (one per tenant), got {values.size}", "mean")
        if not np.all(np.isfinite(values) & (values > 0)):
            raise OptionError("mean task durations must be positive and finite", "mean")
        return values

    def _mean_values(self, instance: Instance) -> FloatArray:
        if isinstance(self.mean, Mapping):
            return np.array([float(self.mean.get(t.name, 1.0)) for t in instance.tenants])
        if isinstance(self.mean, int | float):
            return np.full(len(instance.tenants), float(self.mean))
        return np.asarray(self.mean, dtype=np.float64).reshape(-1)


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
    stopped_at: float | None = None  # simulated time where the caller's time limit stopped the run


class _Meter:
    """The share meter as an observer of the simulation: leaves' dominant shares after every event."""

    def __init__(self, meter: ShareMeter, dominant: FloatArray, record: bool) -> None:
        self.meter = meter
        self.dominant = dominant
        self.record = record
        self.shares = np.zeros(dominant.size)
        self.times: list[float] = []
        self.running: list[FloatArray] = []
        self.peak_usage: FloatArray | None = None
        self.peak_running = np.zeros(dominant.size)

    def state(self, sim: Simulation) -> None:
        self.shares = sim.tenant_running * self.dominant
        self.meter.state(self.shares, sim.t)
        used = sim.cluster.capacity - sim.cluster.free
        self.peak_usage = used.copy() if self.peak_usage is None else np.maximum(self.peak_usage, used)
        np.maximum(self.peak_running, sim.tenant_running, out=self.peak_running)
        if self.record:
            assert sim.placed is not None
            self.times.append(sim.t)
            self.running.append(sim.placed.copy())

    def hold(self, sim: Simulation, start: float, end: float) -> None:
        self.meter.hold(self.shares, start, end)

    def close(self, sim: Simulation) -> None:
        self.meter.close()


def simulate(
    instance: Instance,
    policy: str,
    options: SimOptions | None = None,
    reference: FloatArray | None = None,
    deadline: float | None = None,
) -> Trace:
    """Run one hierarchical scheduler on ``instance`` over ``options.horizon``.

    Parameters
    ----------
    instance : Instance
        Servers (expanded into machines; pool it first for the single-server setting) and a
        hierarchy whose leaves are the tenants; without a hierarchy the tenants form a flat tree.
    policy : str
        A policy whose registry record runs on backlogs: ``naive-hdrf``, ``dynamic-hdrf``, ``hslots`` (see
        ``solver.sim.policies.hierarchy``) or a flat one (``first-fit``, ``slots``, ...); built by its factory.
    options : SimOptions, optional
        Horizon, seed, durations, warm-up, starvation threshold, slots.
    reference : ndarray, shape (tenants,), optional
        Static share of every leaf (e.g. pooled static H-DRF) for the distance metric.
    deadline : float, optional
        A ``time.perf_counter()`` value: the run stops there (``Trace.stopped_at``) if not done.

    Returns
    -------
    Trace
        The final placement, time averages, distance, share series, starvation episodes, counters.
    """
    options = options or SimOptions()
    record = get_policy(policy)
    refuse_workload(record, "backlogs")
    tree = tree_of(instance)
    n = len(instance.tenants)
    caps = np.floor(instance.task_caps)
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
    observer = _Meter(meter, dominant, options.record)
    workload = Workload.of_backlogs(instance, means, options.duration == "exponential")
    scheduler = build(record, workload, instance, {"slots": options.slots})
    sim = Simulation(instance, workload, scheduler, "servers", horizon=options.horizon, seed=options.seed,
                     observers=[observer], snapshot=True, deadline=deadline).run()  # fmt: skip
    assert sim.placed is not None
    span = options.horizon - options.warmup
    return Trace(
        policy=policy,
        tasks=sim.placed.copy(),
        time_averaged=meter.area / span,
        distance=meter.distance_area / span if reference is not None else None,
        reference=reference,
        guarantees=guarantees,
        starvation=meter.episodes,
        threshold=threshold,
        bin_edges=meter.edges,
        series=meter.bins / meter.width,
        events=sim.completions,
        launches=sim.launches,
        peak_usage=observer.peak_usage if observer.peak_usage is not None else np.zeros_like(sim.cluster.capacity),
        peak_running=observer.peak_running,
        times=observer.times,
        running=observer.running,
        stopped_at=sim.stopped_at,
    )


def backlog_result(
    instance: Instance,
    policy: str,
    options: SimOptions | None = None,
    reference: FloatArray | None = None,
    deadline: float | None = None,
) -> Result:
    """Simulate ``policy`` and wrap the run into the standard ``Result``.

    Parameters
    ----------
    instance, policy, options
        As for ``simulate``.
    reference : ndarray, optional
        Static share per tenant for the distance (the hierarchy family passes pooled static H-DRF).

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
    note = "" if reference is not None else "no static H-DRF reference given: no distance to it"
    trace = simulate(instance, policy, options, reference, deadline)
    if trace.stopped_at is not None:  # a feasible placement, but not the one at the horizon
        note = "; ".join(filter(None, [f"{interrupt.stop_reason()} at simulated time {trace.stopped_at:.6g} of the "
                                       f"horizon {options.horizon:g}: the placement then, shares averaged so far",
                                       note]))  # fmt: skip
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
            "slots": options.slots if "slots" in get_policy(policy).options else None,
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
    if trace.stopped_at is not None:  # how far the run got
        extra["stopped_at"] = trace.stopped_at
    return Result(
        status="feasible" if trace.stopped_at is None else "time_limit",
        method=policy,
        backend="none",
        solve_s=elapsed,
        allocation=Allocation(trace.tasks, kind="machine", integral=True),
        message=note,
        extra=extra,
    )
