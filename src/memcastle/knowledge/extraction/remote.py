"""Extractors outside the process: a command (JSON over stdin/stdout) or an OpenAI-compatible chat endpoint."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memcastle.errors import ConfigError, ProviderError
from memcastle.knowledge.extraction.contract import (
    DEFAULT_MIN_CONFIDENCE,
    DEFAULT_TIMEOUT,
    ENTITY_KINDS,
    PREDICATES,
    Extraction,
    ExtractionInput,
)
from memcastle.knowledge.extraction.normalize import normalize_extraction
from memcastle.providers.command import ask_command, tail
from memcastle.providers.http import endpoint_url, post_json


def _request_texts(inputs: Sequence[ExtractionInput]) -> list[dict[str, Any]]:
    """The texts as command and http providers receive them: id, text, provenance and preference context."""
    return [
        {
            "id": item.id,
            "text": item.text,
            "provenance": _jsonable(item.provenance),
            "preference": _jsonable(item.preference),
        }
        for item in inputs
    ]


def _jsonable(context: Mapping[str, Any]) -> Any:
    # Timestamps and other values without a JSON form reach the provider as their text.
    return json.loads(json.dumps(dict(context), default=str))


def _read_results(
    answer: Any,
    inputs: Sequence[ExtractionInput],
    *,
    who: str,
    min_confidence: float,
) -> list[Extraction]:
    """Check a provider's {"results": [...]} answer against the inputs and normalize each result. The original
    MemCastle's {"extractions": [...]} (one per text, in order) is read the same way, whichever was asked."""
    key = next((k for k in ("results", "extractions") if isinstance(answer, Mapping) and k in answer), "results")
    if not isinstance(answer, Mapping) or not isinstance(answer.get(key), list):
        raise ProviderError(
            f'{who} answered without a "results" list (nor an "extractions" one): '
            f"{tail(json.dumps(answer, default=str))}"
        )
    results: list[Any] = answer[key]
    if len(results) != len(inputs):
        raise ProviderError(f"{who} answered {len(results)} results for {len(inputs)} texts")
    extractions = []
    for position, (result, item) in enumerate(zip(results, inputs, strict=True)):
        # An echoed id is optional, but a wrong one means the answers are misaligned with the drawers.
        if isinstance(result, Mapping) and result.get("id") is not None and result.get("id") != item.id:
            raise ProviderError(
                f"{who} answered result {position} for id {result.get('id')!r}, but text {position} is {item.id!r}"
            )
        try:
            extractions.append(normalize_extraction(result, min_confidence=min_confidence))
        except ProviderError as exc:
            raise ProviderError(f"{who} answered badly for text {position} ({item.id}): {exc.message}") from None
    return extractions


COMMAND_FORMATS = ("objects", "plain")


class CommandProvider:
    """Runs argv (no shell), writes one JSON request to stdin and reads one answer from stdout.

    `objects` (the default): {"model", "texts": [{id, text, provenance, preference}], "entity_kinds", "predicates",
    "vocabulary"}, answered by {"results"}. `plain`, the original MemCastle's contract: {"model", "vocabulary":
    {"kinds", "predicates"}, "texts": ["…"], "preferences": [{…}]}, answered by {"extractions"}. Either answer is
    read whichever was asked."""

    name = "command"
    is_enabled = True

    def __init__(
        self,
        argv: list[str],
        model: str,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        min_confidence: float = DEFAULT_MIN_CONFIDENCE,
        format: str = "objects",
    ) -> None:
        if not argv or not all(isinstance(part, str) and part for part in argv):
            raise ConfigError("must be a non-empty list of non-empty strings", key="extraction.command")
        if format not in COMMAND_FORMATS:
            raise ConfigError(f"one of {', '.join(COMMAND_FORMATS)}, not {format!r}", key="extraction.command_format")
        self._format = format
        self._argv = list(argv)
        self.model = model
        self._timeout = timeout
        self._min_confidence = min_confidence

    def extract(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]:
        """Run the command once for the whole batch."""
        if not inputs:
            return []
        who = f"extraction command {self._argv[0]!r}"
        vocabulary = {"kinds": list(ENTITY_KINDS), "predicates": list(PREDICATES)}
        request: dict[str, Any]
        if self._format == "plain":
            request = {
                "model": self.model,
                "vocabulary": vocabulary,
                "texts": [item.text for item in inputs],
                "preferences": [_jsonable(item.preference) for item in inputs],
            }
        else:
            request = {
                "model": self.model,
                "texts": _request_texts(inputs),
                "entity_kinds": list(ENTITY_KINDS),
                "predicates": list(PREDICATES),
                "vocabulary": vocabulary,
            }
        answer = ask_command(self._argv, request, timeout=self._timeout, who=who)
        return _read_results(answer, inputs, who=who, min_confidence=self._min_confidence)


