"""Quantized candidate search for ``MatrixVectorStore``: 4-bit product-quantization fast scan.

Rows of the store's float32 matrix are encoded with faiss's ``IndexPQFastScan`` (one 4-bit
code per pair of dimensions: 48 bytes per 384-dim vector, 1/8 of the float32 row). A query
scans the codes (SIMD lookup tables), keeps the best ``candidates`` rows and the store
re-scores those exactly against its float32 rows, so returned scores are exact cosines.

Layout: immutable *segments* of codes over consecutive row ranges, plus an exact *tail* (the
rows written since the last segment was sealed). A faiss index is never mutated once it is
in a published segment, so queries run without locks while writers add rows; the tail is
sealed into a new segment (encoded with the same trained codebook) once it reaches
``TAIL_ROWS``. Deleted rows stay in their segment and are skipped through the store's
``alive`` mask; compaction re-encodes everything.

Why product quantization and not a graph (HNSW): measured on the benchmark corpus (random
unit 384-dim vectors, which have no low-dimensional structure), usearch HNSW reached
recall@10 0.54 at ``expansion_search=800``, while this scan with 1,000 re-scored candidates
keeps recall@10 at 1.0 (``benchmarks/bench_dense_index.py``).
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

SAMPLE_ROWS = 65_536
"""Rows sampled to train the codebook (k-means per subspace)."""
TAIL_ROWS = 16_384
"""Rows past the last segment that are scanned exactly before they are sealed."""
MIN_ROWS = 4_096
"""Fewest rows a codebook is trained on (16 centroids per subspace need the points)."""


_THREADS = threading.Lock()


@contextlib.contextmanager
def _one_thread(faiss: Any) -> Iterator[None]:
    """Run faiss single-threaded (restored after).

    The work here is small per call (k-means on 2-dim subspaces, one query), so OpenMP
    threads only add overhead; on a loaded machine their spin-waits made training 70x slower
    (21 s instead of 0.3 s for 6,000 rows, measured).
    """
    with _THREADS:
        before = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            yield
        finally:
            faiss.omp_set_num_threads(before)


def faiss_available() -> bool:
    """Whether ``faiss`` (``pip install faiss-cpu``) can be imported."""
    try:
        import_faiss()
    except ImportError:
        return False
    return True


def import_faiss() -> Any:
    """The ``faiss`` module, or an ``ImportError`` that says how to install it."""
    try:
        import faiss
    except ImportError as e:
        msg = (
            "search_mode='quantized' needs faiss: pip install \"langchain-holodeck[faiss]\" "
            "(or faiss-cpu), or use search_mode='exact'."
        )
        raise ImportError(msg) from e
    return faiss


@dataclass(frozen=True)
class Segment:
    """Codes of rows ``start .. stop - 1``; ``index`` is never mutated after construction."""

    start: int
    stop: int
    index: Any  # faiss.IndexPQFastScan


@dataclass(frozen=True)
class QuantizedIndex:
    """A trained codebook and the segments encoded with it (an immutable value)."""

    codebook: Any  # a trained, empty faiss.IndexPQFastScan: cloned for every segment
    segments: tuple[Segment, ...]

    @property
    def sealed(self) -> int:
        """First row not covered by a segment (the start of the exact tail)."""
        return self.segments[-1].stop if self.segments else 0


def train(vectors: npt.NDArray[np.float32]) -> Any:
    """Train a codebook on a sample of ``vectors`` (normalized rows); returns an empty index."""
    faiss = import_faiss()
    n, dim = vectors.shape
    subspaces = dim // 2 if dim % 2 == 0 else dim
    codebook = faiss.IndexPQFastScan(dim, subspaces, 4, faiss.METRIC_INNER_PRODUCT)
    if n > SAMPLE_ROWS:
        rows = np.sort(np.random.default_rng(0).choice(n, SAMPLE_ROWS, replace=False))
        sample = vectors[rows]
    else:
        sample = np.ascontiguousarray(vectors)
    with _one_thread(faiss):
        codebook.train(sample)
    return codebook


def from_codebook_bytes(data: bytes) -> Any:
    """A codebook saved with :func:`codebook_bytes`."""
    faiss = import_faiss()
    return faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))


def codebook_bytes(codebook: Any) -> bytes:
    """Serialize a codebook (faiss's own format: no pickle)."""
    faiss = import_faiss()
    return bytes(faiss.serialize_index(codebook))


def encode(codebook: Any, buffer: npt.NDArray[np.float32], start: int, stop: int) -> Segment:
    """A new segment holding the codes of ``buffer[start:stop]``."""
    faiss = import_faiss()
    index = faiss.clone_index(codebook)
    index.reset()
    if stop > start:
        with _one_thread(faiss):
            index.add(np.ascontiguousarray(buffer[start:stop]))
    return Segment(start, stop, index)


def build(codebook: Any, buffer: npt.NDArray[np.float32], size: int) -> QuantizedIndex:
    """Encode rows ``0 .. size - 1`` as one segment (the tail starts empty)."""
    return QuantizedIndex(codebook, (encode(codebook, buffer, 0, size),) if size else ())


def extend(index: QuantizedIndex, buffer: npt.NDArray[np.float32], size: int) -> QuantizedIndex:
    """Seal the tail into a new segment once it holds ``TAIL_ROWS`` rows."""
    if size - index.sealed < TAIL_ROWS:
        return index
    return QuantizedIndex(
        index.codebook, (*index.segments, encode(index.codebook, buffer, index.sealed, size))
    )


def candidate_rows(
    index: QuantizedIndex,
    query: npt.NDArray[np.float32],
    candidates: int,
    alive: npt.NDArray[np.bool_] | None,
    *,
    min_per_segment: int,
) -> npt.NDArray[np.int64]:
    """Live rows whose codes score best for ``query``: about ``candidates`` in all.

    Each segment contributes in proportion to its rows (at least ``min_per_segment``), and
    over-fetches in proportion to its deleted rows. The result is sorted by row.
    """
    q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
    found: list[npt.NDArray[np.int64]] = []
    coded = index.sealed
    for seg in index.segments:
        n = seg.stop - seg.start
        if n == 0:
            continue
        live = n if alive is None else int(np.count_nonzero(alive[seg.start : seg.stop]))
        if live == 0:
            continue
        # a segment's share of the candidates follows its share of the rows
        share = max(math.ceil(candidates * n / coded), min_per_segment)
        want = min(n, math.ceil(share * n / live))
        _, ids = seg.index.search(q, want)
        rows = ids[0][ids[0] >= 0].astype(np.int64) + seg.start
        if alive is not None:
            rows = rows[alive[rows]]
        found.append(rows)
    if not found:
        return np.zeros(0, dtype=np.int64)
    out = np.concatenate(found)
    out.sort()
    return out
