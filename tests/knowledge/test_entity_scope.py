"""Entities are scoped like what names them (ADR 0049): a token limited to some wings resolves names, ids and aliases
only among the entities it may see — through a drawer or a fact of its wings — so an entity only another wing names
never comes back to it, not by name, not by alias, not by id, not in a refusal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from addresses import LOCAL
from clocks import DistinctClock
from fastapi.testclient import TestClient

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.daemon import http_app
from memcastle.runtime.tokens import TokenStore

SECRET_NAME = "Ruxhq Holdings"
SECRET_ALIAS = "Ruxhq Holdco"


class World:
    def __init__(self, owner: TestClient, agent: TestClient) -> None:
        self.owner, self.agent = owner, agent
        self.hidden_entity = ""
        self.own_drawer = ""


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    palace_dir = tmp_path / "palace"
    tokens = TokenStore(palace_dir)
    full = tokens.create("owner")
    limited = tokens.create("agent", read=["alpha"], write=["alpha"])
    settings = load_settings(
        flags={"palace": str(palace_dir), "auth.enabled": True, "embeddings.provider": "none"}, env={},
        config_file=None,
    )  # fmt: skip
    built: Palace = build(settings, now=DistinctClock())
    built.start()
    try:
        app = http_app(built)
        with (
            TestClient(app, base_url=LOCAL, headers={"Authorization": f"Bearer {full}"}) as owner,
            TestClient(app, base_url=LOCAL, headers={"Authorization": f"Bearer {limited}"}) as agent,
        ):
            world = World(owner, agent)
            note = owner.post("/api/notes", json={"content": f"{SECRET_NAME} bought the mill.", "wing": "beta"})
            fact = owner.post(
                "/api/facts",
                json={"subject": SECRET_NAME, "predicate": "located_in", "object": "Quarry Town",
                      "subject_kind": "organization", "evidence_drawer": note.json()["drawer"]["id"]},
            )  # fmt: skip
            assert fact.status_code == 201, fact.text
            world.hidden_entity = fact.json()["subject_id"]
            alias = owner.post(f"/api/entities/{world.hidden_entity}/aliases", json={"alias": SECRET_ALIAS})
            assert alias.status_code == 200, alias.text
            own = agent.post("/api/notes", json={"content": "The alpha ledger is kept weekly.", "wing": "alpha"})
            assert own.status_code == 201, own.text
            world.own_drawer = own.json()["drawer"]["id"]
            yield world
    finally:
        built.stop()


def _shows_hidden(world: World, text: str, sent: str = "") -> bool:
    """The invisible entity's id or its alias (unless the request itself typed that spelling)."""
    return world.hidden_entity[:8] in text or (SECRET_ALIAS in text and SECRET_ALIAS not in sent)


@pytest.mark.parametrize("named", [SECRET_NAME, SECRET_ALIAS, "ruxhq holdings"])
def test_a_mention_of_a_name_only_another_wing_uses_makes_a_new_entity(world: World, named: str) -> None:
    answer = world.agent.post(f"/api/drawers/{world.own_drawer}/mentions", json={"entity": named})
    assert answer.status_code == 201, answer.text
    assert not _shows_hidden(world, answer.text, named)
    assert answer.json()["id"] != world.hidden_entity and answer.json()["aliases"] == []
    for later in ("/api/entities", "/api/entities?name=Ruxhq", "/api/graph?drawer=" + world.own_drawer):
        shown = world.agent.get(later)
        assert shown.status_code == 200 and not _shows_hidden(world, shown.text, named), later
    # The owner still has the other wing's entity as it was, with its one mention.
    kept = world.owner.get(f"/api/entities/{world.hidden_entity}").json()
    assert (kept["name"], kept["aliases"]) == (SECRET_NAME, [SECRET_ALIAS])


def test_a_mention_by_an_invisible_id_is_as_by_an_unknown_one(world: World) -> None:
    unknown = "0e5b9a5e-2f63-4c55-9a1e-3d8b8f1c7a21"
    answers = [
        world.agent.post(f"/api/drawers/{world.own_drawer}/mentions", json={"entity": named})
        for named in (world.hidden_entity, unknown)
    ]
    assert [a.status_code for a in answers] == [404, 404]
    assert [a.json()["error"] for a in answers] == [f"no entity {world.hidden_entity}", f"no entity {unknown}"]
    # A prefix is a name like any other: a new entity of that name.
    prefix = world.agent.post(f"/api/drawers/{world.own_drawer}/mentions", json={"entity": world.hidden_entity[:8]})
    assert prefix.status_code == 201 and prefix.json()["id"] != world.hidden_entity
    assert SECRET_NAME not in prefix.text and SECRET_ALIAS not in prefix.text


def test_an_alias_another_wing_uses_is_no_oracle(world: World) -> None:
    mine = world.agent.post(f"/api/drawers/{world.own_drawer}/mentions", json={"entity": "Alpha Mill"})
    entity = mine.json()["id"]
    for guess in (SECRET_NAME, SECRET_ALIAS):
        answer = world.agent.post(f"/api/entities/{entity}/aliases", json={"alias": guess})
        assert answer.status_code == 200, answer.text  # as if nobody held it: added to the caller's entity
        assert world.hidden_entity not in answer.text and "existing_id" not in answer.text
    # What the client sees holds still refuses, naming what it may see.
    other = world.agent.post(f"/api/drawers/{world.own_drawer}/mentions", json={"entity": "Alpha Weir"})
    refused = world.agent.post(f"/api/entities/{other.json()['id']}/aliases", json={"alias": "Alpha Mill"})
    assert refused.status_code == 409 and refused.json()["existing_id"] == entity


def test_a_stated_fact_names_a_new_entity_not_the_invisible_one(world: World) -> None:
    answer = world.agent.post(
        "/api/facts",
        json={"subject": SECRET_NAME, "predicate": "uses", "object": "Alpha Ledger", "subject_kind": "organization",
              "evidence_drawer": world.own_drawer},
    )  # fmt: skip
    assert answer.status_code == 201, answer.text
    assert answer.json()["subject_id"] != world.hidden_entity and not _shows_hidden(world, answer.text)
    assert not _shows_hidden(world, world.agent.get("/api/graph", params={"entity": SECRET_NAME}).text)


def test_the_whole_palace_still_resolves_to_the_one_entity(world: World) -> None:
    """Unscoped, nothing changed: a mention of the name lands on the entity the palace has."""
    note = world.owner.post("/api/notes", json={"content": "Gamma notes.", "wing": "gamma"}).json()["drawer"]["id"]
    answer = world.owner.post(f"/api/drawers/{note}/mentions", json={"entity": SECRET_ALIAS})
    assert answer.json()["id"] == world.hidden_entity
