"""The directory connector's `since`: only files modified at or after the instant, and no removal noticed from a
listing that left the older ones out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memcastle.connectors.contract import SourceSpec
from memcastle.connectors.directory import DirectoryConnector
from memcastle.errors import InvalidRequest

OLD = 1_700_000_000  # 2023-11-14
NEW = 1_760_000_000  # 2025-10-09


def test_since_lists_only_files_modified_at_or_after_it(tmp_path: Path) -> None:
    for name, stamp in (("old.md", OLD), ("new.md", NEW), ("sub/newer.txt", NEW + 60)):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{name}\n", encoding="utf-8")
        os.utime(path, (stamp, stamp))
    connector = DirectoryConnector()
    everything = SourceSpec(str(tmp_path))
    recent = SourceSpec(str(tmp_path), {"since": "2025-01-01"})
    assert sorted(c.external_id for c in connector.discover(everything, None)) == ["new.md", "old.md", "sub/newer.txt"]
    assert sorted(c.external_id for c in connector.discover(recent, None)) == ["new.md", "sub/newer.txt"]
    assert connector.lists_everything(everything) and not connector.lists_everything(recent)
    assert connector.identify(recent) == connector.identify(everything)  # the same folder, a narrower pass
    with pytest.raises(InvalidRequest) as refused:
        connector.check(SourceSpec(str(tmp_path), {"since": "last tuesday"}))
    assert refused.value.field == "options.since"
