"""Test doubles shared by the suites: no network, no downloads."""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from pydantic import SecretStr

DATA_DIR = __import__("pathlib").Path(__file__).parent / "data"
needs_sentence_transformers = pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None,
    reason="LocalEmbeddings needs sentence-transformers (torch), which the test extra leaves "
    'out; run these with: pip install -e ".[test,local]"',
)
"""Marks a test of ``LocalEmbeddings`` or of the torch reference model."""
_WORD = re.compile(r"\w+")


class TableEmbeddings(Embeddings):
    """Fixed vectors looked up by exact text (a test writes its geometry out)."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text]


class HashingEmbeddings(Embeddings):
    """Bag-of-words hashed into ``size`` buckets, L2-normalized: texts sharing words are close.

    Counts its calls, so tests can assert that nothing was re-embedded.
    """

    in_process = True  # a local model: sync lets the store embed (no requests in flight)

    def __init__(self, size: int = 64, *, fail_on: str | None = None) -> None:
        self.size = size
        self.fail_on = fail_on
        self.calls = 0
        self.texts_embedded = 0
        self._lock = threading.Lock()

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * self.size
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            vec[int.from_bytes(digest, "little") % self.size] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            self.calls += 1
            self.texts_embedded += len(texts)
        if self.fail_on is not None and any(self.fail_on in t for t in texts):
            msg = f"embedding service refused a batch containing {self.fail_on!r}"
            raise RuntimeError(msg)
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


class WindowedHashingEmbeddings(HashingEmbeddings):
    """``HashingEmbeddings`` with a model window of ``window_words`` words, ``long_text="best"``.

    As ``OnnxEmbeddings`` does in that mode: ``window_texts`` cuts a text into windows
    (substrings), and a document is embedded as its first window only.
    """

    def __init__(
        self, size: int = 64, *, window_words: int = 8, long_text: str = "best", **kwargs: Any
    ) -> None:
        super().__init__(size, **kwargs)
        self.window_words = window_words
        self.long_text = long_text
        """``"best"``, or ``"auto"``: a long text is itself (whole) followed by its windows."""

    def window_texts(self, texts: list[str]) -> list[list[str]]:
        out = []
        for text in texts:
            spans = [m.span() for m in re.finditer(r"\S+", text)]
            if len(spans) <= self.window_words:
                out.append([text])
                continue
            starts = range(0, len(spans), self.window_words)
            windows = [
                text[spans[i][0] : spans[min(i + self.window_words, len(spans)) - 1][1]]
                for i in starts
            ]
            out.append([text, *windows] if self.long_text == "auto" else windows)
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return super().embed_documents([w[0] for w in self.window_texts(list(texts))])


WINDOW_HEAD = "alpha bravo charlie delta echo foxtrot golf hotel"
WINDOW_MIDDLE = "india juliet kilo lima mike november oscar papa"
WINDOW_TAIL = "replicator dispenses earl grey tea hot always ready"
LONG_CHUNK = f"{WINDOW_HEAD} {WINDOW_MIDDLE} {WINDOW_TAIL}"
"""Three windows of ``WindowedHashingEmbeddings``' eight words."""
SHORT_CHUNK = "shuttle bay doors sealed before launch pilots confirm"
"""One window."""


def chunk_documents(*texts: str, source: str = "a.md") -> list[Document]:
    """One Document per text, chunks 0, 1, ... of ``source``."""
    return [
        Document(page_content=t, metadata={"source": source, "chunk_index": i})
        for i, t in enumerate(texts)
    ]


def redis_url_or_skip() -> str:
    """``REDIS_URL``, or skip — unless ``HOLODECK_REQUIRE_REDIS=1``, where a missing URL fails."""
    url = os.environ.get("REDIS_URL")
    if url:
        return url
    if os.environ.get("HOLODECK_REQUIRE_REDIS") == "1":
        pytest.fail("HOLODECK_REQUIRE_REDIS=1 but REDIS_URL is unset: start Redis Stack first.")
    pytest.skip("REDIS_URL is unset: start scripts/redis-stack.sh to run Redis tests.")


def postgres_url_or_skip() -> str:
    """``POSTGRES_URL``, or skip — unless ``HOLODECK_REQUIRE_POSTGRES=1``, where a missing URL
    fails."""
    url = os.environ.get("POSTGRES_URL")
    if url:
        return url
    if os.environ.get("HOLODECK_REQUIRE_POSTGRES") == "1":
        pytest.fail("HOLODECK_REQUIRE_POSTGRES=1 but POSTGRES_URL is unset: start Postgres first.")
    pytest.skip("POSTGRES_URL is unset: run scripts/postgres.sh start to run Postgres tests.")


