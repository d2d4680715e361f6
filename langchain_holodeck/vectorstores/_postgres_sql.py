"""The SQL of ``PostgresVectorStore``: schema (one node or sharded), searches, BM25 in SQL.

Pure functions returning ``psycopg.sql`` statements; nothing here connects. Tables of a store
named ``T``:

- ``T``: ``id`` (text: chunk ids are UUIDs, window ids ``<chunk id>:w<n>`` are not),
  ``namespace``, ``text``, ``metadata`` (jsonb), ``window_of`` (the chunk of a model window,
  else NULL), ``doc_len`` (BM25 terms), ``embedding vector(dim)``, and a generated ``tsv``
  (``to_tsvector('english', text)``); HNSW on ``embedding``, GIN on ``tsv``, btree on
  ``namespace`` and on ``window_of``.
- ``T_terms``: one row per (chunk, term) with its frequency and the chunk's length: the
  postings BM25 is scored from (windows have none).
- ``T_stats``: per namespace, the chunk count and total length (BM25's N and avgdl).

Sharded, ``T`` and ``T_terms`` are ``PARTITION BY HASH (id)`` on the coordinator, one
``postgres_fdw`` foreign partition per shard, and each shard holds plain tables of the same
names with their own indexes; ``T_stats`` stays on the coordinator. The SQL uses no
``ON CONFLICT`` (foreign partitions cannot carry the unique index it needs) and no
Postgres-only feature Citus lacks.

Table names match ``TABLE_NAME_PATTERN`` (lowercase), and every CTE of a statement has a
quoted name with a capital (``"Dr"``, ``"F"``): a CTE named like the table would shadow it
(``FROM "dm"`` reading the CTE ``dm``), and no valid table name can be one of them.
"""

from __future__ import annotations

from typing import Literal

from psycopg import sql

Metric = Literal["COSINE", "L2", "IP"]
KeywordScoring = Literal["bm25", "ts_rank_cd"]
Fusion = Literal["rrf", "convex"]

TABLE_NAME_PATTERN = r"^[a-z_][a-z0-9_]{0,40}$"
"""Valid table names: lowercase, at most 41 characters (``T_embcache`` stays within 63)."""
SIDE_TABLES = {
    "_terms": ("term", "BM25 postings"),
    "_stats": ("n_docs", "BM25 statistics"),
    "_embcache": ("key", "embedding cache"),
}
"""Suffix of each table beside ``T``: a column it has, and what it holds (``T`` itself has
``embedding``)."""
OPERATOR = {"COSINE": "<=>", "L2": "<->", "IP": "<#>"}
"""pgvector's distance operator of each metric."""
OPCLASS = {"COSINE": "vector_cosine_ops", "L2": "vector_l2_ops", "IP": "vector_ip_ops"}
"""pgvector's HNSW operator class of each metric."""
TS_CONFIG = "english"
"""The text-search configuration of the ``tsv`` column."""
BM25_K1 = 1.5
BM25_B = 0.75
"""BM25 parameters: those of the in-memory index (bm25s, Lucene variant)."""

_COLUMNS = """
    id text NOT NULL,
    namespace text,
    text text NOT NULL,
    metadata jsonb NOT NULL,
    window_of text,
    doc_len integer NOT NULL DEFAULT 0,
    embedding vector({dim}),
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED
"""
_TERM_COLUMNS = (
    "id text NOT NULL, namespace text, term text NOT NULL, tf integer NOT NULL, "
    "doc_len integer NOT NULL"
)


def _names(table: str) -> dict[str, sql.Identifier]:
    return {
        "t": sql.Identifier(table),
        "terms": sql.Identifier(f"{table}_terms"),
        "stats": sql.Identifier(f"{table}_stats"),
    }


def table_statements(
    table: str, dim: int, metric: Metric, *, primary_key: bool
) -> list[sql.Composed]:
    """``CREATE TABLE``/``INDEX IF NOT EXISTS`` of the data tables on one node (or one shard)."""
    n = _names(table)
    key = ", PRIMARY KEY (id)" if primary_key else ""
    term_key = ", PRIMARY KEY (id, term)" if primary_key else ""
    return [
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {t} (" + _COLUMNS.format(dim=int(dim)) + key + ")"
        ).format(**n),
        sql.SQL("CREATE TABLE IF NOT EXISTS {terms} (" + _TERM_COLUMNS + term_key + ")").format(
            **n
        ),
        *index_statements(table, metric),
    ]


