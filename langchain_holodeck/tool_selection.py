"""Tool selection by hybrid search: the few tools worth showing a model, without a model call.

``ToolSelector`` indexes each tool's name, description and arguments twice — in the package's
``BM25KeywordIndex`` and, embedded through ``CachedEmbeddings``, in a ``MatrixVectorStore`` —
and fuses the two rankings with ``reciprocal_rank_fusion``, exactly as document search does.
A tool named in the query (``use `search_tickets```) is always selected, ahead of the ranking.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.stores import ByteStore, InMemoryByteStore
from langchain_core.tools import BaseTool, InjectedToolArg
from pydantic import BaseModel

from langchain_holodeck._tokens import CAMEL_BOUNDARY
from langchain_holodeck.embeddings import CachedEmbeddings
from langchain_holodeck.fusion import reciprocal_rank_fusion
from langchain_holodeck.keyword_index.base import check_k
from langchain_holodeck.keyword_index.bm25 import BM25KeywordIndex
from langchain_holodeck.vectorstores.matrix import MatrixVectorStore

__all__ = ["ToolMatch", "ToolSelector", "find_tool_mentions", "tool_text"]

logger = logging.getLogger(__name__)

_IDENTIFIER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*[A-Za-z0-9_]|[A-Za-z0-9_]")
_QUOTED = re.compile(r"`([^`\n]+)`|\"([^\"\n]+)\"|(?<!\w)'([^'\n]+)'(?!\w)")
"""Backticks, double quotes, or single quotes that are not apostrophes (``I'd``, ``it's``)."""


@dataclass(frozen=True)
class ToolMatch:
    """One selected tool: its name, where it ranked, and each leg's score.

    ``semantic_score`` and ``keyword_score`` are ``None`` when that leg did not return the
    tool among its ``fetch_k`` best (BM25 returns only tools sharing a term with the query).
    """

    name: str
    """The tool's name (``BaseTool.name``)."""
    fused_score: float
    """Weighted reciprocal rank fusion of the two legs (0 for a mention both legs missed)."""
    semantic_score: float | None
    """Cosine similarity of the query and the tool's text (-1..1), or ``None``."""
    keyword_score: float | None
    """The tool's BM25 score for the query (> 0), or ``None``."""
    mentioned: bool
    """The query names the tool; mentioned tools come first, whatever their scores."""


def tool_text(tool: BaseTool) -> str:
    """The text a tool is indexed by: its name (also split into words), description, arguments.

    ``search_tickets`` and ``SearchTickets`` both contribute the words ``search tickets``, so
    BM25 and the embedding model see words, not one opaque identifier. Each argument adds a
    line ``name: description`` (the description from its JSON schema, when it has one).

    Example:
        ```python
        tool_text(search_tickets)
        # -> "search_tickets (search tickets)" / "Find support tickets ..." / "query: Words to find"
        # (one line each)
        ```
    """
    words = _name_words(tool.name)
    lines = [f"{tool.name} ({words})" if words != tool.name else tool.name]
    if tool.description:
        lines.append(tool.description.strip())
    for arg, description in _tool_args(tool):
        arg_words = _name_words(arg)
        lines.append(f"{arg_words}: {description}" if description else arg_words)
    return "\n".join(lines)


def find_tool_mentions(query: str, names: Iterable[str]) -> list[str]:
    """Tool names the query mentions, in order of first mention.

    A name counts as mentioned when it appears as a whole identifier (not inside a longer
    one) and either it is *distinctive* — it contains ``_``, ``-``, ``.``, a digit or an
    inner capital (``search_tickets``, ``FinanceTool``) — or the query quotes it in
    backticks or quotes (`` `search` ``, ``"search"``). A plain word such as ``search`` or
    ``calculator`` written bare is an ordinary word, not a mention. Matching is
    case-sensitive, as tool names are.
    """
    known = set(names)
    if not known or not query:
        return []
    found: dict[str, None] = {}
    for match in _IDENTIFIER.finditer(query):
        token = match.group(0)
        if token in known and _is_distinctive(token):
            found.setdefault(token, None)
    for match in _QUOTED.finditer(query):
        quoted = next(g for g in match.groups() if g is not None).strip()
        if quoted in known:
            found.setdefault(quoted, None)
    if not found:
        return []
    first = {name: query.find(name) for name in found}
    return sorted(found, key=lambda name: first[name])


