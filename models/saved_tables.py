"""A saved schedule's ``tasks`` and ``jobs`` tables as columns, and a saved result read with them as columns.

``fairpack check`` of a million-job simulation read a 445 MB file into two million dicts (2.6 GB), then walked
them row by row in Python. Here:

* :func:`task_columns` and :func:`job_entries` turn the parsed rows into arrays with one list comprehension per
  column, resolving names against the instance without making its jobs. They give None when any row would not
  resolve as :func:`fairpack.models.view.schedule_from_json` resolves it row by row (a name unknown, a key
  missing, a value of another type): the caller then walks the rows as before, which raises the same error, or
  reads the row the way it always did;
* :func:`read_result` reads a file as ``fairpack simulate -o`` writes it (``json.dumps(..., indent=1)``) with the
  two tables parsed a block of rows at a time by orjson and kept as columns (:class:`SavedTasks`,
  :class:`SavedJobs`), never as a dict per row; any other file, or anything the blocks do not take, is parsed
  whole as before. What it gives is what ``json.loads`` gives, the two tables as columns.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from fairpack.models.locality import LEVEL_NAMES
from fairpack.models.types import BoolArray, FloatArray, Instance, IntArray

try:
    import orjson
except ImportError:  # pragma: no cover - a dependency; without it files are read by the stdlib json
    orjson = None  # type: ignore[assignment]

Part = TypeVar("Part")  # a block's columns: SavedTasks or SavedJobs

#: The fields of every ``jobs`` row, in order (each a number, or null where there is none).
JOB_FIELDS = ("arrival", "start", "completion", "queueing_delay", "jct", "slowdown", "fair_completion", "deadline",
              "utility")  # fmt: skip
#: What a ``jobs`` field holds: a float, null, nothing (the key is missing), or another JSON value.
FLOAT, NULL, ABSENT, OTHER = 0, 1, 2, 3
#: orjson reads a whole number beyond 64 bits as a float where the stdlib json keeps it whole: a float this large
#: sends the file to the stdlib json.
BIG = 2.0**63
_MISSING = object()


@dataclass(frozen=True)
class SavedTasks:
    """A saved ``tasks`` list as columns, resolved against the instance: every row's job, stage and server class
    (numbers into the instance), task index, start and end, machine and option (``-1`` where absent), and its
    ``local`` level (an index into ``LEVEL_NAMES``, ``-1`` where absent or null). ``placed``: some row names a
    server."""

    job: IntArray
    stage: IntArray
    index: IntArray
    start: FloatArray
    end: FloatArray
    server: IntArray
    machine: IntArray
    option: IntArray
    local: IntArray

    def __len__(self) -> int:
        return int(self.job.size)

    @property
    def placed(self) -> bool:
        return bool((self.server >= 0).any())


@dataclass(frozen=True)
class SavedJobs:
    """A saved ``jobs`` object as columns, in the file's order: every entry's job (a number into the instance),
    the kind of each :data:`JOB_FIELDS` value (``FLOAT``, ``NULL``, ``ABSENT``, ``OTHER``) and its float
    (``nan`` where not a float); ``raw`` keeps what is not a float or null, by (entry, field), and ``entries``
    each entry that is not an object, by entry, as the file has them."""

    job: IntArray
    kind: npt.NDArray[np.int8]
    value: FloatArray
    raw: dict[tuple[int, int], Any] = field(default_factory=dict)
    entries: dict[int, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.job.size)

    def entry(self, position: int) -> Any:
        """The entry at ``position`` as the file has it (an object of its fields, or whatever it is)."""
        if position in self.entries:
            return self.entries[position]
        out: dict[str, Any] = {}
        for f, name in enumerate(JOB_FIELDS):
            kind = int(self.kind[position, f])
            if kind != ABSENT:
                out[name] = float(self.value[position, f]) if kind == FLOAT else None if kind == NULL else \
                    self.raw[(position, f)]  # fmt: skip
        return out


# ------------------------------------------------------------------------------------------ rows to columns


@dataclass(frozen=True)
class Names:
    """What a saved schedule's names resolve to: the jobs' names in order, each job's stage names (``shared``: the
    one dict of them all, when every job has the same stages, as a trace's jobs do), server class names."""

    names: list[str]
    stages: list[dict[str, int]]
    servers: dict[str, int]
    shared: dict[str, int] | None = None

    @cached_property
    def jobs(self) -> dict[str, int]:
        """Job name -> number (a name twice: the last, as a dict of them keeps it)."""
        return dict(zip(self.names, range(len(self.names)), strict=True))

    def resolve(self, values: list[Any]) -> IntArray:
        """The job number of every value (-1 where it names none). A run of the instance's jobs in order, as the
        files list them, is recognised by comparing the lists, not looked up name by name."""
        first = self.jobs.get(values[0], -1) if values and type(values[0]) is str else -1
        if first >= 0 and self.names[first : first + len(values)] == values:
            return np.arange(first, first + len(values), dtype=np.int64)
        jobs = self.jobs
        return np.array([jobs.get(value, -1) for value in values], dtype=np.int64)

    @staticmethod
    def of(instance: Instance) -> Names:
        """The instance's names (made once per instance: a million-job trace's take a second)."""
        cached = _NAMES.get(id(instance))
        if cached is not None and cached[0]() is instance:
            return cached[1]
        names, stage_names = job_and_stage_names(instance)
        first = stage_names[0] if stage_names else ()
        shared = {name: s for s, name in enumerate(first)} if all(t is first for t in stage_names) else None
        stages = [shared] * len(stage_names) if shared is not None else \
            [{name: s for s, name in enumerate(t)} for t in stage_names]  # fmt: skip
        made = Names(names, stages, {server.name: c for c, server in enumerate(instance.servers)}, shared)
        _NAMES.clear()  # one instance at a time: a check reads, checks and re-runs one
        _NAMES[id(instance)] = (weakref.ref(instance), made)
        return made


