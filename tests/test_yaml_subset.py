"""The fast reader of fairpack's own YAML (``models.yaml_subset``) gives the event reader's data, or steps aside.

The event reader (``models.io._read_yaml``) is the reference: for every text the fast reader accepts, the
event reader must accept it too and return the same data, value for value and type for type (``1`` is not
``1.0`` is not ``True``). Checked on the files fairpack writes (which must take the fast path), on hand-made
corner cases, and on thousands of mutations of those files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from fuzzing import TEXTUAL
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairpack.models.generators.jobs import random_dag_jobs
from fairpack.models.generators.trees import random_tree_instance
from fairpack.models.io import DEFAULT_LIMITS, _read_yaml, instance_to_yaml, load_instance
from fairpack.models.types import InstanceError
from fairpack.models.yaml_subset import NOT_SUBSET, read_subset

ROOT = Path(__file__).resolve().parents[1]


def _fast(text: str) -> Any:
    return read_subset(text, DEFAULT_LIMITS.max_depth, DEFAULT_LIMITS.max_nodes)


def _typed(value: Any) -> Any:
    """``value`` with every scalar tagged by its type, so equal data of other types compare unequal."""
    if isinstance(value, dict):
        return ("map", [(key, _typed(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("seq", [_typed(item) for item in value])
    return (type(value).__name__, repr(value))


def _same_as_event_reader(text: str) -> bool:
    """Assert the contract on ``text``; whether the fast reader took it."""
    fast = _fast(text)
    try:
        reference = _read_yaml(text, DEFAULT_LIMITS)
    except (InstanceError, yaml.YAMLError):
        assert fast is NOT_SUBSET, text  # the fast reader accepted what the event reader refuses
        return False
    if fast is NOT_SUBSET:
        return False
    assert _typed(fast) == _typed(reference), text
    return True


def _written_texts() -> list[str]:
    """What ``fairpack generate`` writes: the bundled instances, a tree and DAG jobs, through instance_to_yaml."""
    instances = [load_instance(path) for path in sorted((ROOT / "instances").glob("*.yaml"))]
    instances += [random_tree_instance(seed=3, leaves=300, depth=4, resources=4), random_dag_jobs(seed=2, jobs=20)]
    return [instance_to_yaml(instance) for instance in instances]


WRITTEN = _written_texts()


@pytest.mark.parametrize("text", WRITTEN, ids=range(len(WRITTEN)))
def test_written_files_take_the_fast_path(text: str) -> None:
    # A quoted string (a label 'true') or a flow list in a flow list (utility points) is the event reader's.
    assert _same_as_event_reader(text) or "'" in text or "[[" in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: 1\nb: 1.0\nc: 1e5\nd: -0\ne: n1.2-x/y_z\nf: null\ng: True\nh: ~\ni:\n", {
            "a": 1, "b": 1.0, "c": 1e5, "d": 0, "e": "n1.2-x/y_z", "f": None, "g": True, "h": None, "i": None}),
        ("a:\n- 1\n- {x: 1, y: p}\n- [p, q]\n- k: v\n  l:\n  - 2\nb: [1,\n    2]\n",
         {"a": [1, {"x": 1, "y": "p"}, ["p", "q"], {"k": "v", "l": [2]}], "b": [1, 2]}),
        ("a:\n  b:\n    c: 1\n  d: x y, z\n", {"a": {"b": {"c": 1}, "d": "x y, z"}}),
        ("a#1: [g#0, h#]\nb: c#d\n", {"a#1": ["g#0", "h#"], "b": "c#d"}),  # no comment without a space
        ("a: 9" + "9" * 4000 + "\n", NOT_SUBSET),  # more than 4,000 characters: a string to the event reader
    ],
)  # fmt: skip
def test_accepted_text_reads_as_yaml_does(text: str, expected: Any) -> None:
    assert _typed(_fast(text)) == _typed(expected)
    if expected is not NOT_SUBSET:
        assert _same_as_event_reader(text)


@pytest.mark.parametrize(
    "text",
    [
        "- [a], [b]\n",  # YAML refuses it; JSON would read two items
        "a:\n- 1, 2\n", "a:\n- 1]\n",  # one string to YAML, two items (or a closed list) to JSON
        "a: {x:1}\n",  # the key 'x:1' to YAML
        "a: [-Infinity, NaN]\n",
        "a: 0x1f\n", "a: 1_000\n", "a: 010\n", "a: .5\n", "a: +1\n", "a: 1:30\n",  # strings or refused
        "a: [True]\n", "a: [nullable, null]\n",
        "a: 1\na: 2\n", "a: {x: 1, x: 2}\n",  # duplicate keys: the event reader names both lines
        "a: 'x'\n", "a: x # note\n", "# note\na: 1\n", "a: [x, #y]\n",  # quotes, comments
        "a: &x 1\nb: *x\n", "a: !!str 1\n", "---\na: 1\n", "a: |\n  x\n",
        "a: b\n  c\n",  # a plain scalar over two lines
        "a: 1\n b: 2\n", "a:\n  - 1\n - 2\n", "- a\n", "1: a\n", "null: a\n", "a: x\n\nb: y\n", "a: x \n",
        "a: [[1, 2], [3]]\n", "a: {x: [1]}\n",  # flow collections nested: the event reader's
        "a:\tb\n", "a: é\n",
    ],
)  # fmt: skip
def test_text_outside_the_subset_steps_aside(text: str) -> None:
    assert _fast(text) is NOT_SUBSET


def test_depth_and_size_limits_step_aside() -> None:
    deep = "".join(f"{' ' * (2 * level)}k{level}:\n" for level in range(10)) + " " * 20 + "v: 1\n"
    assert read_subset(deep, 100, 10_000) is not NOT_SUBSET
    assert read_subset(deep, 12, 10_000) is NOT_SUBSET  # within three levels of the depth limit
    assert read_subset(deep, 100, len(deep)) is NOT_SUBSET  # more characters than the value limit


def test_a_duplicate_key_is_still_named_with_its_lines() -> None:
    from fairpack.models.io import parse_instance

    text = WRITTEN[-2].replace("\n  weight:", "\n  weight: 1.0\n  weight:", 1)
    with pytest.raises(InstanceError, match=r"duplicate key 'weight' \(line \d+, column 3\)"):
        parse_instance(text)


_ALPHABET = "ab1.-_ :,{}[]\n~e#"


def _edit(text: str, choose: Any) -> str:
    """One small edit inside the subset's alphabet: insert, delete or replace a character, or re-indent a line."""
    position = choose(len(text))
    kind = choose(4)
    if kind == 0:
        return text[:position] + _ALPHABET[choose(len(_ALPHABET))] + text[position:]
    if kind == 1:
        return text[:position] + text[position + 1 :]
    if kind == 2:
        return text[:position] + _ALPHABET[choose(len(_ALPHABET))] + text[position + 1 :]
    start = text.rfind("\n", 0, position) + 1
    return text[:start] + " " * choose(4) + text[start:].lstrip(" ")


@settings(derandomize=True, deadline=None, database=None, max_examples=1500,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(st.sampled_from(WRITTEN[:-2] + [text[:3000] for text in WRITTEN[-2:]]), st.data())
def test_mutated_files_read_as_yaml_does_or_step_aside(text: str, data: st.DataObject) -> None:
    def choose(n: int) -> int:
        return data.draw(st.integers(0, max(n, 1) - 1))  # 0 when there is nothing to choose from

    for _ in range(1 + choose(3)):
        if choose(3):
            text = _edit(text, choose)
        else:
            text = TEXTUAL[choose(len(TEXTUAL))](text.encode(), choose).decode("utf-8", "replace")
    _same_as_event_reader(text)
