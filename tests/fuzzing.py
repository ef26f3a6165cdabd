"""Mutated instance files for fuzzing the loader (used by tests/test_fuzz.py and benchmarks/fuzz_campaign.py).

Every random decision goes through a ``choose(n) -> int in [0, n)`` callable, so the same engine runs under
hypothesis (which then shrinks the choices) and under a seeded ``random.Random`` (the long campaign).

Seeds are the bundled ``instances/*.yaml`` and PSPLIB ``.sm`` texts (the data folder's, else a small one
written here). A mutation is a few steps, structural (on the parsed document: wrong types, nasty numbers,
deleted, repeated or unknown keys, broken references and cycles, deep nesting, alias bombs) or textual (on
the bytes: truncation, binary garbage, duplicated lines, YAML 1.1 spellings, tags, a second document,
repeated lines for size); the result is written as YAML or JSON.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

Choose = Callable[[int], int]
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

ROOT = Path(__file__).resolve().parents[1]

# A PSPLIB single-mode file in the published layout: 1 -> {2, 3} -> 4, activities 1 and 4 the dummies.
SMALL_SM = """\
************************************************************************
file with basedata            : small.bas
initial value random generator: 1
************************************************************************
projects                      :  1
jobs (incl. supersource/sink ):  5
horizon                       :  20
RESOURCES
  - renewable                 :  2   R
  - nonrenewable              :  0   N
  - doubly constrained        :  0   D
************************************************************************
PROJECT INFORMATION:
pronr.  #jobs rel.date duedate tardcost  MPM-Time
    1      3      0       12        4       12
************************************************************************
PRECEDENCE RELATIONS:
jobnr.    #modes  #successors   successors
   1        1          2           2   3
   2        1          1           4
   3        1          1           5
   4        1          1           5
   5        1          0
************************************************************************
REQUESTS/DURATIONS:
jobnr. mode duration  R 1  R 2
------------------------------------------------------------------------
  1      1     0       0    0
  2      1     3       2    1
  3      1     5       1    3
  4      1     2       4    0
  5      1     0       0    0
************************************************************************
RESOURCEAVAILABILITIES:
  R 1  R 2
    4    3