_NAMES: dict[int, tuple[weakref.ref[Instance], Names]] = {}


def job_and_stage_names(instance: Instance) -> tuple[list[str], list[tuple[str, ...]]]:
    """Every job's name and its stages' names, without making a bulk trace's jobs (``TraceJobs`` answers both
    from its columns)."""
    from fairpack.models.traces import TraceJobs

    if isinstance(instance.jobs, TraceJobs):
        return instance.jobs.names(), [instance.jobs.stage_names] * len(instance.jobs)
    return [job.name for job in instance.jobs], [tuple(stage.name for stage in job.stages) for job in instance.jobs]


def task_columns(rows: list[Any], names: Names) -> SavedTasks | None:
    """The rows as columns; None where a row is not what the fast reading takes (see the module docstring)."""
    if not all(type(row) is dict for row in rows):
        return None
    try:
        return _task_columns(rows, names)
    except (TypeError, ValueError, OverflowError):  # an unhashable name, a number beyond 64 bits
        return None


def _task_columns(rows: list[dict[str, Any]], names: Names) -> SavedTasks | None:
    columns = {key: [row.get(key, _MISSING) for row in rows] for key in ("job", "stage", "index", "start", "end")}
    jobs = names.resolve(columns["job"])
    if (jobs < 0).any():
        return None  # a job unknown, or the key missing
    stages = _stages(columns["stage"], jobs, names)
    if stages is None or not _types(columns["index"], int) or not _types(columns["start"], int, float) or \
            not _types(columns["end"], int, float):  # fmt: skip
        return None
    start, end = np.array(columns["start"], dtype=np.float64), np.array(columns["end"], dtype=np.float64)
    servers = [row.get("server") for row in rows]
    server = np.array([-1 if value is None else names.servers.get(value, -2) for value in servers], dtype=np.int64)
    machines = [row.get("machine", -1) for row in rows]
    options = [row.get("option", -1) for row in rows]
    if (server == -2).any() or not _types(options, int) or not _types(
            [m for m, c in zip(machines, server.tolist(), strict=True) if c >= 0], int):  # fmt: skip
        return None
    machine = np.where(server >= 0, np.array([m if type(m) is int else -1 for m in machines], dtype=np.int64), -1)
    levels = {name: position for position, name in enumerate(LEVEL_NAMES)}
    local = [row.get("local") for row in rows]
    level = np.array([-1 if value is None else levels.get(value, -2) for value in local], dtype=np.int64)
    if (level == -2).any():
        return None  # a level of another name: the checker reports it row by row
    return SavedTasks(jobs, stages, np.array(columns["index"], dtype=np.int64), start, end, server, machine,
                      np.array(options, dtype=np.int64), level)  # fmt: skip


