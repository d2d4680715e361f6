"""In-memory BM25: sparse score matrices and the incremental ``BM25KeywordIndex``.

Terms come from ``keyword_index.tokenizer.Tokenizer`` (re-exported here).
"""

from __future__ import annotations

import json
import logging
import math
import threading
import zipfile
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from langchain_holodeck._chunk import (
    CHUNK_TYPE,
    CODE_CHUNK_TYPE,
    SYMBOLS,
    chunk_hashes,
    content_digest,
)
from langchain_holodeck._defaults import DEFAULT_PAIR_WEIGHT, check_real
from langchain_holodeck._persist import (
    atomic_write,
    atomic_write_bytes,
    directory_lock,
    generation_name,
    remove_other_generations,
    remove_stale_temporaries,
)
from langchain_holodeck.contracts import RankedIds
from langchain_holodeck.keyword_index._pairs import PAIR_DEPTH, pair_bonus, query_pairs
from langchain_holodeck.keyword_index._score_matrix import (
    SCORE_ALL_BELOW,
    ScoreMatrix,
    build_matrix,
    no_hits,
    packed,
    top_k,
)
from langchain_holodeck.keyword_index._term_store import TermStore
from langchain_holodeck.keyword_index.base import KeywordHit, check_ids, check_k, scan_store
from langchain_holodeck.keyword_index.tokenizer import IdentifierPolicy, Tokenizer

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.vectorstores import VectorStore

__all__ = ["BM25KeywordIndex", "Tokenizer"]

logger = logging.getLogger(__name__)

NAME_REPEATS = 2
"""Extra times a code chunk's defined names (``symbols``) are counted. Chosen on the code set's
dev split (``docs/quality.md``): 1 to 3 extra gave the same fused Pass@10 there, 2 the middle."""
_FORMAT = "holodeck-bm25/1"
_META_FILE = "bm25_index.json"
_TOKENS_FILE = "bm25_tokens.npz"


@dataclass(frozen=True)
class _Snapshot:
    """An immutable searchable state: a main segment, a small delta segment, tombstones."""

    main_ids: list[str]
    main: ScoreMatrix | None
    live: np.ndarray | None  # float32 0/1 per main row; None = all live
    delta_ids: list[str]
    delta: ScoreMatrix | None


