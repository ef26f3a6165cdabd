"""A schedule's JSON view written as text in bulk: ``json.dumps(result_json(...), indent=...)``, the same text.

A million-job simulation's view is two million rows (``jobs`` and ``tasks``): built as dicts and written by
``json.dumps(..., indent=1)`` -- which with an indent runs Python's pure-Python encoder -- it took five times the
simulation and five gigabytes. Here the two tables are written from the schedule's columns, a block of rows at a
time: every number of a block formatted at once (``orjson`` writes a list of floats as Python's ``repr`` would,
outside ``[1e-4, 1e16)`` the exponent aside, so those few are written by ``repr``; without ``orjson``, ``repr``
of each distinct value), each row filled in by one ``join`` over the columns interleaved with the constant
texts between them; the rest of the view goes through ``json.dumps``. The pieces are yielded, so a file is
written without ever holding its whole text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii
from typing import Any

import numpy as np

from fairpack.models.locality import LEVEL_NAMES, NO_INPUT
from fairpack.models.result import Result, Schedule
from fairpack.models.saved_tables import JOB_FIELDS, job_and_stage_names
from fairpack.models.types import FloatArray, Instance, IntArray
from fairpack.models.view import (
    JOBS_MARK,
    TASKS_MARK,
    job_columns,
    result_json,
    result_json_text,
    task_levels,
)

try:  # a faster writer of numbers; without it each distinct number is written by repr
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; the fallback is tested by monkeypatching
    orjson = None  # type: ignore[assignment]

#: Rows of a table written per piece: a few tens of megabytes of text.
BLOCK_ROWS = 1 << 16


def result_json_chunks(instance: Instance, result: Result, indent: int | None = None) -> Iterator[str]:
    """The text of ``json.dumps(result_json(instance, result), indent=indent)``, in pieces.

    The ``jobs`` and ``tasks`` tables of a schedule are written here (module docstring); anything else, and a
    view whose tables cannot be placed exactly (two jobs of one name, a method's extra entry named ``jobs``), is
    ``json.dumps`` of the view as before."""
    if result.schedule is None:
        yield result_json_text(instance, result) if indent is None else json.dumps(result_json(instance, result),
                                                                                   indent=indent)  # fmt: skip
        return
    data = result_json(instance, result, schedule_tables=False)
    text = json.dumps(data, indent=indent)
    names, stage_names = job_and_stage_names(instance)
    placed = []
    for key, marker in (("jobs", JOBS_MARK), ("tasks", TASKS_MARK)):
        placeholder = json.dumps(marker)
        if data.get(key) == marker and text.count(placeholder) == 1:
            placed.append((text.index(placeholder), len(placeholder), key))
        elif data.get(key) == marker or text.count(placeholder):
            placed = []  # a marker where the view does not put it: write the view as it is
            break
    if not placed or len(set(names)) != len(names):
        yield json.dumps(result_json(instance, result), indent=indent)
        return
    writer = _Tables(instance, result.schedule, names, stage_names, indent)
    cursor = 0
    for position, size, key in sorted(placed):
        yield text[cursor:position]
        yield from writer.jobs() if key == "jobs" else writer.tasks()
        cursor = position + size
    yield text[cursor:]


def result_json_dumps(instance: Instance, result: Result, indent: int | None = None) -> str:
    """:func:`result_json_chunks` joined: ``json.dumps(result_json(instance, result), indent=indent)``."""
    return "".join(result_json_chunks(instance, result, indent))


class _Tables:
    """The texts of the ``jobs`` object and the ``tasks`` list of a top-level view at ``indent``."""

    def __init__(self, instance: Instance, schedule: Schedule, names: list[str], stage_names: list[tuple[str, ...]],
                 indent: int | None) -> None:  # fmt: skip
        self.instance, self.schedule, self.names, self.stage_names = instance, schedule, names, stage_names
        if indent is None:  # json.dumps's separators: ", " between items, nothing between lines
            self.row, self.field, self.close = ", ", ", ", ""
        else:  # items on lines of their own, indented by depth (the tables are at depth 1)
            self.row, self.field, self.close = ",\n" + " " * (2 * indent), ",\n" + " " * (3 * indent), \
                "\n" + " " * indent  # fmt: skip
        self.open_row = self.row[1:] if indent is not None else ""  # after "{" or "[": the first row's indent
        self.open_field = self.field[1:] if indent is not None else ""
        self.end_row = self.open_row  # a row's closing brace is on a line of its own, at the row's depth

    def _table(self, rows: int, opening: str, closing: str, block: Any) -> Iterator[str]:
        """``opening`` rows... ``closing``: ``block(a, b)`` gives rows ``a:b`` each followed by the row separator."""
        if not rows:
            yield opening + closing
            return
        yield opening + self.open_row
        for a in range(0, rows, BLOCK_ROWS):
            text = block(a, min(a + BLOCK_ROWS, rows))
            yield text if a + BLOCK_ROWS < rows else text[: -len(self.row)]
        yield self.close + closing

    def _rows(self, columns: list[list[str]], separators: list[str]) -> str:
        """Rows ``s0 c0 s1 c1 ... ck sk+1``: the columns interleaved with the constant texts around them."""
        count, width = len(columns[0]), 2 * len(columns) + 1
        pieces: list[str] = [""] * (width * count)
        for position, separator in enumerate(separators):
            pieces[2 * position :: width] = [separator] * count
        for position, column in enumerate(columns):
            pieces[2 * position + 1 :: width] = column
        return "".join(pieces)

    def jobs(self) -> Iterator[str]:
        """``{"name": {"arrival": ..., ..., "utility": ...}, ...}``."""
        columns = job_columns(self.instance, self.schedule)
        stacked = np.stack([columns[key] for key in JOB_FIELDS], axis=1)  # a block's numbers: one slice
        keys = [encode_basestring_ascii(key) + ": " for key in JOB_FIELDS]
        separators = ["", ": {" + self.open_field + keys[0], *(self.field + key for key in keys[1:]),
                      self.end_row + "}" + self.row]  # fmt: skip

        def block(a: int, b: int) -> str:
            numbers = number_texts(stacked[a:b].reshape(-1), null=True)
            fields = [numbers[f :: len(JOB_FIELDS)] for f in range(len(JOB_FIELDS))]
            return self._rows([[encode_basestring_ascii(name) for name in self.names[a:b]], *fields], separators)

        yield from self._table(len(self.names), "{", "}", block)

    def tasks(self) -> Iterator[str]:
        """``[{"job": ..., "stage": ..., "index": ..., "start": ..., "end": ...[, "server", "machine"][, "local"]
        [, "option"]}, ...]``: the optional fields are columns holding their key too (or nothing)."""
        schedule, instance = self.schedule, self.instance
        job_texts = _name_texts(self.names, schedule.job)
        stage_texts = _stage_texts(self.stage_names, schedule.job, schedule.stage)
        placed = schedule.server is not None and schedule.machine is not None
        levels = task_levels(instance, schedule) if placed and instance.data is not None else None
        keys = [self.field + encode_basestring_ascii(key) + ": " for key in ("stage", "index", "start", "end",
                                                                             "server", "machine")]  # fmt: skip
        first = "{" + self.open_field + encode_basestring_ascii("job") + ": "
        separators = [first, *keys[:4], *([keys[4], keys[5]] if placed else []), "", "",
                      self.end_row + "}" + self.row]  # fmt: skip
        level_texts = [self.field + '"local": ' + encode_basestring_ascii(name) for name in LEVEL_NAMES]
        server_names = np.array([encode_basestring_ascii(server.name) for server in instance.servers], dtype=object)

        def block(a: int, b: int) -> str:
            times = number_texts(np.concatenate([schedule.start[a:b], schedule.end[a:b]]), null=True)
            columns = [job_texts(a, b), stage_texts(a, b), int_texts(schedule.index[a:b]), times[: b - a],
                       times[b - a :]]  # fmt: skip
            if placed:
                assert schedule.server is not None and schedule.machine is not None
                servers = _indexed(server_names, schedule.server[a:b])
                unplaced = np.flatnonzero(schedule.server[a:b] == -1)  # null, as the view writes it
                for i in unplaced.tolist():
                    servers[i] = "null"
                columns += [servers, int_texts(schedule.machine[a:b])]
            columns.append(_optional(levels[a:b], level_texts, NO_INPUT) if levels is not None else [""] * (b - a))
            option = schedule.option[a:b] if schedule.option is not None else None
            columns.append(_options(option, self.field) if option is not None else [""] * (b - a))
            return self._rows(columns, separators)

        yield from self._table(len(schedule), "[", "]", block)


def number_texts(values: FloatArray, null: bool = False) -> list[str]:
    """``json.dumps`` of every float in ``values``; non-finite ones ``null`` if ``null`` (the view's
    ``_finite``), else ``NaN``/``Infinity``/``-Infinity``."""
    values = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    finite = np.isfinite(values)
    if not values.size:
        return []
    if orjson is None:
        bits, inverse = np.unique(values.view(np.int64), return_inverse=True)
        distinct = bits.view(np.float64)
        texts = np.array(list(map(float.__repr__, distinct.tolist())), dtype=object)[inverse.reshape(-1)]
    else:
        # orjson writes the shortest round-trip digits, as repr; its exponents differ (1e-05 is "1e-5"), and repr
        # uses one outside [1e-4, 1e16): those few are written again. Non-finite values it writes as null.
        texts = np.array(orjson.dumps(values.tolist())[1:-1].decode().split(","), dtype=object)
        magnitude = np.abs(values)
        outside = np.flatnonzero(finite & ((magnitude < 1e-4) | (magnitude >= 1e16)) & (magnitude != 0))
        texts[outside] = list(map(float.__repr__, values[outside].tolist()))
    if not finite.all():
        bad = ~finite
        texts[bad] = "null" if null else [json.dumps(v) for v in values[bad].tolist()]
    return list(texts.tolist())


def int_texts(values: IntArray) -> list[str]:
    """Every whole number as JSON text."""
    if orjson is None or not len(values):
        return list(map(str, np.asarray(values).tolist()))
    return orjson.dumps(np.asarray(values).tolist())[1:-1].decode().split(",")


def _indexed(texts: Any, index: IntArray) -> list[str]:
    """``texts[i]`` (an object array) for every ``i`` of ``index`` in range, else ``i`` itself as a number (the
    view names what it can and writes the number it cannot)."""
    index = np.asarray(index, dtype=np.int64)
    if not len(texts):
        return int_texts(index)
    inside = (index >= 0) & (index < len(texts))
    out = texts[np.where(inside, index, 0)]
    if not inside.all():
        out[~inside] = int_texts(index[~inside])
    return list(out.tolist())


def _name_texts(names: list[str], job: IntArray) -> Any:
    """Rows ``a:b``'s ``job`` texts: the job's name, or its number when out of range."""
    texts = np.array([encode_basestring_ascii(name) for name in names], dtype=object)
    return lambda a, b: _indexed(texts, job[a:b])


def _stage_texts(stage_names: list[tuple[str, ...]], job: IntArray, stage: IntArray) -> Any:
    """Rows ``a:b``'s ``stage`` texts: the stage's name, or its number where the job or stage is out of range."""
    counts = np.array([len(names) for names in stage_names], dtype=np.int64)
    if stage_names and all(names is stage_names[0] for names in stage_names):  # a trace's: one tuple for all
        first = np.zeros(len(stage_names) + 1, dtype=np.int64)
        flat = np.array([encode_basestring_ascii(name) for name in stage_names[0]], dtype=object)
    else:
        first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        flat = np.array([encode_basestring_ascii(name) for names in stage_names for name in names], dtype=object)

    def of(a: int, b: int) -> list[str]:
        j, s = job[a:b], stage[a:b]
        real = (j >= 0) & (j < counts.size)
        safe = np.where(real, j, 0)
        real &= (s >= 0) & (s < (counts[safe] if counts.size else 0))
        if not flat.size:
            return int_texts(s)
        out = flat[np.where(real, first[safe] + s, 0)]
        if not real.all():
            out[~real] = int_texts(s[~real])
        return list(out.tolist())

    return of


def _optional(values: IntArray, texts: list[str], absent: int) -> list[str]:
    """``texts[v]`` for every value, ``""`` where it is ``absent``."""
    out = np.full(values.size, "", dtype=object)
    present = values != absent
    out[present] = np.array(texts, dtype=object)[values[present]]
    return list(out.tolist())


def _options(option: IntArray, separator: str) -> list[str]:
    """``, "option": n`` where a task ran a placement option (``n >= 0``), ``""`` elsewhere."""
    out = np.full(option.size, "", dtype=object)
    chosen = option >= 0
    out[chosen] = [separator + '"option": ' + text for text in int_texts(option[chosen])]
    return list(out.tolist())
