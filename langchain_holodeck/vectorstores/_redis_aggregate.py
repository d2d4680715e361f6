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
        text_clause: The optional full-text clause, in place of the one redisvl writes from
            ``text`` (which then only names the text for redisvl's checks).
        scope: The filter's query text the candidates must match (with ``text_clause``).
        **kwargs: ``AggregateHybridQuery``'s arguments, ``return_fields`` excluded.
    """

    def __init__(
        self,
        *,
        load_fields: Sequence[str],
        limit: int | None,
        text_clause: str | None = None,
        scope: str = "",
        **kwargs: Any,
    ) -> None:
        if "return_fields" in kwargs:
            msg = (
                "LateLoadHybridQuery takes load_fields, got return_fields="
                f"{kwargs['return_fields']!r}; pass the fields as load_fields."
            )
            raise TypeError(msg)
        self._text_clause = text_clause  # before redisvl's __init__, which builds the query
        self._scope = scope
        super().__init__(**kwargs)
        if limit is not None:
            self.limit(0, limit)  # after SORTBY: the server keeps the best ``limit`` rows
        self._late_load = [f"@{name}" for name in load_fields]

    def _build_query_string(self) -> str:
        """``(~(text_clause) scope)=>[KNN ...]`` when a ``text_clause`` is given, else redisvl's.

        redisvl writes ``(~@text:(t1 | t2) filter)``: under a filter RediSearch 2.10 mis-scores
        that union, and a TAG filter adds a score of its own (``_redisearch.match_any``,
        ``unscored``). The store passes the words each intersected with the filter and the
        filter unscored, so the text term of the fusion is the words' BM25STD alone.
        """
        if self._text_clause is None:
            return str(super()._build_query_string())
        where = (
            f"(~({self._text_clause}) {self._scope})"
            if self._scope
            else f"(~({self._text_clause}))"
        )
        knn = f"KNN {self._num_results} @{self._vector_field} ${self.VECTOR_PARAM}"
        return f"{where}=>[{knn} AS {self.DISTANCE_ID}]"

    def build_args(self) -> list[str]:
        """The command's arguments, ``LOAD`` last (after ``SORTBY`` and ``LIMIT``)."""
        args: list[str] = super().build_args()
        return [*args, "LOAD", str(len(self._late_load)), *self._late_load]
