"""Traces: arrivals over time read as DAG jobs, from a table (CSV or Parquet) or the real Alibaba pod list.

A trace table has one row per job or task group (stage) with these columns:

* ``arrival`` -- when the row's tasks arrive (seconds, or the instance's time unit);
* ``duration`` -- how long each of its tasks runs;
* ``tenant`` -- the queue (user) it belongs to;
* one column per resource of the instance (missing resources are 0);
* optional ``job`` (rows with the same job form one job; default: every row its own job), ``stage``
  (the row's stage name within its job; default ``s0``, ``s1``, ... in row order), ``after`` (the stages
  it waits for, separated by ``;``), ``tasks`` (default 1) and ``deadline``.

Rows of one job must arrive together (a job has one release). Every problem names the file, the row and the
column.

The Alibaba GPU cluster's pod list (``openb_pod_list_*.csv``: ``creation_time``, ``deletion_time``,
``scheduled_time``, ``cpu_milli``, ``memory_mib``, ``num_gpu``, ``gpu_milli``, ``qos``, ``pod_phase``) is
recognised by its header and read directly (:func:`read_alibaba_pods`): a pod is a one-task job of its QoS
class (the tenant), arriving at ``creation_time``, needing ``cpu_milli / 1000`` cores, ``memory_mib / 1024``
GiB and ``num_gpu * gpu_milli / 1000`` GPUs (the cluster of ``fairpack generate alibaba --nodes-only`` has the
same three resources in the same units; a node's GPUs are one divisible pool, so a fractional pod is not
tied to one physical GPU). Its duration is ``deletion_time - scheduled_time``. Two kinds of pods are handled
explicitly:

* pods still running when the trace ends (``deletion_time`` is the trace's last time): their true length is
  unknown; they run until the trace end (a lower bound) and are marked ``censored``;
* pods the real scheduler never placed (no ``scheduled_time``, phase ``Pending``): no run time is known, so
  they are left out of the replay and counted in ``TraceData.skipped``; their observed delay is at least the
  trace end minus their creation.

The observed scheduling delay ``scheduled_time - creation_time`` is kept per pod (``TraceData.observed_delay``)
so that a policy's delays can be compared with the real scheduler's.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, overload

import numpy as np

from fairpack.models.io import DEFAULT_LIMITS, Limits, _read_jobs
from fairpack.models.stages import StageTable, seed, stage_table
from fairpack.models.types import FloatArray, Instance, InstanceError, IntArray, Job, Stage, _new

ALIBABA_COLUMNS = ("creation_time", "deletion_time", "scheduled_time", "cpu_milli", "memory_mib", "num_gpu",
                   "gpu_milli")  # fmt: skip
TRACE_COLUMNS = ("arrival", "duration", "tenant")
OPTIONAL_COLUMNS = ("job", "stage", "after", "tasks", "deadline")


class TraceJobs(Sequence[Job]):
    """The one-stage jobs of a trace read in bulk, as columns; a :class:`Job` is made when one is asked for.

    A million-row trace held as a million ``Job`` and ``Stage`` objects costs about a gigabyte and seconds to
    make; the simulator, the checker and the views read the instance's stage table (``models.stages``) instead,
    and look up the few jobs they name. Equal, as a sequence, to the tuple of its jobs.
    """

    plain = True  # no stage has placement options or input blocks (``Instance`` skips looking)
    unique = True  # the names are ``row`` and distinct row numbers (``Instance`` skips comparing them)

    def __init__(self, rows: IntArray, arrival: FloatArray, duration: FloatArray, tasks: IntArray,
                 demand: FloatArray, deadline: FloatArray, codes: IntArray, tenants: list[str]) -> None:  # fmt: skip
        self.rows, self.arrival, self.duration, self.tasks = rows, arrival, duration, tasks
        self.demand, self.deadline, self.codes, self.tenants = demand, deadline, codes, tenants

    def __len__(self) -> int:
        return int(self.rows.size)

    @overload
    def __getitem__(self, k: int) -> Job: ...

    @overload
    def __getitem__(self, k: slice) -> tuple[Job, ...]: ...

    def __getitem__(self, k: int | slice) -> Job | tuple[Job, ...]:
        if isinstance(k, slice):
            return tuple(self[i] for i in range(*k.indices(len(self))))
        if not -len(self) <= k < len(self):
            raise IndexError(k)
        k = int(k) % len(self)
        name = f"row{int(self.rows[k])}"
        stage = _new(Stage, name="s0", tasks=int(self.tasks[k]), duration=float(self.duration[k]),
                     demand=self.demand[k], after=(), input=(), options=())  # fmt: skip
        job: Job = _new(Job, name=name, stages=(stage,), weight=1.0, release=float(self.arrival[k]),
                        tenant=self.tenants[int(self.codes[k])] or name, deadline=float(self.deadline[k]),
                        utility=())  # type: ignore[assignment]  # fmt: skip
        return job

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Sequence[Job]) -> tuple[Job, ...]:
        return (*self, *other)

    def __radd__(self, other: Sequence[Job]) -> tuple[Job, ...]:
        return (*other, *self)

    def names(self) -> list[str]:
        """Every job's name (``row`` and its trace row), without making the jobs."""
        return [f"row{r}" for r in self.rows.tolist()]

    def tenant_codes(self) -> tuple[list[str], IntArray] | None:
        """Tenants in order of first appearance and every job's, as ``models.stages.job_tenants`` numbers them;
        None when some row names no tenant or two names are one after stripping (then it walks the names)."""
        if not all(self.tenants) or len(set(self.tenants)) < len(self.tenants) or not len(self):
            return None
        used, first = np.unique(self.codes, return_index=True)
        order = used[np.argsort(first)]
        rank = np.zeros(len(self.tenants), dtype=np.int64)
        rank[order] = np.arange(order.size)
        return [self.tenants[int(c)] for c in order], rank[self.codes]

    #: Every job's stages' names: one stage, ``s0``.
    stage_names = ("s0",)

    def tenant_names(self) -> list[str]:
        """Every job's tenant (its own name when the row names none), without making the jobs."""
        return [self.tenants[c] or f"row{r}" for c, r in zip(self.codes.tolist(), self.rows.tolist(), strict=True)]


