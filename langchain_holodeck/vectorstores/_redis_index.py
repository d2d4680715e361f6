"""The RediSearch index behind a Redis store: how it is reached, its first scan, its text fields.

``search_index`` is the one place this package reaches into langchain-redis (its store's
``index``, checked against the tested version). ``wait_for_first_scan`` keeps a writer from
racing a new index's scan of the keyspace; ``full_text_fields`` brings an index created before
the ``identifier_parts`` field up to date, and says which fields full-text queries read.
"""

from __future__ import annotations

import functools
import importlib.metadata
import itertools
import logging
import re
import time

from langchain_redis import RedisVectorStore
from redis.exceptions import RedisError, ResponseError
from redisvl.exceptions import RedisSearchError
from redisvl.index import SearchIndex

from langchain_holodeck._redact import one_line
from langchain_holodeck._redisearch import identifier_parts
from langchain_holodeck.vectorstores._redis_schema import CONTENT_FIELD, PARTS_FIELD, as_text

logger = logging.getLogger(
    "langchain_holodeck.vectorstores.redis"
)  # the store's: what users filter on

TESTED_LANGCHAIN_REDIS = "0.2"
"""The langchain-redis minor version whose internals ``search_index`` was checked against."""


def search_index(store: RedisVectorStore) -> SearchIndex:
    """The redisvl ``SearchIndex`` behind a langchain-redis store.

    The one place this package reaches into langchain-redis: everything else (queries, the
    client, full-text search) goes through the index this returns. It uses the store's
    ``index`` property (langchain-redis 0.2); other versions log one WARNING.

    Raises:
        TypeError: When ``store`` has no redisvl ``SearchIndex`` (an incompatible version).
    """
    _check_langchain_redis_version()
    index = getattr(store, "index", None)
    if not isinstance(index, SearchIndex):
        msg = (
            f"{type(store).__name__} has no redisvl SearchIndex at .index (got "
            f"{type(index).__name__}); langchain-redis {_installed_langchain_redis()} is not "
            f'compatible, install the tested one: pip install "langchain-redis~='
            f'{TESTED_LANGCHAIN_REDIS}.0".'
        )
        raise TypeError(msg)
    return index


def _installed_langchain_redis() -> str:
    try:
        return importlib.metadata.version("langchain-redis")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def _check_langchain_redis_version() -> None:
    installed = _installed_langchain_redis()
    if installed.split(".")[:2] != TESTED_LANGCHAIN_REDIS.split("."):
        logger.warning(
            "langchain-redis %s is untested with langchain-holodeck (tested: %s.x); "
            "HolodeckRedisVectorStore relies on RedisVectorStore.index.",
            installed,
            TESTED_LANGCHAIN_REDIS,
        )


def _scanning(index: SearchIndex) -> bool:
    """Whether ``index``'s keyspace scan runs; ``False`` when ``FT.INFO`` is not allowed."""
    try:
        info = index.info()
    except (ResponseError, RedisSearchError) as e:  # an ACL without FT.INFO: do not wait
        logger.debug("FT.INFO %s refused (%s); not waiting for its scan.", index.name, e)
        return False
    return bool(int(float(info.get("indexing", 0) or 0)))


def full_text_fields(index: SearchIndex) -> str:
    """The field list full-text queries read on ``index``, as the server has it.

    ``text|identifier_parts`` (``@text|identifier_parts:word``) when the server's index has
    the parts field; an index created before it had one is given it (``FT.ALTER
    SKIPINITIALSCAN ... ADD``), and its chunks their parts (``_backfill_parts``).
    Without ``SKIPINITIALSCAN`` the server would index every chunk again, and each chunk's
    old entries would stay in the postings until collected (wrapped BM25STD scores for the
    words in most chunks: ``wait_for_first_scan``); a chunk written before has no parts to
    index until given them. Where the server refuses (a replica, an ACL), the content field alone.
    """
    names = _server_fields(index)
    if PARTS_FIELD not in names and CONTENT_FIELD in names:
        try:
            index.client.execute_command(  # no chunk has the field yet: nothing to rescan
                "FT.ALTER", index.name, "SKIPINITIALSCAN", "SCHEMA", "ADD", PARTS_FIELD, "TEXT"
            )
            logger.info("Redis index %r: added the %s field.", index.name, PARTS_FIELD)
            _backfill_parts(index)
        except ResponseError as e:  # read-only, refused, or added meanwhile by another writer
            logger.debug("FT.ALTER %s refused (%s).", index.name, one_line(e))
        names = _server_fields(index)
    return f"{CONTENT_FIELD}|{PARTS_FIELD}" if PARTS_FIELD in names else CONTENT_FIELD


