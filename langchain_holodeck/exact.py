"""Exact-match index: sections, symbols, defined terms and quoted phrases in a query -> chunks.

Built from chunk metadata (``section_id``, ``source_path``, ``chunk_index``,
``cross_references``, ``defined_terms`` from the structured splitter, ``symbols`` from the code
splitter), so it can always be rebuilt from the store. It also answers the structural lookups
cross-reference expansion needs:
(source_path, section_id) -> chunk ids, and who refers to a section.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from langchain_holodeck._chunk import CHUNK_TYPE, CODE_CHUNK_TYPE, original_content, source_path
from langchain_holodeck._section_refs import section_references
from langchain_holodeck._sections import heading_label
from langchain_holodeck.definitions import normalize_term
from langchain_holodeck.keyword_index.base import KeywordHit, check_ids, check_k, scan_store

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.vectorstores import VectorStore

__all__ = ["ExactMatchIndex", "parse_exact_query"]

_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "«": '"', "»": '"'})
_PHRASE = re.compile(r'"([^"]+)"')
_SPACE = re.compile(r"\s+")

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
_VERSION = re.compile(
    r"(?<![\w.])(?:[vV]?(?P<long>\d+(?:\.\d+){2,3})|[vV](?P<short>\d+\.\d+))(?![\w]|\.\d)"
)
"""A version: three or four dotted numbers (``2.3.1``, ``v10.0.0.1``), or two after a ``v``
(``v2.3``). Two bare numbers (``4.2``) are a section or a decimal, not a version."""
_BARE_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)+(?![\w]|\.\d)")
"""A dotted number (``4.2``): a section only of a document the query names."""
_NAME_WORD = re.compile(r"[a-z0-9]+")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NOT_NAME_WORDS = frozenset(
    {
        *("a", "an", "and", "for", "in", "of", "on", "the", "to"),
        *("section", "sections", "sec", "article", "clause", "paragraph", "rule", "part"),
        *("chapter", "title", "schedule", "annex", "appendix"),
    }
)
"""Words that name no document: a file called ``section.md`` is not named by ``Section 4``."""
_MAX_SHORT_NAME_HITS = 3
"""A bare name (``swap``) defined in more chunks than this scores ``DESCENDANT_SCORE`` only."""

_IDENTIFIER = re.compile(
    r"`(?P<quoted>[^`\s]+)`"
    r"|(?<![\w.])(?P<name>[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*)(?P<call>\(\))?(?![\w(])"
)
_CAMEL = re.compile(r"[a-z0-9][A-Z]")
_TERM_QUERY = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^\s*what\s+(?:does|do|did)\s+(?:the\s+(?:term|word|phrase)\s+)?(?P<term>.+?)\s+mean\b",
        r"^\s*what\s+is\s+meant\s+by\s+(?:the\s+(?:term|word|phrase)\s+)?(?P<term>.+?)\s*[?.!]*$",
        r"^\s*(?:what\s+is\s+|what's\s+)?(?:the\s+)?(?:meaning|definition)\s+of\s+"
        r"(?:the\s+(?:term|word|phrase)\s+)?(?P<term>.+?)\s*[?.!]*$",
        r"^\s*(?:please\s+)?define\s+(?:the\s+(?:term|word|phrase)\s+)?(?P<term>.+?)\s*[?.!]*$",
        r"^\s*(?:the\s+)?(?P<term>.+?)\s+(?:definition|meaning)\s*[?.!]*$",
        r"^\s*(?:what|who)\s+(?:is|are)\s+(?P<term>.+?)\s*[?.!]*$",
    )
]
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def name_words(text: str) -> frozenset[str]:
    """The words of a document's name or of a query that may name one, lowercased.

    ``employee-handbook``, ``EmployeeHandbook`` and ``Employee Handbook`` are all
    ``{employee, handbook}``; label words and small words (``the``, ``of``) are left out.
    """
    words = _NAME_WORD.findall(_CAMEL_BOUNDARY.sub(" ", text).lower())
    return frozenset(w for w in words if w not in _NOT_NAME_WORDS)


@functools.lru_cache(maxsize=4096)
def _stem_words(path: str) -> frozenset[str]:
    return name_words(PurePosixPath(path).stem)


def _document_names(meta: Mapping[str, Any], path: str) -> tuple[frozenset[str], ...]:
    """The names a chunk gives its document: the file's stem, and on chunk 0 its title.

    The title is the first heading (the H1 above the first chunk), unless it is numbered;
    source code has none (its headings are the names it defines).
    """
    names = [_stem_words(path)]
    if meta.get("chunk_index") == 0 and meta.get(CHUNK_TYPE) != CODE_CHUNK_TYPE:
        chain = meta.get("parent_chain") or ()
        title = str(chain[0] if isinstance(chain, list | tuple) and chain else "") or str(
            meta.get("heading") or ""
        )
        if title and heading_label(title) is None and not title[:1].isdigit():
            names.append(name_words(title))
    return tuple(dict.fromkeys(n for n in names if n))


def _heading_labels(meta: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(section id, label word) of each heading of a chunk and above it that spells one."""
    chain = meta.get("parent_chain") or ()
    titles = [*(chain if isinstance(chain, list | tuple) else ()), meta.get("heading") or ""]
    labels = dict(label for label in map(heading_label, map(str, titles)) if label)
    return tuple(labels.items())


