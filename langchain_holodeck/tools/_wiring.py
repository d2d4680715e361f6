"""What a document tool wires together: index fan-out, index rebuilds, reranker, chat model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore

from langchain_holodeck._chunk import chunk_hashes
from langchain_holodeck._tracing import span
from langchain_holodeck.config.models import HierarchicalDocumentToolConfig, VectorStoreToolConfig
from langchain_holodeck.contracts import KeywordIndex
from langchain_holodeck.errors import ConfigError
from langchain_holodeck.exact import ExactMatchIndex

if TYPE_CHECKING:
    from langchain_holodeck.sync import KeywordIndexLike

__all__ = ["IndexFanOut", "chat_model", "rebuild_index", "with_reranker"]


def with_reranker(
    retriever: BaseRetriever, config: VectorStoreToolConfig | HierarchicalDocumentToolConfig
) -> BaseRetriever:
    if not config.rerank or config.reranker is None:
        return retriever
    from langchain_holodeck.rerankers.cohere import RerankRetriever, create_reranker

    return RerankRetriever(
        retriever=retriever,
        reranker=create_reranker(
            config.reranker, use_contextualized=config.rerank_on == "contextualized"
        ),
        fetch_k=config.rerank_top_n or config.top_k * 3,
        k=config.top_k,
    )


def rebuild_index(
    kind: str, index: KeywordIndex | ExactMatchIndex, store: VectorStore, namespace: str
) -> int:
    """``index.rebuild_from_store`` inside a ``holodeck.index_build`` span."""
    attributes = {
        "index.kind": kind,
        "index.provider": type(index).__name__,
        "index.source": "store",
    }
    with span("holodeck.index_build", attributes) as current:
        count = index.rebuild_from_store(store, namespace=namespace)
        current.set_attribute("index.document_count", count)
        return count


class IndexFanOut:
    """Keeps several indexes in step with one sync; one failing index never starves the rest.

    The indexes that failed are listed in ``failed``; the first error is raised after every
    index had its turn (sync logs it). With ``keep``, ``kept`` holds the chunks synced (by id),
    for what is built from all chunks when the store cannot be listed (definitions).
    """

    def __init__(self, indexes: Sequence[KeywordIndexLike], *, keep: bool = False) -> None:
        self.indexes = indexes
        self.failed: list[KeywordIndexLike] = []
        self.kept: dict[str, Document] | None = {} if keep else None
        self.written: dict[str, str] = {}
        """``id -> content_hash`` of the chunks given to the indexes, in the order given."""
        self.removed: list[str] = []
        """The ids removed from the indexes (before the writes: sync deletes first)."""

    def upsert(self, documents: Sequence[Document]) -> None:
        if self.kept is not None:
            self.kept.update((doc.id, doc) for doc in documents if doc.id)
        self.written.update(chunk_hashes(documents))
        self._each(lambda index: index.upsert(documents))

    def delete(self, ids: Sequence[str]) -> None:
        if self.kept is not None:
            for doc_id in ids:
                self.kept.pop(doc_id, None)
        self.removed.extend(ids)
        self._each(lambda index: index.delete(ids))

    def _each(self, call: Callable[[KeywordIndexLike], None]) -> None:
        first: Exception | None = None
        for index in self.indexes:
            try:
                call(index)
            except Exception as error:  # raised below, after the other indexes
                self.failed.append(index)
                first = first or error
        if first is not None:
            raise first


def chat_model(config: HierarchicalDocumentToolConfig) -> BaseChatModel:
    """The chat model ``context_model`` names (``openai`` or ``anthropic``).

    It writes at most ``context_max_tokens`` per context (the model's own cap: a context is
    cut there anyway, so a longer answer would be paid for and thrown away).
    """
    spec = config.context_model
    if spec is None:
        msg = "contextual_embeddings is true but context_model is not set; set it or pass llm=."
        raise ValueError(msg)
    if spec.provider == "openai":
        try:
            import openai
            from langchain_openai import ChatOpenAI
        except ImportError as error:
            msg = 'context_model provider openai needs: pip install "langchain-holodeck[openai]"'
            raise ImportError(msg) from error
        try:
            return ChatOpenAI(
                model=spec.name,
                temperature=spec.temperature,
                api_key=spec.api_key,
                base_url=spec.base_url,
                max_completion_tokens=config.context_max_tokens,  # the alias of max_tokens
                # the client gives up too: a call past its deadline is abandoned by the
                # enricher but ran on (openai's default: 600 s), a request in flight beyond
                # context_concurrency
                timeout=config.context_timeout,
            )
        except openai.OpenAIError as error:  # no key given, none in the environment
            msg = (
                f"context_model {spec.name!r} uses OpenAI, which needs an API key; set "
                'context_model.api_key ("${OPENAI_API_KEY}") or the OPENAI_API_KEY '
                "environment variable."
            )
            raise ConfigError(msg) from error
    if spec.provider == "anthropic":
        try:
            from langchain_anthropic import ChatAnthropic  # type: ignore[import-not-found]
        except ImportError as error:
            msg = "context_model provider anthropic needs: pip install langchain-anthropic"
            raise ImportError(msg) from error
        return ChatAnthropic(
            model=spec.name,
            temperature=spec.temperature,
            api_key=spec.api_key,
            max_tokens=config.context_max_tokens,
            default_request_timeout=config.context_timeout,
        )
    msg = (
        f"context_model.provider must be 'openai' or 'anthropic', got {spec.provider!r}; "
        "or pass any chat model as llm=."
    )
    raise ValueError(msg)
