"""resolve_embeddings, LocalEmbeddings (sentence-transformers), CachedEmbeddings, byte stores."""

from __future__ import annotations

import asyncio
import math
import os
import re
import threading
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.stores import InMemoryByteStore
from langchain_tests.integration_tests import EmbeddingsIntegrationTests
from langchain_tests.unit_tests import EmbeddingsUnitTests

from langchain_holodeck.embeddings import (
    DEFAULT_EMBEDDING_MODEL,
    CachedEmbeddings,
    LocalEmbeddings,
    LocalFileByteStore,
    OnnxEmbeddings,
    embedding_dimension,
    embedding_model_id,
    resolve_embeddings,
)
from langchain_holodeck.errors import ConfigError
from tests.helpers import HashingEmbeddings, needs_sentence_transformers


def test_embeddings_instance_passes_through(embeddings: HashingEmbeddings) -> None:
    assert resolve_embeddings(embeddings) is embeddings


def test_none_resolves_to_the_onnx_minilm_without_loading() -> None:
    resolved = resolve_embeddings(None)
    assert isinstance(resolved, OnnxEmbeddings)
    assert resolved.model_name == DEFAULT_EMBEDDING_MODEL
    assert resolved._session is None  # lazy: nothing loaded yet


@needs_sentence_transformers
def test_sentence_transformers_name_resolves_locally() -> None:
    resolved = resolve_embeddings("sentence-transformers/paraphrase-MiniLM-L3-v2")
    assert isinstance(resolved, LocalEmbeddings)
    assert resolved.model_name == "sentence-transformers/paraphrase-MiniLM-L3-v2"


