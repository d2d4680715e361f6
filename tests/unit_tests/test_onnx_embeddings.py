"""OnnxEmbeddings (the torch-free default), model windows, and the standard embeddings suites."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.stores import InMemoryByteStore
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import EmbeddingsIntegrationTests
from langchain_tests.unit_tests import EmbeddingsUnitTests

from langchain_holodeck.embeddings import (
    CachedEmbeddings,
    LocalEmbeddings,
    OnnxEmbeddings,
    combine_windows,
    embedding_model_id,
    resolve_embeddings,
    token_windows,
)
from langchain_holodeck.embeddings.onnx import Precision
from langchain_holodeck.embeddings.runtime import int8_pays
from langchain_holodeck.errors import EmbeddingModelMismatchError
from langchain_holodeck.sync import stable_id, sync_documents
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.helpers import needs_sentence_transformers

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "minilm_reference"
LONG = " ".join(f"Paragraph {n}: the holodeck grid rerouted power to deck {n}." for n in range(60))


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbeddings:
    return OnnxEmbeddings()


@pytest.mark.parametrize(
    ("precision", "worst_cosine", "mean_cosine"),
    [
        ("fp32", 0.999, 0.9995),  # the int8 weights, dequantized: the torch model's vectors
        # int8 activations too (the default where int8 pays): measured min 0.9859, mean
        # 0.9926 on this sample with VNNI; min 0.9801, mean 0.9910 with AVX2 alone (bench_int8.py)
        ("int8", 0.98, 0.99),
    ],
)
def test_vectors_match_the_torch_model_on_the_fixed_sample(
    precision: Precision, worst_cosine: float, mean_cosine: float
) -> None:
    texts = json.loads((REFERENCE / "texts.json").read_text(encoding="utf-8"))
    reference = np.load(REFERENCE / "vectors.npy")
    assert len(texts) == reference.shape[0] >= 100
    vectors = np.asarray(OnnxEmbeddings(precision=precision).embed_documents(texts))
    cosines = (vectors * reference).sum(axis=1)
    worst = int(np.argmin(cosines))
    assert cosines.min() >= worst_cosine, (
        f"text {worst} ({texts[worst][:40]!r}): {cosines[worst]:.5f}"
    )
    assert cosines.mean() >= mean_cosine


def test_the_default_computes_in_int8_where_it_pays(onnx: OnnxEmbeddings) -> None:
    assert onnx.precision == ("int8" if int8_pays() else "fp32")
    assert OnnxEmbeddings(precision="fp32").precision == "fp32"
    assert OnnxEmbeddings(precision="int8").precision == "int8"


def test_a_store_of_fp32_vectors_asks_for_force_ingest_under_int8() -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    doc = Document(page_content="warp core", metadata={"source_path": "a.md"})
    fp32 = embedding_model_id(OnnxEmbeddings(precision="fp32"))
    int8 = embedding_model_id(OnnxEmbeddings(precision="int8"))
    sync_documents([doc], store, namespace="kb", embedding_model=fp32)
    with pytest.raises(EmbeddingModelMismatchError, match="force_ingest=True"):
        sync_documents([doc], store, namespace="kb", embedding_model=int8)
    result = sync_documents([doc], store, namespace="kb", embedding_model=int8, overwrite=True)
    assert result.updated == 1


def test_an_int8_vector_does_not_depend_on_what_it_is_embedded_with() -> None:
    int8 = OnnxEmbeddings(precision="int8")
    alone = np.asarray(int8.embed_documents(["The cat sat on the mat."]))
    batched = np.asarray(int8.embed_documents(["The cat sat on the mat.", LONG, "short"]))
    np.testing.assert_allclose(batched[0], alone[0], atol=1e-6)
    np.testing.assert_allclose(int8.embed_query("The cat sat on the mat."), alone[0], atol=1e-6)


def test_int8_and_fp32_vectors_agree_and_have_different_model_ids() -> None:
    fp32, int8 = OnnxEmbeddings(precision="fp32"), OnnxEmbeddings(precision="int8")
    texts = ["The cat sat on the mat.", LONG]
    a, b = np.asarray(fp32.embed_documents(texts)), np.asarray(int8.embed_documents(texts))
    cosines = (a * b).sum(axis=1)
    assert cosines.min() > 0.98
    assert not np.allclose(a, b, atol=1e-4)  # other vectors...
    assert embedding_model_id(int8) == embedding_model_id(fp32) + ":int8"  # ...another id


def test_default_resolves_to_the_onnx_runtime_without_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from langchain_holodeck import resolve_embeddings; "
        "e = resolve_embeddings(None); v = e.embed_query('hello'); "
        "print(type(e).__name__, len(v), 'torch' in sys.modules, "
        "'sentence_transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["OnnxEmbeddings", "384", "False", "False"]


def test_the_default_model_name_also_resolves_to_the_onnx_runtime() -> None:
    emb = resolve_embeddings("sentence-transformers/all-MiniLM-L6-v2")
    assert isinstance(emb, OnnxEmbeddings)
    int8 = ":int8" if emb.precision == "int8" else ""
    assert embedding_model_id(emb) == (
        "OnnxEmbeddings:sentence-transformers/all-MiniLM-L6-v2:long_text=fit:window_tokens=128"
        + int8
    )
    assert embedding_model_id(OnnxEmbeddings(long_text="mean", precision="fp32")) == (
        "OnnxEmbeddings:sentence-transformers/all-MiniLM-L6-v2"  # the ids of earlier versions
    )
    truncating = OnnxEmbeddings(long_text="first", precision="fp32")
    assert embedding_model_id(truncating) == (
        "OnnxEmbeddings:sentence-transformers/all-MiniLM-L6-v2:long_text=first"
    )


def test_count_tokens_uses_the_models_word_pieces(onnx: OnnxEmbeddings) -> None:
    assert onnx.count_tokens("holodeck") == 3  # ho ##lode ##ck: not tiktoken's count
    assert onnx.count_tokens("") == 0


def test_a_long_text_is_embedded_as_windows_and_pooled(onnx: OnnxEmbeddings) -> None:
    n_tokens = onnx.count_tokens(LONG)
    assert n_tokens > 254
    (best,) = onnx.embed_windows([LONG], window=128)  # a document's windows of 128
    (own,) = onnx.embed_windows([LONG])  # auto: a document's own entry reads 256
    np.testing.assert_allclose(own, onnx.embed_windows([LONG], window=256)[0], atol=1e-6)
    assert best.shape == (len(token_windows(n_tokens, size=126, overlap=32)), 384)
    (windows,) = onnx.embed_windows([LONG], window=256)  # what the model reads
    assert windows.shape == (len(token_windows(n_tokens, size=254, overlap=32)), 384)
    assert windows.shape[0] >= 3
    assert best.shape[0] > windows.shape[0]
    pooled = np.asarray(onnx.embed_query(LONG))
    np.testing.assert_allclose(pooled, combine_windows(windows, "mean"), atol=1e-6)
    first = np.asarray(OnnxEmbeddings(long_text="first").embed_query(LONG))
    np.testing.assert_allclose(first, windows[0], atol=1e-6)
    assert float(pooled @ first) < 0.999  # the tail now counts


def test_the_tail_of_a_long_text_is_found_only_with_windows(onnx: OnnxEmbeddings) -> None:
    tail = "The replicator on deck nine dispenses Earl Grey tea, hot, at any hour."
    text = LONG + " " + tail
    other = "Shuttle bay doors must be sealed before launch; pilots confirm the seal."
    query = "where can I get hot tea from the replicator?"
    q = np.asarray(onnx.embed_query(query))
    truncated = np.asarray(OnnxEmbeddings(long_text="first").embed_documents([text, other]))
    mean = np.asarray(OnnxEmbeddings(long_text="mean").embed_documents([text, other]))
    assert mean[0] @ q > truncated[0] @ q + 0.05
    # "auto" (the default): a long document is its first 256 word pieces; its windows of 128
    # are texts of their own (sync stores them), and the last one holds the tail
    np.testing.assert_allclose(
        onnx.embed_documents([text])[0], onnx.embed_windows([text])[0][0], atol=1e-6
    )
    windows = onnx.window_texts([text, other])
    assert windows[1] == [other]
    assert len(windows[0]) >= 3
    assert windows[0][-1].endswith(tail)
    assert text.startswith(windows[0][0])
    best = max(np.asarray(onnx.embed_documents(windows[0])) @ q)
    assert best > mean[0] @ q > truncated[0] @ q


def test_windows_cut_by_window_texts_embed_as_the_texts_own_windows(
    onnx: OnnxEmbeddings,
) -> None:
    # sync cuts a chunk with window_texts, then embeds the chunk and its windows: the token
    # ids are kept from the cut (no second tokenization), so each window's vector is the
    # text's own window (a window starting inside a word keeps its ## piece); under "best",
    # where the chunk and its windows are all windows of 128 ("auto" tokenizes again)
    onnx = OnnxEmbeddings(long_text="best")
    text = LONG + " The replicator on deck nine dispenses tea."
    (windows,) = onnx.window_texts([text])
    assert len(windows) >= 3
    rows = onnx.embed_windows([text])[0]
    vectors = np.asarray(onnx.embed_documents([text, *windows[1:]]))
    np.testing.assert_allclose(vectors, rows, atol=1e-5)
    again = np.asarray(onnx.embed_documents(windows[1:]))  # used up: tokenized as texts
    cosines = (again * rows[1:]).sum(axis=1)
    assert cosines.min() > 0.95


def test_short_texts_are_one_window(onnx: OnnxEmbeddings) -> None:
    (windows,) = onnx.embed_windows(["short text"])
    assert windows.shape == (1, 384)
    np.testing.assert_allclose(np.linalg.norm(windows, axis=1), 1.0, atol=1e-5)


def test_embedding_is_thread_safe_and_deterministic(onnx: OnnxEmbeddings) -> None:
    results: dict[int, list[float]] = {}
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            results[n] = OnnxEmbeddings.embed_query(onnx, "holodeck safety protocols")
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for vec in results.values():
        np.testing.assert_allclose(vec, results[0], atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_tokens": 2}, "max_tokens must be >= 3"),
        ({"window_overlap": 126}, "window_overlap must be >= 0 and < window_tokens - 2"),
        ({"window_tokens": 512}, "window_tokens must be >= 3 and <= max_tokens"),
        (
            {"long_text": "max"},
            "long_text must be 'fit', 'auto', 'best', 'mean' or 'first', got 'max'",
        ),
        ({"batch_size": 0}, "batch_size must be positive, got 0"),
        ({"threads": 0}, "threads must be positive or None, got 0"),
        ({"precision": "int4"}, "precision must be 'auto', 'int8' or 'fp32', got 'int4'"),
        # a bool is an int in Python (batch_size=True was batches of 1); 2.5 failed in a range
        ({"batch_size": True}, "batch_size must be an integer, got True"),
        ({"batch_size": 2.5}, "batch_size must be an integer, got 2.5"),
        ({"threads": True}, "threads must be an integer, got True"),
        ({"window_overlap": 1.5}, "window_overlap must be an integer, got 1.5"),
        ({"max_tokens": "256"}, "max_tokens must be an integer, got '256'"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        OnnxEmbeddings(**kwargs)


@pytest.mark.parametrize(
    "model", [OnnxEmbeddings, pytest.param(LocalEmbeddings, marks=needs_sentence_transformers)]
)
async def test_a_text_that_is_not_a_str_is_named_with_its_index(
    model: type[OnnxEmbeddings | LocalEmbeddings],
) -> None:
    # the tokenizer's TypeError (TextEncodeInput must be Union[...]) named neither
    emb = model()
    with pytest.raises(TypeError, match=r"^texts\[1\] must be a str, got NoneType None\.$"):
        emb.embed_documents(["ok", None])  # type: ignore[list-item]  # the case under test
    with pytest.raises(TypeError, match=r"^texts\[2\] must be a str, got int 42\.$"):
        await emb.aembed_documents(["ok", "fine", 42])  # type: ignore[list-item]  # same
    with pytest.raises(TypeError, match=r"^text must be a str, got NoneType None\.$"):
        emb.embed_query(None)  # type: ignore[arg-type]  # the case under test
    with pytest.raises(TypeError, match=r"^text must be a str, got bytes b'ok'\.$"):
        await emb.aembed_query(b"ok")  # type: ignore[arg-type]  # the case under test
    with pytest.raises(TypeError, match=r"texts must be a list of str, got a str \('ok'\)"):
        emb.embed_documents("ok")  # type: ignore[arg-type]  # the case under test


@pytest.mark.parametrize(
    "model", [OnnxEmbeddings, pytest.param(LocalEmbeddings, marks=needs_sentence_transformers)]
)
async def test_a_text_holding_a_byte_that_is_not_utf8_is_named_with_its_position(
    model: type[OnnxEmbeddings | LocalEmbeddings],
) -> None:
    """Found 2026-12-07: a lone surrogate ("pump \\udcff", a byte kept by surrogateescape)
    made the tokenizer raise TypeError: TextEncodeInput must be Union[...], naming neither
    the text nor the character."""
    emb = model()
    with pytest.raises(ValueError, match=r"^text holds a character that is not text \(byte "):
        emb.embed_query("pump \udcff")
    with pytest.raises(ValueError, match=r"^text .*\(byte 0xff at character 5\): .*decode"):
        await emb.aembed_query("pump \udcff")
    with pytest.raises(ValueError, match=r"^texts\[1\] .*\(byte 0xe9 at character 3\)"):
        emb.embed_documents(["ok", "caf\udce9 menu"])
    with pytest.raises(ValueError, match=r"^texts\[2\] .*\(U\+D800 at character 0\)"):
        await emb.aembed_documents(["ok", "fine", "\ud800"])
    assert len(emb.embed_documents(["café ☕", "ok"])) == 2  # other non-ASCII text is text


def test_a_missing_model_file_is_named(tmp_path: Path) -> None:
    emb = OnnxEmbeddings(model_path=tmp_path / "nope.onnx")
    with pytest.raises(FileNotFoundError, match="model_path must be an existing file"):
        emb.embed_query("x")


# --- token_windows / combine_windows: the pure core -------------------------------------------


def test_token_windows_cover_every_token_with_full_windows() -> None:
    assert token_windows(10, size=4, overlap=1) == [(0, 4), (3, 7), (6, 10)]
    assert token_windows(4, size=4) == [(0, 4)]
    assert token_windows(0, size=4) == [(0, 0)]
    assert token_windows(9, size=4) == [(0, 4), (4, 8), (5, 9)]
    for n in range(1, 60):
        spans = token_windows(n, size=7, overlap=2)
        covered = {i for s, e in spans for i in range(s, e)}
        assert covered == set(range(n))
        assert all(e - s == min(7, n) for s, e in spans)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_tokens": 5, "size": 0}, "size must be positive, got 0"),
        ({"n_tokens": 5, "size": 4, "overlap": 4}, r"overlap must be >= 0 and < size \(4\), got 4"),
        ({"n_tokens": -1, "size": 4}, "n_tokens must be >= 0, got -1"),
    ],
)
def test_token_windows_reject_bad_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        token_windows(**kwargs)


def test_combine_windows_mean_and_first() -> None:
    rows = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    np.testing.assert_allclose(combine_windows(rows, "mean"), [2**-0.5, 2**-0.5], atol=1e-6)
    np.testing.assert_allclose(combine_windows(rows, "first"), [1.0, 0.0])
    with pytest.raises(
        ValueError, match="long_text must be 'fit', 'auto', 'best', 'mean' or 'first', got 'max'"
    ):
        combine_windows(rows, "max")  # type: ignore[arg-type]  # the error path
    with pytest.raises(ValueError, match="non-empty 2-d array"):
        combine_windows(np.zeros((0, 2)))


# --- LangChain standard suites ------------------------------------------------------------------


class TestOnnxEmbeddingsUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[OnnxEmbeddings]:
        return OnnxEmbeddings

    @property
    def embedding_model_params(self) -> dict:
        return {}


class TestOnnxEmbeddingsStandard(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self) -> type[OnnxEmbeddings]:
        return OnnxEmbeddings

    @property
    def embedding_model_params(self) -> dict:
        return {}


class TestCachedEmbeddingsUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[CachedEmbeddings]:
        return CachedEmbeddings

    @property
    def embedding_model_params(self) -> dict:
        return {"underlying": OnnxEmbeddings(), "store": InMemoryByteStore()}


class TestCachedEmbeddingsStandard(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self) -> type[CachedEmbeddings]:
        return CachedEmbeddings

    @property
    def embedding_model_params(self) -> dict:
        return {"underlying": OnnxEmbeddings(), "store": InMemoryByteStore()}


def test_a_query_embeds_a_bounded_number_of_windows(onnx: OnnxEmbeddings) -> None:
    """Issue 25 item 6: a 100k-character query cost ~77 s; words past the cap change nothing."""
    from langchain_holodeck.embeddings.windows import MAX_QUERY_WINDOWS

    words = "warp core diagnostics of the replicator console on deck nine " * 400
    capped = onnx.embed_windows([words], window=onnx.max_tokens, max_windows=MAX_QUERY_WINDOWS)[0]
    assert capped.shape[0] == MAX_QUERY_WINDOWS
    pasted = words + "holodeck safety protocols " * 8_000  # ~100k more characters
    np.testing.assert_allclose(onnx.embed_query(pasted), onnx.embed_query(words), atol=1e-6)


def test_fit_embeds_a_text_that_fits_whole_and_a_longer_one_as_its_first_window() -> None:
    fit = OnnxEmbeddings(long_text="fit")
    auto = OnnxEmbeddings()
    middle = " ".join(LONG.split()[:100])  # between one window of 128 and the model's 256
    short = "Never disable the safety interlock."
    assert 126 < fit.count_tokens(middle) <= 254 < fit.count_tokens(LONG)
    own = np.asarray(fit.embed_documents([short, middle, LONG]))
    whole = np.asarray(auto.embed_documents([short, middle]))  # auto: whole when it fits
    np.testing.assert_allclose(own[:2], whole, atol=1e-6)
    (first_128,) = fit.embed_windows([LONG], window=128, first_only=True)
    np.testing.assert_allclose(own[2], first_128[0], atol=1e-6)
    assert float(own[2] @ np.asarray(auto.embed_documents([LONG])[0])) < 0.999  # not its 256
    texts = fit.window_texts([short, middle, LONG])
    assert texts[0] == [short]
    assert texts[1][0] == middle  # itself, then its windows of 128
    assert len(texts[1]) == 1 + len(token_windows(fit.count_tokens(middle), size=126, overlap=32))
    assert len(texts[2]) == len(token_windows(fit.count_tokens(LONG), size=126, overlap=32))
    assert LONG.startswith(texts[2][0])  # its own entry is its first window
    assert LONG.endswith(texts[2][-1])


@pytest.mark.parametrize("mode", ["fit", "auto"])
def test_a_text_cut_by_window_texts_embeds_bit_for_bit_as_without_the_cut(mode: str) -> None:
    # an ingest cuts each chunk (window_texts), then embeds it: the ids of the cut are kept
    # (no second tokenization of the chunk) and give the very vector a fresh tokenization does
    middle = " ".join(LONG.split()[:100])
    texts = ["Never disable the safety interlock.", middle, LONG, LONG + " Tea, Earl Grey."]
    fresh = np.asarray(OnnxEmbeddings(long_text=mode).embed_documents(texts))
    cut = OnnxEmbeddings(long_text=mode)
    cut.window_texts(texts)
    assert len(cut._own) == len(texts)
    assert np.array_equal(np.asarray(cut.embed_documents(texts)), fresh)
    assert not cut._own  # used up
    assert np.array_equal(np.asarray(cut.embed_documents(texts)), fresh)


def test_window_texts_asked_twice_cuts_once_and_its_memos_are_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # prefetch and sync both cut a chunk: the second call takes the first one's windows
    from langchain_holodeck.embeddings import onnx as onnx_module

    fit = OnnxEmbeddings(long_text="fit")
    texts = [LONG, "Short.", LONG + " Tea, Earl Grey."]
    first = fit.window_texts(texts)
    assert len(fit._cuts) == len(texts)
    assert fit.window_texts(texts) == first
    assert not fit._cuts  # used up: a third call cuts again, the same
    assert fit.window_texts(texts) == first
    monkeypatch.setattr(onnx_module, "_CUT_MEMO_LIMIT", 2)
    monkeypatch.setattr(onnx_module, "_OWN_MEMO_LIMIT", 2)
    bounded = OnnxEmbeddings(long_text="fit")
    assert bounded.window_texts(texts) == first
    assert len(bounded._cuts) == len(bounded._own) == 2


def test_fit_sync_stores_windows_of_prose_and_one_vector_of_code() -> None:
    """A prose chunk that fits keeps its whole vector beside its windows; code gets none."""
    fit = OnnxEmbeddings(long_text="fit")
    store = MatrixVectorStore(fit)
    middle = " ".join(LONG.split()[:100])
    docs = [
        Document(page_content=text, metadata={"source_path": "a.md", "chunk_index": i, **meta})
        for i, (text, meta) in enumerate([(middle, {}), (LONG, {}), (LONG, {"chunk_type": "code"})])
    ]
    result = sync_documents(docs, store, namespace="kb")
    assert (result.added, result.failed) == (3, 0)
    mid, long, code = (stable_id("kb", f"a.md_chunk_{i}") for i in range(3))
    counts = {d.id: d.metadata["window_count"] for d in store.get_by_ids([mid, long, code])}
    windows_of_long = len(token_windows(fit.count_tokens(LONG), size=126, overlap=32))
    assert counts == {
        mid: len(token_windows(fit.count_tokens(middle), size=126, overlap=32)),
        long: windows_of_long - 1,  # its first window is its own entry
        code: 0,
    }
    vectors = store.get_vectors([mid, long, code])
    (first_128,) = fit.embed_windows([LONG], window=128, first_only=True)
    np.testing.assert_allclose(vectors[long], first_128[0], atol=1e-5)
    np.testing.assert_allclose(vectors[code], first_128[0], atol=1e-5)  # code: its first 128
    np.testing.assert_allclose(vectors[mid], fit.embed_documents([middle])[0], atol=1e-5)


def test_fit_sync_of_code_alone_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """No chunk gets windows, yet sync stores them: the first-window WARNING is not for it."""
    fit = OnnxEmbeddings(long_text="fit")
    code = Document(
        page_content=LONG, metadata={"source_path": "a.py", "chunk_index": 0, "chunk_type": "code"}
    )
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck"):
        result = sync_documents([code], MatrixVectorStore(fit), namespace="kb")
    assert (result.added, result.failed) == (1, 0)
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == []
