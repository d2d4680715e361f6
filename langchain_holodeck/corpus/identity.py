"""Corpus identity: which chunks belong to one tool's corpus, on any shared store.

A corpus is its resolved absolute source root plus the tool name. Its namespace is the UUIDv5
of the two; ``corpus_id`` pins it instead (a project that moves, machines indexing one share).
Every chunk id is ``stable_id(namespace, chunk_key)``, and every write, search and deletion is
scoped to the namespace, so two corpora in one store never see or delete each other's chunks.
Plain Python, light to import.
"""

from __future__ import annotations

import hashlib
import os
import uuid

from langchain_holodeck._defaults import DEFAULT_STORE_DIR as DEFAULT_STORE_DIR
from langchain_holodeck._source_walk import expand_home, real_path

CORPUS_UUID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://langchain-holodeck/corpus")
"""The UUIDv5 namespace corpus namespaces are derived in."""


def corpus_namespace(
    source: str | os.PathLike[str], *, name: str, corpus_id: str | None = None
) -> str:
    """The namespace of the corpus at ``source`` indexed by the tool ``name``.

    Args:
        source: The file or directory indexed; resolved (absolute, symlinks followed; a
            symlink loop is taken as it is, and its loader says it is one).
        name: The tool name; two tools over one folder are two corpora.
        corpus_id: When set, the namespace is exactly this (the root and name are ignored).

    Returns:
        ``corpus_id``, or the UUIDv5 (in ``CORPUS_UUID_NAMESPACE``) of the resolved root's
        POSIX path and ``name``, joined by a newline.

    Raises:
        ValueError: When ``name`` or ``corpus_id`` is empty.

    Example:
        ```python
        corpus_namespace("docs/", name="kb") == corpus_namespace("./docs", name="kb")  # True
        ```
    """
    if corpus_id is not None:
        if not corpus_id.strip():
            msg = "corpus_id must be a non-empty string or None, got ''."
            raise ValueError(msg)
        return corpus_id
    if not name:
        msg = "name must be the non-empty tool name, got ''."
        raise ValueError(msg)
    root = real_path(expand_home(source))  # a symlink loop: no RuntimeError, the loader says
    return str(_uuid5(CORPUS_UUID_NAMESPACE, f"{root.as_posix()}\n{name}"))


def _uuid5(namespace: uuid.UUID, name: str) -> uuid.UUID:
    r"""``uuid.uuid5``, also for a name holding bytes that are not UTF-8 (surrogate escapes).

    A folder named in Latin-1 (``caf\xe9``) reaches Python as ``'caf\udce9'``, which
    ``uuid5`` cannot encode: its raw bytes are hashed. Any other name gives ``uuid5``'s UUID.
    """
    data = name.encode("utf-8", "surrogateescape")
    return uuid.UUID(bytes=hashlib.sha1(namespace.bytes + data).digest()[:16], version=5)


def legacy_namespace(name: str) -> str:
    """The namespace versions before corpus identity used: the bare tool name."""
    return name
