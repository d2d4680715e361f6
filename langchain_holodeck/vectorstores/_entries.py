"""What ``add_texts`` of the server-backed stores (Redis, PostgreSQL) checks and fills in."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any


def entry_ids(
    texts: Sequence[str],
    metadatas: Sequence[dict[str, Any]] | None,
    ids: Sequence[str | None] | None,
) -> list[str]:
    """One id per text: the given one, or a fresh UUID4 where none (or an empty one) is given.

    Raises:
        ValueError: When ``metadatas`` or ``ids`` has another length than ``texts``.
    """
    if metadatas is not None and len(metadatas) != len(texts):
        msg = f"metadatas has {len(metadatas)} entries for {len(texts)} texts."
        raise ValueError(msg)
    if ids is not None and len(ids) != len(texts):
        msg = f"ids has {len(ids)} entries for {len(texts)} texts."
        raise ValueError(msg)
    given: Sequence[str | None] = ids or [None] * len(texts)
    return [str(i) if i else str(uuid.uuid4()) for i in given]
