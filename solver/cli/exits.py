"""Exit codes and the one way errors are printed (``fairpack: ...`` on stderr)."""

from __future__ import annotations

import sys

EXIT_OK, EXIT_SOLVER, EXIT_INPUT = 0, 1, 2
#: Ctrl-C (SIGINT): 128 + 2, as shells report it. ``solve`` and ``simulate`` write the best answer so far first.
EXIT_INTERRUPTED = 130


def fail(message: str, code: int) -> int:
    print(f"fairpack: {message}", file=sys.stderr)
    return code
