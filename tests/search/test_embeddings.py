"""Embedding providers against the real model, a real child process and a real local HTTP server."""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.errors import ConfigError, ProviderError
from memcastle.search.backfill import model_key
from memcastle.search.embeddings import (
    DEFAULT_BUILTIN_MODEL,
    MAX_TOKENS,
    BuiltinProvider,
    CommandProvider,
    EmbeddingProvider,
    HttpProvider,
    NoneProvider,
    Prefixes,
    build_provider,
)
from memcastle.search.passages import PASSAGE_WINDOW_CHARS, passage_spans, split_passages
from memcastle.services import SearchRequest

SRC = Path(__file__).resolve().parents[2] / "src"

PROSE = (
    "The harbour town woke slowly that morning. Fishermen hauled their nets onto the quay while the baker, "
    "who had been up since four, set out loaves that steamed in the cold air. Children ran between the stalls, "
    "and an old woman in a green coat argued with the fishmonger about the price of mackerel, as she did every "
    "week, more for the pleasure of the argument than for the few coins it might save her. Out on the water a "
    "ferry sounded its horn twice, and the gulls rose from the harbour wall in a single noisy cloud. Nobody "
    "paid them much attention; they had seen it all before, and there was work to be done before the tide "
    "turned. By noon the market had thinned, the nets were drying in long brown lines along the wall, and the "
    "town settled into the quiet afternoon that everyone there seemed to expect as a matter of right. "
)


# ---------------------------------------------------------------------------------------------------- builtin


@pytest.fixture(scope="module")
def builtin() -> BuiltinProvider:
    return BuiltinProvider()


def test_builtin_gives_one_unit_length_384_float_row_per_text(builtin: BuiltinProvider) -> None:
    vectors = builtin.embed(["alpha", "a somewhat longer sentence about beta and gamma", ""])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert builtin.dimension() == 384
    assert builtin.name == "builtin" and builtin.model == DEFAULT_BUILTIN_MODEL and builtin.is_enabled


def test_builtin_scores_a_paraphrase_above_an_unrelated_sentence(builtin: BuiltinProvider) -> None:
    guitar, instrument, market = builtin.embed(
        ["A man is playing a guitar.", "Someone is playing a musical instrument.", "Share prices fell sharply today."]
    )
    assert float(guitar @ instrument) > float(guitar @ market) + 0.3
    assert float(instrument @ guitar) > float(instrument @ market) + 0.3


def test_builtin_gives_the_same_vector_for_a_text_alone_or_in_any_batch(builtin: BuiltinProvider) -> None:
    text = "We decided to keep SQLite as the default store."
    alone = builtin.embed([text])[0]
    again = builtin.embed([text])[0]
    among = builtin.embed(["short", PROSE, text, "another line " * 30])[2]
    assert np.array_equal(alone, again)
    assert np.allclose(alone, among, atol=1e-5)


def test_builtin_reads_up_to_256_tokens_and_ignores_the_rest(builtin: BuiltinProvider) -> None:
    # PROSE is ~200 word pieces: the shipped tokenizer's own 128-token truncation would hide both endings.
    within = builtin.embed([PROSE + "The ferry sank.", PROSE + "The bakery burned down."])
    beyond = builtin.embed([PROSE * 2 + "The ferry sank.", PROSE * 2 + "The bakery burned down."])
    assert not np.allclose(within[0], within[1], atol=1e-3)
    assert np.array_equal(beyond[0], beyond[1])


def test_builtin_embeds_no_texts_as_zero_rows(builtin: BuiltinProvider) -> None:
    assert builtin.embed([]).shape == (0, 384)


def test_builtin_spreads_a_batch_over_its_runs_and_embeds_a_query_on_the_callers_thread(
    builtin: BuiltinProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [f"passage number {i} about {word}" for i, word in enumerate(["ports", "cookies", "ferries"] * 6)]
    single = BuiltinProvider(threads=1).embed(texts)
    threads: set[str] = set()
    run = builtin._run

    def recording(loaded: Any, encodings: list[Any]) -> np.ndarray:
        threads.add(threading.current_thread().name)
        return run(loaded, encodings)

    monkeypatch.setattr(builtin, "_run", recording)
    assert np.allclose(builtin.embed(texts), single, atol=1e-5), "the same vectors however the batch is spread"
    assert len(threads) == 2 and all(name.startswith("embed-run") for name in threads)
    threads.clear()
    builtin.embed(["one query"])
    assert threads == {threading.current_thread().name}


def test_builtin_loads_once_under_concurrent_first_use() -> None:
    fresh = BuiltinProvider(threads=1)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: fresh.embed(["first use from many threads"]), range(4)))
    assert all(np.array_equal(results[0], other) for other in results[1:])


