"""Job kinds are one closed table (`model.jobs.JobKind`): the palace runs a handler for each of them and no other."""

from __future__ import annotations

from pathlib import Path

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.model.jobs import BACKGROUND_SWEEPS, JobKind


def test_the_palace_handles_every_declared_job_kind_and_no_other(tmp_path: Path) -> None:
    settings = load_settings(
        flags={"palace": str(tmp_path / "palace"), "embeddings.provider": "builtin"}, env={}, config_file=None
    )
    palace = build(settings)
    try:
        assert set(palace.pool.kinds) == {kind.value for kind in JobKind}
        assert set(BACKGROUND_SWEEPS) <= set(palace.pool.kinds)
    finally:
        palace.stop()
    without = load_settings(
        flags={"palace": str(tmp_path / "other"), "embeddings.provider": "none", "extraction.provider": "none"},
        env={},
        config_file=None,
    )
    palace = build(without)
    try:
        assert set(palace.pool.kinds) == {kind.value for kind in JobKind} - {"embed", "extract"}
    finally:
        palace.stop()