@dataclass(frozen=True)
class TraceData:
    """Jobs read from a trace, and what the trace says about the real run.

    Attributes
    ----------
    jobs : tuple of Job
        In arrival order (then row order).
    observed_delay : array (jobs,)
        The real scheduler's delay from arrival to start (``nan`` where the trace has none).
    censored : array of bool (jobs,)
        The job's duration is only a lower bound (it was still running when the trace ended).
    skipped : int
        Rows left out (see the module docstring), with ``notes`` saying why.
    """

    jobs: Sequence[Job]  # a tuple, or TraceJobs for a trace read in bulk
    observed_delay: FloatArray
    censored: np.ndarray
    skipped: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)
    source: str = ""
    rows: tuple[tuple[int, ...], ...] | IntArray = ()  # per job, the trace row of each of its stages
    table: StageTable | None = None  # the jobs' stages as arrays, when read in bulk (``models.stages``)

    def locate(self, error: InstanceError, first: int) -> InstanceError:
        """``error`` about the instance's ``jobs[k]`` (the trace's jobs start at ``first``), named by the trace
        row and column it came from; unchanged when it is about the instance's own part."""
        found = _LOCATION.match(error.field)
        if found is None or int(found.group(1)) < first or len(self.rows) == 0:
            return error
        shifted = f"jobs[{int(found.group(1)) - first}]" + error.field[found.end(1) + 1:]
        return _row_error(InstanceError(error.reason, shifted), [list(r) for r in self.rows], self.source)

    def on(self, instance: Instance) -> Instance:
        """``instance`` with the trace's jobs after its own (job names must not clash)."""
        names = {job.name for job in instance.jobs}
        clash = next((job.name for job in self.jobs if job.name in names), None) if names else None
        if clash is not None:
            raise InstanceError(f"job {clash!r} is both in the instance and in the trace", "job", self.source)
        # A bulk trace on an instance without jobs keeps its columns (TraceJobs): no Job is made.
        jobs: Any = self.jobs if not instance.jobs and isinstance(self.jobs, TraceJobs) else (*instance.jobs,
                                                                                               *self.jobs)
        combined = replace(instance, jobs=jobs)
        if self.table is not None:
            seed(combined, StageTable.concat(stage_table(instance), self.table))
        return combined


