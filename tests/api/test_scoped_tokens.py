"""Scoped tokens, attacked: a token limited to some wings is driven through every REST route, every MCP tool and every
web page of a real daemon, and nothing of another wing comes back — not its text, not an id, not a count.

A unique marker is planted out of scope in every form memory takes (a note, a mined file, a stated fact and so the
entities it names); the scoped token must never see the marker or any planted id, while it does see (and write)
its own wings, so the test cannot pass by refusing everything.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from live_daemon import make_home
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent
from served import Served, serve_palace
from waiting import CEILING

from memcastle.mcp.tools import TOOLS
from memcastle.runtime.tokens import ROUTE_GROUPS, TokenStore
from memcastle.web.routes import audit, drawers, forgetting, jobs, knowledge, login, overview, search, work

MARKER = "zqxmarker7731"
PLANTED_WING = "vault"
# An alias the owner gives the planted entity "Vaultcity": the scoped token types it (and the entity's id) in its own
# entity writes; the canonical name, the ids and the alias's owner must never come back (ADR 0049).
PLANTED_ALIAS = "Vcity Keepers"


class Planted:
    """What lies outside the scope: its words and ids must never reach the scoped client."""

    # Words of the planted note, the mined file and the stated fact (with the entity it names) that no request sends.
    # (a code no random token on a page — the form token every page carries — can hold by chance)
    WORDS = ("kq4411x", "tunnel opens", "Vaultcity")

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        self.own: dict[str, str] = {}  # ids the scoped token may see and write

    def leaks(self, text: str, sent: str = "", refused: bool = False) -> list[str]:
        """What of the planted memory `text` shows. An id the request itself named may come back in its refusal
        ("no drawer …"); the marker may be echoed as the query that was sent, never as anything found."""
        found = [word for word in self.WORDS if word.lower() in text.lower()]
        if MARKER in text.lower() and MARKER not in sent.lower():
            found.append(MARKER)
        for kind, value in self.ids.items():
            for shown in (value, value[:8]):
                if shown in text and not (refused and shown in sent):
                    found.append(f"{kind} {shown}")
        return found


@pytest.fixture(scope="module")
def scoped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, str, str, Planted]]:
    root = tmp_path_factory.mktemp("scoped")
    palace = root / "palace"
    tokens = TokenStore(palace)
    full = tokens.create("owner")
    limited = tokens.create("agent", read=["team", "notes", "shared/public"], write=["notes", "shared/drafts"])
    tokens.create("searcher", tools=["memcastle_search", "memcastle_get_drawer"])
    daemon = serve_palace(palace, make_home(root / "xdg"), extra_env={"MEMCASTLE_AUTH_ENABLED": "true"})
    planted = Planted()
    owner = httpx.Client(base_url=daemon.address, headers={"Authorization": f"Bearer {full}"}, trust_env=False)
    with owner:
        planted_note = {"content": f"The {MARKER} vault code is kq4411x.", "wing": PLANTED_WING}
        secret = owner.post("/api/notes", json=planted_note)
        assert secret.status_code == 201, secret.text
        planted.ids["drawer"] = secret.json()["drawer"]["id"]
        fact = owner.post(
            "/api/facts",
            json={"subject": f"Ana {MARKER}", "predicate": "located_in", "object": "Vaultcity",
                  "evidence_drawer": planted.ids["drawer"]},
        )  # fmt: skip
        assert fact.status_code == 201, fact.text
        planted.ids["fact"] = fact.json()["id"]
        planted.ids["entity"] = fact.json()["subject_id"]
        planted.ids["object entity"] = fact.json()["object_id"]
        alias = owner.post(f"/api/entities/{planted.ids['object entity']}/aliases", json={"alias": PLANTED_ALIAS})
        assert alias.status_code == 200, alias.text
        folder = root / "mined"
        folder.mkdir()
        (folder / "plan.md").write_text(f"# Plan\n\nThe {MARKER} tunnel opens at dawn.\n", encoding="utf-8")
        mine = owner.post("/api/mine", json={"connector": "notes", "locator": str(folder), "wing": PLANTED_WING})
        assert mine.status_code == 202, mine.text
        planted.ids["job"] = mine.json()["job"]["id"]
        deadline = time.monotonic() + CEILING
        while owner.get(f"/api/jobs/{planted.ids['job']}").json()["status"] != "completed":
            assert time.monotonic() < deadline, "the mine did not finish"
            time.sleep(0.05)
        mined = owner.get("/api/drawers", params={"wing": PLANTED_WING, "limit": 50}).json()["drawers"]
        planted.ids["mined drawer"] = next(d["id"] for d in mined if d["id"] != planted.ids["drawer"])
        visible = owner.post("/api/notes", json={"content": "The team lantern is blue.", "wing": "team"})
        assert visible.status_code == 201
        # A drawer and an entity of the token's own: its entity writes name what is out of scope.
        own = owner.post("/api/notes", json={"content": "The notes owl keeps the index.", "wing": "notes"}).json()
        planted.own["drawer"] = own["drawer"]["id"]
        owl = owner.post(f"/api/drawers/{planted.own['drawer']}/mentions", json={"entity": "Notes Owl"})
        planted.own["entity"] = owl.json()["id"]
        # A wing the token reads one room of: the room beside it holds the marker too.
        beside = {"content": f"The shared locker {MARKER} code is kq4411x.", "wing": "shared", "room": "private"}
        planted.ids["room drawer"] = owner.post("/api/notes", json=beside).json()["drawer"]["id"]
        shown = {"content": "The shared notice board is green.", "wing": "shared", "room": "public"}
        assert owner.post("/api/notes", json=shown).status_code == 201
        assert owner.post("/api/drawers/" + planted.ids["drawer"] + "/marks", json={"pinned": True}).status_code == 200
        diary = {"agent": "keeper", "content": f"Moved the {MARKER} code kq4411x.", "wing": PLANTED_WING}
        assert owner.post("/api/diary", json=diary).status_code == 201
    yield daemon, full, limited, planted
    daemon.kill()


def _http(daemon: Served, token: str) -> httpx.Client:
    return httpx.Client(base_url=daemon.address, headers={"Authorization": f"Bearer {token}"}, trust_env=False)


def test_the_scoped_token_sees_and_writes_its_own_wings(scoped: tuple[Served, str, str, Planted]) -> None:
    daemon, full, limited, planted = scoped
    with _http(daemon, limited) as http:
        found = http.post("/api/search", json={"query": "team lantern", "ranking": "lexical"}).json()
        assert [h["drawer"]["wing"] for h in found["hits"]] == ["team"], "its own wings are not hidden"
        wrote = http.post("/api/notes", json={"content": "A note of the agent.", "wing": "notes"})
        assert wrote.status_code == 201
        refused = http.post("/api/notes", json={"content": "Into the team wing.", "wing": "team"})
        assert refused.status_code == 403 and "notes" in refused.json()["error"], "a refusal names the scope"
        assert [w["name"] for w in http.get("/api/wings").json()["wings"]] == ["notes", "shared", "team"]
        # Its status counts its places alone, and no jobs.
        with _http(daemon, full) as owner:
            places = ({"wing": "team"}, {"wing": "notes"}, {"wing": "shared", "room": "public"})
            held = sum(len(owner.get("/api/drawers", params={**p, "limit": 200}).json()["drawers"]) for p in places)
            whole = owner.get("/api/status").json()["drawers"]
        status = http.get("/api/status").json()
        assert (status["drawers"], status["jobs"], status["extraction"]["facts"]) == (held, {}, 0) and held < whole
        assert [r["name"] for r in http.get("/api/wings/shared/rooms").json()["rooms"]] == ["public"]
        board = http.post("/api/search", json={"query": "shared locker notice board", "ranking": "lexical"}).json()
        assert [(h["drawer"]["wing"], h["drawer"]["room"]) for h in board["hits"]] == [("shared", "public")]
        drafted = http.post("/api/notes", json={"content": "A draft.", "wing": "shared", "room": "drafts"})
        assert drafted.status_code == 201, "a room of the write scope"
        assert http.post("/api/notes", json={"content": "No.", "wing": "shared", "room": "public"}).status_code == 403
        room = http.get(f"/api/drawers/{planted.ids['room drawer']}")
        assert room.status_code == 404
        gone = http.get(f"/api/drawers/{planted.ids['drawer']}")
        assert gone.status_code == 404 and gone.json()["error"] == f"no drawer {planted.ids['drawer']}"


def _rest_calls(paths: dict[str, Any], planted: Planted) -> list[tuple[str, str, dict[str, Any]]]:
    """Every route of the API, with path parameters naming what is out of scope (and id prefixes of it), and bodies
    that ask for the marker."""
    values = {
        "drawer_id": [
            planted.ids["drawer"],
            planted.ids["drawer"][:8],
            planted.ids["mined drawer"],
            planted.ids["room drawer"],
        ],
        "drawer": [planted.ids["drawer"], planted.ids["room drawer"]],  # a room's drawer by path (by id here)
        "fact_id": [planted.ids["fact"], planted.ids["fact"][:8]],
        "entity_id": [planted.ids["entity"], planted.ids["entity"][:8]],
        "job_id": [planted.ids["job"], planted.ids["job"][:8]],
        "wing": [PLANTED_WING, "shared"],
        "room": ["notes", "private"],
        "name": ["owner"],
        "source_id": ["anything"],
        "action": ["pause"],
    }
    bodies = {
        "/api/search": [{"query": MARKER}, {"query": MARKER, "wing": PLANTED_WING}, {"query": "vault tunnel code"},
                        {"query": MARKER, "include_historical": True, "include_hidden": True, "expand": True}],
        "/api/recall": [{"query": MARKER}, {"query": "vault code dawn"}],
        "/api/forget": [{"scope": "search", "search": {"query": MARKER}}, {"scope": "wing", "wing": PLANTED_WING},
                        {"scope": "drawer", "drawer_id": planted.ids["drawer"]}],
        "/api/facts": [{"subject": "Ana", "predicate": "uses", "object": "Vim",
                        "evidence_drawer": planted.ids["drawer"]}],
    }  # fmt: skip
    # Entity writes on the token's own drawer and entity that name the planted entity by alias and by id: they must
    # resolve among what it sees, as if nothing else held that name (no 409 naming another, no other entity back).
    own_drawer, own_entity = planted.own["drawer"], planted.own["entity"]
    calls = [
        ("POST", f"/api/entities/{own_entity}/aliases", {"alias": PLANTED_ALIAS}),
        ("POST", f"/api/drawers/{own_drawer}/mentions", {"entity": PLANTED_ALIAS}),
        ("POST", f"/api/drawers/{own_drawer}/mentions", {"entity": planted.ids["object entity"]}),
        ("POST", f"/api/drawers/{own_drawer}/mentions", {"entity": planted.ids["entity"], "kind": "person"}),
        ("POST", "/api/facts", {"subject": PLANTED_ALIAS, "predicate": "uses", "object": "Notes Owl",
                                "evidence_drawer": own_drawer}),
        ("GET", f"/api/entities/{own_entity}", {}),
        ("GET", f"/api/entities/{own_entity}/relationships", {}),
        ("GET", f"/api/graph?entity={PLANTED_ALIAS}&depth=2", {}),
        ("GET", f"/api/graph?drawer={own_drawer}&depth=2", {}),
        ("GET", f"/api/entities?name={PLANTED_ALIAS}", {}),
        ("GET", "/api/entities/candidates", {}),
    ]  # fmt: skip
    for path, methods in paths.items():
        for method in methods:
            if path in ("/api/health", "/api/shutdown", "/api/events"):
                continue  # the event stream never ends: test_the_event_stream_carries_only_the_scope follows it
            names = re.findall(r"{(\w+)}", path)
            fillings = [{}] if not names else [dict(zip(names, combo, strict=True)) for combo in _combos(names, values)]
            for filling in fillings:
                url = path.format(**filling)
                for body in bodies.get(path, [{"query": MARKER, "wing": PLANTED_WING, "content": MARKER}]):
                    calls.append((method.upper(), url, body))
    return calls


def _combos(names: list[str], values: dict[str, list[str]]) -> list[tuple[str, ...]]:
    combos: list[tuple[str, ...]] = [()]
    for name in names:
        combos = [(*c, v) for c in combos for v in values[name]]
    return combos


def test_no_rest_route_shows_the_scoped_token_anything_outside_its_wings(
    scoped: tuple[Served, str, str, Planted],
) -> None:
    daemon, full, limited, planted = scoped
    with _http(daemon, full) as owner:
        paths = {p: list(ops) for p, ops in owner.get("/openapi.json").json()["paths"].items()}
    calls = _rest_calls(paths, planted)
    assert len({(m, u.split("/")[2]) for m, u, _ in calls}) > 20, "every route group is driven"
    leaks = []
    owned: list[tuple[str, int, str]] = []  # the answers to its writes on its own drawer and entity: done, not refused
    with _http(daemon, limited) as http:
        for method, url, body in calls:
            params: dict[str, str] | None = {"q": MARKER, "query": MARKER, "wing": PLANTED_WING,
                                             "drawer": planted.ids["drawer"], "agent": "a"}  # fmt: skip
            params = None if "?" in url else params  # a call that names its own query asks just that
            answer = http.request(method, url, json=body if method != "GET" else None, params=params)
            sent = f"{url} {json.dumps(body)} {json.dumps(params)}"
            found = planted.leaks(answer.text, sent, refused=answer.status_code >= 400)
            if found:
                leaks.append((method, url, answer.status_code, found))
            if planted.own["drawer"] in url or planted.own["entity"] in url:
                owned.append((url, answer.status_code, answer.text[:200]))
        # The alias is its entity's (nobody it sees holds it), the name then resolves to that; by id the planted
        # entity is as unknown.
        assert [c for _, c, _ in owned[:4]] == [200, 201, 404, 404], owned[:4]
        assert [o for o in owned[4:] if o[1] != 200] == []
        # A write outside the write scope is refused, naming it; the planted drawer is still there.
        assert http.post("/api/notes", json={"content": MARKER, "wing": PLANTED_WING}).status_code == 403
    assert not leaks, leaks
    with _http(daemon, full) as owner:
        assert owner.get(f"/api/drawers/{planted.ids['drawer']}").status_code == 200, "nothing was erased"
        assert owner.get(f"/api/facts/{planted.ids['fact']}").status_code == 200


MCP_ARGUMENTS: dict[str, list[dict[str, Any]]] = {
    "memcastle_search": [{"query": MARKER}, {"query": MARKER, "wing": PLANTED_WING, "full": True}],
    "memcastle_recall": [{"query": MARKER}],
    "memcastle_wake_up": [{"agent": "anyone"}, {"agent": "anyone", "wing": PLANTED_WING}],
    "memcastle_diary_read": [{"agent": "anyone"}],
    "memcastle_diary_write": [{"agent": "a", "content": MARKER, "wing": PLANTED_WING}],
    "memcastle_note": [{"content": MARKER, "wing": PLANTED_WING}],
    "memcastle_checkpoint": [{"items": [{"content": MARKER, "wing": PLANTED_WING}]}],
    "memcastle_get_drawer": [{"drawer_id": "{drawer}"}, {"drawer_id": "{drawer8}"}],
    "memcastle_history": [{"drawer_id": "{drawer}"}],
    "memcastle_duplicates": [{"drawer_id": "{drawer}"}],
    "memcastle_explain_preference": [{"drawer_id": "{drawer}"}],
    "memcastle_wing_list": [{}, {"wing": PLANTED_WING}, {"wing": "shared"}],
    "memcastle_drawer_supersede": [{"drawer_id": "{drawer}", "content": "changed"}],
    "memcastle_drawer_mark": [{"drawer_id": "{drawer}", "hidden": True}],
    "memcastle_forget": [
        {"scope": "drawer", "drawer_id": "{drawer}"},
        {"scope": "wing", "wing": PLANTED_WING},
        {"scope": "search", "query": MARKER},
    ],
    "memcastle_fact_list": [{}, {"subject": f"Ana {MARKER}"}],
    "memcastle_fact_get": [{"fact_id": "{fact}"}, {"fact_id": "{fact8}"}],
    "memcastle_fact_history": [{"fact_id": "{fact}"}],
    "memcastle_fact_supersede": [{"fact_id": "{fact}", "object": "Elsewhere", "reason": "moved"}],
    "memcastle_fact_invalidate": [{"fact_id": "{fact}", "reason": "wrong"}],
    "memcastle_fact_link": [{"fact_id": "{fact}", "to": "{fact}", "kind": "confirms", "reason": "same"}],
    "memcastle_job_list": [{}],
    "memcastle_job_get": [{"job_id": "{job}"}],
    "memcastle_job_control": [{"job_id": "{job}", "action": "retry"}],
    "memcastle_mine": [{"connector": "notes", "locator": "."}],
    "memcastle_miner_list": [{}],
    "memcastle_miner_get": [{"name": "any"}],
    "memcastle_miner_run": [{"name": "any"}],
    "memcastle_entity": [
        {"entity": f"Ana {MARKER}"},
        {"entity": "{entity}"},
        {"entity": PLANTED_ALIAS},
        {"entity": "{object}"},
    ],
    "memcastle_graph": [
        {"entity": f"Ana {MARKER}", "depth": 2},
        {"drawer": "{drawer}"},
        {"entity": PLANTED_ALIAS, "depth": 2},
        {"drawer": "{own}", "depth": 2},
    ],
    "memcastle_audit": [{}],
    "memcastle_repair": [{}, {"dry_run": False}],
    "memcastle_status": [{}],
    "memcastle_set_mode": [{"mode": "read_only"}],
}


def test_no_mcp_tool_shows_the_scoped_token_anything_outside_its_wings(
    scoped: tuple[Served, str, str, Planted],
) -> None:
    daemon, _, limited, planted = scoped
    assert set(MCP_ARGUMENTS) == set(TOOLS), "every tool is driven (a new tool needs its arguments here)"
    ids = {"drawer": planted.ids["drawer"], "drawer8": planted.ids["drawer"][:8], "fact": planted.ids["fact"],
           "fact8": planted.ids["fact"][:8], "job": planted.ids["job"], "entity": planted.ids["entity"],
           "object": planted.ids["object entity"], "own": planted.own["drawer"]}  # fmt: skip
    leaks: list[Any] = []
    answered: list[str] = []

    async def scenario() -> None:
        headers = {"Authorization": f"Bearer {limited}"}
        async with httpx2.AsyncClient(headers=headers, trust_env=False, timeout=CEILING) as http:
            async with Client(streamable_http_client(daemon.address + "/mcp", http_client=http)) as client:
                for tool, calls in MCP_ARGUMENTS.items():
                    for arguments in calls:
                        filled = {k: (v.format(**ids) if isinstance(v, str) else v) for k, v in arguments.items()}
                        result = await client.call_tool(tool, filled)
                        text = "".join(b.text for b in result.content if isinstance(b, TextContent))
                        if not result.is_error:
                            answered.append(tool)
                        if found := planted.leaks(text, json.dumps(filled), refused=bool(result.is_error)):
                            leaks.append((tool, filled, found))
                found = await client.call_tool("memcastle_search", {"query": "team lantern"})
                assert "team lantern" in "".join(b.text for b in found.content if isinstance(b, TextContent))

    anyio.run(scenario)
    assert not leaks, leaks
    assert {"memcastle_search", "memcastle_fact_list", "memcastle_wing_list"} <= set(answered)


def test_no_web_page_shows_the_scoped_token_anything_outside_its_wings(
    scoped: tuple[Served, str, str, Planted],
) -> None:
    daemon, _, limited, planted = scoped
    drawer, fact = planted.ids["drawer"], planted.ids["fact"]
    pages = {
        "/": [f"/?q={MARKER}", f"/?q={MARKER}&wing={PLANTED_WING}&time=any&include_hidden=true", "/"],
        "/browse": [
            "/browse",
            f"/browse?wing={PLANTED_WING}",
            "/browse?wing=shared",
            "/browse?wing=shared&room=private",
        ],
        "/drawer/{drawer_id}": [f"/drawer/{drawer}", f"/drawer/{drawer[:8]}"],
        "/facts": ["/facts", "/facts?state=current", f"/facts?subject=Ana%20{MARKER}"],
        "/facts/{fact_id}": [f"/facts/{fact}", f"/facts/{fact[:8]}"],
        "/jobs": ["/jobs"],
        "/jobs/{job_id}/row": [f"/jobs/{planted.ids['job']}/row"],
        "/preferences": ["/preferences"],
        "/forget": [f"/forget?query={MARKER}", f"/forget?drawer={drawer}", f"/forget?wing={PLANTED_WING}"],
        "/login": ["/login"],
        "/audit": ["/audit", f"/audit?drawer={drawer}"],
        "/graph": [
            "/graph",
            f"/graph?entity=Ana%20{MARKER}",
            f"/graph?entity={planted.ids['entity']}",
            f"/graph?drawer={drawer}",
            f"/graph?entity={PLANTED_ALIAS}",
            f"/graph?drawer={planted.own['drawer']}",
        ],  # fmt: skip
        "/overview": ["/overview"],
        "/miners": ["/miners"],
        "/settings": ["/settings"],
        "/mine": ["/mine", "/mine?connector=notes"],
        "/maintenance": ["/maintenance"],
        "/diaries": ["/diaries", "/diaries?agent=keeper", f"/diaries?agent=keeper&wing={PLANTED_WING}"],
    }
    concerns = (audit, drawers, forgetting, jobs, knowledge, login, search, overview, work)
    shown = {r.path for c in concerns for r in c.router.routes if "GET" in getattr(r, "methods", ())}
    assert shown == set(pages), "every page is visited (a new page needs its visits here)"
    leaks = []
    with _http(daemon, limited) as http:
        for urls in pages.values():
            for url in urls:
                answer = http.get(url)
                if found := planted.leaks(answer.text, url.replace("%20", " "), refused=answer.status_code >= 400):
                    leaks.append((url, answer.status_code, found))
        assert "team" in http.get("/browse").text
    assert not leaks, leaks


def test_the_event_stream_carries_only_the_scope(scoped: tuple[Served, str, str, Planted]) -> None:
    daemon, full, limited, planted = scoped
    with _http(daemon, limited) as http:
        assert http.get("/api/events", params={"kinds": "job"}).status_code == 403, "job events cover the palace"
    received: list[str] = []
    ready = threading.Event()
    awaited: dict[str, str] = {}

    def follow() -> None:
        with _http(daemon, limited) as http, http.stream("GET", "/api/events", timeout=CEILING) as stream:
            ready.set()
            for line in stream.iter_lines():
                received.append(line)
                if ("id" in awaited and any(awaited["id"] in seen for seen in received)) or len(received) > 200:
                    return

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    assert ready.wait(CEILING)
    time.sleep(0.5)  # the subscription is in place once the response has started
    with _http(daemon, full) as owner:
        hidden = owner.post("/api/notes", json={"content": f"{MARKER} kq4411x again", "wing": PLANTED_WING}).json()
        shown = owner.post("/api/notes", json={"content": "A team note for the board", "wing": "team"}).json()
        awaited["id"] = shown["drawer"]["id"]
        owner.post("/api/notes", json={"content": "One more team note", "wing": "team"})  # wakes a follower that
    follower.join(CEILING)  # read the awaited event before its id was known
    assert not follower.is_alive()
    stream_text = "\n".join(received)
    assert shown["drawer"]["id"] in stream_text, "the scope's own writes are followed"
    assert hidden["drawer"]["id"] not in stream_text and PLANTED_WING not in stream_text
    assert not planted.leaks(stream_text) and "job" not in stream_text.replace('"kind"', "")


def test_a_token_limited_to_some_tools_lists_and_calls_only_those(
    scoped: tuple[Served, str, str, Planted], tmp_path: Path, cli_runner: Any
) -> None:
    daemon, full, _, _ = scoped
    created = cli_runner(
        ["--palace", str(tmp_path / "p"), "--json", "auth", "token", "create", "reader", "--tools",
         "memcastle_search,memcastle_get_drawer"],
        env=daemon.env,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["tools"] == ["memcastle_get_drawer", "memcastle_search"]
    wrong = cli_runner(["--palace", str(tmp_path / "q"), "auth", "token", "create", "x", "--tools", "memcastle_nope"],
                       env=daemon.env)  # fmt: skip
    assert wrong.returncode != 0 and "memcastle_nope" in wrong.stderr
    with _http(daemon, full) as owner:
        refused = owner.post("/api/auth/tokens", json={"name": "bad", "tools": ["memcastle_nope"]})
        assert refused.status_code == 400 and refused.json()["field"] == "tools"
        made = owner.post("/api/auth/tokens", json={"name": "lister", "tools": ["memcastle_search"]}).json()
    outcome: dict[str, Any] = {}

    async def scenario() -> None:
        headers = {"Authorization": f"Bearer {made['token']}"}
        async with httpx2.AsyncClient(headers=headers, trust_env=False, timeout=CEILING) as http:
            async with Client(streamable_http_client(daemon.address + "/mcp", http_client=http)) as client:
                outcome["listed"] = [tool.name for tool in (await client.list_tools()).tools]
                outcome["instructions"] = client.instructions or ""
                outcome["search"] = await client.call_tool("memcastle_search", {"query": "team lantern"})
                outcome["note"] = await client.call_tool("memcastle_note", {"content": "not allowed"})

    anyio.run(scenario)
    assert outcome["listed"] == ["memcastle_search"], "an agent lists only the tools it may call"
    told = set(re.findall(r"memcastle_[a-z_]+", outcome["instructions"]))
    assert told == {"memcastle_search"}, "and is told only about those"
    assert not outcome["search"].is_error
    assert outcome["note"].is_error and "memcastle_search" in outcome["note"].content[0].text


def test_a_token_limited_to_some_route_groups_uses_only_those(scoped: tuple[Served, str, str, Planted]) -> None:
    daemon, full, _, _ = scoped
    with _http(daemon, full) as owner:
        groups = {tag for ops in owner.get("/openapi.json").json()["paths"].values() for op in ops.values()
                  for tag in op.get("tags", [])}  # fmt: skip
        assert groups <= set(ROUTE_GROUPS), "every route's group can be named in a token"
        refused = owner.post("/api/auth/tokens", json={"name": "bad-routes", "routes": ["everything"]})
        assert refused.status_code == 400 and refused.json()["field"] == "routes"
        made = owner.post("/api/auth/tokens", json={"name": "search-only", "routes": ["search", "status"]}).json()
    with _http(daemon, made["token"]) as http:
        assert http.post("/api/search", json={"query": "team lantern"}).status_code == 200
        assert http.get("/api/status").status_code == 200
        wings = http.get("/api/wings")
        assert wings.status_code == 403 and "search, status" in wings.json()["error"]
        assert http.get("/").status_code == 403, "the pages are a group of their own (web)"


def test_tokens_list_their_scope_and_the_cli_creates_one(
    scoped: tuple[Served, str, str, Planted], tmp_path: Path
) -> None:
    daemon, full, limited, _ = scoped
    with _http(daemon, full) as owner:
        listed = {t["name"]: t for t in owner.get("/api/auth/tokens").json()["tokens"]}
        assert (listed["agent"]["read"], listed["agent"]["write"]) == (
            ["notes", "shared/public", "team"],
            ["notes", "shared/drafts"],
        )
        assert (listed["owner"]["read"], listed["owner"]["write"]) == (None, None)
    with _http(daemon, limited) as http:
        # A scoped token cannot mint itself a wider one, whatever its mode.
        assert http.post("/api/auth/tokens", json={"name": "wider"}).status_code == 403
