"""Embedding while files still load: the model's threads busy from the first files on.

Private to ``ingestion.py``. ``IngestionPipeline`` reads and splits the whole source before
``sync_documents`` plans and writes it; with a model in this process (``OnnxEmbeddings``,
``LocalEmbeddings``) its cores sat idle through the loading, converting and splitting, then
the loader's sat idle through the embedding. ``EmbedPrefetch`` takes each group of split
files as it comes, finds the texts a sync of them would embed (``sync.texts_to_embed``: the
chunks it would add, update or refresh, and their model windows, by the same plan) and
embeds them on two threads; sync then takes those vectors (``vectors``) instead of embedding
them again, waiting for a group still in progress.

Sync keeps every decision: what to write, in which order, what failed, what to delete. A
group whose plan or embedding fails is dropped (sync embeds its texts itself, and counts
what fails); past ``PREFETCH_CHUNKS`` chunks the rest is left to sync (memory stays bounded).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from langchain_holodeck._sync_write import embeds_ahead, sanitize_error
from langchain_holodeck.sync import SyncPlan, plan_files, texts_to_embed

logger = logging.getLogger("langchain_holodeck.sync")

PREFETCH_CHUNKS = 2048
"""Chunks embedded ahead of sync at most (0: none), with their model windows: their vectors
wait in memory for sync (~3 KB each at 384 dimensions; ~25 MB for 2,048 chunks of 512
tokens); sync embeds the rest as it writes."""
GROUP_CHUNKS = 64
"""Chunks (of whole files) planned and embedded together: the first ones reach the model
after a few files."""
THREADS = 2
"""Groups embedded at once: one group's tokenizing and caching overlaps the other's runs."""


class EmbedPrefetch:
    """Embeds what a sync of the chunks given will embed, while later files are loading.

    ``add`` takes the chunks of whole files (from the loading thread: the plan reads the
    store there, never beside sync); ``vectors`` gives sync what is embedded, waiting for the
    groups in progress; ``close`` drops what was not started.
    """

    def __init__(
        self,
        vector_store: VectorStore,
        embeddings: Embeddings,
        *,
        namespace: str,
        overwrite: bool,
        embedding_model: str | None,
        pipeline: str | None,
    ) -> None:
        self.store, self.embeddings = vector_store, embeddings
        self.namespace, self.overwrite = namespace, overwrite
        self.embedding_model, self.pipeline = embedding_model, pipeline
        self.pending: list[Document] = []
        self.planned = 0
        self.stopped = PREFETCH_CHUNKS <= 0
        self.groups: list[Future[dict[str, np.ndarray]]] = []
        self.ready: dict[str, np.ndarray] = {}
        self.lock = threading.Lock()
        self.pool = ThreadPoolExecutor(THREADS, thread_name_prefix="holodeck-prefetch")

    @classmethod
    def for_sync(
        cls,
        vector_store: VectorStore,
        *,
        namespace: str,
        overwrite: bool,
        embedding_model: str | None,
        pipeline: str | None,
    ) -> EmbedPrefetch | None:
        """One for a store whose sync embeds with a model in this process, else ``None``.

        An embeddings API is already kept busy by sync's requests in flight; a store that
        embeds inside ``add_documents`` takes no vectors.
        """
        embeddings = getattr(vector_store, "embeddings", None)
        if PREFETCH_CHUNKS <= 0 or embeddings is None or not embeds_ahead(vector_store):
            return None
        return cls(
            vector_store,
            embeddings,
            namespace=namespace,
            overwrite=overwrite,
            embedding_model=embedding_model,
            pipeline=pipeline,
        )

    def add(self, chunks: Sequence[Document]) -> None:
        """Take the chunks of one whole file; a full group is planned and sent to the model."""
        if self.stopped:
            return
        self.pending.extend(chunks)
        if len(self.pending) >= GROUP_CHUNKS:
            self.flush()

    def flush(self) -> None:
        """Plan and send what is pending (the last files: call once loading is done)."""
        group, self.pending = self.pending, []
        if self.stopped or not group:
            return
        try:
            plan = plan_files(
                group,
                self.store,
                namespace=self.namespace,
                overwrite=self.overwrite,
                embedding_model=self.embedding_model,
                pipeline=self.pipeline,
            )
        except Exception as error:  # sync meets (and reports) the same problem itself
            logger.debug("sync: not embedding ahead: %s", sanitize_error(error))
            self.stopped = True
            return
        chunks = len(plan.add) + len(plan.update) + len(plan.refresh)
        if not chunks:
            return
        self.planned += chunks
        self.stopped = self.planned >= PREFETCH_CHUNKS
        self.groups.append(self.pool.submit(self._embed, plan))

    def _embed(self, plan: SyncPlan) -> dict[str, np.ndarray]:
        texts = texts_to_embed(plan, self.embeddings)
        vectors = self.embeddings.embed_documents(texts)
        rows = np.asarray(vectors, dtype=np.float64)  # float64: the floats sync would get
        return dict(zip(texts, rows, strict=True))

    def vectors(self, texts: Sequence[str]) -> list[list[float] | None]:
        """The vector of each text embedded ahead (``None``: sync embeds it), in order.

        Waits for groups in progress, in the order they were sent, until every text is
        found or none is left; a group that failed gives nothing.
        """
        while True:
            with self.lock:
                found = [self.ready.get(text) for text in texts]
                if all(v is not None for v in found) or not self.groups:
                    return [None if v is None else v.tolist() for v in found]
                group = self.groups[0]
            try:
                vectors = group.result()
            except Exception as error:  # its texts go to sync, which counts what fails
                logger.debug("sync: embedding ahead failed: %s", sanitize_error(error))
                vectors = {}
            with self.lock:
                self.ready.update(vectors)
                if self.groups and self.groups[0] is group:
                    self.groups.pop(0)

    def close(self) -> None:
        """Drop the groups not started (an interrupted ingest returns now)."""
        self.stopped = True
        self.pool.shutdown(wait=False, cancel_futures=True)