SYSTEM_PROMPT = f"""\
You extract a small knowledge graph from texts kept by a memory server.
Answer with one JSON object and nothing else, of exactly this shape:
{{"results": [{{"id": "<the text's id>", "entities": [{{"name": "...", "kind": "..."}}], "relations": \
[{{"subject": "...", "predicate": "...", "object": "...", "confidence": 0.0}}]}}]}}
Give exactly one result per text, in the order the texts are given, echoing each text's id; a text with nothing \
to extract gets empty lists.
Entity kinds: {", ".join(ENTITY_KINDS)}.
Predicates: {", ".join(PREDICATES)}. Use related_to when no other predicate fits.
Spell names as the text does. The subject and object of a relation are names of entities in the same result.
Confidence is a number from 0 to 1: how clearly the text itself states the relation.
Each text comes with its provenance (connector, document, uri, occurred_at) and the user's source preference for \
it (level low, normal or high, and the connector and criterion that decided it). This context is information, \
not a verdict: use it to read the text (who "I" or "we" is, when "yesterday" was), but do not raise or lower a \
confidence because of the preference level, and do not state facts that only the context says. A trusted source \
does not make a claim true; a distrusted one does not make it false.
"""


class HttpProvider:
    """An OpenAI-compatible chat completions endpoint (OpenAI, Ollama, llama.cpp, vLLM …) answering JSON."""

    name = "http"
    is_enabled = True

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        min_confidence: float = DEFAULT_MIN_CONFIDENCE,
    ) -> None:
        self.endpoint = endpoint_url(url, "/chat/completions", key="extraction.url")
        self.model = model
        self._api_key = api_key or None
        self._timeout = timeout
        self._min_confidence = min_confidence

    def _request_body(self, inputs: Sequence[ExtractionInput]) -> dict[str, Any]:
        """The one chat completion request that asks for the whole batch."""
        texts = _request_texts(inputs)
        user = (
            f"Extract entities and relations from each of these {len(texts)} texts and answer "
            f'{{"results": [...]}} with exactly {len(texts)} results in this order.\n'
            + json.dumps({"texts": texts}, ensure_ascii=False)
        )
        return {
            "model": self.model,
            "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}],
            "response_format": {"type": "json_object"},
        }

    def extract(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]:
        """One request for the whole batch; the reply's message content is the {"results"} JSON."""
        if not inputs:
            return []
        who = f"extraction endpoint {self.endpoint}"
        completion, text = post_json(
            self.endpoint, self._request_body(inputs), api_key=self._api_key, timeout=self._timeout, who=who
        )
        choice = _first_choice(completion)
        message = choice.get("message") if isinstance(choice, Mapping) else None
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, str):
            raise ProviderError(f"{who} answered without choices[0].message.content: {tail(text)}")
        try:
            answer = json.loads(_unfence(content))
        except ValueError:
            cut = " (the reply was cut off at the token limit)" if choice.get("finish_reason") == "length" else ""
            raise ProviderError(f"{who} answered content that is not JSON{cut}: {tail(content)}") from None
        return _read_results(answer, inputs, who=who, min_confidence=self._min_confidence)


def _first_choice(completion: Any) -> Any:
    choices = completion.get("choices") if isinstance(completion, Mapping) else None
    return choices[0] if isinstance(choices, list) and choices else None


def _unfence(content: str) -> str:
    """The JSON inside a ```json fence, which some local models add even in JSON mode."""
    text = content.strip()
    if text.startswith("```") and text.endswith("```") and "\n" in text:
        return text[text.index("\n") + 1 : -3]
    return text