def _check_query(query: object) -> None:
    if not isinstance(query, str):
        msg = f"query must be a string, got {type(query).__name__} {query!r}."
        raise TypeError(msg)


class ToolSelector:
    """Select the ``k`` tools most relevant to a query by BM25 + dense search fused with RRF.

    Each tool is indexed by :func:`tool_text` under its name, in a ``BM25KeywordIndex`` and
    in a ``MatrixVectorStore`` whose embeddings go through ``CachedEmbeddings``: adding a tool
    whose text was embedded before (a restart with a persistent cache, a re-added tool) makes
    no model call. Tools are added, replaced (same name) and removed incrementally. A query
    costs one ``embed_query`` call, a BM25 search and a matrix-vector product.

    Key init args:
        embeddings: Any ``Embeddings``; wrapped in ``CachedEmbeddings`` over ``cache``
            unless it already is one.
        cache: The ``ByteStore`` of tool-text vectors (default: in memory). A
            ``LocalFileByteStore`` keeps them across processes.
        weights: ``(semantic, keyword)`` RRF weights.
        fetch_k: Candidates each leg contributes to the fusion.
        rrf_k: The RRF constant.
        mentions: Select tools the query names (see :func:`find_tool_mentions`) first.

    Instantiate:
        ```python
        selector = ToolSelector(embeddings)
        selector.add_tools([search_tickets, get_weather, send_email])
        ```

    Select:
        ```python
        selector.select("is it going to rain in Lyon tomorrow?", k=1)
        # -> [ToolMatch(name='get_weather', fused_score=0.016, semantic_score=0.41,
        #               keyword_score=1.9, mentioned=False)]
        ```
    """

    def __init__(
        self,
        embeddings: Embeddings,
        *,
        cache: ByteStore | None = None,
        weights: tuple[float, float] = (0.5, 0.5),
        fetch_k: int = 20,
        rrf_k: int = 60,
        mentions: bool = True,
    ) -> None:
        check_k(fetch_k)
        if len(weights) != 2:
            msg = f"weights must be (semantic, keyword), two numbers; got {weights!r}."
            raise ValueError(msg)
        reciprocal_rank_fusion([[], []], weights=weights, k=rrf_k)  # validates both
        if isinstance(embeddings, CachedEmbeddings):
            if cache is not None:
                msg = (
                    "cache is only used to wrap plain embeddings, but embeddings is already a "
                    "CachedEmbeddings; pass one or the other."
                )
                raise ValueError(msg)
            self.embeddings = embeddings
        else:
            self.embeddings = CachedEmbeddings(embeddings, cache or InMemoryByteStore())
        self.weights = weights
        self.fetch_k = fetch_k
        self.rrf_k = rrf_k
        self.mentions = mentions
        # terms alone: word pairs were chosen on passages, and the MetaTool figures
        # (docs/benchmarks.md) were measured without them
        self._keyword = BM25KeywordIndex(pair_weight=0)
        self._dense = MatrixVectorStore(self.embeddings)
        self._texts: dict[str, str] = {}  # tool name -> indexed text
        self._known: dict[str, tuple[BaseTool, str]] = {}  # name -> (tool, its description)
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._texts)

    def __contains__(self, name: object) -> bool:
        return name in self._texts

    # -- writes -------------------------------------------------------------------------
    def add_tools(self, tools: Sequence[BaseTool]) -> int:
        """Index ``tools``, replacing any tool of the same name; return how many were (re)indexed.

        A tool whose text is unchanged is skipped (no embedding, no index write); the very
        tool object added before, with the same description, is skipped without even
        rendering its text, so calling this before every selection is cheap.

        Raises:
            TypeError: When an entry is not a ``BaseTool``.
            ValueError: When two entries share a name.
        """
        changed = self._changed(tools)
        if changed:
            vectors = self.embeddings.embed_documents([d.page_content for _, d in changed])
            self._write(changed, vectors)
        return len(changed)

    async def aadd_tools(self, tools: Sequence[BaseTool]) -> int:
        """Async :meth:`add_tools`: embeds with ``aembed_documents``."""
        changed = self._changed(tools)
        if changed:
            texts = [d.page_content for _, d in changed]
            vectors = await self.embeddings.aembed_documents(texts)
            self._write(changed, vectors)
        return len(changed)

    def remove_tools(self, names: Iterable[str]) -> int:
        """Remove tools by name; unknown names are ignored. Return how many were removed."""
        with self._lock:
            gone = [n for n in dict.fromkeys(names) if self._texts.pop(n, None) is not None]
            for name in gone:
                self._known.pop(name, None)
            if gone:
                self._keyword.delete(gone)
                self._dense.delete(gone)
        return len(gone)

    def _changed(self, tools: Sequence[BaseTool]) -> list[tuple[BaseTool, Document]]:
        if isinstance(tools, BaseTool):  # iterating a tool yields its fields
            msg = f"tools must be a list of tools, got the tool {tools.name!r}; pass [tool]."
            raise TypeError(msg)
        seen: dict[str, int] = {}
        changed: list[tuple[BaseTool, Document]] = []
        for i, tool in enumerate(tools):
            if not isinstance(tool, BaseTool):
                msg = (
                    f"tools[{i}] must be a langchain BaseTool, got {type(tool).__name__}; "
                    "wrap functions with langchain_core.tools.tool first."
                )
                raise TypeError(msg)
            if tool.name in seen:
                msg = (
                    f"tools[{seen[tool.name]}] and tools[{i}] are both named {tool.name!r}; "
                    "tool names must be unique."
                )
                raise ValueError(msg)
            seen[tool.name] = i
            known = self._known.get(tool.name)
            if known is not None and known[0] is tool and known[1] == tool.description:
                continue  # the very tool indexed before: skip rendering its schema again
            text = tool_text(tool)
            if self._texts.get(tool.name) == text:
                self._known[tool.name] = (tool, tool.description)
            else:  # remembered once written (a failed embedding call must not hide it)
                changed.append((tool, Document(id=tool.name, page_content=text)))
        return changed

    def _write(self, changed: list[tuple[BaseTool, Document]], vectors: list[list[float]]) -> None:
        docs = [doc for _, doc in changed]
        with self._lock:
            self._dense.add_vectors(docs, vectors)
            self._keyword.upsert(docs)
            for tool, doc in changed:
                self._texts[tool.name] = doc.page_content
                self._known[tool.name] = (tool, tool.description)
        logger.debug("ToolSelector: indexed %d tool(s), %d in total", len(docs), len(self))

    # -- search -------------------------------------------------------------------------
    def select(
        self, query: str, *, k: int = 5, among: Iterable[str] | None = None
    ) -> list[ToolMatch]:
        """The ``k`` best tools for ``query``, best first, plus any tool the query names.

        Args:
            query: The user's request (or the last turns of the conversation).
            k: How many ranked tools to return. Mentioned tools come first and count toward
                ``k``; when more than ``k`` are mentioned, all of them are returned.
            among: Only consider these tool names (default: every indexed tool). Names
                that are not indexed are ignored.

        Returns:
            Up to ``max(k, mentions)`` matches; fewer when fewer tools are indexed (or
            allowed). An empty or whitespace query returns ``[]``.

        Raises:
            ValueError: When ``k`` is not a positive integer.
        """
        check_k(k)
        _check_query(query)
        allowed = self._allowed(among)
        if not query.strip() or not self._texts or allowed == set():
            return []
        vector = self.embeddings.embed_query(query)
        return self._rank(query, vector, k, allowed)

    async def aselect(
        self, query: str, *, k: int = 5, among: Iterable[str] | None = None
    ) -> list[ToolMatch]:
        """Async :meth:`select`: embeds the query with ``aembed_query``."""
        check_k(k)
        _check_query(query)
        allowed = self._allowed(among)
        if not query.strip() or not self._texts or allowed == set():
            return []
        vector = await self.embeddings.aembed_query(query)
        return self._rank(query, vector, k, allowed)

    def _allowed(self, among: Iterable[str] | None) -> set[str] | None:
        if among is None:
            return None
        if isinstance(among, str):
            msg = f"among must be a collection of tool names, got the string {among!r}."
            raise TypeError(msg)
        allowed = set(among)
        return None if allowed.issuperset(self._texts) else allowed & set(self._texts)

    def _rank(
        self, query: str, vector: list[float], k: int, allowed: set[str] | None
    ) -> list[ToolMatch]:
        fetch = max(self.fetch_k, k)
        if allowed is None:
            keyword = self._keyword.search(query, k=fetch)
            dense = self._dense.similarity_search_with_score_by_vector(vector, k=fetch)
        else:
            every = max(len(self._keyword), 1)
            keyword = [h for h in self._keyword.search(query, k=every) if h.id in allowed][:fetch]
            dense = self._dense.similarity_search_with_score_by_vector(
                vector, k=fetch, filter=lambda d: d.id in allowed
            )
        semantic = [(d.id or "", float(s)) for d, s in dense]
        fused = reciprocal_rank_fusion(
            [semantic, [(h.id, h.score) for h in keyword]], weights=self.weights, k=self.rrf_k
        )
        candidates = allowed if allowed is not None else self._texts.keys()
        mentioned = find_tool_mentions(query, candidates) if self.mentions else []
        fused_of, first = dict(fused), set(mentioned)
        ordered = mentioned + [name for name, _ in fused if name not in first]
        semantic_of, keyword_of = dict(semantic), {h.id: h.score for h in keyword}
        return [
            ToolMatch(
                name=name,
                fused_score=fused_of.get(name, 0.0),
                semantic_score=semantic_of.get(name),
                keyword_score=keyword_of.get(name),
                mentioned=name in first,
            )
            for name in ordered[: max(k, len(mentioned))]
        ]


