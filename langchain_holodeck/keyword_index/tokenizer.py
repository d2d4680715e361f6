"""The BM25 tokenizer: identifier-aware words, lowercased, stop words dropped, stemmed."""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection
from typing import Any, Literal

import numpy as np

from langchain_holodeck._tokens import identifier_pieces

__all__ = ["Tokenizer"]

_WORD_PATTERN = r"[^\W\d]\w*(?:\.[^\W\d]\w*)+|\w+"  # words; dotted names (``a.b``) stay one
_PLAIN_PATTERN = r"(?u)\b\w\w+\b"  # words of 2+ word characters (scikit-learn's, bm25s's)
IdentifierPolicy = Literal["code", "everywhere"]
"""Which chunks' identifiers are split (``BM25KeywordIndex(identifiers=...)``)."""


class Tokenizer:
    """Identifier-aware: split words and identifiers, lowercase, drop stop words, stem (Snowball).

    A word is a run of word characters, or a dotted name (``Shift.swap``; not ``3.5``). A
    compound identifier — ``snake_case``, ``dotted.names``, ``camelCase`` / ``HTTPServer`` —
    gives its parts (``parse``, ``section``; ``get``, ``user``) and, as one more token, the
    whole identifier lowercased (``parse_sections``), so a query naming it matches it best and
    a query using its words still matches. Parts of one character are dropped, like words.

    Terms get integer ids in a vocabulary that only grows. Each distinct raw word is
    analyzed once and cached, so tokenizing a large corpus is mostly dictionary lookups.
    """

    def __init__(
        self,
        *,
        stopwords: str | Collection[str] | None = "english",
        stemmer: str | None = "english",
    ) -> None:
        if isinstance(stopwords, str):
            if stopwords not in ("english", "en"):
                msg = f"stopwords must be 'english', a list of words or None, got {stopwords!r}."
                raise ValueError(msg)
            from bm25s.stopwords import STOPWORDS_EN

            self.stopwords: frozenset[str] = frozenset(STOPWORDS_EN)
        else:
            self.stopwords = frozenset(w.lower() for w in (stopwords or ()))
        self.stopwords_spec = stopwords if isinstance(stopwords, str) else sorted(self.stopwords)
        self.stemmer_name = stemmer
        self._stem = _load_stemmer(stemmer)
        self._split = re.compile(_WORD_PATTERN).findall
        self.terms: list[str] = []  # term id -> term
        self.term_ids: dict[str, int] = {}  # term -> term id
        self._word_ids: dict[str, tuple[int, ...]] = {}  # raw word -> its term ids
        self._word_terms: dict[str, tuple[str, ...]] = {}  # raw word -> its terms
        self._plain_split = re.compile(_PLAIN_PATTERN).findall
        self._plain_ids: dict[str, tuple[int, ...]] = {}  # raw word -> its plain term ids
        self._union_terms: dict[str, tuple[str, ...]] = {}  # query word -> both readings' terms

    def _term_of(self, word: str) -> str | None:
        if word in self.stopwords:
            return None
        return self._stem(word) if self._stem is not None else word

    def terms_of(self, word: str) -> list[str]:
        """The terms one raw word gives (see the class docstring), in order."""
        parts = identifier_pieces(word)
        terms = [t for t in map(self._term_of, (p.lower() for p in parts)) if t is not None]
        whole = word.strip("._").lower()
        if len(parts) > 1 or (whole and len(parts) == 1 and parts[0].lower() != whole):
            terms.append(whole)
        return terms

    def split_terms(self, text: str) -> list[str]:
        """Every term of ``text`` in order (``terms_of`` of each word), cached per word.

        Pure: the vocabulary is neither read nor grown, so the same text gives the same terms in
        every process (what a store that hashes terms to sparse-vector indices needs).
        """
        cache = self._word_terms
        out: list[str] = []
        for word in self._split(text):
            terms = cache.get(word)
            if terms is None:
                terms = cache[word] = tuple(self.terms_of(word))
            out.extend(terms)
        return out

    def _add_term(self, term: str) -> int:
        tid = self.term_ids.get(term)
        if tid is None:
            tid = self.term_ids[term] = len(self.terms)
            self.terms.append(term)
        return tid

    def plain_split_terms(self, text: str) -> list[str]:
        """Every term of ``text`` read as plain words (``encode(identifiers=False)``), in order."""
        return [t for w in self._plain_split(text) for t in self.plain_terms_of(w)]

    def plain_terms_of(self, word: str) -> list[str]:
        """The term of one plain word (no identifier splitting): lowercased, stemmed."""
        term = self._term_of(word.lower())
        return [] if term is None else [term]

    def encode(self, text: str, *, identifiers: bool = True) -> np.ndarray:
        """Term ids of ``text`` (growing the vocabulary), in order, as ``int32``.

        With ``identifiers=False`` the text is read as plain words (runs of 2+ word
        characters, lowercased, stemmed), without splitting identifiers.
        """
        if identifiers:
            words, cache, analyze = self._split(text), self._word_ids, self.terms_of
        else:
            words, cache, analyze = self._plain_split(text), self._plain_ids, self.plain_terms_of
        try:
            groups = list(map(cache.__getitem__, words))  # C-speed lookups: the hot path
        except KeyError:
            for w in set(words).difference(cache):
                cache[w] = tuple(self._add_term(t) for t in analyze(w))
            groups = list(map(cache.__getitem__, words))
        ids = list(itertools.chain.from_iterable(groups))
        return np.fromiter(ids, dtype=np.int32, count=len(ids))

    def encode_query(self, text: str, *, plain: bool = False) -> dict[int, int]:
        """Known term ids of ``text`` with their counts; never grows the vocabulary.

        With ``plain``, each word also gives its plain term (``encode(identifiers=False)``),
        once per word, so one query matches chunks read either way.
        """
        cache = self._union_terms if plain else self._word_terms
        counts: dict[int, int] = {}
        for w in self._split(text):
            terms = cache.get(w)
            if terms is None:
                found = self.terms_of(w)
                if plain:
                    plain_terms = (t for p in self._plain_split(w) for t in self.plain_terms_of(p))
                    found = list(dict.fromkeys([*found, *plain_terms]))
                terms = cache[w] = tuple(found)
            for t in terms:
                tid = self.term_ids.get(t, -1)
                if tid >= 0:
                    counts[tid] = counts.get(tid, 0) + 1
        return counts


def _load_stemmer(language: str | None) -> Any:
    if language is None:
        return None
    try:
        import Stemmer
    except ImportError as e:  # pragma: no cover - PyStemmer is a runtime dependency
        msg = "stemming needs PyStemmer: pip install PyStemmer (or pass stemmer=None)."
        raise ImportError(msg) from e
    try:
        return Stemmer.Stemmer(language).stemWord
    except KeyError as e:
        msg = f"stemmer must be a Snowball language such as 'english', or None; got {language!r}."
        raise ValueError(msg) from e