def drop_postgres_tables(url: str, table: str) -> None:
    """Drop a Postgres store's tables (``table``, its terms, stats and embedding cache)."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        for name in (table, f"{table}_terms", f"{table}_stats", f"{table}_embcache"):
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(sql.Identifier(name)))


class PlainStore(VectorStore):
    """A LangChain store with no filter support at all: searches ignore every kwarg."""

    def __init__(self, embeddings: Embeddings) -> None:
        self.inner = InMemoryVectorStore(embeddings)
        self.fetches: list[int] = []

    @property
    def embeddings(self) -> Embeddings:
        return self.inner.embeddings

    def add_texts(
        self, texts: Iterable[str], metadatas: list[dict] | None = None, **kwargs: Any
    ) -> list[str]:
        return self.inner.add_texts(texts, metadatas, ids=kwargs.get("ids"))

    def get_by_ids(self, ids: Any, /) -> list[Document]:
        return self.inner.get_by_ids(ids)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> None:
        self.inner.delete(ids)

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        self.fetches.append(k)
        return self.inner.similarity_search(query, k=k)

    def similarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        self.fetches.append(k)
        return self.inner.similarity_search_with_score(query, k=k)

    def _select_relevance_score_fn(self) -> Any:
        return lambda score: score

    @classmethod
    def from_texts(cls, *args: Any, **kwargs: Any) -> PlainStore:
        raise NotImplementedError


BAD_K = [-1, 2.5, "2", True]


def check_bad_k_is_named(store: VectorStore) -> None:
    """Every search names a bad ``k`` (or ``fetch_k``) before it asks the engine; 0 is []."""
    store.add_documents([Document(id=str(i), page_content=f"fish {i}") for i in range(3)])
    vector = store.embeddings.embed_query("fish")  # type: ignore[union-attr]  # set here
    for bad in BAD_K:
        message = rf"^k must be an integer >= 0, got {bad!r}\.$"
        with pytest.raises(ValueError, match=message):
            store.similarity_search("fish", k=bad)
        with pytest.raises(ValueError, match=message):
            store.similarity_search_by_vector(vector, k=bad)
        with pytest.raises(ValueError, match=message):
            store.max_marginal_relevance_search("fish", k=bad)
        with pytest.raises(ValueError, match=rf"^fetch_k must be an integer >= 0, got {bad!r}"):
            store.max_marginal_relevance_search("fish", k=1, fetch_k=bad)
    assert store.similarity_search("fish", k=0) == []
    assert len(store.similarity_search("fish", k=np.int64(2))) == 2


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``holodeck-rag ARGV`` in this process: its exit code, stdout and stderr."""
    from langchain_holodeck.cli.main import main

    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@dataclass
class RedisDatabase:
    """A ``database`` config for ``create_vector_store_with_status``: a Redis index."""

    connection_string: SecretStr
    index_name: str
    provider: str = "redis"
    vector_algorithm: str = "HNSW"
    distance_metric: str = "COSINE"


def check_misspelt_filter_is_refused(
    store: VectorStore, only_a: Any, *, wrong_type: Any, wrong_type_error: str
) -> Any:
    """Every search refuses ``filters=`` naming it, where it dropped it and ran unfiltered;
    so does a ``HybridRetriever`` (and the view itself) over ``NamespaceFilteredStore``.

    Adds four documents, of ``source_path`` ``a.md`` and ``b.md`` (namespace ``kb``);
    ``only_a``: the store's filter keeping those of ``a.md``, which every search applies;
    ``wrong_type``: a filter of a type the store does not take, refused with
    ``wrong_type_error``. Returns a retriever over the view with ``only_a``, ``k=4``.
    """
    from langchain_holodeck.retrievers import HybridRetriever
    from langchain_holodeck.vectorstores import NamespaceFilteredStore

    store.add_documents(
        [
            Document(
                id=f"{key}{i}",
                page_content=f"fish {key} {i}",
                metadata={"namespace": "kb", "source_path": f"{key}.md"},
            )
            for key in "ab"
            for i in range(2)
        ]
    )
    vector = store.embeddings.embed_query("fish")  # type: ignore[union-attr]  # set here
    searches: list[Callable[..., Sequence[Any]]] = [
        lambda **kw: store.similarity_search("fish", k=4, **kw),
        lambda **kw: store.similarity_search_by_vector(vector, k=4, **kw),
        lambda **kw: store.similarity_search_with_score("fish", k=4, **kw),
        lambda **kw: store.similarity_search_with_relevance_scores("fish", k=4, **kw),
        lambda **kw: store.max_marginal_relevance_search("fish", k=4, **kw),
    ]
    name = type(store).__name__
    for search in searches:
        with pytest.raises(TypeError, match=rf"^{name}\.\w+ got .* 'filters'; its searches take"):
            search(filters=only_a)
        docs = [hit[0] if isinstance(hit, tuple) else hit for hit in search(filter=only_a)]
        assert {d.metadata["source_path"] for d in docs} == {"a.md"}
    view = NamespaceFilteredStore(store, namespace="kb")
    for key in ("filters", "fliter"):
        with pytest.raises(ValueError, match=rf"search_kwargs '{key}' is not an argument of"):
            HybridRetriever(vector_store=view, search_kwargs={key: only_a})
        with pytest.raises(
            ValueError, match=rf"search_kwargs '{key}' is not an argument of {name}"
        ):
            NamespaceFilteredStore(store, namespace="kb", search_kwargs={key: only_a})
    with pytest.raises(TypeError, match=wrong_type_error):
        HybridRetriever(vector_store=view, search_kwargs={"filter": wrong_type})
    retriever = HybridRetriever(vector_store=view, search_kwargs={"filter": only_a}, k=4)
    assert {d.metadata["source_path"] for d in retriever.invoke("fish")} == {"a.md"}
    return retriever


