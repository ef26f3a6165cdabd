"""Every Python example in README and the user guide (docs/*.md) runs as written, in a fresh interpreter from the
repository's root, so the examples cannot drift from the library."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: (page, line, code) of every ```python block, indented ones (inside a list item) included.
BLOCKS = [(page.relative_to(ROOT).as_posix(), text[: match.start()].count("\n") + 1, textwrap.dedent(match.group(2)))
          for page in PAGES for text in [page.read_text(encoding="utf-8")]
          for match in re.finditer(r"^( *)```python\n(.*?)^\1```", text, flags=re.S | re.M)]  # fmt: skip


def test_readme_has_python_examples() -> None:
    readme = [code for page, _, code in BLOCKS if page == "README.md"]
    assert readme and any("from_networkx" in code and "compare" in code for code in readme)
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize(("page", "line", "code"), BLOCKS, ids=[f"{page}:{line}" for page, line, _ in BLOCKS])
def test_python_example_runs(page: str, line: int, code: str) -> None:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          check=False)  # fmt: skip
    assert done.returncode == 0, f"{page}:{line}: " + done.stderr[-3000:]
    assert done.stdout.strip(), f"{page}:{line}: an example that prints nothing shows nothing"
