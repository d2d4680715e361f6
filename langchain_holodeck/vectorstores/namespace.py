"""A read view of one namespace of any vector store: over-fetch, then post-filter.

A store that cannot filter by namespace is searched through ``NamespaceFilteredStore``, so no
corpus ever sees another's chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor
from langchain_core.vectorstores import VectorStore

from langchain_holodeck._scores import clip_unit
from langchain_holodeck.contracts import DocumentFilters, FilterCheck, dense_search_keywords

__all__ = ["NamespaceFilteredStore"]

_MAX_FETCH = 10_000
"""Largest candidate count a post-filtered search asks the wrapped store for."""


class NamespaceFilteredStore(VectorStore):
    """A read view of ``store`` showing one namespace: searches over-fetch, then post-filter.

    Searches ask the wrapped store for 4x the requested count, growing 4x while too few
    results survive and the store had more to give (at most 10 000 candidates); MMR first asks
    for the store's own answer (``k``, ``fetch_k``), then grows both alike. ``get_by_ids``
    drops other namespaces' documents. Writes go to the wrapped store unchanged.
    ``search_kwargs`` (a native filter, when the store has one) are passed on every search.
    The view takes the keyword arguments and the ``filter`` its store's searches take
    (``search_keywords``, ``check_filter``), so ``HybridRetriever`` refuses a misspelt
    ``search_kwargs`` key through it as on the store itself. Relevance scores are the
    store's; a store without a relevance function (langchain-core's ``InMemoryVectorStore``)
    reports its cosine similarity clipped to [0, 1].

    Instantiate:
        ```python
        view = NamespaceFilteredStore(store, namespace=tool.namespace)
        view.similarity_search("shift rota", k=4)  # only this corpus's chunks
        ```
    """

    def __init__(
        self, store: VectorStore, *, namespace: str, search_kwargs: dict[str, Any] | None = None
    ) -> None:
        if not namespace:
            msg = "namespace must be a non-empty string, got ''."
            raise ValueError(msg)
        self.store = store
        self.namespace = namespace
        self.search_kwargs = dict(search_kwargs or {})
        taken = self.search_keywords
        unknown = [key for key in self.search_kwargs if taken is not None and key not in taken]
        if unknown:
            msg = (
                f"search_kwargs {', '.join(map(repr, unknown))} is not an argument of "
                f"{type(store).__name__}'s search; it takes {', '.join(map(repr, taken or []))}."
            )
            raise ValueError(msg)
        self.check_filter(self.search_kwargs.get("filter"))

    @property
    def search_keywords(self) -> frozenset[str] | None:
        """The keyword arguments the searches take: the wrapped store's (``None``: unsaid).

        Each search passes them on to the store's, which the view calls with ``k`` (and MMR's
        ``fetch_k`` and ``lambda_mult``) of its own; a store whose search takes ``**kwargs``
        says nothing, and neither does the view.
        """
        taken = dense_search_keywords(self.store)
        return None if taken is None else frozenset(taken)

    def check_filter(self, doc_filter: Any) -> None:
        """Refuse a ``filter`` the wrapped store's searches refuse (``FilterCheck``).

        Raises:
            TypeError: The store's own (its ``check_filter``, or its ``document_filter``).
        """
        if doc_filter is None:
            return
        if isinstance(self.store, FilterCheck):
            self.store.check_filter(doc_filter)
        elif isinstance(self.store, DocumentFilters):
            self.store.document_filter(doc_filter)

    @property
    def embeddings(self) -> Embeddings | None:
        return self.store.embeddings

    def _keep(self, doc: Document) -> bool:
        return doc.metadata.get("namespace") == self.namespace

    def _filtered(
        self,
        search: Callable[[int], Sequence[Any]],
        k: int,
        doc_of: Callable[[Any], Document],
        *,
        first: int | None = None,
    ) -> list[Any]:
        fetch = max(4 * k, 20) if first is None else first
        while True:
            hits = list(search(fetch))
            kept = [hit for hit in hits if self._keep(doc_of(hit))]
            if len(kept) >= k or len(hits) < fetch or fetch >= _MAX_FETCH:
                return kept[:k]
            fetch = min(max(fetch * 4, 20), _MAX_FETCH)

    # -- reads ------------------------------------------------------------------------------
    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        kwargs = {**self.search_kwargs, **kwargs}
        return self._filtered(
            lambda n: self.store.similarity_search(query, k=n, **kwargs), k, lambda d: d
        )

    def similarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        kwargs = {**self.search_kwargs, **kwargs}
        return self._filtered(
            lambda n: self.store.similarity_search_with_score(query, k=n, **kwargs),
            k,
            lambda hit: hit[0],
        )

    def _similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        kwargs = {**self.search_kwargs, **kwargs}

        def search(n: int) -> list[tuple[Document, float]]:
            try:
                return self.store.similarity_search_with_relevance_scores(query, k=n, **kwargs)
            except NotImplementedError:  # no relevance function: cosine similarity, clipped
                hits = self.store.similarity_search_with_score(query, k=n, **kwargs)
                return [(d, clip_unit(float(s))) for d, s in hits]

        return self._filtered(search, k, lambda hit: hit[0])

    async def _asimilarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        # the base class's would ask for a relevance function this view does not have
        return await run_in_executor(
            None, self._similarity_search_with_relevance_scores, query, k, **kwargs
        )

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[Document]:
        kwargs = {**self.search_kwargs, **kwargs}
        return self._filtered(
            lambda n: self.store.similarity_search_by_vector(embedding, k=n, **kwargs),
            k,
            lambda d: d,
        )

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        """The store's MMR, post-filtered as the other searches (see ``_mmr``)."""
        return self._mmr(
            self.store.max_marginal_relevance_search, query, k, fetch_k, lambda_mult, kwargs
        )

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        return self._mmr(
            self.store.max_marginal_relevance_search_by_vector,
            embedding,
            k,
            fetch_k,
            lambda_mult,
            kwargs,
        )

    def _mmr(
        self,
        search: Callable[..., list[Document]],
        query: Any,
        k: int,
        fetch_k: int,
        lambda_mult: float,
        kwargs: dict[str, Any],
    ) -> list[Document]:
        # first the store's own MMR for k (with a native filter in search_kwargs every result
        # survives: the answer is the store's); while too few are of this namespace, the store
        # selects n = 20, 80, ... by MMR from n / k times fetch_k candidates (so about fetch_k
        # of this namespace's), and the view keeps this namespace's in the store's order
        kwargs = {**self.search_kwargs, **kwargs}

        def select(n: int) -> list[Document]:
            pool = fetch_k if n <= k else min(max(fetch_k * n // max(k, 1), n), _MAX_FETCH)
            return search(query, k=n, fetch_k=pool, lambda_mult=lambda_mult, **kwargs)

        return self._filtered(select, k, lambda d: d, first=k)

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return [d for d in self.store.get_by_ids(ids) if self._keep(d)]

    # -- writes go through ------------------------------------------------------------------
    def add_texts(
        self, texts: Iterable[str], metadatas: list[dict] | None = None, **kwargs: Any
    ) -> list[str]:
        return self.store.add_texts(texts, metadatas, **kwargs)

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        return self.store.add_documents(documents, **kwargs)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        return self.store.delete(ids, **kwargs)

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict] | None = None,
        **kwargs: Any,
    ) -> NamespaceFilteredStore:
        msg = "NamespaceFilteredStore wraps an existing store: NamespaceFilteredStore(store, ...)."
        raise TypeError(msg)
