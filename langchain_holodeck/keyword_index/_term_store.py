"""The term ids of every document of ``BM25KeywordIndex``, in one flat array.

One numpy array per document costs a 112-byte header on top of its data, and its term ids
fit in 16 bits while the vocabulary has at most 65,536 terms: here all documents share one
flat ``uint16`` array (``int32`` once the vocabulary outgrows it), and each document is a
*slot*: a start and a length. Ids map to slots in a dict that keeps the insertion order of
the ids (an upserted id keeps its place, as a dict key does), which is the row order of the
index's full builds.

Replacing or deleting a document leaves its old slot dead until ``compact`` rewrites the
array; after a compaction slot ``i`` is the ``i``-th id in that order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

_NARROW_MAX = np.iinfo(np.uint16).max
_MIN_CAPACITY = 1024


def _grown(array: np.ndarray, needed: int) -> np.ndarray:
    """``array`` with room for ``needed`` items (capacity doubles; the tail stays unwritten).

    Unwritten capacity of a large numpy allocation is not resident memory: the pages are
    mapped on first write, so doubling costs address space, not RAM.
    """
    if needed <= len(array):
        return array
    capacity = max(_MIN_CAPACITY, len(array))
    while capacity < needed:
        capacity *= 2
    out = np.empty(capacity, dtype=array.dtype)
    out[: len(array)] = array
    return out


class TermStore:
    """Term ids per document id, packed (see the module docstring). Not thread-safe."""

    def __init__(self) -> None:
        self.slots: dict[str, int] = {}
        """Live id -> slot, in the ids' insertion order."""
        self._flat = np.zeros(0, dtype=np.uint16)
        self._used = 0  # items of _flat written
        self._start = np.zeros(0, dtype=np.int64)
        self._length = np.zeros(0, dtype=np.int64)
        self._n_slots = 0  # slots made since the last compaction or load (dead ones included)

    def __len__(self) -> int:
        return len(self.slots)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self.slots

    @property
    def compact_order(self) -> bool:
        """Whether slot ``i`` is the ``i``-th live id (no dead slot since the last compaction)."""
        return self._n_slots == len(self.slots)

    def put(self, ids: Sequence[str], arrays: Sequence[np.ndarray]) -> list[int | None]:
        """Store ``arrays[i]`` as the terms of ``ids[i]``; return each id's previous slot."""
        lengths = np.fromiter((len(a) for a in arrays), dtype=np.int64, count=len(arrays))
        flat = np.concatenate(arrays) if len(arrays) else np.zeros(0, dtype=np.int32)
        if self._flat.dtype == np.uint16 and len(flat) and int(flat.max()) > _NARROW_MAX:
            self._flat = self._flat.astype(np.int32)  # the vocabulary outgrew 16 bits: once
        self._flat = _grown(self._flat, self._used + len(flat))
        self._flat[self._used : self._used + len(flat)] = flat
        first = self._n_slots
        self._start = _grown(self._start, first + len(ids))
        self._length = _grown(self._length, first + len(ids))
        starts = self._used + np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        self._start[first : first + len(ids)] = starts[: len(ids)]
        self._length[first : first + len(ids)] = lengths
        self._used += len(flat)
        self._n_slots += len(ids)
        old: list[int | None] = []
        for n, doc_id in enumerate(ids):
            old.append(self.slots.get(doc_id))
            self.slots[doc_id] = first + n
        return old

    def pop(self, doc_id: str) -> int | None:
        """Forget ``doc_id``; return its slot (``None`` when unknown)."""
        return self.slots.pop(doc_id, None)

    def clear(self) -> None:
        self.load([], np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64))

    def terms(self, doc_id: str) -> np.ndarray:
        """The term ids of a live document (a read-only view)."""
        slot = self.slots[doc_id]
        start = int(self._start[slot])
        view = self._flat[start : start + int(self._length[slot])]
        view.flags.writeable = False
        return view

    def gather(self, slots: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The terms of a few live ``slots`` back to back, and their lengths (a search's).

        One slice per slot: for a search's hundred candidates cheaper than ``_gather``'s index
        arithmetic, which pays for itself on whole corpora.
        """
        starts, lengths = self._start[slots], self._length[slots]
        flat = self._flat
        parts = [flat[s : s + n] for s, n in zip(starts.tolist(), lengths.tolist(), strict=True)]
        return (np.concatenate(parts) if parts else flat[:0]), lengths

    def _gather(self, slots: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
        """The terms of ``slots`` back to back (as ``dtype``), and their lengths."""
        lengths = self._length[slots]
        out = np.empty(int(lengths.sum()), dtype=dtype)
        pos = 0
        for chunk in np.array_split(slots, max(1, len(slots) // 65_536)):
            n = self._length[chunk]
            if not n.sum():
                continue
            # index of every term: its slot's start plus its place within the slot
            shift = self._start[chunk] - np.concatenate([[0], np.cumsum(n)[:-1]])
            index = np.repeat(shift, n) + np.arange(int(n.sum()), dtype=np.int64)
            out[pos : pos + len(index)] = self._flat[index]
            pos += len(index)
        return out, lengths

    def compact(self) -> None:
        """Rewrite the array so that slot ``i`` is the ``i``-th live id, with no dead terms."""
        if self.compact_order:
            return
        slots = np.fromiter(self.slots.values(), dtype=np.int64, count=len(self.slots))
        flat, lengths = self._gather(slots, self._flat.dtype)
        ids = list(self.slots)
        del slots
        self.load(ids, flat, lengths)

    def packed(self) -> tuple[np.ndarray, np.ndarray]:
        """``(flat, offsets)`` of the live ids in order: id ``i`` is ``flat[o[i]:o[i+1]]``.

        Only valid in ``compact_order`` (call ``compact`` first); the arrays are views.
        """
        if not self.compact_order:  # pragma: no cover - callers compact first
            msg = "TermStore.packed() needs compact order; call compact() first."
            raise RuntimeError(msg)
        offsets = np.zeros(self._n_slots + 1, dtype=np.int64)
        np.cumsum(self._length[: self._n_slots], out=offsets[1:])
        return self._flat[: self._used], offsets

    def export(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """``(ids, flat int32 terms, lengths)`` of the live ids in order (a copy; no compaction)."""
        slots = np.fromiter(self.slots.values(), dtype=np.int64, count=len(self.slots))
        flat, lengths = self._gather(slots, np.dtype(np.int32))
        return list(self.slots), flat, lengths

    def load(self, ids: Sequence[str], flat: np.ndarray, lengths: np.ndarray) -> None:
        """Replace the content with ``(ids, flat, lengths)`` in order; an id twice: last wins."""
        narrow = not len(flat) or int(flat.max()) <= _NARROW_MAX
        self._flat = flat.astype(np.uint16 if narrow else np.int32, copy=False)
        self._used = len(flat)
        self._length = np.asarray(lengths, dtype=np.int64).copy()
        self._start = np.concatenate([[0], np.cumsum(self._length)[:-1]]).astype(np.int64)
        self._start = self._start[: len(ids)]
        self._n_slots = len(ids)
        self.slots = {doc_id: n for n, doc_id in enumerate(ids)}

    def items(self) -> Iterator[tuple[str, np.ndarray]]:
        """``(id, terms)`` of every live document, in order."""
        for doc_id in self.slots:
            yield doc_id, self.terms(doc_id)
