"""Redaction runs in time linear in its input: no rule backtracks over what it has already read.

A pattern that backtracks quadratically holds the interpreter for minutes on a few hundred kilobytes (an OpenAI-key
rule took 17 s of CPU on a 64 KB note of `sk-` repeated, and would have taken about an hour at the 1 MB limit).
Each rule is fed the inputs that make such patterns blow up — its own prefixes repeated with every separator, a
prefix followed by a long run, a run followed by a prefix — and must finish each in a bounded share of CPU. Times
are this thread's CPU seconds, so other work on the machine does not move them.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from planted import PLANTED
from waiting import CEILING

from memcastle.app import Palace
from memcastle.connectors.builtin import builtin_connectors
from memcastle.connectors.registry import load_registry
from memcastle.connectors.secrets import RULES, RedactionTooCostly, Redactor, Rule
from memcastle.jobs.context import JobContext
from memcastle.mining.pipeline import MineLimits, MinePipeline
from memcastle.model.requests import MineRequest

SIZE = 32 * 1024
LIMIT = 1_000_000  # the most one note, diary entry or checkpoint item may hold
PER_RULE_AT_LIMIT_CPU = 0.5
# A linear rule scans 32 KB in well under a millisecond; the quadratic ones took 0.1–1.4 s at half this size.
PER_INPUT_CPU = 0.25
SEPARATORS = ("a", "A1", "-", "_", ".", ":", "=", "@", "/", " ", "\n", '"', "'", "$")


PREFIX_LENGTHS = (1, 2, 3, 4, 5, 6, 8, 11, 16, 24, 40)


def _starts(rule: Rule) -> set[str]:
    """What begins a match of `rule`: its needles, and prefixes of each planted credential of its kind, from where
    its needle starts (`sk-`, `sk-p`, `sk-pr`, …)."""
    starts = set(rule.needles)
    for secret in PLANTED:
        if secret.kind != rule.kind:
            continue
        text = secret.context
        at = min((i for needle in rule.needles if (i := text.lower().find(needle.lower())) >= 0), default=0)
        starts.update(text[at : at + length] for length in PREFIX_LENGTHS if at + length <= len(text))
    return starts


def _attacks(rule: Rule, size: int = SIZE) -> Iterator[tuple[str, str]]:
    for start in sorted(_starts(rule)):
        for separator in SEPARATORS:
            unit = start + separator
            yield f"({start!r}+{separator!r})*k", unit * (size // len(unit))
            yield f"{start!r}+{separator!r}*k", start + separator * ((size - len(start)) // len(separator))
        yield f"{start!r}*k", start * (size // len(start))


def _cpu(work: Any, *args: Any, **kwargs: Any) -> float:
    started = time.thread_time()
    work(*args, **kwargs)
    return time.thread_time() - started


@pytest.mark.parametrize("rule", RULES, ids=[f"{i}-{rule.kind}" for i, rule in enumerate(RULES)])
def test_every_rule_is_linear_on_adversarial_input(rule: Rule) -> None:
    """Every attack at 32 KB within a bound; then the one that cost most, again at the 1,000,000-character limit."""
    slow, worst = [], ("", 0.0)
    for name, text in _attacks(rule):
        spent = _cpu(rule.pattern.sub, "x", text)
        if spent > PER_INPUT_CPU:
            slow.append((name[:60], round(spent, 3)))
        worst = max(worst, (name, spent), key=lambda pair: pair[1])
    assert not slow, slow
    at_the_limit = next(text for name, text in _attacks(rule, LIMIT) if name == worst[0])
    assert _cpu(rule.pattern.sub, "x", at_the_limit) < PER_RULE_AT_LIMIT_CPU, worst[0]


def test_the_cost_grows_linearly_with_the_input() -> None:
    """Eight times the input costs about eight times the CPU (a quadratic rule would cost sixty-four times)."""
    redactor = Redactor()
    for unit in ("sk-", "eyJ-", "TOKEN", "glpat-", "://:", "pass", "SG."):
        small = min(_cpu(redactor.text, unit * (16_384 // len(unit)), config=True) for _ in range(3))
        large = min(_cpu(redactor.text, unit * (131_072 // len(unit)), config=True) for _ in range(3))
        assert large < max(small, 0.002) * 24, (unit, small, large)


@pytest.mark.parametrize(
    "unit",
    ["sk-", "sk-A1", "eyJ-", "eyJa.", "TOKEN", "A_TOKEN=x(", "glpat-", "xoxb-", "://:", "pass", "-----BEGIN "],
)
def test_a_megabyte_of_adversarial_text_is_redacted_in_under_a_second(unit: str) -> None:
    text = unit * (1_000_000 // len(unit))
    assert _cpu(Redactor().text, text, config=True) < 1.0


def test_a_megabyte_of_ordinary_text_with_secrets_in_it_is_redacted_in_under_a_second() -> None:
    prose = "The deploy uses the staging key; see notes/ops.md for details. password: hunter2\n"
    planted = "\n".join(secret.context for secret in PLANTED)
    text = ((prose * 40 + planted + "\n") * 40)[:1_000_000]
    assert planted in text
    redactor = Redactor()
    spent = _cpu(redactor.text, text, config=True)
    assert spent < 1.0
    kept = redactor.text(text, config=True).text
    assert not [secret.value for secret in PLANTED if secret.value in kept]


@pytest.mark.parametrize("unit", ["%s", "{}", "%s:", "{a}:", "%(x)s/"])
def test_a_value_that_looks_like_a_format_template_is_checked_in_linear_time(unit: str) -> None:
    """Whether a secret-looking value is only a template ("%s:%s") is asked of every match: it must not backtrack."""
    text = f"DB_PASSWORD = '{unit * (200_000 // len(unit))}x'"
    assert _cpu(Redactor().text, text) < 0.5


def test_a_text_over_the_budget_is_refused_naming_the_field() -> None:
    with pytest.raises(RedactionTooCostly) as refused:
        Redactor(budget=0.0).text("TOKEN" * 200_000, config=True)
    assert refused.value.field == "content" and "nothing was stored" in refused.value.message


def test_a_megabyte_note_of_the_old_attack_does_not_hold_up_other_requests(daemon: Callable[..., Any]) -> None:
    """The old rule held the interpreter 17 s on 64 KB of `sk-` and kept `/api/health` waiting 47 s; at 1 MB it would
    have been about an hour. Now the note is stored while health keeps answering."""
    served = daemon()
    done: dict[str, Any] = {}

    def post() -> None:
        with httpx.Client(base_url=served.address, timeout=CEILING, trust_env=False) as http:
            done["answer"] = http.post("/api/notes", json={"content": "sk-" * 333_332 + "A1", "wing": "redos"})

    writer = threading.Thread(target=post)
    started = time.monotonic()
    writer.start()
    waits = []
    with httpx.Client(base_url=served.address, timeout=CEILING, trust_env=False) as http:
        while writer.is_alive():
            asked = time.monotonic()
            assert http.get("/api/health").json() == {"ok": True}
            waits.append(time.monotonic() - asked)
            time.sleep(0.02)
    writer.join()
    assert done["answer"].status_code == 201, done["answer"].text
    assert time.monotonic() - started < 60
    assert max(waits, default=0.0) < 10, sorted(waits)[-5:]


def test_a_document_over_the_budget_is_skipped_with_the_reason(palace: Palace, tmp_path: Path) -> None:
    """A mine never stores a document it could not check: it is skipped, the rest is filed."""
    folder = Path(os.environ["HOME"]) / "budget-notes"
    folder.mkdir()
    # A text holding a needle of some rule (`@`), so the rules run on it (a text with none is passed in one look).
    (folder / "a.md").write_text("# A\nmail ops@example.com\n")
    palace.pool.drain(5.0)  # the job is run below, with a redactor that has no time at all
    job = palace.services.mining.submit_mine(MineRequest("notes", str(folder), {}, wing="budget")).job
    claimed = palace.store.jobs.claim_next_job("probe", 60.0, ["mine"])
    assert claimed is not None and claimed.id == job.id
    registry = load_registry(builtin_connectors(max_file_bytes=1 << 20))
    pipeline = MinePipeline(palace.store, registry, MineLimits(6000), redactor=Redactor(budget=0.0))
    result = pipeline.run(JobContext(palace.store.jobs, claimed, "probe", 60.0, lambda: False))
    assert result["created"] == 0 and result["skipped"] == 1
    assert "checking it for credentials took more than" in result["skipped_documents"][0]["reason"]