def index_statements(table: str, metric: Metric) -> list[sql.Composed]:
    """The indexes of one node's (or one shard's) tables; ``IF NOT EXISTS``."""
    n = _names(table)

    def name(suffix: str) -> sql.Identifier:
        return sql.Identifier(f"{table}_{suffix}")

    return [
        sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} USING hnsw (embedding {ops})").format(
            i=name("hnsw"), ops=sql.SQL(OPCLASS[metric]), **n
        ),
        sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} USING gin (tsv)").format(i=name("tsv"), **n),
        sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} (namespace, id)").format(i=name("ns"), **n),
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {i} ON {t} (window_of) WHERE window_of IS NOT NULL"
        ).format(i=name("window_of"), **n),
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {i} ON {terms} (namespace, term) INCLUDE (id, tf, doc_len)"
        ).format(i=name("terms_ns_term"), **n),
        sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {terms} (id)").format(i=name("terms_id"), **n),
    ]


def index_metric_sql() -> sql.SQL:
    """The operator class of the HNSW index on table ``%s`` (no row: no HNSW index)."""
    return sql.SQL(
        "SELECT opc.opcname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_am am ON am.oid = c.relam JOIN pg_opclass opc ON opc.oid = i.indclass[0] "
        "WHERE i.indrelid = to_regclass(%s) AND am.amname = 'hnsw'"
    )


def hnsw_rebuild_statements(table: str, metric: Metric) -> list[sql.Composed]:
    """Drop the HNSW index of one node's (or one shard's) table, create it for ``metric``."""
    index = sql.Identifier(f"{table}_hnsw")
    return [
        sql.SQL("DROP INDEX IF EXISTS {i}").format(i=index),
        sql.SQL("CREATE INDEX {i} ON {t} USING hnsw (embedding {ops})").format(
            i=index, ops=sql.SQL(OPCLASS[metric]), t=sql.Identifier(table)
        ),
    ]


def stats_statement(table: str) -> sql.Composed:
    """``CREATE TABLE IF NOT EXISTS`` of the per-namespace BM25 statistics (coordinator/node)."""
    return sql.SQL(
        "CREATE TABLE IF NOT EXISTS {stats} (namespace text, n_docs bigint NOT NULL, "
        "total_len bigint NOT NULL)"
    ).format(**_names(table))


def sharded_statements(table: str, dim: int, servers: list[str]) -> list[sql.Composed]:
    """The coordinator's partitioned tables over foreign partitions on ``servers``.

    ``servers`` are the ``postgres_fdw`` server names (created beforehand), one per shard, in
    shard order: shard ``i`` holds the rows whose ``hash(id) % len(servers) == i``.
    """
    n = _names(table)
    out = [
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {t} (" + _COLUMNS.format(dim=int(dim)) + ") "
            "PARTITION BY HASH (id)"
        ).format(**n),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {terms} (" + _TERM_COLUMNS + ") PARTITION BY HASH (id)"
        ).format(**n),
    ]
    for i, server in enumerate(servers):
        for parent, remote in ((table, table), (f"{table}_terms", f"{table}_terms")):
            out.append(
                sql.SQL(
                    "CREATE FOREIGN TABLE IF NOT EXISTS {part} PARTITION OF {parent} FOR VALUES "
                    "WITH (MODULUS {m}, REMAINDER {r}) SERVER {server} "
                    "OPTIONS (table_name {remote})"
                ).format(
                    part=sql.Identifier(f"{parent}_shard{i}"),
                    parent=sql.Identifier(parent),
                    m=sql.Literal(len(servers)),
                    r=sql.Literal(i),
                    server=sql.Identifier(server),
                    remote=sql.Literal(remote),
                )
            )
    return out