def _rows(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """Header and rows of a CSV or Parquet table (a column named twice is refused: one copy would win)."""
    source = str(path)
    if path.suffix.lower() in (".parquet", ".pq"):
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise InstanceError("reading Parquet needs pyarrow (install fairpack[bench])", source=source) from None
        try:
            table = pq.read_table(path)
        except (OSError, ValueError) as error:
            raise InstanceError(f"cannot read Parquet: {error}", source=source) from None
        _check_header(list(table.column_names), source)
        return list(table.column_names), table.to_pylist()
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            header = list(reader.fieldnames or [])
            _check_header(header, source)
            rows = list(reader)
            return header, rows
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise InstanceError(f"cannot read CSV: {error}", source=source) from None


def _check_header(header: list[str], source: str) -> None:
    repeated = sorted({column for column in header if header.count(column) > 1})
    if repeated:
        raise InstanceError(f"columns named twice: {repeated} (which one holds the values?)", "header", source)


def _number(value: Any, row: int, column: str, source: str, default: float | None = None) -> float:
    if value is None or (isinstance(value, str) and not value.strip()):
        if default is not None:
            return default
        raise InstanceError("missing value", f"row {row}.{column}", source)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InstanceError(f"expected a number, got {value!r}", f"row {row}.{column}", source) from None
    if not math.isfinite(number) or number < 0:
        raise InstanceError(f"expected a finite non-negative number, got {value!r}", f"row {row}.{column}", source)
    return number


def read_trace(path: str | Path, resources: tuple[str, ...], limits: Limits = DEFAULT_LIMITS) -> TraceData:
    """Read a trace table (or the Alibaba pod list, recognised by its header) for an instance's resources.

    The rows become jobs in the instance file's form, checked by the instance loader itself (its checks,
    limits and messages: task counts up to 1e9 a stage and in all, amounts and times up to 1e15, non-zero
    amounts at least 1e-12, ...), each fault named by the trace file, its row and its column.

    Raises
    ------
    InstanceError
        Naming the file, the row and the column at fault.
    """
    path = Path(path)
    bulk = _columnar(path, resources, limits)
    if bulk is not None:
        return bulk
    header, rows = _rows(path)
    if all(column in header for column in ALIBABA_COLUMNS):
        return read_alibaba_pods(path, resources, header, rows)
    source = str(path)
    missing = [column for column in TRACE_COLUMNS if column not in header]
    if missing:
        raise InstanceError(f"a trace needs columns {list(TRACE_COLUMNS)} (and one per resource); "
                            f"missing {missing}", "header", source)  # fmt: skip
    unknown = [c for c in header if c not in (*TRACE_COLUMNS, *OPTIONAL_COLUMNS, *resources)]
    if unknown:
        raise InstanceError(f"unknown columns {unknown}: resources are {list(resources)}", "header", source)
    fast = _single_rows_fast(header, rows, resources, limits, source)
    if fast is not None:
        return fast
    groups: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for position, row in enumerate(rows, start=1):
        job = str(row.get("job") or "").strip() or f"row{position}"
        groups.setdefault(job, []).append((position, row))
    entries = [_job_entry(name, members, resources, source) for name, members in groups.items()]
    where = [[position for position, _ in members] for members in groups.values()]
    try:
        jobs = _read_jobs([entry for entry in entries], resources, limits)
    except InstanceError as error:
        raise _row_error(error, where, source) from None
    order = sorted(range(len(jobs)), key=lambda k: jobs[k].release)
    n = len(jobs)
    return TraceData(tuple(jobs[k] for k in order), np.full(n, np.nan), np.zeros(n, dtype=bool), source=source,
                     rows=tuple(tuple(where[k]) for k in order))  # fmt: skip


def _header(path: Path) -> list[str] | None:
    """The table's column names, read without its rows (None when the file cannot be read so)."""
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            return list(pq.read_schema(path).names)
        with path.open(newline="", encoding="utf-8") as handle:
            return next(csv.reader(handle), [])
    except (OSError, ValueError, ImportError, UnicodeDecodeError, csv.Error, StopIteration):
        return None


def _columnar(path: Path, resources: tuple[str, ...], limits: Limits) -> TraceData | None:
    """A trace of one-row jobs read column by column (pyarrow: no Python object per cell; every number parsed
    as Python's ``float`` parses it), checked as :func:`_single_rows_fast` checks it. None (the row-by-row
    reader then reads the file and names any fault) for anything else: another shape, a cell that is not a
    number, an Alibaba pod list, a file pyarrow cannot read, no pyarrow."""
    header = _header(path)
    if (header is None or not header or any(c in header for c in ("job", "stage", "after"))
            or len(set(header)) < len(header) or any(c not in (*TRACE_COLUMNS, *OPTIONAL_COLUMNS, *resources)
                                                     for c in header)
            or any(c not in header for c in TRACE_COLUMNS)):  # fmt: skip
        return None
    try:
        import pyarrow as pa
        import pyarrow.compute as pc

        if path.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            table = pq.read_table(path)
        else:
            import pyarrow.csv as pacsv

            table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
                column_types={"tenant": pa.string()}, null_values=[""], strings_can_be_null=False,
                quoted_strings_can_be_null=False))  # fmt: skip
    except (ImportError, OSError, ValueError, pa.ArrowException):
        return None
    if table.num_rows == 0:
        return None
    numeric = [c for c in table.column_names if c != "tenant"]
    if not all(pa.types.is_integer(table.schema.field(c).type) or pa.types.is_floating(table.schema.field(c).type)
               for c in numeric):  # fmt: skip
        return None
    kind = table.schema.field("tenant").type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):  # (pandas writes large strings)
        return None
    n = table.num_rows

    # Columns as numpy through their buffers: pyarrow's own to_numpy and to_pylist import pandas (0.15 s a process).
    def column(name: str, default: float) -> FloatArray:
        if name not in table.column_names:
            return np.full(n, default)
        array = table[name].combine_chunks().cast(pa.float64())
        if array.null_count:
            array = pc.fill_null(array, np.nan)
        return np.frombuffer(array.buffers()[1], dtype=np.float64, count=len(array), offset=array.offset * 8).copy()

    tenant = table["tenant"].combine_chunks()
    if tenant.null_count:  # (Parquet) an empty cell: no tenant
        tenant = tenant.fill_null("")
    tenant = tenant.dictionary_encode()
    names = [str(tenant.dictionary[i].as_py()).strip() for i in range(len(tenant.dictionary))]
    indices = tenant.indices.cast(pa.int64())
    codes = np.frombuffer(indices.buffers()[1], dtype=np.int64, count=len(indices), offset=indices.offset * 8).copy()
    demand = np.column_stack([column(r, 0.0) for r in resources]) if resources else np.zeros((n, 0))
    return _bulk(path, column("arrival", np.nan), column("duration", np.nan), demand, column("tasks", np.nan),
                 column("deadline", np.nan), names, codes, limits)  # fmt: skip