************************************************************************
"""


@dataclass(frozen=True)
class Seed:
    """A file to mutate: its name, suffix (``.yaml`` or ``.sm``) and text."""

    name: str
    suffix: str
    text: str


def seeds(data_dir: Path | None = None, psplib_files: int = 3) -> list[Seed]:
    """The bundled instances, then PSPLIB texts: the first ``psplib_files`` of ``data_dir/psplib/j30`` when
    that folder exists, else ``SMALL_SM``."""
    found = [Seed(path.name, ".yaml", path.read_text()) for path in sorted((ROOT / "instances").glob("*.yaml"))]
    with_fields = [_with_optional_fields(seed) for seed in found if "jobs" in yaml.load(seed.text, Loader=_LOADER)]
    found += [seed for seed in with_fields if seed is not None]
    folder = None if data_dir is None else data_dir / "psplib" / "j30"
    if folder is not None and folder.is_dir():
        files = sorted(folder.glob("*.sm"))[:psplib_files]
        found += [Seed(path.name, ".sm", path.read_text(encoding="latin-1")) for path in files]
    else:
        found.append(Seed("small.sm", ".sm", SMALL_SM))
    return found


def _with_optional_fields(seed: Seed) -> Seed | None:
    """``seed`` with the optional fields no bundled instance has: each job's tenant, deadline and utility, data
    placement (server labels, a second rack of two machines, blocks on machines, one input block per
    task, locality factors) and placement options on the first stage."""
    data = yaml.load(seed.text, Loader=_LOADER)
    if any("options" in stage for job in data["jobs"] for stage in job["stages"]):
        return None  # YAML 1.1 (this loader) reads a selector's key `on` as true: such seeds are fuzzed as they are
    first = data["servers"][0]
    first["labels"] = {**first.get("labels", {}), "rack": "r1"}
    machine = first["name"] if first.get("count", 1) == 1 else f"{first['name']}/0"
    data["servers"].append({"name": "rack2", "capacity": dict(first["capacity"]), "count": 2, "labels": {"rack": "r2"}})
    data["blocks"] = {"blk0": [machine, "rack2/1"], "blk1": ["rack2/0"]}
    data["locality"] = {"rack": 1.5, "remote": 3}
    for k, job in enumerate(data["jobs"]):
        job["tenant"], job["deadline"] = f"queue-{k % 2}", 10.0 * (k + 1)
        job["utility"] = [[10.0 * (k + 1), 5], [20.0 * (k + 1), 0]]
        for stage in job["stages"]:
            stage["input"] = [f"blk{t % 2}" for t in range(stage.get("tasks", 1))]
    # Placement options on the first stage (unless it has some): the second rack preferred, anywhere twice as slow
    # on half the first resource (an option's own demand; the other resources the stage's).
    first_stage = data["jobs"][0]["stages"][0]
    if "options" not in first_stage:
        duration = first_stage.pop("duration")
        resource, amount = next(iter(first_stage["demand"].items()))
        first_stage["options"] = [{"on": {"rack": "r2"}, "duration": duration},
                                  {"duration": 2 * duration, "demand": {resource: amount / 2}}]  # fmt: skip
    return Seed(seed.name.replace(".yaml", "+fields.yaml"), ".yaml", yaml.dump(data, Dumper=_DUMPER, sort_keys=False))


# --------------------------------------------------------------------------------------------- values

DEEP = "__FUZZ_DEEP__"  # placeholders replaced in the emitted text (the emitters cannot nest that deep)
BOMB = "__FUZZ_BOMB__"

NASTY: list[Any] = [
    None, True, False, "yes", "no", "on", "off", "1:30", "0x1f", "0o17", "010", "1_000", "2024-01-01", "",
    " ", "\x00", "a\x07b", "\ud800", "\u202e", "a" * 5000, math.nan, math.inf, -math.inf, -1, 0, -0.0, 1.5,
    1e308, -1e308, 1e-300, 1e300, 2**63, 2**64, 10**400, 10**15 + 1, 1e9, [], {}, [1, 2], {"x": 1}, {"cpu": 1},
    DEEP, BOMB,
]  # fmt: skip
YAML11_NUMBERS = ["1:30", "190:20:30", "0x1F", "0o17", "017", "1_000", "0b101", "+.inf", ".NaN", "1e400", "-0"]
YAML11_WORDS = ["yes", "no", "on", "off", "y", "n", "~", "null", "true", "NO", "Off"]
TAGS = ["!!python/object/apply:os.system ['true'] ", "!!binary ", "!!set ", "!custom ", "!!timestamp ", "!!int "]
GARBAGE = [b"\x00", b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\t", b"\r", b"\x1b[2J", "\u2028".encode(),
           b"[", b"{", b"]", b":", b"&a", b"*a", b"!", b"%", b"'", b'"', b"- ", b"? ", b"|", b"\\"]  # fmt: skip


def _pick(choose: Choose, items: list[Any]) -> Any:
    return items[choose(len(items))]


MAX_GROWTH = 2_000_000  # characters a size-growing step may add (keeps the fuzzer itself fast)


def _nodes(data: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) slot in the document, depth-first."""
    slots: list[tuple[Any, Any]] = []
    stack = [data]
    while stack:
        node = stack.pop()
        items = (
            list(node.items()) if isinstance(node, dict) else list(enumerate(node)) if isinstance(node, list) else []
        )
        for key, value in items:
            slots.append((node, key))
            stack.append(value)
    return slots


def _names(data: Any) -> list[str]:
    return [c[k] for c, k in _nodes(data) if k == "name" and isinstance(c[k], str)]


# ------------------------------------------------------------------------------------ structural steps


def _replace(data: Any, choose: Choose) -> None:
    slots = _nodes(data)
    if slots:
        container, key = _pick(choose, slots)
        container[key] = copy.deepcopy(_pick(choose, NASTY))


def _scale_number(data: Any, choose: Choose) -> None:
    numbers = [(c, k) for c, k in _nodes(data) if isinstance(c[k], int | float) and not isinstance(c[k], bool)]
    if numbers:
        container, key = _pick(choose, numbers)
        factor = _pick(choose, [1e-300, 1e-9, -1, 0, 1e9, 1e300, 10**20, math.nan])
        try:
            value = container[key] * factor
        except OverflowError:  # an integer beyond float range (10**400) times a float: keep the integer's scale
            value = container[key] * (10**20 if factor > 1 else -1 if factor < 0 else 0)
        container[key] = int(value) if isinstance(value, float) and value.is_integer() and abs(value) < 1e18 else value