def dense_sql(table: str, metric: Metric, *, with_filter: bool) -> sql.Composed:
    """Ids, chunk ids and distances of the nearest rows: params ``q``, ``k`` (and ``ns``)."""
    where = sql.SQL("WHERE namespace = %(ns)s") if with_filter else sql.SQL("")
    return sql.SQL(
        "SELECT id, coalesce(window_of, id) AS chunk, embedding {op} %(q)s AS d FROM {t} {where} "
        "ORDER BY embedding {op} %(q)s "
        "LIMIT %(k)s"
    ).format(op=sql.SQL(OPERATOR[metric]), where=where, **_names(table))


def keyword_sql(table: str, scoring: KeywordScoring, *, with_filter: bool) -> sql.Composed:
    """Ids and scores of the best keyword matches (chunks only), best first.

    ``bm25``: params ``terms`` (distinct query terms), ``qtf`` (their counts), ``ns``, ``k``;
    Lucene BM25 from ``T_terms`` postings, df counted over the namespace's postings, N and
    avgdl from ``T_stats``. ``ts_rank_cd``: params ``tsq`` (an OR of the query's words) and
    ``k``; Postgres's cover density over ``tsv`` (no corpus statistics, no IDF).
    """
    n = _names(table)
    if scoring == "ts_rank_cd":
        ns = sql.SQL("AND namespace = %(ns)s") if with_filter else sql.SQL("")
        return sql.SQL(
            "SELECT id, ts_rank_cd(tsv, to_tsquery('english', %(tsq)s)) AS s FROM {t} "
            "WHERE tsv @@ to_tsquery('english', %(tsq)s) AND window_of IS NULL {ns} "
            "ORDER BY s DESC, id LIMIT %(k)s"
        ).format(ns=ns, **n)
    ns_terms = sql.SQL("namespace = %(ns)s AND") if with_filter else sql.SQL("")
    ns_stats = sql.SQL("WHERE namespace = %(ns)s") if with_filter else sql.SQL("")
    return sql.SQL(
        'WITH "Q" AS (SELECT * FROM unnest(%(terms)s::text[], %(qtf)s::int[]) AS "Q"(term, qtf)), '
        '"St" AS (SELECT greatest(sum(n_docs), 1)::float8 AS n, '
        "greatest(sum(total_len)::float8 / greatest(sum(n_docs), 1), 1) AS avgdl "
        "FROM {stats} {ns_stats}), "
        '"P" AS (SELECT id, term, tf, doc_len FROM {terms} '
        "WHERE {ns_terms} term = ANY(%(terms)s)), "
        '"Df" AS (SELECT term, count(*)::float8 AS df FROM "P" GROUP BY term) '
        'SELECT "P".id, sum("Q".qtf * ln(1 + ("St".n - "Df".df + 0.5) / ("Df".df + 0.5)) '
        '* "P".tf / ("P".tf + {k1} * (1 - {b} + {b} * "P".doc_len / "St".avgdl)))::float8 AS s '
        'FROM "P" JOIN "Df" USING (term) JOIN "Q" USING (term) CROSS JOIN "St" '
        'GROUP BY "P".id ORDER BY s DESC, "P".id LIMIT %(k)s'
    ).format(
        ns_terms=ns_terms,
        ns_stats=ns_stats,
        k1=sql.Literal(BM25_K1),
        b=sql.Literal(BM25_B),
        **n,
    )


def relevance_sql(metric: Metric, distance: str) -> str:
    """SQL mapping a pgvector distance of ``metric`` to a similarity in [0, 1] (as in Python)."""
    raw = {
        "COSINE": f"1 - {distance}",
        "L2": f"1 - {distance} * {distance} / 2",
        "IP": f"-{distance}",
    }
    return f"greatest(0, least(1, {raw[metric]}))"