def _types(values: list[Any], *kinds: type) -> bool:
    """Whether every value is exactly of one of ``kinds`` (a bool is not a number here: the rows decide it)."""
    return set(map(type, values)) <= set(kinds)


def _stages(values: list[Any], jobs: IntArray, names: Names) -> IntArray | None:
    """Every row's stage number (a stage is named as ``str`` of the saved value, as the rows are read)."""
    if any(value is _MISSING for value in values):
        return None
    if names.shared is not None:
        lookup = names.shared
        stage = np.array([lookup.get(v if type(v) is str else str(v), -1) for v in values], dtype=np.int64)
    else:
        texts = [value if type(value) is str else str(value) for value in values]
        per_job = names.stages
        stage = np.array([per_job[j].get(text, -1) for j, text in zip(jobs.tolist(), texts, strict=True)],
                         dtype=np.int64)  # fmt: skip
    return None if (stage < 0).any() else stage


def job_entries(jobs: Mapping[str, Any], names: Names) -> SavedJobs | None:
    """A ``jobs`` object as columns; None when a name is not a job of the instance (the rows raise it)."""
    try:
        job = names.resolve(list(jobs))
    except TypeError:
        return None
    if (job < 0).any():
        return None
    entries = list(jobs.values())
    objects = [type(entry) is dict for entry in entries]
    odd = {position: entry for position, entry in enumerate(entries) if not objects[position]}
    count = len(entries)
    if not odd and set(map(tuple, entries)) <= {JOB_FIELDS}:  # as the view writes them: every field, in order
        flat = list(chain.from_iterable(map(dict.values, entries)))
        if set(map(type, flat)) <= {float, type(None)}:
            value = np.array(flat, dtype=np.float64).reshape(count, len(JOB_FIELDS))  # None reads as nan
            nan = np.flatnonzero(np.isnan(value.reshape(-1)))
            null = np.zeros(value.size, dtype=bool)
            null[nan] = [flat[i] is None for i in nan.tolist()]
            kind = np.where(null.reshape(value.shape), NULL, FLOAT).astype(np.int8)
            return SavedJobs(job, kind, value)
    kind = np.full((count, len(JOB_FIELDS)), ABSENT, dtype=np.int8)
    value = np.full((count, len(JOB_FIELDS)), np.nan)
    raw: dict[tuple[int, int], Any] = {}
    for f, name in enumerate(JOB_FIELDS):
        column: list[Any] = [entry.get(name, _MISSING) if is_object else _MISSING for entry, is_object in
                  zip(entries, objects, strict=True)]  # fmt: skip
        kinds = set(map(type, column))
        if kinds <= {float}:
            kind[:, f], value[:, f] = FLOAT, column
            continue
        if kinds <= {float, type(None)}:
            null = np.array([item is None for item in column], dtype=bool)
            kind[:, f] = np.where(null, NULL, FLOAT)
            value[:, f] = np.array(column, dtype=np.float64)  # None reads as nan
            continue
        for position, item in enumerate(column):
            if type(item) is float:
                kind[position, f], value[position, f] = FLOAT, item
            elif item is None:
                kind[position, f] = NULL
            elif item is not _MISSING:
                kind[position, f] = OTHER
                raw[(position, f)] = item
    return SavedJobs(job, kind, value, raw, odd)