@pytest.mark.parametrize(
    ("value", "model"),
    [
        ("text-embedding-3-small", "text-embedding-3-small"),
        ("text-embedding-ada-002", "text-embedding-ada-002"),
        ("openai/text-embedding-3-large", "text-embedding-3-large"),
    ],
)
def test_openai_names_resolve_to_openai_embeddings(
    value: str, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_openai import OpenAIEmbeddings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    resolved = resolve_embeddings(value)
    assert isinstance(resolved, OpenAIEmbeddings)
    assert resolved.model == model
    assert embedding_model_id(resolved) == f"OpenAIEmbeddings:{model}"


def test_openai_model_embeds_strings_on_a_local_server_offline(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tests.embedding_server import EmbeddingServer

    # no internet: an empty tiktoken cache, and every non-loopback request sent to a closed port
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken"))
    for proxy in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.setenv(proxy, "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with EmbeddingServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        embeddings = resolve_embeddings("text-embedding-3-small")
        vectors = embeddings.embed_documents(["reactor cooling", "shift rota"])
        query = embeddings.embed_query("reactor water")
    assert [len(v) for v in [*vectors, query]] == [32, 32, 32]
    inputs = [body["input"] for body in server.requests]
    assert inputs == [["reactor cooling", "shift rota"], ["reactor water"]]  # text, not tokens


@pytest.mark.parametrize("variable", ["OPENAI_BASE_URL", "OPENAI_API_BASE"])
def test_an_openai_name_on_another_server_is_measured(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """A compatible server behind OPENAI_BASE_URL (the openai client's variable) may serve
    text-embedding-3-small at any width: it is measured, not taken as OpenAI's 1536 (the
    store then refused every later run: 'holds 32-dimensional vectors but ... makes 1536')."""
    from tests.embedding_server import EmbeddingServer

    for other in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with EmbeddingServer() as server:
        monkeypatch.setenv(variable, server.url)
        assert embedding_dimension(resolve_embeddings("text-embedding-3-small")) == 32
    monkeypatch.delenv(variable)
    assert embedding_dimension(resolve_embeddings("text-embedding-3-small")) == 1536  # no call


def test_openai_without_key_says_which_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="needs the OPENAI_API_KEY environment variable"):
        resolve_embeddings("text-embedding-3-small")


@pytest.mark.parametrize("value", ["bert-base", "openai/", "sentence-transformers/", ""])
def test_unknown_model_names_are_rejected_with_accepted_forms(value: str) -> None:
    with pytest.raises(ValueError, match=f"got {value!r}") as info:
        resolve_embeddings(value)
    assert "sentence-transformers/<name>" in str(info.value)
    assert "text-embedding-3-small" in str(info.value)


@pytest.mark.parametrize(
    ("model", "named"),
    [
        (None, "the local default (embedding_model unset)"),
        ("sentence-transformers/all-MiniLM-L6-v2", "embedding_model 'sentence-transformers/"),
        ("sentence-transformers/paraphrase-MiniLM-L3-v2", "embedding_model 'sentence-trans"),
    ],
)
def test_a_timeout_for_a_local_model_is_refused_as_in_yaml(model: str | None, named: str) -> None:
    """docs/embeddings.md: another value than 60 is refused with a local model. YAML's
    embedding_timeout: 30 was; resolve_embeddings(None, timeout=30) returned the model and
    ignored it."""
    with pytest.raises(ValueError, match="got 30") as raised:
        resolve_embeddings(model, timeout=30)
    message = str(raised.value)
    assert message.startswith("timeout applies to an OpenAI embedding_model (each request")
    assert named in message
    assert message.endswith("no requests to time out (remove timeout), got 30.")
    assert isinstance(resolve_embeddings(None, timeout=60), OnnxEmbeddings)  # the default


@pytest.mark.parametrize("timeout", [float("inf"), float("nan"), 1e12, 0, -1])
def test_a_timeout_past_a_week_or_not_positive_is_refused(timeout: float) -> None:
    """Found 2026-12-07: timeout=1e12 built the OpenAI model, then every request failed
    (OverflowError: timestamp out of range for platform time_t). Refused before any import or
    key lookup, naming the parameter."""
    with pytest.raises(ValueError, match=r"^timeout must be > 0 and at most 604800 seconds"):
        resolve_embeddings("text-embedding-3-small", timeout=timeout)


def test_non_string_model_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="got int"):
        resolve_embeddings(42)  # type: ignore[arg-type]


@needs_sentence_transformers
def test_uncached_local_model_fails_with_offline_hint() -> None:
    emb = LocalEmbeddings("sentence-transformers/definitely-not-cached-model-xyz")
    with pytest.raises(OSError, match="not in the local Hugging Face cache"):
        emb.embed_query("hello")


def test_local_embeddings_rejects_bad_batch_size() -> None:
    with pytest.raises(ValueError, match="batch_size must be positive, got 0"):
        LocalEmbeddings(batch_size=0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"batch_size": True}, "batch_size must be an integer, got True"),
        ({"window_overlap": 2.5}, "window_overlap must be an integer, got 2.5"),
        ({"window_tokens": False}, "window_tokens must be an integer, got False"),
    ],
)
def test_local_embeddings_refuse_a_bool_or_a_fraction_for_a_count(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LocalEmbeddings(**kwargs)


@pytest.mark.parametrize(
    "runtime", ["onnx", pytest.param("torch", marks=needs_sentence_transformers)]
)
def test_minilm_loads_offline_and_ranks_related_texts_closer(runtime: str) -> None:
    emb = resolve_embeddings(None) if runtime == "onnx" else LocalEmbeddings()
    vectors = np.array(
        emb.embed_documents(
            [
                "The cat sat on the mat.",
                "A kitten is sitting on a rug.",
                "Quarterly revenue grew by eight percent.",
            ]
        )
    )
    assert vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    related, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert related > unrelated + 0.2
    assert len(emb.embed_query("cat")) == 384
    name = "OnnxEmbeddings" if runtime == "onnx" else "LocalEmbeddings"
    window = ":window_tokens=128" if runtime == "onnx" else ""  # LocalEmbeddings: the model's
    mode = "fit" if runtime == "onnx" else "best"  # the tools' default; LocalEmbeddings' own
    int8 = ":int8" if getattr(emb, "precision", None) == "int8" else ""
    model_id = f"{name}:sentence-transformers/all-MiniLM-L6-v2:long_text={mode}{window}{int8}"
    assert embedding_model_id(emb) == model_id


@needs_sentence_transformers
def test_loading_the_local_model_draws_no_progress_bar(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from transformers.utils import logging as transformers_logging

    was_enabled = transformers_logging.is_progress_bar_enabled()
    transformers_logging.enable_progress_bar()  # as when transformers was imported first
    try:
        assert len(LocalEmbeddings().embed_query("cat")) == 384
        assert transformers_logging.is_progress_bar_enabled()  # the caller's setting is kept
    finally:
        if not was_enabled:
            transformers_logging.disable_progress_bar()
    assert "Loading weights" not in capsys.readouterr().err


@needs_sentence_transformers
def test_local_embeddings_are_thread_safe() -> None:
    emb = LocalEmbeddings()
    results: dict[int, list[float]] = {}
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            results[n] = emb.embed_query("holodeck safety protocols")
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    first = np.array(results[0])
    for vec in results.values():
        np.testing.assert_allclose(np.array(vec), first, atol=1e-6)


def test_embedding_model_id_is_stable_and_distinguishes_models() -> None:
    assert embedding_model_id(DeterministicFakeEmbedding(size=6)) == (
        "DeterministicFakeEmbedding:size=6"
    )
    assert embedding_model_id(HashingEmbeddings(size=8)) == "HashingEmbeddings:size=8"
    assert embedding_model_id(HashingEmbeddings(size=8)) != embedding_model_id(
        HashingEmbeddings(size=16)
    )
    cached = CachedEmbeddings(HashingEmbeddings(size=8), InMemoryByteStore())
    assert embedding_model_id(cached) == "HashingEmbeddings:size=8"


def test_cache_hit_makes_zero_underlying_calls(embeddings: HashingEmbeddings) -> None:
    cached = CachedEmbeddings(embeddings, InMemoryByteStore())
    first = cached.embed_documents(["alpha beta", "gamma", "alpha beta"])
    assert (embeddings.calls, embeddings.texts_embedded) == (1, 2)  # duplicates embedded once
    second = cached.embed_documents(["gamma", "alpha beta"])
    assert (embeddings.calls, embeddings.texts_embedded) == (1, 2)
    assert second == [first[1], first[0]]
    assert first[0] == first[2]


def test_cache_embeds_only_misses_in_one_call(embeddings: HashingEmbeddings) -> None:
    cached = CachedEmbeddings(embeddings, InMemoryByteStore())
    cached.embed_documents(["one", "two"])
    result = cached.embed_documents(["one", "three", "two", "four"])
    assert (embeddings.calls, embeddings.texts_embedded) == (2, 4)
    assert len(result) == 4
    expected = np.asarray(embeddings.embed_query("three"), dtype=np.float32).tolist()
    assert result[1] == expected


def test_cached_and_fresh_vectors_are_identical_float32(embeddings: HashingEmbeddings) -> None:
    cached = CachedEmbeddings(embeddings, InMemoryByteStore())
    miss = cached.embed_documents(["some text here"])
    hit = cached.embed_documents(["some text here"])
    assert miss == hit
    assert miss[0] == np.asarray(embeddings.embed_query("some text here"), np.float32).tolist()


def test_a_cache_that_cannot_be_written_costs_the_cache_never_the_vectors(
    tmp_path: Path, embeddings: HashingEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    """A cache on a read-only or full disk: the vectors are returned, one WARNING says so."""
    root = tmp_path / "cache"
    root.mkdir()
    for shard in range(256):  # each shard a dangling link: a read misses, a write fails
        (root / f"{shard:02x}").symlink_to(tmp_path / "gone" / f"{shard:02x}")
    cache = LocalFileByteStore(root)
    cached = CachedEmbeddings(embeddings, cache)
    with caplog.at_level("WARNING", logger="langchain_holodeck.embeddings.cached"):
        first = cached.embed_documents(["alpha text", "beta text"])
        again = cached.embed_documents(["alpha text"])
        query = asyncio.run(cached.aembed_documents(["gamma text"]))
    fresh = HashingEmbeddings()
    expected = [np.asarray(v, np.float32).tolist() for v in fresh.embed_documents(["alpha text"])]
    assert first[0] == again[0] == expected[0]
    assert len(first) == 2
    assert len(query) == 1
    assert embeddings.calls == 3  # nothing cached: the second call embedded again
    assert cached.write_error is not None
    assert cached.write_error.startswith("[Errno")
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, warnings  # once per cache
    assert f"({root}) cannot be written ([Errno 17] File exists)" in warnings[0]
    assert "the next run embeds those texts again" in warnings[0]


def test_cache_keys_depend_on_the_model() -> None:
    store = InMemoryByteStore()
    small, large = HashingEmbeddings(size=8), HashingEmbeddings(size=16)
    CachedEmbeddings(small, store).embed_documents(["x"])
    vec = CachedEmbeddings(large, store).embed_documents(["x"])
    assert large.calls == 1
    assert len(vec[0]) == 16


def test_queries_bypass_the_cache_unless_asked(embeddings: HashingEmbeddings) -> None:
    store = InMemoryByteStore()
    CachedEmbeddings(embeddings, store).embed_query("q")
    assert list(store.yield_keys()) == []
    cached = CachedEmbeddings(embeddings, store, cache_queries=True)
    first = cached.embed_query("q")
    embeddings.fail_on = "q"
    assert cached.embed_query("q") == first


class QueryCountingEmbeddings(HashingEmbeddings):
    """Counts the queries embedded; its blocking ``embed_query`` fails inside a coroutine."""

    def __init__(self) -> None:
        super().__init__()
        self.queries = 0

    def embed_query(self, text: str) -> list[float]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop here: a blocking caller, as it should be
            self.queries += 1
            return super().embed_query(text)
        msg = "the blocking embed_query ran on the event loop"
        raise AssertionError(msg)

    async def aembed_query(self, text: str) -> list[float]:
        self.queries += 1
        return super().embed_query(text)


async def test_async_query_cache_awaits_the_model_and_the_store() -> None:
    underlying, store = QueryCountingEmbeddings(), InMemoryByteStore()
    cached = CachedEmbeddings(underlying, store, cache_queries=True)
    first = await cached.aembed_query("shift rota")
    assert first == pytest.approx(HashingEmbeddings().embed_query("shift rota"))
    assert list(store.yield_keys()) == [cached.key("shift rota")]
    assert await cached.aembed_query("shift rota") == first
    assert underlying.queries == 1  # the second was a cache hit


@pytest.mark.parametrize("damaged", [b"", b"\x01\x02\x03", np.zeros(4, dtype=np.float32).tobytes()])
async def test_a_damaged_cached_query_is_embedded_again(damaged: bytes) -> None:
    underlying, store = QueryCountingEmbeddings(), InMemoryByteStore()
    cached = CachedEmbeddings(underlying, store, cache_queries=True)
    want = await asyncio.to_thread(cached.embed_query, "shift rota")
    store.mset([(cached.key("shift rota"), damaged)])
    assert await asyncio.to_thread(cached.embed_query, "shift rota") == want
    store.mset([(cached.key("shift rota"), damaged)])
    assert await cached.aembed_query("shift rota") == want
    assert underlying.queries == 3  # each damaged value: a miss, not an empty or zero vector


def test_underlying_failure_caches_nothing() -> None:
    failing = HashingEmbeddings(fail_on="boom")
    store = InMemoryByteStore()
    cached = CachedEmbeddings(failing, store)
    with pytest.raises(RuntimeError, match="boom"):
        cached.embed_documents(["ok", "boom"])
    assert list(store.yield_keys()) == []


async def test_async_cache_path(embeddings: HashingEmbeddings) -> None:
    cached = CachedEmbeddings(embeddings, InMemoryByteStore())
    first = await cached.aembed_documents(["a b", "c"])
    second = await cached.aembed_documents(["c", "a b"])
    assert embeddings.texts_embedded == 2
    assert second == [first[1], first[0]]


def test_local_file_byte_store_round_trip_and_persistence(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    store = LocalFileByteStore(tmp_path / "cache")
    assert store.mget(["ab01"]) == [None]
    store.mset([("ab01", b"\x00\x01"), ("cd02", b"xyz")])
    assert store.mget(["cd02", "ab01", "zz"]) == [b"xyz", b"\x00\x01", None]
    assert sorted(store.yield_keys()) == ["ab01", "cd02"]
    assert list(store.yield_keys(prefix="cd")) == ["cd02"]
    store.mdelete(["ab01", "missing"])
    assert store.mget(["ab01"]) == [None]
    # a second process (new objects) sees the cache: no re-embedding
    CachedEmbeddings(embeddings, LocalFileByteStore(tmp_path / "c2")).embed_documents(["t"])
    CachedEmbeddings(embeddings, LocalFileByteStore(tmp_path / "c2")).embed_documents(["t"])
    assert embeddings.calls == 1
    assert not list((tmp_path / "c2").rglob("*.tmp"))


@pytest.mark.parametrize("key", ["../escape", "a/b", "", ".hidden"])
def test_local_file_byte_store_rejects_unsafe_keys(key: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="keys must be letters, digits"):
        LocalFileByteStore(tmp_path).mset([(key, b"x")])


def test_cached_vectors_are_finite_floats(embeddings: HashingEmbeddings) -> None:
    cached = CachedEmbeddings(embeddings, InMemoryByteStore())
    (vec,) = cached.embed_documents(["hello world"])
    assert all(isinstance(v, float) and math.isfinite(v) for v in vec)


@needs_sentence_transformers
def test_local_embeddings_window_long_texts_like_the_onnx_default() -> None:
    long = " ".join(
        f"Paragraph {n}: the holodeck grid rerouted power to deck {n}." for n in range(60)
    )
    local, onnx = LocalEmbeddings(), OnnxEmbeddings(precision="fp32")  # torch computes fp32
    assert local.count_tokens(long) == onnx.count_tokens(long) > 254
    windowed = np.asarray(local.embed_query(long))
    truncated = np.asarray(LocalEmbeddings(long_text="first").embed_query(long))
    assert float(windowed @ truncated) < 0.999
    assert float(windowed @ np.asarray(onnx.embed_query(long))) >= 0.998


@needs_sentence_transformers
def test_local_embeddings_cut_the_same_windows_as_the_onnx_default() -> None:
    long = " ".join(
        f"Paragraph {n}: the holodeck grid rerouted power to deck {n}." for n in range(60)
    )
    auto = LocalEmbeddings(window_tokens=128, long_text="auto")
    assert auto.window_texts([long, "short text"]) == OnnxEmbeddings().window_texts(
        [long, "short text"]
    )
    local = LocalEmbeddings(window_tokens=128)
    windows = local.window_texts([long, "short text"])
    assert windows == OnnxEmbeddings(long_text="best").window_texts([long, "short text"])
    assert auto.window_texts([long])[0] == [long, *windows[0]]  # itself, then its windows
    assert len(windows[0]) > 3
    assert windows[1] == ["short text"]
    assert long.startswith(windows[0][0])
    assert long.endswith(windows[0][-1])
    # "best": a document is its first window; a query keeps the model's whole window
    np.testing.assert_allclose(
        local.embed_documents([long])[0], local.embed_documents([windows[0][0]])[0], atol=1e-5
    )
    assert LocalEmbeddings().window_texts([long])[0] != windows[0]  # None: max_seq_length


@needs_sentence_transformers
def test_local_embeddings_fit_like_the_onnx_default() -> None:
    """``fit``: whole when it fits 256 (plus windows past 128), else windows; as OnnxEmbeddings."""
    sentence = "the holodeck grid rerouted power to deck {n}. "
    long = "".join(sentence.format(n=n) for n in range(60))  # > 256 word pieces
    middle = "".join(sentence.format(n=n) for n in range(14))  # 128 < n <= 256
    texts = [long, middle, "short text"]
    local = LocalEmbeddings(window_tokens=128, long_text="fit")
    onnx = OnnxEmbeddings(long_text="fit", precision="fp32")  # torch computes fp32
    assert 128 < local.count_tokens(middle) <= 254 < local.count_tokens(long)
    cut = local.window_texts(texts)
    assert cut == onnx.window_texts(texts)
    assert cut[1][0] == middle  # itself, then its two windows
    assert len(cut[1]) == 3
    assert cut[0][0] != long  # its first window, no whole
    assert long.startswith(cut[0][0])
    assert cut[2] == ["short text"]
    # a document is stored as its own entry: the first window of a long text, else itself
    own = np.asarray(local.embed_documents(texts))
    firsts = np.asarray(local.embed_documents([cut[0][0], middle, "short text"]))
    np.testing.assert_allclose(own, firsts, atol=1e-5)
    cosines = (own * np.asarray(onnx.embed_documents(texts))).sum(axis=1)
    assert cosines.min() >= 0.998  # the same vectors: the ONNX weights are int8


@needs_sentence_transformers
def test_committed_reference_vectors_are_the_torch_models() -> None:
    import json

    reference = Path(__file__).resolve().parents[1] / "data" / "minilm_reference"
    texts = json.loads((reference / "texts.json").read_text(encoding="utf-8"))
    vectors = np.asarray(LocalEmbeddings().embed_documents(texts))
    np.testing.assert_allclose(vectors, np.load(reference / "vectors.npy"), atol=1e-5)


@needs_sentence_transformers
class TestLocalEmbeddingsUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[LocalEmbeddings]:
        return LocalEmbeddings

    @property
    def embedding_model_params(self) -> dict:
        return {}


@needs_sentence_transformers
class TestLocalEmbeddingsStandard(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self) -> type[LocalEmbeddings]:
        return LocalEmbeddings

    @property
    def embedding_model_params(self) -> dict:
        return {}


@pytest.mark.parametrize("damaged", [b"", b"\x01\x02\x03", np.zeros(4, dtype=np.float32).tobytes()])
def test_a_cached_value_a_power_cut_may_leave_is_embedded_again(
    embeddings: HashingEmbeddings, damaged: bytes
) -> None:
    store = InMemoryByteStore()
    cached = CachedEmbeddings(embeddings, store)
    (first,) = cached.embed_documents(["alpha beta"])
    store.mset([(cached.key("alpha beta"), damaged)])
    assert cached.embed_documents(["alpha beta"]) == [first]
    assert embeddings.calls == 2  # a miss, not a vector of nothing or of zeros
    assert store.mget([cached.key("alpha beta")]) == [np.asarray(first, np.float32).tobytes()]


@pytest.mark.parametrize(
    "glitch",
    [
        np.full(64, np.nan, dtype=np.float32),  # NaN: every search of the store would fail
        np.full(64, np.inf, dtype=np.float32),
        np.ones(67, dtype=np.float32),  # another width: its batch could never be written
    ],
)
def test_a_glitch_an_earlier_version_cached_is_embedded_again(
    embeddings: HashingEmbeddings, glitch: np.ndarray
) -> None:
    store = InMemoryByteStore()
    cached = CachedEmbeddings(embeddings, store)
    want = cached.embed_documents(["alpha beta", "gamma", "delta"])
    store.mset([(cached.key("gamma"), glitch.tobytes())])
    assert cached.embed_documents(["alpha beta", "gamma", "delta"]) == want
    assert embeddings.texts_embedded == 4  # gamma alone, again
    assert cached.cached("gamma") == want[1]


def test_the_store_width_makes_a_cached_vector_of_another_width_a_miss(
    embeddings: HashingEmbeddings,
) -> None:
    store = InMemoryByteStore()
    cached = CachedEmbeddings(embeddings, store)
    (want,) = cached.embed_documents(["alpha beta"])
    store.mset([(cached.key("alpha beta"), np.ones(67, dtype=np.float32).tobytes())])
    cached.dimension = 64  # alone in its call, it has no others to be compared with
    assert cached.embed_documents(["alpha beta"]) == [want]
    assert embeddings.texts_embedded == 2


class GlitchingEmbeddings(HashingEmbeddings):
    """Answers NaN for a text holding ``NAN`` and 3 more numbers for one holding ``WIDE``."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors = super().embed_documents(texts)
        for vector, text in zip(vectors, texts, strict=True):
            if "NAN" in text:
                vector[:] = [math.nan] * len(vector)
            if "WIDE" in text:
                vector.extend([0.5, 0.5, 0.5])
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("b NAN", "for text 1 a vector holding a non-finite number (nan)"),
        ("b WIDE", "for text 1 a 67-dimensional vector where the others are 64-dimensional"),
    ],
)
async def test_an_unusable_vector_is_refused_and_never_cached(text: str, problem: str) -> None:
    underlying, store = GlitchingEmbeddings(), InMemoryByteStore()
    cached = CachedEmbeddings(underlying, store)
    message = re.escape(f"returned 1 unusable vector(s) for 3 text(s), {problem}")
    with pytest.raises(ValueError, match=message):
        cached.embed_documents(["a", text, "c"])
    with pytest.raises(ValueError, match=message):
        await cached.aembed_documents(["a", text, "c"])
    assert store.mget([cached.key(t) for t in ("a", text, "c")])[1] is None
    assert None not in (store.mget([cached.key("a"), cached.key("c")]))  # the rest is cached


async def test_a_non_finite_query_vector_is_not_cached() -> None:
    store = InMemoryByteStore()
    cached = CachedEmbeddings(GlitchingEmbeddings(), store, cache_queries=True)
    with pytest.raises(ValueError, match=r"non-finite number \(nan\) for the query; it is not"):
        cached.embed_query("NAN")
    with pytest.raises(ValueError, match="not cached"):
        await cached.aembed_query("NAN")
    assert list(store.yield_keys()) == []


def test_a_vector_of_another_width_than_the_store_is_refused() -> None:
    cached = CachedEmbeddings(GlitchingEmbeddings(), InMemoryByteStore())
    cached.dimension = 64
    with pytest.raises(ValueError, match="67-dimensional vector where the store's are 64"):
        cached.embed_documents(["WIDE"])
    assert list(cached.store.yield_keys()) == []


@pytest.mark.parametrize(("durable", "fsyncs"), [(True, 2), (False, 0)])
def test_local_file_byte_store_fsyncs_each_value_only_when_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durable: bool, fsyncs: int
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    store = LocalFileByteStore(tmp_path / "cache", durable=durable)
    store.mset([("ab01", b"\x00\x01"), ("cd02", b"xyz")])
    assert len(synced) == fsyncs
    assert store.mget(["ab01", "cd02"]) == [b"\x00\x01", b"xyz"]
    assert not list((tmp_path / "cache").rglob("*.tmp"))
