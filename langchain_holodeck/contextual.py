"""Contextual retrieval: an LLM writes a short context for each chunk before it is indexed."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForChainRun,
    CallbackManagerForChainRun,
)
from langchain_core.documents import Document
from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from langchain_core.runnables.config import ContextThreadPoolExecutor, patch_config
from langchain_core.stores import ByteStore, InMemoryByteStore
from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from langchain_holodeck._chunk import (
    CONTEXT,
    CONTEXT_CACHE_PREFIX,
    ORIGINAL_CONTENT,
    original_content,
    source_path,
)
from langchain_holodeck._deadline import call_with_deadline
from langchain_holodeck._defaults import (
    DEFAULT_CONTEXT_TIMEOUT,
    MAX_CONCURRENCY,
    MAX_CONTEXT_TOKENS,
    MAX_SECONDS,
)
from langchain_holodeck._fields import Float, Int
from langchain_holodeck._redact import model_secrets, scrub
from langchain_holodeck._tokens import count_tokens, get_encoding

__all__ = [
    "DEFAULT_PROMPT",
    "ContextualChunkEnricher",
    "CostEstimate",
    "EnrichmentResult",
    "EnrichmentStats",
]

logger = logging.getLogger(__name__)

DEFAULT_PROMPT = """<document>
{{WHOLE_DOCUMENT}}
</document>
Here is the chunk we want to situate within the whole document
<chunk>
{{CHUNK_CONTENT}}
</chunk>
Please give a short succinct context to situate this chunk within the overall document for \
the purposes of improving search retrieval of the chunk. Answer only with the succinct context \
and nothing else."""
"""Anthropic's published contextual-retrieval prompt; placeholders are filled by the enricher."""

_DOCUMENT_SLOT = "{{WHOLE_DOCUMENT}}"
_CHUNK_SLOT = "{{CHUNK_CONTENT}}"
_ELLIPSIS = "[…]"
_CONTEXT_TOKENS = 100
"""Default ``max_context_tokens``: part of a cache key and fingerprint only when changed."""
_DOCUMENT_TOKENS = 8000
"""Default ``max_document_tokens``."""
_SAMPLING = (
    "temperature",
    "top_p",
    "top_k",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "reasoning_effort",
)
"""Settings of a chat model (LangChain's names) that change what it writes, given the prompt."""


@dataclass(frozen=True)
class EnrichmentStats:
    """What one enrichment run did."""

    chunks: int
    """Chunks received."""
    contextualized: int
    """Chunks returned with a context (from the cache or a new LLM call)."""
    cached: int
    """Contexts taken from the cache (no LLM call)."""
    llm_calls: int
    """LLM calls made."""
    failed: int
    """Chunks left without context because their call failed, timed out or returned nothing."""
    timed_out: int
    """Of ``failed``, the calls that hit ``timeout``."""


@dataclass(frozen=True)
class EnrichmentResult:
    """The enriched chunks (input order) and the run's statistics."""

    chunks: list[Document]
    stats: EnrichmentStats


@dataclass(frozen=True)
class CostEstimate:
    """What enriching would cost: LLM calls not served by the cache, and their tokens."""

    calls: int
    """LLM calls needed (chunks whose context is not cached)."""
    input_tokens: int
    """Prompt tokens of those calls (``cl100k_base`` count; other tokenizers differ a little)."""
    output_tokens: int
    """Upper bound of generated tokens: ``calls * max_context_tokens``."""
    cached: int
    """Chunks whose context is already cached."""


@dataclass(frozen=True)
class _Job:
    position: int
    chunk: Document
    original: str
    prompt: str
    key: str


_original = original_content
_source = source_path


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _reason(answer: str | BaseException, secrets: Sequence[str]) -> str:
    if not isinstance(answer, BaseException):
        return "empty answer"
    first_line = (str(answer).splitlines() or [""])[0]
    first_line = scrub(first_line, secrets, max_chars=200)  # a server may repeat the key
    return f"{type(answer).__name__}: {first_line}" if first_line else type(answer).__name__


