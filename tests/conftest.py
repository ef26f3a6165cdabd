"""Shared pytest fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The shared data folder (../shared/data next to the repository), unless FAIRPACK_DATA_DIR says otherwise.
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The external data folder (google/, alibaba/, psplib/, tpch/); skips the test when it is absent."""
    configured = os.environ.get("FAIRPACK_DATA_DIR")
    path = Path(configured).expanduser() if configured else DEFAULT_DATA_DIR
    if not path.is_dir():
        pytest.skip(f"shared data folder not found: {path} (set FAIRPACK_DATA_DIR)")
    return path