def _norm_text(text: str) -> str:
    return _SPACE.sub(" ", text.translate(_QUOTES)).strip().lower()


@dataclass(frozen=True)
class ExactQuery:
    """What a query asks for exactly: sections, quoted phrases, symbols, a defined term."""

    section_ids: tuple[str, ...]
    phrases: tuple[str, ...]
    symbols: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    """(section id, label word) of each mention (``("4", "article")``; ``""``: no label)."""
    words: frozenset[str] = frozenset()
    """The query's words outside its section references (``name_words``): a document's name."""
    numbers: tuple[str, ...] = ()
    """Dotted numbers with no keyword (``4.2``): sections of a document the query names."""

    def __bool__(self) -> bool:
        return bool(
            self.section_ids
            or self.phrases
            or self.symbols
            or self.terms
            or self.versions
            or self.numbers
        )

    def labels_of(self, section_id: str) -> frozenset[str]:
        """The label words the query gave ``section_id`` (``""`` among them: one without)."""
        return frozenset(label for sid, label in self.labels if sid == section_id) or frozenset(
            {""}
        )


def _heading_versions(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """The versions a chunk's heading or the headings above it name (a changelog's entry)."""
    chain = meta.get("parent_chain") or ()
    headings = [*(chain if isinstance(chain, list | tuple) else ()), meta.get("heading") or ""]
    return versions_in(" ".join(map(str, headings)))


def versions_in(text: str) -> tuple[str, ...]:
    """The versions ``text`` names (``v2.3.1`` and ``2.3.1`` are both ``2.3.1``), in order.

    BM25's words drop one-character parts, so a version is found by this index: the keyword
    leg cannot tell ``v2.3.1`` from ``v2.3.0``.
    """
    found = (m["long"] or m["short"] for m in _VERSION.finditer(text))
    return tuple(dict.fromkeys(found))


def _query_symbols(text: str) -> tuple[str, ...]:
    """Identifiers the query names (``snake_case``, ``dotted.names``, ``camelCase``, ``f()``).

    Anything in backticks counts too; plain words do not (``swap`` is not, ```swap``` is).
    """
    found: list[str] = []
    for match in _IDENTIFIER.finditer(text):
        name = match["quoted"] or match["name"]
        name = name.removesuffix("()").replace("::", ".").strip(".")
        looks_like_code = bool(
            match["quoted"] or match["call"] or "_" in name or "." in name or _CAMEL.search(name)
        )
        if looks_like_code and name and name not in found:
            found.append(name)
    return tuple(found)


def _query_terms(text: str) -> tuple[str, ...]:
    """The term of a definition question (``what does X mean``, ``define X``, ``X definition``)."""
    for pattern in _TERM_QUERY:
        match = pattern.match(text)
        if match is None:
            continue
        term = normalize_term(match["term"].strip(" ?.!\"'"))
        bare = _ARTICLE.sub("", term)
        return tuple(dict.fromkeys(t for t in (term, bare) if t))
    return ()


def parse_exact_query(query: str) -> ExactQuery:
    """Find section references, quoted phrases, symbols and a defined term in ``query``.

    ``"Section 203(a)(1)"``, ``"§ 4.2"``, ``"section 7"``, ``"Article 5"``, ``"sec. 4.2"``,
    ``"subsection (a)(1) of section 203"`` and a bare ``"203(a)(1)"`` (a number with sub-clause
    labels; not a bare ``"4.2"``, which may be any decimal) become normalized section ids
    (``203(a)(1)``, ``4.2``, ``7``, ``5``, ``4.2``, ``203(a)(1)``, ``203(a)(1)``) with
    ``definitions.find_section_refs(query, query=True)``; text between double quotes
    (straight or curly) becomes a phrase (lowercased, whitespace collapsed; phrases under 2
    characters are ignored).
    Identifiers (``parse_sections``, ``Shift.swap``, ``getUser``, ``run()``, ```swap```)
    become symbols. A definition question ("what does X mean", "what is meant by X",
    "meaning of X", "define X", "X definition", "what is X") gives the normalized term X
    (with and without a leading article). Each reference keeps its label word (``labels``:
    ``("5", "article")``); the words outside the references (``words``) and the dotted
    numbers among them (``numbers``: ``4.2``) serve to find a document the query names.
    """
    text = query.translate(_QUOTES)
    phrases = tuple(
        dict.fromkeys(p for p in (_norm_text(m) for m in _PHRASE.findall(text)) if len(p) >= 2)
    )
    refs = section_references(text, query=True)
    rest, end = [], 0
    for ref in refs:
        rest.append(text[end : ref.start])
        end = max(end, ref.end)
    rest.append(text[end:])
    section_ids = tuple(dict.fromkeys(ref.section_id for ref in refs))
    numbers = (n for n in _BARE_NUMBER.findall(" ".join(rest)) if n not in section_ids)
    return ExactQuery(
        section_ids,
        phrases,
        _query_symbols(text),
        _query_terms(text),
        versions_in(text),
        labels=tuple(dict.fromkeys((ref.section_id, ref.label) for ref in refs)),
        words=name_words(" ".join(rest)),
        numbers=tuple(dict.fromkeys(numbers)),
    )


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

    Phrase matching scans the kept texts (a substring test per chunk, only for queries with
    quotes); pass ``phrases=False`` to keep no text.

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
            versions=_heading_versions(meta),
            labels=_heading_labels(meta),
            names=_document_names(meta, path),
            text=_norm_text(original_content(doc)) if self.phrases else "",
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
            named = self._named_files(parsed.words) if parsed.section_ids or parsed.numbers else ()
            sections = [(sid, parsed.labels_of(sid), False) for sid in parsed.section_ids]
            sections += [(n, frozenset({""}), True) for n in parsed.numbers if named]
            for order, (sid, labels, only_named) in enumerate(sections):
                hits = self._prefer_named(
                    self._section_hits(sid, labels), named, only_named=only_named
                )
                for doc_id, score in hits.items():
                    scores[doc_id] = max(scores.get(doc_id, 0.0), score)
                    mention.setdefault(doc_id, order)
            base = len(sections)
            for order, name in enumerate(parsed.symbols, start=base):
                own = self._by_symbol.get(name, set())
                # a qualified name matches its own definition; a bare one, every method so named
                short = set() if "." in name else self._by_short_name.get(name, set()) - own
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

    def _named_files(self, words: frozenset[str]) -> frozenset[str]:
        """The files the words name: all words of their stem or title are among them.

        A name inside a longer one named too gives way (``employee handbook`` names
        ``employee-handbook.md``, not ``handbook.md``). A dictionary look-up per word.
        """
        candidates = {n for w in words for n in self._names_with.get(w, ()) if n <= words}
        longest = [n for n in candidates if not any(n < other for other in candidates)]
        return frozenset(path for name in longest for path in self._files_named[name])

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
