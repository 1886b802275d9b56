"""Fixtures of the lifecycle tests: real palaces in temp dirs (see tests/knowledge/support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from knowledge.support import Palaces


@pytest.fixture
def palaces(tmp_path: Path) -> Iterator[Palaces]:
    """Factory of real palaces under this test's temp dir; every one is stopped at teardown."""
    made = Palaces(root=tmp_path / "palaces")
    made.root.mkdir()
    yield made
    made.close()