class BM25KeywordIndex:
    """In-memory BM25 keyword index over chunk Documents, updated incrementally.

    Indexes ``Document.page_content`` (the contextualized text when present) under
    ``Document.id``. The text itself is not kept: only each chunk's term ids, all chunks'
    in one flat 16-bit array (32-bit once the vocabulary passes 65,536 terms).

    Engines:
        ``"bm25s"`` (default): bm25s's eager sparse score-matrix layout and Lucene formula
        (``k1``/``b``), implemented here with numpy (the bm25s package itself supplies only the
        English stop words); a query sums a few matrix columns. ``"rank_bm25"``:
        ``rank_bm25.BM25Okapi`` (k1=1.5, b=0.75), rebuilt on the next search after any change.

    Top k (``bm25s``): with ``scoring="maxscore"`` a query does not score every posting of
    its terms: MaxScore pruning with per-term upper bounds reads the rare terms' columns
    whole and only probes the long columns of frequent terms for the surviving candidates
    (binary search). The top ``k`` is identical to scoring every posting
    (``scoring="exhaustive"``): same ids, same order, bit-identical scores.

    Incremental updates (``bm25s``): documents upserted after the last full build live in a
    small *delta* segment scored with the main segment's statistics (idf, average length),
    and replaced or deleted rows of the main segment are masked (tombstones) — as Lucene does
    with segments. The next search after a change rebuilds only the delta, unless the changes
    exceed ``max_delta_ratio`` of the corpus: then everything is rebuilt once (at 100k chunks
    of ~120 words a full build takes about a second; a delta of 1% a few milliseconds).
    Scores between two full builds are therefore close to, not bit-identical with, a fresh
    index's.

    Adjacent-term pairs (``pair_weight``): the best ``PAIR_DEPTH`` candidates (100) are
    re-scored, each gaining ``pair_weight`` times the BM25 of the query's pairs of consecutive
    terms it holds side by side (stop words dropped first; ``keyword_index/_pairs.py``). Code
    chunks (``chunk_type: code``) gain nothing: on the code dev split the pairs cost Pass@10,
    on prose they lift the fused ranking (``docs/quality.md``). ``pair_weight=0`` turns it off.

    Key init args:
        stopwords: ``"english"`` (bm25s's list), a collection of words, or ``None``.
        stemmer: A Snowball language for PyStemmer (``"english"``) or ``None``.
        scoring: ``"maxscore"`` (default) or ``"exhaustive"``; both give the same top k.
        pair_weight: The weight of a pair's BM25 beside its terms' (0.5); ``0``
            ranks by the terms alone.

    Instantiate:
        ```python
        index = BM25KeywordIndex()
        index.upsert(chunks)  # Documents with ids
        index.search("arch controls", k=5)  # -> [KeywordHit(id='…', score=3.1), ...]
        ```

    Persist:
        ```python
        index.save("store_dir")
        index = BM25KeywordIndex.load("store_dir")
        ```
    """

    in_process: ClassVar[bool] = True
    """Searches run in this process, holding the GIL (no I/O): callers need no thread."""

    def __init__(
        self,
        *,
        engine: Literal["bm25s", "rank_bm25"] = "bm25s",
        k1: float = 1.5,
        b: float = 0.75,
        stopwords: str | Collection[str] | None = "english",
        stemmer: str | None = "english",
        max_delta_ratio: float = 0.1,
        scoring: Literal["maxscore", "exhaustive"] = "maxscore",
        identifiers: IdentifierPolicy = "everywhere",
        pair_weight: float = DEFAULT_PAIR_WEIGHT,
    ) -> None:
        if identifiers not in ("code", "everywhere"):
            msg = f"identifiers must be 'code' or 'everywhere', got {identifiers!r}."
            raise ValueError(msg)
        if scoring not in ("maxscore", "exhaustive"):
            msg = f"scoring must be 'maxscore' or 'exhaustive', got {scoring!r}."
            raise ValueError(msg)
        if engine not in ("bm25s", "rank_bm25"):
            msg = f"engine must be 'bm25s' or 'rank_bm25', got {engine!r}."
            raise ValueError(msg)
        for name, value in (
            ("k1", k1),
            ("b", b),
            ("max_delta_ratio", max_delta_ratio),
            ("pair_weight", pair_weight),
        ):
            check_real(name, value)
        if not (math.isfinite(k1) and k1 >= 0):
            msg = f"k1 must be a finite number >= 0, got {k1!r}."
            raise ValueError(msg)
        if not (math.isfinite(pair_weight) and pair_weight >= 0):
            msg = f"pair_weight must be a finite number >= 0, got {pair_weight!r}."
            raise ValueError(msg)
        if not 0 <= b <= 1:
            msg = f"b must be between 0 and 1, got {b!r}."
            raise ValueError(msg)
        if not 0 <= max_delta_ratio <= 1:
            msg = f"max_delta_ratio must be between 0 and 1, got {max_delta_ratio!r}."
            raise ValueError(msg)
        if engine == "rank_bm25":
            _import_rank_bm25()
        self.engine = engine
        self.k1, self.b = k1, b
        self.max_delta_ratio = max_delta_ratio
        self.scoring = scoring
        """``"maxscore"`` (prune with per-term bounds) or ``"exhaustive"`` (score all)."""
        self.identifiers: IdentifierPolicy = identifiers
        """``"code"``: only code chunks' identifiers are split; ``"everywhere"``: all chunks'."""
        self.pair_weight = pair_weight
        """The weight of adjacent-term pairs (see the class docstring); ``0``: none."""
        self.tokenizer = Tokenizer(stopwords=stopwords, stemmer=stemmer)
        self._code: set[str] = set()  # ids of code chunks: they gain no pair bonus
        self.chunk_types_known = True
        """Whether the code chunks are known; ``False`` for a save made before they were
        recorded, where pairs lift code chunks too (the tool rebuilds such a save)."""
        self._tokens = TermStore()  # live documents: id -> term ids, in one flat array
        self._lock = threading.RLock()
        self._snapshot: _Snapshot | None = None
        self._stale = True  # _snapshot does not reflect _tokens
        self._main_ids: list[str] = []
        # after a full build the term store is compacted: slot i is main row i, and slots
        # made later (delta documents) are >= len(_main_ids)
        self._main: ScoreMatrix | None = None
        self._main_stats: tuple[np.ndarray, int, float] | None = None
        self._tombstones: set[int] = set()
        self._delta: set[str] = set()  # ids upserted since the last full build
        self._okapi: Any = None
        self.full_builds = 0
        """How many times the whole index was rebuilt (observability, tests)."""
        self.origin: str | None = None
        """What the index was built from, as its owner names it (a store's identity); saved
        and loaded with the index, so a save made over another store can be told apart."""
        self._content_digest: str | None = None
        self._writes = 0  # changes of content so far
        self._saved_writes: int | None = None  # _writes when last saved or loaded
        self._score_all_below = SCORE_ALL_BELOW  # tests set 0 to exercise MaxScore

    def __len__(self) -> int:
        return len(self._tokens)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._tokens

    @property
    def unsaved(self) -> bool:
        """Whether the content changed since the index was last saved or loaded (or neither)."""
        return self._writes != self._saved_writes

    @property
    def content_digest(self) -> str | None:
        """``content_digest`` of the ``id -> content_hash`` pairs indexed, when known.

        Set by a rebuild from a store, and by an owner that checked the index against one;
        any other write makes it unknown (``None``). Saved and loaded with the index, so a
        save behind the store's texts (another process re-ingested a file, same ids) can be
        told apart.
        """
        return self._content_digest

    @content_digest.setter
    def content_digest(self, digest: str | None) -> None:
        with self._lock:
            if digest != self._content_digest:
                self._content_digest = digest
                self._writes += 1  # saved with the index

    @property
    def ids(self) -> frozenset[str]:
        """The ids of the indexed chunks (to check the index against a store)."""
        with self._lock:
            return frozenset(self._tokens.slots)

    # -- writes -------------------------------------------------------------------------
    def upsert(self, documents: Sequence[Document]) -> None:
        """Add or replace ``documents`` by ``Document.id``.

        Raises:
            ValueError: When a document has no id (nothing is indexed then).
        """
        ids = check_ids(documents, type(self).__name__)
        with self._lock:  # the tokenizer's vocabulary grows: one writer at a time
            encoded = [self._encode(doc) for doc in documents]
            self._note_code(documents)
            for old in self._tokens.put(ids, encoded):
                if old is not None and old < len(self._main_ids):
                    self._tombstones.add(old)
            self._delta.update(ids)
            self._stale = True
            self._writes += bool(ids)
            if ids:
                self._content_digest = None

    def add_documents(self, documents: Sequence[Document]) -> None:
        """Alias of :meth:`upsert`."""
        self.upsert(documents)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove documents by id; unknown ids are ignored."""
        with self._lock:
            for doc_id in ids:
                old = self._tokens.pop(doc_id)
                if old is None:
                    continue
                self._code.discard(doc_id)
                if old < len(self._main_ids):
                    self._tombstones.add(old)
                self._delta.discard(doc_id)
                self._stale = True
                self._writes += 1
                self._content_digest = None

    def clear(self) -> None:
        """Remove every document."""
        with self._lock:
            self._tokens.clear()
            self._code.clear()
            self._reset_segments()
            self._writes += 1

    def rebuild_from_store(self, store: VectorStore, *, namespace: str | None = None) -> int:
        """Replace the index content with every chunk stored in ``store``; return the count."""
        return self.replace(list(scan_store(store, namespace)))

    def replace(self, documents: Sequence[Document]) -> int:
        """Replace the content with ``documents``; return the count (id-less ones left out).

        At once: a search sees the old content or the new, never a mix.
        """
        docs = [d for d in documents if d.id]
        with self._lock:  # the tokenizer's vocabulary grows: one writer at a time
            encoded = [self._encode(d) for d in docs]
            self._tokens.clear()
            self._code.clear()
            self.chunk_types_known = True
            self._note_code(docs)
            self._tokens.put([d.id for d in docs], encoded)  # type: ignore[misc]  # ids above
            self._reset_segments()
            self._writes += 1
            self._content_digest = content_digest(chunk_hashes(docs))
            return len(self._tokens)

    def _note_code(self, documents: Sequence[Document]) -> None:
        """Record which of ``documents`` are code chunks (under the lock)."""
        for doc in documents:
            if doc.metadata.get(CHUNK_TYPE) == CODE_CHUNK_TYPE:
                self._code.add(doc.id)  # type: ignore[arg-type]  # ids checked by the caller
            else:
                self._code.discard(doc.id)  # type: ignore[arg-type]

    def _encode(self, doc: Document) -> np.ndarray:
        """A chunk's term ids: identifiers split in code chunks, or everywhere (``identifiers``).

        A code chunk's defined names (``symbols``) count ``NAME_REPEATS`` more times: a name
        field weighted above the body, as BM25F weights a title.
        """
        code = doc.metadata.get(CHUNK_TYPE) == CODE_CHUNK_TYPE
        split = self.identifiers == "everywhere" or code
        text = doc.page_content
        names = doc.metadata.get(SYMBOLS) if code else None
        if names and isinstance(names, list):
            text += ("\n" + " ".join(map(str, names))) * NAME_REPEATS
        return self.tokenizer.encode(text, identifiers=split)

    def _reset_segments(self) -> None:
        self._main_ids, self._main, self._main_stats = [], None, None
        self._tombstones.clear()
        self._delta = set(self._tokens.slots)
        self._okapi = None
        self._stale = True

    # -- search -------------------------------------------------------------------------
    def search(self, query: str, k: int) -> list[KeywordHit]:
        """Return the ``k`` best chunks for ``query``, best first.

        Only chunks sharing at least one (non-stop-word) term with the query are returned;
        ``k`` is clamped to the corpus, and an empty index or query gives ``[]``.
        Ties are broken by index order, so equal inputs give equal outputs.

        Raises:
            ValueError: When ``k`` is not a positive integer.
        """
        ranked = self.search_ranked(query, k)
        # tuple.__new__ is what KeywordHit(id, score) runs, without a Python frame per hit
        hits = zip(ranked.ids, ranked.scores.tolist(), strict=True)
        return list(map(tuple.__new__, repeat(KeywordHit), hits))

    def search_ranked(self, query: str, k: int) -> RankedIds:
        """:meth:`search` as ``RankedIds`` (ids and one score array): no tuple per hit.

        Raises:
            ValueError: When ``k`` is not a positive integer.
        """
        check_k(k)
        query_terms = self.tokenizer.encode_query(query, plain=self.identifiers == "code")
        if not query_terms or not self._tokens:
            return no_hits()
        pairs = self._query_pairs(query) if self.pair_weight > 0 else None
        wanted, k = k, max(k, PAIR_DEPTH) if pairs else k
        if self.engine == "rank_bm25":
            ranked = self._search_okapi(query_terms, k)
        else:
            ranked = self._search_matrix(query_terms, k)
        return self._with_pairs(ranked, pairs, wanted) if pairs else ranked

    def _query_pairs(self, query: str) -> Counter[tuple[int, int]]:
        tok = self.tokenizer
        pairs = query_pairs([tok.term_ids.get(t, -1) for t in tok.split_terms(query)])
        if self.identifiers == "code":  # prose chunks hold the plain reading: its pairs too
            pairs |= query_pairs([tok.term_ids.get(t, -1) for t in tok.plain_split_terms(query)])
        return pairs

    def _with_pairs(self, ranked: RankedIds, pairs: Counter[tuple[int, int]], k: int) -> RankedIds:
        """``ranked``'s best ``k`` once its first ``PAIR_DEPTH`` have their pair bonus (``_pairs``).

        Only those are re-scored, so a search ranks alike for any ``k``: the rest keep their
        scores, none above a re-scored one's (a bonus is never negative).
        """
        head = min(len(ranked.ids), PAIR_DEPTH)
        ids = ranked.ids[:head]
        with self._lock:  # the candidates' terms, read while no writer moves them
            found = list(map(self._tokens.slots.get, ids))
            if self._code:  # code chunks: no terms to pair
                found = [None if i in self._code else s for i, s in zip(ids, found, strict=True)]
            alive = [n for n, slot in enumerate(found) if slot is not None]
            if not alive:
                return RankedIds(ranked.ids[:k], ranked.scores[:k], unique=ranked.unique)
            whole = len(alive) == head  # the usual case: every candidate is prose and here
            slots = found if whole else [found[n] for n in alive]
            terms, lengths = self._tokens.gather(slots)  # type: ignore[arg-type]  # no None
            n_docs, avgdl = len(self._tokens), self._average_length()
        if not whole:  # code and vanished candidates: no terms
            lengths, every = np.zeros(head, dtype=np.int64), lengths
            lengths[alive] = every
        bonus = pair_bonus(terms, lengths, pairs, n_docs=n_docs, avgdl=avgdl, k1=self.k1, b=self.b)
        scores = ranked.scores[:head] + self.pair_weight * bonus
        order = (-scores).argsort(kind="stable")  # ties keep the terms' order
        return RankedIds(
            [ids[n] for n in order[:k].tolist()] + ranked.ids[head:k],
            np.concatenate([scores[order], ranked.scores[head:k]])[:k],
            unique=True,
        )

    def _average_length(self) -> float:
        """Terms per chunk on average, as the scores use it (the last full build's)."""
        if self._main_stats is not None:
            return self._main_stats[2]
        lengths = [len(terms) for _, terms in self._tokens.items()]  # rank_bm25: few chunks
        return max(sum(lengths) / max(len(lengths), 1), 1.0)

    def _search_matrix(self, query_terms: dict[int, int], k: int) -> RankedIds:
        snap = self._fresh_snapshot()
        segments: list[tuple[Sequence[str], np.ndarray | None]] = []
        parts: list[np.ndarray] = []
        for matrix, matrix_ids, live in (
            (snap.main, snap.main_ids, snap.live),
            (snap.delta, snap.delta_ids, None),
        ):
            if matrix is None:
                continue
            if self.scoring == "exhaustive":
                parts.append(matrix.scores(query_terms, live))
                segments.append((matrix_ids, None))
            else:  # a subsequence of the rows, in row order: ties still break by position
                rows, scores = matrix.top_candidates(
                    query_terms, live, k, score_all_below=self._score_all_below
                )
                parts.append(scores)
                segments.append((matrix_ids, rows))
        if not parts:
            return no_hits()
        scores = np.concatenate(parts) if len(parts) > 1 else parts[0]
        return top_k(segments, scores, k)

    def _fresh_snapshot(self) -> _Snapshot:
        snap = self._snapshot
        if snap is not None and not self._stale:
            return snap
        with self._lock:
            if self._snapshot is None or self._stale:
                self._snapshot = self._refresh()
                self._stale = False
            return self._snapshot

    def _refresh(self) -> _Snapshot:
        n_terms = len(self.tokenizer.terms)
        changes = len(self._delta) + len(self._tombstones)
        if self._main is None or changes > self.max_delta_ratio * max(len(self._tokens), 1):
            self._full_build(n_terms)
        live = None
        if self._tombstones:
            live = np.ones(len(self._main_ids), dtype=np.float32)
            live[list(self._tombstones)] = 0.0
        delta_ids = sorted(self._delta)
        delta = None
        if delta_ids:
            flat, offsets = packed([self._tokens.terms(i) for i in delta_ids])
            delta, _, _ = build_matrix(
                flat,
                offsets,
                n_terms,
                k1=self.k1,
                b=self.b,
                stats=self._main_stats,
            )
        return _Snapshot(self._main_ids, self._main, live, delta_ids, delta)

    def _full_build(self, n_terms: int) -> None:
        self._main = None  # the old matrix is dropped before the new one is built
        self._tokens.compact()  # slot i = row i from here on
        ids = list(self._tokens.slots)
        if ids:
            flat, offsets = self._tokens.packed()
            self._main, df, avgdl = build_matrix(flat, offsets, n_terms, k1=self.k1, b=self.b)
            self._main_stats = (df, len(ids), avgdl)
        else:
            self._main, self._main_stats = None, None
        self._main_ids = ids
        self._tombstones = set()
        self._delta = set()
        self.full_builds += 1
        logger.debug("BM25KeywordIndex: full build of %d documents", len(ids))

    def _search_okapi(self, query_terms: dict[int, int], k: int) -> RankedIds:
        with self._lock:
            if self._okapi is None or self._stale:
                rank_bm25 = _import_rank_bm25()
                ids = list(self._tokens.slots)
                corpus = [terms.tolist() for _, terms in self._tokens.items()]
                okapi = rank_bm25.BM25Okapi(corpus, k1=self.k1, b=self.b)
                _floor_idf(okapi)
                self._okapi = (ids, okapi)
                self._stale = False
                self.full_builds += 1
            ids, okapi = self._okapi
        query = [tid for tid, count in query_terms.items() for _ in range(count)]
        scores = np.asarray(okapi.get_scores(query), dtype=np.float64)
        matched = np.zeros(len(ids), dtype=bool)
        for tid in query_terms:  # rank_bm25 scores non-matching documents 0 (or below)
            matched |= np.fromiter((tid in f for f in okapi.doc_freqs), bool, count=len(ids))
        scores = np.where(matched, scores, -np.inf)
        return top_k([(ids, None)], scores, k)

    # -- persistence --------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write the index (term ids per chunk, vocabulary, settings, ``origin``) to ``directory``.

        Atomic: the token arrays go to a new ``bm25_tokens-<gen>.npz``, then
        ``bm25_index.json`` (which names it) is replaced; a process killed in between leaves
        the previous save loadable and consistent.

        Returns:
            The directory written to. Loading rebuilds the score matrix (about a second per
            100k chunks), so the files stay small and engine-independent; no pickle is used.
        """
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        with self._lock:
            ids, flat, lengths = self._tokens.export()
            code = np.fromiter(
                (n for n, doc_id in enumerate(ids) if doc_id in self._code), dtype=np.int64
            )
            meta = {
                "format": _FORMAT,
                "engine": self.engine,
                "k1": self.k1,
                "b": self.b,
                "max_delta_ratio": self.max_delta_ratio,
                "scoring": self.scoring,
                "identifiers": self.identifiers,
                "pair_weight": self.pair_weight,
                "stopwords": self.tokenizer.stopwords_spec,
                "stemmer": self.tokenizer.stemmer_name,
                "terms": list(self.tokenizer.terms),
                "ids": ids,
                "origin": self.origin,
                "content_digest": self._content_digest,
            }
            writes = self._writes
        # the tokens go to a new generation file; the JSON names it and is replaced last, so a
        # kill in between leaves the previous save whole
        # (all under the directory's exclusive lock: processes saving here take turns)
        tokens_name = generation_name(_TOKENS_FILE.removesuffix(".npz"), ".npz")
        with directory_lock(path, exclusive=True):
            remove_stale_temporaries(path)
            atomic_write(
                path / tokens_name,
                lambda f: np.savez(f, tokens=flat, lengths=lengths, code=code),
            )
            meta["tokens_file"] = tokens_name
            atomic_write_bytes(path / _META_FILE, json.dumps(meta).encode("utf-8"))
            remove_other_generations(path, "bm25_tokens*.npz", keep={tokens_name})
        self._saved_writes = writes
        return path

    @classmethod
    def load(cls, directory: str | Path) -> BM25KeywordIndex:
        """Load an index written by :meth:`save`.

        Raises:
            FileNotFoundError: When ``directory`` holds no saved index.
            ValueError: When the files are not a saved ``BM25KeywordIndex``, or are damaged
                (a truncated token file or JSON: save the index again).
        """
        path = Path(directory)
        meta_file = path / _META_FILE
        with directory_lock(path, exclusive=False):  # never half of a save in progress
            if not meta_file.is_file():
                msg = f"no saved BM25KeywordIndex in {str(path)!r} ({_META_FILE} is missing)."
                raise FileNotFoundError(msg)
            try:
                meta = json.loads(meta_file.read_text(encoding="utf-8"))
            except ValueError as error:  # JSONDecodeError, UnicodeDecodeError: torn or edited
                msg = f"{str(meta_file)!r} is not valid JSON ({error}); save the index again."
                raise ValueError(msg) from error
            if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
                msg = f"{str(meta_file)!r} is not a saved BM25KeywordIndex (format {_FORMAT!r})."
                raise ValueError(msg)
            tokens_file = path / meta.get("tokens_file", _TOKENS_FILE)
            try:
                with np.load(tokens_file, allow_pickle=False) as npz:
                    flat, lengths = npz["tokens"], npz["lengths"]
                    code = npz["code"] if "code" in npz.files else None  # saved before pairs
            except (zipfile.BadZipFile, EOFError, KeyError) as error:  # truncated or foreign
                msg = f"{str(tokens_file)!r} is damaged ({error}); save the index again."
                raise ValueError(msg) from error
        try:
            index = cls(
                engine=meta["engine"],
                k1=meta["k1"],
                b=meta["b"],
                stopwords=meta["stopwords"],
                stemmer=meta["stemmer"],
                max_delta_ratio=meta["max_delta_ratio"],
                scoring=meta.get("scoring", "maxscore"),
                identifiers=meta.get("identifiers", "everywhere"),  # saves before it split all
                pair_weight=meta.get("pair_weight", DEFAULT_PAIR_WEIGHT),
            )
        except (KeyError, TypeError, ValueError) as error:  # a setting missing or edited
            msg = f"{str(meta_file)!r} holds a damaged setting ({error!r}); save the index again."
            raise ValueError(msg) from error
        tok = index.tokenizer
        tok.terms = list(meta["terms"])
        tok.term_ids = {t: i for i, t in enumerate(tok.terms)}
        if int(np.sum(lengths)) != len(flat) or len(lengths) != len(meta["ids"]):
            msg = (
                f"{str(meta_file)!r} names {len(meta['ids'])} chunks but its token file holds "
                f"{len(lengths)} lengths and {len(flat)} tokens; save the index again."
            )
            raise ValueError(msg)
        index._tokens.load(meta["ids"], flat, lengths)
        ids = meta["ids"]
        if code is not None and not _row_numbers_below(code, len(ids)):
            msg = f"{str(tokens_file)!r} names code chunks it does not hold; save it again."
            raise ValueError(msg)
        index._code = set() if code is None else {ids[n] for n in code.tolist()}
        index.chunk_types_known = code is not None
        index._reset_segments()
        index.origin = meta.get("origin")
        digest = meta.get("content_digest")  # absent from saves before it was recorded
        index._content_digest = digest if isinstance(digest, str) else None
        index._saved_writes = index._writes
        return index


def _row_numbers_below(values: np.ndarray, bound: int) -> bool:
    """Whether ``values`` is a 1-D array of integers in ``[0, bound)`` (a save's row numbers)."""
    if values.ndim != 1 or values.dtype.kind not in "iu":
        return False
    return not len(values) or (int(values.min()) >= 0 and int(values.max()) < bound)


def _floor_idf(okapi: Any) -> None:
    """Give every term of a ``BM25Okapi`` an idf above 0, so each chunk holding one scores.

    rank_bm25's idf, ``log((N - n + 0.5) / (n + 0.5))``, is 0 for a term in half the chunks and
    below 0 past that; it floors the negative ones at ``epsilon * average idf``, an average
    that is 0 or below itself where most terms are common (a small corpus, or one word in
    every chunk). Such a term then scored its chunks 0 or less, and a query of it alone found
    nothing where the default engine (Lucene's idf, always > 0) finds them all. An idf of 0
    or below is set to rank_bm25's own floor, its average taken over the positive idfs when
    the whole average is not positive (``epsilon`` itself when no idf is); the others are
    rank_bm25's, so a corpus where every idf was positive ranks as before.
    """
    idf: dict[int, float] = okapi.idf
    positive = [value for value in idf.values() if value > 0]
    average = okapi.average_idf if okapi.average_idf > 0 else fmean(positive or [1.0])
    floor = okapi.epsilon * average
    for term, value in idf.items():
        if value <= 0:
            idf[term] = floor


def _import_rank_bm25() -> Any:
    try:
        import rank_bm25
    except ImportError as e:
        msg = (
            "engine='rank_bm25' needs the rank-bm25 package: pip install rank-bm25 "
            "(or use the default engine='bm25s')."
        )
        raise ImportError(msg) from e
    return rank_bm25
