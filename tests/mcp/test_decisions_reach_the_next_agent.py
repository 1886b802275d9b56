"""A project's decisions reach the next agent: a checkpoint item tagged `decision` in a wing is in every agent's
wake-up for that wing, within its budget; the rest of a checkpoint, and a diary, stay the agent's own."""

from __future__ import annotations

from memcastle.app import Palace
from memcastle.model.requests import CheckpointItem


def test_a_decision_one_agent_checkpointed_wakes_up_with_the_next(palace: Palace) -> None:
    agents = palace.services.agents
    agents.write_checkpoint(
        [
            CheckpointItem(
                "Deploy Harbor with Skiff, not Helm, because the cluster is bare metal.",
                wing="harbor",
                tags=("decision",),
            ),
            CheckpointItem("Half-way through the Skiff migration; the DNS step is next.", wing="harbor"),
        ],  # fmt: skip
        agent="claude-code",
    )
    agents.write_diary("claude-code", "claude-code: migrated two services today.", wing="harbor")
    agents.write_checkpoint(
        [CheckpointItem("Use Postgres 16 for Lantern.", wing="lantern", tags=("decision",))], agent="claude-code"
    )

    codex = agents.wake_up_bundle("codex", wing="harbor")
    assert [d.content for d in codex.decisions] == [
        "Deploy Harbor with Skiff, not Helm, because the cluster is bare metal."
    ]
    assert codex.decisions[0].source.agent == "claude-code"
    assert codex.checkpoints == () and codex.diary == (), "state and diary stay their agent's own"
    assert "decisions" in codex.to_json()

    own = agents.wake_up_bundle("claude-code", wing="harbor")
    assert [d.content for d in own.decisions] == [codex.decisions[0].content]
    assert [d.content for d in own.checkpoints] == ["Half-way through the Skiff migration; the DNS step is next."]
    assert len(own.diary) == 1

    tight = agents.wake_up_bundle("codex", wing="harbor", max_bytes=256)
    assert len(tight.decisions) == 1 and tight.bytes <= 256, "a decision fits the smallest budget"
    assert agents.wake_up_bundle("codex").decisions == (), "without a wing there is no project to share"
