"""Small ``ByteStore`` implementations for the embedding cache: a directory and Redis."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from langchain_core.stores import ByteStore

from langchain_holodeck._defaults import MAX_CACHE_TTL_DAYS
from langchain_holodeck._persist import atomic_write

_SAFE_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")


def namespace_segment(namespace: str) -> str:
    """``namespace`` as one segment of a path or key prefix (embedding caches, BM25 files).

    ``%``, ``:`` and ``/`` are percent-encoded, and a leading ``.``, so no corpus's files lie
    inside another's: ``a`` and ``a:b`` get the prefixes ``a:`` and ``a%3Ab:``, and ``..`` is
    a directory of its own (``%2E.``), not the store's. A generated namespace (a UUID) is
    unchanged.

    Example:
        ```python
        namespace_segment("a:b")  # -> 'a%3Ab'
        ```
    """
    text = namespace.replace("%", "%25").replace(":", "%3A").replace("/", "%2F")
    return "%2E" + text[1:] if text.startswith(".") else text


class LocalFileByteStore(ByteStore):
    """A ``ByteStore`` of one file per key under ``root`` (created on first write).

    Keys must be simple names (letters, digits, ``.``, ``_``, ``-``; like the hex keys of
    ``CachedEmbeddings``); files live in ``root/<first two chars>/<key>``. Each write goes
    through a temporary file and ``os.replace``: a killed process never leaves half a value.
    ``durable=False`` skips each write's fsync (thousands of them were seconds of an ingest):
    for a cache, whose reader treats an empty or torn value as a miss (``CachedEmbeddings``),
    since a power cut may then leave one.
    ``prune`` removes every key but those given (the embedding cache of a corpus keeps only
    the texts its stored chunks hold).

    Instantiate:
        ```python
        store = LocalFileByteStore(".holodeck/embedding_cache")
        store.mset([("ab12", b"...")])
        ```
    """

    def __init__(self, root: str | Path, *, durable: bool = True) -> None:
        self.root = Path(root)
        self.durable = durable

    def _path(self, key: str) -> Path:
        if not _SAFE_KEY.match(key):
            msg = (
                f"LocalFileByteStore keys must be letters, digits, '.', '_' or '-' "
                f"(at most 201 characters), got {key!r}."
            )
            raise ValueError(msg)
        return self.root / key[:2] / key

    def mget(self, keys: Sequence[str]) -> list[bytes | None]:
        out: list[bytes | None] = []
        for key in keys:
            try:
                out.append(self._path(key).read_bytes())
            except FileNotFoundError:
                out.append(None)
        return out

    def mset(self, key_value_pairs: Sequence[tuple[str, bytes]]) -> None:
        for key, value in key_value_pairs:
            path = self._path(key)
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, _writer(value), durable=self.durable)

    def mdelete(self, keys: Sequence[str]) -> None:
        for key in keys:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path(key))

    def yield_keys(self, *, prefix: str | None = None) -> Iterator[str]:
        for path in self._files():
            if not prefix or path.name.startswith(prefix):
                yield path.name

    def prune(self, keep: Collection[str], *, written_before: float) -> int:
        """Delete every entry whose key is not in ``keep`` and that was written before then.

        Args:
            keep: Keys that stay.
            written_before: A ``time.time()``; entries written since (by another process
                syncing at the same time, say) stay.

        Returns:
            The number of entries deleted.
        """
        removed = 0
        for path in self._files():
            if path.name in keep:
                continue
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_mtime < written_before:
                    path.unlink()
                    removed += 1
        return removed

    def _files(self) -> Iterator[Path]:
        if not self.root.is_dir():
            return
        for shard in sorted(p for p in self.root.iterdir() if p.is_dir()):
            for path in sorted(shard.iterdir()):
                if not path.name.startswith("."):
                    yield path


def _writer(value: bytes) -> Callable[[IO[bytes]], None]:
    def write(f: IO[bytes]) -> None:
        f.write(value)

    return write


class RedisByteStore(ByteStore):
    """A ``ByteStore`` in Redis: key ``{prefix}{key}``, optional TTL in seconds.

    With a ``ttl`` an entry expires ``ttl`` seconds after it was last written or read
    (``mget`` refreshes the TTL of every hit with ``GETEX``): what is used stays. A ``ttl``
    is a whole number of seconds from 1 to a century (3153600000).

    Setup:
        ``pip install "langchain-holodeck[redis]"``

    Instantiate:
        ```python
        store = RedisByteStore(redis.Redis.from_url(url), prefix="holodeck:emb:")
        ```
    """

    def __init__(
        self, client: Any, *, prefix: str = "holodeck:embcache:", ttl: int | None = None
    ) -> None:
        _check_ttl(ttl)
        self.client = client
        self.prefix = prefix
        self.ttl = ttl

    def mget(self, keys: Sequence[str]) -> list[bytes | None]:
        if not keys:
            return []
        if self.ttl is None:
            return list(self.client.mget([self.prefix + k for k in keys]))
        with self.client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.getex(self.prefix + key, ex=self.ttl)  # a hit lives another ttl
            return list(pipe.execute())

    def mset(self, key_value_pairs: Sequence[tuple[str, bytes]]) -> None:
        if not key_value_pairs:
            return
        with self.client.pipeline(transaction=False) as pipe:
            for key, value in key_value_pairs:
                pipe.set(self.prefix + key, value, ex=self.ttl)
            pipe.execute()

    def mdelete(self, keys: Sequence[str]) -> None:
        if keys:
            self.client.delete(*(self.prefix + k for k in keys))

    def yield_keys(self, *, prefix: str | None = None) -> Iterator[str]:
        pattern = _glob_escape(self.prefix + (prefix or "")) + "*"
        for key in self.client.scan_iter(match=pattern, count=1000):
            name = key.decode() if isinstance(key, bytes) else key
            yield name[len(self.prefix) :]


_MAX_TTL_SECONDS = MAX_CACHE_TTL_DAYS * 24 * 3600


def _check_ttl(ttl: object) -> None:
    """``RedisByteStore``'s ``ttl``: ``None`` or an int of seconds, from 1 to a century.

    Raises:
        ValueError: Naming the value, before any request (Redis refused 0 and a TTL past its
            clock's range on every write, not at construction).
    """
    if ttl is None:
        return
    if isinstance(ttl, bool) or not isinstance(ttl, int) or not 1 <= ttl <= _MAX_TTL_SECONDS:
        msg = (
            f"ttl must be a whole number of seconds from 1 to {_MAX_TTL_SECONDS} (a century), "
            f"or None to keep entries until deleted, got {ttl!r}."
        )
        raise ValueError(msg)


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)
