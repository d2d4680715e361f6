"""Exact-match index: sections, symbols, defined terms and quoted phrases in a query -> chunks.

Built from chunk metadata (``section_id``, ``source_path``, ``chunk_index``,
``cross_references``, ``defined_terms`` from the structured splitter, ``symbols`` from the code
splitter), so it can always be rebuilt from the store. It also answers the structural lookups
cross-reference expansion needs:
(source_path, section_id) -> chunk ids, and who refers to a section.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from langchain_holodeck._chunk import original_content, source_path
from langchain_holodeck._exact_query import (
    ExactQuery,
    at_the_name,
    codes_in,
    document_names,
    heading_labels,
    heading_versions,
    name_words,
    norm_text,
    parse_exact_query,
    versions_in,
)
from langchain_holodeck.definitions import normalize_term
from langchain_holodeck.keyword_index.base import KeywordHit, check_ids, check_k, scan_store

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.vectorstores import VectorStore

__all__ = [
    "ExactMatchIndex",
    "ExactQuery",
    "codes_in",
    "name_words",
    "parse_exact_query",
    "versions_in",
]

SECTION_SCORE = 2.0
"""Score of a chunk whose ``section_id`` is exactly a referenced section."""
PHRASE_SCORE = 2.0
"""Score added when a chunk contains every quoted phrase of the query."""
DESCENDANT_SCORE = 0.5
"""Score of a chunk in a sub-section of a referenced section (``203(a)`` for ``Section 203``)."""
SYMBOL_SCORE = 2.0
"""Score of a chunk defining a symbol the query names (``parse_sections``, ``Shift.swap``)."""
TERM_SCORE = 2.0
"""Score of a chunk defining the term a "what does X mean" query asks about."""
VERSION_SCORE = 2.0
"""Score of a chunk whose heading names the version the query names (``## v2.3.1``)."""
CODE_SCORE = 2.0
"""Score of a chunk holding the code a query names (``E1042``), when few chunks hold it."""
_MAX_SHORT_NAME_HITS = 3
"""A bare name (``swap``) defined in more chunks than this scores ``DESCENDANT_SCORE`` only."""
_MAX_CODE_HITS = 3
"""A code lookup pins at most this many chunks holding the code; when more hold it, BM25 ranks
them and nothing is pinned."""


@dataclass(frozen=True)
class _Chunk:
    source_path: str
    section_id: str
    chunk_index: int
    cross_references: tuple[str, ...]
    text: str  # lowercased, whitespace-collapsed original text (for phrases)
    opens: tuple[str, ...] = ()  # bare parent sections whose headings open the chunk
    symbols: tuple[str, ...] = ()  # qualified names of the definitions in the chunk (code)
    terms: tuple[str, ...] = ()  # normalized terms the chunk defines
    versions: tuple[str, ...] = ()  # versions its heading names (``## v2.3.1``)
    labels: tuple[tuple[str, str], ...] = ()  # (section id, label word) its headings spell
    names: tuple[frozenset[str], ...] = ()  # its document's names (file stem, title)

    def label_of(self, section_id: str) -> str:
        """The label word of the heading that numbers ``section_id`` here; ``""`` if none."""
        base = section_id.split("(", 1)[0]
        return next((label for sid, label in self.labels if sid == base), "")

    @property
    def section_ids(self) -> tuple[str, ...]:
        """Every section this chunk answers for exactly: its own, then those it opens."""
        return (self.section_id, *self.opens) if self.section_id else self.opens


class ExactMatchIndex:
    """Section ids and quoted phrases -> chunk ids, from chunk metadata.

    ``search("what does Section 203(a)(1) require?", k)`` returns the chunks whose
    ``section_id`` is ``203(a)(1)`` (score 2.0) first, then chunks of its sub-sections
    (``203(a)(1)(A)``, score 0.5). When a file has no chunk of its own for the section (the
    splitter merged a bare heading into the first sub-clause), that file's first sub-section
    chunk starts the section and scores 2.0. Quoted phrases (``"safety interlock"``) add 2.0
    to chunks containing every phrase (case-insensitive, in the original text). Within a score, hits
    follow the order of mention, then (source_path, chunk_index). Sections of every document
    match, so ``Section 2`` of two files gives both, unless the query names one of them: every
    word of its file's stem (``employee-handbook``) or of its title (its first heading, unless
    numbered) is among the query's words outside its section references. Then that document's
    section scores 2.0 and the others' 0.5 (a longer name wins: ``employee handbook`` names
    ``employee-handbook.md``, not ``handbook.md``), and a bare ``4.2`` is that document's
    section. A heading that spells its number with a label word (``Section 4``, ``Article 4``)
    answers only a reference with the same one (Section, Sec. and § are one; Article and Art.
    another; Clause, Paragraph); a heading without one (``4. Termination``) or a reference
    without one (``4(b)``) matches any.

    Phrase and code matching scan the kept texts (a substring test per chunk, only for
    queries with quotes, and code lookups: ``E1042``, at most three chunks holding it pinned);
    pass ``phrases=False`` to keep no text (neither is matched then).

    Instantiate:
        ```python
        exact = ExactMatchIndex()
        exact.upsert(chunks)  # structured-splitter chunks with ids
        exact.search("Section 203(a)(1)", k=3)  # -> [KeywordHit(id='…', score=2.0)]
        ```
    """

    def __init__(self, *, phrases: bool = True) -> None:
        self.phrases = phrases
        self._chunks: dict[str, _Chunk] = {}
        self._by_section: dict[str, set[str]] = {}  # section_id -> ids (all files)
        self._referrers: dict[tuple[str, str], set[str]] = {}  # (file, target) -> ids
        self._by_symbol: dict[str, set[str]] = {}  # qualified name -> ids
        self._by_short_name: dict[str, set[str]] = {}  # last part of a qualified name -> ids
        self._by_term: dict[str, set[str]] = {}  # normalized defined term -> ids
        self._by_version: dict[str, set[str]] = {}  # version a heading names -> ids
        self._files_named: dict[frozenset[str], dict[str, int]] = {}  # name -> {file: chunks}
        self._names_with: dict[str, set[frozenset[str]]] = {}  # word -> names holding it
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._chunks)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._chunks

    @property
    def ids(self) -> frozenset[str]:
        """The ids of the indexed chunks."""
        with self._lock:
            return frozenset(self._chunks)

    # -- writes -------------------------------------------------------------------------
    def upsert(self, documents: Sequence[Document]) -> None:
        """Add or replace chunks by ``Document.id`` (metadata is read, text kept for phrases).

        Raises:
            ValueError: When a document has no id.
        """
        ids = check_ids(documents, type(self).__name__)
        entries = [self._entry(doc) for doc in documents]
        with self._lock:
            for doc_id, entry in zip(ids, entries, strict=True):
                self._remove(doc_id)
                self._chunks[doc_id] = entry
                for section_id in entry.section_ids:
                    self._by_section.setdefault(section_id, set()).add(doc_id)
                for target in entry.cross_references:
                    self._referrers.setdefault((entry.source_path, target), set()).add(doc_id)
                for key, mapping in self._keys(entry):
                    mapping.setdefault(key, set()).add(doc_id)
                for name in entry.names:
                    files = self._files_named.setdefault(name, {})
                    files[entry.source_path] = files.get(entry.source_path, 0) + 1
                    for word in name:
                        self._names_with.setdefault(word, set()).add(name)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove chunks by id; unknown ids are ignored."""
        with self._lock:
            for doc_id in ids:
                self._remove(doc_id)

    def clear(self) -> None:
        """Remove every chunk."""
        with self._lock:
            self._chunks.clear()
            self._by_section.clear()
            self._referrers.clear()
            self._by_symbol.clear()
            self._by_short_name.clear()
            self._by_term.clear()
            self._by_version.clear()
            self._files_named.clear()
            self._names_with.clear()

    def rebuild_from_store(self, store: VectorStore, *, namespace: str | None = None) -> int:
        """Replace the content with every chunk stored in ``store``; return the count."""
        return self.replace(list(scan_store(store, namespace)))

    def replace(self, documents: Sequence[Document]) -> int:
        """Replace the content with ``documents``; return the count (id-less ones left out).

        At once: a search sees the old content or the new, never a mix.
        """
        docs = [d for d in documents if d.id]
        with self._lock:
            self.clear()
            self.upsert(docs)
            return len(self._chunks)

    def _entry(self, doc: Document) -> _Chunk:
        meta = doc.metadata
        refs = meta.get("cross_references") or ()
        opens = meta.get("opens_sections") or ()
        symbols = meta.get("symbols") or ()
        terms = meta.get("defined_terms") or ()
        index = meta.get("chunk_index")
        path = source_path(meta)
        return _Chunk(
            source_path=path,
            section_id=str(meta.get("section_id") or ""),
            chunk_index=index if isinstance(index, int) else 0,
            cross_references=tuple(str(r) for r in refs) if isinstance(refs, list) else (),
            opens=tuple(str(o) for o in opens) if isinstance(opens, list) else (),
            symbols=tuple(str(x) for x in symbols) if isinstance(symbols, list) else (),
            terms=tuple(normalize_term(str(t)) for t in terms) if isinstance(terms, list) else (),
            versions=heading_versions(meta),
            labels=heading_labels(meta),
            names=document_names(meta, path),
            text=norm_text(original_content(doc)) if self.phrases else "",
        )

    def _remove(self, doc_id: str) -> None:
        old = self._chunks.pop(doc_id, None)
        if old is None:
            return
        keyed: list[tuple[dict, object]] = [(self._by_section, sid) for sid in old.section_ids]
        keyed += [(self._referrers, (old.source_path, t)) for t in old.cross_references]
        keyed += [(mapping, key) for key, mapping in self._keys(old)]
        for mapping, key in keyed:
            bucket = mapping.get(key)
            if bucket is not None:
                bucket.discard(doc_id)
                if not bucket:
                    del mapping[key]
        for name in old.names:
            files = self._files_named[name]
            files[old.source_path] -= 1
            if not files[old.source_path]:
                del files[old.source_path]
            if not files:
                del self._files_named[name]
                for word in name:
                    self._names_with[word].discard(name)
                    if not self._names_with[word]:
                        del self._names_with[word]

    def _keys(self, entry: _Chunk) -> list[tuple[str, dict[str, set[str]]]]:
        """(key, mapping) of every symbol and term entry of a chunk."""
        keys = [(name, self._by_symbol) for name in entry.symbols]
        keys += [(name.rsplit(".", 1)[-1], self._by_short_name) for name in entry.symbols]
        keys += [(term, self._by_term) for term in entry.terms]
        keys += [(version, self._by_version) for version in entry.versions]
        return keys

    # -- search -------------------------------------------------------------------------
    def search(self, query: str, k: int) -> list[KeywordHit]:
        """Chunks the query names exactly, best first (see the class docstring); ``[]`` if none.

        Raises:
            ValueError: When ``k`` is not a positive integer.
        """
        check_k(k)
        parsed = parse_exact_query(query)
        if not parsed or not self._chunks:
            return []
        with self._lock:
            scores: dict[str, float] = {}
            mention: dict[str, int] = {}
            named, name_words_of_named = (
                self._named_files(parsed.words)
                if parsed.section_ids or parsed.numbers
                else (frozenset(), frozenset())
            )
            sections = [(sid, parsed.labels_of(sid), False) for sid in parsed.section_ids]
            # a bare 4.2 at the name ("employee handbook 4.2", "4.2 in the handbook"), not a
            # decimal elsewhere ("does the security policy require TLS 1.2?")
            if named:
                sections += [
                    (n, frozenset({""}), True)
                    for n in at_the_name(parsed.numbers, name_words_of_named)
                ]
            for order, (sid, labels, only_named) in enumerate(sections):
                hits = self._prefer_named(
                    self._section_hits(sid, labels), named, only_named=only_named
                )
                for doc_id, score in hits.items():
                    scores[doc_id] = max(scores.get(doc_id, 0.0), score)
                    mention.setdefault(doc_id, order)
            base = len(sections)
            defined: set[str] = set()  # names the query gives whose definitions answer it
            for order, name in enumerate(parsed.symbols, start=base):
                own = self._by_symbol.get(name, set())
                # a qualified name matches its own definition; a bare one, every method so named
                short = set() if "." in name else self._by_short_name.get(name, set()) - own
                if own or short:
                    defined.add(name.lower())
                score = SYMBOL_SCORE if len(own | short) <= _MAX_SHORT_NAME_HITS else 0.0
                for doc_id in own:
                    scores[doc_id] = max(scores.get(doc_id, 0.0), SYMBOL_SCORE)
                    mention.setdefault(doc_id, order)
                for doc_id in short:
                    scores[doc_id] = max(scores.get(doc_id, 0.0), score or DESCENDANT_SCORE)
                    mention.setdefault(doc_id, order)
            for order, term in enumerate(parsed.terms, start=base + len(parsed.symbols)):
                for doc_id in self._by_term.get(term, set()):
                    scores[doc_id] = max(scores.get(doc_id, 0.0), TERM_SCORE)
                    mention.setdefault(doc_id, order)
            start = base + len(parsed.symbols) + len(parsed.terms)
            for order, version in enumerate(parsed.versions, start=start):
                for doc_id in self._by_version.get(version, set()):
                    scores[doc_id] = max(scores.get(doc_id, 0.0), VERSION_SCORE)
                    mention.setdefault(doc_id, order)
            start += len(parsed.versions)
            for order, code in enumerate(parsed.codes, start=start):
                if code in defined:
                    continue  # a defined name: its definition answers, not its mentions
                holders = self._code_holders(code)
                if len(holders) > _MAX_CODE_HITS:
                    continue  # common: BM25 ranks them
                for doc_id in holders:
                    scores[doc_id] = max(scores.get(doc_id, 0.0), CODE_SCORE)
                    mention.setdefault(doc_id, order)
            if parsed.phrases and self.phrases:
                pool: Iterable[str] = scores if parsed.section_ids else self._chunks
                for doc_id in list(pool):
                    text = self._chunks[doc_id].text
                    if all(p in text for p in parsed.phrases):
                        scores[doc_id] = scores.get(doc_id, 0.0) + PHRASE_SCORE
                        mention.setdefault(doc_id, 0)
            chunks = self._chunks

            def key(doc_id: str) -> tuple[float, int, str, int, str]:
                c = chunks[doc_id]
                return (-scores[doc_id], mention[doc_id], c.source_path, c.chunk_index, doc_id)

            ranked = sorted(scores, key=key)[:k]
        return [KeywordHit(doc_id, scores[doc_id]) for doc_id in ranked]

    def _section_hits(self, section_id: str, labels: frozenset[str]) -> dict[str, float]:
        """Scores of the chunks of one section and of its sub-sections (the class docstring).

        ``labels``: the label words the query gave it; a chunk whose heading numbers the
        section with another (``Section 4`` for ``Article 4``) is left out.
        """
        chunks = self._chunks

        def labelled(doc_id: str) -> bool:
            label = chunks[doc_id].label_of(section_id)
            return "" in labels or not label or label in labels

        own = [i for i in self._by_section.get(section_id, ()) if labelled(i)]
        hits = dict.fromkeys(own, SECTION_SCORE)
        prefix = section_id + "("
        starts: dict[str, str] = {}  # file without an own chunk -> its first sub-chunk
        files_with_own = {chunks[i].source_path for i in own}
        for other, ids in self._by_section.items():
            if not other.startswith(prefix):
                continue
            for doc_id in filter(labelled, ids):
                hits.setdefault(doc_id, DESCENDANT_SCORE)
                c = chunks[doc_id]
                if c.source_path in files_with_own:
                    continue
                first = starts.get(c.source_path)
                if first is None or (c.chunk_index, doc_id) < (chunks[first].chunk_index, first):
                    starts[c.source_path] = doc_id
        # a heading merged into its first sub-clause chunk: that chunk starts the section
        hits.update(dict.fromkeys(starts.values(), SECTION_SCORE))
        return hits

    def _prefer_named(
        self, hits: dict[str, float], named: Collection[str], *, only_named: bool
    ) -> dict[str, float]:
        """Hits held to the documents the query names, when one of them has the section.

        The other documents' chunks of it score ``DESCENDANT_SCORE`` (found, not placed
        first); ``only_named`` (a bare ``4.2``) drops them.
        """
        chunks = self._chunks
        if only_named:
            return {i: s for i, s in hits.items() if chunks[i].source_path in named}
        pinned = {chunks[i].source_path for i, s in hits.items() if s >= SECTION_SCORE}
        if pinned.isdisjoint(named) or pinned.issubset(named):
            return hits
        return {
            i: s if chunks[i].source_path in named else min(s, DESCENDANT_SCORE)
            for i, s in hits.items()
        }

    def _code_holders(self, code: str) -> list[str]:
        """The chunks whose text holds ``code`` as a word, up to one more than are pinned.

        A scan of the kept texts (a substring test per chunk, as for quoted phrases), only for
        a code lookup: indexing every chunk's codes made the index three times slower to
        build, at every start of a tool, for queries that are rare.
        """
        word = re.compile(rf"(?<![\w.-]){re.escape(code)}(?![\w-]|\.\w)")
        chunks = self._chunks
        found: list[str] = []
        for doc_id in [i for i, chunk in chunks.items() if code in chunk.text]:
            if word.search(chunks[doc_id].text):
                found.append(doc_id)
                if len(found) > _MAX_CODE_HITS:
                    break
        return found

    def _named_files(self, words: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
        """The files the words name, and the words of those names.

        A file is named when all words of its stem or title are among ``words``. A name
        inside a longer one named too gives way (``employee handbook`` names
        ``employee-handbook.md``, not ``handbook.md``). A dictionary look-up per word.
        """
        candidates = {n for w in words for n in self._names_with.get(w, ()) if n <= words}
        longest = [n for n in candidates if not any(n < other for other in candidates)]
        files = frozenset(path for name in longest for path in self._files_named[name])
        return files, frozenset(word for name in longest for word in name)

    # -- structure lookups (cross-reference expansion) ---------------------------------
    def section_of(self, doc_id: str) -> tuple[str, str] | None:
        """``(source_path, section_id)`` of a chunk, or ``None`` when unknown."""
        c = self._chunks.get(doc_id)
        return None if c is None else (c.source_path, c.section_id)

    def chunks_of_section(self, source_path: str, section_id: str) -> list[str]:
        """Ids of the chunks of one section of one file, in chunk order."""
        with self._lock:
            ids = [
                i
                for i in self._by_section.get(section_id, ())
                if self._chunks[i].source_path == source_path
            ]
            return sorted(ids, key=lambda i: (self._chunks[i].chunk_index, i))

    def chunks_under_section(self, source_path: str, section_id: str) -> list[str]:
        """Ids of the chunks of the sub-sections of one section (``203(a)`` under ``203``)."""
        prefix = section_id + "("
        with self._lock:
            ids = [
                i
                for sid, bucket in self._by_section.items()
                if sid.startswith(prefix)
                for i in bucket
                if self._chunks[i].source_path == source_path
            ]
            return sorted(ids, key=lambda i: (self._chunks[i].chunk_index, i))

    def references_of(self, doc_id: str) -> tuple[str, ...]:
        """The section ids a chunk refers to (its ``cross_references``)."""
        c = self._chunks.get(doc_id)
        return () if c is None else c.cross_references

    def referrers_of(self, source_path: str, section_id: str) -> list[str]:
        """Ids of the chunks of ``source_path`` whose ``cross_references`` name ``section_id``."""
        with self._lock:
            ids = list(self._referrers.get((source_path, section_id), ()))
            return sorted(ids, key=lambda i: (self._chunks[i].chunk_index, i))
