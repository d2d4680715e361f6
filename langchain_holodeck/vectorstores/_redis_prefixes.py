"""Whose keys a Redis index covers: a store's key prefix must not nest with another index's.

RediSearch indexes every hash whose key starts with one of an index's prefixes. A store keeps
its chunks under ``<index_name>:``, and ``index_name`` may hold ``:``, so the index ``kb``
(prefix ``kb:``) also covers every key of ``kb:v2`` (``kb:v2:``): its searches return the
other's chunks, and its stale cleanup (a SCAN over its prefix) deletes them. ``check_prefixes``
refuses such a pair, asking the server which indexes it has (``FT._LIST``, and ``FT.INFO``'s
``index_definition`` for each, in one pipeline), so indexes other projects made count too.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import redis
from langchain_redis import RedisConfig
from redisvl.schema import IndexSchema

from langchain_holodeck.errors import ConfigError
from langchain_holodeck.vectorstores._redis_schema import as_text

logger = logging.getLogger(
    "langchain_holodeck.vectorstores.redis"
)  # the store's: what users filter on


def planned_prefixes(config: RedisConfig) -> list[str]:
    """The key prefixes langchain-redis gives the index of ``config`` when it creates it.

    The schema's (``index_schema``, ``schema_path``), else the key prefix (the index name)
    followed by ``:``, as ``RedisVectorStore`` builds it (without the ``:`` when
    ``legacy_key_format`` is off).
    """
    if config.index_schema is not None:
        prefix: str | list[str] = config.index_schema.index.prefix
    elif config.schema_path:
        prefix = IndexSchema.from_yaml(config.schema_path).index.prefix
    else:
        key_prefix = config.key_prefix or config.index_name
        legacy = getattr(config, "legacy_key_format", True)
        prefix = f"{key_prefix}:" if legacy else key_prefix
    return [prefix] if isinstance(prefix, str) else list(prefix)


def server_prefixes(client: redis.Redis) -> dict[str, list[str]] | None:
    """The key prefixes of each index of hashes on the server, by index name.

    One ``FT._LIST`` and one pipeline of ``FT.INFO``. Indexes of JSON documents are left out:
    they never index a hash, and a store's SCAN reads hashes only. ``None`` when the server
    will not say (an ACL refusing ``FT._LIST`` or ``FT.INFO``).
    """
    try:
        names = [as_text(n) for n in client.execute_command("FT._LIST")]
        pipe = client.pipeline(transaction=False)
        for name in names:
            pipe.execute_command("FT.INFO", name)
        replies = pipe.execute(raise_on_error=False)
    except redis.ResponseError as e:  # NOPERM: nothing to compare with
        logger.debug("Listing the Redis indexes was refused (%s); prefixes not checked.", e)
        return None
    out: dict[str, list[str]] = {}
    for name, reply in zip(names, replies, strict=True):
        if isinstance(reply, redis.ResponseError):  # dropped meanwhile, or refused
            if not any(w in str(reply).lower() for w in ("unknown index", "no such index")):
                logger.debug("FT.INFO %s refused (%s); prefixes not checked.", name, reply)
                return None
            continue
        definition = _pairs(_pairs(reply).get("index_definition"))
        if as_text(definition.get("key_type", b"HASH")).upper() == "HASH":
            out[name] = [as_text(p) for p in definition.get("prefixes") or [b""]]
    return out


def _pairs(reply: Any) -> dict[str, Any]:
    """A RESP3 map or a RESP2 flat list of pairs as a ``dict`` with ``str`` keys."""
    if isinstance(reply, Mapping):
        return {as_text(k): v for k, v in reply.items()}
    if isinstance(reply, list | tuple):
        return {as_text(k): v for k, v in zip(reply[::2], reply[1::2], strict=False)}
    return {}


def nesting(mine: Sequence[str], theirs: Sequence[str]) -> tuple[str, str] | None:
    """The first (mine, theirs) prefix pair where one starts with the other, else ``None``.

    An empty prefix (an index of every hash of the database, made by another program) is not
    counted: no index name avoids it, and it changes nothing the store reads or deletes.
    """
    for a in mine:
        for b in theirs:
            if a and b and (a.startswith(b) or b.startswith(a)):
                return a, b
    return None


def check_prefixes(
    client: redis.Redis,
    index_name: str,
    prefixes: Sequence[str],
    known: Mapping[str, list[str]] | None = None,
) -> None:
    """Refuse ``index_name`` when its key prefix nests with another index's on the server.

    Run when a store opens (and before an index that vanished is created again), never per
    query. The index's own prefixes are the server's when it exists, else ``prefixes`` (what
    it will be created with). ``known`` is a ``server_prefixes`` answer already fetched.

    Raises:
        ConfigError: Naming both indexes, their prefixes and the fix, before anything is
            created, written or deleted.
    """
    indexes = dict(known) if known is not None else server_prefixes(client)
    if indexes is None:
        return
    mine = indexes.pop(index_name, None) or list(prefixes)
    for name in sorted(indexes):
        pair = nesting(mine, indexes[name])
        if pair is None:
            continue
        my_prefix, their_prefix = pair
        inside = my_prefix.startswith(their_prefix)
        inner, outer = (index_name, name) if inside else (name, index_name)
        msg = (
            f"Redis index_name {index_name!r} (key prefix {my_prefix!r}) nests with the "
            f"index {name!r} (key prefix {their_prefix!r}) on this server: {outer!r} also "
            f"covers the keys of {inner!r}, so its searches would return them and its "
            f"ingest's cleanup would delete them; {_fix(index_name, name, their_prefix)}."
        )
        raise ConfigError(msg)


def _fix(index_name: str, other: str, their_prefix: str) -> str:
    """Both ways to part this store from the index ``other``: drop that one, or move this one.

    Dropping ``other`` must take its documents (``DD``): dropped alone, its hashes stay under
    the outer prefix, and the outer index returns each of them beside its own. Renaming
    ``other`` in its own configuration frees nothing: its index stays on the server.
    """
    drop = (
        f"if {other!r} is no longer used, drop it with its documents "
        f"(redis-cli FT.DROPINDEX {other} DD: without DD its hashes stay under the prefix); "
        "else give this store an index_name"
    )
    if index_name.startswith(other + ":"):
        renamed = f"{other}_{index_name[len(other) + 1 :]}"
        return f"{drop} that no other index nests with (e.g. {renamed!r}) and ingest there"
    return (
        f"{drop} whose key prefix neither starts with {their_prefix!r} nor begins it, "
        "and ingest there"
    )
