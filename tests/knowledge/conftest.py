"""Fixtures of the Facts tests (the suite-wide ones — settings, palace, client, daemon, poll — come from
tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .support import Palaces


@pytest.fixture
def palaces(tmp_path: Path) -> Iterator[Palaces]:
    """Factory of real palaces under this test's temp dir; every one is stopped at teardown."""
    made = Palaces(root=tmp_path / "palaces")
    made.root.mkdir()
    yield made
    made.close()
