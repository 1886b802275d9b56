"""Named miners from [[miners]]: validation with file/line/key, running one, joining a queued run."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.config.miners import load_miners
from memcastle.errors import ConfigError, NotFound


def write_config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_declared_miner_runs_and_a_second_request_joins_the_queued_run(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\nalpha")
    config = write_config(
        tmp_path / "config.toml", f'[[miners]]\nname = "n"\nconnector = "notes"\nlocator = "{notes}"\nwing = "nw"\n'
    )
    palace = build(load_settings(flags={"palace": str(tmp_path / "p")}, env={}, config_file=config))
    try:
        assert [m.name for m in palace.services.miners.list_miners()] == ["n"]
        first = palace.services.miners.run("n")
        second = palace.services.miners.run("n")  # workers not started: the first is still queued
        assert first.created and not second.created and second.job.id == first.job.id
        with pytest.raises(NotFound):
            palace.services.miners.run("nope")
    finally:
        palace.stop()


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        ('[[miners]]\nname = "a"\nconnector = "notes"\nlocator = "/x"\ncolour = "red"\n', "miners[0].colour", 5),
        (
            '[[miners]]\nname = "a"\nconnector = "notes"\nlocator = "/x"\n'
            '[[miners]]\nname = "a"\nconnector = "git"\nlocator = "/y"\n',
            "miners[1].name",
            None,
        ),
        ('[[miners]]\nname = "a"\nlocator = "/x"\n', "miners[0].connector", None),
        (
            '[[miners]]\nname = "a"\nconnector = "notes"\nlocator = "/x"\noptions = { since = 3 }\n',
            "miners[0].options",
            5,
        ),
    ],
)
def test_bad_miner_declarations_name_the_file_and_key(tmp_path: Path, text: str, key: str, line: int | None) -> None:
    config = write_config(tmp_path / "config.toml", text)
    settings = load_settings(flags={"palace": str(tmp_path / "p")}, env={}, config_file=config)
    with pytest.raises(ConfigError) as caught:
        load_miners(settings.tables.get("miners"))
    assert caught.value.key == key and caught.value.file == str(config)
    if line is not None:
        assert caught.value.line == line


def test_a_miner_with_an_unknown_connector_stops_the_build(tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.toml", '[[miners]]\nname = "a"\nconnector = "evernote"\nlocator = "/x"\n')
    with pytest.raises(ConfigError) as caught:
        build(load_settings(flags={"palace": str(tmp_path / "p")}, env={}, config_file=config))
    assert "evernote" in caught.value.message and caught.value.key == "miners[0].connector"
    assert caught.value.line is not None