def _usable(answer: str | BaseException) -> str | BaseException:
    r"""The context an answer holds (stripped), or why it holds none.

    A lone surrogate (``"\ud800"`` in the answer's JSON, valid there) is no text a cache or a
    store can keep: the answer counts as failed, as an error does, and nothing of it is kept.
    """
    if isinstance(answer, BaseException):
        return answer
    text = answer.strip()
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return error
    return text


def _text_of(result: object) -> str:
    if isinstance(result, BaseMessage):
        return result.text
    return str(result)


class ContextualChunkEnricher(RunnableSerializable[list[Document], list[Document]]):
    r"""Prepend an LLM-written context to each chunk (Anthropic's "contextual retrieval").

    For each chunk the model sees the whole document (or, past ``max_document_tokens``, a
    window around the chunk) and writes a short context. Output chunks keep their ``id`` and
    metadata and get ``page_content = f"{context}\n\n{original}"`` plus metadata ``context``
    and ``original_content``; the original text is read from ``original_content`` when present,
    so enriching twice does not stack contexts.

    Calls run concurrently (at most ``concurrency`` at once): the sync API calls the model's
    ``invoke`` in worker threads, the async API its ``ainvoke`` (calls on one event loop share
    the limit). A call that fails, times out or
    returns nothing leaves its chunk unchanged, logs a WARNING and is counted in
    ``EnrichmentStats``; it never aborts the batch. Contexts are cached in ``cache`` by
    (model id, prompt, ``max_document_tokens``, ``max_context_tokens``, the model's sampling
    settings such as its ``temperature``, document hash, chunk hash), so re-running over
    unchanged documents makes no LLM call and changing what the model is asked, or how it
    writes, makes new contexts; pass a persistent ``ByteStore`` (``LocalFileStore``,
    ``RedisStore``) to keep them across processes.

    Where the whole document comes from:
        ``enrich(document, chunks)`` / ``aenrich``: the loaded document (the ingestion
        pipeline calls this right after splitting each file). ``invoke(chunks)``: chunks are
        grouped by ``source_path`` and each document is rebuilt by joining its chunks'
        original texts in ``chunk_index`` order (exact for ``StructuredMarkdownSplitter``,
        which loses nothing).

    Key init args:
        llm: Any LangChain chat model (or LLM).
        concurrency: Maximum simultaneous calls (at most 1024).
        max_context_tokens: Contexts are cut to this many tokens (at most 128000).
        max_document_tokens: Longer documents are replaced by a window around the chunk.
        cache: Where contexts are cached (default: a new ``InMemoryByteStore``).
        timeout: Seconds per call (``None``: no limit).

    Instantiate:
        ```python
        enricher = ContextualChunkEnricher(llm, concurrency=10)
        ```

    Invoke:
        ```python
        enricher.estimate_cost([document], chunks)  # -> CostEstimate(calls=18, ...)
        chunks = enricher.enrich(document, chunks)
        result = enricher.enrich_with_stats(document, chunks)  # .chunks, .stats
        ```
    """

    llm: BaseLanguageModel
    """The model that writes the contexts."""
    concurrency: Int = Field(default=10, gt=0, le=MAX_CONCURRENCY)
    """Maximum simultaneous LLM calls, at most 1024."""
    max_context_tokens: Int = Field(default=_CONTEXT_TOKENS, gt=0, le=MAX_CONTEXT_TOKENS)
    """Contexts longer than this (in ``cl100k_base`` tokens) are cut; at most 128000."""
    max_document_tokens: Int = Field(default=_DOCUMENT_TOKENS, gt=0)
    """Documents longer than this are replaced by a window of this size around the chunk."""
    prompt: str = DEFAULT_PROMPT
    """Prompt with ``{{WHOLE_DOCUMENT}}`` and ``{{CHUNK_CONTENT}}`` placeholders."""
    cache: ByteStore = Field(default_factory=InMemoryByteStore)
    """Context cache; ``None`` means a fresh ``InMemoryByteStore``."""
    timeout: Float | None = Field(
        default=DEFAULT_CONTEXT_TIMEOUT, gt=0, le=MAX_SECONDS, allow_inf_nan=False
    )
    """Seconds allowed per call; ``None`` for no limit."""
    model_id: str | None = None
    """Cache key part naming the model; default ``"{llm type}:{model name}"``."""
    show_progress: bool = False
    """Show a tqdm progress bar over the LLM calls."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    _slots_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _thread_slots: threading.BoundedSemaphore | None = PrivateAttr(default=None)
    _loop_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
        PrivateAttr(default_factory=weakref.WeakKeyDictionary)
    )

    def __init__(self, llm: BaseLanguageModel, **kwargs: Any) -> None:
        super().__init__(llm=llm, **kwargs)  # type: ignore[call-arg]  # llm is positional here

    @field_validator("cache", mode="before")
    @classmethod
    def _default_cache(cls, value: object) -> object:
        return InMemoryByteStore() if value is None else value

    @field_validator("prompt")
    @classmethod
    def _check_prompt(cls, value: str) -> str:
        missing = [slot for slot in (_DOCUMENT_SLOT, _CHUNK_SLOT) if slot not in value]
        if missing:
            msg = (
                f"prompt must contain {' and '.join(missing)}, got {value[:60]!r}...; "
                "see DEFAULT_PROMPT."
            )
            raise ValueError(msg)
        return value

    # --- public API ------------------------------------------------------------------------

    def invoke(
        self, input: list[Document], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        return self._call_with_config(self._invoke, input, config, **kwargs)

    async def ainvoke(
        self, input: list[Document], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        return await self._acall_with_config(self._ainvoke, input, config, **kwargs)

    def enrich(
        self,
        document: Document,
        chunks: Sequence[Document],
        *,
        config: RunnableConfig | None = None,
    ) -> list[Document]:
        """Enrich the chunks of one loaded ``document``; returns them in input order."""
        return self.enrich_with_stats(document, chunks, config=config).chunks

    async def aenrich(
        self,
        document: Document,
        chunks: Sequence[Document],
        *,
        config: RunnableConfig | None = None,
    ) -> list[Document]:
        """Async twin of ``enrich``."""
        return (await self.aenrich_with_stats(document, chunks, config=config)).chunks

    def enrich_with_stats(
        self,
        document: Document,
        chunks: Sequence[Document],
        *,
        config: RunnableConfig | None = None,
    ) -> EnrichmentResult:
        """Like ``enrich``, also returning the run's ``EnrichmentStats``."""
        return self._run_sync(
            self._jobs([(document.page_content, list(enumerate(chunks)))]), config
        )

    async def aenrich_with_stats(
        self,
        document: Document,
        chunks: Sequence[Document],
        *,
        config: RunnableConfig | None = None,
    ) -> EnrichmentResult:
        """Async twin of ``enrich_with_stats``."""
        return await self._arun(
            self._jobs([(document.page_content, list(enumerate(chunks)))]), config
        )

    def estimate_cost(
        self, documents: Sequence[Document], chunks: Sequence[Document]
    ) -> CostEstimate:
        """Estimate the LLM calls and tokens enriching ``chunks`` would take, without calling.

        Args:
            documents: The loaded documents, matched to chunks by ``source_path`` (chunks of
                other files use their rebuilt document, as ``invoke`` does).
            chunks: The chunks to enrich.

        Returns:
            The calls not served by the cache and their input/output tokens.
        """
        texts = {_source(doc): doc.page_content for doc in documents}
        jobs = self._jobs(self._group(chunks, texts))
        cached = self.cache.mget([job.key for job in jobs])
        todo = [job for job, hit in zip(jobs, cached, strict=True) if hit is None]
        return CostEstimate(
            calls=len(todo),
            input_tokens=sum(count_tokens(job.prompt) for job in todo),
            output_tokens=len(todo) * self.max_context_tokens,
            cached=len(jobs) - len(todo),
        )

    # --- shared steps ----------------------------------------------------------------------

    def _invoke(
        self,
        chunks: list[Document],
        run_manager: CallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> list[Document]:
        child = patch_config(config, callbacks=run_manager.get_child())
        return self._run_sync(self._jobs(self._group(chunks, {})), child).chunks

    async def _ainvoke(
        self,
        chunks: list[Document],
        run_manager: AsyncCallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> list[Document]:
        child = patch_config(config, callbacks=run_manager.get_child())
        return (await self._arun(self._jobs(self._group(chunks, {})), child)).chunks

    @staticmethod
    def _group(
        chunks: Sequence[Document], texts: Mapping[str, str]
    ) -> list[tuple[str, list[tuple[int, Document]]]]:
        """Pair chunks (with their input position) with their document text.

        The text comes from ``texts`` by ``source_path``, else is rebuilt from the chunks.
        """
        groups: dict[str, list[tuple[int, Document]]] = {}
        for position, chunk in enumerate(chunks):
            groups.setdefault(_source(chunk), []).append((position, chunk))
        pairs = []
        for source, members in groups.items():
            text = texts.get(source)
            if text is None:
                ordered = sorted(members, key=lambda m: int(m[1].metadata.get("chunk_index", 0)))
                text = "\n\n".join(_original(chunk) for _, chunk in ordered)
            pairs.append((text, members))
        return pairs

    def _jobs(self, pairs: Iterable[tuple[str, list[tuple[int, Document]]]]) -> list[_Job]:
        model = self.context_model_id
        prompt_hash = _sha256(self.prompt)
        # the default cap adds nothing: keys written before it was part of them stay valid
        cap: list[int | str] = (
            [] if self.max_context_tokens == _CONTEXT_TOKENS else [self.max_context_tokens]
        )
        sampling = self._sampling_id()  # nothing at the defaults either
        cap += [sampling] if sampling else []
        jobs: list[_Job] = []
        for document_text, chunks in pairs:
            doc_hash = _sha256(document_text)
            doc_tokens = count_tokens(document_text)
            for position, chunk in chunks:
                original = _original(chunk)
                context_doc = self._window(document_text, doc_tokens, original)
                prompt = self.prompt.replace(_DOCUMENT_SLOT, context_doc).replace(
                    _CHUNK_SLOT, original
                )
                key_parts = [model, prompt_hash, self.max_document_tokens, doc_hash]
                key = _sha256(json.dumps([*key_parts, _sha256(original), *cap]))
                jobs.append(_Job(position, chunk, original, prompt, f"{CONTEXT_CACHE_PREFIX}{key}"))
        return jobs

    @property
    def context_model_id(self) -> str:
        """``model_id``, else ``<llm type>:<model name>``.

        Part of the cache key and of ``context_settings_id``: another model, new contexts.
        """
        if self.model_id:
            return self.model_id
        llm_type = getattr(self.llm, "_llm_type", type(self.llm).__name__)
        name = getattr(self.llm, "model_name", None) or getattr(self.llm, "model", None)
        return f"{llm_type}:{name or ''}"

    def _sampling_id(self) -> str:
        """The context model's settings that change its contexts: ``""`` at their defaults.

        ``temperature``, ``top_p``, ``top_k``, ``seed``, ``frequency_penalty``,
        ``presence_penalty`` and ``reasoning_effort`` when set (a temperature of 0, the
        configuration's default, adds nothing), and the model's own cap on its answer
        (``max_tokens``) when below ``max_context_tokens``: above it, contexts are cut at
        ``max_context_tokens`` anyway. Where the model is served (``base_url``), its key and
        its timeouts change nothing it writes.
        """
        parts = []
        for name in _SAMPLING:
            value = getattr(self.llm, name, None)
            if value is None or isinstance(value, bool) or (name == "temperature" and value == 0):
                continue
            number = isinstance(value, (int, float))
            parts.append(f"{name}={float(value) if number else value}")  # 1 and 1.0 alike
        cap = getattr(self.llm, "max_tokens", None)
        if isinstance(cap, int) and not isinstance(cap, bool) and cap < self.max_context_tokens:
            parts.append(f"max_tokens={cap}")
        return ",".join(parts)

    @property
    def context_settings_id(self) -> str:
        """What the model is asked: ``context_model_id``, and the settings that change the ask.

        ``IngestionPipeline`` puts it in its fingerprint, so a file is enriched again (new
        contexts, where the cache has none for these settings) when the model, the
        ``prompt``, ``max_context_tokens``, ``max_document_tokens`` or one of the model's
        settings that change what it writes (its ``temperature``...: ``_sampling_id``)
        changes. A setting at its default adds nothing: a store ingested before these were
        part of it, with the defaults, is not redone.
        """
        parts = [self.context_model_id]
        sampling = self._sampling_id()
        if sampling:
            parts.append(sampling)
        if self.prompt != DEFAULT_PROMPT:
            parts.append(f"prompt={_sha256(self.prompt)[:16]}")
        if self.max_context_tokens != _CONTEXT_TOKENS:
            parts.append(f"max_context_tokens={self.max_context_tokens}")
        if self.max_document_tokens != _DOCUMENT_TOKENS:
            parts.append(f"max_document_tokens={self.max_document_tokens}")
        return "|".join(parts)

    def _window(self, document: str, doc_tokens: int, chunk: str) -> str:
        """The document, or a window of at most ``max_document_tokens`` around the chunk."""
        if doc_tokens <= self.max_document_tokens:
            return document
        where = document.find(chunk[:200])
        center = (where if where >= 0 else 0) + len(chunk) // 2
        budget = int(self.max_document_tokens * len(document) / max(doc_tokens, 1))
        while True:
            start = max(0, min(center - budget // 2, len(document) - budget))
            end = min(len(document), start + budget)
            window = document[start:end]
            window = (f"{_ELLIPSIS}\n" if start > 0 else "") + window
            window += f"\n{_ELLIPSIS}" if end < len(document) else ""
            if count_tokens(window) <= self.max_document_tokens or budget <= 1:
                return window
            budget = int(budget * 0.9)

    def _finish(
        self,
        jobs: list[_Job],
        cached: Sequence[bytes | None],
        results: Sequence[str | BaseException],
    ) -> tuple[EnrichmentResult, list[tuple[str, bytes]]]:
        """Apply contexts to chunks; ``results`` answers the jobs whose ``cached`` is None."""
        answers = iter(results)
        out: list[tuple[int, Document]] = []
        new_entries: list[tuple[str, bytes]] = []
        failed = timed_out = hits = 0
        for job, hit in zip(jobs, cached, strict=True):
            if hit is not None:
                hits += 1
                context = hit.decode("utf-8")
            else:
                answer = _usable(next(answers))
                if isinstance(answer, BaseException) or not answer:
                    failed += 1
                    timed_out += isinstance(answer, asyncio.TimeoutError | TimeoutError)
                    logger.warning(
                        "No context for chunk %s of %r (%s); it is indexed without one.",
                        job.chunk.metadata.get("chunk_index", job.position),
                        _source(job.chunk),
                        _reason(answer, model_secrets(self.llm)),
                    )
                    out.append((job.position, job.chunk))
                    continue
                context = self._truncate(answer)
                new_entries.append((job.key, context.encode("utf-8")))
            metadata = {**job.chunk.metadata, CONTEXT: context, ORIGINAL_CONTENT: job.original}
            update = {"page_content": f"{context}\n\n{job.original}", "metadata": metadata}
            out.append((job.position, job.chunk.model_copy(update=update)))
        calls = len(jobs) - hits
        stats = EnrichmentStats(
            chunks=len(jobs),
            contextualized=len(jobs) - failed,
            cached=hits,
            llm_calls=calls,
            failed=failed,
            timed_out=timed_out,
        )
        if failed:
            logger.warning("%d of %d chunks were left without context.", failed, len(jobs))
        ordered = [chunk for _, chunk in sorted(out, key=lambda item: item[0])]
        return EnrichmentResult(ordered, stats), new_entries

    def _truncate(self, context: str) -> str:
        tokens = get_encoding().encode_ordinary(context)
        if len(tokens) <= self.max_context_tokens:
            return context
        return get_encoding().decode(tokens[: self.max_context_tokens]).strip()

    # --- execution: the only sync/async difference -----------------------------------------

    def _run_sync(self, jobs: list[_Job], config: RunnableConfig | None) -> EnrichmentResult:
        cached = self.cache.mget([job.key for job in jobs]) if jobs else []
        prompts = [job.prompt for job, hit in zip(jobs, cached, strict=True) if hit is None]
        result, new_entries = self._finish(jobs, cached, self._call_all(prompts, config))
        if new_entries:
            self.cache.mset(new_entries)
        return result

    async def _arun(self, jobs: list[_Job], config: RunnableConfig | None) -> EnrichmentResult:
        cached = await self.cache.amget([job.key for job in jobs]) if jobs else []
        prompts = [job.prompt for job, hit in zip(jobs, cached, strict=True) if hit is None]
        results = await self._acall_all(prompts, config)
        result, new_entries = self._finish(jobs, cached, results)
        if new_entries:
            await self.cache.amset(new_entries)
        return result

    def _call_all(
        self, prompts: list[str], config: RunnableConfig | None
    ) -> list[str | BaseException]:
        """The model's sync ``invoke`` per prompt, in worker threads.

        No event loop of the enricher's own: a model's async client (langchain-openai shares
        one per base URL and timeout in the process) bound to such a loop broke the caller's
        later async calls. Calls from several threads at once (files enriched side by side)
        share one semaphore: at most ``concurrency`` calls waited for in all. A call past
        ``timeout`` is no longer waited for (``call_with_deadline``): its slot is freed, and
        the abandoned request ends at the model client's own timeout.
        """
        if not prompts:
            return []
        with self._slots_lock:
            if self._thread_slots is None:
                self._thread_slots = threading.BoundedSemaphore(self.concurrency)
            slots = self._thread_slots

        with _progress(len(prompts), show=self.show_progress) as tick:

            def call(prompt: str) -> str | BaseException:
                with slots:
                    try:
                        invoke = partial(self.llm.invoke, prompt, config=config)
                        what = "the context model's call"
                        return _text_of(call_with_deadline(invoke, self.timeout, what=what))
                    except Exception as error:  # the chunk is indexed without a context
                        return error
                    finally:
                        tick()

            workers = min(self.concurrency, len(prompts))
            with ContextThreadPoolExecutor(max_workers=workers) as pool:
                return list(pool.map(call, prompts))

    def _loop_semaphore(self) -> asyncio.Semaphore:
        """This event loop's semaphore: calls gathered or batched on it share ``concurrency``.

        One per loop (a semaphore belongs to the loop it first waits on), kept as long as the
        loop lives; a new one per call let N ``aenrich`` calls gathered run N times as many.
        """
        loop = asyncio.get_running_loop()
        with self._slots_lock:
            slots = self._loop_slots.get(loop)
            if slots is None:
                slots = self._loop_slots[loop] = asyncio.Semaphore(self.concurrency)
            return slots

    async def _acall_all(
        self, prompts: list[str], config: RunnableConfig | None
    ) -> list[str | BaseException]:
        if not prompts:
            return []
        semaphore = self._loop_semaphore()
        with _progress(len(prompts), show=self.show_progress) as tick:

            async def call(prompt: str) -> str:
                async with semaphore:
                    try:
                        pending = self.llm.ainvoke(prompt, config=config)
                        result = await asyncio.wait_for(pending, self.timeout)
                        return _text_of(result)
                    finally:
                        tick()

            return list(await asyncio.gather(*(call(p) for p in prompts), return_exceptions=True))


@contextmanager
def _progress(total: int, *, show: bool) -> Iterator[Callable[[], None]]:
    """A callable counting one finished call: a tqdm bar's step when ``show``, else nothing."""
    if not show:
        yield lambda: None
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc="contextualizing chunks", unit="chunk")
    try:
        yield lambda: bar.update(1)
    finally:
        bar.close()
