"""The original MemCastle's extraction command contract (`extraction.command_format = "plain"`): a program written
to it — texts as strings and a vocabulary, answered by {"extractions"} — fills the graph here unchanged; and an
{"extractions"} answer is read even when the request was MemCastle's own."""

from __future__ import annotations

import sys
from pathlib import Path

from .support import Palaces, extracted

ORIGINAL = str(Path(__file__).with_name("original_extractor.sh"))

ANSWERS_EXTRACTIONS = """
import json, sys
request = json.load(sys.stdin)
texts = [t["text"] for t in request["texts"]]  # MemCastle's own request: texts as objects
json.dump({"extractions": [{"entities": [{"name": "Ada", "kind": "person"}], "relations": []} for _ in texts]},
          sys.stdout)
"""


def test_a_program_written_for_the_original_contract_fills_the_graph(palaces: Palaces) -> None:
    palace = palaces.open(
        flags={
            "extraction.provider": "command",
            "extraction.command": [ORIGINAL],
            "extraction.model": "original-v1",
            "extraction.command_format": "plain",
        }
    )
    palace.services.drawers.save_note("Ada works on Atlas since the spring.", wing="w")
    palace.services.drawers.save_note("Nothing to see here.", wing="w")
    job = extracted(palace)
    assert job.status.value == "completed", job.error
    facts = palace.services.facts.list_facts(predicate="works_on")
    assert [(f.subject_name, f.object_name) for f in facts] == [("Ada", "Atlas")]


def test_an_extractions_answer_is_read_whatever_was_asked(palaces: Palaces, tmp_path: Path) -> None:
    script = tmp_path / "answers_extractions.py"
    script.write_text(ANSWERS_EXTRACTIONS, encoding="utf-8")
    palace = palaces.open(
        flags={
            "extraction.provider": "command",
            "extraction.command": [sys.executable, str(script)],
            "extraction.model": "shape-v1",
        }
    )
    palace.services.drawers.save_note("A note that mentions someone.", wing="w")
    job = extracted(palace)
    assert job.status.value == "completed", job.error
    assert [e.name for e in palace.services.facts.list_entities("Ada", None)] == ["Ada"]