def _within_limits(arrival: FloatArray, duration: FloatArray, demand: FloatArray, tasks: FloatArray,
                   deadline: FloatArray, limits: Limits) -> tuple[FloatArray, FloatArray, bool]:
    """One-row jobs' columns against the loader's limits: the task counts (a missing one is 1), the demands (a
    missing one is 0) and whether every number is within the limits (else the row-by-row reader names it)."""
    tasks = np.where(np.isnan(tasks), 1.0, tasks)
    demand = np.where(np.isnan(demand), 0.0, demand)
    high = limits.max_quantity
    with np.errstate(invalid="ignore"):
        good = bool(np.all((arrival >= 0) & (arrival <= high)) and np.all((duration >= 0) & (duration <= high))
                    and np.all((demand == 0) | ((demand >= limits.min_quantity) & (demand <= high)))
                    and np.all((tasks >= 1) & (tasks <= limits.max_tasks) & (tasks == np.floor(tasks)))
                    and float(tasks.sum()) <= limits.max_tasks
                    and np.all(np.isnan(deadline) | (deadline == 0)
                               | ((deadline > 0) & (deadline <= high))))  # fmt: skip
    return tasks, demand, good


def _bulk(path: Path, arrival: FloatArray, duration: FloatArray, demand: FloatArray, tasks: FloatArray,
          deadline: FloatArray, names: list[str], codes: IntArray, limits: Limits) -> TraceData | None:  # fmt: skip
    """One-row jobs from their columns (a missing cell is ``nan``), or None if a number is out of the loader's
    limits (the row-by-row reader names it)."""
    n = arrival.size
    tasks, demand, good = _within_limits(arrival, duration, demand, tasks, deadline, limits)
    if not good or not all(name.isprintable() for name in names):
        return None
    order = np.argsort(arrival, kind="stable")
    arrival, duration, demand, tasks, deadline = (a[order] for a in (arrival, duration, demand, tasks, deadline))
    codes = codes[order]
    demand = np.ascontiguousarray(demand)
    demand.setflags(write=False)  # every job's vector is a read-only row of it
    due = np.where(np.isnan(deadline) | (deadline == 0), math.inf, deadline)
    tasks_int = tasks.astype(np.int64)
    table = StageTable.single(arrival, tasks_int, duration, demand, due)
    jobs = TraceJobs(order + 1, arrival, duration, tasks_int, demand, due, codes, names)
    return TraceData(jobs, np.full(n, np.nan), np.zeros(n, dtype=bool), source=str(path),
                     rows=(order + 1).reshape(-1, 1), table=table)  # fmt: skip


