"""PostgreSQL + pgvector: ``PostgresVectorStore``, with BM25 in SQL and native hybrid search.

Imported lazily: it needs the ``postgres`` extra (``pip install "langchain-holodeck[postgres]"``:
psycopg 3 and pgvector). The SQL lives in ``_postgres_sql``; the connections (primary, read
replicas, per thread) in ``_postgres_conn``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import psycopg
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore
from psycopg import sql
from psycopg.types.json import Jsonb

from langchain_holodeck._chunk import NAMESPACE, WINDOW_OF
from langchain_holodeck._redact import check_userinfo
from langchain_holodeck._scores import clip_unit
from langchain_holodeck.contracts import NativeHit, check_native_filter, check_native_hybrid_args
from langchain_holodeck.errors import ConfigError
from langchain_holodeck.keyword_index.bm25 import Tokenizer
from langchain_holodeck.vectorstores import _postgres_sql as q
from langchain_holodeck.vectorstores._columns import copy_metadata
from langchain_holodeck.vectorstores._entries import entry_ids
from langchain_holodeck.vectorstores._postgres_conn import (
    Connections,
    check_shard_list,
    create_sharded_schema,
    shard_server,
)
from langchain_holodeck.vectorstores._ranking import check_k, mmr, refuse_unknown_kwargs

logger = logging.getLogger(__name__)

STATS_COMPACT_ROWS = 64
"""Delta rows per namespace in ``T_stats`` past which a write folds them into one."""
WRITE_LOCK = 0x484F4C4F
"""First key of the advisory lock a write or delete of table ``T`` holds: ``(WRITE_LOCK,
hashtext(T))``; the schema's creation locks ``hashtext(T)``, another lock."""