# ------------------------------------------------------------------------------------------ reading a file


def read_result(path: str | Path, instance: Instance | None = None) -> Any:
    """The JSON value of the file at ``path``: ``json.loads`` of its text, with its ``tasks`` and ``jobs`` as
    :class:`SavedTasks` and :class:`SavedJobs` where it is laid out as ``-o`` writes it and they resolve against
    ``instance``.

    Raises what reading and ``json.loads`` raise (``OSError``, ``UnicodeDecodeError``, ``json.JSONDecodeError``),
    the stdlib's error whatever orjson said."""
    raw = Path(path).read_bytes()
    if orjson is not None:
        if instance is not None:
            data = _columnar(raw, instance)
            if data is not None:
                return data
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = None
        if parsed is not None and not _has_big(parsed):
            return parsed
    del raw
    return json.loads(Path(path).read_text())


def _has_big(value: Any) -> bool:
    """Whether a float of magnitude 2**63 or more is in ``value`` (orjson may have read a whole number so).
    Walked with a stack: a value nested as deep as orjson reads is no recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is float:
            if abs(item) >= BIG:
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


#: How ``json.dumps(..., indent=1)`` opens and closes the two tables of a view, and ends each of their rows.
_TABLES = {"jobs": (b'\n "jobs": {', b"\n }"), "tasks": (b'\n "tasks": [', b"\n ]")}
_ROW_END = b"\n  },"
#: Bytes of a table parsed at once.
BLOCK_BYTES = 1 << 22


def _columnar(raw: bytes, instance: Instance) -> dict[str, Any] | None:
    """``raw`` parsed with its two tables as columns, or None (then it is parsed whole)."""
    spans = {}
    after = 0  # -o writes the tasks after the jobs: looked for there first (a scan of the file less)
    for key, (opening, closing) in _TABLES.items():
        start = raw.find(opening, after)
        start = raw.find(opening) if start < 0 else start
        end = raw.find(closing, start) if start >= 0 else -1
        after = max(end, 0)
        if start < 0 or end < 0:
            return None
        spans[key] = (start + len(opening) - 1, end + len(closing))  # the table's value, brackets included
    # Each table's value replaced by a mark; where the outer text reads with the marks as the top-level
    # "jobs" and "tasks" (the last of a key, as json.loads keeps it), the spans are those values.
    marks = {key: json.dumps(f"\x00fairpack:saved:{key}\x00").encode() for key in spans}
    (a, b), (c, d) = sorted(spans.values())
    if b > c:
        return None
    first, second = sorted(spans, key=lambda key: spans[key])
    text = raw[:a] + marks[first] + raw[b:c] + marks[second] + raw[d:]
    if any(text.count(mark) != 1 for mark in marks.values()):
        return None
    try:
        outer = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(outer, dict) or _has_big(outer) or any(outer.get(key) != json.loads(mark)
                                                           for key, mark in marks.items()):  # fmt: skip
        return None
    names = Names.of(instance)
    tasks = _task_blocks(raw, *spans["tasks"], names)
    jobs = _job_blocks(raw, *spans["jobs"], names) if tasks is not None else None
    if tasks is None or jobs is None:
        return None
    outer["tasks"], outer["jobs"] = tasks, jobs
    return outer


def _blocks(raw: bytes, start: int, end: int) -> list[bytes]:
    """The rows of the table ``raw[start:end]`` (brackets included), cut after row ends into blocks of about
    ``BLOCK_BYTES``, each without its brackets and trailing comma. A cut that falls inside a row makes that block
    fail to parse (its braces do not close), so the blocks parse exactly when the rows are whole."""
    body_start, body_end = start + 1, end - 1
    blocks: list[bytes] = []
    cursor = body_start
    while cursor < body_end:
        cut = raw.find(_ROW_END, min(cursor + BLOCK_BYTES, body_end), body_end)
        if cut < 0:
            blocks.append(raw[cursor:body_end])
            break
        blocks.append(raw[cursor : cut + len(_ROW_END) - 1])
        cursor = cut + len(_ROW_END)
    return blocks


def _parsed_blocks(raw: bytes, start: int, end: int, brackets: bytes, columns: Callable[[Any], Part | None],
                   too_big: Callable[[Part], bool]) -> list[Part] | None:  # fmt: skip
    """Every block of the table at ``raw[start:end]`` parsed inside ``brackets`` and made columns by ``columns``;
    None where a block does not parse, ``columns`` does not take it, or a number is ``too_big`` (the whole file is
    then read another way)."""
    parts: list[Part] = []
    for block in _blocks(raw, start, end):
        try:
            value = orjson.loads(brackets[:1] + block + brackets[1:])
        except orjson.JSONDecodeError:
            return None
        part = columns(value)
        if part is None or too_big(part):
            return None
        parts.append(part)
    return parts


def _task_blocks(raw: bytes, start: int, end: int, names: Names) -> SavedTasks | None:
    parts = _parsed_blocks(raw, start, end, b"[]", lambda rows: task_columns(rows, names),
                           lambda part: _big(part.start) or _big(part.end))  # fmt: skip
    if parts is None:
        return None
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return SavedTasks(empty, empty, empty, empty.astype(float), empty.astype(float), empty, empty, empty, empty)
    return SavedTasks(*(np.concatenate([getattr(part, f) for part in parts]) for f in
                        ("job", "stage", "index", "start", "end", "server", "machine", "option", "local")))  # fmt: skip


def _job_blocks(raw: bytes, start: int, end: int, names: Names) -> SavedJobs | None:
    def too_big(part: SavedJobs) -> bool:
        return _big(part.value) or any(_has_big(v) for v in [*part.raw.values(), *part.entries.values()])

    parts = _parsed_blocks(raw, start, end, b"{}", lambda entries: job_entries(entries, names), too_big)
    if parts is None:
        return None
    if not parts:
        return SavedJobs(np.zeros(0, dtype=np.int64), np.zeros((0, len(JOB_FIELDS)), dtype=np.int8),
                         np.zeros((0, len(JOB_FIELDS))))  # fmt: skip
    job = np.concatenate([part.job for part in parts])
    if job.size and np.bincount(job).max() > 1:
        return None  # a name twice, in two blocks: one object keeps the last, as the whole file read says
    raw_values: dict[tuple[int, int], Any] = {}
    odd: dict[int, Any] = {}
    offset = 0
    for part in parts:
        raw_values.update({(offset + p, f): v for (p, f), v in part.raw.items()})
        odd.update({offset + p: v for p, v in part.entries.items()})
        offset += len(part)
    return SavedJobs(job, np.concatenate([part.kind for part in parts]),
                     np.concatenate([part.value for part in parts]), raw_values, odd)  # fmt: skip


def _big(values: FloatArray) -> bool:
    with np.errstate(invalid="ignore"):
        return bool((np.abs(values) >= BIG).any())


def fair_nulls(jobs: SavedJobs | Mapping[str, Any], names: Names, count: int) -> BoolArray:
    """Per job of the instance, whether the saved ``jobs`` entry says ``fair_completion: null``."""
    out = np.zeros(count, dtype=bool)
    f = JOB_FIELDS.index("fair_completion")
    if isinstance(jobs, SavedJobs):
        out[jobs.job[jobs.kind[:, f] == NULL]] = True
        return out
    for name, entry in jobs.items():
        if isinstance(entry, Mapping) and entry.get("fair_completion", ...) is None and name in names.jobs:
            out[names.jobs[name]] = True
    return out
