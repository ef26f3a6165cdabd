"""Shared helpers for benchmark scripts: the data-dir option, timing, and saving results."""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

RESULTS = Path(__file__).resolve().parent / "results"
T = TypeVar("T")


def parser(description: str) -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(description=description)
    default = os.environ.get("FAIRPACK_DATA_DIR", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parse.add_argument("--data-dir", default=default, help="the shared data folder (google/, alibaba/, ...)")
    parse.add_argument("--out", default=str(RESULTS), help="where to save the figures")
    return parse


def data_dir_or_none(path: str) -> Path | None:
    folder = Path(path)
    return folder if folder.is_dir() else None


def timed(function: Callable[[], T]) -> tuple[T, float]:
    started = time.perf_counter()
    value = function()
    return value, time.perf_counter() - started


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine_state() -> dict[str, Any]:
    """The machine and its load when a result is saved (1, 5 and 15 minute load averages)."""
    return {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "load_average": [round(value, 2) for value in os.getloadavg()]}  # fmt: skip


def load_line(state: dict[str, Any] | None = None) -> str:
    """One Markdown line stating the machine and its load: now, or as recorded in ``state``."""
    state = state or machine_state()
    return (f"Machine: {state['cpus']} cores ({state['machine']}), Python {state['python']}; load average "
            f"{' / '.join(f'{v:.2f}' for v in state['load_average'])} (1 / 5 / 15 min) when saved.")


def save(name: str, payload: dict[str, Any], markdown: str, out: str | Path = RESULTS,
         state: dict[str, Any] | None = None) -> None:  # fmt: skip
    """Print the Markdown table and save it with the raw numbers as JSON, with the machine ``state`` (default: now)."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, **(state or machine_state()), **payload}
    (folder / f"{name}.json").write_text(json.dumps(payload, indent=1, default=float))
    (folder / f"{name}.md").write_text(markdown + "\n")
    print(markdown)