# Values the loader accepts, at or near its limits (or awkward for solvers): valid inputs that stress them.
EXTREMES: list[Any] = [10_000_000, 9_999_999, 1e15, 1e-6, 1e6, 1e9, 1_000_000, 1.000000001, 1e-9, 0.30000000000000004,
                       123456.789, 0, 2e-9]  # fmt: skip


def _extreme(data: Any, choose: Choose) -> None:
    numbers = [(c, k) for c, k in _nodes(data) if isinstance(c[k], int | float) and not isinstance(c[k], bool)]
    if numbers:
        container, key = _pick(choose, numbers)
        container[key] = _pick(choose, EXTREMES)


def _delete(data: Any, choose: Choose) -> None:
    slots = _nodes(data)
    if slots:
        container, key = _pick(choose, slots)
        del container[key]


def _repeat_item(data: Any, choose: Choose) -> None:
    lists = [(c, k) for c, k in _nodes(data) if isinstance(c[k], list) and c[k]]
    if lists:
        container, key = _pick(choose, lists)
        items = container[key]
        position = choose(len(items))
        times = min(_pick(choose, [1, 2, 50, 3000]), MAX_GROWTH // len(repr(items[position])))
        items[position + 1 : position + 1] = [copy.deepcopy(items[position]) for _ in range(times)]


def _unknown_key(data: Any, choose: Choose) -> None:
    mappings = [data] + [c[k] for c, k in _nodes(data) if isinstance(c[k], dict)]
    keys = ["colour", "tasks", "parent", "children", "count", "<<", "weight", "tenant", "deadline", "labels", "input",
            "blocks", "locality", "options", "utility", "on", "same", "demand"]  # fmt: skip
    _pick(choose, mappings)[_pick(choose, keys)] = 2


def _wrong_type(data: Any, choose: Choose) -> None:
    slots = _nodes(data)
    if not slots:
        return
    container, key = _pick(choose, slots)
    value = container[key]
    if isinstance(value, dict):
        container[key] = list(value.values())
    elif isinstance(value, list):
        container[key] = dict(enumerate(value)) if value else {}
        container[key] = {str(k): v for k, v in container[key].items()}
    else:
        container[key] = [value]


def _break_reference(data: Any, choose: Choose) -> None:
    """An unknown or cyclic ``parent`` / ``after``, or a name reused."""
    names = _names(data)
    references = [(c, k) for c, k in _nodes(data) if k in ("parent", "after")]
    entries = [c[k] for c, k in _nodes(data) if isinstance(c[k], dict) and "name" in c[k]]
    kind = choose(4)
    if kind == 0 and references:
        container, key = _pick(choose, references)
        container[key] = "nobody" if key == "parent" else ["nobody"]
    elif kind == 1 and entries and names:  # a parent link (or stage dependency) to a random name: cycles
        entry = _pick(choose, entries)
        target = _pick(choose, names)
        if "demand" in entry and "duration" in entry:
            entry["after"] = [*entry.get("after", []), target]
        else:
            entry["parent"] = target
    elif kind == 2 and entries and names:
        _pick(choose, entries)["name"] = _pick(choose, names)
    elif entries:  # a stage after itself, or a node its own parent
        entry = _pick(choose, entries)
        if "duration" in entry:
            entry["after"] = [entry["name"]]
        else:
            entry["parent"] = entry["name"]


def _deepen(data: Any, choose: Choose) -> None:
    slots = _nodes(data)
    if not slots:
        return
    container, key = _pick(choose, slots)
    depth = _pick(choose, [5, 60, 200])
    value = container[key]
    for _ in range(depth):
        value = [value] if choose(2) else {"children": [value]}
    container[key] = value


STRUCTURAL: list[Callable[[Any, Choose], None]] = [
    _replace, _replace, _scale_number, _extreme, _extreme, _delete, _repeat_item, _unknown_key, _wrong_type,
    _break_reference, _break_reference, _deepen,
]  # fmt: skip


# -------------------------------------------------------------------------------------------- emitting


def _deep_text(choose: Choose, json_form: bool) -> str:
    depth = _pick(choose, [50, 101, 1000, 20000])
    if json_form or choose(2):
        return "[" * depth + "1" + "]" * depth
    return "{a: " * depth + "1" + "}" * depth


def _bomb_text(choose: Choose) -> str:
    """A billion-laughs flow node: level k holds ``width`` aliases of level k - 1."""
    levels, width = _pick(choose, [(2, 3), (5, 10), (9, 9), (30, 2)])
    parts = ['&l0 ["lol", "lol"]'] + [f"&l{k} [" + ", ".join([f"*l{k - 1}"] * width) + "]" for k in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


def emit(data: Any, choose: Choose) -> tuple[str, str]:
    """The document as YAML (block or flow style) or JSON text, placeholders expanded; returns (text, suffix)."""
    json_form = choose(4) == 0
    if json_form:
        text = json.dumps(data, allow_nan=True)
    else:
        try:
            style = _pick(choose, [False, None, True])
            text = yaml.dump(data, Dumper=_DUMPER, sort_keys=False, default_flow_style=style, allow_unicode=True)
        except (yaml.YAMLError, RecursionError, UnicodeEncodeError):
            text = json.dumps(data, allow_nan=True)  # JSON is YAML too (nearly)
    for marker, make in ((DEEP, lambda: _deep_text(choose, json_form)), (BOMB, lambda: _bomb_text(choose))):
        for quoted in (f'"{marker}"', f"'{marker}'", marker):
            while quoted in text:
                text = text.replace(quoted, make() if marker == DEEP or not json_form else "0", 1)
    return text, ".json" if json_form else ".yaml"


# ----------------------------------------------------------------------------------------- text steps

_NUMBER = re.compile(rb"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
_WORD = re.compile(rb"(?<=: )[A-Za-z][\w-]*")


def _position(data: bytes, choose: Choose) -> int:
    return choose(len(data) + 1)


def _truncate(data: bytes, choose: Choose) -> bytes:
    return data[: _position(data, choose)]


def _garbage(data: bytes, choose: Choose) -> bytes:
    at = _position(data, choose)
    return data[:at] + b"".join(_pick(choose, GARBAGE) for _ in range(1 + choose(8))) + data[at:]


def _flip(data: bytes, choose: Choose) -> bytes:
    if not data:
        return bytes([choose(256)])
    at = choose(len(data))
    return data[:at] + bytes([choose(256)]) + data[at + 1 :]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def _duplicate_line(data: bytes, choose: Choose) -> bytes:
    lines = _lines(data)
    at = choose(len(lines))
    times = min(_pick(choose, [1, 1, 2, 20000]), MAX_GROWTH // max(1, len(lines[at])))
    return b"".join(lines[: at + 1] + [lines[at]] * times + lines[at + 1 :])


def _delete_line(data: bytes, choose: Choose) -> bytes:
    lines = _lines(data)
    del lines[choose(len(lines))]
    return b"".join(lines)


def _swap_lines(data: bytes, choose: Choose) -> bytes:
    lines = _lines(data)
    a, b = choose(len(lines)), choose(len(lines))
    lines[a], lines[b] = lines[b], lines[a]
    return b"".join(lines)


def _indent(data: bytes, choose: Choose) -> bytes:
    lines = _lines(data)
    at = choose(len(lines))
    lines[at] = lines[at].lstrip(b" ") if choose(2) else b"   " + lines[at]
    return b"".join(lines)


def _respell_number(data: bytes, choose: Choose) -> bytes:
    matches = list(_NUMBER.finditer(data))
    if not matches:
        return data
    match = _pick(choose, matches)
    spellings = [*YAML11_NUMBERS, "9" * 5000, "1e-300", "1e308", "-5", "nan", "18446744073709551616", "0.0"]
    return data[: match.start()] + _pick(choose, spellings).encode() + data[match.end() :]


def _respell_word(data: bytes, choose: Choose) -> bytes:
    matches = list(_WORD.finditer(data))
    if not matches:
        return data
    match = _pick(choose, matches)
    return data[: match.start()] + _pick(choose, YAML11_WORDS).encode() + data[match.end() :]


def _tag(data: bytes, choose: Choose) -> bytes:
    spots = [m.end() for m in re.finditer(rb": ", data)]
    if not spots:
        return data
    at = _pick(choose, spots)
    return data[:at] + _pick(choose, TAGS).encode() + data[at:]


def _documents(data: bytes, choose: Choose) -> bytes:
    return _pick(choose, [data + b"\n---\n" + data, b"%YAML 1.1\n---\n" + data, b"--- !!map\n" + data,
                          data + b"\n...\n", b"\xef\xbb\xbf" + data])  # fmt: skip


def _encoding(data: bytes, choose: Choose) -> bytes:
    text = data.decode("utf-8", "replace")
    return _pick(choose, [text.encode("utf-16"), text.encode("latin-1", "replace"), data.replace(b"\n", b"\r\n"),
                          data.replace(b"\n", b"\r")])  # fmt: skip


def _noise(data: bytes, choose: Choose) -> bytes:
    return bytes(choose(256) for _ in range(_pick(choose, [0, 1, 16, 600])))


TEXTUAL: list[Callable[[bytes, Choose], bytes]] = [
    _truncate, _truncate, _garbage, _flip, _duplicate_line, _duplicate_line, _delete_line, _swap_lines, _indent,
    _respell_number, _respell_number, _respell_word, _tag, _documents, _encoding, _noise,
]  # fmt: skip

# PSPLIB: numbers, lines and sections matter more than YAML syntax.
PSPLIB_TEXTUAL: list[Callable[[bytes, Choose], bytes]] = [
    _truncate, _garbage, _flip, _duplicate_line, _delete_line, _delete_line, _swap_lines, _respell_number,
    _respell_number, _respell_number, _noise,
]  # fmt: skip


def _psplib_cycle(data: bytes, choose: Choose) -> bytes:
    """Add a successor to an activity's precedence line: unknown, itself, or an earlier one (a cycle)."""
    lines = _lines(data)
    rows = [k for k, line in enumerate(lines) if re.match(rb"\s+\d+\s+1\s+\d+", line)]
    if not rows:
        return data
    k = _pick(choose, rows)
    numbers = lines[k].split()
    target = _pick(choose, [b"1", numbers[0], b"999", b"0", b"-3"])
    numbers[2] = str(int(numbers[2]) + 1).encode()
    lines[k] = b"   " + b"   ".join([*numbers, target]) + b"\n"
    return b"".join(lines)


def mutate(seed: Seed, choose: Choose, steps: int = 3) -> tuple[bytes, str]:
    """One mutated file made from ``seed`` in 1..``steps`` steps; returns (bytes, suffix)."""
    count = 1 + choose(steps)
    if seed.suffix == ".sm":
        data = seed.text.encode("latin-1")
        for _ in range(count):
            data = _psplib_cycle(data, choose) if choose(4) == 0 else _pick(choose, PSPLIB_TEXTUAL)(data, choose)
        return data, ".sm"
    document = yaml.load(seed.text, Loader=_LOADER)
    structural = choose(3)  # 0: text only, else structure first
    suffix = ".yaml"
    if structural:
        for _ in range(count):
            _pick(choose, STRUCTURAL)(document, choose)
        text, suffix = emit(document, choose)
        data = text.encode("utf-8", "surrogatepass")
        if choose(3):
            return data, suffix
        count = 1
    else:
        data = seed.text.encode()
    for _ in range(count):
        data = _pick(choose, TEXTUAL)(data, choose)
    return data, suffix


def check_outcome(outcome: object, source: str) -> None:
    """The loader's contract for one input: an ``Instance``, or an ``InstanceError`` that names the file,
    prints on one line and encodes (the field and reason are in it)."""
    from fairpack.models.types import Instance, InstanceError

    if isinstance(outcome, Instance):
        assert outcome.resources and outcome.servers
        return
    assert isinstance(outcome, InstanceError), f"{type(outcome).__name__}: {outcome}"
    message = str(outcome)
    assert outcome.source == source, (outcome.source, source)
    assert message.startswith(f"{source}: "), message
    assert "\n" not in message and message.isprintable(), message
    message.encode("utf-8")
    assert outcome.reason