def test_builtin_embeds_with_the_network_blocked(tmp_path: Path) -> None:
    script = tmp_path / "offline.py"
    script.write_text(
        textwrap.dedent(
            """
            import socket

            def refuse(*args, **kwargs):
                raise OSError("network access is blocked in this test")

            socket.socket.connect = refuse
            socket.socket.connect_ex = refuse
            socket.create_connection = refuse
            socket.getaddrinfo = refuse

            from memcastle.search.embeddings import BuiltinProvider

            print(BuiltinProvider().embed(["offline text", "more offline text"]).shape)
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, str(script)], check=False, capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(2, 384)"


def test_default_passages_of_english_prose_fit_the_model_window() -> None:
    tokenizer = Tokenizer.from_str(
        resources.files("memcastle.data").joinpath("minilm-tokenizer.json").read_text("utf-8")
    )
    tokenizer.no_truncation()
    tokenizer.no_padding()
    passages = split_passages(PROSE * 8)
    assert len(passages) > 4
    assert all(len(tokenizer.encode(p).ids) <= MAX_TOKENS for p in passages)


def test_tokenizer_ships_with_its_licence_notice() -> None:
    notice = resources.files("memcastle.data").joinpath("minilm-tokenizer.NOTICE").read_text("utf-8")
    assert "sentence-transformers/all-MiniLM-L6-v2" in notice and "Apache" in notice


# ---------------------------------------------------------------------------------------------------- command

FAKE_COMMAND = """
import json, os, subprocess, sys, time

mode = sys.argv[1]
request = json.load(sys.stdin)
texts = request["texts"]
if mode == "good":
    json.dump({"embeddings": [[float(len(t)), 1.0, 0.0] for t in texts]}, sys.stdout)
elif mode == "fail":
    print("model " + request["model"] + " is not installed", file=sys.stderr)
    sys.exit(3)
elif mode == "garbage":
    print("Traceback? no, just not JSON")
elif mode == "short":
    json.dump({"embeddings": [[1.0, 0.0]] * (len(texts) - 1)}, sys.stdout)
elif mode == "ragged":
    json.dump({"embeddings": [[1.0] * (i + 2) for i in range(len(texts))]}, sys.stdout)
elif mode == "hang":
    # A grandchild holding stdout open too: the timeout must end it as well.
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    time.sleep(60)
elif mode == "report":
    seen = {"request": request, "memcastle": sorted(k for k in os.environ if k.startswith("MEMCASTLE"))}
    seen["other"] = os.environ.get("EMBED_TEST_VISIBLE")
    with open(sys.argv[2], "w") as out:
        json.dump(seen, out)
    json.dump({"embeddings": [[0.0, 2.0]] * len(texts)}, sys.stdout)
"""


@pytest.fixture()
def fake_command(tmp_path: Path) -> list[str]:
    script = tmp_path / "fake_embedder.py"
    script.write_text(FAKE_COMMAND)
    return [sys.executable, str(script)]


def test_command_provider_returns_normalized_rows_in_input_order(fake_command: list[str]) -> None:
    provider = CommandProvider([*fake_command, "good"], model="fake-3d", timeout=10)
    vectors = provider.embed(["abc", "", "a"])
    expected = np.array([[3, 1, 0], [0, 1, 0], [1, 1, 0]], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert vectors.dtype == np.float32
    assert np.allclose(vectors, expected, atol=1e-6)
    assert provider.dimension() == 3
    assert provider.name == "command" and provider.model == "fake-3d" and provider.is_enabled


def test_command_provider_reads_its_dimension_from_a_first_answer(fake_command: list[str]) -> None:
    assert CommandProvider([*fake_command, "good"], model="fake-3d", timeout=10).dimension() == 3


def test_command_provider_hides_memcastle_variables_from_the_child(
    fake_command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCASTLE_SECRET", "hunter2")
    monkeypatch.setenv("MEMCASTLE_EMBEDDINGS_API_KEY", "sk-secret")
    monkeypatch.setenv("EMBED_TEST_VISIBLE", "yes")
    report = tmp_path / "seen.json"
    CommandProvider([*fake_command, "report", str(report)], model="m1", timeout=10).embed(["one", "two"])
    seen = json.loads(report.read_text())
    assert seen["memcastle"] == []
    assert seen["other"] == "yes"
    assert seen["request"] == {"model": "m1", "texts": ["one", "two"], "kind": "document"}


def test_command_provider_tells_a_query_from_a_document_and_puts_each_kinds_prefix_first(
    fake_command: list[str], tmp_path: Path
) -> None:
    report = tmp_path / "seen.json"
    prefixes = Prefixes(query="query: ", document="passage: ")
    provider = CommandProvider([*fake_command, "report", str(report)], model="e5", timeout=10, prefixes=prefixes)
    provider.embed(["where is Atlas"], kind="query")
    assert json.loads(report.read_text())["request"] == {
        "model": "e5",
        "texts": ["query: where is Atlas"],
        "kind": "query",
    }
    provider.embed(["Atlas moved to Lisbon."])
    assert json.loads(report.read_text())["request"]["texts"] == ["passage: Atlas moved to Lisbon."]
    # The prefixes change the vectors: they are part of the identity the palace stores vectors under.
    plain = CommandProvider([*fake_command, "good"], model="e5", timeout=10)
    assert model_key(plain) == "command:e5"
    assert model_key(provider) == "command:e5|query='query: '|document='passage: '"


def test_a_search_embeds_its_query_as_a_query_and_the_embed_job_passages_as_documents(
    fake_command: list[str], tmp_path: Path, xdg_home: Any
) -> None:
    log = tmp_path / "kinds.jsonl"
    script = tmp_path / "kinds.py"
    script.write_text(
        "import json, sys\n"
        "request = json.load(sys.stdin)\n"
        f"open({str(log)!r}, 'a').write(json.dumps([request['kind'], request['texts']]) + '\\n')\n"
        "json.dump({'embeddings': [[1.0, float(len(t)), 0.5] for t in request['texts']]}, sys.stdout)\n"
    )
    settings = load_settings(
        flags={
            "palace": str(tmp_path / "palace"),
            "embeddings.provider": "command",
            "embeddings.model": "kinds",
            "embeddings.command": [sys.executable, str(script)],
            "embeddings.query_prefix": "query: ",
            "embeddings.document_prefix": "passage: ",
        },
        env={},
        config_file=None,
    )
    palace = build(settings)
    palace.start()
    try:
        palace.services.drawers.save_note("Atlas moved to Lisbon.", wing="w")
        deadline = time.monotonic() + 60
        while palace.services.status.embedding_status().pending:
            assert time.monotonic() < deadline, "the embed job did not finish"
            time.sleep(0.05)
        palace.services.search.search(SearchRequest(query="where is Atlas", ranking="semantic"))
    finally:
        palace.stop()
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert ["document", ["passage: Atlas moved to Lisbon."]] in seen
    assert seen[-1] == ["query", ["query: where is Atlas"]]
    assert all(kind == "document" for kind, texts in seen[:-1])


def test_command_provider_reports_a_failed_exit_with_its_stderr(fake_command: list[str]) -> None:
    with pytest.raises(ProviderError, match=r"status 3.*model nomic is not installed"):
        CommandProvider([*fake_command, "fail"], model="nomic", timeout=10).embed(["x"])


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("garbage", "did not print JSON"),
        ("short", "answered 1 embeddings for 2 texts"),
        ("ragged", "mixed dimensions"),
    ],
)
def test_command_provider_refuses_a_malformed_answer(fake_command: list[str], mode: str, message: str) -> None:
    with pytest.raises(ProviderError, match=message):
        CommandProvider([*fake_command, mode], model="m", timeout=10).embed(["x", "y"])


def test_command_provider_stops_a_hanging_command_and_its_children_at_the_timeout(
    fake_command: list[str],
) -> None:
    started = time.monotonic()
    with pytest.raises(ProviderError, match="no answer within 0.5 s"):
        CommandProvider([*fake_command, "hang"], model="m", timeout=0.5).embed(["x"])
    # Had the grandchild survived, it would hold the pipes open and the provider would wait seconds longer.
    assert time.monotonic() - started < 4


def test_command_provider_reports_a_missing_executable(tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match="could not start"):
        CommandProvider([str(tmp_path / "no-such-embedder")], model="m", timeout=5).embed(["x"])


# ------------------------------------------------------------------------------------------------------- http


class _EmbeddingsServer(http.server.ThreadingHTTPServer):
    requests: list[tuple[str, dict[str, str], Any]]


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _EmbeddingsServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, dict(self.headers), body))
        mode = self.path.strip("/").split("/")[0]
        if mode == "good":
            data = [
                {"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0]}
                for i, t in enumerate(body["input"])
            ]
            # Reversed on purpose: clients must put items back by `index`.
            self._answer(200, json.dumps({"object": "list", "model": body["model"], "data": data[::-1]}))
        elif mode == "fail":
            self._answer(500, "upstream model crashed")
        else:
            self._answer(200, "<html>certainly not JSON</html>")

    def _answer(self, status: int, text: str) -> None:
        raw = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[_EmbeddingsServer]:
    httpd = _EmbeddingsServer(("127.0.0.1", 0), _Handler)
    httpd.requests = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _base(server: _EmbeddingsServer, mode: str) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/{mode}/v1"


def test_http_provider_posts_openai_style_and_orders_rows_by_index(server: _EmbeddingsServer) -> None:
    provider = HttpProvider(_base(server, "good"), model="nomic-embed-text", api_key="sk-test", timeout=5)
    vectors = provider.embed(["abcd", "ab"])
    expected = np.array([[4, 1, 0], [2, 1, 0]], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected, atol=1e-6)
    assert provider.dimension() == 3
    path, headers, body = server.requests[-1]
    assert path == "/good/v1/embeddings"
    assert headers["Authorization"] == "Bearer sk-test"
    assert body == {"model": "nomic-embed-text", "input": ["abcd", "ab"]}, "no field OpenAI would refuse"


def test_http_provider_names_the_text_kind_in_the_field_configured(server: _EmbeddingsServer) -> None:
    prefixes = Prefixes(query="search_query: ", document="search_document: ")
    provider = HttpProvider(
        _base(server, "good"), model="m", api_key=None, timeout=5, prefixes=prefixes, input_type="input_type"
    )
    provider.embed(["atlas"], kind="query")
    assert server.requests[-1][2] == {"model": "m", "input": ["search_query: atlas"], "input_type": "query"}
    provider.embed(["Atlas moved."])
    assert server.requests[-1][2] == {
        "model": "m",
        "input": ["search_document: Atlas moved."],
        "input_type": "document",
    }


def test_http_provider_uses_a_url_that_already_names_the_embeddings_route(server: _EmbeddingsServer) -> None:
    provider = HttpProvider(_base(server, "good") + "/embeddings/", model="m", api_key=None, timeout=5)
    provider.embed(["x"])
    path, headers, _ = server.requests[-1]
    assert path == "/good/v1/embeddings"
    assert "Authorization" not in headers


def test_http_provider_reports_a_server_error_with_its_body(server: _EmbeddingsServer) -> None:
    with pytest.raises(ProviderError, match="HTTP 500: upstream model crashed"):
        HttpProvider(_base(server, "fail"), model="m", api_key=None, timeout=5).embed(["x"])


def test_http_provider_refuses_an_answer_that_is_not_json(server: _EmbeddingsServer) -> None:
    with pytest.raises(ProviderError, match="did not answer JSON"):
        HttpProvider(_base(server, "garbage"), model="m", api_key=None, timeout=5).embed(["x"])


def test_http_provider_reports_a_refused_connection() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ProviderError, match="failed"):
        HttpProvider(f"http://127.0.0.1:{port}/v1", model="m", api_key=None, timeout=2).embed(["x"])


# ------------------------------------------------------------------------------------------------ none, build


def test_none_provider_is_disabled_and_refuses_to_embed() -> None:
    provider = NoneProvider()
    assert provider.name == "none" and not provider.is_enabled and provider.dimension() == 0
    with pytest.raises(ProviderError, match="embeddings are disabled"):
        provider.embed(["x"])


def test_build_provider_makes_each_kind_from_settings(fake_command: list[str]) -> None:
    assert isinstance(build_provider({}), BuiltinProvider)
    assert isinstance(build_provider({"provider": "builtin", "model": "", "threads": 1}), BuiltinProvider)
    assert isinstance(build_provider({"provider": "none"}), NoneProvider)
    command = build_provider({"provider": "command", "model": "m", "command": [*fake_command, "good"]})
    assert isinstance(command, CommandProvider) and command.model == "m"
    http = build_provider({"provider": "http", "model": "m", "url": "http://127.0.0.1:11434/v1", "api_key": ""})
    assert isinstance(http, HttpProvider) and http.endpoint == "http://127.0.0.1:11434/v1/embeddings"
    for provider in (command, http, NoneProvider(), BuiltinProvider()):
        assert isinstance(provider, EmbeddingProvider)


@pytest.mark.parametrize(
    ("settings_", "key"),
    [
        ({"provider": "word2vec"}, "embeddings.provider"),
        ({"provider": "builtin", "model": "bge-large"}, "embeddings.model"),
        ({"provider": "command", "model": "m", "command": "embed --json"}, "embeddings.command"),
        ({"provider": "command", "model": "m", "command": []}, "embeddings.command"),
        ({"provider": "http", "model": "m", "url": ""}, "embeddings.url"),
        ({"provider": "http", "model": "m", "url": "localhost:11434"}, "embeddings.url"),
        ({"provider": "http", "url": "http://127.0.0.1:1/v1"}, "embeddings.model"),
        ({"provider": "http", "model": "m", "url": "http://h/v1", "timeout": 0}, "embeddings.timeout"),
        ({"provider": "builtin", "threads": 0}, "embeddings.threads"),
    ],
)
def test_build_provider_names_the_bad_setting(settings_: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        build_provider(settings_)
    assert raised.value.key == key


# --------------------------------------------------------------------------------------------------- passages

_alphabet = st.sampled_from(list("abcdefgh") + [" ", " ", "\n", "\t"])
_texts = st.text(alphabet=_alphabet, max_size=2500)


@st.composite
def _windows(draw: st.DrawFn) -> tuple[int, int]:
    window = draw(st.integers(min_value=1, max_value=400))
    return window, draw(st.integers(min_value=0, max_value=window - 1))


@settings(max_examples=300, deadline=None)
@given(text=_texts, window=_windows())
def test_passages_cover_the_whole_text_in_order_within_the_window(text: str, window: tuple[int, int]) -> None:
    size, overlap = window
    spans = passage_spans(text, size, overlap)
    if not text:
        assert spans == []
        return
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(0 < end - start <= size for start, end in spans)
    for (start, end), (next_start, next_end) in pairwise(spans):
        # Each passage starts later, ends later, and starts no later than the previous one ends: no gaps.
        assert start < next_start <= end < next_end
    passages = split_passages(text, size, overlap)
    assert passages == [text[a:b] for a, b in spans if not text[a:b].isspace()]
    assert all(len(p) <= size for p in passages)


@settings(max_examples=100, deadline=None)
@given(window=_windows(), data=st.data())
def test_a_text_that_fits_the_window_is_one_passage(window: tuple[int, int], data: st.DataObject) -> None:
    size, overlap = window
    text = data.draw(st.text(alphabet=_alphabet, min_size=1, max_size=size).filter(str.strip))
    assert split_passages(text, size, overlap) == [text]


@given(text=st.text(alphabet=" \n\t\r", max_size=3000))
def test_whitespace_only_text_has_no_passages(text: str) -> None:
    assert split_passages(text) == []


def test_a_long_drawer_is_cut_at_word_breaks_and_its_end_is_a_passage() -> None:
    drawer = (PROSE * 8)[:6000]
    spans = passage_spans(drawer)
    assert 9 <= len(spans) <= 10  # 700-character windows cut at word breaks, no overlap
    assert split_passages(drawer) == [drawer[a:b] for a, b in spans]
    assert all(end - start <= PASSAGE_WINDOW_CHARS for start, end in spans)
    assert spans[-1][1] == len(drawer)
    for start, end in spans[:-1]:
        assert drawer[end - 1].isspace() or drawer[end].isspace()
        assert start == 0 or drawer[start - 1].isspace()


def test_an_overlap_as_wide_as_the_window_is_refused() -> None:
    with pytest.raises(ValueError):
        split_passages("text", window_chars=100, overlap_chars=100)


def test_an_overlap_not_below_the_passage_size_is_refused_naming_the_setting(tmp_path: Any) -> None:
    settings = load_settings(
        flags={
            "palace": str(tmp_path / "p"),
            "embeddings.provider": "builtin",
            "embeddings.passage_chars": 300,
            "embeddings.passage_overlap": 300,
        },
        env={},
        config_file=None,
    )
    with pytest.raises(ConfigError) as raised:
        build(settings)
    assert raised.value.key == "embeddings.passage_overlap"
    assert "smaller than embeddings.passage_chars (300)" in str(raised.value)