def hybrid_sql(
    table: str,
    metric: Metric,
    scoring: KeywordScoring,
    *,
    with_filter: bool,
    keyword: bool,
    fusion: Fusion = "rrf",
) -> sql.Composed:
    """Dense and keyword candidates fused in one statement, by weighted RRF or convex.

    Params: those of ``dense_sql`` (``k`` is ``fetch_k`` there), ``keyword_sql`` (when
    ``keyword``), ``w_dense``, ``w_keyword``, ``rrf_k`` and ``top`` (rows returned). A chunk's
    dense rank is that of its best entry (itself or one of its model windows). ``rrf``:
    ``w / (rrf_k + rank)`` per leg. ``convex``: ``w * score / best score`` per leg (dense:
    the similarity in [0, 1]; keyword: the raw score; both with lower bound 0, as
    ``fusion.convex_score_fusion`` with ``lower_bounds=[0, 0]``). A leg weighted 0 adds no
    rows. Each returned row carries its text, metadata, fused score and distance (its best
    entry's; read for keyword-only hits too).
    """
    n = _names(table)
    op = sql.SQL(OPERATOR[metric])
    dense = dense_sql(table, metric, with_filter=with_filter)
    rel = relevance_sql(metric, "d")
    legs: list[sql.Composable] = [
        sql.SQL(
            '"D" AS (SELECT chunk AS id, min(d) AS d FROM ({dense}) c GROUP BY chunk), '
            '"Dr" AS (SELECT id, d, ' + rel + " AS v, row_number() OVER (ORDER BY d, id) AS r "
            'FROM "D")'
        ).format(dense=dense)
    ]
    if keyword:
        legs.append(
            sql.SQL(
                '"Kr" AS (SELECT id, s AS v, row_number() OVER (ORDER BY s DESC, id) AS r '
                "FROM ({kw}) x)"
            ).format(kw=keyword_sql(table, scoring, with_filter=with_filter))
        )
    if fusion == "convex":
        legs.append(
            sql.SQL(
                '"Dm" AS (SELECT coalesce(max(v), 0) AS m FROM "Dr")'
                + (', "Km" AS (SELECT coalesce(max(v), 0) AS m FROM "Kr")' if keyword else "")
            )
        )
        dense_term = (
            'coalesce(%(w_dense)s * CASE WHEN "Dm".m > 0 '
            'THEN least(1, greatest(0, "Dr".v / "Dm".m)) ELSE 1 END, 0)'
        )
        keyword_term = (
            'coalesce(%(w_keyword)s * CASE WHEN "Km".m > 0 '
            'THEN least(1, greatest(0, "Kr".v / "Km".m)) ELSE 1 END, 0)'
        )
        maxima = 'CROSS JOIN "Dm"' + (' CROSS JOIN "Km"' if keyword else "")
    else:
        dense_term = 'coalesce(%(w_dense)s / (%(rrf_k)s + "Dr".r), 0)'
        keyword_term = 'coalesce(%(w_keyword)s / (%(rrf_k)s + "Kr".r), 0)'
        maxima = ""
    if keyword:
        fused = sql.SQL(
            '"F" AS (SELECT coalesce("Dr".id, "Kr".id) AS id, "Dr".d, '
            + dense_term
            + " + "
            + keyword_term
            + " AS s "
            'FROM "Dr" FULL OUTER JOIN "Kr" ON "Dr".id = "Kr".id ' + maxima + " "
            'WHERE (%(w_dense)s > 0 AND "Dr".id IS NOT NULL) '
            'OR (%(w_keyword)s > 0 AND "Kr".id IS NOT NULL) '
            "ORDER BY s DESC, id LIMIT %(top)s)"
        )
    else:
        fused = sql.SQL(
            '"F" AS (SELECT id, d, ' + dense_term + ' AS s FROM "Dr" ' + maxima + " "
            "ORDER BY s DESC, id LIMIT %(top)s)"
        )
    return sql.SQL(
        "WITH {legs}, {fused} "
        'SELECT "F".id, t.text, t.metadata, "F".s, coalesce("F".d, least(t.embedding {op} %(q)s, '
        '(SELECT min(w.embedding {op} %(q)s) FROM {t} w WHERE w.window_of = "F".id))) AS d '
        # the rows of the fused ids only: an array filter a shard receives (postgres_fdw)
        'FROM "F" JOIN {t} t ON t.id = "F".id AND t.id = ANY(ARRAY(SELECT id FROM "F")) '
        'ORDER BY "F".s DESC, "F".id'
    ).format(legs=sql.SQL(", ").join(legs), fused=fused, op=op, **n)
