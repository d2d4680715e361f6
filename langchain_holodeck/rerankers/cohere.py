"""Rerankers: Cohere and vLLM document compressors that never fail the caller.

``create_reranker(config)`` builds a LangChain ``BaseDocumentCompressor``. Every reranker here
shares one private base that:

* reranks on the original chunk text (``metadata["original_content"]``) unless
  ``use_contextualized=True``;
* returns copies of the input documents that keep ``Document.id`` and all metadata, adding
  ``relevance_score`` and ``rerank_input_rank`` (the 1-based rank before reranking);
* on any failure — HTTP error, timeout, refused connection, malformed answer — logs ONE warning
  (provider and cause, secrets scrubbed) and returns the input order cut to ``top_n``;
* when the server ranks fewer documents than asked (a gateway applying its own threshold),
  returns its ranked ones first, then the others in the input order (no ``relevance_score``),
  so asking for ``k`` still gets ``min(k, candidates)``;
* opens a short circuit-breaker after ``failure_threshold`` consecutive failures, so a dead
  server costs nothing for ``cooldown`` seconds; then one trial call is let through.

``RerankRetriever`` composes any retriever with a reranker: fetch ``fetch_k`` candidates, rerank,
return ``k``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import logging
import os
import threading
from abc import abstractmethod
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, ClassVar, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    Callbacks,
)
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, PrivateAttr, SecretStr, field_validator

from langchain_holodeck._deadline import call_with_deadline
from langchain_holodeck._defaults import MAX_K, MAX_SECONDS, check_call_k
from langchain_holodeck._fields import Float, Int
from langchain_holodeck._masked_url import MaskedUrlStr
from langchain_holodeck._redact import MaskedUrl
from langchain_holodeck.rerankers.base import _describe, _MalformedRankingError, _RerankCompressor

if TYPE_CHECKING:
    import cohere

    from langchain_holodeck.config.models import CohereRerankerConfig, VLLMRerankerConfig

logger = logging.getLogger(__name__)

ApiVersion = Literal["v1", "v2"]
_COHERE_INSTALL_HINT = 'pip install "langchain-holodeck[cohere]"'
_CO_API_URL_ENV = "CO_API_URL"
"""The environment variable Cohere's client reads for its API root."""


def _import_cohere() -> None:
    if importlib.util.find_spec("cohere") is None:
        msg = f"This reranker needs the cohere package; install it with {_COHERE_INSTALL_HINT}."
        raise ImportError(msg)


def _is_missing_endpoint(exc: BaseException) -> bool:
    return getattr(exc, "status_code", None) in (404, 405)


def _other(version: ApiVersion) -> ApiVersion:
    return "v1" if version == "v2" else "v2"


def _server_message(response: object) -> str | None:
    """The message of an answer carrying an error instead of results, else None.

    ``{"error": {"message": ...}}`` (OpenAI-style gateways), ``{"error": "..."}``,
    ``{"message": ...}`` (Cohere's error body) or ``{"detail": ...}`` (FastAPI's).
    """
    said = getattr(response, "error", None)
    if isinstance(said, dict):
        said = said.get("message") or said
    for name in ("message", "detail"):
        said = said or getattr(response, name, None)
    return str(said) if said else None


def _result_pairs(response: object) -> list[tuple[object, object]]:
    results = getattr(response, "results", None)
    if not isinstance(results, list):
        said = _server_message(response)
        msg = f"the answer has no results list (got {type(results).__name__})"
        msg += f"; the server said: {said!r}" if said else ""
        raise _MalformedRankingError(msg)
    return [(getattr(r, "index", None), getattr(r, "relevance_score", None)) for r in results]


