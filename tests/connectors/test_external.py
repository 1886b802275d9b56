"""Out-of-process connectors: the reference connector (JavaScript, the repository's examples/connectors/journal)
added with consent and mined end to end, incrementally; and programs that misbehave — a malformed line, a hang, a
crash, output past the bound, a program changed since consent — failing what they must and losing nothing filed."""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_until

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.model.requests import MineRequest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "connectors" / "journal"


def executable(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def manifest(folder: Path, name: str, command: str, paths: Path, **extra: Any) -> Path:
    lines = [f'name = "{name}"', f'command = ["{command}"]', f'paths = ["{paths}"]', 'metadata = ["n"]']
    lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
    (folder / "connector.toml").write_text("[connector]\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return folder / "connector.toml"


@pytest.fixture
def home(xdg_home: Any, tmp_path: Path) -> Iterator[dict[str, Any]]:
    xdg_home.config_file.parent.mkdir(parents=True, exist_ok=True)
    xdg_home.config_file.write_text("", encoding="utf-8")  # the consents live beside it
    yield {"xdg": xdg_home, "root": tmp_path}


def open_palace(home: dict[str, Any]) -> Palace:
    root = home["root"]
    flags = {"palace": str(root / "palace"), "embeddings.provider": "none", "mining.roots": [str(root)]}
    palace = build(load_settings(flags=flags, env={}, config_file=home["xdg"].config_file))
    palace.start()
    return palace


def mine(palace: Palace, connector: str, locator: Path, **options: str) -> dict[str, Any]:
    job = palace.services.mining.submit_mine(MineRequest(connector, str(locator), options)).job
    done = wait_until(lambda: (j := palace.services.jobs.get_job(job.id)).is_finished and j, what="a mine")
    assert done.status.value == "completed", done.error
    return dict(done.result or {})


@pytest.mark.skipif(shutil.which("node") is None, reason="the reference connector is JavaScript: Node is not here")
def test_the_reference_connector_is_added_with_consent_and_mined(
    home: dict[str, Any], cli_runner: Any, tmp_path: Path
) -> None:
    connector = tmp_path / "journal-connector"
    shutil.copytree(EXAMPLE, connector)
    journal = tmp_path / "journal"
    journal.mkdir()
    for day, text in (("2026-03-01", "Fixed the drawbridge. #castle"), ("2026-03-02", "Rain all day.")):
        (journal / f"{day}.txt").write_text(text + "\n", encoding="utf-8")
    toml = connector / "connector.toml"
    toml.write_text(toml.read_text().replace('paths = ["~"]', f'paths = ["{tmp_path}"]'), encoding="utf-8")
    env = home["xdg"].env()

    refused = cli_runner(["connector", "add", str(connector)], env=env, input="n\n")
    assert refused.returncode == 1 and "run node journal.mjs" in refused.stderr
    added = cli_runner(["connector", "add", str(connector), "--yes"], env=env)
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["name"] == "journal"

    palace = open_palace(home)
    try:
        first = mine(palace, "journal", journal)
        assert first["created"] == 2
        drawers = palace.services.drawers.list_drawers("journal", None, 50, None).items
        day = next(d for d in drawers if "drawbridge" in d.content)
        assert day.source.origin.metadata == {"day": "2026-03-01", "words": 4}
        assert day.source.kind == "note"
        (journal / "2026-03-03.txt").write_text("Sun again.\n", encoding="utf-8")
        assert mine(palace, "journal", journal)["created"] == 1  # after the cursor only
        assert mine(palace, "journal", journal, tag="castle")["documents"] <= 1
        outside = tmp_path.parent
        with pytest.raises(Exception, match="outside the folders"):
            palace.services.mining.submit_mine(MineRequest("journal", str(outside)))
    finally:
        palace.stop()

    # The program changed since consent: not loaded until agreed to again.
    (connector / "journal.mjs").write_text("process.stdout.write('{}\\n')\n", encoding="utf-8")
    palace = open_palace(home)
    try:
        assert "journal" not in {c["name"] for c in palace.services.mining.list_connectors()}
    finally:
        palace.stop()


BAD = {
    "malformed": '#!/bin/sh\nread r\necho \'{"id": "a"}\'\necho "not json"\n',
    "hang": "#!/bin/sh\nsleep 30\n",
    "crash-on-read": (
        '#!/bin/sh\nread r\ncase "$r" in\n  *list*) echo \'{"id": "good"}\'; echo \'{"id": "bad"}\' ;;\n'
        '  *good*) echo \'{"body": "a good document", "metadata": {"n": 1, "secret": "x"}}\' ;;\n'
        '  *) echo "boom" >&2; exit 4 ;;\nesac\n'
    ),
    "flood": '#!/bin/sh\nread r\nyes \'{"id": "x"}\' | head -c 200000\n',
}


def test_misbehaving_programs_fail_what_they_must_and_lose_nothing(home: dict[str, Any], tmp_path: Path) -> None:
    from memcastle.app import consent_file
    from memcastle.connectors.consent import ConsentBook
    from memcastle.connectors.external import read_manifest

    data = tmp_path / "data"
    data.mkdir()
    book = ConsentBook(consent_file(load_settings(flags={}, env={}, config_file=home["xdg"].config_file)))
    for name, script in BAD.items():
        folder = tmp_path / name
        folder.mkdir()
        executable(folder / "run.sh", script)
        book.add(read_manifest(manifest(folder, name, "run.sh", tmp_path, timeout=1, max_output_bytes=4096)))
    palace = open_palace(home)
    try:
        malformed = mine(palace, "malformed", data)
        assert malformed["created"] == 0 and "line 2 is not JSON" in malformed["skipped_documents"][0]["reason"]
        hang = mine(palace, "hang", data)
        assert "did not answer within 1 s" in hang["skipped_documents"][0]["reason"]
        flood = mine(palace, "flood", data)
        assert "more than 4096 bytes" in flood["skipped_documents"][0]["reason"]
        crash = mine(palace, "crash-on-read", data)
        assert crash["created"] == 1  # the good document is filed; the crash fails only its own
        assert [s["document"] for s in crash["skipped_documents"]] == ["bad"]
        assert "exited with 4: boom" in crash["skipped_documents"][0]["reason"]
        assert "secret" in crash["warnings"][0]["reason"]  # undeclared metadata dropped, and said
        kept = palace.services.drawers.list_drawers("crash-on-read", None, 10, None).items
        assert [d.source.origin.metadata for d in kept] == [{"n": 1}]
    finally:
        palace.stop()
