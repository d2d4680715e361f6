"""Text splitters: the token-counted default splitter and the structure-aware splitter."""

from __future__ import annotations

import bisect
import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from langchain_core.documents import Document
from langchain_text_splitters import Language, RecursiveCharacterTextSplitter, TextSplitter

from langchain_holodeck._chunk import SYMBOLS
from langchain_holodeck._defaults import DEFAULT_TABLE_CHUNK_TOKENS
from langchain_holodeck._section_refs import find_section_refs
from langchain_holodeck._sections import Markup, Section, parse_sections
from langchain_holodeck._tokens import count_tokens
from langchain_holodeck.definitions import find_definitions, is_definitions_heading
from langchain_holodeck.splitters._markdown import Packer, table_runs
from langchain_holodeck.splitters._metadatas import check_metadatas
from langchain_holodeck.splitters._rst import object_names

__all__ = [
    "ChunkIndexedTextSplitter",
    "Section",
    "StructuredMarkdownSplitter",
    "default_text_splitter",
    "parse_sections",
]


class ChunkIndexedTextSplitter(RecursiveCharacterTextSplitter):
    """A ``RecursiveCharacterTextSplitter`` that numbers the chunks of each input text.

    Emits metadata: ``chunk_index`` (int, 0-based within each input document), plus the input
    document's metadata.

    Instantiate:
        ```python
        splitter = ChunkIndexedTextSplitter(chunk_size=512, chunk_overlap=50,
                                            length_function=count_tokens)
        ```
    """

    def create_documents(
        self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None
    ) -> list[Document]:
        metadatas = check_metadatas(texts, metadatas)
        out: list[Document] = []
        for text, meta in zip(texts, metadatas, strict=True):
            for index, doc in enumerate(super().create_documents([text], [meta])):
                doc.metadata["chunk_index"] = index
                out.append(doc)
        return out


def default_text_splitter(*, chunk_size: int = 512, chunk_overlap: int = 50) -> TextSplitter:
    """The default splitter: markdown-aware separators, lengths in ``cl100k_base`` tokens.

    Args:
        chunk_size: Maximum chunk length in tokens.
        chunk_overlap: Tokens shared by consecutive chunks.

    Returns:
        A ``ChunkIndexedTextSplitter`` emitting ``chunk_index`` metadata.

    Raises:
        ValueError: When ``chunk_size <= 0``, ``chunk_overlap < 0`` or
            ``chunk_overlap > chunk_size``.
    """
    return ChunkIndexedTextSplitter(
        separators=RecursiveCharacterTextSplitter.get_separators_for_language(Language.MARKDOWN),
        is_separator_regex=True,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        length_function=count_tokens,
    )


_REQUIREMENT = re.compile(r"\b(?:shall|must|required)\b", re.IGNORECASE)
_INTRO_WORDS = 30
"""Longest body (in words, ending in ``:``) merged into the first sub-section as an intro."""


TABLE_HEADER = "table_header"
"""Metadata key: the header row and separator repeated before a table's later pieces."""


@dataclass(frozen=True)
class _Chunk:
    text: str
    start: int
    section: Section
    opens: tuple[Section, ...] = ()
    """Bare sections whose headings open this chunk (see ``_is_bare``), or, for a heading with
    no body that ends the text, end it."""
    header: str = ""
    """A cut table's header row and separator, repeated before this later piece of it."""

    @property
    def content(self) -> str:
        """The chunk's text as emitted: the repeated table header, if any, then its span."""
        return f"{self.header}\n{self.text}" if self.header else self.text


