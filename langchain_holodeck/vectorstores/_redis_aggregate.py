"""The Redis Stack 7.4 native hybrid request: one ``FT.AGGREGATE`` that reads only what it returns.

redisvl's ``AggregateHybridQuery`` ranks the ``KNN`` candidates by a linear combination of
vector similarity and BM25STD. redis-py writes its ``LOAD`` (the stored text and metadata)
before every step of the pipeline, so the server reads the fields of every candidate, then
sorts and keeps ``LIMIT`` of them. Here the ``LOAD`` comes last, after ``SORTBY`` and
``LIMIT``: the candidate depth (``KNN``) stays what fusion quality needs while the server
reads the fields of the returned rows only. Same rows, same order, same fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redisvl.query import AggregateHybridQuery

__all__ = ["LateLoadHybridQuery"]


class LateLoadHybridQuery(AggregateHybridQuery):
    """``AggregateHybridQuery`` with ``KNN num_results`` candidates, ``limit`` rows returned.

    Args:
        load_fields: The fields each returned row carries (``__key`` included), loaded after
            the rows are ranked and cut.
        limit: Rows returned, the best first; ``None`` returns every candidate.
        **kwargs: ``AggregateHybridQuery``'s arguments, ``return_fields`` excluded.
    """

    def __init__(self, *, load_fields: Sequence[str], limit: int | None, **kwargs: Any) -> None:
        if "return_fields" in kwargs:
            msg = (
                "LateLoadHybridQuery takes load_fields, got return_fields="
                f"{kwargs['return_fields']!r}; pass the fields as load_fields."
            )
            raise TypeError(msg)
        super().__init__(**kwargs)
        if limit is not None:
            self.limit(0, limit)  # after SORTBY: the server keeps the best ``limit`` rows
        self._late_load = [f"@{name}" for name in load_fields]

    def build_args(self) -> list[str]:
        """The command's arguments, ``LOAD`` last (after ``SORTBY`` and ``LIMIT``)."""
        args: list[str] = super().build_args()
        return [*args, "LOAD", str(len(self._late_load)), *self._late_load]