def _name_words(name: str) -> str:
    """``search_tickets`` / ``SearchTickets`` / ``search-tickets`` -> ``search tickets``."""
    spaced = CAMEL_BOUNDARY.sub(" ", re.sub(r"[_\-.]+", " ", name))
    return " ".join(spaced.split()).lower() if spaced.strip() else name


def _is_distinctive(name: str) -> bool:
    return bool(re.search(r"[_\-.0-9]|[a-z][A-Z]", name))


def _tool_args(tool: BaseTool) -> list[tuple[str, str | None]]:
    """(name, description) of each argument the model fills in.

    Read from the pydantic ``args_schema``'s fields when there is one — ``tool.args`` would
    build a JSON schema through a new model per tool (about 3 ms each) — skipping injected
    arguments (``InjectedToolArg``), which the model never sees.
    """
    schema = tool.args_schema
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return [
            (name, field.description)
            for name, field in schema.model_fields.items()
            if not any(_is_injected(m) for m in field.metadata)
        ]
    try:
        args = dict(tool.args)
    except Exception:  # a tool whose schema cannot be rendered is still selectable by text
        logger.debug("ToolSelector: no argument schema for tool %r", tool.name, exc_info=True)
        return []
    return [
        (name, spec.get("description") if isinstance(spec, dict) else None)
        for name, spec in args.items()
    ]


def _is_injected(marker: object) -> bool:
    return isinstance(marker, InjectedToolArg) or (
        isinstance(marker, type) and issubclass(marker, InjectedToolArg)
    )
