"""No MCP answer exceeds its budget, whatever the arguments: the server's default (`mcp.max_chars`) when a call sets
none, its own `max_chars` when it does; what is left out is counted and said, and a single item larger than the
budget is cut and marked rather than sent whole."""

from __future__ import annotations

import json
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from memcastle.app import Palace
from memcastle.mcp.server import build_mcp_server
from memcastle.services.views import size, within

BUDGET = 3_000
WORDS = "harbor deploy staging ledger port backup rotation schedule owner checkout".split()


def filled(palace: Palace) -> list[str]:
    """Drawers far larger together than any budget, each sharing the query words."""
    ids = []
    for n in range(40):
        text = f"# Note {n}\n\n" + " ".join(WORDS[(n + i) % len(WORDS)] for i in range(700))
        ids.append(palace.services.drawers.save_note(text, wing="big", name=f"note-{n}").drawer.id)
    return ids


def test_no_answer_exceeds_its_budget_whatever_the_arguments(palace: Palace) -> None:
    ids = filled(palace)
    server = build_mcp_server(palace.services, allowed_hosts=[], tools="full", max_chars=BUDGET)

    def ask(tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        async def scenario() -> tuple[bool, str]:
            async with Client(server) as client:
                result = await client.call_tool(tool, arguments)
            return bool(result.is_error), result.content[0].text  # type: ignore[union-attr]

        return anyio.run(scenario)

    calls = st.one_of(
        st.tuples(
            st.sampled_from(["memcastle_search", "memcastle_recall"]),
            st.fixed_dictionaries(
                {"query": st.sampled_from(["harbor deploy", "ledger", "staging port owner"])},
                optional={
                    "limit": st.integers(1, 200),
                    "full": st.booleans(),
                    "max_chars": st.integers(200, 20_000),
                },
            ),
        ),
        st.tuples(
            st.just("memcastle_get_drawer"),
            st.fixed_dictionaries(
                {"drawer_id": st.sampled_from(ids)}, optional={"max_chars": st.integers(200, 20_000)}
            ),
        ),
        st.tuples(
            st.sampled_from(["memcastle_wake_up"]),
            st.fixed_dictionaries({"agent": st.just("ana")}, optional={"max_chars": st.integers(200, 20_000)}),
        ),
    )

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(call=calls)
    def bounded(call: tuple[str, dict[str, Any]]) -> None:
        tool, arguments = call
        failed, text = ask(tool, arguments)
        assert len(text) <= arguments.get("max_chars", BUDGET), (tool, arguments, len(text))
        if not failed:
            json.loads(text)  # a whole answer, never a broken one

    bounded()


def test_a_cut_answer_says_what_it_left_out_and_how_to_ask(palace: Palace) -> None:
    filled(palace)
    server = build_mcp_server(palace.services, allowed_hosts=[], tools="full", max_chars=BUDGET)

    async def scenario() -> str:
        async with Client(server) as client:
            result = await client.call_tool("memcastle_search", {"query": "harbor deploy", "limit": 50, "full": True})
            return result.content[0].text  # type: ignore[union-attr]

    text = anyio.run(scenario)
    answer = json.loads(text)
    assert len(text) <= BUDGET and answer["omitted"] > 0 and "max_chars" in answer["note"]
    assert f"at most {BUDGET:,} characters unless the call sets max_chars" in server.instructions, "stated once"


def test_one_item_larger_than_the_budget_is_cut_and_marked() -> None:
    for text in ("x" * 10_000, '"\n\\' * 4_000, "é☃" * 5_000):
        cut = within({"content": text, "id": "a"}, BUDGET)
        assert size(cut) <= BUDGET and cut["cut"] is True and cut["chars"] > BUDGET
        assert cut["start"] and "set max_chars" in cut["note"]
    small = {"content": "short"}
    assert within(small, BUDGET) is small
