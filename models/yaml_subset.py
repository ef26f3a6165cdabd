"""A fast reader for the plain YAML that fairpack itself writes: exact, or it steps aside.

PyYAML hands every scalar, mapping and sequence to Python as an event object: a 10,000-leaf tree file
(185,000 events) spends ~0.3 s in events alone. The files ``fairpack generate`` writes
(``instance_to_yaml``: block mappings and sequences, flow collections at the leaves, plain names and
numbers) use a small part of YAML. :func:`read_subset` rewrites that part as JSON with whole-text string
operations and one pass over the lines, and the C JSON decoder builds the data.

It returns exactly what ``models.io``'s event reader returns for the same text, or ``NOT_SUBSET``; then the
event reader reads the text and reports any error, with its line and field, so every message and limit of
the loader stays in one place. It steps aside on anything it is not sure of:

* a character other than ``[A-Za-z0-9_./#-]``, space, newline and ``{}[],:~+`` (so quotes, tabs, anchors,
  aliases, tags, block scalars, directives and document markers all step aside), a ``#`` after a space or
  at a line's start (a comment), a ``:`` not followed by a space or a line break, or `` :``;
* a name (a run of ``[A-Za-z0-9_./#-]`` that starts with a letter or ``_``) spelled as a YAML 1.2 keyword
  (``null``, ``true``, ``False``, ...) anywhere;
* a line that is not ``[- ]key: value``, ``[- ]key:`` or ``- value`` at a column its block expects, a
  block value with a ``,``, a flow collection nested in another, and any token JSON would not read
  (``010``, ``0x1f``, ``.5``, ``+1``, ``1_000``, ``~``, ``NaN`` and the like);
* a duplicate key; an integer of more than 4,000 characters; a text longer than ``max_nodes`` characters
  (so the value count stays within the limit) or nested within three levels of ``max_depth``.

What is left means the same to YAML 1.2's core schema (the event reader's rules) and to JSON: names are
strings, a number is an ``int`` unless it has a fraction or an exponent (then ``float``, read by ``float()``),
mappings keep their key order.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

#: Returned when the text is not in the subset (the event reader must read it).
NOT_SUBSET: Final = object()

_NAME_CHARACTERS = "A-Za-z0-9_./#-"
# A name starts with a letter or ``_`` right after a character that cannot be part of one (so ``e`` in
# ``1e-05`` and ``x1f`` in ``0x1f`` are not names). Split with the name as a group, the text alternates
# between what lies between names and the names, so joining the pieces with '"' quotes every name.
_NAME = re.compile(rf"([A-Za-z_](?<![{_NAME_CHARACTERS}][A-Za-z_])[{_NAME_CHARACTERS}]*)")
_ALLOWED = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./#- \n{}[],:~+"
_BAD_COLON = re.compile(r":[^ \n]")
_KEYWORD_JSON = {
    **dict.fromkeys(("null", "Null", "NULL"), "null"),
    **dict.fromkeys(("true", "True", "TRUE"), "true"),
    **dict.fromkeys(("false", "False", "FALSE"), "false"),
}
_KEYWORDS = frozenset(_KEYWORD_JSON)
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NUMBER_START = frozenset("-0123456789")
_NUMBER_CHARACTERS = b"0123456789.eE+-"


class _Refused(Exception):
    """The text is not in the subset (raised inside the line pass and the JSON decoder's hooks)."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs):  # a duplicate key: the event reader names it, with both lines
        raise _Refused
    return mapping


def _integer(text: str) -> int:
    if len(text) > 4000:  # the event reader keeps such a scalar as a string
        raise _Refused
    return int(text)


def _constant(_: str) -> Any:  # JSON's NaN, Infinity and -Infinity are no YAML 1.2 numbers
    raise _Refused


def read_subset(text: str, max_depth: int, max_nodes: int) -> Any:
    """The data of ``text`` if it is in the subset (see the module docstring), else ``NOT_SUBSET``."""
    if not text or len(text) + 1 > max_nodes or not text.isascii():
        return NOT_SUBSET
    if text.encode("ascii").translate(None, _ALLOWED) or _BAD_COLON.search(text) or " :" in text:
        return NOT_SUBSET
    if " #" in text or "\n#" in text or text.startswith("#"):  # a comment; ``#`` inside a name is no comment
        return NOT_SUBSET
    # A flow collection the writer wrapped continues after a comma; inside one, a line break is a space.
    lines = text.replace(",\n", ",").split("\n")
    if lines[-1] == "":
        lines.pop()
    try:
        out, flows, numbers = _skeleton(lines, max_depth)
        # Names inside flow collections, quoted in one pass: split with the name as a group, the text
        # alternates between what lies between names and the names, so joining with '"' quotes them all.
        if flows:
            parts = _NAME.split("\n".join(out[k] for k in flows))
            if not _KEYWORDS.isdisjoint(parts[1::2]):
                return NOT_SUBSET
            for k, flow in zip(flows, '"'.join(parts).split("\n"), strict=True):
                out[k] = flow
        if "".join(numbers).encode("ascii").translate(None, _NUMBER_CHARACTERS):
            return NOT_SUBSET  # a block value such as 1,2 or 1]: one scalar to YAML, more to JSON
        return json.loads("".join(out), object_pairs_hook=_pairs, parse_int=_integer, parse_constant=_constant)
    except (_Refused, ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return NOT_SUBSET


def _scalar(value: str, out: list[str], flows: list[int], numbers: list[str]) -> None:
    """Append the JSON of a block value (a flow collection is copied, its position kept in ``flows``)."""
    first = value[:1]
    if first in _NAME_START:
        if value in _KEYWORD_JSON:
            out.append(_KEYWORD_JSON[value])
        elif ": " in value or value[-1] in " :":  # YAML refuses ``a: b`` there; strips trailing spaces
            raise _Refused
        else:
            out.append(f'"{value}"')
    elif first in _NUMBER_START:
        numbers.append(value)
        out.append(value)
    elif first in ("{", "["):
        flows.append(len(out))
        out.append(value)
    elif value == "~":
        out.append("null")
    else:
        raise _Refused


def _skeleton(lines: list[str], max_depth: int) -> tuple[list[str], list[int], list[str]]:  # noqa: C901
    """The JSON pieces of ``lines`` (one pass, once per line): brackets and commas from the indentation,
    names quoted; flow collections copied as they are (their positions returned), and the number tokens."""
    out: list[str] = []
    flows: list[int] = []
    numbers: list[str] = []
    columns: list[int] = []  # the open block collections: column, is a sequence, has an item yet
    sequences: list[bool] = []
    filled: list[bool] = []
    pending = -1  # the column of the mapping whose last key waits for a block value on the next lines
    top = -1  # the column of the innermost open collection when it is a mapping with an entry, else -1
    keywords = _KEYWORD_JSON
    for line in lines:
        body = line.lstrip(" ")
        column = len(line) - len(body)
        if column == top and body[:1] in _NAME_START:  # the next ``key: value`` of that mapping (most lines)
            split = body.find(": ")
            key = body[:split]
            if split > 0 and key not in keywords and key[-1] != " ":
                value = body[split + 2 :]
                first = value[:1]
                if first in _NAME_START:
                    if value in keywords:
                        out.append(f',"{key}":{keywords[value]}')
                        continue
                    if ": " not in value and value[-1] not in " :":
                        out.append(f',"{key}":"{value}"')
                        continue
                elif first in _NUMBER_START:
                    numbers.append(value)
                    out.append(f',"{key}":{value}')
                    continue
                elif first in ("{", "["):
                    out.append(f',"{key}":')
                    flows.append(len(out))
                    out.append(value)
                    continue
        top = -1  # the general case: anything below may open or close collections
        dash = body[:2] == "- "
        if dash:
            body = body[2:]
            if body[:1] in ("", " ", "-"):
                raise _Refused
        elif not body:
            raise _Refused
        if pending >= 0:
            if column > pending or (dash and column == pending):  # a nested (or indentless) collection
                out.append("[" if dash else "{")
                columns.append(column)
                sequences.append(dash)
                filled.append(False)
                if len(columns) + 3 >= max_depth:  # with a compact mapping and a flow collection below
                    raise _Refused
            else:
                out.append("null")  # ``key:`` and nothing below it
            pending = -1
        # Close deeper collections, and an indentless sequence when its parent mapping's next key comes.
        while columns and (columns[-1] > column or (columns[-1] == column and sequences[-1] and not dash)):
            out.append("]" if sequences.pop() else "}")
            columns.pop()
            filled.pop()
        if not columns:
            if out or dash or column:  # the root is one mapping, at column 0
                raise _Refused
            out.append("{")
            columns.append(0)
            sequences.append(False)
            filled.append(False)
        elif columns[-1] != column or sequences[-1] != dash:
            raise _Refused
        if filled[-1]:
            out.append(",")
        else:
            filled[-1] = True
        first = body[0]
        if first in "{[":  # ``- {...}``: a flow collection as a sequence item
            if not dash:
                raise _Refused
            flows.append(len(out))
            out.append(body)
            continue
        split = body.find(": ")
        if split < 0:
            if body[-1] != ":":  # ``- value``
                if not dash:
                    raise _Refused
                _scalar(body, out, flows, numbers)
                continue
            split = len(body) - 1  # ``key:``: its value is the block below (or null)
            pending = column + 2 if dash else column
        key = body[:split]
        if first not in _NAME_START or key in _KEYWORD_JSON or key[-1] == " ":
            raise _Refused  # a number or keyword as a key: the event reader refuses it
        if dash:  # ``- key: ...`` opens a mapping whose keys sit two columns right of the dash
            out.append("{")
            columns.append(column + 2)
            sequences.append(False)
            filled.append(True)
            if len(columns) + 3 >= max_depth:
                raise _Refused
        out.append(f'"{key}":')
        if pending < 0:
            _scalar(body[split + 2 :], out, flows, numbers)
            top = columns[-1]
    if pending >= 0:
        out.append("null")
    out.extend("]" if sequence else "}" for sequence in reversed(sequences))
    # Every flow collection opens at its first character and closes at its last, with no bracket between.
    joined = "".join(out[k] for k in flows)
    brackets = (joined.count("{") + joined.count("["), joined.count("}") + joined.count("]"))
    if brackets != (len(flows), len(flows)) or any(out[k][-1] not in "}]" for k in flows):
        raise _Refused
    return out, flows, numbers