_SET_PARTS = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] and redis.call('HEXISTS', KEYS[1], ARGV[3]) == 0
then redis.call('HSET', KEYS[1], ARGV[3], ARGV[4]) end
"""
"""Sets a chunk's parts only if its text is still the one they were computed from (a writer may
have rewritten it meanwhile) and it has none yet."""


def _backfill_parts(index: SearchIndex, *, batch: int = 500) -> None:
    """Give the chunks written before ``index`` had the parts field their identifier parts.

    Run once, by the process whose ``FT.ALTER`` added the field: unchanged chunks are never
    written again (a re-ingest skips them), so without it the store kept missing their
    identifiers' words for good (``send`` did not find ``send_file``). Only chunks with parts
    are written (each is indexed again, as an update is). A failure leaves the rest to their
    next write, with one WARNING.
    """
    client = index.client
    script = client.register_script(_SET_PARTS)
    match = re.sub(r"([*?\[\]\\])", r"\\\1", str(index.prefix)) + "*"
    filled = 0
    try:
        keys = client.scan_iter(match=match, count=batch, _type="HASH")
        while chunk := list(itertools.islice(keys, batch)):
            fields = client.pipeline(transaction=False)
            for key in chunk:
                fields.hmget(key, [CONTENT_FIELD, PARTS_FIELD])
            writes = client.pipeline(transaction=False)
            for key, (text, parts) in zip(chunk, fields.execute(), strict=True):
                new = identifier_parts(as_text(text)) if text is not None and parts is None else ""
                if new:
                    script(keys=[key], args=[CONTENT_FIELD, text, PARTS_FIELD, new], client=writes)
                    filled += 1
            writes.execute()
    except RedisError as e:  # refused (an ACL), the server gone: their next write gives them
        logger.warning(
            "Redis index %r: could not give the chunks written before the %s field theirs "
            "(%s); they get them when next written (ingest --force-ingest rewrites all).",
            index.name,
            PARTS_FIELD,
            one_line(e),
        )
    if filled:
        logger.info("Redis index %r: %d chunk(s) given their %s.", index.name, filled, PARTS_FIELD)


def _server_fields(index: SearchIndex) -> set[str]:
    """The field names of ``index`` as the server reports them (``FT.INFO`` attributes)."""
    try:
        attributes = index.info().get("attributes", [])
    except (ResponseError, RedisSearchError):
        return {CONTENT_FIELD}
    names = set()
    for attribute in attributes:
        pairs = dict(zip(attribute[::2], attribute[1::2], strict=False))
        name = pairs.get("attribute", pairs.get(b"attribute"))
        if name is not None:
            names.add(as_text(name))
    return names


FIRST_SCAN_TIMEOUT_S = 60.0
"""How long a writer waits for an index's first scan of the keyspace before writing anyway."""


def wait_for_first_scan(index: SearchIndex, *, timeout: float = FIRST_SCAN_TIMEOUT_S) -> None:
    """Return once RediSearch has finished the first scan of a new index (``indexing`` 0).

    ``FT.CREATE`` scans the existing keys in the background, even when there are none. A key
    written while that scan runs can be indexed twice, by the write and by the scan: 8 of 40
    freshly created indexes of 24 chunks (Redis Stack 7.4.1) held more document ids than
    documents. The old entries then stay in the word postings until the garbage collector
    runs, which it does only after 100 deletions, and a word in most chunks gets a wrapped,
    arbitrary BM25STD score (``docs/search-strategy.md``). Waiting first: 0 of 40. An index
    that exists and is scanned answers at once (one ``FT.INFO``); a scan that outlasts
    ``timeout`` is logged and writing goes on.
    """
    deadline = time.monotonic() + timeout
    delay = 0.001
    while _scanning(index):
        if time.monotonic() >= deadline:
            logger.warning(
                "Redis index %r is still scanning the keyspace after %.0f s; writing anyway.",
                index.name,
                timeout,
            )
            return
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