class _CohereAPIReranker(_RerankCompressor):
    """Talks Cohere's rerank API: ``/v2/rerank``, or ``/v1/rerank`` once on 404/405."""

    model: str = Field(default="rerank-v3.5", min_length=1)
    """Rerank model name, passed through to the server."""
    timeout: Float = Field(default=30.0, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    """Seconds one request may take in all (its whole answer, not each network read); the
    client's own retries are disabled, so this bounds a failure."""
    api_version: ApiVersion = "v2"
    """Endpoint tried first; the other is tried once on 404/405 and remembered if it works."""

    _api_version: ApiVersion = PrivateAttr(default="v2")
    _clients: dict[str, cohere.Client] = PrivateAttr(default_factory=dict)
    _aclients: dict[str, tuple[asyncio.AbstractEventLoop, cohere.AsyncClient]] = PrivateAttr(
        default_factory=dict
    )
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def model_post_init(self, context: object, /) -> None:
        _import_cohere()
        self._api_version = self.api_version

    def _describe(self, exc: BaseException) -> str:
        if isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__:
            return f"no answer within the {self.timeout:g} s timeout ({type(exc).__name__})"
        return _describe(exc)

    @property
    def active_api_version(self) -> ApiVersion:
        """The endpoint the next call tries first (the one that last worked)."""
        return self._api_version

    @abstractmethod
    def _base_url(self) -> str | None:
        """Server root (``None``: Cohere's API)."""

    @abstractmethod
    def _token(self) -> str:
        """Bearer token sent to the server."""

    def _client_kwargs(self) -> dict[str, object]:
        return {
            "api_key": self._token,  # a callable: the client never stores the plain key
            "base_url": self._base_url(),
            "timeout": self.timeout,
            "client_name": "langchain-holodeck",
            "log_warning_experimental_features": False,
        }

    def _client(self, version: ApiVersion) -> cohere.Client:
        with self._lock:
            if version not in self._clients:
                import cohere

                cls = cohere.ClientV2 if version == "v2" else cohere.Client
                self._clients[version] = cls(**self._client_kwargs())  # type: ignore[arg-type]  # kwargs typed loosely
            return self._clients[version]

    def _aclient(self, version: ApiVersion) -> cohere.AsyncClient:
        # An async HTTP pool belongs to one event loop: rebuild the client for a new loop.
        loop = asyncio.get_running_loop()
        with self._lock:
            cached = self._aclients.get(version)
            if cached is None or cached[0] is not loop:
                import cohere

                cls = cohere.AsyncClientV2 if version == "v2" else cohere.AsyncClient
                cached = (loop, cls(**self._client_kwargs()))  # type: ignore[arg-type]  # kwargs typed loosely
                self._aclients[version] = cached
            return cached[1]

    def _request(self, query: str, texts: list[str], top_n: int) -> dict[str, object]:
        return {
            "model": self.model,
            "query": query,
            "documents": texts,
            "top_n": top_n,
            # One attempt per call: the client's default retries would multiply the timeout.
            "request_options": {"max_retries": 0, "timeout_in_seconds": self.timeout},
        }

    def _post(self, version: ApiVersion, request: dict[str, object]) -> object:
        """One rerank request, its whole answer within ``timeout`` (``TimeoutError`` past it).

        The client's timeout bounds each network read: a server sending a byte every 0.1 s
        was waited for as long as it kept sending.
        """
        call = partial(self._client(version).rerank, **request)  # type: ignore[arg-type]  # kwargs typed loosely
        return call_with_deadline(call, self.timeout, what="the rerank request")

    async def _apost(self, version: ApiVersion, request: dict[str, object]) -> object:
        """Async twin of ``_post`` (the request is cancelled at ``timeout``)."""
        pending = self._aclient(version).rerank(**request)  # type: ignore[arg-type]
        return await asyncio.wait_for(pending, self.timeout)

    def _rank(self, query: str, texts: list[str], top_n: int) -> list[tuple[object, object]]:
        request = self._request(query, texts, top_n)
        version = self._api_version
        try:
            response = self._post(version, request)
        except Exception as exc:
            if not _is_missing_endpoint(exc):
                raise
            version = _other(version)
            response = self._post(version, request)
            self._remember(version)
        return _result_pairs(response)

    async def _arank(self, query: str, texts: list[str], top_n: int) -> list[tuple[object, object]]:
        request = self._request(query, texts, top_n)
        version = self._api_version
        try:
            response = await self._apost(version, request)
        except Exception as exc:
            if not _is_missing_endpoint(exc):
                raise
            version = _other(version)
            response = await self._apost(version, request)
            self._remember(version)
        return _result_pairs(response)

    def _remember(self, version: ApiVersion) -> None:
        logger.info(
            "%s rerank endpoint /%s/rerank is missing on this server; using /%s/rerank from now on",
            self._provider,
            _other(version),
            version,
        )
        self._api_version = version


class CohereReranker(_CohereAPIReranker):
    """Rerank with Cohere's hosted API, falling back to the retrieval order on any failure.

    Calls the ``cohere`` client directly rather than langchain-cohere's ``CohereRerank``, which
    drops ``Document.id``, has no async path, cannot disable the client's retries and only knows
    ``/v2/rerank``.

    Emits metadata: ``relevance_score`` (0..1), ``rerank_input_rank`` (1-based rank before).

    Setup:
        ```bash
        pip install "langchain-holodeck[cohere]"
        ```

    Key init args:
        api_key: Cohere API key (a secret: never logged, never in ``repr`` or warnings).
        model: Rerank model, default ``rerank-v3.5``.
        base_url: API root of a Cohere-compatible gateway; default ``CO_API_URL``, else Cohere.
        top_n: Documents to return; ``None`` keeps all, reordered.

    Instantiate:
        ```python
        reranker = CohereReranker(api_key=os.environ["COHERE_API_KEY"], top_n=4)
        ```

    Invoke:
        ```python
        reranker.compress_documents(docs, "how are shifts scheduled?")
        ```
    """

    api_key: SecretStr
    """Cohere API key."""
    base_url: MaskedUrlStr | None = None
    """Override Cohere's API root (a proxy or a Cohere-compatible server); ``None``: the
    ``CO_API_URL`` environment variable when set (read when the client is built), else
    Cohere's API."""

    _provider: ClassVar[str] = "cohere"

    def _base_url(self) -> str | None:
        # The cohere client reads CO_API_URL only as a default argument fixed at its import,
        # and an explicit base_url=None overrides it: read the variable here, at build time.
        return self.base_url or os.environ.get(_CO_API_URL_ENV) or None

    def _token(self) -> str:
        return self.api_key.get_secret_value()

    def _secrets(self) -> list[str]:
        return [self.api_key.get_secret_value()]


class VLLMReranker(_CohereAPIReranker):
    """Rerank with a model served by vLLM (or any Cohere-compatible rerank server).

    The Cohere client is pointed at ``url``; a trailing ``/v1`` or ``/v2`` is dropped, since the
    client adds the API version itself. Falls back to the retrieval order on any failure.

    Emits metadata: ``relevance_score``, ``rerank_input_rank`` (1-based rank before).

    Setup:
        ```bash
        pip install "langchain-holodeck[cohere]"
        vllm serve BAAI/bge-reranker-v2-m3 --task score
        ```

    Key init args:
        url: Server root, e.g. ``http://localhost:8000``.
        model: The served model name.
        timeout: Seconds per request (default 30).

    Instantiate:
        ```python
        reranker = VLLMReranker(url="http://localhost:8000", model="BAAI/bge-reranker-v2-m3")
        ```

    Invoke:
        ```python
        reranker.compress_documents(docs, "how are shifts scheduled?")
        ```
    """

    url: MaskedUrlStr
    """Root URL of the server (its password, if any, is ``***`` in ``repr``)."""
    model: str = Field(min_length=1)
    """Served model name."""
    api_key: SecretStr | None = None
    """Token if the server was started with ``--api-key``."""

    _provider: ClassVar[str] = "vllm"

    @field_validator("url")
    @classmethod
    def _check_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            msg = f"url must start with http:// or https://, got {url!r}."
            raise ValueError(msg)
        url = url.rstrip("/")
        for suffix in ("/v1", "/v2"):
            url = url.removesuffix(suffix)
        return MaskedUrl(url)

    def _base_url(self) -> str:
        return self.url

    def _token(self) -> str:
        return "EMPTY" if self.api_key is None else self.api_key.get_secret_value()

    def _secrets(self) -> list[str]:
        return [] if self.api_key is None else [self.api_key.get_secret_value()]


def create_reranker(
    config: CohereRerankerConfig | VLLMRerankerConfig,
    *,
    top_n: int | None = None,
    use_contextualized: bool = False,
) -> BaseDocumentCompressor:
    """Build the reranker a ``reranker`` config section describes.

    Dispatches on ``config.provider``, so any object with the same attributes works too.

    Args:
        config: A ``CohereRerankerConfig`` (``provider="cohere"``, ``api_key``, ``model``,
            ``base_url``, ``timeout``) or a
            ``VLLMRerankerConfig`` (``provider="vllm"``, ``url``, ``model``, ``timeout``).
        top_n: Documents to return; ``None`` (default) returns all, reordered, for
            ``RerankRetriever`` to cut to its ``k``.
        use_contextualized: Rerank on the contextualized ``page_content`` (the tool config's
            ``rerank_on: contextualized``).

    Returns:
        A ``BaseDocumentCompressor`` that falls back to the input order on failure.

    Raises:
        ValueError: When ``config.provider`` is not ``cohere`` or ``vllm``.
        ImportError: When the ``cohere`` package is not installed.
    """
    provider = getattr(config, "provider", None)
    if provider == "cohere":
        return CohereReranker(
            api_key=config.api_key,  # type: ignore[union-attr]  # provider selects the type
            model=config.model,
            base_url=getattr(config, "base_url", None),
            timeout=getattr(config, "timeout", 30.0),
            top_n=top_n,
            use_contextualized=use_contextualized,
        )
    if provider == "vllm":
        return VLLMReranker(
            url=str(config.url),  # type: ignore[union-attr]  # provider selects the type
            model=config.model,
            timeout=config.timeout,  # type: ignore[union-attr]
            top_n=top_n,
            use_contextualized=use_contextualized,
        )
    msg = f"reranker provider must be 'cohere' or 'vllm', got {provider!r}."
    raise ValueError(msg)


def _accepts_k(hook: Callable[..., object]) -> bool:
    """Whether a retriever's hook (``_get_relevant_documents`` or its async twin) takes ``k``."""
    parameters = inspect.signature(hook).parameters
    return "k" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


class RerankRetriever(BaseRetriever):
    """Fetch ``fetch_k`` candidates from ``retriever``, rerank them, return the best ``k``.

    The ``ContextualCompressionRetriever`` pattern without the ``langchain`` dependency; as a
    retriever it is a Runnable, so ``RerankRetriever(...) | format_docs`` works in LCEL. Asking
    for ``k`` results gets ``min(k, candidates)``: at least ``k`` candidates are fetched
    (``max(fetch_k, k)``), and a reranker whose ``top_n`` is below ``k`` (``CohereReranker``
    and ``VLLMReranker`` default to 3) is asked for ``k`` on that call (a copy with
    ``top_n=k``; its circuit-breaker and clients are shared).

    Key init args:
        retriever: Any retriever; gets ``k=fetch_k`` per call when its hook accepts ``k``.
        reranker: Any ``BaseDocumentCompressor``, e.g. from ``create_reranker``.

    Instantiate:
        ```python
        retriever = RerankRetriever(retriever=hybrid, reranker=reranker, k=4, fetch_k=12)
        ```

    Invoke:
        ```python
        retriever.invoke("how are shifts scheduled?", k=2)  # -> [Document(...), Document(...)]
        ```
    """

    retriever: BaseRetriever
    """First stage."""
    reranker: BaseDocumentCompressor
    """Second stage."""
    k: Int = Field(default=4, gt=0, le=MAX_K)
    """Documents returned (at most 1000, the most a call takes)."""
    fetch_k: Int | None = Field(default=None, gt=0, le=MAX_K)
    """Candidates fetched for reranking (at most 1000, the most a retriever's call takes);
    ``None`` means ``3 * k`` (at most 1000); never fewer than ``k``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def _check_k(self, k: int | None) -> int:
        """The per-call ``k`` (default ``self.k``), checked before it sizes the candidates."""
        return check_call_k(k, self.k)

    def _fetch_k(self, k: int) -> int:
        # the default never asks the first stage for more than MAX_K (HybridRetriever's limit)
        return max(self.fetch_k, k) if self.fetch_k is not None else min(3 * k, MAX_K)

    def _candidate_kwargs(self, k: int) -> dict[str, int]:
        accepts = _accepts_k(self.retriever._get_relevant_documents)
        return {"k": self._fetch_k(k)} if accepts else {}

    async def _acandidates(
        self, query: str, k: int, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        """The first stage's candidates on the async path, ``k=fetch_k`` where a hook takes it.

        ``ainvoke`` passes ``k`` to the async hook, whose default (``BaseRetriever``'s, a
        retriever implementing only ``_get_relevant_documents(..., k=4)``) takes none: such
        a retriever is invoked synchronously in an executor, so its hook still gets ``k``.
        """
        config: RunnableConfig = {"callbacks": run_manager.get_child()}
        if _accepts_k(self.retriever._aget_relevant_documents):
            return await self.retriever.ainvoke(query, config, k=self._fetch_k(k))
        if _accepts_k(self.retriever._get_relevant_documents):
            kwargs = {"k": self._fetch_k(k)}
            return await run_in_executor(None, self.retriever.invoke, query, config, **kwargs)
        return await self.retriever.ainvoke(query, config)

    def _rerank(
        self, candidates: list[Document], query: str, k: int, callbacks: Callbacks
    ) -> Sequence[Document]:
        """Rerank ``candidates``, letting at least ``k`` through whatever ``top_n`` says.

        Ours take ``at_least=k``; another compressor with a ``top_n`` below ``k``
        (langchain-cohere's ``CohereRerank``, ...) reranks as a copy with ``top_n=k``.
        """
        if isinstance(self.reranker, _RerankCompressor):
            return self.reranker.compress_documents(
                candidates, query, callbacks=callbacks, at_least=k
            )
        return self._copy_for(k).compress_documents(candidates, query, callbacks=callbacks)

    async def _arerank(
        self, candidates: list[Document], query: str, k: int, callbacks: Callbacks
    ) -> Sequence[Document]:
        if isinstance(self.reranker, _RerankCompressor):
            return await self.reranker.acompress_documents(
                candidates, query, callbacks=callbacks, at_least=k
            )
        return await self._copy_for(k).acompress_documents(candidates, query, callbacks=callbacks)

    def _copy_for(self, k: int) -> BaseDocumentCompressor:
        top_n = getattr(self.reranker, "top_n", None)
        if isinstance(top_n, int) and top_n < k:
            return self.reranker.model_copy(update={"top_n": k})
        return self.reranker

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        k = self._check_k(k)
        candidates = self.retriever.invoke(
            query, {"callbacks": run_manager.get_child()}, **self._candidate_kwargs(k)
        )
        ranked = self._rerank(candidates, query, k, run_manager.get_child())
        return list(ranked)[:k]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[Document]:
        k = self._check_k(k)
        candidates = await self._acandidates(query, k, run_manager)
        ranked = await self._arerank(candidates, query, k, run_manager.get_child())
        return list(ranked)[:k]
