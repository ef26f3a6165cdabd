"""Read PSPLIB single-mode RCPSP files (``.sm``) into an ``Instance`` with one DAG job.

Mapping
-------
* The project becomes one job named after the file stem, weight 1, released at the project's
  ``rel.date`` (0 in every published PSPLIB file; 0 when the PROJECT INFORMATION block is absent).
* Every activity becomes one stage with ``tasks=1``, named by its PSPLIB activity number (``"1"``,
  ``"2"``, ...), in activity-number order, so stage index = activity number - 1.
* The zero-duration dummies (supersource ``1`` and supersink ``N``) are **kept**: they have zero
  duration and zero demand, so they change neither the makespan nor any resource profile, and keeping
  them keeps stage names, indices and activity numbers aligned for every file.
* ``after`` holds an activity's predecessors (the file lists successors; they are inverted here).
* Renewable resources ``R 1 .. R k`` become resources ``R1 .. Rk`` of one server named ``pool`` with
  the file's availabilities. Nonrenewable (``N``) and doubly constrained (``D``) resources are accepted
  only when no activity requests them; otherwise :class:`InstanceError` is raised.

Every error is an :class:`InstanceError` naming the file, the section and the line number. Durations,
requests, capacities and the release date are at most ``MAX_VALUE`` (1e15, the loader's quantity limit)
and files at most ``models.io.Limits.max_bytes``; whatever the bytes, no other exception escapes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fairpack.models.types import Instance, InstanceError, Job, ServerClass, Stage

MAX_VALUE = 10**15  # the same bound as models.io.Limits.max_quantity
MAX_BYTES = 64 * 2**20  # the same bound as models.io.Limits.max_bytes
_RULE = re.compile(r"^\s*\*{5,}\s*$")
_RESOURCE_NAME = re.compile(r"([RND])\s*(\d+)")


@dataclass(frozen=True)
class _Line:
    number: int  # 1-based line number in the file
    text: str


class _Reader:
    """The file split into named sections (text between ``****`` rules), with line numbers kept."""

    def __init__(self, path: Path, text: str) -> None:
        self.source = str(path)
        self.lines = [_Line(k + 1, line.rstrip()) for k, line in enumerate(text.splitlines())]

    def error(self, reason: str, section: str, line: _Line | None = None) -> InstanceError:
        where = section if line is None else f"{section} line {line.number}"
        return InstanceError(reason, where, self.source)

    def section(self, header: str, required: bool = True) -> list[_Line]:
        """Non-empty lines after the line starting with ``header`` up to the next rule (or the end)."""
        for position, line in enumerate(self.lines):
            if line.text.strip().upper().startswith(header):
                body = []
                for following in self.lines[position + 1 :]:
                    if _RULE.match(following.text):
                        break
                    if following.text.strip():
                        body.append(following)
                return body
        if required:
            raise self.error(f"section {header!r} not found", header)
        return []

    def find(self, prefix: str) -> _Line | None:
        for line in self.lines:
            if line.text.strip().lower().startswith(prefix):
                return line
        return None


def _integers(reader: _Reader, line: _Line, section: str) -> list[int]:
    try:
        values = [int(token) for token in line.text.split()]
    except ValueError:  # not a number, or more digits than int() reads
        raise reader.error(f"expected whole numbers, got {_excerpt(line.text)}", section, line) from None
    if any(abs(value) > MAX_VALUE for value in values):
        raise reader.error(f"a number is above the limit of {MAX_VALUE:.0e}", section, line)
    return values


def _excerpt(text: str) -> str:
    text = text.strip()
    return repr(text) if len(text) <= 80 else repr(text[:80] + "...")


def _resource_header(reader: _Reader, line: _Line, section: str) -> list[tuple[str, int]]:
    """Resource columns of a header such as ``R 1  R 2  N 1`` as (kind, number) pairs."""
    found = [(kind, number) for kind, number in _RESOURCE_NAME.findall(line.text)]
    if not found:
        raise reader.error(f"no resource names (R 1, N 1, ...) in {_excerpt(line.text)}", section, line)
    if any(len(number) > 9 for _, number in found):
        raise reader.error(f"resource number too large in {_excerpt(line.text)}", section, line)
    return [(kind, int(number)) for kind, number in found]


def _declared_jobs(reader: _Reader) -> int | None:
    line = reader.find("jobs (incl. supersource/sink")
    if line is None:
        return None
    match = re.search(r":\s*(\d{1,12})\b", line.text)
    if match is None:
        raise reader.error(f"cannot read the job count from {_excerpt(line.text)}", "header", line)
    return int(match.group(1))


def _release(reader: _Reader) -> float:
    body = reader.section("PROJECT INFORMATION", required=False)
    if len(body) < 2:
        return 0.0
    header = body[0].text.lower().split()
    values = body[1].text.split()
    key = "rel.date"
    if key not in header or len(values) != len(header):
        return 0.0
    token = values[header.index(key)]
    try:
        release = float(token)
    except ValueError:
        release = math.nan
    if not 0 <= release <= MAX_VALUE:  # also refuses nan and inf, which float() reads
        raise reader.error(f"bad release date {_excerpt(token)}", "PROJECT INFORMATION", body[1])
    return release


def _successors(reader: _Reader) -> dict[int, tuple[list[int], _Line]]:
    section = "PRECEDENCE RELATIONS"
    body = reader.section(section)
    if not body or not body[0].text.strip().lower().startswith("jobnr"):
        raise reader.error("expected a 'jobnr. #modes #successors successors' header", section)
    result: dict[int, tuple[list[int], _Line]] = {}
    for line in body[1:]:
        values = _integers(reader, line, section)
        if len(values) < 3:
            raise reader.error("expected 'jobnr #modes #successors successors...'", section, line)
        job, modes, count, successors = values[0], values[1], values[2], values[3:]
        if modes != 1:
            raise reader.error(
                f"activity {job} has {modes} modes; only single-mode (.sm) files are read", section, line
            )
        if len(successors) != count:
            raise reader.error(f"activity {job} declares {count} successors but lists {len(successors)}", section, line)
        if job in result:
            raise reader.error(f"activity {job} listed twice", section, line)
        result[job] = (successors, line)
    return result


def _requests(reader: _Reader) -> tuple[list[tuple[str, int]], dict[int, tuple[int, list[int], _Line]]]:
    section = "REQUESTS/DURATIONS"
    body = reader.section(section)
    if not body or "duration" not in body[0].text.lower():
        raise reader.error("expected a 'jobnr. mode duration R 1 ...' header", section)
    header = body[0]
    columns = _resource_header(reader, header, section)
    rows = [line for line in body[1:] if not set(line.text.strip()) <= {"-"}]
    result: dict[int, tuple[int, list[int], _Line]] = {}
    for line in rows:
        values = _integers(reader, line, section)
        if len(values) != 3 + len(columns):
            raise reader.error(
                f"expected jobnr, mode, duration and {len(columns)} requests, got {len(values)} numbers", section, line
            )
        job, mode, duration, requests = values[0], values[1], values[2], values[3:]
        if mode != 1:
            raise reader.error(f"activity {job} has mode {mode}; only single-mode files are read", section, line)
        if duration < 0 or any(r < 0 for r in requests):
            raise reader.error(f"activity {job} has a negative duration or request", section, line)
        if job in result:
            raise reader.error(f"activity {job} listed twice", section, line)
        result[job] = (duration, requests, line)
    return columns, result


def _availabilities(reader: _Reader) -> tuple[list[tuple[str, int]], list[int], _Line]:
    section = "RESOURCEAVAILABILITIES"
    body = reader.section(section)
    if len(body) < 2:
        raise reader.error("expected a line of resource names and a line of capacities", section)
    names = _resource_header(reader, body[0], section)
    capacities = _integers(reader, body[1], section)
    if len(capacities) != len(names):
        raise reader.error(f"{len(names)} resources but {len(capacities)} capacities", section, body[1])
    if any(c < 0 for c in capacities):
        raise reader.error("negative capacity", section, body[1])
    return names, capacities, body[1]


def _renewable(
    reader: _Reader,
    columns: list[tuple[str, int]],
    requests: dict[int, tuple[int, list[int], _Line]],
    activities: list[int],
) -> list[int]:
    """The renewable resource columns; a nonzero request of any other kind is refused."""
    for k, (kind, number) in enumerate(columns):
        if kind == "R":
            continue
        used = [job for job in activities if requests[job][1][k] != 0]
        if used:
            line = requests[used[0]][2]
            raise reader.error(
                f"activity {used[0]} requests {kind} {number}: only renewable resources are supported "
                "(nonrenewable and doubly constrained requests must be zero)",
                "REQUESTS/DURATIONS",
                line,
            )
    return [k for k, (kind, _) in enumerate(columns) if kind == "R"]


def _predecessors(
    reader: _Reader, successors: dict[int, tuple[list[int], _Line]], activities: list[int]
) -> dict[int, set[int]]:
    """Each activity's predecessors (the file lists successors); unknown and self successors are refused."""
    predecessors: dict[int, set[int]] = {job: set() for job in activities}  # sets: a repeated edge is linear
    for job in activities:
        listed, line = successors[job]
        for successor in listed:
            if successor not in predecessors:
                raise reader.error(f"activity {job} has unknown successor {successor}", "PRECEDENCE RELATIONS", line)
            if successor == job:
                raise reader.error(f"activity {job} succeeds itself", "PRECEDENCE RELATIONS", line)
            predecessors[successor].add(job)
    return predecessors


