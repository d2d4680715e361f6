"""The RediSearch layout of a Holodeck Redis store: hash fields, the index schema, the client.

One home for what the store (``redis.py``), the native hybrid query and the benchmarks agree on:
field names and how their stored values read back, the schema ``HolodeckRedisVectorStore``
creates, which of a server's settings it can search, and how a client is made.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import redis
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.retry import Retry
from redisvl.index import SearchIndex
from redisvl.schema import IndexSchema

from langchain_holodeck.vectorstores._columns import copy_metadata

_L = TypeVar("_L", bound=str)

Metric = Literal["COSINE", "L2", "IP"]
Algorithm = Literal["HNSW", "FLAT"]

CONTENT_FIELD = "text"
"""Hash field holding ``page_content`` (a TEXT field: BM25 full-text queries run on it)."""
PARTS_FIELD = "identifier_parts"
"""TEXT field holding the words of the content's compound identifiers (``_redisearch.
identifier_parts``): full-text queries run on it and on the content."""
EMBEDDING_FIELD = "embedding"
METADATA_FIELD = "_metadata_json"
"""Hash field holding the full metadata as JSON (stored, not indexed): the round-trip source."""
TAG_SEPARATOR = "|"
TAG_FIELDS = ("namespace", "source_path", "section_id", "chunk_type")
NUMERIC_FIELDS = ("chunk_index",)


def require_search_module(client: redis.Redis) -> None:
    """Raise ``ResponseError`` saying what to run when the server has no query engine.

    A plain Redis answers every ``FT.*`` command with ``unknown command``; an ACL that
    refuses ``FT._LIST`` (``NOPERM``) says nothing about the module and is let through.
    """
    try:
        client.execute_command("FT._LIST")
    except redis.ResponseError as e:
        if "unknown command" not in str(e).lower():
            return
        msg = (
            "the server has no RediSearch module (FT._LIST is an unknown command); use Redis "
            "Stack, or Redis 8 with its query engine (bash scripts/redis-stack.sh start PORT)"
        )
        raise redis.ResponseError(msg) from e


def make_client(url: str, *, connect_timeout: float, probe: bool = False) -> redis.Redis:
    """A Redis client with short connect timeouts; the store's client retries (reconnects)."""
    retry = Retry(NoBackoff(), 0) if probe else Retry(ExponentialBackoff(cap=1.0, base=0.05), 3)
    return redis.Redis.from_url(
        url,
        socket_connect_timeout=connect_timeout,
        socket_timeout=max(connect_timeout, 10.0) if not probe else connect_timeout,
        retry=retry,
        retry_on_error=[redis.ConnectionError, redis.TimeoutError],
        health_check_interval=0 if probe else 30,
    )


def vector_field(
    *, dims: int, algorithm: str, metric: str, datatype: str = "float32"
) -> dict[str, Any]:
    """The schema entry of the vector field (the attributes of one algorithm only)."""
    return {
        "name": EMBEDDING_FIELD,
        "type": "vector",
        "attrs": {
            "dims": dims,
            "distance_metric": metric.lower(),
            "algorithm": algorithm.lower(),
            "datatype": datatype,
        },
    }


def index_schema(
    index_name: str, *, dims: int, algorithm: Algorithm, metric: Metric
) -> IndexSchema:
    """The RediSearch schema: TEXT content, the vector, TAG/NUMERIC fields for filters."""
    tag_attrs = {"separator": TAG_SEPARATOR, "case_sensitive": True}
    return IndexSchema.from_dict(
        {
            "index": {"name": index_name, "prefix": f"{index_name}:", "storage_type": "hash"},
            "fields": [
                {"name": CONTENT_FIELD, "type": "text"},
                {"name": PARTS_FIELD, "type": "text"},
                vector_field(dims=dims, algorithm=algorithm, metric=metric),
                *({"name": n, "type": "tag", "attrs": tag_attrs} for n in TAG_FIELDS),
                *({"name": n, "type": "numeric"} for n in NUMERIC_FIELDS),
            ],
        }
    )


@dataclass(frozen=True)
class VectorSettings:
    """The vector field of an index as the server has it: what a query must match."""

    dims: int
    algorithm: str
    """``FLAT`` or ``HNSW`` (or what a newer server has)."""
    metric: str
    """``COSINE``, ``L2`` or ``IP``."""


def existing_vector_settings(client: redis.Redis, index_name: str) -> VectorSettings | None:
    """The vector field of an existing index, or ``None`` when there is no such index.

    An existing index keeps the settings it was created with, whatever a store opening it
    is configured with: its dimension, algorithm and metric are what searches get.
    """
    try:
        existing = SearchIndex.from_existing(index_name, redis_client=client)
    except Exception:  # redisvl raises several types for "no such index"
        return None
    attrs = getattr(existing.schema.fields.get(EMBEDDING_FIELD), "attrs", None)
    dims = getattr(attrs, "dims", None)
    if not dims:
        return None
    return VectorSettings(
        dims=int(dims),
        algorithm=_upper(getattr(attrs, "algorithm", "HNSW")),
        metric=_upper(getattr(attrs, "distance_metric", "COSINE")),
    )


def _upper(value: object) -> str:
    """An enum's value (or a string) in upper case: ``VectorDistanceMetric.IP`` -> ``IP``."""
    return str(getattr(value, "value", value)).upper()


def as_text(value: bytes | str) -> str:
    """A hash field's value as ``str`` (clients that do not decode return ``bytes``)."""
    return value.decode("utf-8") if isinstance(value, bytes) else value


def stored_metadata(value: bytes | str | None) -> dict[str, Any]:
    """The metadata a chunk's ``METADATA_FIELD`` holds (JSON); none: empty."""
    if value is None:
        return {}
    loaded = json.loads(as_text(value))
    return copy_metadata(loaded) if isinstance(loaded, dict) else {}


def known_setting(value: str, known: tuple[_L, ...], default: _L) -> _L:
    """``value`` if it is one of ``known`` (a server's setting we can search), else ``default``."""
    return next((k for k in known if k == value), default)