class PostgresVectorStore(VectorStore):
    """A LangChain ``VectorStore`` on PostgreSQL + pgvector, one table per store.

    - ids are text (any string: chunk UUIDs and model-window ids ``<chunk id>:w<n>``); writes
      replace by id (DELETE then COPY in one transaction: no ``ON CONFLICT``, so the same
      path writes through a sharded coordinator), each holding the table's write lock (a
      transaction advisory lock), so writers in other processes take turns instead of
      inserting the same id twice;
    - metadata round-trips exactly (jsonb); ``metadata["namespace"]`` is also a column, and
      ``filter={"namespace": ...}`` (other keys: jsonb containment) restricts searches;
    - PostgreSQL stores no NUL character: a write holding one in a document's text or
      metadata is refused before anything is written, naming the document (``ValueError``);
    - relevance scores are similarities in [0, 1]: COSINE ``1 - d``, L2 ``1 - d^2 / 2``,
      IP ``-d`` (pgvector's negated inner product), clipped; ``similarity_search_with_score``
      returns pgvector's raw distance;
    - the schema (see ``_postgres_sql``) is created on the first write, with the vector
      width of the embeddings; reads before that return nothing;
    - searches go to a read replica when ``read_replicas`` are given (see ``Connections``),
      writes and reads by id to the primary; ``shards`` make the table hash-partitioned over
      ``postgres_fdw`` foreign partitions on those servers.

    Setup:
        ``pip install "langchain-holodeck[postgres]"``; a PostgreSQL server with pgvector
        (``scripts/postgres.sh start`` runs one).

    Instantiate:
        ```python
        store = PostgresVectorStore(embeddings, connection_string="postgresql://...")
        store.add_documents([Document(id="a", page_content="arch controls")])
        store.native_hybrid_search("arch controls", k=1, fetch_k=10)
        # -> [NativeHit(document=Document(id='a', ...), score=0.0164, similarity=1.0)]
        ```
    """

    native_fusions = ("rrf", "convex")
    native_filter_keys = frozenset({NAMESPACE})
    """The ``filter`` keys ``native_hybrid_search`` applies (its statement filters a column)."""
    """How ``native_hybrid_search`` can fuse (the retriever passes its ``fusion``)."""

    def __init__(
        self,
        embedding: Embeddings,
        *,
        connection_string: str,
        table_name: str = "holodeck_vectors",
        distance_metric: q.Metric = "COSINE",
        keyword_scoring: q.KeywordScoring = "bm25",
        read_replicas: Sequence[str] = (),
        shards: Sequence[str] = (),
        max_replica_lag_bytes: int = 16 * 1024 * 1024,
        connect_timeout: float = 2.0,
        ef_search: int = 100,
    ) -> None:
        if distance_metric not in q.OPERATOR:
            msg = f"distance_metric must be 'COSINE', 'L2' or 'IP', got {distance_metric!r}."
            raise ValueError(msg)
        if not re.fullmatch(q.TABLE_NAME_PATTERN, table_name):
            msg = (
                f"table_name must be lowercase letters, digits and underscores (at most 41, "
                f"not starting with a digit), got {table_name!r}."
            )
            raise ValueError(msg)
        if keyword_scoring not in ("bm25", "ts_rank_cd"):
            msg = f"keyword_scoring must be 'bm25' or 'ts_rank_cd', got {keyword_scoring!r}."
            raise ValueError(msg)
        check_userinfo(connection_string, name="connection_string")
        for field, urls in (("read_replicas", read_replicas), ("shards", shards)):
            for i, url in enumerate(urls):
                check_userinfo(url, name=f"{field}[{i}]")
        self.embedding = embedding
        self.table_name = table_name
        self.distance_metric = distance_metric
        self.keyword_scoring = keyword_scoring
        self.shards = list(shards)
        self.tokenizer = Tokenizer()
        self.connections = Connections(
            connection_string,
            read_replicas=read_replicas,
            max_replica_lag_bytes=max_replica_lag_bytes,
            connect_timeout=connect_timeout,
            ef_search=ef_search,
        )
        self.connections.shard_urls = {
            shard_server(table_name, i): url for i, url in enumerate(self.shards)
        }
        self._dim: int | None = None

    @property
    def embeddings(self) -> Embeddings:
        return self.embedding

    def close(self) -> None:
        """Close every connection this store opened (in any thread)."""
        self.connections.close()

    # -- schema --------------------------------------------------------------------------
    @property
    def vector_dimension(self) -> int | None:
        """Width of the table's vector column; ``None`` before the first write."""
        if self._dim is None:
            row = self.connections.run_primary(
                lambda c: c.execute(
                    "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) "
                    "AND attname = 'embedding'",
                    (self.table_name,),
                ).fetchone()
            )
            self._dim = int(row[0]) if row and row[0] and row[0] > 0 else None
            if self._dim is not None and self.shards:
                check_shard_list(self.connections, table=self.table_name, shards=self.shards)
        return self._dim

    def check_tables(self) -> None:
        """Refuse a ``table_name`` whose tables belong to something else, before creating any.

        A store's tables are ``T``, ``T_terms``, ``T_stats`` and ``T_embcache``: ``T`` must not
        be a side table of another store (``pin_terms`` beside ``pin``), and each that exists
        must have its columns, or the first write fails half-way, leaving stray tables.

        Raises:
            ConfigError: When ``table_name`` names another store's side table, or one of its
                tables exists and is not this store's kind.
        """
        table = self.table_name
        wanted = {table: "embedding"} | {table + s: col for s, (col, _) in q.SIDE_TABLES.items()}
        for suffix in q.SIDE_TABLES:
            if table.endswith(suffix) and len(table) > len(suffix):
                wanted[table.removesuffix(suffix)] = "embedding"
        rows = self.connections.run_primary(
            lambda c: c.execute(
                "SELECT n, to_regclass(quote_ident(n)) IS NOT NULL, EXISTS (SELECT 1 FROM "
                "pg_attribute a WHERE a.attrelid = to_regclass(quote_ident(n)) "
                "AND a.attname = col AND NOT a.attisdropped) "
                "FROM unnest(%s::text[], %s::text[]) AS w(n, col)",
                (list(wanted), list(wanted.values())),
            ).fetchall()
        )
        found = {name: (exists, has_column) for name, exists, has_column in rows}
        for suffix, (_, role) in q.SIDE_TABLES.items():
            owner = table.removesuffix(suffix)
            if owner != table and found.get(owner) == (True, True):
                msg = (
                    f"table_name {table!r} is the {role} table of the PostgreSQL store "
                    f"{owner!r}; choose another table_name."
                )
                raise ConfigError(msg)
        if found[table] == (True, False):
            msg = (
                f"table_name {table!r} names an existing PostgreSQL table that is not a "
                "holodeck store (it has no embedding column); choose another table_name."
            )
            raise ConfigError(msg)
        for suffix, (column, role) in q.SIDE_TABLES.items():
            if found[table + suffix] == (True, False):
                msg = (
                    f"table_name {table!r} keeps its {role} in {table + suffix!r}, but that "
                    f"table exists and is not one (it has no {column} column); choose another "
                    "table_name."
                )
                raise ConfigError(msg)

    @property
    def index_metric(self) -> q.Metric | None:
        """The metric the table's HNSW index serves (``None``: no table or index yet).

        Read from the index's operator class (on the first shard when sharded), since a
        table keeps the index it was created with whatever ``distance_metric`` says now.
        """
        if self.vector_dimension is None:
            return None
        params = (self.table_name,)
        if self.shards:
            with psycopg.connect(self.shards[0], connect_timeout=5) as shard:
                row = shard.execute(q.index_metric_sql(), params).fetchone()
        else:
            row = self.connections.run_primary(
                lambda c: c.execute(q.index_metric_sql(), params).fetchone()
            )
        by_opclass = {opclass: metric for metric, opclass in q.OPCLASS.items()}
        return by_opclass.get(row[0]) if row else None  # type: ignore[return-value]  # a Metric

    def rebuild_index(self) -> None:
        """Rebuild the HNSW index for ``distance_metric`` (on every shard when sharded).

        The vectors stay: only the index changes, so searches use it again (a query whose
        operator differs from the index's scans the whole table). Writes wait meanwhile.
        """
        if self.vector_dimension is None:
            return
        statements = q.hnsw_rebuild_statements(self.table_name, self.distance_metric)

        def rebuild(conn: Any) -> None:
            with conn.transaction():
                for statement in statements:
                    conn.execute(statement)

        if self.shards:
            for url in self.shards:
                with psycopg.connect(url, autocommit=True, connect_timeout=5) as shard:
                    rebuild(shard)
        else:
            self.connections.run_primary(rebuild)
        logger.info(
            "Postgres table %r: HNSW index rebuilt for %s.", self.table_name, self.distance_metric
        )

    def _ensure_schema(self, dim: int) -> None:
        if self.vector_dimension is not None:
            return
        self.check_tables()
        if self.shards:
            create_sharded_schema(
                self.connections,
                table=self.table_name,
                dim=dim,
                metric=self.distance_metric,
                shards=self.shards,
            )
        else:
            self.connections.run_primary(lambda c: self._create_tables(c, dim))
        self._dim = None

    def _create_tables(self, conn: Any, dim: int) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.table_name,))
            for statement in q.table_statements(
                self.table_name, dim, self.distance_metric, primary_key=True
            ):
                conn.execute(statement)
            conn.execute(q.stats_statement(self.table_name))

    def reset_dimension(self, dimension: int) -> None:
        """Make the vector column ``dimension`` wide; stored vectors become NULL until rewritten.

        Rows keep their text and metadata (sync reads them), but no search finds them until
        the re-ingest writes their new vectors; the HNSW index is rebuilt by the ALTER.

        Raises:
            ConfigError: When the table is sharded (``shards``): its width is fixed; the
                message names the way out (another ``table_name``).
        """
        if self.vector_dimension is None:
            return
        if self.shards:  # the coordinator's partitions are foreign tables: ALTER cannot recurse
            msg = (
                f"the sharded table {self.table_name!r} holds {self.vector_dimension}-"
                f"dimensional vectors and cannot change width in place; for a "
                f"{int(dimension)}-dimensional model set database.table_name to a new name "
                "(or drop the table on the coordinator and on each shard) and ingest again."
            )
            raise ConfigError(msg)
        statement = sql.SQL(
            "ALTER TABLE {t} ALTER COLUMN embedding TYPE vector({d}) USING NULL"
        ).format(t=sql.Identifier(self.table_name), d=sql.Literal(int(dimension)))
        self.connections.run_primary(lambda c: c.execute(statement))
        self._dim = None
        logger.info(
            "Postgres table %r now holds %d-dimensional vectors.", self.table_name, dimension
        )

    # -- writes --------------------------------------------------------------------------
    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        batch_size: int = 500,
        **kwargs: Any,
    ) -> list[str]:
        texts = list(texts)
        out_ids = entry_ids(texts, metadatas, ids)
        if not texts:
            return []
        metas = [dict(m) for m in metadatas] if metadatas is not None else [{} for _ in texts]
        _refuse_nul(texts, metas, out_ids)  # before the embedding call
        vectors = self.embedding.embed_documents(texts)
        self._write_rows(texts, vectors, metas, out_ids, batch_size=batch_size)
        return out_ids

    def add_vectors(
        self,
        documents: Sequence[Document],
        vectors: Sequence[Sequence[float]],
        *,
        ids: Sequence[str | None] | None = None,
        batch_size: int = 500,
    ) -> list[str]:
        """Upsert documents with precomputed vectors (no embedding call); return their ids.

        ``ids`` override ``Document.id``; a document with neither gets a random UUID.

        Raises:
            ValueError: When the lengths differ, a vector's width differs from the table's, or
                a document's text or metadata holds a NUL character (nothing is written).
        """
        if len(vectors) != len(documents) or (ids is not None and len(ids) != len(documents)):
            msg = (
                f"add_vectors needs one vector (and id) per document, got {len(documents)} "
                f"documents, {len(vectors)} vectors and {len(ids or documents)} ids."
            )
            raise ValueError(msg)
        given = ids if ids is not None else [d.id for d in documents]
        out_ids = [str(i) if i else str(uuid.uuid4()) for i in given]
        _refuse_nul([d.page_content for d in documents], [d.metadata for d in documents], out_ids)
        self._write_rows(
            [d.page_content for d in documents],
            vectors,
            [dict(d.metadata) for d in documents],
            out_ids,
            batch_size=batch_size,
        )
        return out_ids

    def _write_rows(
        self,
        texts: Sequence[str],
        vectors: Sequence[Sequence[float]],
        metadatas: Sequence[Mapping[str, Any]],
        ids: Sequence[str],
        *,
        batch_size: int = 500,
    ) -> None:
        """Write rows with vectors computed already (replacing by id), in transactions.

        Raises:
            ValueError: When a vector's width differs from the table's.
        """
        if not texts:
            return
        self._ensure_schema(len(vectors[0]))
        dim = self.vector_dimension
        for n, vector in enumerate(vectors):
            if len(vector) != dim:
                msg = (
                    f"vector {n} (id {ids[n]!r}) has dimension {len(vector)} but the Postgres "
                    f"table {self.table_name!r} holds dimension {dim}: the embedding model "
                    "changed. Re-ingest with force_ingest=True (CLI: --force-ingest)."
                )
                raise ValueError(msg)
        latest = {doc_id: n for n, doc_id in enumerate(ids)}  # a repeated id: the last wins
        order = sorted(latest.values())
        for start in range(0, len(order), batch_size):
            self._write_batch(
                [
                    (ids[n], texts[n], vectors[n], metadatas[n])
                    for n in order[start : start + batch_size]
                ]
            )

    def _write_batch(self, rows: list[tuple[str, str, Sequence[float], Mapping[str, Any]]]) -> None:
        records, postings = [], []
        delta: Counter[tuple[str | None, str]] = Counter()
        for doc_id, text, vector, metadata in rows:
            namespace = _namespace(metadata)
            window_of = metadata.get(WINDOW_OF)
            doc_len = 0
            if not window_of:
                terms = Counter(self.tokenizer.split_terms(text))
                doc_len = sum(terms.values())
                postings += [(doc_id, namespace, t, tf, doc_len) for t, tf in terms.items()]
                delta[(namespace, "n")] += 1
                delta[(namespace, "len")] += doc_len
            records.append(
                (
                    doc_id,
                    namespace,
                    text,
                    Jsonb(_json_safe(metadata, doc_id)),
                    str(window_of) if window_of else None,
                    doc_len,
                    np.asarray(vector, dtype=np.float32),
                )
            )
        self.connections.run_primary(lambda c: self._replace(c, records, postings, delta))

    def _replace(
        self,
        conn: Any,
        records: list[tuple[Any, ...]],
        postings: list[tuple[Any, ...]],
        delta: Counter[tuple[str | None, str]],
    ) -> None:
        """One transaction: delete the ids, insert rows and postings, record the stats.

        It holds the table's write lock first: under READ COMMITTED, two writers of the same
        ids would each delete nothing the other has not committed, and the second COPY would
        then fail on the primary key. Taking turns, the second deletes (and subtracts from
        the stats) what the first wrote, so rows, postings and stats stay consistent. The
        embedding runs before, outside the lock; only the write itself waits.
        """
        names = _tables(self.table_name)
        delta = Counter(delta)
        with conn.transaction(), conn.cursor() as cur:
            _lock_writes(cur, self.table_name)
            ids = [r[0] for r in records]
            cur.execute(
                sql.SQL(
                    "DELETE FROM {t} WHERE id = ANY(%s) RETURNING namespace, doc_len, window_of"
                ).format(**names),
                (ids,),
            )
            for namespace, doc_len, window_of in cur.fetchall():
                if window_of is None:
                    delta[(namespace, "n")] -= 1
                    delta[(namespace, "len")] -= doc_len
            cur.execute(sql.SQL("DELETE FROM {terms} WHERE id = ANY(%s)").format(**names), (ids,))
            _copy(cur, names["t"], ROW_COLUMNS, records)
            if postings:
                _copy(cur, names["terms"], TERM_COLUMNS, postings)
            self._record_stats(cur, delta)

    def _record_stats(self, cur: Any, delta: Mapping[tuple[str | None, str], int]) -> None:
        """Append the batch's (namespace, chunks, length) change; fold long delta logs."""
        names = _tables(self.table_name)
        namespaces = {ns for ns, _ in delta}
        rows = [(ns, delta[(ns, "n")], delta[(ns, "len")]) for ns in namespaces]
        rows = [r for r in rows if r[1] or r[2]]
        if not rows:
            return
        cur.executemany(
            sql.SQL(
                "INSERT INTO {stats} (namespace, n_docs, total_len) VALUES (%s, %s, %s)"
            ).format(**names),
            rows,
        )
        for namespace, *_ in rows:
            cur.execute(
                sql.SQL(
                    "SELECT count(*) FROM {stats} WHERE namespace IS NOT DISTINCT FROM %s"
                ).format(**names),
                (namespace,),
            )
            if cur.fetchone()[0] > STATS_COMPACT_ROWS:
                cur.execute(
                    sql.SQL(
                        "WITH gone AS (DELETE FROM {stats} WHERE namespace IS NOT DISTINCT FROM %s "
                        "RETURNING n_docs, total_len) INSERT INTO {stats} (namespace, n_docs, "
                        "total_len) SELECT %s, sum(n_docs), sum(total_len) FROM gone"
                    ).format(**names),
                    (namespace, namespace),
                )

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        """Delete rows by id; unknown ids are ignored; ``None`` deletes nothing.

        Returns:
            ``True`` if at least one row was deleted.
        """
        if not ids or self.vector_dimension is None:
            return False
        return bool(self.connections.run_primary(lambda c: self._delete(c, [str(i) for i in ids])))

    def delete_existing(self, ids: Sequence[str]) -> list[str]:
        """Delete ``ids``; return those that existed, in input order (``CountingDelete``)."""
        unique = list(dict.fromkeys(str(i) for i in ids))
        if not unique or self.vector_dimension is None:
            return []
        gone = set(self.connections.run_primary(lambda c: self._delete(c, unique)))
        return [doc_id for doc_id in unique if doc_id in gone]

    def _delete(self, conn: Any, ids: list[str]) -> list[str]:
        names = _tables(self.table_name)
        delta: Counter[tuple[str | None, str]] = Counter()
        with conn.transaction(), conn.cursor() as cur:
            _lock_writes(cur, self.table_name)  # in turn with writes: no deadlock, exact stats
            cur.execute(
                sql.SQL(
                    "DELETE FROM {t} WHERE id = ANY(%s) RETURNING id, namespace, doc_len, window_of"
                ).format(**names),
                (ids,),
            )
            gone = cur.fetchall()
            for _, namespace, doc_len, window_of in gone:
                if window_of is None:
                    delta[(namespace, "n")] -= 1
                    delta[(namespace, "len")] -= doc_len
            cur.execute(sql.SQL("DELETE FROM {terms} WHERE id = ANY(%s)").format(**names), (ids,))
            self._record_stats(cur, delta)
        return [row[0] for row in gone]

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        return await asyncio.to_thread(self.add_texts, texts, metadatas, ids=ids, **kwargs)

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        return await asyncio.to_thread(self.delete, ids, **kwargs)

    # -- reads by id (primary: sync reads what it just wrote) ----------------------------
    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Documents of ``ids`` in input order; unknown ids are skipped."""
        if not ids or self.vector_dimension is None:
            return []
        statement = sql.SQL("SELECT id, text, metadata FROM {t} WHERE id = ANY(%s)").format(
            **_tables(self.table_name)
        )
        wanted = [str(i) for i in ids]
        rows = self.connections.run_primary(lambda c: c.execute(statement, (wanted,)).fetchall())
        by_id = {r[0]: r for r in rows}
        return [_document(*by_id[str(i)]) for i in dict.fromkeys(ids) if str(i) in by_id]

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return await asyncio.to_thread(self.get_by_ids, ids)

    def iter_documents(
        self, *, namespace: str | None = None, batch_size: int = 1000
    ) -> Iterator[Document]:
        """Every stored row (optionally of one ``namespace``), by id order, in pages."""
        if self.vector_dimension is None:
            return
        where = "namespace = %(ns)s AND" if namespace is not None else ""
        statement = sql.SQL(
            "SELECT id, text, metadata FROM {t} WHERE " + where + " id > %(after)s "
            "ORDER BY id LIMIT %(n)s"
        ).format(**_tables(self.table_name))
        after = ""
        while True:
            params = {"ns": namespace, "after": after, "n": batch_size}
            rows = self.connections.run_primary(
                lambda c, p=params: c.execute(statement, p).fetchall()  # type: ignore[misc]  # bound now
            )
            yield from (_document(*r) for r in rows)
            if len(rows) < batch_size:
                return
            after = rows[-1][0]

    # -- dense search (replicas when given) ----------------------------------------------
    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return relevance_fn(self.distance_metric)

    def _filter(self, filter: Any) -> tuple[sql.Composable, dict[str, Any]]:
        """A WHERE fragment and its params for ``filter`` (``namespace`` + jsonb containment)."""
        if not filter:
            return sql.SQL("TRUE"), {}
        if not isinstance(filter, Mapping):
            msg = (
                f"filter must be a mapping of metadata keys to values, got "
                f"{type(filter).__name__}; e.g. filter={{'namespace': 'docs'}}."
            )
            raise TypeError(msg)
        parts: list[sql.Composable] = []
        params: dict[str, Any] = {}
        rest = {k: v for k, v in filter.items() if k != NAMESPACE}
        if NAMESPACE in filter:
            parts.append(sql.SQL("namespace = %(f_ns)s"))
            params["f_ns"] = filter[NAMESPACE]
        if rest:
            parts.append(sql.SQL("metadata @> %(f_meta)s"))
            params["f_meta"] = Jsonb(rest)
        return sql.SQL(" AND ").join(parts), params

    def document_filter(self, doc_filter: Any) -> Callable[[Document], bool]:
        """``filter`` as the searches apply it (``_filter``), as a test of a read ``Document``.

        ``namespace`` equals the document's namespace; the other keys are jsonb containment
        (``metadata @> rest``): nested mappings and lists match by containment, so a keyword
        hit of ``HybridRetriever`` is held to the filter as the dense leg is.

        Raises:
            TypeError: If ``doc_filter`` is not a mapping (as the searches raise).
        """
        self._filter(doc_filter)  # the searches' check and message
        if not doc_filter:
            return lambda _: True
        namespace = doc_filter.get(NAMESPACE)
        rest = {k: v for k, v in doc_filter.items() if k != NAMESPACE}

        def accept(doc: Document) -> bool:
            if NAMESPACE in doc_filter and _namespace(doc.metadata) != str(namespace):
                return False
            return _json_contains(doc.metadata, rest)

        return accept

    def _dense(
        self, embedding: Sequence[float], k: int, filter: Any, *, columns: str
    ) -> list[tuple[Any, ...]]:
        k = check_k(k)
        if self.vector_dimension is None:
            return []
        self._check_query_width(embedding)
        where, params = self._filter(filter)
        statement = sql.SQL(
            "SELECT " + columns + ", embedding {op} %(q)s AS d FROM {t} WHERE {where} "
            "AND embedding IS NOT NULL ORDER BY embedding {op} %(q)s LIMIT %(k)s"
        ).format(
            op=sql.SQL(q.OPERATOR[self.distance_metric]), where=where, **_tables(self.table_name)
        )
        params |= {"q": np.asarray(embedding, dtype=np.float32), "k": k}
        return self.connections.run_search(lambda c: c.execute(statement, params).fetchall())

    def _check_query_width(self, embedding: Sequence[float]) -> None:
        dim = self.vector_dimension
        if dim is not None and len(embedding) != dim:
            msg = (
                f"the query vector has dimension {len(embedding)} but the Postgres table "
                f"{self.table_name!r} holds dimension {dim}: the embedding model changed. "
                "Re-ingest with force_ingest=True (CLI: --force-ingest) to rebuild the vectors."
            )
            raise ValueError(msg)

    def similarity_search_with_score_by_vector(
        self, embedding: list[float], k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Rows nearest to ``embedding`` with pgvector's distance (lower is closer).

        Raises:
            TypeError: For a keyword argument other than ``filter`` (a misspelt ``filters=``
                ran unfiltered), as every search of the store does.
        """
        _refuse(kwargs, "similarity_search_with_score_by_vector")
        rows = self._dense(embedding, k, filter, columns="id, text, metadata")
        return [(_document(i, t, m), float(d)) for i, t, m, d in rows]

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        _refuse(kwargs, "similarity_search_with_score")
        if self.vector_dimension is None:
            return []
        vector = self.embedding.embed_query(query)
        return self.similarity_search_with_score_by_vector(vector, k, filter)

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[Document]:
        _refuse(kwargs, "similarity_search_by_vector")
        return [d for d, _ in self.similarity_search_with_score_by_vector(embedding, k, filter)]

    def similarity_search(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[Document]:
        _refuse(kwargs, "similarity_search")
        return [d for d, _ in self.similarity_search_with_score(query, k, filter)]

    def _similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        _refuse(kwargs, "similarity_search_with_relevance_scores")
        relevance = self._select_relevance_score_fn()
        pairs = self.similarity_search_with_score(query, k, filter)
        return [(d, relevance(s)) for d, s in pairs]

    async def asimilarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return await asyncio.to_thread(self.similarity_search, query, k, **kwargs)

    async def asimilarity_search_with_score(
        self, *args: Any, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        return await asyncio.to_thread(self.similarity_search_with_score, *args, **kwargs)

    def search_ids_by_vector(
        self, embedding: Sequence[float], k: int, *, filter: Any = None
    ) -> list[tuple[str, float]]:
        """Ids and relevance scores in [0, 1] of the ``k`` nearest rows, best first."""
        relevance = self._select_relevance_score_fn()
        return [
            (i, relevance(float(d))) for i, d in self._dense(embedding, k, filter, columns="id")
        ]

    def similarity_by_ids(self, embedding: Sequence[float], ids: Sequence[str]) -> dict[str, float]:
        """Relevance scores in [0, 1] of the stored ``ids`` (each chunk: its best window)."""
        if not ids or self.vector_dimension is None:
            return {}
        self._check_query_width(embedding)
        statement = sql.SQL(
            "SELECT coalesce(window_of, id), min(embedding {op} %(q)s) FROM {t} "
            "WHERE (id = ANY(%(ids)s) OR window_of = ANY(%(ids)s)) AND embedding IS NOT NULL "
            "GROUP BY 1"
        ).format(op=sql.SQL(q.OPERATOR[self.distance_metric]), **_tables(self.table_name))
        params = {"q": np.asarray(embedding, dtype=np.float32), "ids": [str(i) for i in ids]}
        rows = self.connections.run_search(lambda c: c.execute(statement, params).fetchall())
        relevance = self._select_relevance_score_fn()
        wanted = set(map(str, ids))
        return {i: relevance(float(d)) for i, d in rows if i in wanted}

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        if self.vector_dimension is None:
            return []
        vector = self.embedding.embed_query(query)
        return self.max_marginal_relevance_search_by_vector(
            vector, k, fetch_k, lambda_mult, **kwargs
        )

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: Any = None,
        **kwargs: Any,
    ) -> list[Document]:
        _refuse(kwargs, "max_marginal_relevance_search")
        rows = self._dense(
            embedding,
            max(check_k(k), check_k(fetch_k, "fetch_k")),
            filter,
            columns="id, text, metadata, embedding",
        )
        if not rows:
            return []
        vectors = np.array([_as_array(r[3]) for r in rows])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        np.divide(vectors, norms, out=vectors, where=norms > 0)
        query = np.asarray(embedding, dtype=np.float32)
        query = query / (float(np.linalg.norm(query)) or 1.0)
        chosen = mmr(vectors, vectors @ query, k, lambda_mult)
        return [_document(*rows[i][:3]) for i in chosen]

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> PostgresVectorStore:
        store = cls(embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store

    # -- keyword and native hybrid -------------------------------------------------------
    def _keyword_params(self, query: str) -> dict[str, Any] | None:
        """Params of ``keyword_sql`` for ``query``; ``None`` when it has no searchable term."""
        if self.keyword_scoring == "ts_rank_cd":
            words = [w for w in self.tokenizer._split(query) if w.isalnum()]
            return {"tsq": " | ".join(dict.fromkeys(words))} if words else None
        counts = Counter(self.tokenizer.split_terms(query))
        if not counts:
            return None
        return {"terms": list(counts), "qtf": list(counts.values())}

    def keyword_search(
        self, query: str, k: int, *, namespace: str | None = None
    ) -> list[tuple[str, float]]:
        """Ids and keyword scores (BM25 or ``ts_rank_cd``) of the best ``k`` chunks."""
        params = self._keyword_params(query)
        if params is None or self.vector_dimension is None:
            return []
        statement = q.keyword_sql(
            self.table_name, self.keyword_scoring, with_filter=namespace is not None
        )
        params |= {"ns": namespace, "k": k}
        rows = self.connections.run_search(lambda c: c.execute(statement, params).fetchall())
        return [(i, float(s)) for i, s in rows]

    def native_hybrid_search(
        self,
        query: str,
        *,
        k: int = 4,
        fetch_k: int = 50,
        weights: tuple[float, float] = (0.5, 0.5),
        rrf_k: int = 60,
        min_similarity_score: float | None = None,
        filter: Any = None,
        embedding: Sequence[float] | None = None,
        fusion: q.Fusion = "rrf",
    ) -> list[NativeHit]:
        """Dense (HNSW) and keyword (BM25 in SQL, or ``ts_rank_cd``), fused in the server.

        One statement: the ``fetch_k`` nearest entries (a chunk ranked by its best model
        window) and the ``fetch_k`` best keyword matches, fused by weighted RRF
        (``w_dense / (rrf_k + rank_dense) + w_keyword / (rrf_k + rank_keyword)``) or, with
        ``fusion="convex"``, by the convex combination of each leg's score over its best
        (``fusion.convex_score_fusion`` with lower bounds 0, what the retriever does
        in-process); the best rows come back with text, metadata and their dense distance,
        so each hit's similarity is known and ``min_similarity_score`` drops those below it.
        ``filter`` may hold ``namespace`` only (the column the statement filters on).

        Raises:
            ValueError: When ``k`` or ``fetch_k`` is not positive, ``weights`` are not two
                non-negative numbers with at least one above 0, or ``filter`` holds another
                key (it was ignored: chunks of other sources came back).
        """
        check_native_hybrid_args(k=k, fetch_k=fetch_k, weights=weights)
        if fusion not in self.native_fusions:
            msg = f"fusion must be 'rrf' or 'convex', got {fusion!r}."
            raise ValueError(msg)
        if self.vector_dimension is None:
            return []
        check_native_filter(filter, self.native_filter_keys, type(self).__name__)
        vector = list(embedding) if embedding is not None else self.embedding.embed_query(query)
        self._check_query_width(vector)
        namespace = (filter or {}).get(NAMESPACE) if isinstance(filter, Mapping) else None
        keyword = self._keyword_params(query) if weights[1] > 0 else None
        statement = q.hybrid_sql(
            self.table_name,
            self.distance_metric,
            self.keyword_scoring,
            with_filter=namespace is not None,
            keyword=keyword is not None,
            fusion=fusion,
        )
        top = k if min_similarity_score is None else max(k, fetch_k)
        params = {
            **(keyword or {}),
            "q": np.asarray(vector, dtype=np.float32),
            "ns": namespace,
            "k": fetch_k,
            "top": top,
            "w_dense": float(weights[0]),
            "w_keyword": float(weights[1]),
            "rrf_k": float(rrf_k),
        }
        rows = self.connections.run_search(lambda c: c.execute(statement, params).fetchall())
        relevance = self._select_relevance_score_fn()
        hits = []
        for doc_id, text, metadata, score, distance in rows:
            similarity = relevance(float(distance)) if distance is not None else None
            if min_similarity_score is not None and (similarity or 0.0) < min_similarity_score:
                continue
            hits.append(NativeHit(_document(doc_id, text, metadata), float(score), similarity))
        return hits[:k]

    async def anative_hybrid_search(self, query: str, **kwargs: Any) -> list[NativeHit]:
        """:meth:`native_hybrid_search` in a worker thread (psycopg's sync connection)."""
        return await asyncio.to_thread(self.native_hybrid_search, query, **kwargs)


ROW_COLUMNS = ("id", "namespace", "text", "metadata", "window_of", "doc_len", "embedding")
TERM_COLUMNS = ("id", "namespace", "term", "tf", "doc_len")


def _refuse(kwargs: Mapping[str, Any], search: str) -> None:
    """Refuse what a search does not take (``refuse_unknown_kwargs``): ``filter`` only."""
    refuse_unknown_kwargs(
        kwargs,
        f"PostgresVectorStore.{search}",
        "its searches take filter= (a mapping of metadata values) only",
    )


def _copy(
    cur: Any, table: sql.Identifier, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]
) -> None:
    """``COPY table (columns) FROM STDIN``, one stream per batch (foreign partitions too)."""
    statement = sql.SQL("COPY {t} ({c}) FROM STDIN").format(
        t=table, c=sql.SQL(", ").join(map(sql.Identifier, columns))
    )
    with cur.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)