def _single_rows_fast(header: list[str], rows: list[dict[str, Any]], resources: tuple[str, ...], limits: Limits,
                      source: str) -> TraceData | None:  # fmt: skip
    """A trace whose every row is a one-stage job of its own (no ``job``, ``stage`` or ``after`` column: the
    common shape of a long arrival trace), read in bulk: its numbers checked with numpy against the loader's
    limits, its jobs made without a validation call per row. None when anything is off, for the row-by-row
    path to name it."""
    if any(column in header for column in ("job", "stage", "after")) or not rows:
        return None
    columns = ["arrival", "duration", *resources] + [c for c in ("tasks", "deadline") if c in header]
    try:
        table = np.array([[float(row[c]) if row[c] not in ("", None) else np.nan for c in columns] for row in rows],
                         dtype=np.float64)  # fmt: skip
    except (TypeError, ValueError, KeyError, OverflowError):
        return None
    arrival, duration, demand = table[:, 0], table[:, 1], table[:, 2:2 + len(resources)]
    tasks = table[:, columns.index("tasks")] if "tasks" in columns else np.ones(len(rows))
    deadline = table[:, columns.index("deadline")] if "deadline" in columns else np.full(len(rows), np.nan)
    tasks, demand, good = _within_limits(arrival, duration, demand, tasks, deadline, limits)
    tenants = [str(row.get("tenant") or "").strip() for row in rows]
    if not good or not all(name.isprintable() for name in set(tenants)):
        return None
    jobs = []
    for k in range(len(rows)):
        name = f"row{k + 1}"
        vector = demand[k].copy()
        vector.setflags(write=False)
        stage = _new(Stage, name="s0", tasks=int(tasks[k]), duration=float(duration[k]), demand=vector, after=(),
                     input=(), options=())  # fmt: skip
        due = deadline[k]
        jobs.append(_new(Job, name=name, stages=(stage,), weight=1.0, release=float(arrival[k]),
                         tenant=tenants[k] or name, deadline=math.inf if np.isnan(due) or due == 0 else float(due),
                         utility=()))  # fmt: skip
    order = np.argsort(arrival, kind="stable")
    n = len(jobs)
    return TraceData(tuple(jobs[k] for k in order.tolist()), np.full(n, np.nan), np.zeros(n, dtype=bool),
                     source=source, rows=tuple((int(k) + 1,) for k in order.tolist()))  # fmt: skip


#: A field of the instance file's job form -> the trace column it was read from.
_COLUMN_OF = {"release": "arrival", "deadline": "deadline", "tenant": "tenant", "name": "job", "tasks": "tasks",
              "duration": "duration", "after": "after", "demand": None}  # fmt: skip
_LOCATION = re.compile(r"^jobs\[(\d+)\](?:\.stages\[(\d+)\])?\.?([A-Za-z_]*)(?:\.(.*))?")


def _row_error(error: InstanceError, rows: list[list[int]], source: str) -> InstanceError:
    """The loader's ``error`` about ``jobs[k].stages[s].field`` named by the trace's row and column."""
    found = _LOCATION.match(error.field)
    if found is None:
        return InstanceError(error.reason, error.field, source)
    job, stage, key, rest = int(found.group(1)), found.group(2), found.group(3), found.group(4)
    members = rows[job] if job < len(rows) else []
    position = members[int(stage)] if stage is not None and int(stage) < len(members) else (members or [0])[0]
    column = rest if key == "demand" and rest else _COLUMN_OF.get(key, key) or key
    if key == "name" and stage is not None:
        column = "stage"
    return InstanceError(error.reason, f"row {position}.{column}" if column else f"row {position}", source)


