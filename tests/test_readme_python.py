"""Every Python example in README runs as written, in a fresh interpreter from the repository's root, so
the examples cannot drift from the library."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def test_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 3
    assert any("from_networkx" in block and "compare" in block for block in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{k}" for k in range(len(BLOCKS))])
def test_readme_python_block_runs(block: str) -> None:
    done = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "an example that prints nothing shows nothing"
