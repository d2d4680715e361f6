"""The ``metadatas`` argument every splitter's ``create_documents`` takes, checked once."""

from __future__ import annotations

from typing import Any


def check_metadatas(
    texts: list[str], metadatas: list[dict[Any, Any]] | None
) -> list[dict[Any, Any]]:
    """One metadata dict per text: ``metadatas``, or empty dicts when it is ``None`` or empty.

    Raises:
        ValueError: When ``metadatas`` is given with a different length than ``texts``.
    """
    metadatas = metadatas or [{} for _ in texts]
    if len(metadatas) != len(texts):
        msg = (
            f"metadatas has {len(metadatas)} entries but {len(texts)} texts were given; "
            "pass one metadata dict per text."
        )
        raise ValueError(msg)
    return metadatas