def crash_after_files(crash: Callable[[], None]) -> Callable[[Any], None]:
    """An ``on_progress`` callback that calls ``crash`` once, after the first files were read."""
    crashed: list[str] = []

    def crash_once(progress: Any) -> None:  # an ``IngestProgress``
        if progress.stage == "files" and not crashed:
            crashed.append(progress.stage)
            crash()

    return crash_once


class OverlappingStore(InMemoryVectorStore):
    """An in-memory store that makes two runs started side by side overlap, for sure.

    A sync's first store call is ``get_by_ids``: each thread's first one waits until a second
    thread has made one too (both runs are then under way at once), or until ``go`` is set
    (a test sets it once the other run was refused). A wait past ``timeout`` raises.
    """

    def __init__(self, embedding: Embeddings, *, timeout: float = 30.0) -> None:
        super().__init__(embedding)
        self.go = threading.Event()
        self.waiting = threading.Event()
        """Set once a run waits in ``get_by_ids``: it holds the namespace."""
        self.timeout = timeout
        self._threads: set[int] = set()
        self._lock = threading.Lock()

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        with self._lock:
            first = threading.get_ident() not in self._threads
            self._threads.add(threading.get_ident())
            if len(self._threads) > 1:
                self.go.set()
        if first and not self.go.is_set():
            self.waiting.set()
            if not self.go.wait(self.timeout):
                msg = f"no second run reached the store within {self.timeout} s"
                raise TimeoutError(msg)
        return super().get_by_ids(ids)


def added_between_walks(
    ingest: Callable[[Callable[[Any], None]], Any], new_file: Path, *, timeout: float = 30.0
) -> dict[str, Any]:
    """Two ingests of one folder overlapping, a file added between their walks: the results.

    ``ingest(on_progress)`` runs one ingest of the folder (with a server store, through its own
    store object: another process) and returns its result. Run A walks and splits the folder;
    then ``new_file`` appears (16 long sections) and run B starts, walks (``new_file`` is in
    its walk, not in A's), and stops after its first written batch (chunks of ``new_file``:
    its chunk 0, the file record, is written last) until A has finished, its cleanup too;
    then B finishes. ``{"A": ..., "B": ...}``; an exception of B's is raised here.
    """
    results: dict[str, Any] = {}
    b_wrote, a_done = threading.Event(), threading.Event()

    def b_progress(event: Any) -> None:  # an ``IngestProgress``
        if event.stage == "embeddings" and not b_wrote.is_set():
            b_wrote.set()
            if not a_done.wait(timeout):
                msg = f"run A did not finish within {timeout} s"
                raise TimeoutError(msg)

    def run_b() -> None:
        try:
            results["B"] = ingest(b_progress)
        except Exception as error:  # raised in the test's thread, below
            results["B"] = error
        finally:
            b_wrote.set()

    b = threading.Thread(target=run_b)

    def a_progress(event: Any) -> None:
        if event.stage == "chunks" and not b.is_alive() and "B" not in results:
            sections = (
                f"## Part {n}\n\n" + " ".join(f"shuttle{n} bay{n} tractor beam" for _ in range(90))
                for n in range(16)
            )
            new_file.write_text("\n\n".join(sections) + "\n", encoding="utf-8")
            b.start()
            if not b_wrote.wait(timeout):
                msg = f"run B wrote nothing within {timeout} s"
                raise TimeoutError(msg)

    try:
        results["A"] = ingest(a_progress)
    finally:
        a_done.set()
        b.join(timeout)
    if isinstance(results.get("B"), Exception):
        raise results["B"]
    return results