def _job_entry(name: str, members: list[tuple[int, dict[str, Any]]], resources: tuple[str, ...],
               source: str) -> dict[str, Any]:  # fmt: skip
    """One job of the trace in the instance file's form. Every row of it must agree on the job's own fields
    (arrival, tenant, deadline); values are numbers where the loader expects numbers (it checks the ranges)."""
    first, head = members[0]
    shared = {column: _value(head.get(column), column) for column in ("arrival", "tenant", "deadline")}
    for position, row in members[1:]:
        for column, value in shared.items():
            if _value(row.get(column), column) != value:
                raise InstanceError(f"job {name!r} has rows that differ in {column} ({row.get(column)!r} here, "
                                    f"{head.get(column)!r} on row {first}): a job has one", f"row {position}.{column}",
                                    source)  # fmt: skip
    names = [str(row.get("stage") or "").strip() or f"s{k}" for k, (_, row) in enumerate(members)]
    stages = []
    for k, (_, row) in enumerate(members):
        stage: dict[str, Any] = {"name": names[k], "tasks": _value(row.get("tasks"), "tasks", 1),
                                 "duration": _value(row.get("duration"), "duration"),
                                 "demand": {r: _value(row.get(r), r, 0.0) for r in resources},
                                 "after": [p.strip() for p in str(row.get("after") or "").split(";") if p.strip()]}
        stages.append(stage)
    entry: dict[str, Any] = {"name": name, "release": shared["arrival"], "stages": stages,
                             "tenant": str(head.get("tenant") or "").strip() or name}  # fmt: skip
    deadline = shared["deadline"]
    if deadline is not None and not (isinstance(deadline, float) and deadline == 0):  # 0 or empty: none
        entry["deadline"] = deadline
    return entry


def _value(value: Any, column: str, default: Any = None) -> Any:
    """A cell as the loader would read it from a file: empty -> ``default``, a number -> int or float, text stays
    text (the loader then names it: "must be a number, got the string 'abc'")."""
    if type(value) is str:
        text = value.strip()
        if not text:
            return default
        if column == "tenant":
            return value
        try:
            number = float(text)
        except ValueError:
            return text
        if column == "tasks" and number.is_integer() and abs(number) < 2**63:
            return int(number)
        return number
    if value is None:
        return default
    return value


def read_alibaba_pods(path: str | Path, resources: tuple[str, ...], header: list[str] | None = None,
                      rows: list[dict[str, Any]] | None = None) -> TraceData:  # fmt: skip
    # ``header`` is the caller's (read_trace recognised the pod list by it); the rows are all this needs.
    """The Alibaba GPU cluster's pod list as one-task jobs (see the module docstring)."""
    path = Path(path)
    source = str(path)
    if rows is None:
        _, rows = _rows(path)
    wanted = ("cpu", "mem", "gpu")
    if tuple(resources) != wanted:
        raise InstanceError(f"the Alibaba pod list needs an instance with resources {list(wanted)} (fairpack generate "
                            f"alibaba --nodes-only), not {list(resources)}", "resources", source)  # fmt: skip
    if not rows:
        raise InstanceError("the pod list has a header and no pods: nothing to replay", "rows", source)
    end = max(_number(row["deletion_time"], k, "deletion_time", source, 0.0) for k, row in enumerate(rows, 1))
    jobs, delays, censored, skipped, positions = [], [], [], 0, []
    for position, row in enumerate(rows, start=1):
        created = _number(row["creation_time"], position, "creation_time", source)
        scheduled = row.get("scheduled_time")
        if scheduled is None or (isinstance(scheduled, str) and not scheduled.strip()):
            skipped += 1
            continue
        start = _number(scheduled, position, "scheduled_time", source)
        deleted = _number(row["deletion_time"], position, "deletion_time", source)
        gpus = _number(row["num_gpu"], position, "num_gpu", source) * _number(row["gpu_milli"], position,
                                                                               "gpu_milli", source) / 1000  # fmt: skip
        demand = np.array([_number(row["cpu_milli"], position, "cpu_milli", source) / 1000,
                           _number(row["memory_mib"], position, "memory_mib", source) / 1024, gpus])  # fmt: skip
        name = str(row.get("name") or f"pod{position}")
        jobs.append(Job(name, (Stage("pod", 1, max(deleted - start, 0.0), demand),), 1.0, created,
                        str(row.get("qos") or "default")))  # fmt: skip
        delays.append(start - created)
        censored.append(deleted >= end)
        positions.append(position)
    if not jobs:
        raise InstanceError(f"all {skipped} pods of the list are pending (never scheduled, so no run time is known): "
                            "nothing to replay", "rows", source)  # fmt: skip
    order = sorted(range(len(jobs)), key=lambda k: jobs[k].release)
    notes = (f"{skipped} pods were never scheduled in the trace (no run time known): left out",
             f"{int(np.sum(censored))} pods were still running at the trace end: they run until it (a lower bound)")
    return TraceData(tuple(jobs[k] for k in order), np.array([delays[k] for k in order], dtype=np.float64),
                     np.array([censored[k] for k in order], dtype=bool), skipped, notes, source,
                     tuple((positions[k],) for k in order))  # fmt: skip