def _lock_writes(cur: Any, table: str) -> None:
    """Take ``table``'s write lock until the transaction ends (other writers wait for it)."""
    cur.execute("SELECT pg_advisory_xact_lock(%s::integer, hashtext(%s))", (WRITE_LOCK, table))


def relevance_fn(metric: str) -> Callable[[float], float]:
    """Map a pgvector distance of ``metric`` to a similarity in [0, 1]."""
    metric = metric.upper()
    if metric == "L2":
        return lambda d: clip_unit(1.0 - d * d / 2.0)
    if metric == "IP":
        return lambda d: clip_unit(-d)
    if metric == "COSINE":
        return lambda d: clip_unit(1.0 - d)
    msg = f"distance_metric must be 'COSINE', 'L2' or 'IP', got {metric!r}."
    raise ValueError(msg)


def _tables(table: str) -> dict[str, sql.Identifier]:
    return {
        "t": sql.Identifier(table),
        "terms": sql.Identifier(f"{table}_terms"),
        "stats": sql.Identifier(f"{table}_stats"),
    }


def _json_contains(have: Any, want: Any) -> bool:
    """Whether ``have @> want`` in jsonb, below the top level: objects by key, arrays by element."""
    if isinstance(want, Mapping):
        return isinstance(have, Mapping) and all(
            key in have and _json_contains(have[key], value) for key, value in want.items()
        )
    if isinstance(want, list):
        return isinstance(have, list) and all(any(_json_contains(h, w) for h in have) for w in want)
    if isinstance(want, bool) or isinstance(have, bool):
        return have is want  # jsonb: true is not 1
    return bool(have == want)


