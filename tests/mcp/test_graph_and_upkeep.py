"""The tools of the full profile that real use asked for: an entity's page, the graph around an entity or a drawer,
the original's trigger names for miners, and an audit a repair can be based on — over the SDK, against a daemon."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from test_mcp_http import call, connect, in_process, refused, run

from memcastle.mcp.profiles import HEADER

FULL = {HEADER: "full"}
CEILING = 60.0


async def finished(client: Any, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + CEILING
    while True:
        job = await call(client, "memcastle_job_get", job_id=job_id)
        if job["status"] in ("completed", "failed"):
            return job
        assert time.monotonic() < deadline, f"job {job_id} did not finish"
        time.sleep(0.05)


def test_an_entity_page_and_its_neighbourhood(module_daemon: Any) -> None:
    async def scenario() -> None:
        async with in_process(module_daemon, tools="full") as client:
            items = [
                {"content": "Otterby uses Skiff for deploys.", "wing": "graph",
                 "fact": {"subject": "Otterby", "predicate": "uses", "object": "Skiff"}},
                {"content": "Skiff depends on Lantern.", "wing": "graph",
                 "fact": {"subject": "Skiff", "predicate": "depends_on", "object": "Lantern"}},
            ]  # fmt: skip
            written = (await call(client, "memcastle_checkpoint", items=items))["drawers"]
            page = await call(client, "memcastle_entity", entity="otterby")  # names match whatever their case
            assert page["name"] == "Otterby"
            assert "Otterby uses Skiff" in {f["fact"] for f in page["facts"]}
            assert written[0]["id"][:8] in page["mentions"]
            by_id = await call(client, "memcastle_entity", id=page["id"][:8])  # the original's argument name
            assert by_id["id"] == page["id"]

            near = await call(client, "memcastle_graph", entity="Otterby")
            assert any(line.startswith("Otterby uses Skiff [current]") for line in near["facts"])
            assert not any("Lantern" in line for line in near["facts"]), "depth 1 stops at the neighbours"
            far = await call(client, "memcastle_graph", entity="Otterby", depth=2)
            assert any(line.startswith("Skiff depends_on Lantern") for line in far["facts"])
            around = await call(client, "memcastle_graph", drawer=written[1]["id"])
            assert any("Skiff depends_on Lantern" in line for line in around["facts"])

            missing = await refused(client, "memcastle_graph", entity="Nobody-Here")
            assert missing.structured_content is not None and "fact_list" in missing.structured_content["help"]
            missing = await refused(client, "memcastle_entity", entity="Nobody-Here")
            assert missing.structured_content is not None and missing.structured_content["code"] == "not_found"
            deep = await refused(client, "memcastle_graph", entity="Otterby", depth=3)
            assert deep.structured_content is not None and deep.structured_content["field"] == "depth"

    run(scenario)


def test_the_originals_trigger_names_reach_the_miners(module_daemon: Any) -> None:
    async def scenario() -> None:
        async with in_process(module_daemon) as client:  # not listed by core; answered by name
            listed = await call(client, "memcastle_trigger_list")
            assert "miners" in listed
            unknown = await refused(client, "memcastle_trigger_get", trigger_id="no-such-miner")
            assert unknown.structured_content is not None and unknown.structured_content["code"] == "not_found"
            assert "no-such-miner" in unknown.structured_content["error"]

    run(scenario)


def test_an_audit_then_a_repair_based_on_it(module_daemon: Any) -> None:
    async def scenario() -> None:
        db = sqlite3.connect(module_daemon.palace / "palace.sqlite3", isolation_level=None)
        db.execute("INSERT INTO drawer_tag(drawer_seq, tag) VALUES (434343, 'ghost-of-mcp')")
        db.close()
        async with connect(module_daemon.address, headers=FULL) as client:  # set_mode: a mode is kept per HTTP session
            audit = await finished(client, (await call(client, "memcastle_audit"))["job"]["id"])
            assert audit["status"] == "completed"
            based = audit["id"][:8]
            would = await call(client, "memcastle_repair", based_on_job=based, checks=["orphan_tags"])
            assert would == {"would_repair": ["orphan_tags"], "dry_run": True}, "a dry run by default"
            preview = await call(client, "memcastle_repair")
            assert preview["dry_run"] is True and preview["job"]["kind"] == "audit"

            unknown = await refused(client, "memcastle_repair", checks=["everything_else"])
            assert unknown.structured_content is not None and unknown.structured_content["field"] == "checks"
            applied = await call(client, "memcastle_repair", based_on_job=based, checks=["orphan_tags"], dry_run=False)
            done = await finished(client, applied["job"]["id"])
            assert done["kind"] == "repair" and done["result"]["repaired"] == {"orphan_tags": 1}, done
            not_audit = await refused(client, "memcastle_repair", based_on_job=done["id"][:8], dry_run=False)
            assert not_audit.structured_content is not None
            assert not_audit.structured_content["field"] == "based_on_job"
            clean = await finished(client, (await call(client, "memcastle_audit"))["job"]["id"])
            again = await call(client, "memcastle_repair", based_on_job=clean["id"], checks=["orphan_tags"])
            assert again["job"] is None and "found nothing" in again["note"]

            await call(client, "memcastle_set_mode", mode="read_only")
            denied = await refused(client, "memcastle_repair", dry_run=False)
            assert denied.structured_content is not None and denied.structured_content["code"] == "forbidden"

    run(scenario)


async def checkpointed_fact(client: Any, content: str, wing: str, subject: str, object_: str) -> dict[str, Any]:
    """A checkpoint that states `subject uses object_`, and that fact as memcastle_fact_list shows it."""
    item = {"content": content, "wing": wing, "fact": {"subject": subject, "predicate": "uses", "object": object_}}
    await call(client, "memcastle_checkpoint", items=[item])
    [fact] = (await call(client, "memcastle_fact_list", subject=subject))["facts"]
    return dict(fact)


def test_a_facts_history_as_it_stood_then_by_the_originals_names(module_daemon: Any) -> None:
    async def scenario() -> None:
        async with in_process(module_daemon, tools="full") as client:
            fact = await checkpointed_fact(client, "The Quayside staging port is 8443.", "history-as-of",
                                           "Quayside staging", "port 8443")  # fmt: skip
            middle = (await call(client, "memcastle_fact_get", fact_id=fact["id"]))["valid_from"]
            time.sleep(0.01)
            changed = await call(client, "memcastle_fact_supersede", fact_id=fact["id"], object="port 9443",
                                 reason="moved")  # fmt: skip
            now = await call(client, "memcastle_fact_history", relationship_id=fact["id"][:8])
            assert [f["id"] for f in now["facts"]] == [fact["id"], changed["fact"]["id"]]
            then = await call(client, "memcastle_fact_history", relationship_id=fact["id"], as_of=middle)
            assert [(f["id"], f["state"]) for f in then["facts"]] == [(fact["id"], "current")], then
            bad = await refused(client, "memcastle_fact_history", fact_id=fact["id"], as_of="yesterday-ish")
            assert bad.structured_content is not None and bad.structured_content["field"] == "as_of"

    run(scenario)


def test_a_corrected_or_ended_fact_read_alone_says_what_replaced_it_or_why(module_daemon: Any) -> None:
    """The old fact's links used to read `supersedes <new>` — the new fact's word for it — and an invalidation just
    `invalidates`, with neither target nor reason."""

    async def scenario() -> None:
        async with in_process(module_daemon, tools="full") as client:
            fact = await checkpointed_fact(client, "The Wharfside build runs on port 7001.", "links-read-alone",
                                           "Wharfside build", "port 7001")  # fmt: skip
            changed = await call(client, "memcastle_fact_supersede", fact_id=fact["id"], object="port 7002",
                                 reason="moved")  # fmt: skip
            new = changed["fact"]["id"]
            old, replacement = (await call(client, "memcastle_fact_history", fact_id=fact["id"]))["facts"]
            assert old["state"] == "superseded" and old["links"] == [f"superseded by {new[:8]}"], old
            assert replacement["links"] == [f"supersedes {fact['id'][:8]}"], replacement
            # The old fact keeps its evidence; the replacement, given none, says so; both say why they rank so.
            assert old["evidence"] == fact["evidence"] and replacement["evidence"] == "none given", replacement
            assert old["preference"] == replacement["preference"] == "normal +0.000 (default)"
            given = await call(client, "memcastle_fact_supersede", fact_id=new, object="port 7003",
                               evidence_drawer=fact["evidence"], reason="moved again")  # fmt: skip
            assert given["fact"]["evidence"] == fact["evidence"], "the evidence it was given"
            new = given["fact"]["id"]
            await call(client, "memcastle_fact_invalidate", fact_id=new, reason="the build moved to CI")
            ended = (await call(client, "memcastle_fact_history", fact_id=new))["facts"][-1]
            assert ended["state"] == "invalidated", ended
            assert sorted(ended["links"]) == [
                "invalidated: the build moved to CI",
                f"supersedes {changed['fact']['id'][:8]}",
            ]

    run(scenario)


def test_a_correction_keeps_the_agent_that_made_it(module_daemon: Any) -> None:
    """`memcastle_drawer_supersede` took no agent: a correction read as the MCP client's ("mcp")."""

    async def scenario() -> None:
        async with in_process(module_daemon, tools="full") as client:
            noted = await call(client, "memcastle_note", content="The gate opens at six.", wing="corrector",
                               agent="claude-code")  # fmt: skip
            fixed = await call(client, "memcastle_drawer_supersede", drawer_id=noted["drawer"]["id"],
                               content="The gate opens at seven.", reason="new hours", agent="codex")  # fmt: skip
            with module_daemon.http() as http:
                shown = http.get(f"/api/drawers/{fixed['drawer']['id']}").json()
            assert shown["source"]["agent"] == "codex" and shown["provenance"]["reason"] == "new hours", shown

    run(scenario)
