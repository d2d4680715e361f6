"""The search defaults, in one home: the retriever and the configuration both read them.

Chosen on the tuning sets (SciFact train, code dev; ``benchmarks/bench_fusion_sweep.py``),
never on the test sets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

DEFAULT_STORE_DIR = Path(".holodeck") / "store"
"""Where corpora are saved by default (``load_tools``, ``holodeck-rag``): relative to the
project directory; one subdirectory per tool name. Never read as a source file."""

DEFAULT_FUSION: Literal["rrf", "convex"] = "convex"
"""The default fusion: the best mean nDCG@10 over the tuning sets, ahead of RRF at every
depth."""
DEFAULT_WEIGHTS: tuple[float, float, float] = (0.7, 0.3, 0.2)
"""Default (semantic, keyword, exact) weights: alpha = 0.7 won the same sweep."""
DEFAULT_FETCH_K = 300
"""Candidates per leg by default: the smallest depth within 0.001 nDCG@10 of the sweep's best
(quality stops improving there)."""
DEFAULT_PAIR_WEIGHT = 0.5
"""The in-memory BM25's weight of a query's adjacent-term pairs (``BM25KeywordIndex(pair_weight)``,
``keyword_index.pair_weight``): SciFact train, 0.25 to 0.75 all gained, 0.5 the most
(``docs/quality.md``)."""
MAX_K = 1000
"""Largest ``k`` per call of ``HybridRetriever`` and ``RerankRetriever``: a reranker's
candidate pool (``rerank_top_n`` goes up to 1000)."""


def check_call_k(k: object, default: int) -> int:
    """A retriever's per-call ``k``: ``default`` for ``None``, else an int from 1 to ``MAX_K``.

    Raises:
        ValueError: Naming the value as the caller gave it (a bool, a string, 0, 1001).
    """
    if k is None:
        return default
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        msg = f"k must be an integer between 1 and {MAX_K}, got {k!r}."
        raise ValueError(msg)
    return k


DEFAULT_FEEDBACK_DOCS = 3
"""Dense pseudo-relevance feedback: the best fused chunks the query vector moves toward (0:
off). Chosen on SciFact train (``benchmarks/bench_feedback.py``)."""
DEFAULT_FEEDBACK_WEIGHT = 0.75
"""How far it moves: ``unit(q + weight * mean(vectors))``; chosen with it."""
DEFAULT_TABLE_CHUNK_TOKENS = 200
"""Largest piece of a cut Markdown table, header included, in ``cl100k_base`` tokens
(``StructuredMarkdownSplitter(max_table_chunk_tokens=...)``): a piece with its header fits the
embedded model's 256 word pieces while the table runs under 1.27 word pieces a token (the
country table of ``benchmarks/bench_tables.py``: 1.09, at most 221 word pieces a piece)."""
DEFAULT_CONTEXT_TIMEOUT = 60.0
"""Seconds one contextual-enrichment request may take before its chunk is indexed without a
context (``ContextualChunkEnricher(timeout=...)``, the tool config's ``context_timeout``)."""
DEFAULT_EMBEDDING_TIMEOUT = 60.0
"""Seconds one request to an embeddings API (an OpenAI model ``resolve_embeddings`` builds) may
take: a server that accepts and never answers fails the request (sync retries it once, then
counts its batch and sends no other; a hybrid search serves keyword hits) instead of hanging
ingest and every search."""
DEFAULT_CHAT_TIMEOUT = 120.0
"""Seconds one request to the chat model of ``holodeck-rag chat`` may take (``model.timeout``):
a model server that accepts and never answers, or sends its answer a byte at a time, fails the
question (one ``error:`` line naming it; the session goes on) instead of hanging the session.
An agent's answer takes a few requests; a long one from a slow self-hosted model, well under
two minutes each."""
MAX_SECONDS = 7 * 24 * 3600
"""The longest timeout or time limit a setting takes: a week, in seconds (604800). A longer
wait overflows the platform's clock (``threading.TIMEOUT_MAX``, ``time_t``): ``1e12`` or
``inf`` failed every request, and stopped every conversion, with ``OverflowError``."""
MAX_CONCURRENCY = 1024
"""The most context requests a setting keeps in flight at once (``context_concurrency``,
``ContextualChunkEnricher(concurrency=...)``): each waits in a thread of its own, so a million
started a thread per chunk of a large file and sent them all at once, past any provider's rate
limit (each refused chunk is left without context); no API serves more from one client."""
MAX_CONTEXT_TOKENS = 128_000
"""The longest context a setting lets the model write, in tokens (``context_max_tokens``,
``ContextualChunkEnricher(max_context_tokens=...)``): the largest answer any chat model writes
(GPT-5's and Claude's output caps). The API refuses a cap past the model's own, so a larger
one left every chunk without context, one warning each; a context is short anyway."""
MAX_CACHE_TTL_DAYS = 36_500
"""The longest life of an embedding-cache entry, in days (``embedding_cache_ttl_days``,
``RedisByteStore(ttl=...)`` in seconds): a century, past any corpus. Redis refuses an
expiry past its clock's range (about 1e11 days), so ``1e12`` failed every cache write."""


def check_integer(name: str, value: object) -> None:
    """A whole-number setting (a batch size, a thread count) is an ``int``, not a bool.

    Raises:
        ValueError: Naming ``name`` and the value (``True`` would be taken as 1, ``2.5`` fails
            later in a ``range``).
    """
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be an integer, got {value!r}."
        raise ValueError(msg)


def check_real(name: str, value: object) -> None:
    """A numeric setting (a weight, a BM25 parameter) is an ``int`` or ``float``, not a bool.

    Raises:
        ValueError: Naming ``name`` and the value (``True`` would be taken as 1.0, ``"1.5"``
            failed a comparison with a ``TypeError``).
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        msg = f"{name} must be a number, got {value!r}."
        raise ValueError(msg)


def check_seconds(name: str, seconds: object) -> None:
    """A timeout or time limit: ``None`` (none) or a number of seconds, > 0, at most a week.

    Raises:
        TypeError: When ``seconds`` is not a number (a bool is not).
        ValueError: When it is not finite, not > 0, or past ``MAX_SECONDS``, naming ``name``.
    """
    if seconds is None:
        return
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        msg = f"{name} must be a number of seconds or None, got {seconds!r}."
        raise TypeError(msg)
    if not 0 < seconds <= MAX_SECONDS:  # NaN compares false: refused too
        msg = (
            f"{name} must be > 0 and at most {MAX_SECONDS} seconds (a week), or None for no "
            f"limit, got {seconds!r}."
        )
        raise ValueError(msg)
