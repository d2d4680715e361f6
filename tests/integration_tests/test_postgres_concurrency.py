"""Two writers on one Postgres table at once (two ingests of one corpus): both converge.

Each writer is its own ``PostgresVectorStore`` (its own connections), as two processes are.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import psycopg
import pytest
from langchain_core.documents import Document
from psycopg import sql

from langchain_holodeck.backends.postgres import PostgresByteStore
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.keyword_index.bm25 import Tokenizer
from langchain_holodeck.vectorstores.postgres import PostgresVectorStore
from tests.helpers import HashingEmbeddings

pytestmark = pytest.mark.postgres

ROUNDS = 12
WORDS = [
    "arch",
    "brace",
    "cable",
    "deck",
    "engine",
    "field",
    "gauge",
    "hull",
    "iris",
    "joint",
    "keel",
    "lamp",
    "mast",
    "node",
]


def corpus(round_: int) -> list[Document]:
    """40 chunks, each with two model windows; the text changes every round (an edit)."""
    out = []
    for n in range(40):
        text = " ".join(WORDS[(n + i * round_) % len(WORDS)] for i in range(3 + n % 5))
        chunk = Document(
            id=f"chunk-{n}", page_content=text, metadata={"namespace": "kb", "round": round_}
        )
        windows = [
            Document(
                id=f"chunk-{n}:w{w}",
                page_content=f"{text} window {w}",
                metadata={"namespace": "kb", "window_of": f"chunk-{n}"},
            )
            for w in (1, 2)
        ]
        out += [chunk, *windows]
    return out


def run_together(*writers: Callable[[int], None]) -> list[BaseException]:
    """Run each writer for ``ROUNDS`` rounds, every round started at once; return errors."""
    barrier = threading.Barrier(len(writers))
    errors: list[BaseException] = []

    def loop(write: Callable[[int], None]) -> None:
        for round_ in range(ROUNDS):
            barrier.wait()
            try:
                write(round_)
            except Exception as e:  # collected: the test reports every one
                errors.append(e)

    threads = [threading.Thread(target=loop, args=(w,)) for w in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_two_concurrent_writers_of_the_same_ids_converge(
    postgres_url: str, postgres_table: str
) -> None:
    stores = [
        PostgresVectorStore(
            HashingEmbeddings(), connection_string=postgres_url, table_name=postgres_table
        )
        for _ in range(2)
    ]
    try:
        errors = run_together(*(lambda r, s=s: s.add_documents(corpus(r)) for s in stores))
        assert errors == []
        last = corpus(ROUNDS - 1)
        chunks = [d for d in last if "window_of" not in d.metadata]
        got = stores[0].get_by_ids([str(d.id) for d in last])
        assert [(d.id, d.page_content) for d in got] == [(d.id, d.page_content) for d in last]
        with psycopg.connect(postgres_url) as conn:
            names = {
                k: sql.Identifier(f"{postgres_table}{s}")
                for k, s in (("t", ""), ("terms", "_terms"), ("stats", "_stats"))
            }
            n_docs, total_len = conn.execute(
                sql.SQL("SELECT sum(n_docs), sum(total_len) FROM {stats}").format(**names)
            ).fetchone()  # type: ignore[misc]  # one row: an aggregate
            postings = conn.execute(
                sql.SQL("SELECT count(*) FROM {terms}").format(**names)
            ).fetchone()[0]  # type: ignore[index]  # one row: an aggregate
        tokenizer = Tokenizer()
        lengths = [len(tokenizer.split_terms(d.page_content)) for d in chunks]
        assert (n_docs, total_len) == (len(chunks), sum(lengths))
        assert postings == sum(len(Counter(tokenizer.split_terms(d.page_content))) for d in chunks)
        memory = BM25KeywordIndex()
        memory.upsert(chunks)
        expected = memory.search("arch cable keel", k=5)
        found = stores[0].keyword_search("arch cable keel", 5, namespace="kb")
        assert [s for _, s in found] == pytest.approx([h.score for h in expected], rel=1e-4)
    finally:
        for store in stores:
            store.close()


def test_two_concurrent_writers_of_the_embedding_cache_converge(
    postgres_url: str, postgres_table: str
) -> None:
    table = f"{postgres_table}_embcache"
    caches = [PostgresByteStore(postgres_url, table=table, prefix="kb:") for _ in range(2)]
    pairs = [(f"text-{n}", f"{n}".encode()) for n in range(200)]
    errors = run_together(*(lambda r, c=c: c.mset(pairs) for c in caches))
    assert errors == []
    assert caches[0].mget(["text-7", "text-199"]) == [b"7", b"199"]
    assert len(list(caches[1].yield_keys())) == 200