def parse_psplib(text: str, path: str | Path = "instance.sm") -> Instance:
    """Parse the text of a PSPLIB single-mode file; ``path`` names the file in errors and the job.

    Parameters
    ----------
    text : str
        The file contents.
    path : str or Path
        Used for the job and instance name (its stem) and in error messages.

    Returns
    -------
    Instance
        One pooled server, one job with one single-task stage per activity (see the module docstring).

    Raises
    ------
    InstanceError
        On any malformed section, with the file, the section and the line at fault.
    """
    path = Path(path)
    reader = _Reader(path, text)
    successors = _successors(reader)
    columns, requests = _requests(reader)
    names, capacities, capacity_line = _availabilities(reader)

    activities = sorted(requests)
    expected = list(range(1, len(activities) + 1))
    if activities != expected:
        raise reader.error(f"activities must be numbered 1..{len(activities)}, got {activities}", "REQUESTS/DURATIONS")
    if sorted(successors) != expected:
        missing = sorted(set(expected) ^ set(successors))
        raise reader.error(f"activities {missing} are not in both sections", "PRECEDENCE RELATIONS")
    declared = _declared_jobs(reader)
    if declared is not None and declared != len(activities):
        raise reader.error(f"header declares {declared} jobs but {len(activities)} are listed", "header")

    renewable = _renewable(reader, columns, requests, activities)
    capacity_of = {column: capacity for column, capacity in zip(names, capacities, strict=True)}
    resource_columns = [columns[k] for k in renewable]
    missing_capacity = [f"{kind} {number}" for kind, number in resource_columns if (kind, number) not in capacity_of]
    if missing_capacity:
        raise reader.error(f"no availability for {missing_capacity}", "RESOURCEAVAILABILITIES", capacity_line)
    if not resource_columns:
        raise reader.error("no renewable resources", "REQUESTS/DURATIONS")

    predecessors = _predecessors(reader, successors, activities)
    resources = tuple(f"{kind}{number}" for kind, number in resource_columns)
    capacity = np.array([capacity_of[column] for column in resource_columns], dtype=np.float64)
    stages = []
    for job in activities:
        duration, request, _ = requests[job]
        demand = np.array([request[k] for k in renewable], dtype=np.float64)
        after = tuple(sorted(p - 1 for p in predecessors[job]))
        stages.append(Stage(str(job), 1, float(duration), demand, after))
    release = _release(reader)
    try:
        project = Job(path.stem, tuple(stages), 1.0, release)
    except InstanceError as error:  # e.g. a precedence cycle
        raise error.located(reader.source, "PRECEDENCE RELATIONS") from None
    try:
        server = ServerClass("pool", capacity, 1)
        return Instance(resources, (server,), jobs=(project,), name=path.stem)
    except InstanceError as error:  # e.g. a resource listed twice in the header
        raise error.located(reader.source, "RESOURCEAVAILABILITIES") from None


def load_psplib(path: str | Path, max_bytes: int = MAX_BYTES) -> Instance:
    """Load a PSPLIB single-mode ``.sm`` file (see the module docstring for the mapping).

    Raises
    ------
    InstanceError
        When the file cannot be read, is larger than ``max_bytes`` or a section is malformed; the message
        names the file, the section and the line.
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise InstanceError(f"cannot read file: {error}", source=str(path)) from None
    if len(data) > max_bytes:
        raise InstanceError(f"the file is larger than the limit of {max_bytes:,} bytes", source=str(path))
    # PSPLIB files are ASCII; the solution lists are ISO-8859-1, so never fail on a stray byte.
    return parse_psplib(data.decode("latin-1"), path)
