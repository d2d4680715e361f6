"""``HierarchicalDocumentTool``: hybrid search over structured documents, as an agent tool."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from langchain_text_splitters import TextSplitter

from langchain_holodeck._chunk import chunk_hashes, content_digest
from langchain_holodeck._tracing import span
from langchain_holodeck.backends import (
    backend_for_store,
    get_keyword_index_provider,
)
from langchain_holodeck.config.models import (
    HierarchicalDocumentToolConfig,
)
from langchain_holodeck.contracts import CountedKeywordIndex
from langchain_holodeck.definitions import DefinitionIndex
from langchain_holodeck.exact import ExactMatchIndex
from langchain_holodeck.keyword_index import BM25KeywordIndex, KeywordIndex
from langchain_holodeck.search_strategy import tool_search_strategy
from langchain_holodeck.sync import sanitize_error
from langchain_holodeck.tools._wiring import IndexFanOut, chat_model, rebuild_index, with_reranker
from langchain_holodeck.tools.document import _DocumentTool

if TYPE_CHECKING:
    from langchain_holodeck.ingestion import ChunkEnricher
    from langchain_holodeck.sync import KeywordIndexLike

logger = logging.getLogger(__name__)


class HierarchicalDocumentTool(_DocumentTool[HierarchicalDocumentToolConfig]):
    """Hybrid search (dense + BM25 + exact section) over structured documents, as a tool.

    Documents are split along their structure (``StructuredMarkdownSplitter``), optionally
    given an LLM-written context (``ContextualChunkEnricher``), synced idempotently, and
    searched by a ``HybridRetriever``: a query naming "Section 203(a)" gets that section
    first, a defined term brings its definition, cross-references can be followed.
    ``search_strategy`` (after ``initialize``) says how dense and keyword search fuse: ``native``
    when the backend fuses them in one request (``BackendCapabilities.native_hybrid``), else
    ``fallback`` (fused here by ``fusion``, convex score fusion by default).

    Key init args:
        config: A ``HierarchicalDocumentToolConfig``.
        llm: The chat model that writes chunk contexts; overrides ``context_model``.

    Instantiate:
        ```python
        tool = HierarchicalDocumentTool(config, embeddings=embeddings)
        await tool.initialize()
        print(await tool.search("What does Section 203(a) require?"))
        ```
    """

    _shows_sections = True

    def __init__(
        self,
        config: HierarchicalDocumentToolConfig,
        *,
        embeddings: Embeddings | None = None,
        vector_store: VectorStore | None = None,
        llm: BaseChatModel | None = None,
        project_dir: str | Path | None = None,
        home_dir: str | Path | None = None,
        base_dir: str | Path | None = None,
        store_dir: str | Path | None = None,
        exclude: Sequence[str | Path] = (),
    ) -> None:
        super().__init__(
            config,
            embeddings=embeddings,
            vector_store=vector_store,
            project_dir=project_dir,
            home_dir=home_dir,
            base_dir=base_dir,
            store_dir=store_dir,
            exclude=exclude,
        )
        self._llm = llm
        self._keywords: KeywordIndex | None = None
        self._exact = ExactMatchIndex()
        self._exact_loaded = False
        self._fan_out: IndexFanOut | None = None
        self._keywords_stale = False
        self._keywords_checked = False
        self._indexed: dict[str, str] = {}
        """``id -> content_hash`` of what the exact index (and an in-memory keyword index)
        hold: checked against the store at each initialize, as another process may have
        re-ingested this corpus (``_follow_the_store``)."""
        self.definitions: DefinitionIndex = DefinitionIndex()
        """Defined terms of the corpus, rebuilt from the stored chunks at each initialize (in
        place: the retrievers this tool built hold this object): a ``{normalized term:
        Definition}`` mapping that also holds each document's own definition
        (``DefinitionIndex.every``)."""

    def _splitter(self) -> TextSplitter:
        from langchain_holodeck.splitters.structured import StructuredMarkdownSplitter

        return StructuredMarkdownSplitter(
            max_chunk_tokens=self._config.max_chunk_tokens,
            max_table_chunk_tokens=self._config.max_table_chunk_tokens,
        )

    def _enricher(self) -> ChunkEnricher | None:
        if not self._config.contextual_embeddings:
            return None
        from langchain_holodeck.contextual import ContextualChunkEnricher

        llm = self._llm or chat_model(self._config)
        return ContextualChunkEnricher(
            llm,
            concurrency=self._config.context_concurrency,
            max_context_tokens=self._config.context_max_tokens,
            timeout=self._config.context_timeout,
            cache=self.corpus.cache,  # beside the embeddings: kept across runs, forced ones too
        )

    def _listable(self, store: VectorStore) -> bool:
        return (self._backend or backend_for_store(store)).capabilities.enumerates

    def _indexes_from_source(self, store: VectorStore) -> bool:
        """A store no backend can list: the indexes are built from the chunks sync sees.

        Every file is then read and split at each initialize and each chunk, unchanged or
        not, reaches the keyword and exact indexes; unchanged chunks are not embedded again.
        """
        if self._listable(store):
            return False
        logger.warning(
            "%s: %s cannot be listed, so the keyword and exact indexes are built from the "
            "source: every file is read and split again at each initialize (unchanged chunks "
            "are not embedded again), and chunks of files removed from the source stay in the "
            "store.",
            self.name,
            type(store).__name__,
        )
        return True

    def _keyword_index(self, store: VectorStore) -> KeywordIndexLike:
        """The configured keyword index and the exact index, kept in step by sync."""
        if self._keywords is None:
            provider = get_keyword_index_provider(self._config.keyword_index)
            self._keywords = provider.open(
                backend=self._backend or backend_for_store(store),
                store=store,
                namespace=self.namespace,
                store_dir=self._store_dir,
            )
        listable = self._listable(store)
        if self._keywords_stale and listable:  # a sync could not write to it: rebuild it
            try:
                rebuild_index("keyword", self._keywords, store, self.namespace)
                self._keywords_stale = False
            except Exception as error:  # still down: the keyword leg degrades at search
                logger.warning(
                    "%s: keyword index rebuild failed (%s); retrying at the next initialize.",
                    self.name,
                    sanitize_error(error),
                )
        if not self._exact_loaded and listable:  # else sync gives it every chunk
            attributes = {
                "index.kind": "exact",
                "index.provider": type(self._exact).__name__,
                "index.source": "store",
            }
            with span("holodeck.index_build", attributes) as current:
                chunks = self._stored_chunks(store)
                current.set_attribute("index.document_count", self._exact.replace(chunks))
            self._indexed = chunk_hashes(chunks)
            self._exact_loaded = True
        if self._exact_loaded and not self._keywords_checked:
            self._keywords_checked = self._check_keyword_index(store)
        self._fan_out = IndexFanOut((self._keywords, self._exact), keep=not listable)
        return self._fan_out

    def _check_counted_index(self, keywords: CountedKeywordIndex, store: VectorStore) -> bool:
        """Compare the server's count with the store's chunks; rebuild when they differ.

        Returns whether the check ran: with the server down it did not (the keyword leg
        degrades at search), and the next initialize checks again.
        """
        want = len(self._exact.ids)
        try:
            held = keywords.count(namespace=self.namespace)
            if held != want:
                logger.warning(
                    "%s: the keyword index holds %d chunk(s) of this corpus and the store %d; "
                    "rebuilding it from the store.",
                    self.name,
                    held,
                    want,
                )
                rebuild_index("keyword", keywords, store, self.namespace)
        except Exception as error:
            logger.debug("%s: keyword index check failed: %s", self.name, sanitize_error(error))
            return False
        return True

    def _check_keyword_index(self, store: VectorStore) -> bool:
        """Rebuild a keyword index that does not hold exactly the store's chunks.

        A saved BM25 index is saved after the store, so a process killed in between (or a
        store written by another tool) leaves it behind the store; its ids are checked
        against the exact index's, just rebuilt from the store. A server's index
        (``CountedKeywordIndex``: OpenSearch) that an earlier process could not write to is
        behind too, and only that process knew: its count of this corpus's chunks is checked.
        """
        keywords = self._keywords
        if isinstance(keywords, CountedKeywordIndex):
            return self._check_counted_index(keywords, store)
        if not isinstance(keywords, BM25KeywordIndex):
            return True
        have, want = keywords.ids, self._exact.ids
        if have != want:
            logger.warning(
                "%s: the saved keyword index holds %d chunk(s) the store does not and lacks %d "
                "it does; rebuilding it from the store.",
                self.name,
                len(have - want),
                len(want - have),
            )
            rebuild_index("keyword", keywords, store, self.namespace)
        elif keywords.content_digest != content_digest(self._indexed):
            # the same ids, other texts: a file re-ingested by another process (its own
            # saved index), or a save from before digests were recorded
            logger.info(
                "%s: the saved keyword index was not saved over the store's chunk texts; "
                "rebuilding it from the store.",
                self.name,
            )
            rebuild_index("keyword", keywords, store, self.namespace)
        return True

    def _after_ingest(self, store: VectorStore) -> bool:
        from langchain_holodeck.vectorstores import scan_documents

        saved = super()._after_ingest(store)
        if self._fan_out is not None and self._keywords in self._fan_out.failed:
            self._keywords_stale = True
        if self._fan_out is not None and self._fan_out.kept is not None:
            chunks = list(self._fan_out.kept.values())  # an unlisted store: what sync saw
        else:
            chunks = list(scan_documents(store, namespace=self.namespace))
            self._follow_the_store(chunks)
        if self._keywords is not None and self._store_dir is not None and self._not_saved is None:
            with self._saving("the store is saved; its keyword index is rebuilt from it"):
                get_keyword_index_provider(self._config.keyword_index).save(
                    self._keywords,
                    self._store_dir,
                    namespace=self.namespace,
                    store_saved=saved,
                )
        self._extract_definitions(chunks)
        return saved

    def _follow_the_store(self, chunks: Sequence[Document]) -> None:
        """Re-index what another process changed in this corpus since the indexes were built.

        This process's sync keeps the exact index (and an in-memory keyword index) in step
        with its own writes. A file another process re-ingested meanwhile is unchanged here
        (its stored record matches the file), so nothing else would reach them: a long-lived
        tool kept finding a section that no longer exists. ``chunks`` are the corpus's chunks
        in the store now.
        """
        expected = dict(self._indexed)
        if self._fan_out is not None:
            for doc_id in self._fan_out.removed:
                expected.pop(doc_id, None)
            expected.update(self._fan_out.written)
        stored = chunk_hashes(chunks)
        keywords = self._keywords if isinstance(self._keywords, BM25KeywordIndex) else None
        in_memory = keywords is not None and not self._keywords_stale
        if stored != expected:
            logger.info(
                "%s: %d chunk(s) of this corpus changed in the store since its indexes were "
                "built (another process ingested it); re-indexing them.",
                self.name,
                len(set(stored.items()) ^ set(expected.items())),
            )
            self._exact.replace(chunks)
            if keywords is not None and in_memory:
                keywords.replace(chunks)
        self._indexed = stored
        if keywords is not None and in_memory and keywords.content_digest is None:
            # a write made it unknown; a known one still holds (any write resets it)
            keywords.content_digest = content_digest(stored)  # saved with it: checked on load

    def _extract_definitions(self, chunks: Sequence[Document]) -> None:
        from langchain_holodeck.definitions import DefinitionExtractor

        attributes = {"index.kind": "definitions", "index.provider": DefinitionExtractor.__name__}
        with span("holodeck.index_build", attributes) as current:
            # in place: a retriever taken before (kept in a chain) serves the new ones too
            self.definitions.replace(DefinitionExtractor().extract(chunks))
            current.set_attribute("index.document_count", len(chunks))
            current.set_attribute("index.term_count", len(self.definitions))

    def _open_indexes(self, store: VectorStore) -> int:
        """The keyword index (loaded or rebuilt in memory), exact index and definitions."""
        self._keyword_index(store)  # on a listable store: exact rebuilt, saved BM25 checked
        chunks = self._stored_chunks(store)
        self._extract_definitions(chunks)
        return len(chunks)

    def _build_retriever(self, store: VectorStore) -> BaseRetriever:
        from langchain_holodeck.retrievers.hybrid import HybridRetriever

        config = self._config
        view, search_kwargs = self._scoped(store)
        backend = self._backend or backend_for_store(store)
        self.search_strategy = tool_search_strategy(
            config, backend, store=view, backend_name=self.backend
        )
        retriever = HybridRetriever(
            vector_store=view,
            search_strategy=self.search_strategy,
            keyword_index=self._keywords,
            exact_index=self._exact,
            k=config.top_k,
            weights=(
                config.search_weights.semantic,
                config.search_weights.keyword,
                config.search_weights.exact,
            ),
            fetch_k=config.fetch_k,
            fusion=config.fusion,
            feedback_docs=config.feedback_docs,
            feedback_weight=config.feedback_weight,
            min_similarity_score=config.min_similarity_score,
            definitions=self.definitions,
            expand_hops=config.expand_hops,
            expand_direction=config.expand_direction,
            expand_limit=config.expand_limit,
            search_kwargs=search_kwargs,
            provider=self.backend,
        )
        return with_reranker(retriever, config)
