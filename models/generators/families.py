"""The registry of instance families a sweep draws from: seeded generators with named size parameters.

Every family turns ``(size parameters, seed, data dir)`` into an ``Instance``, deterministically. It also
says which ``solver.api`` method family it feeds (``kind``: ``flat``, ``hierarchy`` or ``jobs``), what
its "size" is for the scaling plots, and which subfolder of the shared data folder it reads, if any.

=============== ========= ============================================================ ========================
family          kind      instance                                                     size
=============== ========= ============================================================ ========================
google-like     flat      synthetic Google-shaped cluster (10 configurations), random  tenants x server classes
                          tenants (``models.generators.google_instance`` without data)
google          flat      the Google 2011 machine configurations (``google/``)          tenants x server classes
alibaba         flat      the 1,523 real Alibaba GPU nodes, tenants from real pod       tenants x server classes
                          requests (``alibaba/``)
random-flat     flat      ``models.generators.random_small``                           tenants x server classes
random-tree     hierarchy random weighted org tree (``random_tree_instance``)          leaves
hdrf-fig10      hierarchy the H-DRF paper's Fig. 10 tree (``instances/hdrf_fig10.yaml``; leaves
                          the seed is ignored)
dag-random      jobs      random DAG jobs, barrier-rich by default (``random_dag_jobs``) tasks
tpch            jobs      a mix of ``queries`` TPC-H queries drawn by the seed          tasks
                          (``tpch/``, ``tpch_jobs``)
hdfs            jobs      MapReduce jobs reading HDFS-placed blocks on racks           tasks
                          (``models.generators.locality``)
psplib          jobs      PSPLIB RCPSP file number ``seed`` of set ``set`` (``psplib/``) tasks
sparrow         jobs      Poisson stream of short parallel jobs on slotted workers at    tasks
                          offered ``load`` (``models.generators.short_tasks``)
omega           jobs      batch and service job streams on a cell                       tasks
                          (``models.generators.short_tasks``)
soft            jobs      GPU-preferring, MPI (gang) and plain jobs, SLO and best effort, tasks
                          on labelled racks at an offered ``load`` (``models.generators.soft``)
=============== ========= ============================================================ ========================

PSPLIB files are taken in (instance, parameter) order (``j301_1, j302_1, ..., j3048_1, j301_2, ...``),
so the first seeds spread over the parameter classes; ``best_known`` gives the best-known makespan
from ``psplib/optima/psplib_bounds.csv`` (proven optimal for every J30 file).
"""

from __future__ import annotations

import csv
import functools
import importlib.resources
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fairpack.models.types import Instance, InstanceError

#: ``solver.api`` method families a generated instance can feed.
KINDS = ("flat", "hierarchy", "jobs")
#: Whether each kind's objective is maximised (min weighted share) or minimised (the guarantee shortfall of a
#: hierarchy, avg JCT, makespan); ``solver.bench.table`` signs the gaps by it.
SENSE = {"flat": "max", "hierarchy": "min", "jobs": "min"}
#: What ``Result.objective`` is for allocation kinds (DAG jobs name theirs in ``Result.extra``).
OBJECTIVE_NAMES = {"flat": "min weighted share", "hierarchy": "guarantee shortfall"}
#: The repository's bundled instances (data only; read, never written).
#: The instances bundled with fairpack (package data: ``fairpack/instances``, the repository's ``instances/``).
INSTANCES = Path(str(importlib.resources.files("fairpack") / "instances"))


class DataMissing(InstanceError):
    """A family needs a subfolder of the shared data folder that is not there."""


class ParamError(ValueError):
    """A size parameter a family does not have, or a value of the wrong type."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"{name}: {reason}")


@dataclass(frozen=True)
class Param:
    """One size parameter of a family: its default, the Python types a sweep may give it, and the least value a
    number may take (``least``; every number must be finite and at least it: no size is negative).

    ``int`` values are accepted where ``float`` is allowed; ``bool`` is never taken for a number.
    """

    default: Any
    types: tuple[type, ...]
    least: float = 0.0

    def __post_init__(self) -> None:
        if not self.types:
            raise ValueError("a parameter needs at least one accepted type")
        if not self.accepts(self.default) or self.out_of_range(self.default):
            raise ValueError(f"default {self.default!r} is not one of {self.type_names} of at least {self.least:g}")

    @property
    def type_names(self) -> str:
        return " or ".join("none" if t is type(None) else t.__name__ for t in self.types)

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool):
            return bool in self.types
        if isinstance(value, int) and float in self.types:
            return True
        return isinstance(value, self.types)

    def out_of_range(self, value: Any) -> str:
        """Why a value of an accepted type is refused (empty: it is not): a number below ``least`` or not finite."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return ""
        if not math.isfinite(value):
            return f"must be a finite number, got {value!r}"
        if value < self.least:
            what = "a whole number" if float not in self.types else "a number"
            return f"must be {what} of at least {self.least:g}, got {value!r}"
        return ""