def _namespace(metadata: Mapping[str, Any]) -> str | None:
    value = metadata.get(NAMESPACE)
    return None if value is None else str(value)


def _refuse_nul(
    texts: Sequence[str], metadatas: Sequence[Mapping[str, Any]], ids: Sequence[str]
) -> None:
    """Refuse, before any write, a document whose text or metadata holds a NUL character.

    PostgreSQL stores no U+0000 in ``text`` or ``jsonb``; its ``DataError`` named no document.
    The store does not drop the character itself: the other stores keep it, so a document
    would read back different here. Sync writes a refused batch again one chunk at a time, so
    only the document holding it fails.

    Raises:
        ValueError: Naming the document's id and where the NUL is.
    """
    for text, metadata, doc_id in zip(texts, metadatas, ids, strict=True):
        where = "its text" if "\x00" in text else _nul_path(metadata, "metadata")
        if where is not None:
            msg = (
                f"document {doc_id!r} holds a NUL character (\\x00) in {where}, which "
                "PostgreSQL cannot store; nothing of this call was written. Remove it "
                "(text.replace('\\x00', '')) before adding the document."
            )
            raise ValueError(msg)


def _nul_path(value: Any, path: str) -> str | None:
    """Where a NUL character is in a metadata value (``metadata['title']``), or ``None``."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, Mapping):
        for key, item in value.items():
            inner = f"{path}[{key!r}]"
            if "\x00" in str(key):
                return f"the key {inner}"
            found = _nul_path(item, inner)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for n, item in enumerate(value):
            found = _nul_path(item, f"{path}[{n}]")
            if found is not None:
                return found
    return None


def _json_safe(metadata: Mapping[str, Any], doc_id: str) -> dict[str, Any]:
    import json

    try:
        json.dumps(metadata, allow_nan=False)
    except (TypeError, ValueError) as e:
        msg = f"metadata of document {doc_id!r} must be JSON-serializable (no NaN): {e}"
        raise TypeError(msg) from e
    return dict(metadata)


def _document(doc_id: str, text: str, metadata: Any) -> Document:
    meta = copy_metadata(metadata) if isinstance(metadata, dict) else {}
    return Document(id=doc_id, page_content=text, metadata=meta)


def _as_array(stored: Any) -> np.ndarray:
    """A stored vector as float32 (pgvector 0.4+ reads a ``Vector``, older a numpy array)."""
    to_numpy = getattr(stored, "to_numpy", None)
    return np.asarray(to_numpy() if callable(to_numpy) else stored, dtype=np.float32)