class StructuredMarkdownSplitter(TextSplitter):
    """Split at headings (markdown and numbered legal/technical ones), keeping structure.

    Each section (heading line plus its own text, sub-sections excluded) becomes one chunk;
    a section longer than ``max_chunk_tokens`` is split at paragraph, then list item (a line
    starting ``- ``, ``* ``, ``1. ``), then sentence, then word boundaries; a tiny last piece
    (a link target left over) takes the item or block before it. Fenced code blocks and tables
    are only cut when they alone exceed the limit.
    Sections are never merged (only a heading with no body joins a neighbouring chunk, which
    lists it in ``opens_sections``), so each chunk's ``section_id`` is exact. A numbered clause
    written as one sentence (``7.2 Late payments bear interest.``) has a body: its own chunk.
    Text without headings
    is packed by paragraphs, then sentences. The heading grammar and id rules are those of
    ``parse_sections``; a document whose ``file_type`` metadata is ``rst`` (``SourceLoader``
    sets it) is read as reStructuredText (``markup="rst"``: underlined titles, no code fences,
    and an indented block, such as a code block or a directive's body, stays with the line
    introducing it unless together they exceed the limit).

    Nothing is lost: chunk texts are ``text[start:end].strip()`` for spans that tile the input,
    so the chunks appear in order in the text with only whitespace between them (chunks are
    never empty; ``chunk_overlap`` must be 0). One addition: a Markdown table with a header
    row (and its ``|---|`` separator) that is longer than ``max_table_chunk_tokens`` is cut at
    rows into pieces of that size, and each piece after the first starts with the table's
    header row and separator, a line break, then its span (the header is also in its
    ``table_header`` metadata): every piece names its columns, for dense and keyword search
    alike, and fits the embedded model without windows.

    Emits metadata (besides the input document's):
        ``chunk_index`` (int, 0-based per input document), ``section_id`` (``""`` when none),
        ``opens_sections`` (ids of bare sections whose heading lines open this chunk: a
        heading with no body, directly followed by another heading, or a parent with only a
        short introduction ending in ``:``, directly followed by its first sub-section; such
        headings never stand alone, and a heading with no body that ends the text ends the
        chunk before it, which lists it too; headings too long to join the next section's
        first chunk make a chunk of the last of them, opened by the others),
        ``heading`` (the section's title, ``""`` before the first heading), ``parent_chain``
        (list of the enclosing headings' titles, root first, excluding ``heading``),
        ``chunk_type`` (``header``: a heading with no body; ``definition``: in a definitions
        section or defining a term; ``requirement``: a sentence with shall / must / required;
        else ``content``), ``cross_references`` (list of section ids, see
        ``find_section_refs``), ``defined_terms`` (list of terms defined in the chunk),
        ``table_header`` (only on a cut table's later pieces: the header repeated before the
        span), ``symbols`` (only on a reStructuredText chunk describing objects: their names,
        ``.. py:data:: MAX_CONTENT_LENGTH`` gives ``MAX_CONTENT_LENGTH``, so the exact leg
        finds them as it finds code definitions), and ``start_index`` (of the span) when
        ``add_start_index=True``.

    Key init args:
        max_chunk_tokens: Maximum chunk length (alias ``chunk_size``), measured by
            ``length_function`` (default: ``cl100k_base`` tokens).
        max_level: Deepest markdown heading level (``#`` count) treated as a heading; numbered
            headings and sub-clauses are always recognized.
        subclauses: Whether ``(a)``/``(1)`` sub-clauses get their own chunks (default, exact
            ids like ``203(a)(1)``); ``False`` keeps them in their section's chunks (fewer,
            larger chunks).
        max_table_chunk_tokens: Longest piece of a table with a header row, header included
            (default 200, at most ``max_chunk_tokens``); ``None`` cuts tables like any other
            block, at ``max_chunk_tokens`` and without repeating their header.

    Instantiate:
        ```python
        splitter = StructuredMarkdownSplitter(max_chunk_tokens=800)
        ```

    Invoke:
        ```python
        [act] = SourceLoader("tests/data/legal/holodeck_act.md").load()
        chunks = splitter.split_documents([act])
        [c.metadata["section_id"] for c in chunks][-3:]  # -> ['203(a)', '203(a)(1)', '203(a)(2)']
        ```
    """

    revision: ClassVar[int] = 7
    """Raised when the same settings split some text differently (1: reStructuredText read as
    such, its titles, blocks and object names; 2: a long list cut between its items, and a
    tiny last chunk of a section takes the item or block before it; 3: a Markdown or rst
    heading's single number without a dot is its section id, ``## 5 Terms and
    definitions``; 4: ``Subsection``, ``Paragraph`` and ``Sect.`` name sections, and
    lower-case Roman numerals number titles, parts and chapters, in references and
    headings; 5: no heading inside an HTML comment or a YAML front matter, and lines end
    only at ``\n``, ``\r\n`` or ``\r``; 6: a numbered clause written as a sentence, ``7.2
    Late payments bear interest.``, is a section with its body on its line (it was a heading
    with no body, merged into a neighbour's chunk), a bare heading kept apart from the next
    section's chunk is a chunk of its own section, one ending the text is in the
    ``opens_sections`` of the chunk it ends, and a relative reference ``of`` a named section
    resolves against that one, ``subsection (a)(1) of section 203``; 7: a Markdown or rst
    heading that is a number alone, ``### 4.2``, has it as its section id). Part of the
    ingestion fingerprint: a store split before re-splits its files once."""

    def __init__(
        self,
        *,
        max_chunk_tokens: int = 800,
        max_level: int = 6,
        subclauses: bool = True,
        max_table_chunk_tokens: int | None = DEFAULT_TABLE_CHUNK_TOKENS,
        length_function: Callable[[str], int] = count_tokens,
        **kwargs: Any,
    ) -> None:
        chunk_size = kwargs.pop("chunk_size", max_chunk_tokens)
        if chunk_size != max_chunk_tokens and max_chunk_tokens != 800:
            msg = (
                f"chunk_size ({chunk_size}) and max_chunk_tokens ({max_chunk_tokens}) disagree; "
                "pass only one of them."
            )
            raise ValueError(msg)
        chunk_overlap = kwargs.pop("chunk_overlap", 0)
        if chunk_overlap != 0:
            msg = (
                f"chunk_overlap must be 0 for StructuredMarkdownSplitter, got {chunk_overlap}: "
                "chunks follow sections and never overlap."
            )
            raise ValueError(msg)
        super().__init__(
            chunk_size=chunk_size, chunk_overlap=0, length_function=length_function, **kwargs
        )
        if not 1 <= max_level <= 6:
            msg = f"max_level must be between 1 and 6, got {max_level}."
            raise ValueError(msg)
        if max_table_chunk_tokens is not None and max_table_chunk_tokens < 2:
            msg = (
                f"max_table_chunk_tokens must be None or at least 2, got {max_table_chunk_tokens}."
            )
            raise ValueError(msg)
        self._max_level = max_level
        self._subclauses = subclauses
        self._table_limit = max_table_chunk_tokens

    def split_text(self, text: str) -> list[str]:
        return [chunk.content for chunk in self._chunks(text)]

    def create_documents(
        self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None
    ) -> list[Document]:
        metadatas = check_metadatas(texts, metadatas)
        documents: list[Document] = []
        for text, meta in zip(texts, metadatas, strict=True):
            markup: Markup = "rst" if meta.get("file_type") == "rst" else "markdown"
            for index, chunk in enumerate(self._chunks(text, markup)):
                metadata = {**copy.deepcopy(meta), **self._structure(chunk), "chunk_index": index}
                names = object_names(chunk.text) if markup == "rst" else []
                if names:  # Sphinx object descriptions: found by name, like code's symbols
                    metadata[SYMBOLS] = names
                if chunk.header:
                    metadata[TABLE_HEADER] = chunk.header
                if self._add_start_index:
                    metadata["start_index"] = chunk.start
                documents.append(Document(page_content=chunk.content, metadata=metadata))
        return documents

    def _chunks(self, text: str, markup: Markup = "markdown") -> list[_Chunk]:
        sections = parse_sections(
            text, max_level=self._max_level, subclauses=self._subclauses, markup=markup
        )
        if not sections:
            sections = [Section(0, len(text), 0, 0, "", "", ())] if text.strip() else []
        packer = Packer(self._length_function, self._chunk_size, self._table_limit, markup=markup)
        tables = [
            (body, end, text[start:body].strip())
            for start, body, end in table_runs(text)
            if packer.repeated_header(text, start, end) is not None
        ]
        bodies = [body for body, _, _ in tables]
        chunks: list[_Chunk] = []
        carry: int | None = None  # start of bare headings waiting for the next section
        carried: tuple[Section, ...] = ()  # and their sections
        for position, section in enumerate(sections):
            body_start = section.body_start if section.start < section.body_start else None
            spans = list(packer.fit(text, section.start, section.end, body_start=body_start))
            owners = [section] * len(spans)  # the section each span is a chunk of
            opens: tuple[Section, ...] = ()  # the bare sections opening the first span
            merged = False  # bare headings joined the first span (``opens`` lists them)
            if carry is not None and spans:
                joined = (carry, spans[0][1])
                if self._length_function(text[joined[0] : joined[1]]) <= self._chunk_size:
                    spans[0], opens, merged = joined, carried, True
                else:  # too long together: the headings are a chunk of the last of them
                    spans.insert(0, (carry, section.start))
                    owners.insert(0, carried[-1])
                    opens = carried[:-1]
                carry, carried = None, ()
            following = sections[position + 1 :]
            if self._is_bare(text, section, spans[-1:], following):
                # its heading (and what it carries) opens the next section's first chunk
                carry = spans[-1][0]
                carried = (*opens, section) if merged else (section,)
                spans.pop()
                owners.pop()
            alone = (  # a heading with no body, the last of the file: no next chunk to open
                not following
                and section.body_start > section.start
                and not merged
                and not text[section.body_start : section.end].strip()
            )
            for number, ((start, end), owner) in enumerate(zip(spans, owners, strict=True)):
                piece = text[start:end]
                stripped = piece.strip()
                if stripped:
                    offset = start + len(piece) - len(piece.lstrip())
                    if alone and start >= section.start and chunks:
                        last = chunks[-1]
                        joined_chunk = replace(  # the chunk it ends holds its id too
                            last, text=text[last.start : end].strip(), opens=(*last.opens, section)
                        )
                        limit = self._chunk_size  # a piece of a cut table: its own limit too
                        if last.header and self._table_limit is not None:
                            limit = min(limit, self._table_limit)
                        # measured as emitted: with the table header a piece repeats
                        if self._length_function(joined_chunk.content) <= limit:
                            chunks[-1] = joined_chunk
                            continue  # it ends the chunk before it (alone only if too long)
                    chunk_opens = opens if number == 0 else ()
                    table = bisect.bisect_right(bodies, offset) - 1  # the last table before
                    header = ""
                    if table >= 0 and offset < tables[table][1]:  # inside that table's body
                        header = tables[table][2]
                    chunks.append(_Chunk(stripped, offset, owner, chunk_opens, header))
        return chunks

    @staticmethod
    def _is_bare(
        text: str, section: Section, spans: list[tuple[int, int]], following: list[Section]
    ) -> bool:
        """A heading with no body that another heading follows, or a parent with only an intro.

        Such a heading joins the next section's first chunk ("### Section 203. Records" then
        "(a) Every simulation shall be logged."; "## Empty" then "## Next"), so no chunk is a
        heading alone, nothing of the text is lost, and a sub-clause carries its parent's title
        for dense and keyword search. An introduction is a short body ending in ``:`` ("In
        this Act:", "If You distribute it then:"): it introduces the sub-sections, and alone it
        answers nothing, so it joins only a child (a deeper heading).
        """
        if len(spans) != 1 or not following or section.body_start <= section.start:
            return False
        body = text[section.body_start : section.end].strip()
        if body and not (body.endswith(":") and len(body.split()) <= _INTRO_WORDS):
            return False
        child = following[0]
        return (
            child.start >= section.end
            and not text[section.end : child.start].strip()
            and (not body or child.level > section.level)
        )

    @staticmethod
    def _structure(chunk: _Chunk) -> dict[str, Any]:
        section = chunk.section
        titles = [*section.parent_chain, section.title]
        in_definitions = any(is_definitions_heading(title) for title in titles if title)
        definitions = find_definitions(chunk.text, in_definitions_section=in_definitions)
        # the chunk's own text, without heading lines (its own, or a bare parent's it carries)
        body = chunk.text[max(0, section.body_start - chunk.start) :].strip()
        if not body:
            chunk_type = "header"
        elif in_definitions or definitions:
            chunk_type = "definition"
        elif _REQUIREMENT.search(body):
            chunk_type = "requirement"
        else:
            chunk_type = "content"
        return {
            "section_id": section.section_id,
            "opens_sections": list(
                dict.fromkeys(
                    bare.section_id
                    for bare in chunk.opens
                    if bare.section_id and bare.section_id != section.section_id
                )
            ),
            "heading": section.title,
            "parent_chain": list(section.parent_chain),
            "chunk_type": chunk_type,
            "cross_references": find_section_refs(body, current_id=section.section_id),
            "defined_terms": [term for term, _ in definitions],
        }