@dataclass(frozen=True)
class Family:
    """A seeded instance generator with named size parameters.

    Attributes
    ----------
    name : str
        Registry key, used in sweep files.
    kind : {'flat', 'hierarchy', 'jobs'}
        The ``solver.api`` method family its instances feed (``METHODS[m].family``).
    summary : str
        One line for listings and reports.
    params : mapping of str to Param
        Size parameters and their defaults, in a fixed order (the order of row keys).
    build : callable
        ``build(params, seed, data_dir) -> Instance`` with every parameter present.
    size_label : str
        What :meth:`size` measures, for plot axes.
    size : callable
        ``size(instance) -> float``: the number plotted on the scaling axes.
    data : str or None
        Subfolder of the shared data folder the family reads (``None``: needs no data).
    best_known : callable or None
        ``best_known(instance, data_dir) -> float | None``: a published best objective, if any.
    """

    name: str
    kind: str
    summary: str
    params: Mapping[str, Param]
    build: Callable[[Mapping[str, Any], int, Path | None], Instance]
    size_label: str
    size: Callable[[Instance], float]
    data: str | None = None
    best_known: Callable[[Instance, Path | None], float | None] | None = field(default=None)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", self.name):
            raise ValueError(f"family name must be lower-case words joined by '-', got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"family {self.name}: kind must be one of {KINDS}, got {self.kind!r}")
        if not self.size_label:
            raise ValueError(f"family {self.name}: size_label must not be empty")
        object.__setattr__(self, "params", dict(self.params))

    def resolve(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Every parameter with the given values over the defaults, in the family's order.

        Raises
        ------
        ParamError
            An unknown parameter or a value of the wrong type (the sweep loader turns it into an
            error naming the file and field).
        """
        for name, value in given.items():
            if name not in self.params:
                known = ", ".join(self.params) or "none"
                raise ParamError(name, f"family {self.name!r} has no size parameter {name!r} (it has: {known})")
            if not self.params[name].accepts(value):
                raise ParamError(name, f"expected {self.params[name].type_names}, got {value!r}")
            reason = self.params[name].out_of_range(value)
            if reason:
                raise ParamError(name, reason)
        return {name: given.get(name, param.default) for name, param in self.params.items()}

    def data_folder(self, data_dir: Path | None) -> Path | None:
        """The data subfolder this family reads, or None when it needs none.

        Raises
        ------
        DataMissing
            The family needs data and ``data_dir`` is None or lacks the subfolder.
        """
        if self.data is None:
            return None
        if data_dir is None:
            raise DataMissing(f"family {self.name!r} needs the shared data folder (--data-dir or FAIRPACK_DATA_DIR)")
        folder = Path(data_dir) / self.data
        if not folder.is_dir():
            raise DataMissing(f"family {self.name!r} needs {folder}, which does not exist")
        return folder

    def instance(self, params: Mapping[str, Any], seed: int, data_dir: Path | None = None) -> Instance:
        """The instance for ``params`` (missing ones take their defaults) and ``seed``."""
        self.data_folder(data_dir)
        return self.build(self.resolve(params), seed, data_dir)


# --- sizes ---------------------------------------------------------------------------------------------


def _pairs(instance: Instance) -> float:
    return float(len(instance.tenants) * len(instance.servers))


def _leaves(instance: Instance) -> float:
    return float(len(instance.tenants))


def _tasks(instance: Instance) -> float:
    return float(sum(stage.tasks for job in instance.jobs for stage in job.stages))


#: The size measure (label, function) of each kind, as its families use it; instance files in a sweep
#: (``solver.bench.sweep``) are measured by their kind's.
KIND_SIZES: dict[str, tuple[str, Callable[[Instance], float]]] = {
    "flat": ("tenants x server classes", _pairs),
    "hierarchy": ("leaves", _leaves),
    "jobs": ("tasks", _tasks),
}


def instance_kind(instance: Instance) -> str:
    """The ``solver.api`` method family an instance feeds: ``jobs`` when it has DAG jobs, else ``hierarchy``
    when it has a hierarchy, else ``flat``."""
    if instance.jobs:
        return "jobs"
    return "hierarchy" if instance.hierarchy is not None else "flat"


# --- generators ----------------------------------------------------------------------------------------


def _google_like(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    from fairpack.models.generators import google_instance

    return google_instance(None, p["tenants"], seed, p["machines"], p["distinct"])


def _google(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    from fairpack.models.generators import google_instance

    return google_instance(data_dir, p["tenants"], seed, p["machines"], p["distinct"])


def _alibaba(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    from fairpack.models.generators import alibaba_instance

    assert data_dir is not None  # Family.instance checked the data folder
    return alibaba_instance(data_dir, p["tenants"], seed, p["task_scale"])


def _random_flat(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    from fairpack.models.generators import random_small

    return random_small(seed, p["servers"], p["tenants"], p["resources"])


def _random_tree(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    from fairpack.models.generators import random_tree_instance

    return random_tree_instance(seed, p["leaves"], p["depth"], p["resources"], servers=p["servers"])


def _hdrf_fig10(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    from fairpack.models.io import load_instance

    return load_instance(INSTANCES / "hdrf_fig10.yaml")


def _dag_random(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    from fairpack.models.generators import random_dag_jobs

    return random_dag_jobs(seed, p["jobs"], (p["min_stages"], p["max_stages"]), p["resources"], p["barrier_rich"],
                           float(p["capacity"]), float(p["release_spread"]))  # fmt: skip


def _tpch(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    """``queries`` queries of size ``data_size`` drawn with ``default_rng(seed)`` (sorted by query number).

    Distinct while the size has that many queries (22); larger mixes draw with replacement.
    """
    import json

    from fairpack.models.generators import TPCH_DIR, tpch_jobs

    assert data_dir is not None
    summary = json.loads((Path(data_dir) / TPCH_DIR / "tpch_dag_summary.json").read_text())
    prefix = f"{p['data_size']}-q"
    numbers = sorted(int(key[len(prefix) :]) for key in summary if key.startswith(prefix))
    if p["queries"] < 1 or not numbers:
        raise InstanceError(f"queries must be at least 1 and size {p['data_size']!r} must exist", "queries")
    replace = p["queries"] > len(numbers)
    picked = np.sort(np.random.default_rng(seed).choice(numbers, size=p["queries"], replace=replace))
    return tpch_jobs(data_dir, [int(q) for q in picked], seed, p["data_size"], p["executors"],
                     float(p["memory_per_executor"]), float(p["release_spread"]))  # fmt: skip


def _arrivals(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    from fairpack.models.generators.arrivals import tenant_arrivals
    from fairpack.models.generators.clusters import google_like_servers

    servers = google_like_servers(p["machines"], min(10, p["machines"]), seed)
    return tenant_arrivals(servers, ("cpu", "mem"), p["tenants"], seed, float(p["load"]), float(p["horizon"]),
                           float(p["mean_duration"]), p["tasks_per_group"], p["bursty"])  # fmt: skip


def _tpch_arrivals(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    from fairpack.models.generators.arrivals import tpch_arrivals

    assert data_dir is not None
    return tpch_arrivals(data_dir, p["queries"], seed, float(p["mean_interarrival"]), p["machines"],
                         float(p["cores"]), float(p["memory"]), p["data_size"])  # fmt: skip


def _google_day(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    from fairpack.models.generators.arrivals import google_day

    assert data_dir is not None
    return google_day(data_dir, seed, p["machines"], p["users"], p["tasks"], float(p["load"]), float(p["horizon"]))


def _hdfs(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    from fairpack.models.generators.locality import hdfs_jobs

    return hdfs_jobs(seed, p["jobs"], p["machines"], p["racks"], p["slots"], p["users"], float(p["interarrival"]),
                     float(p["map_duration"]), p["reduce_tasks"], float(p["reduce_duration"]), p["max_tasks"],
                     (1.0, float(p["rack_factor"]), float(p["remote_factor"])))  # fmt: skip


def _psplib_files(folder: Path, name: str) -> list[Path]:
    """The ``.sm`` files of set ``name`` in (instance, parameter) order, as in ``benchmarks.psplib_sets``."""

    def key(path: Path) -> tuple[int, int]:
        parameter, index = path.stem[len(name) :].split("_")
        return int(index), int(parameter)

    return sorted(folder.glob(f"{name}*_*.sm"), key=key)


def _psplib(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    from fairpack.models.psplib import load_psplib

    assert data_dir is not None
    files = _psplib_files(Path(data_dir) / "psplib" / p["set"], p["set"])
    if not files:
        raise InstanceError(f"no PSPLIB files in {Path(data_dir) / 'psplib' / p['set']}", "set")
    if not 0 <= seed < len(files):
        raise InstanceError(f"seed picks a file of set {p['set']!r}: 0..{len(files) - 1}, got {seed}", "seed")
    return load_psplib(files[seed])


@functools.lru_cache(maxsize=4)
def _psplib_bounds(path: Path) -> dict[str, float]:
    with path.open() as handle:
        return {row["instance"]: float(row["best_ub"]) for row in csv.DictReader(handle) if row.get("best_ub")}


def _psplib_best(instance: Instance, data_dir: Path | None) -> float | None:
    """The best-known makespan of a PSPLIB instance (its name is the file stem), if listed."""
    if data_dir is None:
        return None
    path = Path(data_dir) / "psplib" / "optima" / "psplib_bounds.csv"
    if not path.is_file():
        return None
    value = _psplib_bounds(path).get(instance.name)
    return value if value is not None and math.isfinite(value) else None


def _soft(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    from fairpack.models.generators.soft import soft_workload

    return soft_workload(seed, p["jobs"], p["racks"], p["per_rack"], p["gpu_racks"], p["gpus_per_rack"],
                         float(p["load"]), float(p["gpu_share"]), float(p["mpi_share"]), float(p["slo_share"]),
                         (p["min_duration"], p["max_duration"]), float(p["gpu_slowdown"]), float(p["mpi_slowdown"]),
                         float(p["slack_low"]), float(p["slack_high"]), float(p["value"]))  # fmt: skip


def _sparrow(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    from fairpack.models.generators.short_tasks import sparrow_jobs

    return sparrow_jobs(seed, p["machines"], p["slots"], p["tasks"], float(p["load"]), p["jobs"],
                        float(p["mean_duration"]), p["durations"])  # fmt: skip


def _omega(p: Mapping[str, Any], seed: int, data_dir: Path | None) -> Instance:
    from fairpack.models.generators.short_tasks import omega_jobs

    return omega_jobs(seed, p["machines"], float(p["load"]), float(p["span"]), float(p["service_share"]),
                      float(p["batch_tasks"]), float(p["batch_duration"]), float(p["service_tasks"]),
                      float(p["service_duration"]))  # fmt: skip


_INT, _FLOAT, _BOOL, _STR = (int,), (float,), (bool,), (str,)
_OPTIONAL_INT = (int, type(None))


def _count(default: int | None) -> Param:
    """A count of things (tenants, machines, jobs, ...): a whole number of at least 1 (``None``: the family's own)."""
    return Param(default, _INT if default is not None else _OPTIONAL_INT, least=1)

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("google-like", "flat", "synthetic Google-shaped cluster, random tenants",
               {"tenants": _count(20), "machines": _count(1000), "distinct": Param(False, _BOOL)},
               _google_like, "tenants x server classes", _pairs),
        Family("google", "flat", "Google 2011 machine configurations, random tenants",
               {"tenants": _count(20), "machines": _count(None), "distinct": Param(False, _BOOL)},
               _google, "tenants x server classes", _pairs, data="google"),
        Family("alibaba", "flat", "real Alibaba GPU nodes, tenants from real pod requests",
               {"tenants": _count(20), "task_scale": Param(1.0, _FLOAT)},
               _alibaba, "tenants x server classes", _pairs, data="alibaba"),
        Family("random-flat", "flat", "small random heterogeneous cluster and tenants",
               {"tenants": _count(4), "servers": _count(3), "resources": _count(2)},
               _random_flat, "tenants x server classes", _pairs),
        Family("random-tree", "hierarchy", "random weighted organisation tree",
               {"leaves": _count(20), "depth": Param(3, _INT), "resources": _count(3),
                "servers": _count(None)},
               _random_tree, "leaves", _leaves),
        Family("hdrf-fig10", "hierarchy", "H-DRF paper Fig. 10 (naive H-DRF starves a leaf)", {},
               _hdrf_fig10, "leaves", _leaves),
        Family("dag-random", "jobs", "random DAG jobs on one pool (barrier-rich by default)",
               {"jobs": _count(4), "min_stages": _count(2), "max_stages": _count(4),
                "resources": _count(2), "barrier_rich": Param(True, _BOOL), "capacity": Param(100.0, _FLOAT),
                "release_spread": Param(0.0, _FLOAT)},
               _dag_random, "tasks", _tasks),
        Family("tpch", "jobs", "a mix of Spark TPC-H query DAGs",
               {"queries": _count(4), "data_size": Param("2g", _STR), "executors": _count(50),
                "memory_per_executor": Param(2.0, _FLOAT), "release_spread": Param(0.0, _FLOAT)},
               _tpch, "tasks", _tasks, data="tpch"),
        Family("arrivals", "jobs", "flat tenants' task groups arriving over time (Poisson or bursty), "
               "one task shape per tenant, on a synthetic Google-like cluster",
               {"tenants": _count(10), "machines": _count(50), "load": Param(0.9, _FLOAT),
                "horizon": Param(1000.0, _FLOAT), "mean_duration": Param(10.0, _FLOAT),
                "tasks_per_group": _count(1), "bursty": Param(False, _BOOL)},
               _arrivals, "tasks", _tasks),
        Family("tpch-arrivals", "jobs", "Spark TPC-H query DAGs arriving as a Poisson process on identical "
               "machines (Carbyne's set-up)",
               {"queries": _count(50), "mean_interarrival": Param(30.0, _FLOAT), "machines": _count(100),
                "cores": Param(20.0, _FLOAT), "memory": Param(128.0, _FLOAT), "data_size": Param("2g", _STR)},
               _tpch_arrivals, "tasks", _tasks, data="tpch"),
        Family("google-day", "jobs", "a SYNTHETIC day of tasks (the real task events are not available) on "
               "machines drawn from the real Google 2011 table",
               {"machines": _count(2000), "users": _count(100), "tasks": Param(100_000, _INT),
                "load": Param(0.95, _FLOAT), "horizon": Param(86_400.0, _FLOAT)},
               _google_day, "tasks", _tasks, data="google"),
        Family("hdfs", "jobs", "MapReduce jobs (Facebook-shaped sizes, Poisson arrivals, several users) reading "
               "blocks placed HDFS-style (3 replicas: one rack, two on another) on a racked cluster",
               {"jobs": _count(50), "machines": _count(40), "racks": Param(4, _INT), "slots": Param(4, _INT),
                "users": _count(4), "interarrival": Param(2.0, _FLOAT), "map_duration": Param(10.0, _FLOAT),
                "reduce_tasks": Param(0, _INT), "reduce_duration": Param(10.0, _FLOAT), "max_tasks": Param(400, _INT),
                "rack_factor": Param(1.3, _FLOAT), "remote_factor": Param(2.0, _FLOAT)},
               _hdfs, "tasks", _tasks),
        Family("psplib", "jobs", "PSPLIB single-mode RCPSP file (seed = file number)",
               {"set": Param("j30", _STR)},
               _psplib, "tasks", _tasks, data="psplib", best_known=_psplib_best),
        Family("sparrow", "jobs", "short parallel jobs on slotted workers at an offered load (Sparrow)",
               {"machines": _count(100), "slots": Param(4, _INT), "tasks": Param(10, _INT),
                "load": Param(0.8, _FLOAT), "jobs": _count(500), "mean_duration": Param(0.1, _FLOAT),
                "durations": Param("exponential", _STR)},
               _sparrow, "tasks", _tasks),
        Family("soft", "jobs", "GPU-preferring, MPI rack-preferring and unconstrained jobs, SLO (deadline, utility) "
               "and best-effort, on a labelled racked cluster at an offered load (Tetrisched)",
               {"jobs": _count(30), "racks": Param(4, _INT), "per_rack": _count(4),
                "gpu_racks": Param(2, _INT), "gpus_per_rack": Param(2, _INT), "load": Param(0.9, _FLOAT),
                "gpu_share": Param(1 / 3, _FLOAT), "mpi_share": Param(1 / 3, _FLOAT), "slo_share": Param(0.7, _FLOAT),
                "min_duration": Param(2, _INT), "max_duration": Param(6, _INT), "gpu_slowdown": Param(2.5, _FLOAT),
                "mpi_slowdown": Param(1.5, _FLOAT), "slack_low": Param(1.5, _FLOAT), "slack_high": Param(3.0, _FLOAT),
                "value": Param(100.0, _FLOAT)},
               _soft, "tasks", _tasks),
        Family("omega", "jobs", "batch and service job streams on a cell (Omega)",
               {"machines": _count(100), "load": Param(0.6, _FLOAT), "span": Param(1800.0, _FLOAT),
                "service_share": Param(0.5, _FLOAT), "batch_tasks": Param(20.0, _FLOAT),
                "batch_duration": Param(60.0, _FLOAT), "service_tasks": Param(5.0, _FLOAT),
                "service_duration": Param(600.0, _FLOAT)},
               _omega, "tasks", _tasks),
    )
}  # fmt: skip
